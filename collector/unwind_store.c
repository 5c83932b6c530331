#include "collector/unwind_store.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define IDX_BITS 12
_Static_assert(UNWIND_STORE_MAX_TABLES == 1u << IDX_BITS, "table ids carry the index in IDX_BITS bits");

struct table {
	uint64_t key;
	uint64_t last_used;
	uint64_t idle_since_ns;  /* last written, or last released by a process */
	uint32_t first, nrows, written;
	uint32_t refs;         /* mappings of processes that use it */
	uint32_t shard;        /* the writer, until complete */
	uint32_t gen;          /* in the id: an id of an evicted table is not a valid id of its successor */
	uint32_t last_pc;      /* of the last row written: rows come sorted */
	bool used, complete;
};

struct slot {
	uint32_t tgid;
	bool used;
	uint32_t ntables;
	uint16_t tables[UNWIND_MAX_MAPS]; /* indices referenced, one per mapping with a table */
};

struct extent { uint32_t first, n; };

struct unwind_store {
	struct unwind_store_ops ops;
	struct extent ext[UNWIND_STORE_MAX_TABLES]; /* find_room()'s scratch */
	uint32_t max_rows, max_procs;
	uint64_t grace_ns;
	struct table tables[UNWIND_STORE_MAX_TABLES];
	struct slot *slots;
	uint64_t clock, rows_used, refused;
	uint32_t ntables, nprocs;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct unwind_store *unwind_store__new(uint32_t max_rows, uint32_t max_procs, uint64_t grace_ns,
				       const struct unwind_store_ops *ops)
{
	struct unwind_store *us;

	if (!max_rows || !max_procs || !ops || !ops->write_rows || !ops->set_proc) {
		errno = EINVAL;
		return NULL;
	}
	us = calloc(1, sizeof(*us));
	if (!us)
		return NULL;
	us->slots = calloc(max_procs, sizeof(*us->slots));
	if (!us->slots) {
		free(us);
		return NULL;
	}
	us->ops = *ops;
	us->max_rows = max_rows;
	us->max_procs = max_procs;
	us->grace_ns = grace_ns;
	return us;
}

struct unwind_store *unwind_store__free(struct unwind_store *us)
{
	if (us) {
		free(us->slots);
		free(us);
	}
	return NULL;
}

static uint32_t id_of(const struct unwind_store *us, const struct table *t)
{
	return (t->gen << IDX_BITS) | (uint32_t)(t - us->tables);
}

static struct table *by_id(struct unwind_store *us, uint32_t id)
{
	struct table *t = &us->tables[id & (UNWIND_STORE_MAX_TABLES - 1)];

	return t->used && t->gen == id >> IDX_BITS ? t : NULL;
}

static int cmp_extent(const void *a, const void *b)
{
	const struct extent *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

/* First fit among the gaps between the tables held; -ENOSPC. */
static int find_room(struct unwind_store *us, uint32_t nrows, uint32_t *ret_first)
{
	struct extent *ext = us->ext;
	uint32_t n = 0, at = 0;

	for (uint32_t i = 0; i < UNWIND_STORE_MAX_TABLES; i++)
		if (us->tables[i].used)
			ext[n++] = (struct extent){ us->tables[i].first, us->tables[i].nrows };
	qsort(ext, n, sizeof(ext[0]), cmp_extent);
	for (uint32_t i = 0; i <= n; i++) {
		uint32_t end = i < n ? ext[i].first : us->max_rows;

		if (end >= at && end - at >= nrows) {
			*ret_first = at;
			return 0;
		}
		if (i < n && ext[i].first + ext[i].n > at)
			at = ext[i].first + ext[i].n;
	}
	return -ENOSPC;
}

static void drop_table(struct unwind_store *us, struct table *t)
{
	us->rows_used -= t->nrows;
	us->ntables--;
	t->used = false;
}

/* The least recently used table no process uses, idle for the grace period, or NULL. */
static struct table *lru_unused(struct unwind_store *us)
{
	struct table *best = NULL;
	uint64_t now = now_ns();

	for (uint32_t i = 0; i < UNWIND_STORE_MAX_TABLES; i++) {
		struct table *t = &us->tables[i];
		if (t->used && !t->refs && now - t->idle_since_ns >= us->grace_ns &&
		    (!best || t->last_used < best->last_used))
			best = t;
	}
	return best;
}

int unwind_store__table(struct unwind_store *us, uint32_t shard, const struct ctl_unwind_table *req,
			struct ctl_unwind_table_ans *ans)
{
	struct table *t = NULL, *free_slot = NULL;
	uint32_t first;

	memset(ans, 0, sizeof(*ans));
	if (req->pad || req->nrows > us->max_rows)
		return req->pad ? -EINVAL : (us->refused++, -ENOSPC);
	for (uint32_t i = 0; i < UNWIND_STORE_MAX_TABLES; i++) {
		struct table *x = &us->tables[i];
		if (x->used && x->key == req->key)
			t = x;
		else if (!x->used && !free_slot)
			free_slot = x;
	}
	if (t) {
		if (!t->complete && t->shard != shard)
			return -EBUSY;
		if (!t->complete && req->nrows != t->nrows)
			return -EINVAL;
		t->last_used = ++us->clock;
		ans->id = id_of(us, t);
		ans->complete = t->complete;
		return 0;
	}
	if (!req->nrows)
		return -ENOENT;
	while (!free_slot || find_room(us, req->nrows, &first)) {
		struct table *victim = lru_unused(us);
		if (!victim) {
			us->refused++;
			return -ENOSPC;
		}
		drop_table(us, victim);
		if (!free_slot)
			free_slot = victim;
	}
	t = free_slot;
	*t = (struct table){ .key = req->key, .last_used = ++us->clock, .idle_since_ns = now_ns(), .first = first,
			     .nrows = req->nrows,
			     .shard = shard, .gen = (t->gen + 1) & ((1u << (32 - IDX_BITS)) - 1), .used = true };
	us->rows_used += t->nrows;
	us->ntables++;
	ans->id = id_of(us, t);
	return 0;
}

int unwind_store__rows(struct unwind_store *us, uint32_t shard, const struct ctl_unwind_rows *req)
{
	struct table *t = by_id(us, req->id);
	int err;

	if (!t || t->shard != shard || req->pad || !req->n || req->n > CTL_UNWIND_ROWS_MAX)
		return -EINVAL;
	if (t->complete)
		return -EALREADY;
	if (req->first != t->written || req->n > t->nrows - t->written)
		return -EINVAL;
	for (uint32_t i = 0; i < req->n; i++) {
		const struct unwind_row *r = &req->rows[i];
		uint32_t prev = i ? req->rows[i - 1].pc : t->last_pc;

		if (r->type >= UNW_TYPE_MAX || ((t->written || i) && r->pc <= prev))
			return -EINVAL;
	}
	err = us->ops.write_rows(us->ops.ctx, t->first + t->written, req->rows, req->n);
	if (err)
		return err;
	t->written += req->n;
	t->idle_since_ns = now_ns();
	t->last_pc = req->rows[req->n - 1].pc;
	t->last_used = ++us->clock;
	t->complete = t->written == t->nrows;
	return 0;
}

static struct slot *slot_of(struct unwind_store *us, uint32_t tgid, bool make)
{
	struct slot *free_slot = NULL;

	for (uint32_t i = 0; i < us->max_procs; i++) {
		if (us->slots[i].used && us->slots[i].tgid == tgid)
			return &us->slots[i];
		if (!us->slots[i].used && !free_slot)
			free_slot = &us->slots[i];
	}
	if (!make || !free_slot)
		return NULL;
	memset(free_slot, 0, sizeof(*free_slot));
	free_slot->used = true;
	free_slot->tgid = tgid;
	us->nprocs++;
	return free_slot;
}

static void unref_all(struct unwind_store *us, struct slot *s)
{
	uint64_t now = now_ns();

	for (uint32_t i = 0; i < s->ntables; i++) {
		struct table *t = &us->tables[s->tables[i]];
		if (t->refs && !--t->refs)
			t->idle_since_ns = now;
	}
	s->ntables = 0;
}

int unwind_store__proc(struct unwind_store *us, const struct ctl_unwind_proc *req)
{
	struct unwind_proc p;
	uint16_t refs[UNWIND_MAX_MAPS];
	uint32_t nrefs = 0;
	struct slot *s;
	int err;

	if (!req->pid || req->nmaps > UNWIND_MAX_MAPS)
		return -EINVAL;
	memset(&p, 0, sizeof(p));
	p.nmaps = req->nmaps;
	p.tgid = req->pid;
	for (uint32_t i = 0; i < req->nmaps; i++) {
		const struct ctl_unwind_map *m = &req->maps[i];
		struct table *t = NULL;

		if (m->start >= m->end || m->end > UNWIND_MAX_ADDR || m->pad || (i && m->start < req->maps[i - 1].end))
			return -EINVAL;
		if (m->table != UNWIND_NO_TABLE && (!(t = by_id(us, m->table)) || !t->complete))
			return -EINVAL;
		p.maps[i] = (struct unwind_map){ .start = m->start, .end = m->end, .bias = m->bias,
						 .first = t ? t->first : 0, .nrows = t ? t->nrows : 0 };
		if (t)
			refs[nrefs++] = (uint16_t)(t - us->tables);
	}
	s = slot_of(us, req->pid, true);
	if (!s) {
		us->refused++;
		return -ENOSPC;
	}
	err = us->ops.set_proc(us->ops.ctx, req->pid, (uint32_t)(s - us->slots), &p);
	if (err) {
		if (!s->ntables) {
			s->used = false;
			us->nprocs--;
		}
		return err;
	}
	unref_all(us, s);
	for (uint32_t i = 0; i < nrefs; i++) {
		us->tables[refs[i]].refs++;
		us->tables[refs[i]].last_used = ++us->clock;
	}
	memcpy(s->tables, refs, nrefs * sizeof(refs[0]));
	s->ntables = nrefs;
	return 0;
}

void unwind_store__forget(struct unwind_store *us, uint32_t tgid)
{
	struct slot *s = slot_of(us, tgid, false);

	if (!s)
		return;
	(void)us->ops.set_proc(us->ops.ctx, tgid, (uint32_t)(s - us->slots), NULL);
	unref_all(us, s);
	s->used = false;
	us->nprocs--;
}

void unwind_store__stats(const struct unwind_store *us, struct unwind_store_stats *ret)
{
	*ret = (struct unwind_store_stats){ .tables = us->ntables, .rows = us->rows_used, .rows_max = us->max_rows,
					    .procs = us->nprocs, .refused = us->refused };
}
