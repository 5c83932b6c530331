#!/usr/bin/env bash
# On-CPU profile of a program with a known call chain (main -> outer -> middle -> leaf),
# compared with `perf record -g` on the same process over the same window.
. "$(dirname "$0")/lib.sh"
need_bpf
command -v perf >/dev/null && perf --version >/dev/null 2>&1 || skip "perf not installed (linux-perf)"

"$PROGS/oncpu_chain" 60 & W=$!; CLEANUP_PIDS+=("$W")
sleep 0.3
perf record -e cpu-clock -F 111 -g -p "$W" -o "$TMP/perf.data" -- sleep 6 >"$TMP/perf.log" 2>&1 & P=$!
cpu0=$(cpu_secs "$W")
"$EMBER" profile --pid "$W" --type oncpu --duration 6s --out "$TMP/prof" >"$TMP/profile.out" 2>"$TMP/profile.err" \
  || { cat "$TMP/profile.err"; fail "ember profile failed"; }
cpu1=$(cpu_secs "$W")
wait $P || { cat "$TMP/perf.log"; fail "perf record failed"; }
cat "$TMP/profile.err"
F=$TMP/prof/oncpu.folded
[ -s "$F" ] || fail "no $F"
[ -s "$TMP/prof/oncpu.svg" ] || fail "no oncpu.svg"
grep -q "<svg" "$TMP/prof/oncpu.svg" || fail "oncpu.svg is not an SVG"

total=$(folded_total "$F")
chain=$(folded_sum "$F" '^oncpu_chain;(.*;)?outer;middle;leaf(;|$)')
leaf=$(folded_sum "$F" '(^|;)leaf(;|$)')
echo "ember: total=$total chain=$chain leaf=$leaf"
[ "$total" -ge 50 ] || fail "too few samples: $total in 6 s"
# every line has one count, the process name first
awk '$1 !~ /^oncpu_chain(;|$)/ {bad++} END {exit bad>0}' "$F" || fail "a stack does not start with the process name"
# Each sample stands for one 9 ms period of CPU time: the counts must add up to
# the CPU time the kernel accounted to the process (the CLI's start-up and
# shutdown are outside the task window, and sampling is statistical: ±15%).
expect=$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%d", (b - a) / 0.009 }')
echo "CPU time during the profile: $(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN{print b-a}') s -> ~$expect samples expected"
awk -v t="$total" -v e="$expect" 'BEGIN { exit !(t >= 0.85 * e && t <= 1.15 * e) }' \
  || fail "sample count $total does not match the CPU time used (~$expect samples of 9 ms)"
ok "sample count $total matches the process's CPU time (~$expect)"
pct=$(( 100 * chain / total ))
[ "$pct" -ge 90 ] || fail "only $pct% of samples have outer;middle;leaf under the root frame"
ok "$pct% of $total samples have oncpu_chain;...;outer;middle;leaf"

perf script -i "$TMP/perf.data" -F ip,sym 2>/dev/null > "$TMP/perf.txt"
# One block of "ip sym" lines per sample, blocks separated by blank lines.
read -r ptotal pleaf < <(awk '
  NF == 0 { if (n) { t++; l += hasleaf } n=0; hasleaf=0; next }
  { n++; if ($2 == "leaf") hasleaf=1 }
  END { if (n) { t++; l += hasleaf } print t+0, l+0 }' "$TMP/perf.txt")
echo "perf: total=$ptotal leaf=$pleaf"
[ "$ptotal" -ge 100 ] || fail "perf recorded too few samples ($ptotal)"
diff=$(awk -v a="$leaf" -v b="$total" -v c="$pleaf" -v d="$ptotal" 'BEGIN { x=100*a/b - 100*c/d; if (x<0) x=-x; printf "%.2f", x }')
echo "leaf share: ember $(awk -v a=$leaf -v b=$total 'BEGIN{printf "%.2f", 100*a/b}')% perf $(awk -v a=$pleaf -v b=$ptotal 'BEGIN{printf "%.2f", 100*a/b}')% (diff $diff pp)"
awk -v d="$diff" 'BEGIN { exit !(d <= 5) }' || fail "leaf share differs from perf by $diff percentage points"
ok "leaf share within 5 pp of perf"
