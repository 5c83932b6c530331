#!/usr/bin/env bash
# Unwinding with tables (.eh_frame rows, bpf/stacks.bpf.c's bpf_loop walk)
# against frame pointers (bpf_get_stackid), on the same workload in one run:
# tests/progs/fp_chain (built with frame pointers, so both walks give the whole
# stack) with a 30-frame recursion, profiled by an agent with
# profiling.unwind.tables true and one with false, alternating, 2 rounds each.
#   - BPF ns per target sample (kernel.bpf_stats_enabled; the early returns on
#     other processes and idle CPUs are measured apart and taken out) and the ratio
#   - frames per sample in each mode (the same stack both ways)
# Then the table build (analyzer side): time and memory for python3.11 + libc,
# and for node when installed (bench_unwind_tables, best of 5).
set -u
ROOT=${EMBER_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
B=${EMBER_BUILD:-$ROOT/build}
[ "$(id -u)" = 0 ] || { echo "unwind: SKIP (needs root)"; exit 0; }
[ -x "$B/progs/fp_chain" ] || { echo "unwind: SKIP ($B/progs/fp_chain not built)"; exit 0; }
T=$(mktemp -d /tmp/ember-bench.XXXXXX); chmod 755 "$T"
AGENT=; W=; I=
trap 'kill $AGENT $W $I 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
sysctl -qw kernel.bpf_stats_enabled=1
. "$(dirname "$0")/lib/agent.sh"
snap() { python3 "$ROOT/bench/lib/bpfstats.py" snap "$1"; }
delta() { python3 "$ROOT/bench/lib/bpfstats.py" diff "$1" "$2" "$3"; }

# One measurement: "ns_per_target_sample frames_per_sample samples" for a mode (true/false).
measure() {
  EMBER_PROFILING_UNWIND_TABLES=$1 start_bench_agent || exit 1
  "$B/progs/fp_chain" 30 deep 30 >/dev/null & W=$!
  sleep 0.3
  snap "$T/s0"
  "$B/ember" profile --config "$T/ember.yaml" --pid $W --duration 8s --out "$T/p" >/dev/null 2>"$T/p.err"
  snap "$T/s1"
  read -r runs ns < <(delta "$T/s0" "$T/s1" oncpu_sample)
  sleep 60 & I=$!
  snap "$T/s2"
  "$B/ember" profile --config "$T/ember.yaml" --pid $I --duration 3s --out "$T/pi" >/dev/null 2>&1
  snap "$T/s3"
  read -r oruns ons < <(delta "$T/s2" "$T/s3" oncpu_sample)
  kill $W $I 2>/dev/null; wait $W $I 2>/dev/null
  kill $AGENT; wait $AGENT 2>/dev/null; AGENT=
  awk -v n="$ns" -v r="$runs" -v on="$ons" -v oru="$oruns" '
    { s += $NF; k = split($0, a, ";"); f += $NF * k }
    END { o = oru ? on / oru : 0; printf "%.0f %.1f %d\n", s ? (n - (r - s) * o) / s : 0, s ? f / s : 0, s }' "$T/p/oncpu.folded"
  rm -rf "$T/p" "$T/pi" "$T/run" "$T/out"
}
t_ns=0; f_ns=0; rounds=2
for r in $(seq $rounds); do
  read -r tn tf ts < <(measure true)
  read -r fn ff fs < <(measure false)
  echo "unwind_round_$r: tables $tn ns/sample ($tf frames, $ts samples), frame pointers $fn ns/sample ($ff frames, $fs samples)"
  t_ns=$((t_ns + tn)); f_ns=$((f_ns + fn))
done
echo "unwind_bpf_ns_per_sample_tables: $((t_ns / rounds)) ns (30-frame recursion, ~37 user frames; target <= 10000)"
echo "unwind_bpf_ns_per_sample_frame_pointers: $((f_ns / rounds)) ns (same workload, bpf_get_stackid)"
awk -v a=$t_ns -v b=$f_ns 'BEGIN { if (b > 0) printf "unwind_tables_vs_frame_pointers: %.2f x\n", a / b }'

files="/usr/bin/python3.11 /lib/x86_64-linux-gnu/libc.so.6"
"$B/bench/bench_unwind_tables" $files | grep -E '_rows:|_build:|_memory:|_total:'
if [ -x /usr/bin/node ]; then
  "$B/bench/bench_unwind_tables" /usr/bin/node | grep -E '_rows:|_build:|_memory:'
fi
