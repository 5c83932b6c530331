#!/usr/bin/env bash
# Network profiling of real servers under their own clients, one network task
# per server on one agent, each checked two ways:
#  - against tshark on a loopback capture of the same traffic
#    (tests/net_live_compare.py): exchange by exchange, the same columns,
#    answered on both sides or neither;
#  - against the client's or the server's own account: the commands, queries
#    and lookups the client sent (their number, order and outcome), and where
#    the server keeps one, its own log or counters.
#
#   redis     redis-cli (one command per connection, with a wrong-type and a
#             not-an-integer error, and a 601-element LRANGE), redis-cli
#             reading stdin (COMMAND DOCS first) and redis-benchmark -P 5
#             (pipelined); truth: the list sent, redis's INFO commandstats and
#             errorstats
#   mysql     mariadb --force (a session with three failing statements and a
#             2000-row result) and mariadb-admin ping status; truth: the list
#             sent, mariadbd's general log, the error count
#   pgsql     psql (simple query protocol, two errors, a 2000-row result) and
#             pgbench -M extended (Parse/Bind/Execute/Sync, ending in an
#             error); truth: the list sent, the server's log
#             (log_statement=all, its ERROR lines)
#   dns       dig over UDP (one fixed source port, and one port per query)
#             and over TCP (+keepopen: one connection); known names NOERROR
#             with A answers, AAAA of them NOERROR without answer, other .test
#             names NXDOMAIN; truth: dig's own answers.  For UDP a connection
#             is one (socket, peer) pair: one per client port.
#   http2     nghttp (four streams on one connection, a 404, a 5000-byte
#             file) and h2load -m 4 (concurrent streams, 5000 bytes each);
#             truth: nghttp's per-stream statistics, h2load's status counts.
#
# Limitations these checks state rather than hide:
#  - Latency.  ember times an exchange from the server's read of the request
#    to its write of the response; tshark from the request reaching the wire.
#    A request waits in the socket until the server reads it (mariadbd busy
#    finishing the previous statement, any server not yet scheduled on this
#    busy 2-core machine: up to 26 ms seen), so latencies are checked with
#    --latency-from-read: ember's response within 1 ms of the wire's, its read
#    of the request not before the request reached the wire.
#  - PostgreSQL forks a backend per connection.  A task on the postmaster
#    follows them (test_net_fork); here the task is started on the backends
#    once the clients have connected (psql waits on a fifo, pgbench on a
#    \shell until told to go) so that the capture starts with it: neither
#    ember nor tshark sees the STARTUP exchanges.
#  - Each socket call's data is seen up to 4 KB (bpf/net NET_MAX_PAYLOAD);
#    the rest is a gap to the parsers.  A large response to the only request
#    outstanding is closed by the next request (or the close) and marked
#    gap=response: it has its command, its first token or packet's result
#    and no row count; postgres's CommandComplete tag goes by in the gap
#    unless the last 8 KB call is under 4 KB, so for those the result
#    column is left out of the comparison (--gap-hides result) and checked
#    to be SELECT 2000 or absent.  HTTP/2 streams whose HEADERS went by in a
#    gap would not be reported: nghttpd writes its HEADERS first, seen here.
#  - tshark 4.0's RESP dissector does not reassemble COMMAND DOCS' reply
#    (~170 KB, many segments: it reports its inner elements as replies
#    without commands), so that redis-cli session runs before the capture
#    and is checked against what it sent only.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
AGENT_PROFILING_YAML="  task: { network: { max_exchanges_per_report: 1000000 } }"
PCAP_DIR=${SHARED:-$ROOT/../shared}/testdata/pcap
[ -x "$PCAP_DIR/oracle.sh" ] || fail "no $PCAP_DIR/oracle.sh (set SHARED)"
export SHARED=${SHARED:-$ROOT/../shared} ROOT
start_agent
start_redis
start_mariadb
start_postgres
start_dnsmasq
start_nghttpd
TASK_S=4s

# Exchange by exchange against tshark; --min N: the answered exchanges that must agree, all
# the clients' (every exchange but mariadb's two QUITs, which expect no answer).
compare() { # name proto pids decode-as [more net_live_compare options]
  local name=$1 proto=$2 pids=$3 dec=$4; shift 4
  python3 "$ROOT/tests/net_live_compare.py" --network-json "$TMP/$name/network.json" --pcap "$CAP_FILE" \
    --proto "$proto" --pid "$pids" --tshark-arg "$dec" --latency-from-read "$@" ||
    fail "$name: ember's exchanges differ from tshark on the capture"
}
checks() { python3 - "$@"; }

# ---------------------------------------------------------------- redis
redis_cmds=(
  "SET k v" "GET k" "GET missing" "INCR n" "INCR k" "LPUSH l a b c" "LRANGE l 0 -1"
  "HGETALL l" "EXISTS k" "DEL k" "PING" "ECHO hello" "LRANGE big 0 -1"
)
# shellcheck disable=SC2046
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" RPUSH big $(seq 100000 100600) >/dev/null || fail "redis-cli RPUSH"
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" CONFIG RESETSTAT >/dev/null || fail "redis-cli CONFIG RESETSTAT"
capped0=$("$EMBER" stats --config "$TMP/ember.yaml" | awk '$1 == "collector" && $2 == "bpf_net_capped_events" {print $3}')
start_net_task redis "$REDIS_PID" "$TASK_S"
# redis-cli reading its commands from stdin first asks for COMMAND DOCS: ~170 KB
# of reply, seen in part (a response cut by a gap), closed by the next command.
printf 'PING\nSET s v\nGET s\n' | redis-cli -h 127.0.0.1 -p "$REDIS_PORT" >"$TMP/redis-stdin.out" 2>&1 ||
  fail "redis-cli (stdin) failed"
start_capture redis "$REDIS_PORT"   # (from here: tshark 4.0 cannot follow COMMAND DOCS' reply)
for c in "${redis_cmds[@]}"; do
  # shellcheck disable=SC2086
  redis-cli -h 127.0.0.1 -p "$REDIS_PORT" $c >>"$TMP/redis-cli.out" 2>&1 || fail "redis-cli $c failed"
done
redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -n 20 -c 1 -P 5 -t set,get -q >"$TMP/redis-bench.out" 2>&1 ||
  { cat "$TMP/redis-bench.out"; fail "redis-benchmark failed"; }
# 3000-byte values, one command at a time: once the parser has seen a whole
# SET and GET, the kernel copies the tokens' lines only, and the values go by
# as gaps the parser skips (each cut counted).
redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -n 1000 -c 1 -d 3000 -t set,get -q >"$TMP/redis-bench.out" 2>&1 ||
  { cat "$TMP/redis-bench.out"; fail "redis-benchmark -d 3000 failed"; }
stop_capture
wait_net_task redis
capped=$(( $("$EMBER" stats --config "$TMP/ember.yaml" | awk '$1 == "collector" && $2 == "bpf_net_capped_events" {print $3}') - capped0 ))
echo "redis: $capped events capped"
[ "$capped" -ge 500 ] || fail "redis: the kernel copied the 3000-byte values whole (capped events: $capped, want >= 500)"
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" INFO commandstats >"$TMP/redis-cmdstats" || fail "redis-cli INFO"
redis-cli -h 127.0.0.1 -p "$REDIS_PORT" INFO errorstats >"$TMP/redis-errstats" || fail "redis-cli INFO"
compare redis redis "$REDIS_PID" "-d tcp.port==$REDIS_PORT,resp" --only-conns-in-capture --min 55
printf '%s\n' "${redis_cmds[@]}" >"$TMP/redis-sent"
checks "$TMP/redis/network.json" "$REDIS_PID" "$TMP/redis-sent" "$TMP/redis-cmdstats" "$TMP/redis-errstats" <<'PY' ||
import os, re, sys, collections
sys.path.insert(0, os.environ['ROOT'] + '/tests/integration')
from net_checks import *
ex, conns = load(sys.argv[1], [sys.argv[2]])
sent = [l.split()[0].upper() for l in open(sys.argv[3])]
# What redis answers to each command sent (redis-cli's own output says the same).
want_replies = ['+OK', '$1', '$-1', ':1', '-ERR', ':3', '*3', '-WRONGTYPE', ':1', ':1', '+PONG', '$5', '*601']
by_conn = collections.OrderedDict()
for x in ex:
    by_conn.setdefault(x['connection_id'], []).append(x)
stdin = [v for v in by_conn.values() if v[0]['fields'].get('command') == 'COMMAND']
cli = [v for v in by_conn.values() if len(v) == 1]
bench = [v for v in by_conn.values() if len(v) > 1 and v not in stdin]
check('redis-cli (stdin): COMMAND DOCS then the commands, in order',
      [(x['fields']['command'], x['fields']['reply'][:1], x['fields'].get('gap')) for v in stdin for x in v],
      [('COMMAND', '*', 'response'), ('PING', '+', None), ('SET', '+', None), ('GET', '$', None)])
check('redis-cli connections, one command each', len(cli), len(sent))
check('redis-cli commands, in order', [v[0]['fields'].get('command') for v in cli], sent)
check('redis-cli replies', [v[0]['fields'].get('reply') for v in cli], want_replies)
check('redis-cli errors', sum(v[0]['is_error'] for v in cli), 2)
check('replies cut by a gap: COMMAND DOCS and LRANGE big', [x['fields']['command'] for x in ex if x['fields'].get('gap')],
      ['COMMAND', 'LRANGE'])
check('their size: all of it', [conn_of(x, conns)['bytes_written'] == x['resp_bytes'] for x in ex
                                if x['fields'].get('gap') == 'response' and x['fields']['command'] == 'LRANGE'], [True])
# redis-benchmark: CONFIG GET save + appendonly on its first connection, then -n 20 SET, -n 20 GET;
# again with -n 1000 and 3000-byte values (copied in part: the values sizes still count whole).
check('redis-benchmark connections: commands', [(v[0]['fields']['command'], len(v)) for v in bench],
      [('CONFIG', 2), ('SET', 20), ('GET', 20), ('CONFIG', 2), ('SET', 1000), ('GET', 1000)])
check('redis-benchmark -d 3000: the sizes of SET requests and GET replies',
      sorted(set((v[0]['fields']['command'], x['req_bytes'] if v[0]['fields']['command'] == 'SET' else x['resp_bytes'])
                 for v in bench[4:] for x in v)), [('GET', 3009), ('SET', 3045)])
check('redis-benchmark: every command answered, no error',
      all(x['answered'] and not x['is_error'] for v in bench for x in v), True)
# The server's counters (reset before the task, read after it): calls per command, errors per kind.
# (CONFIG RESETSTAT counts itself; ember names a subcommand by its command.)
stats = collections.Counter()
for m in re.finditer(r'cmdstat_([a-z|]+):calls=(\d+)', open(sys.argv[4]).read()):
    if m.group(1) not in ('config|resetstat', 'info'):
        stats[m.group(1).split('|')[0].upper()] += int(m.group(2))
check('commands per name (INFO commandstats)', dict(sorted(collections.Counter(x['fields']['command'] for x in ex).items())),
      dict(sorted(stats.items())))
errs = {m.group(1): int(m.group(2)) for m in re.finditer(r'errorstat_(\w+):count=(\d+)', open(sys.argv[5]).read())}
check('error replies per kind (INFO errorstats)',
      dict(collections.Counter(x['fields']['reply'][1:] for x in ex if x['is_error'])), errs)
check('protocol, side', sorted(set((x['protocol'], x['side']) for x in ex)), [('redis', 'server')])
check('all answered', all(x['answered'] for x in ex), True)
check('connections parsed', sorted(set(c['l7_state'] for c in conns.values())), ['parsed'])
done()
PY
  fail "redis: ember's exchanges differ from what redis-cli/redis-benchmark sent and redis counted"
ok "redis: every command of redis-cli and redis-benchmark (pipelined) is an exchange, as tshark and redis count them"

# ---------------------------------------------------------------- mysql (MariaDB)
MY="mariadb -h 127.0.0.1 -P $MARIADB_PORT -u root"
mariadb -S "$TMP/mariadb/sock" -u root -e "SET GLOBAL general_log_file='$TMP/mariadb/general.log'; SET GLOBAL general_log=1" ||
  fail "could not switch mariadbd's general log on"
my_sql=(
  "CREATE DATABASE IF NOT EXISTS ember" "USE ember" "CREATE TABLE t (a INT PRIMARY KEY, b VARCHAR(20))"
  "INSERT INTO t VALUES (1,'x'),(2,'y'),(3,'z')" "SELECT * FROM t ORDER BY a"
  "SELECT seq, REPEAT('x', 50) FROM seq_1_to_2000" "SELECT * FROM missing_table"
  "UPDATE t SET b='w' WHERE a=1" "SELECT nosuchcol FROM t" "INSERT INTO t VALUES (1,'dup')"
  "SELECT COUNT(*) FROM t" "DROP TABLE t"
)
start_net_task mysql "$MARIADB_PID" "$TASK_S"
start_capture mysql "$MARIADB_PORT"
printf '%s;\n' "${my_sql[@]}" | $MY --force >"$TMP/mariadb.out" 2>&1   # (0 with --force: its errors are counted below)
mariadb-admin -h 127.0.0.1 -P "$MARIADB_PORT" -u root ping status >>"$TMP/mariadb.out" 2>&1 || fail "mariadb-admin failed"
stop_capture
wait_net_task mysql
grep -c '^ERROR' "$TMP/mariadb.out" | grep -qx 3 || { cat "$TMP/mariadb.out"; fail "mariadb: not 3 errors"; }
compare mysql mysql "$MARIADB_PID" "-d tcp.port==$MARIADB_PORT,mysql" --min 17
printf '%s\n' "${my_sql[@]}" >"$TMP/mariadb-sent"
checks "$TMP/mysql/network.json" "$MARIADB_PID" "$TMP/mariadb-sent" "$TMP/mariadb/general.log" <<'PY' ||
import os, re, sys, collections
sys.path.insert(0, os.environ['ROOT'] + '/tests/integration')
from net_checks import *
ex, conns = load(sys.argv[1], [sys.argv[2]])
sent = [l.rstrip('\n') for l in open(sys.argv[3])]
# mariadbd's general log: "<time>\t<id> <Command>\t<argument>" (time only on a new second).
log, cmd_of = [], {'Connect': 'LOGIN', 'Query': 'QUERY', 'Init DB': 'INIT_DB', 'Quit': 'QUIT',
                   'Statistics': 'STATISTICS'}
for l in open(sys.argv[4]):
    m = re.match(r'^(?:\S+\s+\S+)?\s+(\d+) (Connect|Query|Init DB|Quit|Statistics)\t?(.*)$', l.rstrip('\n'))
    if m:
        log.append((int(m.group(1)), cmd_of[m.group(2)], m.group(3)))
tcp_ids = sorted(set(i for i, c, a in log if c == 'LOGIN' and 'TCP/IP' in a))
log = [(i, c, a) for i, c, a in log if i in tcp_ids]
check('connections (general log)', len(set(x['connection_id'] for x in ex)), len(tcp_ids))
# (mariadbd does not log COM_PING: mariadb-admin's "mysqld is alive" is its account of it.)
check('commands in order (general log, but PING)', [x['fields']['command'] for x in ex if x['fields']['command'] != 'PING'],
      [c for i, c, a in log])
check('mariadb-admin ping', [(x['fields']['command'], x['fields']['result']) for x in ex if x['fields']['command'] == 'PING'],
      [('PING', 'OK')])
check('queries (general log)', [x['fields'].get('argument') for x in ex if x['fields']['command'] == 'QUERY'],
      [a for i, c, a in log if c == 'QUERY'])
# mariadb sends the statements as written, and SELECT DATABASE() + COM_INIT_DB for USE.
mine = [x['fields'].get('argument') for x in ex if x['fields']['command'] == 'QUERY' and x['fields'].get('argument') != 'SELECT DATABASE()']
check('the statements sent, in order', mine, [s for s in sent if s != 'USE ember'])
check('errors: the three failing statements', [(x['fields']['argument'], x['fields']['result']) for x in ex if x['is_error']],
      [('SELECT * FROM missing_table', 'ERR:1146'), ('SELECT nosuchcol FROM t', 'ERR:1054'),
       ("INSERT INTO t VALUES (1,'dup')", 'ERR:1062')])
# The 2000 rows (~130 KB) go out in 16 KB calls seen up to 4 KB each: that response is cut
# by gaps, closed by the next statement, without a row count.
check('result sets: rows', [(x['fields'].get('rows'), x['fields'].get('gap')) for x in ex
                            if x['fields'].get('result') == 'RESULTSET' and x['fields']['argument'] != 'SELECT DATABASE()'],
      [('3', None), (None, 'response'), ('1', None)])
check('QUIT unanswered, the rest answered', [x['answered'] for x in ex], [x['fields']['command'] != 'QUIT' for x in ex])
check('connections parsed', sorted(set((c['protocol'], c['l7_state']) for c in conns.values())), [('mysql', 'parsed')])
done()
PY
  fail "mysql: ember's exchanges differ from what mariadb sent and mariadbd logged"
ok "mysql: every command of mariadb and mariadb-admin is an exchange, errors with their codes, as tshark and the general log say"

# ---------------------------------------------------------------- pgsql
PGS="psql -X -q -h $TMP/pg -p $PG_PORT -U postgres"   # the unix socket: neither traced nor captured
$PGS -c "ALTER SYSTEM SET log_statement = 'all'" -c "SELECT pg_reload_conf()" >/dev/null || fail "psql over the socket"
$PGS -c "CREATE TABLE pt (a int PRIMARY KEY, b text); INSERT INTO pt SELECT g, 'v' || g FROM generate_series(1, 50) g" ||
  fail "could not create pt"
pg_sql=(
  "SELECT 1;" "SELECT count(*) FROM pt;" "SELECT * FROM missing_table;" "INSERT INTO pt VALUES (100, 'x');"
  "SELECT b FROM pt WHERE a = 100;" "INSERT INTO pt VALUES (100, 'dup');" "UPDATE pt SET b = 'y' WHERE a <= 10;"
  "DELETE FROM pt WHERE a = 100;" "SELECT g, repeat('x', 50) FROM generate_series(1, 2000) g;"
  "SELECT a, b FROM pt ORDER BY a LIMIT 5;"
)
# Both clients connect now and wait for $TMP/pgsql.go: psql on its input (a fifo whose only
# writer sends the statements then), pgbench in a \shell at the top of its script.
mkfifo "$TMP/psql.in"
PGAPPNAME=ember-psql timeout 60 psql -X -h 127.0.0.1 -p "$PG_PORT" -U postgres <"$TMP/psql.in" >"$TMP/psql.out" 2>&1 &
PSQL=$!; CLEANUP_PIDS+=("$PSQL")
{ while [ ! -e "$TMP/pgsql.go" ]; do sleep 0.02; done; printf '%s\n' "${pg_sql[@]}"; } >"$TMP/psql.in" &
CLEANUP_PIDS+=("$!")
cat >"$TMP/pgbench.sql" <<EOF
\\shell while [ ! -e $TMP/pgsql.go ]; do sleep 0.02; done
\\set id random(1, 50)
SELECT b FROM pt WHERE a = :id;
SELECT count(*) FROM pt WHERE a < :id;
UPDATE pt SET b = 'bench' WHERE a = :id;
SELECT 1;
INSERT INTO pt VALUES (1000 + :id, 'p');
SELECT * FROM missing_table WHERE a = :id;
EOF
PGAPPNAME=ember-pgbench timeout 60 pgbench -h 127.0.0.1 -p "$PG_PORT" -U postgres -n -M extended -f "$TMP/pgbench.sql" -t 1 -c 1 \
  postgres >"$TMP/pgbench.out" 2>&1 &
PGB=$!; CLEANUP_PIDS+=("$PGB")
backend() { # application name -> backend pid, from pg_stat_activity over the socket
  local p
  for _ in $(seq 100); do
    p=$($PGS -At -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$1'")
    [ -n "$p" ] && { echo "$p"; return 0; }
    sleep 0.05
  done
  return 1
}
PSQL_BE=$(backend ember-psql) || fail "psql's backend not found"
PGB_BE=$(backend ember-pgbench) || fail "pgbench's backend not found"
start_net_task pgsql "$PSQL_BE,$PGB_BE" "$TASK_S"
start_capture pgsql "$PG_PORT"
touch "$TMP/pgsql.go"
wait "$PSQL" || { cat "$TMP/psql.out"; fail "psql failed"; }
wait "$PGB"; rc=$?
[ "$rc" = 2 ] && grep -q 'relation "missing_table" does not exist' "$TMP/pgbench.out" ||
  { cat "$TMP/pgbench.out"; fail "pgbench did not end with its failing statement (exit $rc)"; }
stop_capture
wait_net_task pgsql
compare pgsql pgsql "$PSQL_BE,$PGB_BE" "-d tcp.port==$PG_PORT,pgsql" --gap-hides result --min 16
printf '%s\n' "${pg_sql[@]}" >"$TMP/psql-sent"
grep -v '^\\' "$TMP/pgbench.sql" >"$TMP/pgbench-sent"
checks "$TMP/pgsql/network.json" "$PSQL_BE" "$PGB_BE" "$TMP/psql-sent" "$TMP/pgbench-sent" "$TMP/pg.log" <<'PY' ||
import os, re, sys
sys.path.insert(0, os.environ['ROOT'] + '/tests/integration')
from net_checks import *
psql_be, pgb_be = int(sys.argv[2]), int(sys.argv[3])
ex_q, cq = load(sys.argv[1], [psql_be])
ex_e, ce = load(sys.argv[1], [pgb_be])
sent_q = [l.strip().rstrip(';') for l in open(sys.argv[4])]
sent_e = [l.strip() for l in open(sys.argv[5]) if l.strip()]
# The server's log (log_line_prefix '%m [%p] '): statements and errors per backend.
logged = {psql_be: [], pgb_be: []}
errors = {psql_be: [], pgb_be: []}
for l in open(sys.argv[6]):
    m = re.match(r'^\S+ \S+ \S+ \[(\d+)\] (LOG|ERROR):  (?:statement: |execute <unnamed>: )?(.*)$', l.rstrip('\n'))
    if not m or int(m.group(1)) not in logged:
        continue
    (errors if m.group(2) == 'ERROR' else logged)[int(m.group(1))].append(m.group(3))
def q(x):
    return x['fields'].get('query', '').rstrip(';')
check('psql: simple queries, in order', [(x['fields']['kind'], q(x)) for x in ex_q], [('QUERY', s) for s in sent_q])
check('psql: the server logged them', [q(x) for x in ex_q], [s.rstrip(';') for s in logged[psql_be]])
check('psql: errors', [(q(x), x['fields']['result']) for x in ex_q if x['is_error']],
      [('SELECT * FROM missing_table', 'ERROR:42P01'), ("INSERT INTO pt VALUES (100, 'dup')", 'ERROR:23505')])
check('psql: errors (server log)', sum(x['is_error'] for x in ex_q), len(errors[psql_be]))
# The 2000 rows (~130 KB) go out in 8 KB calls seen up to 4 KB each: that answer is cut by
# gaps and closed by the next query, without a row count; its tag is seen only when the
# last call (the rest of the 8 KB buffer) is under 4 KB.
check('psql: results', [x['fields']['result'] for x in ex_q if not x['is_error'] and not x['fields'].get('gap')],
      ['SELECT 1', 'SELECT 1', 'INSERT 0 1', 'SELECT 1', 'UPDATE 10', 'DELETE 1', 'SELECT 5'])
check('psql: the answer cut by gaps (no rows; its tag, if any, SELECT 2000)',
      [(q(x)[:25], x['fields'].get('rows'), x['fields'].get('result', '-') in ('-', 'SELECT 2000'))
       for x in ex_q if x['fields'].get('gap')], [("SELECT g, repeat('x', 50)", None, True)])
# pgbench -M extended: one Parse/Bind/Describe/Execute/Sync per statement, $1 for :id.
want_e = [re.sub(r':id\b', '$1', s).rstrip(';') for s in sent_e]
check('pgbench: executes, in order', [(x['fields']['kind'], q(x)) for x in ex_e], [('EXECUTE', s) for s in want_e])
check('pgbench: the last one failed', [x['fields']['result'] for x in ex_e][-1:], ['ERROR:42P01'])
check('pgbench: errors (server log)', sum(x['is_error'] for x in ex_e), len(errors[pgb_be]))
check('pgbench: executed statements (server log)', [q(x) for x in ex_e if not x['is_error']],
      [s.rstrip(';') for s in logged[pgb_be]])
check('all answered', all(x['answered'] for x in ex_q + ex_e), True)
check('connections parsed', sorted(set((c['protocol'], c['l7_state']) for c in list(cq.values()) + list(ce.values()))),
      [('pgsql', 'parsed')])
done()
PY
  fail "pgsql: ember's exchanges differ from what psql/pgbench sent and postgres logged"
ok "pgsql: psql's simple queries and pgbench's extended-protocol executes are exchanges, as tshark and the server log say"

# ---------------------------------------------------------------- dns
DIG="dig @127.0.0.1 -p $DNS_PORT +tries=1 +time=2"
DNS_SPORT=$(net_port 7)
dns_q=(a.ember.test b.ember.test nx1.test "a.ember.test AAAA" nx2.test "b.ember.test AAAA")
start_net_task dns "$DNS_PID" "$TASK_S"
start_capture dns "$DNS_PORT"
# shellcheck disable=SC2086
{
  $DIG -b "127.0.0.1#$DNS_SPORT" ${dns_q[*]}          # UDP, all from one client port
  $DIG a.ember.test nx3.test                          # UDP, a port per query
  $DIG +tcp +keepopen ${dns_q[*]}                     # TCP, one connection
} >"$TMP/dig.out" 2>&1 || { cat "$TMP/dig.out"; fail "dig failed"; }
stop_capture
wait_net_task dns
compare dns dns "$DNS_PID" "-d udp.port==$DNS_PORT,dns" --tshark-arg "-d tcp.port==$DNS_PORT,dns" --min 14
checks "$TMP/dns/network.json" "$DNS_PID" "$TMP/dig.out" "$DNS_SPORT" <<'PY' ||
import os, re, sys, collections
sys.path.insert(0, os.environ['ROOT'] + '/tests/integration')
from net_checks import *
ex, conns = load(sys.argv[1], [sys.argv[2]])
# dig's account, query by query: name, type, status, answer types.
truth, cur = [], None
for l in open(sys.argv[3]):
    m = re.search(r'status: (\w+), id: (\d+)', l)
    if m:
        cur = dict(rcode=m.group(1), id=m.group(2), ans=[])
        truth.append(cur)
        continue
    m = re.match(r'^;(\S+)\.\s+IN\s+(\w+)$', l.strip())
    if m and cur is not None and 'qname' not in cur:
        cur.update(qname=m.group(1), qtype=m.group(2))
        continue
    m = re.match(r'^\S+\.\s+\d+\s+IN\s+(\w+)\s', l)
    if m and cur is not None and 'qname' in cur:
        cur['ans'].append(m.group(1))
transport = ['udp'] * 8 + ['tcp'] * 6
def mine(x):
    f = x['fields']
    return (f['transport'], f['id'], f['qname'], f['qtype'], f['rcode'], f['answer_types'])
check('lookups, in order (dig)', [mine(x) for x in ex],
      [(t, d['id'], d['qname'], d['qtype'], d['rcode'], ','.join(d['ans']) or '-') for t, d in zip(transport, truth)])
check('errors: the NXDOMAINs', sum(x['is_error'] for x in ex), sum(d['rcode'] != 'NOERROR' for d in truth))
check('all answered', all(x['answered'] for x in ex), True)
# UDP: one connection per client port; the fixed port's carries its six lookups.
udp = [c for c in conns.values() if c['transport'] == 'udp']
ports = collections.Counter(conn_of(x, conns)['remote_address'] for x in ex if x['fields']['transport'] == 'udp')
check('UDP connections: one per client port', len(udp), len(ports))
check('UDP lookups per connection', sorted(c['exchanges'] for c in udp), [1, 1, 6])
check('the fixed port\'s connection', [c['remote_address'] for c in udp if c['exchanges'] == 6],
      ['127.0.0.1:' + sys.argv[4]])
tcp = [c for c in conns.values() if c['transport'] == 'tcp']
check('TCP: one connection, six lookups', [c['exchanges'] for c in tcp], [6])
check('connections parsed', sorted(set((c['protocol'], c['l7_state']) for c in conns.values())), [('dns', 'parsed')])
done()
PY
  fail "dns: ember's exchanges differ from dig's lookups"
ok "dns: every dig lookup over UDP and TCP is an exchange with its rcode and answers, as tshark and dig say"

# ---------------------------------------------------------------- http2
for f in a c; do head -c 700 /dev/zero | tr '\0' "$f" >"$TMP/h2/$f.txt"; done
H2=http://127.0.0.1:$H2_PORT
start_net_task h2 "$H2_PID" "$TASK_S"
start_capture h2 "$H2_PORT"
nghttp -n -s "$H2/a.txt" "$H2/index.html" "$H2/nope" "$H2/c.txt" >"$TMP/nghttp.out" 2>&1 || { cat "$TMP/nghttp.out"; fail "nghttp failed"; }
h2load -n 20 -c 1 -m 4 "$H2/index.html" >"$TMP/h2load.out" 2>&1 || { cat "$TMP/h2load.out"; fail "h2load failed"; }
stop_capture
wait_net_task h2
grep -q '^requests: 20 total, 20 started, 20 done, 20 succeeded' "$TMP/h2load.out" || { cat "$TMP/h2load.out"; fail "h2load: not 20 succeeded"; }
compare h2 http2 "$H2_PID" "-d tcp.port==$H2_PORT,http2" --min 24
checks "$TMP/h2/network.json" "$H2_PID" "$TMP/nghttp.out" "$TMP/h2load.out" <<'PY' ||
import os, re, sys, collections
sys.path.insert(0, os.environ['ROOT'] + '/tests/integration')
from net_checks import *
ex, conns = load(sys.argv[1], [sys.argv[2]])
by_conn = collections.OrderedDict()
for x in sorted(ex, key=lambda x: (x['connection_id'], x['req_seq'])):
    by_conn.setdefault(x['connection_id'], []).append(x)
check('connections', len(by_conn), 2)
first, second = list(by_conn.values())[:2] + [[]] * (2 - len(by_conn))
# nghttp -s: a line per stream, "id responseEnd requestStart process code size path".
st = []
for l in open(sys.argv[3]):
    m = re.match(r'^\s*(\d+)\s+\+\S+\s+\+\S+\s+\S+\s+(\d{3})\s+\S+\s+(/\S*)$', l.rstrip())
    if m:
        st.append((m.group(1), m.group(3), int(m.group(2))))
check('nghttp: streams (id, path, status)', [(x['fields']['stream_id'], x['fields'].get('path'), x['status']) for x in first],
      sorted(st, key=lambda s: int(s[0])))
check('nghttp: one connection, four streams', len(first), 4)
# h2load: 20 requests on one connection, 4 at a time.
m = re.search(r'status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx', open(sys.argv[4]).read())
check('h2load: requests and 2xx', (len(second), sum(200 <= x['status'] < 300 for x in second)), (20, int(m.group(1))))
check('h2load: stream ids', [int(x['fields']['stream_id']) for x in second], list(range(1, 41, 2)))
check('client errors: the 404', sum(x['is_client_error'] for x in ex), 1)
# index.html is 5000 bytes: nghttpd's writes (HEADERS of the streams answered, then their
# DATA) are seen up to 4 KB each, the rest is a gap; every stream's status is in what is seen.
check('gaps: on both connections', [c['gap_bytes'] > 0 for c in conns.values()], [True, True])
check('all answered', all(x['answered'] for x in ex), True)
check('connections parsed', sorted(set((c['protocol'], c['l7_state']) for c in conns.values())), [('http2', 'parsed')])
done()
PY
  fail "http2: ember's exchanges differ from nghttp's and h2load's"
ok "http2: every stream of nghttp and h2load is an exchange with its status, as tshark and the clients say"

stop_agent || fail "agent exited with an error"
