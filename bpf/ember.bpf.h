/*
 * The map helpers every BPF program here repeats, for the kernel side only
 * (user space reads the ABI headers, never this one).  Each program keeps its
 * own maps: these take the map, so one copy of the pattern serves them all.
 * All of them are always inlined: a map the verifier can see as a constant
 * is what lets it check the lookups, and a call would hide it.
 */
#ifndef EMBER_BPF_H
#define EMBER_BPF_H

#include "bpf/ember_abi.h"

/* FNV-1a over 64-bit words: stacks by content, the off-CPU fingerprint. */
#define EMBER_FNV_OFFSET 14695981039346656037ull
#define EMBER_FNV_PRIME 1099511628211ull

static __always_inline __u64 fnv_mix(__u64 h, __u64 v)
{
	return (h ^ v) * EMBER_FNV_PRIME;
}

/* Counter id of a per-CPU array of __u64 counters, one more; user space sums the CPUs. */
static __always_inline void counter_inc(void *counters, __u32 id)
{
	__u64 *c = bpf_map_lookup_elem(counters, &id);

	if (c)
		*c += 1;
}

/* Adds v to a counter of a per-CPU array of __u64 counters. */
static __always_inline void counter_add(void *counters, __u32 id, __u64 v)
{
	__u64 *c = bpf_map_lookup_elem(counters, &id);

	if (c)
		*c += v;
}

/*
 * The current CPU's scratch (a one-entry per-CPU array): room for what the
 * BPF stack cannot hold.  Its zero key is a stack slot of its own: where the
 * caller already holds one, or clang compiles the program longer with it,
 * the caller keeps its own lookup and says so.
 */
static __always_inline void *percpu_scratch(void *map)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(map, &zero);
}

/*
 * Adds one sample of the given weight to key's aggregate in a hash of
 * struct stack_val, creating it if it is the first; -1 when the map is full.
 * Another CPU may create the same key between the lookup and the insert: the
 * insert then fails and the sample goes to that entry.
 */
static __always_inline int agg_add(void *agg, const void *key, __u64 weight)
{
	struct stack_val one = { .count = 1, .weight = weight }, *val;

	val = bpf_map_lookup_elem(agg, key);
	if (val) {
		__sync_fetch_and_add(&val->count, 1);
		__sync_fetch_and_add(&val->weight, weight);
	} else if (bpf_map_update_elem(agg, key, &one, BPF_NOEXIST)) {
		val = bpf_map_lookup_elem(agg, key);
		if (!val)
			return -1;
		__sync_fetch_and_add(&val->count, 1);
		__sync_fetch_and_add(&val->weight, weight);
	}
	return 0;
}

/*
 * key is in the map, or put there now with *init; false if it is absent and
 * the map has no room.  Most keys are there already: looking first saves
 * copying init (a stack is 1 KiB) into the map.
 */
static __always_inline bool map_ensure(void *map, const void *key, const void *init)
{
	return bpf_map_lookup_elem(map, key) || !bpf_map_update_elem(map, key, init, BPF_NOEXIST) ||
	       bpf_map_lookup_elem(map, key);
}

#endif
