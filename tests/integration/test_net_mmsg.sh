#!/usr/bin/env bash
# DNS queries and answers moved in batches (sendmmsg / recvmmsg, several
# messages a call: what glibc's resolver and busy DNS servers do), a server
# followed: each message is one event with its own data and its own peer,
# so every query is an exchange with its answer, paired by id and by the
# socket it came from.  On the socket layer the messages of one call are
# seen one at a time (the thread's cursor into the array says which); on the
# syscall layer at the call's exit.  Several client sockets, each a source
# port, in rounds: one connection per port, every query of it there.  The
# server polls before each read (an event loop): a read blocked when the task
# starts would be seen at the socket layer, which sees a call's end, but not at
# the syscall layer, which needs its entry.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
[ -x "$PROGS/mmsg_dns" ] || fail "$PROGS/mmsg_dns not built"
SOCKS=5 ROUNDS=6 PORT=$(net_port 3)
TOTAL=$((SOCKS * ROUNDS * 4))
AGENT_PROFILING_YAML="  task: { network: { max_exchanges_per_report: 1000000 } }"
start_agent
"$PROGS/mmsg_dns" server "$PORT" "$TOTAL" > "$TMP/server.out" 2>&1 & SRV=$!
CLEANUP_PIDS+=("$SRV")
for _ in $(seq 100); do grep -q ready "$TMP/server.out" && break; sleep 0.05; done
start_net_task mmsg "$SRV" 4s
"$PROGS/mmsg_dns" client "$PORT" "$SOCKS" "$ROUNDS" > "$TMP/client.out" 2>&1 || { cat "$TMP/client.out"; fail "the client failed"; }
wait "$SRV" || { cat "$TMP/server.out"; fail "the server failed"; }
cat "$TMP/server.out" "$TMP/client.out" | grep -v ready
wait_net_task mmsg
"$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats.txt"
python3 - "$TMP/mmsg/network.json" "$SRV" "$SOCKS" "$ROUNDS" "$TMP/stats.txt" <<'PY' || fail "batched DNS messages are not one exchange each, with their peer and data"
import collections, json, sys
net, pid, socks, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
st = {l.split()[1]: int(l.split()[2]) for l in open(sys.argv[5]) if l.startswith('collector ') and l.split()[2].isdigit()}
ex = [o for o in map(json.loads, open(net)) if o.get('type') == 'exchange' and o['pid'] == pid]
conns = [o for o in map(json.loads, open(net)) if o.get('type') == 'connection' and o['pid'] == pid]
bad = 0
def check(what, got, want):
    global bad
    bad += got != want
    print(f"  {what}: ember {got}, expected {want}{'' if got == want else '  <-- differs'}")
lost = st.get('bpf_net_ringbuf_full_drops', 0) + st.get('ring_full_drops', 0)
check("calls dropped", lost, 0)
check("exchanges", len(ex), socks * rounds * 4)
check("all dns, answered, NXDOMAIN", all(x['protocol'] == 'dns' and x['answered'] and x['fields'].get('rcode') == 'NXDOMAIN'
                                         for x in ex), True)
# each query's name says its socket, round and place; its id says the same: a message's data
# put under another message's event would pair a name with another's id
def parsed(x):
    s, r, i = x['fields']['qname'].split('.')[0][1:].split('-')
    return int(s), int(r), int(i)
check("names and ids agree", sum(int(x['fields']['id']) != s * 1000 + r * 10 + i for x in ex for s, r, i in [parsed(x)]), 0)
check("queries, once each", len({parsed(x) for x in ex}), socks * rounds * 4)
# one peer (source port) per client socket, and every query of that socket on it
by_peer = collections.defaultdict(set)
for x in ex:
    by_peer[x['peer_address']].add(parsed(x)[0])
check("peers", len(by_peer), socks)
check("one socket per peer", sorted(len(v) for v in by_peer.values()), [1] * socks)
check("connections", len([c for c in conns if c['transport'] == 'udp']), socks)
check("datagrams read, written", (sum(c['reads'] for c in conns), sum(c['writes'] for c in conns)),
      (socks * rounds * 4, socks * rounds * 4))
sys.exit(1 if bad else 0)
PY
ok "$TOTAL DNS queries in batches: each an exchange with its answer, its data and its peer"
stop_agent || fail "agent exited with an error"
