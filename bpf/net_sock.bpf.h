/*
 * Part of net.bpf.c: sockets.  The socket behind an fd of the current task,
 * a socket's family and addresses, the peer a call named, and the sockets
 * target calls have touched (retransmits and drops are matched to them).
 */

#define S_IFMT 0170000
#define S_IFSOCK 0140000
#define AF_INET 2
#define AF_INET6 10

/* Casts a pointer the BTF view lost (read as a number) back to a type; 6.2+. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/*
 * The current thread's name into dst (16 bytes).  The tp_btf programs read
 * it with plain loads: the kernel keeps comm NUL-padded, and the helper's
 * call and string copy were a tenth of a socket call's cost.
 */
static __always_inline void comm_into(char *dst, const bool btf)
{
	if (btf && bpf_rdonly_cast) {
		struct task_struct *t = bpf_get_current_task_btf();

		__builtin_memcpy(dst, t->comm, 16);
		return;
	}
	bpf_get_current_comm(dst, 16);
}

/* Sockets a target call has touched: retransmits and drops are matched to them. */
struct sock_owner {
	__u32 tgid;
	__s32 fd;
	__u64 ino;
	__u32 root;     /* net_target.root */
	__u32 turn;     /* net_event.turn of its last data call */
	/* Its entry in net_caps as of caps_gen cap_gen (CAP_DEFAULT: none): read once per change. */
	__u16 cap_read;
	__u16 cap_write;
	__u32 cap_gen;
	/* Directions (1 read, 2 write) that had a call cut since their cap changed (NET_F_CUT_FIRST). */
	__u32 cut_seen;
	/*
	 * Its process's entry in net_targets as of targets_gen tgt_gen (0:
	 * none): the socket layer's data calls look the table up once per
	 * change, not once per call.
	 */
	__u32 tgt_gen;
	__u32 tgt_cap;      /* the bytes of data its calls copy at most */
	__u32 tgt_root;     /* net_target.root */
};
#define CAP_DEFAULT 0xffffu
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);                 /* struct sock address */
	__type(value, struct sock_owner);
	__uint(max_entries, 65536);
} socks SEC(".maps");

static __always_inline void remember_sock(struct sock *sk, int fd, __u64 ino, __u32 root)
{
	__u64 key = (__u64)sk;
	struct sock_owner o = { .tgid = bpf_get_current_pid_tgid() >> 32, .fd = fd, .ino = ino, .root = root,
				.cap_read = CAP_DEFAULT, .cap_write = CAP_DEFAULT };

	if (bpf_map_update_elem(&socks, &key, &o, BPF_ANY))
		count(NET_CNT_SOCKS_FULL);
}

/* What the parsers need of a connection's calls (bpf/net_abi.h struct net_cap): the collector's to write. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);                 /* the socket's inode */
	__type(value, struct net_cap);
	__uint(max_entries, 65536);
} net_caps SEC(".maps");
/*
 * Bumped by the collector after it writes net_caps: every socket's copy of
 * its entry is stale then (a new socket's, generation 0, once one was written).
 */
volatile __u32 caps_gen = 0;

/*
 * The bytes to copy of a call of the current process on socket ino (of
 * the given direction) that moved ret bytes, at most cap (the process's):
 * less when its connection's parser asked for less (NET_F_CAPPED then, and
 * NET_F_CUT_FIRST for the first call of the direction the cap cuts).  The
 * socket's entry o keeps its cap, looked up again only when caps_gen moved.
 */
static __always_inline __u32 conn_cap(struct scratch *s, struct sock_owner *o, __u64 ino, bool write, __u64 ret,
				      __u32 cap)
{
	__u32 gen = caps_gen, v, bit = write ? 2 : 1;

	/* (an entry of an earlier socket at the same address has another inode) */
	if (!o || o->cap_gen != gen || o->ino != ino) {
		struct net_cap *k = bpf_map_lookup_elem(&net_caps, &ino);
		bool mine = k && k->tgid == (__u32)(bpf_get_current_pid_tgid() >> 32);
		__u16 rd = mine ? k->read : CAP_DEFAULT, wr = mine ? k->write : CAP_DEFAULT;

		if (o) {
			if (o->cap_read != rd || o->cap_write != wr || o->ino != ino)
				o->cut_seen = 0;
			o->cap_read = rd;
			o->cap_write = wr;
			o->cap_gen = gen;
		}
		v = write ? wr : rd;
	} else {
		v = write ? o->cap_write : o->cap_read;
	}
	if (v == CAP_DEFAULT || v >= cap)
		return cap;
	s->e.flags |= NET_F_CAPPED;
	if (ret > v && o && !(o->cut_seen & bit)) {
		o->cut_seen |= bit;
		s->e.flags |= NET_F_CUT_FIRST;
	}
	return v;
}

/* The socket behind fd in the current task, with its inode; NULL if fd is no socket. */
static __always_inline struct sock *sock_of_fd(int fd, __u64 *ino, const bool btf)
{
	/* The raw_tp variant calls no helper that kernels before 5.11 lack. */
	struct task_struct *task = btf ? bpf_get_current_task_btf() : (struct task_struct *)bpf_get_current_task();
	struct file **fds, *f = NULL;
	struct socket *sock;
	unsigned int max;
	umode_t mode;

	if (fd < 0)
		return NULL;
	if (btf && bpf_rdonly_cast) {
		struct fdtable *fdt = task->files->fdt;
		struct inode *inode;

		fds = fdt->fd;
		max = fdt->max_fds;
		if ((unsigned int)fd >= max || bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) || !f)
			return NULL;
		/* An array element read as a number: cast back to see the file's fields. */
		f = bpf_rdonly_cast(f, bpf_core_type_id_kernel(struct file));
		inode = f->f_inode;
		if ((inode->i_mode & S_IFMT) != S_IFSOCK)
			return NULL;
		*ino = inode->i_ino;
		sock = bpf_rdonly_cast(f->private_data, bpf_core_type_id_kernel(struct socket));
		return sock->sk;
	}
	fds = BPF_CORE_READ(task, files, fdt, fd);
	max = BPF_CORE_READ(task, files, fdt, max_fds);
	if ((unsigned int)fd >= max || bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) || !f)
		return NULL;
	mode = BPF_CORE_READ(f, f_inode, i_mode);
	if ((mode & S_IFMT) != S_IFSOCK)
		return NULL;
	*ino = BPF_CORE_READ(f, f_inode, i_ino);
	sock = (struct socket *)BPF_CORE_READ(f, private_data);
	return BPF_CORE_READ(sock, sk);
}

/* The socket's family, type and addresses; 0, or -1 for families not traced. */
static __always_inline int fill_sock(struct net_event *e, struct sock *sk, const bool btf)
{
	if (btf && bpf_rdonly_cast) {
		/* sk may have come through a number (sock_of_fd): the cast makes it readable either way */
		struct sock *k = bpf_rdonly_cast(sk, bpf_core_type_id_kernel(struct sock));

		e->family = k->__sk_common.skc_family;
		if (e->family != AF_INET && e->family != AF_INET6)
			return -1;
		e->type = k->sk_type;
		e->lport = k->__sk_common.skc_num;
		e->rport = __builtin_bswap16(k->__sk_common.skc_dport);
		if (e->family == AF_INET) {
			__u32 l = k->__sk_common.skc_rcv_saddr, r = k->__sk_common.skc_daddr;

			__builtin_memcpy(e->laddr, &l, 4);
			__builtin_memcpy(e->raddr, &r, 4);
		} else {
			for (int i = 0; i < 4; i++) {
				__u32 l = k->__sk_common.skc_v6_rcv_saddr.in6_u.u6_addr32[i];
				__u32 r = k->__sk_common.skc_v6_daddr.in6_u.u6_addr32[i];

				__builtin_memcpy(e->laddr + 4 * i, &l, 4);
				__builtin_memcpy(e->raddr + 4 * i, &r, 4);
			}
		}
		e->sk = (__u64)sk;
		return 0;
	}
	e->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (e->family != AF_INET && e->family != AF_INET6)
		return -1;
	e->type = BPF_CORE_READ(sk, sk_type);
	e->lport = BPF_CORE_READ(sk, __sk_common.skc_num);
	e->rport = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (e->family == AF_INET) {
		__u32 l = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr), r = BPF_CORE_READ(sk, __sk_common.skc_daddr);

		__builtin_memcpy(e->laddr, &l, 4);
		__builtin_memcpy(e->raddr, &r, 4);
	} else {
		BPF_CORE_READ_INTO(&e->laddr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
		BPF_CORE_READ_INTO(&e->raddr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
	}
	e->sk = (__u64)sk;
	return 0;
}

/* A sockaddr the process passed (sendto, recvfrom, msg_name) as the peer. */
static __always_inline void peer_from_arg(struct net_event *e, __u64 uaddr)
{
	struct sockaddr_in6 sa = {};

	if (!uaddr || bpf_probe_read_user(&sa, sizeof(sa), (void *)uaddr))
		return;
	if (sa.sin6_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&sa;

		__builtin_memset(e->raddr, 0, sizeof(e->raddr));
		__builtin_memcpy(e->raddr, &in->sin_addr.s_addr, 4);
		e->rport = __builtin_bswap16(in->sin_port);
		e->flags |= NET_F_PEER_ARG;
	} else if (sa.sin6_family == AF_INET6) {
		__builtin_memcpy(e->raddr, sa.sin6_addr.in6_u.u6_addr8, 16);
		e->rport = __builtin_bswap16(sa.sin6_port);
		e->flags |= NET_F_PEER_ARG;
	}
}
