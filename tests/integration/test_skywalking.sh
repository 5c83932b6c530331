#!/usr/bin/env bash
# The skywalking backend against a stand-in OAP (tests/oap_receiver.py, which
# validates what the OAP validates): processes reported and kept alive, a task
# from the OAP picked up within one check interval, profiling data with the
# task on the first message and the test program's frames innermost first,
# meters with service/instance/timestamp, and an OAP outage survived without
# restarting the exporter, losing at most the configured buffer.
. "$(dirname "$0")/lib.sh"
need_bpf
PY=/usr/bin/python3   # Debian's python3 has the Debian grpc modules; a pyenv one may not
if ! $PY -c "import grpc, grpc_tools.protoc, google.protobuf" 2>/dev/null; then
  "$ROOT/deploy/install-deps.sh" >/dev/null 2>&1 || true
  $PY -c "import grpc, grpc_tools.protoc, google.protobuf" 2>/dev/null ||
    skip "python3-grpcio / python3-grpc-tools / python3-protobuf cannot be installed"
fi
[ -x "$PROGS/oncpu_chain" ] && [ -x "$PROGS/offcpu_wait" ] || fail "test programs not built in $PROGS"
OUTAGE=${OUTAGE:-12}
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
REC=$TMP/rec.jsonl TASKS=$TMP/tasks.json TOKEN=ember-test-token-$RANDOM
: > "$REC"

start_receiver() {
  $PY "$ROOT/tests/oap_receiver.py" --port "$PORT" --record "$REC" --tasks "$TASKS" --auth "$TOKEN" \
    >>"$TMP/receiver.log" 2>&1 &
  RECV=$!
  CLEANUP_PIDS+=("$RECV")
  for _ in $(seq 100); do
    grep -q "listening on" "$TMP/receiver.log" 2>/dev/null && return 0
    kill -0 "$RECV" 2>/dev/null || { cat "$TMP/receiver.log"; fail "receiver exited"; }
    sleep 0.1
  done
  fail "receiver did not start"
}
start_receiver

"$PROGS/oncpu_chain" 120 & W=$!; CLEANUP_PIDS+=("$W")
# The off-CPU workload measures 4 s once its OAP task runs (the gate), then exits: its own
# clock is the truth for what the OAP receives.
EMBER_TEST_GO=$TMP/go.off "$PROGS/offcpu_wait" 4 > "$TMP/wo.out" & WO=$!; CLEANUP_PIDS+=("$WO")
# Python services run as root: Rover reports python* as not supported, and the exporter
# (ember-exporter) cannot read their /proc/PID/exe; ember profiles them, and says so.  One is
# known by its bare name (argv[0] "python3": no path to guess), one by its path.
bash -c 'exec -a python3 /usr/bin/python3 -c "import time; time.sleep(120)" ember-it-pyapp' & WPY=$!
CLEANUP_PIDS+=("$WPY")
/usr/bin/python3 -c 'import time; time.sleep(120)' ember-it-pyapp2 & WPY2=$!; CLEANUP_PIDS+=("$WPY2")

AGENT_RUN=$TMP/run
cat > "$TMP/ember.yaml" <<YAML
ember:
  run_dir: $AGENT_RUN
  output_dir: $TMP/out
exporter:
  backends: [file, skywalking]
  queue_size: 64KiB
core:
  backend:
    addr: 127.0.0.1:$PORT
    check_period: 1
    authentication: $TOKEN
process_discovery:
  heartbeat_period: 2s
  scanner:
    mode: REGEX
    regex:
      - match_cmd: "progs/(oncpu_chain|offcpu_wait)"
        layer: OS_LINUX
        service_name: "ember-it-{{.Finder.RegexMatchGroup 1}}"
        instance_name: "{{.Rover.HostName}}"
        process_name: "{{.Process.ExeName}}"
        labels: "ember-test"
      - match_cmd: "ember-it-(pyapp2?)"
        layer: OS_LINUX
        service_name: "ember-it-{{.Finder.RegexMatchGroup 1}}"
        instance_name: "{{.Rover.HostName}}"
        process_name: "python3"
profiling:
  check_interval: 2s
  flush_interval: 1s
  continuous: { policies: [] }   # the OAP's tasks only: the default policy would profile oncpu_chain itself
YAML
"$EMBER" run --config "$TMP/ember.yaml" >"$TMP/agent.log" 2>&1 &
AGENT_PID=$!
CLEANUP_PIDS+=("$AGENT_PID")
for _ in $(seq 100); do
  [ -S "$AGENT_RUN/analyzer/analyzer-0.ctl" ] && break
  kill -0 "$AGENT_PID" 2>/dev/null || { cat "$TMP/agent.log"; fail "agent exited at start"; }
  sleep 0.1
done

# JSON-lines checks live in one Python helper: check NAME [args] -> exit 0/1 with a message.
check() { $PY - "$REC" "$@" <<'PY'
import json, sys
rec, what, args = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = [json.loads(l) for l in open(rec) if l.strip()]
def out(ok, msg): print(msg); sys.exit(0 if ok else 1)
if what == "process":
    pid = int(args[0])
    rep = [p["hostProcess"] for r in rows if r["rpc"] == "reportProcesses" and r["ok"] for p in r["req"].get("processes", []) if "hostProcess" in p]
    mine = [p for p in rep if p.get("pid") == pid]
    if not mine: out(False, "process %d not reported" % pid)
    p = mine[-1]; e = p["entity"]; props = {kv["key"]: kv["value"] for kv in p.get("properties", [])}
    ka = [q for r in rows if r["rpc"] == "keepAlive" and r["ok"] for q in r["req"].get("processes", []) if q["entityMetadata"] == e]
    kasup = [kv["value"] for q in ka for kv in q.get("properties", []) if kv["key"] == "support_ebpf_profiling"]
    bad_ka = [r["error"] for r in rows if r["rpc"] == "keepAlive" and not r["ok"]]
    ok = (e["layer"] == "OS_LINUX" and e["serviceName"] == "ember-it-oncpu_chain" and e["processName"] == "oncpu_chain"
          and e.get("labels") == ["ember-test"] and props.get("support_ebpf_profiling") == "true"
          and props.get("pid") == str(pid) and "oncpu_chain" in props.get("command_line", "")
          and len(ka) >= 1 and set(kasup) == {"true"} and not bad_ka)
    out(ok, "reported %s props %s, %d keep-alives (support %s), refused keep-alives %s" % (e, props, len(ka), set(kasup), bad_ka))
if what == "support":
    pid = int(args[0])
    rep = [p["hostProcess"] for r in rows if r["rpc"] == "reportProcesses" and r["ok"] for p in r["req"].get("processes", []) if "hostProcess" in p]
    props = [{kv["key"]: kv["value"] for kv in p.get("properties", [])} for p in rep if p.get("pid") == pid]
    out(bool(props) and props[-1].get("support_ebpf_profiling") == "true",
        "process %d reported with %s" % (pid, props[-1] if props else "nothing"))
if what == "profile":
    task, since = args[0], int(args[1])
    streams = [r for r in rows if r["rpc"] == "collectProfilingData" and r["t"] >= since]
    if not streams: out(False, "no profiling data")
    errs = [r["error"] for r in streams if not r["ok"]]
    first_ok = all(r["req"] and "task" in r["req"][0] for r in streams)
    def of_task(r):   # a message without task belongs to the last task seen in the stream
        cur = None
        for m in r["req"]:
            cur = m["task"]["taskId"] if "task" in m else cur
            if cur == task: yield m
    mine = [m for r in streams for m in of_task(r)]
    if not mine: out(False, "no profiling data for task " + task)
    ids = {m["task"]["taskId"] for m in mine if "task" in m}
    chain, dumps, kernel_first = 0, 0, True
    for r in [{"req": mine}]:
        for m in r["req"]:
            if "onCPU" not in m: out(False, "task %s: a message without onCPU: %s" % (task, m))
            st = m["onCPU"]["stacks"]
            dumps += m["onCPU"].get("dumpCount", 0)
            types = [s.get("stackType", "PROCESS_KERNEL_SPACE") for s in st]
            if types != sorted(types, key=lambda t: t != "PROCESS_KERNEL_SPACE"): kernel_first = False
            for s in st:
                sy = s.get("stackSymbols", [])
                if s.get("stackType") == "PROCESS_USER_SPACE" and "leaf" in sy:
                    i = sy.index("leaf")
                    if sy[i:i + 3] == ["leaf", "middle", "outer"]: chain += m["onCPU"].get("dumpCount", 0)
    ok = not errs and first_ok and ids == {task} and chain > 0 and kernel_first and chain >= 0.5 * dumps
    out(ok, "%d streams, errors %s, task on first message %s, task ids %s, leaf<-middle<-outer samples %d of %d, kernel first %s"
        % (len(streams), errs, first_ok, ids, chain, dumps, kernel_first))
if what == "offcpu":
    # The program's own numbers (offcpu_wait's output): each blocking function's time within 0.5%,
    # its switches between the thread's voluntary switches and those plus its involuntary ones.
    task, prog = args[0], {}
    for l in open(args[1]):
        f = l.split()
        prog[tuple(f[:2])] = [int(x) for x in f[2:]]
    got = {"sleeper": [0, 0], "wait_on_pipe": [0, 0]}; bad = []
    for r in rows:
        if r["rpc"] != "collectProfilingData": continue
        cur = None
        for m in r["req"]:
            cur = m["task"]["taskId"] if "task" in m else cur
            if cur != task: continue
            if "offCPU" not in m: bad.append(m); continue
            names = {n for s in m["offCPU"]["stacks"] for n in s.get("stackSymbols", [])}
            for fn in got:
                if fn in names:
                    got[fn][0] += m["offCPU"].get("switchCount", 0); got[fn][1] += int(m["offCPU"].get("duration", 0))
    ok = not bad; msg = []
    for fn, thread in (("sleeper", "main"), ("wait_on_pipe", "waiter")):
        want = prog.get(("blocked_ns", fn), [0])[0]; vol, invol = prog.get(("switches", thread), [0, 0])
        sw, dur = got[fn]
        good = want > 0 and abs(dur - want) <= 0.005 * want and vol <= sw <= vol + invol
        ok = ok and good
        msg.append("%s %d switches (thread: %d voluntary, %d involuntary), %.4f s blocked (program: %.4f s)%s"
                   % (fn, sw, vol, invol, dur / 1e9, want / 1e9, "" if good else " <-- differs"))
    out(ok, "off-CPU: " + "; ".join(msg) + ", non-offCPU messages %d" % len(bad))
if what == "query":   # the first queryTasks at or after t
    t = int(args[0])
    q = [r["t"] for r in rows if r["rpc"] == "queryTasks" and r["t"] >= t]
    out(bool(q), str(q[0] if q else -1))
if what == "meters":
    b = [r for r in rows if r["rpc"] == "collectBatch"]
    bad = [r["error"] for r in b if not r["ok"]]
    md = [d for r in b for d in r["req"].get("meterData", [])]
    # the agent's meters carry service/instance/timestamp on every element;
    # network meters (Rover's rule) on the first element of each collection
    has = lambda d: d.get("service") and d.get("serviceInstance") and int(d.get("timestamp", 0)) > 0
    name = lambda d: (d.get("singleValue") or d.get("histogram"))["name"]
    full = all(has(r["req"]["meterData"][0]) for r in b if r["req"].get("meterData")) and \
        all(has(d) for d in md if name(d).startswith("ember_"))
    names = {(d.get("singleValue") or d.get("histogram"))["name"] for d in md}
    ok = b and not bad and full and "ember_exporter_envelopes" in names
    out(ok, "%d batches, %d meters, dropped %s, all with service/instance/timestamp %s, e.g. %s" % (len(b), len(md), bad, full, sorted(names)[:3]))
if what == "window":   # >= min profiling batches built in [a, b) (currentTime) arrived at or after c
    a, b_, c = int(args[0]), int(args[1]), int(args[2])
    least = int(args[3]) if len(args) > 3 else 1
    n = sum(1 for r in rows if r["rpc"] == "collectProfilingData" and r["t"] >= c for m in r["req"]
            if "task" in m and a <= int(m["task"]["currentTime"]) < b_)
    out(n >= least, "%d batches built during the outage arrived after it" % n)
if what == "after":
    c = int(args[0])
    n = sum(1 for r in rows if r["rpc"] in ("collectProfilingData", "keepAlive", "queryTasks") and r["t"] >= c)
    out(n > 0, "%d calls after the restart" % n)
out(False, "unknown check " + what)
PY
}
now_ms() { date +%s%3N; }
wait_for() {  # seconds, command...
  local t=$1; shift
  for _ in $(seq $((t * 10))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}

# 1. processes: reported with valid layer and support flag, then kept alive
wait_for 12 check process "$W" || { check process "$W"; tail -20 "$TMP/agent.log"; fail "process not reported and kept alive"; }
ok "$(check process "$W")"
for p in "$WPY" "$WPY2"; do
  wait_for 6 check support "$p" || { check support "$p"; fail "the python3 process $p is not reported as supported"; }
  ok "python3 (an interpreter, its executable unreadable to the exporter): $(check support "$p")"
done

# 2. a task for the test program is picked up within one check interval plus one exporter tick
TASK=$(printf '%064x' "$RANDOM$RANDOM")
# The worst case: the task appears right after a query, so the next one is a
# whole check interval away.
QP=$(now_ms)
wait_for 4 check query "$QP" || fail "no task queries"
T0=$(now_ms)
cat > "$TASKS.tmp" <<JSON
[{"taskId": "$TASK", "serviceName": "ember-it-oncpu_chain", "targetType": "ON_CPU", "startTime": $T0,
  "duration": 90, "updateTime": $T0, "labels": ["ember-test"], "extension": "null"},
 {"taskId": "off$TASK", "serviceName": "ember-it-offcpu_wait", "targetType": "OFF_CPU", "startTime": $T0,
  "duration": 90, "updateTime": $T0, "extension": "null"},
 {"taskId": "net$TASK", "serviceName": "ember-it-oncpu_chain", "targetType": "NETWORK", "startTime": $T0,
  "duration": 60, "updateTime": $((T0 - 1)), "extension": "{\"NetworkSamplings\": []}"},
 {"taskId": "py$TASK", "serviceName": "ember-it-pyapp", "targetType": "OFF_CPU", "startTime": $T0,
  "duration": 5, "updateTime": $T0, "extension": "null"}]
JSON
mv "$TASKS.tmp" "$TASKS"
wait_for 4 grep -q "OAP task $TASK: on-CPU profiling of process $W" "$TMP/agent.log" ||
  { tail -20 "$TMP/agent.log"; fail "task not picked up within one check interval"; }
T1=$(now_ms)
Q=$(check query "$T0") || fail "no task query after the task was created"
# Queries run on a check_interval grid, each on the first 250 ms exporter
# tick at or after its time, so one comes within 2000 + 250 ms (+ 50 ms for
# the call to reach the receiver); the answer wakes the exporter at once.  So
# the task is handled within one check interval plus one tick, 2250 ms.  The
# slack: this script sees the log line by polling every 100 ms, and `date`
# plus the grep cost a few ms; 2400 ms fails an exporter that waits for a
# further tick (2500 ms worst case) or drifts off the grid.
[ $((Q - T0)) -le 2300 ] || fail "first task query $((Q - T0)) ms after the task was created (check_interval 2 s + one 250 ms tick)"
[ $((T1 - T0)) -le 2400 ] || fail "task handled $((T1 - T0)) ms after the OAP had it (check_interval 2 s + one 250 ms tick)"
wait_for 5 grep -q "OAP task $TASK started on process $W" "$TMP/agent.log" ||
  { tail -20 "$TMP/agent.log"; fail "task picked up but not started by the analyzer"; }
T2=$(now_ms)
ok "task queried $((Q - T0)) ms after the OAP had it, handled after $((T1 - T0)) ms, running after $((T2 - T0)) ms"
grep -q "OAP task net$TASK: network profiling of 1 process(es) of ember-it-oncpu_chain/" "$TMP/agent.log" ||
  fail "NETWORK task not taken for the instance's process"
# The OAP offers tasks only for processes reported supported: the python3 one gets its task.
wait_for 5 grep -q "OAP task py$TASK started on process $WPY" "$TMP/agent.log" ||
  { grep "py$TASK" "$TMP/agent.log"; fail "the OAP's off-CPU task on the python3 process did not start"; }
ok "the OAP offered the python3 process an off-CPU task and it started"

# 3. profiling data: task on the first message, leaf/middle/outer innermost first
wait_for 10 check profile "$TASK" "$T0" || { check profile "$TASK" "$T0"; fail "profiling data wrong or missing"; }
ok "$(check profile "$TASK" "$T0")"

wait_for 10 grep -q "OAP task off$TASK started on process $WO" "$TMP/agent.log" ||
  { tail -20 "$TMP/agent.log"; fail "the off-CPU task did not start on offcpu_wait"; }
touch "$TMP/go.off"
wait "$WO" || fail "offcpu_wait failed"
wait_for 10 check offcpu "off$TASK" "$TMP/wo.out" || { check offcpu "off$TASK" "$TMP/wo.out"; fail "off-CPU data wrong or missing"; }
ok "$(check offcpu "off$TASK" "$TMP/wo.out")"

# 4. meters
check meters >/dev/null || { check meters; fail "meters"; }
ok "$(check meters)"

# 5. OAP outage: one log line per state change, data buffered (bounded), recovery without restart
kill "$RECV"; wait "$RECV" 2>/dev/null
D0=$(now_ms)
sleep "$OUTAGE"
D1=$(now_ms)
start_receiver
wait_for 20 check after "$D1" || { tail -20 "$TMP/agent.log"; fail "no calls after the OAP came back"; }
wait_for 20 check window "$D0" "$D1" "$D1" || true
"$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats" || fail "ember stats failed"
down=$(grep -c "unreachable" "$TMP/agent.log")
up=$(grep -c "connected to SkyWalking OAP" "$TMP/agent.log")
dropped=$(awk '$2 == "ember_skywalking_queue_dropped_bytes" {print $3}' "$TMP/stats")
[ "$down" = 1 ] || { grep -i "skywalking\|oap" "$TMP/agent.log"; fail "expected one 'unreachable' line, got $down"; }
[ "$up" = 2 ] || { grep -i "skywalking\|oap" "$TMP/agent.log"; fail "expected two 'connected' lines, got $up"; }
grep -E "supervisor +supervisor_exporter_restarts +0$" "$TMP/stats" >/dev/null || fail "the exporter was restarted"
# Two tasks flush a batch each per second; when the buffer overflows, meter
# batches (cumulative, superseded by later ones) go before profiling data.
wait_for 10 check window "$D0" "$D1" "$D1" "$OUTAGE" ||
  { check window "$D0" "$D1" "$D1" "$OUTAGE"; fail "profiling data of the outage lost (dropped ${dropped:-0} bytes)"; }
check profile "$TASK" "$D1" >/dev/null || { check profile "$TASK" "$D1"; fail "profiling data after recovery"; }
ok "outage of ${OUTAGE}s: one down/up line each, exporter not restarted, dropped ${dropped:-0} bytes, $(check window "$D0" "$D1" "$D1")"
grep -E "skywalking_(rpc|queue|profile|tasks)" "$TMP/stats"

# 6. a restarted exporter (new agent id, as Rover after a restart) finds the
# running task again through the OAP and keeps sending its data
X=$(pgrep -P "$AGENT_PID" -x ember-exporter | head -1)
kill -9 "$X" || fail "no exporter to kill"
K=$(now_ms)
adopted() { sed -n "/exporter (pid $X) was killed/,\$p" "$TMP/agent.log" | grep -q "OAP task $TASK started on process $W"; }
wait_for 15 adopted ||
  { tail -20 "$TMP/agent.log"; fail "the restarted exporter did not take the running task back"; }
wait_for 10 check profile "$TASK" "$K" || { check profile "$TASK" "$K"; fail "no profiling data after the exporter restart"; }
ok "exporter restarted: task adopted, $(check profile "$TASK" "$K")"
stop_agent || fail "agent exited with an error"
