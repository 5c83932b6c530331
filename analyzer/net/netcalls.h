/*
 * A connection's latest data calls (reads, writes and TLS library calls),
 * for the calls behind a sampled exchange (struct sampler_call): a ring of
 * the latest SAMPLER_MAX_CALLS, so bounded, allocated at the connection's
 * first call.  netprof keeps one only for the connections of tasks whose
 * sampled traces carry their calls (task_def__wants_calls).
 *
 * Times are the events' (monotonic ns); the calls handed out are in unix
 * ns.  Not thread-safe.
 */
#ifndef EMBER_ANALYZER_NET_NETCALLS_H
#define EMBER_ANALYZER_NET_NETCALLS_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzer/net/sampler.h"
#include "bpf/net_abi.h"

struct netcalls;

/* Keeps data call e (a read, a write, a TLS library call) in *dc, allocated at the first.  0, -ENOMEM. */
int netcalls__add(struct netcalls **dc, const struct net_event *e);

/*
 * The calls that moved an exchange's bytes, from its request's first byte
 * (from) to its response's last (to): a write at its entry, a read at its
 * exit, as the parsers are fed.  On a TLS connection (tls) the library's
 * calls, each with the packets of the syscalls under it.  Oldest first,
 * into out (SAMPLER_MAX_CALLS of room); returns how many.  dc may be NULL
 * (no call kept).  unix ns = monotonic ns + mono_to_unix.
 */
unsigned netcalls__between(const struct netcalls *dc, uint64_t from, uint64_t to, bool tls, int64_t mono_to_unix,
			   struct sampler_call *out);

/* Accepts NULL.  Returns NULL. */
struct netcalls *netcalls__free(struct netcalls *dc);

#endif
