#!/usr/bin/env bash
# Data lost on purpose: the payload budget (ring buffer) at its minimum, nginx
# writing 20 KB responses from user memory to 8 keep-alive connections.
# Calls go without their data (no budget) or are lost whole (ring full); the
# parser is told how many bytes of which direction are missing and picks up
# at the next request, so a connection's exchanges after a gap are still
# counted, connection by connection against nginx's access log.  Nothing is
# lost silently: per connection, the kernel's count of request turns is
# nginx's count of requests, and ember's exchanges plus those it counted lost
# add up to it; the calls that went without data or not at all, the gaps and
# their bytes, and the messages the parser gave up are all in the stats, and
# network.txt says what was lost.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
AGENT_PROFILING_YAML="  task: { network: { max_exchanges_per_report: 10000000, protocol_analyze: { per_cpu_buffer: 4KB } } }"
start_agent
start_nginx
start_net_task gap "$NGINX_PID" 6s
wrk -t 2 -c 8 -d 3s "http://127.0.0.1:$NGINX_PORT/copied/20k.txt" > "$TMP/wrk.out" 2>&1 || { cat "$TMP/wrk.out"; fail "wrk failed"; }
"$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats.txt" 2>&1
wait_net_task gap
grep -E "net_(payload|ringbuf|events_lost|parser)|bpf_net_payload_no_budget|ringbuf_full" "$TMP/stats.txt" | grep -v "^analyzer0  ember_bpf" || true
python3 - "$TMP/gap/network.json" "$TMP/nginx/logs/access.log" "$NGINX_PID" "$TMP/stats.txt" "$TMP/gap.err" <<'PY' || fail "exchanges after gaps were not counted, or losses went uncounted"
import json, sys, collections
net, log, pid, stats, task_json = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
truth = collections.Counter(l.split(' ')[4] for l in open(log))      # requests per client port
conns, ex = {}, collections.Counter()
for line in open(net):
    o = json.loads(line)
    if o['type'] == 'connection' and o['pid'] == pid: conns[o['id']] = o
    elif o['type'] == 'exchange' and o['pid'] == pid: ex[o['connection_id']] += 1
st = {l.split()[1]: int(l.split()[2]) for l in open(stats) if len(l.split()) == 3 and l.split()[2].isdigit()}
lost_calls = st.get('bpf_net_payload_no_budget', 0) + st.get('bpf_net_ringbuf_full_drops', 0)
task = [json.loads(l[len("ember: "):]) for l in open(task_json) if l.startswith("ember: {")][0]
bad = 0
gapped = lost_sum = 0
for c in conns.values():
    port = c['remote_address'].rsplit(':', 1)[1]
    n, got, lost = truth.get(port, 0), ex[c['id']], c['exchanges_lost']
    if not n: continue
    gapped += c['gaps'] > 0
    lost_sum += lost
    line = (f"  connection :{port}: nginx answered {n}; ember {got} exchanges + {lost} lost, {c['request_turns']} "
            f"request turns, {c['calls_lost']} calls lost, {c['gaps']} gaps ({c['gap_bytes']} bytes)")
    # The kernel counts the requests (turns) whatever was lost; what was not an exchange is counted lost.
    if c['request_turns'] != n or got + lost != n: line += "  <-- does not add up"; bad += 1
    # A gap costs the exchanges it touched, not the rest of the connection: a parser that never
    # recovered would count almost nothing after the first (here about a third are lost, at times half).
    if c['gaps'] and got < n // 10: line += "  <-- the parser did not recover after its gaps"; bad += 1
    print(line)
total_truth, total = sum(truth.values()), sum(ex.values())
print(f"  all: nginx {total_truth}, ember {total} + {lost_sum} lost (task: {task['exchanges']} + {task['exchanges_lost']}, "
      f"{task['calls_lost']} calls lost, {task['connections_with_loss']} connections with loss), parser dropped "
      f"{st.get('ember_net_parser_dropped_messages', 0)}; calls without data or lost: {lost_calls}; connections with gaps: {gapped}")
if not lost_calls or not gapped or not lost_sum: print("  the budget was never short: the test proves nothing"); bad += 1
if total + lost_sum != total_truth or task['exchanges_lost'] != lost_sum: print("  <-- exchanges + lost != requests"); bad += 1
# Calls lost whole ride on their socket's next event (the close at the latest): the task, the only
# one, names each call the kernel and the collector could not pass on, connection by connection.
whole = st.get('bpf_net_ringbuf_full_drops', 0) + st.get('net_events_ring_full_drops', 0)
by_conn = sum(c['calls_lost'] for c in conns.values())
print(f"  calls lost whole: {whole} counted where lost, {task['calls_lost']} in the task, {by_conn} on its connections")
if task['calls_lost'] != whole or by_conn != whole: print("  <-- calls lost whole and calls booked to a connection differ"); bad += 1
sys.exit(1 if bad else 0)
PY
ok "gaps from a starved payload budget cost the exchanges they touched, not the connection"
# What the user reads says so: the connections, calls and exchanges lost (the task's own numbers).
lost=$(sed -n 's/^ember: .*"exchanges_lost":\([0-9]*\),"calls_lost":\([0-9]*\),.*/\2 call(s) whole (full buffers) and \1 exchange/p' "$TMP/gap.err")
grep "^LOST: " "$TMP/gap/network.txt" | grep -qF "$lost" || { head -5 "$TMP/gap/network.txt"; fail "network.txt does not say what was lost ($lost)"; }
grep -q "^ember: LOST while the task ran .*bpf_net_ringbuf_full_drops [1-9]" "$TMP/gap.err" ||
  { cat "$TMP/gap.err"; fail "ember profile's last line does not name the calls lost"; }
ok "network.txt says what was lost: $(grep -o '^LOST: [^;]*' "$TMP/gap/network.txt"); so does ember profile: $(grep -o '^ember: LOST.*' "$TMP/gap.err" | cut -c1-160)"
stop_agent || fail "agent exited with an error"
