/*
 * What every stack-walking program shares, included by each object that
 * walks stacks (bpf/stacks.bpf.c, bpf/threads.bpf.c): the target map, the
 * counters, the stacks stored by content hash, and the user-stack walker with
 * its unwind tables.  An object other than stacks.bpf.c reuses the stacks
 * object's maps (the collector hands their fds over before it loads), so a
 * stack one program stored is the same stack to the others, and the unwind
 * tables are written once.
 */
#ifndef EMBER_USER_STACK_BPF_H
#define EMBER_USER_STACK_BPF_H

#include "bpf/ember_abi.h"
#include "bpf/py_abi.h"
#include "bpf/unwind_abi.h"
#include "bpf/ember.bpf.h"

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

/* Stacks by content hash: they outlive windows (a thread sleeps for minutes after its stack is taken). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, struct hstack);
	__uint(max_entries, 8192);
} hstacks SEC(".maps");

/* Per-CPU scratch for one stack (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct hstack);
	__uint(max_entries, 1);
} scratch SEC(".maps");

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

/* Python processes (bpf/py_abi.h), written by the collector from the analyzer's CTL_REQ_PY_PROC. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct py_proc);
	__uint(max_entries, 1024);
} py_procs SEC(".maps");

/* A thread's PyThreadState (0: none found at checked_ns), checked at each use. */
struct py_tstate {
	__u64 addr;
	__u64 checked_ns;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);   /* tid */
	__type(value, struct py_tstate);
	__uint(max_entries, 16384);
} py_tstates SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct py_code_key);
	__type(value, struct py_code);
	__uint(max_entries, 16384);
} py_codes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct py_code);
	__uint(max_entries, 1);
} py_code_scratch SEC(".maps");

/* A frame's and a code object's first bytes, read at once; room past the reads for any masked offset. */
struct py_bytes {
	__u8 frame[128 + 8];
	__u8 code[256 + 8];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct py_bytes);
	__uint(max_entries, 1);
} py_bytes SEC(".maps");

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

/* ---- Python frames (bpf/py_abi.h) ------------------------------------------ */

/* A thread without a Python thread state is looked for again after this long. */
#define PY_TSTATE_RETRY_NS 1000000000ull

struct py_find {
	__u64 ts;      /* the thread state looked at */
	__u64 found;
	__u32 tid;
	__u16 off_tid, off_next;
};

static long py_find_step(__u32 i, struct py_find *f)
{
	__u64 tid = 0;

	if (!f->ts)
		return 1;
	if (bpf_probe_read_user(&tid, sizeof(tid), (void *)(f->ts + f->off_tid)))
		return 1;
	if (tid == f->tid) {
		f->found = f->ts;
		return 1;
	}
	if (bpf_probe_read_user(&f->ts, sizeof(f->ts), (void *)(f->ts + f->off_next)))
		return 1;
	return 0;
}

/* The current thread's PyThreadState in the main interpreter, or 0. */
static __always_inline __u64 py_thread_state(const struct py_proc *pp, __u32 tid)
{
	struct py_tstate *c = bpf_map_lookup_elem(&py_tstates, &tid), nv = {};
	struct py_find f = { .tid = tid, .off_tid = pp->l.ts_native_tid, .off_next = pp->l.ts_next };
	__u64 interp = 0, now = bpf_ktime_get_ns(), got = 0;

	if (c && c->addr &&
	    !bpf_probe_read_user(&got, sizeof(got), (void *)(c->addr + pp->l.ts_native_tid)) && got == tid)
		return c->addr;
	if (c && !c->addr && now - c->checked_ns < PY_TSTATE_RETRY_NS)
		return 0;
	if (!bpf_probe_read_user(&interp, sizeof(interp), (void *)(pp->runtime + pp->l.rt_interp_head)) && interp &&
	    !bpf_probe_read_user(&f.ts, sizeof(f.ts), (void *)(interp + pp->l.is_threads_head)))
		bpf_loop(PY_MAX_THREADS, py_find_step, &f, 0);
	nv.addr = f.found;
	nv.checked_ns = now;
	bpf_map_update_elem(&py_tstates, &tid, &nv, BPF_ANY);
	return f.found;
}

/* A str object's bytes (compact ASCII or Latin-1) into dst, or "?". */
static __always_inline void py_str(char *dst, __u64 obj, const struct py_layout *l)
{
	__u32 state = 0;
	__u64 data = 0;

	dst[0] = '?';
	dst[1] = 0;
	if (!obj || bpf_probe_read_user(&state, sizeof(state), (void *)(obj + l->str_state)))
		return;
	/* state: interned:2, kind:3, compact:1, ascii:1 (3.11 to 3.13) */
	if (!(state & (1u << 5)))
		return;
	if (state & (1u << 6))
		data = obj + l->str_ascii_data;
	else if (((state >> 2) & 7) == 1)
		data = obj + l->str_compact_data;
	if (data && bpf_probe_read_user_str(dst, PY_NAME_LEN, (void *)data) < 0) {
		dst[0] = '?';
		dst[1] = 0;
	}
}

/* Bytes of b at off (masked into b's room: the collector keeps offsets within the read). */
#define PY_U64(b, off, mask) (*(__u64 *)((b) + ((off) & (mask))))
#define PY_S32(b, off, mask) (*(__s32 *)((b) + ((off) & (mask))))

/*
 * The names of code object addr in the map, read now when absent or when
 * another code object took its address (its qualified name object or first
 * line differ).  bytes: the code object's first PY_CODE_READ bytes.
 */
static __always_inline void py_code_names(__u64 addr, __u32 tgid, const struct py_layout *l, const __u8 *bytes)
{
	struct py_code_key k = { .addr = addr, .tgid = tgid };
	struct py_code *v = bpf_map_lookup_elem(&py_codes, &k), *n;
	__u64 qobj = PY_U64(bytes, l->co_qualname, 255);
	__s32 line = PY_S32(bytes, l->co_firstlineno, 255);

	if (v && v->qualname_obj == qobj && v->firstlineno == line)
		return;
	n = percpu_scratch(&py_code_scratch);
	if (!n)
		return;
	n->qualname_obj = qobj;
	n->firstlineno = line;
	py_str(n->filename, PY_U64(bytes, l->co_filename, 255), l);
	py_str(n->qualname, qobj, l);
	if (bpf_map_update_elem(&py_codes, &k, n, BPF_ANY))
		count(BPF_CNT_PY_CODES_FULL);
}

#define PY_WALK_SEEN 2  /* code objects a walk remembers checking (a power of two: more would exceed, on 6.1, the 512 bytes of stack the verifier allows the thread programs' chain of calls) */

struct py_walk {
	__u64 frame;
	/* The code objects this walk checked last: within one walk (one sample) a code object checked
	 * is still the one at its address, so a recursion's frames, or a few functions calling one
	 * another, are checked once each. */
	__u64 seen[PY_WALK_SEEN];
	__u32 nseen;
	__u32 base;    /* the first free slot of the stack */
	__u32 tgid;
	__u32 n;       /* Python frames so far */
	__u32 end;     /* UW_* */
	struct py_layout l;
};

/* One frame: two reads (its first bytes, its code object's, unless this walk checked it), the names when new. */
static long py_step(__u32 i, struct py_walk *w)
{
	struct hstack *st = percpu_scratch(&scratch);
	struct py_bytes *b = percpu_scratch(&py_bytes);
	__u64 code, idx = (__u64)w->base + i;
	bool seen = false;
	__u8 entry;

	asm volatile("" : "+r"(idx));
	if (!w->frame) {
		w->end = UW_COMPLETE;
		return 1;
	}
	if (!st || !b || idx >= EMBER_MAX_STACK_DEPTH)
		return 1;
	if (bpf_probe_read_user(b->frame, PY_FRAME_READ, (void *)w->frame)) {
		w->end = UW_READ_ERR;
		return 1;
	}
	code = PY_U64(b->frame, w->l.fr_code, 127);
	entry = b->frame[w->l.fr_entry & 127];
	for (int k = 0; k < PY_WALK_SEEN; k++)
		seen |= code == w->seen[k];
	if (!code || (!seen && bpf_probe_read_user(b->code, PY_CODE_READ, (void *)code))) {
		w->end = UW_READ_ERR;
		return 1;
	}
	st->ips[idx] = PY_FRAME_TAG | (code & PY_FRAME_ADDR) | (entry ? PY_FRAME_ENTRY : 0);
	w->n = i + 1;
	w->frame = PY_U64(b->frame, w->l.fr_previous, 127);
	if (!seen) {
		py_code_names(code, w->tgid, &w->l, b->code);
		w->seen[w->nseen++ & (PY_WALK_SEEN - 1)] = code;
	}
	return 0;
}

/*
 * The current thread's Python frames after the n native ones in the scratch
 * stack; the new count.  Processes the collector was told nothing about, and
 * threads without a Python thread state, keep n.  A function of its own, not
 * inlined: its state then sits in its own frame, not in the caller's, whose
 * chain of calls (the thread programs' path lookups) must stay within the
 * 512 bytes the verifier allows all frames together (6.1 counts them so).
 */
static __noinline __u32 py_frames(__u32 tgid, __u32 tid, __u32 n)
{
	struct py_proc *pp = bpf_map_lookup_elem(&py_procs, &tgid);
	struct py_walk w = {};
	__u64 ts, cframe = 0, t0;

	if (!pp || n >= EMBER_MAX_STACK_DEPTH)
		return n;
	t0 = bpf_ktime_get_ns();
	count(BPF_CNT_PY_STACKS);
	ts = py_thread_state(pp, tid);
	if (!ts) {
		count(BPF_CNT_PY_NO_THREAD);
		counter_add(&counters, BPF_CNT_PY_NS, bpf_ktime_get_ns() - t0);
		return n;
	}
	w.l = pp->l;
	w.tgid = tgid;
	w.base = n;
	if (bpf_probe_read_user(&cframe, sizeof(cframe), (void *)(ts + w.l.ts_cframe)) || !cframe ||
	    bpf_probe_read_user(&w.frame, sizeof(w.frame), (void *)(cframe + w.l.cf_current))) {
		count(BPF_CNT_PY_READ_ERR);
		counter_add(&counters, BPF_CNT_PY_NS, bpf_ktime_get_ns() - t0);
		return n;
	}
	bpf_loop(PY_MAX_FRAMES, py_step, &w, 0);
	if (w.end == UW_READ_ERR)
		count(BPF_CNT_PY_READ_ERR);
	else if (w.end != UW_COMPLETE)
		count(BPF_CNT_PY_TRUNCATED);
	counter_add(&counters, BPF_CNT_PY_FRAMES, w.n);
	counter_add(&counters, BPF_CNT_PY_NS, bpf_ktime_get_ns() - t0);
	return n + w.n;
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
	if (c.n)
		c.n = py_frames(tgid, (__u32)bpf_get_current_pid_tgid(), c.n);
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

#endif
