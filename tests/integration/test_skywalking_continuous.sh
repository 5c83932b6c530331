#!/usr/bin/env bash
# Continuous profiling from a SkyWalking OAP (tests/oap_receiver.py answers as
# the OAP does): the agent asks queryPolicies for its reported services, a
# policy on process CPU holds for a program that burns a core,
# reportProfilingTask carries the process's entity, the cause (threshold and
# current value), the duration and the on-CPU target, and the profiling data
# goes up under the task id the OAP returned; the monitor's value goes up as
# rover_con_p_process_cpu with Rover's labels; the OAP updating the policy
# replaces it, removing it removes it from the analyzer.
. "$(dirname "$0")/lib.sh"
need_bpf
PY=/usr/bin/python3
$PY -c "import grpc, grpc_tools.protoc, google.protobuf" 2>/dev/null || skip "python3 grpc modules missing"
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
REC=$TMP/rec.jsonl POL=$TMP/policies.json TAG=cp-oap-$$
: > "$REC"
cat > "$POL" <<JSON
[{"serviceName": "ember-cp-burn", "uuid": "u1",
  "profiling": {"ON_CPU": {"PROCESS_CPU": {"Threshold": "50", "Period": 5, "Count": 3, "URIList": null, "URIRegex": null}}}}]
JSON
$PY "$ROOT/tests/oap_receiver.py" --port "$PORT" --record "$REC" --policies "$POL" >"$TMP/receiver.log" 2>&1 &
CLEANUP_PIDS+=("$!")
for _ in $(seq 100); do grep -q "listening on" "$TMP/receiver.log" && break; sleep 0.1; done
"$PROGS/burn_later" 4 60 "$TAG" > "$TMP/burn.out" & B=$!; CLEANUP_PIDS+=("$B")
start_oap_cp_agent "$PORT" "      - match_cmd: \"burn_later .* $TAG\"
        layer: OS_LINUX
        service_name: ember-cp-burn
        instance_name: \"{{.Rover.HostName}}\"
        process_name: \"{{.Process.ExeName}}\"" 4s
for _ in $(seq 40); do oap_called "$REC" collectProfilingData && break; sleep 1; done
sleep 3   # the 4 s task ends and its last data goes up
$PY - "$REC" "$B" "$(awk '$1 == "burn_start_unix_ms" {print $2}' "$TMP/burn.out")" <<'PY' || { tail -20 "$TMP/agent.log"; fail "the OAP did not see the continuous-profiling exchange Rover makes"; }
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
pid, start = int(sys.argv[2]), int(sys.argv[3])
bad = 0
def fail(msg):
    global bad
    print("FAIL:", msg); bad = 1
q = [r for r in rows if r["rpc"] == "queryPolicies"]
svc = [p for r in q for p in r["req"].get("policies", [])]
print("queryPolicies: %d calls; services asked: %s" % (len(q), sorted(set((p["serviceName"], p.get("uuid", "")) for p in svc))))
if ("ember-cp-burn", "") not in set((p["serviceName"], p.get("uuid", "")) for p in svc): fail("never asked without a policy held")
if ("ember-cp-burn", "u1") not in set((p["serviceName"], p.get("uuid", "")) for p in svc): fail("never asked with the policy's UUID")
rep = [r for r in rows if r["rpc"] == "reportProfilingTask"]
if len(rep) != 1: fail("%d reportProfilingTask calls, expected 1 (silence 10 min)" % len(rep)); sys.exit(1)
r = rep[0]["req"]
print("reportProfilingTask:", json.dumps(r), "->", rep[0]["error"], "%.1f s after the burning began" % ((rep[0]["t"] - start) / 1000))
c = r.get("causes", [{}])[0]
if (r.get("layer"), r.get("serviceName"), r.get("processName")) != ("OS_LINUX", "ember-cp-burn", "burn_later") or not r.get("instanceName"):
    fail("wrong entity")
if c.get("type", "ProcessCPU") != "ProcessCPU" or c.get("singleValue", {}).get("threshold") != 50 or not c["singleValue"].get("current", 0) >= 50:
    fail("wrong cause")
if r.get("duration") != 4 or "onCPU" not in r: fail("wrong duration or target")
task_id = rep[0]["error"]
prof = [r for r in rows if r["rpc"] == "collectProfilingData"]
ids = set(m.get("task", {}).get("taskId") for r in prof for m in r["req"] if m.get("task"))
print("collectProfilingData: %d streams, task ids %s" % (len(prof), ids))
if task_id not in ids: fail("the profiling data does not go up under the OAP's task id")
samples = [m for r in prof for m in r["req"] if "onCPU" in m and m.get("task", {}).get("taskId", task_id) == task_id]
if not samples: fail("no on-CPU data")
meters = [(d["singleValue"]["name"], [(l["name"], l["value"]) for l in d["singleValue"].get("labels", [])], d.get("service"), d["singleValue"].get("value", 0))
          for r in rows if r["rpc"] == "collectBatch" for d in r["req"].get("meterData", []) if "singleValue" in d and d["singleValue"]["name"].startswith("rover_con_p_")]
print("rover_con_p meters: %d, e.g. %s" % (len(meters), meters[-1:] if meters else None))
if not any(n == "rover_con_p_process_cpu" and [k for k, _ in l] == ["process_name", "layer"] and dict(l)["process_name"] == "burn_later"
           and dict(l)["layer"] == "OS_LINUX" and s == "ember-cp-burn" and v >= 50 for n, l, s, v in meters):
    fail("no rover_con_p_process_cpu meter of the burner with Rover's labels")
sys.exit(bad)
PY
for _ in $(seq 20); do t=$(ls "$TMP"/out/sw-trigger-"$B"-*/task.json 2>/dev/null | head -1); [ -n "$t" ] && break; sleep 0.5; done
[ -n "$t" ] && grep -q '"trigger":\[{"policy":"ember-cp-burn","monitor":"PROCESS_CPU"' "$t" || { ls "$TMP"/out; cat "$t" 2>/dev/null; fail "the file output lacks the trigger's reason"; }
ok "an OAP policy started an on-CPU task through reportProfilingTask, with Rover's cause, id and meters"
# The OAP updates the policy (a new UUID): the agent asks with u1 and takes u2.
cat > "$POL" <<JSON
[{"serviceName": "ember-cp-burn", "uuid": "u2",
  "profiling": {"OFF_CPU": {"PROCESS_THREAD_COUNT": {"Threshold": "500", "Period": 10, "Count": 5}}}}]
JSON
for _ in $(seq 30); do grep -q "policy u2 of service 'ember-cp-burn'" "$TMP/agent.log" && break; sleep 0.5; done
grep -q "policy u2 of service 'ember-cp-burn'" "$TMP/agent.log" || fail "the updated policy did not replace the one held"
asked_u2() { $PY - "$REC" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
sys.exit(0 if any(p.get("uuid") == "u2" for r in rows if r["rpc"] == "queryPolicies" for p in r["req"].get("policies", [])) else 1)
PY
}
for _ in $(seq 20); do asked_u2 && break; sleep 0.5; done
asked_u2 || fail "the agent did not ask with the UUID it held"
ok "the OAP's update of the policy replaced it"
# The OAP removes the policy: the next queryPolicies (UUID u2 held) gets it removed.
echo '[]' > "$POL"
for _ in $(seq 30); do
  n=$("$EMBER" stats --config "$TMP/ember.yaml" 2>/dev/null | awk '$1 == "analyzer0" && $2 == "ember_continuous_policies" {print $3}')
  [ "$n" = 0 ] && break
  sleep 0.5
done
[ "$n" = 0 ] || fail "the analyzer still holds $n policies after the OAP removed it"
ok "the OAP's removal of the policy reached the analyzer"
kill -TERM "$AGENT_PID"; wait "$AGENT_PID" || fail "agent exited with an error"
