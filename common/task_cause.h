/*
 * Why a continuous-profiling policy started a task: one item that held.
 * One plain struct for every holder (the analyzer's task definitions, the
 * exporter's backends) and the one conversion to and from the message
 * (proto/ember.proto TriggerCause).
 */
#ifndef EMBER_COMMON_TASK_CAUSE_H
#define EMBER_COMMON_TASK_CAUSE_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/ember.pb-c.h"

struct task_cause {
	char monitor[32];
	double threshold, current;
	uint32_t pid, period_s, count, matched;
	char uri[200];
	bool uri_is_regex;
	char policy[72];
	char comm[16];
};

/* Copies m into d (strings cut to their fields, NULL as ""). */
void task_cause__from_pb(struct task_cause *d, const Ember__TriggerCause *m);
/* Fills m from c; m's strings point into c, which must outlive it. */
void task_cause__to_pb(Ember__TriggerCause *m, const struct task_cause *c);

#endif
