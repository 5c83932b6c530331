#!/usr/bin/env bash
# The raw_tp variant of bpf/net (what a kernel without BTF trampolines loads
# when tp_btf will not) does the same job: loaded on purpose here with
# EMBER_NET_ATTACH=raw_tp, it counts every request nginx answered, statuses
# and sizes as the access log has them.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
command -v bpftool >/dev/null || skip "bpftool not installed"
export EMBER_NET_ATTACH=raw_tp
AGENT_PROFILING_YAML="  task: { network: { max_exchanges_per_report: 1000000 } }"
start_agent
start_nginx
N=30
start_net_task raw "$NGINX_PID" 5s
progs=$(agent_progs | grep -oE "name net_[a-z]+_(raw|btf)" | tr '\n' ' ')
echo "programs loaded: $progs"
case "$progs" in *net_enter_raw*net_exit_raw*) ;; *) fail "the raw_tp programs are not the ones loaded: $progs" ;; esac
case "$progs" in *_btf*) fail "tp_btf programs loaded although raw_tp was asked for: $progs" ;; esac
for i in $(seq $N); do
  case $((i % 3)) in 0) u=/small.txt ;; 1) u=/missing$i ;; 2) u=/fail ;; esac
  curl -s -o /dev/null "http://127.0.0.1:$NGINX_PORT$u" || fail "curl $u failed"
done
wait_net_task raw
python3 - "$TMP/raw/network.json" "$TMP/nginx/logs/access.log" "$NGINX_PID" <<'PY' || fail "the raw_tp variant's exchanges differ from nginx's access log"
import json, sys, collections
ex = [o for o in map(json.loads, open(sys.argv[1])) if o.get('type') == 'exchange' and o['pid'] == int(sys.argv[3])]
acc = [l.split(' ', 5) for l in open(sys.argv[2])]
got = (len(ex), dict(collections.Counter(e['status'] for e in ex)), sum(e['resp_bytes'] for e in ex))
want = (len(acc), dict(collections.Counter(int(a[0]) for a in acc)), sum(int(a[2]) for a in acc))
print("ember (exchanges, statuses, response bytes):", got)
print("nginx:", want)
sys.exit(got != want)
PY
ok "raw_tp: every request nginx answered is an exchange with its status and size"
stop_agent || fail "agent exited with an error"
