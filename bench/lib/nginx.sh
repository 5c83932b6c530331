# Sourced by the benches: nginx with one worker under $T (the caller's temporary
# directory) serving small.txt, a file of $1 bytes (3000 if omitted), on
# 127.0.0.1:$PORT (the caller's), with no access log and no limit on a
# keep-alive connection's requests; $2 = ssl serves it over HTTPS with a
# self-signed certificate made here.  Sets NGINX (the master's pid: the
# caller's EXIT trap stops it) and W (its worker's).  Returns once the worker
# runs, 1 if it does not come up.
start_bench_nginx() {
  local size=${1:-3000} listen="127.0.0.1:$PORT" tls=""
  NGINX="" W=""
  mkdir -p "$T/html" "$T/logs"
  head -c "$size" /dev/zero | tr '\0' 'a' > "$T/html/small.txt"
  if [ "${2:-}" = ssl ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 2 -keyout "$T/key.pem" \
      -out "$T/cert.pem" > /dev/null 2>&1 || { echo "bench: openssl could not make a certificate" >&2; return 1; }
    listen="$listen ssl"; tls="ssl_certificate $T/cert.pem; ssl_certificate_key $T/key.pem;"
  fi
  cat > "$T/nginx.conf" <<NGX
worker_processes 1; daemon off; error_log $T/logs/error.log; pid $T/nginx.pid;
events { worker_connections 1024; }
http { access_log off; keepalive_requests 1000000;
  server { listen $listen; $tls root $T/html; } }
NGX
  nginx -c "$T/nginx.conf" -p "$T" > /dev/null 2>&1 & NGINX=$!
  for _ in $(seq 100); do
    [ -s "$T/nginx.pid" ] && W=$(pgrep -P "$(cat "$T/nginx.pid")" | head -1) && [ -n "$W" ] && return 0
    sleep 0.05
  done
  echo "bench: nginx did not start" >&2; cat "$T/logs/error.log" >&2 2>/dev/null; return 1
}
