/*
 * A NETWORK task's files, as the file backend writes them under the task's
 * directory:
 *
 *   network.json  every batch as it comes, as JSON lines: one "batch" line
 *                 (window, bounds hit, last, part of parts: a big report
 *                 comes in parts, each with its batch line, the counters
 *                 on the first part's only), then one line per "flow",
 *                 "connection" and "exchange" with every field of the
 *                 message (times in unix ns, plus _ms extras), then a
 *                 "sampled" line per sampled HTTP trace (exporter/net_sampled);
 *   network.txt   a readable summary of the whole task, rewritten as batches
 *                 come: connections by side, remote address and protocol
 *                 (count, bytes each way), per protocol the exchanges, errors,
 *                 client errors, unanswered and latency percentiles (from the
 *                 flows' merged latency sketches, within 2.2%), and the
 *                 slowest exchanges among those the batches listed; when
 *                 sampling rules kept traces, a "Sampled traces" section.
 *
 * The summary's memory is bounded: NET_REPORT_MAX_GROUPS connection groups
 * and NET_REPORT_MAX_PROTOCOLS protocols (the rest add up in an "other"
 * row, counted), one dense sketch per protocol, the NET_REPORT_SLOWEST
 * slowest exchanges.  A server's peers are grouped by address without their
 * (ephemeral) port, shown as ip:*.  A restarted exporter rebuilds the
 * summary from the network.json it wrote before (net_report__load_json).
 * No logging; the caller does the I/O on FILEs it opens.
 */
#ifndef EMBER_EXPORTER_NET_REPORT_H
#define EMBER_EXPORTER_NET_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "proto/ember.pb-c.h"

#define NET_REPORT_MAX_GROUPS    1024
#define NET_REPORT_MAX_PROTOCOLS 32
#define NET_REPORT_SLOWEST       10
#define NET_REPORT_TEXT_GROUPS   100	/* groups shown in network.txt; the rest are summed up */

struct net_report;

struct net_report_stats {
	uint64_t batches;		/* reports: a report in several parts counts once */
	uint64_t parts;			/* NetworkBatch messages */
	uint64_t flows, connections, exchanges;
	uint64_t groups_merged;		/* connections added to "other": too many groups */
	uint64_t protocols_merged;	/* flows added to "other": too many protocols */
	uint64_t bad_lines;		/* network.json lines that did not parse (load) */
	uint64_t sampled;		/* sampled traces */
};

/* What the batches say the agent lost (NetworkBatch's calls_lost, ...). */
struct net_loss {
	uint64_t calls, exchanges, gap_bytes, connections;
	uint64_t tls_unprobed;   /* TLS connections that moved data before their process's probes */
	uint64_t tls_unbound;    /* TLS plaintext calls tied to no connection */
	/* Batches in these totals that network.json could not take (net_report__unwritten), their exchanges. */
	uint64_t json_unwritten, json_unwritten_exchanges;
};

/* NULL + errno. */
struct net_report *net_report__new(void);
/* Accepts NULL.  Returns NULL. */
struct net_report *net_report__free(struct net_report *r);

/* The batch's JSON lines to out.  0 or -ENOMEM (out's errors are the caller's to check). */
int net_report__write_json(const Ember__NetworkBatch *b, FILE *out);

/* Adds the batch to the summary. */
void net_report__add(struct net_report *r, const Ember__NetworkBatch *b);

/* Adds what an earlier network.json says (lines of the form write_json writes); returns the lines used. */
int net_report__load_json(struct net_report *r, FILE *in);

/* The summary of everything added, for task_id.  0 or -ENOMEM. */
int net_report__write_text(struct net_report *r, const char *task_id, FILE *out);

void net_report__stats(const struct net_report *r, struct net_report_stats *ret);
void net_report__loss(const struct net_report *r, struct net_loss *ret);
/* b, added to r, could not be appended to network.json (a full disk): the summary says so. */
void net_report__unwritten(struct net_report *r, const Ember__NetworkBatch *b);

#endif
