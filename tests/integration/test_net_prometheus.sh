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
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
PY=/usr/bin/python3
command -v prometheus >/dev/null || fail "prometheus missing (deploy/install-deps.sh installs it)"
free_port() { $PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
EPORT=$(free_port) PPORT=$(free_port)
AGENT_BACKENDS="file, prometheus" AGENT_EXPORTER_YAML="  prometheus: { address: 127.0.0.1, port: $EPORT }"
AGENT_ANALYZERS=2
start_agent
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
echo go > "$TMP/go"
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
stop_agent || fail "agent exited with an error"
