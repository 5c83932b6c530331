#include "analyzer/tls/tls_finder.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/tls/tls_probe.h"
#include "bpf/net_abi.h"
#include "common/timeutil.h"

#define MAX_PROCS 1024
#define MAX_ASKED 1024

/* What one file with TLS functions holds (examined once, through the mapping manager). */
struct tfile {
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	int lib;                       /* enum tls_lib_kind */
	uint32_t npoints;
	struct ctl_tls_point pts[];
};

/* When a task's probes were first in place in a process. */
struct tproc { uint32_t pid; uint64_t task_id; uint64_t ready_ns; };

/* Files a task has asked to be probed in a process. */
struct tasked { uint64_t task_id; uint32_t pid, dev_major, dev_minor; uint64_t inode; };

struct tls_finder {
	struct tls_finder_opts o;
	struct tproc procs[MAX_PROCS];
	size_t nprocs;
	struct tasked asked[MAX_ASKED];
	size_t nasked;
	uint64_t st[TLSF_MAX];
	bool unsupported;              /* the collector answered EOPNOTSUPP: this kernel has no uprobe.multi */
	/* The look under way: its process, its first error, whether a probe is in place. */
	struct tproc *cur;
	int look_err;
	bool probed;
};

struct tls_finder *tls_finder__new(const struct tls_finder_opts *o)
{
	struct tls_finder *f;

	if (!o || !o->cc) {
		errno = EINVAL;
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->o = *o;
	return f;
}

struct tls_finder *tls_finder__free(struct tls_finder *f)
{
	free(f);
	return NULL;
}

const struct counter_def tls_finder_counters[TLSF_MAX] = {
	[TLSF_FILES_EXAMINED] = { .name = "tls_files_examined" },
	[TLSF_FILES_OPENSSL] = { .name = "tls_files_openssl" },
	[TLSF_FILES_GO] = { .name = "tls_files_go" },
	[TLSF_GO_UNSUPPORTED] = { .name = "tls_go_unsupported" },
	[TLSF_ATTACHED] = { .name = "tls_attach_requests" },
	[TLSF_REFUSED] = { .name = "tls_attach_refused" },
	[TLSF_ERRORS] = { .name = "tls_file_errors" },
	[TLSF_UNSUPPORTED] = { .name = "tls_unsupported_processes" },
};

void tls_finder__stats(const struct tls_finder *f, uint64_t ret[TLSF_MAX])
{
	memcpy(ret, f->st, sizeof(f->st));
}

/* The manager's examine: the TLS functions of the file; NULL data when it has none. */
static int h_examine(void *ctx, int fd, const struct maps_entry *e, void **ret_data)
{
	struct tls_finder *f = ctx;
	struct tls_probe_set set;
	struct tfile *t;
	size_t n;
	int r;

	*ret_data = NULL;
	memset(&set, 0, sizeof(set));
	r = tls_probe__find_fd(fd, &set);
	f->st[TLSF_FILES_EXAMINED]++;
	if (r == -ENOTSUP && set.lib == TLS_LIB_GO) {
		f->st[TLSF_GO_UNSUPPORTED]++;
		return 0;
	}
	if (r && r != -ENOEXEC) {
		f->st[TLSF_ERRORS]++;
		return r;
	}
	if (r || set.lib == TLS_LIB_NONE)
		return 0;
	n = set.n < CTL_TLS_MAX_POINTS ? set.n : CTL_TLS_MAX_POINTS;
	t = calloc(1, sizeof(*t) + n * sizeof(t->pts[0]));
	if (!t)
		return -ENOMEM;
	*t = (struct tfile){ .dev_major = e->dev_major, .dev_minor = e->dev_minor, .inode = e->inode,
			     .lib = set.lib, .npoints = (uint32_t)n };
	for (size_t i = 0; i < n; i++) {
		t->pts[i].off = set.pts[i].off;
		t->pts[i].cookie = NET_TLS_COOKIE(set.pts[i].fn, set.pts[i].kind);
	}
	f->st[TLSF_FILES_OPENSSL] += n && t->lib == TLS_LIB_OPENSSL;
	f->st[TLSF_FILES_GO] += n && t->lib == TLS_LIB_GO;
	*ret_data = t;
	return 0;
}

static int asked(const struct tls_finder *f, uint64_t task_id, uint32_t pid, const struct tfile *t)
{
	for (size_t i = 0; i < f->nasked; i++)
		if (f->asked[i].task_id == task_id && f->asked[i].pid == pid && f->asked[i].inode == t->inode &&
		    f->asked[i].dev_major == t->dev_major && f->asked[i].dev_minor == t->dev_minor)
			return 1;
	return 0;
}

static int ask(struct tls_finder *f, uint64_t task_id, uint32_t pid, const struct maps_entry *e, const struct tfile *t)
{
	struct ctl_tls_attach *r;
	int err;

	if (asked(f, task_id, pid, t))
		return 0;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->task_id = task_id;
	r->pid = pid;
	r->start = e->start;
	r->end = e->end;
	r->npoints = t->npoints;
	memcpy(r->pts, t->pts, t->npoints * sizeof(t->pts[0]));
	err = ctl_client__tls_attach(f->o.cc, r);
	free(r);
	if (err == -EOPNOTSUPP) {
		f->unsupported = true;
		return err;
	}
	if (err == -ESRCH || err == -EPERM)
		return err;     /* the process exited first (the collector follows it no more): not a refusal */
	if (err) {
		f->st[TLSF_REFUSED]++;
		return err;
	}
	f->st[TLSF_ATTACHED]++;
	if (f->nasked == MAX_ASKED)
		f->nasked = 0;   /* asking again is harmless: the collector answers 0 for a file it probes */
	f->asked[f->nasked++] = (struct tasked){ task_id, pid, t->dev_major, t->dev_minor, t->inode };
	return 0;
}

static struct tproc *proc_of(struct tls_finder *f, uint64_t task_id, uint32_t pid)
{
	for (size_t i = 0; i < f->nprocs; i++)
		if (f->procs[i].pid == pid && f->procs[i].task_id == task_id)
			return &f->procs[i];
	if (f->nprocs == MAX_PROCS)
		f->nprocs = 0;   /* forget the oldest: a process looked at again starts over, still correct */
	f->procs[f->nprocs] = (struct tproc){ .pid = pid, .task_id = task_id };
	return &f->procs[f->nprocs++];
}

static int h_begin(void *ctx, struct mappings_look *l)
{
	struct tls_finder *f = ctx;

	if (f->unsupported) {
		f->st[TLSF_UNSUPPORTED]++;
		return -EOPNOTSUPP;
	}
	f->cur = proc_of(f, l->tag, l->pid);
	f->look_err = 0;
	f->probed = false;
	return 0;
}

static bool h_wants(void *ctx, const struct mappings_look *l, const struct maps_entry *e)
{
	return e->kind == MAPS_FILE && (e->perms & MAPS_PERM_X) && !e->deleted;
}

static int h_attach(void *ctx, struct mappings_look *l, const struct maps_entry *e, void *data, int open_err)
{
	struct tls_finder *f = ctx;
	int r;

	if (f->unsupported)
		return 0;        /* said during this look: nothing more is asked */
	if (open_err) {
		l->again = true; /* not opened (a race with munmap, a transient error): looked at again next time */
		return 0;
	}
	if (!data)
		return 0;
	r = ask(f, l->tag, l->pid, e, data);
	if (r == -EOPNOTSUPP) {
		f->st[TLSF_UNSUPPORTED]++;
		f->look_err = r;
		return 0;
	}
	if ((r == -ESRCH || r == -EPERM) && !f->cur->ready_ns)
		f->cur->ready_ns = TLS_FINDER_NEVER;
	if (r && !f->look_err)
		f->look_err = r;
	f->probed |= !r;
	return r == -ESRCH || r == -EPERM ? 0 : r;
}

static int h_end(void *ctx, struct mappings_look *l)
{
	struct tls_finder *f = ctx;
	struct tproc *p = f->cur;

	f->cur = NULL;
	if (l->err) {
		/* Gone before it was looked at (the collector refuses a pid it follows no more: an
		 * exited child): whatever TLS it spoke, no probe saw. */
		if ((l->err == -ESRCH || l->err == -ENOENT || l->err == -EPERM) && !p->ready_ns)
			p->ready_ns = TLS_FINDER_NEVER;
		return l->err;
	}
	if (!l->nmaps) {
		/* No memory: a process that has exited (a zombie), whatever TLS it spoke no probe saw. */
		if (!p->ready_ns)
			p->ready_ns = TLS_FINDER_NEVER;
		l->again = true;
		return -ESRCH;
	}
	if (!l->changed)
		return 0;
	/* After the collector's answer: its links are in place by then. */
	if (f->probed && !p->ready_ns)
		p->ready_ns = timeutil__now_ns(CLOCK_MONOTONIC);
	return f->look_err;
}

/* The task's subscription to pid ended: what it asked for there is forgotten. */
static void h_detach(void *ctx, uint32_t pid, uint64_t task_id)
{
	struct tls_finder *f = ctx;

	for (size_t i = 0; i < f->nasked;)
		if (f->asked[i].task_id == task_id && f->asked[i].pid == pid)
			f->asked[i] = f->asked[--f->nasked];
		else
			i++;
	for (size_t i = 0; i < f->nprocs;)
		if (f->procs[i].task_id == task_id && f->procs[i].pid == pid)
			f->procs[i] = f->procs[--f->nprocs];
		else
			i++;
}

static void h_release(void *ctx, void *data)
{
	(void)ctx;
	free(data);
}

void tls_finder__handler(struct tls_finder *f, struct mappings_handler *ret)
{
	*ret = (struct mappings_handler){
		.name = "tls", .ctx = f, .begin = h_begin, .wants = h_wants, .examine = h_examine,
		.attach = h_attach, .end = h_end, .detach = h_detach, .release = h_release,
	};
}

uint64_t tls_finder__ready_ns(const struct tls_finder *f, uint32_t pid)
{
	uint64_t first = 0;

	for (size_t i = 0; f && i < f->nprocs; i++)
		if (f->procs[i].pid == pid && f->procs[i].ready_ns && (!first || f->procs[i].ready_ns < first))
			first = f->procs[i].ready_ns;
	return first;
}
