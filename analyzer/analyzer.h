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

struct ember_config;
struct ctl_client;
struct shm_ring;
struct symbolizer;
struct unwinder;
struct tls_finder;
struct debuginfod;
struct task_mgr;
struct publisher;
struct analyzer_kinds;
struct task_runner;
struct request_server;
struct monitors;
struct rest_api;

struct analyzer {
	struct ember_config *cfg;
	unsigned shard, nshards;
	void *zctx;
	struct ctl_client *cc;
	struct shm_ring *ring;
	struct symbolizer *sym;
	struct mappings *maps;        /* followed processes' executable mappings, for uw and tls */
	struct unwinder *uw;          /* NULL: frame pointers only */
	struct tls_finder *tls;       /* NULL: no TLS plaintext */
	struct debuginfod *dinfod;    /* NULL unless symbolizer.debuginfod.enabled */
	struct task_mgr *tm;
	struct publisher *pub;
	struct analyzer_kinds *kinds;
	struct task_runner *runner;
	struct request_server *req;
	struct monitors *mon;         /* continuous profiling */
	struct rest_api *rest;        /* the REST control API (the first analyzer, when enabled) */
	uint64_t oap_policy_problems;
	uint64_t oap_policy_print;    /* fingerprint of the OAP policies last logged (0: none yet) */
	uint64_t triggered;           /* ids of triggered tasks */
	uint64_t records, bad_records, ring_window_drops;
	struct bus_meter_set meters;  /* the periodic batch: big, so not on the stack */
};

/* The analyzer's own meters into ms (reset first); the collector's too when with_collector. */
void analyzer__meters(struct analyzer *a, struct bus_meter_set *ms, bool with_collector);

#endif
