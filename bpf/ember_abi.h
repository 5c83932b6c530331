/*
 * The ABI shared by ember's BPF programs, the collector and the analyzer:
 * BPF map keys/values, counter ids, and the records the collector writes into
 * the shared-memory ring.  Fixed-width types only, no pointers, explicit
 * padding; every size is checked at compile time on both sides.
 */
#ifndef EMBER_BPF_ABI_H
#define EMBER_BPF_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define EMBER_ABI_VERSION 12
#define EMBER_MAX_STACK_DEPTH 127 /* kernel.perf_event_max_stack default */
#define EMBER_COMM_LEN 16

/* What a profiling task samples. Values are stable: they cross processes. */
enum ember_task_kind {
	EMBER_TASK_ONCPU = 1,
	EMBER_TASK_OFFCPU = 2,
	EMBER_TASK_MEM = 3,
	EMBER_TASK_NETWORK = 4,  /* socket calls: bpf/net.bpf.c, events in bpf/net_abi.h */
	EMBER_TASK_THREADS = 5,  /* what every thread did: bpf/threads.bpf.c, aggregates in bpf/threads_abi.h */
};

/*
 * Value of the "targets" map (key: tgid): the kinds of task that want the
 * process (bit 1 << enum ember_task_kind) and its off-CPU task's minimum
 * block time, so that each off-CPU task keeps its own.
 */
struct target_val {
	__u32 mask;
	__u32 threads_probes;   /* a thread-profiling task's events: THREAD_P_* (bpf/threads_abi.h) */
	__u64 offcpu_min_ns;
	__u64 threads_stack_ns; /* ... its calls at least this long carry their stack */
};

/* Key of the in-kernel stack aggregation: one entry per (process, stacks). */
struct stack_key {
	__u32 tgid;
	__s32 kstack_id; /* < 0: no kernel stack (sample taken in user mode) */
	__s32 ustack_id; /* < 0: user stack unavailable */
	__u32 kind;      /* enum ember_task_kind */
	char comm[EMBER_COMM_LEN]; /* group leader's comm: the flame graph's root frame */
	__u64 uhash;     /* != 0: the user stack was walked with unwind tables, in "hstacks" by this hash */
};

struct stack_val {
	__u64 count;  /* samples / switches / faults */
	__u64 weight; /* off-CPU: blocked ns; otherwise equal to count */
};

/*
 * Every place a BPF program gives up increments one of these (per-CPU array
 * "counters"); the collector sums them into its stats.  Append only.
 */
enum ember_bpf_counter {
	BPF_CNT_SAMPLES = 0,      /* samples of target processes */
	BPF_CNT_KSTACK_ERR,       /* kernel stack walk failed (other than "user mode") */
	BPF_CNT_USTACK_ERR,       /* user stack walk failed */
	BPF_CNT_STACKMAP_FULL,    /* stack map full or hash collision: stack lost */
	BPF_CNT_AGG_FULL,         /* aggregation map full: sample lost */
	BPF_CNT_OFFCPU_SWITCHES,  /* switch-outs of target threads */
	BPF_CNT_OFFCPU_START_FULL,/* start map full: a block was not timed */
	BPF_CNT_OFFCPU_BELOW_MIN, /* blocks shorter than the minimum (filtered, not lost) */
	BPF_CNT_HSTACK_FULL,      /* hashed-stack map could not take a new stack */
	BPF_CNT_FAULTS,           /* page faults of target processes */
	BPF_CNT_OFFCPU_FP_HITS,   /* switch-outs that reused the thread's last stacks */
	BPF_CNT_UNWIND_STACKS,    /* user stacks walked with unwind tables (bpf/unwind_abi.h) */
	BPF_CNT_UNWIND_COMPLETE,  /* ... that reached the outermost frame (_start, thread start) */
	BPF_CNT_UNWIND_FP_FRAMES, /* frames found through frame pointers, in those walks */
	BPF_CNT_UNWIND_READ_ERR,  /* walks that ended on an unreadable user stack word */
	BPF_CNT_UNWIND_TRUNCATED, /* walks cut at EMBER_MAX_STACK_DEPTH frames */
	BPF_CNT_OFFCPU_TIMED,     /* switch-ins that ended a timed block (the rest: filtered or aggregated) */
	BPF_CNT_OFFCPU_EXITS,     /* a target thread's last switch-out (TASK_DEAD): its entry removed, no block */
	BPF_CNT_OFFCPU_TID_REUSED,/* a switch-in whose start was another process's thread (its tid reused): dropped */
	BPF_CNT_OFFCPU_STACK_ERR, /* off-CPU stack walks that failed (that stack empty in the block's key) */
	BPF_CNT_OFFCPU_STALE,     /* cached stacks gone from the stack map: walked again */
	BPF_CNT_OFFCPU_UNTIMED,   /* blocks whose end no switch-in showed, ended by the thread's run time at its next switch-out */
	BPF_CNT_OFFCPU_LOST,      /* ... where that run time did not fit in the block: lost */
	BPF_CNT_THREAD_CALLS,     /* traced calls of target threads that ended (bpf/threads.bpf.c) */
	BPF_CNT_THREAD_ONCPU,     /* on-CPU periods of target threads that ended */
	BPF_CNT_THREAD_AGG_FULL,  /* calls or periods lost: the aggregation map had no room */
	BPF_CNT_THREAD_KEYS_CAP,  /* ... lost: their thread had THREAD_MAX_KEYS aggregates this window */
	BPF_CNT_THREAD_CALL_FULL, /* calls not timed: the in-flight map had no room */
	BPF_CNT_THREAD_UNTIMED,   /* on-CPU periods whose start was not seen (running when the task began): started at the slice's run time */
	BPF_CNT_THREAD_STACKS,    /* user stacks walked for calls */
	BPF_CNT_THREAD_STACK_HITS,/* calls that reused their thread's last stack (same place) */
	BPF_CNT_PY_STACKS,        /* user stacks of Python processes walked for Python frames (bpf/py_abi.h) */
	BPF_CNT_PY_FRAMES,        /* ... Python frames they gave */
	BPF_CNT_PY_NO_THREAD,     /* ... threads without a Python thread state (not started by Python, or not found) */
	BPF_CNT_PY_READ_ERR,      /* ... walks stopped by an unreadable frame */
	BPF_CNT_PY_TRUNCATED,     /* ... walks cut at PY_MAX_FRAMES or the stack's room */
	BPF_CNT_PY_CODES_FULL,    /* code objects whose names found no room in py_codes */
	BPF_CNT_PY_NS,            /* ns spent walking Python frames (two clock reads a walk) */
	BPF_CNT_MAX,
};

/*
 * Off-CPU stacks must outlive flush windows (a thread may sleep for minutes
 * between switch-out, where its stack is taken, and switch-in, where its
 * blocked time is known), so they are kept by content hash in an LRU map
 * rather than by stack id in the per-window stack maps.
 */
struct hstack {
	__u32 n;
	__u32 pad;
	__u64 ips[EMBER_MAX_STACK_DEPTH];
};

/*
 * Per target thread: when and where it last blocked.  The entry outlives the
 * block (ts = 0 once timed) so that the next block at the same place can reuse
 * the stacks: fp fingerprints "the same place" from the user registers, the
 * syscall and its first argument and the first return address, all far
 * cheaper to read than two full stack walks.
 */
struct offcpu_start {
	__u64 ts;
	__u64 khash;
	__u64 uhash;
	__u64 fp;
	__u32 tgid;
	__u32 pad;
	__u64 min_ns;  /* the process's off-CPU minimum block, taken at switch-out */
	char comm[EMBER_COMM_LEN];
	/* The place before: threads often alternate between two (block in read,
	 * get preempted in write), which would thrash a single entry. */
	__u64 prev_fp, prev_khash, prev_uhash;
};

struct offcpu_key {
	__u32 tgid;
	__u32 kind;
	__u64 khash; /* 0 = no stack */
	__u64 uhash;
	char comm[EMBER_COMM_LEN];
};

/* ------------------------------------------------------------------------
 * Ring records (collector -> analyzer).  Each record is one of these types
 * with the ring's own length header in front.
 */
enum ember_rec_type {
	EMBER_REC_STACK = 1,      /* struct ember_rec_stack */
	EMBER_REC_WINDOW = 2,     /* struct ember_rec_window: end of one drain */
	EMBER_REC_NET = 3,        /* struct net_event (bpf/net_abi.h) then its payload */
	EMBER_REC_THREAD = 4,     /* struct ember_rec_thread (bpf/threads_abi.h) then its strings and stack */
	EMBER_REC_PYCODE = 5,     /* struct ember_rec_pycode: names of Python frames (bpf/py_abi.h) a later stack holds */
};

/* One aggregated stack: nkern kernel ips then nuser user ips, innermost first. */
struct ember_rec_stack {
	__u32 kind;   /* enum ember_task_kind */
	__u32 tgid;
	__u64 count;
	__u64 weight;
	__u16 nkern;
	__u16 nuser;
	__u32 flags;  /* EMBER_STACK_F_* */
	char comm[EMBER_COMM_LEN];
	__u64 ips[];  /* nkern + nuser entries */
};
#define EMBER_STACK_F_KSTACK_LOST 1u /* kernel stack id referenced but not found */
#define EMBER_STACK_F_USTACK_LOST 2u

/*
 * The names of a Python code object of tgid, sent once per window before the
 * first stack that holds it (PY_IS_FRAME ips).  Bytes from the target's
 * memory: NUL-terminated within their arrays when read whole, untrusted.
 */
struct ember_rec_pycode {
	__u64 addr;
	__u32 tgid;
	__s32 firstlineno;
	char filename[96];
	char qualname[96];
};

/*
 * Sent after each drain of the in-kernel maps, for every kind drained.  A
 * drain's stacks and its markers lie together in a shard's ring, nothing
 * between them; the last marker carries EMBER_WINDOW_F_LAST.
 */
#define EMBER_WINDOW_F_LAST 1u
struct ember_rec_window {
	__u32 kind;
	__u32 flags;        /* EMBER_WINDOW_F_* */
	__u64 start_ns;     /* CLOCK_REALTIME ns */
	__u64 end_ns;
	__u64 stacks;       /* records sent in this window */
	__u64 ring_drops;   /* records of this window that did not fit in the ring */
};

#define EMBER_ASSERT_SIZE(t, n) _Static_assert(sizeof(t) == (n), #t " changed size: bump EMBER_ABI_VERSION")
EMBER_ASSERT_SIZE(struct stack_key, 40);
EMBER_ASSERT_SIZE(struct stack_val, 16);
EMBER_ASSERT_SIZE(struct hstack, 8 + 8 * EMBER_MAX_STACK_DEPTH);
EMBER_ASSERT_SIZE(struct target_val, 24);
EMBER_ASSERT_SIZE(struct offcpu_start, 88);
EMBER_ASSERT_SIZE(struct offcpu_key, 40);
EMBER_ASSERT_SIZE(struct ember_rec_stack, 48);
EMBER_ASSERT_SIZE(struct ember_rec_window, 40);
EMBER_ASSERT_SIZE(struct ember_rec_pycode, 16 + 2 * 96);

#endif
