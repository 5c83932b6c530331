#!/usr/bin/env bash
# On-CPU profiling overhead, side by side in one run (this VM's wall-clock noise
# is ±15%, so the kernel's own accounting is the primary figure):
#   - BPF run time per *target* sample (kernel.bpf_stats_enabled): the sampling
#     program also runs, and returns at once, on every other process and idle
#     CPU; that cost is measured apart (an idle process profiled while the same
#     busy workload runs) and taken out.  The same for bpftrace's profile probe
#     at the same rate with kernel and user stacks, the peer, in the same run.
#   - agent CPU seconds per wall second while profiling a busy process
#   - peak RSS of each ember process, and of `perf record -F 111 -g`
#   - workload slowdown: alone vs under ember vs under perf, alternated, median + spread
set -u
ROOT=${EMBER_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
B=${EMBER_BUILD:-$ROOT/build}
[ "$(id -u)" = 0 ] || { echo "oncpu: SKIP (needs root)"; exit 0; }
T=$(mktemp -d /tmp/ember-bench.XXXXXX); chmod 755 "$T"
trap 'kill $AGENT $W $I 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
W=; I=
HZ=$(getconf CLK_TCK)
cpu_of() { awk -v hz="$HZ" '{ sub(/^.*\) /, ""); printf "%.3f", ($12 + $13) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0; }
hwm_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }

sysctl -qw kernel.bpf_stats_enabled=1
. "$(dirname "$0")/lib/agent.sh"
start_bench_agent || exit 1
C=$(pgrep -P $AGENT -x ember-collector); A=$(pgrep -P $AGENT -x ember-analyzer); X=$(pgrep -P $AGENT -x ember-exporter)

snap() { python3 "$ROOT/bench/lib/bpfstats.py" snap "$1"; }
delta() { python3 "$ROOT/bench/lib/bpfstats.py" diff "$1" "$2" "$3"; }
# "ns_total runs_total target_samples other_runs_cost_ns" -> ns per target sample
per_target() { awk -v n="$1" -v r="$2" -v s="$3" -v o="$4" 'BEGIN { if (s > 0) printf "%.0f", (n - (r - s) * o) / s; else print "nan" }'; }
bt_samples() { awk '/\]: [0-9]+$/ { sub(/.*\]: /, ""); s += $0 } END { print s + 0 }' "$1"; }

# 1. A busy process profiled for 20 s: BPF time per run, agent CPU per wall second.
"$B/progs/oncpu_chain" 80 >/dev/null & W=$!
sleep 0.5
snap "$T/s0"
c0=$(cpu_of $C); a0=$(cpu_of $A); x0=$(cpu_of $X); s0=$(cpu_of $AGENT); t0=$(date +%s.%N)
"$B/ember" profile --config "$T/ember.yaml" --pid $W --duration 20s --out "$T/p" >/dev/null 2>"$T/p.err"
t1=$(date +%s.%N); c1=$(cpu_of $C); a1=$(cpu_of $A); x1=$(cpu_of $X); s1=$(cpu_of $AGENT)
snap "$T/s1"
samples=$(awk '{s+=$NF} END {print s+0}' "$T/p/oncpu.folded")
read -r runs ns < <(delta "$T/s0" "$T/s1" oncpu_sample)
# The same busy process, unprofiled, while an idle one is: every run is an early return.
sleep 60 & I=$!
snap "$T/s2"
"$B/ember" profile --config "$T/ember.yaml" --pid $I --duration 10s --out "$T/pi" >/dev/null 2>&1
snap "$T/s3"
read -r oruns ons < <(delta "$T/s2" "$T/s3" oncpu_sample)
other=$(awk -v n=$ons -v r=$oruns 'BEGIN { printf "%.1f", r ? n / r : 0 }')
# The peer: bpftrace sampling the busy process at the same rate, stacks like ember's.
have_bpftrace=1; command -v bpftrace >/dev/null || have_bpftrace=0
if [ $have_bpftrace = 1 ]; then
  bt() { # pid seconds out: "runs ns" of bpftrace's programs over the seconds
    snap "$T/bpre"
    bpftrace -e "profile:hz:111 /pid == $1/ { @[kstack, ustack] = count(); }" > "$3" 2>/dev/null & local BT=$!
    for _ in $(seq 300); do grep -q Attaching "$3" && break; sleep 0.1; done
    snap "$T/b0"; sleep "$2"; snap "$T/b1"
    kill -INT $BT; wait $BT
    delta "$T/b0" "$T/b1" @new "$T/bpre"
  }
  read -r bruns bns < <(bt $W 10 "$T/bt.out"); bsamples=$(bt_samples "$T/bt.out")
  read -r boruns bons < <(bt $I 10 "$T/bti.out")
  bother=$(awk -v n=$bons -v r=$boruns 'BEGIN { printf "%.1f", r ? n / r : 0 }')
fi
kill $I 2>/dev/null; wait $I 2>/dev/null
wall=$(awk -v a=$t0 -v b=$t1 'BEGIN{print b-a}')
echo "oncpu_samples_in_20s: $samples"
echo "oncpu_bpf_runs: $runs (every CPU, every 9 ms tick)"
ember_t=$(per_target "$ns" "$runs" "$samples" "$other")
echo "oncpu_bpf_ns_per_target_sample: $ember_t ns (kernel + user stack of the target; target <= 5000)"
echo "oncpu_bpf_ns_per_other_run: $other ns (the early return on other processes and idle CPUs)"
if [ $have_bpftrace = 1 ]; then
  bt_t=$(per_target "$bns" "$bruns" "$bsamples" "$bother")
  echo "oncpu_bpf_ns_per_target_sample_bpftrace: $bt_t ns (peer, this run: profile:hz:111 with kstack and ustack, $bsamples samples)"
  echo "oncpu_bpf_ns_per_other_run_bpftrace: $bother ns"
  awk -v a="$ember_t" -v b="$bt_t" 'BEGIN { if (b > 0) printf "oncpu_bpf_per_target_sample_ember_vs_bpftrace: %.2f x\n", a / b }'
else
  echo "oncpu_bpf_ns_per_target_sample_bpftrace: not measured (bpftrace missing)"
fi
awk -v c=$(awk -v a=$c0 -v b=$c1 'BEGIN{print b-a}') -v a=$(awk -v a=$a0 -v b=$a1 'BEGIN{print b-a}') \
    -v x=$(awk -v a=$x0 -v b=$x1 'BEGIN{print b-a}') -v s=$(awk -v a=$s0 -v b=$s1 'BEGIN{print b-a}') -v w=$wall 'BEGIN {
  printf "agent_cpu_collector: %.4f s/s\nagent_cpu_analyzer: %.4f s/s\nagent_cpu_exporter: %.4f s/s\nagent_cpu_supervisor: %.4f s/s\n", c/w, a/w, x/w, s/w
  printf "agent_cpu_total: %.2f%% of one core (target <= 1%%)\n", 100*(c+a+x+s)/w }'
echo "rss_peak_collector: $(( $(hwm_kb $C) / 1024 )) MiB (target <= 16)"
echo "rss_peak_analyzer: $(( $(hwm_kb $A) / 1024 )) MiB (target <= 30)"
echo "rss_peak_exporter: $(( $(hwm_kb $X) / 1024 )) MiB (target <= 30)"
echo "rss_peak_supervisor: $(( $(hwm_kb $AGENT) / 1024 )) MiB"
kill $W 2>/dev/null; wait $W 2>/dev/null

# 2. perf record on the same kind of workload: its CPU and RSS.
"$B/progs/oncpu_chain" 40 >/dev/null & W=$!
sleep 0.5
/usr/bin/time -f "%U %S %M" -o "$T/perf.time" perf record -q -F 111 -g -p $W -o "$T/perf.data" -- sleep 20 >/dev/null 2>&1
read -r pu ps pm < "$T/perf.time"
echo "perf_record_cpu: $(awk -v u=$pu -v s=$ps 'BEGIN{printf "%.2f%% of one core", 100*(u+s)/20}') (perf record -F 111 -g, 20 s)"
echo "perf_record_rss_peak: $(( pm / 1024 )) MiB"
kill $W 2>/dev/null; wait $W 2>/dev/null

# 3. Slowdown of a fixed amount of work: alone / under ember / under perf, alternated 5 times.
for i in 1 2 3 4 5; do
  s=$(date +%s%N); "$B/progs/cpu_work" 150; echo "alone $(( ($(date +%s%N)-s)/1000000 ))" >> "$T/times"
  "$B/progs/cpu_work" 150 & P=$!
  s=$(date +%s%N)
  "$B/ember" profile --config "$T/ember.yaml" --pid $P --duration 60s --out "$T/q" >/dev/null 2>&1 & Q=$!
  wait $P; echo "ember $(( ($(date +%s%N)-s)/1000000 ))" >> "$T/times"; wait $Q
  "$B/progs/cpu_work" 150 & P=$!
  s=$(date +%s%N)
  perf record -q -F 111 -g -p $P -o "$T/perf2.data" >/dev/null 2>&1 & Q=$!
  wait $P; echo "perf $(( ($(date +%s%N)-s)/1000000 ))" >> "$T/times"; wait $Q
done
python3 - "$T/times" <<'PY'
import sys, statistics as st
t = {}
for line in open(sys.argv[1]):
    k, v = line.split(); t.setdefault(k, []).append(int(v))
base = st.median(t["alone"])
for k in ("ember", "perf"):
    r = [x / base for x in t[k]]
    print(f"slowdown_{k}: {st.median(r):.3f}x (min {min(r):.3f}, max {max(r):.3f}; alone median {base:.0f} ms, n={len(r)})")
PY
sysctl -qw kernel.bpf_stats_enabled=0
kill -TERM $AGENT; wait $AGENT 2>/dev/null
