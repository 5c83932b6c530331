#include "analyzer/runner.h"

#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bpf/ember_abi.h"
#include "common/bus.h"
#include "common/cleanup.h"
#include "common/fileutil.h"
#include "common/log.h"
#include "common/profile_files.h"
#include "common/shard.h"
#include "common/timeutil.h"

#define STATE_MAX (1u << 20) /* any number of tasks of CTL_MAX_PIDS pids fits easily */

struct task_runner {
	struct runner_opts o;
	char state_dir[512], state_name[64];
	bool tls_unsupported_said;
	bool py_unsupported_said;
	bool jvm_refused_said;
	uint64_t st[RUNS_MAX];     /* RUNS_RUNNING: read from the task manager */
	int uw_hid, tls_hid, py_hid, jvm_hid; /* the unwinder's, the TLS, Python and JVM finders' handlers in o.maps, -1: none */
	uint64_t perf_maps_ms;     /* the last look at the user-stack tasks' perf maps */
};

const struct counter_def runner_counters[RUNS_MAX] = {
	[RUNS_STARTED] = { .name = "tasks_started" },
	[RUNS_FINISHED] = { .name = "tasks_finished" },
	[RUNS_RUNNING] = { .name = "tasks_running", .level = true },
};

/* A look of the unwinder: a failure leaves the process on frame pointers (counted). */
static void report_unwind(void *ctx, const struct mappings_look *l, int e, uint64_t elapsed_ns)
{
	(void)ctx;
	(void)elapsed_ns;
	if (e && e != -ENOSPC && e != -ESRCH && e != -ENOENT && e != -EPERM)
		log_debug("unwind tables of pid %u: %s", l->pid, strerror(-e));
}

/* A look of the TLS finder: a failure leaves the process's TLS connections at L4 (counted). */
static void report_tls(void *ctx, const struct mappings_look *l, int e, uint64_t elapsed_ns)
{
	struct task_runner *r = ctx;

	log_debug("TLS look at pid %u: %d in %llu us", l->pid, e, (unsigned long long)elapsed_ns / 1000);
	if (e == -EOPNOTSUPP) {
		/* Said once: the collector warned at its start, and every process is counted. */
		if (!r->tls_unsupported_said)
			log_warn("TLS plaintext is not captured on this kernel (no uprobe.multi links: Linux 6.6+): "
				 "TLS connections are profiled at L4 only (ember_tls_unsupported_processes)");
		r->tls_unsupported_said = true;
	} else if (e && e != -ESRCH && e != -ENOENT && e != -EPERM)
		log_warn("TLS probes for pid %u: %s", l->pid, strerror(-e));
}

static void report_python(void *ctx, const struct mappings_look *l, int e, uint64_t elapsed_ns)
{
	struct task_runner *r = ctx;

	(void)elapsed_ns;
	if (e == -EOPNOTSUPP && !r->py_unsupported_said) {
		log_warn("Python frames are not walked on this kernel (bpf_loop: Linux 5.17+): pid %u and other Python "
			 "processes show their interpreter's native frames (ember_python_unsupported_processes)", l->pid);
		r->py_unsupported_said = true;
	}
}

static void report_java(void *ctx, const struct mappings_look *l, int e, uint64_t elapsed_ns)
{
	struct task_runner *r = ctx;

	(void)elapsed_ns;
	if (e && e != -ESRCH && !r->jvm_refused_said) {
		log_warn("Java agent for pid %u: %s (ember_java_agent_refused; further refusals are only counted)", l->pid,
			 e == -EOPNOTSUPP ? "the collector has no agent to load (started without profiling.java.agent)"
					  : strerror(-e));
		r->jvm_refused_said = true;
	}
}

/* The process's unwind tables to the collector now, and again when its mappings change. */
static void unwind_pid(struct task_runner *r, uint32_t pid)
{
	if (r->uw_hid < 0)
		return;
	if (r->py_hid >= 0)
		(void)mappings__follow(r->o.maps, r->py_hid, pid, 0, MAPPINGS_F_TIMER);
	if (r->jvm_hid >= 0)
		(void)mappings__follow(r->o.maps, r->jvm_hid, pid, 0, MAPPINGS_F_TIMER);
	if (!mappings__follow(r->o.maps, r->uw_hid, pid, 0, MAPPINGS_F_TIMER))
		(void)mappings__look(r->o.maps, pid);
}

/*
 * The process's TLS libraries to the collector now (soon: within
 * MAPPINGS_LOOK_GAP_MS of the last look, for mapping events, which can come
 * in bursts); a task's own targets again every few seconds.
 */
static void tls_pid(struct task_runner *r, const struct task_def *t, uint32_t pid, bool soon)
{
	unsigned flags = 0;

	if (r->tls_hid < 0 || task_def__is_monitor(t))
		return;
	for (uint32_t i = 0; i < t->npids; i++)
		if (t->pids[i] == pid)
			flags = MAPPINGS_F_TIMER;   /* not its children: their fork, exec and mmap events only */
	if (mappings__follow(r->o.maps, r->tls_hid, pid, t->num_id, flags))
		return;
	if (soon)
		(void)mappings__look_soon(r->o.maps, pid, timeutil__unix_ms());
	else
		(void)mappings__look(r->o.maps, pid);
}

void runner__maps_changed(struct task_runner *r, uint64_t task_num_id, uint32_t pid, bool soon)
{
	for (unsigned i = 0; i < task_mgr__count(r->o.tm); i++) {
		const struct task_def *t = task_mgr__at(r->o.tm, i);

		if (t->num_id == task_num_id && (analyzer_kinds__flags(r->o.kinds, t->kind) & ANALYZER_KIND_F_TLS))
			tls_pid(r, t, pid, soon);
	}
}

struct task_runner *runner__new(const struct runner_opts *o)
{
	struct task_runner *r = calloc(1, sizeof(*r));
	int e = 0;

	if (!r)
		return NULL;
	r->o = *o;
	r->uw_hid = r->tls_hid = r->py_hid = r->jvm_hid = -1;
	if (o->maps && o->uw) {
		struct mappings_handler h;

		unwinder__handler(o->uw, &h);
		h.report = report_unwind;
		h.report_ctx = r;
		r->uw_hid = e = mappings__add_handler(o->maps, &h);
	}
	if (e >= 0 && o->maps && o->uw && o->py) {
		struct mappings_handler h;

		py_finder__handler(o->py, &h);
		h.report = report_python;
		h.report_ctx = r;
		r->py_hid = e = mappings__add_handler(o->maps, &h);
	}
	if (e >= 0 && o->maps && o->uw && o->jvm) {
		struct mappings_handler h;

		jvm_finder__handler(o->jvm, &h);
		h.report = report_java;
		h.report_ctx = r;
		r->jvm_hid = e = mappings__add_handler(o->maps, &h);
	}
	if (e >= 0 && o->maps && o->tls) {
		struct mappings_handler h;

		tls_finder__handler(o->tls, &h);
		h.report = report_tls;
		h.report_ctx = r;
		r->tls_hid = e = mappings__add_handler(o->maps, &h);
	}
	if (e < 0) {
		free(r);
		errno = -e;
		return NULL;
	}
	snprintf(r->state_dir, sizeof(r->state_dir), "%s/" BUS_ANALYZER_DIR, o->run_dir);
	snprintf(r->state_name, sizeof(r->state_name), "analyzer-%u.tasks", o->shard);
	return r;
}

struct task_runner *runner__free(struct task_runner *r)
{
	free(r);
	return NULL;
}

void runner__stats(const struct task_runner *r, uint64_t ret[RUNS_MAX])
{
	memcpy(ret, r->st, sizeof(r->st));
	ret[RUNS_RUNNING] = task_mgr__count(r->o.tm);
}

/* ---- the state file: the running tasks, as a Reply message -------------------------- */

static int write_state(FILE *out, void *ctx)
{
	struct task_runner *r = ctx;
	unsigned n = task_mgr__count(r->o.tm);
	Ember__Reply rep = EMBER__REPLY__INIT;
	_cleanup_free_ struct task_pb *tasks = calloc(n ? n : 1, sizeof(*tasks));
	_cleanup_free_ Ember__Task **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len;

	if (!tasks || !ptrs)
		return -ENOMEM;
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++) {
		if (task_def__is_monitor(task_mgr__at(r->o.tm, i)))
			continue; /* the monitors ask for their capture again */
		task_def__to_pb(task_mgr__at(r->o.tm, i), &tasks[k]);
		ptrs[k] = &tasks[k].task;
		k++;
	}
	rep.n_tasks = k;
	rep.tasks = ptrs;
	len = ember__reply__get_packed_size(&rep);
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	ember__reply__pack(&rep, buf);
	return fwrite(buf, 1, len, out) == len ? 0 : -EIO;
}

static void save_state(struct task_runner *r)
{
	int err = fileutil__write_atomic(r->state_dir, r->state_name, write_state, r);

	if (err)
		log_warn("cannot save the running tasks to %s/%s: %s (a restart would not resume them)",
			 r->state_dir, r->state_name, strerror(-err));
}

void runner__restore(struct task_runner *r)
{
	char path[600], err[256];
	_cleanup_free_ uint8_t *buf = malloc(STATE_MAX);
	Ember__Reply *rep;
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", r->state_dir, r->state_name);
	f = fopen(path, "re");
	if (!f || !buf) {
		if (f)
			fclose(f);
		return;
	}
	len = fread(buf, 1, STATE_MAX, f);
	fclose(f);
	rep = ember__reply__unpack(NULL, len, buf);
	if (!rep) {
		log_warn("ignoring unreadable task state %s", path);
		return;
	}
	for (size_t i = 0; i < rep->n_tasks; i++) {
		struct task_def def;

		if (task_def__from_proto(rep->tasks[i], &def, err, sizeof(err)) || !def.id[0]) {
			log_warn("ignoring a task of %s: %s", path, def.id[0] ? err : "no id");
			continue;
		}
		if (timeutil__unix_ms() >= def.start_unix_ms + def.duration_ms)
			continue;
		if (runner__start(r, &def, err, sizeof(err)))
			log_warn("could not resume task %s: %s", def.id, err);
		else
			log_info("resumed task %s after restart", def.id);
	}
	ember__reply__free_unpacked(rep, NULL);
}

/* ---- start and end ------------------------------------------------------------------ */

/*
 * The collector's id of this shard's part of the task: stable across
 * analyzer restarts (the collector recognises a re-attach), and distinct per
 * shard, since a task spread over analyzers has one id.
 */
static uint64_t task_num(const char *id, unsigned shard)
{
	uint64_t h = 1469598103934665603ull;

	for (const char *c = id; *c; c++)
		h = (h ^ (uint8_t)*c) * 1099511628211ull;
	return (h ^ shard) * 1099511628211ull;
}

static int check_task(const struct task_runner *r, const struct task_def *def, char *err, size_t errlen)
{
	const struct analyzer_kind_ops *ops;
	void *impl;
	int e;

	for (uint32_t i = 0; i < def->npids; i++) {
		char path[32];
		struct stat st;

		snprintf(path, sizeof(path), "/proc/%u", def->pids[i]);
		if (stat(path, &st)) {
			snprintf(err, errlen, "pid %u does not exist", def->pids[i]);
			return -ESRCH;
		}
		if (shard__of(def->pids[i], r->o.nshards) != r->o.shard) {
			snprintf(err, errlen, "pid %u belongs to analyzer shard %u, not %u", def->pids[i],
				 shard__of(def->pids[i], r->o.nshards), r->o.shard);
			return -EINVAL;
		}
	}
	if (!analyzer_kinds__get(r->o.kinds, def->kind, &ops, &impl)) {
		snprintf(err, errlen, "task kind %u is not supported (on-CPU, off-CPU, memory and network are)", def->kind);
		return -EOPNOTSUPP;
	}
	if (ops->check && (e = ops->check(impl, def, err, errlen)))
		return e;
	if (def->min_block_ns > CTL_MIN_BLOCK_MAX_NS) {
		snprintf(err, errlen, "off-CPU minimum block time %llu ns is out of range (0 .. %llu s)",
			 (unsigned long long)def->min_block_ns, CTL_MIN_BLOCK_MAX_NS / 1000000000);
		return -ERANGE;
	}
	return 0;
}

static void attach_error(const struct analyzer_kind_ops *ops, void *impl, const struct task_def *t, int r, char *err,
			 size_t errlen)
{
	if (ops->refused && ops->refused(impl, t, r, err, errlen))
		return;
	if (r == -EPERM)
		snprintf(err, errlen, "the collector refused the task: its target policy excludes a process "
			 "(ember's own, a kernel thread, or outside ember.targets.users / ember.targets.cgroups)");
	else
		snprintf(err, errlen, "the collector refused the task: %s", strerror(-r));
}

int runner__start(struct task_runner *r, struct task_def *def, char *err, size_t errlen)
{
	const struct analyzer_kind_ops *ops;
	void *impl;
	struct ctl_attach_ans ans;
	uint32_t flags;
	int hold;
	struct task_def *t;
	int e;

	if ((e = check_task(r, def, err, errlen)))
		return e;
	(void)analyzer_kinds__get(r->o.kinds, def->kind, &ops, &impl); /* check_task found it */
	/* A monitor's capture gives way to another task of its kind on its process. */
	for (uint32_t i = 0; (ops->flags & ANALYZER_KIND_F_MONITOR_CAPTURE) && !task_def__is_monitor(def) &&
			     i < def->npids; i++) {
		struct task_def *o = task_mgr__find_pid(r->o.tm, def->pids[i], def->kind);

		if (o && task_def__is_monitor(o))
			runner__end(r, o, "a network task takes over");
	}
	def->num_id = task_num(def->id, r->o.shard);
	e = task_mgr__add(r->o.tm, def, &t);
	if (e == -EEXIST) {
		const struct task_def *o = NULL;
		uint32_t pid = 0;

		for (uint32_t i = 0; i < def->npids && !o; i++)
			o = task_mgr__find_pid(r->o.tm, pid = def->pids[i], def->kind);
		if (o)
			snprintf(err, errlen, "pid %u already has a task of this kind: %s (origin %s), until it ends",
				 pid, o->id, o->origin[0] ? o->origin : "unknown");
		else
			snprintf(err, errlen, "a task with this id already exists");
	}
	else if (e == -ENOSPC)
		snprintf(err, errlen, "too many tasks");
	else if (e)
		snprintf(err, errlen, "invalid task: %s", strerror(-e));
	if (e)
		return e;
	e = ops->open(impl, t);
	if (e) {
		snprintf(err, errlen, "too many tasks");
		task_mgr__remove(r->o.tm, def->id);
		return e;
	}
	/* A monitor's capture needs heads only: first lines and statuses, not bodies. */
	/* Stacks: held until the unwind tables are in, so that no sample walks without them. */
	hold = (ops->flags & ANALYZER_KIND_F_USER_STACKS) && r->uw_hid >= 0;
	flags = (task_def__is_monitor(t) ? CTL_ATTACH_F_PREFIX : hold ? CTL_ATTACH_F_HOLD : 0) |
		(ops->attach_flags ? ops->attach_flags(impl, t) : 0);
	e = ctl_client__attach(r->o.cc, t->num_id, t->kind, t->pids, t->npids, t->period_ns, t->min_block_ns, flags,
			       t->thread_probes, &ans);
	if (!e && hold) {
		for (uint32_t i = 0; i < t->npids; i++)
			unwind_pid(r, t->pids[i]);
		e = ctl_client__start(r->o.cc, t->num_id);
		if (e)
			(void)ctl_client__detach(r->o.cc, t->num_id);
	}
	if (e) {
		attach_error(ops, impl, t, e, err, errlen);
		ops->discard(impl, t);
		task_mgr__remove(r->o.tm, def->id);
		return e;
	}
	t->attach_point = ans.attach_point;
	for (uint32_t i = 0; (ops->flags & ANALYZER_KIND_F_TLS) && i < t->npids; i++)
		tls_pid(r, t, t->pids[i], false);
	for (uint32_t i = 0; (ops->flags & ANALYZER_KIND_F_USER_STACKS) && i < t->npids; i++)
		(void)symbolizer__preload(r->o.sym, t->pids[i]);
	r->st[RUNS_STARTED]++;
	/* the kind as `ember profile --type` names it (its values are the proto's) */
	log_info("task %s started: %s, %u pid(s), %llu ms, attach point %s", t->id,
		 profile_files__kind((Ember__TaskKind)t->kind), t->npids,
		 (unsigned long long)t->duration_ms, ctl__attach_point_name(t->attach_point));
	if (!task_def__is_monitor(t))
		publisher__task_event(r->o.pub, t, EMBER__TASK_EVENT__STATE__STARTED, NULL);
	save_state(r);
	return 0;
}

/* Whether a task of a kind that walks user stacks still runs on pid. */
static bool user_stacks_task(struct task_runner *r, uint32_t pid)
{
	for (unsigned i = 0; i < task_mgr__count(r->o.tm); i++) {
		const struct task_def *t = task_mgr__at(r->o.tm, i);

		if (!(analyzer_kinds__flags(r->o.kinds, t->kind) & ANALYZER_KIND_F_USER_STACKS))
			continue;
		for (uint32_t j = 0; j < t->npids; j++)
			if (t->pids[j] == pid)
				return true;
	}
	return false;
}

void runner__end(struct task_runner *r, struct task_def *t, const char *why)
{
	const struct analyzer_kind_ops *ops;
	void *impl;
	char id[TASK_ID_LEN], summary[128] = "";
	uint32_t flags = analyzer_kinds__flags(r->o.kinds, t->kind), npids = t->npids, pids[CTL_MAX_PIDS];
	uint64_t num_id = t->num_id;
	int e;

	memcpy(pids, t->pids, npids * sizeof(pids[0]));
	e = ctl_client__detach(r->o.cc, t->num_id);
	if (e && e != -ENOENT)
		log_warn("detaching task %s: %s", t->id, strerror(-e));
	/* The collector drained the task's maps before answering: all of it is in the ring now. */
	r->o.drain(r->o.ctx);
	if (analyzer_kinds__get(r->o.kinds, t->kind, &ops, &impl)) /* the table holds no other */
		ops->close(impl, t, summary, sizeof(summary));
	log_info("task %s finished (%s): %s", t->id, why, summary);
	if (!task_def__is_monitor(t))
		publisher__task_event(r->o.pub, t, EMBER__TASK_EVENT__STATE__FINISHED, NULL);
	r->st[RUNS_FINISHED]++;
	for (uint32_t i = 0; i < t->npids; i++)
		symbolizer__forget_pid(r->o.sym, t->pids[i]);
	snprintf(id, sizeof(id), "%s", t->id);
	task_mgr__remove(r->o.tm, id);
	if (r->tls_hid >= 0 && (flags & ANALYZER_KIND_F_TLS))
		mappings__unfollow_tag(r->o.maps, r->tls_hid, num_id);
	for (uint32_t i = 0; r->uw_hid >= 0 && (flags & ANALYZER_KIND_F_USER_STACKS) && i < npids; i++)
		if (!user_stacks_task(r, pids[i]))
			mappings__unfollow(r->o.maps, r->uw_hid, pids[i], 0);
	for (uint32_t i = 0; r->py_hid >= 0 && (flags & ANALYZER_KIND_F_USER_STACKS) && i < npids; i++)
		if (!user_stacks_task(r, pids[i]))
			mappings__unfollow(r->o.maps, r->py_hid, pids[i], 0);
	for (uint32_t i = 0; r->jvm_hid >= 0 && (flags & ANALYZER_KIND_F_USER_STACKS) && i < npids; i++)
		if (!user_stacks_task(r, pids[i]))
			mappings__unfollow(r->o.maps, r->jvm_hid, pids[i], 0);
	save_state(r);
}

static int all_pids_gone(const struct task_def *t)
{
	for (uint32_t i = 0; i < t->npids; i++)
		if (!kill((pid_t)t->pids[i], 0) || errno != ESRCH)
			return 0;
	return 1;
}

/*
 * A task's stacks are symbolized when it is drained, perhaps after its
 * process exited and its perf map can no longer be opened: keep the map as
 * the JIT writes it.  Once a second at most: the loop turns far more often
 * under load, and the symbolizer limits each pid's reads anyway.
 */
static void refresh_perf_maps(struct task_runner *r, uint64_t now_ms)
{
	if (now_ms - r->perf_maps_ms < 1000)
		return;
	r->perf_maps_ms = now_ms;
	for (unsigned i = 0; i < task_mgr__count(r->o.tm); i++) {
		const struct task_def *t = task_mgr__at(r->o.tm, i);

		if (analyzer_kinds__flags(r->o.kinds, t->kind) & ANALYZER_KIND_F_USER_STACKS)
			for (uint32_t j = 0; j < t->npids; j++)
				(void)symbolizer__refresh_perf_map(r->o.sym, t->pids[j]);
	}
}

void runner__check(struct task_runner *r, uint64_t now_ms)
{
	/*
	 * Mappings change (dlopen, exec): the unwind tables follow a few seconds
	 * behind; TLS libraries are asked for at exec and mmap events, and this
	 * catches what they missed.
	 */
	mappings__tick(r->o.maps, now_ms);
	refresh_perf_maps(r, now_ms);
	for (unsigned i = 0; i < task_mgr__count(r->o.tm);) {
		struct task_def *t = task_mgr__at(r->o.tm, i);

		if (now_ms >= t->start_unix_ms + t->duration_ms)
			runner__end(r, t, "duration reached");
		else if (all_pids_gone(t))
			runner__end(r, t, "target process exited");
		else
			i++;
	}
}

void runner__finish_all(struct task_runner *r, const char *why)
{
	char path[600];

	while (task_mgr__count(r->o.tm))
		runner__end(r, task_mgr__at(r->o.tm, 0), why);
	snprintf(path, sizeof(path), "%s/%s", r->state_dir, r->state_name);
	unlink(path);
}
