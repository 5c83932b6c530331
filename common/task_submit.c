/* Submitting a task to a running agent's analyzers: see task_submit.h. */
#include "common/task_submit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/bus.h"
#include "common/shard.h"
#include "common/timeutil.h"

/* One analyzer's answer to req, retried while it does not answer yet. */
static int call_one(void *zctx, const struct task_submit_opts *o, unsigned shard, const Ember__Request *req,
		    char *err, size_t errlen)
{
	Ember__Reply *rep = NULL;
	char ep[600];
	int r = -ETIMEDOUT;

	bus__analyzer_endpoint(o->run_dir, shard, ep, sizeof(ep));
	for (;;) {
		if (o->give_up && o->give_up(o->ctx)) {
			snprintf(err, errlen, "the agent is gone");
			return -ECHILD;
		}
		if (access(ep + strlen("ipc://"), F_OK) == 0) {
			r = bus__call(zctx, ep, req, &rep, o->call_timeout_ms ? o->call_timeout_ms : 5000);
			if (r != -ETIMEDOUT && r != -ECONNREFUSED)
				break;
		}
		if (!o->retry_until_ms || timeutil__mono_ms() > o->retry_until_ms) {
			snprintf(err, errlen, "the agent's analyzer %u (%s) does not answer", shard, ep);
			return -ETIMEDOUT;
		}
		usleep(50000);
	}
	if (r) {
		snprintf(err, errlen, "analyzer %u: %s", shard, strerror(-r));
		return r;
	}
	r = rep->err;
	if (r)
		snprintf(err, errlen, "%s", rep->error && *rep->error ? rep->error : strerror(-r));
	ember__reply__free_unpacked(rep, NULL);
	return r;
}

int task_submit__all(void *zctx, const struct task_submit_opts *o, const Ember__Task *t, char *err, size_t errlen)
{
	unsigned n = o->analyzers ? o->analyzers : 1, shards = 0;
	uint32_t *mine = calloc(t->n_pids ? t->n_pids : 1, sizeof(*mine));
	int r = 0;

	if (!mine) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (unsigned s = 0; s < n; s++)
		for (size_t i = 0; i < t->n_pids; i++)
			if (shard__of(t->pids[i], n) == s) {
				shards++;
				break;
			}
	for (unsigned s = 0; s < n && !r; s++) {
		Ember__Request req = EMBER__REQUEST__INIT;
		Ember__Task part = *t;
		size_t k = 0;

		for (size_t i = 0; i < t->n_pids; i++)
			if (shard__of(t->pids[i], n) == s)
				mine[k++] = t->pids[i];
		if (!k)
			continue;
		part.n_pids = k;
		part.pids = mine;
		part.shards = shards;
		req.body_case = EMBER__REQUEST__BODY_SUBMIT;
		req.submit = &part;
		r = call_one(zctx, o, s, &req, err, errlen);
	}
	free(mine);
	return r ? r : (int)shards;
}

int task_submit__cancel(void *zctx, const struct task_submit_opts *o, const char *id, char *err, size_t errlen)
{
	unsigned n = o->analyzers ? o->analyzers : 1;
	int ret = 0;

	for (unsigned s = 0; s < n; s++) {
		Ember__Request req = EMBER__REQUEST__INIT;
		int r;

		req.body_case = EMBER__REQUEST__BODY_CANCEL;
		req.cancel = (char *)id;
		r = call_one(zctx, o, s, &req, err, errlen);
		if (r && r != -ENOENT && !ret)
			ret = r;
	}
	return ret;
}
