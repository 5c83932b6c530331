#!/usr/bin/env bash
# Pipelines longer than what ember sees of a socket call (bpf/net
# NET_MAX_PAYLOAD, 4 KB; the rest is a gap to the parser).  Redis and
# PostgreSQL pair answers with requests in order, without ids, so a gap
# that loses the framing is resolved at the client's next turn:
#  - redis-benchmark -P 100 SET: each 9 KB pipeline is seen up to 4 KB.
#    The replies pair with the commands seen; the rest are reported as
#    replies to lost commands (gap=request).  Every SET is one exchange.
#  - redis-benchmark -P 20 GET of a 3000-byte value: each 60 KB answer is
#    read in 16 KB calls seen up to 4 KB.  The next pipeline closes the
#    replies cut (gap=response).  Every GET is one exchange.
#  - pgbench, a short query and a pause (the first time), a pipeline of 80 extended-protocol
#    statements (one 10 KB write) then a marker query: each pipeline's
#    statements seen whole (in its write's first 4 KB: 32) are reported, the
#    answers to the others counted as dropped, and every marker query after
#    the gap is reported with its result.  The short query set the
#    connection's cap (what the parser needs: 256 bytes): the first pipeline
#    is seen up to it only, and the call it cut reaches the analyzer at once
#    (NET_F_CUT_FIRST), which asks for every byte from the next call on.
# Before, the first such gap ended the connection's analysis.
# Every exchange listed: the checks count them, command by command.
AGENT_PROFILING_YAML="  task: { network: { max_exchanges_per_report: 10000000 } }"
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
start_agent
start_redis
start_postgres

start_net_task redis "$REDIS_PID" 6s
RB="redis-benchmark -h 127.0.0.1 -p $REDIS_PORT -c 1 -q"
$RB -n 3000 -P 100 -d 50 -t set >"$TMP/rb-set.out" 2>&1 || { cat "$TMP/rb-set.out"; fail "redis-benchmark SET"; }
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" SET key:__rand_int__ "$(head -c 3000 /dev/zero | tr '\0' v)" >/dev/null ||
  fail "redis-cli SET"
$RB -n 1000 -P 20 -t get >"$TMP/rb-get.out" 2>&1 || { cat "$TMP/rb-get.out"; fail "redis-benchmark GET"; }
wait_net_task redis
python3 - "$TMP/redis/network.json" "$REDIS_PID" <<'PY' || fail "redis pipelines were not followed across their gaps"
import json, sys, collections
net, pid = sys.argv[1], int(sys.argv[2])
conns, ex = {}, collections.defaultdict(list)
for line in open(net):
    o = json.loads(line)
    if o.get('pid') != pid: continue
    if o['type'] == 'connection': conns[o['id']] = o
    elif o['type'] == 'exchange': ex[o['connection_id']].append(o['fields'])
bad = 0
def conn_of(pred):
    c = [k for k, v in ex.items() if v and pred(v)]
    return c[0] if len(c) == 1 else None
set_c = conn_of(lambda v: sum(f.get('command') == 'SET' for f in v) > 100)
get_c = conn_of(lambda v: sum(f.get('command') == 'GET' for f in v) > 100)
for name, c, n, cmd in (('SET -P 100', set_c, 3000, 'SET'), ('GET -P 20', get_c, 1000, 'GET')):
    if c is None: print(f"  {name}: not one connection found"); bad += 1; continue
    v = ex[c]
    gaps = collections.Counter(f.get('gap', '-') for f in v)
    cmds = collections.Counter(f.get('command') for f in v)
    replies = collections.Counter(f.get('reply') for f in v)
    print(f"  {name}: {len(v)} exchanges (redis-benchmark sent {n}), commands {dict(cmds)}, "
          f"gap {dict(gaps)}, replies {dict(replies)}, connection gaps {conns[c]['gaps']}")
    if len(v) != n: print("    <-- not one exchange per command"); bad += 1
    if cmd == 'SET':
        if not gaps.get('request'): print("    <-- no pipeline was cut: the test proves nothing"); bad += 1
        if set(replies) != {'+OK'}: print("    <-- a reply other than +OK"); bad += 1
        if set(cmds) != {'SET', '-'}: print("    <-- commands other than SET"); bad += 1
    else:
        if not gaps.get('response'): print("    <-- no answer was cut: the test proves nothing"); bad += 1
        if set(replies) - {'$3000', '?'}: print("    <-- a reply other than $3000"); bad += 1
        if set(cmds) != {'GET'}: print("    <-- commands other than GET"); bad += 1
sys.exit(1 if bad else 0)
PY
ok "redis pipelines cut by gaps: one exchange per command sent"

# PostgreSQL: the task on the postmaster follows pgbench's backend (test_net_fork).
PIPE=80 TXNS=25
{
  # The first transaction only (pgbench's variables outlive a transaction): the pause
  # lets the cap reach the kernel; the next pipelines follow at once.
  echo '\if :first'
  echo "SELECT 'before the pipeline' AS warm;"
  echo '\sleep 50 ms'
  echo '\set first 0'
  echo '\endif'
  echo '\startpipeline'
  for i in $(seq $PIPE); do echo "SELECT $i AS n, 'padding to make each statement long enough to fill the pipeline' AS p;"; done
  echo '\endpipeline'
  echo "SELECT 'after the pipeline' AS marker;"
} >"$TMP/pipe.sql"
start_net_task pgsql "$PG_PID" 8s
PGAPPNAME=ember-pipe timeout 60 pgbench -h 127.0.0.1 -p "$PG_PORT" -U postgres -n -M extended -D first=1 -f "$TMP/pipe.sql" \
  -t $TXNS -c 1 postgres >"$TMP/pgbench.out" 2>&1 || { cat "$TMP/pgbench.out"; fail "pgbench failed"; }
wait_net_task pgsql
python3 - "$TMP/pgsql/network.json" "$PIPE" "$TXNS" <<'PY' || fail "pgbench's pipelines were not followed across their gaps"
import json, sys, collections
net, pipe, txns = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ex = collections.defaultdict(list)
for line in open(net):
    o = json.loads(line)
    if o['type'] == 'exchange': ex[o['connection_id']].append(o['fields'])
c = [k for k, v in ex.items() if any('marker' in f.get('query', '') for f in v)]
if len(c) != 1: print(f"  {len(c)} connections with the marker query"); sys.exit(1)
v = ex[c[0]]
markers = [f for f in v if 'marker' in f.get('query', '')]
piped = [f for f in v if f.get('query', '').startswith('SELECT ') and ' AS n,' in f.get('query', '')]
# Statements seen whole: those whose Parse, Bind, Describe and Execute lie in the first
# NET_MAX_PAYLOAD (4096) bytes of the pipeline's write; each pipeline reports exactly those,
# but the first, seen up to the cap the short query before it set (256 bytes, CAP_MIN).
def whole(window):
    seen, tot = 0, 0
    for i in range(1, pipe + 1):
        q = f"SELECT {i} AS n, 'padding to make each statement long enough to fill the pipeline' AS p;"
        size = (1 + 4 + 1 + len(q) + 1 + 2) + (1 + 4 + 1 + 1 + 2 + 2 + 2) + (1 + 4 + 1 + 1) + (1 + 4 + 1 + 4)
        if tot + size > window: break
        tot += size; seen += 1
    return seen
seen, first = whole(4096), whole(256)
n = 0; per = []
for f in v:
    if 'marker' in f.get('query', ''): per.append(n); n = 0
    elif f.get('query', '').startswith('SELECT ') and ' AS n,' in f.get('query', ''): n += 1
print(f"  pgbench: {len(v)} exchanges; marker queries {len(markers)} of {txns}, results "
      f"{dict(collections.Counter(f.get('result') for f in markers))}; pipelined statements reported "
      f"{len(piped)} of {pipe * txns}: per pipeline {per[:3]}... {dict(collections.Counter(per))}, {seen} seen whole "
      f"in each, {first} in the first")
bad = 0
if len(markers) != txns: print("    <-- not every query after a pipeline was reported"); bad += 1
if any(f.get('result') != 'SELECT 1' or f.get('kind') != 'EXECUTE' for f in markers): print("    <-- a marker query's result is wrong"); bad += 1
if seen >= pipe: print("    <-- no pipeline was cut: the test proves nothing"); bad += 1
if per != [first] + [seen] * (txns - 1) or len(piped) != first + seen * (txns - 1):
    print(f"    <-- not the {first} statements of the first pipeline, then the {seen} seen whole of each"); bad += 1
sys.exit(1 if bad else 0)
PY
ok "PostgreSQL pipelines cut by gaps: every query after them is reported"
stop_agent || fail "agent exited with an error"
