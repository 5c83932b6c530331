/*
 * The analyzer's side of the bus to the exporter: one ZeroMQ PUSH socket,
 * envelopes numbered per analyzer, never blocking.  A full queue (the
 * exporter is slow or restarting past the high-water mark) drops the
 * message and counts it; nothing else can fail silently.
 */
#ifndef EMBER_ANALYZER_PUBLISHER_H
#define EMBER_ANALYZER_PUBLISHER_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/tasks.h"
#include "common/counters.h"
#include "proto/ember.pb-c.h"

struct publisher;

enum publisher_stat {
	PUBS_HWM_DROPS,      /* dropped at the high-water mark */
	PUBS_SEND_ERRORS,    /* any other send failure */
	PUBS_MAX
};
/* Their names and natures (common/counters.h), by enum publisher_stat. */
extern const struct counter_def publisher_counters[PUBS_MAX];

/*
 * Connects to the exporter's endpoint with send high-water mark hwm; shard is
 * stamped on every envelope.  NULL + errno.
 */
struct publisher *publisher__new(void *zctx, const char *endpoint, int hwm, unsigned shard);

/* One flush window of a task: samples[0, n) (borrowed). */
void publisher__profile(struct publisher *p, const struct task_def *t, uint64_t window_start_ns,
			uint64_t window_end_ns, Ember__StackSample **samples, size_t n);
/* error: NULL or a message for FAILED. */
void publisher__task_event(struct publisher *p, const struct task_def *t, Ember__TaskEvent__State state,
			   const char *error);
/* A network task's report: b's task is set here; the rest is borrowed. */
void publisher__network(struct publisher *p, const struct task_def *t, Ember__NetworkBatch *b);
void publisher__meters(struct publisher *p, Ember__Meter **meters, size_t n);
/* The same, with series the exporter forgets first (borrowed). */
void publisher__meters_drops(struct publisher *p, Ember__Meter **meters, size_t n, Ember__SeriesDrop **drops,
			     size_t n_drops);
/* A thread task's window of events: b's task is set here; the rest is borrowed. */
void publisher__threads(struct publisher *p, const struct task_def *t, Ember__ThreadBatch *b);
/* An OAP policy's item held for t's process: the exporter reports it and submits t under the OAP's id. */
void publisher__trigger(struct publisher *p, const struct task_def *t, const char *service);
void publisher__monitors(struct publisher *p, Ember__MonitorBatch *b);

void publisher__stats(const struct publisher *p, uint64_t ret[PUBS_MAX]);

/* Closes the socket (what is queued gets up to 3 s to leave).  Accepts NULL.  Returns NULL. */
struct publisher *publisher__free(struct publisher *p);

#endif
