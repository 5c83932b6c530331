/*
 * Thread profiling (gala-gopher's tprofiling): the collector sends each
 * window's aggregates (bpf/threads_abi.h struct ember_rec_thread) and a
 * marker per window; they become ThreadEvent messages (names, stacks
 * symbolized root first, the file path or connection, the futex op), kept per
 * task and published as one ThreadBatch per task and window, the task's last
 * when it ends (after the collector flushed what its processes left and the
 * calls still in progress).
 *
 * Everything in a record but its numbers comes from the target (its comm, the
 * path of its fd): strings are cut at their bounds and made printable; the
 * exporter escapes them for each format.  Bounds: max_events_per_window per
 * task, past which events are counted lost.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "analyzer/kinds.h"
#include "analyzer/python/py_stack.h"
#include "analyzer/publisher.h"
#include "bpf/ember_abi.h"
#include "bpf/threads_abi.h"
#include "common/cgroup_id.h"
#include "common/config.h"
#include "common/timeutil.h"
#include "symbolizer/symbolizer.h"

enum thread_stat {
	TS_RECORDS,          /* aggregates received */
	TS_EVENTS,           /* ... published as events */
	TS_NO_TASK,          /* ... of a process no thread task follows (any more) */
	TS_OVER_BOUND,       /* ... over a task's events per window */
	TS_RING_DROPS,       /* aggregates the collector could not put in the ring (its markers) */
	TS_STACK_FRAMES,
	TS_STACK_UNKNOWN,    /* frames not symbolized */
	TS_BATCHES,
	TS_PY_FRAMES,        /* Python frames in their stacks (analyzer/python/py_stack.h) */
	TS_PY_UNNAMED,
	TS_PY_UNPLACED,
	TS_MAX
};

static const struct counter_def thread_counters[TS_MAX] = {
	[TS_RECORDS] = { .name = "thread_records" },
	[TS_EVENTS] = { .name = "thread_events_published" },
	[TS_NO_TASK] = { .name = "thread_records_no_task" },
	[TS_OVER_BOUND] = { .name = "thread_events_over_bound" },
	[TS_RING_DROPS] = { .name = "thread_events_lost_upstream" },
	[TS_STACK_FRAMES] = { .name = "thread_stack_frames" },
	[TS_STACK_UNKNOWN] = { .name = "thread_stack_frames_unknown" },
	[TS_BATCHES] = { .name = "thread_batches" },
	[TS_PY_FRAMES] = { .name = "thread_python_frames" },
	[TS_PY_UNNAMED] = { .name = "thread_python_frames_unnamed" },
	[TS_PY_UNPLACED] = { .name = "thread_python_frames_unplaced" },
};

struct tt {                   /* a task's window */
	char id[TASK_ID_LEN];
	bool used;
	/* Its processes' containers, read when it opens (a process may be gone by a window's end):
	 * gala-gopher's container.id, the id's first 12 characters, "" outside a container. */
	uint32_t npids;
	uint32_t *pids;
	char (*container)[13];
	uint64_t window_start_ns;
	Ember__ThreadEvent **ev;
	size_t nev, cap;
	uint64_t lost;
};

struct threads_kind {
	struct analyzer_kind_env env;
	size_t max_events;
	unsigned ntasks;
	struct tt *tasks;
	uint64_t st[TS_MAX];
	struct py_stack_frame frames[EMBER_MAX_STACK_DEPTH]; /* one stack's, while it is added */
};

static const struct { long nr; const char *name; } names[] = {
	{ SYS_read, "read" }, { SYS_write, "write" }, { SYS_readv, "readv" }, { SYS_writev, "writev" },
	{ SYS_pread64, "pread64" }, { SYS_pwrite64, "pwrite64" }, { SYS_preadv, "preadv" }, { SYS_pwritev, "pwritev" },
	{ SYS_preadv2, "preadv2" }, { SYS_pwritev2, "pwritev2" }, { SYS_sync, "sync" }, { SYS_syncfs, "syncfs" },
	{ SYS_fsync, "fsync" }, { SYS_fdatasync, "fdatasync" }, { SYS_sync_file_range, "sync_file_range" },
	{ SYS_sendto, "sendto" }, { SYS_recvfrom, "recvfrom" }, { SYS_sendmsg, "sendmsg" }, { SYS_recvmsg, "recvmsg" },
	{ SYS_sendmmsg, "sendmmsg" }, { SYS_recvmmsg, "recvmmsg" }, { SYS_futex, "futex" },
#ifdef SYS_futex_waitv
	{ SYS_futex_waitv, "futex_waitv" },
#endif
	{ SYS_sched_yield, "sched_yield" }, { SYS_nanosleep, "nanosleep" }, { SYS_clock_nanosleep, "clock_nanosleep" },
	{ SYS_wait4, "wait4" }, { SYS_waitid, "waitid" }, { SYS_select, "select" }, { SYS_pselect6, "pselect6" },
	{ SYS_poll, "poll" }, { SYS_ppoll, "ppoll" }, { SYS_epoll_wait, "epoll_wait" }, { SYS_epoll_pwait, "epoll_pwait" },
#ifdef SYS_epoll_pwait2
	{ SYS_epoll_pwait2, "epoll_pwait2" },
#endif
};

static const char *event_name(int32_t nr)
{
	if (nr == THREAD_NR_ONCPU)
		return "oncpu";
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].nr == nr)
			return names[i].name;
	return "syscall";
}

static const char *type_name(uint8_t type)
{
	static const char *const t[] = { [THREAD_EV_ONCPU] = "oncpu", [THREAD_EV_FILE] = "file",
					 [THREAD_EV_NET] = "net", [THREAD_EV_LOCK] = "lock", [THREAD_EV_SCHED] = "sched" };

	return type < sizeof(t) / sizeof(t[0]) && t[type] ? t[type] : "other";
}

/* Bytes from the target, n at most, as a printable NUL-terminated copy (controls become '?'). */
static char *printable(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	size_t i;

	if (!d)
		return NULL;
	for (i = 0; i < n && s[i]; i++)
		d[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	d[i] = 0;
	return d;
}

/* "local->remote" as lsof writes it: a.b.c.d:port, [v6]:port. */
static char *conn_text(const struct ember_rec_thread *r)
{
	char l[INET6_ADDRSTRLEN], rr[INET6_ADDRSTRLEN], buf[2 * INET6_ADDRSTRLEN + 32];
	int af = r->sock_family == AF_INET6 ? AF_INET6 : AF_INET;

	if (r->sock_family != AF_INET && r->sock_family != AF_INET6)
		return strdup("");
	if (!inet_ntop(af, r->saddr, l, sizeof(l)) || !inet_ntop(af, r->daddr, rr, sizeof(rr)))
		return strdup("");
	if (af == AF_INET6)
		snprintf(buf, sizeof(buf), "[%s]:%u->[%s]:%u", l, r->sport, rr, r->dport);
	else
		snprintf(buf, sizeof(buf), "%s:%u->%s:%u", l, r->sport, rr, r->dport);
	return strdup(buf);
}

static void free_event(Ember__ThreadEvent *e)
{
	if (!e)
		return;
	free(e->thread_comm);
	free(e->proc_name);
	free(e->file_path);
	free(e->sock_conn);
	if (e->container_id != protobuf_c_empty_string)
		free(e->container_id);
	for (size_t i = 0; i < e->n_stack; i++)
		free(e->stack[i]);
	free(e->stack);
	free(e);
}

static struct tt *task_window(struct threads_kind *k, const char *id, bool create)
{
	struct tt *free_slot = NULL;

	for (unsigned i = 0; i < k->ntasks; i++) {
		if (k->tasks[i].used && !strcmp(k->tasks[i].id, id))
			return &k->tasks[i];
		if (!k->tasks[i].used && !free_slot)
			free_slot = &k->tasks[i];
	}
	if (!create || !free_slot)
		return NULL;
	memset(free_slot, 0, sizeof(*free_slot));
	snprintf(free_slot->id, sizeof(free_slot->id), "%s", id);
	free_slot->used = true;
	free_slot->window_start_ns = timeutil__now_ns(CLOCK_REALTIME);
	return free_slot;
}

static void publish(struct threads_kind *k, struct tt *w, const struct task_def *t, uint64_t end_ns, bool last)
{
	Ember__ThreadBatch b = EMBER__THREAD_BATCH__INIT;

	b.window_start_unix_ns = w->window_start_ns;
	b.window_end_unix_ns = end_ns;
	b.events = w->ev;
	b.n_events = w->nev;
	b.events_lost = w->lost;
	b.last = last;
	if (last || w->nev || w->lost) {
		publisher__threads(k->env.pub, t, &b);
		k->st[TS_BATCHES]++;
		k->st[TS_EVENTS] += w->nev;
	}
	for (size_t i = 0; i < w->nev; i++)
		free_event(w->ev[i]);
	w->nev = 0;
	w->lost = 0;
	w->window_start_ns = end_ns;
}

static void add_stack(struct threads_kind *k, Ember__ThreadEvent *e, uint32_t tgid, const uint64_t *ips, unsigned n)
{
	uint64_t st[PYS_MAX] = { 0 };
	int nf;

	if (!n)
		return;
	/* As many frames as ips, or more (inlined JIT methods): sized after. */
	nf = py_stack__resolve(k->env.sym, k->env.py, tgid, ips, n, k->frames, st);
	if (nf <= 0 || !(e->stack = calloc((size_t)nf, sizeof(char *))))
		return;
	k->st[TS_PY_FRAMES] += st[PYS_FRAMES];
	k->st[TS_PY_UNNAMED] += st[PYS_UNNAMED];
	k->st[TS_PY_UNPLACED] += st[PYS_UNPLACED];
	/* Root first, as func.stack and flame graphs read. */
	for (int i = 0; i < nf; i++) {
		const struct py_stack_frame *f = &k->frames[nf - 1 - i];

		if (!f->python) {
			k->st[TS_STACK_FRAMES]++;
			k->st[TS_STACK_UNKNOWN] += !f->resolved;
		}
		if (!(e->stack[e->n_stack] = strdup(f->text)))
			break;
		e->n_stack++;
	}
}

static int on_record(struct threads_kind *k, const void *data, uint32_t len)
{
	struct ember_rec_thread r;
	const char *path;
	uint64_t ips[EMBER_MAX_STACK_DEPTH];
	size_t pathroom;
	struct task_def *t;
	struct tt *w;
	Ember__ThreadEvent *e;

	if (len < sizeof(r))
		return -EBADMSG;
	memcpy(&r, data, sizeof(r));
	pathroom = ((size_t)r.npath + 7) & ~(size_t)7;
	if (r.nuser > EMBER_MAX_STACK_DEPTH || len != sizeof(r) + pathroom + r.nuser * sizeof(uint64_t))
		return -EBADMSG;
	if (r.flags & THREAD_REC_F_WINDOW) {
		/* The collector's window ended: every task's events of it go out. */
		k->st[TS_RING_DROPS] += r.total_ns;
		for (unsigned i = 0; i < k->ntasks; i++) {
			struct tt *tw = &k->tasks[i];
			struct task_def *td = tw->used ? task_mgr__find(k->env.tm, tw->id) : NULL;

			if (!td)
				continue;
			tw->lost += r.total_ns;
			publish(k, tw, td, r.end_ns, false);
		}
		return 0;
	}
	k->st[TS_RECORDS]++;
	t = task_mgr__find_pid(k->env.tm, r.tgid, EMBER_TASK_THREADS);
	w = t ? task_window(k, t->id, false) : NULL;
	if (!w) {
		k->st[TS_NO_TASK]++;
		return 0;
	}
	if (w->nev >= k->max_events) {
		k->st[TS_OVER_BOUND]++;
		w->lost++;
		return 0;
	}
	if (w->nev == w->cap) {
		size_t c = w->cap ? w->cap * 2 : 256;
		Ember__ThreadEvent **n = realloc(w->ev, c * sizeof(*n));

		if (!n) {
			w->lost++;
			return 0;
		}
		w->ev = n;
		w->cap = c;
	}
	if (!(e = calloc(1, sizeof(*e)))) {
		w->lost++;
		return 0;
	}
	ember__thread_event__init(e);
	path = (const char *)data + sizeof(r);
	memcpy(ips, (const char *)data + sizeof(r) + pathroom, r.nuser * sizeof(uint64_t));
	e->tid = r.tid;
	e->tgid = r.tgid;
	e->thread_comm = printable(r.comm, sizeof(r.comm));
	e->proc_name = printable(r.pcomm, sizeof(r.pcomm));
	e->name = (char *)event_name(r.nr);
	e->type = (char *)type_name(r.type);
	e->start_unix_ns = r.start_ns;
	e->end_unix_ns = r.end_ns;
	e->duration_ns = r.total_ns;
	e->count = r.count;
	e->max_ns = r.max_ns;
	e->ongoing = !!(r.flags & THREAD_REC_F_ONGOING);
	e->stack_lost = !!(r.flags & THREAD_AGG_F_STACK_LOST);
	e->fd = r.type == THREAD_EV_LOCK || r.nr == THREAD_NR_ONCPU ? -1 : r.arg;
	e->futex_op = (char *)(r.type != THREAD_EV_LOCK ? "" : r.arg == THREAD_FUTEX_WAIT ? "wait"
							      : r.arg == THREAD_FUTEX_WAKE ? "wake" : "");
	e->file_path = printable(path, r.npath);
	for (uint32_t i = 0; i < w->npids; i++)
		if (w->pids[i] == r.tgid && w->container[i][0])
			e->container_id = strdup(w->container[i]);
	e->sock_conn = conn_text(&r);
	/* An ongoing call on an fd the collector found a socket behind. */
	if (e->ongoing && e->file_path && !strncmp(e->file_path, "socket:", 7)) {
		e->type = (char *)"net";
		e->file_path[0] = 0;
	}
	if (r.type == THREAD_EV_NET && e->file_path)
		e->file_path[0] = 0;
	add_stack(k, e, r.tgid, ips, r.nuser);
	if (!e->thread_comm || !e->proc_name || !e->file_path || !e->sock_conn) {
		free_event(e);
		w->lost++;
		return 0;
	}
	w->ev[w->nev++] = e;
	return 0;
}

static void *threads_new(const struct analyzer_kind_env *env)
{
	struct threads_kind *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->env = *env;
	k->ntasks = env->max_tasks ? env->max_tasks : 64;
	k->max_events = (size_t)env->cfg->profiling.task.threads.max_events_per_window;
	k->tasks = calloc(k->ntasks, sizeof(*k->tasks));
	if (!k->tasks) {
		free(k);
		errno = ENOMEM;
		return NULL;
	}
	return k;
}

static void drop_window(struct tt *w)
{
	for (size_t i = 0; i < w->nev; i++)
		free_event(w->ev[i]);
	free(w->ev);
	free(w->pids);
	free(w->container);
	memset(w, 0, sizeof(*w));
}

static void threads_free(void *impl)
{
	struct threads_kind *k = impl;

	if (!k)
		return;
	for (unsigned i = 0; i < k->ntasks; i++)
		drop_window(&k->tasks[i]);
	free(k->tasks);
	free(k);
}

static int check(void *impl, const struct task_def *t, char *err, size_t errlen)
{
	uint32_t all = THREAD_P_ONCPU | THREAD_P_FILE | THREAD_P_NET | THREAD_P_LOCK | THREAD_P_SCHED;

	(void)impl;
	if (!t->thread_probes || (t->thread_probes & ~all)) {
		snprintf(err, errlen, "thread profiling needs events among oncpu, syscall_file, syscall_net, "
			 "syscall_lock and syscall_sched (asked: 0x%x)", t->thread_probes);
		return -EINVAL;
	}
	return 0;
}

static bool refused(void *impl, const struct task_def *t, int r, char *err, size_t errlen)
{
	(void)impl;
	(void)t;
	/* The collector builds no thread kind where its program did not load. */
	if (r != -EOPNOTSUPP)
		return false;
	snprintf(err, errlen, "thread profiling is not available on this host: its BPF program needs Linux 5.17+ "
		 "(bpf_loop, task BTF, bpf_task_pt_regs); the collector's log at start says what failed");
	return true;
}

/* The container of pid (its /proc/PID/cgroup, bounded, parsed by common/cgroup_id), as gala-gopher shortens it. */
static void container_of_pid(uint32_t pid, char out[13])
{
	char path[48], text[4096], id[CGROUP_CONTAINER_ID_LEN + 1] = "", pod[CGROUP_POD_ID_MAX];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, text, sizeof(text));
		close(fd);
	}
	(void)cgroup_id__parse(text, n > 0 ? (size_t)n : 0, id, pod);
	snprintf(out, 13, "%.12s", id);
}

static int open_task(void *impl, const struct task_def *t)
{
	struct tt *w = task_window(impl, t->id, true);

	if (!w)
		return -ENOSPC;
	w->pids = calloc(t->npids, sizeof(*w->pids));
	w->container = calloc(t->npids, sizeof(*w->container));
	if (!w->pids || !w->container) {
		free(w->pids);
		free(w->container);
		memset(w, 0, sizeof(*w));
		return -ENOMEM;
	}
	w->npids = t->npids;
	for (uint32_t i = 0; i < w->npids; i++) {
		w->pids[i] = t->pids[i];
		container_of_pid(t->pids[i], w->container[i]);
	}
	return 0;
}

static void discard(void *impl, const struct task_def *t)
{
	struct tt *w = task_window(impl, t->id, false);

	if (w)
		drop_window(w);
}

static void close_task(void *impl, const struct task_def *t, char *summary, size_t len)
{
	struct threads_kind *k = impl;
	struct tt *w = task_window(k, t->id, false);
	uint64_t before = k->st[TS_EVENTS];

	if (!w) {
		snprintf(summary, len, "no events");
		return;
	}
	publish(k, w, t, timeutil__now_ns(CLOCK_REALTIME), true);
	snprintf(summary, len, "%llu events in the last window", (unsigned long long)(k->st[TS_EVENTS] - before));
	drop_window(w);
}

static int record(void *impl, uint32_t type, const void *data, uint32_t len)
{
	(void)type;
	return on_record(impl, data, len);
}

_Static_assert(TS_MAX <= ANALYZER_KIND_COUNTERS_MAX, "the counters fit a stats array");

static void stats(const void *impl, uint64_t *v)
{
	memcpy(v, ((const struct threads_kind *)impl)->st, sizeof(uint64_t) * TS_MAX);
}

const struct analyzer_kind_ops analyzer_kind_threads = {
	.name = "threads",
	.flags = ANALYZER_KIND_F_USER_STACKS,
	.records = 1u << EMBER_REC_THREAD,
	.new = threads_new,
	.free = threads_free,
	.check = check,
	.refused = refused,
	.open = open_task,
	.discard = discard,
	.close = close_task,
	.record = record,
	.counters = thread_counters,
	.ncounters = TS_MAX,
	.stats = stats,
};
