/*
 * The ABI of the network program (bpf/net.bpf.c) shared with the collector
 * and the analyzer: the per-process filter, the event each traced socket
 * call produces (with a bounded prefix of its data), and the counters of what
 * the program had to give up.  Fixed-width types, explicit padding, sizes
 * checked at compile time on both sides.
 */
#ifndef EMBER_BPF_NET_ABI_H
#define EMBER_BPF_NET_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/*
 * Bytes of a call's data copied into its event: enough for the protocols'
 * headers and most messages; what is left is reported as a gap of that many
 * bytes, which the parsers skip (inside a body) or resynchronise after.
 */
#define NET_MAX_PAYLOAD 4096
/*
 * The same for a process only prefix captures want (the continuous-profiling
 * monitors: they need a request's first line and a response's status, not
 * bodies): requests and response heads fit; less to copy and to parse.
 */
#define NET_PREFIX_PAYLOAD 1024
/* iovecs of one readv/writev/sendmsg/recvmsg looked at; messages of one sendmmsg/recvmmsg */
#define NET_MAX_IOV 8
#define NET_MAX_MMSG 8

/* What a traced call was, from the socket's point of view. */
enum net_op {
	NET_OP_CONNECT = 1,   /* ret: 0 or -errno (-EINPROGRESS for a non-blocking connect) */
	NET_OP_ACCEPT = 2,    /* fd: the new socket; ret: the same */
	NET_OP_WRITE = 3,     /* ret: bytes sent, or -errno */
	NET_OP_READ = 4,      /* ret: bytes received, or -errno */
	NET_OP_CLOSE = 5,
	NET_OP_RETRANSMIT = 6,/* a TCP segment of the socket was retransmitted (no syscall) */
	NET_OP_DROP = 7,      /* a packet of the socket was dropped (no syscall); ret = drop reason */
	/*
	 * A target process forked: tgid is the child, which is a target from now
	 * on; ret is the process the task asked for (the root of the tree).  No
	 * socket: family and the fields after it are 0.
	 */
	NET_OP_FORK = 8,
	NET_OP_EXIT = 9,      /* a followed child (tgid) exited and is a target no more */
	/*
	 * Plaintext a TLS library wrote or read for the process (uprobes on
	 * SSL_write/SSL_read/..., Go's crypto/tls): ret is its length or < 0,
	 * the data follows.  The socket is the one a syscall under the call (or
	 * an earlier call on the same library object, `tls`) used; when none is
	 * known yet (a library with memory BIOs, as Node's) family is 0 and the
	 * analyzer binds the event to the thread's socket traffic.
	 */
	NET_OP_TLS_WRITE = 10,
	NET_OP_TLS_READ = 11,
	/*
	 * A target mapped a file executable (mmap with PROT_EXEC: dlopen, the
	 * dynamic loader) or exec'ed: the analyzer looks for TLS libraries in
	 * it now rather than at its next scan.  No socket (family 0).
	 */
	NET_OP_MMAP_EXEC = 12,
};

#define NET_F_TRUNCATED  0x1u  /* ret > payload: the rest of the data was not copied */
#define NET_F_PEER_ARG   0x2u  /* raddr/rport from the call's address argument (UDP) */
#define NET_F_NO_SOCK    0x4u  /* the fd is a socket no more (closed under the call) */
#define NET_F_NO_BUDGET  0x8u  /* the ring buffer had no room for the data: sizes and timing only */
#define NET_F_TLS_WIRE   0x10u /* a syscall under a TLS call: ciphertext, counted, never copied */
/*
 * Seen where the call ends (the socket layer), not where it starts: ts_ns is
 * its end and dur_ns 0 (accept, close, data calls); a call's time is unknown.
 */
#define NET_F_UNTIMED    0x20u
/* NET_OP_MMAP_EXEC: the mapping it announces is still being made (a library's first mapping): look a little later */
#define NET_F_MAPS_SOON  0x40u
/* The data was cut to its connection's cap (struct net_cap): the parsers asked for no more (with NET_F_TRUNCATED) */
#define NET_F_CAPPED     0x80u
/*
 * With NET_F_CAPPED: the first call of its direction that the connection's
 * cap cut since the cap last changed.  The cap was a prediction from earlier
 * calls (a pipeline after single requests cuts it), so the collector passes
 * it on at once: the analyzer raises the cap before the next calls if the
 * cut cost the parser its framing.
 */
#define NET_F_CUT_FIRST  0x100u

/* One traced call (or L4 event) of a target process's socket. */
struct net_event {
	__u64 ts_ns;          /* call entry, CLOCK_MONOTONIC */
	__u64 dur_ns;         /* entry to exit */
	__u32 tgid;
	__u32 tid;
	__s32 fd;
	__u16 op;             /* enum net_op */
	__u16 syscall;        /* the syscall's number, 0 for L4 events; TLS ops: enum net_tls_fn */
	__s64 ret;
	__u64 ino;            /* the socket's inode: its identity within the host */
	__u64 sk;             /* kernel address of its struct sock: joins L4 events, never dereferenced */
	__u16 family;         /* AF_INET, AF_INET6 (others are not traced) */
	__u16 type;           /* SOCK_STREAM, SOCK_DGRAM */
	__u16 lport;          /* host order */
	__u16 rport;
	__u8 laddr[16];       /* IPv4 in the first 4 bytes */
	__u8 raddr[16];
	__u32 srtt_us;        /* TCP smoothed RTT after a write, 0 if unknown */
	__u32 payload;        /* bytes of data[] that follow */
	__u32 flags;          /* NET_F_* */
	/*
	 * Events of this socket lost before this one (ring buffer or analyzer
	 * ring full), and the data they moved: the parsers skip that many bytes
	 * of each direction or resynchronise.
	 */
	__u32 lost_events;
	char comm[16];
	__u64 lost_read_bytes;
	__u64 lost_write_bytes;
	/* TLS ops: the library's connection object (SSL *, Go's *tls.Conn): an identity, never dereferenced */
	__u64 tls;
	/*
	 * The process a task named when tgid is a child it followed (net_target.root),
	 * else 0: the collector sends a child's events to that process's analyzer,
	 * which has the task.  Fork and exit events carry it too.
	 */
	__u32 root;
	/*
	 * Written by the collector, 0 from the BPF program: the followed process
	 * at the other end of this TCP connection when that process's events go
	 * to another analyzer, which is the only one that could link the two.
	 */
	__u32 peer_tgid;
	/*
	 * The packets under this call, while a task asks for them
	 * (CTL_ATTACH_F_L2; Rover's per-syscall detail of sampled traces), else
	 * 0: a write's packets as its thread queued them to a device
	 * (net_dev_queue: their length with headers, that device's index), a
	 * read's as it copied them out (skb_copy_datagram_iovec: the bytes
	 * copied, the device they came in on).  Packets queued or consumed
	 * later, off the call (a full window, a softirq), are not the call's.
	 */
	__u32 l2_pkts;
	__u32 l2_bytes;
	__u32 l2_ifindex;
	/*
	 * The socket's turn (data calls, and its close): a data call moving
	 * bytes in the other direction than the socket's last one begins a new
	 * turn; turns are numbered from 1 at the first call traced, and
	 * NET_TURN_WRITE says the turn's direction.  Counted in the kernel for
	 * every call, lost or not, so the receiver knows the turns it missed
	 * (for request/response protocols: the requests).  0: not counted (the
	 * socket table was full, TLS plaintext).
	 */
	__u32 turn;
	/* followed by `payload` bytes of the call's data */
};

#define NET_MAP_CONNECTED 0x80000000u
#define NET_TURN_WRITE 0x80000000u
#define NET_TURN_MASK  0x7fffffffu

/* What was lost of one socket, until its next event carries it (map "net_lost", key: inode). */
struct net_lost {
	__u32 events;
	__u32 pad;
	__u64 read_bytes;
	__u64 write_bytes;
};

/*
 * What the analyzer's parsers need of a connection's calls (map
 * "net_caps", key: the socket's inode), written by the collector at the
 * analyzer's request (CTL_REQ_NET_CAPS): the bytes of each read and of
 * each write to copy, when fewer than the process's cap (NET_MAX_PAYLOAD
 * or NET_PREFIX_PAYLOAD).  An HTTP/1 connection wants its heads, not its
 * bodies; a connection no parser claimed wants nothing.  It applies to
 * calls of process tgid only: an inode names one socket while it lives,
 * and the tgid keeps a stale entry from the next socket of another process.
 */
struct net_cap {
	__u32 tgid;
	__u16 read;
	__u16 write;
};

/* Value of the net_targets map (key: tgid). */
struct net_target {
	__u32 tasks;          /* network tasks that want the process */
	__u32 root;           /* 0 for a process a task named; else the one it was forked from */
	__u32 prefix_tasks;   /* ... of them, those that want NET_PREFIX_PAYLOAD bytes of data only */
	/*
	 * The BPF program's (socket layer): bits 0-30 the ms (wrapping) of its
	 * last mapping event, NET_MAP_CONNECTED once a connect asked for a look.
	 */
	__u32 map_ms;
};

/* Every place the program gives up counts here (per-CPU array "net_counters", struct net_counts). Append only. */
enum net_counter {
	NET_CNT_CALLS = 0,        /* socket calls of target processes traced */
	NET_CNT_EVENTS,           /* events written to the ring buffer */
	NET_CNT_RINGBUF_FULL,     /* events lost: ring buffer full */
	NET_CNT_INFLIGHT_FULL,    /* calls not traced: too many in flight */
	NET_CNT_TRUNCATED,        /* events whose data was cut to NET_MAX_PAYLOAD (NET_PREFIX_PAYLOAD) */
	NET_CNT_COPY_FAILED,      /* data that could not be read from the process */
	NET_CNT_NOT_SOCKET,       /* target calls on fds that are no sockets (files, pipes) */
	NET_CNT_SOCKS_FULL,       /* sockets not followed for retransmits and drops */
	NET_CNT_NO_BUDGET,        /* events sent without their data: ring buffer short of room */
	NET_CNT_LOST_FULL,        /* losses not remembered per socket (net_lost full): silent gaps */
	NET_CNT_FORKS,            /* children of target processes followed */
	NET_CNT_FORKS_FULL,       /* ... not followed: the target table is full */
	NET_CNT_TLS_CALLS,        /* TLS library calls of target processes traced (entries) */
	NET_CNT_TLS_NO_ENTRY,     /* TLS returns without their entry (entry lost or probe attached mid-call) */
	NET_CNT_TLS_INFLIGHT_FULL,/* TLS calls not traced: too many in flight */
	NET_CNT_TLS_UNBOUND,      /* TLS events sent without a socket (bound by thread in the analyzer) */
	NET_CNT_TLS_WIRE,         /* syscalls under a TLS call: ciphertext counted, not copied */
	NET_CNT_L2_PKTS,          /* packets counted into their call's L2 detail */
	NET_CNT_PEEKS,            /* MSG_PEEK reads not traced: their bytes come again in the next read */
	NET_CNT_SL_NO_SYSCALL,    /* socket-layer calls under no socket syscall (io_uring, splice): sizes only */
	NET_CNT_CAPPED,           /* events whose data was cut to their connection's cap (struct net_cap): not counted in TRUNCATED */
	NET_CNT_MAX,
};
/* The value of net_counters' one entry, per CPU. */
struct net_counts {
	__u64 n[NET_CNT_MAX];
};

#define NET_ASSERT_SIZE(t, n) _Static_assert(sizeof(t) == (n), #t " changed size: bump EMBER_ABI_VERSION")
/*
 * TLS probe points: the collector attaches uprobe.multi links at offsets the
 * analyzer found (analyzer/tls/tls_probe.h uses the same numbers); each
 * offset's cookie says which function and which side it is.
 */
enum net_tls_fn {
	NET_TLS_SSL_WRITE = 1,    /* int SSL_write(SSL *, const void *buf, int num) */
	NET_TLS_SSL_READ = 2,     /* int SSL_read(SSL *, void *buf, int num) */
	NET_TLS_SSL_WRITE_EX = 3, /* int SSL_write_ex(SSL *, const void *buf, size_t num, size_t *written) */
	NET_TLS_SSL_READ_EX = 4,  /* int SSL_read_ex(SSL *, void *buf, size_t num, size_t *readbytes) */
	NET_TLS_GO_WRITE = 5,     /* crypto/tls.(*Conn).Write(b []byte) (int, error), register ABI */
	NET_TLS_GO_READ = 6,      /* crypto/tls.(*Conn).Read(b []byte) (int, error) */
	NET_TLS_FN_MAX = 6,
};
enum net_tls_probe {
	NET_TLS_P_ENTRY = 0,      /* uprobe at the function's entry: arguments */
	NET_TLS_P_RETURN = 1,     /* uretprobe (OpenSSL): return value */
	NET_TLS_P_RET_INSN = 2,   /* uprobe on one of the function's RET instructions (Go) */
	/*
	 * OpenSSL's SSL_read/SSL_write as most builds compile them: a thin
	 * wrapper that calls an internal function with the arguments and the
	 * address of a size_t for the length, then tests the result.  CALL is a
	 * uprobe on that call instruction (arguments in RDI, RSI, RDX; RCX: where
	 * the length goes), AFTER_CALL one on the conditional jump after it (EAX:
	 * the internal result, 1 when the length was written).  Both
	 * instructions are ones the kernel emulates; a function's first
	 * instruction often is not (it must then be single-stepped, several
	 * times the cost), and a uretprobe needs its breakpoint there.
	 */
	NET_TLS_P_CALL = 3,
	NET_TLS_P_AFTER_CALL = 4,
};
#define NET_TLS_COOKIE(fn, probe) ((__u64)(fn) | (__u64)(probe) << 8)

NET_ASSERT_SIZE(struct net_event, 176);
NET_ASSERT_SIZE(struct net_lost, 24);
NET_ASSERT_SIZE(struct net_target, 16);
NET_ASSERT_SIZE(struct net_cap, 8);

#endif
