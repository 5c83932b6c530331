#include "analyzer/mappings.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/ctl_client.h"
#include "common/timeutil.h"

#define DEFAULT_MAX_FILES 4096
#define DEFAULT_MAX_PROCS 4096
#define DEFAULT_PERIOD_MS 2000

/* A handler's interest in a process; sig: the executable mappings of its last look (0: none yet). */
struct sub {
	int hid;
	unsigned flags;
	uint64_t tag;
	uint64_t sig;
};

struct watcher {
	uint32_t pid;
	uint32_t nsubs;
	/* mappings__look_soon(): its next look (0: none), its last look and event, quick looks in a row */
	uint64_t due_ms, looked_ms, event_ms;
	uint32_t quick;
	struct sub subs[MAPPINGS_MAX_SUBS];
};

/* A file, by the identity the maps line gives it, and what each handler made of it. */
struct mfile {
	uint32_t dev_major, dev_minor;
	uint64_t ino;
	uint32_t examined;                       /* a bit per handler */
	void *data[MAPPINGS_MAX_HANDLERS];
};

struct mappings {
	struct mappings_opts o;
	struct mappings_handler h[MAPPINGS_MAX_HANDLERS];
	int nh;
	struct watcher *procs;
	uint32_t nprocs, cap_procs;
	struct mfile *files;
	uint32_t nfiles, cap_files;
	uint64_t last_tick_ms;
	bool ticked;
	struct mappings_stats st;
};

static int broker_maps(void *ctx, uint32_t pid)
{
	return ctl_client__open_maps(ctx, pid);
}

static int broker_file(void *ctx, uint32_t pid, uint64_t start, uint64_t end)
{
	return ctl_client__open_file(ctx, pid, start, end);
}

void mappings__broker_opts(struct ctl_client *cc, struct mappings_opts *ret)
{
	*ret = (struct mappings_opts){ .ctx = cc, .open_maps = broker_maps, .open_file = broker_file };
}

struct mappings *mappings__new(const struct mappings_opts *o)
{
	struct mappings *m;

	if (!o || !o->open_maps || !o->open_file) {
		errno = EINVAL;
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->o = *o;
	if (!m->o.max_files)
		m->o.max_files = DEFAULT_MAX_FILES;
	if (!m->o.max_procs)
		m->o.max_procs = DEFAULT_MAX_PROCS;
	if (!m->o.period_ms)
		m->o.period_ms = DEFAULT_PERIOD_MS;
	return m;
}

static void file_drop(struct mappings *m, struct mfile *f, int hid)
{
	if (f->data[hid])
		m->h[hid].release(m->h[hid].ctx, f->data[hid]);
	f->data[hid] = NULL;
	f->examined &= ~(1u << hid);
}

static void files_clear(struct mappings *m)
{
	for (uint32_t i = 0; i < m->nfiles; i++)
		for (int k = 0; k < m->nh; k++)
			file_drop(m, &m->files[i], k);
	m->nfiles = 0;
}

struct mappings *mappings__free(struct mappings *m)
{
	if (m) {
		files_clear(m);
		free(m->files);
		free(m->procs);
		free(m);
	}
	return NULL;
}

int mappings__add_handler(struct mappings *m, const struct mappings_handler *h)
{
	if (!m || !h || !h->attach || (h->examine && !h->release))
		return -EINVAL;
	if (m->nh == MAPPINGS_MAX_HANDLERS)
		return -ENOSPC;
	m->h[m->nh] = *h;
	return m->nh++;
}

static struct watcher *watcher_of(struct mappings *m, uint32_t pid)
{
	for (uint32_t i = 0; i < m->nprocs; i++)
		if (m->procs[i].pid == pid)
			return &m->procs[i];
	return NULL;
}

int mappings__follow(struct mappings *m, int hid, uint32_t pid, uint64_t tag, unsigned flags)
{
	struct watcher *w;

	if (!m || hid < 0 || hid >= m->nh)
		return -EINVAL;
	w = watcher_of(m, pid);
	for (uint32_t i = 0; w && i < w->nsubs; i++)
		if (w->subs[i].hid == hid && w->subs[i].tag == tag) {
			w->subs[i].flags |= flags;
			return 0;
		}
	if ((w && w->nsubs == MAPPINGS_MAX_SUBS) || (!w && m->nprocs == m->o.max_procs)) {
		m->st.follow_refused++;
		return -ENOSPC;
	}
	if (!w) {
		if (m->nprocs == m->cap_procs) {
			uint32_t cap = m->cap_procs ? m->cap_procs * 2 : 16;
			struct watcher *p = reallocarray(m->procs, cap, sizeof(*p));

			if (!p)
				return -ENOMEM;
			m->procs = p;
			m->cap_procs = cap;
		}
		w = &m->procs[m->nprocs++];
		*w = (struct watcher){ .pid = pid };
	}
	w->subs[w->nsubs++] = (struct sub){ .hid = hid, .flags = flags, .tag = tag };
	return 0;
}

/* Ends subscription si of watcher wi, and the watcher with its last one (the last watcher takes its place). */
static void sub_remove(struct mappings *m, uint32_t wi, uint32_t si)
{
	struct watcher *w = &m->procs[wi];
	struct sub s = w->subs[si];

	memmove(&w->subs[si], &w->subs[si + 1], (w->nsubs - si - 1) * sizeof(w->subs[0]));
	w->nsubs--;
	if (m->h[s.hid].detach)
		m->h[s.hid].detach(m->h[s.hid].ctx, w->pid, s.tag);
	if (!w->nsubs)
		m->procs[wi] = m->procs[--m->nprocs];
}

void mappings__unfollow(struct mappings *m, int hid, uint32_t pid, uint64_t tag)
{
	for (uint32_t wi = 0; m && wi < m->nprocs; wi++) {
		if (m->procs[wi].pid != pid)
			continue;
		for (uint32_t si = 0; si < m->procs[wi].nsubs; si++)
			if (m->procs[wi].subs[si].hid == hid && m->procs[wi].subs[si].tag == tag) {
				sub_remove(m, wi, si);
				return;
			}
		return;
	}
}

void mappings__unfollow_tag(struct mappings *m, int hid, uint64_t tag)
{
	/* Backwards: a removed watcher's place is taken by one already seen. */
	for (uint32_t wi = m ? m->nprocs : 0; wi-- > 0;)
		for (uint32_t si = m->procs[wi].nsubs; si-- > 0;)
			if (m->procs[wi].subs[si].hid == hid && m->procs[wi].subs[si].tag == tag) {
				uint32_t left = m->procs[wi].nsubs - 1;

				sub_remove(m, wi, si);
				if (!left)
					break;
			}
}

/* The file behind mapping e, remembered from now on (NULL: no memory). */
static struct mfile *file_get(struct mappings *m, const struct maps_entry *e)
{
	struct mfile *f;

	for (uint32_t i = 0; i < m->nfiles; i++) {
		f = &m->files[i];
		if (f->ino == e->inode && f->dev_major == e->dev_major && f->dev_minor == e->dev_minor)
			return f;
	}
	if (m->nfiles == m->o.max_files) {
		files_clear(m);   /* rare (thousands of distinct executables): examined again */
		m->st.files_cleared++;
	}
	if (m->nfiles == m->cap_files) {
		uint32_t cap = m->cap_files ? m->cap_files * 2 : 64;
		struct mfile *p;

		if (cap > m->o.max_files)
			cap = m->o.max_files;
		p = reallocarray(m->files, cap, sizeof(*p));
		if (!p)
			return NULL;
		m->files = p;
		m->cap_files = cap;
	}
	f = &m->files[m->nfiles++];
	*f = (struct mfile){ .dev_major = e->dev_major, .dev_minor = e->dev_minor, .ino = e->inode };
	return f;
}

/* Handler hid examines f through pid's mapping e.  0, or the opener's -errno (f stays unexamined). */
static int file_examine(struct mappings *m, struct mfile *f, int hid, uint32_t pid, const struct maps_entry *e)
{
	const struct mappings_handler *h = &m->h[hid];
	void *data = NULL;
	int fd, r;

	fd = m->o.open_file(m->o.ctx, pid, e->start, e->end);
	if (fd < 0) {
		m->st.open_errors++;
		return fd;
	}
	r = h->examine(h->ctx, fd, e, &data);
	close(fd);
	m->st.h[hid].examined++;
	if (r) {
		m->st.h[hid].failures++;
		if (data)
			h->release(h->ctx, data);
		data = NULL;
	}
	f->data[hid] = data;
	f->examined |= 1u << hid;
	return 0;
}

/* A change: attach for every mapping of pm that handler hid wants. */
static void attach_all(struct mappings *m, int hid, struct mappings_look *l, const struct proc_maps *pm)
{
	const struct mappings_handler *h = &m->h[hid];

	for (size_t i = 0; i < proc_maps__count(pm); i++) {
		const struct maps_entry *e = proc_maps__entry(pm, i);
		struct mfile *f = NULL;
		int oerr = 0, r;

		if (h->wants && !h->wants(h->ctx, l, e))
			continue;
		if (h->examine && e->kind == MAPS_FILE && !e->deleted) {
			f = file_get(m, e);
			if (!f)
				oerr = -ENOMEM;
			else if (!(f->examined & (1u << hid)))
				oerr = file_examine(m, f, hid, l->pid, e);
		}
		m->st.h[hid].attached++;
		r = h->attach(h->ctx, l, e, f ? f->data[hid] : NULL, oerr);
		if (r == -ESTALE && f) {
			file_drop(m, f, hid);
			oerr = file_examine(m, f, hid, l->pid, e);
			m->st.h[hid].attached++;
			r = h->attach(h->ctx, l, e, f->data[hid], oerr);
		}
		if (r)
			m->st.h[hid].failures++;
	}
}

static void report(const struct mappings_handler *h, const struct mappings_look *l, int r, uint64_t t0)
{
	if (h->report)
		h->report(h->report_ctx, l, r, timeutil__now_ns(CLOCK_MONOTONIC) - t0);
}

/* One read of w's maps for its subscriptions (the timer's only, or all). */
static void look_at(struct mappings *m, struct watcher *w, bool timer_only)
{
	struct mappings_look looks[MAPPINGS_MAX_SUBS];
	bool on[MAPPINGS_MAX_SUBS] = { false }, any = false;
	uint64_t t0 = timeutil__now_ns(CLOCK_MONOTONIC), sig = 0;
	struct proc_maps *pm = NULL;
	int err = 0, fd;

	for (uint32_t i = 0; i < w->nsubs; i++) {
		const struct mappings_handler *h = &m->h[w->subs[i].hid];
		int r;

		if (timer_only && !(w->subs[i].flags & MAPPINGS_F_TIMER))
			continue;
		looks[i] = (struct mappings_look){ .pid = w->pid, .tag = w->subs[i].tag };
		r = h->begin ? h->begin(h->ctx, &looks[i]) : 0;
		if (r) {
			report(h, &looks[i], r, t0);
			continue;
		}
		on[i] = any = true;
	}
	if (!any)
		return;
	m->st.looks++;
	fd = m->o.open_maps(m->o.ctx, w->pid);
	if (fd < 0) {
		err = fd;
	} else {
		pm = proc_maps__read(fd, 0);
		err = pm ? 0 : -errno;
		close(fd);
	}
	if (err)
		m->st.maps_errors++;
	else
		sig = proc_maps__exec_signature(pm);
	for (uint32_t i = 0; i < w->nsubs; i++) {
		struct sub *s = &w->subs[i];
		const struct mappings_handler *h = &m->h[s->hid];
		struct mappings_look *l = &looks[i];
		int r;

		if (!on[i])
			continue;
		l->err = err;
		l->nmaps = proc_maps__count(pm);
		l->changed = !err && sig != s->sig;
		if (l->changed)
			attach_all(m, s->hid, l, pm);
		r = h->end ? h->end(h->ctx, l) : l->err;
		if (l->again)
			s->sig = 0;
		else if (!err)
			s->sig = sig;
		report(h, l, r, t0);
	}
	proc_maps__free(pm);
}

int mappings__look(struct mappings *m, uint32_t pid)
{
	struct watcher *w = m ? watcher_of(m, pid) : NULL;

	if (!w)
		return -ENOENT;
	look_at(m, w, false);
	return 0;
}

int mappings__look_soon(struct mappings *m, uint32_t pid, uint64_t now_ms)
{
	struct watcher *w = m ? watcher_of(m, pid) : NULL;
	uint64_t due;

	if (!w)
		return -ENOENT;
	w->event_ms = now_ms;
	if (!w->due_ms) {
		due = now_ms + MAPPINGS_SETTLE_MS;
		if (w->quick >= MAPPINGS_QUICK_LOOKS && w->looked_ms + MAPPINGS_LOOK_GAP_MS > due)
			due = w->looked_ms + MAPPINGS_LOOK_GAP_MS;
		w->due_ms = due;
	}
	return 0;
}

uint64_t mappings__next_due(const struct mappings *m)
{
	uint64_t due = UINT64_MAX;

	for (uint32_t i = 0; m && i < m->nprocs; i++)
		if (m->procs[i].due_ms && m->procs[i].due_ms < due)
			due = m->procs[i].due_ms;
	return due;
}

void mappings__tick(struct mappings *m, uint64_t now_ms)
{
	if (!m)
		return;
	for (uint32_t i = 0; i < m->nprocs; i++) {
		struct watcher *w = &m->procs[i];

		if (!w->due_ms || now_ms < w->due_ms)
			continue;
		look_at(m, w, false);
		w->looked_ms = now_ms;
		w->due_ms = 0;
		/* an event just before this look: its library may still be mapping; look again, soon then less */
		if (w->event_ms + MAPPINGS_SETTLE_MS > now_ms) {
			w->quick++;
			w->due_ms = now_ms + (w->quick >= MAPPINGS_QUICK_LOOKS ? MAPPINGS_LOOK_GAP_MS : MAPPINGS_SETTLE_MS);
		} else {
			w->quick = 0;
		}
	}
	if (m->ticked && now_ms - m->last_tick_ms < m->o.period_ms)
		return;
	m->ticked = true;
	m->last_tick_ms = now_ms;
	for (uint32_t i = 0; i < m->nprocs; i++)
		look_at(m, &m->procs[i], true);
}

void mappings__stats(const struct mappings *m, struct mappings_stats *ret)
{
	*ret = m->st;
	ret->procs = m->nprocs;
	ret->files = m->nfiles;
}

const struct counter_def mappings_counters[MAPC_MAX] = {
	[MAPC_LOOKS] = { .name = "mappings_looks" },
	[MAPC_READ_ERRORS] = { .name = "mappings_read_errors" },
	[MAPC_PROCESSES] = { .name = "mappings_processes", .level = true },
	[MAPC_FILES] = { .name = "mappings_files", .level = true },
	[MAPC_FILES_CLEARED] = { .name = "mappings_files_cleared" },
	[MAPC_FOLLOW_REFUSED] = { .name = "mappings_follow_refused" },
	[MAPC_OPEN_ERRORS] = { .name = "mappings_open_errors" },
	[MAPC_EXAMINED] = { .name = "mappings_files_examined" },
	[MAPC_ATTACHED] = { .name = "mappings_attached" },
	[MAPC_HANDLER_FAILURES] = { .name = "mappings_handler_failures" },
};

void mappings__counters(const struct mappings *m, uint64_t ret[MAPC_MAX])
{
	struct mappings_stats st;

	mappings__stats(m, &st);
	ret[MAPC_LOOKS] = st.looks;
	ret[MAPC_READ_ERRORS] = st.maps_errors;
	ret[MAPC_PROCESSES] = st.procs;
	ret[MAPC_FILES] = st.files;
	ret[MAPC_FILES_CLEARED] = st.files_cleared;
	ret[MAPC_FOLLOW_REFUSED] = st.follow_refused;
	ret[MAPC_OPEN_ERRORS] = st.open_errors;
	ret[MAPC_EXAMINED] = ret[MAPC_ATTACHED] = ret[MAPC_HANDLER_FAILURES] = 0;
	for (unsigned i = 0; i < MAPPINGS_MAX_HANDLERS; i++) {
		ret[MAPC_EXAMINED] += st.h[i].examined;
		ret[MAPC_ATTACHED] += st.h[i].attached;
		ret[MAPC_HANDLER_FAILURES] += st.h[i].failures;
	}
}
