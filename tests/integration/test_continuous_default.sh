#!/usr/bin/env bash
# The shipped configuration does the main job by itself: `ember run` on
# deploy/ember.yaml (only its directories and the /metrics port moved for the
# test) and a program that burns a core: a flame graph of that program
# appears under the output directory, titled with the reason, without any
# other command.
. "$(dirname "$0")/lib.sh"
need_bpf
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$EMBER" run --config "$ROOT/deploy/ember.yaml" --set ember.run_dir="$TMP/run" --set ember.output_dir="$TMP/out" \
  --set exporter.prometheus.address=127.0.0.1 --set exporter.prometheus.port="$PORT" >"$TMP/agent.log" 2>&1 &
AGENT_PID=$!; CLEANUP_PIDS+=("$AGENT_PID")
"$PROGS/burn_later" 1 60 default-policy-test > "$TMP/burn.out" & B=$!; CLEANUP_PIDS+=("$B")
# The default policy: over 80% of a core in 10 of the last 30 s, checked every 5 s; the file
# exporter writes the running task's flame graph every flush interval (5 s).
d=""
for _ in $(seq 60); do
  d=$(ls -d "$TMP"/out/auto-oncpu-"$B"-* 2>/dev/null | head -1)
  [ -n "$d" ] && [ -s "$d/oncpu.folded" ] && [ -s "$d/oncpu.svg" ] && break
  kill -0 "$AGENT_PID" 2>/dev/null || { cat "$TMP/agent.log"; fail "the agent exited"; }
  d=""
  sleep 1
done
[ -n "$d" ] || { cat "$TMP/agent.log"; fail "no flame graph of the burner within 60 s"; }
grep "continuous profiling: task" "$TMP/agent.log" | head -3
burn=$(folded_sum "$d/oncpu.folded" '^burn_later;(.*;)?main;burn_outer;burn_inner')
total=$(folded_total "$d/oncpu.folded")
echo "flame graph $d: $burn of $total samples in main;burn_outer;burn_inner"
[ "$total" -gt 0 ] && [ $((burn * 100 / total)) -ge 90 ] || fail "the flame graph is not the burner's"
svg_text "$d/oncpu.svg" title | grep -qE "started by policy (&apos;|')high-cpu(&apos;|'): PROCESS_CPU" || fail "the flame graph's title does not say why it was taken"
# ember stats lists the running triggered task with its reason.
"$EMBER" stats --config "$ROOT/deploy/ember.yaml" --set ember.run_dir="$TMP/run" > "$TMP/stats.out" 2>&1 || fail "ember stats failed"
grep "auto-oncpu-$B-" "$TMP/stats.out" || fail "ember stats does not list the triggered task"
grep -q "auto-oncpu-$B-.* burn_later (pid $B): policy 'high-cpu' PROCESS_CPU [0-9.]* >= 80 in [0-9]* of 30 s" "$TMP/stats.out" \
  || fail "ember stats does not give the task's reason"
# A manual task of the same type on that process is refused while the triggered one runs, naming it.
if "$EMBER" profile --config "$ROOT/deploy/ember.yaml" --set ember.run_dir="$TMP/run" --pid "$B" --type oncpu \
     --duration 1s --out "$TMP/manual" >/dev/null 2>"$TMP/manual.err"; then
  fail "a manual on-CPU task started beside the triggered one"
fi
cat "$TMP/manual.err"
grep -q "already has a task of this kind: auto-oncpu-$B-.*(origin trigger)" "$TMP/manual.err" || fail "the refusal does not name the triggered task"
ok "the shipped configuration profiled a CPU burner by itself"
kill -TERM "$AGENT_PID"
for _ in $(seq 300); do kill -0 "$AGENT_PID" 2>/dev/null || break; sleep 0.1; done
wait "$AGENT_PID" || fail "agent exited with an error"
