#!/usr/bin/env bash
# A task's own parameters are honoured or the task is refused with the
# reason, never silently replaced by another task's: two off-CPU tasks keep
# their own minimum block time, and an on-CPU task asking for another period
# than the one already sampling is refused, saying why.
. "$(dirname "$0")/lib.sh"
need_bpf
start_agent
# Off-CPU: the pipe waits last 50 ms, the sleeps 200 ms.  A task with a
# 100 ms minimum sees only the sleeps; one with none, beside it, sees both.
"$PROGS/offcpu_wait" 5 > "$TMP/w1.out" & W1=$!; CLEANUP_PIDS+=("$W1")
"$PROGS/offcpu_wait" 5 > "$TMP/w2.out" & W2=$!; CLEANUP_PIDS+=("$W2")
sleep 0.1
"$EMBER" profile --config "$TMP/ember.yaml" --pid "$W1" --type offcpu --duration 30s --out "$TMP/all" >/dev/null 2>"$TMP/all.err" & P1=$!
"$EMBER" profile --config "$TMP/ember.yaml" --pid "$W2" --type offcpu --min-block 100ms --duration 30s --out "$TMP/long" >/dev/null 2>"$TMP/long.err" & P2=$!
wait $P1 || { cat "$TMP/all.err"; fail "off-CPU task without a minimum failed"; }
wait $P2 || { cat "$TMP/long.err"; fail "off-CPU task with --min-block 100ms failed"; }
pipe_all=$(folded_sum "$TMP/all/offcpu.count.folded" '(^|;)wait_on_pipe;')
sleep_all=$(folded_sum "$TMP/all/offcpu.count.folded" '(^|;)sleeper;')
pipe_long=$(folded_sum "$TMP/long/offcpu.count.folded" '(^|;)wait_on_pipe;')
sleep_long=$(folded_sum "$TMP/long/offcpu.count.folded" '(^|;)sleeper;do_nanosleep;')
echo "no minimum: $pipe_all pipe waits, $sleep_all sleeps; 100 ms minimum: $pipe_long pipe waits, $sleep_long sleeps"
[ "$pipe_all" -ge 90 ] || fail "the task without a minimum lost its 50 ms pipe waits ($pipe_all)"
[ "$pipe_long" = 0 ] || fail "the 100 ms minimum let $pipe_long pipe waits of 50 ms through"
[ "$sleep_long" -ge 24 ] || fail "the 100 ms minimum dropped 200 ms sleeps ($sleep_long)"
ok "each off-CPU task kept its own minimum block time"

# On-CPU: one task samples at 9 ms; a second at 3 ms is refused with the reason.
"$PROGS/oncpu_chain" 30 > /dev/null & C1=$!; CLEANUP_PIDS+=("$C1")
"$PROGS/oncpu_chain" 30 > /dev/null & C2=$!; CLEANUP_PIDS+=("$C2")
"$EMBER" profile --config "$TMP/ember.yaml" --pid "$C1" --duration 4s --out "$TMP/c1" >/dev/null 2>"$TMP/c1.err" & P1=$!
sleep 1
if "$EMBER" profile --config "$TMP/ember.yaml" --pid "$C2" --period 3ms --duration 2s --out "$TMP/c2" >/dev/null 2>"$TMP/c2.err"; then
  fail "an on-CPU task with another period was accepted while one ran at 9 ms"
fi
cat "$TMP/c2.err"
grep -q "already runs with another period" "$TMP/c2.err" || fail "the refusal does not say why"
wait $P1 || { cat "$TMP/c1.err"; fail "the first on-CPU task failed"; }
"$EMBER" profile --config "$TMP/ember.yaml" --pid "$C2" --period 3ms --duration 2s --out "$TMP/c2" >/dev/null 2>"$TMP/c2.err" ||
  { cat "$TMP/c2.err"; fail "the 3 ms task is refused even after the 9 ms one ended"; }
n=$(folded_total "$TMP/c2/oncpu.folded")
echo "3 ms task alone: $n samples in 2 s"
[ "$n" -ge 400 ] || fail "the 3 ms task sampled at another period ($n samples in 2 s, ~660 expected)"
ok "an on-CPU task with another period is refused with the reason, and runs once the first ended"
stop_agent || fail "agent exited with an error"
