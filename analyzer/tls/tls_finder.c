#include "analyzer/tls/tls_finder.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/tls/tls_probe.h"
#include "bpf/net_abi.h"
#include "common/timeutil.h"
#include "symbolizer/maps.h"

#define MAX_PROCS 1024
#define MAX_ASKED 1024

/* What one file holds (examined once). */
struct tfile {
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	int lib;                       /* enum tls_lib_kind, -1: unreadable */
	uint32_t npoints;
	struct ctl_tls_point *pts;
};

/* A process's executable mappings as last seen: a signature, to skip unchanged ones. */
struct tproc { uint32_t pid; uint64_t task_id; uint64_t sig; uint64_t ready_ns; };

/* Files a task has asked to be probed in a process. */
struct tasked { uint64_t task_id; uint32_t pid, dev_major, dev_minor; uint64_t inode; };

struct tls_finder {
	struct tls_finder_opts o;
	struct tfile *files;
	size_t nfiles;
	struct tproc procs[MAX_PROCS];
	size_t nprocs;
	struct tasked asked[MAX_ASKED];
	size_t nasked;
	struct tls_finder_stats st;
	bool unsupported;              /* the collector answered EOPNOTSUPP: this kernel has no uprobe.multi */
};

struct tls_finder *tls_finder__new(const struct tls_finder_opts *o)
{
	struct tls_finder *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->o = *o;
	if (!f->o.max_files)
		f->o.max_files = 4096;
	f->files = calloc(f->o.max_files, sizeof(*f->files));
	if (!f->files) {
		free(f);
		errno = ENOMEM;
		return NULL;
	}
	return f;
}

static void files_clear(struct tls_finder *f)
{
	for (size_t i = 0; i < f->nfiles; i++)
		free(f->files[i].pts);
	f->nfiles = 0;
}

struct tls_finder *tls_finder__free(struct tls_finder *f)
{
	if (!f)
		return NULL;
	files_clear(f);
	free(f->files);
	free(f);
	return NULL;
}

void tls_finder__stats(const struct tls_finder *f, struct tls_finder_stats *ret)
{
	*ret = f->st;
}

void tls_finder__forget_task(struct tls_finder *f, uint64_t task_id)
{
	for (size_t i = 0; i < f->nasked;)
		if (f->asked[i].task_id == task_id)
			f->asked[i] = f->asked[--f->nasked];
		else
			i++;
	for (size_t i = 0; i < f->nprocs;)
		if (f->procs[i].task_id == task_id)
			f->procs[i] = f->procs[--f->nprocs];
		else
			i++;
}

/* The file behind mapping e, examined now if it is new. */
static struct tfile *file_of(struct tls_finder *f, uint32_t pid, const struct maps_entry *e)
{
	struct tls_probe_set set;
	struct tfile *t;
	int fd, r;

	for (size_t i = 0; i < f->nfiles; i++) {
		t = &f->files[i];
		if (t->inode == e->inode && t->dev_major == e->dev_major && t->dev_minor == e->dev_minor)
			return t;
	}
	if (f->nfiles == f->o.max_files)
		files_clear(f);  /* rare (thousands of distinct executables): examine again */
	fd = ctl_client__open_file(f->o.cc, pid, e->start, e->end);
	if (fd < 0)
		return NULL;     /* gone, or not the mapping any more: the next look tries again */
	t = &f->files[f->nfiles++];
	memset(t, 0, sizeof(*t));
	t->dev_major = e->dev_major;
	t->dev_minor = e->dev_minor;
	t->inode = e->inode;
	memset(&set, 0, sizeof(set));
	r = tls_probe__find_fd(fd, &set);
	close(fd);
	f->st.files_examined++;
	if (r == -ENOTSUP && set.lib == TLS_LIB_GO) {
		f->st.go_unsupported++;
		t->lib = TLS_LIB_NONE;
		return t;
	}
	if (r && r != -ENOEXEC) {
		f->st.errors++;
		t->lib = -1;
		return t;
	}
	t->lib = r ? TLS_LIB_NONE : set.lib;
	if (t->lib == TLS_LIB_NONE || !set.n)
		return t;
	t->pts = calloc(set.n, sizeof(*t->pts));
	if (!t->pts) {
		t->lib = -1;
		return t;
	}
	for (size_t i = 0; i < set.n && i < CTL_TLS_MAX_POINTS; i++) {
		t->pts[i].off = set.pts[i].off;
		t->pts[i].cookie = NET_TLS_COOKIE(set.pts[i].fn, set.pts[i].kind);
		t->npoints++;
	}
	f->st.files_openssl += t->lib == TLS_LIB_OPENSSL;
	f->st.files_go += t->lib == TLS_LIB_GO;
	return t;
}

static int asked(const struct tls_finder *f, uint64_t task_id, uint32_t pid, const struct tfile *t)
{
	for (size_t i = 0; i < f->nasked; i++)
		if (f->asked[i].task_id == task_id && f->asked[i].pid == pid && f->asked[i].inode == t->inode &&
		    f->asked[i].dev_major == t->dev_major && f->asked[i].dev_minor == t->dev_minor)
			return 1;
	return 0;
}

static int ask(struct tls_finder *f, uint64_t task_id, uint32_t pid, const struct maps_entry *e, struct tfile *t)
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
	memcpy(r->pts, t->pts, t->npoints * sizeof(*t->pts));
	err = ctl_client__tls_attach(f->o.cc, r);
	free(r);
	if (err == -EOPNOTSUPP) {
		f->unsupported = true;
		return err;
	}
	if (err == -ESRCH || err == -EPERM)
		return err;     /* the process exited first (the collector follows it no more): not a refusal */
	if (err) {
		f->st.refused++;
		return err;
	}
	f->st.attached++;
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
		f->nprocs = 0;   /* forget the signatures: the next looks compare nothing, still correct */
	f->procs[f->nprocs] = (struct tproc){ .pid = pid, .task_id = task_id };
	return &f->procs[f->nprocs++];
}

int tls_finder__process(struct tls_finder *f, uint64_t task_id, uint32_t pid)
{
	struct proc_maps *pm;
	struct tproc *p;
	uint64_t sig;
	int fd, err = 0;
	bool probed = false;

	if (f->unsupported) {
		f->st.unsupported++;
		return -EOPNOTSUPP;
	}
	fd = ctl_client__open_maps(f->o.cc, pid);
	if (fd == -ESRCH || fd == -ENOENT || fd == -EPERM) {
		/* Gone before it was looked at (the collector refuses a pid it follows no more: an
		 * exited child): whatever TLS it spoke, no probe saw. */
		p = proc_of(f, task_id, pid);
		if (!p->ready_ns)
			p->ready_ns = TLS_FINDER_NEVER;
	}
	if (fd < 0)
		return fd;
	pm = proc_maps__read(fd, 0);
	close(fd);
	if (!pm)
		return -errno;
	sig = proc_maps__exec_signature(pm);
	p = proc_of(f, task_id, pid);
	if (!proc_maps__count(pm)) {
		/* No memory: a process that has exited (a zombie), whatever TLS it spoke no probe saw. */
		if (!p->ready_ns)
			p->ready_ns = TLS_FINDER_NEVER;
		proc_maps__free(pm);
		return -ESRCH;
	}
	if (p->sig == sig) {
		proc_maps__free(pm);
		return 0;
	}
	p->sig = sig;
	for (size_t i = 0; i < proc_maps__count(pm); i++) {
		const struct maps_entry *e = proc_maps__entry(pm, i);
		struct tfile *t;
		int r;

		if (e->kind != MAPS_FILE || !(e->perms & MAPS_PERM_X) || e->deleted)
			continue;
		t = file_of(f, pid, e);
		if (!t)
			p->sig = 0;   /* not opened (a race with munmap, a transient error): looked at again next time */
		if (!t || t->lib <= TLS_LIB_NONE)
			continue;
		r = ask(f, task_id, pid, e, t);
		if (r == -EOPNOTSUPP) {
			f->st.unsupported++;
			err = r;
			break;
		}
		if ((r == -ESRCH || r == -EPERM) && !p->ready_ns)
			p->ready_ns = TLS_FINDER_NEVER;
		if (r && !err)
			err = r;
		probed |= !r;
	}
	/* After the collector's answer: its links are in place by then. */
	if (probed && !p->ready_ns)
		p->ready_ns = timeutil__now_ns(CLOCK_MONOTONIC);
	proc_maps__free(pm);
	return err;
}

uint64_t tls_finder__ready_ns(const struct tls_finder *f, uint32_t pid)
{
	uint64_t first = 0;

	for (size_t i = 0; f && i < f->nprocs; i++)
		if (f->procs[i].pid == pid && f->procs[i].ready_ns && (!first || f->procs[i].ready_ns < first))
			first = f->procs[i].ready_ns;
	return first;
}
