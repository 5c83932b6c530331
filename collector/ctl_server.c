#include "collector/ctl_server.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bpf/ember_abi.h"
#include "collector/broker.h"
#include "collector/target_policy.h"
#include "collector/tasks.h"
#include "collector/tls_links.h"
#include "collector/tls_verify.h"
#include "collector/unwind_store.h"
#include "common/cleanup.h"
#include "common/log.h"
#include "common/profile_kind.h"
#include "common/shm_ring.h"
#include "common/timeutil.h"


struct ctl_conn {
	int fd;
	uid_t uid;
	pid_t pid;
	int is_analyzer;
	int hello;
	uint32_t shard;
};

typedef int (*handler_fn)(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m);

static int reply_err(struct ctl_conn *cc, const struct ctl_msg *m, int err, int fd)
{
	struct ctl_err_ans a = { .err = err };
	int r = ctl__send(cc->fd, m->type + 1, m->seq, &a, sizeof(a), fd >= 0 ? &fd : NULL, fd >= 0);

	if (fd >= 0)
		close(fd);
	return r;
}

static void tasks_changed(struct collector *c)
{
	if (c->hooks && c->hooks->tasks_changed)
		c->hooks->tasks_changed(c->hooks_ctx);
}

/*
 * May this analyzer have pid's files?  Only a target of one of its tasks (a
 * child a network task follows included, and a detached task's during its
 * final drain), and only while the target policy still allows it (a
 * followed child may have exec'd a setuid program).
 */
static int pid_allowed(struct collector *c, const struct ctl_conn *cc, uint32_t pid)
{
	if (!tasks__targets(c->tasks, cc->shard, TASKS_ANY, pid, true) || target_policy__check(c->policy, pid) == -EPERM) {
		c->stats[CTL_STAT_FD_BROKER_NOT_TARGET]++;
		return 0;
	}
	return 1;
}

static int h_hello(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m)
{
	struct ctl_hello h;
	struct ctl_hello_ans a = { .nshards = c->nshards, .ring_size = c->ring_size };
	int fds[3];

	memcpy(&h, m->payload, sizeof(h));
	if (h.abi_version != EMBER_ABI_VERSION)
		a.err = -EPROTONOSUPPORT;
	else if (h.shard >= c->nshards)
		a.err = -EINVAL;
	else if (c->shards[h.shard].connected)
		a.err = -EBUSY;
	if (a.err)
		return ctl__send(cc->fd, CTL_ANS_HELLO, m->seq, &a, sizeof(a), NULL, 0);
	cc->hello = 1;
	cc->shard = h.shard;
	c->shards[h.shard].connected = 1;
	c->shards[h.shard].orphaned_since = 0;
	c->stats[CTL_STAT_ANALYZER_CONNECTS]++;
	if (c->hooks && c->hooks->net_caps_clear)
		c->hooks->net_caps_clear(c->hooks_ctx, h.shard);
	fds[0] = shm_ring__data_fd(c->shards[h.shard].ring);
	fds[1] = shm_ring__cons_fd(c->shards[h.shard].ring);
	fds[2] = shm_ring__event_fd(c->shards[h.shard].ring);
	log_info("analyzer pid %d attached to shard %u", (int)cc->pid, h.shard);
	return ctl__send(cc->fd, CTL_ANS_HELLO, m->seq, &a, sizeof(a), fds, 3);
}

static int h_attach(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m)
{
	const struct ctl_attach *a = m->payload;
	struct ctl_attach_ans ans = { 0 };

	ans.err = tasks__attach(c->tasks, cc->shard, a, &ans);
	if (ans.err)
		log_warn("attach of task %llu refused: %s", (unsigned long long)a->task_id, strerror(-ans.err));
	else
		tasks_changed(c);
	return ctl__send(cc->fd, CTL_ANS_ATTACH, m->seq, &ans, sizeof(ans), NULL, 0);
}

/* A held task's processes are sampled from now on. */
static int h_start(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m)
{
	struct ctl_detach d;
	int err;

	memcpy(&d, m->payload, sizeof(d));
	err = tasks__start(c->tasks, cc->shard, d.task_id);
	if (err != -ENOENT)
		tasks_changed(c);
	return reply_err(cc, m, err, -1);
}

static int h_detach(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m)
{
	struct ctl_detach d;
	int err;

	memcpy(&d, m->payload, sizeof(d));
	if (!tasks__owns(c->tasks, cc->shard, d.task_id))
		return reply_err(cc, m, -ENOENT, -1);
	/* Drain first so everything the task collected is in the ring before we answer. */
	if (c->hooks && c->hooks->drain)
		c->hooks->drain(c->hooks_ctx);
	err = tasks__detach(c->tasks, cc->shard, d.task_id);
	if (!err)
		tasks_changed(c);
	return reply_err(cc, m, err, -1);
}

/* The broker's answer to a request on pid, counted. */
static int broker_reply(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m, int fd)
{
	c->stats[fd < 0 ? CTL_STAT_FD_BROKER_REFUSED : CTL_STAT_FD_BROKER_OPENS]++;
	return reply_err(cc, m, fd < 0 ? fd : 0, fd);
}

static int refuse_pid(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m)
{
	c->stats[CTL_STAT_FD_BROKER_REFUSED]++;
	return reply_err(cc, m, -EPERM, -1);
}

static int h_open_maps(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m)
{
	struct ctl_open_maps r;

	memcpy(&r, m->payload, sizeof(r));
	if (!pid_allowed(c, cc, r.pid))
		return refuse_pid(c, cc, m);
	return broker_reply(c, cc, m, broker__open_maps(c->broker, r.pid));
}

static int h_open_file(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m)
{
	struct ctl_open_file r;

	memcpy(&r, m->payload, sizeof(r));
	if (!pid_allowed(c, cc, r.pid))
		return refuse_pid(c, cc, m);
	return broker_reply(c, cc, m, broker__open_file(c->broker, r.pid, r.start, r.end));
}

static int h_open_perf_map(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m)
{
	struct ctl_open_perf_map r;

	memcpy(&r, m->payload, sizeof(r));
	if (!pid_allowed(c, cc, r.pid))
		return refuse_pid(c, cc, m);
	return broker_reply(c, cc, m, broker__open_perf_map(c->broker, r.pid));
}

static int h_open_debug_build_id(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m)
{
	struct ctl_open_debug_build_id r;

	memcpy(&r, m->payload, sizeof(r));
	if (r.len < 2 || r.len > CTL_MAX_BUILD_ID) {
		c->stats[CTL_STAT_FD_BROKER_REFUSED]++;
		return reply_err(cc, m, -EINVAL, -1);
	}
	if (!pid_allowed(c, cc, r.pid))
		return refuse_pid(c, cc, m);
	return broker_reply(c, cc, m, broker__open_debug_build_id(c->broker, r.pid, r.build_id, r.len));
}

static int h_open_debuglink(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m)
{
	struct ctl_open_debuglink r;

	memcpy(&r, m->payload, sizeof(r));
	/* Untrusted bytes: terminated inside the field, then a plain file name (the broker checks). */
	if (!memchr(r.name, '\0', sizeof(r.name))) {
		c->stats[CTL_STAT_FD_BROKER_REFUSED]++;
		return reply_err(cc, m, -EINVAL, -1);
	}
	if (!pid_allowed(c, cc, r.pid))
		return refuse_pid(c, cc, m);
	return broker_reply(c, cc, m, broker__open_debuglink(c->broker, r.pid, r.start, r.end, r.name));
}

/* Kernel addresses only to an analyzer with a stack task: it already sees kernel frames' addresses then. */
static int h_open_kallsyms(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m)
{
	if (!tasks__shard_has(c->tasks, cc->shard, profile_kind__mask(PROFILE_KIND_STACKS), true)) {
		c->stats[CTL_STAT_FD_BROKER_KALLSYMS]++;
		c->stats[CTL_STAT_FD_BROKER_REFUSED]++;
		return reply_err(cc, m, -EPERM, -1);
	}
	return broker_reply(c, cc, m, broker__open_kallsyms(c->broker));
}

/* ---- unwind tables: the analyzer builds, this checks and stores --------------- */

static int h_unwind_table(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m)
{
	struct ctl_unwind_table r;
	struct ctl_unwind_table_ans a;

	memcpy(&r, m->payload, sizeof(r));
	memset(&a, 0, sizeof(a));
	a.err = c->unwind ? unwind_store__table(c->unwind, cc->shard, &r, &a) : -EOPNOTSUPP;
	return ctl__send(cc->fd, CTL_ANS_UNWIND_TABLE, m->seq, &a, sizeof(a), NULL, 0);
}

static int h_unwind_rows(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m)
{
	if (!c->unwind)
		return reply_err(cc, m, -EOPNOTSUPP, -1);
	return reply_err(cc, m, unwind_store__rows(c->unwind, cc->shard, (const struct ctl_unwind_rows *)m->payload), -1);
}

/* Only for a process a task of this analyzer walks the stacks of: nobody else's stacks are walked its way. */
static int h_unwind_proc(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m)
{
	const struct ctl_unwind_proc *r = m->payload;

	if (!c->unwind)
		return reply_err(cc, m, -EOPNOTSUPP, -1);
	if (!tasks__targets(c->tasks, cc->shard, profile_kind__mask(PROFILE_KIND_UNWINDS), r->pid, false)) {
		c->stats[CTL_STAT_CTL_DENIED]++;
		return reply_err(cc, m, -EPERM, -1);
	}
	return reply_err(cc, m, unwind_store__proc(c->unwind, r), -1);
}

/*
 * A Python process's runtime, for a process a stack task of this analyzer
 * follows.  The walk only reads the target's memory, so a wrong address or
 * layout costs that process its Python frames, nothing else; the offsets are
 * still held to their bounds.
 */
static int h_py_proc(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m)
{
	const struct ctl_py_proc *r = m->payload;
	const struct py_layout *l = &r->proc.l;
	const uint16_t offs[] = { l->rt_interp_head, l->is_threads_head, l->ts_next, l->ts_native_tid, l->ts_cframe,
				  l->cf_current, l->fr_code, l->fr_previous, l->fr_entry, l->co_filename,
				  l->co_qualname, l->co_firstlineno, l->str_state, l->str_ascii_data,
				  l->str_compact_data };

	if (!c->hooks || !c->hooks->py_proc)
		return reply_err(cc, m, -EOPNOTSUPP, -1);
	if (!tasks__targets(c->tasks, cc->shard, profile_kind__mask(PROFILE_KIND_UNWINDS), r->pid, false)) {
		c->stats[CTL_STAT_CTL_DENIED]++;
		return reply_err(cc, m, -EPERM, -1);
	}
	if (!r->proc.runtime)
		return reply_err(cc, m, c->hooks->py_proc(c->hooks_ctx, r->pid, NULL), -1);
	for (unsigned i = 0; i < sizeof(offs) / sizeof(offs[0]); i++)
		if (offs[i] >= PY_MAX_OFF)
			return reply_err(cc, m, -EINVAL, -1);
	if (r->pad || r->proc.pad || l->entry_kind != PY_ENTRY_IS_ENTRY || r->proc.runtime >= (1ull << 47))
		return reply_err(cc, m, -EINVAL, -1);
	/* The walk reads a frame's and a code object's first bytes at once: its fields must lie there. */
	if (l->fr_code > PY_FRAME_READ - 8 || l->fr_previous > PY_FRAME_READ - 8 || l->fr_entry > PY_FRAME_READ - 1 ||
	    l->co_filename > PY_CODE_READ - 8 || l->co_qualname > PY_CODE_READ - 8 || l->co_firstlineno > PY_CODE_READ - 4)
		return reply_err(cc, m, -EINVAL, -1);
	return reply_err(cc, m, c->hooks->py_proc(c->hooks_ctx, r->pid, &r->proc), -1);
}

/* The Java agent into a JVM a stack task of this analyzer follows (collector/jattach.h). */
static int h_java_attach(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m)
{
	const struct ctl_java_attach *r = m->payload;

	if (!c->hooks || !c->hooks->java_attach)
		return reply_err(cc, m, -EOPNOTSUPP, -1);
	if (r->pad)
		return reply_err(cc, m, -EINVAL, -1);
	if (!tasks__targets(c->tasks, cc->shard, profile_kind__mask(PROFILE_KIND_UNWINDS), r->pid, false)) {
		c->stats[CTL_STAT_CTL_DENIED]++;
		return reply_err(cc, m, -EPERM, -1);
	}
	return reply_err(cc, m, c->hooks->java_attach(c->hooks_ctx, r->pid), -1);
}

/* ---- TLS probes: the analyzer finds the offsets, this checks and attaches ----------- */

/* The file is pid's own program (its /proc/PID/exe, compared by device and inode; a stat,
 * nothing opened): probed in every process running it (collector/tls_links.h). */
static enum tls_link_scope scope_of(uint32_t pid, int fd)
{
	struct stat exe, file;
	char path[40];

	snprintf(path, sizeof(path), "/proc/%u/exe", pid);
	if (stat(path, &exe) || fstat(fd, &file))
		return TLS_LINK_PROCESS;
	return exe.st_dev == file.st_dev && exe.st_ino == file.st_ino ? TLS_LINK_PROGRAM : TLS_LINK_PROCESS;
}

static int h_tls_attach(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m)
{
	const struct ctl_tls_attach *r = m->payload;
	struct tls_verify_verdict v;
	int fd, err;

	if (!c->tls)
		return reply_err(cc, m, -EOPNOTSUPP, -1);
	if (!tasks__task_targets(c->tasks, cc->shard, r->task_id, EMBER_TASK_NETWORK, r->pid) ||
	    target_policy__check(c->policy, r->pid) == -EPERM) {
		c->stats[CTL_STAT_CTL_DENIED]++;
		return reply_err(cc, m, -EPERM, -1);
	}
	if (!r->npoints || r->npoints > CTL_TLS_MAX_POINTS)
		return reply_err(cc, m, -EINVAL, -1);
	fd = broker__open_file(c->broker, r->pid, r->start, r->end);
	if (fd < 0)
		return reply_err(cc, m, fd, -1);
	err = tls_links__add(c->tls, r->task_id, fd, r->pid, scope_of(r->pid, fd), r->pts, r->npoints, &v);
	close(fd);
	if (err && v.why != TLS_VERIFY_OK)
		log_warn("TLS probes for task %llu in pid %u refused: point %u (offset 0x%llx, cookie 0x%llx): %s",
			 (unsigned long long)r->task_id, r->pid, v.index, (unsigned long long)r->pts[v.index].off,
			 (unsigned long long)r->pts[v.index].cookie, tls_verify__why_name(v.why));
	else if (err)
		log_warn("TLS probes for task %llu in pid %u refused: %s", (unsigned long long)r->task_id, r->pid,
			 strerror(-err));
	return reply_err(cc, m, err, -1);
}

/*
 * Caps for connections of the shard's network targets: a cap only ever
 * lowers what the program copies of a process's calls, and only of a
 * process the asking analyzer already receives every call of.
 */
static int h_net_caps(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m)
{
	const struct ctl_net_caps *r = m->payload;
	uint32_t mask = profile_kind__mask(PROFILE_KIND_NETWORK), ok_tgid = 0, bad_tgid = 0;
	struct ctl_net_caps_ans a = { 0 };

	if (!c->hooks || !c->hooks->net_cap)
		a.err = -EOPNOTSUPP;
	for (uint32_t i = 0; !a.err && i < r->n; i++) {
		struct ctl_net_cap e;
		bool ok;

		memcpy(&e, &r->caps[i], sizeof(e));
		/* (the last tgid found and the last refused, 0 for none yet: never a target) */
		if (!e.cap.tgid)
			ok = false;
		else if (e.cap.tgid == ok_tgid)
			ok = true;
		else if (e.cap.tgid == bad_tgid)
			ok = false;
		else
			ok = tasks__targets(c->tasks, cc->shard, mask, e.cap.tgid, false);
		*(ok ? &ok_tgid : &bad_tgid) = e.cap.tgid;
		if (!ok || !e.ino || e.cap.read > NET_MAX_PAYLOAD || e.cap.write > NET_MAX_PAYLOAD) {
			c->stats[CTL_STAT_NET_CAPS_REFUSED]++;
		} else if (c->hooks->net_cap(c->hooks_ctx, e.ino, &e.cap)) {
			c->stats[CTL_STAT_NET_CAPS_FAILED]++;
		} else {
			c->stats[CTL_STAT_NET_CAPS_WRITTEN]++;
			a.written++;
		}
	}
	return ctl__send(cc->fd, CTL_ANS_NET_CAPS, m->seq, &a, sizeof(a), NULL, 0);
}

_Static_assert(CTL_STAT_TLS_REFUSED_INSN - CTL_STAT_TLS_REFUSED_COOKIE + 1 == TLS_VERIFY_WHY_MAX - 1,
	       "one collector counter per reason collector/tls_verify refuses a point for");

void ctl_server__collect_stats(struct collector *c)
{
	struct broker_stats b;
	struct target_policy_stats p;
	struct shm_ring_stats rs;

	if (c->hooks && c->hooks->collect_stats)
		c->hooks->collect_stats(c->hooks_ctx, c->stats);
	if (c->unwind) {
		struct unwind_store_stats us;

		unwind_store__stats(c->unwind, &us);
		c->stats[CTL_STAT_UNWIND_TABLES] = us.tables;
		c->stats[CTL_STAT_UNWIND_ROWS] = us.rows;
		c->stats[CTL_STAT_UNWIND_ROWS_MAX] = us.rows_max;
		c->stats[CTL_STAT_UNWIND_PROCS] = us.procs;
		c->stats[CTL_STAT_UNWIND_REFUSED] = us.refused;
	}
	if (c->tls) {
		struct tls_links_stats ts;

		tls_links__stats(c->tls, &ts);
		c->stats[CTL_STAT_TLS_FILES] = ts.files;
		c->stats[CTL_STAT_TLS_PROGRAMS] = ts.programs;
		c->stats[CTL_STAT_TLS_VERIFY_SKIPPED] = ts.verify_skipped;
		c->stats[CTL_STAT_TLS_GONE] = ts.gone;
		c->stats[CTL_STAT_TLS_MERGED] = ts.merged;
		c->stats[CTL_STAT_TLS_POINTS] = ts.points;
		c->stats[CTL_STAT_TLS_REFUSED] = ts.refused;
		c->stats[CTL_STAT_TLS_REFUSED_COOKIE] = ts.refused_cookie;
		c->stats[CTL_STAT_TLS_REFUSED_FILE] = ts.refused_file;
		c->stats[CTL_STAT_TLS_REFUSED_SEGMENT] = ts.refused_segment;
		c->stats[CTL_STAT_TLS_REFUSED_FUNCTION] = ts.refused_function;
		c->stats[CTL_STAT_TLS_REFUSED_OUTSIDE] = ts.refused_outside;
		c->stats[CTL_STAT_TLS_REFUSED_BOUNDARY] = ts.refused_boundary;
		c->stats[CTL_STAT_TLS_REFUSED_INSN] = ts.refused_insn;
	}
	broker__stats(c->broker, &b);
	c->stats[CTL_STAT_FD_BROKER_MISSING] = b.missing;
	c->stats[CTL_STAT_FD_BROKER_SYMLINK] = b.symlink;
	c->stats[CTL_STAT_FD_BROKER_NOT_REGULAR] = b.not_regular;
	c->stats[CTL_STAT_FD_BROKER_OWNER] = b.owner;
	c->stats[CTL_STAT_FD_BROKER_STALE] = b.stale;
	target_policy__stats(c->policy, &p);
	c->stats[CTL_STAT_ATTACH_REFUSED_OWN] = p.refused_own;
	c->stats[CTL_STAT_ATTACH_REFUSED_KTHREAD] = p.refused_kthread;
	c->stats[CTL_STAT_ATTACH_REFUSED_USER] = p.refused_user;
	c->stats[CTL_STAT_ATTACH_REFUSED_CGROUP] = p.refused_cgroup;
	c->stats[CTL_STAT_TASKS_ACTIVE] = tasks__count(c->tasks, TASKS_ANY);
	c->stats[CTL_STAT_RING_RECORDS] = c->stats[CTL_STAT_RING_DROPS] = 0;
	c->stats[CTL_STAT_RING_DROP_BYTES] = c->stats[CTL_STAT_RING_HOSTILE_CONS] = 0;
	for (unsigned s = 0; s < c->nshards; s++) {
		shm_ring__stats(c->shards[s].ring, &rs);
		c->stats[CTL_STAT_RING_RECORDS] += rs.produced;
		c->stats[CTL_STAT_RING_DROPS] += rs.drops;
		c->stats[CTL_STAT_RING_DROP_BYTES] += rs.drop_bytes;
		c->stats[CTL_STAT_RING_HOSTILE_CONS] += rs.hostile_cons;
	}
}

static int h_stats(struct collector *c, struct ctl_conn *cc, const struct ctl_msg *m)
{
	struct ctl_stats_ans a = { .n = CTL_STAT_MAX };

	ctl_server__collect_stats(c);
	memcpy(a.v, c->stats, sizeof(a.v));
	return ctl__send(cc->fd, CTL_ANS_STATS, m->seq, &a, sizeof(a), NULL, 0);
}

/* What may be asked, by whom, when (OpenSSH monitor style). */
enum { F_HELLO_FIRST = 1, F_NEEDS_HELLO = 2, F_ADMIN_OK = 4 };
static const struct { uint16_t type; unsigned flags; handler_fn fn; } handlers[] = {
	{ CTL_REQ_HELLO, F_HELLO_FIRST, h_hello },
	{ CTL_REQ_ATTACH, F_NEEDS_HELLO, h_attach },
	{ CTL_REQ_DETACH, F_NEEDS_HELLO, h_detach },
	{ CTL_REQ_START, F_NEEDS_HELLO, h_start },
	{ CTL_REQ_OPEN_MAPS, F_NEEDS_HELLO, h_open_maps },
	{ CTL_REQ_OPEN_FILE, F_NEEDS_HELLO, h_open_file },
	{ CTL_REQ_OPEN_KALLSYMS, F_NEEDS_HELLO, h_open_kallsyms },
	{ CTL_REQ_OPEN_PERF_MAP, F_NEEDS_HELLO, h_open_perf_map },
	{ CTL_REQ_OPEN_DEBUG_BUILD_ID, F_NEEDS_HELLO, h_open_debug_build_id },
	{ CTL_REQ_OPEN_DEBUGLINK, F_NEEDS_HELLO, h_open_debuglink },
	{ CTL_REQ_UNWIND_TABLE, F_NEEDS_HELLO, h_unwind_table },
	{ CTL_REQ_UNWIND_ROWS, F_NEEDS_HELLO, h_unwind_rows },
	{ CTL_REQ_UNWIND_PROC, F_NEEDS_HELLO, h_unwind_proc },
	{ CTL_REQ_TLS_ATTACH, F_NEEDS_HELLO, h_tls_attach },
	{ CTL_REQ_NET_CAPS, F_NEEDS_HELLO, h_net_caps },
	{ CTL_REQ_PY_PROC, F_NEEDS_HELLO, h_py_proc },
	{ CTL_REQ_JAVA_ATTACH, F_NEEDS_HELLO, h_java_attach },
	{ CTL_REQ_STATS, F_ADMIN_OK, h_stats },
};

struct ctl_conn *ctl_server__conn(struct collector *c, int fd, uid_t uid, pid_t pid)
{
	struct ctl_conn *cc;

	if ((uid != c->analyzer_uid && uid != 0) || uid == c->exporter_uid) {
		c->stats[CTL_STAT_CTL_DENIED]++;
		log_warn("refused control connection from uid %u", (unsigned)uid);
		close(fd);
		return NULL;
	}
	cc = calloc(1, sizeof(*cc));
	if (!cc) {
		close(fd);
		return NULL;
	}
	cc->fd = fd;
	cc->uid = uid;
	cc->pid = pid;
	/* Root (the CLI) may only ask for stats, unless root is the analyzer uid (tests). */
	cc->is_analyzer = uid == c->analyzer_uid;
	return cc;
}

struct ctl_conn *ctl_server__accept(struct collector *c, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
		c->stats[CTL_STAT_CTL_DENIED]++;
		close(fd);
		return NULL;
	}
	return ctl_server__conn(c, fd, cred.uid, cred.pid);
}

int ctl_server__fd(const struct ctl_conn *cc)
{
	return cc->fd;
}

int ctl_server__handle_frame(struct collector *c, struct ctl_conn *cc, const void *buf, size_t n, unsigned nfds)
{
	struct ctl_msg m;
	int r;

	c->stats[CTL_STAT_CTL_REQUESTS]++;
	r = ctl__decode(buf, n, &m);
	if (r < 0 || nfds || (m.type & 1)) {
		c->stats[CTL_STAT_CTL_MALFORMED]++;
		log_warn("malformed control request from pid %d (%s): closing the connection", (int)cc->pid,
			 r < 0 ? strerror(-r) : "unexpected type or fds");
		return -1;
	}
	for (unsigned i = 0; i < ARRAY_SIZE(handlers); i++) {
		if (handlers[i].type != m.type)
			continue;
		unsigned f = handlers[i].flags;
		int allowed = cc->is_analyzer ? ((f & F_HELLO_FIRST) ? !cc->hello : (f & F_ADMIN_OK) || cc->hello)
					      : !!(f & F_ADMIN_OK);
		if (!allowed) {
			c->stats[CTL_STAT_CTL_DENIED]++;
			log_warn("control request %s not permitted now from pid %d: closing the connection",
				 ctl__type_name(m.type), (int)cc->pid);
			return -1;
		}
		r = handlers[i].fn(c, cc, &m);
		return r < 0 ? -1 : 0;
	}
	c->stats[CTL_STAT_CTL_MALFORMED]++;
	return -1;
}

int ctl_server__handle(struct collector *c, struct ctl_conn *cc)
{
	/* Payloads are read in place as their structs: keep them aligned. */
	_Alignas(8) char buf[CTL_MAX_FRAME];
	int fds[CTL_MAX_FDS];
	unsigned nfds = 0;
	int n;

	n = ctl__recv(cc->fd, buf, sizeof(buf), fds, CTL_MAX_FDS, &nfds);
	for (unsigned i = 0; i < nfds; i++) /* nobody may send us fds */
		close(fds[i]);
	if (n == -EAGAIN)
		return 0;
	if (n <= 0)
		return -1;
	return ctl_server__handle_frame(c, cc, buf, (size_t)n, nfds);
}

void ctl_server__close(struct collector *c, struct ctl_conn *cc)
{
	if (!cc)
		return;
	if (cc->hello) {
		c->shards[cc->shard].connected = 0;
		c->shards[cc->shard].orphaned_since = timeutil__now_ns(CLOCK_MONOTONIC);
		log_info("analyzer of shard %u disconnected", cc->shard);
	}
	close(cc->fd);
	free(cc);
}
