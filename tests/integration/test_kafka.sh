#!/usr/bin/env bash
# Kafka output against librdkafka's mock cluster (tests/progs/kafka_mock: a
# broker and a consumer that writes back every message it reads).  nginx
# serves a client that counts every byte (tests/net_client.py) under a
# network task: the l7_link and l7_rpc records of the metric topic add up to
# the client's bytes and requests, with gala-gopher's keys; the metadata
# topic describes each table; a policy that holds and a profile that ends
# are events in gala-gopher's shape.  Then the broker goes away while a
# second client runs, and comes back: nothing is lost, the records add up
# to both clients.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
PY=/usr/bin/python3
MSGS=$TMP/kafka.tsv; : > "$MSGS"
"$PROGS/kafka_mock" "$MSGS" t_metric t_event t_meta > "$TMP/mock.out" 2>"$TMP/mock.err" & MOCK=$!; CLEANUP_PIDS+=("$MOCK")
for _ in $(seq 100); do grep -q '^bootstrap ' "$TMP/mock.out" && break; sleep 0.1; done
BOOT=$(awk '$1 == "bootstrap" {print $2}' "$TMP/mock.out")
[ -n "$BOOT" ] || { cat "$TMP/mock.err"; fail "the mock cluster did not start"; }
sleep 600 & SL=$!; CLEANUP_PIDS+=("$SL")
AGENT_BACKENDS="file, kafka"
AGENT_EXPORTER_YAML="  kafka: { broker: '$BOOT', metric_topic: t_metric, event_topic: t_event, meta_topic: t_meta,
           queue_buffering_max_ms: 10ms, message_timeout: 2m }"
AGENT_POLICIES="[{Name: sleepy, MatchCmd: '^sleep 600\$', Profiling: {OFF_CPU: {PROCESS_THREAD_COUNT: {Threshold: 1, Period: 2, Count: 1}}}}]"
AGENT_CONTINUOUS="check_interval: 1s, trigger: {execute_duration: 2s, silence_duration: 10m}"
start_agent
start_nginx
client_run() { # name N
  mkfifo "$TMP/go-$1"
  $PY "$ROOT/tests/net_client.py" 127.0.0.1 "$NGINX_PORT" /small.txt "$2" "$TMP/go-$1" > "$TMP/$1.json" & local C=$!
  start_net_task "$1" "$NGINX_PID" 4s
  echo go > "$TMP/go-$1"
  wait "$C" || fail "the client failed"
  wait_net_task "$1"
}
# Sums of the l7 records of nginx: l7_rpc req_count, resp_count, err_count; l7_link bytes_recv, bytes_sent
sums() {
  $PY - "$MSGS" "$NGINX_PID" "$NGINX_PORT" <<'PY'
import json, sys
pid, port = sys.argv[2], sys.argv[3]
s = {"req_count": 0, "resp_count": 0, "err_count": 0, "bytes_recv": 0, "bytes_sent": 0}
for line in open(sys.argv[1]):
    topic, _, v = line.rstrip("\n").partition("\t")
    if topic != "t_metric": continue
    r = json.loads(v)
    if r.get("entity_name") != "l7" or r.get("tgid") != pid: continue
    if (r["l7_role"], r["l4_role"], r["protocol"], r["server_ip"], r["server_port"], r["client_ip"], r["ssl"]) != \
       ("server", "tcp_server", "http", "127.0.0.1", port, "127.0.0.1", "0"):
        print("BAD KEYS", v); sys.exit(1)
    for k in s:
        if k in r: s[k] += int(float(r[k]))
print(s["req_count"], s["resp_count"], s["err_count"], s["bytes_recv"], s["bytes_sent"])
PY
}
expect() { # label requests client-bytes-sent client-bytes-received
  local got want="$2 $2 0 $3 $4"
  for _ in $(seq 60); do got=$(sums); [ "$got" = "$want" ] && break; sleep 0.5; done
  echo "$1: l7 records: req resp err recv sent = $got; the client: $want"
  [ "$got" = "$want" ] || { tail -5 "$TMP/agent.log"; fail "$1: the l7 records do not add up to the client's traffic"; }
}
client_run c1 120
read -r s1 r1 < <($PY -c 'import json,sys; c=json.load(open(sys.argv[1])); print(c["bytes_sent"], c["bytes_received"])' "$TMP/c1.json")
expect "first client" 120 "$s1" "$r1"
# gala-gopher's record shape and metadata
$PY - "$MSGS" <<'PY' || fail "the records or the metadata are not gala-gopher's"
import json, sys
rows = [l.rstrip("\n").split("\t", 1) for l in open(sys.argv[1])]
meta = {json.loads(v)["meta_name"]: json.loads(v) for t, v in rows if t == "t_meta"}
print("metadata tables:", sorted(meta))
ok = True
for name, metrics in (("l7_link", ["bytes_sent", "bytes_recv", "segs_sent", "segs_recv"]),
                      ("l7_rpc", ["throughput_req", "throughput_resp", "req_count", "resp_count", "latency_avg",
                                  "latency_sum", "err_ratio", "err_count"])):
    m = meta.get(name)
    ok &= bool(m) and m["entity_name"] == "l7" and m["version"] == "1.0.0" and m["keys"] == \
        ["machine_id", "tgid", "client_ip", "server_ip", "server_port", "l4_role", "l7_role", "protocol"] \
        and m["labels"] == ["hostname", "ssl"] and m["metrics"] == metrics and isinstance(m["timestamp"], int)
rec = next(json.loads(v) for t, v in rows if t == "t_metric" and json.loads(v).get("table_name") == "l7_rpc")
print("an l7_rpc record:", json.dumps(rec))
ok &= all(k in rec for k in ["timestamp", "machine_id", "hostname", "entity_name"] + meta["l7_rpc"]["keys"] + meta["l7_rpc"]["metrics"])
ok &= len(rec["machine_id"]) >= 16 and isinstance(rec["timestamp"], int) and isinstance(rec["req_count"], str)
sys.exit(0 if ok else 1)
PY
ok "the metric records add up to the client's requests and bytes, with gala-gopher's keys and metadata"
# Events: the policy on `sleep 600` held (WARN), its off-CPU profile ended (INFO)
for _ in $(seq 40); do grep -q 'profile of 1 process(es) finished' "$MSGS" && break; sleep 0.5; done
$PY - "$MSGS" "$SL" <<'PY' || fail "no events in gala-gopher's shape"
import json, re, sys
ev = [json.loads(v) for t, v in (l.rstrip("\n").split("\t", 1) for l in open(sys.argv[1])) if t == "t_event"]
pid = sys.argv[2]
for e in ev: print("event:", json.dumps(e))
def shaped(e):
    a = e["Attributes"]
    return isinstance(e["Timestamp"], int) and e["event_id"] == a["event_id"] == "%d_%s" % (e["Timestamp"], a["entity_id"]) \
        and re.match(r"^[0-9a-f]+_proc_%s$" % pid, a["entity_id"]) and a["event_type"] == "sys"
warn = [e for e in ev if e["SeverityText"] == "WARN" and e["SeverityNumber"] == 13 and shaped(e)
        and e["Resource"]["metrics"] == "rover_con_p_process_thread_count" and "held policy 'sleepy'" in e["Body"]
        and "PROCESS_THREAD_COUNT 1 >= 1" in e["Body"]]
info = [e for e in ev if e["SeverityText"] == "INFO" and e["SeverityNumber"] == 9 and shaped(e)
        and "off-CPU profile of 1 process(es) finished" in e["Body"]]
sys.exit(0 if warn and info else 1)
PY
ok "a policy that held and the profile it started are events in gala-gopher's shape"
# The broker goes away while a second client runs, then comes back.
kill -USR1 "$MOCK"
for _ in $(seq 50); do grep -q "broker down" "$TMP/mock.out" && break; sleep 0.1; done
client_run c2 80
sleep 2
q=$("$EMBER" stats --config "$TMP/ember.yaml" 2>/dev/null | awk '$1 == "exporter" && $2 == "ember_kafka_messages_in_queue" {print $3}')
echo "messages waiting while the broker is down: $q"
[ "${q:-0}" -gt 0 ] || fail "nothing waited in the queue while the broker was down"
kill -USR2 "$MOCK"
read -r s2 r2 < <($PY -c 'import json,sys; c=json.load(open(sys.argv[1])); print(c["bytes_sent"], c["bytes_received"])' "$TMP/c2.json")
expect "after the broker came back" 200 "$((s1 + s2))" "$((r1 + r2))"
f=$("$EMBER" stats --config "$TMP/ember.yaml" 2>/dev/null | awk '$1 == "exporter" && $2 == "ember_kafka_messages_failed" {print $3}')
[ "${f:-x}" = 0 ] || fail "$f messages were dropped"
ok "the broker's absence lost nothing: the records add up to both clients"
stop_agent || fail "agent exited with an error"
