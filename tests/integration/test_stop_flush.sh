#!/usr/bin/env bash
# SIGTERM on `ember run` stops all three processes cleanly and flushes what was
# collected: a task still running is finished and its files written.
. "$(dirname "$0")/lib.sh"
need_bpf
start_agent
"$PROGS/oncpu_chain" 60 > /dev/null & W=$!; CLEANUP_PIDS+=("$W")
C=$(child_pid ember-collector); A=$(child_pid ember-analyzer); X=$(child_pid ember-exporter)
cpu0=$(cpu_secs "$W")
"$EMBER" profile --config "$TMP/ember.yaml" --pid "$W" --duration 60s --out "$TMP/prof" >"$TMP/p.out" 2>"$TMP/p.err" & P=$!
sleep 3.5
cpu_term=$(cpu_secs "$W")
kill -TERM "$AGENT_PID"
for _ in $(seq 300); do kill -0 "$AGENT_PID" 2>/dev/null || break; sleep 0.1; done
cpu_exit=$(cpu_secs "$W")
kill -0 "$AGENT_PID" 2>/dev/null && fail "agent still running 30 s after SIGTERM"
wait "$AGENT_PID"; rc=$?
[ $rc = 0 ] || { cat "$TMP/agent.log"; fail "agent exited with $rc"; }
for p in $C $A $X; do kill -0 "$p" 2>/dev/null && fail "process $p survived the agent"; done
wait $P || { cat "$TMP/p.err"; fail "ember profile did not get its results after the agent stopped"; }
grep -q '"state":"finished"' "$TMP/p.err" || { cat "$TMP/p.err"; fail "task not finished cleanly"; }
total=$(folded_total "$TMP/prof/oncpu.folded")
# The task samples from its start (just after cpu0) until the collector stops
# sampling, between SIGTERM (cpu_term) and the agent's exit (cpu_exit); every
# sample stands for 9 ms of the target's CPU time.  The stop flushes every
# window, the open one included: 0.95 of the CPU time up to SIGTERM allows for
# the task's start latency (as in test_oncpu_profile); a stop that lost the
# last window (up to 1 s of 3.5 s) fails.
lo=$(awk -v a="$cpu0" -v b="$cpu_term" 'BEGIN { printf "%d", 0.95 * (b - a) / 0.009 }')
hi=$(awk -v a="$cpu0" -v b="$cpu_exit" 'BEGIN { printf "%d", 1.02 * (b - a) / 0.009 + 1 }')
echo "samples flushed at stop: $total (CPU time allows $lo..$hi)"
[ "$total" -ge "$lo" ] && [ "$total" -le "$hi" ] || fail "$total samples flushed; the CPU time up to the stop stands for $lo..$hi"
grep -q "task .* finished (agent stopping)" "$TMP/agent.log" || fail "the analyzer did not finish the task on stop"
[ ! -e "$AGENT_RUN/agent.info" ] || fail "agent.info left behind"
ok "stopped in order; the running task was flushed with $total samples"
