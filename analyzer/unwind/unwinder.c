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
#include "symbolizer/maps.h"

#define VDSO_MAX_SIZE (1u << 20)
#define KEY_SALT 0x656d62657220756eull /* "ember un": keys of other kinds of table never collide */

struct proc {
	uint32_t pid;
	uint64_t signature;  /* of the executable mappings req was built from; 0 = none */
	bool sent;           /* the collector took req */
	struct ctl_unwind_proc *req;
};

struct unwinder {
	struct unwinder_opts o;
	struct proc *procs;
	uint32_t nprocs;
	struct unwinder_stats st;
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
		for (uint32_t i = 0; i < u->nprocs; i++)
			free(u->procs[i].req);
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
		u->st.tables_shared++;
		return a.id;
	}
	for (size_t i = 0; i < n; i += CTL_UNWIND_ROWS_MAX) {
		uint32_t k = n - i < CTL_UNWIND_ROWS_MAX ? (uint32_t)(n - i) : CTL_UNWIND_ROWS_MAX;

		err = ctl_client__unwind_rows(u->o.cc, a.id, (uint32_t)i, rows + i, k);
		if (err)
			return err;
		u->st.rows_sent += k;
	}
	return a.id;
}

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The table of the file open at fd, by key; also the mapping's bias. UNWIND_NO_TABLE when it has none. */
static uint32_t file_table(struct unwinder *u, int fd, const struct maps_entry *e, uint64_t *ret_bias)
{
	_cleanup_free_ struct unwind_row *rows = NULL;
	struct elf_syms *es = elf_syms__open(fd);
	const uint8_t *bid;
	size_t bid_len = 0, n = 0;
	uint64_t key = 14695981039346656037ull ^ KEY_SALT, va = 0, t0;
	struct ctl_unwind_table_ans a;
	struct stat sb;
	int64_t id;
	int err = -ENOENT;

	if (!es)
		return UNWIND_NO_TABLE;
	/* The mapping's first page may begin before its segment's first byte: try a few pages in. */
	for (uint64_t d = 0; d < 16 * 4096 && d < e->end - e->start && err; d += 4096)
		if (!(err = elf_syms__offset_to_vaddr(es, e->offset + d, &va)))
			va -= d;
	bid = elf_syms__build_id(es, &bid_len);
	if (bid && bid_len)
		key = fnv(key, bid, bid_len);
	else if (!fstat(fd, &sb)) {
		uint64_t id4[4] = { sb.st_dev, sb.st_ino, (uint64_t)sb.st_size, (uint64_t)sb.st_mtim.tv_sec };
		key = fnv(key, id4, sizeof(id4));
	}
	elf_syms__free(es);
	if (err)
		return UNWIND_NO_TABLE;
	*ret_bias = e->start - va;
	/* Held already (another process, an earlier task): nothing to build. */
	if (!ctl_client__unwind_table(u->o.cc, key, 0, &a) && a.complete) {
		u->st.tables_shared++;
		return a.id;
	}
	t0 = now_us();
	err = eh_frame__rows_fd(fd, u->o.max_table_rows, &rows, &n, NULL);
	u->st.build_us += now_us() - t0;
	if (err || !n) {
		u->st.errors += err != 0;
		return UNWIND_NO_TABLE;
	}
	u->st.tables_built++;
	id = send_table(u, key, rows, n);
	if (id < 0) {
		u->st.errors++;
		return UNWIND_NO_TABLE;
	}
	return (uint32_t)id;
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

/* The process's mappings with their tables (built and sent here unless the collector holds them). */
static struct ctl_unwind_proc *build_req(struct unwinder *u, uint32_t pid, const struct proc_maps *pm)
{
	struct ctl_unwind_proc *req = calloc(1, sizeof(*req));

	if (!req)
		return NULL;
	req->pid = pid;
	for (size_t i = 0; i < proc_maps__count(pm) && req->nmaps < UNWIND_MAX_MAPS; i++) {
		const struct maps_entry *e = proc_maps__entry(pm, i);
		struct ctl_unwind_map *m = &req->maps[req->nmaps];
		uint64_t bias = 0;

		/* Files and the vDSO: an address in no listed mapping is walked with frame pointers anyway. */
		if (!(e->perms & MAPS_PERM_X) || (e->kind != MAPS_FILE && e->kind != MAPS_VDSO) ||
		    e->end > UNWIND_MAX_ADDR || (req->nmaps && e->start < req->maps[req->nmaps - 1].end))
			continue;
		*m = (struct ctl_unwind_map){ .start = e->start, .end = e->end, .table = UNWIND_NO_TABLE };
		if (e->kind == MAPS_FILE && !e->deleted) {
			int ffd = ctl_client__open_file(u->o.cc, pid, e->start, e->end);
			if (ffd >= 0) {
				m->table = file_table(u, ffd, e, &bias);
				close(ffd);
			} else {
				u->st.errors++;
			}
		} else if (e->kind == MAPS_VDSO) {
			m->table = vdso_table(u);
			bias = e->start; /* the vDSO is linked at 0 */
		}
		m->bias = m->table == UNWIND_NO_TABLE ? 0 : bias;
		u->st.maps_without_table += m->table == UNWIND_NO_TABLE;
		req->nmaps++;
	}
	return req;
}

int unwinder__process(struct unwinder *u, uint32_t pid)
{
	struct proc_maps *pm;
	struct proc *p = proc_of(u, pid, true);
	uint64_t sig;
	int fd, err;

	if (!p)
		return -ENOSPC;
	fd = ctl_client__open_maps(u->o.cc, pid);
	if (fd < 0)
		return fd;
	pm = proc_maps__read(fd, 0);
	close(fd);
	if (!pm)
		return -errno;
	sig = proc_maps__exec_signature(pm);
	if (sig != p->signature) {
		free(p->req);
		p->req = build_req(u, pid, pm);
		p->signature = p->req ? sig : 0;
		p->sent = false;
	}
	proc_maps__free(pm);
	if (!p->req)
		return -ENOMEM;
	if (p->sent)
		return 0;
	err = ctl_client__unwind_proc(u->o.cc, p->req);
	if (err == -EINVAL) {
		/* A table evicted since it was looked up: built again on the next call. */
		p->signature = 0;
		u->st.errors++;
	} else if (err == -ENOSPC) {
		u->st.procs_refused++;
	} else if (!err) {
		u->st.procs++;
		p->sent = true;
	}
	return err;
}

void unwinder__forget(struct unwinder *u, uint32_t pid)
{
	struct proc *p = proc_of(u, pid, false);

	if (p) {
		free(p->req);
		*p = u->procs[--u->nprocs];
	}
}

void unwinder__stats(const struct unwinder *u, struct unwinder_stats *ret)
{
	*ret = u->st;
}
