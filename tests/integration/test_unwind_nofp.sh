#!/usr/bin/env bash
# Unwinding without frame pointers (unwind tables from .eh_frame): a program
# built -O2 -fomit-frame-pointer, profiled by ember and by `perf record
# --call-graph dwarf` at once (perf launches it, ember attaches to it).
# On-CPU: >= 90% of the samples in leaf carry main;work;outer;middle;leaf,
# at least as often as perf gives main (1 point of slack: the two sample
# different instants).  With tables off the same share is low: the test
# measures what the tables do.  Through libc without frame pointers: qsort
# calling back into the program.  Off-CPU: a thread blocked in read() under
# main;reader;wait_data.
. "$(dirname "$0")/lib.sh"
need_bpf
command -v perf >/dev/null || fail "perf not installed (linux-perf is in deploy/install-deps.sh)"
P=$PROGS/nofp_chain
[ -x "$P" ] || fail "$P not built"

# perf script's blocks -> "samples_in_LEAF samples_in_LEAF_reaching_main"
perf_share() { # perf.data leaf
  perf script -i "$1" -F ip,sym 2>/dev/null | awk -v leaf="$2" '
    function done_block() { if (first == leaf) { n++; if (has_main) m++ } first = ""; has_main = 0 }
    /^$/ { done_block(); next }
    { sym = $2; if (first == "") first = sym; if (sym == "main") has_main = 1 }
    END { done_block(); print n + 0, m + 0 }'
}

# One workload under perf, profiled by ember: $1 mode, $2 extra ember env; sets EF (folded) PD (perf data)
run_both() { # mode tag [env...]
  local mode=$1 tag=$2; shift 2
  PD=$TMP/perf-$tag.data
  perf record -q -e cpu-clock --call-graph dwarf -F 97 -o "$PD" -- "$P" 6 "$mode" > "$TMP/w-$tag.out" 2>"$TMP/perf-$tag.err" & local pp=$!
  CLEANUP_PIDS+=("$pp")
  local w=""
  for _ in $(seq 100); do w=$(pgrep -P "$pp" -x nofp_chain | head -1); [ -n "$w" ] && grep -q ready "$TMP/w-$tag.out" && break; sleep 0.05; done
  [ -n "$w" ] || fail "the workload did not start under perf: $(cat "$TMP/perf-$tag.err")"
  env "$@" "$EMBER" profile --pid "$w" --duration 4s ${KIND:+--type $KIND} --out "$TMP/prof-$tag" >"$TMP/out-$tag" 2>"$TMP/err-$tag" ||
    { cat "$TMP/err-$tag"; fail "ember profile failed ($tag)"; }
  wait "$pp" || fail "perf record failed: $(cat "$TMP/perf-$tag.err")"
  EF=$TMP/prof-$tag/${KIND:-oncpu}.folded
  [ -s "$EF" ] || fail "no profile written ($tag)"
}

# --- on-CPU, a chain of frames of different sizes ---
run_both cpu tables
read -r pn pm < <(perf_share "$PD" leaf)
en=$(folded_sum "$EF" ';leaf$')
em=$(folded_sum "$EF" ';main;work;outer;middle;leaf$')
es=$(folded_sum "$EF" '^nofp_chain;_start;.*;main;work;outer;middle;leaf$')
echo "ember: $em of $en samples in leaf carry main;work;outer;middle;leaf ($es down to _start); perf --call-graph dwarf: $pm of $pn reach main"
[ "$en" -ge 100 ] || fail "only $en samples in leaf"
awk -v m="$em" -v n="$en" 'BEGIN { exit !(m >= 0.9 * n) }' || fail "only $em of $en leaf samples have the whole chain"
awk -v m="$em" -v n="$en" -v pm="$pm" -v pn="$pn" 'BEGIN { exit !(pn > 0 && m / n >= pm / pn - 0.01) }' ||
  fail "ember's whole-chain share ($em/$en) is below perf's ($pm/$pn)"
awk -v s="$es" -v m="$em" 'BEGIN { exit !(s >= 0.9 * m) }' || fail "only $es of $em whole chains reach _start"
grep -q "unwind" "$TMP/err-tables" && true

# The same with tables off: frame pointers alone lose the chain (what the tables are for).
run_both cpu fponly EMBER_PROFILING_UNWIND_TABLES=false
fn=$(folded_sum "$EF" ';leaf$'); fm=$(folded_sum "$EF" ';main;work;outer;middle;leaf$')
echo "frame pointers only: $fm of $fn samples in leaf carry the whole chain"
awk -v m="$fm" -v n="$fn" 'BEGIN { exit !(n > 0 && m < 0.5 * n) }' || fail "without tables $fm of $fn still had the chain: the test does not measure the tables"

# --- through libc (no frame pointers there either): qsort calling back ---
run_both qsort qsort
read -r qn qm < <(perf_share "$PD" by_value)
cn=$(folded_sum "$EF" ';by_value$')
cm=$(folded_sum "$EF" ';main;sort_loop;(qsort|qsort_r|__qsort_r)(;[^;]+)*;by_value$')
echo "qsort: ember $cm of $cn comparator samples reach main;sort_loop;qsort..; perf: $qm of $qn reach main"
[ "$cn" -ge 50 ] || fail "only $cn samples in the comparator"
awk -v m="$cm" -v n="$cn" 'BEGIN { exit !(m >= 0.9 * n) }' || fail "only $cm of $cn comparator samples reach main through qsort"

# --- off-CPU: blocked in read() ---
KIND=offcpu run_both block block
bn=$(folded_sum "$EF" ';(__libc_read|read|__GI___libc_read)(;|$)')
bm=$(folded_sum "$EF" ';main;reader;wait_data;(__libc_read|read|__GI___libc_read)(;|$)')
echo "off-CPU: $bm of $bn µs blocked in read() under main;reader;wait_data"
[ "$bn" -gt 0 ] || fail "no off-CPU time in read()"
awk -v m="$bm" -v n="$bn" 'BEGIN { exit !(m >= 0.9 * n) }' || fail "only $bm of $bn blocked µs have the whole chain"
# --- memory profile: page faults under main;mapper;toucher ---
KIND=mem run_both fault fault
fn2=$(folded_sum "$EF" ';toucher(;|$)')
fm2=$(folded_sum "$EF" ';main;mapper;toucher(;|$)')
echo "memory: $fm2 of $fn2 faults in toucher under main;mapper"
[ "$fn2" -ge 100 ] || fail "only $fn2 faults in toucher"
awk -v m="$fm2" -v n="$fn2" 'BEGIN { exit !(m >= 0.9 * n) }' || fail "only $fm2 of $fn2 faults have the whole chain"

# --- 110 frames of recursion: whole down to _start (beyond perf's default 8 KiB stack copy) ---
run_both deep deep
dn=$(folded_sum "$EF" ';leaf$')
dm=$(RE='^nofp_chain;_start;([^;]+;){1,3}main;deep;(recurse;){111}leaf$' awk '{n=$NF; st=$0; sub(/ [0-9]+$/, "", st); if (st ~ ENVIRON["RE"]) s+=n} END {print s+0}' "$EF")
echo "deep: $dm of $dn samples in leaf carry all 111 recurse frames down to _start"
[ "$dn" -ge 100 ] || fail "only $dn samples in leaf"
awk -v m="$dm" -v n="$dn" 'BEGIN { exit !(m >= 0.9 * n) }' || fail "only $dm of $dn deep stacks are whole"

ok "whole stacks without frame pointers: on-CPU $em/$en (perf $pm/$pn, frame pointers alone $fm/$fn), qsort $cm/$cn, off-CPU $bm/$bn µs, memory $fm2/$fn2, 116 frames deep $dm/$dn"
