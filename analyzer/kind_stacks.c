/*
 * Stack profiling (on-CPU, off-CPU, memory): the collector drains the
 * kernel's aggregated stacks into the ring once per flush interval, each
 * followed by a window record; analyzer/profile.c symbolizes them into the
 * task's window and publishes it at the window's end.  One profile builder
 * serves the three kinds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/kinds.h"
#include "analyzer/profile.h"
#include "bpf/ember_abi.h"
#include "common/ctl_proto.h"
#include "common/timeutil.h"

/* The profile builder, and the kinds' shared table of Python names its records fill. */
struct stacks_impl {
	struct profile_builder *pb;
	struct py_names *names;
};

static void *stacks_new(const struct analyzer_kind_env *env)
{
	struct stacks_impl *s;

	if (!env->py) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->names = env->py;
	s->pb = profile__new(env->sym, env->pub, env->tm, env->max_tasks, env->py);
	if (!s->pb) {
		free(s);
		return NULL;
	}
	return s;
}

static void stacks_free(void *impl)
{
	struct stacks_impl *s = impl;

	if (!s)
		return;
	profile__free(s->pb);
	free(s);
}

static int check(void *impl, const struct task_def *t, char *err, size_t errlen)
{
	(void)impl;
	if (t->kind == EMBER_TASK_ONCPU && (t->period_ns < CTL_PERIOD_MIN_NS || t->period_ns > CTL_PERIOD_MAX_NS)) {
		snprintf(err, errlen, "on-CPU period %llu ns is out of range (%llu ms .. %llu ms)",
			 (unsigned long long)t->period_ns, CTL_PERIOD_MIN_NS / 1000000, CTL_PERIOD_MAX_NS / 1000000);
		return -ERANGE;
	}
	return 0;
}

static bool refused(void *impl, const struct task_def *t, int r, char *err, size_t errlen)
{
	(void)impl;
	/* The sampling event's period is the host's: one at a time. */
	if (r != -EBUSY || t->kind != EMBER_TASK_ONCPU)
		return false;
	snprintf(err, errlen, "on-CPU sampling already runs with another period for a task on this host; "
		 "give this task the same period (%llu ms asked) or start it when that task ends",
		 (unsigned long long)t->period_ns / 1000000);
	return true;
}

static int open_task(void *impl, const struct task_def *t)
{
	return profile__open(((struct stacks_impl *)impl)->pb, t);
}

static void discard(void *impl, const struct task_def *t)
{
	uint64_t samples, stacks;

	profile__close(((struct stacks_impl *)impl)->pb, t->id, 0, &samples, &stacks);
}

static void close_task(void *impl, const struct task_def *t, char *summary, size_t len)
{
	uint64_t samples, stacks;

	profile__close(((struct stacks_impl *)impl)->pb, t->id, timeutil__unix_ms() * 1000000ull, &samples, &stacks);
	snprintf(summary, len, "%llu samples in %llu stacks", (unsigned long long)samples, (unsigned long long)stacks);
}

static int record(void *impl, uint32_t type, const void *data, uint32_t len)
{
	struct stacks_impl *s = impl;
	struct ember_rec_window w;

	if (type == EMBER_REC_STACK)
		return profile__stack_record(s->pb, data, len);
	if (type == EMBER_REC_PYCODE)
		return profile__py_code_record(s->pb, s->names, data, len);
	if (len != sizeof(w))
		return -EBADMSG;
	memcpy(&w, data, sizeof(w));
	profile__window_end(s->pb, w.kind, w.end_ns);
	return 0;
}

_Static_assert(PS_MAX <= ANALYZER_KIND_COUNTERS_MAX, "the counters fit a stats array");

static void stats(const void *impl, uint64_t *v)
{
	profile__stats(((const struct stacks_impl *)impl)->pb, v);
}

const struct analyzer_kind_ops analyzer_kind_stacks = {
	.name = "stacks",
	.flags = ANALYZER_KIND_F_USER_STACKS,
	.records = 1u << EMBER_REC_STACK | 1u << EMBER_REC_WINDOW | 1u << EMBER_REC_PYCODE,
	.new = stacks_new,
	.free = stacks_free,
	.check = check,
	.refused = refused,
	.open = open_task,
	.discard = discard,
	.close = close_task,
	.record = record,
	.counters = profile_counters,
	.ncounters = PS_MAX,
	.stats = stats,
};
