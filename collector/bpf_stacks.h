/*
 * The stack-sampling BPF object (bpf/stacks.bpf.c): load once at start,
 * attach per task kind, set target pids, drain the in-kernel aggregation.
 */
#ifndef EMBER_BPF_STACKS_H
#define EMBER_BPF_STACKS_H

#include <stdbool.h>
#include <stdint.h>
#include "bpf/ember_abi.h"
#include "bpf/unwind_abi.h"
#include "bpf/py_abi.h"

struct bpf_stacks;

struct bpf_stacks_opts {
	uint32_t max_stacks;   /* stack map entries per buffer set */
	uint32_t max_agg;      /* aggregation entries per buffer set */
	uint32_t max_pids;     /* target pid map size */
	uint32_t unwind_rows;  /* unwind table rows (bpf/unwind_abi.h), 8 bytes each */
	uint32_t unwind_procs; /* processes walked with unwind tables */
};

/*
 * Loads, and opens the perf events on-CPU and memory profiling need (a
 * cpu-clock and a page-fault event per CPU, disabled, their programs
 * attached): the caller is still privileged then, and a kernel with
 * perf_event_paranoid 3 refuses them to CAP_PERFMON later.  NULL + errno.
 */
struct bpf_stacks *bpf_stacks__load(const struct bpf_stacks_opts *opts);
/*
 * Whether the object loaded its legacy programs (a kernel without bpf_loop,
 * task BTF or bpf_task_pt_regs, before 5.17): user stacks walk frame
 * pointers only, and unwind tables are not used.
 */
bool bpf_stacks__legacy(const struct bpf_stacks *b);
/*
 * Enables the cpu-clock events with the given period.  The events are
 * shared: a second call while attached counts a user if it asks for the
 * same period, and returns -EBUSY otherwise (a task's period is never
 * replaced by another's).
 */
int bpf_stacks__attach_oncpu(struct bpf_stacks *b, uint64_t period_ns);
void bpf_stacks__detach_oncpu(struct bpf_stacks *b);
/*
 * Off-CPU: attaches to sched_switch through the first mechanism that works:
 * tp_btf, then raw_tp, then the classic tracepoint (needs tracefs).  Returns
 * the attach point used (enum ctl_attach_point) or -errno.  Refcounted.
 */
int bpf_stacks__attach_offcpu(struct bpf_stacks *b);
void bpf_stacks__detach_offcpu(struct bpf_stacks *b);
/*
 * Online CPUs without an on-CPU or memory event (each counted once per
 * set), after trying to open the missing ones: a CPU that came online after
 * load, on a kernel that refuses perf_event_open now.  The caller restarts
 * the collector (which opens them as root) when nothing is running.
 */
unsigned bpf_stacks__cpus_unsampled(struct bpf_stacks *b);
/* Memory: a page-fault software perf event per CPU (every fault is a sample). */
int bpf_stacks__attach_mem(struct bpf_stacks *b);
void bpf_stacks__detach_mem(struct bpf_stacks *b);
/*
 * Adds/removes kind for tgid in the target map; offcpu_min_ns (used when
 * adding EMBER_TASK_OFFCPU) is the minimum block time of the process's
 * off-CPU task.
 */
int bpf_stacks__target(struct bpf_stacks *b, uint32_t tgid, uint32_t kind, int on, uint64_t offcpu_min_ns);

/*
 * Called for each drained stack: kips[nk] then uips[nu], innermost first.
 * flags: EMBER_STACK_F_*.
 */
typedef void (*bpf_stacks_drain_fn)(void *ctx, const struct stack_key *key, const struct stack_val *val,
				    const uint64_t *kips, unsigned nk, const uint64_t *uips, unsigned nu,
				    uint32_t flags);
/*
 * Draining is three steps, so that the caller need not block for the wait:
 * flip (new samples go to the other set), wait_programs (returns once every
 * program that may still write the old set has finished: an RCU grace
 * period; no state, safe from another thread), collect (drains and clears
 * the old set; the number of stacks drained or -errno).  collect only after a
 * wait that began after the flip.
 */
void bpf_stacks__flip(struct bpf_stacks *b);
void bpf_stacks__wait_programs(void);
int bpf_stacks__collect(struct bpf_stacks *b, bpf_stacks_drain_fn cb, void *ctx);
/* Unwind tables: rows[0..n) at index first; a process's slot set (p) or cleared (NULL). 0 or -errno. */
int bpf_stacks__unwind_rows(struct bpf_stacks *b, uint32_t first, const struct unwind_row *rows, uint32_t n);
int bpf_stacks__unwind_proc(struct bpf_stacks *b, uint32_t tgid, uint32_t slot, const struct unwind_proc *p);
/*
 * A thread-profiling task's parameters for tgid (THREAD_P_* events, the stack
 * threshold), and its kind's bit: the threads object reads the same target map.
 */
int bpf_stacks__target_threads(struct bpf_stacks *b, uint32_t tgid, int on, uint32_t probes, uint64_t stack_ns);
/*
 * The maps another stack-walking object shares (bpf/user_stack.bpf.h):
 * "targets", "counters", "hstacks", "unwind_rows", "unwind_slot",
 * "unwind_procs", "unwind_maps"; NULL for another name.
 */
struct bpf_map *bpf_stacks__shared_map(struct bpf_stacks *b, const char *name);
/* A stack stored by content hash (hash 0: none, n = 0).  0, or -ENOENT once the LRU evicted it. */
int bpf_stacks__hstack(struct bpf_stacks *b, uint64_t hash, struct hstack *ret);
/* pid's Python runtime for the walks (bpf/py_abi.h); NULL forgets it.  0 or -errno. */
int bpf_stacks__py_proc(struct bpf_stacks *b, uint32_t pid, const struct py_proc *p);
/* What the walks read of a Python code object of tgid: 0, or -ENOENT. */
int bpf_stacks__py_code(struct bpf_stacks *b, uint32_t tgid, uint64_t addr, struct py_code *ret);
/* Sums the per-CPU counters into ret[BPF_CNT_MAX]. */
int bpf_stacks__counters(struct bpf_stacks *b, uint64_t *ret);
/* Accepts NULL.  Returns NULL. */
struct bpf_stacks *bpf_stacks__free(struct bpf_stacks *b);

#endif
