/*
 * Thread profiling (bpf/threads_abi.h): each target thread's on-CPU periods
 * (sched_switch) and the system calls that may block (sys_enter/sys_exit,
 * tp_btf or raw_tp: no kprobes on the kernels ember runs on), aggregated here
 * per (thread, event, fd or futex op) into the window's map set, so a thread
 * reading in a loop costs one entry a second, not one record a call.
 *
 * The object shares the stacks object's target map, counters, hashed stacks
 * and unwind tables (bpf/user_stack.bpf.h; the collector reuses their fds),
 * so thread profiling walks user stacks with the same unwinder.  A call's
 * stack is walked where it is cheapest to know it is wanted: when the call
 * first leaves the CPU (it blocks: a deadlocked futex never returns, so its
 * exit is too late), or at its exit when it ran that long on the CPU.  A
 * repeat at the same place (same registers, syscall and arguments) reuses
 * the thread's last stack.  Only calls at least the task's threshold long
 * report theirs.
 *
 * Needs bpf_loop, task BTF and bpf_task_pt_regs (Linux 5.17): the collector
 * says so and builds no thread kind where the object does not load.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "bpf/user_stack.bpf.h"
#include "bpf/threads_abi.h"

char LICENSE[] SEC("license") = "GPL";

#define S_IFMT 00170000
#define S_IFSOCK 0140000
#define AF_INET 2
#define AF_INET6 10

/* syscall number -> its class (enum thread_ev_type) | THREAD_CLS_FD; written by the collector before load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u8);
	__uint(max_entries, THREAD_SYSCALLS);
} threads_sys SEC(".maps");

/* tid -> its state (struct thread_state): created at a target thread's first traced call or switch-in. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, struct thread_state);
	__uint(max_entries, 16384);
} threads_state SEC(".maps");

struct threads_aggmap {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct thread_agg_key);
	__type(value, struct thread_agg_val);
	__uint(max_entries, 16384);
};
struct threads_aggmap threads_agg0 SEC(".maps");
struct threads_aggmap threads_agg1 SEC(".maps");

/* Aggregates per thread in the window's set: the per-thread bound. */
struct threads_keymap {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 16384);
};
struct threads_keymap threads_keys0 SEC(".maps");
struct threads_keymap threads_keys1 SEC(".maps");

/* File aggregates' paths, per set like the aggregates (THREAD_AGG_F_PATH). */
struct threads_pathmap {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct thread_agg_key);
	__type(value, struct thread_path);
	__uint(max_entries, 16384);
};
struct threads_pathmap threads_paths0 SEC(".maps");
struct threads_pathmap threads_paths1 SEC(".maps");

/* A path being read: too big for the BPF stack. */
struct path_scratch {
	struct thread_path path;
	__u64 names[THREAD_PATH_DEPTH];   /* the components' name pointers, leaf first */
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct path_scratch);
	__uint(max_entries, 1);
} threads_path_scratch SEC(".maps");

/* Which set programs write to; flipped by the collector once a window. */
volatile __u32 threads_active;
/* Bumped by the collector after each change of a thread task's targets: the caches below are then stale. */
volatile __u32 threads_gen;

/*
 * Per CPU, the thread running there and what the target map says of it (its
 * task's events and stack threshold, or that no thread task follows it),
 * set at each switch-in: every syscall of the host runs these programs, and
 * each then costs one array lookup instead of a hash lookup.
 */
struct thread_seen {
	__u64 pid_tgid;
	__u32 gen;
	__u32 probes;       /* THREAD_P_*; 0: not a thread task's */
	__u64 stack_ns;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct thread_seen);
	__uint(max_entries, 1);
} threads_seen SEC(".maps");

static __always_inline struct target_val *threads_target(__u32 tgid)
{
	struct target_val *tv = bpf_map_lookup_elem(&targets, &tgid);

	return tv && (tv->mask & (1u << EMBER_TASK_THREADS)) ? tv : NULL;
}

/* What the thread tasks ask of the current thread (probes 0: nothing), through the per-CPU cache. */
static __always_inline struct thread_seen *current_target(__u64 id)
{
	__u32 zero = 0, gen = threads_gen;
	struct thread_seen *s = bpf_map_lookup_elem(&threads_seen, &zero);
	struct target_val *tv;

	if (!s)
		return NULL;
	if (s->pid_tgid == id && s->gen == gen)
		return s->probes ? s : NULL;
	tv = threads_target(id >> 32);
	s->pid_tgid = id;
	s->gen = gen;
	s->probes = tv ? tv->threads_probes : 0;
	s->stack_ns = tv ? tv->threads_stack_ns : 0;
	return s->probes ? s : NULL;
}

/* The CPU's cache, told who runs next (tv: its target entry, or NULL). */
static __always_inline void seen_set(__u64 id, const struct target_val *tv)
{
	__u32 zero = 0;
	struct thread_seen *s = bpf_map_lookup_elem(&threads_seen, &zero);

	if (!s)
		return;
	s->pid_tgid = id;
	s->gen = threads_gen;
	s->probes = tv ? tv->threads_probes : 0;
	s->stack_ns = tv ? tv->threads_stack_ns : 0;
}

/* The thread's state, created if it has none; NULL when the map is full (counted). */
static __always_inline struct thread_state *state_of(__u32 tid, __u32 tgid)
{
	struct thread_state *st = bpf_map_lookup_elem(&threads_state, &tid);

	if (!st) {
		struct thread_state n = { .tgid = tgid };

		/* Preallocated: no allocation here, which sched_switch's locks forbid. */
		bpf_map_update_elem(&threads_state, &tid, &n, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&threads_state, &tid);
		if (!st) {
			count(BPF_CNT_THREAD_CALL_FULL);
			return NULL;
		}
	}
	if (st->tgid != tgid) {
		/* Another process's thread had this tid: nothing it left means anything here. */
		__builtin_memset(st, 0, sizeof(*st));
		st->tgid = tgid;
	}
	return st;
}

static __always_inline __u8 class_of(__s32 nr)
{
	__u32 k = (__u32)nr;
	__u8 *c;

	if (nr < 0 || nr >= THREAD_SYSCALLS)
		return 0;
	c = bpf_map_lookup_elem(&threads_sys, &k);
	return c ? *c : 0;
}

/* futex(2)'s command, as waits and wakes (FUTEX_CMD_MASK drops the PRIVATE and CLOCK_REALTIME bits). */
static __always_inline __s32 futex_op(__u64 op)
{
	switch (op & 0x7f) {
	case 0:  /* FUTEX_WAIT */
	case 6:  /* FUTEX_LOCK_PI */
	case 8:  /* FUTEX_TRYLOCK_PI */
	case 9:  /* FUTEX_WAIT_BITSET */
	case 11: /* FUTEX_WAIT_REQUEUE_PI */
	case 13: /* FUTEX_LOCK_PI2 */
		return THREAD_FUTEX_WAIT;
	case 1:  /* FUTEX_WAKE */
	case 3:  /* FUTEX_REQUEUE */
	case 4:  /* FUTEX_CMP_REQUEUE */
	case 5:  /* FUTEX_WAKE_OP */
	case 7:  /* FUTEX_UNLOCK_PI */
	case 10: /* FUTEX_WAKE_BITSET */
	case 12: /* FUTEX_CMP_REQUEUE_PI */
		return THREAD_FUTEX_WAKE;
	}
	return THREAD_FUTEX_OTHER;
}

/* The current thread's user stack, reusing its last one when it is at the same place. */
static __always_inline __u64 walk_cached(void *ctx, struct thread_state *c, __u32 tgid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	__u64 fp = EMBER_FNV_OFFSET, h;

	/*
	 * The same place as the thread's last walk: the same stack.  Nothing
	 * more is checked here (every blocking call comes this way): a stack the
	 * LRU evicted meanwhile is counted lost by the collector, and new unwind
	 * tables do not change the frames of a place already walked.
	 */
	fp = fnv_mix(fp, regs->ip);
	fp = fnv_mix(fp, regs->sp);
	fp = fnv_mix(fp, regs->bp);
	fp = fnv_mix(fp, regs->orig_ax);
	if (c->fp == fp && c->fp_uhash) {
		count(BPF_CNT_THREAD_STACK_HITS);
		return c->fp_uhash;
	}
	if (c->fp2 == fp && c->fp2_uhash) {
		count(BPF_CNT_THREAD_STACK_HITS);
		h = c->fp2_uhash;
	} else {
		count(BPF_CNT_THREAD_STACKS);
		h = unwind_user(tgid);
		if (!h)
			h = hash_stack(ctx, BPF_F_USER_STACK);
	}
	c->fp2 = c->fp;
	c->fp2_uhash = c->fp_uhash;
	c->fp = fp;
	c->fp_uhash = h;
	return h;
}

/*
 * The file's path into the per-CPU scratch: its dentries' names, leaf to
 * the process's root (a chroot's, a container's: the path it opened),
 * crossing each mount to where it is mounted, then written root first.
 * A path read here is the one the call used, whatever happens to the fd
 * after (closed and reused before the collector reads the window).
 */
struct walk_ctx {
	struct dentry *d;
	struct vfsmount *vm;
	struct mount *mnt;
	struct dentry *root;        /* the process's root (chroot, a container's): paths are as it sees them */
	struct vfsmount *root_mnt;
	struct path_scratch *s;
	__u32 n, cut, off;
};

/* One step up: a name, or a mount crossed (no name); 1 once at the root or THREAD_PATH_DEPTH names deep. */
static long walk_step(__u32 i, struct walk_ctx *c)
{
	/* Locals: a CO-RE read of c->d would relocate c's own (local) type too. */
	struct dentry *d = c->d, *parent = BPF_CORE_READ(d, d_parent);
	struct vfsmount *vm = c->vm;
	struct mount *mnt = c->mnt;

	if (d == c->root && vm == c->root_mnt) {
		c->cut = 0;             /* the process's own root */
		return 1;
	}
	if (d == BPF_CORE_READ(vm, mnt_root)) {
		struct mount *up = BPF_CORE_READ(mnt, mnt_parent);

		if (up == mnt) {
			c->cut = 0;     /* the root of the mount tree */
			return 1;
		}
		c->d = BPF_CORE_READ(mnt, mnt_mountpoint);
		c->mnt = up;
		c->vm = &up->mnt;
		return 0;
	}
	if (d == parent) {
		c->cut = 0;             /* a filesystem's own root (an unmounted or pseudo one) */
		return 1;
	}
	if (c->n >= THREAD_PATH_DEPTH)
		return 1;
	c->s->names[c->n & (THREAD_PATH_DEPTH - 1)] = (__u64)BPF_CORE_READ(d, d_name.name);
	c->n++;
	c->d = parent;
	return 0;
}

/* Component n - 1 - i, root first: "/name"; 1 once written out or the path is full. */
static long write_step(__u32 i, struct walk_ctx *c)
{
	__u64 o;
	long len;

	if (i >= c->n || c->off >= THREAD_PATH_HALF - 2)
		return 1;
	o = c->off;
	asm volatile("%0 &= 255" : "+r"(o));
	c->s->path.p[o] = '/';
	o++;
	/* The mask the verifier sees: the compiler would drop it, knowing off is small already. */
	asm volatile("%0 &= 255" : "+r"(o));
	len = bpf_probe_read_kernel_str(&c->s->path.p[o], THREAD_PATH_HALF,
					(const void *)c->s->names[(c->n - 1 - i) & (THREAD_PATH_DEPTH - 1)]);
	if (len <= 1)
		return 1;
	c->off = (__u32)o + (__u32)len - 1;
	return 0;
}

static __noinline struct thread_path *file_path(struct file *f)
{
	struct walk_ctx c = { .cut = 1 };
	__u64 o;

	c.s = percpu_scratch(&threads_path_scratch);
	if (!c.s)
		return NULL;
	c.d = BPF_CORE_READ(f, f_path.dentry);
	c.vm = BPF_CORE_READ(f, f_path.mnt);
	{
		struct task_struct *task = bpf_get_current_task_btf();

		c.root = BPF_CORE_READ(task, fs, root.dentry);
		c.root_mnt = BPF_CORE_READ(task, fs, root.mnt);
	}
	c.mnt = container_of(c.vm, struct mount, mnt);
	/* Mounts crossed take steps of their own: room for a few besides the names. */
	bpf_loop(THREAD_PATH_DEPTH + 8, walk_step, &c, 0);
	if (c.cut) {
		__builtin_memcpy(c.s->path.p, "...", 4);
		c.off = 3;
	}
	bpf_loop(THREAD_PATH_DEPTH, write_step, &c, 0);
	if (!c.off)
		c.s->path.p[c.off++] = '/';
	o = c.off;
	asm volatile("%0 &= 511" : "+r"(o));
	c.s->path.p[o] = 0;
	return &c.s->path;
}

/*
 * What the fd is, for a new aggregate: a socket's family, protocol and ends,
 * or a file's identity.  Read through probe reads: bpf_rdonly_cast (6.2)
 * would save a few, but this runs once per aggregate, not per call.
 */
static __noinline void fd_kind(struct thread_agg_val *v, int fd, const struct thread_agg_key *key, void *paths)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct file **fds, *f = NULL;
	struct socket *sock;
	struct sock *k;
	unsigned int max;
	umode_t mode;

	if (fd < 0)
		return;
	fds = BPF_CORE_READ(task, files, fdt, fd);
	max = BPF_CORE_READ(task, files, fdt, max_fds);
	if ((unsigned int)fd >= max || bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) || !f)
		return;
	v->ino = BPF_CORE_READ(f, f_inode, i_ino);
	v->dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
	mode = BPF_CORE_READ(f, f_inode, i_mode);
	if ((mode & S_IFMT) != S_IFSOCK) {
		struct thread_path *p = file_path(f);

		if (p && !bpf_map_update_elem(paths, key, p, BPF_ANY))
			v->flags |= THREAD_AGG_F_PATH;
		return;
	}
	sock = (struct socket *)BPF_CORE_READ(f, private_data);
	k = BPF_CORE_READ(sock, sk);
	v->flags |= THREAD_AGG_F_SOCK;
	v->sock_family = BPF_CORE_READ(k, __sk_common.skc_family);
	v->sock_proto = BPF_CORE_READ(k, sk_protocol);
	v->sport = BPF_CORE_READ(k, __sk_common.skc_num);
	v->dport = __builtin_bswap16(BPF_CORE_READ(k, __sk_common.skc_dport));
	if (v->sock_family == AF_INET) {
		__u32 l = BPF_CORE_READ(k, __sk_common.skc_rcv_saddr), r = BPF_CORE_READ(k, __sk_common.skc_daddr);

		__builtin_memcpy(v->saddr, &l, 4);
		__builtin_memcpy(v->daddr, &r, 4);
	} else if (v->sock_family == AF_INET6) {
		BPF_CORE_READ_INTO(&v->saddr, k, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
		BPF_CORE_READ_INTO(&v->daddr, k, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
	}
}

/*
 * One call or period into the window's aggregate of its key.  Only the thread
 * itself writes its aggregates (the key holds its tid), so the updates need
 * no atomics; the collector reads a set only after it stopped being active.
 */
static __always_inline void book(const struct thread_agg_key *key, __u8 cls, __u32 probes,
				 __u64 start, __u64 end, __u64 uhash, bool stack_lost)
{
	__u32 set = threads_active, tid = key->tid, one = 1, *n;
	void *agg = set ? (void *)&threads_agg1 : (void *)&threads_agg0;
	void *keys = set ? (void *)&threads_keys1 : (void *)&threads_keys0;
	void *paths = set ? (void *)&threads_paths1 : (void *)&threads_paths0;
	struct thread_agg_val *v = bpf_map_lookup_elem(agg, key);
	__u64 dur = end - start;

	if (!v) {
		struct thread_agg_val nv = { .first_start = start, .last_end = end, .total_ns = dur, .count = 1,
					     .max_ns = dur, .uhash = uhash, .type = cls };

		n = bpf_map_lookup_elem(keys, &tid);
		if (n && *n >= THREAD_MAX_KEYS) {
			count(BPF_CNT_THREAD_KEYS_CAP);
			return;
		}
		if (cls == THREAD_EV_RW || cls == THREAD_EV_NET || cls == THREAD_EV_FILE)
			if (key->arg >= 0)
				fd_kind(&nv, key->arg, key, paths);
		if (cls == THREAD_EV_RW)
			nv.type = (nv.flags & THREAD_AGG_F_SOCK) ? THREAD_EV_NET : THREAD_EV_FILE;
		if (!(probes & thread_probes_of(nv.type)))
			nv.flags |= THREAD_AGG_F_OFF;
		if (stack_lost)
			nv.flags |= THREAD_AGG_F_STACK_LOST;
		bpf_get_current_comm(nv.comm, sizeof(nv.comm));
		BPF_CORE_READ_STR_INTO(&nv.pcomm, bpf_get_current_task_btf(), group_leader, comm);
		if (bpf_map_update_elem(agg, key, &nv, BPF_NOEXIST)) {
			count(BPF_CNT_THREAD_AGG_FULL);
			return;
		}
		if (n)
			*n += 1;
		else
			bpf_map_update_elem(keys, &tid, &one, BPF_NOEXIST);
		return;
	}
	if (v->flags & THREAD_AGG_F_OFF)
		return;
	v->count++;
	v->total_ns += dur;
	if (start < v->first_start)
		v->first_start = start;
	if (end > v->last_end)
		v->last_end = end;
	if (dur > v->max_ns) {
		v->max_ns = dur;
		if (uhash || stack_lost) {
			v->uhash = uhash;
			v->flags = (v->flags & ~THREAD_AGG_F_STACK_LOST) | (stack_lost ? THREAD_AGG_F_STACK_LOST : 0);
		}
	}
}

static __always_inline int t_enter(struct pt_regs *regs, long nr)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u8 cls = class_of(nr);
	struct thread_seen *tv;
	struct thread_state *c;

	if (!cls)
		return 0;
	tv = current_target(id);
	if (!tv || !(tv->probes & thread_probes_of(cls & ~THREAD_CLS_FD)))
		return 0;
	c = state_of((__u32)id, id >> 32);
	if (!c)
		return 0;
	c->nr = nr;
	c->cls = cls;
	c->arg0 = regs->di;
	c->arg1 = regs->si;
	c->uhash = 0;
	c->ts = bpf_ktime_get_ns();
	return 0;
}

static __always_inline int t_exit(void *ctx, long nr)
{
	__u64 id, now, start, uhash = 0;
	__u32 tgid, tid;
	struct thread_agg_key key = { .arg = -1 };
	struct thread_state *c;
	struct thread_seen *tv;
	bool lost = false;
	__u8 cls;

	/* Every syscall of the host exits here: the ones no sub-probe records leave after an array lookup. */
	if (!class_of(nr))
		return 0;
	id = bpf_get_current_pid_tgid();
	tgid = id >> 32;
	tid = (__u32)id;
	key.tid = tid;
	key.tgid = tgid;
	tv = current_target(id);
	/* Untargeted since the call began: its entry stays until its thread's next call or its task's end. */
	if (!tv)
		return 0;
	c = bpf_map_lookup_elem(&threads_state, &tid);
	if (!c || !c->ts || c->tgid != tgid)
		return 0;
	now = bpf_ktime_get_ns();
	start = c->ts;
	c->ts = 0;
	cls = c->cls;
	key.nr = c->nr;
	if (cls & THREAD_CLS_FD)
		key.arg = (__s32)c->arg0;
	cls &= ~THREAD_CLS_FD;
	if (cls == THREAD_EV_LOCK)
		key.arg = futex_op(c->arg1);
	count(BPF_CNT_THREAD_CALLS);
	if (now - start >= tv->stack_ns) {
		uhash = c->uhash ? c->uhash : walk_cached(ctx, c, tgid);
		lost = !uhash;
	}
	book(&key, cls, tv->probes, start, now, uhash, lost);
	return 0;
}

#define EMBER_TASK_DEAD 0x80u

static __always_inline __u32 task_state(struct task_struct *t)
{
	return t->__state;
}

/*
 * prev is current: its period ends and a call it blocks in gets its stack;
 * next's period starts, and the CPU's cache learns what next is.
 */
static __always_inline int t_switch(void *ctx, __u32 next_tid, __u32 next_tgid)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct thread_seen *tv = tgid ? current_target(id) : NULL;
	struct target_val *ntv = next_tgid ? threads_target(next_tgid) : NULL;

	if (tv) {
		struct thread_state *c = bpf_map_lookup_elem(&threads_state, &tid);

		if (c && c->tgid != tgid)
			c = NULL;
		if (tv->probes & THREAD_P_ONCPU) {
			struct thread_agg_key key = { .tid = tid, .tgid = tgid, .nr = THREAD_NR_ONCPU, .arg = -1 };

			if (c && c->oncpu_ts) {
				count(BPF_CNT_THREAD_ONCPU);
				book(&key, THREAD_EV_ONCPU, tv->probes, c->oncpu_ts, now, 0, false);
				c->oncpu_ts = 0;
			} else {
				/*
				 * On the CPU since before the task: the slice's run time so far
				 * (its scheduler entity's runtime since it was picked) says since when.
				 */
				struct task_struct *t = bpf_get_current_task_btf();
				__u64 ran = t->se.sum_exec_runtime - t->se.prev_sum_exec_runtime;

				count(BPF_CNT_THREAD_UNTIMED);
				if (ran && ran < now) {
					count(BPF_CNT_THREAD_ONCPU);
					book(&key, THREAD_EV_ONCPU, tv->probes, now - ran, now, 0, false);
				}
			}
		}
		if (c && c->ts && !c->uhash)
			c->uhash = walk_cached(ctx, c, tgid);
		if (task_state(bpf_get_current_task_btf()) & EMBER_TASK_DEAD)
			/* The thread will not run again; its tid may be reused. */
			bpf_map_delete_elem(&threads_state, &tid);
	}
	seen_set((__u64)next_tgid << 32 | next_tid, ntv && ntv->threads_probes ? ntv : NULL);
	if (ntv && (ntv->threads_probes & THREAD_P_ONCPU)) {
		struct thread_state *n = state_of(next_tid, next_tgid);

		if (n)
			n->oncpu_ts = now;
	}
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(threads_enter_btf, struct pt_regs *regs, long id)
{
	return t_enter(regs, id);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(threads_exit_btf, struct pt_regs *regs, long ret)
{
	return t_exit(ctx, regs->orig_ax);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(threads_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return t_switch(ctx, next->pid, next->tgid);
}

SEC("raw_tp/sys_enter")
int BPF_PROG(threads_enter_raw, struct pt_regs *regs, long id)
{
	struct pt_regs r = {};

	r.di = BPF_CORE_READ(regs, di);
	r.si = BPF_CORE_READ(regs, si);
	return t_enter(&r, id);
}

SEC("raw_tp/sys_exit")
int BPF_PROG(threads_exit_raw, struct pt_regs *regs, long ret)
{
	return t_exit(ctx, BPF_CORE_READ(regs, orig_ax));
}

SEC("raw_tp/sched_switch")
int BPF_PROG(threads_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return t_switch(ctx, BPF_CORE_READ(next, pid), BPF_CORE_READ(next, tgid));
}
