#!/usr/bin/env bash
# Continuous profiling from an OAP with an HTTP monitor: nginx answers 500
# for /fail; the service's policy (NETWORK, HTTP_ERROR_RATE on /fail) holds,
# reportProfilingTask carries uri{path: /fail, threshold, current} and the
# network target samples /fail; rover_con_p_http_error_rate goes up with
# Rover's labels (uri, process_name, layer).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
PY=/usr/bin/python3
$PY -c "import grpc, grpc_tools.protoc, google.protobuf" 2>/dev/null || skip "python3 grpc modules missing"
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
REC=$TMP/rec.jsonl POL=$TMP/policies.json
: > "$REC"
cat > "$POL" <<JSON
[{"serviceName": "ember-cp-web", "uuid": "w1",
  "profiling": {"NETWORK": {"HTTP_ERROR_RATE": {"Threshold": "50", "Period": 5, "Count": 2, "URIList": ["/fail"]}}}}]
JSON
$PY "$ROOT/tests/oap_receiver.py" --port "$PORT" --record "$REC" --policies "$POL" >"$TMP/receiver.log" 2>&1 &
CLEANUP_PIDS+=("$!")
for _ in $(seq 100); do grep -q "listening on" "$TMP/receiver.log" && break; sleep 0.1; done
start_nginx
U=http://127.0.0.1:$NGINX_PORT
start_oap_cp_agent "$PORT" "      - match_cmd: \"nginx: worker process\"
        layer: OS_LINUX
        service_name: ember-cp-web
        instance_name: \"{{.Rover.HostName}}\"
        process_name: nginx-worker" 3s
end=$((SECONDS + 30))
while [ $SECONDS -lt $end ] && ! oap_called "$REC" reportProfilingTask; do
  for _ in 1 2 3 4 5; do curl -s -o /dev/null "$U/fail"; curl -s -o /dev/null "$U/small.txt"; done
  sleep 0.2
done
for _ in 1 2 3 4 5 6 7 8 9 10; do curl -s -o /dev/null "$U/fail"; sleep 0.2; done  # the meters of the last slots
$PY - "$REC" <<'PY' || { tail -20 "$TMP/agent.log"; fail "the OAP did not get Rover's HTTP trigger and meters"; }
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
bad = 0
rep = [r for r in rows if r["rpc"] == "reportProfilingTask"]
if len(rep) != 1:
    print("FAIL: %d reportProfilingTask calls" % len(rep)); sys.exit(1)
r = rep[0]["req"]
print("reportProfilingTask:", json.dumps(r))
c = r.get("causes", [{}])[0]
if c.get("type") != "HTTPErrorRate" or c.get("uri", {}).get("path") != "/fail" or c["uri"].get("threshold") != 50 \
        or c["uri"].get("current") != 100:
    print("FAIL: wrong cause"); bad = 1
if r.get("network", {}).get("samplingURIRegexes") != ["/fail"] or r.get("serviceName") != "ember-cp-web" \
        or r.get("processName") != "nginx-worker":
    print("FAIL: wrong target or entity"); bad = 1
m = [(d["singleValue"]["name"], [(l["name"], l["value"]) for l in d["singleValue"].get("labels", [])], d["singleValue"].get("value", 0))
     for x in rows if x["rpc"] == "collectBatch" for d in x["req"].get("meterData", [])
     if "singleValue" in d and d["singleValue"]["name"] == "rover_con_p_http_error_rate"]
print("rover_con_p_http_error_rate values: %d, e.g. %s" % (len(m), m[:1]))
if not m or any([k for k, _ in l] != ["uri", "process_name", "layer"] or dict(l)["uri"] != "/fail" or v != 100 for _, l, v in m):
    print("FAIL: the HTTP meters are not Rover's"); bad = 1
sys.exit(bad)
PY
grep -q "continuous profiling: OAP task cp-[0-9a-f]*: network profiling of 1 process(es) of ember-cp-web/" "$TMP/agent.log" \
  || { grep "continuous profiling" "$TMP/agent.log"; fail "the triggered network task is not the instance's"; }
ok "an OAP HTTP error-rate policy: reportProfilingTask with the URI cause, a network task sampling it, Rover's HTTP meters"
kill -TERM "$AGENT_PID"; wait "$AGENT_PID" || fail "agent exited with an error"
