/*
 * The counters convention.  A module that counts keeps its counters in a
 * uint64_t array indexed by its own enum (X_MAX last) and describes that
 * array once, in a const table of struct counter_def beside its enum's
 * names: the published name (without the "ember_" prefix the bus adds),
 * whether it is a level (how many now) rather than a running total, and the
 * unit it is counted in when it is published in another.  Whoever
 * publishes counters loops over such tables (bus__meter_set_add_counters),
 * so a new counter is one enum value and one table line, and a new
 * module's counters are one more table in its publisher's list.
 */
#ifndef EMBER_COMMON_COUNTERS_H
#define EMBER_COMMON_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>

struct counter_def {
	const char *name;
	bool level;         /* a gauge: how many now, not a running total */
	uint32_t per_unit;  /* 0: published as counted; else counted in 1/per_unit of the published unit */
};

#endif
