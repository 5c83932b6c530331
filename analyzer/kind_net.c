/*
 * Network profiling: the socket events the collector forwards
 * (EMBER_REC_NET) become connections, L4 counts and L7 exchanges in
 * analyzer/net/netprof.c, published per report interval.  Its tasks' TLS
 * libraries get probes, and the continuous-profiling monitors capture
 * through tasks of this kind.
 */
#include <stdio.h>
#include <stdlib.h>

#include "analyzer/kinds.h"
#include "analyzer/net/netprof.h"
#include "analyzer/tls/tls_finder.h"
#include "bpf/ember_abi.h"
#include "common/config.h"
#include "common/ctl_client.h"
#include "common/ctl_proto.h"

struct net_kind {
	struct netprof *np;
	struct analyzer_kind_env env;
};

static void on_exchange(void *ctx, uint32_t pid, const struct l7_record *r)
{
	struct net_kind *n = ctx;

	n->env.exchange(n->env.ctx, pid, r);
}

static void on_maps_changed(void *ctx, uint64_t task_num_id, uint32_t pid, bool soon)
{
	struct net_kind *n = ctx;

	n->env.maps_changed(n->env.ctx, task_num_id, pid, soon);
}

static uint64_t on_tls_ready_ns(void *ctx, uint32_t pid)
{
	struct net_kind *n = ctx;

	return tls_finder__ready_ns(n->env.tls, pid);
}

static void on_drain(void *ctx)
{
	struct net_kind *n = ctx;

	n->env.drain(n->env.ctx);
}

static int on_caps(void *ctx, const struct ctl_net_cap *caps, uint32_t n, uint32_t *written)
{
	struct net_kind *nk = ctx;

	return ctl_client__net_caps(nk->env.cc, caps, n, written);
}

static void *net_new(const struct analyzer_kind_env *env)
{
	const struct ember_config *c = env->cfg;
	struct net_kind *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->env = *env;
	n->np = netprof__new(&(struct netprof_opts){
		.pub = env->pub, .tm = env->tm,
		.max_connections = (size_t)c->profiling.task.network.max_connections,
		.idle_timeout_ns = c->profiling.task.network.connection_idle_timeout_ns,
		.max_exchanges = (size_t)c->profiling.task.network.max_exchanges_per_report,
		.default_report_ms = c->profiling.task.network.report_interval_ns / 1000000,
		.l7 = { .max_conn_mem = c->profiling.task.network.protocol_analyze.max_connection_buffer,
			.max_query_len = 256,
			.req_encoding = c->profiling.task.network.protocol_analyze.sampling.http.default_request_encoding,
			.resp_encoding = c->profiling.task.network.protocol_analyze.sampling.http.default_response_encoding },
		.exchange = env->exchange ? on_exchange : NULL,
		.maps_changed = env->maps_changed ? on_maps_changed : NULL,
		.tls_ready_ns = on_tls_ready_ns,
		.drain = env->drain ? on_drain : NULL,    /* between the parts of a big report */
		.caps = env->cc ? on_caps : NULL,
		.ctx = n,
	});
	if (!n->np) {
		free(n);
		return NULL;
	}
	return n;
}

static void net_free(void *impl)
{
	struct net_kind *n = impl;

	if (n)
		netprof__free(n->np);
	free(n);
}

/* Sampled traces that carry their system calls need the packets under each. */
static uint32_t attach_flags(void *impl, const struct task_def *t)
{
	(void)impl;
	return task_def__wants_calls(t) ? CTL_ATTACH_F_L2 : 0;
}

static int open_task(void *impl, const struct task_def *t)
{
	return netprof__open(((struct net_kind *)impl)->np, t);
}

static void discard(void *impl, const struct task_def *t)
{
	netprof__discard(((struct net_kind *)impl)->np, t->id);
}

static void close_task(void *impl, const struct task_def *t, char *summary, size_t len)
{
	uint64_t exchanges, connections;

	netprof__close(((struct net_kind *)impl)->np, t->id, &exchanges, &connections);
	snprintf(summary, len, "%llu exchanges over %llu connections", (unsigned long long)exchanges,
		 (unsigned long long)connections);
}

static int record(void *impl, uint32_t type, const void *data, uint32_t len)
{
	(void)type;
	/* netprof counts what does not add up itself (net_bad_records). */
	netprof__record(((struct net_kind *)impl)->np, data, len);
	return 0;
}

static void tick(void *impl, uint64_t now_unix_ms)
{
	netprof__tick(((struct net_kind *)impl)->np, now_unix_ms);
}

static uint64_t next_due(const void *impl)
{
	return netprof__next_due(((const struct net_kind *)impl)->np);
}

_Static_assert(NPS_MAX <= ANALYZER_KIND_COUNTERS_MAX, "the counters fit a stats array");

static void stats(const void *impl, uint64_t *v)
{
	netprof__stats(((const struct net_kind *)impl)->np, v);
}

const struct analyzer_kind_ops analyzer_kind_net = {
	.name = "network",
	.flags = ANALYZER_KIND_F_TLS | ANALYZER_KIND_F_MONITOR_CAPTURE,
	.records = 1u << EMBER_REC_NET,
	.new = net_new,
	.free = net_free,
	.attach_flags = attach_flags,
	.open = open_task,
	.discard = discard,
	.close = close_task,
	.record = record,
	.tick = tick,
	.next_due = next_due,
	.counters = netprof_counters,
	.ncounters = NPS_MAX,
	.stats = stats,
};
