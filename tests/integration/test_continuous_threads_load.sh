#!/usr/bin/env bash
# Continuous profiling, thread count and system load, on real processes:
#   - a Python process that starts 40 threads after 2 s gets an off-CPU task
#     (PROCESS_THREAD_COUNT >= 30), its twin that stays at 1 thread none;
#   - busy loops raise the 1-minute load average: a process under a policy
#     whose SYSTEM_LOAD threshold is 0.5 over the load at the start gets an
#     on-CPU task, with the load the kernel reported as the current value.
. "$(dirname "$0")/lib.sh"
need_bpf
TAG=cp-tl-$$
LOAD0=$(awk '{print $1}' /proc/loadavg)
THR=$(awk -v l="$LOAD0" 'BEGIN { printf "%.2f", l + 0.5 }')
AGENT_POLICIES="[{Name: threads, MatchCmd: '$TAG threads', Profiling: {OFF_CPU: {PROCESS_THREAD_COUNT: {Threshold: 30, Period: 3, Count: 2}}}},
 {Name: load, MatchCmd: '$TAG load', Profiling: {ON_CPU: {SYSTEM_LOAD: {Threshold: '$THR', Period: 3, Count: 2}}}}]"
AGENT_CONTINUOUS="check_interval: 1s, trigger: {execute_duration: 3s, silence_duration: 10m}"
PROM_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
AGENT_BACKENDS="file, prometheus" AGENT_EXPORTER_YAML="  prometheus: { address: 127.0.0.1, port: $PROM_PORT }"
start_agent
SPAWN='import sys, threading, time
time.sleep(2)
for _ in range(int(sys.argv[1])):
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
time.sleep(60)'
python3 -c "$SPAWN" 40 "$TAG threads" & T=$!; CLEANUP_PIDS+=("$T")
python3 -c "$SPAWN" 0 "$TAG threads" & Q=$!; CLEANUP_PIDS+=("$Q")
# `sleep` takes its argument list as its command line: give it the tag through bash -c's $0.
bash -c 'exec -a "sleep-$0" sleep 60' "$TAG load" & L=$!; CLEANUP_PIDS+=("$L")
ps -o pid,args -p "$L" | tail -1
echo "load at start $LOAD0, threshold $THR"
# The load converges to the runnable tasks: start 3 more busy loops than the load already is,
# so it climbs by 0.5 in about 10 s whatever the previous test left behind.
LOOPS=$(awk -v l="$LOAD0" 'BEGIN { printf "%d", l + 3 }')
for _ in $(seq "$LOOPS"); do (while :; do :; done) & CLEANUP_PIDS+=("$!"); done
found() { grep -l "\"pid\":$1" "$AGENT_OUT"/auto-*/task.json 2>/dev/null | head -1; }
for _ in $(seq 90); do
  [ -n "$(found "$T")" ] && [ -n "$(found "$L")" ] && break
  sleep 1
done
cat /proc/loadavg
tf=$(found "$T"); lf=$(found "$L")
[ -n "$tf" ] || { tail -20 "$TMP/agent.log"; fail "no task for the process that started 40 threads"; }
[ -n "$lf" ] || { tail -20 "$TMP/agent.log"; fail "no task for the process under the load policy (load $(cat /proc/loadavg))"; }
[ -z "$(found "$Q")" ] || fail "the single-threaded twin got a task"
python3 - "$tf" "$lf" "$THR" <<'PY' || fail "the triggered tasks' reasons are wrong"
import json, sys
t, l, thr = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), float(sys.argv[3])
ct, cl = t['trigger'][0], l['trigger'][0]
print('threads:', t['kind'], json.dumps(ct))
print('load:   ', l['kind'], json.dumps(cl))
ok = (t['kind'] == 'offcpu' and ct['monitor'] == 'PROCESS_THREAD_COUNT' and ct['current'] >= 40 and ct['policy'] == 'threads'
      and l['kind'] == 'oncpu' and cl['monitor'] == 'SYSTEM_LOAD' and cl['current'] >= thr and cl['threshold'] == thr)
sys.exit(0 if ok else 1)
PY
# The monitors' values on /metrics, with what each means.
curl -s "http://127.0.0.1:$PROM_PORT/metrics" > "$TMP/metrics.txt" || fail "no /metrics"
grep -E "^rover_con_p_(process_threads|system_load)" "$TMP/metrics.txt" | head -4
grep -qE "^rover_con_p_process_threads\{comm=\"$(cat /proc/$T/comm)\",pid=\"$T\",target=\"OFF_CPU\"\} 41$" "$TMP/metrics.txt" \
  || fail "/metrics lacks the thread count of pid $T"
grep -qE "^rover_con_p_system_load\{comm=\"sleep\",pid=\"$L\",target=\"ON_CPU\"\} [0-9.]+$" "$TMP/metrics.txt" || fail "/metrics lacks the load"
grep -q "^# HELP rover_con_p_process_cpu\|^# HELP rover_con_p_process_threads Threads of the process" "$TMP/metrics.txt" \
  || fail "/metrics has no description of the monitors"
ok "thread count and system load policies started the right tasks for the right processes"
stop_agent || fail "agent exited with an error"
