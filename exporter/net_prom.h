/*
 * Network profiling for Prometheus: the flows of NETWORK tasks' batches
 * (increments per report interval, exporter/net_meters.h) added up into
 * cumulative series, written into the backend's prom_table after each batch.
 * Counters add up; histograms keep per-bucket counts, their sum and count;
 * Rover's averages are not exported: what they average is a histogram's
 * _sum over its _count.  Names (base units: seconds, bytes):
 *
 *   ember_net_write_bytes_total, ember_net_read_bytes_total    counters
 *   ember_net_retransmits_total, ember_net_drops_total         counters
 *   ember_net_write_duration_seconds, ember_net_read_duration_seconds,
 *   ember_net_connect_duration_seconds, ember_net_close_duration_seconds
 *                                  histograms of socket call times (_count = calls)
 *   ember_net_rtt_seconds           histogram of smoothed RTT samples at writes
 *   ember_net_http1_requests_total, ember_net_http1_responses_total{code}
 *   ember_net_http1_request_size_bytes, ember_net_http1_response_size_bytes,
 *   ember_net_http1_duration_seconds  histograms
 *
 * Labels are Rover's (client_process_id / server_process_id = pid, the
 * peer's _process_id, _local or _address, side, protocol = the parser's
 * name, is_ssl).  A histogram's le bounds are the upper bounds of Rover's
 * buckets (common/net_hist.h): a value equal to a bound is counted in the
 * bucket above it, as Rover counts it.
 *
 * The number of series is bounded; past it new series are refused and
 * counted.  Series not updated for max_age_ms are forgotten (and start again
 * from zero, a counter reset to Prometheus).  Pure: no I/O, no threads; the
 * caller serialises access together with its table.
 */
#ifndef EMBER_EXPORTER_NET_PROM_H
#define EMBER_EXPORTER_NET_PROM_H

#include <stddef.h>
#include <stdint.h>

#include "exporter/prom_text.h"
#include "proto/ember.pb-c.h"

#define NET_PROM_DEFAULT_MAX_SERIES 4096

struct net_prom;

struct net_prom_stats {
	uint64_t flows;			/* flows added */
	uint64_t flows_invalid;		/* flows without a usable local pid */
	uint64_t series;		/* live series (gauge) */
	uint64_t series_added;
	uint64_t series_dropped;	/* updates refused: max_series reached */
	uint64_t series_expired;
	uint64_t meters_left_out;	/* status codes and malformed histograms the meter sets left out */
	uint64_t nomem;
};

/* max_series 0 = NET_PROM_DEFAULT_MAX_SERIES.  NULL + errno. */
struct net_prom *net_prom__new(size_t max_series);
/* Accepts NULL; returns NULL. */
struct net_prom *net_prom__free(struct net_prom *np);

/* Adds the batch's flows; every series they touch is written into t with now_ms. */
void net_prom__add_batch(struct net_prom *np, const Ember__NetworkBatch *b, struct prom_table *t, uint64_t now_ms);

/* Forgets series not updated since now_ms - max_age_ms; returns how many. */
size_t net_prom__expire(struct net_prom *np, uint64_t now_ms, uint64_t max_age_ms);

void net_prom__stats(const struct net_prom *np, struct net_prom_stats *ret);

#endif
