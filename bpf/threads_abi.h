/*
 * Thread profiling (bpf/threads.bpf.c; gala-gopher's tprofiling): per target
 * thread, its on-CPU periods and the system calls that may block, aggregated
 * in the kernel per (thread, event, fd or futex op) and window.  The
 * collector flips the window's map set once a second (threads_active), waits
 * for the programs that may still write the old set, and turns each of its
 * entries into a ring record (struct ember_rec_thread) for the analyzer.
 * Calls and on-CPU periods still in progress at a task's end are read from
 * the thread state map (struct thread_state).
 */
#ifndef EMBER_BPF_THREADS_ABI_H
#define EMBER_BPF_THREADS_ABI_H

#include "bpf/ember_abi.h"

/* The events a task asks for (struct target_val.threads_probes): gala-gopher's sub-probes. */
enum thread_probe {
	THREAD_P_ONCPU = 1u << 0,  /* oncpu */
	THREAD_P_FILE = 1u << 1,   /* syscall_file: read/write... on files, sync, fsync, fdatasync */
	THREAD_P_NET = 1u << 2,    /* syscall_net: send/recv..., and read/write... on sockets */
	THREAD_P_LOCK = 1u << 3,   /* syscall_lock: futex */
	THREAD_P_SCHED = 1u << 4,  /* syscall_sched: sched_yield, sleeps, waits, select/poll/epoll */
};

/* event.type, and the class of a syscall in the threads_sys map. */
enum thread_ev_type {
	THREAD_EV_NONE = 0,
	THREAD_EV_ONCPU = 1,
	THREAD_EV_FILE = 2,
	THREAD_EV_NET = 3,
	THREAD_EV_LOCK = 4,
	THREAD_EV_SCHED = 5,
	THREAD_EV_RW = 6,   /* a syscall map class only: read/write on an fd, file or net by what the fd is */
};

#define THREAD_CLS_FD 0x80           /* with a class in threads_sys: the call's first argument is an fd */

/* The sub-probes that record an event type or syscall class (the kernel's filter, the collector's seeding). */
static inline __u32 thread_probes_of(__u8 cls)
{
	switch (cls) {
	case THREAD_EV_ONCPU: return THREAD_P_ONCPU;
	case THREAD_EV_FILE: return THREAD_P_FILE;
	case THREAD_EV_NET: return THREAD_P_NET;
	case THREAD_EV_LOCK: return THREAD_P_LOCK;
	case THREAD_EV_SCHED: return THREAD_P_SCHED;
	case THREAD_EV_RW: return THREAD_P_FILE | THREAD_P_NET;
	}
	return 0;
}
#define THREAD_SYSCALLS 512          /* the syscall map's size: x86-64 numbers are below it */
#define THREAD_NR_ONCPU (-1)         /* thread_agg_key.nr of on-CPU periods */
#define THREAD_MAX_KEYS 256          /* aggregates per thread and window; past it, counted (BPF_CNT_THREAD_KEYS_CAP) */

/* futex.op, from the futex command (FUTEX_CMD_MASK): waits and wakes aggregate apart. */
enum thread_futex_op { THREAD_FUTEX_WAIT = 0, THREAD_FUTEX_WAKE = 1, THREAD_FUTEX_OTHER = 2 };

struct thread_agg_key {
	__u32 tid;
	__u32 tgid;
	__s32 nr;    /* the syscall, THREAD_NR_ONCPU */
	__s32 arg;   /* the fd of an fd call, the futex op (enum thread_futex_op), else -1 */
};

#define THREAD_AGG_F_SOCK 1u      /* the fd is a socket: the event is net, sock_* say which */
#define THREAD_AGG_F_OFF 2u       /* its type is not asked for: never reported (it caches the fd's kind) */
#define THREAD_AGG_F_STACK_LOST 4u/* a call long enough to carry a stack had none (walk failed) */
#define THREAD_AGG_F_PATH 8u      /* its file's path is in the set's path map (struct thread_path) */

/*
 * A file's path as the kernel names it at the aggregate's first call: its
 * dentries up to the root of the process's mount tree, crossing mounts;
 * THREAD_PATH_DEPTH components at most (the deeper ones are cut, and the
 * path starts with "..."), each cut at THREAD_PATH_HALF bytes.
 */
#define THREAD_PATH_HALF 256
#define THREAD_PATH_DEPTH 16
struct thread_path {
	char p[2 * THREAD_PATH_HALF];   /* NUL-terminated, at most THREAD_PATH_HALF - 1 characters used */
};

struct thread_agg_val {
	__u64 first_start;  /* ktime ns of the first call's start */
	__u64 last_end;     /* ... the last call's end */
	__u64 total_ns;     /* summed durations */
	__u64 count;
	__u64 max_ns;       /* the longest call */
	__u64 uhash;        /* its user stack in hstacks (0: none, or shorter than the task's threshold) */
	__u64 ino;          /* the fd's file at the aggregate's first call: inode and device, */
	__u32 dev;          /* for the collector to check the path it reads for the fd */
	__u32 flags;        /* THREAD_AGG_F_* */
	__u8 type;          /* enum thread_ev_type */
	__u8 sock_family;   /* AF_INET, AF_INET6, AF_UNIX; 0: not a socket */
	__u8 sock_proto;    /* IPPROTO_TCP, IPPROTO_UDP, 0 */
	__u8 pad;
	__u16 sport, dport; /* host order */
	__u8 saddr[16], daddr[16];  /* IPv4 in the first 4 bytes */
	char comm[EMBER_COMM_LEN];  /* the thread's */
	char pcomm[EMBER_COMM_LEN]; /* its process's (the group leader's): read at the call, the process may be gone at the window's end */
};

/*
 * A target thread's state, one entry per thread (one lookup per program
 * run): its call in progress (entered, not yet returned), its last walked
 * stacks, and its on-CPU period in progress.
 */
struct thread_state {
	__u64 ts;        /* ktime ns at the call's entry; 0: no call in progress */
	__u64 arg0, arg1;
	__u64 uhash;     /* the call's user stack, once walked */
	__u64 fp, fp_uhash;  /* the thread's last walked place and its stack: a repeat reuses it */
	__u64 fp2, fp2_uhash;/* the place before: threads alternate between two (a condition's wait, its mutex) */
	__u64 oncpu_ts;  /* ktime ns its on-CPU period began; 0: none timed */
	__s32 nr;        /* the call's syscall */
	__u32 tgid;
	__u8 cls;        /* its class in threads_sys (enum thread_ev_type | THREAD_CLS_FD) */
	__u8 pad[7];
};

/* A thread's state, as the collector reads it at its task's end. */
struct thread_state_rec {
	__u32 tid;
	__u32 pad;
	struct thread_state st;
};

/* Ring record: one aggregate, then npath bytes of file.path (no NUL), then nuser user ips. */
struct ember_rec_thread {
	__u32 tid;
	__u32 tgid;
	__s32 nr;
	__s32 arg;
	__u64 start_ns;     /* CLOCK_REALTIME ns */
	__u64 end_ns;
	__u64 total_ns;
	__u64 count;
	__u64 max_ns;
	__u32 flags;        /* THREAD_AGG_F_*, THREAD_REC_F_* */
	__u8 type;          /* enum thread_ev_type */
	__u8 sock_family, sock_proto, pad;
	__u16 sport, dport;
	__u16 npath, nuser;
	__u8 saddr[16], daddr[16];
	char comm[EMBER_COMM_LEN];
	char pcomm[EMBER_COMM_LEN]; /* the process's (its group leader's) */
	__u64 ips[];        /* after the path, 8-aligned: nuser entries, innermost first */
};
#define THREAD_REC_F_ONGOING 0x100u   /* a call still in progress at the task's end: end_ns is that end */
#define THREAD_REC_F_PATH_STALE 0x200u/* the fd no longer names the file the call used: no path */
#define THREAD_REC_F_WINDOW 0x400u    /* no aggregate: the end of a window (count: records sent in it) */

EMBER_ASSERT_SIZE(struct thread_agg_key, 16);
EMBER_ASSERT_SIZE(struct thread_path, 512);
EMBER_ASSERT_SIZE(struct thread_agg_val, 136);
EMBER_ASSERT_SIZE(struct thread_state, 88);
EMBER_ASSERT_SIZE(struct thread_state_rec, 96);
EMBER_ASSERT_SIZE(struct ember_rec_thread, 136);

#endif
