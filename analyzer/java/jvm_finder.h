/*
 * The analyzer's half of Java frames: for each target process of a stack
 * task that maps HotSpot's libjvm.so, a JAVA_ATTACH request, with which the
 * collector loads ember's JVMTI agent into that JVM (collector/jattach.h);
 * the agent writes the JVM's perf map, which the symbolizer reads like any
 * JIT's (symbolizer/perfmap.h).  Created only when profiling.java.agent is
 * on: the agent loads code into the target.
 *
 * A handler of the mapping manager (analyzer/mappings.h), following the
 * same processes as the unwinder (tag 0).  It examines no file: the
 * mapping's name only chooses the processes to ask about, and the
 * collector checks the process itself (it must map a libjvm.so, as the
 * target's user sees it).  The collector asks each process once.
 */
#ifndef EMBER_ANALYZER_JAVA_JVM_FINDER_H
#define EMBER_ANALYZER_JAVA_JVM_FINDER_H

#include <stdint.h>

#include "analyzer/mappings.h"
#include "common/counters.h"
#include "common/ctl_client.h"

struct jvm_finder_opts {
	struct ctl_client *cc;   /* borrowed */
};

enum jvm_finder_stat {
	JVMF_PROCS,       /* JVMs the collector was asked to load the agent into */
	JVMF_ALREADY,     /* ... asked again, at a later look: the collector had asked it already */
	JVMF_REFUSED,     /* ... requests the collector refused (the reason in the analyzer's log) */
	JVMF_MAX
};
extern const struct counter_def jvm_finder_counters[JVMF_MAX];

struct jvm_finder;

/* NULL + errno. */
struct jvm_finder *jvm_finder__new(const struct jvm_finder_opts *o);
/* The manager's handler (ctx = f): follow the targets of stack tasks with it, tag 0.  A look's result is
 * 0, or the collector's refusal (-errno; -EOPNOTSUPP: the collector has no agent to load). */
void jvm_finder__handler(struct jvm_finder *f, struct mappings_handler *ret);
void jvm_finder__stats(const struct jvm_finder *f, uint64_t ret[JVMF_MAX]);
/* Accepts NULL.  Returns NULL. */
struct jvm_finder *jvm_finder__free(struct jvm_finder *f);

#endif
