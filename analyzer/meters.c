/*
 * The analyzer's own meters: one loop over counter tables (common/counters.h).
 * Each module owns its table and fills its counters array (x_counters,
 * x__stats); a profiler kind's come through its ops (analyzer/kinds.h: a new
 * kind's counters need nothing here).  Below is the list of tables in the
 * order they are published, each with the one line that finds its module
 * in the analyzer object (the analyzer object's own, the ring's reader's
 * and the OAP policies', are main.c's: analyzer.h).
 */
#include <stdio.h>
#include <string.h>

#include "analyzer/analyzer.h"
#include "analyzer/continuous/monitors.h"
#include "analyzer/kinds.h"
#include "analyzer/mappings.h"
#include "analyzer/publisher.h"
#include "analyzer/requests.h"
#include "analyzer/rest/rest_api.h"
#include "analyzer/runner.h"
#include "analyzer/tasks.h"
#include "analyzer/python/py_finder.h"
#include "analyzer/java/jvm_finder.h"
#include "analyzer/tls/tls_finder.h"
#include "analyzer/unwind/unwinder.h"
#include "common/ctl_client.h"
#include "common/shm_ring.h"
#include "common/timeutil.h"
#include "symbolizer/symbolizer.h"

/* Where each module is in the analyzer object; false when it does not run here. */
static bool read_ring_reader(const struct analyzer *a, uint64_t *v) { memcpy(v, a->ring_st, sizeof(a->ring_st)); return true; }
static bool read_oap(const struct analyzer *a, uint64_t *v) { memcpy(v, a->oap_st, sizeof(a->oap_st)); return true; }
static bool read_monitors(const struct analyzer *a, uint64_t *v) { monitors__stats(a->mon, v); return true; }
static bool read_rest(const struct analyzer *a, uint64_t *v) { if (a->rest) rest_api__stats(a->rest, v); return a->rest; }
static bool read_publisher(const struct analyzer *a, uint64_t *v) { publisher__stats(a->pub, v); return true; }
static bool read_runner(const struct analyzer *a, uint64_t *v) { runner__stats(a->runner, v); return true; }
static bool read_requests(const struct analyzer *a, uint64_t *v) { requests__stats(a->req, v); return true; }
static bool read_symbolizer(const struct analyzer *a, uint64_t *v) { symbolizer__counters(a->sym, v); return true; }
static bool read_mappings(const struct analyzer *a, uint64_t *v) { if (a->maps) mappings__counters(a->maps, v); return a->maps; }
static bool read_tls(const struct analyzer *a, uint64_t *v) { if (a->tls) tls_finder__stats(a->tls, v); return a->tls; }
static bool read_unwind(const struct analyzer *a, uint64_t *v) { if (a->uw) unwinder__stats(a->uw, v); return a->uw; }
static bool read_python(const struct analyzer *a, uint64_t *v) { if (a->py) py_finder__stats(a->py, v); return a->py; }
static bool read_java(const struct analyzer *a, uint64_t *v) { if (a->jvm) jvm_finder__stats(a->jvm, v); return a->jvm; }
static bool read_ring(const struct analyzer *a, uint64_t *v) { shm_ring__consumer_stats(a->ring, v); return true; }

/* Every table, in the order published; the kinds' come where defs is NULL. */
static const struct meter_source {
	const struct counter_def *defs;
	unsigned n;
	bool (*read)(const struct analyzer *a, uint64_t *v);  /* false: the module does not run here */
} sources[] = {
	{ analyzer_ring_counters, ARS_MAX, read_ring_reader },
	{ NULL, 0, NULL },   /* the profiler kinds, through their ops */
	{ monitors_counters, MS_MAX, read_monitors },
	{ analyzer_oap_counters, AOS_MAX, read_oap },
	{ rest_api_counters, RAS_MAX, read_rest },
	{ publisher_counters, PUBS_MAX, read_publisher },
	{ runner_counters, RUNS_MAX, read_runner },
	{ requests_counters, RQS_MAX, read_requests },
	{ symbolizer_counters, SYMC_MAX, read_symbolizer },
	{ mappings_counters, MAPC_MAX, read_mappings },
	{ tls_finder_counters, TLSF_MAX, read_tls },
	{ unwinder_counters, UNWS_MAX, read_unwind },
	{ py_finder_counters, PYF_MAX, read_python },
	{ jvm_finder_counters, JVMF_MAX, read_java },
	{ shm_ring_consumer_counters, SRC_MAX, read_ring },
};

#define SOURCE_MAX 32  /* the largest table above */

/* Every table, four plugins' worth of kinds, the memory gauges and the collector's fit one set. */
_Static_assert(ARS_MAX + MS_MAX + AOS_MAX + RAS_MAX + PUBS_MAX + RUNS_MAX + RQS_MAX +
	       SYMC_MAX + MAPC_MAX + TLSF_MAX + UNWS_MAX + SRC_MAX + 4 * ANALYZER_KIND_COUNTERS_MAX + 4 + CTL_STAT_MAX <=
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
	for (unsigned i = 0; i < sizeof(sources) / sizeof(sources[0]); i++) {
		const struct meter_source *s = &sources[i];

		if (!s->defs)
			add_kinds(a, ms, ts);
		else if (s->n <= SOURCE_MAX && s->read(a, v))
			bus__meter_set_add_counters(ms, s->defs, v, s->n, ts);
	}
	bus__meter_set_add_memory(ms, "analyzer", ts);
	if (with_collector && !ctl_client__stats(a->cc, &cs))
		bus__meter_set_add_counters(ms, ctl_stat_counters, cs.v, cs.n < CTL_STAT_MAX ? cs.n : CTL_STAT_MAX, ts);
}
