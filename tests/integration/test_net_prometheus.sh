#!/usr/bin/env bash
# Network profiling's L4 counters, both ends followed, as a real Prometheus
# server reads them: a client (tests/net_client.py: raw HTTP/1.1 on one
# keep-alive connection, counting every byte it sends and receives) and nginx
# are one network task; the bytes the client wrote, the bytes nginx read and
# the client's own count are one number, and so are the other direction's;
# the request and status counters equal the client's requests; the client's
# and the server's flows name each other (peer process ids).  Two analyzers,
# the client's pid in the other one's shard than nginx's: neither analyzer
# sees both ends, the collector tells each which process the other end is.
#
# Then the whole of /metrics on a real scrape, with tasks of every kind
# (on-CPU, off-CPU, memory and network), a continuous-profiling policy's
# monitors and the REST API's baseinfo (proc included), l7 and tcp features:
#   - `promtool check metrics` finds nothing but the gala-gopher names that
#     gala-gopher itself gives (listed below: kB units, camelCase, _count);
#   - the monitors' gauges and gala_gopher_proc_* carry the process's name
#     (comm) beside its pid;
#   - when the monitored process exits, and nginx's worker followed by the l7
#     and tcp features too, every series naming its pid is gone within a few
#     seconds (long before series nobody updates age out, after 60 s).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
PY=/usr/bin/python3
command -v prometheus >/dev/null || fail "prometheus missing (deploy/install-deps.sh installs it)"
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
EPORT=$(free_port) PPORT=$(free_port)
AGENT_BACKENDS="file, prometheus" AGENT_EXPORTER_YAML="  prometheus: { address: 127.0.0.1, port: $EPORT }"
AGENT_ANALYZERS=2
# A policy whose items never hold: its monitors' values are on /metrics (rover_con_p_*).
TAG=net-prom-$$
AGENT_POLICIES="[{Name: watch, MatchCmd: '$TAG', Profiling: {ON_CPU: {PROCESS_CPU: {Threshold: 1000, Period: 5, Count: 3}},
  OFF_CPU: {PROCESS_THREAD_COUNT: {Threshold: 100000, Period: 5, Count: 3}}}}]"
AGENT_CONTINUOUS="fetch_interval: 1s, check_interval: 1s"
RPORT=$(free_port)
start_agent --set ember.rest_api.enabled=true --set ember.rest_api.port="$RPORT"
start_nginx
N=200
mkfifo "$TMP/go"
for _ in $(seq 20); do
  $PY "$ROOT/tests/net_client.py" 127.0.0.1 "$NGINX_PORT" /small.txt "$N" "$TMP/go" > "$TMP/client.json" & CLIENT=$!
  CLEANUP_PIDS+=("$CLIENT")
  [ $((CLIENT % 2)) != $((NGINX_PID % 2)) ] && break
  kill "$CLIENT"; wait "$CLIENT" 2>/dev/null
done
[ $((CLIENT % 2)) != $((NGINX_PID % 2)) ] || fail "no client pid in the other analyzer's shard than nginx's ($NGINX_PID)"
start_net_task l4 "$NGINX_PID,$CLIENT" 6s
# A client gone before it opened the FIFO would leave the writer blocked: the test says so instead.
timeout 30 bash -c "echo go > '$TMP/go'" || fail "the client never read its go (alive: $(kill -0 "$CLIENT" 2>&1 && echo yes))"
for _ in $(seq 600); do kill -0 "$CLIENT" 2>/dev/null || break; sleep 0.1; done
kill -0 "$CLIENT" 2>/dev/null && { cat "$TMP/client.json"; fail "the client did not finish its $N requests in 60 s"; }
wait "$CLIENT" || fail "the client failed"
cat "$TMP/client.json"
wait_net_task l4

cat >"$TMP/prometheus.yml" <<EOF
global: { scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s }
scrape_configs: [ { job_name: ember, static_configs: [ { targets: ['127.0.0.1:$EPORT'] } ] } ]
EOF
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb" \
  --web.listen-address="127.0.0.1:$PPORT" --log.level=warn >"$TMP/prometheus.log" 2>&1 & CLEANUP_PIDS+=("$!")
value() { # promql -> the single value, or "none"
  curl -sf -G "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1" |
    $PY -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if len(r)==1 else "none")' 2>/dev/null || echo none
}
for _ in $(seq 40); do [ "$(value 'up{job="ember"}')" = 1 ] && [ "$(value "sum(ember_net_http1_requests_total)")" != none ] && break; sleep 0.5; done
read -r sent rcvd reqs st200 < <($PY -c 'import json,sys; c=json.load(open(sys.argv[1])); print(c["bytes_sent"], c["bytes_received"], c["requests"], c["status_200"])' "$TMP/client.json")
cw=$(value "sum(ember_net_write_bytes_total{side=\"client\",client_process_id=\"$CLIENT\"})")
sr=$(value "sum(ember_net_read_bytes_total{side=\"server\",server_process_id=\"$NGINX_PID\"})")
sw=$(value "sum(ember_net_write_bytes_total{side=\"server\",server_process_id=\"$NGINX_PID\"})")
cr=$(value "sum(ember_net_read_bytes_total{side=\"client\",client_process_id=\"$CLIENT\"})")
rq=$(value "sum(ember_net_http1_requests_total{side=\"server\",server_process_id=\"$NGINX_PID\"})")
rqc=$(value "sum(ember_net_http1_requests_total{side=\"client\",client_process_id=\"$CLIENT\"})")
ok2=$(value "sum(ember_net_http1_responses_total{side=\"server\",server_process_id=\"$NGINX_PID\",code=\"200\"})")
peer=$(value "count(ember_net_write_bytes_total{side=\"client\",client_process_id=\"$CLIENT\",server_process_id=\"$NGINX_PID\"})")
speer=$(value "count(ember_net_read_bytes_total{side=\"server\",server_process_id=\"$NGINX_PID\",client_process_id=\"$CLIENT\"})")
echo "client wrote $sent (ember: client $cw, nginx read $sr); nginx sent $rcvd (ember: nginx wrote $sw, client read $cr);"
echo "requests $reqs (ember: server $rq, client $rqc), 200s $st200 (ember $ok2), client flows naming nginx as their peer: $peer, nginx flows naming the client: $speer"
[ "$cw" = "$sent" ] && [ "$sr" = "$sent" ] || fail "bytes client->server: client counted $sent, ember client $cw, ember server $sr"
[ "$sw" = "$rcvd" ] && [ "$cr" = "$rcvd" ] || fail "bytes server->client: client counted $rcvd, ember server $sw, ember client $cr"
[ "$rq" = "$reqs" ] && [ "$rqc" = "$reqs" ] && [ "$ok2" = "$st200" ] || fail "HTTP/1 counters: requests server $rq client $rqc of $reqs, 200s $ok2 of $st200"
[ "$peer" != none ] && [ "$peer" -ge 1 ] || fail "the client's flows do not name nginx's pid as their server"
[ "$speer" != none ] && [ "$speer" -ge 1 ] || fail "nginx's flows do not name the client's pid as their client"
across=$("$EMBER" stats --config "$TMP/ember.yaml" | awk '$1 == "collector" && $2 == "net_events_peer_across_shards" {print $3}')
echo "events told their peer across shards: $across"
[ "${across:-0}" -ge 1 ] || fail "the collector told no event its peer in the other shard"
ok "L4 bytes agree at both ends and with the client; Prometheus reads them, with the HTTP/1 counters and peer ids"

# ---- the whole of /metrics, with every kind of task, the monitors and the REST features ----
"$PROGS/burn_later" 600 1 "$TAG" idle > /dev/null & W=$!; CLEANUP_PIDS+=("$W")   # idle: the policy watches it
WCOMM=burn_later
for _ in $(seq 50); do [ "$(cat "/proc/$W/comm" 2>/dev/null)" = $WCOMM ] && break; sleep 0.1; done   # exec'd
U=http://127.0.0.1:$RPORT
put() { curl -s -w ' %{http_code}' -X PUT "$U/$1" --data-urlencode json="$2"; }
r=$(put baseinfo "{\"cmd\": {\"probe\": [\"cpu\", \"mem\", \"nic\", \"disk\", \"net\", \"fs\", \"host\", \"proc\"]},
  \"snoopers\": {\"proc_id\": [$W]}, \"params\": {\"report_period\": 5}, \"state\": \"running\"}")
[[ "$r" == "New config takes effect 200" ]] || fail "PUT /baseinfo: $r"
r=$(put l7 "{\"cmd\": {\"probe\": [\"l7_bytes_metrics\", \"l7_rpc_metrics\"]}, \"snoopers\": {\"proc_id\": [$NGINX_PID]},
  \"params\": {\"report_period\": 5, \"l7_protocol\": [\"http\"]}, \"state\": \"running\"}")
[[ "$r" == "New config takes effect 200" ]] || fail "PUT /l7: $r"
r=$(put tcp "{\"cmd\": {\"probe\": [\"tcp_stats\", \"tcp_rtt\", \"tcp_abnormal\"]}, \"snoopers\": {\"proc_id\": [$NGINX_PID]},
  \"params\": {\"report_period\": 5}, \"state\": \"running\"}")
[[ "$r" == "New config takes effect 200" ]] || fail "PUT /tcp: $r"
for t in oncpu offcpu mem; do
  "$EMBER" profile --config "$TMP/ember.yaml" --pid "$W" --type $t --duration 2s --out "$TMP/p-$t" >"$TMP/p-$t.err" 2>&1 &
  CLEANUP_PIDS+=("$!")
done
# (whatever their names: promtool judges those)
want='^(rover_con_p_process_cpu|rover_con_p_process_thread[a-z_]*|gala_gopher_proc_num_threads|gala_gopher_mem_util|gala_gopher_l7_req_count|gala_gopher_tcp_link_tx_bytes|ember_unwind_build_[a-z]+_total|ember_tasks_finished_total)\b'
for _ in $(seq 40); do
  # requests all along: the l7 and tcp features' task follows nginx from its next rescan (2 s)
  for _ in 1 2 3; do curl -s -o /dev/null "http://127.0.0.1:$NGINX_PORT/small.txt"; curl -s -o /dev/null "http://127.0.0.1:$NGINX_PORT/fail"; done
  curl -sf "http://127.0.0.1:$EPORT/metrics" > "$TMP/all.txt" || fail "GET /metrics"
  [ "$(grep -E "$want" "$TMP/all.txt" | sed 's/[{ ].*//' | sort -u | wc -l)" = 8 ] && break
  sleep 0.5
done
[ "$(grep -E "$want" "$TMP/all.txt" | sed 's/[{ ].*//' | sort -u | wc -l)" = 8 ] ||
  { grep -E "$want" "$TMP/all.txt" | sed 's/[{ ].*//' | sort -u; fail "some families never came (above: those that did)"; }
echo "/metrics: $(grep -c '^# TYPE' "$TMP/all.txt") families, $(grep -vc '^#' "$TMP/all.txt") series"
# gala-gopher's own names that Prometheus's conventions flag: kept as gala-gopher gives them.
gala_names="^gala_gopher_(mem_[A-Za-z_]+_kB|disk_[rw]speed_kB) metric names should (be written in 'snake_case' not 'camelCase'|not contain abbreviated units)\$"
gala_names+="|^gala_gopher_file_system_(IUsePer|UsePer) metric names should be written in 'snake_case' not 'camelCase'\$"
gala_names+="|^gala_gopher_file_system_[A-Za-z]+ label names should be written in 'snake_case' not 'camelCase'\$"
gala_names+="|^gala_gopher_(l7_(req|resp|err)_count|proc_(minor|major)_pagefault_count) non-histogram and non-summary metrics should not have \"_count\" suffix\$"
gala_names+="|^gala_gopher_l7_latency_sum non-histogram and non-summary metrics should not have \"_sum\" suffix\$"
promtool check metrics < "$TMP/all.txt" > "$TMP/promtool.txt" 2>&1
echo "promtool check metrics: $(wc -l < "$TMP/promtool.txt") finding(s), $(grep -cEv "$gala_names" "$TMP/promtool.txt") outside gala-gopher's own names"
if grep -Ev "$gala_names" "$TMP/promtool.txt" | grep -q .; then
  grep -Ev "$gala_names" "$TMP/promtool.txt"; fail "promtool check metrics flags ember's names (above)"
fi
grep -qE "^rover_con_p_process_cpu\{comm=\"$WCOMM\",pid=\"$W\",target=\"ON_CPU\"\} " "$TMP/all.txt" ||
  { grep "^rover_con_p" "$TMP/all.txt"; fail "the monitor's gauge does not name process $W ($WCOMM)"; }
grep -qE "^gala_gopher_proc_num_threads\{comm=\"$WCOMM\",.*tgid=\"$W\"\} 1\$" "$TMP/all.txt" ||
  { grep "^gala_gopher_proc_num_threads" "$TMP/all.txt"; fail "gala_gopher_proc_num_threads does not name process $W ($WCOMM)"; }
for g in ember_unwind_rows_max ember_unwind_tables ember_prometheus_net_series ember_tasks_active; do   # levels
  grep -qx "# TYPE $g gauge" "$TMP/all.txt" || fail "$g is not a gauge"
done
ok "promtool passes every name but gala-gopher's own; levels are gauges; the monitors' and proc gauges name the process"
mine() { grep -E "(pid|tgid)=\"($W|$NGINX_PID)\"" "$1" | grep -E "^(rover_con_p_|gala_gopher_)"; }
echo "series naming pid $W or nginx's worker $NGINX_PID: $(mine "$TMP/all.txt" | wc -l)"
mine "$TMP/all.txt" | grep -q "tgid=\"$NGINX_PID\"" || fail "no gala-gopher series of nginx's worker to see go"
kill "$W"; kill "$NGINX_PID"; gone_at=$SECONDS
for _ in $(seq 40); do
  curl -sf "http://127.0.0.1:$EPORT/metrics" > "$TMP/after.txt" || fail "GET /metrics"
  mine "$TMP/after.txt" | grep -q . || break
  sleep 0.5
done
if mine "$TMP/after.txt" | grep -q .; then
  mine "$TMP/after.txt" | head; fail "series of exited processes still on /metrics $((SECONDS - gone_at)) s after (above)"
fi
ok "every series of the exited processes left /metrics within $((SECONDS - gone_at)) s"
stop_agent || fail "agent exited with an error"
