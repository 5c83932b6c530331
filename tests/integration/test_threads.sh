#!/usr/bin/env bash
# Thread profiling (gala-gopher's tprofiling) against tests/progs/thread_lab,
# whose own clocks give the expectations (tests/integration/threads_checks.py):
#   1. a deadlock: LockThd1 and LockThd2 write and fsync a file, sleep, then
#      wait for each other's mutex for good: each thread's last event is a
#      futex wait in progress at the end, under pthread_mutex_lock, with the
#      file's path on its writes; the timeline's lanes end in lock bars;
#   1b. the same deadlock, already there when the task starts: the calls the
#      threads are in are timed from the task's start (no stack: no program
#      ran in them);
#   2. lock contention: CompeteThd1 computes holding a mutex, CompeteThd2
#      waits for it then writes to a TCP connection tcp-server reads: its
#      futex waits add up to what it measured itself, its writes name the
#      connection, the computing thread's on-CPU time is the work it did.
# Conservation: the calls and on-CPU periods the kernel counted for the task
# are the events' counts, nothing lost.
. "$(dirname "$0")/lib.sh"
need_bpf
start_agent
# Below Linux 5.17 the thread program cannot load: the collector says so, and a task is refused saying why.
if grep -q "thread profiling is off" "$TMP/agent.log"; then
  # Only a kernel that lacks what the program needs may refuse: elsewhere it is a failure to load.
  IFS=. read -r kmaj kmin _ <<<"$(uname -r)"
  [ "$kmaj" -lt 5 ] || { [ "$kmaj" = 5 ] && [ "${kmin%%[!0-9]*}" -lt 17 ]; } ||
    { grep -i "thread" "$TMP/agent.log" | head -5; fail "the thread program did not load on $(uname -r), which has what it needs"; }
  "$PROGS/thread_lab" contention 3 10 > /dev/null & W=$!; CLEANUP_PIDS+=("$W")
  "$EMBER" profile --config "$TMP/ember.yaml" --pid "$W" --type threads --duration 2s --out "$TMP/no" > "$TMP/no.out" 2>&1 \
    && fail "a thread task was taken on a kernel without thread profiling"
  grep -q "thread profiling is not available on this host: its BPF program needs Linux 5.17+" "$TMP/no.out" \
    || { cat "$TMP/no.out"; fail "the refusal does not say why"; }
  ok "thread profiling refused on $(uname -r), saying why: $(grep -o 'thread profiling is not available[^;]*' "$TMP/no.out")"
  exit 0
fi
stats() { "$EMBER" stats --config "$TMP/ember.yaml" > "$1" 2>&1 || { cat "$1"; fail "ember stats failed"; }; }

# 1. deadlock
stats "$TMP/s0"
EMBER_TEST_GO=$TMP/go "$PROGS/thread_lab" deadlock "$TMP/data.bin" 1500 > "$TMP/dl.out" & W=$!; CLEANUP_PIDS+=("$W")
profile_gated --config "$TMP/ember.yaml" --pid "$W" --type threads --duration 5s --out "$TMP/dl"
stats "$TMP/s1"
kill "$W" 2>/dev/null
python3 "$ROOT/tests/integration/threads_checks.py" deadlock "$TMP/dl" "$TMP/dl.out" "$TMP/data.bin" "$TMP/s0" "$TMP/s1" \
  || fail "deadlock: see above"
ok "deadlock: both threads end in a futex wait under pthread_mutex_lock; writes and fsyncs name the file"

# 1b. deadlocked before the task began: the waits are timed from the task's start
"$PROGS/thread_lab" deadlock "$TMP/data2.bin" 100 > "$TMP/db.out" & W=$!; CLEANUP_PIDS+=("$W")
for _ in $(seq 100); do [ -s "$TMP/db.out" ] && break; sleep 0.05; done
[ -s "$TMP/db.out" ] || fail "thread_lab did not deadlock"
stats "$TMP/s0b"
"$EMBER" profile --config "$TMP/ember.yaml" --pid "$W" --type threads --duration 2s --out "$TMP/db" > "$TMP/db.err" 2>&1 \
  || { cat "$TMP/db.err"; fail "ember profile failed"; }
stats "$TMP/s1b"
kill "$W" 2>/dev/null
python3 "$ROOT/tests/integration/threads_checks.py" before "$TMP/db" "$TMP/db.out" - "$TMP/s0b" "$TMP/s1b" \
  || fail "deadlocked before the task: see above"
ok "deadlocked before the task: both lock waits and the join are in progress from the task's start to its end"

# 2. contention
stats "$TMP/s2"
EMBER_TEST_GO=$TMP/go "$PROGS/thread_lab" contention 12 100 > "$TMP/ct.out" & W=$!; CLEANUP_PIDS+=("$W")
profile_gated --config "$TMP/ember.yaml" --pid "$W" --type threads --duration 5s --out "$TMP/ct"
wait "$W" || fail "the contention workload failed"
stats "$TMP/s3"
python3 "$ROOT/tests/integration/threads_checks.py" contention "$TMP/ct" "$TMP/ct.out" - "$TMP/s2" "$TMP/s3" \
  || fail "contention: see above"
ok "contention: futex waits, network writes and on-CPU time match the program's own clocks"
stop_agent || fail "agent exited with an error"
