#!/usr/bin/env bash
# A target that exits mid-profile is not an error: what was collected is written.
. "$(dirname "$0")/lib.sh"
need_bpf
# The target waits for SIGUSR1, sent once the profile runs, so that all of
# its CPU time falls inside the profile however slowly the agent starts.
"$PROGS/oncpu_chain" 2 wait > "$TMP/w.out" & W=$!
for _ in $(seq 100); do grep -q waiting "$TMP/w.out" 2>/dev/null && break; sleep 0.05; done
start=$(date +%s%N)
"$EMBER" profile --pid "$W" --duration 20s --out "$TMP/prof" >"$TMP/out" 2>"$TMP/err" & E=$!; CLEANUP_PIDS+=("$E")
for _ in $(seq 200); do grep -q "profiling 1 process" "$TMP/err" 2>/dev/null && break; sleep 0.05; done
grep -q "profiling 1 process" "$TMP/err" || { cat "$TMP/err"; fail "the profile did not start"; }
sleep 0.3   # the task reaches the collector after the CLI's line
kill -USR1 "$W"
wait "$E" || { cat "$TMP/err"; fail "ember profile failed when the target exited"; }
el=$(( ($(date +%s%N) - start) / 1000000 ))
cat "$TMP/err"
echo "returned after ${el} ms"
[ "$el" -lt 10000 ] || fail "did not end early when the process exited (took $el ms)"
wait $W
total=$(folded_total "$TMP/prof/oncpu.folded")
cpu_ms=$(awk '/^cpu_ms/ {print $2}' "$TMP/w.out")
expect=$(( cpu_ms / 9 ))
echo "target used $cpu_ms ms of CPU, all of it after the profile started (~$expect samples of 9 ms); $total written"
awk -v t="$total" -v e="$expect" 'BEGIN { exit !(t >= 0.8 * e && t <= 1.15 * e) }' || fail "$total samples written for ~$expect expected"
grep -q "outer;middle;leaf" "$TMP/prof/oncpu.folded" || fail "symbols missing for the exited process"
ok "$total samples written, symbolized, after the target exited"
