#!/usr/bin/env bash
# TLS at L4 (no plaintext: profiling.task.network.tls false, as on kernels
# without uprobe.multi): nginx over HTTPS.  nginx peeks one byte of every new
# TLS connection (recvfrom MSG_PEEK) before its handshake reads it again; a
# peek moves no data, so every connection is TLS from its first record and its
# bytes are counted once: what each client wrote is what ember says nginx read
# on that connection, and the other way round.  Several connections (curl,
# followed from its parent), sequential and concurrent.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 2 -keyout "$TMP/key.pem" -out "$TMP/cert.pem" \
  >/dev/null 2>&1 || fail "openssl could not make a test certificate"
NGINX_TLS_CERT=$TMP/cert.pem NGINX_TLS_KEY=$TMP/key.pem
AGENT_PROFILING_YAML="  task: { network: { tls: false } }"
start_agent
start_nginx
U=https://127.0.0.1:$NGINX_TLS_PORT
# The clients: children of a shell the task follows from before they start.
cat > "$TMP/clients.sh" <<SH
while [ ! -e "$TMP/go" ]; do sleep 0.02; done
for i in \$(seq 6); do curl -sk -o /dev/null "$U/small.txt" || exit 1; done
# Keep-alive: 10 requests on one connection, and 4 such clients at once.
urls=(); for _ in \$(seq 10); do urls+=("$U/small.txt" -o /dev/null); done
for _ in 1 2 3 4; do curl -sk "\${urls[@]}" & done
for _ in 1 2 3 4; do wait -n || exit 1; done
SH
bash "$TMP/clients.sh" & CLI=$!; CLEANUP_PIDS+=("$CLI")
start_net_task l4 "$NGINX_PID,$CLI" 5s
touch "$TMP/go"
wait "$CLI" || fail "a curl client failed"
sleep 0.5
"$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats.txt" || fail "ember stats failed"
wait_net_task l4
python3 - "$TMP/l4/network.json" "$NGINX_PID" "$TMP/stats.txt" "$TMP/nginx/logs/access.log" <<'PY' || fail "nginx's HTTPS connections are not all TLS at L4"
import json, sys
net, pid, stats, log = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
objs = [json.loads(l) for l in open(net)]
conns = [o for o in objs if o['type'] == 'connection' and o['pid'] == pid]
cli = {o['local_address'].rsplit(':', 1)[1]: o for o in objs if o['type'] == 'connection' and o['pid'] != pid}
st = {}
for l in open(stats):
    f = l.split()
    if len(f) == 3 and f[2].isdigit(): st[f[1]] = st.get(f[1], 0) + int(f[2])
ports = {l.split(' ')[4] for l in open(log)}
peeks = st.get('bpf_net_peeks_skipped', 0)
print(f"  nginx's connections {len(conns)} (its log: {len(ports)}), the clients' {len(cli)}, peeks skipped {peeks}")
bad = 0
for c in conns:
    port = c['remote_address'].rsplit(':', 1)[1]
    k = cli.get(port)
    line = f"    :{port} ssl={c['ssl']} protocol={c['protocol']} read={c['bytes_read']} written={c['bytes_written']}"
    if not k:
        print(line + "  <-- no client connection"); bad += 1; continue
    line += f"; client ssl={k['ssl']} wrote {k['bytes_written']} read {k['bytes_read']}"
    if (c['bytes_read'], c['bytes_written']) != (k['bytes_written'], k['bytes_read']) or not c['ssl'] or not k['ssl']:
        line += "  <-- differs"; bad += 1
    print(line)
if len(conns) != len(ports) or len(conns) != 10: print("  <-- 10 connections expected"); bad += 1
if peeks < len(conns): print("  <-- nginx peeks once per connection: fewer peeks skipped"); bad += 1
sys.exit(1 if bad else 0)
PY
ok "every nginx HTTPS connection is TLS at L4 (its peek not taken as the first read)"
stop_agent || fail "agent exited with an error"
