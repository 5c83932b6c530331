/*
 * The collector's task table, and the seam behind which each kind of
 * profiling keeps its privileged half.
 *
 * A task is what one analyzer asked for with ATTACH: a kind, its processes
 * (all in that analyzer's shard, each allowed by the target policy), its
 * parameters.  The table checks the request, asks the kind to switch its
 * programs on and to watch each process, and remembers the task for DETACH,
 * START and the fd broker's question "is this pid one of your targets?".
 * A detached task stays in the table for a grace period (its pids stay open
 * to the broker: the analyzer symbolizes the final drain after the detach).
 *
 * A kind (struct collector_kind) is one file and one registration line
 * (collector/kind_*.c, collector_kinds[] in kinds.c): its attach/detach
 * switch programs on and off (refcounted by the kind), target adds or
 * removes one process, follows names the process a child was followed for
 * (network tasks follow children), drop is told a task went.  Tests and
 * fuzzers register kinds of their own.
 */
#ifndef EMBER_COLLECTOR_TASKS_H
#define EMBER_COLLECTOR_TASKS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/ctl_proto.h"

#define TASKS_MAX 64
#define TASKS_DETACHED_GRACE_NS (60ull * 1000000000ull)

struct target_policy;

/* What a kind sees of a task. */
struct task {
	uint64_t id;
	uint32_t kind;
	uint32_t shard;
	uint32_t npids;
	uint32_t flags;       /* CTL_ATTACH_F_* */
	uint32_t pids[CTL_MAX_PIDS];
	uint64_t period_ns;
	uint64_t min_block_ns;
	uint32_t probes;      /* threads: THREAD_P_* */
	uint32_t attach_point;
	bool held;            /* CTL_ATTACH_F_HOLD: not watched until START */
	bool l2;              /* CTL_ATTACH_F_L2 granted (network) */
	/* The table's own. */
	bool used;
	uint64_t detached_at; /* monotonic ns, 0 = attached */
};

struct collector_kind {
	uint32_t kind;            /* enum ember_task_kind */
	const char *name;
	uint32_t flags;           /* CTL_ATTACH_F_* the kind takes */
	bool stacks;              /* its data comes through the stack maps' drain */
	/* The request's parameters: 0 or -ERANGE/-EINVAL. */
	int (*check)(void *impl, const struct ctl_attach *a);
	/* Programs on for t (refcounted by the kind): 0 and t->attach_point (t->l2), or -errno. */
	int (*attach)(void *impl, struct task *t);
	/* Programs off for t (the pids are already unwatched). */
	void (*detach)(void *impl, struct task *t);
	/* Watch (on) or stop watching pid for t.  0 or -errno. */
	int (*target)(void *impl, const struct task *t, uint32_t pid, bool on);
	/* The process a followed child belongs to (0: none, or the kind follows no children); may be NULL. */
	uint32_t (*follows)(void *impl, uint32_t pid);
	/* Its programs' counters into stats (CTL_STAT_*, the kind's own range), before STATS answers; may be NULL. */
	void (*counters)(void *impl, uint64_t *stats);
	void *impl;
};

struct tasks;

/* kinds: indexed by enum ember_task_kind, NULL where none (not taken).  NULL + errno. */
struct tasks *tasks__new(struct collector_kind *const *kinds, unsigned nkinds, struct target_policy *policy,
			 unsigned nshards);
/* Accepts NULL; every task still attached is removed first.  Returns NULL. */
struct tasks *tasks__free(struct tasks *ts);

/*
 * ATTACH from shard's analyzer.  An attached task of that id is answered
 * again (a restarted analyzer), if it is the same.  Returns 0 and fills ans,
 * or -errno: -EOPNOTSUPP (kind), -ERANGE/-EINVAL (parameters, flags, a pid
 * of another shard), -EPERM (the target policy), -ESRCH (no pid left),
 * -ENOSPC (table full), -EEXIST (another task of that id), or the kind's.
 */
int tasks__attach(struct tasks *ts, uint32_t shard, const struct ctl_attach *a, struct ctl_attach_ans *ans);
/* START of a held task: its pids are watched from now.  0, -ENOENT, or the kind's error. */
int tasks__start(struct tasks *ts, uint32_t shard, uint64_t id);
/* Is task id attached, and shard's? */
bool tasks__owns(struct tasks *ts, uint32_t shard, uint64_t id);
/* DETACH: 0 or -ENOENT (not shard's, or not attached). */
int tasks__detach(struct tasks *ts, uint32_t shard, uint64_t id);
/* Every attached task of shard goes (its analyzer stayed away); returns how many. */
unsigned tasks__detach_shard(struct tasks *ts, uint32_t shard);

/* Kinds, as a mask of 1u << enum ember_task_kind; TASKS_ANY for all. */
#define TASKS_ANY 0xffffffffu
/* Is pid a target of a task of shard of these kinds (a child a task follows included)?  within_grace:
 * detached tasks in their grace period count. */
bool tasks__targets(struct tasks *ts, uint32_t shard, uint32_t kinds, uint32_t pid, bool within_grace);
/* Is pid a target of task id, of shard and of kind (a followed child included), attached? */
bool tasks__task_targets(struct tasks *ts, uint32_t shard, uint64_t id, uint32_t kind, uint32_t pid);
/* Does shard hold a task of these kinds (attached, or in its grace period when within_grace)? */
bool tasks__shard_has(struct tasks *ts, uint32_t shard, uint32_t kinds, bool within_grace);
/* Attached tasks of these kinds, all shards. */
unsigned tasks__count(struct tasks *ts, uint32_t kinds);
/* Is pid a target of an attached task of these kinds other than except (NULL: any)? */
bool tasks__pid_elsewhere(struct tasks *ts, const struct task *except, uint32_t kinds, uint32_t pid);

#endif
