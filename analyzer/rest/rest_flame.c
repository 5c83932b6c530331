/* The REST API's flamegraph feature at work: see rest_flame.h. */
#include "analyzer/rest/rest_flame.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/rest/rest_select.h"
#include "common/fileutil.h"
#include "common/profile_kind.h"
#include "common/task_submit.h"
#include "common/timeutil.h"
#include "proto/ember.pb-c.h"

#define MAX_TASK_IDS 512	/* tasks of the current periods, for cancelling */
#define FLAME_TYPES 3		/* oncpu, offcpu, mem: the rest_probe sub-items that are kinds */

struct period {
	uint64_t start_unix_ms, end_mono_ms;	/* end 0: none yet */
	uint32_t *covered;			/* pids with a task in this period, sorted */
	unsigned ncovered;
	uint32_t parts;
};

struct rest_flame {
	struct rest_flame_opts o;
	void *zctx;
	struct rest_doc d;
	bool have;
	uint32_t *sel;				/* selected now, sorted */
	unsigned nsel;
	uint32_t *fresh;			/* selected, without a task in the period yet */
	uint64_t next_scan;
	struct period per[FLAME_TYPES];
	const struct profile_kind *kind[FLAME_TYPES];	/* the row of each sub-item's name */
	char ids[MAX_TASK_IDS][64];		/* the latest started (a ring): cancelled by a new configuration */
	unsigned nids;				/* started since the configuration, ids[nids % MAX_TASK_IDS] next */
	struct rest_flame_stats st;
};

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static bool has(const uint32_t *v, unsigned n, uint32_t x)
{
	return n && bsearch(&x, v, n, sizeof(*v), cmp_u32);
}

struct rest_flame *rest_flame__new(const struct rest_flame_opts *o, void *zctx)
{
	struct rest_flame *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->o = *o;
	if (!f->o.proc_root)
		f->o.proc_root = "/proc";
	if (!f->o.scan_ms)
		f->o.scan_ms = 2000;
	if (!f->o.max_pids)
		f->o.max_pids = 1024;
	f->zctx = zctx;
	for (unsigned p = 0; p < FLAME_TYPES; p++)
		if (!(f->kind[p] = profile_kind__by_rest(rest_doc__probe_name(REST_FLAMEGRAPH, p)))) {
			free(f);
			errno = EINVAL;
			return NULL;
		}
	f->sel = calloc(f->o.max_pids, sizeof(*f->sel));
	f->fresh = calloc(f->o.max_pids, sizeof(*f->fresh));
	for (unsigned p = 0; p < FLAME_TYPES && f->sel; p++)
		if (!(f->per[p].covered = calloc(f->o.max_pids, sizeof(uint32_t))))
			return rest_flame__free(f);
	if (!f->sel || !f->fresh)
		return rest_flame__free(f);
	return f;
}

static struct task_submit_opts submit_opts(const struct rest_flame *f)
{
	return (struct task_submit_opts){ .run_dir = f->o.run_dir, .analyzers = f->o.analyzers, .call_timeout_ms = 5000 };
}

/* Every task of the current periods is cancelled (those already over answer ENOENT). */
static void cancel_all(struct rest_flame *f)
{
	struct task_submit_opts so = submit_opts(f);
	char err[256];

	for (unsigned i = 0; i < f->nids && i < MAX_TASK_IDS; i++)
		if (!task_submit__cancel(f->zctx, &so, f->ids[i], err, sizeof(err)))
			f->st.tasks_cancelled++;
	f->nids = 0;
	for (unsigned p = 0; p < FLAME_TYPES; p++) {
		f->per[p].end_mono_ms = 0;
		f->per[p].ncovered = 0;
		f->per[p].parts = 0;
	}
}

struct rest_flame *rest_flame__free(struct rest_flame *f)
{
	if (!f)
		return NULL;
	for (unsigned p = 0; p < FLAME_TYPES; p++)
		free(f->per[p].covered);
	free(f->sel);
	free(f->fresh);
	free(f);
	return NULL;
}

void rest_flame__set(struct rest_flame *f, const struct rest_doc *d)
{
	cancel_all(f);
	f->d = *d;
	f->have = true;
	f->nsel = 0;
	f->st.selected = 0;
	f->next_scan = 0; /* at the next tick */
}

static void scan(struct rest_flame *f)
{
	f->st.scans++;
	f->nsel = rest_select__scan(&f->d, f->o.proc_root, f->o.self_uid, f->sel, f->o.max_pids, &f->st.over_limit);
	f->st.selected = f->nsel;
}

/* One task of sub-item p over pids for dur_ms, in the current period (its part-th). */
static void start_task(struct rest_flame *f, unsigned p, const uint32_t *pids, unsigned n, uint64_t dur_ms)
{
	struct task_submit_opts so = submit_opts(f);
	Ember__Task t = EMBER__TASK__INIT;
	Ember__FlameOutput fo = EMBER__FLAME_OUTPUT__INIT;
	struct period *pe = &f->per[p];
	char id[64], err[256];
	int r;

	if (f->d.multi_instance)
		snprintf(id, sizeof(id), "rest-%s-%llu-%u", f->kind[p]->rest, (unsigned long long)pe->start_unix_ms, pids[0]);
	else
		snprintf(id, sizeof(id), "rest-%s-%llu-%u", f->kind[p]->rest, (unsigned long long)pe->start_unix_ms, pe->parts);
	fo.svg_dir = f->d.svg_dir;
	fo.flame_dir = f->d.flame_dir;
	fo.per_process = f->d.multi_instance;
	fo.period_start_unix_ms = pe->start_unix_ms;
	fo.part = f->d.multi_instance ? 0 : pe->parts;
	fo.pyroscope_server = f->d.pyroscope_server;
	/* gala-gopher's JFR method (multi_instance 1, native_stack 0): Java methods only. */
	fo.java_only = f->d.multi_instance && !f->d.native_stack;
	t.id = id;
	t.kind = (Ember__TaskKind)f->kind[p]->wire;
	t.n_pids = n;
	t.pids = (uint32_t *)pids;
	t.duration_ms = dur_ms;
	t.period_ns = (uint64_t)f->d.perf_sample_period_ms * 1000000;
	t.origin = "rest";
	t.flame = &fo;
	r = task_submit__all(f->zctx, &so, &t, err, sizeof(err));
	if (r < 0) {
		f->st.task_failures++;
		snprintf(f->st.last_error, sizeof(f->st.last_error), "%s task for %u process(es): %s", f->kind[p]->rest, n,
			 err);
		return;
	}
	f->st.tasks_started++;
	if (!f->d.multi_instance)
		pe->parts++;
	snprintf(f->ids[f->nids++ % MAX_TASK_IDS], sizeof(f->ids[0]), "%s", id);
	for (unsigned i = 0; i < n && pe->ncovered < f->o.max_pids; i++)
		pe->covered[pe->ncovered++] = pids[i];
	qsort(pe->covered, pe->ncovered, sizeof(uint32_t), cmp_u32);
}

void rest_flame__tick(struct rest_flame *f, uint64_t now_ms)
{
	bool any = false;

	if (!f->have || !f->d.running)
		return;
	for (unsigned p = 0; p < FLAME_TYPES; p++)
		any |= f->d.probes[p];
	if (!any)
		return;
	if (now_ms >= f->next_scan) {
		scan(f);
		f->next_scan = now_ms + f->o.scan_ms;
	}
	for (unsigned p = 0; p < FLAME_TYPES; p++) {
		struct period *pe = &f->per[p];
		unsigned nf = 0;
		uint64_t left;

		if (!f->d.probes[p])
			continue;
		if (!pe->end_mono_ms || now_ms >= pe->end_mono_ms) {
			/*
			 * The last period's tasks are at their end: ended now, so that the new ones
			 * never meet them on a process (one task per process and kind).
			 */
			if (pe->end_mono_ms) {
				struct task_submit_opts so = submit_opts(f);
				char prefix[64], err[256];
				int n = snprintf(prefix, sizeof(prefix), "rest-%s-%llu-", f->kind[p]->rest,
						 (unsigned long long)pe->start_unix_ms);

				for (unsigned i = 0; i < f->nids && i < MAX_TASK_IDS; i++)
					if (!strncmp(f->ids[i], prefix, (size_t)n))
						(void)task_submit__cancel(f->zctx, &so, f->ids[i], err, sizeof(err));
			}
			pe->start_unix_ms = timeutil__unix_ms();
			pe->end_mono_ms = now_ms + (uint64_t)f->d.svg_period_s * 1000;
			pe->ncovered = 0;
			pe->parts = 0;
		}
		left = pe->end_mono_ms - now_ms;
		if (left < 1000)
			continue; /* the next period takes them */
		for (unsigned i = 0; i < f->nsel; i++) {
			if (has(pe->covered, pe->ncovered, f->sel[i]))
				continue;
			if (f->d.multi_instance)
				start_task(f, p, &f->sel[i], 1, left);
			else
				f->fresh[nf++] = f->sel[i];
		}
		if (nf)
			start_task(f, p, f->fresh, nf, left);
	}
}

void rest_flame__stats(const struct rest_flame *f, struct rest_flame_stats *ret)
{
	*ret = f->st;
}

int rest_flame__check_dirs(const struct rest_doc *d, char *err, size_t errlen)
{
	const char *dirs[2] = { d->svg_dir, d->flame_dir };

	for (unsigned i = 0; i < 2; i++) {
		int r = fileutil__mkdirs(dirs[i], 0777);

		if (!r && access(dirs[i], W_OK))
			r = -errno;
		if (r) {
			snprintf(err, errlen, "params.%s '%s' cannot be created or written by ember: %s",
				 i ? "flame_dir" : "svg_dir", dirs[i], strerror(-r));
			return r;
		}
	}
	return 0;
}
