/*
 * A thread task's events as gala-gopher's tprofiling writes them (its
 * manual's shape, which the Kafka consumers of its front end read): one JSON
 * object per thread and window,
 *
 *   {"Timestamp": <report time, unix ms>, "SeverityText": "INFO", "SeverityNumber": 9, "Body": "",
 *    "Resource": {"host.id", "host.name", "thread.pid", "thread.tgid", "thread.comm", "proc.name",
 *                 "container.id", "container.name"},
 *    "Attributes": {"values": [{"event.name", "event.type", "start_time" (unix ms), "end_time" (unix ms),
 *                               "duration" (ms, summed over the calls), "count", and as the event has
 *                               them "func.stack" ("root;...;leaf;"), "file.path", "sock.conn",
 *                               "futex.op", "ongoing": true}, ...]}}
 *
 * written for the file backend (threads.json, one object per line) and the
 * Kafka backend (one message each).  Every string is escaped by json-c
 * whatever bytes it holds.  Library module: never logs.
 */
#ifndef EMBER_EXPORTER_THREAD_EVENTS_H
#define EMBER_EXPORTER_THREAD_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "proto/ember.pb-c.h"

struct thread_host {
	char id[64];      /* host.id: the machine id of gala-gopher's metric records (gala_tables__machine_id) */
	char name[256];   /* host.name */
};

/* This host's id and name ("unknown" when it has none). */
void thread_events__host(struct thread_host *ret);

/* Called with each thread's object (NUL-terminated, len bytes, no newline): 0 to go on, or -errno to stop. */
typedef int (*thread_events_fn)(void *ctx, const char *json, size_t len);

/* b's events, grouped by thread in the order they first appear, each group to fn.  0, -ENOMEM or fn's. */
int thread_events__each(const Ember__ThreadBatch *b, const struct thread_host *h, uint64_t now_ms,
			thread_events_fn fn, void *ctx);

#endif
