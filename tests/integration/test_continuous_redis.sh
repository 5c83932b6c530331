#!/usr/bin/env bash
# Continuous profiling, L7 monitors of a protocol other than HTTP: a client
# sends redis-server SET then INCR on the same key, so every INCR is an error
# reply (not an integer) and half the exchanges fail.  REDIS_ERROR_RATE over
# 40% fires its on-CPU task with that cause; an HTTP_ERROR_RATE item on the
# same process, threshold 0, never fires (HTTP counts HTTP exchanges only);
# the Redis error rate is on /metrics under its own name.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
start_redis
PROM_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
AGENT_BACKENDS="file, prometheus" AGENT_EXPORTER_YAML="  prometheus: { address: 127.0.0.1, port: $PROM_PORT }"
AGENT_POLICIES="[{Name: cache, MatchCmd: 'redis-server .*:$REDIS_PORT', Profiling: {
  ON_CPU: {REDIS_ERROR_RATE: {Threshold: 40, Period: 5, Count: 2}},
  OFF_CPU: {HTTP_ERROR_RATE: {Threshold: 0, Period: 5, Count: 1}}}}]"
AGENT_CONTINUOUS="check_interval: 1s, trigger: {execute_duration: 3s, silence_duration: 10m}"
start_agent
drive() { # seconds
  local end=$((SECONDS + $1))
  while [ $SECONDS -lt $end ]; do printf 'SET k v\r\nINCR k\r\n'; sleep 0.05; done | redis-cli -p "$REDIS_PORT" >/dev/null
}
drive 10
on=$(ls -d "$AGENT_OUT"/auto-oncpu-"$REDIS_PID"-* 2>/dev/null | head -1)
[ -n "$on" ] || { tail -20 "$TMP/agent.log"; fail "no on-CPU task from the Redis error rate"; }
[ -z "$(ls -d "$AGENT_OUT"/auto-offcpu-* 2>/dev/null)" ] || fail "the HTTP item fired on Redis exchanges"
for _ in $(seq 20); do [ -s "$on/task.json" ] && break; sleep 0.5; done
python3 - "$on/task.json" <<'PY' || fail "the Redis cause is wrong"
import json, sys
c = json.load(open(sys.argv[1]))["trigger"][0]
print("on-CPU:", json.dumps(c))
# each second holds about as many SETs as INCRs: 50%, give or take the pair a slot boundary splits
sys.exit(0 if c["monitor"] == "REDIS_ERROR_RATE" and 40 <= c["current"] <= 60 and c["threshold"] == 40 else 1)
PY
drive 2 # a check with fresh slots for /metrics
curl -s "http://127.0.0.1:$PROM_PORT/metrics" > "$TMP/metrics.txt" || fail "no /metrics"
grep -E "^rover_con_p_redis_error_rate" "$TMP/metrics.txt" | head -2
grep -qE "^rover_con_p_redis_error_rate\{comm=\"redis-server\",pid=\"$REDIS_PID\",target=\"ON_CPU\",uri=\"global\"\} [0-9.]+$" "$TMP/metrics.txt" \
  || fail "/metrics lacks the Redis error rate of pid $REDIS_PID"
grep -q "^# HELP rover_con_p_redis_error_rate .*Redis exchanges" "$TMP/metrics.txt" || fail "no description of the Redis monitor"
grep -q "^rover_con_p_http_error_rate" "$TMP/metrics.txt" && fail "an HTTP error rate from Redis exchanges"
ok "the Redis error-rate item fired on Redis errors; the HTTP item saw no HTTP"
stop_agent || fail "agent exited with an error"
