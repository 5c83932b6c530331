/*
 * A thread-profiling task's timeline: what every thread did, as one
 * self-contained HTML file (inline SVG and script, no network, no server):
 * one lane per thread (grouped by process, named "comm (tid)"), each event a
 * bar from its start to its end coloured by its type (oncpu, file, net,
 * lock, sched), hover for its attributes and stack, zoom and pan in time, and
 * a summary of the time each thread spent per type (the manual's pie chart).
 *
 * Events are aggregates (gala-gopher's tprofiling): the calls of one name
 * by one thread within one second, start of the first to end of the last,
 * `count` calls whose durations sum to `duration_ns`.  An `ongoing` event is
 * a call still in progress when the task ended: it runs to the end.
 *
 * Library module: never logs; int functions return 0 or -errno.  Not
 * thread-safe.  Memory is bounded by max_events (and their strings by
 * max_events * 512 bytes of arena): past it an event is counted in
 * stats.dropped and said in the file, never silently left out.  Every string
 * is HTML/JSON-escaped on the way out, whatever bytes it holds.
 *
 * The page: the events are one JSON island (<script type="application/json"
 * id="tl-data">: a string table, threads as [tgid, tid, comm, proc], events
 * as [thread, name, type, start, end, duration, count, stack, file, sock,
 * futex, ongoing] with string ids and ns from "t0") drawn by the page's own
 * script; the header (title, range, counts, drops) is plain HTML.  A lane is
 * named after the last non-empty comm its thread reported; a process after
 * its leader's proc.name.  The tooltip lists the attributes an event has.
 * Where events of one type touch within a pixel and are under 3 px, they
 * share a bar (the tooltip says how many); zooming in splits them.  Times
 * on the page are exact to the ns for a range under 2^53 ns (104 days).
 */
#ifndef EMBER_EXPORTER_THREAD_TIMELINE_H
#define EMBER_EXPORTER_THREAD_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define THREAD_TIMELINE_DEFAULT_MAX_EVENTS 200000u

/* One aggregated event; strings are borrowed for the call (NULL or "" = absent). */
struct tl_event {
	uint32_t tid, tgid;
	const char *thread_comm;   /* thread.comm */
	const char *proc_name;     /* proc.name */
	const char *name;          /* event.name: "read", "futex", "oncpu", ... */
	const char *type;          /* event.type: "oncpu", "file", "net", "lock", "sched" */
	uint64_t start_ns, end_ns; /* unix ns */
	uint64_t duration_ns;      /* summed over the calls (<= end - start) */
	uint64_t count;
	const char *stack;         /* func.stack: frames root first, ';'-separated */
	const char *file_path;     /* file.path */
	const char *sock_conn;     /* sock.conn */
	const char *futex_op;      /* futex.op: "wait", "wake", ... */
	bool ongoing;
};

struct thread_timeline_stats {
	uint64_t events;    /* kept */
	uint64_t dropped;   /* past max_events or out of memory */
	uint64_t invalid;   /* refused with -EINVAL (end < start): the caller's bug, not a drop */
	uint64_t threads;   /* distinct (tgid, tid) among the kept events */
	uint64_t arena_bytes; /* string bytes held (distinct strings are stored once) */
};

struct thread_timeline;

/* max_events: 0 = THREAD_TIMELINE_DEFAULT_MAX_EVENTS.  NULL + errno (ENOMEM). */
struct thread_timeline *thread_timeline__new(size_t max_events);
/* Accepts NULL; returns NULL. */
struct thread_timeline *thread_timeline__free(struct thread_timeline *tl);

/*
 * Copies e.  -ENOSPC (counted in stats.dropped) past max_events or past the
 * string arena, -ENOMEM (counted too) when an allocation fails, -EINVAL for
 * end < start (counted in stats.invalid) or a NULL argument.
 */
int thread_timeline__add(struct thread_timeline *tl, const struct tl_event *e);

/*
 * Writes the HTML document; title is escaped (NULL or "" = a default).
 * -EIO on a write error (out is flushed), -ENOMEM, -EINVAL for NULL tl/out.
 * Needs 4 bytes per event of temporary memory to sort.
 */
int thread_timeline__write_html(const struct thread_timeline *tl, const char *title, FILE *out);

void thread_timeline__stats(const struct thread_timeline *tl, struct thread_timeline_stats *ret);

#endif
