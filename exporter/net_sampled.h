/*
 * A NETWORK task's sampled HTTP traces (NetworkBatch.sampled: exchanges
 * with a trace id that matched one of the task's sampling rules) in its
 * files, for exporter/net_report:
 *
 *   network.json  one {"type":"sampled", ...} line per trace: the
 *                 exchange's fields, the reason, the trace's provider and
 *                 ids, and the request and response bytes the rule kept as
 *                 JSON strings (valid UTF-8: what is not becomes U+FFFD),
 *                 at most NET_SAMPLED_BODY_MAX bytes of each;
 *   network.txt   a "Sampled traces" section: traces per reason, those
 *                 that matched but were not kept (over the bound, or
 *                 without a trace context), and per reason the
 *                 NET_SAMPLED_LISTED slowest.  Absent when nothing matched.
 *
 * Bounded memory; no logging, no I/O but on the caller's FILEs.
 */
#ifndef EMBER_EXPORTER_NET_SAMPLED_H
#define EMBER_EXPORTER_NET_SAMPLED_H

#include <stdint.h>
#include <stdio.h>

#include "proto/ember.pb-c.h"

#define NET_SAMPLED_BODY_MAX (64u << 10)
#define NET_SAMPLED_LISTED   10

struct net_sampled;
struct json_object;

/* NULL + errno. */
struct net_sampled *net_sampled__new(void);
/* Accepts NULL.  Returns NULL. */
struct net_sampled *net_sampled__free(struct net_sampled *s);

/* The trace's line of network.json to out: 0 or -ENOMEM. */
int net_sampled__write_json(const Ember__NetSampledTrace *t, FILE *out);

/* Adds a trace to the summary. */
void net_sampled__add(struct net_sampled *s, const Ember__NetSampledTrace *t);
/* Adds traces that matched a rule but were over the analyzer's bound. */
void net_sampled__add_not_kept(struct net_sampled *s, uint64_t n);
/* Adds exchanges a rule would have sampled with no trace context / only malformed ones. */
void net_sampled__add_untraced(struct net_sampled *s, uint64_t no_trace, uint64_t bad_trace);
/* Adds what a "sampled" line of network.json says (parsed). */
void net_sampled__load(struct net_sampled *s, struct json_object *line);

/* Traces added. */
uint64_t net_sampled__count(const struct net_sampled *s);

/* The summary's section, with a blank line before it; nothing when no trace matched a rule. */
void net_sampled__write_text(const struct net_sampled *s, FILE *out);

#endif
