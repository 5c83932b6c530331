#!/usr/bin/env bash
# The REST control API with ssl_auth: HTTPS with the configured key and
# certificate; a client with a certificate the configured CA signed is
# served, one without a certificate or with one another CA signed is
# refused (403), and plain HTTP gets no answer.
. "$(dirname "$0")/lib.sh"
need_bpf
command -v openssl >/dev/null || fail "openssl missing (deploy/install-deps.sh installs it)"
K=$TMP/pki; mkdir -p "$K"; chmod 755 "$TMP" "$K"
ca() { # name
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$1" -keyout "$K/$1.key" -out "$K/$1.pem" 2>/dev/null
}
leaf() { # name ca [san]
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$1" -keyout "$K/$1.key" -out "$K/$1.csr" 2>/dev/null
  printf 'subjectAltName=%s\n' "${3:-DNS:$1}" > "$K/$1.ext"
  openssl x509 -req -in "$K/$1.csr" -CA "$K/$2.pem" -CAkey "$K/$2.key" -CAcreateserial -days 2 \
    -extfile "$K/$1.ext" -out "$K/$1.pem" 2>/dev/null
}
ca rest-ca; ca other-ca
leaf server rest-ca "IP:127.0.0.1,DNS:localhost"; leaf client rest-ca; leaf stranger other-ca
chmod 644 "$K"/*
start_rest_agent --set ember.rest_api.ssl_auth=true --set ember.rest_api.private_key="$K/server.key" \
  --set ember.rest_api.cert_file="$K/server.pem" --set ember.rest_api.ca_file="$K/rest-ca.pem"
PORT=$REST_PORT
grep -q "REST control API on https://127.0.0.1:$PORT" "$TMP/agent.log" || { cat "$TMP/agent.log"; fail "the HTTPS REST API did not start"; }
U=https://127.0.0.1:$PORT/flamegraph
c=$(curl -s -o "$TMP/ok.json" -w '%{http_code}' --cacert "$K/rest-ca.pem" --cert "$K/client.pem" --key "$K/client.key" "$U")
echo "with the CA's client certificate: $c"
[ "$c" = 200 ] && grep -q '"state": "stopped"' "$TMP/ok.json" || fail "a client with a certificate of the CA was not served ($c)"
c=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$K/rest-ca.pem" -X PUT -d 'json={"state": "running"}' "$U")
echo "without a client certificate: $c"
[ "$c" = 403 ] || fail "a client without a certificate got $c"
c=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$K/rest-ca.pem" --cert "$K/stranger.pem" --key "$K/stranger.key" \
  -X PUT -d 'json={"state": "running"}' "$U")
echo "with another CA's certificate: $c"
[ "$c" = 403 ] || fail "a client with another CA's certificate got $c"
c=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$PORT/flamegraph" || true)
echo "plain HTTP: $c"
[ "$c" != 200 ] || fail "plain HTTP was served"
curl -s --cacert "$K/rest-ca.pem" --cert "$K/client.pem" --key "$K/client.key" "$U" | grep -q '"state": "stopped"' \
  || fail "a refused client changed the configuration"
ok "HTTPS: the CA's clients are served, others refused"
stop_agent || fail "agent exited with an error"
