#!/usr/bin/env bash
# What ember's JVMTI agent (jvm/ember_jvmti.c) costs a steady-state JVM: the
# throughput of a CPU-bound Java loop (bench/java/EmberSpin.java, OpenJDK 17,
# -XX:+PreserveFramePointer) with the agent loaded (by a 1 s on-CPU task of an
# agent with profiling.java.agent: the attach as users get it; the agent stays
# after the task) against the same JVM without it, each measured over MEAS (6)
# s once the task has ended, after WARM (4) s of warm-up.  The two modes run
# one after the other in each of ROUNDS (5) rounds, their order alternating;
# each round's ratio pairs its two runs.  Prints the median operations per
# second of each mode, the median paired ratio and its range (goal: no
# measurable difference, 1.00x within the range of this VM's noise), and how
# long the agent takes to arrive (from the task's submission to the library in
# the JVM's maps).
set -u
ROOT=${EMBER_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
B=${EMBER_BUILD:-$ROOT/build}
[ "$(id -u)" = 0 ] || { echo "java: SKIP (needs root)"; exit 0; }
command -v javac >/dev/null || { echo "java: javac missing (openjdk-17-jdk-headless: deploy/install-deps.sh)"; exit 1; }
[ -f "$B/libember-jvmti.so" ] || { echo "java: $B/libember-jvmti.so not built"; exit 1; }
ROUNDS=${ROUNDS:-5} WARM=${WARM:-4} MEAS=${MEAS:-6}
T=$(mktemp -d /tmp/ember-bench.XXXXXX); chmod 755 "$T"
trap 'kill $AGENT ${W:-} 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
javac -d "$T" "$ROOT/bench/java/EmberSpin.java" || { echo "java: javac failed"; exit 1; }
. "$(dirname "$0")/lib/agent.sh"
BENCH_PROFILING="java: { agent: true }" start_bench_agent || exit 1

# mode -> "mode ops_per_s task_ms"
one() {
  local t0 t1 n0 n1
  (cd "$T" && exec java -XX:+PreserveFramePointer -cp "$T" EmberSpin > "$T/w.out") & W=$!
  sleep "$WARM"
  t0=$(date +%s%N)
  if [ "$1" = agent ]; then
    "$B/ember" profile --config "$T/ember.yaml" --pid $W --duration 1s --out "$T/p" >/dev/null 2>"$T/p.err" & local P=$!
    # From the task's submission to the agent in the JVM's maps (the attach runs beside the task).
    for _ in $(seq 500); do grep -q 'libember-jvmti\.so' "/proc/$W/maps" && break; sleep 0.01; done
    t1=$(date +%s%N)
    wait $P || { cat "$T/p.err" >&2; return 1; }
    grep -q 'libember-jvmti\.so' "/proc/$W/maps" || { echo "java: the agent was not loaded" >&2; return 1; }
  else
    # The same task on a process that is no JVM: the same work for ember, no agent for this JVM.
    sleep 30 & local S=$!
    "$B/ember" profile --config "$T/ember.yaml" --pid $S --duration 1s --out "$T/p" >/dev/null 2>"$T/p.err" ||
      { cat "$T/p.err" >&2; return 1; }
    kill $S; wait $S 2>/dev/null
    ! grep -q 'libember-jvmti\.so' "/proc/$W/maps" || { echo "java: the agent is in the plain JVM" >&2; return 1; }
    t1=$t0
  fi
  sleep 1
  n0=$(wc -l < "$T/w.out"); sleep "$MEAS"; n1=$(wc -l < "$T/w.out")
  kill $W; wait $W 2>/dev/null; W=
  echo "$1 $(sed -n "$((n0 + 1)),${n1}p" "$T/w.out" | awk '{s += $1; n++} END {printf "%.0f", n ? s / (n * 0.5) : 0}') $(( (t1 - t0) / 1000000 ))" >> "$T/res"
}
for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then one plain && one agent || exit 1
  else one agent && one plain || exit 1; fi
done
python3 - "$T/res" <<'PYRES'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
plain = [float(r[1]) for r in rows if r[0] == "plain"]
agent = [float(r[1]) for r in rows if r[0] == "agent"]
ratio = [a / p for a, p in zip(agent, plain) if p]
ta = [int(r[2]) for r in rows if r[0] == "agent"]
print(f"java_ops_per_s_plain: {st.median(plain):.0f} (runs {', '.join(f'{x:.0f}' for x in plain)})")
print(f"java_ops_per_s_agent: {st.median(agent):.0f} (runs {', '.join(f'{x:.0f}' for x in agent)}; the agent loaded, no task running)")
print(f"java_agent_ratio: {st.median(ratio):.3f}x (paired per round: {min(ratio):.3f}-{max(ratio):.3f}; goal: no measurable difference)")
print(f"java_agent_load_ms: {st.median(ta):.0f} ms (runs {', '.join(str(x) for x in ta)}; from the task's "
      f"submission to the agent in the JVM's maps, polled every 10 ms)")
PYRES
