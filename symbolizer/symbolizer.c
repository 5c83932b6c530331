/*
 * The symbolizer's core: module cache (by build id, LRU, bounded bytes),
 * per-pid mappings, vDSO, resolution of user and kernel addresses, and the
 * direct (in-process) file callbacks used by tests and tools.  The parsing
 * of each file kind lives in its own module (elf_syms, maps, perfmap,
 * kallsyms, gopclntab, demangle).
 *
 * One file of ~1300 lines on purpose: the cache, the pid table and the
 * resolution path share the intrusive lists and reference counts defined at
 * the top, and every part changes them.
 */
#include "symbolizer/symbolizer.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "common/cleanup.h"
#include "common/debugpath.h"
#include "symbolizer/demangle.h"
#include "symbolizer/elf_syms.h"
#include "symbolizer/kallsyms.h"
#include "symbolizer/maps.h"
#include "symbolizer/perfmap.h"

#define DEFAULT_MAX_MODULES 256
#define DEFAULT_MAX_PIDS 1024
#define DEFAULT_MAX_CACHE_BYTES ((size_t)512 << 20)
#define DEFAULT_MAPS_REFRESH_MS 250
#define DEFAULT_KALLSYMS_REFRESH_MS 60000
#define DEFAULT_PERF_MAP_REFRESH_MS 1000
#define VDSO_MAX_SIZE (1 << 20)

static const char UNKNOWN[] = "[unknown]";

/* ---- intrusive lists and chained hash tables ------------------------------ */

struct list { struct list *prev, *next; };

static void list_init(struct list *h) { h->prev = h->next = h; }
static bool list_empty(const struct list *h) { return h->next == h; }

static void list_del(struct list *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->prev = e->next = e;
}

static void list_add_head(struct list *h, struct list *e)
{
	e->next = h->next;
	e->prev = h;
	h->next->prev = e;
	h->next = e;
}

static void list_move_head(struct list *h, struct list *e)
{
	list_del(e);
	list_add_head(h, e);
}

#define container_of(p, type, member) ((type *)((char *)(p) - offsetof(type, member)))

struct hnode {
	struct hnode *next;
	uint64_t hash;
};

struct htab {
	struct hnode **b;
	size_t nb, n;
};

static uint64_t hash_bytes(const void *p, size_t len)
{
	const uint8_t *s = p;
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a, then a final mix for the low bits */

	for (size_t i = 0; i < len; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

static int htab_grow(struct htab *t)
{
	size_t nb = t->nb ? t->nb * 2 : 64;
	struct hnode **b = calloc(nb, sizeof(*b));

	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < t->nb; i++) {
		struct hnode *e = t->b[i], *next;

		for (; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	}
	free(t->b);
	t->b = b;
	t->nb = nb;
	return 0;
}

/* Only fails when the first bucket array cannot be allocated; a failed growth keeps chaining. */
static int htab_insert(struct htab *t, struct hnode *e, uint64_t hash)
{
	if ((t->n >= t->nb || !t->nb) && htab_grow(t) && !t->nb)
		return -ENOMEM;
	e->hash = hash;
	e->next = t->b[hash & (t->nb - 1)];
	t->b[hash & (t->nb - 1)] = e;
	t->n++;
	return 0;
}

static void htab_remove(struct htab *t, struct hnode *e)
{
	struct hnode **pp = &t->b[e->hash & (t->nb - 1)];

	for (; *pp; pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			t->n--;
			return;
		}
	}
}

static struct hnode *htab_first(const struct htab *t, uint64_t hash)
{
	return t->nb ? t->b[hash & (t->nb - 1)] : NULL;
}

/* ---- objects --------------------------------------------------------------- */

#define KEY_MAX (1 + ELF_SYMS_MAX_BUILD_ID)

struct alias;

struct module {
	struct hnode node;       /* by key */
	struct list lru;
	struct alias *aliases;
	uint8_t key[KEY_MAX];
	size_t key_len;
	struct elf_syms *es;     /* NULL: the file is not a usable ELF (negative entry) */
	struct elf_syms *dbg;    /* separate debug file: symbols (addresses still go through es) */
	struct dm_cache *dm;     /* demangled names by symbol index, created on first use */
	size_t dm_bytes;         /* dm's size as last added to bytes */
	size_t bytes;
	uint64_t epoch;          /* last resolve call that used it: pinned while current */
};

struct alias {
	struct hnode node;       /* by (dev, inode) */
	uint64_t dev, ino;
	struct module *mod;
	struct alias *next_in_mod;
};

enum { MAP_OPEN_FAILED = 1, MAP_BAD_ELF = 2 };

struct pid_entry {
	struct hnode node;
	struct list lru;
	uint32_t pid;
	struct proc_maps *maps;  /* NULL if the last read failed */
	uint8_t *open_failed;    /* per maps entry: MAP_OPEN_FAILED / MAP_BAD_ELF seen once already */
	uint64_t read_ns;        /* time of the last read attempt */
	struct perf_map *pmap;   /* JIT symbols, NULL until read */
	size_t pmap_bytes;
	uint64_t pmap_read_ns;
	off_t pmap_size;         /* the file's size and mtime when pmap was read */
	struct timespec pmap_mtime;
	bool pmap_tried;
};

struct symbolizer {
	struct symbolizer_opts opts;
	uint64_t maps_refresh_ns, kallsyms_refresh_ns, perf_map_refresh_ns; /* 0 = always */
	struct dm_scratch scratch;  /* demangled names of this call that no cache could hold */
	struct htab modules, aliases, pids;
	struct list mod_lru, pid_lru;
	uint64_t epoch, serial;
	struct kallsyms *ks;
	uint64_t ks_read_ns;
	bool ks_tried;
	struct elf_syms *vdso;
	size_t vdso_size;
	bool vdso_tried;
	struct symbolizer_stats st;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t refresh_ns(int64_t ms, int64_t def)
{
	if (ms < 0)
		return 0;
	if (ms == 0)
		ms = def;
	return (uint64_t)ms * 1000000ull;
}

static bool may_refresh(uint64_t last_ns, uint64_t interval_ns)
{
	return interval_ns == 0 || now_ns() - last_ns >= interval_ns;
}

/* ---- modules ----------------------------------------------------------------- */

static uint64_t dev_key(uint32_t major, uint32_t minor)
{
	return (uint64_t)major << 32 | minor;
}

static struct module *module_find(struct symbolizer *s, const uint8_t *key, size_t len)
{
	uint64_t h = hash_bytes(key, len);

	for (struct hnode *e = htab_first(&s->modules, h); e; e = e->next) {
		struct module *m = container_of(e, struct module, node);

		if (e->hash == h && m->key_len == len && !memcmp(m->key, key, len))
			return m;
	}
	return NULL;
}

static struct alias *alias_find(struct symbolizer *s, uint64_t dev, uint64_t ino)
{
	uint64_t k[2] = { dev, ino };
	uint64_t h = hash_bytes(k, sizeof(k));

	for (struct hnode *e = htab_first(&s->aliases, h); e; e = e->next) {
		struct alias *a = container_of(e, struct alias, node);

		if (e->hash == h && a->dev == dev && a->ino == ino)
			return a;
	}
	return NULL;
}

static void module_touch(struct symbolizer *s, struct module *m)
{
	m->epoch = s->epoch;
	list_move_head(&s->mod_lru, &m->lru);
}

static void module_free(struct symbolizer *s, struct module *m)
{
	struct alias *a, *next;

	for (a = m->aliases; a; a = next) {
		next = a->next_in_mod;
		htab_remove(&s->aliases, &a->node);
		free(a);
	}
	htab_remove(&s->modules, &m->node);
	list_del(&m->lru);
	s->st.module_bytes -= m->bytes;
	s->st.modules_cached--;
	elf_syms__free(m->es);
	elf_syms__free(m->dbg);
	dm_cache__free(m->dm);
	free(m);
}

/* Evicts least recently used modules not used by the current call. */
static void modules_trim(struct symbolizer *s)
{
	while ((s->st.modules_cached > s->opts.max_modules ||
		s->st.module_bytes > s->opts.max_cache_bytes) && !list_empty(&s->mod_lru)) {
		struct module *m = container_of(s->mod_lru.prev, struct module, lru);

		if (m->epoch == s->epoch)
			break; /* everything older is pinned too; trimmed on a later call */
		module_free(s, m);
		s->st.modules_evicted++;
	}
}

/* Takes es and dbg (also on failure). */
static struct module *module_add(struct symbolizer *s, const uint8_t *key, size_t key_len,
				 struct elf_syms *es, struct elf_syms *dbg)
{
	struct module *m = calloc(1, sizeof(*m));

	if (!m) {
		elf_syms__free(es);
		elf_syms__free(dbg);
		return NULL;
	}
	memcpy(m->key, key, key_len);
	m->key_len = key_len;
	m->es = es;
	m->dbg = dbg;
	m->bytes = sizeof(*m) + elf_syms__memory(es) + elf_syms__memory(dbg);
	list_init(&m->lru);
	if (htab_insert(&s->modules, &m->node, hash_bytes(key, key_len))) {
		elf_syms__free(es);
		elf_syms__free(dbg);
		free(m);
		return NULL;
	}
	list_add_head(&s->mod_lru, &m->lru);
	m->epoch = s->epoch;
	s->st.modules_cached++;
	s->st.module_bytes += m->bytes;
	modules_trim(s);
	return m;
}

static void alias_add(struct symbolizer *s, struct module *m, uint64_t dev, uint64_t ino)
{
	uint64_t k[2] = { dev, ino };
	struct alias *a;

	if (!ino || alias_find(s, dev, ino))
		return;
	a = calloc(1, sizeof(*a));
	if (!a)
		return; /* only a cache miss later */
	a->dev = dev;
	a->ino = ino;
	a->mod = m;
	if (htab_insert(&s->aliases, &a->node, hash_bytes(k, sizeof(k)))) {
		free(a);
		return;
	}
	a->next_in_mod = m->aliases;
	m->aliases = a;
	m->bytes += sizeof(*a);
	s->st.module_bytes += sizeof(*a);
}

/* Key of a file without build id (or of a bad file): its dev+inode, or a unique serial. */
static size_t file_key(struct symbolizer *s, uint64_t dev, uint64_t ino, uint8_t *key)
{
	key[0] = ino ? 'I' : 'U';
	if (!ino) {
		dev = 0;
		ino = ++s->serial;
	}
	memcpy(key + 1, &dev, 8);
	memcpy(key + 9, &ino, 8);
	return 17;
}

/* CRC32 (zlib's, = .gnu_debuglink's) of the whole file at fd. */
static int file_crc(int fd, uint32_t *ret)
{
	_cleanup_free_ unsigned char *buf = malloc(1 << 16);
	uLong crc = crc32(0, Z_NULL, 0);
	off_t off = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t r = pread(fd, buf, 1 << 16, off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		crc = crc32(crc, buf, (uInt)r);
		off += r;
	}
	*ret = (uint32_t)crc;
	return 0;
}

/*
 * Symbols of a separate debug file, if it belongs to the binary: same build
 * id when the binary has one, and (for .gnu_debuglink) the link's CRC.
 * Takes fd.
 */
static struct elf_syms *debug_load(struct symbolizer *s, int fd, const uint8_t *bid, size_t bid_len,
				   const uint32_t *want_crc)
{
	_cleanup_close_ int cfd = fd;
	struct elf_syms *d;
	const uint8_t *dbid;
	size_t dlen;
	uint32_t crc = 0;

	if (cfd < 0)
		return NULL;
	if (want_crc && (file_crc(cfd, &crc) || crc != *want_crc)) {
		s->st.debug_files_rejected++;
		return NULL;
	}
	d = elf_syms__open_debug(cfd);
	if (!d) {
		s->st.debug_files_rejected++;
		return NULL;
	}
	dbid = elf_syms__build_id(d, &dlen);
	if (bid && (!dbid || dlen != bid_len || memcmp(dbid, bid, bid_len))) {
		elf_syms__free(d);
		s->st.debug_files_rejected++;
		return NULL;
	}
	if (elf_syms__load_symbols(d, s->opts.max_symbols_per_module) <= 0) {
		elf_syms__free(d);
		s->st.debug_files_rejected++;
		return NULL;
	}
	{
		struct elf_syms_info info;

		elf_syms__info(d, &info);
		s->st.symbols_dropped += info.dropped + info.bad_symbols;
	}
	s->st.debug_files_loaded++;
	return d;
}

/* Separate debug file of a stripped binary: by build id, .gnu_debuglink, then debuginfod. */
static struct elf_syms *debug_for(struct symbolizer *s, struct pid_entry *pe, const struct maps_entry *e,
				  const struct elf_syms *es)
{
	const uint8_t *bid;
	const char *link;
	struct elf_syms *d = NULL;
	size_t bid_len;
	uint32_t crc;
	int fd;

	bid = elf_syms__build_id(es, &bid_len);
	if (bid && !debugpath__valid_build_id(bid, bid_len))
		bid = NULL;
	if (bid && s->opts.open_debug_build_id) {
		fd = s->opts.open_debug_build_id(s->opts.ctx, pe->pid, bid, bid_len);
		d = debug_load(s, fd, bid, bid_len, NULL);
		if (d)
			return d;
	}
	link = elf_syms__debuglink(es, &crc);
	if (link && debugpath__valid_link_name(link) && s->opts.open_debuglink) {
		fd = s->opts.open_debuglink(s->opts.ctx, pe->pid, e->start, e->end, e->deleted ? NULL : e->path,
					    link);
		d = debug_load(s, fd, bid, bid_len, &crc);
		if (d)
			return d;
	}
	if (bid && s->opts.open_debuginfod) {
		fd = s->opts.open_debuginfod(s->opts.ctx, bid, bid_len);
		if (fd >= 0)
			s->st.debuginfod_fetches++;
		d = debug_load(s, fd, bid, bid_len, NULL);
	}
	return d;
}

/*
 * The module for a file mapping, loading it through the broker if needed.
 * Returns NULL with *ret_reason set when there is none.
 */
static struct module *module_for(struct symbolizer *s, struct pid_entry *pe, size_t idx,
				 const struct maps_entry *e, enum sym_reason *ret_reason)
{
	uint64_t dev = dev_key(e->dev_major, e->dev_minor);
	_cleanup_close_ int fd = -1;
	struct elf_syms *es, *dbg = NULL;
	struct alias *a;
	struct module *m;
	uint8_t key[KEY_MAX];
	size_t key_len, bid_len;
	const uint8_t *bid;
	int r;

	if (e->inode && (a = alias_find(s, dev, e->inode))) {
		module_touch(s, a->mod);
		if (!a->mod->es)
			*ret_reason = SYM_BAD_ELF;
		return a->mod->es ? a->mod : NULL;
	}
	if (pe->open_failed[idx] || !s->opts.open_mapped_file) {
		*ret_reason = pe->open_failed[idx] == MAP_BAD_ELF ? SYM_BAD_ELF : SYM_OPEN_FAILED;
		return NULL;
	}
	fd = s->opts.open_mapped_file(s->opts.ctx, pe->pid, e->start, e->end, e->deleted ? NULL : e->path);
	if (fd < 0) {
		pe->open_failed[idx] = MAP_OPEN_FAILED;
		s->st.open_failed++;
		*ret_reason = SYM_OPEN_FAILED;
		return NULL;
	}
	es = elf_syms__open(fd);
	if (!es) {
		*ret_reason = errno == ENOMEM ? SYM_OPEN_FAILED : SYM_BAD_ELF;
		if (errno == ENOMEM)
			return NULL;
		s->st.bad_elf++;
		/* Remember the bad file so it is not opened for every frame. */
		pe->open_failed[idx] = MAP_BAD_ELF;
		if (e->inode) {
			key_len = file_key(s, dev, e->inode, key);
			m = module_add(s, key, key_len, NULL, NULL);
			if (m)
				alias_add(s, m, dev, e->inode);
		}
		return NULL;
	}
	bid = elf_syms__build_id(es, &bid_len);
	if (bid) {
		key[0] = 'B';
		memcpy(key + 1, bid, bid_len);
		key_len = 1 + bid_len;
		m = module_find(s, key, key_len);
		if (m && m->es) {
			/* Same build, another file (container, copy): share it. */
			elf_syms__free(es);
			s->st.modules_shared++;
			module_touch(s, m);
			alias_add(s, m, dev, e->inode);
			return m;
		}
	} else {
		key_len = file_key(s, dev, e->inode, key);
	}
	r = elf_syms__load_symbols(es, s->opts.max_symbols_per_module);
	if (r < 0) {
		elf_syms__free(es);
		*ret_reason = SYM_OPEN_FAILED;
		return NULL;
	}
	{
		struct elf_syms_info info;

		elf_syms__info(es, &info);
		s->st.symbols_dropped += info.dropped + info.bad_symbols;
		if (info.go_funcs)
			s->st.go_modules++;
		/* Stripped: the names may be in a separate debug file. */
		if (!info.has_symtab && !info.go_funcs)
			dbg = debug_for(s, pe, e, es);
	}
	s->st.modules_loaded++;
	m = module_add(s, key, key_len, es, dbg);
	if (!m) {
		*ret_reason = SYM_OPEN_FAILED;
		return NULL;
	}
	alias_add(s, m, dev, e->inode);
	return m;
}

/* ---- vDSO ---------------------------------------------------------------------- */

/*
 * The vDSO is the same image in every process of this kernel and ABI, so our
 * own copy names the target's frames without reading its memory.  The image
 * size comes from its headers (the kernel's own, trusted memory).
 */
static void vdso_load(struct symbolizer *s)
{
	const unsigned char *base;
	const Elf64_Ehdr *eh;
	uint64_t size;

	s->vdso_tried = true;
	base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
	if (!base || memcmp(base, ELFMAG, SELFMAG) || base[EI_CLASS] != ELFCLASS64)
		return;
	eh = (const Elf64_Ehdr *)base;
	size = eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff) + i;

		if (ph->p_offset + ph->p_filesz > size)
			size = ph->p_offset + ph->p_filesz;
	}
	if (size == 0 || size > VDSO_MAX_SIZE)
		return;
	s->vdso = elf_syms__open_mem(base, size);
	if (s->vdso && elf_syms__load_symbols(s->vdso, 0) < 0) {
		elf_syms__free(s->vdso);
		s->vdso = NULL;
	}
	s->vdso_size = size;
}

static struct elf_syms *vdso_for(struct symbolizer *s, const struct maps_entry *e)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t rounded;

	if (s->opts.no_vdso)
		return NULL;
	if (!s->vdso_tried)
		vdso_load(s);
	if (!s->vdso || page <= 0)
		return NULL;
	/* A different image (e.g. a 32-bit process's) would have another size. */
	rounded = (s->vdso_size + (uint64_t)page - 1) & ~((uint64_t)page - 1);
	return rounded == e->end - e->start ? s->vdso : NULL;
}

/* ---- pids -------------------------------------------------------------------------- */

static struct pid_entry *pid_find(struct symbolizer *s, uint32_t pid)
{
	uint64_t h = hash_bytes(&pid, sizeof(pid));

	for (struct hnode *e = htab_first(&s->pids, h); e; e = e->next) {
		struct pid_entry *pe = container_of(e, struct pid_entry, node);

		if (e->hash == h && pe->pid == pid)
			return pe;
	}
	return NULL;
}

static void pid_free(struct symbolizer *s, struct pid_entry *pe)
{
	htab_remove(&s->pids, &pe->node);
	list_del(&pe->lru);
	proc_maps__free(pe->maps);
	free(pe->open_failed);
	perf_map__free(pe->pmap);
	s->st.perf_map_bytes -= pe->pmap_bytes;
	free(pe);
	s->st.pids_cached--;
}

static void pid_read_maps(struct symbolizer *s, struct pid_entry *pe)
{
	_cleanup_close_ int fd = -1;
	struct proc_maps *pm = NULL;
	uint8_t *flags = NULL;
	struct proc_maps_stats ps;

	pe->read_ns = now_ns();
	s->st.maps_reads++;
	if (s->opts.open_maps)
		fd = s->opts.open_maps(s->opts.ctx, pe->pid);
	if (fd < 0) {
		s->st.open_failed++;
	} else {
		pm = proc_maps__read(fd, 0);
		if (pm)
			flags = calloc(proc_maps__count(pm) + 1, 1);
		if (!flags) {
			proc_maps__free(pm);
			pm = NULL;
		}
	}
	/* On failure keep the old table: a transient error must not lose good data. */
	if (!pm)
		return;
	proc_maps__stats(pm, &ps);
	s->st.maps_bad_lines += ps.bad_lines + ps.overlong_lines;
	proc_maps__free(pe->maps);
	free(pe->open_failed);
	pe->maps = pm;
	pe->open_failed = flags;
}

/* *ret_fresh: the maps were (tried to be) read just now. */
static struct pid_entry *pid_get(struct symbolizer *s, uint32_t pid, bool *ret_fresh)
{
	struct pid_entry *pe = pid_find(s, pid);

	*ret_fresh = false;
	if (pe) {
		list_move_head(&s->pid_lru, &pe->lru);
		return pe;
	}
	while (s->st.pids_cached >= s->opts.max_pids && !list_empty(&s->pid_lru)) {
		pid_free(s, container_of(s->pid_lru.prev, struct pid_entry, lru));
		s->st.pids_evicted++;
	}
	pe = calloc(1, sizeof(*pe));
	if (!pe)
		return NULL;
	pe->pid = pid;
	list_init(&pe->lru);
	if (htab_insert(&s->pids, &pe->node, hash_bytes(&pid, sizeof(pid)))) {
		free(pe);
		return NULL;
	}
	list_add_head(&s->pid_lru, &pe->lru);
	s->st.pids_cached++;
	pid_read_maps(s, pe);
	*ret_fresh = true;
	return pe;
}

static void perf_map_read(struct symbolizer *s, struct pid_entry *pe);

int symbolizer__preload(struct symbolizer *s, uint32_t pid)
{
	enum sym_reason reason;
	struct pid_entry *pe;
	bool fresh;
	int loaded = 0;

	pe = pid_get(s, pid, &fresh);
	if (!pe)
		return -ENOMEM;
	if (!fresh && may_refresh(pe->read_ns, s->maps_refresh_ns))
		pid_read_maps(s, pe);
	if (!pe->maps)
		return -ENOENT;
	/* JIT names too: a map read only at a miss would come too late for a process that has exited. */
	if (s->opts.open_perf_map && (!pe->pmap_tried || may_refresh(pe->pmap_read_ns, s->perf_map_refresh_ns)))
		perf_map_read(s, pe);
	s->epoch++;
	for (size_t i = 0; i < proc_maps__count(pe->maps); i++) {
		const struct maps_entry *e = proc_maps__entry(pe->maps, i);
		if (e->kind != MAPS_FILE || !(e->perms & MAPS_PERM_X))
			continue;
		if (module_for(s, pe, i, e, &reason))
			loaded++;
	}
	return loaded;
}

static bool jit_mapping(const struct maps_entry *e);

/*
 * Whether pid maps anonymous executable code, as a JIT does: its perf map
 * may come later.  [vsyscall] is in every process (x86-64), JIT or not.
 */
static bool maps_jit_code(const struct pid_entry *pe)
{
	for (size_t i = 0; pe->maps && i < proc_maps__count(pe->maps); i++) {
		const struct maps_entry *e = proc_maps__entry(pe->maps, i);

		if ((e->perms & MAPS_PERM_X) && jit_mapping(e) && strcmp(e->name, "[vsyscall]"))
			return true;
	}
	return false;
}

int symbolizer__refresh_perf_map(struct symbolizer *s, uint32_t pid)
{
	struct pid_entry *pe = s ? pid_find(s, pid) : NULL;

	if (!pe || !s->opts.open_perf_map || !may_refresh(pe->pmap_read_ns, s->perf_map_refresh_ns) ||
	    (!pe->pmap && !maps_jit_code(pe)))
		return 0;
	perf_map_read(s, pe);
	return 1;
}

void symbolizer__forget_pid(struct symbolizer *s, uint32_t pid)
{
	struct pid_entry *pe;

	if (!s)
		return;
	dm_scratch__clear(&s->scratch);
	pe = pid_find(s, pid);
	if (pe)
		pid_free(s, pe);
}

/* ---- resolution ---------------------------------------------------------------------- */

static void frame_unknown(struct symbolizer *s, struct sym_frame *f, const char *module,
			  uint64_t offset, enum sym_reason reason)
{
	f->name = UNKNOWN;
	f->module = module;
	f->offset = offset;
	f->reason = reason;
	f->resolved = false;
	s->st.unknown++;
	s->st.by_reason[reason]++;
}

static const char *display_name(struct symbolizer *s, struct module *m, size_t idx, const char *name)
{
	struct dm_stats ds = { 0 };
	size_t nb;

	if (s->opts.no_demangle || !demangle__looks_mangled(name))
		return name;
	if (!m->dm) {
		m->dm = dm_cache__new(s->opts.max_demangle_bytes);
		if (!m->dm)
			return name;
	}
	name = dm_cache__get(m->dm, idx, name, &s->scratch, &ds);
	s->st.demangled += ds.demangled;
	s->st.demangle_failed += ds.not_mangled;
	s->st.demangle_uncached += ds.scratch;
	nb = dm_cache__memory(m->dm);
	if (nb != m->dm_bytes) {
		m->bytes += nb - m->dm_bytes;
		s->st.module_bytes += nb - m->dm_bytes;
		m->dm_bytes = nb;
	}
	return name;
}

/* Mappings whose code a JIT may describe in its perf map. */
static bool jit_mapping(const struct maps_entry *e)
{
	if (e->kind == MAPS_ANON)
		return true;
	if (!(e->perms & MAPS_PERM_X))
		return false;
	return e->kind == MAPS_SPECIAL || (e->kind == MAPS_FILE && !strncmp(e->path, "/memfd:", 7));
}

static bool perf_map_name(struct symbolizer *s, struct pid_entry *pe, const struct maps_entry *e,
			  uint64_t addr, struct sym_frame *f)
{
	const char *name;
	uint64_t off;

	if (!pe->pmap || !jit_mapping(e) || perf_map__lookup(pe->pmap, addr, &name, &off))
		return false;
	f->name = name;
	f->module = e->name;
	f->offset = off;
	f->resolved = true;
	f->jit = true;
	s->st.resolved++;
	s->st.perf_map_resolved++;
	return true;
}

static void perf_map_read(struct symbolizer *s, struct pid_entry *pe)
{
	_cleanup_close_ int fd = -1;
	struct perf_map_stats ps;
	struct perf_map *pm;
	struct stat sb = { 0 };

	pe->pmap_tried = true;
	pe->pmap_read_ns = now_ns();
	s->st.perf_map_reads++;
	fd = s->opts.open_perf_map(s->opts.ctx, pe->pid);
	if (fd < 0)
		return; /* most processes have none: not an open failure worth counting */
	/* A JIT only appends: the same size and mtime is the same map. */
	if (fstat(fd, &sb) == 0 && pe->pmap && sb.st_size == pe->pmap_size &&
	    sb.st_mtim.tv_sec == pe->pmap_mtime.tv_sec && sb.st_mtim.tv_nsec == pe->pmap_mtime.tv_nsec)
		return;
	pm = perf_map__read(fd, s->opts.max_perf_map_entries, 0);
	if (!pm)
		return;
	perf_map__stats(pm, &ps);
	s->st.perf_map_bad_lines += ps.bad_lines + ps.overlong_lines;
	s->st.perf_map_dropped += ps.dropped;
	perf_map__free(pe->pmap);
	s->st.perf_map_bytes -= pe->pmap_bytes;
	pe->pmap = pm;
	pe->pmap_size = sb.st_size;
	pe->pmap_mtime = sb.st_mtim;
	pe->pmap_bytes = perf_map__memory(pm);
	s->st.perf_map_bytes += pe->pmap_bytes;
}

/* Before any frame points into the perf map: (re-)read it if a JIT address misses. */
static void perf_map_refresh(struct symbolizer *s, struct pid_entry *pe, const uint64_t *addrs, size_t n)
{
	bool miss = false;

	if (!s->opts.open_perf_map || !pe->maps)
		return;
	for (size_t i = 0; i < n && !miss; i++) {
		int idx = proc_maps__find(pe->maps, addrs[i]);
		const char *name;
		uint64_t off;

		if (idx < 0 || !jit_mapping(proc_maps__entry(pe->maps, (size_t)idx)))
			continue;
		miss = !pe->pmap || perf_map__lookup(pe->pmap, addrs[i], &name, &off);
	}
	if (!miss)
		return;
	if (!pe->pmap_tried || may_refresh(pe->pmap_read_ns, s->perf_map_refresh_ns))
		perf_map_read(s, pe);
	else
		s->st.perf_map_refresh_limited++;
}

static void resolve_user_one(struct symbolizer *s, struct pid_entry *pe, uint64_t addr,
			     struct sym_frame *f)
{
	enum sym_reason reason = SYM_NO_SYMBOL;
	const struct maps_entry *e;
	struct elf_syms *es = NULL;
	struct module *m = NULL;
	uint64_t file_off, vaddr, off;
	const char *name;
	size_t sidx;
	int idx;

	*f = (struct sym_frame){ 0 };
	if (!pe || !pe->maps) {
		frame_unknown(s, f, "[unmapped]", addr, SYM_NO_MAPS);
		return;
	}
	idx = proc_maps__find(pe->maps, addr);
	if (idx < 0) {
		frame_unknown(s, f, "[unmapped]", addr, SYM_NO_MAPPING);
		return;
	}
	e = proc_maps__entry(pe->maps, (size_t)idx);
	file_off = addr - e->start + e->offset;
	switch (e->kind) {
	case MAPS_ANON:
	case MAPS_SPECIAL:
		if (perf_map_name(s, pe, e, addr, f))
			return;
		frame_unknown(s, f, e->name, addr - e->start, e->kind == MAPS_ANON ? SYM_ANON : SYM_SPECIAL);
		return;
	case MAPS_VDSO:
		file_off = addr - e->start;
		es = vdso_for(s, e);
		if (!es)
			reason = SYM_OPEN_FAILED;
		break;
	case MAPS_FILE:
		m = module_for(s, pe, (size_t)idx, e, &reason);
		es = m ? m->es : NULL;
		break;
	}
	f->file_offset = file_off;
	if (m)
		f->build_id = elf_syms__build_id(m->es, &f->build_id_len);
	if (es && elf_syms__offset_to_vaddr(es, file_off, &vaddr) == 0 &&
	    elf_syms__lookup_index(m && m->dbg ? m->dbg : es, vaddr, &sidx, &name, &off) == 0) {
		f->name = m ? display_name(s, m, sidx, name) : name;
		f->module = e->name;
		f->offset = off;
		f->resolved = true;
		s->st.resolved++;
		return;
	}
	/* JIT code in a memfd (double-mapped code heaps) is named by the perf map too. */
	if (e->kind == MAPS_FILE && jit_mapping(e) && perf_map_name(s, pe, e, addr, f))
		return;
	frame_unknown(s, f, e->name, file_off, reason);
}

int symbolizer__resolve_user(struct symbolizer *s, uint32_t pid, const uint64_t *addrs, size_t n,
			     struct sym_frame *ret)
{
	struct pid_entry *pe;
	uint64_t before;
	bool fresh;

	if (!s || (n && (!addrs || !ret)))
		return -EINVAL;
	s->epoch++;
	dm_scratch__clear(&s->scratch);
	pe = pid_get(s, pid, &fresh);
	/*
	 * Refresh before resolving anything, so no frame of this call points
	 * into a table that a later frame would replace.
	 */
	if (pe && !fresh) {
		bool miss = !pe->maps;

		for (size_t i = 0; i < n && !miss; i++)
			miss = proc_maps__find(pe->maps, addrs[i]) < 0;
		if (miss) {
			if (may_refresh(pe->read_ns, s->maps_refresh_ns))
				pid_read_maps(s, pe);
			else
				s->st.maps_refresh_limited++;
		}
	}
	if (pe)
		perf_map_refresh(s, pe, addrs, n);
	before = s->st.resolved;
	for (size_t i = 0; i < n; i++)
		resolve_user_one(s, pe, addrs[i], &ret[i]);
	modules_trim(s);
	return (int)(s->st.resolved - before);
}

static void kallsyms_load(struct symbolizer *s)
{
	_cleanup_close_ int fd = -1;
	struct kallsyms *ks;
	struct kallsyms_stats kst;

	s->ks_tried = true;
	s->ks_read_ns = now_ns();
	if (!s->opts.open_kallsyms)
		return;
	fd = s->opts.open_kallsyms(s->opts.ctx);
	if (fd < 0) {
		s->st.open_failed++;
		return;
	}
	ks = kallsyms__read(fd, 0);
	if (!ks)
		return; /* keep the previous table, if any */
	kallsyms__free(s->ks);
	s->ks = ks;
	kallsyms__stats(ks, &kst);
	s->st.kallsyms_loads++;
	s->st.kallsyms_symbols = kst.symbols;
}

int symbolizer__resolve_kernel(struct symbolizer *s, const uint64_t *addrs, size_t n,
			       struct sym_frame *ret)
{
	uint64_t before;

	if (!s || (n && (!addrs || !ret)))
		return -EINVAL;
	s->epoch++;
	dm_scratch__clear(&s->scratch);
	if (!s->ks_tried || (!s->ks && may_refresh(s->ks_read_ns, s->kallsyms_refresh_ns))) {
		kallsyms_load(s);
	} else if (s->ks) {
		bool miss = false;

		for (size_t i = 0; i < n && !miss; i++) {
			const char *name, *mod;
			uint64_t off;

			miss = kallsyms__lookup(s->ks, addrs[i], &name, &off, &mod) < 0;
		}
		/* A module loaded since: re-read (new table before any frame points into it). */
		if (miss && may_refresh(s->ks_read_ns, s->kallsyms_refresh_ns))
			kallsyms_load(s);
	}
	before = s->st.resolved;
	for (size_t i = 0; i < n; i++) {
		struct sym_frame *f = &ret[i];
		const char *name, *mod;
		uint64_t off;

		*f = (struct sym_frame){ .kernel = true };
		if (s->ks && kallsyms__lookup(s->ks, addrs[i], &name, &off, &mod) == 0) {
			f->name = name;
			f->module = mod ? mod : "[kernel]";
			f->offset = off;
			f->resolved = true;
			s->st.resolved++;
			s->st.kernel_resolved++;
			continue;
		}
		frame_unknown(s, f, "[kernel]", addrs[i],
			      s->ks ? SYM_NO_SYMBOL : SYM_KERNEL_UNAVAILABLE);
		s->st.kernel_unknown++;
	}
	return (int)(s->st.resolved - before);
}

/* ---- lifecycle ------------------------------------------------------------------------------ */

struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts)
{
	struct symbolizer *s;

	if (!opts || opts->sz < offsetof(struct symbolizer_opts, max_modules)) {
		errno = EINVAL;
		return NULL;
	}
	/* A newer caller's fields we do not know must be zero (libbpf OPTS_VALID). */
	for (size_t i = sizeof(struct symbolizer_opts); i < opts->sz; i++) {
		if (((const char *)opts)[i]) {
			errno = EINVAL;
			return NULL;
		}
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	memcpy(&s->opts, opts, opts->sz < sizeof(s->opts) ? opts->sz : sizeof(s->opts));
	s->opts.sz = sizeof(s->opts);
	if (!s->opts.max_modules)
		s->opts.max_modules = DEFAULT_MAX_MODULES;
	if (!s->opts.max_pids)
		s->opts.max_pids = DEFAULT_MAX_PIDS;
	if (!s->opts.max_cache_bytes)
		s->opts.max_cache_bytes = DEFAULT_MAX_CACHE_BYTES;
	s->maps_refresh_ns = refresh_ns(s->opts.maps_refresh_ms, DEFAULT_MAPS_REFRESH_MS);
	s->kallsyms_refresh_ns = refresh_ns(s->opts.kallsyms_refresh_ms, DEFAULT_KALLSYMS_REFRESH_MS);
	s->perf_map_refresh_ns = refresh_ns(s->opts.perf_map_refresh_ms, DEFAULT_PERF_MAP_REFRESH_MS);
	list_init(&s->mod_lru);
	list_init(&s->pid_lru);
	return s;
}

struct symbolizer *symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return NULL;
	while (!list_empty(&s->pid_lru))
		pid_free(s, container_of(s->pid_lru.next, struct pid_entry, lru));
	while (!list_empty(&s->mod_lru))
		module_free(s, container_of(s->mod_lru.next, struct module, lru));
	kallsyms__free(s->ks);
	elf_syms__free(s->vdso);
	dm_scratch__clear(&s->scratch);
	free(s->scratch.v);
	free(s->modules.b);
	free(s->aliases.b);
	free(s->pids.b);
	free(s);
	return NULL;
}

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *ret)
{
	if (!s) {
		*ret = (struct symbolizer_stats){ 0 };
		return;
	}
	*ret = s->st;
	ret->no_mapping = s->st.by_reason[SYM_NO_MAPPING] + s->st.by_reason[SYM_NO_MAPS];
}

const struct counter_def symbolizer_counters[SYMC_MAX] = {
	[SYMC_RESOLVED] = { .name = "symbolizer_resolved" },
	[SYMC_UNKNOWN] = { .name = "symbolizer_unknown" },
};

void symbolizer__counters(const struct symbolizer *s, uint64_t ret[SYMC_MAX])
{
	ret[SYMC_RESOLVED] = s ? s->st.resolved : 0;
	ret[SYMC_UNKNOWN] = s ? s->st.unknown : 0;
}

const char *sym_reason__str(enum sym_reason r)
{
	static const char *const names[SYM_REASON_MAX] = {
		[SYM_OK] = "ok",
		[SYM_NO_MAPPING] = "no_mapping",
		[SYM_NO_MAPS] = "no_maps",
		[SYM_ANON] = "anon",
		[SYM_SPECIAL] = "special",
		[SYM_OPEN_FAILED] = "open_failed",
		[SYM_BAD_ELF] = "bad_elf",
		[SYM_NO_SYMBOL] = "no_symbol",
		[SYM_KERNEL_UNAVAILABLE] = "kernel_unavailable",
	};

	return (unsigned)r < SYM_REASON_MAX ? names[r] : "invalid";
}

/* ---- text ------------------------------------------------------------------------------------ */

static size_t put_clean(char *buf, size_t len, size_t pos, const char *s)
{
	for (; *s; s++, pos++) {
		unsigned char c = (unsigned char)*s;

		if (pos + 1 < len)
			buf[pos] = (c == ';' || c < 0x20 || c == 0x7f) ? '_' : (char)c;
	}
	return pos;
}

int sym_frame__format(const struct sym_frame *f, char *buf, size_t len)
{
	char hex[24];
	size_t pos;

	if (!f || !buf || !len)
		return -EINVAL;
	if (f->resolved && f->name) {
		pos = put_clean(buf, len, 0, f->name);
	} else {
		pos = put_clean(buf, len, 0, f->module ? f->module : UNKNOWN);
		snprintf(hex, sizeof(hex), "+0x%" PRIx64, f->offset);
		pos = put_clean(buf, len, pos, hex);
	}
	buf[pos < len ? pos : len - 1] = '\0';
	if (pos >= len)
		return -ENOSPC;
	return pos > INT32_MAX ? -ENOSPC : (int)pos;
}

/* ---- direct callbacks ---------------------------------------------------------------------- */

int symbolizer__direct_open_maps(void *ctx, uint32_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int symbolizer__direct_open_mapped_file(void *ctx, uint32_t pid, uint64_t start, uint64_t end,
					const char *path)
{
	_cleanup_free_ char *root = NULL;
	char mf[96];
	int fd;

	snprintf(mf, sizeof(mf), "/proc/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
	fd = open(mf, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	/* map_files needs CAP_SYS_ADMIN; the path through the process's root is the fallback. */
	if (!path || path[0] != '/')
		return -errno;
	if (asprintf(&root, "/proc/%" PRIu32 "/root%s", pid, path) < 0)
		return -ENOMEM;
	fd = open(root, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int symbolizer__direct_open_kallsyms(void *ctx)
{
	int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* ctx: a root directory override (tests), else /proc/<pid>/root. */
static void direct_root(void *ctx, uint32_t pid, char *buf, size_t len)
{
	if (ctx)
		snprintf(buf, len, "%s", (const char *)ctx);
	else
		snprintf(buf, len, "/proc/%" PRIu32 "/root", pid);
}

static int open_ro(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	return fd < 0 ? -errno : fd;
}

int symbolizer__direct_open_perf_map(void *ctx, uint32_t pid)
{
	char root[4096], path[4200], status[4096];
	_cleanup_close_ int sfd = -1;
	uint32_t nspid = pid;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/status", pid);
	sfd = open(path, O_RDONLY | O_CLOEXEC);
	if (sfd >= 0 && (n = read(sfd, status, sizeof(status))) > 0 &&
	    debugpath__parse_nspid(status, (size_t)n, &nspid))
		nspid = pid;
	direct_root(ctx, pid, root, sizeof(root));
	if (debugpath__perf_map(path, sizeof(path), root, nspid) < 0)
		return -ENAMETOOLONG;
	return open_ro(path);
}

int symbolizer__direct_open_debug_build_id(void *ctx, uint32_t pid, const uint8_t *build_id, size_t len)
{
	char root[4096], path[4400];
	int r;

	direct_root(ctx, pid, root, sizeof(root));
	r = debugpath__build_id(path, sizeof(path), root, build_id, len);
	return r < 0 ? r : open_ro(path);
}

int symbolizer__direct_open_debuglink(void *ctx, uint32_t pid, uint64_t start, uint64_t end, const char *path,
				      const char *name)
{
	char root[4096], mf[96], bin[4096], p[8500];
	ssize_t n;
	int r = -ENOENT;

	snprintf(mf, sizeof(mf), "/proc/%" PRIu32 "/map_files/%" PRIx64 "-%" PRIx64, pid, start, end);
	n = readlink(mf, bin, sizeof(bin) - 1);
	if (n > 0) {
		bin[n] = '\0';
	} else if (path && strlen(path) < sizeof(bin)) {
		snprintf(bin, sizeof(bin), "%s", path);
	} else {
		return -ENOENT;
	}
	direct_root(ctx, pid, root, sizeof(root));
	for (unsigned i = 0; i < DEBUGPATH_LINK_DIRS; i++) {
		if (debugpath__link(p, sizeof(p), root, bin, name, i) < 0)
			return -EINVAL;
		r = open_ro(p);
		if (r >= 0)
			return r;
	}
	return r;
}

void symbolizer__direct_opts(struct symbolizer_opts *ret)
{
	*ret = (struct symbolizer_opts){
		.sz = sizeof(*ret),
		.open_maps = symbolizer__direct_open_maps,
		.open_mapped_file = symbolizer__direct_open_mapped_file,
		.open_kallsyms = symbolizer__direct_open_kallsyms,
		.open_perf_map = symbolizer__direct_open_perf_map,
		.open_debug_build_id = symbolizer__direct_open_debug_build_id,
		.open_debuglink = symbolizer__direct_open_debuglink,
	};
}
