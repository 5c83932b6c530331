/*
 * The network program (bpf/net.bpf.c) on the collector's side: load (the
 * socket layer, else the syscall layer's tp_btf variant, else its raw_tp
 * one: decided by loading), attach while at least one network task runs
 * (its programs cost every socket call, or every syscall, of the host),
 * target processes, and the BPF ring buffer of events, drained into the
 * analyzers' rings as they come.  The collector never looks inside an event
 * beyond its fixed header (the tgid that picks the shard).
 */
#ifndef EMBER_COLLECTOR_BPF_NET_H
#define EMBER_COLLECTOR_BPF_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "bpf/net_abi.h"

/* Where the attach chain starts (EMBER_NET_ATTACH): each falls back to the ones after it. */
enum bpf_net_attach {
	BPF_NET_SOCKET = 0,       /* the socket layer (sock_send_length / sock_recv_length, 6.3+), the default */
	BPF_NET_SYSCALL,          /* the syscall layer's tp_btf variant (sys_enter / sys_exit, task storage) */
	BPF_NET_RAW_TP,           /* the syscall layer's raw_tp variant (kernels without BTF trampolines) */
};
struct bpf_net_opts {
	uint32_t max_targets;     /* processes followed at once */
	uint64_t ringbuf_bytes;   /* BPF ring buffer, rounded up to a power of two pages */
	enum bpf_net_attach attach;
};

struct bpf_net;

/* Loads (does not attach).  NULL + errno. */
struct bpf_net *bpf_net__load(const struct bpf_net_opts *o);
/* Attaches (refcounted).  Returns the attach point (CTL_AP_SOCKET, CTL_AP_TP_BTF or CTL_AP_RAW_TP) or -errno. */
int bpf_net__attach(struct bpf_net *n);
void bpf_net__detach(struct bpf_net *n);
/*
 * One more (on) or one fewer task that wants the packets under each call
 * (net_event.l2_*; refcounted): their programs run on every packet the host
 * queues to a device or a socket reads, so only while asked.  0, or -errno
 * (-EOPNOTSUPP: the raw_tp variant, whose calls are not in task storage).
 */
int bpf_net__l2(struct bpf_net *n, bool on);
/* The variant loaded (CTL_AP_SOCKET, CTL_AP_TP_BTF or CTL_AP_RAW_TP), attached or not. */
int bpf_net__attach_point(const struct bpf_net *n);
/*
 * Why the socket layer is not the variant loaded, when it was tried: -ENOENT
 * no cgroup v2 hierarchy is mounted (its recvmsg hooks give a datagram's
 * source), else the load's -errno (a kernel before 6.3 has no
 * sock_send_length).  0 when it loaded or EMBER_NET_ATTACH skipped it.
 */
int bpf_net__socket_error(const struct bpf_net *n);
/*
 * Adds / removes one network task's interest in tgid (the same prefix on
 * both): a prefix task wants NET_PREFIX_PAYLOAD bytes of each call's data;
 * the process's calls carry NET_MAX_PAYLOAD while any other task wants it.
 * 0 or -errno.
 */
int bpf_net__target(struct bpf_net *n, uint32_t tgid, int on, bool prefix);

/* What the program copies of socket ino's calls (bpf/net_abi.h struct net_cap).  0 or -errno. */
int bpf_net__cap(struct bpf_net *n, uint64_t ino, const struct net_cap *cap);
/*
 * Drops the caps of the processes shard's analyzer follows (common/shard.h,
 * a child by its root): a restarted analyzer knows none its predecessor
 * asked for, and asks again what its parsers need.  (A process's caps go
 * by themselves when no task follows it any more: bpf_net__target.)
 */
void bpf_net__caps_clear(struct bpf_net *n, unsigned shard, unsigned nshards);

/*
 * An fd that is readable when the ring buffer is a quarter full (epoll fd of
 * the ring buffer); below that, events wait for bpf_net__consume() on the
 * caller's timer (NET_POLL_NS): one wake-up per batch, not per event.  The
 * events that cannot wait go at once (a process's fork, exit and executable
 * mappings; a connection's first cut call).  A longer period costs less CPU
 * per event (40 ms: 8% less in collector and analyzer together), but the
 * longer batches it drains held the profiled server's throughput no higher
 * and its p99 no lower in side-by-side runs: 10 ms stays.
 */
#define NET_POLL_NS (10 * 1000000ull)
int bpf_net__fd(const struct bpf_net *n);
/* Called for each event: the fixed header then payload bytes, len in all. */
typedef int (*bpf_net_event_fn)(void *ctx, const struct net_event *e, uint32_t len);
/* Delivers what waits.  Returns the number of events or -errno. */
int bpf_net__consume(struct bpf_net *n, bpf_net_event_fn cb, void *ctx);
/*
 * One uprobe.multi link (ret: uretprobe.multi) of the TLS program at cnt file
 * offsets of the file at path (the collector passes /proc/self/fd/N of a file
 * the broker opened), each with its cookie (NET_TLS_COOKIE), for process pid
 * only: the kernel puts the breakpoints in that process's memory alone, so
 * that other processes using the same library never trap (a probe hit costs
 * 6 to 25 us here).  Returns the link's fd (close it to detach) or -errno
 * (-EOPNOTSUPP: the kernel has no uprobe.multi).
 */
int bpf_net__tls_link(struct bpf_net *n, const char *path, const uint64_t *offs, const uint64_t *cookies,
		      uint32_t cnt, bool ret, uint32_t pid);
/* Whether the TLS program loaded (the kernel has uprobe.multi). */
bool bpf_net__has_tls(const struct bpf_net *n);
/* The process a followed child's task named (bpf/net_abi.h net_target.root); 0 for none or not followed. */
uint32_t bpf_net__root(struct bpf_net *n, uint32_t tgid);
/* Whether socket calls look for a TLS call around them (while any TLS link exists). */
void bpf_net__tls_on(struct bpf_net *n, bool on);

/* Sums the per-CPU counters into ret[NET_CNT_MAX]. */
int bpf_net__counters(struct bpf_net *n, uint64_t *ret);

/* Accepts NULL.  Returns NULL. */
struct bpf_net *bpf_net__free(struct bpf_net *n);

#endif
