#!/usr/bin/env bash
# A NETWORK task from the OAP (tests/oap_receiver.py stands in for it) runs
# on the processes reported for the task's service instance, and the OAP gets
# Rover's network meters (../shared/spec/skywalking-protocol.md 5.1): names
# with the rover_net_p prefix, the common labels in Rover's order with the
# OAP's process id, values that are the interval's increments (HTTP/1 request
# counts add up to the requests curl made, bytes nginx read add up to the
# requests' bytes), all 34 buckets of a non-empty L4 histogram, and service,
# instance and timestamp on the first element of each collection.  On the
# socket layer reads are untimed (a read's start is not seen): no read time
# goes out; on the syscall layer every read is in the read time histogram.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
start_nginx
start_oap_nginx_agent
# Sample 4xx and 5xx of traced requests, with their responses.
oap_network_task '{\"NetworkSamplings\": [{\"When4xx\": true, \"When5xx\": true, \"Settings\": {\"RequireCompleteResponse\": true, \"MaxResponseSize\": 2048}}]}'
N=40
for _ in $(seq $N); do curl -s -o /dev/null "http://127.0.0.1:$NGINX_PORT/small.txt" || fail "curl failed"; done
# Traced requests: sw8 = 1-base64(trace-ember-1)-base64(seg-1)-3-...: 3 answered 500, 2 answered 404,
# and an untraced 500 and one with a malformed sw8 that must not be sampled, but counted.
SW8="1-$(printf trace-ember-1 | base64)-$(printf seg-1 | base64)-3-$(printf svc | base64)-$(printf inst | base64)-$(printf /ep | base64)-$(printf h:80 | base64)"
for u in fail fail fail nope nope; do curl -s -o /dev/null -H "sw8: $SW8" "http://127.0.0.1:$NGINX_PORT/$u"; done
curl -s -o /dev/null "http://127.0.0.1:$NGINX_PORT/fail"
curl -s -o /dev/null -H "sw8: 1-not base64!-x-1" "http://127.0.0.1:$NGINX_PORT/fail"
N=$((N + 7))
sleep 4   # two report intervals, one exporter send
# The socket layer sees a read's end only: its reads are untimed, and no read time goes out.
LAYER=$("$EMBER" stats --config "$TMP/ember.yaml" | awk '$1 == "collector" && $2 == "bpf_net_socket_layer" {print $3}')
echo "capture layer: $([ "$LAYER" = 1 ] && echo socket || echo syscall)"

$PY - "$REC" "$N" "$NGINX_PID" "$LAYER" <<'PY' || fail "Rover's network meters are not what the OAP expects"
import json, sys, hashlib, base64, collections
rec, n, pid = sys.argv[1], int(sys.argv[2]), sys.argv[3]
socket_layer = sys.argv[4] == "1"
rows = [json.loads(l) for l in open(rec) if l.strip()]
procs = [p for r in rows if r["rpc"] == "reportProcesses" and r["ok"] for p in r["req"].get("processes", [])]
b64 = lambda s: base64.b64encode(s.encode()).decode()
ent = next(p["hostProcess"]["entity"] for p in procs if "hostProcess" in p and any(
    kv["key"] == "pid" and kv["value"] == pid for kv in p["hostProcess"].get("properties", [])))
sid = b64(ent["serviceName"]) + ".1"
oap_id = hashlib.sha256((ent["processName"] + "_" + sid + "_" + b64(ent["instanceName"])).encode()).hexdigest()
cols = [r["req"]["meterData"] for r in rows if r["rpc"] == "collectBatch" and r["ok"] and r["req"].get("meterData")]
net = [c for c in cols if any((d.get("singleValue") or d.get("histogram"))["name"].startswith("rover_net_p_") for d in c)]
bad = []
if not net: print("no rover_net_p_ meters"); sys.exit(1)
for c in net:
    f = c[0]
    if not (f.get("service") == "ember-it-nginx" and f.get("serviceInstance") and int(f.get("timestamp", 0)) > 0):
        bad.append("first MeterData without service/instance/timestamp: %s" % {k: f.get(k) for k in ("service", "serviceInstance", "timestamp")})
meters = [d.get("singleValue") or d.get("histogram") for c in net for d in c]
def total(name, **lab):
    return sum(float(m.get("value", 0)) for m in meters if m["name"] == name and
               all({l["name"]: l["value"] for l in m.get("labels", [])}.get(k) == v for k, v in lab.items()))
want_labels = ["server_process_id", "client_local", "side", "protocol", "is_ssl"]
for m in meters:
    if not m["name"].startswith("rover_net_p_server_") and not m["name"].startswith("rover_net_p_http1_"): bad.append("unexpected meter " + m["name"]); continue
    names = [l["name"] for l in m.get("labels", [])]
    lab = {l["name"]: l["value"] for l in m.get("labels", [])}
    if names[:5] != want_labels: bad.append("%s labels %s" % (m["name"], names))
    if lab.get("server_process_id") != oap_id: bad.append("%s process id %s, OAP's %s" % (m["name"], lab.get("server_process_id"), oap_id))
    if (lab.get("side"), lab.get("client_local"), lab.get("protocol"), lab.get("is_ssl")) != ("server", "true", "http", "false"):
        bad.append("%s label values %s" % (m["name"], lab))
    if "values" in m and len(m["values"]) not in (25, 34, 45): bad.append("%s has %d buckets" % (m["name"], len(m["values"])))
req = total("rover_net_p_http1_request_counter")
ok200 = total("rover_net_p_http1_response_status_counter", code="200")
reads = total("rover_net_p_server_read_counts_counter")
conns = total("rover_net_p_server_connect_counts_counter")
hist = [m for m in meters if m["name"] == "rover_net_p_server_read_exe_time_histogram"]
hcount = sum(int(v.get("count", 0)) for m in hist for v in m["values"])
print("requests %d (curl %d), status 200 %d, reads %d, accepts %d, read histogram %d meters / %d observations, %d collections"
      % (req, n, ok200, reads, conns, len(hist), hcount, len(net)))
if req != n: bad.append("http1 requests %d, curl made %d" % (req, n))
if ok200 != n - 7: bad.append("status 200 %d, curl got %d" % (ok200, n - 7))
# Sampled traces: LogData with the decoded trace id, and the responses as span attached events.
logs = [d for r in rows if r["rpc"] == "LogReportService/collect" and r["ok"] for d in r["req"]]
ev = [e for r in rows if r["rpc"] == "SpanAttachedEventReportService/collect" and r["ok"] for e in r["req"]]
reasons = {}
for d in logs:
    body = json.loads(d["body"]["json"]["json"])
    tags = {t["key"]: t["value"] for t in d.get("tags", {}).get("data", [])}
    reasons[body["reason"]] = reasons.get(body["reason"], 0) + 1
    if d.get("traceContext", {}).get("traceId") != "trace-ember-1" or tags.get("LOG_KIND") != "NET_PROFILING_SAMPLED_TRACE":
        bad.append("log without the trace id or tag: %s" % d)
    if body["server_process"]["process_id"] != oap_id or body["client_process"]["local"] is not True or body["detect_point"] != "server":
        bad.append("log processes: %s" % body)
resp_ev = [e for e in ev if e.get("event") == "HTTP Response Sampling"]
# The whole message, as Rover sends it: the status line and headers, then nginx's error page.
def content(e): return {t["key"]: t["value"] for t in e.get("tags", [])}.get("data_content", "")
with500 = [e for e in resp_ev if content(e).startswith("HTTP/1.1 500 Internal Server Error\r\n")
           and "\r\nContent-Type: text/html" in content(e) and "<title>500 Internal Server Error</title>" in content(e)]
print("sampled traces by reason %s; response sampling events %d (%d with the 500 page)" % (reasons, len(resp_ev), len(with500)))
if reasons != {"status_5xx": 3, "status_4xx": 2}: bad.append("sampled traces %s, want 3 status_5xx and 2 status_4xx" % reasons)
if len(resp_ev) != 5 or len(with500) != 3: bad.append("response sampling events %d (%d with the 500 head and page), want 5 (3): %s" % (len(resp_ev), len(with500), [content(e)[:120] for e in resp_ev]))
# The calls behind each sampled exchange (Rover's "Syscall <name>"): nginx's read of the
# request and its writes of the response, each with the packets under it, on loopback.
sc = [e for e in ev if e.get("event", "").startswith("Syscall ")]
def tags(e): return {t["key"]: t["value"] for t in e.get("tags", [])}
inb = [e for e in sc if e["event"] in ("Syscall Read", "Syscall Recvfrom", "Syscall Readv", "Syscall RecvMsg")]
print("syscall events %s" % dict(collections.Counter(e["event"] for e in sc)))
if len(inb) != 5: bad.append("%d syscall events read a sampled request, want 5 (one per trace)" % len(inb))
if len(sc) - len(inb) < 5: bad.append("%d syscall events wrote a sampled response, want 5 or more" % (len(sc) - len(inb)))
for e in sc:
    t = tags(e)
    if (t.get("network_name"), t.get("network_index")) != ("lo", "1") or int(t.get("package_count", "0")) < 1 \
       or not t.get("package_size", "").endswith("B") or t.get("process_name") != "nginx" or t.get("service_name") != "ember-it-nginx":
        bad.append("syscall event tags %s" % t)
    if e.get("traceContext", {}).get("traceId") != "trace-ember-1": bad.append("syscall event trace %s" % e.get("traceContext"))
if conns != n: bad.append("accepts %d, curl connected %d times" % (conns, n))
if socket_layer:
    # untimed reads: counted, and neither a read time histogram nor a read time average
    rtime = [m for m in meters if m["name"] == "rover_net_p_server_read_exe_time_counter"]
    if reads < n or hist or rtime: bad.append("reads %d; read time meters %d, want none (untimed)" % (reads, len(hist) + len(rtime)))
else:
    if reads < n or hcount != reads: bad.append("reads %d, histogram observations %d" % (reads, hcount))
    if not hist or any(len(m["values"]) != 34 for m in hist): bad.append("read time histogram missing or not 34 buckets")
for b in bad[:20]: print("  " + b)
sys.exit(1 if bad else 0)
PY
ok "the OAP got Rover's network meters for the NETWORK task (names, label order, OAP process id, counts) and the sampled traces"
# The two 500s without a usable trace context: counted by why in ember stats, and said once in the log.
"$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats" || fail "ember stats failed"
nt=$(awk '$2 == "ember_skywalking_network_sampled_no_trace_context" {print $3}' "$TMP/stats")
bt=$(awk '$2 == "ember_skywalking_network_sampled_bad_trace_context" {print $3}' "$TMP/stats")
[ "$nt" = 1 ] && [ "$bt" = 1 ] ||
  { grep sampled "$TMP/stats"; fail "untraced exchanges counted ${nt:-none} (no trace context) and ${bt:-none} (malformed), want 1 and 1"; }
grep -q "NETWORK task net-$T0: 2 HTTP exchange(s) matched its sampling rules without a trace context (1 with none, 1 malformed)" \
  "$TMP/agent.log" || { grep -i "trace" "$TMP/agent.log"; fail "no log line for the exchanges without a trace context"; }
ok "a sampled 500 without sw8 and one with a malformed sw8: counted (no_trace_context 1, bad_trace_context 1) and logged once"
kill -TERM "$AGENT_PID"; wait "$AGENT_PID" || fail "agent exited with an error"
