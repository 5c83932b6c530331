/*
 * Stack sampling: on-CPU (cpu-clock perf events, one per CPU), memory (page
 * fault perf events, one per CPU) and off-CPU (sched_switch, through tp_btf,
 * raw_tp or the classic tracepoint, whichever attaches).
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

/* tgid -> the tasks targeting it (struct target_val). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct target_val);
	__uint(max_entries, 1024);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, BPF_CNT_MAX);
} counters SEC(".maps");

/* Off-CPU: stacks by content hash (they outlive windows), sleeping threads, aggregation. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, struct hstack);
	__uint(max_entries, 8192);
} hstacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct offcpu_start);
	__uint(max_entries, 16384);
} offcpu_starts SEC(".maps");

struct offaggmap {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct offcpu_key);
	__type(value, struct stack_val);
	__uint(max_entries, 16384);
};
struct offaggmap offagg0 SEC(".maps");
struct offaggmap offagg1 SEC(".maps");

/* Per-CPU scratch for one stack (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct hstack);
	__uint(max_entries, 1);
} scratch SEC(".maps");

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
	__u32 tgid = id >> 32;
	struct target_val *tv;

	if (tgid == 0) /* idle */
		return 0;
	tv = bpf_map_lookup_elem(&targets, &tgid);
	if (!tv || !(tv->mask & (1u << EMBER_TASK_ONCPU)))
		return 0;
	count(BPF_CNT_SAMPLES);
	return record(ctx, tgid, EMBER_TASK_ONCPU, 1);
}

SEC("perf_event")
int mem_fault(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct target_val *tv;

	tv = bpf_map_lookup_elem(&targets, &tgid);
	if (!tv || !(tv->mask & (1u << EMBER_TASK_MEM)))
		return 0;
	count(BPF_CNT_FAULTS);
	return record(ctx, tgid, EMBER_TASK_MEM, 1);
}

/* ---- off-CPU ------------------------------------------------------------- */

/* Walks one stack into the per-CPU scratch and stores it by content hash. */
static __always_inline __u64 hash_stack(void *ctx, __u64 flags)
{
	__u32 zero = 0;
	struct hstack *st = bpf_map_lookup_elem(&scratch, &zero);
	__u64 h = 14695981039346656037ull;
	long len;

	if (!st)
		return 0;
	len = bpf_get_stack(ctx, st->ips, sizeof(st->ips), flags);
	if (len <= 0)
		return 0;
	st->n = len / sizeof(__u64);
	for (__u32 i = 0; i < EMBER_MAX_STACK_DEPTH; i++) {
		if (i >= st->n)
			break;
		h = (h ^ st->ips[i]) * 1099511628211ull;
	}
	h |= 1; /* never 0: 0 means "no stack" */
	/* Most blocks repeat a known stack: look before copying 1 KiB into the map. */
	if (!bpf_map_lookup_elem(&hstacks, &h) && bpf_map_update_elem(&hstacks, &h, st, BPF_NOEXIST) &&
	    !bpf_map_lookup_elem(&hstacks, &h))
		count(BPF_CNT_HSTACK_FULL);
	return h;
}

/*
 * prev is current (the switch has not happened yet), so its stacks can be
 * walked here; next's block ends now.  Non-target threads cost one hash
 * lookup on each side.
 */
static __always_inline int on_switch(void *ctx, __u32 next_tid)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct target_val *tv;
	struct offcpu_start *st;

	st = bpf_map_lookup_elem(&offcpu_starts, &next_tid);
	if (st && st->ts) {
		struct offcpu_key key = { .tgid = st->tgid, .kind = EMBER_TASK_OFFCPU,
					  .khash = st->khash, .uhash = st->uhash };
		__u64 delta = now - st->ts;
		struct stack_val one = { .count = 1, .weight = delta }, *val;
		void *agg = active ? (void *)&offagg1 : (void *)&offagg0;

		__builtin_memcpy(key.comm, st->comm, sizeof(key.comm));
		st->ts = 0; /* timed; the entry stays as this thread's stack cache */
		if (delta < st->min_ns) {
			count(BPF_CNT_OFFCPU_BELOW_MIN);
		} else {
			val = bpf_map_lookup_elem(agg, &key);
			if (val) {
				__sync_fetch_and_add(&val->count, 1);
				__sync_fetch_and_add(&val->weight, delta);
			} else if (bpf_map_update_elem(agg, &key, &one, BPF_NOEXIST)) {
				val = bpf_map_lookup_elem(agg, &key);
				if (val) {
					__sync_fetch_and_add(&val->count, 1);
					__sync_fetch_and_add(&val->weight, delta);
				} else {
					count(BPF_CNT_AGG_FULL);
				}
			}
		}
	}
	if (tgid == 0)
		return 0;
	tv = bpf_map_lookup_elem(&targets, &tgid);
	if (!tv || !(tv->mask & (1u << EMBER_TASK_OFFCPU)))
		return 0;
	count(BPF_CNT_OFFCPU_SWITCHES);
	{
		struct task_struct *task = (struct task_struct *)bpf_get_current_task_btf();
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
		__u64 fp = 14695981039346656037ull, uframe[2] = {};

		/*
		 * Where the thread is, from what costs next to nothing to read: the
		 * user registers at kernel entry, the syscall and its first argument
		 * (the fd of a read: the same call site reading a pipe and a socket
		 * blocks in different kernel paths) and the first user return address.
		 * Walking even 8 kernel frames here tripled the cost per switch.
		 */
		/* regs is a BTF pointer: plain loads, no helper call each. */
		fp = (fp ^ regs->ip) * 1099511628211ull;
		fp = (fp ^ regs->sp) * 1099511628211ull;
		fp = (fp ^ regs->bp) * 1099511628211ull;
		fp = (fp ^ regs->orig_ax) * 1099511628211ull;
		fp = (fp ^ regs->di) * 1099511628211ull;
		bpf_probe_read_user(uframe, sizeof(uframe), (void *)regs->bp);
		fp = (fp ^ uframe[1]) * 1099511628211ull;

		st = bpf_map_lookup_elem(&offcpu_starts, &tid);
		if (st && st->tgid == tgid) {
			st->min_ns = tv->offcpu_min_ns;
			if (st->fp == fp) {
				count(BPF_CNT_OFFCPU_FP_HITS);
				st->ts = now;
				return 0;
			}
			if (st->prev_fp == fp) {
				__u64 k = st->khash, u = st->uhash;

				count(BPF_CNT_OFFCPU_FP_HITS);
				st->khash = st->prev_khash;
				st->uhash = st->prev_uhash;
				st->prev_fp = st->fp;
				st->prev_khash = k;
				st->prev_uhash = u;
				st->fp = fp;
				st->ts = now;
				return 0;
			}
		}
		struct offcpu_start s = { .tgid = tgid, .fp = fp, .min_ns = tv->offcpu_min_ns };
		if (st && st->tgid == tgid) {
			s.prev_fp = st->fp;
			s.prev_khash = st->khash;
			s.prev_uhash = st->uhash;
		}
		s.khash = hash_stack(ctx, 0);
		s.uhash = hash_stack(ctx, BPF_F_USER_STACK);
		BPF_CORE_READ_STR_INTO(&s.comm, task, group_leader, comm);
		s.ts = bpf_ktime_get_ns(); /* after the walks: they are not blocked time */
		if (bpf_map_update_elem(&offcpu_starts, &tid, &s, BPF_ANY))
			count(BPF_CNT_OFFCPU_START_FULL);
	}
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_tp_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(ctx, next->pid);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(offcpu_raw_tp, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(ctx, BPF_CORE_READ(next, pid));
}

SEC("tracepoint/sched/sched_switch")
int offcpu_tracepoint(struct trace_event_raw_sched_switch *ctx)
{
	return on_switch(ctx, (__u32)ctx->next_pid);
}
