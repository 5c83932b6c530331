#!/usr/bin/env bash
# core.backend.* TLS settings against the stand-in OAP: mutual TLS with a CA
# file and a client certificate, then a self-signed server with
# insecure_skip_verify, then the same server without it (must not connect).
. "$(dirname "$0")/lib.sh"
need_bpf
PY=/usr/bin/python3
$PY -c "import grpc, grpc_tools.protoc, google.protobuf" 2>/dev/null ||
  skip "python3-grpcio / python3-grpc-tools / python3-protobuf not installed (deploy/install-deps.sh)"
command -v openssl >/dev/null || skip "openssl not installed"
[ -x "$PROGS/oncpu_chain" ] || fail "$PROGS/oncpu_chain not built"
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
C=$TMP/certs; mkdir -p "$C"
(
  cd "$C"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=ember test CA"
  printf "subjectAltName=DNS:localhost,IP:127.0.0.1\n" > san.ext
  openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=localhost"
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile san.ext
  openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr -subj "/CN=ember-agent"
  openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 2
  openssl req -x509 -newkey rsa:2048 -nodes -keyout self.key -out self.pem -days 2 -subj "/CN=localhost" \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1"
) >"$TMP/openssl.log" 2>&1 || { cat "$TMP/openssl.log"; fail "openssl"; }
chmod 644 "$C"/*   # the exporter runs as the unprivileged user

"$PROGS/oncpu_chain" 60 & W=$!; CLEANUP_PIDS+=("$W")

# run_case NAME RECEIVER-ARGS -- YAML-BACKEND-LINES ; sets REC
run_case() {
  local name=$1; shift
  local rargs=() ; while [ "$1" != -- ]; do rargs+=("$1"); shift; done; shift
  REC=$TMP/$name.jsonl; : > "$REC"
  $PY "$ROOT/tests/oap_receiver.py" --port "$PORT" --record "$REC" "${rargs[@]}" >"$TMP/$name.recv.log" 2>&1 &
  RECV=$!; CLEANUP_PIDS+=("$RECV")
  for _ in $(seq 100); do grep -q "listening" "$TMP/$name.recv.log" && break; sleep 0.1; done
  AGENT_RUN=$TMP/run-$name
  cat > "$TMP/$name.yaml" <<YAML
ember:
  run_dir: $AGENT_RUN
  output_dir: $TMP/out-$name
exporter:
  backends: [skywalking]
core:
  backend:
    addr: localhost:$PORT
    check_period: 1
$(printf '    %s\n' "$@")
process_discovery:
  heartbeat_period: 1s
  scanner:
    mode: REGEX
    regex:
      - match_cmd: "progs/oncpu_chain"
        service_name: tls-test
        instance_name: "{{.Rover.HostName}}"
profiling:
  continuous: { policies: [] }
YAML
  "$EMBER" run --config "$TMP/$name.yaml" >"$TMP/$name.agent.log" 2>&1 &
  AGENT_PID=$!; CLEANUP_PIDS+=("$AGENT_PID")
  for _ in $(seq 60); do grep -q '"reportProcesses", "t": [0-9]*, "ok": true' "$REC" && break; sleep 0.1; done
  sleep 1
  stop_agent >/dev/null || true
  kill "$RECV"; wait "$RECV" 2>/dev/null
}
reported() { grep -q "\"pid\": $W" "$REC"; }

run_case mtls --tls-cert "$C/server.pem" --tls-key "$C/server.key" --tls-client-ca "$C/ca.pem" -- \
  "enable_TLS: true" "ca_pem_path: $C/ca.pem" "client_pem_path: $C/client.pem" "client_key_path: $C/client.key"
reported || { tail -5 "$TMP/mtls.agent.log" "$TMP/mtls.recv.log"; fail "mutual TLS: process not reported"; }
ok "mutual TLS with a CA file and a client certificate"

run_case skip --tls-cert "$C/self.pem" --tls-key "$C/self.key" -- "enable_TLS: true" "insecure_skip_verify: true"
reported || { tail -5 "$TMP/skip.agent.log"; fail "insecure_skip_verify: process not reported"; }
ok "self-signed server accepted with insecure_skip_verify"

run_case verify --tls-cert "$C/self.pem" --tls-key "$C/self.key" -- "enable_TLS: true" "ca_pem_path: $C/ca.pem"
reported && fail "a server certificate the CA did not sign was accepted"
grep -q "unreachable" "$TMP/verify.agent.log" || { tail -5 "$TMP/verify.agent.log"; fail "no 'unreachable' line"; }
ok "server certificate not signed by the CA refused"
