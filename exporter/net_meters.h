/*
 * Network profiling's meters, in one place: what Rover sends for one flow
 * (a NetFlow of a NetworkBatch: one local process, side, peer and protocol
 * over one report interval), named and labelled as Rover names them
 * (../shared/spec/skywalking-protocol.md section 5.1).  The SkyWalking
 * backend sends them as they are; the Prometheus backend adds them up into
 * cumulative series (exporter/net_prom.h), with names of its own chosen by
 * the meter's id.
 *
 * Common labels, in Rover's order: <role>_process_id, then one of
 * <peer>_process_id / <peer>_local / <peer>_address, side, protocol, is_ssl
 * (role = the flow's side, "client" when unknown; peer = the other role).
 * The process ids come from the caller's resolver (the OAP's ids, or pids).
 *
 * Omission rules are Rover's: a _counts_counter only when the count is
 * non-zero, bytes and averages only when non-zero, a histogram only when a
 * bucket is non-zero and then with all its buckets.  HTTP/1 meters only for
 * flows whose protocol is "http1".
 *
 * Plain structs, no protobuf out, no I/O, no logging.
 */
#ifndef EMBER_EXPORTER_NET_METERS_H
#define EMBER_EXPORTER_NET_METERS_H

#include <stddef.h>
#include <stdint.h>

#include "common/net_hist.h"
#include "proto/ember.pb-c.h"

/* 14 L4 counters + 5 L4 histograms + 7 HTTP/1 meters + one per status code. */
#define NET_METERS_MAX        64
#define NET_METER_MAX_LABELS  6	/* the 5 common ones + code */
#define NET_METER_MAX_BUCKETS NET_DURATION_BUCKETS
#define NET_METER_NAME_MAX    192
#define NET_METER_ID_MAX      128	/* a resolved process id, NUL included */

/* Which meter, so that a backend can name it its own way. */
enum net_meter_id {
	NM_WRITE_COUNTS, NM_WRITE_BYTES, NM_WRITE_EXE_TIME,
	NM_READ_COUNTS, NM_READ_BYTES, NM_READ_EXE_TIME,
	NM_WRITE_RTT_COUNTS, NM_WRITE_RTT_EXE_TIME,
	NM_CONNECT_COUNTS, NM_CONNECT_EXE_TIME,
	NM_CLOSE_COUNTS, NM_CLOSE_EXE_TIME,
	NM_RETRANSMIT_COUNTS, NM_DROP_COUNTS,
	NM_WRITE_RTT_HIST, NM_WRITE_EXE_TIME_HIST, NM_READ_EXE_TIME_HIST, NM_CONNECT_EXE_TIME_HIST,
	NM_CLOSE_EXE_TIME_HIST,
	NM_HTTP1_REQUESTS, NM_HTTP1_STATUS, NM_HTTP1_REQ_SIZE_AVG, NM_HTTP1_RESP_SIZE_AVG,
	NM_HTTP1_REQ_SIZE_HIST, NM_HTTP1_RESP_SIZE_HIST, NM_HTTP1_DURATION_AVG, NM_HTTP1_DURATION_HIST,
	NM_MAX
};

/* The unit of a meter's value, sum and bucket bounds. */
enum net_meter_unit { NET_UNIT_COUNT, NET_UNIT_BYTES, NET_UNIT_NS, NET_UNIT_US, NET_UNIT_MS };

struct net_label { const char *name, *value; };

struct net_meter {
	enum net_meter_id id;
	enum net_meter_unit unit;
	char name[NET_METER_NAME_MAX];		/* Rover's, with the caller's prefix */
	struct net_label labels[NET_METER_MAX_LABELS];	/* borrowed from the set */
	unsigned n_labels;
	double value;		/* single value: Rover's (an average for _exe_time / _avg meters) */
	/* What an average or a histogram stands for: the observations' sum
	 * (in unit) and their number; for a counter, sum = value, count = 0. */
	double sum;
	uint64_t count;
	unsigned n_buckets;	/* 0: a single value */
	double lower[NET_METER_MAX_BUCKETS];	/* bucket lower bounds in unit, ascending */
	uint64_t counts[NET_METER_MAX_BUCKETS];
};

/* The meters of one flow.  Labels point into the set: do not copy it. */
struct net_meter_set {
	struct net_meter m[NET_METERS_MAX];
	unsigned n;
	unsigned truncated;	/* status-code meters left out: the set was full */
	unsigned bad_hists;	/* histograms of the wrong length: left out */
	char role_id_label[24], peer_label[24];
	char role_id[NET_METER_ID_MAX], peer_value[NET_METER_ID_MAX];
	char codes[NET_METERS_MAX][12];
};

enum net_protocol_label {
	NET_PROTOCOL_ROVER,	/* "http" for http1/http2, else "unknown" (what the OAP's rules expect) */
	NET_PROTOCOL_PARSER,	/* the parser's name, "unknown" when none claimed the flow */
};

/* pid -> process id string into buf: 0, or -ENOENT when the pid is unknown. */
typedef int (*net_meters_resolve_fn)(void *ctx, uint32_t pid, char *buf, size_t len);

struct net_meters_opts {
	const char *prefix;		/* names start with "<prefix>_": "rover_net_p" */
	enum net_protocol_label protocol;
	net_meters_resolve_fn resolve;
	void *ctx;
};

/*
 * The flow's meters into set (replacing its content), in Rover's order: L4
 * counters, L4 histograms, then HTTP/1 meters.  0; -ENOENT when the local
 * process does not resolve (nothing to send for it); -EINVAL for a NULL flow
 * or options; -ENAMETOOLONG when the prefix leaves no room for the names.
 */
int net_meters__from_flow(const Ember__NetFlow *f, const struct net_meters_opts *o, struct net_meter_set *set);

#endif
