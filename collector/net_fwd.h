/*
 * Network events from the BPF ring buffer into the analyzers' rings: each
 * event goes, as it is, to the shard of its process (EMBER_REC_NET), or for
 * a child a task follows, to the shard of the process the task named
 * (net_event.root), whose analyzer has the task.  With several analyzers
 * it also remembers the local TCP endpoints of followed processes, so that
 * an event whose peer is one of them, followed by another analyzer, names
 * that process (net_event.peer_tgid): no analyzer sees both ends.  A
 * full ring drops the event, but not silently for the parsers: what it
 * carried is remembered per socket and handed to that socket's next event
 * (net_event.lost_*), exactly as the BPF program does for its own ring
 * buffer, so the analyzer reports a gap of the right size in the right
 * direction and resynchronises.  The collector reads only the event's fixed
 * header, which its own BPF program wrote.
 */
#ifndef EMBER_COLLECTOR_NET_FWD_H
#define EMBER_COLLECTOR_NET_FWD_H

#include <stdint.h>

#include "bpf/net_abi.h"
#include "common/shm_ring.h"

/* Sockets whose losses are remembered at once; over it, losses are counted as untracked. */
#define NET_FWD_LOST_SLOTS 4096
/* Local TCP endpoints remembered (several analyzers only); kept below 3/4 full. */
#define NET_FWD_ENDPOINT_SLOTS 16384

struct net_fwd_stats {
	uint64_t events;       /* written to a ring */
	uint64_t ring_drops;   /* dropped: ring full */
	uint64_t untracked;    /* drops whose socket could not be remembered (table full) */
	uint64_t bad;          /* events shorter than their header says (never from our program) */
	uint64_t peers_across; /* events given the peer process another analyzer follows */
	uint64_t endpoints_full; /* endpoints not remembered: table full */
};

struct net_fwd;

/* rings[nshards] are borrowed.  NULL + errno. */
struct net_fwd *net_fwd__new(struct shm_ring **rings, unsigned nshards);
/* One event from the BPF ring buffer: e then payload, len bytes in all.  Returns 0. */
int net_fwd__event(struct net_fwd *f, const struct net_event *e, uint32_t len);
/* Wakes the analyzers of the shards written since the last call. */
void net_fwd__notify(struct net_fwd *f);
/*
 * Makes what was written visible to the analyzers, and wakes one only once
 * an eighth of its ring waits (shm_ring__publish): for batches that come
 * faster than an analyzer needs waking.  net_fwd__notify must follow within
 * a bounded time (the collector's network timer).  A shard written an event
 * with NET_F_CUT_FIRST, or a process event (family 0: fork, exit, an
 * executable mapping), is woken now (shm_ring__notify).
 */
void net_fwd__publish(struct net_fwd *f);
void net_fwd__stats(const struct net_fwd *f, struct net_fwd_stats *ret);
/* Accepts NULL.  Returns NULL. */
struct net_fwd *net_fwd__free(struct net_fwd *f);

#endif
