/*
 * Submitting a task to a running agent: its pids are split by shard
 * (common/shard.h) and every analyzer owning some of them gets its part
 * under the task's one id, with Task.shards set so that the exporter joins
 * the parts.  Used by `ember profile` and the REST control API.
 */
#ifndef EMBER_COMMON_TASK_SUBMIT_H
#define EMBER_COMMON_TASK_SUBMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/ember.pb-c.h"

struct task_submit_opts {
	const char *run_dir;		/* the agent's (its analyzers' endpoints) */
	unsigned analyzers;		/* 0: 1 */
	int call_timeout_ms;		/* per analyzer call */
	/* While an analyzer does not answer yet (an agent coming up), retry until this monotonic ms; 0: no retry. */
	uint64_t retry_until_ms;
	/* Optional, between retries: true stops them (the agent died). */
	bool (*give_up)(void *ctx);
	void *ctx;
};

/*
 * t carries every pid (t->shards is set per part).  The number of analyzers
 * given a part, or -errno with what went wrong in err (the analyzer's own message when it refused the task).
 * Parts already given to other analyzers stay: the caller cancels the id.
 */
int task_submit__all(void *zctx, const struct task_submit_opts *o, const Ember__Task *t, char *err, size_t errlen);
/* Cancels task id on every analyzer (those without it answer -ENOENT, which is not an error here).  0 or -errno. */
int task_submit__cancel(void *zctx, const struct task_submit_opts *o, const char *id, char *err, size_t errlen);

#endif
