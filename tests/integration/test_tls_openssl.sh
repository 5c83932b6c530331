#!/usr/bin/env bash
# TLS plaintext from OpenSSL as a shared library (libssl.so.3), without keys:
#  - Python's ssl module as server and client, both started after the task
#    began (each a waiting shell that exec's python: libssl is mapped, found
#    and probed while the task runs): every request of the client is one
#    exchange on each side, statuses as the client saw them, is_ssl on every
#    record, and the ciphertext the client wrote is what the server read;
#  - nginx over HTTPS driven by curl, HTTP/1.1 keep-alive with a 200/404/500
#    mix and HTTP/2 through ALPN: nginx's access log is the truth;
#  - short curls a followed shell starts while the task runs (8 one after the
#    other, 8 at once): each is probed when the analyzer has read its fork and
#    exec, and a curl can finish before that; every request is one exchange,
#    or its connection says it moved data before its process's probes were in
#    place (tls_unprobed), never neither.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
PY=/usr/bin/python3
PEER=$ROOT/tests/integration/tls_peer.py
AGENT_PROFILING_YAML="  task: { network: { max_exchanges_per_report: 1000000 } }"
start_agent
"$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats.start" || fail "ember stats failed"
UNSUPPORTED=$(awk '$1 == "collector" && $2 == "tls_unsupported" {print $3}' "$TMP/stats.start")
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 2 -keyout "$TMP/key.pem" -out "$TMP/cert.pem" \
  >/dev/null 2>&1 || fail "openssl could not make a test certificate"

# ---- Python: server and client start after the task ----------------------------------
# The server replaces the named shell (exec); the client is a child the named
# shell forks, so the task follows it from its fork and probes it after its exec.
PORT=$(net_port 7)
N=60
bash -c "while [ ! -e '$TMP/go.srv' ]; do sleep 0.02; done; exec $PY '$PEER' server $PORT '$TMP/cert.pem' '$TMP/key.pem'" \
  >"$TMP/pysrv.out" 2>&1 & SRV=$!; CLEANUP_PIDS+=("$SRV")
bash -c "while [ ! -e '$TMP/go.cli' ]; do sleep 0.02; done; $PY '$PEER' client $PORT $N & echo \$! > '$TMP/cli.pid'; wait \$!" \
  >"$TMP/pycli.out" 2>&1 & CLI_SH=$!; CLEANUP_PIDS+=("$CLI_SH")
start_net_task py "$SRV,$CLI_SH" 6s
touch "$TMP/go.srv"
for _ in $(seq 200); do grep -q listening "$TMP/pysrv.out" && break; sleep 0.05; done
grep -q listening "$TMP/pysrv.out" || { cat "$TMP/pysrv.out"; fail "the Python TLS server did not start"; }
touch "$TMP/go.cli"
wait "$CLI_SH" || { cat "$TMP/pycli.out"; fail "the Python TLS client failed"; }
CLI=$(cat "$TMP/cli.pid")
cat "$TMP/pycli.out"
wait_net_task py
"$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats.py" || fail "ember stats failed"
if [ "$UNSUPPORTED" = 1 ]; then
  # A kernel without uprobe.multi (before 6.6): no plaintext, as decided: one warning from the
  # collector naming the kernel, one from the analyzer, every process counted, the connections
  # still TLS at L4 on both sides with the bytes one wrote being what the other read.
  [ "$(grep -c 'has no uprobe.multi links' "$TMP/agent.log")" = 1 ] || { cat "$TMP/agent.log"; fail "the collector's warning is not there once"; }
  [ "$(grep -c 'TLS plaintext is not captured on this kernel' "$TMP/agent.log")" = 1 ] || { cat "$TMP/agent.log"; fail "the analyzer's warning is not there once"; }
  n=$(awk '$2 == "ember_tls_unsupported_processes" {s += $3} END {print s + 0}' "$TMP/stats.py")
  [ "$n" -ge 2 ] || fail "ember_tls_unsupported_processes $n, expected >= 2 (server and client)"
  $PY - "$TMP/py/network.json" "$SRV" "$CLI" <<'PY' || fail "the TLS connections are not L4 TLS on both sides"
import json, sys
srv, cli = int(sys.argv[2]), int(sys.argv[3])
conns = [o for o in map(json.loads, open(sys.argv[1])) if o['type'] == 'connection']
s = [c for c in conns if c['pid'] == srv]; c = [c for c in conns if c['pid'] == cli]
print("server", [(x['ssl'], x['bytes_read']) for x in s], "client", [(x['ssl'], x['bytes_written']) for x in c])
assert len(s) == 1 and len(c) == 1 and s[0]['ssl'] and c[0]['ssl']
assert c[0]['bytes_written'] == s[0]['bytes_read'] > 0
PY
  ok "TLS unsupported on $(uname -r): warned once by each process, $n processes counted, both ends TLS at L4 with equal bytes"
  stop_agent || fail "agent exited with an error"
  exit 0
fi
$PY "$ROOT/tests/integration/tls_checks.py" "$TMP/py/network.json" "$SRV" "$CLI" "$TMP/pycli.out" http1 ||
  fail "the Python TLS exchanges differ from what the client did"
ok "Python ssl: $N exchanges on each side (the client a followed child), statuses and is_ssl right"
# One file (libssl) examined, probed in each of the two processes, and the probes gone with the task.
awk '$2 ~ /^(ember_)?tls_(files_examined|files_openssl|attach_requests|files_probed|probe_points)$/ {print $1, $2, $3}' "$TMP/stats.py"
stat_of() { awk -v k="$1" '$2 == k {print $3; exit}' "$TMP/stats.py"; }
[ "$(stat_of ember_tls_files_openssl)" = 1 ] || fail "libssl examined $(stat_of ember_tls_files_openssl) times, once expected"
[ "$(stat_of ember_tls_attach_requests)" = 2 ] || fail "$(stat_of ember_tls_attach_requests) attach requests, 2 expected (libssl in 2 processes)"
[ "$(stat_of tls_files_probed)" = 0 ] && [ "$(stat_of tls_probe_points)" = 0 ] ||
  fail "probes left after the task: $(stat_of tls_files_probed) files, $(stat_of tls_probe_points) points"
# The collector checked libssl's points against the file itself and refused none.
awk '$2 ~ /^tls_attach_refused/ {print $1, $2, $3}' "$TMP/stats.py"
[ "$(stat_of tls_attach_refused)" = 0 ] || fail "the collector refused $(stat_of tls_attach_refused) TLS attach requests"
ok "libssl examined once, probed in both processes (no point refused), probes removed when the task ended"

# ---- nginx over HTTPS: curl, HTTP/1.1 keep-alive and HTTP/2 ---------------------------
NPORT=$(net_port 8)
d=$TMP/nginx-tls
mkdir -p "$d/html" "$d/logs"
head -c 3000 /dev/zero | tr '\0' 'a' > "$d/html/small.txt"
head -c 70000 /dev/urandom > "$d/html/big.bin"
cat > "$d/nginx.conf" <<NGX
worker_processes 1;
daemon off;
master_process on;
error_log $d/logs/error.log;
pid $d/nginx.pid;
events { worker_connections 1024; }
http {
  log_format ember '\$status \$request_length \$bytes_sent \$server_protocol \$connection "\$request"';
  access_log $d/logs/access.log ember;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:$NPORT ssl http2;
    ssl_certificate $TMP/cert.pem;
    ssl_certificate_key $TMP/key.pem;
    root $d/html;
    location = /fail { return 500; }
  }
}
NGX
nginx -c "$d/nginx.conf" -p "$d" >/dev/null 2>&1 & CLEANUP_PIDS+=("$!")
wait_port "$NPORT" nginx
NGX_PID=$(pgrep -f "nginx: worker process" -P "$(cat "$d/nginx.pid")" | head -1)
[ -n "$NGX_PID" ] || fail "nginx worker not found"
U=https://127.0.0.1:$NPORT
start_net_task ngx "$NGX_PID" 5s
urls=(); outs=()
for i in $(seq 30); do
  case $((i % 6)) in 1) urls+=("$U/nope");; 2) urls+=("$U/fail");; 3) urls+=("$U/big.bin");; *) urls+=("$U/small.txt");; esac
  outs+=(-o /dev/null)
done
curl -sk --http1.1 "${outs[@]}" "${urls[@]}" || fail "curl over HTTPS (HTTP/1.1) failed"
for _ in $(seq 5); do curl -sk -o /dev/null "$U/small.txt" || fail "curl over HTTPS failed"; done
curl -sk --http2 "${outs[@]}" "${urls[@]}" || fail "curl over HTTPS (HTTP/2) failed"
wait_net_task ngx
$PY - "$TMP/ngx/network.json" "$d/logs/access.log" "$NGX_PID" <<'PYC' || fail "ember's TLS exchanges differ from nginx's access log"
import json, sys, collections
net, log, pid = sys.argv[1], sys.argv[2], int(sys.argv[3])
ex, conns = [], []
for line in open(net):
    o = json.loads(line)
    if o['type'] == 'exchange' and o['pid'] == pid: ex.append(o)
    elif o['type'] == 'connection' and o['pid'] == pid: conns.append(o)
acc = collections.defaultdict(list)
nconn = collections.defaultdict(set)
for l in open(log):
    st, rl, bs, proto, conn, req = l.split(' ', 5)
    p = 'http2' if proto == 'HTTP/2.0' else 'http1'
    acc[p].append(int(st))
    nconn[p].add(conn)
bad = 0
def check(what, got, exp):
    global bad
    bad += got != exp
    print(f"  {what}: ember {got}, nginx {exp}{'' if got == exp else '  <-- differs'}")
for proto in ('http1', 'http2'):
    xs = [x for x in ex if x['protocol'] == proto]
    check(f"{proto} exchanges", len(xs), len(acc[proto]))
    check(f"{proto} statuses", dict(sorted(collections.Counter(x['status'] for x in xs).items())),
          dict(sorted(collections.Counter(acc[proto]).items())))
    check(f"{proto} is_ssl", sorted(set(x['ssl'] for x in xs)), [True])
# curl negotiates HTTP/2 by ALPN unless told --http1.1: the five single requests are HTTP/2 too.
check("connections per protocol, all TLS", sorted((c['ssl'], c['protocol']) for c in conns),
      sorted([(True, p) for p in nconn for _ in nconn[p]]))
sys.exit(1 if bad else 0)
PYC
ok "nginx over HTTPS: HTTP/1.1 and HTTP/2 exchanges match the access log, all is_ssl"

# ---- curls a followed shell starts mid-task: an exchange each, or counted -----------------
bash -c "while [ ! -e '$TMP/go.curls' ]; do sleep 0.02; done
  for i in \$(seq 8); do curl -sk --http1.1 -o /dev/null '$U/small.txt'; done
  for i in \$(seq 8); do curl -sk --http1.1 -o /dev/null '$U/small.txt' & done; wait" >"$TMP/curls.out" 2>&1 & CURLS=$!
CLEANUP_PIDS+=("$CURLS")
start_net_task curls "$CURLS" 4s
touch "$TMP/go.curls"
wait "$CURLS" || { cat "$TMP/curls.out"; fail "the curls failed"; }
wait_net_task curls
$PY - "$TMP/curls/network.json" "$CURLS" <<'PYC' || fail "a curl's request is neither an exchange nor on a connection counted unprobed"
import json, sys, collections
net, shell = sys.argv[1], int(sys.argv[2])
ex = collections.Counter(); conns = []; batch_unprobed = 0
for line in open(net):
    o = json.loads(line)
    if o['type'] == 'exchange' and o['side'] == 'client': ex[(o['pid'])] += 1
    elif o['type'] == 'connection' and o['pid'] != shell: conns.append(o)
    elif o['type'] == 'batch': batch_unprobed += o['tls_connections_unprobed']
seen = [c for c in conns if ex[c['pid']] == 1]
lost = [c for c in conns if ex[c['pid']] == 0]
print(f"  16 curls: {len(conns)} connections, {len(seen)} with their exchange "
      f"({sum(c['tls_unprobed'] for c in seen)} of them counted unprobed), {len(lost)} without "
      f"(counted unprobed: {sum(c['tls_unprobed'] for c in lost)}); batches' tls_connections_unprobed {batch_unprobed}")
assert len(conns) == 16 and all(c['ssl'] for c in conns), [(c['pid'], c['ssl']) for c in conns]
assert all(ex[c['pid']] <= 1 for c in conns)
assert all(c['tls_unprobed'] for c in lost), "a lost request on a connection not counted"
assert batch_unprobed == sum(c['tls_unprobed'] for c in conns)
PYC
ok "16 curls started mid-task: each request an exchange or on a connection counted unprobed (tls_unprobed)"

"$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats.end" || fail "ember stats failed"
awk '$2 ~ /^(ember_tls_attach_requests|tls_attach_refused)/ {print $1, $2, $3}' "$TMP/stats.end"
[ "$(awk '$2 == "tls_attach_refused" {print $3; exit}' "$TMP/stats.end")" = 0 ] ||
  fail "the collector refused a TLS attach request (see tls_attach_refused_* above)"
ok "no TLS probe point refused by the collector"
