#!/usr/bin/env bash
# Thread profiling (gala-gopher's tprofiling) to Kafka, against librdkafka's
# mock cluster (tests/progs/kafka_mock): an agent with the file and kafka
# backends profiles the threads of tests/progs/thread_lab's lock contention.
# Every message of the event topic is JSON; each thread's is gala-gopher's
# shape (Resource: host.id, host.name, thread.*, proc.name, container.*;
# Attributes.values: the events) with the host the task's own events name;
# CompeteThd1 computes, CompeteThd2 waits on the futex and writes to the
# connection tcp-server reads, naming it; and the messages are threads.json's
# lines: the same events per thread, nothing lost or added (the counters say
# so too).  Checks: tests/integration/threads_kafka_checks.py.
. "$(dirname "$0")/lib.sh"
need_bpf
PY=/usr/bin/python3
MSGS=$TMP/kafka.tsv; : > "$MSGS"
"$PROGS/kafka_mock" "$MSGS" t_metric t_event t_meta > "$TMP/mock.out" 2>"$TMP/mock.err" & MOCK=$!; CLEANUP_PIDS+=("$MOCK")
for _ in $(seq 100); do grep -q '^bootstrap ' "$TMP/mock.out" && break; sleep 0.1; done
BOOT=$(awk '$1 == "bootstrap" {print $2}' "$TMP/mock.out")
[ -n "$BOOT" ] || { cat "$TMP/mock.err"; fail "the mock cluster did not start"; }
AGENT_BACKENDS="file, kafka"
AGENT_EXPORTER_YAML="  kafka: { broker: '$BOOT', metric_topic: t_metric, event_topic: t_event, meta_topic: t_meta,
           queue_buffering_max_ms: 10ms, message_timeout: 2m }"
start_agent

EMBER_TEST_GO=$TMP/go "$PROGS/thread_lab" contention 20 100 > "$TMP/ct.out" & W=$!; CLEANUP_PIDS+=("$W")
profile_gated --config "$TMP/ember.yaml" --pid "$W" --type threads --duration 4s --out "$TMP/ct"
wait "$W" || fail "the contention workload failed"
[ -s "$TMP/ct/threads.json" ] || fail "no threads.json in $TMP/ct"
# The file backend wrote its lines before `ember profile` returned; Kafka's come within
# queue_buffering_max_ms, and the task's end (an event of its own) after the last of them.
lines=$(wc -l < "$TMP/ct/threads.json")
for _ in $(seq 100); do
  n=$(grep -c '"thread.pid"' "$MSGS")
  [ "$n" -ge "$lines" ] && grep -q 'profile of 1 process(es) finished' "$MSGS" && break
  sleep 0.2
done
sleep 1 # a message too many would come now
"$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats" 2>&1 || { cat "$TMP/stats"; fail "ember stats failed"; }
$PY "$ROOT/tests/integration/threads_kafka_checks.py" "$MSGS" t_event "$TMP/ct" "$TMP/ct.out" "$W" "$TMP/stats" \
  || fail "the Kafka thread messages: see above"
ok "every thread's events of the task are one Kafka message each in gala-gopher's shape, equal to threads.json's"
stop_agent || fail "agent exited with an error"
