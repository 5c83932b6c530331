/*
 * The analyzer object (one per process, built by main.c): its
 * configuration and shard, the collector's connection and ring, the
 * modules main.c wires together, the profiler kinds (analyzer/kinds.h) and
 * the counters main.c keeps itself.  main.c's loop and every callback it
 * gives the modules work on it (their ctx); analyzer/meters.c reads it.
 */
#ifndef EMBER_ANALYZER_ANALYZER_H
#define EMBER_ANALYZER_ANALYZER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/bus.h"
#include "common/counters.h"

struct ember_config;
struct ctl_client;
struct shm_ring;
struct symbolizer;
struct unwinder;
struct tls_finder;
struct py_finder;
struct jvm_finder;
struct debuginfod;
struct task_mgr;
struct publisher;
struct analyzer_kinds;
struct task_runner;
struct request_server;
struct monitors;
struct rest_api;

/* The ring's reader's counters (main.c; common/counters.h), by enum analyzer_ring_stat. */
enum analyzer_ring_stat {
	ARS_RECORDS,             /* records read, of any type */
	ARS_BAD_RECORDS,         /* records whose lengths do not add up, or of no kind */
	ARS_WINDOW_DROPS,        /* the ring's drops the collector's windows report */
	ARS_MAX
};
extern const struct counter_def analyzer_ring_counters[ARS_MAX];

/* The OAP's continuous-profiling policies' (main.c), by enum analyzer_oap_stat. */
enum analyzer_oap_stat {
	AOS_POLICY_PROBLEMS,     /* policy items ignored */
	AOS_MAX
};
extern const struct counter_def analyzer_oap_counters[AOS_MAX];

struct analyzer {
	struct ember_config *cfg;
	unsigned shard, nshards;
	void *zctx;
	struct ctl_client *cc;
	struct shm_ring *ring;
	bool ring_held;              /* a drain's stacks are held in the ring (on_record) */
	struct symbolizer *sym;
	struct mappings *maps;        /* followed processes' executable mappings, for uw and tls */
	struct unwinder *uw;          /* NULL: frame pointers only */
	struct py_finder *py;         /* NULL: no Python frames */
	struct jvm_finder *jvm;       /* NULL: no Java agent (profiling.java.agent off) */
	struct tls_finder *tls;       /* NULL: no TLS plaintext */
	struct debuginfod *dinfod;    /* NULL unless symbolizer.debuginfod.enabled */
	struct task_mgr *tm;
	struct publisher *pub;
	struct analyzer_kinds *kinds;
	struct task_runner *runner;
	struct request_server *req;
	struct monitors *mon;         /* continuous profiling */
	struct rest_api *rest;        /* the REST control API (the first analyzer, when enabled) */
	uint64_t oap_st[AOS_MAX];
	uint64_t oap_policy_print;    /* fingerprint of the OAP policies last logged (0: none yet) */
	uint64_t triggered;           /* ids of triggered tasks */
	uint64_t ring_st[ARS_MAX];
	struct bus_meter_set meters;  /* the periodic batch: big, so not on the stack */
};

/* The analyzer's own meters into ms (reset first); the collector's too when with_collector. */
void analyzer__meters(struct analyzer *a, struct bus_meter_set *ms, bool with_collector);

#endif
