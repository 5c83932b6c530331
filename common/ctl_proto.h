/*
 * The collector's control protocol: typed, versioned, fixed-layout frames on
 * a unix SOCK_SEQPACKET socket (one frame per packet, so framing cannot be
 * desynchronised).  Requests are even, answers odd (= request + 1).  Every
 * frame is { struct ctl_hdr; payload } and every payload has a fixed size
 * except ATTACH's pid list and UNWIND_ROWS' rows, which are bounded.  Answers may carry file
 * descriptors (SCM_RIGHTS): ring fds on HELLO, a read-only file on OPEN_*.
 *
 * ctl__decode() is the only parser of this protocol; the collector runs it on
 * bytes from the less-privileged analyzer, so it validates everything and is
 * fuzzed (tests/fuzz/fuzz_ctl_proto.c).
 */
#ifndef EMBER_CTL_PROTO_H
#define EMBER_CTL_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/net_abi.h"
#include "bpf/unwind_abi.h"
#include "bpf/py_abi.h"
#include "common/counters.h"

#define CTL_MAGIC 0x454d4252u /* "EMBR" */
#define CTL_VERSION 4
#define CTL_MAX_FRAME 8192
#define CTL_MAX_PIDS 1024
#define CTL_MAX_FDS 3

enum ctl_type {
	CTL_REQ_HELLO = 2,          CTL_ANS_HELLO = 3,
	CTL_REQ_ATTACH = 4,         CTL_ANS_ATTACH = 5,
	CTL_REQ_DETACH = 6,         CTL_ANS_DETACH = 7,
	CTL_REQ_OPEN_MAPS = 8,      CTL_ANS_OPEN_MAPS = 9,
	CTL_REQ_OPEN_FILE = 10,     CTL_ANS_OPEN_FILE = 11,
	CTL_REQ_OPEN_KALLSYMS = 12, CTL_ANS_OPEN_KALLSYMS = 13,
	CTL_REQ_STATS = 14,         CTL_ANS_STATS = 15,
	CTL_REQ_OPEN_PERF_MAP = 16, CTL_ANS_OPEN_PERF_MAP = 17,
	CTL_REQ_OPEN_DEBUG_BUILD_ID = 18, CTL_ANS_OPEN_DEBUG_BUILD_ID = 19,
	CTL_REQ_OPEN_DEBUGLINK = 20, CTL_ANS_OPEN_DEBUGLINK = 21,
	CTL_REQ_UNWIND_TABLE = 22,  CTL_ANS_UNWIND_TABLE = 23,
	CTL_REQ_UNWIND_ROWS = 24,   CTL_ANS_UNWIND_ROWS = 25,
	CTL_REQ_UNWIND_PROC = 26,   CTL_ANS_UNWIND_PROC = 27,
	CTL_REQ_START = 28,         CTL_ANS_START = 29,
	CTL_REQ_TLS_ATTACH = 30,    CTL_ANS_TLS_ATTACH = 31,
	CTL_REQ_NET_CAPS = 32,      CTL_ANS_NET_CAPS = 33,
	CTL_REQ_PY_PROC = 34,       CTL_ANS_PY_PROC = 35,
	CTL_REQ_JAVA_ATTACH = 36,   CTL_ANS_JAVA_ATTACH = 37,
	CTL_TYPE_MAX = 38,
};

struct ctl_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t len;   /* payload bytes after this header */
	uint32_t seq;   /* echoed in the answer */
};

struct ctl_hello { uint32_t shard; uint32_t abi_version; };
struct ctl_hello_ans {
	int32_t err; uint32_t nshards; uint64_t ring_size;
	/* fds: ring data, consumer position, wake socket (common/shm_ring.h) */
};

/*
 * The bounds of a task's parameters, in one place: the configuration table
 * (profiling.task.*), the CLI's options, the analyzer and the collector all
 * check against these.  1 ms keeps sampling on every CPU affordable (a sample
 * costs a few us of BPF time); 1 s is the longest period that still gives a
 * flame graph in a profile of minutes.
 */
#define CTL_PERIOD_MIN_NS    1000000ull           /* on-CPU sampling period: 1 ms .. */
#define CTL_PERIOD_MAX_NS    1000000000ull        /* .. 1 s */
#define CTL_MIN_BLOCK_MAX_NS 3600000000000ull     /* off-CPU minimum block: 0 .. 1 h */

struct ctl_attach {
	uint64_t task_id;
	uint32_t kind;        /* enum ember_task_kind */
	uint32_t npids;       /* 1..CTL_MAX_PIDS */
	uint64_t period_ns;   /* on-CPU sampling period, CTL_PERIOD_MIN_NS..CTL_PERIOD_MAX_NS */
	uint64_t min_block_ns;/* off-CPU: blocks shorter than this are counted, not profiled */
	uint32_t flags;       /* CTL_ATTACH_F_* */
	uint32_t probes;      /* threads: the events it records (THREAD_P_*, bpf/threads_abi.h); min_block_ns: its stack threshold */
	uint32_t pids[];      /* npids entries */
};
/* Network: the first NET_PREFIX_PAYLOAD bytes of each call's data only (heads, for monitors). */
#define CTL_ATTACH_F_PREFIX 1u
/*
 * Stacks: attached, but the processes are not sampled until START (payload
 * struct ctl_detach, answer struct ctl_err_ans).  Meanwhile the analyzer may
 * use the fd broker and send unwind tables for them, so that the first
 * samples already walk with their tables.
 */
#define CTL_ATTACH_F_HOLD 2u
/*
 * Network: the packets under each call too (net_event.l2_*): two more
 * programs, on every packet the host sends or a socket reads, attached only
 * while a task with this flag runs.
 */
#define CTL_ATTACH_F_L2 4u
#define CTL_ATTACH_F_ALL (CTL_ATTACH_F_PREFIX | CTL_ATTACH_F_HOLD | CTL_ATTACH_F_L2)
enum ctl_attach_point { CTL_AP_NONE = 0, CTL_AP_PERF_CPU_CLOCK = 1, CTL_AP_TP_BTF = 2,
	CTL_AP_RAW_TP = 3, CTL_AP_TRACEPOINT = 4, CTL_AP_PERF_PAGE_FAULTS = 5,
	CTL_AP_SOCKET = 6 /* network: tp_btf at the socket layer, no syscall tracepoint */ };
struct ctl_attach_ans { int32_t err; uint32_t attach_point; uint32_t npids_ok; uint32_t pad; };

struct ctl_detach { uint64_t task_id; };
struct ctl_err_ans { int32_t err; uint32_t pad; }; /* DETACH, OPEN_* answers (+1 fd on success) */

struct ctl_open_maps { uint32_t pid; uint32_t pad; };
struct ctl_open_file { uint32_t pid; uint32_t pad; uint64_t start; uint64_t end; };
/*
 * Symbolizer depth.  The collector builds every path itself from fixed
 * patterns (common/debugpath.h) under /proc/<pid>/root; the analyzer only
 * names a pid, a build id, or a mapping plus a plain file name.
 */
struct ctl_open_perf_map { uint32_t pid; uint32_t pad; };            /* /tmp/perf-<nspid>.map */
#define CTL_MAX_BUILD_ID 64
struct ctl_open_debug_build_id { uint32_t pid; uint32_t len; uint8_t build_id[CTL_MAX_BUILD_ID]; }; /* len 2..64 */
#define CTL_MAX_LINK_NAME 256
/* name: NUL-terminated basename (<= 255 bytes, printable, no '/', not "." or ".."). */
struct ctl_open_debuglink { uint32_t pid; uint32_t pad; uint64_t start; uint64_t end; char name[CTL_MAX_LINK_NAME]; };

/*
 * Unwind tables (bpf/unwind_abi.h): the analyzer builds them, the collector
 * stores them in BPF maps.  TABLE finds a table by key (a hash of the file's
 * build id) or, with nrows, reserves room for a new one; ROWS fills it in
 * order, in chunks; PROC gives a target process its executable mappings,
 * each with a complete table or UNWIND_NO_TABLE.  ROWS and PROC answer with
 * struct ctl_err_ans.
 */
struct ctl_unwind_table { uint64_t key; uint32_t nrows; uint32_t pad; }; /* nrows 0: look up only */
struct ctl_unwind_table_ans { int32_t err; uint32_t id; uint32_t complete; uint32_t pad; };
#define CTL_UNWIND_ROWS_MAX 1000
struct ctl_unwind_rows {
	uint32_t id;
	uint32_t first;   /* index of rows[0] in the table: chunks come in order */
	uint32_t n;       /* 1..CTL_UNWIND_ROWS_MAX */
	uint32_t pad;
	struct unwind_row rows[];
};
struct ctl_unwind_map { uint64_t start, end, bias; uint32_t table; uint32_t pad; };
struct ctl_unwind_proc { uint32_t pid; uint32_t nmaps; struct ctl_unwind_map maps[UNWIND_MAX_MAPS]; };
_Static_assert(sizeof(struct ctl_hdr) + sizeof(struct ctl_unwind_rows) + CTL_UNWIND_ROWS_MAX * sizeof(struct unwind_row) <=
	       CTL_MAX_FRAME, "a full UNWIND_ROWS frame exceeds CTL_MAX_FRAME");
_Static_assert(sizeof(struct ctl_hdr) + sizeof(struct ctl_unwind_proc) <= CTL_MAX_FRAME, "UNWIND_PROC exceeds CTL_MAX_FRAME");

/*
 * Python frames (bpf/py_abi.h): pid runs CPython whose runtime state is at
 * proc.runtime, with the layout the analyzer knows for its version; the
 * collector checks the offsets and walks the Python frames of pid's stacks
 * from then on.  proc.runtime 0: stop.  Only for a process a stack task of
 * this analyzer follows.  Answer: struct ctl_err_ans.
 */
struct ctl_py_proc { uint32_t pid; uint32_t pad; struct py_proc proc; };

/*
 * pid maps a libjvm.so: load ember's JVMTI agent into it, if the collector
 * was given one (--java-agent; else -EOPNOTSUPP).  Only for a process a
 * stack task of this analyzer follows.  The answer says the request went to
 * the attacher (0), was made before for this process (-EALREADY), or could
 * not be made; the attach's outcome is counted (java_agent_*) and logged.
 * Answer: struct ctl_err_ans.
 */
struct ctl_java_attach { uint32_t pid; uint32_t pad; };

/*
 * TLS probes (bpf/net_abi.h NET_TLS_*): the analyzer found, in the file pid
 * maps executable at [start, end), the offsets of a TLS library's functions;
 * the collector opens that mapping's file itself (the broker), checks every
 * point, and attaches the TLS program there for network task task_id, which
 * must follow pid.  A file already probed gains an owner, not new probes; the
 * probes go with the last owner.  Answer: struct ctl_err_ans.
 */
#define CTL_TLS_MAX_POINTS 64
struct ctl_tls_point { uint64_t off; uint64_t cookie; };   /* file offset; NET_TLS_COOKIE(fn, probe) */
struct ctl_tls_attach {
	uint64_t task_id;
	uint32_t pid;
	uint32_t npoints;   /* 1..CTL_TLS_MAX_POINTS */
	uint64_t start, end;
	struct ctl_tls_point pts[CTL_TLS_MAX_POINTS];
};
_Static_assert(sizeof(struct ctl_hdr) + sizeof(struct ctl_tls_attach) <= CTL_MAX_FRAME, "TLS_ATTACH exceeds CTL_MAX_FRAME");

/*
 * How much of its connections' calls the network program copies (bpf/net_abi.h
 * struct net_cap): what the analyzer's parsers need, per socket inode.  The
 * collector writes the entries whose process its network tasks of that
 * analyzer's shard follow, with caps of at most NET_MAX_PAYLOAD, and refuses
 * (counts) the others.  Answer: struct ctl_net_caps_ans.
 */
#define CTL_NET_CAPS_MAX 256
struct ctl_net_cap { uint64_t ino; struct net_cap cap; };
struct ctl_net_caps {
	uint32_t n;         /* 1..CTL_NET_CAPS_MAX */
	uint32_t pad;
	struct ctl_net_cap caps[];
};
struct ctl_net_caps_ans { int32_t err; uint32_t written; };
_Static_assert(sizeof(struct ctl_hdr) + sizeof(struct ctl_net_caps) + CTL_NET_CAPS_MAX * sizeof(struct ctl_net_cap) <=
	       CTL_MAX_FRAME, "a full NET_CAPS frame exceeds CTL_MAX_FRAME");

/* Collector counters, by index; names from ctl__stat_name(). Append only. */
enum ctl_stat {
	CTL_STAT_BPF_SAMPLES = 0,
	CTL_STAT_BPF_KSTACK_ERR,
	CTL_STAT_BPF_USTACK_ERR,
	CTL_STAT_BPF_STACKMAP_FULL,
	CTL_STAT_BPF_AGG_FULL,
	CTL_STAT_RING_RECORDS,
	CTL_STAT_RING_DROPS,
	CTL_STAT_RING_DROP_BYTES,
	CTL_STAT_RING_HOSTILE_CONS,
	CTL_STAT_CTL_REQUESTS,
	CTL_STAT_CTL_MALFORMED,
	CTL_STAT_CTL_DENIED,
	CTL_STAT_FD_BROKER_OPENS,
	CTL_STAT_FD_BROKER_REFUSED,
	CTL_STAT_TASKS_ACTIVE,
	CTL_STAT_DRAINS,
	CTL_STAT_STACKS_DRAINED,
	CTL_STAT_STACK_LOST,
	CTL_STAT_ANALYZER_CONNECTS,
	CTL_STAT_BPF_OFFCPU_SWITCHES,
	CTL_STAT_BPF_OFFCPU_START_FULL,
	CTL_STAT_BPF_OFFCPU_BELOW_MIN,
	CTL_STAT_BPF_HSTACK_FULL,
	CTL_STAT_BPF_FAULTS,
	CTL_STAT_BPF_OFFCPU_FP_HITS,
	CTL_STAT_NET_CALLS,            /* from here: network events (bpf/net_abi.h counters) */
	CTL_STAT_NET_EVENTS,
	CTL_STAT_NET_RINGBUF_FULL,
	CTL_STAT_NET_INFLIGHT_FULL,
	CTL_STAT_NET_TRUNCATED,
	CTL_STAT_NET_COPY_FAILED,
	CTL_STAT_NET_NOT_SOCKET,
	CTL_STAT_NET_SOCKS_FULL,
	CTL_STAT_NET_NO_BUDGET,
	CTL_STAT_NET_LOST_FULL,
	CTL_STAT_NET_FORKS,
	CTL_STAT_NET_FORKS_FULL,
	CTL_STAT_NET_FORWARDED,        /* written to the analyzers' rings */
	CTL_STAT_NET_RING_DROPS,       /* ... dropped there: ring full (their data becomes a gap) */
	CTL_STAT_NET_RING_UNTRACKED,   /* ... of which the socket could not be remembered */
	CTL_STAT_BPF_UNWIND_STACKS,    /* from here: unwinding with tables */
	CTL_STAT_BPF_UNWIND_COMPLETE,
	CTL_STAT_BPF_UNWIND_FP_FRAMES,
	CTL_STAT_BPF_UNWIND_READ_ERR,
	CTL_STAT_BPF_UNWIND_TRUNCATED,
	CTL_STAT_BPF_OFFCPU_TIMED,
	CTL_STAT_UNWIND_TABLES,        /* tables held */
	CTL_STAT_UNWIND_ROWS,          /* rows held (8 bytes each) */
	CTL_STAT_UNWIND_ROWS_MAX,      /* the rows' map size (profiling.unwind.max_rows) */
	CTL_STAT_UNWIND_PROCS,         /* processes walked with tables */
	CTL_STAT_UNWIND_REFUSED,       /* tables or processes refused for room: frame pointers there */
	CTL_STAT_NET_TLS_CALLS,        /* from here: TLS (bpf/net_abi.h NET_CNT_TLS_*, then the collector's) */
	CTL_STAT_NET_TLS_NO_ENTRY,
	CTL_STAT_NET_TLS_INFLIGHT_FULL,
	CTL_STAT_NET_TLS_UNBOUND,
	CTL_STAT_NET_TLS_WIRE,
	CTL_STAT_NET_L2_PKTS,
	CTL_STAT_NET_PEEKS,
	CTL_STAT_TLS_FILES,            /* library files probed */
	CTL_STAT_TLS_POINTS,           /* probe points attached (entries, returns, RET instructions) */
	CTL_STAT_TLS_REFUSED,          /* TLS_ATTACH requests refused, all reasons (CTL_STAT_TLS_REFUSED_*, counts, room, attach errors) */
	CTL_STAT_NET_PEERS_ACROSS,     /* events told their peer process, followed by another analyzer */
	CTL_STAT_NET_ENDPOINTS_FULL,   /* local endpoints not remembered for that (table full) */
	CTL_STAT_FD_BROKER_MISSING,    /* from here: the fd broker's answers by reason (collector/broker.h) */
	CTL_STAT_FD_BROKER_SYMLINK,
	CTL_STAT_FD_BROKER_NOT_REGULAR,
	CTL_STAT_FD_BROKER_OWNER,
	CTL_STAT_FD_BROKER_STALE,
	CTL_STAT_FD_BROKER_NOT_TARGET, /* a pid no task of the asking analyzer targets */
	CTL_STAT_FD_BROKER_KALLSYMS,   /* kallsyms asked for without a stack task */
	CTL_STAT_ATTACH_REFUSED_OWN,   /* from here: the target policy (collector/target_policy.h) */
	CTL_STAT_ATTACH_REFUSED_KTHREAD,
	CTL_STAT_ATTACH_REFUSED_USER,
	CTL_STAT_ATTACH_REFUSED_CGROUP,
	CTL_STAT_TLS_REFUSED_COOKIE,   /* from here: TLS_ATTACH refused for a point (collector/tls_verify.h): its function or side unknown */
	CTL_STAT_TLS_REFUSED_FILE,     /* ... the file not an x86-64 ELF file the collector reads */
	CTL_STAT_TLS_REFUSED_SEGMENT,  /* ... not in an executable segment's file bytes */
	CTL_STAT_TLS_REFUSED_FUNCTION, /* ... its function not found by name in the file */
	CTL_STAT_TLS_REFUSED_OUTSIDE,  /* ... outside that function */
	CTL_STAT_TLS_REFUSED_BOUNDARY, /* ... not at an instruction start */
	CTL_STAT_TLS_REFUSED_INSN,     /* ... not the instruction its probe kind goes on */
	CTL_STAT_PERF_CPUS_UNSAMPLED,  /* online CPUs without their on-CPU or memory event (came online after start) */
	CTL_STAT_TLS_UNSUPPORTED,      /* 1: this kernel has no uprobe.multi links, TLS plaintext is not captured */
	CTL_STAT_TLS_PROGRAMS,         /* of CTL_STAT_TLS_FILES: targets' own programs, probed in every process running them */
	CTL_STAT_TLS_VERIFY_SKIPPED,   /* TLS_ATTACH requests whose points were checked in that file before */
	CTL_STAT_TLS_MERGED,           /* per-process probes replaced by their program's */
	CTL_STAT_BPF_OFFCPU_EXITS,     /* from here: off-CPU (bpf/ember_abi.h BPF_CNT_OFFCPU_*) */
	CTL_STAT_BPF_OFFCPU_TID_REUSED,
	CTL_STAT_BPF_OFFCPU_STACK_ERR,
	CTL_STAT_BPF_OFFCPU_STALE,
	CTL_STAT_BPF_OFFCPU_UNTIMED,
	CTL_STAT_BPF_OFFCPU_LOST,
	CTL_STAT_TLS_GONE,             /* TLS_ATTACH requests for a process that exited first (not refused) */
	CTL_STAT_NET_SL_NO_SYSCALL,    /* NET_CNT_SL_NO_SYSCALL */
	CTL_STAT_NET_SOCKET_LAYER,     /* 1 while the network program captures at the socket layer, 0 at the syscall layer */
	CTL_STAT_NET_CAPPED,           /* NET_CNT_CAPPED */
	CTL_STAT_NET_CAPS_WRITTEN,     /* connection caps written for the analyzers (CTL_REQ_NET_CAPS) */
	CTL_STAT_NET_CAPS_REFUSED,     /* ... refused: a process none of the shard's network tasks follows, a cap over NET_MAX_PAYLOAD */
	CTL_STAT_NET_CAPS_FAILED,      /* ... that could not be written (the map update failed) */
	CTL_STAT_BPF_THREAD_CALLS,     /* from here: thread profiling (bpf/ember_abi.h BPF_CNT_THREAD_*) */
	CTL_STAT_BPF_THREAD_ONCPU,
	CTL_STAT_BPF_THREAD_AGG_FULL,
	CTL_STAT_BPF_THREAD_KEYS_CAP,
	CTL_STAT_BPF_THREAD_CALL_FULL,
	CTL_STAT_BPF_THREAD_UNTIMED,
	CTL_STAT_BPF_THREAD_STACKS,
	CTL_STAT_BPF_THREAD_STACK_HITS,
	CTL_STAT_THREAD_EVENTS,        /* thread aggregates sent to the analyzers */
	CTL_STAT_THREAD_RING_DROPS,    /* ... that did not fit in their ring */
	CTL_STAT_THREAD_STACKS_LOST,   /* ... whose stack was gone from the stack map */
	CTL_STAT_THREAD_PATHS_STALE,   /* ... whose fd named another file by the time it was read: no path */
	CTL_STAT_THREAD_CALLS_BEFORE,  /* calls threads were in as their task started: timed from its start */
	CTL_STAT_BPF_PY_STACKS,        /* from here: Python frames (bpf/ember_abi.h BPF_CNT_PY_*, bpf/py_abi.h) */
	CTL_STAT_BPF_PY_FRAMES,
	CTL_STAT_BPF_PY_NO_THREAD,
	CTL_STAT_BPF_PY_READ_ERR,
	CTL_STAT_BPF_PY_TRUNCATED,
	CTL_STAT_BPF_PY_CODES_FULL,
	CTL_STAT_PY_NAMES_LOST,        /* Python frames whose names were gone from py_codes when drained */
	CTL_STAT_BPF_PY_NS,            /* BPF_CNT_PY_NS */
	CTL_STAT_JAVA_REQUESTED,       /* from here: the Java agent (collector/jattach.h) */
	CTL_STAT_JAVA_LOADED,
	CTL_STAT_JAVA_FAILED,
	CTL_STAT_JAVA_DROPPED,
	CTL_STAT_MAX,
};
struct ctl_stats_ans { int32_t err; uint32_t n; uint64_t v[CTL_STAT_MAX]; };

/*
 * Their names and natures (common/counters.h), by enum ctl_stat: whoever
 * publishes the collector's counters (the first analyzer) loops over it.
 */
extern const struct counter_def ctl_stat_counters[CTL_STAT_MAX];
const char *ctl__stat_name(unsigned idx);

/*
 * The counters (CTL_STAT_*) of what a kind's path through the collector can
 * lose, and of the stacks it walks only in part (the sample is kept, under a
 * shorter stack): what `ember profile` compares before and after a task.
 * A kind (enum ember_task_kind) with no such path gets empty lists.
 */
struct ctl_kind_losses {
	const unsigned *lost[2];    /* two lists: a family's common losses, then the kind's own */
	size_t nlost[2];
	const unsigned *partial;
	size_t npartial;
};
void ctl__kind_losses(uint32_t kind, struct ctl_kind_losses *ret);
/* "perf_event:cpu-clock", "tp_btf", ... ("none" for CTL_AP_NONE or unknown). */
const char *ctl__attach_point_name(uint32_t ap);
const char *ctl__type_name(unsigned type);

/* A decoded frame; payload points into the caller's buffer. */
struct ctl_msg {
	uint16_t type;
	uint32_t seq;
	const void *payload;
	uint32_t len;
};

/*
 * Validate one received frame buf[0..n): magic, version, known type, exact
 * payload size for the type (ATTACH: bounded pid list matching npids).
 * Returns 0 and fills *ret, or -EBADMSG (form), -EPROTONOSUPPORT (version),
 * -EOPNOTSUPP (unknown type).
 */
int ctl__decode(const void *buf, size_t n, struct ctl_msg *ret);

/* Build a frame into buf (size >= sizeof(hdr)+len); returns its total size or -EMSGSIZE. */
int ctl__encode(void *buf, size_t size, uint16_t type, uint32_t seq, const void *payload, uint32_t len);

/* Send one frame with up to CTL_MAX_FDS fds. Returns 0 or -errno. */
int ctl__send(int sock, uint16_t type, uint32_t seq, const void *payload, uint32_t len,
	      const int *fds, unsigned nfds);
/*
 * Receive one packet into buf; fds received (MSG_CMSG_CLOEXEC) are stored in
 * fds[] (up to max_fds, extra ones closed) and their number in *ret_nfds.
 * Returns the packet length, 0 on EOF, or -errno (-EMSGSIZE if truncated).
 */
int ctl__recv(int sock, void *buf, size_t size, int *fds, unsigned max_fds, unsigned *ret_nfds);

/* Synchronous request/answer (client side).  ans_len must equal the answer size. */
int ctl__call(int sock, uint16_t type, const void *req, uint32_t req_len,
	      uint16_t ans_type, void *ans, uint32_t ans_len, int *fds, unsigned max_fds, unsigned *ret_nfds);

#endif
