/*
 * Part of net.bpf.c: the socket calls of target processes, from the syscall
 * layer (tp_btf or raw_tp sys_enter / sys_exit: no kprobes on this kernel).
 *
 * sys_enter keeps a call's arguments by thread, for the calls that can touch
 * a socket, and only for target processes: every other call on the host
 * costs one switch on the syscall number, and a socket-like call of another
 * process one hash lookup more.  sys_exit finds the fd's socket through the
 * task's fd table (no other hook is needed to tell a socket from a file),
 * and writes one event with a bounded prefix of the data the call moved.
 * An mmap of an executable file becomes a process event (net_proc.bpf.h).
 */

#if defined(__TARGET_ARCH_x86)
#define NR_read 0
#define NR_write 1
#define NR_close 3
#define NR_mmap 9
#define NR_readv 19
#define NR_writev 20
#define NR_sendfile 40
#define NR_connect 42
#define NR_shutdown 48
#define NR_accept 43
#define NR_sendto 44
#define NR_recvfrom 45
#define NR_sendmsg 46
#define NR_recvmsg 47
#define NR_recvmmsg 299
#define NR_accept4 288
#define NR_sendmmsg 307
#elif defined(__TARGET_ARCH_arm64)
#define NR_read 63
#define NR_write 64
#define NR_close 57
#define NR_mmap 222
#define NR_readv 65
#define NR_writev 66
#define NR_sendfile 71
#define NR_connect 203
#define NR_shutdown 210
#define NR_accept 202
#define NR_sendto 206
#define NR_recvfrom 207
#define NR_sendmsg 211
#define NR_recvmsg 212
#define NR_recvmmsg 243
#define NR_accept4 242
#define NR_sendmmsg 269
#else
#error "syscall numbers for this architecture"
#endif

#define PROT_EXEC 4
#define MSG_PEEK 2
#define MAP_ANONYMOUS 0x20

/* A call between its entry and its exit. */
struct call {
	__u64 ts;
	__u64 buf;      /* data buffer, iovec array, msghdr or mmsghdr array */
	__u64 len;      /* count, iovcnt or vlen */
	__u64 addr;     /* sockaddr argument (connect, sendto, recvfrom), 0 if none */
	__s32 fd;
	__u16 nr;
	__u16 op;
	__u32 cap;      /* bytes of data to copy: NET_MAX_PAYLOAD, or NET_PREFIX_PAYLOAD (net_target) */
	__u32 root;     /* net_target.root of the calling process */
	/* Packets under the call (net_l2_*, while attached): the socket of the first, the last seen. */
	__u64 l2_sk;
	__u64 l2_skb;
	__u32 l2_pkts;
	__u32 l2_bytes;
	__u32 l2_ifindex;
	__u32 l2_pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);                 /* pid_tgid */
	__type(value, struct call);
	__uint(max_entries, 16384);
} inflight SEC(".maps");

/*
 * The same, in the thread's own storage (tp_btf variant): an exit of a thread
 * that never made a target call finds no storage without hashing anything,
 * and a finished call is marked, not deleted.  The raw_tp variant, for
 * kernels without BTF trampolines, keeps the hash (the collector does not
 * create this map for it).
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct call);
} inflight_ts SEC(".maps");

/* Keeps the call of the current thread until its exit; 0, or -1 if there is no room. */
static __always_inline int call_keep(__u64 id, const struct call *c, const bool btf)
{
	struct call *cp;

	if (!btf)
		return bpf_map_update_elem(&inflight, &id, c, BPF_ANY) ? -1 : 0;
	cp = bpf_task_storage_get(&inflight_ts, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!cp)
		return -1;
	*cp = *c;
	return 0;
}

/* Takes the current thread's call kept at entry into *c; -1 if there is none. */
static __always_inline int call_take(__u64 id, struct call *c, const bool btf)
{
	struct call *cp;

	if (!btf) {
		cp = bpf_map_lookup_elem(&inflight, &id);
		if (!cp)
			return -1;
		*c = *cp;
		bpf_map_delete_elem(&inflight, &id);
		return 0;
	}
	cp = bpf_task_storage_get(&inflight_ts, bpf_get_current_task_btf(), 0, 0);
	if (!cp || !cp->op)
		return -1;
	*c = *cp;
	cp->op = 0;
	return 0;
}

/* Closes between entry and exit: the socket is resolved at entry (at exit the fd is gone). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64);                 /* pid_tgid */
	__type(value, struct net_event);
	__uint(max_entries, 4096);
} closing SEC(".maps");

/* The op a syscall is, for a socket; 0 for the calls not traced. */
static __always_inline __u16 op_of(long nr)
{
	switch (nr) {
	case NR_connect: return NET_OP_CONNECT;
	case NR_accept:
	case NR_accept4: return NET_OP_ACCEPT;
	case NR_write:
	case NR_writev:
	case NR_sendto:
	case NR_sendmsg:
	case NR_sendmmsg:
	case NR_sendfile: return NET_OP_WRITE;
	case NR_read:
	case NR_readv:
	case NR_recvfrom:
	case NR_recvmsg:
	case NR_recvmmsg: return NET_OP_READ;
	case NR_close: return NET_OP_CLOSE;
	case NR_mmap: return NET_OP_MMAP_EXEC;
	default: return 0;
	}
}

/* Syscall argument n (1..5) from the registers at entry. */
static __always_inline __u64 sys_arg(struct pt_regs *regs, const int n, const bool btf)
{
#if defined(__TARGET_ARCH_x86)
	if (btf)
		return n == 1 ? regs->di : n == 2 ? regs->si : n == 3 ? regs->dx : n == 4 ? regs->r10 : regs->r8;
#endif
	switch (n) {
	case 1: return PT_REGS_PARM1_CORE_SYSCALL(regs);
	case 2: return PT_REGS_PARM2_CORE_SYSCALL(regs);
	case 3: return PT_REGS_PARM3_CORE_SYSCALL(regs);
	case 4: return PT_REGS_PARM4_CORE_SYSCALL(regs);
	default: return PT_REGS_PARM5_CORE_SYSCALL(regs);
	}
}

static __always_inline int enter(struct pt_regs *regs, long nr, const bool btf)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	__u16 op = op_of(nr);
	struct net_target *t;
	struct call c = {};

	if (!op || !(t = target_of(tgid)))
		return 0;
	c.ts = bpf_ktime_get_ns();
	c.cap = t->tasks > t->prefix_tasks ? NET_MAX_PAYLOAD : NET_PREFIX_PAYLOAD;
	c.root = t->root;
	c.nr = (__u16)nr;
	c.op = op;
	c.fd = (__s32)sys_arg(regs, 1, btf);
	c.buf = sys_arg(regs, 2, btf);
	c.len = sys_arg(regs, 3, btf);
	if (nr == NR_mmap) {
		/* Only executable file mappings: a library the analyzer may want to probe. */
		if (!(c.len & PROT_EXEC) || (sys_arg(regs, 4, btf) & MAP_ANONYMOUS))
			return 0;
		c.fd = (__s32)sys_arg(regs, 5, btf);
		c.buf = 0;
	} else if (nr == NR_sendfile) {
		c.buf = 0;      /* fd is out_fd */
	} else if (nr == NR_sendto || nr == NR_recvfrom) {
		c.addr = sys_arg(regs, 5, btf);
	}
	/*
	 * A peek leaves its bytes in the socket for the next read, which is
	 * traced: taken as a read, they would be counted twice and move the
	 * stream (nginx peeks 1 byte of every TLS connection before its handshake).
	 */
	if (c.op == NET_OP_READ && (nr == NR_recvfrom || nr == NR_recvmsg || nr == NR_recvmmsg) &&
	    (sys_arg(regs, nr == NR_recvmsg ? 3 : 4, btf) & MSG_PEEK)) {
		count(NET_CNT_PEEKS);
		return 0;
	}
	if (nr == NR_connect) {
		c.addr = c.buf;
		c.buf = 0;
	}
	if (call_keep(id, &c, btf))
		count(NET_CNT_INFLIGHT_FULL);
	return 0;
}

/* The event's fixed part for the call c of the current thread on socket sk. */
static __always_inline int begin(struct scratch *s, const struct call *c, struct sock *sk, __u64 ino, int fd,
				 long ret, __u64 now, const bool btf)
{
	__u64 id = bpf_get_current_pid_tgid();

	__builtin_memset(&s->e, 0, sizeof(s->e));
	if (fill_sock(&s->e, sk, btf))
		return -1;
	s->e.ts_ns = c->ts;
	s->e.dur_ns = now - c->ts;
	s->e.tgid = id >> 32;
	s->e.tid = (__u32)id;
	s->e.fd = fd;
	s->e.op = c->op;
	s->e.syscall = c->nr;
	s->e.ret = ret;
	s->e.ino = ino;
	s->e.root = c->root;
	if (c->l2_pkts && c->l2_sk == (__u64)sk) {
		s->e.l2_pkts = c->l2_pkts;
		s->e.l2_bytes = c->l2_bytes;
		s->e.l2_ifindex = c->l2_ifindex;
	}
	comm_into(s->e.comm, btf);
	return 0;
}

/*
 * The socket's turn for a data call of this direction: the same as its last
 * call's, or the next.  Two threads moving data on one socket at once may
 * race here (one turn counted for two); request/response peers do not.
 */
static __always_inline __u32 turn_of(struct sock_owner *o, bool write)
{
	__u32 dir = write ? NET_TURN_WRITE : 0;

	if (!(o->turn & NET_TURN_MASK) || (o->turn & NET_TURN_WRITE) != dir)
		o->turn = (((o->turn & NET_TURN_MASK) + 1) & NET_TURN_MASK) | dir;
	return o->turn;
}

/*
 * Message i of a sendmmsg / recvmmsg array into the event (its peer when
 * `peer`: a read's address is filled only when its syscall returns); len:
 * the bytes it moved.  Returns the bytes copied.
 */
static __always_inline __u32 mmsg_one(struct scratch *s, const struct call *c, __u32 i, __u64 len, const bool peer)
{
	struct mmsghdr m;
	struct iovec v;

	if (bpf_probe_read_user(&m, sizeof(m), (void *)(c->buf + (__u64)i * sizeof(m))))
		return 0;
	if (peer && m.msg_hdr.msg_name)
		peer_from_arg(&s->e, (__u64)m.msg_hdr.msg_name);
	if (!m.msg_hdr.msg_iovlen || bpf_probe_read_user(&v, sizeof(v), m.msg_hdr.msg_iov))
		return 0;
	return copy_in(s, 0, (__u64)v.iov_base, v.iov_len < len ? v.iov_len : len, c->cap);
}

/* sendmmsg / recvmmsg at their exit: one event per message moved (the first iovec of each). */
static __always_inline void mmsg(struct scratch *s, const struct call *c, long n)
{
	for (int i = 0; i < NET_MAX_MMSG; i++) {
		struct mmsghdr m;
		__u32 got;

		if (i >= n || bpf_probe_read_user(&m, sizeof(m), (void *)(c->buf + i * sizeof(m))))
			break;
		s->e.ret = m.msg_len;
		s->e.flags &= ~(NET_F_TRUNCATED | NET_F_PEER_ARG);
		got = mmsg_one(s, c, i, m.msg_len, true);
		emit(s, got);
	}
}

/*
 * The data a read or write call moved (ret bytes) into the event, by the
 * syscall that moved it: not sendmmsg / recvmmsg (mmsg_one).  The peer from
 * its address argument when `peer` (a read's is filled only at its exit).
 */
static __always_inline __u32 call_data(struct scratch *s, const struct call *c, long ret, const bool peer)
{
	switch (c->nr) {
	case NR_readv:
	case NR_writev:
		return copy_iov(s, c->buf, c->len, (__u64)ret, c->cap);
	case NR_sendmsg:
	case NR_recvmsg: {
		struct user_msghdr m;

		if (bpf_probe_read_user(&m, sizeof(m), (void *)c->buf))
			return 0;
		if (peer && m.msg_name)
			peer_from_arg(&s->e, (__u64)m.msg_name);
		return copy_iov(s, (__u64)m.msg_iov, m.msg_iovlen, (__u64)ret, c->cap);
	}
	case NR_sendfile:
		return 0;   /* the data comes from a file: sizes only */
	default:
		if (peer && c->addr)
			peer_from_arg(&s->e, c->addr);
		return copy_in(s, 0, c->buf, (__u64)ret, c->cap);
	}
}

/* A close is resolved at entry (at exit the fd is gone) and sent at exit, timed. */
static __always_inline int enter_close(struct pt_regs *regs, const bool btf)
{
	__u64 id = bpf_get_current_pid_tgid(), ino = 0, key;
	__u32 tgid = id >> 32, zero = 0;
	struct net_target *t;
	struct sock_owner *o;
	struct call c = {};
	struct scratch *s;
	struct sock *sk;
	int fd;

	if (!(t = target_of(tgid)))
		return 0;
	c.root = t->root;
	fd = (int)sys_arg(regs, 1, btf);
	sk = sock_of_fd(fd, &ino, btf);
	/* its own zero key, as leave()'s: percpu_scratch() here costs an instruction more */
	s = bpf_map_lookup_elem(&net_scratch, &zero);
	if (!sk || !s)
		return 0;
	c.ts = bpf_ktime_get_ns();
	c.op = NET_OP_CLOSE;
	c.nr = NR_close;
	c.fd = fd;
	if (begin(s, &c, sk, ino, fd, 0, c.ts, btf))
		return 0;
	key = (__u64)sk;
	if ((o = bpf_map_lookup_elem(&socks, &key)) != NULL)
		s->e.turn = o->turn;
	bpf_map_delete_elem(&socks, &key);
	if (bpf_map_update_elem(&closing, &id, &s->e, BPF_ANY) || call_keep(id, &c, btf)) {
		count(NET_CNT_INFLIGHT_FULL);
		bpf_map_delete_elem(&closing, &id);
		count(NET_CNT_CALLS);
		emit(s, 0);  /* untimed rather than lost */
	}
	return 0;
}

static __always_inline int leave_close(__u64 id, long ret, __u64 now)
{
	struct net_event *e = bpf_map_lookup_elem(&closing, &id);
	struct scratch *s;

	s = percpu_scratch(&net_scratch);
	if (!e || !s)
		return 0;
	s->e = *e;
	bpf_map_delete_elem(&closing, &id);
	s->e.dur_ns = now - s->e.ts_ns;
	s->e.ret = ret;
	count(NET_CNT_CALLS);
	emit(s, 0);
	return 0;
}

/* The syscall a sys_exit belongs to: the register the kernel keeps it in. */
static __always_inline long exit_nr(struct pt_regs *regs, const bool btf)
{
#if defined(__TARGET_ARCH_x86)
	if (btf)
		return regs->orig_ax;
	return BPF_CORE_READ(regs, orig_ax);
#else
	return BPF_CORE_READ(regs, syscallno);
#endif
}

static __always_inline int leave(struct pt_regs *regs, long ret, const bool btf)
{
	__u64 id, now, ino = 0, skey;
	struct sock_owner *o;
	struct call c;
	struct scratch *s;
	struct sock *sk;
	__u32 zero = 0, got = 0;
	bool wire;
	int fd;

	/* Every syscall of the host exits through here: the ones that cannot be
	 * socket calls leave after a switch, before any map is touched. */
	if (!op_of(exit_nr(regs, btf)))
		return 0;
	id = bpf_get_current_pid_tgid();
	if (call_take(id, &c, btf))
		return 0;
	now = bpf_ktime_get_ns();
	if (c.op == NET_OP_CLOSE)
		return leave_close(id, ret, now);
	if (c.op == NET_OP_MMAP_EXEC) {
		if (ret >= 0 || ret < -4095)
			proc_event(NET_OP_MMAP_EXEC, id >> 32, ret, c.root);
		return 0;
	}
	if (c.op == NET_OP_ACCEPT && ret < 0)
		return 0;
	fd = c.op == NET_OP_ACCEPT ? (int)ret : c.fd;
	sk = sock_of_fd(fd, &ino, btf);
	if (!sk) {
		count(NET_CNT_NOT_SOCKET);
		return 0;
	}
	/* Before the event is built: a Go write's plaintext goes out first, through the same scratch. */
	wire = tls_may_wrap(id >> 32) && (c.op == NET_OP_READ || c.op == NET_OP_WRITE) &&
	       tls_wire(regs, fd, ino, sk, btf);
	/* its own zero key: percpu_scratch() here makes the program 10 instructions longer, 4 % more to verify */
	s = bpf_map_lookup_elem(&net_scratch, &zero);
	if (!s || begin(s, &c, sk, ino, fd, ret, now, btf))
		return 0;
	count(NET_CNT_CALLS);
	/* Sockets opened before the task are learnt at their first call. */
	skey = (__u64)sk;
	o = c.op == NET_OP_CONNECT || c.op == NET_OP_ACCEPT ? NULL : bpf_map_lookup_elem(&socks, &skey);
	if (!o) {
		remember_sock(sk, fd, ino, c.root);
		o = bpf_map_lookup_elem(&socks, &skey);
	}
	if (o && ret > 0 && (c.op == NET_OP_READ || c.op == NET_OP_WRITE))
		s->e.turn = turn_of(o, c.op == NET_OP_WRITE);
	if (c.op == NET_OP_CONNECT)
		peer_from_arg(&s->e, c.addr);
	if (c.op == NET_OP_WRITE && s->e.type == 1 /* SOCK_STREAM */)
		s->e.srtt_us = BPF_CORE_READ((struct tcp_sock *)sk, srtt_us) >> 3;
	if (wire) {
		/* Ciphertext: its size and timing count, its bytes mean nothing to a parser. */
		s->e.flags |= NET_F_TLS_WIRE;
		emit(s, 0);
		return 0;
	}
	if ((c.op == NET_OP_READ || c.op == NET_OP_WRITE) && ret > 0) {
		c.cap = conn_cap(s, o, ino, c.op == NET_OP_WRITE, (__u64)ret, c.cap);
		if (c.nr == NR_sendmmsg || c.nr == NR_recvmmsg) {
			mmsg(s, &c, ret);
			return 0;
		}
		got = call_data(s, &c, ret, true);
	}
	emit(s, got);
	return 0;
}

static __always_inline int on_enter(struct pt_regs *regs, long nr, const bool btf)
{
	if (nr == NR_close)
		return enter_close(regs, btf);
	return enter(regs, nr, btf);
}

SEC("tp_btf/sys_enter")
int BPF_PROG(net_enter_btf, struct pt_regs *regs, long id)
{
	return on_enter(regs, id, true);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(net_exit_btf, struct pt_regs *regs, long ret)
{
	return leave(regs, ret, true);
}

SEC("raw_tp/sys_enter")
int BPF_PROG(net_enter_raw, struct pt_regs *regs, long id)
{
	return on_enter(regs, id, false);
}

SEC("raw_tp/sys_exit")
int BPF_PROG(net_exit_raw, struct pt_regs *regs, long ret)
{
	return leave(regs, ret, false);
}
