#!/usr/bin/env bash
# A target that exits mid-profile is not an error: what was collected is written.
. "$(dirname "$0")/lib.sh"
need_bpf
"$PROGS/oncpu_chain" 2 > "$TMP/w.out" & W=$!
sleep 0.2
start=$(date +%s%N)
"$EMBER" profile --pid "$W" --duration 20s --out "$TMP/prof" >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/err"; fail "ember profile failed when the target exited"; }
el=$(( ($(date +%s%N) - start) / 1000000 ))
cat "$TMP/err"
echo "returned after ${el} ms"
[ "$el" -lt 10000 ] || fail "did not end early when the process exited (took $el ms)"
wait $W
total=$(folded_total "$TMP/prof/oncpu.folded")
cpu_ms=$(awk '/^cpu_ms/ {print $2}' "$TMP/w.out")
expect=$(( cpu_ms / 9 ))
echo "target used $cpu_ms ms of CPU (~$expect samples of 9 ms, ~0.2 s of it before the profile started); $total written"
awk -v t="$total" -v e="$expect" 'BEGIN { exit !(t >= 0.6 * e && t <= 1.15 * e) }' || fail "$total samples written for ~$expect expected"
grep -q "outer;middle;leaf" "$TMP/prof/oncpu.folded" || fail "symbols missing for the exited process"
ok "$total samples written, symbolized, after the target exited"
