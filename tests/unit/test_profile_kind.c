/* common/profile_kind: the profiler-kind table.  Every spelling of a kind
 * finds its row again, hostile or odd names find none, and what the table
 * says (file names, titles, units, names) is what the code before it wrote:
 * the expected values below are copied from the switches the table replaced
 * (common/profile_files.c, cli/profile.c, exporter/file_backend.c,
 * kafka_backend.c, pyroscope_backend.c, exporter/skywalking/, analyzer/). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "analyzer/rest/rest_doc.h"
#include "bpf/ember_abi.h"
#include "common/cp_policy.h"
#include "common/profile_files.h"
#include "common/profile_kind.h"
#include "exporter/skywalking/codec.h"

struct want {
	uint32_t id;
	const char *name, *rest, *oap, *adjective, *title, *count_title, *unit, *weight_unit;
	const char *pyro, *pyro_units;
	uint64_t pyro_rate;
	const char *files[PF_MAX];	/* NULL: -ENOENT */
	const char *cli[4];		/* every --type spelling the CLI took */
};

static const struct want want[] = {
	{ EMBER_TASK_ONCPU, "oncpu", "oncpu", "ON_CPU", "on-CPU", "On-CPU flame graph", NULL, "samples", NULL,
	  "cpu", "samples", 100,
	  { [PF_FOLDED] = "oncpu.folded", [PF_SVG] = "oncpu.svg", [PF_TASK_JSON] = "task.json" },
	  { "oncpu", "on_cpu", "ON_CPU", NULL } },
	{ EMBER_TASK_OFFCPU, "offcpu", "offcpu", "OFF_CPU", "off-CPU", "Off-CPU flame graph (time blocked)",
	  "Off-CPU flame graph (switch count)", "switches", "µs", "off_cpu", "samples", 1000000,
	  { [PF_FOLDED] = "offcpu.folded", [PF_SVG] = "offcpu.svg", [PF_COUNT_FOLDED] = "offcpu.count.folded",
	    [PF_COUNT_SVG] = "offcpu.count.svg", [PF_TASK_JSON] = "task.json" },
	  { "offcpu", "off_cpu", "OFF_CPU", NULL } },
	{ EMBER_TASK_MEM, "mem", "mem", NULL, "memory", "Memory (page fault) flame graph", NULL, "faults", NULL,
	  "mem", "objects", 100,
	  { [PF_FOLDED] = "mem.folded", [PF_SVG] = "mem.svg", [PF_TASK_JSON] = "task.json" },
	  { "mem", NULL } },
	{ EMBER_TASK_NETWORK, "network", NULL, "NETWORK", "network", NULL, NULL, NULL, NULL, NULL, NULL, 0,
	  { [PF_NETWORK_JSON] = "network.json", [PF_NETWORK_TXT] = "network.txt", [PF_TASK_JSON] = "task.json" },
	  { "network", "NETWORK", NULL } },
	{ EMBER_TASK_THREADS, "threads", NULL, NULL, "thread", NULL, NULL, NULL, NULL, NULL, NULL, 0,
	  { [PF_THREADS_JSON] = "threads.json", [PF_TIMELINE_HTML] = "threads.html", [PF_TASK_JSON] = "task.json" },
	  { "threads", "tprofiling", NULL } },
};
#define NWANT (sizeof(want) / sizeof(want[0]))

static void str_eq(const char *got, const char *exp)
{
	if (!exp)
		assert_null(got);
	else
		assert_string_equal(got, exp);
}

/* The rows hold what the old switches wrote, and the ids are the ABI's and the proto's. */
static void test_rows(void **state)
{
	(void)state;
	for (unsigned i = 0; i < NWANT; i++) {
		const struct want *w = &want[i];
		const struct profile_kind *k = profile_kind__by_id(w->id);

		assert_non_null(k);
		assert_ptr_equal(profile_kind__at(i), k);
		assert_int_equal(k->id, w->id);
		assert_int_equal(k->wire, (int)w->id);
		assert_ptr_equal(profile_kind__by_wire((int)w->id), k);
		str_eq(k->name, w->name);
		str_eq(k->rest, w->rest);
		str_eq(k->oap, w->oap);
		str_eq(k->adjective, w->adjective);
		str_eq(k->title, w->title);
		str_eq(k->count_title, w->count_title);
		str_eq(k->unit, w->unit);
		str_eq(k->weight_unit, w->weight_unit);
		str_eq(k->pyroscope, w->pyro);
		str_eq(k->pyroscope_units, w->pyro_units);
		assert_int_equal(k->pyroscope_rate, w->pyro_rate);
		/* the flags agree with what the row fills in */
		assert_int_equal(!!(k->flags & PROFILE_KIND_STACKS), k->title && k->unit);
		assert_int_equal(!!(k->flags & PROFILE_KIND_WEIGHTED), k->count_title && k->weight_unit);
		assert_int_equal(!!(k->flags & PROFILE_KIND_NETWORK), w->id == EMBER_TASK_NETWORK);
		assert_int_equal(!!(k->flags & PROFILE_KIND_PERIOD), w->id == EMBER_TASK_ONCPU);
		assert_int_equal(!!(k->flags & PROFILE_KIND_THREADS), w->id == EMBER_TASK_THREADS);
		/* every kind that walks user stacks is served the unwind tables */
		assert_int_equal(!!(k->flags & PROFILE_KIND_UNWINDS),
				 !!(k->flags & (PROFILE_KIND_STACKS | PROFILE_KIND_THREADS)));
	}
	assert_null(profile_kind__at(NWANT));
	assert_null(profile_kind__by_id(0));
	assert_null(profile_kind__by_id(EMBER_TASK_THREADS + 1));
	assert_null(profile_kind__by_id(UINT32_MAX));
	assert_null(profile_kind__by_wire(0));
	assert_null(profile_kind__by_wire(-1));
	assert_null(profile_kind__by_wire(EMBER_TASK_THREADS + 1));
}

/* Each kind's files are named as common/profile_files.c named them before the table. */
/* The collector's kind sets: which tasks drain stacks, which run the network timer. */
static void test_masks(void **state)
{
	(void)state;
	assert_int_equal(profile_kind__mask(PROFILE_KIND_STACKS),
			 (1u << EMBER_TASK_ONCPU) | (1u << EMBER_TASK_OFFCPU) | (1u << EMBER_TASK_MEM));
	assert_int_equal(profile_kind__mask(PROFILE_KIND_NETWORK), 1u << EMBER_TASK_NETWORK);
	assert_int_equal(profile_kind__mask(PROFILE_KIND_STACKS | PROFILE_KIND_WEIGHTED), 1u << EMBER_TASK_OFFCPU);
	assert_int_equal(profile_kind__mask(PROFILE_KIND_STACKS | PROFILE_KIND_NETWORK), 0);
}

static void test_file_names(void **state)
{
	char buf[64];

	(void)state;
	for (unsigned i = 0; i < NWANT; i++)
		for (int f = 0; f < PF_MAX; f++) {
			int n = profile_files__name((Ember__TaskKind)want[i].id, (enum profile_file)f, buf, sizeof(buf));

			if (!want[i].files[f]) {
				assert_int_equal(n, -ENOENT);
				continue;
			}
			assert_int_equal(n, (int)strlen(want[i].files[f]));
			assert_string_equal(buf, want[i].files[f]);
		}
	assert_string_equal(profile_files__kind(EMBER__TASK_KIND__OFF_CPU), "offcpu");
	assert_string_equal(profile_files__kind(EMBER__TASK_KIND__TASK_KIND_UNSPECIFIED), "profile");
	assert_string_equal(profile_files__kind((Ember__TaskKind)99), "profile");
	assert_int_equal(profile_files__name(EMBER__TASK_KIND__ON_CPU, PF_MAX, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(profile_files__name((Ember__TaskKind)99, PF_FOLDED, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(profile_files__name(EMBER__TASK_KIND__TASK_KIND_UNSPECIFIED, PF_TASK_JSON, buf, sizeof(buf)),
			 -EINVAL);
	assert_int_equal(profile_files__name(EMBER__TASK_KIND__ON_CPU, (enum profile_file)-1, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(profile_files__name(EMBER__TASK_KIND__OFF_CPU, PF_COUNT_FOLDED, buf, 19), -ENAMETOOLONG);
	assert_int_equal(profile_files__name(EMBER__TASK_KIND__OFF_CPU, PF_COUNT_FOLDED, buf, 20), 19);
	assert_int_equal(profile_files__name(EMBER__TASK_KIND__MEM, PF_TASK_JSON, buf, 9), -ENAMETOOLONG);
}

/* Every spelling finds its row; each lookup takes its own audience's spellings only. */
static void test_names_round_trip(void **state)
{
	(void)state;
	for (unsigned i = 0; i < NWANT; i++) {
		const struct profile_kind *k = profile_kind__by_id(want[i].id);

		assert_ptr_equal(profile_kind__by_name(want[i].name), k);
		for (unsigned c = 0; want[i].cli[c]; c++)
			assert_ptr_equal(profile_kind__by_cli(want[i].cli[c]), k);
		if (want[i].rest)
			assert_ptr_equal(profile_kind__by_rest(want[i].rest), k);
		if (want[i].oap) {
			assert_ptr_equal(profile_kind__by_oap(want[i].oap), k);
			assert_null(profile_kind__by_name(want[i].oap));
			assert_null(profile_kind__by_rest(want[i].oap));
		}
		assert_null(profile_kind__by_oap(want[i].name));
	}
	assert_null(profile_kind__by_rest("network"));
	assert_null(profile_kind__by_rest("on_cpu"));
	assert_null(profile_kind__by_oap("MEM"));
	assert_null(profile_kind__by_name("on_cpu"));
	/* the OAP's and Rover's target names (cp_policy) and gala-gopher's flamegraph sub-items
	 * that start tasks (analyzer/rest) all have a row */
	for (unsigned t = 0; t < CP_TARGET_ROVER_MAX; t++)
		assert_non_null(profile_kind__by_oap(cp_target__name((enum cp_target)t)));
	/* ember's own target is a kind the OAP cannot name */
	assert_string_equal(cp_target__name(CP_TARGET_THREADS), "THREADS");
	assert_null(profile_kind__by_oap("THREADS"));
	for (unsigned p = REST_PROBE_ONCPU; p <= REST_PROBE_MEM; p++)
		assert_non_null(profile_kind__by_rest(rest_doc__probe_name(REST_FLAMEGRAPH, p)));
	assert_null(profile_kind__by_rest(rest_doc__probe_name(REST_FLAMEGRAPH, REST_PROBE_MEM_GLIBC)));
}

/* The SkyWalking backend's target types and the table's OAP names agree both ways. */
static void test_oap_targets(void **state)
{
	(void)state;
	for (int t = SW_TARGET_ON_CPU; t <= SW_TARGET_NETWORK; t++) {
		const struct profile_kind *k = profile_kind__by_oap(sw_target__name((enum sw_target)t));

		assert_non_null(k);
		assert_int_equal(sw_target__kind((enum sw_target)t), k->wire);
		assert_int_equal(sw_target__of_kind((Ember__TaskKind)k->wire), t);
	}
	for (unsigned i = 0; profile_kind__at(i); i++)
		if (profile_kind__at(i)->oap)
			assert_int_not_equal(sw_target__of(profile_kind__at(i)->oap), SW_TARGET_NONE);
	assert_null(sw_target__name(SW_TARGET_NONE));
	assert_int_equal(sw_target__of("on_cpu"), SW_TARGET_NONE);
	assert_int_equal(sw_target__of(NULL), SW_TARGET_NONE);
	/* what the backend did before for the kinds the OAP has no target for */
	assert_int_equal(sw_target__of_kind(EMBER__TASK_KIND__MEM), SW_TARGET_ON_CPU);
	assert_int_equal(sw_target__kind(SW_TARGET_NONE), EMBER__TASK_KIND__ON_CPU);
}

/* What `ember profile --type` refused before the table, it refuses still; hostile names find nothing. */
static void test_refused(void **state)
{
	static const char *const bad[] = {
		"", "ONCPU", "OnCpu", "Oncpu", "oncpu ", " oncpu", "oncpu\n", "on-cpu", "on_CPU", "Mem", "MEM",
		"memory", "NetWork", "Network", "net", "offcpu\t", "OFFCPU", "profile", "1", "0",
		"oncpuoncpuoncpuoncpuoncpuoncpu", "networknetworknetworknetwork",
	};
	char nul_free[PROFILE_KIND_NAME_MAX + 1];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_null(profile_kind__by_cli(bad[i]));
		assert_null(profile_kind__by_name(bad[i]));
		assert_null(profile_kind__by_rest(bad[i]));
		assert_null(profile_kind__by_oap(bad[i]));
	}
	assert_null(profile_kind__by_cli(NULL));
	assert_null(profile_kind__by_name(NULL));
	assert_null(profile_kind__by_rest(NULL));
	assert_null(profile_kind__by_oap(NULL));
	/* a known name in a buffer with no NUL within the bound: refused without reading past it (ASan) */
	memset(nul_free, ' ', sizeof(nul_free));
	memcpy(nul_free, "oncpu", 5);
	assert_null(profile_kind__by_cli(nul_free));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_masks),
		cmocka_unit_test(test_file_names),
		cmocka_unit_test(test_names_round_trip),
		cmocka_unit_test(test_oap_targets),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
