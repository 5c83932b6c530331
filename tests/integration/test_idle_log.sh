#!/usr/bin/env bash
# An idle agent keeps its log quiet: `ember run` with every periodic path
# running fast (the SkyWalking backend on a stand-in OAP that has no policy
# for the one process it discovers, which resends the unchanged policy set
# every sixth check; a local policy watching that idle process every second;
# the REST API; the file and Prometheus backends flushing every second, and a
# scrape now and then) writes no line twice over IDLE_S (40) seconds: what
# repeats at a steady state is news for nobody at INFO.
. "$(dirname "$0")/lib.sh"
need_bpf
PY=/usr/bin/python3
$PY -c "import grpc, grpc_tools.protoc, google.protobuf" 2>/dev/null || skip "python3 grpc modules missing"
PORT=$(free_port) PPORT=$(free_port) RPORT=$(free_port)
while [ "$PPORT" = "$PORT" ]; do PPORT=$(free_port); done
TAG=idle-log-$$
echo '[]' > "$TMP/policies.json"
$PY "$ROOT/tests/oap_receiver.py" --port "$PORT" --record "$TMP/rec.jsonl" --policies "$TMP/policies.json" \
  >"$TMP/receiver.log" 2>&1 & CLEANUP_PIDS+=("$!")
for _ in $(seq 100); do grep -q "listening on" "$TMP/receiver.log" && break; sleep 0.1; done
"$PROGS/burn_later" 600 1 "$TAG" idle > /dev/null & W=$!; CLEANUP_PIDS+=("$W")
cat > "$TMP/ember.yaml" <<YAML
ember: { run_dir: $TMP/run, output_dir: $TMP/out, rest_api: { enabled: true, address: 127.0.0.1, port: $RPORT } }
exporter: { backends: [file, skywalking, prometheus], prometheus: { address: 127.0.0.1, port: $PPORT } }
core: { backend: { addr: "127.0.0.1:$PORT", check_period: 1 } }
process_discovery:
  heartbeat_period: 1s
  scanner:
    mode: REGEX
    regex:
      - match_cmd: "burn_later .* $TAG"
        layer: OS_LINUX
        service_name: ember-idle
        instance_name: "{{.Rover.HostName}}"
        process_name: "{{.Process.ExeName}}"
profiling:
  check_interval: 1s
  flush_interval: 1s
  continuous:
    policies: [{Name: watch, MatchCmd: '$TAG', Profiling: {ON_CPU: {PROCESS_CPU: {Threshold: 1000, Period: 5, Count: 3}}}}]
    fetch_interval: 1s
    check_interval: 1s
YAML
"$EMBER" run --config "$TMP/ember.yaml" >"$TMP/agent.log" 2>&1 & AGENT_PID=$!; CLEANUP_PIDS+=("$AGENT_PID")
for _ in $(seq 100); do grep -q "REST control API on" "$TMP/agent.log" && break; sleep 0.1; done
for _ in $(seq "${IDLE_S:-40}"); do
  kill -0 "$AGENT_PID" 2>/dev/null || { cat "$TMP/agent.log"; fail "the agent exited"; }
  curl -s -o /dev/null "http://127.0.0.1:$PPORT/metrics"
  sleep 1
done
oap_called "$TMP/rec.jsonl" queryPolicies || { tail "$TMP/agent.log"; fail "the agent never asked the OAP for policies"; }
n=$(grep -c "continuous profiling: 0 OAP policies" "$TMP/agent.log")
echo "lines in ${IDLE_S:-40} s: $(wc -l < "$TMP/agent.log"); the OAP's empty policy set logged $n time(s)"
# The same text twice (time and pid aside) is a repetition.
sed -E 's/^[0-9:.]+ //; s/\[[0-9]+\]//' "$TMP/agent.log" | sort | uniq -c | sort -rn | awk '$1 > 1' > "$TMP/repeated.txt"
if [ -s "$TMP/repeated.txt" ]; then
  cat "$TMP/repeated.txt"; fail "an idle agent repeats lines in its log (above, with their counts)"
fi
[ "$n" = 1 ] || fail "the OAP's policies were never logged"
ok "an idle agent's log has no repeated line over ${IDLE_S:-40} s"
# Every counter of every backend is listed (the SkyWalking backend has more than 32).
"$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats.txt" 2>&1 || fail "ember stats failed"
grep -q "^exporter  *ember_skywalking_triggers_instance_silenced " "$TMP/stats.txt" ||
  fail "ember stats leaves out the SkyWalking backend's last counters"
stop_agent || fail "agent exited with an error"
