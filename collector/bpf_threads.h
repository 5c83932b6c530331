/*
 * The thread-profiling BPF object (bpf/threads.bpf.c, bpf/threads_abi.h):
 * loaded beside the stack object, whose target map, counters, hashed stacks
 * and unwind tables it shares; attached while a thread task runs.
 *
 * Its aggregates are read a window at a time without waiting for the
 * programs: each window's end reads the set flipped out at the previous one
 * (every program that could still write it finished long before: a program
 * runs for microseconds, a window lasts a second), then flips.  A task's end
 * reads its processes' entries of both sets once they left the target map
 * and a grace period passed, so no program writes them either.
 */
#ifndef EMBER_COLLECTOR_BPF_THREADS_H
#define EMBER_COLLECTOR_BPF_THREADS_H

#include <stdint.h>

#include "bpf/threads_abi.h"

struct bpf_stacks;
struct bpf_threads;

/*
 * Loads the object sharing stacks' maps; max_agg aggregates per window set.
 * NULL + errno: a kernel without what it needs (see bpf/threads.bpf.c).
 */
struct bpf_threads *bpf_threads__load(struct bpf_stacks *stacks, uint32_t max_agg);
/* Accepts NULL.  Returns NULL. */
struct bpf_threads *bpf_threads__free(struct bpf_threads *t);

/* After a change of the target map's thread entries: the programs' caches of it are stale. */
void bpf_threads__targets_changed(struct bpf_threads *t);

/* Programs on (refcounted): the attach point (CTL_AP_TP_BTF, CTL_AP_RAW_TP) or -errno. */
int bpf_threads__attach(struct bpf_threads *t);
void bpf_threads__detach(struct bpf_threads *t);

/*
 * A call thread tid of process tgid is in as the task starts (its number and
 * first two arguments, as /proc/TGID/task/TID/syscall says): the programs
 * see its exit, or the task's end finds it in progress, as if it began at
 * ts (ktime ns: the task's start).  1: taken; 0: not a call the task's
 * probes record, or the thread is in a call the programs saw; -errno.
 */
int bpf_threads__seed_call(struct bpf_threads *t, uint32_t tid, uint32_t tgid, int32_t nr, uint64_t arg0,
			   uint64_t arg1, uint32_t probes, uint64_t ts);
/* Takes back a call seeded at ts that ended before it was taken (it is gone, or the thread's next call is there). */
void bpf_threads__unseed_call(struct bpf_threads *t, uint32_t tid, uint64_t ts);

/*
 * One aggregate: key and value as the kernel left them (v->last_end etc. in
 * ktime ns).  flags: THREAD_REC_F_ONGOING for a call or period in progress at
 * a task's end (v made up from it, ending at that end).  path: the file's as
 * the kernel read it at the call (THREAD_AGG_F_PATH), NUL-terminated; else NULL.
 */
typedef void (*bpf_threads_fn)(void *ctx, const struct thread_agg_key *k, const struct thread_agg_val *v,
			       uint32_t flags, const char *path);

/* A window's end: the set flipped out one window ago to cb and cleared, then the sets flip.  n or -errno. */
int bpf_threads__window(struct bpf_threads *t, bpf_threads_fn cb, void *ctx);
/*
 * A task's end, its pids out of the target map and a grace period since:
 * their aggregates in both sets, then their calls and on-CPU periods in
 * progress (ending at now_ktime_ns), to cb, and gone from the maps.  n or -errno.
 */
int bpf_threads__flush_pids(struct bpf_threads *t, const uint32_t *pids, unsigned npids, uint64_t now_ktime_ns,
			    bpf_threads_fn cb, void *ctx);

#endif
