#!/usr/bin/env bash
# Continuous profiling from an OAP, NETWORK target, two processes of one
# service instance holding in the same check: Rover reports one task for the
# instance, named after its main process (labelled mesh-application, else
# k8s-service, else the first).  The unlabelled process has the lower pid, so
# the analyzer's check (in pid order) gives its trigger to the exporter first;
# the report still names the k8s-service one, with its causes, and covers
# the instance: one reportProfilingTask, one NETWORK task on both pids.
. "$(dirname "$0")/lib.sh"
need_bpf
PY=/usr/bin/python3
$PY -c "import grpc, grpc_tools.protoc, google.protobuf" 2>/dev/null || skip "python3 grpc modules missing"
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
REC=$TMP/rec.jsonl POL=$TMP/policies.json TAG=cp-main-$$
: > "$REC"
cat > "$POL" <<JSON
[{"serviceName": "ember-cp-main", "uuid": "u1",
  "profiling": {"NETWORK": {"PROCESS_THREAD_COUNT": {"Threshold": "0", "Period": 1, "Count": 1}}}}]
JSON
$PY "$ROOT/tests/oap_receiver.py" --port "$PORT" --record "$REC" --policies "$POL" >"$TMP/receiver.log" 2>&1 &
CLEANUP_PIDS+=("$!")
for _ in $(seq 100); do grep -q "listening on" "$TMP/receiver.log" && break; sleep 0.1; done
bash -c "exec -a ember-plain-$TAG sleep 600" & A=$!; CLEANUP_PIDS+=("$A")
bash -c "exec -a ember-svc-$TAG sleep 600" & S=$!; CLEANUP_PIDS+=("$S")
[ "$A" -lt "$S" ] || skip "pids wrapped around between the two processes"
start_oap_cp_agent "$PORT" "      - match_cmd: \"^ember-plain-$TAG\"
        layer: OS_LINUX
        service_name: ember-cp-main
        instance_name: one
        process_name: plain
      - match_cmd: \"^ember-svc-$TAG\"
        layer: OS_LINUX
        service_name: ember-cp-main
        instance_name: one
        process_name: svc
        labels: [k8s-service]" 3s
for _ in $(seq 40); do oap_called "$REC" reportProfilingTask && break; sleep 0.5; done
sleep 3 # a second report, if any, would come within the gathering
grep "OAP policy of service 'ember-cp-main' held" "$TMP/agent.log" | head -3
[ "$(grep -c "OAP policy of service 'ember-cp-main' held for .* (pid \($A\|$S\))" "$TMP/agent.log")" -ge 2 ] \
  || { tail -20 "$TMP/agent.log"; fail "both processes did not hold the policy"; }
$PY - "$REC" <<'PY' || { tail -20 "$TMP/agent.log"; fail "the instance's report does not name its main process"; }
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rep = [r for r in rows if r["rpc"] == "reportProfilingTask"]
for r in rep: print("reportProfilingTask:", json.dumps(r["req"]))
sys.exit(0 if len(rep) == 1 and rep[0]["req"].get("processName") == "svc" and rep[0]["req"].get("instanceName") == "one"
         and "network" in rep[0]["req"] and rep[0]["req"]["causes"][0].get("singleValue", {}).get("current", 0) >= 1 else 1)
PY
# The task covers the instance: both processes.
for _ in $(seq 20); do grep -q "OAP task .* started on analyzer" "$TMP/agent.log" && break; sleep 0.5; done
grep "network profiling of" "$TMP/agent.log"
grep -q "OAP task cp-.*: network profiling of 2 process(es) of ember-cp-main/one" "$TMP/agent.log" \
  || fail "the network task does not cover both processes of the instance"
ok "one report for the instance, named after its k8s-service process, covering both"
kill -TERM "$AGENT_PID"; wait "$AGENT_PID" || fail "agent exited with an error"
