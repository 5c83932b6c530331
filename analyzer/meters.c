/*
 * The analyzer's own meters: one loop over counter tables (common/counters.h).
 * A module with a counters array publishes its table here, a profiler kind
 * through its ops (analyzer/kinds.h: a new kind's counters need nothing
 * here), and the modules that count in a struct are described below, one
 * table and one reader each.  The order is the order they are published in.
 */
#include <stdio.h>

#include "analyzer/analyzer.h"
#include "analyzer/continuous/monitors.h"
#include "analyzer/kinds.h"
#include "analyzer/publisher.h"
#include "analyzer/requests.h"
#include "analyzer/rest/rest_api.h"
#include "analyzer/runner.h"
#include "analyzer/tasks.h"
#include "analyzer/tls/tls_finder.h"
#include "analyzer/unwind/unwinder.h"
#include "common/ctl_client.h"
#include "common/shm_ring.h"
#include "common/timeutil.h"
#include "symbolizer/symbolizer.h"

#define N(defs) (unsigned)(sizeof(defs) / sizeof(defs[0]))

/* The ring's reader (analyzer/main.c). */
static const struct counter_def ring_reader[] = {
	{ .name = "analyzer_ring_records" },
	{ .name = "analyzer_bad_records" },   /* records of any type whose lengths do not add up */
	{ .name = "ring_window_drops" },
};
static bool read_ring_reader(const struct analyzer *a, uint64_t *v)
{
	v[0] = a->records;
	v[1] = a->bad_records;
	v[2] = a->ring_window_drops;
	return true;
}

static bool read_monitors(const struct analyzer *a, uint64_t *v)
{
	monitors__stats(a->mon, v);
	return true;
}

static const struct counter_def oap_policies[] = { { .name = "continuous_oap_policy_problems" } };
static bool read_oap_policies(const struct analyzer *a, uint64_t *v)
{
	v[0] = a->oap_policy_problems;
	return true;
}

static const struct counter_def rest[] = {
	{ .name = "rest_requests" }, { .name = "rest_puts_applied" }, { .name = "rest_puts_refused" }, { .name = "rest_gets" },
	{ .name = "rest_not_found" }, { .name = "rest_not_allowed" }, { .name = "rest_unauthorized" }, { .name = "rest_too_large" },
	{ .name = "rest_tasks_started" }, { .name = "rest_task_failures" },
	{ .name = "rest_net_processes_followed", .level = true }, { .name = "rest_flame_processes_selected", .level = true },
};
static bool read_rest(const struct analyzer *a, uint64_t *v)
{
	struct rest_api_stats r;

	if (!a->rest)
		return false;
	rest_api__stats(a->rest, &r);
	v[0] = r.requests, v[1] = r.puts_applied, v[2] = r.puts_refused, v[3] = r.gets;
	v[4] = r.not_found, v[5] = r.not_allowed, v[6] = r.unauthorized, v[7] = r.too_large;
	v[8] = r.tasks_started, v[9] = r.task_failures, v[10] = r.net_followed, v[11] = r.flame_selected;
	return true;
}

static const struct counter_def publisher[] = { { .name = "zmq_hwm_drops" }, { .name = "zmq_send_errors" } };
static bool read_publisher(const struct analyzer *a, uint64_t *v)
{
	struct publisher_stats p;

	publisher__stats(a->pub, &p);
	v[0] = p.hwm_drops, v[1] = p.errors;
	return true;
}

static const struct counter_def runner[] = {
	{ .name = "tasks_started" }, { .name = "tasks_finished" }, { .name = "tasks_running", .level = true },
};
static bool read_runner(const struct analyzer *a, uint64_t *v)
{
	struct runner_stats r;

	runner__stats(a->runner, &r);
	v[0] = r.started, v[1] = r.finished, v[2] = task_mgr__count(a->tm);
	return true;
}

static const struct counter_def requests[] = { { .name = "requests" }, { .name = "bad_requests" }, { .name = "request_reply_errors" } };
static bool read_requests(const struct analyzer *a, uint64_t *v)
{
	struct requests_stats r;

	requests__stats(a->req, &r);
	v[0] = r.requests, v[1] = r.bad_requests, v[2] = r.reply_errors;
	return true;
}

static const struct counter_def symbolizer[] = { { .name = "symbolizer_resolved" }, { .name = "symbolizer_unknown" } };
static bool read_symbolizer(const struct analyzer *a, uint64_t *v)
{
	struct symbolizer_stats s;

	symbolizer__stats(a->sym, &s);
	v[0] = s.resolved, v[1] = s.unknown;
	return true;
}

static const struct counter_def tls[] = {
	{ .name = "tls_files_examined" }, { .name = "tls_files_openssl" }, { .name = "tls_files_go" }, { .name = "tls_go_unsupported" },
	{ .name = "tls_attach_requests" }, { .name = "tls_attach_refused" }, { .name = "tls_file_errors" }, { .name = "tls_unsupported_processes" },
};
static bool read_tls(const struct analyzer *a, uint64_t *v)
{
	struct tls_finder_stats t;

	if (!a->tls)
		return false;
	tls_finder__stats(a->tls, &t);
	v[0] = t.files_examined, v[1] = t.files_openssl, v[2] = t.files_go, v[3] = t.go_unsupported;
	v[4] = t.attached, v[5] = t.refused, v[6] = t.errors, v[7] = t.unsupported;
	return true;
}

static const struct counter_def unwind[] = {
	{ .name = "unwind_processes_sent" }, { .name = "unwind_processes_frame_pointers" }, { .name = "unwind_tables_built" },
	{ .name = "unwind_tables_shared" }, { .name = "unwind_rows_sent" },
	/* Prometheus names units in base units: seconds, not microseconds */
	{ .name = "unwind_build_seconds", .per_unit = 1000000 },
	{ .name = "unwind_mappings_frame_pointers" }, { .name = "unwind_errors" },
};
static bool read_unwind(const struct analyzer *a, uint64_t *v)
{
	struct unwinder_stats u;

	if (!a->uw)
		return false;
	unwinder__stats(a->uw, &u);
	v[0] = u.procs, v[1] = u.procs_refused, v[2] = u.tables_built, v[3] = u.tables_shared;
	v[4] = u.rows_sent, v[5] = u.build_us, v[6] = u.maps_without_table, v[7] = u.errors;
	return true;
}

static const struct counter_def ring[] = { { .name = "ring_consumed" } };
static bool read_ring(const struct analyzer *a, uint64_t *v)
{
	struct shm_ring_stats r;

	shm_ring__stats(a->ring, &r);
	v[0] = r.consumed;
	return true;
}

/* What the kinds' counters come between. */
static const struct meter_source {
	const struct counter_def *defs;
	unsigned n;
	bool (*read)(const struct analyzer *a, uint64_t *v);  /* false: the module does not run here */
} before_kinds[] = {
	{ ring_reader, N(ring_reader), read_ring_reader },
}, after_kinds[] = {
	{ monitors_counters, MS_MAX, read_monitors },
	{ oap_policies, N(oap_policies), read_oap_policies },
	{ rest, N(rest), read_rest },
	{ publisher, N(publisher), read_publisher },
	{ runner, N(runner), read_runner },
	{ requests, N(requests), read_requests },
	{ symbolizer, N(symbolizer), read_symbolizer },
	{ tls, N(tls), read_tls },
	{ unwind, N(unwind), read_unwind },
	{ ring, N(ring), read_ring },
};

#define SOURCE_MAX 32  /* the largest table above */

/* Every table, four plugins' worth of kinds, the memory gauges and the collector's fit one set. */
_Static_assert(N(ring_reader) + MS_MAX + N(oap_policies) + N(rest) + N(publisher) + N(runner) + N(requests) +
	       N(symbolizer) + N(tls) + N(unwind) + N(ring) + 4 * ANALYZER_KIND_COUNTERS_MAX + 4 + CTL_STAT_MAX <=
	       BUS_METER_SET_MAX, "the analyzer's meters fit a meter set");

static void add_sources(const struct analyzer *a, struct bus_meter_set *ms, const struct meter_source *s, unsigned n,
			uint64_t ts)
{
	uint64_t v[SOURCE_MAX];

	for (unsigned i = 0; i < n; i++)
		if (s[i].n <= SOURCE_MAX && s[i].read(a, v))
			bus__meter_set_add_counters(ms, s[i].defs, v, s[i].n, ts);
}

void analyzer__meters(struct analyzer *a, struct bus_meter_set *ms, bool with_collector)
{
	static Ember__Label shard_label = EMBER__LABEL__INIT, *labels[1] = { &shard_label };
	static char shard_buf[16];
	const struct analyzer_kind_ops *ops;
	uint64_t ts = timeutil__unix_ms(), v[ANALYZER_KIND_COUNTERS_MAX];
	struct ctl_stats_ans cs;
	void *impl;

	snprintf(shard_buf, sizeof(shard_buf), "%u", a->shard);
	shard_label.name = "analyzer";
	shard_label.value = shard_buf;
	bus__meter_set_reset(ms, labels, 1);
	add_sources(a, ms, before_kinds, N(before_kinds), ts);
	for (unsigned i = 0; analyzer_kinds__plugin(a->kinds, i, &ops, &impl); i++)
		if (ops->stats && ops->ncounters <= ANALYZER_KIND_COUNTERS_MAX) {
			ops->stats(impl, v);
			bus__meter_set_add_counters(ms, ops->counters, v, ops->ncounters, ts);
		}
	add_sources(a, ms, after_kinds, N(after_kinds), ts);
	bus__meter_set_add_memory(ms, "analyzer", ts);
	if (with_collector && !ctl_client__stats(a->cc, &cs))
		for (unsigned i = 0; i < CTL_STAT_MAX && i < cs.n; i++)
			bus__meter_set_add(ms, ctl__stat_name(i), cs.v[i], !ctl__stat_is_level(i), ts);
}
