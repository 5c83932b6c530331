/*
 * The REST API's l7 and tcp features at work: one NETWORK task per
 * selected process (the union of both features' selections), whose flows
 * the exporter publishes as gala-gopher's tables (proto GalaTables): l7_link
 * (l7_bytes_metrics), l7_rpc (l7_rpc_metrics) for the l7_protocol list, and
 * tcp_link's tcp_tx_rx (tcp_stats), tcp_rtt (tcp_rtt), tcp_abn
 * (tcp_abnormal), each process's with the tables of the features that
 * select it, every report_period (the shorter of the two).
 *
 * Selection runs again every scan interval: a process that starts later
 * gets its task, one that is gone or no longer selected loses it.  Tasks
 * last an hour and are renewed; a new configuration of either feature
 * cancels them all and starts afresh.  A process that another NETWORK task
 * already follows (`ember profile`) is retried at each scan and counted.
 * Runs on the REST thread; not thread-safe.
 */
#ifndef EMBER_ANALYZER_REST_REST_NET_H
#define EMBER_ANALYZER_REST_REST_NET_H

#include <stdint.h>

#include "analyzer/rest/rest_doc.h"

struct rest_net_opts {
	const char *run_dir;
	unsigned analyzers;
	const char *proc_root;		/* NULL: "/proc" */
	uint64_t scan_ms;		/* 0: 2000 */
	unsigned max_pids;		/* 0: 1024 */
	uint32_t self_uid;
};

struct rest_net_stats {
	uint64_t tasks_started, task_failures, tasks_cancelled, followed, over_limit;
	char last_error[512];
};

struct rest_net;

struct rest_net *rest_net__new(const struct rest_net_opts *o, void *zctx);
/* Its tasks end by themselves within the hour.  Accepts NULL; returns NULL. */
struct rest_net *rest_net__free(struct rest_net *n);
/* Feature f's (REST_L7 or REST_TCP) whole new configuration. */
void rest_net__set(struct rest_net *n, const struct rest_doc *d);
void rest_net__tick(struct rest_net *n, uint64_t now_ms);
void rest_net__stats(const struct rest_net *n, struct rest_net_stats *ret);

#endif
