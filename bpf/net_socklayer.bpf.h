/*
 * Part of net.bpf.c: the socket calls of target processes from the socket
 * layer, with no syscall tracepoint attached (the syscall layer,
 * net_syscalls.bpf.h, is the fallback where these do not load).
 *
 * sock_send_length and sock_recv_length (tp_btf, 6.3+) fire in
 * sock_sendmsg / sock_recvmsg once the protocol has returned, in the
 * caller's context, with the socket: no fd table walk, and nothing runs for
 * a syscall that does not reach a socket.  The fd, the syscall and the user
 * buffers come from the registers the task saved when it entered the kernel
 * (bpf_task_pt_regs).  What this layer does not see, and what replaces it:
 *
 * - a call's start: events carry their end (ts_ns, dur_ns 0, NET_F_UNTIMED);
 *   a connect's time is its handshake's (SYN sent to established);
 * - accept: a passively opened connection (SYN_RECV -> ESTABLISHED, in
 *   softirq) is remembered by socket and becomes an accept event before its
 *   first data call (a connection closed before any is not seen);
 * - connect and close come from inet_sock_set_state and tcp_destroy_sock
 *   (TCP only: a UDP socket's connect and close are not seen; its flows end
 *   by idle time);
 * - a datagram's source (recvfrom's and recvmsg's address is written to the
 *   caller only after the protocol returns): the cgroup recvmsg hooks, which
 *   the kernel runs in udp_recvmsg once it knows the source, keep it for the
 *   thread's read event (attached to the cgroup v2 root: every process);
 * - sendmmsg / recvmmsg: one event per message as the kernel moves it; the
 *   thread's cursor into the array says which (a call ends at its array's
 *   end or at its first failure, which both reset it);
 * - calls the registers do not name (io_uring, splice): sizes only, counted
 *   (NET_CNT_SL_NO_SYSCALL);
 * - calls failing before the socket layer (a bad fd or address): not seen;
 * - an executable mapping: vm_unmapped_area of a target (an mmap choosing
 *   its address, as the dynamic loader's first mapping of each library
 *   does), at most one a millisecond per process.
 */

#define SL_IPPROTO_TCP 6
#define SL_IPPROTO_UDP 17
#define SL_ETH_P_IP 0x0800
#define SL_ETH_P_IPV6 0x86DD

/* Packets of one socket counted for a thread. */
struct sl_l2 {
	__u64 sk;
	__u64 skb;          /* the last one (a read copies one packet in parts: it is one packet) */
	__u32 pkts;
	__u32 bytes;
	__u32 ifindex;
	__u32 gen;          /* l2_on when they were counted: packets of an earlier time the packets were asked for are stale */
};

/* A thread's socket-layer state (its own storage): only target threads have one. */
struct sl_thread {
	__u64 mm_buf;       /* the sendmmsg / recvmmsg array whose messages the thread is moving */
	__u32 mm_next;      /* the index of its next message */
	__u32 mm_nr;
	/*
	 * The packets since the thread's last socket event (net_sl_l2_xmit,
	 * net_sl_copy), for two sockets: between two calls a thread also queues
	 * packets of other sockets (a FIN of the socket it closed, on loopback
	 * the ACK of the socket it writes to), and the next call takes its own.
	 */
	struct sl_l2 l2[2];
};
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sl_thread);
} sl_threads SEC(".maps");

/*
 * A followed socket's entry on the socket itself: what its data calls read
 * and write each time (the turn, the cap), found from the socket in a few
 * loads where socks' hash lookup was (about 30 ns of a call's 700).  socks
 * keeps the same entry for the L4 programs (retransmits, drops) and the
 * connect's end, which read its owner only; this copy's turn and cap are
 * the ones that move.  Made with the socks entry (sl_remember), gone with
 * the socket's close event or the socket.
 */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sock_owner);
} sl_socks SEC(".maps");

/* Connections opened passively (any process's: the owner is known at its first call), by socket. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, __u64);               /* established, ns */
	__uint(max_entries, 16384);
} sl_passive SEC(".maps");

/* Connects of targets between their SYN and the handshake's end, by socket. */
struct sl_connect {
	__u64 ts;
	__u32 tid;
	__s32 fd;
	char comm[16];
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, struct sl_connect);
	__uint(max_entries, 4096);
} sl_connects SEC(".maps");

/* The source of the datagram a target thread is receiving, from the recvmsg hooks to its read event. */
struct sl_peer {
	__u16 family;
	__u16 port;         /* host order */
	__u32 pad;
	__u8 addr[16];
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);                 /* pid_tgid */
	__type(value, struct sl_peer);
	__uint(max_entries, 4096);
} sl_peers SEC(".maps");

static __always_inline long sl_nr(struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_x86)
	return regs->orig_ax;
#else
	return BPF_CORE_READ(regs, syscallno);
#endif
}

static __always_inline struct pt_regs *sl_regs(void)
{
	return (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
}

/* The inode of a socket's file: 0 for a socket no file holds (the kernel's own). */
static __always_inline __u64 sl_ino(const struct sock *sk)
{
	struct socket *so = sk->sk_socket;

	if (!so || !so->file)
		return 0;
	return so->file->f_inode->i_ino;
}

/* A target's socket, first seen: its entry in socks and on the socket; the latter is returned. */
static __always_inline struct sock_owner *sl_remember(struct sock *sk, int fd, __u64 ino, __u32 root)
{
	struct sock_owner o = { .tgid = bpf_get_current_pid_tgid() >> 32, .fd = fd, .ino = ino, .root = root,
				.cap_read = CAP_DEFAULT, .cap_write = CAP_DEFAULT };

	remember_sock(sk, fd, ino, root);
	return bpf_sk_storage_get(&sl_socks, sk, &o, BPF_SK_STORAGE_GET_F_CREATE);
}

static __always_inline struct sl_thread *sl_thread_of(bool create)
{
	return bpf_task_storage_get(&sl_threads, bpf_get_current_task_btf(), 0,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

/* The event of a socket-layer call without data: accept, connect, close. */
static __always_inline struct scratch *sl_begin(const struct sock *sk, __u16 op, __u64 ts, __u64 now)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&net_scratch, &zero);

	if (!s)
		return NULL;
	__builtin_memset(&s->e, 0, sizeof(s->e));
	if (fill_sock(&s->e, (struct sock *)sk, true))
		return NULL;
	s->e.ts_ns = ts;
	s->e.dur_ns = now - ts;
	s->e.op = op;
	return s;
}

/*
 * A socket's first event from a target: a passively opened one is accepted
 * now (its accept event goes first), any other was opened before the task
 * or by a call not seen.  The socket is remembered either way.
 */
static __always_inline struct sock_owner *sl_first(struct sock *sk, __u64 ino, int fd, const struct call *c,
						  __u64 now)
{
	__u64 key = (__u64)sk, *est = bpf_map_lookup_elem(&sl_passive, &key);
	__u64 id = bpf_get_current_pid_tgid();
	struct scratch *s;

	if (est && (s = sl_begin(sk, NET_OP_ACCEPT, *est, now)) != NULL) {
		s->e.dur_ns = 0;
		s->e.flags |= NET_F_UNTIMED;
		s->e.tgid = id >> 32;
		s->e.tid = (__u32)id;
		s->e.fd = fd;
		s->e.ret = fd;
		s->e.ino = ino;
		s->e.root = c->root;
		comm_into(s->e.comm, true);
		bpf_map_delete_elem(&sl_passive, &key);
		count(NET_CNT_CALLS);
		emit(s, 0);
	}
	return sl_remember(sk, fd, ino, c->root);
}

/* A target thread receiving a datagram with its address: the source, as the kernel returns it. */
static __always_inline int sl_recv_source(struct bpf_sock_addr *ctx, bool v6)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct sl_peer p = {};

	if (!target_of(tgid))
		return 1;
	p.port = __builtin_bswap16((__u16)ctx->user_port);
	if (v6) {
		/* one load per word at a constant offset: the verifier refuses a moved context pointer */
		__u32 w[4] = { ctx->user_ip6[0], ctx->user_ip6[1], ctx->user_ip6[2], ctx->user_ip6[3] };

		p.family = AF_INET6;
		__builtin_memcpy(p.addr, w, 16);
	} else {
		__u32 w = ctx->user_ip4;

		p.family = AF_INET;
		__builtin_memcpy(p.addr, &w, 4);
	}
	if (bpf_map_update_elem(&sl_peers, &id, &p, BPF_ANY))
		count(NET_CNT_INFLIGHT_FULL);
	return 1;   /* a recvmsg hook cannot refuse: 1 is the only answer */
}

SEC("cgroup/recvmsg4")
int net_sl_recvmsg4(struct bpf_sock_addr *ctx)
{
	return sl_recv_source(ctx, false);
}

SEC("cgroup/recvmsg6")
int net_sl_recvmsg6(struct bpf_sock_addr *ctx)
{
	return sl_recv_source(ctx, true);
}

/*
 * Non-zero while the packet programs are attached, a new number each time
 * (the collector's): the data programs then look at the thread's packets.
 * Without it they leave the thread's storage alone (a lookup per call).
 */
__u32 l2_on = 0;

/* The thread's storage, for a target's packets: made here, as its call's event comes after them. */
static __always_inline struct sl_thread *sl_l2_thread(void)
{
	struct sl_thread *th = sl_thread_of(false);

	if (th || !target_of(bpf_get_current_pid_tgid() >> 32))
		return th;
	return sl_thread_of(true);
}

/* One packet of socket sk for the thread: in its socket's slot, else a free one, else the second's. */
static __always_inline void sl_l2_add(struct sl_thread *th, const struct sock *sk, const struct sk_buff *skb,
				      __u32 bytes, __u32 ifindex)
{
	struct sl_l2 *l = &th->l2[0];
	__u32 gen = l2_on;

	if (l->gen != gen)
		__builtin_memset(th->l2, 0, sizeof(th->l2));
	if (l->sk && l->sk != (__u64)sk) {
		l = &th->l2[1];
		if (l->sk != (__u64)sk)
			__builtin_memset(l, 0, sizeof(*l));
	}
	l->sk = (__u64)sk;
	th->l2[0].gen = th->l2[1].gen = gen;
	if (l->skb != (__u64)skb) {
		l->pkts++;
		l->skb = (__u64)skb;
		count(NET_CNT_L2_PKTS);
	}
	l->bytes += bytes;
	l->ifindex = ifindex;
}

/* The packets under a read as its thread copies them out (attached while a task asks). */
SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(net_sl_copy, const struct sk_buff *skb, int len)
{
	struct sl_thread *th = sl_l2_thread();
	struct sock *sk = skb->sk;

	if (th && sk && len > 0)
		sl_l2_add(th, sk, skb, (__u32)len, (__u32)skb->skb_iif);
	return 0;
}

/* A write's packets as its thread queues them to a device (attached while a task asks). */
SEC("tp_btf/net_dev_queue")
int BPF_PROG(net_sl_l2_xmit, struct sk_buff *skb)
{
	struct sl_thread *th = sl_l2_thread();
	struct net_device *dev = skb->dev;
	struct sock *sk = skb->sk;

	if (th && sk)
		sl_l2_add(th, sk, skb, skb->len, dev ? (__u32)dev->ifindex : 0);
	return 0;
}

/* The message of a sendmmsg / recvmmsg array this event is: the thread's cursor, reset at the end. */
static __always_inline __u32 sl_mmsg_index(struct sl_thread *th, const struct call *c, int ret)
{
	__u32 i;

	if (th->mm_buf != c->buf || th->mm_nr != c->nr || th->mm_next >= c->len) {
		th->mm_buf = c->buf;
		th->mm_nr = c->nr;
		th->mm_next = 0;
	}
	i = th->mm_next++;
	if (ret < 0 || th->mm_next >= c->len)
		th->mm_buf = 0;     /* the call ends here */
	return i;
}

static __always_inline int sl_data(struct sock *sk, int ret, int flags, const bool write)
{
	__u64 id = bpf_get_current_pid_tgid(), now, ino;
	__u32 tgid = id >> 32, zero = 0, got = 0, gen;
	struct sl_thread *th = NULL;
	struct net_target *t;
	struct sock_owner *o;
	struct pt_regs *regs;
	struct scratch *s;
	struct call c = {};
	bool known, wire;
	long nr;

	if (!net_target_bytes[tgid & (NET_TARGET_BYTES - 1)])
		return 0;
	/*
	 * A socket seen before keeps its inode in its storage (a socket's file
	 * is its own for life), and its process's target entry while the table
	 * does not change: the chain from the socket to its inode and the
	 * table's lines, which the call itself does not touch, are read once.
	 */
	o = bpf_sk_storage_get(&sl_socks, sk, 0, 0);
	gen = targets_gen;
	if (o && o->tgid == tgid && o->tgt_gen == gen && gen) {
		c.cap = o->tgt_cap;
		c.root = o->tgt_root;
	} else {
		if (!(t = bpf_map_lookup_elem(&net_targets, &tgid)))
			return 0;
		c.cap = t->tasks > t->prefix_tasks ? NET_MAX_PAYLOAD : NET_PREFIX_PAYLOAD;
		c.root = t->root;
		if (o && o->tgid == tgid) {
			o->tgt_cap = c.cap;
			o->tgt_root = c.root;
			o->tgt_gen = gen;
		}
	}
	if (!write && (flags & MSG_PEEK)) {
		count(NET_CNT_PEEKS);
		return 0;
	}
	if (o) {
		ino = o->ino;
		barrier_var(ino);   /* one load per pointer kind: the verifier refuses a shared one */
	} else {
		ino = sl_ino(sk);
	}
	if (!ino) {
		count(NET_CNT_NOT_SOCKET);
		return 0;
	}
	regs = sl_regs();
	nr = sl_nr(regs);
	/* The thread's storage holds packets (while a task asks for them) and an mmsg call's cursor only. */
	if (l2_on || nr == NR_sendmmsg || nr == NR_recvmmsg) {
		th = sl_thread_of(true);
		if (!th) {
			count(NET_CNT_NOT_SOCKET);
			return 0;
		}
	}
	now = bpf_ktime_get_ns();
	c.ts = now;
	c.op = write ? NET_OP_WRITE : NET_OP_READ;
	c.fd = -1;
	/* read is syscall 0 on x86: whether the registers name a socket call is `known`, not c.nr */
	known = op_of(nr) == c.op;
	if (known) {
		c.nr = (__u16)nr;
		c.fd = (__s32)sys_arg(regs, 1, true);
		c.buf = nr == NR_sendfile ? 0 : sys_arg(regs, 2, true);
		c.len = sys_arg(regs, 3, true);
		if (nr == NR_sendto)
			c.addr = sys_arg(regs, 5, true);
	} else {
		count(NET_CNT_SL_NO_SYSCALL);
	}
	for (int i = 0; th && i < 2; i++) {
		if (th->l2[i].pkts && th->l2[i].sk == (__u64)sk && th->l2[i].gen == l2_on) {
			c.l2_sk = th->l2[i].sk;
			c.l2_pkts = th->l2[i].pkts;
			c.l2_bytes = th->l2[i].bytes;
			c.l2_ifindex = th->l2[i].ifindex;
		}
	}
	if (th && (th->l2[0].pkts | th->l2[1].pkts))
		__builtin_memset(th->l2, 0, sizeof(th->l2));
	if (!o)
		o = sl_first(sk, ino, c.fd, &c, now);
	/* Before the event is built: a Go write's plaintext goes out first, through the same scratch. */
	wire = known && tls_may_wrap(tgid) && tls_wire(regs, c.fd, ino, sk, true);
	s = bpf_map_lookup_elem(&net_scratch, &zero);
	if (!s || begin(s, &c, sk, ino, c.fd, ret, now, true))
		return 0;
	s->e.flags |= NET_F_UNTIMED;
	s->e.syscall = (__u16)nr;
	count(NET_CNT_CALLS);
	if (o && ret > 0)
		s->e.turn = turn_of(o, write);
	if (write && s->e.type == 1 /* SOCK_STREAM */) {
		/* a plain load (6.2+, as this layer's tracepoints): the helper read costs a call per write */
		struct tcp_sock *tp = bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct tcp_sock));

		s->e.srtt_us = tp->srtt_us >> 3;
	}
	if (!write && s->e.type == 2 /* SOCK_DGRAM */) {
		struct sl_peer *p = bpf_map_lookup_elem(&sl_peers, &id);

		/* the datagram's source: written to the caller's address only after this */
		if (p) {
			if (ret >= 0) {
				__builtin_memcpy(s->e.raddr, p->addr, 16);
				s->e.rport = p->port;
				s->e.flags |= NET_F_PEER_ARG;
			}
			bpf_map_delete_elem(&sl_peers, &id);
		}
	}
	if (wire) {
		/* Ciphertext: its size and timing count, its bytes mean nothing to a parser. */
		s->e.flags |= NET_F_TLS_WIRE;
		emit(s, 0);
		return 0;
	}
	if (ret > 0 && known)
		c.cap = conn_cap(s, o, ino, write, (__u64)ret, c.cap);
	if (known && th && (c.nr == NR_sendmmsg || c.nr == NR_recvmmsg)) {
		__u32 i = sl_mmsg_index(th, &c, ret);

		if (ret > 0)
			got = mmsg_one(s, &c, i, (__u64)ret, write);
	} else if (ret > 0 && known) {
		got = call_data(s, &c, ret, write);
	}
	emit(s, got);
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(net_sl_send, struct sock *sk, int ret, int flags)
{
	return sl_data(sk, ret, flags, true);
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(net_sl_recv, struct sock *sk, int ret, int flags)
{
	return sl_data(sk, ret, flags, false);
}

/*
 * A target's connect sent its SYN (in its context): kept until the handshake
 * ends.  A process's first connect also asks the analyzer to look at its
 * mappings now: its libraries are loaded, its TLS handshake (if any) not yet
 * done, and on this layer no mmap of their code was seen.
 */
static __always_inline void sl_connecting(const struct sock *sk)
{
	__u64 id = bpf_get_current_pid_tgid(), key = (__u64)sk, ino;
	__u32 tgid = id >> 32;
	struct sl_connect cn = {};
	struct net_target *t;
	struct pt_regs *regs;

	if (!(t = target_of(tgid)) || !(ino = sl_ino(sk)))
		return;
	regs = sl_regs();
	cn.ts = bpf_ktime_get_ns();
	cn.tid = (__u32)id;
	cn.fd = sl_nr(regs) == NR_connect ? (__s32)sys_arg(regs, 1, true) : -1;
	comm_into(cn.comm, true);
	sl_remember((struct sock *)sk, cn.fd, ino, t->root);
	if (bpf_map_update_elem(&sl_connects, &key, &cn, BPF_ANY))
		count(NET_CNT_INFLIGHT_FULL);
	if (!(t->map_ms & NET_MAP_CONNECTED)) {
		t->map_ms |= NET_MAP_CONNECTED;
		proc_event(NET_OP_MMAP_EXEC, tgid, 0, t->root);
	}
}

/* The handshake of a target's connect ended (any context): its connect event, timed by it. */
static __always_inline void sl_connected(const struct sock *sk, bool ok)
{
	__u64 key = (__u64)sk, now = bpf_ktime_get_ns();
	struct sl_connect *cn = bpf_map_lookup_elem(&sl_connects, &key);
	struct sock_owner *o = bpf_map_lookup_elem(&socks, &key);
	struct scratch *s;
	int err;

	if (!cn)
		return;
	if (o && (s = sl_begin(sk, NET_OP_CONNECT, cn->ts, now)) != NULL) {
		err = sk->sk_err;
		s->e.tgid = o->tgid;
		s->e.tid = cn->tid;
		s->e.fd = cn->fd;
		s->e.syscall = NR_connect;
		s->e.ret = ok ? 0 : -(err ? err : 111 /* ECONNREFUSED */);
		s->e.ino = o->ino;
		s->e.root = o->root;
		__builtin_memcpy(s->e.comm, cn->comm, sizeof(s->e.comm));
		count(NET_CNT_CALLS);
		emit(s, 0);
	}
	bpf_map_delete_elem(&sl_connects, &key);
}

/*
 * A followed socket closing: its owner's close (or exit) starts the
 * teardown in its context; else the socket's end (TCP_CLOSE: reset,
 * timeout, the end of a shutdown) closes it once no file holds it, or its
 * destruction (tcp_destroy_sock) does: a socket the process still holds
 * may still be read (nginx shuts down, then reads until the peer's
 * end).  newstate -1: destroyed.  One close event per socket.
 */
static __always_inline void sl_closing(const struct sock *sk, int newstate)
{
	__u64 id = bpf_get_current_pid_tgid(), key = (__u64)sk, now;
	/* the entry on the socket has its turn; socks' alone (no room for the other) has none */
	struct sock_owner *o = bpf_sk_storage_get(&sl_socks, (struct sock *)sk, 0, 0);
	struct pt_regs *regs;
	struct scratch *s;
	bool owner;
	long nr = -1;

	if (!o)
		o = bpf_map_lookup_elem(&socks, &key);
	if (!o)
		return;
	owner = o->tgid == (__u32)(id >> 32);
	if (owner) {
		regs = sl_regs();
		nr = sl_nr(regs);
	}
	/* a shutdown sends a FIN too, but the socket stays open */
	if (newstate != TCP_CLOSE && newstate != -1 && (!owner || nr == NR_shutdown))
		return;
	/* ended under a process that still holds it, and not by its close: it closes when destroyed */
	if (newstate == TCP_CLOSE && sk->sk_socket && !(owner && nr == NR_close))
		return;
	now = bpf_ktime_get_ns();
	s = sl_begin(sk, NET_OP_CLOSE, now, now);
	if (s) {
		s->e.flags |= NET_F_UNTIMED;
		s->e.tgid = o->tgid;
		s->e.fd = o->fd;
		s->e.ino = o->ino;
		s->e.root = o->root;
		s->e.turn = o->turn;
		if (owner) {
			s->e.tid = (__u32)id;
			s->e.syscall = (__u16)nr;
			comm_into(s->e.comm, true);
		}
		count(NET_CNT_CALLS);
		emit(s, 0);
	}
	bpf_sk_storage_delete(&sl_socks, (struct sock *)sk);
	bpf_map_delete_elem(&socks, &key);
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(net_sl_state, const struct sock *sk, const int oldstate, const int newstate)
{
	__u64 key, now;

	if (sk->sk_protocol != SL_IPPROTO_TCP)
		return 0;
	if (newstate == TCP_SYN_SENT) {
		sl_connecting(sk);
		return 0;
	}
	if (oldstate == TCP_SYN_SENT)
		sl_connected(sk, newstate == TCP_ESTABLISHED);
	if (oldstate == TCP_SYN_RECV && newstate == TCP_ESTABLISHED) {
		key = (__u64)sk;
		now = bpf_ktime_get_ns();
		bpf_map_update_elem(&sl_passive, &key, &now, BPF_ANY);
		return 0;
	}
	if (newstate == TCP_FIN_WAIT1 || newstate == TCP_LAST_ACK || newstate == TCP_CLOSE)
		sl_closing(sk, newstate);
	if (newstate == TCP_CLOSE) {
		/* a passive open nobody called on: its address may come back as another socket */
		key = (__u64)sk;
		bpf_map_delete_elem(&sl_passive, &key);
	}
	return 0;
}

/* A socket's destruction: the close of a followed socket no state change closed. */
SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(net_sl_destroy, struct sock *sk)
{
	sl_closing(sk, -1);
	return 0;
}

/*
 * An mmap of a target choosing its address (the dynamic loader's first
 * mapping of each library, dlopen's): the analyzer looks at its executable
 * mappings a little later (analyzer/mappings.h MAPPINGS_SETTLE_MS), by then
 * the library's code is mapped too.  At most one event per millisecond and
 * process: a loader maps its libraries microseconds apart, and a process
 * mapping memory all the time would wake the collector as often.
 */
SEC("tp_btf/vm_unmapped_area")
int BPF_PROG(net_sl_mmap, unsigned long addr, struct vm_unmapped_area_info *info)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32, ms;
	struct net_target *t = target_of(tgid);

	if (!t)
		return 0;
	ms = (__u32)(bpf_ktime_get_ns() / 1000000) & ~NET_MAP_CONNECTED;
	if ((t->map_ms & ~NET_MAP_CONNECTED) == ms)
		return 0;
	t->map_ms = (t->map_ms & NET_MAP_CONNECTED) | ms;
	proc_event_flags(NET_OP_MMAP_EXEC, tgid, 0, t->root, NET_F_MAPS_SOON);
	return 0;
}
