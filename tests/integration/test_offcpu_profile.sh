#!/usr/bin/env bash
# Off-CPU profile of a program with known blocking points: the blocked time
# attributed to waiter;wait_on_pipe;read_pipe and main;sleeper;do_nanosleep is
# within 10% of what the program measured around those calls.
. "$(dirname "$0")/lib.sh"
need_bpf
"$PROGS/offcpu_wait" 5 > "$TMP/w.out" & W=$!; CLEANUP_PIDS+=("$W")
sleep 0.1
# Longer than the program: the task ends when the process exits, so its whole measured life is covered.
"$EMBER" profile --pid "$W" --type offcpu --duration 30s --out "$TMP/prof" >"$TMP/p.out" 2>"$TMP/p.err" \
  || { cat "$TMP/p.err"; fail "ember profile --type offcpu failed"; }
wait "$W"
grep -o '"attach_point":"[^"]*"' "$TMP/p.err" || true
for f in offcpu.folded offcpu.svg offcpu.count.folded offcpu.count.svg; do
  [ -s "$TMP/prof/$f" ] || fail "missing $f"
done
check() { # label regex measured_ns
  local us; us=$(folded_sum "$TMP/prof/offcpu.folded" "$2")
  local want=$(( $3 / 1000 ))
  echo "$1: ember ${us} us, program measured ${want} us"
  awk -v a="$us" -v b="$want" 'BEGIN { d=(a-b)/b; if (d<0) d=-d; exit !(b > 0 && d <= 0.10) }' \
    || fail "$1: blocked time off by more than 10%"
}
check wait_on_pipe '^offcpu_wait;(.*;)?waiter;wait_on_pipe;read_pipe;(.*;)?anon_pipe_read_\[k\]' \
  "$(awk '$2 == "wait_on_pipe" {print $3}' "$TMP/w.out")"
check sleeper '^offcpu_wait;(.*;)?main;sleeper;do_nanosleep;(.*;)?(hrtimer_nanosleep|do_nanosleep)_\[k\]' \
  "$(awk '$2 == "sleeper" {print $3}' "$TMP/w.out")"
# Count-weighted variant: about one switch per 50 ms pipe write and per 200 ms sleep.
sw=$(folded_sum "$TMP/prof/offcpu.count.folded" '(^|;)sleeper;')
echo "sleeper switches: $sw (5 s / 200 ms = 25)"
[ "$sw" -ge 20 ] && [ "$sw" -le 30 ] || fail "sleeper switch count $sw, expected ~25"
grep -q 'bpf_prog_\|bpf_trace_run' "$TMP/prof/offcpu.folded" && fail "BPF's own frames leak into the stacks"
ok "off-CPU time and counts match the program's own measurements"
