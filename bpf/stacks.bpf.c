/*
 * Stack sampling for on-CPU profiling (cpu-clock perf events, one per CPU).
 * Off-CPU (sched_switch) and memory (page faults) programs share these maps.
 *
 * Aggregation happens here, in the kernel: one map entry per (tgid, kernel
 * stack, user stack), drained by the collector once per flush interval.  The
 * maps are double-buffered: programs write to set `active`, the collector
 * flips it, waits for in-flight programs to finish, then reads and clears the
 * other set.  Nothing is lost at the flip, and stack ids never dangle because
 * a set's stack map and count map are cleared together.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "bpf/ember_abi.h"

char LICENSE[] SEC("license") = "GPL";

/* Sizes are set by the collector before load. */
struct stackmap {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, EMBER_MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, 8192);
};
struct aggmap {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct stack_key);
	__type(value, struct stack_val);
	__uint(max_entries, 16384);
};
struct stackmap stacks0 SEC(".maps");
struct stackmap stacks1 SEC(".maps");
struct aggmap agg0 SEC(".maps");
struct aggmap agg1 SEC(".maps");

/* tgid -> enum ember_task_kind bitmask (1 << kind) of tasks targeting it. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1024);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, BPF_CNT_MAX);
} counters SEC(".maps");

/* Which buffer set programs write to; flipped by the collector. */
volatile __u32 active;

static __always_inline void count(__u32 id)
{
	__u64 *c = bpf_map_lookup_elem(&counters, &id);
	if (c)
		*c += 1;
}

static __always_inline int record(void *ctx, __u32 tgid, __u32 kind, __u64 weight)
{
	struct stack_key key = {};
	struct stack_val one = { .count = 1, .weight = weight }, *val;
	struct task_struct *task = (struct task_struct *)bpf_get_current_task_btf();
	void *stacks, *agg;

	if (active) {
		stacks = &stacks1;
		agg = &agg1;
	} else {
		stacks = &stacks0;
		agg = &agg0;
	}
	key.tgid = tgid;
	key.kind = kind;
	BPF_CORE_READ_STR_INTO(&key.comm, task, group_leader, comm);

	key.kstack_id = bpf_get_stackid(ctx, stacks, 0);
	/* -EFAULT: the sample was taken in user mode, there is no kernel stack. */
	if (key.kstack_id < 0 && key.kstack_id != -14)
		count(key.kstack_id == -17 || key.kstack_id == -12 ? BPF_CNT_STACKMAP_FULL : BPF_CNT_KSTACK_ERR);
	key.ustack_id = bpf_get_stackid(ctx, stacks, BPF_F_USER_STACK);
	if (key.ustack_id < 0)
		count(key.ustack_id == -17 || key.ustack_id == -12 ? BPF_CNT_STACKMAP_FULL : BPF_CNT_USTACK_ERR);

	val = bpf_map_lookup_elem(agg, &key);
	if (val) {
		__sync_fetch_and_add(&val->count, 1);
		__sync_fetch_and_add(&val->weight, weight);
		return 0;
	}
	if (bpf_map_update_elem(agg, &key, &one, BPF_NOEXIST)) {
		/* Lost the race with another CPU inserting the same key: add to it. */
		val = bpf_map_lookup_elem(agg, &key);
		if (val) {
			__sync_fetch_and_add(&val->count, 1);
			__sync_fetch_and_add(&val->weight, weight);
		} else {
			count(BPF_CNT_AGG_FULL);
		}
	}
	return 0;
}

SEC("perf_event")
int oncpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, *mask;

	if (tgid == 0) /* idle */
		return 0;
	mask = bpf_map_lookup_elem(&targets, &tgid);
	if (!mask || !(*mask & (1u << EMBER_TASK_ONCPU)))
		return 0;
	count(BPF_CNT_SAMPLES);
	return record(ctx, tgid, EMBER_TASK_ONCPU, 1);
}
