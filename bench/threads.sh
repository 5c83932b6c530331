#!/usr/bin/env bash
# Thread profiling's overhead (every event: oncpu, file, net, lock, sched) on
# two syscall-heavy workloads, alone and profiled, alternated round by round
# (ROUNDS, default 5, of DUR seconds):
#   - nginx (one worker) serving a 3000-byte file to wrk (16 connections);
#   - thread_lab storm: pairs of threads handing a turn through a mutex and
#     a condition variable (a futex wait and wake each).
# Further modes per workload run it beside empty programs on the hooks of
# each design that could record threads' calls (build/bench/bench_hook_floor,
# FLOORS, default "raw persys switch"): the floor, what the design pays before
# doing anything.  raw is ember's hooks (sys_enter, sys_exit, sched_switch),
# persys one tracepoint per recorded syscall (gala-gopher's), switch
# sched_switch alone.
# Prints each mode's median and runs, the ratio of the medians and the
# median of each round's ratio (the host drifts: the pair is the fairer
# figure), the events and traced calls per second, and from the kernel's own
# accounting (a separate run: it costs a clock read per program run) the BPF
# ns per traced call, and what a syscall of another process pays while a
# task runs (the sys_enter/sys_exit programs run for every syscall of the host).
set -u
ROOT=${EMBER_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
B=${EMBER_BUILD:-$ROOT/build}
[ "$(id -u)" = 0 ] || { echo "threads: SKIP (needs root)"; exit 0; }
for t in nginx wrk bpftool; do command -v $t >/dev/null || { echo "threads: $t missing (deploy/install-deps.sh installs it)"; exit 1; }; done
DUR=${DUR:-5} ROUNDS=${ROUNDS:-5} CONNS=${CONNS:-16} PAIRS=${PAIRS:-2} FLOORS=${FLOORS:-raw persys switch}
T=$(mktemp -d /tmp/ember-bench.XXXXXX); chmod 755 "$T"
trap 'kill $AGENT ${NGINX:-} ${IDLE:-} ${FLOOR:-} 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/agent.sh"
. "$(dirname "$0")/lib/nginx.sh"
start_bench_agent || exit 1
sv() { awk -v k="$2" '$1 == "collector" && $2 == k {print $3; exit}' "$1"; }
stats_to() { "$B/ember" stats --config "$T/ember.yaml" > "$1" 2>/dev/null; }
snap() { python3 "$ROOT/bench/lib/bpfstats.py" snap "$1"; }
delta() { python3 "$ROOT/bench/lib/bpfstats.py" diff "$@"; }
PROGS='threads_(enter|exit|switch)_(btf|raw)'

PORT=$(( 30000 + $$ % 5000 ))
start_bench_nginx || exit 1

run_wrk() { wrk -t 2 -c "$CONNS" -d "${DUR}s" "http://127.0.0.1:$PORT/small.txt" 2>&1 | awk '/Requests\/sec/ {print $2}'; }
# A task on pid for the next command; waits until it is attached.  TASKP: its `ember profile`.
task_on() {
  "$B/ember" profile --config "$T/ember.yaml" --type threads --pid "$1" --duration "$2" --out "$T/prof" \
    >/dev/null 2>"$T/prof.err" & TASKP=$!
  for _ in $(seq 200); do grep -q profiling "$T/prof.err" && return 0; sleep 0.05; done
  echo "threads: the task did not start: $(cat "$T/prof.err")" >&2; return 1
}
# The floor's empty programs for the next command; waits until they are live.
floor_on() {
  "$B/bench/bench_hook_floor" "$1" "${2:-raw}" > "$T/floor.out" 2>&1 & FLOOR=$!
  for _ in $(seq 200); do grep -q attached "$T/floor.out" && return 0; sleep 0.05; done
  echo "threads: the floor's programs did not attach: $(cat "$T/floor.out")" >&2; return 1
}
floor_off() { kill $FLOOR 2>/dev/null; wait $FLOOR 2>/dev/null; FLOOR=; }
storm() { EMBER_TEST_GO=$T/go "$B/progs/thread_lab" storm "$PAIRS" "$DUR" > "$T/storm.out" & SP=$!; }
# In the loop's shell (a subshell cannot wait for it), then its count.
storm_ops() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ops"])' "$T/storm.out"; }

run_wrk > /dev/null   # warm-up
for i in $(seq "$ROUNDS"); do
  echo "nginx_alone $(run_wrk)" >> "$T/res"
  task_on "$W" $((DUR + 2))s || exit 1
  stats_to "$T/s0"; t0=$(date +%s%N)
  r=$(run_wrk)
  stats_to "$T/s1"; t1=$(date +%s%N)
  wait $TASKP
  echo "nginx_threads $r $(( (t1 - t0) / 1000000 )) $(( $(sv "$T/s1" thread_events) - $(sv "$T/s0" thread_events) )) $(( $(sv "$T/s1" bpf_thread_calls) - $(sv "$T/s0" bpf_thread_calls) )) $(( $(sv "$T/s1" bpf_thread_agg_full_drops) + $(sv "$T/s1" bpf_thread_per_thread_cap_drops) + $(sv "$T/s1" thread_events_ring_full_drops) - $(sv "$T/s0" bpf_thread_agg_full_drops) - $(sv "$T/s0" bpf_thread_per_thread_cap_drops) - $(sv "$T/s0" thread_events_ring_full_drops) ))" >> "$T/res"
  for f in $FLOORS; do
    floor_on $((DUR + 2)) "$f" || exit 1
    echo "nginx_floor_$f $(run_wrk)" >> "$T/res"
    floor_off
  done
  rm -f "$T/go"; storm; touch "$T/go"; wait $SP; echo "storm_alone $(storm_ops)" >> "$T/res"; rm -f "$T/go"
  for f in $FLOORS; do
    floor_on $((DUR + 2)) "$f" || exit 1
    storm; touch "$T/go"; wait $SP; echo "storm_floor_$f $(storm_ops)" >> "$T/res"; rm -f "$T/go"
    floor_off
  done
  storm; task_on "$SP" $((DUR + 2))s || exit 1
  stats_to "$T/s2"; touch "$T/go"; wait $SP; ops=$(storm_ops); stats_to "$T/s3"; rm -f "$T/go"
  wait $TASKP
  echo "storm_threads $ops $(( $(sv "$T/s3" bpf_thread_calls) - $(sv "$T/s2" bpf_thread_calls) ))" >> "$T/res"
done
# The kernel's accounting: BPF ns per traced call (nginx under wrk), and per syscall of another process.
sysctl -qw kernel.bpf_stats_enabled=1
task_on "$W" $((DUR + 2))s || exit 1
stats_to "$T/s4"; snap "$T/b0"; run_wrk > /dev/null; snap "$T/b1"; stats_to "$T/s5"
wait $TASKP
echo "bpf_nginx $(delta "$T/b0" "$T/b1" "$PROGS") $(( $(sv "$T/s5" bpf_thread_calls) - $(sv "$T/s4" bpf_thread_calls) )) $(( $(sv "$T/s5" bpf_thread_oncpu_periods) - $(sv "$T/s4" bpf_thread_oncpu_periods) ))" >> "$T/res"
sleep 600 & IDLE=$!
task_on "$IDLE" 20s || exit 1
snap "$T/b2"; dd if=/dev/zero of=/dev/null bs=64 count=2000000 2>/dev/null; snap "$T/b3"
echo "bpf_other_rw $(delta "$T/b2" "$T/b3" 'threads_(enter|exit)_(btf|raw)') 4000000" >> "$T/res"
kill $IDLE; wait $TASKP 2>/dev/null
sysctl -qw kernel.bpf_stats_enabled=0
[ -n "${THREADS_BENCH_KEEP:-}" ] && cp "$T/res" "$THREADS_BENCH_KEEP"
python3 - "$T/res" "$DUR" "$PAIRS" "$FLOORS" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
dur, pairs, floors = sys.argv[2], sys.argv[3], sys.argv[4].split()
HOOKS = {"raw": "sys_enter, sys_exit, sched_switch: ember's hooks",
         "persys": "a tracepoint per recorded syscall + sched_switch: gala-gopher's hooks",
         "switch": "sched_switch alone: calls seen only where they block"}
def col(name, i=1):
    return [float(r[i]) for r in rows if r[0] == name]
def ratio(name, alone, mode, floor):
    a, m = col(alone), col(mode)
    paired = [x / y for x, y in zip(m, a) if y]
    print(f"threads_{name}_alone: {st.median(a):.0f}/s (runs {', '.join(f'{x:.0f}' for x in a)})")
    print(f"threads_{name}_profiled: {st.median(m):.0f}/s (runs {', '.join(f'{x:.0f}' for x in m)})")
    print(f"threads_{name}_ratio: {st.median(m) / st.median(a):.2f}x (paired with its round's alone run: "
          f"{st.median(paired):.2f}x, {min(paired):.2f}-{max(paired):.2f}; target >= 0.90)")
    for d in floors:
        f = col(f"{floor}_{d}")
        fpaired = [x / y for x, y in zip(f, a) if y]
        over = f"; profiled over this floor: {st.median(m) / st.median(f):.2f}x" if d == "raw" else ""
        print(f"threads_{name}_floor_{d}: {st.median(f):.0f}/s, {st.median(f) / st.median(a):.2f}x (empty programs "
              f"on {HOOKS[d]}; paired: {st.median(fpaired):.2f}x, {min(fpaired):.2f}-{max(fpaired):.2f}{over})")
print(f"threads_workload: nginx 1 worker + wrk, 3000-byte file; thread_lab storm {pairs} pairs; {dur} s x "
      f"{len(col('nginx_alone'))} rounds, alternated; every event recorded (oncpu, file, net, lock, sched)")
ratio("nginx", "nginx_alone", "nginx_threads", "nginx_floor")
nt = [r for r in rows if r[0] == "nginx_threads"]
ev = [int(r[3]) / (int(r[2]) / 1000) for r in nt]
calls = [int(r[4]) / (int(r[2]) / 1000) for r in nt]
print(f"threads_nginx_events_per_s: {st.median(ev):.0f} (of {st.median(calls):.0f} traced calls/s: one event "
      f"per thread, call and fd a second); lost: {sum(int(r[5]) for r in nt)}")
for r in rows:   # turns per second
    if r[0] in ("storm_alone", "storm_threads") or r[0].startswith("storm_floor_"):
        r[1] = str(float(r[1]) / float(dur))
ratio("storm", "storm_alone", "storm_threads", "storm_floor")
sc = [int(r[2]) / float(dur) for r in rows if r[0] == "storm_threads"]
print(f"threads_storm_traced_calls_per_s: {st.median(sc):.0f}")
b = next(r for r in rows if r[0] == "bpf_nginx")
runs, ns, tcalls, periods = int(b[1]), int(b[2]), int(b[3]), int(b[4])
print(f"threads_bpf_ns_per_traced_call: {ns / max(tcalls + periods, 1):.0f} ns (all three programs' time under "
      f"nginx + wrk, {runs} runs, over {tcalls} calls + {periods} on-CPU periods of the target)")
o = next(r for r in rows if r[0] == "bpf_other_rw")
print(f"threads_bpf_ns_per_other_syscall: {int(o[2]) / int(o[3]):.1f} ns (dd's read/write while a task follows "
      f"an idle process: sys_enter + sys_exit)")
PY
