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
#include "bpf/user_stack.bpf.h"

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

/* Off-CPU: sleeping threads, aggregation. */
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

/* Which buffer set programs write to; flipped by the collector. */
volatile __u32 active;

/*
 * legacy: the programs for kernels without bpf_loop, task BTF and
 * bpf_task_pt_regs (before 5.17): user stacks walk frame pointers
 * (bpf_get_stackid), and nothing in them refers to the table walker (a
 * bpf_loop callback is a subprogram those kernels refuse to count).
 */
static __always_inline int record(void *ctx, __u32 tgid, __u32 kind, __u64 weight, const bool legacy)
{
	struct stack_key key = {};
	struct task_struct *task = legacy ? (struct task_struct *)bpf_get_current_task()
					  : (struct task_struct *)bpf_get_current_task_btf();
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
	key.uhash = legacy ? 0 : unwind_user(tgid);
	key.ustack_id = key.uhash ? -1 : bpf_get_stackid(ctx, stacks, BPF_F_USER_STACK);
	if (key.ustack_id < 0 && !key.uhash)
		count(key.ustack_id == -17 || key.ustack_id == -12 ? BPF_CNT_STACKMAP_FULL : BPF_CNT_USTACK_ERR);

	if (agg_add(agg, &key, weight))
		count(BPF_CNT_AGG_FULL);
	return 0;
}

static __always_inline int oncpu(struct bpf_perf_event_data *ctx, const bool legacy)
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
	return record(ctx, tgid, EMBER_TASK_ONCPU, 1, legacy);
}

static __always_inline int mem(struct bpf_perf_event_data *ctx, const bool legacy)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct target_val *tv;

	tv = bpf_map_lookup_elem(&targets, &tgid);
	if (!tv || !(tv->mask & (1u << EMBER_TASK_MEM)))
		return 0;
	count(BPF_CNT_FAULTS);
	return record(ctx, tgid, EMBER_TASK_MEM, 1, legacy);
}

SEC("perf_event")
int oncpu_sample(struct bpf_perf_event_data *ctx) { return oncpu(ctx, false); }
SEC("perf_event")
int oncpu_sample_legacy(struct bpf_perf_event_data *ctx) { return oncpu(ctx, true); }
SEC("perf_event")
int mem_fault(struct bpf_perf_event_data *ctx) { return mem(ctx, false); }
SEC("perf_event")
int mem_fault_legacy(struct bpf_perf_event_data *ctx) { return mem(ctx, true); }

/* ---- off-CPU ------------------------------------------------------------- */

/* The block st started ends, delta ns long: into the active set under its stacks. */
static __always_inline void book_block(struct offcpu_start *st, __u64 delta)
{
	struct offcpu_key key = { .tgid = st->tgid, .kind = EMBER_TASK_OFFCPU, .khash = st->khash, .uhash = st->uhash };

	__builtin_memcpy(key.comm, st->comm, sizeof(key.comm));
	st->ts = 0; /* timed; the entry stays as this thread's stack cache */
	if (delta < st->min_ns) {
		count(BPF_CNT_OFFCPU_BELOW_MIN);
		return;
	}
	if (agg_add(active ? (void *)&offagg1 : (void *)&offagg0, &key, delta))
		count(BPF_CNT_AGG_FULL);
}

/*
 * A switch-out finds the thread's previous block never ended: the kernel ran
 * it without a sched_switch naming it (seen here on 6.18 with ftrace's own
 * event beside these programs, about one block in 500 with the CPU shared).
 * It has been on the CPU since: the slice's run time (its scheduler entity's
 * runtime since it was picked) puts the block's end that long before now.
 */
static __always_inline void book_unseen_end(struct offcpu_start *st, __u64 now)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	__u64 ran = BPF_CORE_READ(t, se.sum_exec_runtime) - BPF_CORE_READ(t, se.prev_sum_exec_runtime);

	if (ran < now - st->ts) {
		count(BPF_CNT_OFFCPU_UNTIMED);
		book_block(st, now - ran - st->ts);
	} else {
		count(BPF_CNT_OFFCPU_LOST);
		st->ts = 0;
	}
}

/* The task's state (TASK_* bits): __state since 5.14, state before. */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline __u32 task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return (__u32)BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

#define EMBER_TASK_DEAD 0x80u   /* include/linux/sched.h TASK_DEAD: the thread's last switch-out */

/* Cached hashes still name stacks in hstacks; the lookups also keep the hot ones in the LRU. */
static __always_inline bool stacks_cached(__u64 khash, __u64 uhash)
{
	if (khash && !bpf_map_lookup_elem(&hstacks, &khash))
		return false;
	if (uhash && !bpf_map_lookup_elem(&hstacks, &uhash))
		return false;
	return true;
}

/*
 * prev is current (the switch has not happened yet), so its stacks can be
 * walked here; next's block ends now.  Non-target threads cost one hash
 * lookup on each side.
 */
static __always_inline int on_switch(void *ctx, __u32 next_tid, __u32 next_tgid, const bool legacy)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tgid = id >> 32, tid = (__u32)id, state;
	struct target_val *tv;
	struct offcpu_start *st;

	st = bpf_map_lookup_elem(&offcpu_starts, &next_tid);
	/* next_tgid 0: the classic tracepoint does not say (exits remove entries anyway). */
	if (st && next_tgid && st->tgid != next_tgid) {
		if (st->ts)
			count(BPF_CNT_OFFCPU_TID_REUSED);
		bpf_map_delete_elem(&offcpu_starts, &next_tid);
		st = NULL;
	}
	if (st && st->ts) {
		count(BPF_CNT_OFFCPU_TIMED);
		book_block(st, now - st->ts);
	}
	if (tgid == 0)
		return 0;
	tv = bpf_map_lookup_elem(&targets, &tgid);
	if (!tv || !(tv->mask & (1u << EMBER_TASK_OFFCPU)))
		return 0;
	count(BPF_CNT_OFFCPU_SWITCHES);
	state = task_state((struct task_struct *)bpf_get_current_task());
	if (state & EMBER_TASK_DEAD) {
		/* The thread will not run again: no block, and its entry goes (a tid is reused). */
		count(BPF_CNT_OFFCPU_EXITS);
		bpf_map_delete_elem(&offcpu_starts, &tid);
		return 0;
	}
	if (legacy) {
		/* No user registers at hand: both stacks are walked at every switch-out. */
		struct task_struct *task = (struct task_struct *)bpf_get_current_task();
		struct offcpu_start s = { .tgid = tgid, .min_ns = tv->offcpu_min_ns };

		s.khash = hash_stack(ctx, 0);
		s.uhash = hash_stack(ctx, BPF_F_USER_STACK);
		BPF_CORE_READ_STR_INTO(&s.comm, task, group_leader, comm);
		s.ts = bpf_ktime_get_ns();
		st = bpf_map_lookup_elem(&offcpu_starts, &tid);
		if (st && st->ts)
			book_unseen_end(st, now);
		if (bpf_map_update_elem(&offcpu_starts, &tid, &s, BPF_ANY))
			count(BPF_CNT_OFFCPU_START_FULL);
		return 0;
	}
	{
		struct task_struct *task = (struct task_struct *)bpf_get_current_task_btf();
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
		__u64 fp = EMBER_FNV_OFFSET, uframe[2] = {};

		/*
		 * Where the thread is, from what costs next to nothing to read: the
		 * user registers at kernel entry, the syscall and its first argument
		 * (the fd of a read: the same call site reading a pipe and a socket
		 * blocks in different kernel paths) and the first user return address.
		 * Walking even 8 kernel frames here tripled the cost per switch.
		 */
		/* regs is a BTF pointer: plain loads, no helper call each. */
		fp = fnv_mix(fp, regs->ip);
		fp = fnv_mix(fp, regs->sp);
		fp = fnv_mix(fp, regs->bp);
		fp = fnv_mix(fp, regs->orig_ax);
		fp = fnv_mix(fp, regs->di);
		/* The call's second argument: a futex's op, an ioctl's or fcntl's command take other kernel paths. */
		fp = fnv_mix(fp, regs->si);
		/* Preempted, sleeping or waiting uninterruptibly: different kernel paths of one call. */
		fp = fnv_mix(fp, state);
		/* Waiting for I/O or for a lock, both uninterruptible, in one write(). */
		fp = fnv_mix(fp, BPF_CORE_READ_BITFIELD(task, in_iowait));
		bpf_probe_read_user(uframe, sizeof(uframe), (void *)regs->bp);
		fp = fnv_mix(fp, uframe[1]);
		/* New unwind tables for the process: the stacks are walked again. */
		fp = fnv_mix(fp, unwind_gen(tgid));

		st = bpf_map_lookup_elem(&offcpu_starts, &tid);
		if (st && st->ts)
			book_unseen_end(st, now);
		if (st && st->tgid == tgid) {
			st->min_ns = tv->offcpu_min_ns;
			if (st->fp == fp && stacks_cached(st->khash, st->uhash)) {
				count(BPF_CNT_OFFCPU_FP_HITS);
				st->ts = now;
				return 0;
			}
			if (st->fp == fp)
				count(BPF_CNT_OFFCPU_STALE);
			if (st->prev_fp == fp && !stacks_cached(st->prev_khash, st->prev_uhash))
				count(BPF_CNT_OFFCPU_STALE);
			else if (st->prev_fp == fp) {
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
		s.uhash = unwind_user(tgid);
		if (!s.uhash)
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
	return on_switch(ctx, next->pid, next->tgid, false);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(offcpu_raw_tp, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(ctx, BPF_CORE_READ(next, pid), BPF_CORE_READ(next, tgid), false);
}

SEC("tracepoint/sched/sched_switch")
int offcpu_tracepoint(struct trace_event_raw_sched_switch *ctx)
{
	return on_switch(ctx, (__u32)ctx->next_pid, 0, false);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(offcpu_tp_btf_legacy, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(ctx, next->pid, next->tgid, true);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(offcpu_raw_tp_legacy, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(ctx, BPF_CORE_READ(next, pid), BPF_CORE_READ(next, tgid), true);
}

SEC("tracepoint/sched/sched_switch")
int offcpu_tracepoint_legacy(struct trace_event_raw_sched_switch *ctx)
{
	return on_switch(ctx, (__u32)ctx->next_pid, 0, true);
}
