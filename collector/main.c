/*
 * ember-collector: the only privileged process.  It creates the ring shards,
 * loads the BPF programs, then drops to the capabilities listed in privs.h and
 * serves the control protocol (collector/ctl_server.h) to the analyzers.  It
 * parses no payload, no protocol, no config: its inputs are fixed-layout
 * control frames and BPF maps.  It never waits on an analyzer: a full ring
 * drops and counts.
 *
 * This file is the set-up, the privilege drop and the loop: one liburing
 * loop drives the listening socket, the analyzer connections, the drain
 * timer, the network events and the signals.  The task table and its kinds
 * are collector/tasks.h and kinds.h, the requests collector/ctl_server.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <liburing.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "bpf/ember_abi.h"
#include "collector/bpf_net.h"
#include "collector/bpf_stacks.h"
#include "collector/broker.h"
#include "collector/collector.h"
#include "collector/jattach.h"
#include "collector/ctl_server.h"
#include "collector/kinds.h"
#include "collector/stack_drain.h"
#include "collector/net_fwd.h"
#include "collector/target_policy.h"
#include "collector/tasks.h"
#include "common/privs.h"
#include "common/cleanup.h"
#include "common/ctl_proto.h"
#include "common/log.h"
#include "common/profile_kind.h"
#include "common/shard.h"
#include "common/shm_ring.h"
#include "common/timeutil.h"

#define COLLECTOR_NICE (-10)
#define COLLECTOR_EXIT_RESTART 75   /* EX_TEMPFAIL: the supervisor starts a new collector */
#define ORPHAN_GRACE_NS (60ull * 1000000000ull)
#define KINDS_MAX 16

enum src_kind { SRC_LISTEN, SRC_CONN, SRC_TIMER, SRC_SIGNAL, SRC_NET, SRC_NET_TIMER, SRC_DRAIN_DONE, SRC_THREADS_TIMER, SRC_JATTACH };

/* One source of the loop's completions. */
struct conn {
	enum src_kind kind;
	int fd;
	struct ctl_conn *cc;        /* SRC_CONN */
};

static struct {
	struct collector col;       /* what the requests work on (collector/collector.h) */
	const char *run_dir;
	uint64_t flush_ns;
	struct kinds_load_opts load;

	struct io_uring ring;
	struct net_fwd *fwd;
	struct kinds_env env;       /* the loaded programs and stores the kinds run on (env.net NULL: no network) */
	struct collector_kind *kinds[KINDS_MAX];
	unsigned nkinds;
	struct stack_drain *drain;  /* the stack kinds' windows */
	struct conn listen_src, timer_src, signal_src, net_src, net_timer_src, drain_src, threads_timer_src, jattach_src;
	const char *java_agent;     /* --java-agent: the JVMTI agent's path (NULL: never loaded) */
	struct jattach *jattach;    /* its attacher (collector/jattach.h) */
	int stop;
	int exit_code;
	char sock_path[108];
} C;

/*
 * libbpf's messages go to our log: warnings as warnings, the rest as debug.
 * While the objects load, a variant that an older kernel refuses is
 * expected (the next one is tried, and the outcome is said in one line):
 * its verifier log is debug then (log_level debug shows it).
 */
static int libbpf_quiet;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	log__vmsg(level == LIBBPF_WARN && !libbpf_quiet ? LOG_LVL_WARN : LOG_LVL_DEBUG, NULL, fmt, ap);
	return 0;
}

static void arm(struct conn *src)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&C.ring);
	if (!sqe) {
		io_uring_submit(&C.ring);
		sqe = io_uring_get_sqe(&C.ring);
	}
	io_uring_prep_poll_add(sqe, src->fd, POLLIN);
	io_uring_sqe_set_data(sqe, src);
}

/* ---- network events: forwarded as they come ---------------------------------- */

static int on_net_event(void *ctx, const struct net_event *e, uint32_t len)
{
	(void)ctx;
	return net_fwd__event(C.fwd, e, len);
}

/*
 * wake: wake the analyzers that sleep on what was forwarded.  Otherwise (a
 * batch the BPF ring buffer's fill level woke us for, about a thousand a
 * second under load) an analyzer is woken only once an eighth of its ring
 * waits, and the network timer's next batch wakes it for the rest: a
 * wake-up costs both processes more than a batch's records.
 */
static void forward_net(bool wake)
{
	int n;

	if (!C.env.net)
		return;
	n = bpf_net__consume(C.env.net, on_net_event, NULL);
	if (n < 0)
		log_warn("reading the network events failed: %s", strerror(-n));
	if (wake)
		net_fwd__notify(C.fwd);
	else
		net_fwd__publish(C.fwd);
}

/* The network events' timer runs while a network task is attached, and only then. */
static void net_timer_update(void)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	if (tasks__count(C.col.tasks, profile_kind__mask(PROFILE_KIND_NETWORK))) {
		its.it_interval.tv_nsec = (long)NET_POLL_NS;
		its.it_value.tv_nsec = (long)NET_POLL_NS;
	}
	if (C.env.net) {
		timerfd_settime(C.net_timer_src.fd, 0, &its, NULL);
		/* A stopped timer wakes nobody: what waits is announced now. */
		if (C.fwd)
			net_fwd__notify(C.fwd);
	}
}

/* Thread profiling's windows: a second each, while a thread task is attached, and only then. */
static void threads_timer_update(void)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };

	if (C.threads_timer_src.fd < 0)
		return;
	if (tasks__count(C.col.tasks, profile_kind__mask(PROFILE_KIND_THREADS))) {
		its.it_interval.tv_sec = 1;
		its.it_value.tv_sec = 1;
	}
	timerfd_settime(C.threads_timer_src.fd, 0, &its, NULL);
}

static void java_attached(void *ctx, uint32_t pid, int err);

/* Every kind's counters (collector_hooks.collect_stats). */
static void collect_kind_stats(void *ctx, uint64_t *stats)
{
	(void)ctx;
	for (unsigned k = 0; k < C.nkinds; k++)
		if (C.kinds[k] && C.kinds[k]->counters)
			C.kinds[k]->counters(C.kinds[k]->impl, stats);
	if (C.jattach) {
		uint64_t j[JATTACH_STAT_MAX];

		jattach__poll(C.jattach, java_attached, NULL);
		jattach__stats(C.jattach, j);
		stats[CTL_STAT_JAVA_REQUESTED] = j[JATTACH_REQUESTED];
		stats[CTL_STAT_JAVA_LOADED] = j[JATTACH_LOADED];
		stats[CTL_STAT_JAVA_FAILED] = j[JATTACH_FAILED];
		stats[CTL_STAT_JAVA_DROPPED] = j[JATTACH_DROPPED];
	}
}

/* The table changed: the network timer runs while a network task does. */
static void tasks_changed(void *ctx)
{
	(void)ctx;
	net_timer_update();
	threads_timer_update();
}

static void hook_drain(void *ctx)
{
	(void)ctx;
	stack_drain__sync(C.drain);
	forward_net(true);
}

static int hook_net_cap(void *ctx, uint64_t ino, const struct net_cap *cap)
{
	(void)ctx;
	return C.env.net ? bpf_net__cap(C.env.net, ino, cap) : -EOPNOTSUPP;
}

static void hook_net_caps_clear(void *ctx, unsigned shard)
{
	(void)ctx;
	if (C.env.net)
		bpf_net__caps_clear(C.env.net, shard, C.col.nshards);
}

static int hook_py_proc(void *ctx, uint32_t pid, const struct py_proc *p)
{
	(void)ctx;
	/* Without bpf_loop (before 5.17) no user stack is walked by tables, and no Python frame either. */
	if (!C.env.bpf || bpf_stacks__legacy(C.env.bpf))
		return -EOPNOTSUPP;
	return bpf_stacks__py_proc(C.env.bpf, pid, p);
}

static int hook_java_attach(void *ctx, uint32_t pid)
{
	(void)ctx;
	return C.jattach ? jattach__request(C.jattach, pid) : -EOPNOTSUPP;
}

static void java_attached(void *ctx, uint32_t pid, int err)
{
	(void)ctx;
	if (err)
		log_warn("java agent not loaded into pid %u: %s", pid, jattach__strerror(err));
	else
		log_info("java agent loaded into pid %u", pid);
}

static const struct collector_hooks hooks = { .drain = hook_drain, .tasks_changed = tasks_changed,
					      .collect_stats = collect_kind_stats, .net_cap = hook_net_cap,
					      .net_caps_clear = hook_net_caps_clear, .py_proc = hook_py_proc,
					      .java_attach = hook_java_attach };

static void on_accept(void)
{
	for (;;) {
		int fd = accept4(C.listen_src.fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct ctl_conn *cc;
		struct conn *c;

		if (fd < 0)
			return;
		cc = ctl_server__accept(&C.col, fd);
		if (!cc)
			continue;
		c = calloc(1, sizeof(*c));
		if (!c) {
			ctl_server__close(&C.col, cc);
			continue;
		}
		c->kind = SRC_CONN;
		c->fd = ctl_server__fd(cc);
		c->cc = cc;
		arm(c);
	}
}

static void on_timer(void)
{
	uint64_t ticks, now = timeutil__now_ns(CLOCK_MONOTONIC);

	(void)!read(C.timer_src.fd, &ticks, sizeof(ticks));
	stack_drain__tick(C.drain);
	/* Tasks whose analyzer stayed away too long are detached: nobody reads them. */
	for (unsigned s = 0; s < C.col.nshards; s++) {
		struct collector_shard *sh = &C.col.shards[s];

		if (sh->connected || !sh->orphaned_since || now - sh->orphaned_since < ORPHAN_GRACE_NS)
			continue;
		if (tasks__detach_shard(C.col.tasks, s))
			tasks_changed(NULL);
		sh->orphaned_since = 0;
	}
	/* A CPU came online after start and this kernel lets only root open its events: while
	 * nothing runs, the supervisor restarts the collector, which opens them as root. */
	if (!tasks__count(C.col.tasks, TASKS_ANY) && bpf_stacks__cpus_unsampled(C.env.bpf)) {
		log_warn("CPU(s) came online after start and their perf events need root to open "
			 "(perf_event_paranoid): restarting the collector to sample them");
		C.stop = 1;
		C.exit_code = COLLECTOR_EXIT_RESTART;
	}
}

static int setup_socket(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (snprintf(C.sock_path, sizeof(C.sock_path), "%s/collector.sock", C.run_dir) >= (int)sizeof(C.sock_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, C.sock_path, sizeof(C.sock_path));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	unlink(C.sock_path);
	/* Anyone may connect; SO_PEERCRED decides who is served.  The mode comes from the
	 * umask at bind: no chmod by path afterwards (the run dir is root's, and stays so). */
	mode_t old = umask(0111);
	int r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));

	umask(old);
	if (r || listen(fd, 16)) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ember-collector --analyzer-uid UID [options]\n"
		"Started by `ember run`; not meant to be run by hand.\n"
		"  --run-dir DIR          sockets (default /run/ember)\n"
		"  --shards N             ring shards = analyzers (default 1)\n"
		"  --ring-size BYTES      per shard, power of two (default 8388608)\n"
		"  --analyzer-uid UID     the only uid served the full control protocol\n"
		"  --exporter-uid UID     the exporter's uid: never served, never a target\n"
		"  --allow-uid UID        tasks may target only these users' processes (repeatable; default all)\n"
		"  --allow-cgroup PATH    ... and only processes in these cgroup v2 subtrees (repeatable; default all)\n"
		"  --flush-ms MS          drain period (default 5000)\n"
		"  --max-stacks N         stack map entries (default 8192)\n"
		"  --max-pids N           target pids (default 1024)\n"
		"  --net-buffer BYTES     network events' ring buffer per CPU (default 409600)\n"
		"  --unwind-rows N        unwind table rows, 8 bytes each (default 1048576; 0: frame pointers only)\n"
		"  --unwind-procs N       processes walked with unwind tables (default 64)\n"
		"  --java-agent PATH      load this JVMTI agent into the JVMs stack tasks follow (default: never)\n"
		"  --log-level LEVEL      error|warn|info|debug\n");
}

static int parse_u64(const char *name, const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "ember-collector: bad value '%s' for --%s (expected %llu..%llu)\n", s, name,
			(unsigned long long)min, (unsigned long long)max);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

/* Command line into C; 0 to go on, or the exit status. */
static int parse_args(int argc, char **argv, enum log_level *lvl, int *done)
{
	static const struct option opts[] = {
		{ "run-dir", required_argument, 0, 'r' }, { "shards", required_argument, 0, 's' },
		{ "ring-size", required_argument, 0, 'z' }, { "analyzer-uid", required_argument, 0, 'u' },
		{ "flush-ms", required_argument, 0, 'f' }, { "max-stacks", required_argument, 0, 'k' },
		{ "max-pids", required_argument, 0, 'p' }, { "log-level", required_argument, 0, 'l' },
		{ "net-buffer", required_argument, 0, 'n' },
		{ "unwind-rows", required_argument, 0, 'U' }, { "unwind-procs", required_argument, 0, 'P' },
		{ "exporter-uid", required_argument, 0, 'x' }, { "allow-uid", required_argument, 0, 'A' },
		{ "allow-cgroup", required_argument, 0, 'G' }, { "java-agent", required_argument, 0, 'J' },
		{ "help", no_argument, 0, 'h' }, { 0 },
	};
	uint64_t v, uid = (uint64_t)-1, xuid = (uint64_t)-1;
	int opt;

	*done = 1;
	C.run_dir = "/run/ember";
	C.col.nshards = 1;
	C.col.ring_size = 8u << 20;
	C.flush_ns = 5000000000ull;
	C.load.stacks = (struct bpf_stacks_opts){ .max_stacks = 8192, .max_agg = 16384, .max_pids = 1024,
					       .unwind_rows = 1u << 20, .unwind_procs = 64 };
	C.load.net_buffer = 400 * 1024;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'r': C.run_dir = optarg; break;
		case 's': if (parse_u64("shards", optarg, 1, 64, &v)) return 2; C.col.nshards = v; break;
		case 'z': if (parse_u64("ring-size", optarg, 65536, 1ull << 30, &v) || (v & (v - 1))) {
				fprintf(stderr, "ember-collector: --ring-size must be a power of two\n"); return 2; }
			C.col.ring_size = v; break;
		case 'u': if (parse_u64("analyzer-uid", optarg, 0, 0xfffffffe, &uid)) return 2; break;
		case 'x': if (parse_u64("exporter-uid", optarg, 1, 0xfffffffe, &xuid)) return 2; break;
		case 'A': if (parse_u64("allow-uid", optarg, 0, 0xfffffffe, &v) || target_policy__allow_uid(C.col.policy, v)) {
				fprintf(stderr, "ember-collector: bad or too many --allow-uid\n"); return 2; } break;
		case 'G': if (target_policy__allow_cgroup(C.col.policy, optarg)) {
				fprintf(stderr, "ember-collector: bad or too many --allow-cgroup '%s'\n", optarg); return 2; } break;
		case 'f': if (parse_u64("flush-ms", optarg, 10, 3600000, &v)) return 2; C.flush_ns = v * 1000000; break;
		case 'k': if (parse_u64("max-stacks", optarg, 64, 1 << 20, &v)) return 2;
			C.load.stacks.max_stacks = v; C.load.stacks.max_agg = 2 * v; break;
		case 'p': if (parse_u64("max-pids", optarg, 1, 1 << 20, &v)) return 2; C.load.stacks.max_pids = v; break;
		case 'U': if (parse_u64("unwind-rows", optarg, 0, 1u << 26, &v)) return 2; C.load.stacks.unwind_rows = v; break;
		case 'P': if (parse_u64("unwind-procs", optarg, 1, 65536, &v)) return 2; C.load.stacks.unwind_procs = v; break;
		case 'n': if (parse_u64("net-buffer", optarg, 4096, 1ull << 30, &v)) return 2; C.load.net_buffer = v; break;
		case 'l': if (log__parse_level(optarg, lvl)) { fprintf(stderr, "ember-collector: bad --log-level '%s'\n", optarg); return 2; } break;
		case 'J': if (optarg[0] != '/') {
				fprintf(stderr, "ember-collector: --java-agent '%s' is not an absolute path\n", optarg); return 2; }
			C.java_agent = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || uid == (uint64_t)-1) {
		usage(stderr);
		return 2;
	}
	C.col.analyzer_uid = uid;
	C.col.exporter_uid = xuid == (uint64_t)-1 ? uid : xuid;
	target_policy__set_ember_uids(C.col.policy, C.col.analyzer_uid, C.col.exporter_uid);
	*done = 0;
	return 0;
}

static struct shm_ring **shard_rings(void)
{
	static struct shm_ring **rings;

	if (!rings)
		rings = calloc(C.col.nshards, sizeof(*rings));
	for (unsigned s = 0; rings && s < C.col.nshards; s++)
		rings[s] = C.col.shards[s].ring;
	return rings;
}

/* Everything that needs root: BPF, tracefs, the rings, the socket.  Then the privileges go. */
/* EMBER_NET_ATTACH: where the network program's chain starts (unset: the socket layer). */
static int net_attach_of(const char *v, int *ret)
{
	if (!v || !*v || !strcmp(v, "socket"))
		*ret = BPF_NET_SOCKET;
	else if (!strcmp(v, "syscall") || !strcmp(v, "tp_btf"))
		*ret = BPF_NET_SYSCALL;
	else if (!strcmp(v, "raw_tp"))
		*ret = BPF_NET_RAW_TP;
	else {
		log_error("EMBER_NET_ATTACH=%s: expected socket, syscall or raw_tp", v);
		return -1;
	}
	return 0;
}

static int setup(void)
{
	struct itimerspec its = { .it_interval = { C.flush_ns / 1000000000ull, C.flush_ns % 1000000000ull } };
	sigset_t mask;
	int err;

	if (geteuid() != 0) {
		log_error("must run as root (it loads BPF programs, then drops to %s)", PRIVS_KEPT_DESC);
		return -1;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		log_error("this kernel has no BTF (/sys/kernel/btf/vmlinux): ember needs CONFIG_DEBUG_INFO_BTF=y");
		return -1;
	}
	/* First, while the collector holds nothing yet: the attacher is a fork of it that becomes other users. */
	if (C.java_agent) {
		C.jattach = jattach__new(C.java_agent);
		if (!C.jattach) {
			log_error("--java-agent %s: %s", C.java_agent,
				  errno == EINVAL ? "not an absolute path to a regular file of root's that only root may write"
						  : strerror(errno));
			return -1;
		}
		C.jattach_src = (struct conn){ .kind = SRC_JATTACH, .fd = jattach__fd(C.jattach) };
	}
	/* The classic-tracepoint fallback needs tracefs; this is the last chance to
	 * mount it (CAP_SYS_ADMIN is dropped below).  Failure only loses that fallback. */
	if (access("/sys/kernel/tracing/events", F_OK) &&
	    mount("nodev", "/sys/kernel/tracing", "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		log_info("tracefs is not mounted and could not be (%m): the tracepoint fallback is unavailable");
	if (mkdir(C.run_dir, 0755) && errno != EEXIST) {
		log_error("cannot create run directory %s: %m", C.run_dir);
		return -1;
	}
	/* The fallbacks are what older kernels get: tests (and users) start the chain there on purpose. */
	if (net_attach_of(getenv("EMBER_NET_ATTACH"), &C.load.net_attach))
		return -1;
	/* A variant an older kernel refuses is expected: the loaders say the outcome in one line. */
	libbpf_quiet = 1;
	err = kinds__load(&C.env, &C.load);
	libbpf_quiet = 0;
	if (err)
		return -1;
	C.col.unwind = C.env.unwind;
	C.col.tls = C.env.tls;
	/* libbpf's copy of the kernel BTF is freed after load: give it back to the
	 * kernel before the rings are mapped, so the two never add up. */
	malloc_trim(0);
	C.col.shards = calloc(C.col.nshards, sizeof(*C.col.shards));
	if (!C.col.shards)
		return -1;
	for (unsigned s = 0; s < C.col.nshards; s++) {
		char name[32];
		snprintf(name, sizeof(name), "ember-shard-%u", s);
		C.col.shards[s].ring = shm_ring__create(C.col.ring_size, name);
		if (!C.col.shards[s].ring) {
			log_error("cannot create ring shard %u (%llu bytes): %m", s, (unsigned long long)C.col.ring_size);
			return -1;
		}
	}
	C.env.col = &C.col;
	C.nkinds = kinds__build(&C.env, C.kinds, KINDS_MAX);
	C.col.tasks = tasks__new(C.kinds, C.nkinds, C.col.policy, C.col.nshards);
	if (!C.col.tasks) {
		log_error("cannot create the task table: %m");
		return -1;
	}
	C.env.tasks = C.col.tasks;
	C.col.hooks = &hooks;
	C.drain = stack_drain__new(&C.col, &C.env);
	if (!C.drain)
		return -1;
	if (C.env.net) {
		C.env.fwd = C.fwd = net_fwd__new(shard_rings(), C.col.nshards);
		if (!C.fwd)
			return -1;
		C.net_src = (struct conn){ .kind = SRC_NET, .fd = bpf_net__fd(C.env.net) };
		C.net_timer_src = (struct conn){ .kind = SRC_NET_TIMER,
						 .fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK) };
		if (C.net_timer_src.fd < 0) {
			log_error("cannot create the network events' timer: %m");
			return -1;
		}
	}
	C.threads_timer_src = (struct conn){ .kind = SRC_THREADS_TIMER, .fd = -1 };
	if (C.env.threads) {
		C.threads_timer_src.fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		if (C.threads_timer_src.fd < 0) {
			log_error("cannot create the thread profiling's timer: %m");
			return -1;
		}
	}
	err = setup_socket();
	if (err < 0) {
		log_error("cannot listen on %s: %s", C.sock_path, strerror(-err));
		return -1;
	}
	C.listen_src = (struct conn){ .kind = SRC_LISTEN, .fd = err };
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	C.signal_src = (struct conn){ .kind = SRC_SIGNAL, .fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK) };
	C.timer_src = (struct conn){ .kind = SRC_TIMER, .fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK) };
	if (C.signal_src.fd < 0 || C.timer_src.fd < 0) {
		log_error("cannot create signalfd/timerfd: %m");
		return -1;
	}
	its.it_value = its.it_interval;
	timerfd_settime(C.timer_src.fd, 0, &its, NULL);
	err = io_uring_queue_init(64, &C.ring, 0);
	if (err) {
		log_error("io_uring_queue_init: %s", strerror(-err));
		return -1;
	}
	/* The collector only copies events from the BPF ring buffer to the analyzers': if it
	 * waits for a CPU behind the very workload it observes, the ring buffer fills and
	 * events are lost.  Its own work is small, so it goes first. */
	if (setpriority(PRIO_PROCESS, 0, COLLECTOR_NICE))
		log_info("cannot raise the collector's priority (%m): events may be lost under CPU contention");
	err = privs__drop_collector();
	if (err) {
		log_error("cannot drop privileges: %s", strerror(-err));
		return -1;
	}
	err = stack_drain__start_waiter(C.drain);
	if (err < 0)
		log_warn("no waiter thread (%s): stack drains wait in the loop, pausing network events", strerror(-err));
	C.drain_src = (struct conn){ .kind = SRC_DRAIN_DONE, .fd = err };
	return 0;
}

/* The io_uring loop: the control socket, its connections, the drain timer, signals. */
static void run(void)
{
	int err;

	arm(&C.listen_src);
	arm(&C.signal_src);
	arm(&C.timer_src);
	if (C.drain_src.fd >= 0)
		arm(&C.drain_src);
	if (C.env.net) {
		arm(&C.net_src);
		arm(&C.net_timer_src);
	}
	if (C.threads_timer_src.fd >= 0)
		arm(&C.threads_timer_src);
	if (C.jattach)
		arm(&C.jattach_src);
	while (!C.stop) {
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;

		err = io_uring_submit_and_wait(&C.ring, 1);
		if (err < 0 && err != -EINTR) {
			log_error("io_uring: %s", strerror(-err));
			break;
		}
		io_uring_for_each_cqe(&C.ring, head, cqe) {
			struct conn *src = io_uring_cqe_get_data(cqe);
			seen++;
			switch (src->kind) {
			case SRC_LISTEN: on_accept(); arm(src); break;
			case SRC_TIMER: on_timer(); arm(src); break;
			case SRC_NET: forward_net(false); arm(src); break;
			case SRC_DRAIN_DONE: stack_drain__done(C.drain); arm(src); break;
			case SRC_NET_TIMER: {
				uint64_t ticks;
				(void)!read(src->fd, &ticks, sizeof(ticks));
				forward_net(true);
				arm(src);
				break;
			}
			case SRC_THREADS_TIMER: {
				uint64_t ticks;
				(void)!read(src->fd, &ticks, sizeof(ticks));
				kind_threads__window(C.kinds[EMBER_TASK_THREADS]);
				arm(src);
				break;
			}
			case SRC_JATTACH: jattach__poll(C.jattach, java_attached, NULL); arm(src); break;
			case SRC_SIGNAL: {
				struct signalfd_siginfo si;
				while (read(src->fd, &si, sizeof(si)) == sizeof(si))
					if (si.ssi_signo != SIGHUP)
						C.stop = 1;
				arm(src);
				break;
			}
			case SRC_CONN:
				if (cqe->res < 0 || ctl_server__handle(&C.col, src->cc) < 0) {
					ctl_server__close(&C.col, src->cc);
					free(src);
				} else
					arm(src);
				break;
			}
		}
		io_uring_cq_advance(&C.ring, seen);
	}
}

int main(int argc, char **argv)
{
	enum log_level lvl = LOG_LVL_INFO;
	int rc, done;

	C.col.policy = target_policy__new(getpid(), getppid());
	C.col.broker = broker__new();
	if (!C.col.policy || !C.col.broker) {
		fprintf(stderr, "ember-collector: out of memory\n");
		return 1;
	}
	rc = parse_args(argc, argv, &lvl, &done);
	if (done)
		return rc;
	log__init("collector", lvl);
	libbpf_set_print(libbpf_print);
	if (setup())
		return 1;
	{
		char pol[512];

		target_policy__describe(C.col.policy, pol, sizeof(pol));
		log_info("ready: %u shard(s) of %llu bytes, control socket %s, kept capabilities %s; targets: %s",
			 C.col.nshards, (unsigned long long)C.col.ring_size, C.sock_path, PRIVS_KEPT_DESC, pol);
	}
	run();
	log_info("stopping: final drain");
	stack_drain__sync(C.drain);
	forward_net(true);
	C.jattach = jattach__free(C.jattach);
	C.col.tasks = tasks__free(C.col.tasks);
	kinds__free(C.kinds, C.nkinds);
	stack_drain__free(C.drain);
	unlink(C.sock_path);
	io_uring_queue_exit(&C.ring);
	C.fwd = C.env.fwd = net_fwd__free(C.fwd);
	kinds__unload(&C.env);
	C.col.unwind = NULL;
	C.col.tls = NULL;
	C.col.broker = broker__free(C.col.broker);
	C.col.policy = target_policy__free(C.col.policy);
	free(shard_rings());
	for (unsigned s = 0; s < C.col.nshards; s++)
		shm_ring__free(C.col.shards[s].ring);
	free(C.col.shards);
	return C.exit_code;
}
