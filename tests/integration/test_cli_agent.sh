#!/usr/bin/env bash
# `ember profile` and `ember stats` as a new user meets them, around agents:
#  - a private agent (no `ember run` up) given `ember run`'s configuration opens no TCP or
#    UDP listener: not Prometheus (its port here held by another program, as gala-gopher
#    holds 8888), not the REST API; --set on the command line still asks for Prometheus;
#    the terminal gets no INFO line from it;
#  - a stale agent.info (`ember run` killed with SIGKILL, its pid reused by a process
#    named "ember"): `ember stats` says no agent runs, at once; `ember profile` warns in
#    one line and runs a private agent; `ember run` starts;
#  - the agent running again is found (`ember stats`, `ember profile`), and a target that
#    exits before the task's end: the result says so.
. "$(dirname "$0")/lib.sh"
need_bpf
command -v ss >/dev/null || skip "ss missing (iproute2)"

"$PROGS/oncpu_chain" 300 >/dev/null & W=$!; CLEANUP_PIDS+=("$W")

# Every pid of the process tree under $1.
tree_pids() {
  local all; all=$(ps -eo pid=,ppid=)
  local want=" $1 " grew=1
  while [ $grew = 1 ]; do
    grew=0
    while read -r pid ppid; do
      [[ "$want" == *" $ppid "* && "$want" != *" $pid "* ]] && { want+="$pid "; grew=1; }
    done <<<"$all"
  done
  echo "$want"
}
# The TCP/UDP listeners (ss lines) of the process tree under $1.
tree_listeners() {
  local pids; pids=$(tree_pids "$1")
  ss -ltunpH | while read -r line; do
    for p in $pids; do [[ "$line" == *"pid=$p,"* ]] && { echo "$line"; break; }; done
  done
}
# Starts `ember profile "$@"` in the background (stdout $TMP/p.out, stderr $TMP/p.err, pid PP)
# and waits for it to report the task attached.
profile_bg() {
  "$EMBER" profile "$@" >"$TMP/p.out" 2>"$TMP/p.err" & PP=$!
  for _ in $(seq 600); do
    grep -q '^ember: profiling' "$TMP/p.err" && return 0
    kill -0 "$PP" 2>/dev/null || { cat "$TMP/p.err"; fail "ember profile $* ended before the task started"; }
    sleep 0.1
  done
  cat "$TMP/p.err"; fail "ember profile $*: no task after 60 s"
}

# ---- a private agent given `ember run`'s configuration
PROM=$(free_port); REST=$(free_port)
python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(600)' "$PROM" & HOLD=$!; CLEANUP_PIDS+=("$HOLD")
cat > "$TMP/run.yaml" <<YAML
ember:
  run_dir: $TMP/prun
  log_level: info
  rest_api: { enabled: true, port: $REST }
exporter:
  backends: [prometheus, file]
  prometheus: { address: 127.0.0.1, port: $PROM }
profiling: { flush_interval: 1s }
YAML
profile_bg --config "$TMP/run.yaml" --pid "$W" --duration 3s --out "$TMP/o1"
sleep 1
L=$(tree_listeners "$PP")
[ -z "$L" ] || { echo "$L"; fail "the private agent listens (above)"; }
wait "$PP" || { cat "$TMP/p.err"; fail "ember profile with a private agent failed"; }
[ -s "$TMP/o1/oncpu.folded" ] || fail "no oncpu.folded"
grep -Eq "cannot listen|exporter .*exited|restarting" "$TMP/p.err" && { cat "$TMP/p.err"; fail "the private agent's exporter tried to listen"; }
grep -q " INFO: " "$TMP/p.err" && { cat "$TMP/p.err"; fail "INFO lines of the private agent reach the terminal"; }
ok "a private agent opens no listener (Prometheus's port held elsewhere, REST API in the configuration) and prints no INFO line"

PROM2=$(free_port)
profile_bg --config "$TMP/run.yaml" --set exporter.backends=file,prometheus --set exporter.prometheus.port="$PROM2" \
  --pid "$W" --duration 2s --out "$TMP/o1b"
L=""; for _ in $(seq 50); do L=$(tree_listeners "$PP"); [ -n "$L" ] && break; sleep 0.1; done
wait "$PP" || { cat "$TMP/p.err"; fail "ember profile --set exporter.backends=file,prometheus failed"; }
[[ "$L" == *":$PROM2 "* ]] || { echo "listeners: $L"; fail "--set exporter.backends with prometheus does not open /metrics on $PROM2"; }
[[ "$L" == *":$REST "* ]] && fail "the REST API is on without being asked"
ok "--set exporter.backends=file,prometheus still opens /metrics for a private agent (and nothing else)"

# ---- a stale agent.info
start_agent
kill -9 "$AGENT_PID"
for _ in $(seq 100); do pgrep -f "ember-collector --run-dir $AGENT_RUN " >/dev/null || break; sleep 0.1; done
pgrep -f "ember-collector --run-dir $AGENT_RUN " >/dev/null && fail "the collector outlived its supervisor"
# The pid reused by a process that even calls itself ember.
mkdir -p "$TMP/bin"; ln -s "$(command -v sleep)" "$TMP/bin/ember"
"$TMP/bin/ember" 600 & REUSED=$!; CLEANUP_PIDS+=("$REUSED")
sed -i "s/^pid=.*/pid=$REUSED/" "$AGENT_RUN/agent.info"
[ "$(cat /proc/$REUSED/comm)" = ember ] || fail "the stand-in is not named ember"

start=$(date +%s%N)
"$EMBER" stats --config "$TMP/ember.yaml" >"$TMP/s.out" 2>"$TMP/s.err"; rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ "$rc" = 1 ] || { cat "$TMP/s.err"; fail "ember stats with a stale agent.info exited $rc"; }
grep -q "no agent is running .*agent.info is stale, left by an agent, pid $REUSED, that no longer runs" "$TMP/s.err" || { cat "$TMP/s.err"; fail "ember stats does not say the agent is gone"; }
[ "$ms" -lt 5000 ] || fail "ember stats took $ms ms to say so"
ok "ember stats with a stale agent.info: $(head -1 "$TMP/s.err") (${ms} ms)"

"$EMBER" profile --config "$TMP/ember.yaml" --pid "$W" --duration 1s --out "$TMP/o2" >"$TMP/p2.out" 2>"$TMP/p2.err" \
  || { cat "$TMP/p2.err"; fail "ember profile with a stale agent.info failed"; }
[ -s "$TMP/o2/oncpu.folded" ] || fail "no oncpu.folded from the private agent"
[ "$(grep -c 'stale' "$TMP/p2.err")" = 1 ] || { cat "$TMP/p2.err"; fail "not one line of warning about the stale agent.info"; }
grep -q "agent.info is stale (left by an agent, pid $REUSED, that no longer runs); running a private agent" "$TMP/p2.err" || { cat "$TMP/p2.err"; fail "the warning does not say what it does"; }
ok "ember profile with a stale agent.info: $(grep stale "$TMP/p2.err")"

start_agent
# Its sockets and agent.info were there before it: ready when it says so.
for _ in $(seq 200); do grep -q "agent running" "$TMP/agent.log" && break; sleep 0.1; done
grep -q "agent running" "$TMP/agent.log" || { cat "$TMP/agent.log"; fail "ember run did not start over a stale agent.info"; }
ok "ember run starts over a stale agent.info"
"$EMBER" stats --config "$TMP/ember.yaml" >"$TMP/s2.out" 2>"$TMP/s2.err" || { cat "$TMP/s2.err"; fail "ember stats does not find the running agent"; }

# ---- a target that exits before the task's end (through the running agent)
"$PROGS/exit_soon" 100 & X=$!; CLEANUP_PIDS+=("$X")
sleep 0.2
profile_bg --config "$TMP/ember.yaml" --pid "$X" --duration 5s --out "$TMP/o3"
kill -USR1 "$X"
wait "$PP" || { cat "$TMP/p.err"; fail "ember profile of a target that exits failed"; }
grep -Eq "^ember: pid $X exited [0-9.]+s into the 5.0s task" "$TMP/p.err" || { cat "$TMP/p.err"; fail "the result does not say the target exited"; }
ls "$AGENT_OUT"/cli-*/task.json >/dev/null 2>&1 && ! grep -q stale "$TMP/p.err" || { cat "$TMP/p.err"; fail "the task did not go to the running agent"; }
ok "a target that exits early: $(grep "pid $X exited" "$TMP/p.err")"
stop_agent || fail "the agent did not stop cleanly"
