/* The REST API's tprofiling feature at work: see rest_threads.h. */
#include "analyzer/rest/rest_threads.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/rest/rest_select.h"
#include "common/task_submit.h"
#include "common/thread_probes.h"
#include "common/timeutil.h"

#define TASK_MS (3600ull * 1000)	/* a task's life; renewed before its end */
#define RENEW_MS 5000			/* over the scan interval: a renewal is never missed between scans */

struct entry {
	uint32_t pid;
	uint64_t ends_mono;
	char id[64];			/* "": no task (not started yet, or refused: retried at each scan) */
};

struct rest_threads {
	struct rest_threads_opts o;
	void *zctx;
	struct rest_doc d;
	bool have;
	uint32_t *sel;			/* selected at the last scan, sorted */
	unsigned nsel;
	struct entry *e;		/* followed processes */
	unsigned ne;
	uint64_t next_scan;
	uint64_t started;		/* tasks submitted: in their ids, which a renewal within a ms must not repeat */
	struct rest_threads_stats st;
};

uint32_t rest_threads__probes(const struct rest_doc *d)
{
	uint32_t bits = 0;

	/* the bits come from the names, through the one table the CLI reads too */
	for (unsigned i = 0; i < REST_PROBE_MAX && rest_doc__probe_name(REST_TPROFILING, i); i++) {
		int known;

		if (d->probes[i])
			bits |= thread_probes__bit(rest_doc__probe_name(REST_TPROFILING, i), &known);
	}
	return bits;
}

struct rest_threads *rest_threads__new(const struct rest_threads_opts *o, void *zctx)
{
	struct rest_threads *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->o = *o;
	if (!t->o.scan_ms)
		t->o.scan_ms = 2000;
	if (!t->o.max_pids)
		t->o.max_pids = 1024;
	t->zctx = zctx;
	t->sel = calloc(t->o.max_pids, sizeof(*t->sel));
	t->e = calloc(t->o.max_pids, sizeof(*t->e));
	if (!t->sel || !t->e) {
		rest_threads__free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

struct rest_threads *rest_threads__free(struct rest_threads *t)
{
	if (!t)
		return NULL;
	free(t->sel);
	free(t->e);
	free(t);
	return NULL;
}

static struct task_submit_opts submit_opts(const struct rest_threads *t)
{
	return (struct task_submit_opts){ .run_dir = t->o.run_dir, .analyzers = t->o.analyzers,
					  .call_timeout_ms = 5000 };
}

static int do_submit(struct rest_threads *t, const Ember__Task *task, char *err, size_t errlen)
{
	struct task_submit_opts so = submit_opts(t);

	if (t->o.submit)
		return t->o.submit(t->o.ctx, task, err, errlen);
	return task_submit__all(t->zctx, &so, task, err, errlen);
}

static void cancel(struct rest_threads *t, struct entry *e)
{
	struct task_submit_opts so = submit_opts(t);
	char err[256];
	int r;

	if (!e->id[0])
		return;
	/* a task whose process exited has ended already: its analyzer answers ENOENT, which cancel takes as done */
	r = t->o.cancel ? t->o.cancel(t->o.ctx, e->id, err, sizeof(err))
			: task_submit__cancel(t->zctx, &so, e->id, err, sizeof(err));
	if (!r)
		t->st.tasks_cancelled++;
	e->id[0] = 0;
}

static void cancel_all(struct rest_threads *t)
{
	for (unsigned k = 0; k < t->ne; k++)
		cancel(t, &t->e[k]);
	t->ne = 0;
	t->st.followed = 0;
}

static bool running(const struct rest_threads *t)
{
	return t->have && t->d.running && rest_threads__probes(&t->d);
}

void rest_threads__set(struct rest_threads *t, const struct rest_doc *d)
{
	/* the tasks hold the sub-items and the threshold: only a change of those (or a stop) needs new ones */
	bool keep = running(t) && d->running && rest_threads__probes(d) == rest_threads__probes(&t->d) &&
		    d->stack_threshold_ms == t->d.stack_threshold_ms;

	if (!keep)
		cancel_all(t);
	t->d = *d;
	t->have = true;
	t->nsel = 0;
	t->next_scan = 0; /* the new selection at the next tick */
}

static void start(struct rest_threads *t, struct entry *e, uint64_t now_ms)
{
	Ember__Task task = EMBER__TASK__INIT;
	char err[256];
	int r;

	/* the output directory is named by the id: the time keeps it apart from an earlier run's */
	snprintf(e->id, sizeof(e->id), "rest-threads-%u-%llu-%llu", e->pid, (unsigned long long)timeutil__unix_ms(),
		 (unsigned long long)++t->started);
	task.id = e->id;
	task.kind = EMBER__TASK_KIND__THREADS;
	task.n_pids = 1;
	task.pids = &e->pid;
	task.duration_ms = TASK_MS;
	task.thread_probes = rest_threads__probes(&t->d);
	/* 0 is "the agent's threshold"; a threshold of 0 (every call's stack) is asked as the smallest non-zero one */
	if (t->d.stack_threshold_ms >= 0)
		task.stack_min_ns = t->d.stack_threshold_ms ? (uint64_t)t->d.stack_threshold_ms * 1000000 : 1;
	task.origin = "rest";
	r = do_submit(t, &task, err, sizeof(err));
	if (r < 0) {
		t->st.task_failures++;
		snprintf(t->st.last_error, sizeof(t->st.last_error), "pid %u: %s", e->pid, err);
		e->id[0] = 0;
		e->ends_mono = 0;
		return;
	}
	t->st.tasks_started++;
	e->ends_mono = now_ms + TASK_MS;
}

void rest_threads__tick(struct rest_threads *t, uint64_t now_ms)
{
	unsigned k = 0;

	if (!running(t) || now_ms < t->next_scan)
		return;
	t->next_scan = now_ms + t->o.scan_ms;
	t->st.scans++;
	t->nsel = rest_select__scan(&t->d, t->o.proc_root, t->o.self_uid, t->sel, t->o.max_pids, &t->st.over_limit);
	/* processes no longer selected (or gone): their task is cancelled */
	while (k < t->ne) {
		if (rest_select__has(t->sel, t->nsel, t->e[k].pid)) {
			k++;
			continue;
		}
		cancel(t, &t->e[k]);
		t->e[k] = t->e[--t->ne];
	}
	/* newly selected processes, refused ones again, and tasks near their end renewed */
	for (unsigned s = 0; s < t->nsel; s++) {
		struct entry *e = NULL;

		for (unsigned j = 0; j < t->ne && !e; j++)
			if (t->e[j].pid == t->sel[s])
				e = &t->e[j];
		if (!e) {
			if (t->ne == t->o.max_pids)
				continue;
			e = &t->e[t->ne++];
			memset(e, 0, sizeof(*e));
			e->pid = t->sel[s];
		}
		if (!e->id[0] || now_ms + RENEW_MS >= e->ends_mono) {
			/* a renewal: one thread task per process, so the old one ends first */
			cancel(t, e);
			start(t, e, now_ms);
		}
	}
	t->st.followed = 0;
	for (unsigned j = 0; j < t->ne; j++)
		t->st.followed += t->e[j].id[0] != 0;
}

void rest_threads__stats(const struct rest_threads *t, struct rest_threads_stats *ret)
{
	*ret = t->st;
}
