/*
 * Part of net.bpf.c: processes.  The events about a process rather than a
 * socket: a target's forks (followed), the exits of the children it
 * follows, and its execs and executable mappings (the latter seen among the
 * syscalls, net_syscalls.bpf.h, or as vm_unmapped_area, net_socklayer.bpf.h), on which the analyzer looks for TLS
 * libraries to probe.
 */

/* An event about a process rather than a socket (fork, exit, executable mapping): family 0; flags NET_F_*. */
static __always_inline void proc_event_flags(__u32 op, __u32 tgid, __s64 ret, __u32 root, __u32 flags)
{
	struct scratch *s;

	s = percpu_scratch(&net_scratch);
	if (!s)
		return;
	__builtin_memset(&s->e, 0, sizeof(s->e));
	s->e.ts_ns = bpf_ktime_get_ns();
	s->e.tgid = tgid;
	s->e.tid = (__u32)bpf_get_current_pid_tgid();
	s->e.op = op;
	s->e.ret = ret;
	s->e.root = root;
	s->e.flags = flags;
	bpf_get_current_comm(s->e.comm, sizeof(s->e.comm));
	/* The analyzer attaches the process's TLS probes on these: no batching delay. */
	emit_now(s, 0, true);
}

static __always_inline void proc_event(__u32 op, __u32 tgid, __s64 ret, __u32 root)
{
	proc_event_flags(op, tgid, ret, root, 0);
}

/*
 * A target's child process is a target too (a server forking a process per
 * connection, a shell script's commands): it inherits the parent's tasks,
 * and remembers the process the task named, so that the collector can stop
 * following it with that process and the analyzer can book it to the task.
 */
static __always_inline void on_fork(__u32 ptgid, __u32 ctgid)
{
	struct net_target *t, v = {};

	if (ptgid == ctgid)
		return;  /* a thread */
	t = target_of(ptgid);
	if (!t)
		return;
	v.tasks = t->tasks;
	v.prefix_tasks = t->prefix_tasks;
	v.root = t->root ? t->root : ptgid;
	if (bpf_map_update_elem(&net_targets, &ctgid, &v, BPF_NOEXIST)) {
		count(NET_CNT_FORKS_FULL);
		return;
	}
	net_target_bytes[ctgid & (NET_TARGET_BYTES - 1)] = 1;   /* after the entry: see net_target_bytes */
	count(NET_CNT_FORKS);
	proc_event(NET_OP_FORK, ctgid, v.root, v.root);
}

/* A followed child's last thread: its entry goes (a process a task named stays the collector's). */
static __always_inline void on_exit(__u32 tgid, bool leader_gone)
{
	struct net_target *t;

	if (!leader_gone)
		return;
	t = target_of(tgid);
	if (!t || !t->root)
		return;
	proc_event(NET_OP_EXIT, tgid, t->root, t->root);
	bpf_map_delete_elem(&net_targets, &tgid);
	__sync_fetch_and_add(&targets_gen, 1);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(net_fork_btf, struct task_struct *parent, struct task_struct *child)
{
	on_fork(parent->tgid, child->tgid);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(net_fork_raw, struct task_struct *parent, struct task_struct *child)
{
	on_fork(BPF_CORE_READ(parent, tgid), BPF_CORE_READ(child, tgid));
	return 0;
}

/* sched_process_exit runs for every thread; the process is gone with its last one. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(net_pexit_btf, struct task_struct *p)
{
	on_exit(p->tgid, p->signal->live.counter == 0);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(net_pexit_raw, struct task_struct *p)
{
	on_exit(BPF_CORE_READ(p, tgid), BPF_CORE_READ(p, signal, live.counter) == 0);
	return 0;
}

/* A target exec'ed: its new image may be a TLS library itself (Go, Node); the analyzer looks now. */
static __always_inline void on_exec(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct net_target *t = target_of(tgid);

	if (t)
		proc_event(NET_OP_MMAP_EXEC, tgid, 0, t->root);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(net_exec_btf, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	on_exec();
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(net_exec_raw, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	on_exec();
	return 0;
}
