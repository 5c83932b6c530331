/*
 * The collector object the control server's handlers work on (one per
 * process, built by main.c; a fuzzer builds one with kinds of its own): the
 * shards, the task table, the fd broker, the target policy, the stores the
 * analyzers fill, and the counters.  What only the loop can do (drain the
 * stack maps, read the BPF counters) it offers through hooks.
 */
#ifndef EMBER_COLLECTOR_COLLECTOR_H
#define EMBER_COLLECTOR_COLLECTOR_H

#include <stdint.h>
#include <sys/types.h>

#include "common/ctl_proto.h"

struct shm_ring;
struct tasks;
struct broker;
struct target_policy;
struct unwind_store;
struct tls_links;

struct collector_shard {
	struct shm_ring *ring;
	int connected;
	uint64_t orphaned_since;    /* monotonic ns when its analyzer went away, 0 = never or connected */
	uint64_t window_stacks, window_drops;
};

struct collector_hooks {
	/* Everything collected so far into the rings, before DETACH answers. */
	void (*drain)(void *ctx);
	/* After an ATTACH, START or DETACH changed the table. */
	void (*tasks_changed)(void *ctx);
	/* The programs' counters into stats (CTL_STAT_*), before STATS answers. */
	void (*collect_stats)(void *ctx, uint64_t *stats);
	/* Optional: one connection cap into the network program (checked by the caller).  0 or -errno. */
	int (*net_cap)(void *ctx, uint64_t ino, const struct net_cap *cap);
	/* Optional: an analyzer took shard: the caps its predecessor asked for go. */
	void (*net_caps_clear)(void *ctx, unsigned shard);
	/* Optional: pid's Python runtime for the stack walks (checked by the caller; NULL: none).  0 or -errno. */
	int (*py_proc)(void *ctx, uint32_t pid, const struct py_proc *p);
	/* Optional: load the Java agent into pid (checked by the caller).  0 or -errno. */
	int (*java_attach)(void *ctx, uint32_t pid);
};

struct collector {
	unsigned nshards;
	uint64_t ring_size;
	uid_t analyzer_uid;         /* the only uid served the full protocol */
	uid_t exporter_uid;         /* never served */
	struct collector_shard *shards;
	struct tasks *tasks;
	struct broker *broker;
	struct target_policy *policy;
	struct unwind_store *unwind;    /* NULL: frame pointers only */
	struct tls_links *tls;          /* NULL: no TLS probes */
	uint64_t stats[CTL_STAT_MAX];
	const struct collector_hooks *hooks;
	void *hooks_ctx;
};

#endif
