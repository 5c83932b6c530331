#include "analyzer/requests.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "bpf/ember_abi.h"
#include "common/cleanup.h"
#include "common/timeutil.h"

struct request_server {
	void *sock;
	struct requests_opts o;
	uint64_t next_task_num;
	uint64_t st[RQS_MAX];
	struct bus_meter_set ms;   /* a stats reply's meters: big, so not on the stack */
};

const struct counter_def requests_counters[RQS_MAX] = {
	[RQS_REQUESTS] = { .name = "requests" },
	[RQS_BAD_REQUESTS] = { .name = "bad_requests" },
	[RQS_REPLY_ERRORS] = { .name = "request_reply_errors" },
};

struct request_server *requests__new(void *zctx, const char *endpoint, const struct requests_opts *o)
{
	struct request_server *s = calloc(1, sizeof(*s));
	int64_t maxmsg = BUS_MAX_MSG;
	int zero = 0, r;
	mode_t old;

	if (!s)
		return NULL;
	s->o = *o;
	s->sock = zmq_socket(zctx, ZMQ_REP);
	if (!s->sock)
		goto fail;
	zmq_setsockopt(s->sock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg));
	zmq_setsockopt(s->sock, ZMQ_LINGER, &zero, sizeof(zero));
	unlink(endpoint + strlen("ipc://"));
	old = umask(0007); /* our uid, the exporter (our group) and root may submit tasks */
	r = zmq_bind(s->sock, endpoint);
	umask(old);
	if (r)
		goto fail;
	return s;
fail:
	{
		int e = errno;
		requests__free(s);
		errno = e;
	}
	return NULL;
}

void *requests__socket(struct request_server *s)
{
	return s->sock;
}

void requests__stats(const struct request_server *s, uint64_t ret[RQS_MAX])
{
	memcpy(ret, s->st, sizeof(s->st));
}

struct request_server *requests__free(struct request_server *s)
{
	if (!s)
		return NULL;
	if (s->sock)
		zmq_close(s->sock);
	free(s);
	return NULL;
}

/* A task from a Submit request: id (or a new one), times, and the configured defaults. */
static int submit(struct request_server *s, const Ember__Task *p, Ember__Task *ret, char *err, size_t errlen)
{
	const struct ember_config *cfg = s->o.cfg;
	struct task_def def;
	int r;

	if ((r = task_def__from_proto(p, &def, err, errlen)))
		return r;
	if (!def.id[0])
		snprintf(def.id, sizeof(def.id), "task-%llu-%u-%llu", (unsigned long long)timeutil__unix_ms(),
			 s->o.shard, (unsigned long long)++s->next_task_num);
	def.start_unix_ms = timeutil__unix_ms();
	if (!def.period_ns)
		def.period_ns = cfg->profiling.task.on_cpu.dump_period_ns;
	if (!p->min_block_ns && def.kind != EMBER_TASK_THREADS)
		def.min_block_ns = cfg->profiling.task.off_cpu.min_block_time_ns;
	/* A thread task's stack threshold: 0 is a choice (every call's stack) only when asked as such. */
	if (def.kind == EMBER_TASK_THREADS && !p->stack_min_ns)
		def.min_block_ns = cfg->profiling.task.threads.stack_threshold_ns;
	if (!def.origin[0])
		snprintf(def.origin, sizeof(def.origin), "cli");
	if ((r = runner__start(s->o.runner, &def, err, errlen)))
		return r;
	task_def__to_proto(task_mgr__find(s->o.tm, def.id), ret);
	return 0;
}

static void handle_one(struct request_server *s, Ember__Request *req)
{
	Ember__Reply rep = EMBER__REPLY__INIT;
	Ember__Task task;
	_cleanup_free_ struct task_pb *tasks = NULL;
	_cleanup_free_ Ember__Task **ptrs = NULL;
	char err[320] = "";

	switch (req->body_case) {
	case EMBER__REQUEST__BODY_SUBMIT:
		rep.err = submit(s, req->submit, &task, err, sizeof(err));
		if (!rep.err)
			rep.task = &task;
		break;
	case EMBER__REQUEST__BODY_CANCEL: {
		struct task_def *t = req->cancel ? task_mgr__find(s->o.tm, req->cancel) : NULL;

		if (!t) {
			rep.err = -ENOENT;
			snprintf(err, sizeof(err), "no task '%s'", req->cancel ? req->cancel : "");
		} else {
			runner__end(s->o.runner, t, "cancelled");
		}
		break;
	}
	case EMBER__REQUEST__BODY_POLICIES:
		if (!req->policies || !s->o.policies) {
			rep.err = -EINVAL;
			snprintf(err, sizeof(err), "no policy set");
		} else {
			rep.err = s->o.policies(s->o.ctx, req->policies, err, sizeof(err));
		}
		break;
	case EMBER__REQUEST__BODY_STATS:
		s->o.meters(s->o.ctx, &s->ms);
		rep.n_stats = s->ms.n;
		rep.stats = s->ms.ptrs;
		break;
	case EMBER__REQUEST__BODY_LIST: {
		unsigned n = task_mgr__count(s->o.tm);

		tasks = calloc(n ? n : 1, sizeof(*tasks));
		ptrs = calloc(n ? n : 1, sizeof(*ptrs));
		if (!tasks || !ptrs) {
			rep.err = -ENOMEM;
			break;
		}
		for (unsigned i = 0; i < n; i++) {
			task_def__to_pb(task_mgr__at(s->o.tm, i), &tasks[i]); /* with samplings and causes */
			ptrs[i] = &tasks[i].task;
		}
		rep.n_tasks = n;
		rep.tasks = ptrs;
		break;
	}
	default:
		s->st[RQS_BAD_REQUESTS]++;
		rep.err = -EINVAL;
		snprintf(err, sizeof(err), "unknown request");
	}
	rep.error = err;
	if (bus__send_reply(s->sock, &rep))
		s->st[RQS_REPLY_ERRORS]++;
}

void requests__handle(struct request_server *s)
{
	for (;;) {
		Ember__Request *req = bus__recv_request(s->sock, ZMQ_DONTWAIT);

		if (!req) {
			Ember__Reply rep = EMBER__REPLY__INIT;

			if (errno != EBADMSG)
				return;   /* nothing waiting (EAGAIN), or the socket is going away */
			/* REP must answer before it can receive again. */
			s->st[RQS_BAD_REQUESTS]++;
			rep.err = -EBADMSG;
			rep.error = "malformed request";
			if (bus__send_reply(s->sock, &rep))
				s->st[RQS_REPLY_ERRORS]++;
			continue;
		}
		s->st[RQS_REQUESTS]++;
		handle_one(s, req);
		ember__request__free_unpacked(req, NULL);
	}
}
