#!/usr/bin/env bash
# A network task on a forking server follows the processes it forks:
# PostgreSQL's postmaster forks one backend per connection, after the task
# started; every query of every backend is the task's, booked to the
# backend's pid, and the followed children leave the kernel's target table
# when they exit and when the task ends.  Two analyzers: a backend whose pid
# belongs to the other analyzer's shard is still the task's (the collector
# sends a followed child's events to the shard of the process the task
# named); sessions go on until at least one backend was such a one.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
command -v bpftool >/dev/null || skip "bpftool not installed"
AGENT_PROFILING_YAML="  task: { network: { max_exchanges_per_report: 1000000 } }"
AGENT_ANALYZERS=2
start_agent
start_postgres
start_net_task pgfork "$PG_PID" 8s
# One more session outlives the task: its backend is followed from its fork
# and must leave the target table when the task ends, still running.
psql -X -q -A -t -h 127.0.0.1 -p "$PG_PORT" -U postgres -c "SELECT pg_backend_pid()" -c "SELECT pg_sleep(20)" \
  >"$TMP/sleeper" 2>&1 & SLEEPER=$!; CLEANUP_PIDS+=("$SLEEPER")
# Each session is a new connection, so a new backend forked by the postmaster
# while the task runs: its pid, three more queries, the last one failing.
: > "$TMP/pids"
SESSIONS=0 OTHER_SHARD=0
while [ $SESSIONS -lt 5 ] || { [ $OTHER_SHARD = 0 ] && [ $SESSIONS -lt 16 ]; }; do
  i=$((SESSIONS + 1))
  psql -X -q -A -t -h 127.0.0.1 -p "$PG_PORT" -U postgres >"$TMP/be$i" 2>"$TMP/psql$i.err" <<SQL
SELECT pg_backend_pid();
SELECT $i;
SELECT n FROM generate_series(1, 3) n;
SELECT * FROM no_such_table_$i;
SQL
  grep -q "no_such_table_$i" "$TMP/psql$i.err" || { cat "$TMP/psql$i.err"; fail "psql session $i did not run"; }
  be=$(head -1 "$TMP/be$i")
  [[ $be =~ ^[0-9]+$ ]] || { cat "$TMP/be$i"; fail "session $i printed no backend pid"; }
  echo "$be" >> "$TMP/pids"
  [ $((be % 2)) != $((PG_PID % 2)) ] && OTHER_SHARD=$((OTHER_SHARD + 1))
  SESSIONS=$i
done
[ $OTHER_SHARD -ge 1 ] || fail "no backend of $SESSIONS had its pid in the other analyzer's shard"
echo "$SESSIONS sessions; $OTHER_SHARD backends in the other analyzer's shard (postmaster $PG_PID)"
# A backend exits right after its client: by now every one is gone, and
# its entry with it (sched_process_exit), while the task still runs.
sleep 0.5
SLEEPER_BE=$(head -1 "$TMP/sleeper")
[ -n "$SLEEPER_BE" ] && kill -0 "$SLEEPER_BE" || { cat "$TMP/sleeper"; fail "the long session's backend is not running"; }
left=$(bpftool map dump name net_targets -j 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[ "$left" = 2 ] || { bpftool map dump name net_targets; fail "$left processes in the target table; the postmaster and the long session's backend expected ($SESSIONS backends exited)"; }
ok "each backend left the target table when it exited"
wait_net_task pgfork
"$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats" || fail "ember stats failed"
python3 - "$TMP/pgfork/network.json" "$TMP/pids" "$SLEEPER_BE" <<'PY' || fail "the backends' exchanges are not the task's"
import json, sys
pids = [int(l) for l in open(sys.argv[2])]
sleeper = int(sys.argv[3])   # its startup is an exchange too; its sleep outlives the task
per_pid = {p: [] for p in pids}
conns = {}
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o.get("type") == "exchange" and o.get("protocol") == "pgsql":
        per_pid.setdefault(o["pid"], []).append(o)
    elif o.get("type") == "connection":
        conns.setdefault(o["pid"], []).append(o)
def text(x):
    f = x.get("fields", {})
    return f.get("query") or f.get("command") or str(f)
bad = False
sessions = set()
for p in pids:
    xs = sorted(per_pid.get(p, []), key=lambda x: x["req_unix_ns"])
    got = [text(x) for x in xs]
    errors = [text(x) for x in xs if x.get("is_error")]
    print(f"backend {p}: {len(conns.get(p, []))} connection(s), exchanges {got}, errors {errors}")
    # The startup message, then the session's four queries in order; the last one fails.
    i = got[2].split()[1].rstrip(";") if len(got) == 5 else "?"
    sessions.add(i)
    want = ["user=postgres", "SELECT pg_backend_pid();", f"SELECT {i};",
            "SELECT n FROM generate_series(1, 3) n;", f"SELECT * FROM no_such_table_{i};"]
    if got != want or errors != want[4:] or any(x.get("side") != "server" for x in xs) or len(conns.get(p, [])) != 1:
        print(f"  expected {want}, errors {want[4:]}, side server, one connection")
        bad = True
if sessions != {str(i) for i in range(1, len(pids) + 1)}:
    print("sessions seen:", sorted(sessions))
    bad = True
others = [p for p in per_pid if p not in pids and p != sleeper and per_pid[p]]
if [text(x) for x in per_pid.get(sleeper, [])][:2] != ["user=postgres", "SELECT pg_backend_pid()"]:
    print("the long session's backend:", [text(x) for x in per_pid.get(sleeper, [])])
    bad = True
if others:
    print("exchanges of processes that are no backend of these sessions:", others)
    bad = True
sys.exit(1 if bad else 0)
PY
ok "every session's startup and four queries are exchanges of its backend, in order, booked to the backend's pid, the failing one an error ($OTHER_SHARD of $SESSIONS backends in the other analyzer's shard)"
c_followed=$(awk '$1 == "collector" && $2 == "bpf_net_children_followed" {print $3}' "$TMP/stats")
a_followed=$(awk '$1 ~ /^analyzer/ && $2 == "ember_net_children_followed" {s += $3} END {print s+0}' "$TMP/stats")
echo "children followed: collector $c_followed, analyzer $a_followed"
[ "${c_followed:-0}" -ge $SESSIONS ] && [ "$a_followed" -ge $SESSIONS ] || { cat "$TMP/stats"; fail "children not counted"; }
left=$(bpftool map dump name net_targets -j 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
kill -0 "$SLEEPER_BE" || fail "the long session's backend ended before the task (make its sleep longer)"
[ "$left" = 0 ] || { bpftool map dump name net_targets; fail "$left processes left in the target table after the task"; }
ok "the target table is empty after the task, the long session's backend still running"
stop_agent || fail "agent exited with an error"
