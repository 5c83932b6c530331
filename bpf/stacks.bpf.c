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
#include "bpf/unwind_abi.h"
#include "bpf/ember.bpf.h"

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

/* Unwind tables (bpf/unwind_abi.h), written by the collector; sizes set before load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct unwind_row);
	__uint(max_entries, 1);
} unwind_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);   /* tgid */
	__type(value, __u32); /* its slot in unwind_procs */
	__uint(max_entries, 1);
} unwind_slot SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct unwind_proc_head);
	__uint(max_entries, 1);
} unwind_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);   /* slot * UNWIND_MAX_MAPS + i */
	__type(value, struct unwind_map);
	__uint(max_entries, 1);
} unwind_maps SEC(".maps");

static __always_inline void count(__u32 id)
{
	counter_inc(&counters, id);
}

/* ---- user stacks through unwind tables ------------------------------------ */

struct uw_state {
	__u64 ip, sp, bp;
	__u32 slot, n;
	__u32 exact;    /* ip is not a return address (the first frame, a signal's interrupted frame) */
	__u32 end;      /* UW_* */
};
enum { UW_RUNNING = 0, UW_COMPLETE, UW_READ_ERR, UW_STOPPED };

/* ucontext_t's uc_mcontext.gregs at the signal trampoline's rsp (x86-64 rt_sigframe after pretcode). */
#define SIGCTX_RBP (40 + 8 * 10)
#define SIGCTX_RSP (40 + 8 * 15)
#define SIGCTX_RIP (40 + 8 * 16)

static long uw_step(__u32 i, struct uw_state *c)
{
	__u32 nm, lo, hi;
	struct hstack *st = percpu_scratch(&scratch);
	struct unwind_proc_head *p = bpf_map_lookup_elem(&unwind_procs, &c->slot);
	struct unwind_map *m;
	struct unwind_row *row = NULL;
	__u64 at, cfa, ra = 0;
	__u8 type = UNW_NONE;

	/*
	 * The frame's index is bpf_loop's i, which the verifier treats as any
	 * value below the loop count: indexing with a counter kept in c would
	 * make it verify every iteration apart.
	 */
	__u64 idx = i;

	asm volatile("" : "+r"(idx)); /* one register, checked and used: the compiler may not re-derive it */
	if (!st || !p || idx >= EMBER_MAX_STACK_DEPTH)
		return 1;
	st->ips[idx] = c->ip;
	c->n = idx + 1;
	/* A return address points after the call: the call itself is at ip - 1. */
	at = c->ip - (c->exact ? 0 : 1);

	/*
	 * Binary searches without branches: a fixed number of steps, each
	 * moving lo or hi through masks (opaque to the compiler, so no select
	 * turns back into a branch) and doing nothing once lo == hi.  With a
	 * branch per step the verifier would walk 2^steps paths; this is one.
	 * (Differences of values below 2^63 give comparisons by their sign.)
	 */
	nm = p->nmaps < UNWIND_MAX_MAPS ? p->nmaps : UNWIND_MAX_MAPS;
	/*
	 * Most callers live in the callee's mapping: that one first.  Its index
	 * is kept in the scratch map, not in c: a value the verifier cannot
	 * follow from one frame to the next lets it see every frame as one.
	 */
	lo = st->pad;
	{
		__u32 key = c->slot * UNWIND_MAX_MAPS + (lo & (UNWIND_MAX_MAPS - 1));
		m = bpf_map_lookup_elem(&unwind_maps, &key);
		if (m && lo < nm && m->start <= at && at < m->end) {
			lo++;
			goto found;
		}
	}
	lo = 0;
	hi = nm;
	for (int k = 0; k < 7; k++) { /* the mapping: the last with start <= at */
		__u32 mid = (lo + hi) >> 1, key = c->slot * UNWIND_MAX_MAPS + (mid & (UNWIND_MAX_MAPS - 1));
		__u64 act, right, mr, ml;

		m = bpf_map_lookup_elem(&unwind_maps, &key);
		if (!m)
			return 1;
		act = -((((__u64)lo - (__u64)hi) >> 63));   /* ~0 while lo < hi */
		right = ((at - m->start) >> 63) - 1;        /* ~0 when start <= at */
		asm volatile("" : "+r"(act), "+r"(right));
		mr = right & act;
		ml = ~right & act;
		lo = (__u32)((lo & ~mr) | ((mid + 1) & mr));
		hi = (__u32)((hi & ~ml) | (mid & ml));
	}
found:
	st->pad = lo ? lo - 1 : 0;
	m = NULL;
	if (lo > 0 && lo <= UNWIND_MAX_MAPS) {
		__u32 key = c->slot * UNWIND_MAX_MAPS + lo - 1;
		m = bpf_map_lookup_elem(&unwind_maps, &key);
	}
	if (m) {
		__u64 pc = at - m->bias;

		if (at < m->end && m->nrows && pc < (1ull << 32)) {
			lo = 0;
			hi = m->nrows;
			for (int k = 0; k < UNWIND_SEARCH_STEPS; k++) { /* the row: the last with row.pc <= pc */
				__u32 mid = (lo + hi) >> 1, key = m->first + mid;
				struct unwind_row *r;
				__u64 act, right, mr, ml;

				if (lo >= hi)
					break; /* found: small tables take few steps */
				r = bpf_map_lookup_elem(&unwind_rows, &key);
				if (!r)
					return 1;
				act = -((((__u64)lo - (__u64)hi) >> 63));
				right = ((pc - (__u64)r->pc) >> 63) - 1;
				asm volatile("" : "+r"(act), "+r"(right));
				mr = right & act;
				ml = ~right & act;
				lo = (__u32)((lo & ~mr) | ((mid + 1) & mr));
				hi = (__u32)((hi & ~ml) | (mid & ml));
			}
			if (lo > 0) {
				__u32 key = m->first + lo - 1;
				row = bpf_map_lookup_elem(&unwind_rows, &key);
				if (row)
					type = row->type;
			}
		}
	}

	switch (type) {
	case UNW_END:
		c->end = UW_COMPLETE;
		return 1;
	case UNW_SIGNAL: {
		__u64 regs[3];
		if (bpf_probe_read_user(&regs[0], 8, (void *)(c->sp + SIGCTX_RBP)) ||
		    bpf_probe_read_user(&regs[1], 8, (void *)(c->sp + SIGCTX_RSP)) ||
		    bpf_probe_read_user(&regs[2], 8, (void *)(c->sp + SIGCTX_RIP))) {
			c->end = UW_READ_ERR;
			return 1;
		}
		c->bp = regs[0];
		c->sp = regs[1];
		c->ip = regs[2];
		c->exact = 1;
		return c->ip ? 0 : 1;
	}
	case UNW_CFA_RSP:
	case UNW_CFA_RBP:
	case UNW_PLT:
		if (!row)
			return 1;
		if (type == UNW_CFA_RSP)
			cfa = c->sp + row->cfa_off;
		else if (type == UNW_CFA_RBP)
			cfa = c->bp + row->cfa_off;
		else
			cfa = c->sp + 8 + (((c->ip & 15) >= row->cfa_off) ? 8 : 0);
		if (bpf_probe_read_user(&ra, sizeof(ra), (void *)(cfa - 8))) {
			c->end = UW_READ_ERR;
			return 1;
		}
		if (row->fp_off8 && bpf_probe_read_user(&c->bp, sizeof(c->bp), (void *)(cfa + (__s64)row->fp_off8 * 8))) {
			c->end = UW_READ_ERR;
			return 1;
		}
		break;
	default: {
		/* No rule here: frame pointers, as bpf_get_stack would. */
		__u64 frame[2];
		if (c->bp < c->sp || c->bp - c->sp > (8u << 20)) {
			c->end = UW_STOPPED;
			return 1;
		}
		if (bpf_probe_read_user(frame, sizeof(frame), (void *)c->bp)) {
			c->end = UW_READ_ERR;
			return 1;
		}
		cfa = c->bp + 16;
		c->bp = frame[0];
		ra = frame[1];
		/* Counted here, not in c: a counter in the loop's state keeps the verifier from converging. */
		count(BPF_CNT_UNWIND_FP_FRAMES);
		break;
	}
	}
	/* Stacks grow down: a caller's frame is above its callee's, or the walk is lost. */
	if (!ra || cfa <= c->sp) {
		c->end = UW_STOPPED;
		return 1;
	}
	c->ip = ra;
	c->sp = cfa;
	c->exact = 0;
	return 0;
}

static __always_inline __u64 unwind_gen(__u32 tgid)
{
	__u32 *slot = bpf_map_lookup_elem(&unwind_slot, &tgid);
	struct unwind_proc_head *p;

	if (!slot)
		return 0;
	p = bpf_map_lookup_elem(&unwind_procs, slot);
	return p && p->tgid == tgid ? p->gen : 0;
}

/*
 * The current thread's user stack, walked with its process's unwind tables
 * into the per-CPU scratch and stored in hstacks by content hash.  0 when the
 * process has no tables (the caller walks frame pointers as before).
 */
static __always_inline __u64 unwind_user(__u32 tgid)
{
	/* its own zero key for its two scratch lookups: percpu_scratch() twice costs two instructions */
	__u32 zero = 0, *slot = bpf_map_lookup_elem(&unwind_slot, &tgid);
	struct task_struct *task;
	struct pt_regs *regs;
	struct unwind_proc_head *p;
	struct hstack *st;
	struct uw_state c = {};
	__u64 h = EMBER_FNV_OFFSET;

	if (!slot)
		return 0;
	p = bpf_map_lookup_elem(&unwind_procs, slot);
	if (!p || p->tgid != tgid)
		return 0;
	task = (struct task_struct *)bpf_get_current_task_btf();
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	/* regs are the user registers saved at the last kernel entry, whatever context this runs in. */
	c.ip = regs->ip;
	c.sp = regs->sp;
	c.bp = regs->bp;
	c.slot = *slot;
	c.exact = 1;
	st = bpf_map_lookup_elem(&scratch, &zero);
	if (!st)
		return 0;
	st->pad = 0; /* uw_step's last mapping */
	bpf_loop(EMBER_MAX_STACK_DEPTH, uw_step, &c, 0);
	count(BPF_CNT_UNWIND_STACKS);
	if (c.end == UW_COMPLETE)
		count(BPF_CNT_UNWIND_COMPLETE);
	else if (c.end == UW_READ_ERR)
		count(BPF_CNT_UNWIND_READ_ERR);
	else if (c.end == UW_RUNNING)
		count(BPF_CNT_UNWIND_TRUNCATED);
	st = bpf_map_lookup_elem(&scratch, &zero);
	if (!st || !c.n)
		return 0;
	st->n = c.n;
	for (__u32 i = 0; i < EMBER_MAX_STACK_DEPTH; i++) {
		if (i >= c.n)
			break;
		h = fnv_mix(h, st->ips[i]);
	}
	h |= 1;
	if (!map_ensure(&hstacks, &h, st))
		count(BPF_CNT_HSTACK_FULL);
	return h;
}

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

/* Walks one stack into the per-CPU scratch and stores it by content hash. */
static __always_inline __u64 hash_stack(void *ctx, __u64 flags)
{
	struct hstack *st = percpu_scratch(&scratch);
	__u64 h = EMBER_FNV_OFFSET;
	long len;

	if (!st)
		return 0;
	len = bpf_get_stack(ctx, st->ips, sizeof(st->ips), flags);
	if (len <= 0) {
		count(BPF_CNT_OFFCPU_STACK_ERR);
		return 0;
	}
	st->n = len / sizeof(__u64);
	for (__u32 i = 0; i < EMBER_MAX_STACK_DEPTH; i++) {
		if (i >= st->n)
			break;
		h = fnv_mix(h, st->ips[i]);
	}
	h |= 1; /* never 0: 0 means "no stack" */
	/* Most blocks repeat a known stack: look before copying 1 KiB into the map. */
	if (!map_ensure(&hstacks, &h, st))
		count(BPF_CNT_HSTACK_FULL);
	return h;
}

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
