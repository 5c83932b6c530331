#!/usr/bin/env bash
# The output disk full when a task ends: its files cannot be written, which is
# counted, and its end is written again at each tick until they are; once the
# disk has room, the task's files and task.json appear and `ember profile`
# gets them, instead of timing out.
. "$(dirname "$0")/lib.sh"
need_bpf
mkdir -p "$TMP/out"
mount -t tmpfs -o size=4m ember-test-out "$TMP/out" || skip "cannot mount a tmpfs"
KEEP_TMP=1
trap 'cleanup; umount "$TMP/out" 2>/dev/null; rm -rf "$TMP"' EXIT
chmod 755 "$TMP/out"
start_agent
"$PROGS/oncpu_chain" 60 & W=$!; CLEANUP_PIDS+=("$W")
"$EMBER" profile --config "$TMP/ember.yaml" --pid "$W" --duration 4s --out "$TMP/prof" >"$TMP/p.out" 2>"$TMP/p.err" & P=$!
for _ in $(seq 100); do grep -q "^ember: profiling" "$TMP/p.err" && break; sleep 0.05; done
# Full before the task's end; room again 3 s after it.
dd if=/dev/zero of="$TMP/out/.fill" bs=64k 2>/dev/null
stat_of() { "$EMBER" stats --config "$TMP/ember.yaml" | awk -v k="$1" '$2 == k {print $3}'; }
sleep 5
e=$(stat_of ember_file_write_errors); r=$(stat_of ember_file_task_ends_retried)
echo "while full: write errors $e, ends retried $r; task.json: $(ls "$TMP/out"/cli-*/task.json 2>/dev/null || echo none)"
[ "${e:-0}" -ge 1 ] && [ "${r:-0}" -ge 1 ] || fail "the failed writes are not counted or the end is not retried"
ls "$TMP/out"/cli-*/task.json >/dev/null 2>&1 && fail "task.json written while the other files could not be"
rm -f "$TMP/out/.fill"
wait "$P" || { cat "$TMP/p.err"; fail "ember profile failed after the disk had room again"; }
grep '^ember: {' "$TMP/p.err"
grep -q '"state":"finished"' "$TMP/p.err" || fail "the task's end was not written as finished"
total=$(folded_total "$TMP/prof/oncpu.folded")
[ "$total" -ge 300 ] || fail "$total samples in the profile written after the disk full, ~400 expected"
ok "disk full at the task's end: $e write errors counted, the end written again once there was room ($total samples)"
stop_agent || fail "agent exited with an error"
