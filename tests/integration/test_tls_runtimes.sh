#!/usr/bin/env bash
# TLS plaintext from runtimes that carry their own TLS: Node's https (OpenSSL
# linked into the node binary, memory BIOs: the library never touches the
# socket, so plaintext is tied to the socket its thread moves data on) and
# Go's crypto/tls (built in the test with Debian's golang-go; register ABI,
# uprobes on the RET instructions of (*Conn).Read/Write, state by goroutine),
# HTTP/1.1 and HTTP/2 (ALPN h2) for Go; and BoringSSL (Debian's Android build,
# libssl.so.0: found by its symbols, as BoringSSL linked into an executable
# would be) under tests/progs/bssl_peer.  Each: a server and a client started
# after the task began, exact exchange counts and statuses on both sides,
# is_ssl, and the ciphertext one end wrote is what the other read.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
PY=/usr/bin/python3
CHECK=$ROOT/tests/integration/tls_checks.py
AGENT_PROFILING_YAML="  task: { network: { max_exchanges_per_report: 1000000 } }"
start_agent
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 2 -keyout "$TMP/key.pem" -out "$TMP/cert.pem" \
  >/dev/null 2>&1 || fail "openssl could not make a test certificate"

# tls_files_at_least N: waits (5 s at most) until the collector has N files probed.
tls_files_at_least() {
  local files=0
  for _ in $(seq 100); do
    files=$("$EMBER" stats --config "$TMP/ember.yaml" | awk '$1 == "collector" && $2 == "tls_files_probed" {print $3}')
    [ "${files:-0}" -ge "$1" ] && return 0
    sleep 0.05
  done
  return 1
}

# run_pair NAME PROTOCOL N SERVER-COMMAND CLIENT-COMMAND [library]: both wait for their
# go file, so that they start (and load their TLS code) while the task runs.  The client
# starts once the server's TLS code is probed: a program (node, the Go binary) is then
# probed in every process running it, the client from its first instruction.  A library
# (BoringSSL's libssl.so.0) is probed per process, by a link made after the process maps
# it (two kernel grace periods, 10-25 ms here): with "library" the client connects once
# its own probes are there (EMBER_TEST_GO, tests/progs/start_gate.h).
run_pair() {
  local name=$1 proto=$2 n=$3 srv_cmd=$4 cli_cmd=$5 lib=${6:-} srv cli
  bash -c "while [ ! -e '$TMP/$name.go.srv' ]; do sleep 0.02; done; exec $srv_cmd" >"$TMP/$name.srv.out" 2>&1 &
  srv=$!; CLEANUP_PIDS+=("$srv")
  bash -c "while [ ! -e '$TMP/$name.go.cli' ]; do sleep 0.02; done; EMBER_TEST_GO=${lib:+$TMP/$name.gate} exec $cli_cmd" >"$TMP/$name.cli.out" 2>&1 &
  cli=$!; CLEANUP_PIDS+=("$cli")
  start_net_task "$name" "$srv,$cli" 8s
  touch "$TMP/$name.go.srv"
  for _ in $(seq 300); do grep -q listening "$TMP/$name.srv.out" && break; sleep 0.05; done
  grep -q listening "$TMP/$name.srv.out" || { cat "$TMP/$name.srv.out"; fail "the $name server did not start"; }
  tls_files_at_least 1 || fail "the $name server's TLS code was not probed within 5 s"
  touch "$TMP/$name.go.cli"
  if [ -n "$lib" ]; then
    tls_files_at_least 2 || fail "the $name client's TLS library was not probed within 5 s"
    touch "$TMP/$name.gate"
  fi
  wait "$cli" || { cat "$TMP/$name.cli.out"; fail "the $name client failed"; }
  tail -1 "$TMP/$name.cli.out"
  wait_net_task "$name"
  kill "$srv" 2>/dev/null
  $PY "$CHECK" "$TMP/$name/network.json" "$srv" "$cli" "$TMP/$name.cli.out" "$proto" ||
    fail "the $name exchanges differ from what its client did"
  ok "$name: $n exchanges of $proto on each side, statuses and is_ssl right"
}

# ---- Node ------------------------------------------------------------------------------
if command -v node >/dev/null; then
  P=$(net_port 7)
  JS=$ROOT/tests/integration/tls_node.js
  # NodeSource's node has OpenSSL inside (a program: probed in every process running it);
  # Debian's loads the system's libssl.so.3 (a library: probed per process).
  kind=$(ldd "$(command -v node)" | grep -q 'libssl\.so' && echo library)
  run_pair node http1 50 "node '$JS' server $P '$TMP/cert.pem' '$TMP/key.pem'" "node '$JS' client $P 50" $kind
else
  fail "node missing (deploy/install-deps.sh installs nodejs)"
fi

# ---- Go --------------------------------------------------------------------------------
command -v go >/dev/null || fail "go missing (deploy/install-deps.sh installs golang-go)"
# The build cache under build/ keeps later runs fast; no network is needed (standard library only).
GOCACHE=$B/go-cache GO111MODULE=off CGO_ENABLED=0 GOPROXY=off go build -o "$TMP/go_tls" "$ROOT/tests/progs/go_tls/main.go" \
  >"$TMP/go-build.log" 2>&1 || { cat "$TMP/go-build.log"; fail "go build of tests/progs/go_tls failed"; }
"$TMP/go_tls" version >/dev/null 2>&1
for proto in h1 h2; do
  P=$(net_port $([ $proto = h1 ] && echo 8 || echo 9))
  run_pair "go-$proto" "$([ $proto = h1 ] && echo http1 || echo http2)" 40 \
    "'$TMP/go_tls' server 127.0.0.1:$P '$TMP/cert.pem' '$TMP/key.pem'" \
    "'$TMP/go_tls' client https://127.0.0.1:$P/size/3000 40 $proto"
done

# ---- BoringSSL -------------------------------------------------------------------------
[ -x "$B/progs/bssl_peer" ] || fail "$B/progs/bssl_peer not built (deploy/install-deps.sh installs android-libboringssl-dev)"
ldd "$B/progs/bssl_peer" | grep -q 'android/libssl.so.0' || fail "bssl_peer does not use BoringSSL's libssl.so.0"
P=$(net_port 10)
run_pair bssl http1 40 "'$B/progs/bssl_peer' server $P '$TMP/cert.pem' '$TMP/key.pem'" "'$B/progs/bssl_peer' client $P 40" library

"$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats" || fail "ember stats failed"
awk '$2 ~ /tls_files_go|bpf_net_tls_returns_without_entry|ember_tls_attach_requests|^tls_attach|tls_process_probes_merged/' "$TMP/stats"
# BoringSSL's client asked for the points its server's libssl.so.0 had: checked once.
[ "$(awk '$2 == "tls_attach_checked_before" {print $3; exit}' "$TMP/stats")" -ge 1 ] ||
  fail "the collector checked the same points in the same file twice"
ok "points checked once per file"

# node's OpenSSL, the Go program (h1, h2) and BoringSSL: the collector checked every point itself and refused none.
[ "$(awk '$2 == "tls_attach_refused" {print $3; exit}' "$TMP/stats")" = 0 ] ||
  fail "the collector refused a TLS attach request (see tls_attach_refused_* above)"
ok "no TLS probe point refused by the collector"
