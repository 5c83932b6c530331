#!/usr/bin/env bash
# A process that exits 100 ms after the profile starts: its stacks are still
# symbolized (the analyzer loads the target's modules at task start,
# symbolizer__preload), none of its frames is left [unknown].
. "$(dirname "$0")/lib.sh"
need_bpf
[ -x "$PROGS/exit_soon" ] || fail "$PROGS/exit_soon not built"
"$PROGS/exit_soon" 100 & W=$!
CLEANUP_PIDS+=("$W")
"$EMBER" profile --pid "$W" --duration 3s --out "$TMP/prof" >"$TMP/out" 2>"$TMP/err" & P=$!
for _ in $(seq 200); do
  grep -q "profiling" "$TMP/err" && break
  kill -0 "$P" 2>/dev/null || { cat "$TMP/err"; fail "ember profile exited early"; }
  sleep 0.05
done
grep -q "profiling" "$TMP/err" || { cat "$TMP/err"; fail "profile did not start"; }
kill -USR1 "$W"
wait "$W"; echo "target exited ($?) ~100 ms after the profile started"
wait "$P" || { cat "$TMP/err"; fail "ember profile failed"; }
f="$TMP/prof/oncpu.folded"
[ -s "$f" ] || { cat "$TMP/err"; fail "no oncpu.folded"; }
total=$(folded_total "$f")
named=$(folded_sum "$f" 'soon_outer;soon_leaf')
unknown=$(folded_sum "$f" 'exit_soon\+0x')
echo "samples $total, in soon_outer;soon_leaf $named, unresolved in exit_soon $unknown"
[ "$total" -ge 1 ] || fail "no samples of a 100 ms spin"
awk -v n="$named" -v t="$total" 'BEGIN { exit !(n >= 0.8 * t) }' || { head "$f"; fail "$named of $total samples named soon_outer;soon_leaf"; }
[ "$unknown" -eq 0 ] || fail "$unknown samples unresolved in the exited binary"
ok "$named/$total samples of the exited process symbolized"
