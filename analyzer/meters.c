/*
 * The analyzer's own meters: one loop over counter tables (common/counters.h).
 * Each module owns its table and fills its counters array (x_counters,
 * x__stats); a profiler kind's come through its ops (analyzer/kinds.h: a new
 * kind's counters need nothing here).  Below is the list of tables in the
 * order they are published, each with the one line that finds its module
 * in the analyzer object; the analyzer object's own counters (the ring's
 * reader's in main.c, the OAP policies') are described here, beside it.
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

static const struct counter_def oap_policies[] = { { .name = "continuous_oap_policy_problems" } };
static bool read_oap_policies(const struct analyzer *a, uint64_t *v)
{
	v[0] = a->oap_policy_problems;
	return true;
}

/*
 * The symbolizer, the TLS finder and the unwinder count in a struct of
 * their own still: their tables and field readers stay here until those
 * modules own theirs as the others do.
 */
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

/* The modules that own their tables: which object each is, false when it does not run here. */
static bool read_monitors(const struct analyzer *a, uint64_t *v) { monitors__stats(a->mon, v); return true; }
static bool read_rest(const struct analyzer *a, uint64_t *v) { if (a->rest) rest_api__stats(a->rest, v); return a->rest; }
static bool read_publisher(const struct analyzer *a, uint64_t *v) { publisher__stats(a->pub, v); return true; }
static bool read_runner(const struct analyzer *a, uint64_t *v) { runner__stats(a->runner, v); return true; }
static bool read_requests(const struct analyzer *a, uint64_t *v) { requests__stats(a->req, v); return true; }
static bool read_ring(const struct analyzer *a, uint64_t *v) { shm_ring__consumer_stats(a->ring, v); return true; }

/* Every table, in the order published; the kinds' come where defs is NULL. */
static const struct meter_source {
	const struct counter_def *defs;
	unsigned n;
	bool (*read)(const struct analyzer *a, uint64_t *v);  /* false: the module does not run here */
} sources[] = {
	{ ring_reader, N(ring_reader), read_ring_reader },
	{ NULL, 0, NULL },   /* the profiler kinds, through their ops */
	{ monitors_counters, MS_MAX, read_monitors },
	{ oap_policies, N(oap_policies), read_oap_policies },
	{ rest_api_counters, RAS_MAX, read_rest },
	{ publisher_counters, PUBS_MAX, read_publisher },
	{ runner_counters, RUNS_MAX, read_runner },
	{ requests_counters, RQS_MAX, read_requests },
	{ symbolizer, N(symbolizer), read_symbolizer },
	{ tls, N(tls), read_tls },
	{ unwind, N(unwind), read_unwind },
	{ shm_ring_consumer_counters, SRC_MAX, read_ring },
};

#define SOURCE_MAX 32  /* the largest table above */

/* Every table, four plugins' worth of kinds, the memory gauges and the collector's fit one set. */
_Static_assert(N(ring_reader) + MS_MAX + N(oap_policies) + RAS_MAX + PUBS_MAX + RUNS_MAX + RQS_MAX +
	       N(symbolizer) + N(tls) + N(unwind) + SRC_MAX + 4 * ANALYZER_KIND_COUNTERS_MAX + 4 + CTL_STAT_MAX <=
	       BUS_METER_SET_MAX, "the analyzer's meters fit a meter set");
_Static_assert(MS_MAX <= SOURCE_MAX && RAS_MAX <= SOURCE_MAX, "the largest tables fit a source's array");

static void add_kinds(const struct analyzer *a, struct bus_meter_set *ms, uint64_t ts)
{
	const struct analyzer_kind_ops *ops;
	uint64_t v[ANALYZER_KIND_COUNTERS_MAX];
	void *impl;

	for (unsigned i = 0; analyzer_kinds__plugin(a->kinds, i, &ops, &impl); i++)
		if (ops->stats && ops->ncounters <= ANALYZER_KIND_COUNTERS_MAX) {
			ops->stats(impl, v);
			bus__meter_set_add_counters(ms, ops->counters, v, ops->ncounters, ts);
		}
}

void analyzer__meters(struct analyzer *a, struct bus_meter_set *ms, bool with_collector)
{
	static Ember__Label shard_label = EMBER__LABEL__INIT, *labels[1] = { &shard_label };
	static char shard_buf[16];
	uint64_t ts = timeutil__unix_ms(), v[SOURCE_MAX];
	struct ctl_stats_ans cs;

	snprintf(shard_buf, sizeof(shard_buf), "%u", a->shard);
	shard_label.name = "analyzer";
	shard_label.value = shard_buf;
	bus__meter_set_reset(ms, labels, 1);
	for (unsigned i = 0; i < N(sources); i++) {
		const struct meter_source *s = &sources[i];

		if (!s->defs)
			add_kinds(a, ms, ts);
		else if (s->n <= SOURCE_MAX && s->read(a, v))
			bus__meter_set_add_counters(ms, s->defs, v, s->n, ts);
	}
	bus__meter_set_add_memory(ms, "analyzer", ts);
	if (with_collector && !ctl_client__stats(a->cc, &cs))
		for (unsigned i = 0; i < CTL_STAT_MAX && i < cs.n; i++)
			bus__meter_set_add(ms, ctl__stat_name(i), cs.v[i], !ctl__stat_is_level(i), ts);
}
