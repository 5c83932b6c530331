#!/usr/bin/env bash
# Sampled traces over TLS, as the OAP gets them: a NETWORK task whose rule
# keeps whole 5xx responses, on nginx serving HTTPS.  The LogData name the
# trace; the "HTTP Response Sampling" events carry the plaintext response
# (status line, headers, nginx's page) that the TLS probes saw; and each
# trace has its calls as Rover names them: the library's SslRead of the
# request and SslWrite of the response, with the packets of the syscalls
# under them on loopback (package_count, package_size, network_name "lo").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 2 -keyout "$TMP/key.pem" -out "$TMP/cert.pem" \
  >/dev/null 2>&1 || fail "openssl could not make a test certificate"
NGINX_TLS_CERT=$TMP/cert.pem NGINX_TLS_KEY=$TMP/key.pem start_nginx
start_oap_nginx_agent
oap_network_task '{\"NetworkSamplings\": [{\"When5xx\": true, \"Settings\": {\"RequireCompleteResponse\": true, \"MaxResponseSize\": 2048}}]}'
# The TLS probes are attached once the analyzer found libssl in nginx: wait for them.
for _ in $(seq 100); do "$EMBER" stats --config "$TMP/ember.yaml" 2>/dev/null | awk '$2 == "tls_probe_points" && $3 > 0 {f=1} END {exit !f}' && break; sleep 0.1; done
SW8="1-$(printf trace-tls-1 | base64)-$(printf seg-1 | base64)-3-$(printf svc | base64)-$(printf inst | base64)-$(printf /ep | base64)-$(printf h:80 | base64)"
for _ in 1 2 3; do curl -sk -o /dev/null -H "sw8: $SW8" "https://127.0.0.1:$NGINX_TLS_PORT/fail"; done
curl -sk -o /dev/null "https://127.0.0.1:$NGINX_TLS_PORT/small.txt" || fail "curl over HTTPS failed"
sleep 4   # two report intervals, one exporter send

$PY - "$REC" <<'PY' || fail "the OAP did not get the sampled HTTPS traces with their calls"
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
logs = [d for r in rows if r["rpc"] == "LogReportService/collect" and r["ok"] for d in r["req"]]
ev = [e for r in rows if r["rpc"] == "SpanAttachedEventReportService/collect" and r["ok"] for e in r["req"]]
def tags(e): return {t["key"]: t.get("value", "") for t in e.get("tags", [])}
bad = []
bodies = [json.loads(d["body"]["json"]["json"]) for d in logs]
print("sampled traces %d: %s" % (len(bodies), [(b["reason"], b["status"], b["ssl"]) for b in bodies]))
if len(bodies) != 3 or any(b["reason"] != "status_5xx" or b["ssl"] is not True for b in bodies):
    bad.append("want 3 status_5xx traces with ssl true")
resp = [e for e in ev if e.get("event") == "HTTP Response Sampling"]
plain = [e for e in resp if tags(e).get("data_content", "").startswith("HTTP/1.1 500 Internal Server Error\r\n")]
print("response sampling events %d, %d with nginx's plaintext 500" % (len(resp), len(plain)))
if len(resp) != 3 or len(plain) != 3: bad.append("want 3 response events, all plaintext")
sc = [e for e in ev if e.get("event", "").startswith("Syscall ")]
names = collections.Counter(e["event"] for e in sc)
print("syscall events %s" % dict(names))
if names.get("Syscall SslRead", 0) != 3: bad.append("want one SslRead per trace")
if names.get("Syscall SslWrite", 0) < 3: bad.append("want an SslWrite or more per trace")
if set(names) - {"Syscall SslRead", "Syscall SslWrite"}: bad.append("calls other than the library's on a TLS connection")
for e in sc:
    t = tags(e)
    print("  %s %s" % (e["event"], {k: t.get(k) for k in ("package_count", "package_size", "network_name", "network_index")}))
    if (t.get("network_name"), t.get("network_index")) != ("lo", "1") or int(t.get("package_count", "0")) < 1:
        bad.append("%s without its packets: %s" % (e["event"], t))
    if e.get("traceContext", {}).get("traceId") != "trace-tls-1": bad.append("syscall event trace %s" % e.get("traceContext"))
for b in bad: print("  " + b)
sys.exit(1 if bad else 0)
PY
ok "sampled HTTPS traces: plaintext responses, and the library's calls with the packets under them"
kill -TERM "$AGENT_PID"; wait "$AGENT_PID" || fail "agent exited with an error"
