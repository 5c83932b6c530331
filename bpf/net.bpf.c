/*
 * Network profiling: the socket calls of target processes, from the syscall
 * layer (tp_btf or raw_tp sys_enter / sys_exit: no kprobes on this kernel).
 *
 * sys_enter keeps a call's arguments by thread, for the calls that can touch
 * a socket, and only for target processes: every other call on the host
 * costs one switch on the syscall number, and a socket-like call of another
 * process one hash lookup more.  sys_exit finds the fd's socket through the
 * task's fd table (no other hook is needed to tell a socket from a file),
 * and writes one event with a bounded prefix of the data the call moved
 * into a BPF ring buffer, which the collector copies to the analyzers'
 * rings.  Retransmits and drops come from their tracepoints, for sockets a
 * target call has touched.  Nothing is parsed here.
 *
 * Every function below takes `btf`, a constant: the tp_btf programs read
 * kernel memory with plain loads (registers, the fd table, the file, the
 * socket: the verifier turns them into fault-safe loads), the raw_tp ones
 * through bpf_probe_read_kernel.  A target's socket call reads some twenty
 * kernel fields; as helper calls they were most of its cost.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "bpf/net_abi.h"

char LICENSE[] SEC("license") = "GPL";

#if defined(__TARGET_ARCH_x86)
#define NR_read 0
#define NR_write 1
#define NR_close 3
#define NR_mmap 9
#define NR_readv 19
#define NR_writev 20
#define NR_sendfile 40
#define NR_connect 42
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

#define S_IFMT 0170000
#define S_IFSOCK 0140000
#define AF_INET 2
#define AF_INET6 10
#define PROT_EXEC 4
#define MSG_PEEK 2
#define MAP_ANONYMOUS 0x20

/* Casts a pointer the BTF view lost (read as a number) back to a type; 6.2+. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* Set by the collector before load. */
const volatile __u32 max_targets = 1024;
/*
 * The collector is woken only once this much waits in the ring buffer; it
 * also drains on a short timer.  Waking it per event would cost a context
 * switch per socket call at the rates network profiling sees.
 */
const volatile __u64 wake_bytes = 1 << 18;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);                 /* tgid */
	__type(value, struct net_target);
	__uint(max_entries, 1024);
} net_targets SEC(".maps");

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

/* Sockets a target call has touched: retransmits and drops are matched to them. */
struct sock_owner {
	__u32 tgid;
	__s32 fd;
	__u64 ino;
	__u32 root;     /* net_target.root */
	__u32 turn;     /* net_event.turn of its last data call */
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);                 /* struct sock address */
	__type(value, struct sock_owner);
	__uint(max_entries, 65536);
} socks SEC(".maps");

/* Losses of a socket, handed to its next event (see struct net_event). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);                 /* socket inode */
	__type(value, struct net_lost);
	__uint(max_entries, 16384);
} net_lost SEC(".maps");
/* Non-zero once anything was lost: until then no event pays for the lookup. */
__u64 lost_pending = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);       /* set by the collector from the per-CPU budget */
} net_events SEC(".maps");

struct scratch {
	struct net_event e;
	__u8 data[3 * NET_MAX_PAYLOAD];     /* room for the verifier's view of offset + length */
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct scratch);
	__uint(max_entries, 1);
} net_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, NET_CNT_MAX);
} net_counters SEC(".maps");

static __always_inline void count(__u32 id)
{
	__u64 *c = bpf_map_lookup_elem(&net_counters, &id);
	if (c)
		*c += 1;
}

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

	if (!op || !(t = bpf_map_lookup_elem(&net_targets, &tgid)))
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

/* Copies up to cap - off bytes of user memory to s->data + off (cap <= NET_MAX_PAYLOAD); returns what it copied. */
static __always_inline __u32 copy_in(struct scratch *s, __u32 off, __u64 src, __u64 n, __u32 cap)
{
	if (cap > NET_MAX_PAYLOAD)
		cap = NET_MAX_PAYLOAD;
	if (off >= cap || !src)
		return 0;
	if (n > cap - off)
		n = cap - off;
	/* Masks the verifier can follow (the compiler would drop plain checks): off < 4 KiB, n < 8 KiB. */
	barrier_var(n);
	n &= 2 * NET_MAX_PAYLOAD - 1;
	barrier_var(off);
	off &= NET_MAX_PAYLOAD - 1;
	if (bpf_probe_read_user(s->data + off, n, (void *)src)) {
		count(NET_CNT_COPY_FAILED);
		return 0;
	}
	return (__u32)n;
}

/* The data of an iovec array, up to `total` bytes and NET_MAX_IOV entries. */
static __always_inline __u32 copy_iov(struct scratch *s, __u64 iov, __u64 cnt, __u64 total, __u32 cap)
{
	__u32 off = 0;

	for (int i = 0; i < NET_MAX_IOV; i++) {
		struct iovec v;

		if (i >= cnt || off >= total || off >= cap || off >= NET_MAX_PAYLOAD)
			break;
		if (bpf_probe_read_user(&v, sizeof(v), (void *)(iov + i * sizeof(v))))
			break;
		if (v.iov_len > total - off)
			v.iov_len = total - off;
		off += copy_in(s, off, (__u64)v.iov_base, v.iov_len, cap);
	}
	return off;
}

/* The losses the socket's earlier events left behind ride on this event. */
static __always_inline void take_losses(struct net_event *e)
{
	__u64 key = e->ino;
	struct net_lost *l;

	if (!lost_pending)
		return;
	l = bpf_map_lookup_elem(&net_lost, &key);
	if (!l)
		return;
	e->lost_events += l->events;
	e->lost_read_bytes += l->read_bytes;
	e->lost_write_bytes += l->write_bytes;
	bpf_map_delete_elem(&net_lost, &key);
}

/* The event could not be sent: what it carried (and its own losses) waits for the next one. */
static __always_inline void keep_losses(const struct net_event *e)
{
	__u64 key = e->ino, moved = e->ret > 0 ? (__u64)e->ret : 0;
	struct net_lost l = { .events = e->lost_events + 1, .read_bytes = e->lost_read_bytes,
			      .write_bytes = e->lost_write_bytes };

	if (e->op == NET_OP_READ || e->op == NET_OP_TLS_READ)
		l.read_bytes += moved;
	else if (e->op == NET_OP_WRITE || e->op == NET_OP_TLS_WRITE)
		l.write_bytes += moved;
	__sync_fetch_and_add(&lost_pending, 1);
	if (bpf_map_update_elem(&net_lost, &key, &l, BPF_ANY))
		count(NET_CNT_LOST_FULL);
}

static __always_inline __u64 wake_flag(void)
{
	return bpf_ringbuf_query(&net_events, BPF_RB_AVAIL_DATA) >= wake_bytes ? BPF_RB_FORCE_WAKEUP
									     : BPF_RB_NO_WAKEUP;
}

static __always_inline void emit_now(struct scratch *s, __u32 payload, const bool now)
{
	if (payload > NET_MAX_PAYLOAD)
		payload = NET_MAX_PAYLOAD;
	s->e.payload = payload;
	if ((s->e.op == NET_OP_READ || s->e.op == NET_OP_WRITE) && s->e.ret > 0 && (__u64)s->e.ret > payload) {
		s->e.flags |= NET_F_TRUNCATED;
		count(NET_CNT_TRUNCATED);
	}
	take_losses(&s->e);
	barrier_var(payload);
	payload &= 2 * NET_MAX_PAYLOAD - 1;
	if (!bpf_ringbuf_output(&net_events, s, sizeof(s->e) + payload, now ? BPF_RB_FORCE_WAKEUP : wake_flag())) {
		count(NET_CNT_EVENTS);
		return;
	}
	/* No room for the data: sizes and timing still go, the data becomes a gap. */
	if (payload) {
		s->e.payload = 0;
		s->e.flags |= NET_F_NO_BUDGET | NET_F_TRUNCATED;
		if (!bpf_ringbuf_output(&net_events, s, sizeof(s->e), BPF_RB_FORCE_WAKEUP)) {
			count(NET_CNT_NO_BUDGET);
			count(NET_CNT_EVENTS);
			return;
		}
	}
	count(NET_CNT_RINGBUF_FULL);
	keep_losses(&s->e);
}

static __always_inline void emit(struct scratch *s, __u32 payload)
{
	emit_now(s, payload, false);
}

/* An event about a process rather than a socket (fork, exit, executable mapping): family 0. */
static __always_inline void proc_event(__u32 op, __u32 tgid, __s64 ret, __u32 root)
{
	struct scratch *s;
	__u32 zero = 0;

	s = bpf_map_lookup_elem(&net_scratch, &zero);
	if (!s)
		return;
	__builtin_memset(&s->e, 0, sizeof(s->e));
	s->e.ts_ns = bpf_ktime_get_ns();
	s->e.tgid = tgid;
	s->e.tid = (__u32)bpf_get_current_pid_tgid();
	s->e.op = op;
	s->e.ret = ret;
	s->e.root = root;
	bpf_get_current_comm(s->e.comm, sizeof(s->e.comm));
	/* The analyzer attaches the process's TLS probes on these: no batching delay. */
	emit_now(s, 0, true);
}

/*
 * TLS.  A library call (SSL_read, Go's (*Conn).Read, ...) is kept from its
 * entry to its return by thread (OpenSSL) or by goroutine (Go: R14 holds the
 * g; a goroutine moves between threads while it waits), with the socket a
 * syscall under the call used: that is how plaintext is tied to its socket
 * without reading the library's structures (whose layout changes between
 * versions).  The library object (SSL *, *tls.Conn) remembers its socket
 * for calls that find their data already decrypted and make no syscall.
 */
struct tls_key {
	__u64 id;       /* pid_tgid (OpenSSL) or the goroutine's g (Go) */
	__u32 tgid;
	__u32 go;
};
struct tls_call {
	__u64 ts;
	__u64 buf;
	__u64 len;
	__u64 outlen;   /* _ex functions: where the library writes the length */
	__u64 obj;      /* SSL * or *tls.Conn */
	__u64 ino;
	__u64 sk;       /* set by a syscall under the call, 0 until then */
	__s32 fd;
	__u16 fn;
	__u16 emitted;  /* Go's Write: sent at its first syscall */
	__u32 cap;
	__u32 root;     /* net_target.root */
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct tls_key);
	__type(value, struct tls_call);
	__uint(max_entries, 8192);
} tls_calls SEC(".maps");

struct tls_obj_key {
	__u64 obj;
	__u32 tgid;
	__u32 pad;
};
struct tls_sock {
	__u64 ino;
	__u64 sk;
	__s32 fd;
	__u32 pad;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct tls_obj_key);
	__type(value, struct tls_sock);
	__uint(max_entries, 16384);
} tls_objs SEC(".maps");

/* Set by the collector while any TLS probe is attached: until then no socket call looks for a TLS call. */
__u32 tls_on = 0;

/* The TLS call the current thread (or its goroutine) is in, if any. */
static __always_inline struct tls_call *tls_current(struct pt_regs *regs, const bool btf)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct tls_key k = { .id = id, .tgid = id >> 32 };
	struct tls_call *tc = bpf_map_lookup_elem(&tls_calls, &k);

	if (tc)
		return tc;
#if defined(__TARGET_ARCH_x86)
	k.id = btf ? regs->r14 : BPF_CORE_READ(regs, r14);
	k.go = 1;
	return bpf_map_lookup_elem(&tls_calls, &k);
#else
	return NULL;
#endif
}

/* The plaintext of a TLS call, tied to the socket the call (or its object) used. */
static __always_inline void tls_emit(struct tls_call *tc, __u32 tgid, long ret)
{
	struct tls_obj_key ok = { .obj = tc->obj, .tgid = tgid };
	struct tls_sock *ts;
	struct scratch *s;
	__u32 zero = 0, got = 0;

	s = bpf_map_lookup_elem(&net_scratch, &zero);
	if (!s)
		return;
	__builtin_memset(&s->e, 0, sizeof(s->e));
	if (!tc->sk && (ts = bpf_map_lookup_elem(&tls_objs, &ok)) != NULL) {
		tc->sk = ts->sk;
		tc->ino = ts->ino;
		tc->fd = ts->fd;
	}
	if (!tc->sk || fill_sock(&s->e, (struct sock *)tc->sk, false)) {
		__builtin_memset(&s->e, 0, sizeof(s->e));
		tc->fd = -1;
		tc->ino = 0;
		count(NET_CNT_TLS_UNBOUND);
	}
	s->e.ts_ns = tc->ts;
	s->e.dur_ns = bpf_ktime_get_ns() - tc->ts;
	s->e.tgid = tgid;
	s->e.tid = (__u32)bpf_get_current_pid_tgid();
	s->e.fd = tc->fd;
	s->e.ino = tc->ino;
	s->e.op = tc->fn == NET_TLS_SSL_WRITE || tc->fn == NET_TLS_SSL_WRITE_EX || tc->fn == NET_TLS_GO_WRITE
			  ? NET_OP_TLS_WRITE : NET_OP_TLS_READ;
	s->e.syscall = tc->fn;
	s->e.ret = ret;
	s->e.tls = tc->obj;
	s->e.root = tc->root;
	bpf_get_current_comm(s->e.comm, sizeof(s->e.comm));
	if (ret > 0)
		got = copy_in(s, 0, tc->buf, (__u64)ret, tc->cap);
	emit(s, got);
}

/* A socket call under a TLS call: its socket is the TLS call's (and its object's). */
static __always_inline bool tls_wire(struct pt_regs *regs, int fd, __u64 ino, struct sock *sk, const bool btf)
{
	struct tls_call *tc = tls_current(regs, btf);
	struct tls_obj_key ok;
	struct tls_sock ts;

	if (!tc)
		return false;
	if (tc->sk != (__u64)sk) {
		tc->fd = fd;
		tc->ino = ino;
		tc->sk = (__u64)sk;
		ok.obj = tc->obj;
		ok.tgid = bpf_get_current_pid_tgid() >> 32;
		ok.pad = 0;
		ts.ino = ino;
		ts.sk = (__u64)sk;
		ts.fd = fd;
		ts.pad = 0;
		bpf_map_update_elem(&tls_objs, &ok, &ts, BPF_ANY);
	}
	/*
	 * Go's Write is sent here, before its data leaves: the answer may come back
	 * (and a reader goroutine's Read return, on another thread) before this
	 * goroutine reaches Write's RET.  Go's Write writes all of b or fails.
	 */
	if (tc->fn == NET_TLS_GO_WRITE && !tc->emitted) {
		tc->emitted = 1;
		tls_emit(tc, bpf_get_current_pid_tgid() >> 32, (long)tc->len);
	}
	count(NET_CNT_TLS_WIRE);
	return true;
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
	bpf_get_current_comm(s->e.comm, sizeof(s->e.comm));
	return 0;
}

static __always_inline void remember_sock(struct sock *sk, int fd, __u64 ino, __u32 root)
{
	__u64 key = (__u64)sk;
	struct sock_owner o = { .tgid = bpf_get_current_pid_tgid() >> 32, .fd = fd, .ino = ino, .root = root };

	if (bpf_map_update_elem(&socks, &key, &o, BPF_ANY))
		count(NET_CNT_SOCKS_FULL);
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

/* sendmmsg / recvmmsg: one event per message moved (the first iovec of each). */
static __always_inline void mmsg(struct scratch *s, const struct call *c, long n)
{
	for (int i = 0; i < NET_MAX_MMSG; i++) {
		struct mmsghdr m;
		struct iovec v;
		__u32 got = 0;

		if (i >= n || bpf_probe_read_user(&m, sizeof(m), (void *)(c->buf + i * sizeof(m))))
			break;
		s->e.ret = m.msg_len;
		s->e.flags &= ~(NET_F_TRUNCATED | NET_F_PEER_ARG);
		if (m.msg_hdr.msg_name)
			peer_from_arg(&s->e, (__u64)m.msg_hdr.msg_name);
		if (m.msg_hdr.msg_iovlen && !bpf_probe_read_user(&v, sizeof(v), m.msg_hdr.msg_iov))
			got = copy_in(s, 0, (__u64)v.iov_base, v.iov_len < m.msg_len ? v.iov_len : m.msg_len, c->cap);
		emit(s, got);
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

	if (!(t = bpf_map_lookup_elem(&net_targets, &tgid)))
		return 0;
	c.root = t->root;
	fd = (int)sys_arg(regs, 1, btf);
	sk = sock_of_fd(fd, &ino, btf);
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
	__u32 zero = 0;

	s = bpf_map_lookup_elem(&net_scratch, &zero);
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
	wire = tls_on && (c.op == NET_OP_READ || c.op == NET_OP_WRITE) && tls_wire(regs, fd, ino, sk, btf);
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
		switch (c.nr) {
		case NR_sendmmsg:
		case NR_recvmmsg:
			mmsg(s, &c, ret);
			return 0;
		case NR_readv:
		case NR_writev:
			got = copy_iov(s, c.buf, c.len, (__u64)ret, c.cap);
			break;
		case NR_sendmsg:
		case NR_recvmsg: {
			struct user_msghdr m;

			if (bpf_probe_read_user(&m, sizeof(m), (void *)c.buf))
				break;
			if (m.msg_name)
				peer_from_arg(&s->e, (__u64)m.msg_name);
			got = copy_iov(s, (__u64)m.msg_iov, m.msg_iovlen, (__u64)ret, c.cap);
			break;
		}
		case NR_sendfile:
			break;   /* the data comes from a file: sizes only */
		default:
			if (c.addr)
				peer_from_arg(&s->e, c.addr);
			got = copy_in(s, 0, c.buf, (__u64)ret, c.cap);
		}
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

/*
 * Packets under a socket call (tp_btf only: the call is in the thread's
 * storage, found without hashing).  These run on every packet the host
 * queues to a device or a socket reads, so the collector attaches them only
 * while a task asks (CTL_ATTACH_F_L2); a thread with no call in flight costs
 * one storage lookup.
 */
static __always_inline struct call *call_now(void)
{
	struct call *cp = bpf_task_storage_get(&inflight_ts, bpf_get_current_task_btf(), 0, 0);

	return cp && cp->op ? cp : NULL;
}

/*
 * One packet of socket sk under call c.  The call's first packet names its
 * socket: on loopback the receiving socket's ACK can be queued in the
 * sender's context, and is not the call's.
 */
static __always_inline void l2_add(struct call *c, struct sock *sk, const struct sk_buff *skb, __u32 bytes,
				   __u32 ifindex)
{
	if (!sk)
		return;
	if (!c->l2_sk)
		c->l2_sk = (__u64)sk;
	else if (c->l2_sk != (__u64)sk)
		return;
	if (c->l2_skb != (__u64)skb) {
		/* (a read can copy one packet in parts: it is one packet) */
		c->l2_pkts++;
		c->l2_skb = (__u64)skb;
		count(NET_CNT_L2_PKTS);
	}
	c->l2_bytes += bytes;
	c->l2_ifindex = ifindex;
}

SEC("tp_btf/net_dev_queue")
int BPF_PROG(net_l2_xmit, struct sk_buff *skb)
{
	struct call *c = call_now();
	struct net_device *dev;

	if (!c || c->op != NET_OP_WRITE)
		return 0;
	dev = skb->dev;
	l2_add(c, skb->sk, skb, skb->len, dev ? (__u32)dev->ifindex : 0);
	return 0;
}

SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(net_l2_copy, const struct sk_buff *skb, int len)
{
	struct call *c = call_now();

	if (!c || c->op != NET_OP_READ || len <= 0)
		return 0;
	l2_add(c, skb->sk, skb, (__u32)len, (__u32)skb->skb_iif);
	return 0;
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
	t = bpf_map_lookup_elem(&net_targets, &ptgid);
	if (!t)
		return;
	v.tasks = t->tasks;
	v.prefix_tasks = t->prefix_tasks;
	v.root = t->root ? t->root : ptgid;
	if (bpf_map_update_elem(&net_targets, &ctgid, &v, BPF_NOEXIST)) {
		count(NET_CNT_FORKS_FULL);
		return;
	}
	count(NET_CNT_FORKS);
	proc_event(NET_OP_FORK, ctgid, v.root, v.root);
}

/* A followed child's last thread: its entry goes (a process a task named stays the collector's). */
static __always_inline void on_exit(__u32 tgid, bool leader_gone)
{
	struct net_target *t;

	if (!leader_gone)
		return;
	t = bpf_map_lookup_elem(&net_targets, &tgid);
	if (!t || !t->root)
		return;
	proc_event(NET_OP_EXIT, tgid, t->root, t->root);
	bpf_map_delete_elem(&net_targets, &tgid);
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

/* An L4 event of a followed socket: retransmit or drop. */
static __always_inline void sock_event(struct sock *sk, __u16 op, long ret, const bool btf)
{
	__u64 key = (__u64)sk;
	struct sock_owner *o = bpf_map_lookup_elem(&socks, &key);
	struct scratch *s;
	__u32 zero = 0;

	if (!o)
		return;
	s = bpf_map_lookup_elem(&net_scratch, &zero);
	if (!s)
		return;
	__builtin_memset(&s->e, 0, sizeof(s->e));
	if (fill_sock(&s->e, sk, btf))
		return;
	s->e.ts_ns = bpf_ktime_get_ns();
	s->e.tgid = o->tgid;
	s->e.root = o->root;
	s->e.fd = o->fd;
	s->e.ino = o->ino;
	s->e.op = op;
	s->e.ret = ret;
	emit(s, 0);
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(net_retransmit_btf, const struct sock *sk, const struct sk_buff *skb)
{
	sock_event((struct sock *)sk, NET_OP_RETRANSMIT, 0, true);
	return 0;
}

SEC("raw_tp/tcp_retransmit_skb")
int BPF_PROG(net_retransmit_raw, const struct sock *sk, const struct sk_buff *skb)
{
	sock_event((struct sock *)sk, NET_OP_RETRANSMIT, 0, false);
	return 0;
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(net_drop_btf, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	struct sock *sk = skb->sk;

	if (sk)
		sock_event(sk, NET_OP_DROP, (long)reason, true);
	return 0;
}

SEC("raw_tp/kfree_skb")
int BPF_PROG(net_drop_raw, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	struct sock *sk = BPF_CORE_READ(skb, sk);

	if (sk)
		sock_event(sk, NET_OP_DROP, (long)reason, false);
	return 0;
}

/* Kernels before 5.17: kfree_skb has no reason (the collector loads these there, by the tracepoint's BTF). */
SEC("tp_btf/kfree_skb")
int BPF_PROG(net_drop_btf_noreason, struct sk_buff *skb, void *location)
{
	struct sock *sk = skb->sk;

	if (sk)
		sock_event(sk, NET_OP_DROP, 0, true);
	return 0;
}

SEC("raw_tp/kfree_skb")
int BPF_PROG(net_drop_raw_noreason, struct sk_buff *skb, void *location)
{
	struct sock *sk = BPF_CORE_READ(skb, sk);

	if (sk)
		sock_event(sk, NET_OP_DROP, 0, false);
	return 0;
}

/* A target exec'ed: its new image may be a TLS library itself (Go, Node); the analyzer looks now. */
static __always_inline void on_exec(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct net_target *t = bpf_map_lookup_elem(&net_targets, &tgid);

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

/*
 * Every TLS probe point: the cookie (NET_TLS_COOKIE) says which function and
 * which side.  Attached by the collector as uprobe.multi (entries, Go's RET
 * instructions) and uretprobe.multi (OpenSSL's returns) links, host-wide per
 * library file: a library shared by many processes is probed once, and the
 * target table decides, as for syscalls, whose calls are kept.
 */
SEC("uprobe")
int net_tls(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx), id = bpf_get_current_pid_tgid();
	__u32 fn = cookie & 0xff, kind = (cookie >> 8) & 0xff, tgid = id >> 32;
	bool go = fn == NET_TLS_GO_WRITE || fn == NET_TLS_GO_READ;
	struct tls_key k = { .id = id, .tgid = tgid };
	struct net_target *t;
	struct tls_call *tc;
	long ret;

	if (!fn || fn > NET_TLS_FN_MAX)
		return 0;
	t = bpf_map_lookup_elem(&net_targets, &tgid);
	if (!t)
		return 0;
#if defined(__TARGET_ARCH_x86)
	if (go) {
		k.id = ctx->r14;
		k.go = 1;
	}
#else
	if (go)
		return 0;
#endif
	if (kind == NET_TLS_P_ENTRY || kind == NET_TLS_P_CALL) {
		struct tls_call c = {};

		c.ts = bpf_ktime_get_ns();
		c.fn = fn;
		c.cap = t->tasks > t->prefix_tasks ? NET_MAX_PAYLOAD : NET_PREFIX_PAYLOAD;
		c.fd = -1;
		c.root = t->root;
#if defined(__TARGET_ARCH_x86)
		if (go) {
			/* Go's register ABI: receiver in RAX, the slice b in RBX (ptr), RCX (len), RDI (cap). */
			c.obj = ctx->ax;
			c.buf = ctx->bx;
			c.len = ctx->cx;
		} else
#endif
		{
			c.obj = PT_REGS_PARM1(ctx);
			c.buf = PT_REGS_PARM2(ctx);
			c.len = PT_REGS_PARM3(ctx);
			if (fn == NET_TLS_SSL_WRITE_EX || fn == NET_TLS_SSL_READ_EX || kind == NET_TLS_P_CALL)
				c.outlen = PT_REGS_PARM4(ctx);
		}
		count(NET_CNT_TLS_CALLS);
		if (bpf_map_update_elem(&tls_calls, &k, &c, BPF_ANY))
			count(NET_CNT_TLS_INFLIGHT_FULL);
		return 0;
	}
	tc = bpf_map_lookup_elem(&tls_calls, &k);
	if (!tc) {
		count(NET_CNT_TLS_NO_ENTRY);
		return 0;
	}
#if defined(__TARGET_ARCH_x86)
	if (go) {
		/* Results: n in RAX, the error interface in RBX (type) and RCX (data). */
		ret = (long)ctx->ax;
		if (ret <= 0 && ctx->bx)
			ret = -1;
	} else
#endif
	{
		/* int functions: only the low 32 bits of the return register are defined. */
		ret = (int)PT_REGS_RC(ctx);
		if (fn == NET_TLS_SSL_WRITE_EX || fn == NET_TLS_SSL_READ_EX || kind == NET_TLS_P_AFTER_CALL) {
			__u64 n = 0;

			if (ret == 1 && tc->outlen && !bpf_probe_read_user(&n, sizeof(n), (void *)tc->outlen))
				ret = (long)n;
			else
				ret = -1;
		}
	}
	if (ret > 0 && (__u64)ret > tc->len)
		ret = (long)tc->len;  /* never more than the buffer the caller gave */
	/* A call that moved nothing (WANT_READ of a non-blocking socket, an error) has nothing to parse. */
	if (ret > 0 && !tc->emitted)
		tls_emit(tc, tgid, ret);
	bpf_map_delete_elem(&tls_calls, &k);
	return 0;
}
