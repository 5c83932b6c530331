/*
 * The host as network profiling sees it: its addresses (a peer at one of
 * them is "local", Rover's <peer>_local) and the offset from the monotonic
 * clock the BPF side stamps events with to unix time.  Both change (an
 * interface comes up, the clock is set): netprof refreshes them about once
 * a second.  A value, embedded in its user; not thread-safe.
 */
#ifndef EMBER_ANALYZER_NET_NETHOST_H
#define EMBER_ANALYZER_NET_NETHOST_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzer/net/conntrack.h"

#define NETHOST_MAX_ADDRS 64

struct nethost {
	int64_t mono_to_unix;     /* unix ns = monotonic ns + this */
	struct net_endpoint addrs[NETHOST_MAX_ADDRS];
	unsigned naddrs;
};

/* Reads the clocks and the interfaces' addresses again (none when they cannot be listed). */
void nethost__refresh(struct nethost *h);
/* A monotonic timestamp in unix ns (wraps for a hostile record's: defined, unsigned). */
uint64_t nethost__to_unix(const struct nethost *h, uint64_t mono_ns);
/* ep is loopback or an address of this host (an IPv4 one also as v4-mapped IPv6). */
bool nethost__is_local(const struct nethost *h, const struct net_endpoint *ep);

#endif
