#!/usr/bin/env bash
# Continuous profiling, HTTP monitors, on nginx answering 500 for /fail only:
# the HTTP_ERROR_RATE item filtered to /fail fires (100%), the one filtered to
# /small.txt does not; an HTTP_AVG_RESPONSE_TIME item on a URI regex fires
# its NETWORK task, which takes over the monitors' own capture of the worker
# and, when it ends, hands it back (exchanges keep being counted). The
# monitors' capture writes no output of its own.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
AGENT_POLICIES="[{Name: web, MatchCmd: 'nginx: worker process', Profiling: {
  ON_CPU: {HTTP_ERROR_RATE: {Threshold: 50, Period: 5, Count: 2, URIList: [/fail]}},
  OFF_CPU: {HTTP_ERROR_RATE: {Threshold: 50, Period: 5, Count: 2, URIList: [/small.txt]}},
  NETWORK: {HTTP_AVG_RESPONSE_TIME: {Threshold: 0, Period: 5, Count: 2, URIRegex: '^/small'}}}}]"
AGENT_CONTINUOUS="check_interval: 1s, trigger: {execute_duration: 3s, silence_duration: 10m}"
start_agent
start_nginx
U=http://127.0.0.1:$NGINX_PORT
stat() { "$EMBER" stats --config "$TMP/ember.yaml" 2>/dev/null | awk -v k="$1" '$1 == "analyzer0" && $2 == k {print $3}'; }
drive() { # seconds
  local end=$((SECONDS + $1))
  while [ $SECONDS -lt $end ]; do
    curl -s -o /dev/null "$U/fail"; curl -s -o /dev/null "$U/small.txt"; sleep 0.05
  done
}
drive 12
on=$(ls -d "$AGENT_OUT"/auto-oncpu-"$NGINX_PID"-* 2>/dev/null | head -1)
net=$(ls -d "$AGENT_OUT"/auto-network-"$NGINX_PID"-* 2>/dev/null | head -1)
[ -n "$on" ] || { tail -20 "$TMP/agent.log"; fail "no on-CPU task from the /fail error rate"; }
[ -z "$(ls -d "$AGENT_OUT"/auto-offcpu-* 2>/dev/null)" ] || fail "the item filtered to /small.txt (no errors) fired"
[ -n "$net" ] || { tail -20 "$TMP/agent.log"; fail "no network task from the ^/small response time"; }
for _ in $(seq 20); do [ -s "$net/task.json" ] && [ -s "$on/task.json" ] && break; sleep 0.5; done
python3 - "$on/task.json" "$net/task.json" <<'PY' || fail "the HTTP causes are wrong"
import json, sys
on, net = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
c, n = on["trigger"][0], net["trigger"][0]
print("on-CPU:", json.dumps(c))
print("network:", json.dumps(n), "exchanges", net.get("exchanges"))
ok = (c["monitor"] == "HTTP_ERROR_RATE" and c["uri"] == "/fail" and c["current"] == 100 and c["threshold"] == 50
      and n["monitor"] == "HTTP_AVG_RESPONSE_TIME" and n["uri"] == "^/small" and n["threshold"] == 0
      # fired: above its threshold (0 ms); an average of nginx answering a small file on loopback
      # (tens of microseconds each), so well under 50 ms
      and 0 < n["current"] < 50
      and net.get("exchanges", 0) > 0)
sys.exit(0 if ok else 1)
PY
[ -z "$(ls -d "$AGENT_OUT"/monitor-* 2>/dev/null)" ] || fail "the monitors' own capture wrote output"
grep -q "a network task takes over" "$TMP/agent.log" || fail "the triggered network task did not take over the monitors' capture"
# The network task (3 s) is over: the monitors capture again, heads only
# (the first 1 KiB of each call, CTL_ATTACH_F_PREFIX): each /small.txt
# response (one write) leaves its bytes past 1 KiB to the parser as a gap,
# where the network task copied them (4 KiB); /fail's fits.
a=$(stat ember_continuous_exchanges); ga=$(stat ember_net_parser_gap_bytes)
drive 3
b=$(stat ember_continuous_exchanges); gb=$(stat ember_net_parser_gap_bytes)
small=$(awk '$6 == "\"GET" && $7 == "/small.txt" {n=$3} END {print n+0}' "$TMP/nginx/logs/access.log")
echo "monitored exchanges: $a, then $b; gap bytes: $ga, then $gb; a /small.txt response: $small bytes"
[ "$b" -gt "$a" ] || fail "the monitors stopped seeing exchanges after the network task ended"
python3 - "$((b - a))" "$((gb - ga))" "$small" <<'PY' || fail "the monitors' capture does not stop at the head"
import sys
ex, gap, small = map(int, sys.argv[1:])
want = ex / 2 * (small - 1024)   # half the exchanges are /small.txt
print("gap bytes per exchange pair: %.0f, expected %d" % (gap / (ex / 2), small - 1024))
sys.exit(0 if small > 2048 and 0.8 * want <= gap <= 1.2 * want else 1)
PY
ok "HTTP error rate and response time items fired for the URIs they name, and only those"
stop_agent || fail "agent exited with an error"
