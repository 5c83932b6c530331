#!/usr/bin/env bash
# A target that exits mid-profile is not an error: what was collected is written.
. "$(dirname "$0")/lib.sh"
need_bpf
"$PROGS/oncpu_chain" 2 & W=$!
sleep 0.2
start=$(date +%s%N)
"$EMBER" profile --pid "$W" --duration 20s --out "$TMP/prof" >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/err"; fail "ember profile failed when the target exited"; }
el=$(( ($(date +%s%N) - start) / 1000000 ))
cat "$TMP/err"
echo "returned after ${el} ms"
[ "$el" -lt 10000 ] || fail "did not end early when the process exited (took $el ms)"
total=$(folded_total "$TMP/prof/oncpu.folded")
[ "$total" -ge 50 ] || fail "only $total samples written for a process that ran ~1.8 s"
grep -q "outer;middle;leaf" "$TMP/prof/oncpu.folded" || fail "symbols missing for the exited process"
ok "$total samples written, symbolized, after the target exited"
