#!/usr/bin/env bash
# gala-gopher's REST tprofiling on ember: the manual's start command,
# verbatim but for the comm (thread_lab's lock contention workload), starts
# one thread task for the process; its events reach threads.json in the
# task's output directory in gala-gopher's shape (CompeteThd1 on CPU,
# CompeteThd2 waiting on the futex with its stack, then writing to the
# socket); GET shows the configuration; {"state": "stopped"} ends the task
# (task.json: finished) while the process still runs, and nothing starts
# again.  Before that, every refused body gets its answer and starts
# nothing, and a refused PUT while running changes nothing either.
. "$(dirname "$0")/lib.sh"
need_bpf
start_rest_agent
U=http://127.0.0.1:$REST_PORT
req() { # curl args... -> "CODE BODY"
  local out; out=$(curl -s -w '\n%{http_code}' "$@"); echo "$(tail -1 <<<"$out") $(head -n -1 <<<"$out" | tr '\n' ' ')"
}
expect() { # label want-code want-text "CODE BODY"
  echo "$1: $4"
  [ "${4%% *}" = "$2" ] || fail "$1: HTTP ${4%% *}, expected $2"
  grep -qF -- "$3" <<<"$4" || fail "$1: the answer does not say '$3'"
}
put() { req -X PUT "$U/tprofiling" -d "$1"; }
rstat() { "$EMBER" stats --config "$TMP/ember.yaml" 2>/dev/null | awk -v k="$1" '$2 == k {s += $3} END {print s + 0}'; }
# Task directories of process $1 (default: any); another thread_lab on the host may be selected too.
tasks() { ls -d "$AGENT_OUT"/rest-threads-"${1:-}"* 2>/dev/null | wc -l; }

# --- before any PUT: stopped, nothing set ---------------------------------------------------
curl -s "$U/tprofiling" > "$TMP/get0.json"
python3 - "$TMP/get0.json" <<'PY' || fail "GET before any PUT is not the stopped, empty configuration"
import json, sys
d = json.load(open(sys.argv[1]))
print("GET:", json.dumps(d))
s = d["snoopers"]
sys.exit(0 if d["state"] == "stopped" and d["cmd"]["probe"] == [] and not any(s.values()) else 1)
PY

# --- refused bodies: each its answer, nothing started --------------------------------------
W=$$   # a process the refused bodies name: none of them may start a task for it
expect "no json=" 400 "the body is not json=<document>" "$(put '{"state": "running"}')"
expect "malformed JSON" 400 "the document is not JSON" "$(put 'json={"state": running}')"
expect "an unknown sub-item" 400 "unsupported probe range: oncpux. cmd.probe: 'oncpux' is not a sub-item of tprofiling (oncpu, syscall_file, syscall_net, syscall_lock, syscall_sched)" \
  "$(put 'json={"cmd": {"probe": ["oncpux"]}, "snoopers": {"proc_name": [{"comm": "thread_lab"}]}, "state": "running"}')"
expect "a sub-item that is not a string" 400 "cmd.probe: '(not a string)' is not a sub-item of tprofiling" \
  "$(put 'json={"cmd": {"probe": [1]}, "snoopers": {"proc_name": [{"comm": "thread_lab"}]}, "state": "running"}')"
expect "a gala-gopher sub-item ember does not record" 400 \
  "cmd.probe: python_gc is a sub-item of gala-gopher's tprofiling that ember does not record (ember records oncpu, syscall_file, syscall_net, syscall_lock, syscall_sched)" \
  "$(put 'json={"cmd": {"probe": ["oncpu", "python_gc"]}, "snoopers": {"proc_name": [{"comm": "thread_lab"}]}, "state": "running"}')"
expect "no sub-item" 400 "state running needs a sub-item" \
  "$(put 'json={"cmd": {"probe": []}, "snoopers": {"proc_name": [{"comm": "thread_lab"}]}, "state": "running"}')"
expect "no snooper" 400 "the snooper for tprofiling cannot be empty" \
  "$(put 'json={"cmd": {"probe": ["oncpu"]}, "state": "running"}')"
expect "a bad proc_name" 400 "snoopers.proc_name[0] must be an object {comm, cmdline, debugging_dir}" \
  "$(put 'json={"cmd": {"probe": ["oncpu"]}, "snoopers": {"proc_name": ["thread_lab"]}, "state": "running"}')"
expect "a bad proc_id" 400 "Error occurs when parsing snooper proc_id: snoopers.proc_id[0] must be an integer" \
  "$(put 'json={"cmd": {"probe": ["oncpu"]}, "snoopers": {"proc_id": ["'"$W"'"]}, "state": "running"}')"
expect "a state that is not a string" 400 'invalid state: must be string' \
  "$(put 'json={"cmd": {"probe": ["oncpu"]}, "snoopers": {"proc_id": ['"$W"']}, "state": true}')"
expect "an unknown state" 400 'invalid state start: must be running or stopped' \
  "$(put 'json={"cmd": {"probe": ["oncpu"]}, "snoopers": {"proc_id": ['"$W"']}, "state": "start"}')"
expect "a threshold out of range" 400 "params.stack_threshold invalid value 3600001, must be in [0, 3600000]" \
  "$(put 'json={"cmd": {"probe": ["oncpu"]}, "snoopers": {"proc_id": ['"$W"']}, "params": {"stack_threshold": 3600001}, "state": "running"}')"
expect "a large body" 413 "larger than" "$(put "json={\"x\": \"$(head -c 20000 /dev/zero | tr '\0' x)\"}")"
sleep 2.5   # over a scan interval: a task would have started
[ "$(curl -s "$U/tprofiling")" = "$(cat "$TMP/get0.json")" ] || fail "a refused PUT changed the configuration"
[ "$(tasks)" = 0 ] && [ "$(rstat ember_rest_tasks_started)" = 0 ] || fail "a refused PUT started a task"
ok "refused bodies: each its answer, the configuration unchanged, no task"

# --- the manual's command ------------------------------------------------------------------
# thread_lab's threads start a second after it (start_gate.h), under the task; ~10 s of contention
"$PROGS/thread_lab" contention 80 100 > "$TMP/ct.out" & W=$!; CLEANUP_PIDS+=("$W")
expect "the manual's command" 200 "New config takes effect" "$(put 'json={"cmd": {"probe": ["oncpu", "syscall_file", "syscall_net", "syscall_sched", "syscall_lock"]}, "snoopers": {"proc_name": [{"comm": "thread_lab"}]}, "state": "running"}')"
D=
for _ in $(seq 100); do
  D=$(ls -d "$AGENT_OUT"/rest-threads-"$W"-* 2>/dev/null | head -1)
  [ -n "$D" ] && grep -q CompeteThd2 "$D/threads.json" 2>/dev/null && grep -q CompeteThd1 "$D/threads.json" && break
  sleep 0.1
done
[ -n "$D" ] || { tail "$TMP/agent.log"; fail "no task directory rest-threads-$W-* under $AGENT_OUT"; }
sleep 1.5   # a few more windows
kill -0 "$W" 2>/dev/null || fail "the workload ended before the stop: the stop would not be tested"
python3 - "$D/threads.json" "$W" <<'PY' || fail "threads.json does not hold the workload's events in gala-gopher's shape"
import json, sys
path, pid = sys.argv[1], int(sys.argv[2])
res = ["host.id", "host.name", "thread.pid", "thread.tgid", "thread.comm", "proc.name", "container.id", "container.name"]
by = {}
for n, line in enumerate(open(path), 1):
    m = json.loads(line)
    assert m["SeverityText"] == "INFO" and m["SeverityNumber"] == 9 and "Timestamp" in m and "Body" in m, m
    r = m["Resource"]
    assert all(k in r for k in res), f"line {n}: Resource {r}"
    assert r["thread.tgid"] == pid and r["proc.name"] == "thread_lab", f"line {n}: another process {r}"
    for v in m["Attributes"]["values"]:
        assert all(k in v for k in ("event.name", "event.type", "start_time", "end_time", "duration", "count")), v
        by.setdefault(r["thread.comm"], []).append(v)
print({c: len(v) for c, v in by.items()})
t1, t2 = by.get("CompeteThd1", []), by.get("CompeteThd2", [])
cpu = sum(v["duration"] for v in t1 if v["event.type"] == "oncpu")
waits = [v for v in t2 if v["event.name"] == "futex" and v["event.type"] == "lock"]
nets = [v for v in t2 if v["event.name"] == "write" and v["event.type"] == "net"]
stacks = [v["func.stack"] for v in waits if "pthread_mutex_lock" in v.get("func.stack", "")]
print(f"CompeteThd1 on CPU {cpu:.0f} ms; CompeteThd2 {len(waits)} futex waits ({len(stacks)} with a stack), "
      f"{sum(v['count'] for v in nets)} socket writes on {set(v.get('sock.conn') for v in nets)}")
sys.exit(0 if cpu >= 300 and waits and stacks and nets and all(v.get("sock.conn") for v in nets) else 1)
PY
ok "the manual's command: CompeteThd1's on-CPU time, CompeteThd2's futex waits with stacks and socket writes in $D/threads.json"

# --- GET shows it; a refused PUT while running changes nothing ------------------------------
curl -s "$U/tprofiling" > "$TMP/get1.json"
python3 - "$TMP/get1.json" <<'PY' || fail "GET does not show the configuration"
import json, sys
d = json.load(open(sys.argv[1]))
print("GET:", json.dumps(d))
sys.exit(0 if d["state"] == "running" and d["cmd"]["probe"] == ["oncpu", "syscall_file", "syscall_net", "syscall_lock",
         "syscall_sched"] and d["snoopers"]["proc_name"][0]["comm"] == "thread_lab" and not d["snoopers"]["proc_id"] else 1)
PY
expect "a refused PUT while running" 400 "offcpu is a sub-item of gala-gopher's tprofiling" \
  "$(put 'json={"cmd": {"probe": ["offcpu"]}, "state": "stopped"}')"
[ "$(curl -s "$U/tprofiling")" = "$(cat "$TMP/get1.json")" ] || fail "a refused PUT changed the running configuration"
[ ! -e "$D/task.json" ] && [ "$(tasks "$W-")" = 1 ] || fail "a refused PUT ended or restarted the task"

# --- stopped: the task ends (finished), nothing starts again ---------------------------------
started=$(rstat ember_rest_tasks_started)
expect "stop" 200 "New config takes effect" "$(put 'json={"state": "stopped"}')"
for _ in $(seq 100); do [ -s "$D/task.json" ] && break; sleep 0.1; done
kill -0 "$W" 2>/dev/null || fail "the workload ended by itself before the task did: the stop is not what ended it"
cat "$D/task.json"
python3 - "$D/task.json" <<'PY' || fail "the stop did not finish the thread task"
import json, sys
t = json.load(open(sys.argv[1]))
sys.exit(0 if t["state"] == "finished" and t["kind"] == "threads" and t["events"] > 0 and t["events_lost"] == 0 else 1)
PY
[ -s "$D/threads.html" ] || fail "no timeline threads.html at the task's end"
sleep 2.5
[ "$(tasks "$W-")" = 1 ] && [ "$(rstat ember_rest_tasks_started)" = "$started" ] || fail "a task started after the stop"
grep -q '"state": "stopped"' <(curl -s "$U/tprofiling") || fail "GET does not say stopped"
ok "stopped: the task finished while the process ran, and nothing started again"
wait "$W" || fail "the workload failed"
stop_agent || fail "agent exited with an error"
