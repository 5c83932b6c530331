#!/usr/bin/env bash
# The prometheus exporter backend end to end: ember-exporter alone (backend
# `prometheus` on a free loopback port), one MeterBatch pushed into its PULL
# socket the way an analyzer does (a counter with labels that need escaping,
# a gauge, a histogram), then
#   - GET /metrics has the exact lines, passes `promtool check metrics`, and
#     carries the exporter's own meters; / answers, other paths 404, POST 405;
#   - a second exporter on the same port fails, naming address and port;
#   - a real Prometheus server scraping every second returns the pushed values
#     (and the escaped label) through its HTTP query API.
# Needs: build/ember-exporter (EXPORTER=... to use another), prometheus +
# promtool, python3 with zmq, curl.  Exit 77 only when those cannot be installed.
set -u
cd "$(dirname "$0")/../.."
EXPORTER=${EXPORTER:-${EMBER_BUILD:-$PWD/build}/ember-exporter}

PY=/usr/bin/python3
have_tools() {
  command -v prometheus >/dev/null && command -v promtool >/dev/null && command -v curl >/dev/null &&
    [ -x "$PY" ] && "$PY" -c 'import zmq' 2>/dev/null
}
if ! have_tools && [ "$(id -u)" = 0 ]; then
  echo "installing prometheus, python3-zmq, curl"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus python3-zmq curl >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus python3-zmq curl >/dev/null 2>&1; }
fi
if ! have_tools; then
  echo "SKIP: prometheus, promtool, curl or python3-zmq not installed and not installable"
  exit 77
fi
[ -x "$EXPORTER" ] || { echo "FAIL: $EXPORTER not built"; exit 1; }

T=$(mktemp -d /tmp/ember-prom.XXXXXX)
EXP_PID="" PROM_PID=""
cleanup() {
  for p in $EXP_PID $PROM_PID; do kill "$p" 2>/dev/null; done
  for p in $EXP_PID $PROM_PID; do wait "$p" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$T"/exporter.log "$T"/prometheus.log; do
    [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }
  done
  exit 1
}

free_port() {
  "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
EPORT=$(free_port)
PPORT=$(free_port)
while [ "$PPORT" = "$EPORT" ]; do PPORT=$(free_port); done
mkdir -p "$T/run/exporter" "$T/out" "$T/run2/exporter" "$T/tsdb"

cat >"$T/ember.yaml" <<EOF
ember:
  run_dir: $T/run
  output_dir: $T/out
profiling:
  flush_interval: 1s
exporter:
  backends: [prometheus]
  prometheus:
    address: 127.0.0.1
    port: $EPORT
EOF

"$EXPORTER" --config "$T/ember.yaml" >"$T/exporter.log" 2>&1 &
EXP_PID=$!
URL=http://127.0.0.1:$EPORT
for _ in $(seq 100); do
  curl -sf -o /dev/null "$URL/metrics" && break
  kill -0 "$EXP_PID" 2>/dev/null || fail "ember-exporter exited"
  sleep 0.1
done
curl -sf -o /dev/null "$URL/metrics" || fail "no /metrics on $URL after 10 s"
echo "exporter serving on $URL"

# One Envelope{meters} as an analyzer sends it, protobuf encoded by hand
# (proto/ember.proto field numbers), pushed into the exporter's PULL socket.
"$PY" - "ipc://$T/run/exporter/exporter.sock" <<'EOF' || fail "pushing the MeterBatch"
import struct, sys, time, zmq

def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)

def key(field, wt): return varint(field << 3 | wt)
def u(field, v): return key(field, 0) + varint(v)
def d(field, v): return key(field, 1) + struct.pack('<d', v)
def ld(field, b):
    if isinstance(b, str): b = b.encode()
    return key(field, 2) + varint(len(b)) + b

def label(n, v): return ld(2, ld(1, n) + ld(2, v))
def bucket(ub, c): return ld(5, d(1, ub) + u(2, c))
now = int(time.time() * 1000)

meters = [
    # Meter: name=1 labels=2 value=3 is_counter=4 buckets=5 hist_count=6 timestamp_ms=7 help=8
    ld(1, 'ember_test_requests') + label('analyzer', '0') + label('path', 'a"b\\c\nd') + d(3, 42) + u(4, 1)
        + u(7, now) + ld(8, 'Requests seen by the test'),
    ld(1, 'ember_test_temperature_celsius') + label('analyzer', '0') + d(3, -3.5) + u(7, now)
        + ld(8, 'A gauge'),
    ld(1, 'ember_test_latency_seconds') + label('analyzer', '0') + d(3, 3.25)
        + bucket(0.01, 2) + bucket(0.1, 5) + bucket(1, 7) + u(6, 8) + u(7, now) + ld(8, 'Latency'),
]
batch = b''.join(ld(1, m) for m in meters)
env = u(1, 1) + u(2, 0) + u(3, 1) + ld(12, batch)   # version, analyzer, seq, meters

ctx = zmq.Context()
s = ctx.socket(zmq.PUSH)
s.setsockopt(zmq.LINGER, 5000)
s.connect(sys.argv[1])
s.send(env)
s.close()
ctx.term()
EOF
echo "pushed one MeterBatch"

# The exporter takes it on its next poll; its own meters count it.
got=""
for _ in $(seq 50); do
  curl -sf "$URL/metrics" >"$T/metrics.txt" || fail "GET /metrics"
  grep -q '^ember_exporter_meter_batches_total [1-9]' "$T/metrics.txt" && grep -q '^ember_test_requests_total' "$T/metrics.txt" && { got=1; break; }
  sleep 0.2
done
[ -n "$got" ] || { cat "$T/metrics.txt"; fail "the pushed meters never appeared in /metrics"; }

expect_line() {
  grep -qxF -- "$1" "$T/metrics.txt" || { cat "$T/metrics.txt"; fail "missing line: $1"; }
}
expect_line '# HELP ember_test_requests_total Requests seen by the test'
expect_line '# TYPE ember_test_requests_total counter'
expect_line 'ember_test_requests_total{analyzer="0",path="a\"b\\c\nd"} 42'
expect_line '# TYPE ember_test_temperature_celsius gauge'
expect_line 'ember_test_temperature_celsius{analyzer="0"} -3.5'
expect_line '# TYPE ember_test_latency_seconds histogram'
expect_line 'ember_test_latency_seconds_bucket{analyzer="0",le="0.01"} 2'
expect_line 'ember_test_latency_seconds_bucket{analyzer="0",le="0.1"} 5'
expect_line 'ember_test_latency_seconds_bucket{analyzer="0",le="1"} 7'
expect_line 'ember_test_latency_seconds_bucket{analyzer="0",le="+Inf"} 8'
expect_line 'ember_test_latency_seconds_sum{analyzer="0"} 3.25'
expect_line 'ember_test_latency_seconds_count{analyzer="0"} 8'
grep -q '^ember_exporter_envelopes_total [1-9]' "$T/metrics.txt" || fail "ember_exporter_envelopes_total does not count the envelope"
grep -q '^ember_prometheus_scrapes_total [0-9]' "$T/metrics.txt" || fail "the backend's own counters are missing"
promtool check metrics <"$T/metrics.txt" >"$T/promtool.txt" 2>&1 || { cat "$T/promtool.txt"; fail "promtool check metrics"; }
echo "promtool check metrics: ok ($(grep -c '^# TYPE' "$T/metrics.txt") families)"

ctype=$(curl -sf -o /dev/null -w '%{content_type}' "$URL/metrics")
[ "$ctype" = "text/plain; version=0.0.4; charset=utf-8" ] || fail "Content-Type is '$ctype'"
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
[ "$(code "$URL/")" = 200 ] || fail "GET / is not 200"
curl -sf "$URL/" | grep -q 'href="/metrics"' || fail "GET / does not link /metrics"
[ "$(code "$URL/nothing")" = 404 ] || fail "GET /nothing is not 404"
[ "$(code -X POST -d x=1 "$URL/metrics")" = 405 ] || fail "POST /metrics is not 405"
[ "$(code -X DELETE "$URL/metrics")" = 405 ] || fail "DELETE /metrics is not 405"
[ "$(code -I "$URL/metrics")" = 200 ] || fail "HEAD /metrics is not 200"

# The port is taken: a second exporter must refuse to start and say where.
sed "s#run_dir: $T/run#run_dir: $T/run2#" "$T/ember.yaml" >"$T/ember2.yaml"
timeout 10 "$EXPORTER" --config "$T/ember2.yaml" >"$T/exporter2.log" 2>&1
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "a second exporter on port $EPORT did not fail (rc=$rc)"
grep -q "127.0.0.1:$EPORT" "$T/exporter2.log" || { cat "$T/exporter2.log"; fail "the bind error does not name 127.0.0.1:$EPORT"; }
echo "bind error: $(grep -o 'cannot listen.*' "$T/exporter2.log")"

# A real Prometheus server scrapes the exporter every second.
cat >"$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: ember
    static_configs:
      - targets: ['127.0.0.1:$EPORT']
EOF
prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/tsdb" \
  --web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$T/prometheus.log" 2>&1 &
PROM_PID=$!

query() { # expr -> JSON on stdout
  curl -sf -G "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1"
}
check_query() { # expr python-condition-on-result
  query "$1" | "$PY" -c '
import json, sys
r = json.load(sys.stdin)["data"]["result"]
ok = eval(sys.argv[1])
sys.exit(0 if ok else 1)' "$2" 2>/dev/null
}
deadline=$((SECONDS + 40))
ok=""
while [ $SECONDS -lt $deadline ]; do
  kill -0 "$PROM_PID" 2>/dev/null || fail "prometheus exited"
  if check_query 'ember_test_requests_total' 'len(r) == 1 and r[0]["value"][1] == "42"'; then ok=1; break; fi
  sleep 1
done
[ -n "$ok" ] || { query 'ember_test_requests_total'; echo; query 'up'; echo; fail "Prometheus never returned ember_test_requests_total = 42"; }
echo "prometheus query ember_test_requests_total = 42"
check_query 'ember_test_requests_total' 'r[0]["metric"]["path"] == "a\"b\\c\nd" and r[0]["metric"]["job"] == "ember"' ||
  fail "the escaped label did not survive the round trip"
check_query 'up{job="ember"}' 'len(r) == 1 and r[0]["value"][1] == "1"' || fail "up{job=ember} is not 1"
check_query 'ember_test_temperature_celsius' 'len(r) == 1 and r[0]["value"][1] == "-3.5"' || fail "gauge value"
check_query 'ember_test_latency_seconds_bucket{le="0.1"}' 'len(r) == 1 and r[0]["value"][1] == "5"' || fail "histogram bucket"
check_query 'ember_test_latency_seconds_count' 'len(r) == 1 and r[0]["value"][1] == "8"' || fail "histogram count"
check_query 'histogram_quantile(0.5, ember_test_latency_seconds_bucket)' 'len(r) == 1 and 0.01 < float(r[0]["value"][1]) <= 0.1' ||
  fail "histogram_quantile over the buckets"
check_query 'ember_exporter_envelopes_total' 'len(r) == 1 and float(r[0]["value"][1]) >= 1' || fail "ember_exporter_envelopes_total"
echo "prometheus: gauge, histogram (quantile), escaped label and the exporter's own meters all present"

kill "$EXP_PID"
wait "$EXP_PID"
rc=$?
EXP_PID=""
[ $rc -eq 0 ] || fail "ember-exporter exited with $rc on SIGTERM"
echo "PASS"
