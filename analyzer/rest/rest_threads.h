/*
 * The REST API's tprofiling feature at work (gala-gopher's thread
 * profiling): one THREADS task per process its snoopers select
 * (rest_select.h), recording the sub-items cmd.probe names (oncpu,
 * syscall_file, syscall_net, syscall_lock, syscall_sched: their THREAD_P_*
 * bits, common/thread_probes.h), with params.stack_threshold as the task's
 * stack threshold when set (else the agent's
 * profiling.task.threads.stack_threshold).  Tasks carry origin "rest" and
 * go to the analyzer that owns their process (common/task_submit.h); their
 * events reach the configured backends as any thread task's do (the file
 * backend's <output_dir>/<task id>/threads.json).
 *
 * Selection runs again every scan interval: a process that starts later
 * gets its task, one that exits or is no longer selected loses it, and one
 * whose task failed (another thread task already follows it) is retried.
 * Tasks last an hour and are renewed before their end (a new task id).  A
 * new configuration that keeps the sub-items and the threshold keeps the
 * tasks of the processes it still selects; one that changes them, or
 * stops the feature, cancels every task.  Runs on the REST thread; not
 * thread-safe.
 */
#ifndef EMBER_ANALYZER_REST_REST_THREADS_H
#define EMBER_ANALYZER_REST_REST_THREADS_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/rest/rest_doc.h"
#include "proto/ember.pb-c.h"

struct rest_threads_opts {
	const char *run_dir;		/* the agent's, for its analyzers' endpoints */
	unsigned analyzers;
	const char *proc_root;		/* NULL: "/proc" */
	uint64_t scan_ms;		/* 0: 2000 */
	unsigned max_pids;		/* 0: 1024 */
	uint32_t self_uid;		/* never: processes of ember's own user (0: none excluded) */
	/*
	 * Where tasks go: NULL, the agent's analyzers (task_submit__all and
	 * task_submit__cancel, ctx unused); a unit test's recorder otherwise.
	 * submit: >= 0 or -errno with why in err; cancel: 0 or -errno.
	 */
	int (*submit)(void *ctx, const Ember__Task *t, char *err, size_t errlen);
	int (*cancel)(void *ctx, const char *id, char *err, size_t errlen);
	void *ctx;
};

struct rest_threads_stats {
	uint64_t tasks_started, task_failures, tasks_cancelled, followed, over_limit, scans;
	char last_error[512];
};

struct rest_threads;

/* NULL + errno.  zctx: a ZeroMQ context of the calling thread's process. */
struct rest_threads *rest_threads__new(const struct rest_threads_opts *o, void *zctx);
/* Its tasks end by themselves within the hour.  Accepts NULL; returns NULL. */
struct rest_threads *rest_threads__free(struct rest_threads *t);
/* The feature's whole new configuration (a taken PUT); its tasks change at the next tick. */
void rest_threads__set(struct rest_threads *t, const struct rest_doc *d);
/* Scans, starts, renews and cancels tasks when due (monotonic ms). */
void rest_threads__tick(struct rest_threads *t, uint64_t now_ms);
void rest_threads__stats(const struct rest_threads *t, struct rest_threads_stats *ret);
/* The THREAD_P_* bits of d's sub-items. */
uint32_t rest_threads__probes(const struct rest_doc *d);

#endif
