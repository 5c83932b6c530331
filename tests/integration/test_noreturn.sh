#!/usr/bin/env bash
# Return addresses are looked up inside their call (ip - 1): reader's last
# instruction calls the noreturn spin_forever, so the return address on the
# stack is the first byte of after_reader, the next function in the binary.
# The on-CPU stacks must name reader, never after_reader.
. "$(dirname "$0")/lib.sh"
need_bpf
objdump -d "$PROGS/noreturn_call" --no-show-raw-insn | grep -A4 '<reader>:' | grep -q 'call.*<spin_forever>' \
  || fail "the workload's reader does not end with the call (compiler layout changed)"
ra=$(objdump -d "$PROGS/noreturn_call" --no-show-raw-insn | awk '/<reader>:/ {r=1} r && /call/ {getline; print $1; exit}')
next=$(objdump -d "$PROGS/noreturn_call" --no-show-raw-insn | awk '/<after_reader>:/ {print $1; exit}')
echo "return address after the call: ${ra%:}, after_reader at: $next"
[ "$((16#${ra%:}))" = "$((16#$next))" ] || fail "the call is not the last instruction before after_reader"
start_agent
"$PROGS/noreturn_call" 30 & W=$!; CLEANUP_PIDS+=("$W")
sleep 0.3
"$EMBER" profile --config "$TMP/ember.yaml" --pid "$W" --type oncpu --period 1ms --duration 3s --out "$TMP/prof" \
  >/dev/null 2>"$TMP/p.err" || { cat "$TMP/p.err"; fail "ember profile failed"; }
F=$TMP/prof/oncpu.folded
total=$(folded_total "$F"); good=$(folded_sum "$F" '^noreturn_call;(.*;)?main;reader;spin_forever(;|$)')
bad=$(folded_sum "$F" '(^|;)after_reader(;|$)')
echo "samples: $total, main;reader;spin_forever: $good, naming after_reader: $bad"
[ "$bad" = 0 ] || fail "$bad samples charge after_reader for reader's call"
[ "$total" -gt 0 ] && [ $((100 * good / total)) -ge 90 ] || fail "only $good of $total samples name main;reader;spin_forever"
ok "the noreturn call is charged to its real caller"
stop_agent || fail "agent exited with an error"
