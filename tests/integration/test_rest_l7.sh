#!/usr/bin/env bash
# The REST API's l7 and tcp features on nginx: PUT /l7 (l7_bytes_metrics,
# l7_rpc_metrics, l7_protocol http) by pid and PUT /tcp (tcp_stats,
# tcp_rtt, tcp_abnormal) by comm and cmdline select the worker; one network
# task follows it; a client that counts every byte (tests/net_client.py)
# makes its requests; /metrics shows gala-gopher's gala_gopher_l7_* and
# gala_gopher_tcp_link_* gauges with their keys, each equal to the same
# flow's last report period in the task's network.json.  A sub-item of
# gala-gopher's that ember does not measure is taken and said to be
# ignored; stopping both ends the task.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
PY=/usr/bin/python3
start_rest_agent
PORT=$REST_PORT EPORT=$PROM_PORT
start_nginx
U=http://127.0.0.1:$PORT
put() { curl -s -w ' %{http_code}' -X PUT "$U/$1" --data-urlencode json="$2"; }
r=$(put tcp '{"cmd": {"probe": ["tcp_windows"]}, "state": "running"}'); echo "tcp_windows: $r"
[[ "$r" == *"ignored by tcp: cmd.probe tcp_windows (not measured by ember)) 200" ]] || fail "an unmeasured sub-item was not taken and said to be ignored"
r=$(put l7 "{\"cmd\": {\"probe\": [\"l7_bytes_metrics\", \"l7_rpc_metrics\"]}, \"snoopers\": {\"proc_id\": [$NGINX_PID]},
  \"params\": {\"report_period\": 5, \"l7_protocol\": [\"http\"]}, \"state\": \"running\"}"); echo "l7: $r"
[[ "$r" == "New config takes effect 200" ]] || fail "PUT /l7 refused"
r=$(put tcp '{"cmd": {"probe": ["tcp_stats", "tcp_rtt", "tcp_abnormal"]},
  "snoopers": {"proc_name": [{"comm": "nginx", "cmdline": "worker process"}]}, "params": {"report_period": 5}, "state": "running"}')
echo "tcp: $r"; [[ "$r" == "New config takes effect 200" ]] || fail "PUT /tcp refused"
rstat() { "$EMBER" stats --config "$TMP/ember.yaml" 2>/dev/null | awk -v k="$1" '$1 == "analyzer0" && $2 == k {print $3}'; }
for _ in $(seq 40); do [ "$(rstat ember_rest_net_processes_followed)" = 1 ] && break; sleep 0.25; done
[ "$(rstat ember_rest_net_processes_followed)" = 1 ] || { tail "$TMP/agent.log"; fail "the worker is not followed"; }
sleep 1
N=150
mkfifo "$TMP/go"
$PY "$ROOT/tests/net_client.py" 127.0.0.1 "$NGINX_PORT" /small.txt "$N" "$TMP/go" > "$TMP/client.json" & C=$!
echo go > "$TMP/go"; wait "$C" || fail "the client failed"
sleep 12   # two report periods: the client's traffic is reported, then a quiet period
curl -s "http://127.0.0.1:$EPORT/metrics" > "$TMP/metrics.txt" || fail "no /metrics"
grep '^gala_gopher_' "$TMP/metrics.txt" | head -20
J=$(ls -t "$AGENT_OUT"/rest-net-"$NGINX_PID"-*/network.json | head -1)   # the task of the latest configuration
[ -s "$J" ] || fail "no network.json of the REST task"
$PY - "$TMP/metrics.txt" "$J" "$NGINX_PID" "$NGINX_PORT" "$TMP/client.json" <<'PY' || fail "the gala-gopher gauges are not the flow's"
import json, re, sys
metrics, nj, pid, port, client = sys.argv[1:]
c = json.load(open(client))
series = {}
for line in open(metrics):
    m = re.match(r'^(gala_gopher_\w+)\{(.*)\} (\S+)$', line)
    if m:
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        series.setdefault(m.group(1), []).append((labels, float(m.group(3))))
flows = [json.loads(l) for l in open(nj)]
flows = [f for f in flows if f.get("type") == "flow" and f["side"] == "server" and f["protocol"] == "http1"]
total = sum(f.get("requests", 0) for f in flows)
last = max((f for f in flows if f.get("requests", 0)), key=lambda f: f["window_end_unix_ns"])
print("flows of the task:", len(flows), "requests in all:", total, "last period's:", last.get("requests"),
      "read bytes", last["read"]["bytes"], "written", last["write"]["bytes"])
def one(name):
    v = [(l, x) for l, x in series.get(name, []) if l.get("tgid") == pid]
    if len(v) != 1: print("FAIL:", name, "has", len(v), "series for the worker"); sys.exit(1)
    return v[0]
l, req = one("gala_gopher_l7_req_count")
ok = True
want = {"tgid": pid, "client_ip": "127.0.0.1", "server_ip": "127.0.0.1", "server_port": port, "l4_role": "tcp_server",
        "l7_role": "server", "protocol": "http", "ssl": "0"}
ok &= all(l.get(k) == v for k, v in want.items()) and len(l.get("machine_id", "")) >= 16 and bool(l.get("hostname"))
ok &= total == c["requests"] and req == last["requests"]
ok &= one("gala_gopher_l7_resp_count")[1] == last["requests"] and one("gala_gopher_l7_err_count")[1] == 0
ok &= one("gala_gopher_l7_bytes_recv")[1] == last["read"]["bytes"] and one("gala_gopher_l7_bytes_sent")[1] == last["write"]["bytes"]
lt, rx = one("gala_gopher_tcp_link_rx_bytes")
ok &= rx == last["read"]["bytes"] and one("gala_gopher_tcp_link_tx_bytes")[1] == last["write"]["bytes"]
ok &= one("gala_gopher_tcp_link_segs_in")[1] == last["read"]["count"]
ok &= lt.get("role") == "0" and lt.get("server_port") == port and lt.get("protocol") == "2"
if last["write_rtt"]["count"]:
    ok &= abs(one("gala_gopher_tcp_link_srtt")[1] - last["write_rtt"]["time_us"] / last["write_rtt"]["count"]) < 1e-6
print("l7 labels:", l, "\ntcp_link labels:", lt)
sys.exit(0 if ok else 1)
PY
grep -q "^# HELP gala_gopher_l7_segs_sent Write calls" "$TMP/metrics.txt" || fail "no description of the gala-gopher metrics"
ok "gala_gopher_l7_* and gala_gopher_tcp_link_* gauges equal the flow's last report period, with gala-gopher's keys"
put l7 '{"state": "stopped"}' >/dev/null; put tcp '{"state": "stopped"}' >/dev/null
for _ in $(seq 20); do [ "$(rstat ember_tasks_running)" = 0 ] && break; sleep 0.5; done
[ "$(rstat ember_tasks_running)" = 0 ] || fail "the network task still runs after both features stopped"
ok "stopping l7 and tcp ends the task"
stop_agent || fail "agent exited with an error"
