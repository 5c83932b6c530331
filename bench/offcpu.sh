#!/usr/bin/env bash
# Off-CPU overhead on a context-switch-heavy workload (two threads ping-ponging
# through pipes): alone, under ember off-CPU profiling, and under bpftrace on
# sched_switch with stacks (the peer), alternated in one run.  Prints the
# slowdown of each and the added cost per context switch, and the BPF run time
# per *target* switch from the kernel's own accounting (the figure to trust on
# this VM: the same uninstrumented run has been seen to vary 1 s to 10 s).
# sched_switch runs for every switch on the host; what a non-target switch
# costs is measured apart (the same workload running while an idle process is
# profiled, or while bpftrace's filter matches nothing) and taken out.
set -u
ROOT=${EMBER_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
B=${EMBER_BUILD:-$ROOT/build}
[ "$(id -u)" = 0 ] || { echo "offcpu: SKIP (needs root)"; exit 0; }
ROUNDS=${ROUNDS:-200000}
T=$(mktemp -d /tmp/ember-bench.XXXXXX); chmod 755 "$T"
trap 'kill $AGENT 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/agent.sh"
start_bench_agent || exit 1
have_bpftrace=1; command -v bpftrace >/dev/null || have_bpftrace=0
# bpftrace's tracepoints need tracefs, which this VM does not mount at boot.
[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
sysctl -qw kernel.bpf_stats_enabled=1

snap() { python3 "$ROOT/bench/lib/bpfstats.py" snap "$1"; }
delta() { python3 "$ROOT/bench/lib/bpfstats.py" diff "$@"; }
add() { # file "runs ns [samples]": accumulate
  read -r r n x < <(cat); echo "$r $n ${x:-0}" >> "$1"; }
OFF='offcpu_(tp_btf|raw_tp|tp)'
run_alone() { "$B/progs/pingpong" $ROUNDS 1.5 | awk '{print $4}'; }
run_ember() { # [pid to profile instead of the workload]
  "$B/progs/pingpong" $ROUNDS 1.5 > "$T/pp.out" & local P=$!
  snap "$T/e0"
  "$B/ember" profile --config "$T/ember.yaml" --pid ${1:-$P} --type offcpu --duration 120s --out "$T/prof" >/dev/null 2>"$T/prof.err" &
  local C=$!
  wait $P
  # The idle target's task ends when it exits (after the snapshot).
  [ -z "${1:-}" ] && wait $C
  snap "$T/e1"
  [ -n "${1:-}" ] && { kill "$1"; wait $C; }
  echo "$(delta "$T/e0" "$T/e1" "$OFF") $(awk '{s+=$NF} END {print s+0}' "$T/prof/offcpu.count.folded" 2>/dev/null)" >> "$T/ember.${1:+idle}bpf"
  awk '{print $4}' "$T/pp.out"
}
run_bpftrace() { # [comm filter]
  # The peer: stacks at every switch-out of the workload, aggregated in the kernel.
  snap "$T/bpre"
  bpftrace -B line -e "tracepoint:sched:sched_switch /comm == \"${1:-pingpong}\"/ { @[kstack, ustack] = count(); }" > "$T/bt.out" 2>&1 & local BT=$!
  for _ in $(seq 300); do grep -q Attaching "$T/bt.out" && break; sleep 0.1; done
  grep -q Attaching "$T/bt.out" || { echo "bpftrace did not attach" >&2; kill $BT; return; }
  snap "$T/b0"
  "$B/progs/pingpong" $ROUNDS 0.5 > "$T/pp.out"
  snap "$T/b1"
  kill -INT $BT 2>/dev/null; wait $BT 2>/dev/null
  echo "$(delta "$T/b0" "$T/b1" @new "$T/bpre") $(awk '/\]: [0-9]+$/ { sub(/.*\]: /, ""); s += $0 } END { print s + 0 }' "$T/bt.out")" >> "$T/bt.${1:+idle}bpf"
  awk '{print $4}' "$T/pp.out"
}
# What every non-target switch costs: the workload runs, something else is profiled.
sleep 600 & IDLE=$!
run_ember $IDLE > /dev/null
wait $IDLE 2>/dev/null
[ $have_bpftrace = 1 ] && run_bpftrace nomatch > /dev/null
# The timed runs go without the kernel's BPF accounting (two clock reads per
# program run, a paravirtual clock on this VM); one more run of each, with it,
# gives the BPF time per target switch.
sysctl -qw kernel.bpf_stats_enabled=0
for i in 1 2 3; do
  echo "alone $(run_alone)" >> "$T/times"
  echo "ember $(run_ember)" >> "$T/times"
  [ $have_bpftrace = 1 ] && echo "bpftrace $(run_bpftrace)" >> "$T/times"
done
: > "$T/ember.bpf"; : > "$T/bt.bpf"
sysctl -qw kernel.bpf_stats_enabled=1
run_ember > /dev/null
[ $have_bpftrace = 1 ] && run_bpftrace > /dev/null
sysctl -qw kernel.bpf_stats_enabled=0
switches=$(awk '{s+=$NF} END {print s+0}' "$T/prof/offcpu.count.folded" 2>/dev/null)
echo "offcpu_workload: $ROUNDS round trips (>= $((2 * ROUNDS)) context switches) per run, 3 runs each, alternated"
python3 - "$T/times" "$ROUNDS" <<'PY'
import sys, statistics as st
t = {}
for line in open(sys.argv[1]):
    k, v = line.split(); t.setdefault(k, []).append(int(v))
rounds = int(sys.argv[2]); sw = 2 * rounds
base = st.median(t["alone"])
print(f"offcpu_alone: {base/1e6:.0f} ms ({sw/(base/1e9)/1e3:.0f}k switches/s)")
for k in ("ember", "bpftrace"):
    if k not in t: print(f"offcpu_{k}: not measured (bpftrace missing)"); continue
    m = st.median(t[k])
    print(f"offcpu_slowdown_{k}: {m/base:.2f}x (runs {', '.join(f'{x/base:.2f}' for x in t[k])})")
    print(f"offcpu_added_cost_per_switch_{k}: {(m-base)/sw:.0f} ns (target for ember <= 1000)")
PY
# Per target switch: (time - non-target runs * their cost) / target switches.
# ember's target switches are switch-outs of the workload with their switch-in
# (two runs each: it measures the blocked time); bpftrace's are switch-outs.
per_target() { # tool runs-per-target label
  awk -v k="$1" -v per="$2" -v label="$3" -v fi="$T/$1.idlebpf" -v f="$T/$1.bpf" 'BEGIN {
    while ((getline l < fi) > 0) { split(l, a, " "); ir += a[1]; in_ += a[2] }
    while ((getline l < f) > 0) { split(l, a, " "); r += a[1]; n += a[2]; s += a[3] }
    if (!ir || !s) { printf "offcpu_bpf_ns_per_target_switch_%s: not measured\n", k; exit }
    o = in_ / ir
    printf "offcpu_bpf_ns_per_target_switch_%s: %.0f ns (%s; %d target switches)\n", k, (n - (r - per * s) * o) / s, label, s
    printf "offcpu_bpf_ns_per_other_switch_%s: %.0f ns (%d runs while something else was traced)\n", k, o, ir }'
}
per_target ember 2 "switch-out with stacks + switch-in, per blocked interval"
[ $have_bpftrace = 1 ] && per_target bt 1 "peer, this run: switch-out with kstack and ustack"
echo "offcpu_switches_recorded_last_run: $switches"
