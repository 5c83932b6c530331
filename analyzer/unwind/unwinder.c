#include "analyzer/unwind/unwinder.h"

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "analyzer/unwind/eh_frame.h"
#include "symbolizer/elf_syms.h"

#define VDSO_MAX_SIZE (1u << 20)
#define KEY_SALT 0x656d62657220756eull /* "ember un": keys of other kinds of table never collide */

struct proc {
	uint32_t pid;
	bool sent;           /* the collector took req */
	struct ctl_unwind_proc *req;
	struct ctl_unwind_proc *next;   /* being built during a change */
};

/* What a file is to the unwinder (examined once, through the mapping manager). */
struct ufile {
	uint64_t key;
	uint32_t id;         /* the collector's table, UNWIND_NO_TABLE: none */
	bool looked;         /* the collector was asked for key (else: the first mapping had no segment) */
	bool fresh;          /* looked up (or built) for the mapping attached next */
	bool retry;          /* the table was not sent: examined again at its next mapping */
	int err;             /* its table could not be built: counted per mapping */
	uint32_t nsegs;
	struct elf_syms_seg segs[];
};

struct unwinder {
	struct unwinder_opts o;
	struct proc *procs;
	uint32_t nprocs;
	uint64_t st[UNWS_MAX];
	struct proc *cur;    /* the process of the look under way */
	/* The vDSO's table, from our own image (the same in every process of this kernel). */
	bool vdso_tried;
	uint64_t vdso_key;
	struct unwind_row *vdso_rows;
	size_t vdso_n;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

struct unwinder *unwinder__new(const struct unwinder_opts *o)
{
	struct unwinder *u;

	if (!o || !o->cc) {
		errno = EINVAL;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->o = *o;
	if (!u->o.max_table_rows || u->o.max_table_rows > UNWIND_MAX_TABLE_ROWS)
		u->o.max_table_rows = UNWIND_MAX_TABLE_ROWS;
	if (!u->o.max_procs)
		u->o.max_procs = 1024;
	u->procs = calloc(u->o.max_procs, sizeof(*u->procs));
	if (!u->procs) {
		free(u);
		return NULL;
	}
	return u;
}

struct unwinder *unwinder__free(struct unwinder *u)
{
	if (u) {
		for (uint32_t i = 0; i < u->nprocs; i++) {
			free(u->procs[i].req);
			free(u->procs[i].next);
		}
		free(u->procs);
		free(u->vdso_rows);
		free(u);
	}
	return NULL;
}

/* Sends rows as a table under key unless the collector has it; its id or -errno. */
static int64_t send_table(struct unwinder *u, uint64_t key, const struct unwind_row *rows, size_t n)
{
	struct ctl_unwind_table_ans a;
	int err;

	err = ctl_client__unwind_table(u->o.cc, key, (uint32_t)n, &a);
	if (err)
		return err;
	if (a.complete) {
		u->st[UNWS_TABLES_SHARED]++;
		return a.id;
	}
	for (size_t i = 0; i < n; i += CTL_UNWIND_ROWS_MAX) {
		uint32_t k = n - i < CTL_UNWIND_ROWS_MAX ? (uint32_t)(n - i) : CTL_UNWIND_ROWS_MAX;

		err = ctl_client__unwind_rows(u->o.cc, a.id, (uint32_t)i, rows + i, k);
		if (err)
			return err;
		u->st[UNWS_ROWS_SENT] += k;
	}
	return a.id;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The ELF address of e's first byte through the file's segments: 0 or -ENOENT. */
static int map_vaddr(const struct ufile *f, const struct maps_entry *e, uint64_t *ret)
{
	int err = -ENOENT;
	uint64_t va = 0;

	/* The mapping's first page may begin before its segment's first byte: try a few pages in. */
	for (uint64_t d = 0; d < 16 * 4096 && d < e->end - e->start && err; d += 4096)
		if (!(err = elf_syms__segs_offset_to_vaddr(f->segs, f->nsegs, e->offset + d, &va)))
			va -= d;
	*ret = va;
	return err;
}

/* The collector's table of f, looked up by key, else built from the file at fd and sent. */
static void file_table(struct unwinder *u, int fd, struct ufile *f)
{
	_cleanup_free_ struct unwind_row *rows = NULL;
	struct ctl_unwind_table_ans a;
	size_t n = 0;
	uint64_t t0;
	int64_t id;
	int err;

	f->looked = f->fresh = true;
	f->id = UNWIND_NO_TABLE;
	/* Held already (another process, an earlier task): nothing to build. */
	if (!ctl_client__unwind_table(u->o.cc, f->key, 0, &a) && a.complete) {
		u->st[UNWS_TABLES_SHARED]++;
		f->id = a.id;
		return;
	}
	t0 = now_us();
	err = eh_frame__rows_fd(fd, u->o.max_table_rows, &rows, &n, NULL);
	u->st[UNWS_BUILD_US] += now_us() - t0;
	if (err || !n) {
		u->st[UNWS_ERRORS] += err != 0;
		f->err = err;
		return;
	}
	u->st[UNWS_TABLES_BUILT]++;
	id = send_table(u, f->key, rows, n);
	if (id < 0) {
		u->st[UNWS_ERRORS]++;
		f->retry = true;
		return;
	}
	f->id = (uint32_t)id;
}

/* The manager's examine: the file's key and segments, and its table unless e has no segment. */
static int h_examine(void *ctx, int fd, const struct maps_entry *e, void **ret_data)
{
	struct unwinder *u = ctx;
	struct elf_syms *es = elf_syms__open(fd);
	const uint8_t *bid;
	size_t bid_len = 0, nsegs;
	struct ufile *f;
	struct stat sb;
	uint64_t va;

	*ret_data = NULL;
	if (!es)
		return errno == ENOMEM ? -ENOMEM : 0;   /* not an ELF file: frame pointers */
	nsegs = elf_syms__segments(es, NULL, 0);
	f = calloc(1, sizeof(*f) + nsegs * sizeof(f->segs[0]));
	if (!f) {
		elf_syms__free(es);
		return -ENOMEM;
	}
	f->nsegs = (uint32_t)elf_syms__segments(es, f->segs, nsegs);
	f->key = 14695981039346656037ull ^ KEY_SALT;
	bid = elf_syms__build_id(es, &bid_len);
	if (bid && bid_len)
		f->key = fnv(f->key, bid, bid_len);
	else if (!fstat(fd, &sb)) {
		uint64_t id4[4] = { sb.st_dev, sb.st_ino, (uint64_t)sb.st_size, (uint64_t)sb.st_mtim.tv_sec };
		f->key = fnv(f->key, id4, sizeof(id4));
	}
	elf_syms__free(es);
	/* A mapping outside every segment has no table: nothing is looked up for it. */
	if (!map_vaddr(f, e, &va))
		file_table(u, fd, f);
	*ret_data = f;
	return 0;
}

/* The table of a mapping of f and its bias: UNWIND_NO_TABLE when it has none; -ESTALE: examine again. */
static int mapping_table(struct unwinder *u, struct ufile *f, const struct maps_entry *e, uint32_t *ret_id,
			 uint64_t *ret_bias)
{
	struct ctl_unwind_table_ans a;
	uint64_t va;

	*ret_id = UNWIND_NO_TABLE;
	if (map_vaddr(f, e, &va))
		return 0;
	*ret_bias = e->start - va;
	if (f->fresh) {
		/* Examined for this very mapping: looked up (or built) just now. */
		f->fresh = false;
		*ret_id = f->id;
		return 0;
	}
	if (!f->looked || f->retry)
		return -ESTALE;
	if (f->id == UNWIND_NO_TABLE) {
		u->st[UNWS_ERRORS] += f->err != 0;
		return 0;
	}
	/* Still held?  The collector evicts tables no process uses: built again then. */
	if (ctl_client__unwind_table(u->o.cc, f->key, 0, &a) || !a.complete)
		return -ESTALE;
	u->st[UNWS_TABLES_SHARED]++;
	f->id = a.id;
	*ret_id = a.id;
	return 0;
}

static uint32_t vdso_table(struct unwinder *u)
{
	int64_t id;

	if (!u->vdso_tried) {
		const unsigned char *base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
		const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
		uint64_t size;

		u->vdso_tried = true;
		if (!base || memcmp(base, ELFMAG, SELFMAG) || base[EI_CLASS] != ELFCLASS64)
			return UNWIND_NO_TABLE;
		size = eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize;
		if (size > VDSO_MAX_SIZE)
			return UNWIND_NO_TABLE;
		u->vdso_key = fnv(14695981039346656037ull ^ KEY_SALT, base, size);
		if (eh_frame__rows_mem(base, size, u->o.max_table_rows, &u->vdso_rows, &u->vdso_n, NULL))
			u->vdso_n = 0;
	}
	if (!u->vdso_n)
		return UNWIND_NO_TABLE;
	id = send_table(u, u->vdso_key, u->vdso_rows, u->vdso_n);
	return id < 0 ? UNWIND_NO_TABLE : (uint32_t)id;
}

static struct proc *proc_of(struct unwinder *u, uint32_t pid, bool make)
{
	for (uint32_t i = 0; i < u->nprocs; i++)
		if (u->procs[i].pid == pid)
			return &u->procs[i];
	if (!make || u->nprocs == u->o.max_procs)
		return NULL;
	u->procs[u->nprocs] = (struct proc){ .pid = pid };
	return &u->procs[u->nprocs++];
}

/* The mappings being built for p during a change, NULL without memory. */
static struct ctl_unwind_proc *building(struct proc *p)
{
	if (!p->next && (p->next = calloc(1, sizeof(*p->next))))
		p->next->pid = p->pid;
	return p->next;
}

static int h_begin(void *ctx, struct mappings_look *l)
{
	struct unwinder *u = ctx;
	struct proc *p = proc_of(u, l->pid, true);

	if (!p)
		return -ENOSPC;
	free(p->next);
	p->next = NULL;
	u->cur = p;
	return 0;
}

/* Files and the vDSO: an address in no listed mapping is walked with frame pointers anyway. */
static bool h_wants(void *ctx, const struct mappings_look *l, const struct maps_entry *e)
{
	struct unwinder *u = ctx;
	struct ctl_unwind_proc *req;

	if (!(e->perms & MAPS_PERM_X) || (e->kind != MAPS_FILE && e->kind != MAPS_VDSO) || e->end > UNWIND_MAX_ADDR)
		return false;
	req = building(u->cur);
	return req && req->nmaps < UNWIND_MAX_MAPS && !(req->nmaps && e->start < req->maps[req->nmaps - 1].end);
}

static int h_attach(void *ctx, struct mappings_look *l, const struct maps_entry *e, void *data, int open_err)
{
	struct unwinder *u = ctx;
	struct ctl_unwind_proc *req = building(u->cur);
	uint64_t bias = 0;
	uint32_t table = UNWIND_NO_TABLE;

	if (!req || req->nmaps == UNWIND_MAX_MAPS)
		return -ENOMEM;   /* not wanted then */
	if (e->kind == MAPS_FILE && !e->deleted) {
		if (open_err)
			u->st[UNWS_ERRORS]++;
		else if (data && mapping_table(u, data, e, &table, &bias) == -ESTALE)
			return -ESTALE;
	} else if (e->kind == MAPS_VDSO) {
		table = vdso_table(u);
		bias = e->start; /* the vDSO is linked at 0 */
	}
	req->maps[req->nmaps] = (struct ctl_unwind_map){ .start = e->start, .end = e->end, .table = table,
				      .bias = table == UNWIND_NO_TABLE ? 0 : bias };
	u->st[UNWS_MAPS_WITHOUT_TABLE] += table == UNWIND_NO_TABLE;
	req->nmaps++;
	return 0;
}

static int h_end(void *ctx, struct mappings_look *l)
{
	struct unwinder *u = ctx;
	struct proc *p = u->cur;
	int err;

	u->cur = NULL;
	if (l->err) {
		free(p->next);
		p->next = NULL;
		return l->err;
	}
	if (l->changed) {
		(void)building(p);   /* no executable mapping: an empty list */
		free(p->req);
		p->req = p->next;
		p->next = NULL;
		p->sent = false;
		l->again = !p->req;
	}
	if (!p->req)
		return -ENOMEM;
	if (p->sent)
		return 0;
	err = ctl_client__unwind_proc(u->o.cc, p->req);
	if (err == -EINVAL) {
		/* A table evicted since it was looked up: looked up again (and built) at the next look. */
		l->again = true;
		u->st[UNWS_ERRORS]++;
	} else if (err == -ENOSPC) {
		u->st[UNWS_PROCS_REFUSED]++;
	} else if (!err) {
		u->st[UNWS_PROCS]++;
		p->sent = true;
	}
	return err;
}

static void h_detach(void *ctx, uint32_t pid, uint64_t tag)
{
	struct unwinder *u = ctx;
	struct proc *p = proc_of(u, pid, false);

	(void)tag;
	if (p) {
		free(p->req);
		free(p->next);
		*p = u->procs[--u->nprocs];
	}
}

static void h_release(void *ctx, void *data)
{
	(void)ctx;
	free(data);
}

void unwinder__handler(struct unwinder *u, struct mappings_handler *ret)
{
	*ret = (struct mappings_handler){
		.name = "unwind", .ctx = u, .begin = h_begin, .wants = h_wants, .examine = h_examine,
		.attach = h_attach, .end = h_end, .detach = h_detach, .release = h_release,
	};
}

const struct counter_def unwinder_counters[UNWS_MAX] = {
	[UNWS_PROCS] = { .name = "unwind_processes_sent" },
	[UNWS_PROCS_REFUSED] = { .name = "unwind_processes_frame_pointers" },
	[UNWS_TABLES_BUILT] = { .name = "unwind_tables_built" },
	[UNWS_TABLES_SHARED] = { .name = "unwind_tables_shared" },
	[UNWS_ROWS_SENT] = { .name = "unwind_rows_sent" },
	/* Prometheus names units in base units: seconds, not microseconds */
	[UNWS_BUILD_US] = { .name = "unwind_build_seconds", .per_unit = 1000000 },
	[UNWS_MAPS_WITHOUT_TABLE] = { .name = "unwind_mappings_frame_pointers" },
	[UNWS_ERRORS] = { .name = "unwind_errors" },
};

void unwinder__stats(const struct unwinder *u, uint64_t ret[UNWS_MAX])
{
	memcpy(ret, u->st, sizeof(u->st));
}
