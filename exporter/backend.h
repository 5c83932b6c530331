/*
 * Exporter backends are plugins: a table of function pointers registered by
 * name (exporter/backends.c).  Adding one touches its own file and one line
 * in the registry.  Every callback gets the backend's own state; messages are
 * borrowed for the duration of the call.  A backend never blocks the
 * exporter's loop: it buffers (bounded, counting drops) and sends from tick().
 */
#ifndef EMBER_EXPORTER_BACKEND_H
#define EMBER_EXPORTER_BACKEND_H

#include <stdint.h>
#include "common/config.h"
#include "proto/ember.pb-c.h"

/* level: a value that goes up and down (a queue's length), shown as a gauge; otherwise a count. */
struct backend_counter { const char *name; uint64_t value; int level; };
/* What counters() may fill: each backend's table of counters fits it (checked where it is). */
#define MAX_BACKEND_COUNTERS 48

struct exporter_backend_ops {
	const char *name;
	/* NULL + errno on failure; err gets a message naming what is wrong. */
	void *(*init)(const struct ember_config *cfg, char *err, size_t errlen);
	void (*on_profile)(void *st, const Ember__ProfileBatch *b);
	void (*on_task_event)(void *st, const Ember__TaskEvent *ev);
	void (*on_meters)(void *st, const Ember__MeterBatch *m, uint32_t analyzer);
	/* Optional: a NETWORK task's batch of one report interval.  A task on
	 * several analyzers sends one batch per analyzer and interval, each with
	 * the flows of its own processes: they add up.  The task's end comes
	 * joined through on_task_event, after every analyzer's last batch. */
	void (*on_network)(void *st, const Ember__NetworkBatch *b);
	/* Optional: a THREADS task's events of one window (one batch per analyzer and
	 * window; `last` on each analyzer's final one, before the task's end). */
	void (*on_threads)(void *st, const Ember__ThreadBatch *b);
	/* Optional: an OAP continuous-profiling policy held (the backend that polls the
	 * policies reports it and starts the task) and the monitors' values per check. */
	void (*on_trigger)(void *st, const Ember__TriggerRequest *t, uint32_t analyzer);
	void (*on_monitors)(void *st, const Ember__MonitorBatch *m, uint32_t analyzer);
	/* Called every 250 ms (on a fixed grid), at shutdown (final = 1: flush
	 * everything), and whenever event_fd is readable. */
	void (*tick)(void *st, uint64_t now_ms, int final);
	/* Optional: an fd that turns readable when the backend has work before
	 * the next tick (an answer from the network); the exporter then ticks
	 * it at once.  NULL or -1 = none. */
	int (*event_fd)(void *st);
	/* Fills up to max counters (drops, errors...), returns how many. */
	unsigned (*counters)(void *st, struct backend_counter *ret, unsigned max);
	void (*free)(void *st);
};

const struct exporter_backend_ops *exporter_backend__find(const char *name);

#endif
