#include "analyzer/publisher.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/bus.h"
#include "common/ctl_proto.h"

struct publisher {
	void *sock;
	unsigned shard;
	uint64_t seq;
	uint64_t st[PUBS_MAX];
};

const struct counter_def publisher_counters[PUBS_MAX] = {
	[PUBS_HWM_DROPS] = { .name = "zmq_hwm_drops" },
	[PUBS_SEND_ERRORS] = { .name = "zmq_send_errors" },
};

struct publisher *publisher__new(void *zctx, const char *endpoint, int hwm, unsigned shard)
{
	struct publisher *p = calloc(1, sizeof(*p));
	int linger = 3000; /* flush what is queued for the exporter on exit, within reason */

	if (!p)
		return NULL;
	p->shard = shard;
	p->sock = zmq_socket(zctx, ZMQ_PUSH);
	if (!p->sock)
		goto fail;
	zmq_setsockopt(p->sock, ZMQ_SNDHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(p->sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (zmq_connect(p->sock, endpoint))
		goto fail;
	return p;
fail:
	{
		int e = errno;
		publisher__free(p);
		errno = e;
	}
	return NULL;
}

static void send_env(struct publisher *p, Ember__Envelope *env)
{
	int r;

	env->version = 1;
	env->analyzer = p->shard;
	env->seq = ++p->seq;
	r = bus__send_envelope(p->sock, env);
	if (r == -EAGAIN)
		p->st[PUBS_HWM_DROPS]++;
	else if (r)
		p->st[PUBS_SEND_ERRORS]++;
}

void publisher__profile(struct publisher *p, const struct task_def *t, uint64_t window_start_ns,
			uint64_t window_end_ns, Ember__StackSample **samples, size_t n)
{
	Ember__Envelope env = EMBER__ENVELOPE__INIT;
	Ember__ProfileBatch b = EMBER__PROFILE_BATCH__INIT;
	struct task_pb task; /* with the trigger's causes: the exporter titles the graph with them */

	task_def__to_pb(t, &task);
	b.task = &task.task;
	b.window_start_unix_ns = window_start_ns;
	b.window_end_unix_ns = window_end_ns;
	b.n_samples = n;
	b.samples = samples;
	env.body_case = EMBER__ENVELOPE__BODY_PROFILE;
	env.profile = &b;
	send_env(p, &env);
}

void publisher__task_event(struct publisher *p, const struct task_def *t, Ember__TaskEvent__State state,
			   const char *error)
{
	Ember__Envelope env = EMBER__ENVELOPE__INIT;
	Ember__TaskEvent ev = EMBER__TASK_EVENT__INIT;
	struct task_pb task;

	task_def__to_pb(t, &task);
	ev.task = &task.task;
	ev.state = state;
	ev.error = (char *)(error ? error : "");
	ev.attach_point = t->attach_point;
	ev.attach_point_name = (char *)ctl__attach_point_name(t->attach_point);
	env.body_case = EMBER__ENVELOPE__BODY_TASK_EVENT;
	env.task_event = &ev;
	send_env(p, &env);
}

void publisher__network(struct publisher *p, const struct task_def *t, Ember__NetworkBatch *b)
{
	Ember__Envelope env = EMBER__ENVELOPE__INIT;
	struct task_pb task; /* whole: a REST task's gala-gopher tables ride with its batches */

	task_def__to_pb(t, &task);
	b->task = &task.task;
	env.body_case = EMBER__ENVELOPE__BODY_NETWORK;
	env.network = b;
	send_env(p, &env);
	b->task = NULL;
}

void publisher__threads(struct publisher *p, const struct task_def *t, Ember__ThreadBatch *b)
{
	Ember__Envelope env = EMBER__ENVELOPE__INIT;
	struct task_pb task;

	task_def__to_pb(t, &task);
	b->task = &task.task;
	env.body_case = EMBER__ENVELOPE__BODY_THREADS;
	env.threads = b;
	send_env(p, &env);
	b->task = NULL;
}

void publisher__trigger(struct publisher *p, const struct task_def *t, const char *service)
{
	Ember__Envelope env = EMBER__ENVELOPE__INIT;
	Ember__TriggerRequest tr = EMBER__TRIGGER_REQUEST__INIT;
	struct task_pb task;

	task_def__to_pb(t, &task);
	tr.task = &task.task;
	tr.service = (char *)service;
	env.body_case = EMBER__ENVELOPE__BODY_TRIGGER;
	env.trigger = &tr;
	send_env(p, &env);
}

void publisher__monitors(struct publisher *p, Ember__MonitorBatch *b)
{
	Ember__Envelope env = EMBER__ENVELOPE__INIT;

	env.body_case = EMBER__ENVELOPE__BODY_MONITORS;
	env.monitors = b;
	send_env(p, &env);
}

void publisher__meters_drops(struct publisher *p, Ember__Meter **meters, size_t n, Ember__SeriesDrop **drops,
			     size_t n_drops)
{
	Ember__Envelope env = EMBER__ENVELOPE__INIT;
	Ember__MeterBatch b = EMBER__METER_BATCH__INIT;

	b.n_meters = n;
	b.meters = meters;
	b.n_drops = n_drops;
	b.drops = drops;
	env.body_case = EMBER__ENVELOPE__BODY_METERS;
	env.meters = &b;
	send_env(p, &env);
}

void publisher__meters(struct publisher *p, Ember__Meter **meters, size_t n)
{
	publisher__meters_drops(p, meters, n, NULL, 0);
}

void publisher__stats(const struct publisher *p, uint64_t ret[PUBS_MAX])
{
	memcpy(ret, p->st, sizeof(p->st));
}

struct publisher *publisher__free(struct publisher *p)
{
	if (!p)
		return NULL;
	if (p->sock)
		zmq_close(p->sock);
	free(p);
	return NULL;
}
