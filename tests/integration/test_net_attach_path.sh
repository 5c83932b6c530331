#!/usr/bin/env bash
# Which layer network capture uses, and that the host says so: the socket
# layer (sock_send_length / sock_recv_length, no syscall tracepoint) where
# the kernel has those tracepoints and a cgroup v2 hierarchy is mounted (its
# recvmsg hooks give a datagram's source), else the syscall layer; the
# agent's log line, `bpf_net_socket_layer` in ember stats and a task's attach
# point agree with what is loaded, and a network task counts nginx's
# requests on either.  EMBER_NET_ATTACH=syscall starts the chain at the
# syscall layer; a value it does not know stops the agent, naming it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
command -v bpftool >/dev/null || skip "bpftool not installed"
has_tp=0; bpftool btf dump file /sys/kernel/btf/vmlinux 2>/dev/null | grep -q "'btf_trace_sock_send_length'" && has_tp=1
has_cg=0; grep -q ' - cgroup2 ' /proc/self/mountinfo && has_cg=1
want=$(( has_tp && has_cg ))
echo "kernel $(uname -r): sock_send_length tracepoint $has_tp, cgroup v2 mounted $has_cg: socket layer expected $want"
AGENT_PROFILING_YAML="  task: { network: { max_exchanges_per_report: 1000000 } }"
start_nginx

# One agent: its log, its counter, its task's attach point, its programs, and nginx's requests.
check_path() {   # NAME EXPECT_SOCKET
  local name=$1 sock=$2 progs ap layer
  start_agent
  grep "network capture" "$TMP/agent.log" | sed 's/^/  /'
  if [ "$sock" = 1 ]; then
    grep -q "network capture: socket layer" "$TMP/agent.log" || fail "$name: the log does not say socket layer"
  else
    grep -q "network capture: syscall layer" "$TMP/agent.log" || fail "$name: the log does not say syscall layer"
  fi
  start_net_task "$name" "$NGINX_PID" 4s
  layer=$("$EMBER" stats --config "$TMP/ember.yaml" | awk '$1 == "collector" && $2 == "bpf_net_socket_layer" {print $3}')
  [ "$layer" = "$sock" ] || fail "$name: bpf_net_socket_layer is '$layer', expected $sock"
  progs=$(agent_progs | grep -oE "name net_(sl_[a-z0-9]+|enter_[a-z]+|exit_[a-z]+)" | tr '\n' ' ')
  echo "  programs loaded: $progs"
  if [ "$sock" = 1 ]; then
    case "$progs" in *net_sl_send*net_sl_state*) ;; *) fail "$name: the socket layer's programs are not loaded" ;; esac
    case "$progs" in *net_enter_*|*net_exit_*) fail "$name: a syscall tracepoint program is loaded: $progs" ;; esac
  else
    case "$progs" in *net_enter_btf*net_exit_btf*) ;; *) fail "$name: the syscall layer's programs are not loaded" ;; esac
    case "$progs" in *net_sl_*) fail "$name: a socket-layer program is loaded: $progs" ;; esac
  fi
  : > "$TMP/nginx/logs/access.log"
  for i in $(seq 12); do
    curl -s -o /dev/null "http://127.0.0.1:$NGINX_PORT/$([ $((i % 3)) = 0 ] && echo nope || echo small.txt)" ||
      fail "curl failed"
  done
  wait_net_task "$name"
  ap=$(grep -o "started: network, [0-9]* pid(s), [0-9]* ms, attach point [a-z_:]*" "$TMP/agent.log" | tail -1)
  echo "  task: $ap"
  case "$ap" in
    *"attach point tp_btf:socket") [ "$sock" = 1 ] || fail "$name: the task's attach point is the socket layer" ;;
    *"attach point tp_btf") [ "$sock" = 0 ] || fail "$name: the task's attach point is the syscall layer" ;;
    *) fail "$name: no attach point in the log" ;;
  esac
  python3 - "$TMP/$name/network.json" "$TMP/nginx/logs/access.log" "$NGINX_PID" <<'PY' || fail "$name: exchanges differ from nginx's access log"
import json, sys, collections
ex = [o for o in map(json.loads, open(sys.argv[1])) if o.get('type') == 'exchange' and o['pid'] == int(sys.argv[3])]
acc = [l.split(' ', 5) for l in open(sys.argv[2])]
got = (len(ex), dict(collections.Counter(e['status'] for e in ex)))
want = (len(acc), dict(collections.Counter(int(a[0]) for a in acc)))
print("  ember (exchanges, statuses):", got, " nginx:", want)
sys.exit(got != want)
PY
  stop_agent || fail "$name: agent exited with an error"
}

check_path default "$want"
ok "the default chain picked the $([ "$want" = 1 ] && echo socket || echo syscall) layer, and says so"
EMBER_NET_ATTACH=syscall check_path syscall 0
ok "EMBER_NET_ATTACH=syscall: the syscall layer, and it says so"

# A value the agent does not know: it does not start, and names the value.
EMBER_NET_ATTACH=sockets "$EMBER" run --config "$TMP/ember.yaml" >"$TMP/bad.log" 2>&1 & BAD=$!
CLEANUP_PIDS+=("$BAD")
for _ in $(seq 100); do kill -0 "$BAD" 2>/dev/null || break; sleep 0.1; done
kill -0 "$BAD" 2>/dev/null && fail "the agent runs with EMBER_NET_ATTACH=sockets"
grep -q "EMBER_NET_ATTACH=sockets: expected socket, syscall or raw_tp" "$TMP/bad.log" ||
  { cat "$TMP/bad.log"; fail "the refusal does not name the value"; }
ok "EMBER_NET_ATTACH=sockets: refused at start, naming the value"
