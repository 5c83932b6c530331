#include "collector/tasks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/ember_abi.h"
#include "collector/target_policy.h"
#include "common/log.h"
#include "common/shard.h"
#include "common/timeutil.h"

#define KINDS_MAX 16

struct tasks {
	struct collector_kind *kinds[KINDS_MAX];
	struct target_policy *policy;
	unsigned nshards;
	struct task t[TASKS_MAX];
};

struct tasks *tasks__new(struct collector_kind *const *kinds, unsigned nkinds, struct target_policy *policy,
			 unsigned nshards)
{
	struct tasks *ts;

	if (nkinds > KINDS_MAX || !nshards) {
		errno = EINVAL;
		return NULL;
	}
	ts = calloc(1, sizeof(*ts));
	if (!ts)
		return NULL;
	for (unsigned i = 0; i < nkinds; i++)
		ts->kinds[i] = kinds[i];
	ts->policy = policy;
	ts->nshards = nshards;
	return ts;
}

static uint64_t now_ns(void)
{
	return timeutil__now_ns(CLOCK_MONOTONIC);
}

static bool attached(const struct task *t)
{
	return t->used && !t->detached_at;
}

static bool in_grace(const struct task *t, uint64_t now)
{
	return t->used && (!t->detached_at || now - t->detached_at <= TASKS_DETACHED_GRACE_NS);
}

static struct collector_kind *kind_of(const struct tasks *ts, uint32_t kind)
{
	return kind < KINDS_MAX ? ts->kinds[kind] : NULL;
}

static struct task *find(struct tasks *ts, uint64_t id)
{
	for (unsigned i = 0; i < TASKS_MAX; i++)
		if (attached(&ts->t[i]) && ts->t[i].id == id)
			return &ts->t[i];
	return NULL;
}

/* Unwatches its pids and switches its programs off; the slot stays for the grace period. */
static void remove_task(struct tasks *ts, struct task *t)
{
	struct collector_kind *k = kind_of(ts, t->kind);

	if (!attached(t))
		return;
	for (uint32_t i = 0; i < t->npids; i++)
		(void)k->target(k->impl, t, t->pids[i], false);
	k->detach(k->impl, t);
	t->detached_at = now_ns();
}

struct tasks *tasks__free(struct tasks *ts)
{
	if (!ts)
		return NULL;
	for (unsigned i = 0; i < TASKS_MAX; i++)
		remove_task(ts, &ts->t[i]);
	free(ts);
	return NULL;
}

int tasks__attach(struct tasks *ts, uint32_t shard, const struct ctl_attach *a, struct ctl_attach_ans *ans)
{
	struct task *t = find(ts, a->task_id);
	struct collector_kind *k = kind_of(ts, a->kind);
	uint64_t now = now_ns();
	uint32_t ok = 0;
	int err;

	if (t) { /* a restarted analyzer re-attaching its task: idempotent */
		if (t->shard != shard || t->kind != a->kind || t->flags != a->flags)
			return -EEXIST;
		ans->npids_ok = t->npids;
		ans->attach_point = t->attach_point;
		return 0;
	}
	if (!k)
		return -EOPNOTSUPP;
	if (a->flags & ~k->flags)
		return -EINVAL;
	if (a->min_block_ns > CTL_MIN_BLOCK_MAX_NS)
		return -ERANGE;
	if (k->check && (err = k->check(k->impl, a)))
		return err;
	for (unsigned i = 0; i < TASKS_MAX && !t; i++)
		if (!ts->t[i].used || (ts->t[i].detached_at && now - ts->t[i].detached_at > TASKS_DETACHED_GRACE_NS))
			t = &ts->t[i];
	if (!t)
		return -ENOSPC;
	memset(t, 0, offsetof(struct task, pids));
	memset(&t->period_ns, 0, sizeof(*t) - offsetof(struct task, period_ns));
	t->id = a->task_id;
	t->kind = a->kind;
	t->flags = a->flags;
	t->shard = shard;
	t->held = !!(a->flags & CTL_ATTACH_F_HOLD);
	t->period_ns = a->period_ns;
	t->min_block_ns = a->min_block_ns;
	t->probes = a->probes;
	for (uint32_t i = 0; i < a->npids; i++) {
		uint32_t pid = a->pids[i];

		if (pid == 0 || shard__of(pid, ts->nshards) != shard)
			return -EINVAL;
		err = target_policy__check(ts->policy, pid);
		if (err == -ESRCH)
			continue; /* gone already: not an error for a multi-pid task */
		if (err) {
			log_warn("task %llu: pid %u is not a target the policy allows (%s)", (unsigned long long)a->task_id,
				 pid, strerror(-err));
			return err == -EPERM ? -EPERM : -ESRCH;
		}
		t->pids[t->npids++] = pid;
	}
	if (!t->npids)
		return -ESRCH;
	if ((err = k->attach(k->impl, t)))
		return err;
	for (uint32_t i = 0; i < t->npids; i++) {
		if (!t->held && (err = k->target(k->impl, t, t->pids[i], true))) {
			t->npids = i;
			t->used = true;
			remove_task(ts, t);
			t->used = false;
			return err;
		}
		ok++;
	}
	t->used = true;
	ans->attach_point = t->attach_point;
	ans->npids_ok = ok;
	return 0;
}

int tasks__start(struct tasks *ts, uint32_t shard, uint64_t id)
{
	struct task *t = find(ts, id);
	struct collector_kind *k;
	int err = 0;

	if (!t || t->shard != shard)
		return -ENOENT;
	k = kind_of(ts, t->kind);
	for (uint32_t i = 0; t->held && i < t->npids && !err; i++)
		err = k->target(k->impl, t, t->pids[i], true);
	t->held = false;
	return err;
}

bool tasks__owns(struct tasks *ts, uint32_t shard, uint64_t id)
{
	const struct task *t = find(ts, id);

	return t && t->shard == shard;
}

int tasks__detach(struct tasks *ts, uint32_t shard, uint64_t id)
{
	struct task *t = find(ts, id);

	if (!t || t->shard != shard)
		return -ENOENT;
	remove_task(ts, t);
	return 0;
}

unsigned tasks__detach_shard(struct tasks *ts, uint32_t shard)
{
	unsigned n = 0;

	for (unsigned i = 0; i < TASKS_MAX; i++)
		if (attached(&ts->t[i]) && ts->t[i].shard == shard) {
			log_warn("detaching task %llu: no analyzer for shard %u", (unsigned long long)ts->t[i].id, shard);
			remove_task(ts, &ts->t[i]);
			n++;
		}
	return n;
}

/* pid, or a child followed for a pid of t, is t's. */
static bool task_has(const struct tasks *ts, const struct task *t, uint32_t pid, uint32_t *root, bool *looked)
{
	struct collector_kind *k = kind_of(ts, t->kind);

	for (uint32_t j = 0; j < t->npids; j++)
		if (t->pids[j] == pid)
			return true;
	if (!k->follows)
		return false;
	if (!*looked) {
		*root = k->follows(k->impl, pid);
		*looked = true;
	}
	for (uint32_t j = 0; *root && j < t->npids; j++)
		if (t->pids[j] == *root)
			return true;
	return false;
}

bool tasks__targets(struct tasks *ts, uint32_t shard, uint32_t kinds, uint32_t pid, bool within_grace)
{
	uint64_t now = now_ns();
	uint32_t root = 0;
	bool looked = false;

	for (unsigned i = 0; i < TASKS_MAX; i++) {
		const struct task *t = &ts->t[i];

		if (t->shard != shard || !(kinds & (1u << t->kind)) || !(within_grace ? in_grace(t, now) : attached(t)))
			continue;
		if (task_has(ts, t, pid, &root, &looked))
			return true;
	}
	return false;
}

bool tasks__task_targets(struct tasks *ts, uint32_t shard, uint64_t id, uint32_t kind, uint32_t pid)
{
	const struct task *t = find(ts, id);
	uint32_t root = 0;
	bool looked = false;

	return t && t->shard == shard && t->kind == kind && task_has(ts, t, pid, &root, &looked);
}

bool tasks__shard_has(struct tasks *ts, uint32_t shard, uint32_t kinds, bool within_grace)
{
	uint64_t now = now_ns();

	for (unsigned i = 0; i < TASKS_MAX; i++) {
		const struct task *t = &ts->t[i];

		if (t->shard == shard && (kinds & (1u << t->kind)) && (within_grace ? in_grace(t, now) : attached(t)))
			return true;
	}
	return false;
}

unsigned tasks__count(struct tasks *ts, uint32_t kinds)
{
	unsigned n = 0;

	for (unsigned i = 0; i < TASKS_MAX; i++)
		n += attached(&ts->t[i]) && (kinds & (1u << ts->t[i].kind));
	return n;
}

bool tasks__pid_elsewhere(struct tasks *ts, const struct task *except, uint32_t kinds, uint32_t pid)
{
	for (unsigned i = 0; i < TASKS_MAX; i++) {
		const struct task *o = &ts->t[i];

		if (o == except || !attached(o) || !(kinds & (1u << o->kind)))
			continue;
		for (uint32_t j = 0; j < o->npids; j++)
			if (o->pids[j] == pid)
				return true;
	}
	return false;
}
