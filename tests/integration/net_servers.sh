# Real servers for the network profiling tests (sourced after lib.sh): each
# runs on its own port under $TMP, in the foreground of a background job
# (its pid is the process to profile), and is stopped by lib.sh's cleanup.
# A server that does not come up fails the test, naming it.

# A port nobody listens on, from a per-test base.
NET_PORT_BASE=$(( 20000 + ($$ % 2000) * 10 ))
net_port() { echo $(( NET_PORT_BASE + $1 )); }

wait_port() { # port what [tcp|udp]
  for _ in $(seq 200); do
    if [ "${3:-tcp}" = udp ]; then ss -Hlun "sport = :$1" | grep -q . && return 0
    else ss -Hltn "sport = :$1" | grep -q . && return 0; fi
    sleep 0.05
  done
  fail "$2 did not listen on port $1"
}

# nginx, one worker: static files, /fail answers 500.  Sets NGINX_PID (the worker) and NGINX_PORT.
# With NGINX_TLS_CERT and NGINX_TLS_KEY set, start_nginx also serves the same
# files over HTTPS on NGINX_TLS_PORT.
nginx_tls_server() { # root
  [ -n "${NGINX_TLS_CERT:-}" ] || return 0
  printf '  server {\n    listen 127.0.0.1:%s ssl;\n    ssl_certificate %s;\n    ssl_certificate_key %s;\n' \
    "$NGINX_TLS_PORT" "$NGINX_TLS_CERT" "$NGINX_TLS_KEY"
  printf '    root %s/html;\n    location = /fail { return 500; }\n  }\n' "$1"
}

start_nginx() {
  NGINX_PORT=$(net_port 1)
  [ -z "${NGINX_TLS_CERT:-}" ] || NGINX_TLS_PORT=$(net_port 9)
  local d=$TMP/nginx
  mkdir -p "$d/html" "$d/logs"
  head -c 3000 /dev/zero | tr '\0' 'a' > "$d/html/small.txt"
  head -c 300000 /dev/urandom > "$d/html/big.bin"
  mkdir -p "$d/html/copied"; head -c 20000 /dev/zero | tr '\0' 'b' > "$d/html/copied/20k.txt"
  cat > "$d/nginx.conf" <<EOF
worker_processes 1;
daemon off;
master_process on;
error_log $d/logs/error.log;
pid $d/nginx.pid;
events { worker_connections 1024; }
http {
  log_format ember '\$status \$request_length \$bytes_sent \$request_time \$remote_port "\$request"';
  access_log $d/logs/access.log ember;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:$NGINX_PORT;
    root $d/html;
    location = /fail { return 500; }
    location /copied/ { sendfile off; }   # bodies written from user memory: data ember copies
  }
$(nginx_tls_server "$d")
}
EOF
  nginx -c "$d/nginx.conf" -p "$d" >/dev/null 2>&1 & CLEANUP_PIDS+=("$!")
  wait_port "$NGINX_PORT" nginx
  [ -z "${NGINX_TLS_PORT:-}" ] || wait_port "$NGINX_TLS_PORT" "nginx (HTTPS)"
  NGINX_PID=$(pgrep -f "nginx: worker process" -P "$(cat "$d/nginx.pid")" | head -1)
  [ -n "$NGINX_PID" ] || fail "nginx worker not found"
}

start_redis() {
  REDIS_PORT=$(net_port 2)
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$TMP" \
    --io-threads 1 >"$TMP/redis.log" 2>&1 & REDIS_PID=$!; CLEANUP_PIDS+=("$REDIS_PID")
  wait_port "$REDIS_PORT" redis-server
}

start_mariadb() {
  MARIADB_PORT=$(net_port 3)
  local d=$TMP/mariadb
  mkdir -p "$d"
  mariadb-install-db --no-defaults --user=root --datadir="$d/data" --auth-root-authentication-method=normal \
    --skip-test-db >"$TMP/mariadb-install.log" 2>&1 || { tail "$TMP/mariadb-install.log"; fail "mariadb-install-db failed"; }
  mariadbd --no-defaults --user=root --datadir="$d/data" --socket="$d/sock" --port="$MARIADB_PORT" \
    --bind-address=127.0.0.1 --skip-grant-tables --innodb-buffer-pool-size=16M --skip-log-bin \
    --pid-file="$d/pid" >"$TMP/mariadb.log" 2>&1 & MARIADB_PID=$!; CLEANUP_PIDS+=("$MARIADB_PID")
  wait_port "$MARIADB_PORT" mariadbd
}

start_postgres() {
  PG_PORT=$(net_port 4)
  local d=$TMP/pg bin=/usr/lib/postgresql/15/bin
  mkdir -p "$d"; chown postgres "$d"
  setpriv --reuid=postgres --regid=postgres --init-groups "$bin/initdb" -D "$d/data" -A trust -U postgres \
    >"$TMP/initdb.log" 2>&1 || { tail "$TMP/initdb.log"; fail "initdb failed"; }
  setpriv --reuid=postgres --regid=postgres --init-groups "$bin/postgres" -D "$d/data" -p "$PG_PORT" \
    -k "$d" -c listen_addresses=127.0.0.1 -c shared_buffers=16MB -c fsync=off >"$TMP/pg.log" 2>&1 &
  PG_PID=$!; CLEANUP_PIDS+=("$PG_PID")
  wait_port "$PG_PORT" postgres
}

# dnsmasq answers for *.ember.test from its host file, NXDOMAIN for other .test names.
start_dnsmasq() {
  DNS_PORT=$(net_port 5)
  printf '10.1.2.3 a.ember.test\n10.1.2.4 b.ember.test\n' > "$TMP/hosts"
  dnsmasq --keep-in-foreground --no-daemon --port="$DNS_PORT" --listen-address=127.0.0.1 --bind-interfaces \
    --no-resolv --no-hosts --addn-hosts="$TMP/hosts" --local=/test/ --user=root --pid-file= \
    --log-facility="$TMP/dnsmasq.log" 2>>"$TMP/dnsmasq.log" & DNS_PID=$!; CLEANUP_PIDS+=("$DNS_PID")
  wait_port "$DNS_PORT" dnsmasq udp
}

start_nghttpd() {
  H2_PORT=$(net_port 6)
  mkdir -p "$TMP/h2"; head -c 5000 /dev/zero | tr '\0' 'h' > "$TMP/h2/index.html"
  nghttpd --no-tls -d "$TMP/h2" "$H2_PORT" >"$TMP/nghttpd.log" 2>&1 & H2_PID=$!; CLEANUP_PIDS+=("$H2_PID")
  wait_port "$H2_PORT" nghttpd
}

# Loopback capture of one port, for oracle.sh: start_capture NAME PORT; stop_capture.
start_capture() {
  CAP_FILE=$TMP/$1.pcapng
  dumpcap -q -i lo -f "port $2" -w "$CAP_FILE" >"$TMP/dumpcap-$1.log" 2>&1 & CAP_PID=$!; CLEANUP_PIDS+=("$CAP_PID")
  for _ in $(seq 100); do [ -s "$CAP_FILE" ] && return 0; sleep 0.05; done
  cat "$TMP/dumpcap-$1.log"; fail "dumpcap did not start"
}
stop_capture() { sleep 0.3; kill -INT "$CAP_PID" 2>/dev/null; wait "$CAP_PID" 2>/dev/null; true; }

# ember profile --type network of the given pids in the background, started when it says so.
start_net_task() { # name pids duration [extra options]
  local name=$1 pids=$2 dur=$3; shift 3
  # Slow machines (software emulation: EMBER_TIME_SCALE) get longer tasks for the same workload.
  [[ "$dur" =~ ^[0-9]+s$ ]] && dur=$(( ${dur%s} * ${EMBER_TIME_SCALE:-1} ))s
  "$EMBER" profile --config "$TMP/ember.yaml" --type network --pid "$pids" --duration "$dur" \
    --out "$TMP/$name" "$@" >"$TMP/$name.out" 2>"$TMP/$name.err" & NET_TASK=$!
  for _ in $(seq 200); do grep -q "profiling" "$TMP/$name.err" 2>/dev/null && return 0; sleep 0.05; done
  cat "$TMP/$name.err"; fail "the $name task did not start"
}
wait_net_task() { # name
  wait "$NET_TASK" || { cat "$TMP/$1.err"; fail "the $1 task failed"; }
  [ -s "$TMP/$1/network.json" ] || { cat "$TMP/$1.err"; ls -la "$TMP/$1"; fail "the $1 task wrote no network.json"; }
}

# ---- an agent reporting nginx's worker to the stand-in OAP (tests/oap_receiver.py) ----
# start_oap_nginx_agent: the receiver (REC: what it got, TASKS: what it hands
# out), then an agent that reports nginx's worker (NGINX_PID, started before)
# as service ember-it-nginx, reporting network meters every second; returns
# once the OAP has the process.  Sets PY, REC, TASKS, AGENT_PID.
start_oap_nginx_agent() {
  PY=/usr/bin/python3   # Debian's python3 has the Debian grpc modules
  $PY -c "import grpc, grpc_tools.protoc, google.protobuf" 2>/dev/null ||
    fail "python3-grpcio / python3-grpc-tools / python3-protobuf missing (deploy/install-deps.sh installs them)"
  local port token=ember-test-token-$RANDOM
  port=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  REC=$TMP/rec.jsonl TASKS=$TMP/tasks.json
  : > "$REC"; echo '[]' > "$TASKS"
  $PY "$ROOT/tests/oap_receiver.py" --port "$port" --record "$REC" --tasks "$TASKS" --auth "$token" \
    >"$TMP/receiver.log" 2>&1 & CLEANUP_PIDS+=("$!")
  for _ in $(seq 100); do grep -q "listening on" "$TMP/receiver.log" 2>/dev/null && break; sleep 0.1; done
  grep -q "listening on" "$TMP/receiver.log" || { cat "$TMP/receiver.log"; fail "receiver did not start"; }
  cat > "$TMP/ember.yaml" <<YAML
ember: { run_dir: $TMP/run, output_dir: $TMP/out }
exporter: { backends: [file, skywalking] }
core: { backend: { addr: "127.0.0.1:$port", check_period: 1, authentication: $token } }
process_discovery:
  heartbeat_period: 2s
  scanner:
    mode: REGEX
    regex:
      - match_cmd: "^nginx: worker process"
        layer: OS_LINUX
        service_name: "ember-it-nginx"
        instance_name: "{{.Rover.HostName}}"
        process_name: "nginx"
profiling:
  check_interval: 1s
  flush_interval: 1s
  task: { network: { report_interval: 1s } }
  continuous: { policies: [] }
YAML
  "$EMBER" run --config "$TMP/ember.yaml" >"$TMP/agent.log" 2>&1 & AGENT_PID=$!; CLEANUP_PIDS+=("$AGENT_PID")
  local _i
  for _i in $(seq 150); do
    grep -q '"rpc": "reportProcesses", "t": [0-9]*, "ok": true' "$REC" && grep -q '"pid": "\?'"$NGINX_PID" "$REC" && return 0
    sleep 0.1
  done
  tail "$TMP/agent.log"; fail "nginx worker $NGINX_PID not reported to the OAP"
}

# oap_network_task SAMPLINGS-JSON: the OAP hands out a 30 s NETWORK task for
# ember-it-nginx with those sampling rules (escaped for the extension
# string); returns once the analyzer runs it.  Sets T0 (its start, ms).
oap_network_task() {
  T0=$(date +%s%3N)
  echo "[{\"taskId\": \"net-$T0\", \"serviceName\": \"ember-it-nginx\", \"targetType\": \"NETWORK\", \"startTime\": $T0,
  \"duration\": 30, \"updateTime\": $T0, \"extension\": \"$1\"}]" > "$TASKS.tmp"
  mv "$TASKS.tmp" "$TASKS"
  for _ in $(seq 100); do grep -q "OAP task net-$T0: network profiling" "$TMP/agent.log" && break; sleep 0.1; done
  grep -q "OAP task net-$T0: network profiling of 1 process(es) of ember-it-nginx/" "$TMP/agent.log" ||
    { tail -20 "$TMP/agent.log"; fail "NETWORK task not taken for nginx's instance"; }
  for _ in $(seq 100); do grep -q "task sw-.*started: network" "$TMP/agent.log" && break; sleep 0.1; done
  grep -q "task sw-.*started: network" "$TMP/agent.log" || { tail -20 "$TMP/agent.log"; fail "the analyzer did not start the network task"; }
}
