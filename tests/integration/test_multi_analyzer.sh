#!/usr/bin/env bash
# Two analyzers make one agent: `ember profile --pid A,B` with A and B on
# different shards runs on both at once (not one after the other) and gives
# one profile holding both processes, which the exporter joins by task id.
. "$(dirname "$0")/lib.sh"
need_bpf
start_agent --set ember.analyzers=2
[ -S "$AGENT_RUN/analyzer/analyzer-1.ctl" ] || { sleep 1; [ -S "$AGENT_RUN/analyzer/analyzer-1.ctl" ] || fail "no second analyzer"; }
# One workload on each shard (shard = pid % 2): start until both parities are there.
A=; B=
for _ in $(seq 20); do
  "$PROGS/oncpu_chain" 60 > /dev/null & p=$!; CLEANUP_PIDS+=("$p")
  if [ $((p % 2)) = 0 ] && [ -z "$A" ]; then A=$p; elif [ $((p % 2)) = 1 ] && [ -z "$B" ]; then B=$p; else kill $p; fi
  [ -n "$A" ] && [ -n "$B" ] && break
done
[ -n "$A" ] && [ -n "$B" ] || fail "could not get a pid on each shard"
# The other workload under another name, to tell the two apart in the profile.
cp "$PROGS/cpu_work" "$TMP/cpu_work_b"
kill "$B"; for _ in $(seq 20); do "$TMP/cpu_work_b" 100000 & p=$!; CLEANUP_PIDS+=("$p"); [ $((p % 2)) = 1 ] && { B=$p; break; }; kill $p; done
[ $((B % 2)) = 1 ] || fail "no odd pid for the second workload"
echo "A=$A (shard 0), B=$B (shard 1)"
sleep 0.3
t0=$(date +%s%N)
"$EMBER" profile --config "$TMP/ember.yaml" --pid "$A,$B" --duration 4s --out "$TMP/prof" >"$TMP/p.out" 2>"$TMP/p.err" ||
  { cat "$TMP/p.err"; tail -20 "$TMP/agent.log"; fail "ember profile failed"; }
took=$(( ($(date +%s%N) - t0) / 1000000 ))
cat "$TMP/p.err"
# Both shards run at once: 4 s plus the final flush (FLUSH 1 s) and the
# exporter's write, not 2 x 4 s.
echo "took $took ms for a 4 s task on two analyzers"
[ "$took" -lt 6500 ] || fail "a two-shard task took $took ms: the shards ran one after the other"
[ ! -e "$TMP/prof/shard-0" ] && [ ! -e "$TMP/prof/shard-1" ] || fail "per-shard output directories"
F=$TMP/prof/oncpu.folded
[ -s "$F" ] || fail "no $F"
a=$(folded_sum "$F" '^oncpu_chain;'); b=$(folded_sum "$F" '^cpu_work_b;')
echo "samples: oncpu_chain (shard 0) $a, cpu_work_b (shard 1) $b"
# Each process burns about a core for 4 s: ~444 samples of 9 ms each; both
# must be there in full (a shard that ran alone, or late, would show half).
[ "$a" -ge 300 ] && [ "$b" -ge 300 ] || fail "one profile must hold both processes in full ($a, $b)"
grep -q '"state":"finished"' "$TMP/p.err" || fail "task not finished"
[ "$(grep -c '"task_id"' "$TMP/prof/../p.err")" = 1 ] || fail "more than one task result"
"$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats" || fail "ember stats failed"
grep -E "ember_exporter_tasks_joined +1$|exporter_tasks_joined +1$" "$TMP/stats" || { grep joined "$TMP/stats"; fail "the exporter did not join the two shards' task"; }
ok "one task on two analyzers: $took ms, one profile with both processes"
stop_agent || fail "agent exited with an error"
