/*
 * The buckets of network profiling's histograms, in one place: the analyzer
 * counts into them and the exporter names them (SkyWalking meters,
 * Prometheus, files).  The bounds are Rover's (../shared/spec/
 * skywalking-protocol.md section 5.1), so that a Rover user's OAP rules and
 * dashboards read ember's histograms unchanged.
 *
 * The latency sketch is ember's own: log buckets of ratio 2^(1/16), so any
 * percentile read from it is within 2.2% of the true value, whatever the
 * range (ns to hours), in at most NET_SKETCH_BUCKETS counters.
 */
#ifndef EMBER_COMMON_NET_HIST_H
#define EMBER_COMMON_NET_HIST_H

#include <stddef.h>
#include <stdint.h>

/* L4 call times (ns) and write RTT (the same numbers in us): lower bounds. */
#define NET_L4_BUCKETS 34
extern const uint64_t net_hist__l4_bounds[NET_L4_BUCKETS];
/* HTTP request/response sizes, bytes: lower bounds. */
#define NET_SIZE_BUCKETS 25
extern const uint64_t net_hist__size_bounds[NET_SIZE_BUCKETS];
/* HTTP durations, ms: lower bounds. */
#define NET_DURATION_BUCKETS 45
extern const uint64_t net_hist__duration_bounds[NET_DURATION_BUCKETS];

/*
 * Index of the last bucket whose bound is <= v (values under the first bound
 * go to the first bucket).  bounds ascending, n >= 1.
 */
unsigned net_hist__index(const uint64_t *bounds, unsigned n, uint64_t v);

#define NET_SKETCH_BUCKETS 768 /* 16 per power of two: up to 2^48 ns (78 h) */
/* Sketch bucket of v (v < 1 -> 0; beyond the range -> the last). */
unsigned net_hist__sketch_index(uint64_t v);
/* The value a bucket stands for: the geometric middle of its range. */
uint64_t net_hist__sketch_value(unsigned index);
/*
 * The q-quantile (0 < q <= 1) of a sparse sketch given as ascending
 * (index, count) pairs; 0 when empty.
 */
uint64_t net_hist__sketch_quantile(const uint32_t *index, const uint64_t *count, size_t n, double q);

#endif
