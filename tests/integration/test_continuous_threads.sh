#!/usr/bin/env bash
# Continuous profiling with ember's THREADS target: a program that starts
# burning a core after 2 s gets a thread-profiling task from a local policy
# on its CPU ("when it holds, record what every thread was doing"): the
# task's threads.json shows the burning thread on the CPU for most of the
# task, task.json says which policy item started it, the timeline is there.
. "$(dirname "$0")/lib.sh"
need_bpf
TAG=cp-thr-$$
PERIOD=4 COUNT=2 EXEC=3
AGENT_POLICIES="[{Name: busy, MatchCmd: '$TAG', Profiling: {THREADS: {PROCESS_CPU: {Threshold: 50, Period: $PERIOD, Count: $COUNT}}}}]"
AGENT_CONTINUOUS="fetch_interval: 1s, check_interval: 1s, trigger: {execute_duration: ${EXEC}s, silence_duration: 60s}"
start_agent
"$PROGS/burn_later" 2 12 "$TAG" > "$TMP/burn.out" & B=$!; CLEANUP_PIDS+=("$B")
for _ in $(seq 200); do
  ls "$AGENT_OUT"/auto-threads-*/task.json >/dev/null 2>&1 && break
  sleep 0.1
done
python3 - "$AGENT_OUT" "$B" $EXEC <<'PY' || fail "the triggered thread task is not what the policy says"
import glob, json, os, sys
out, pid, execute = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
tasks = [(json.load(open(f)), os.path.dirname(f)) for f in glob.glob(os.path.join(out, 'auto-threads-*', 'task.json'))]
if len(tasks) != 1:
    print('FAIL: %d thread tasks triggered' % len(tasks)); sys.exit(1)
t, d = tasks[0]
c = t['trigger'][0]
print('task:', json.dumps({k: t[k] for k in ('kind', 'state', 'duration_ms', 'events', 'events_lost')}), 'reason:', json.dumps(c))
if t['kind'] != 'threads' or t['state'] != 'finished' or t['duration_ms'] != execute * 1000 or t['events_lost']:
    print('FAIL: task'); sys.exit(1)
if c['policy'] != 'busy' or c['monitor'] != 'PROCESS_CPU' or c['pid'] != pid:
    print('FAIL: reason'); sys.exit(1)
oncpu = {}
for line in open(os.path.join(d, 'threads.json')):
    m = json.loads(line)
    if m['Resource']['thread.tgid'] != pid:
        print('FAIL: another process in the task:', m['Resource']); sys.exit(1)
    for v in m['Attributes']['values']:
        if v['event.type'] == 'oncpu':
            oncpu[m['Resource']['thread.pid']] = oncpu.get(m['Resource']['thread.pid'], 0) + v['duration']
busiest = max(oncpu.values()) if oncpu else 0
print('on CPU per thread (ms):', {k: round(v) for k, v in oncpu.items()})
# The burner runs a core flat out for the whole task: its thread is on the CPU most of it.
if busiest < 0.9 * execute * 1000:
    print('FAIL: the burning thread was on the CPU %.0f ms of %d s' % (busiest, execute)); sys.exit(1)
if not os.path.getsize(os.path.join(d, 'threads.html')):
    print('FAIL: no timeline'); sys.exit(1)
PY
ok "a CPU burner got a thread profile from its THREADS policy, with the reason"
stop_agent || fail "agent exited with an error"
