/* The profiler-kind table: see profile_kind.h. */
#include "common/profile_kind.h"

#include <string.h>

#include "bpf/ember_abi.h"
#include "common/profile_files.h"
#include "proto/ember.pb-c.h"

/* A kind has one number: the ring's and the bus's agree, so a row serves both. */
_Static_assert((int)EMBER_TASK_ONCPU == (int)EMBER__TASK_KIND__ON_CPU, "on-CPU: ABI and proto numbers differ");
_Static_assert((int)EMBER_TASK_OFFCPU == (int)EMBER__TASK_KIND__OFF_CPU, "off-CPU: ABI and proto numbers differ");
_Static_assert((int)EMBER_TASK_MEM == (int)EMBER__TASK_KIND__MEM, "memory: ABI and proto numbers differ");
_Static_assert((int)EMBER_TASK_NETWORK == (int)EMBER__TASK_KIND__NETWORK, "network: ABI and proto numbers differ");
_Static_assert((int)EMBER_TASK_THREADS == (int)EMBER__TASK_KIND__THREADS, "threads: ABI and proto numbers differ");

#define FLAME_FILES (1u << PF_FOLDED | 1u << PF_SVG)

/* Indexed by id; row 0 (TASK_KIND_UNSPECIFIED) is no kind. */
static const struct profile_kind kinds[] = {
	[EMBER_TASK_ONCPU] = {
		.id = EMBER_TASK_ONCPU, .wire = EMBER__TASK_KIND__ON_CPU,
		.name = "oncpu", .cli_alias = "on_cpu", .rest = "oncpu", .oap = "ON_CPU", .adjective = "on-CPU",
		.title = "On-CPU flame graph", .unit = "samples",
		.pyroscope = "cpu", .pyroscope_units = "samples", .pyroscope_rate = 100,
		.flags = PROFILE_KIND_STACKS | PROFILE_KIND_UNWINDS | PROFILE_KIND_PERIOD, .files = FLAME_FILES,
	},
	[EMBER_TASK_OFFCPU] = {
		.id = EMBER_TASK_OFFCPU, .wire = EMBER__TASK_KIND__OFF_CPU,
		.name = "offcpu", .cli_alias = "off_cpu", .rest = "offcpu", .oap = "OFF_CPU", .adjective = "off-CPU",
		.title = "Off-CPU flame graph (time blocked)", .count_title = "Off-CPU flame graph (switch count)",
		.unit = "switches", .weight_unit = "µs",
		/* the weight graph is in µs: a million per second */
		.pyroscope = "off_cpu", .pyroscope_units = "samples", .pyroscope_rate = 1000000,
		.flags = PROFILE_KIND_STACKS | PROFILE_KIND_UNWINDS | PROFILE_KIND_WEIGHTED,
		.files = FLAME_FILES | 1u << PF_COUNT_FOLDED | 1u << PF_COUNT_SVG,
	},
	[EMBER_TASK_MEM] = {
		.id = EMBER_TASK_MEM, .wire = EMBER__TASK_KIND__MEM,
		.name = "mem", .rest = "mem", .adjective = "memory",
		.title = "Memory (page fault) flame graph", .unit = "faults",
		.pyroscope = "mem", .pyroscope_units = "objects", .pyroscope_rate = 100,
		.flags = PROFILE_KIND_STACKS | PROFILE_KIND_UNWINDS, .files = FLAME_FILES,
	},
	[EMBER_TASK_NETWORK] = {
		.id = EMBER_TASK_NETWORK, .wire = EMBER__TASK_KIND__NETWORK,
		.name = "network", .oap = "NETWORK", .adjective = "network",
		.flags = PROFILE_KIND_NETWORK, .files = 1u << PF_NETWORK_JSON | 1u << PF_NETWORK_TXT,
	},
	[EMBER_TASK_THREADS] = {
		.id = EMBER_TASK_THREADS, .wire = EMBER__TASK_KIND__THREADS,
		.name = "threads", .cli_alias = "tprofiling", .adjective = "thread",
		.flags = PROFILE_KIND_THREADS | PROFILE_KIND_UNWINDS, .files = 1u << PF_THREADS_JSON | 1u << PF_TIMELINE_HTML,
	},
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

const struct profile_kind *profile_kind__by_id(uint32_t id)
{
	return id < NKINDS && kinds[id].name ? &kinds[id] : NULL;
}

const struct profile_kind *profile_kind__by_wire(int wire)
{
	return wire >= 0 ? profile_kind__by_id((uint32_t)wire) : NULL;
}

const struct profile_kind *profile_kind__at(unsigned i)
{
	for (uint32_t id = 0; id < NKINDS; id++)
		if (kinds[id].name && !i--)
			return &kinds[id];
	return NULL;
}

uint32_t profile_kind__mask(unsigned flags)
{
	uint32_t m = 0;

	_Static_assert(NKINDS <= 32, "kind ids fit a 32-bit mask");
	for (uint32_t id = 0; id < NKINDS; id++)
		if (kinds[id].name && (kinds[id].flags & flags) == flags)
			m |= 1u << id;
	return m;
}

enum spelling { S_NAME, S_CLI, S_REST, S_OAP };

/* Names come from users, REST bodies and the OAP: bounded before they are compared. */
static const struct profile_kind *lookup(const char *s, enum spelling how)
{
	if (!s || !*s || strnlen(s, PROFILE_KIND_NAME_MAX + 1) > PROFILE_KIND_NAME_MAX)
		return NULL;
	for (uint32_t id = 0; id < NKINDS; id++) {
		const struct profile_kind *k = &kinds[id];
		const char *v[3] = { NULL, NULL, NULL };

		if (!k->name)
			continue;
		switch (how) {
		case S_NAME: v[0] = k->name; break;
		case S_CLI: v[0] = k->name, v[1] = k->cli_alias, v[2] = k->oap; break;
		case S_REST: v[0] = k->rest; break;
		case S_OAP: v[0] = k->oap; break;
		}
		for (unsigned i = 0; i < 3; i++)
			if (v[i] && !strcmp(s, v[i]))
				return k;
	}
	return NULL;
}

const struct profile_kind *profile_kind__by_name(const char *s) { return lookup(s, S_NAME); }
const struct profile_kind *profile_kind__by_cli(const char *s) { return lookup(s, S_CLI); }
const struct profile_kind *profile_kind__by_rest(const char *s) { return lookup(s, S_REST); }
const struct profile_kind *profile_kind__by_oap(const char *s) { return lookup(s, S_OAP); }
