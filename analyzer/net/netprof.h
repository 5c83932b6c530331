/*
 * Network profiling in the analyzer: the socket events of a NETWORK task's
 * processes (EMBER_REC_NET records, bpf/net_abi.h) become connections
 * (analyzer/net/conntrack.h), L4 counters and histograms, and L7 exchanges
 * (the parsers of l7 fed from live data), published once per
 * report interval as a NetworkBatch per task (proto/ember.proto).
 *
 * Directions: a connection's side is known from connect (client) or accept
 * (server); for a connection that predates the task it is guessed from the
 * ports (and UDP from who spoke first), and protocol detection may swap it.
 * Reads become requests on the server side and responses on the client
 * side, writes the opposite.  A read is stamped with its exit (the data is
 * there), a write with its entry (the data leaves), so that an exchange's
 * latency is what the process itself waited.
 *
 * Losses: data the kernel side could not copy (payload beyond the prefix,
 * no room in a ring buffer) arrives as sizes without bytes; the parsers get
 * a gap of exactly that many bytes in that direction and resynchronise.
 * Connections are bounded (profiling.task.network.max_connections), aged out
 * after connection_idle_timeout without a call, and everything skipped is
 * counted (netprof__stats).
 *
 * TLS: a connection whose stream starts with TLS records, or whose syscalls
 * ran under a TLS library call, or that TLS plaintext events name, is TLS
 * (is_ssl): its syscalls count in the L4 metrics (ciphertext sizes and
 * timing), and the parsers get the plaintext events instead.  A plaintext
 * event without a socket (a library with memory BIOs, as Node's) goes to
 * the socket its library object used before, else to the last socket the
 * same thread moved data on: such libraries encrypt and decrypt on the
 * thread that does the socket I/O, right before or after it.
 *
 * A report is published in parts (NetworkBatch.part, .parts): the first
 * carries the flows, the sampled traces and the window's counters, every
 * part a share of the listed connections and exchanges; between parts the
 * ring is drained (opts.drain) into the task's next report.
 *
 * A monitor's capture (task_def__is_monitor) only feeds opts.exchange: no
 * report, no exchange list, no batch.
 *
 * Records are untrusted input: lengths and enums are checked, a record that
 * does not add up is counted and skipped.  Not thread-safe.
 */
#ifndef EMBER_ANALYZER_NET_NETPROF_H
#define EMBER_ANALYZER_NET_NETPROF_H

#include <stddef.h>
#include <stdint.h>

#include "l7/l7.h"
#include "common/ctl_proto.h"
#include "analyzer/publisher.h"
#include "analyzer/tasks.h"
#include "common/counters.h"

struct netprof_opts {
	struct publisher *pub;
	struct task_mgr *tm;            /* to find a record's task */
	size_t max_connections;
	uint64_t idle_timeout_ns;
	size_t max_exchanges;           /* listed per task and report */
	uint64_t default_report_ms;     /* for tasks that do not say */
	struct l7_config l7;            /* per-connection parser limits; transport set per connection */
	/* Optional: every server-side exchange of every task (the continuous-profiling L7 monitors). */
	void (*exchange)(void *ctx, uint32_t pid, const struct l7_record *r);
	void *ctx;
	/* Optional: a followed process exec'ed or mapped a file executable (task: the collector's task id). */
	/* soon: the mapping is still being made (NET_F_MAPS_SOON): look a little later */
	void (*maps_changed)(void *ctx, uint64_t task_num_id, uint32_t pid, bool soon);
	/* Optional: when pid's TLS probes were first in place (tls_finder__ready_ns), 0: never. */
	uint64_t (*tls_ready_ns)(void *ctx, uint32_t pid);
	/*
	 * Optional: consumes the ring (its records come back into netprof__record), called between
	 * the parts of a report, so that the collector's ring does not fill while a big report goes
	 * out.  The report being published is detached from its task first: what the records add
	 * goes to the task's next report (so a task holds at most two reports' lists at once).
	 */
	void (*drain)(void *ctx);
	/*
	 * Optional: asks the collector to copy no more of n connections' calls
	 * than their parsers need (common/ctl_proto.h CTL_REQ_NET_CAPS); returns
	 * 0 with *written those it wrote, or -errno.  NULL: every call is copied
	 * up to the process's cap.
	 */
	int (*caps)(void *ctx, const struct ctl_net_cap *caps, uint32_t n, uint32_t *written);
	size_t part_items;              /* connections + exchanges per NetworkBatch part; 0: NETPROF_PART_ITEMS */
};

/*
 * A report lists up to max_exchanges exchanges (and closed connections): it is
 * published in parts of this many, the ring drained between them.  Packing
 * takes ~1 us per item here, so a part keeps the analyzer from its ring for
 * a few ms (the default 8 MiB ring holds ~40 ms of calls under wrk) and is
 * ~0.5 MB, far under the bus's BUS_MAX_MSG.
 */
#define NETPROF_PART_ITEMS 4096

enum netprof_stat {
	NPS_RECORDS,            /* network records */
	NPS_BAD_RECORDS,        /* lengths or fields that do not add up */
	NPS_NO_TASK,            /* records of a process no network task (any more) wants */
	NPS_CONNECTIONS,        /* connections followed */
	NPS_TABLE_FULL,         /* events of connections not followed: table full */
	NPS_AGED,               /* connections closed in the books after being idle */
	NPS_UNKNOWN_CLOSES,     /* closes of sockets never seen moving data (listeners...) */
	NPS_LOST_EVENTS,        /* events the collector or BPF side lost (full rings) */
	NPS_GAPS,               /* gaps given to parsers */
	NPS_GAP_BYTES,
	NPS_EXCHANGES,          /* L7 exchanges */
	NPS_EXCHANGES_NOT_LISTED, /* ... over max_exchanges in a report (still in the metrics) */
	NPS_CONNS_NOT_LISTED,   /* closed connections over the per-report bound (still in the metrics) */
	NPS_UNDETECTED,         /* connections no parser claimed */
	NPS_UNPARSEABLE,        /* connections whose parser gave up (protocol error or over its buffer) */
	NPS_PARSER_DROPPED,     /* messages the parsers could not use */
	NPS_BATCHES,            /* NetworkBatch messages published (a report's parts each count) */
	NPS_CHILDREN,           /* child processes of targets booked to their task */
	NPS_CHILDREN_FULL,      /* ... not booked: too many followed children (their records: no task) */
	NPS_TLS_EVENTS,         /* TLS plaintext events (bpf/net_abi.h NET_OP_TLS_*) */
	NPS_TLS_UNBOUND,        /* ... whose socket could not be found (no socket activity of the thread yet) */
	NPS_TLS_CONNECTIONS,    /* connections found to carry TLS (records on the wire or plaintext from probes) */
	NPS_CALLS_NOMEM,        /* connections whose calls could not be kept for sampled traces (no memory) */
	NPS_TLS_UNPROBED,       /* TLS connections that moved data before their process's probes were in place */
	NPS_CAPS,               /* connection caps the collector wrote (what the parsers need of each call) */
	NPS_CAPS_FAILED,        /* ... it refused or could not write (the calls keep the process's cap) */
	NPS_MAX
};

struct netprof;

/* Everything in o is borrowed (l7's strings too).  NULL + errno. */
struct netprof *netprof__new(const struct netprof_opts *o);

/* Starts collecting for network task t: its first report covers from now.  0, -ENOSPC, -ENOMEM. */
int netprof__open(struct netprof *np, const struct task_def *t);
/* One EMBER_REC_NET record. */
void netprof__record(struct netprof *np, const void *data, uint32_t len);
/* Publishes the reports that are due and ages idle connections. */
void netprof__tick(struct netprof *np, uint64_t now_unix_ms);
/* When netprof__tick next has work (unix ms), UINT64_MAX if no task. */
uint64_t netprof__next_due(const struct netprof *np);
/*
 * Ends task_id: its connections are finished (pending exchanges emitted),
 * the last report lists them all and is marked last.  Totals of the task
 * go to *exchanges and *connections (may be NULL).
 */
void netprof__close(struct netprof *np, const char *task_id, uint64_t *exchanges, uint64_t *connections);

/* Forgets task_id without a report (its start failed).  Its connections are dropped. */
void netprof__discard(struct netprof *np, const char *task_id);

void netprof__stats(const struct netprof *np, uint64_t ret[NPS_MAX]);
const char *netprof__stat_name(unsigned stat);
/* Their names and natures (common/counters.h), by enum netprof_stat. */
extern const struct counter_def netprof_counters[NPS_MAX];

/* Accepts NULL.  Returns NULL. */
struct netprof *netprof__free(struct netprof *np);

#endif
