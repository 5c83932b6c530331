#include "symbolizer/elf_syms.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "symbolizer/gopclntab.h"
#include "symbolizer/tables.h"

#define NT_GNU_BUILD_ID_TYPE 3
/* Section headers beyond this are still read for symbols, but give no size bound. */
#define MAX_SECTION_BOUNDS 65536
/* Symbols that overlap (aliases with different sizes, nested labels) are looked up this far back. */
#define LOOKBACK 8

struct esym {
	uint64_t addr;
	uint32_t size;   /* clamped: no function is 4 GiB */
	uint32_t name;   /* arena offset */
};

struct elf_syms {
	Elf *elf;
	void *image;            /* our copy for elf_syms__open_mem() */
	uint64_t file_size;
	unsigned char ei_data;
	struct elf_syms_seg segs[ELF_SYMS_MAX_SEGMENTS];
	uint8_t build_id[ELF_SYMS_MAX_BUILD_ID];
	size_t build_id_len;
	char *debuglink;
	uint32_t debuglink_crc;
	struct esym *syms;
	size_t nsyms;
	char *arena;
	size_t arena_len;
	bool loaded;
	bool debug_only;        /* separate debug file: no PT_LOAD needed (its segments are NOBITS) */
	struct elf_syms_info info;
};

struct cand {
	uint64_t addr, size, bound;  /* bound: end of the symbol's section, 0 = unknown */
	const char *name;
	uint32_t name_len;
	uint32_t prio;
};

static bool in_file(const struct elf_syms *es, uint64_t off, uint64_t size)
{
	return off <= es->file_size && size <= es->file_size - off;
}

static void release_elf(struct elf_syms *es)
{
	if (es->elf) {
		elf_end(es->elf);
		es->elf = NULL;
	}
	free(es->image);
	es->image = NULL;
}

struct elf_syms *elf_syms__free(struct elf_syms *es)
{
	if (!es)
		return NULL;
	release_elf(es);
	free(es->debuglink);
	free(es->syms);
	free(es->arena);
	free(es);
	return NULL;
}

/*
 * Walks notes in host byte order (libelf converted the headers).  Name and
 * descriptor are padded to `align` (4, or 8 for NT_GNU_PROPERTY-style notes),
 * relative to the start of the buffer, which libelf keeps aligned.
 */
static void parse_notes(struct elf_syms *es, const uint8_t *buf, size_t size, size_t align)
{
	size_t pos = 0;

	while (size - pos >= 12) {
		uint32_t namesz, descsz, type;
		size_t name_off, desc_off;

		memcpy(&namesz, buf + pos, 4);
		memcpy(&descsz, buf + pos + 4, 4);
		memcpy(&type, buf + pos + 8, 4);
		pos += 12;
		if (namesz > size - pos)
			break;
		name_off = pos;
		pos += namesz;
		pos = (pos + align - 1) & ~(align - 1);
		if (pos > size || descsz > size - pos)
			break;
		desc_off = pos;
		pos += descsz;
		pos = pos > size - (align - 1) ? size : (pos + align - 1) & ~(align - 1);

		if (type == NT_GNU_BUILD_ID_TYPE && namesz == 4 && !memcmp(buf + name_off, "GNU", 4) &&
		    descsz > 0 && descsz <= ELF_SYMS_MAX_BUILD_ID && !es->build_id_len) {
			memcpy(es->build_id, buf + desc_off, descsz);
			es->build_id_len = descsz;
		}
	}
}

static void read_debuglink(struct elf_syms *es, Elf_Data *d)
{
	const char *s = d->d_buf;
	size_t len, crc_off;
	uint8_t b[4];

	if (!s || d->d_size == 0)
		return;
	len = strnlen(s, d->d_size);
	if (len == 0 || len == d->d_size)
		return;
	crc_off = (len + 1 + 3) & ~(size_t)3;
	if (crc_off > d->d_size || d->d_size - crc_off < 4)
		return;
	es->debuglink = strndup(s, len);
	if (!es->debuglink)
		return;
	memcpy(b, s + crc_off, 4);
	if (es->ei_data == ELFDATA2MSB)
		es->debuglink_crc = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	else
		es->debuglink_crc = (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
}

static int read_headers(struct elf_syms *es)
{
	GElf_Ehdr eh;
	size_t phnum, shstrndx;
	bool have_shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_kind(es->elf) != ELF_K_ELF || !gelf_getehdr(es->elf, &eh))
		return -ENOEXEC;
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return -ENOEXEC;
	es->ei_data = eh.e_ident[EI_DATA];
	es->info.is_dyn = eh.e_type == ET_DYN;
	if (elf_getphdrnum(es->elf, &phnum))
		return -ENOEXEC;

	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(es->elf, (int)i, &ph))
			return -ENOEXEC;
		if (ph.p_type == PT_LOAD) {
			if (!in_file(es, ph.p_offset, ph.p_filesz) || ph.p_memsz < ph.p_filesz ||
			    ph.p_vaddr + ph.p_memsz < ph.p_vaddr ||
			    es->info.nsegments >= ELF_SYMS_MAX_SEGMENTS) {
				es->info.ignored_segments++;
				continue;
			}
			es->segs[es->info.nsegments++] = (struct elf_syms_seg){
				.off = ph.p_offset, .vaddr = ph.p_vaddr, .filesz = ph.p_filesz,
				.memsz = ph.p_memsz, .flags = ph.p_flags,
			};
		}
	}
	if (!es->info.nsegments && !es->debug_only)
		return -ENOEXEC;

	have_shstrndx = elf_getshdrstrndx(es->elf, &shstrndx) == 0;
	while ((scn = elf_nextscn(es->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			break;
		if (sh.sh_type == SHT_NOBITS || sh.sh_size == 0)
			continue;
		if (sh.sh_type == SHT_NOTE && !es->build_id_len) {
			if (!in_file(es, sh.sh_offset, sh.sh_size)) {
				es->info.bad_tables++;
				continue;
			}
			d = elf_getdata(scn, NULL);
			if (!d || !d->d_buf) {
				es->info.bad_tables++;
				continue;
			}
			parse_notes(es, d->d_buf, d->d_size, d->d_type == ELF_T_NHDR8 ? 8 : 4);
		} else if (sh.sh_type == SHT_PROGBITS && have_shstrndx && !es->debuglink) {
			name = elf_strptr(es->elf, shstrndx, sh.sh_name);
			if (!name || strcmp(name, ".gnu_debuglink"))
				continue;
			if (!in_file(es, sh.sh_offset, sh.sh_size)) {
				es->info.bad_tables++;
				continue;
			}
			d = elf_rawdata(scn, NULL);
			if (d)
				read_debuglink(es, d);
		}
	}

	/* No section headers (or no note section): the PT_NOTE segments carry the id too. */
	for (size_t i = 0; i < phnum && !es->build_id_len; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(es->elf, (int)i, &ph) || ph.p_type != PT_NOTE || !ph.p_filesz)
			continue;
		if (!in_file(es, ph.p_offset, ph.p_filesz)) {
			es->info.bad_tables++;
			continue;
		}
		d = elf_getdata_rawchunk(es->elf, (int64_t)ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (d && d->d_buf)
			parse_notes(es, d->d_buf, d->d_size, ph.p_align == 8 ? 8 : 4);
	}
	return 0;
}

/* Takes es; on failure frees it and then sets errno (elf_end() may clobber it). */
static struct elf_syms *open_common(struct elf_syms *es)
{
	int r = es->elf ? read_headers(es) : -ENOEXEC;

	if (r) {
		elf_syms__free(es);
		errno = -r;
		return NULL;
	}
	return es;
}

/* A zeroed handle once libelf is usable; NULL + errno (ENOSYS, ENOMEM). */
static struct elf_syms *new_handle(void)
{
	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = ENOSYS;
		return NULL;
	}
	return calloc(1, sizeof(struct elf_syms));
}

static struct elf_syms *open_fd(int fd, bool debug_only)
{
	struct elf_syms *es;
	struct stat st;

	if (fd < 0) {
		errno = EBADF;
		return NULL;
	}
	if (fstat(fd, &st))
		return NULL;
	if (!S_ISREG(st.st_mode)) {
		errno = ENOEXEC;
		return NULL;
	}
	es = new_handle();
	if (!es)
		return NULL;
	es->file_size = (uint64_t)st.st_size;
	es->debug_only = debug_only;
	es->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	return open_common(es);
}

struct elf_syms *elf_syms__open(int fd)
{
	return open_fd(fd, false);
}

struct elf_syms *elf_syms__open_debug(int fd)
{
	return open_fd(fd, true);
}

struct elf_syms *elf_syms__open_mem(const void *image, size_t len)
{
	struct elf_syms *es;

	if (!image || !len) {
		errno = EINVAL;
		return NULL;
	}
	es = new_handle();
	if (!es)
		return NULL;
	es->image = malloc(len);
	if (!es->image) {
		free(es);
		errno = ENOMEM;
		return NULL;
	}
	memcpy(es->image, image, len);
	es->file_size = len;
	es->elf = elf_memory(es->image, len);
	return open_common(es);
}

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	/* Higher priority first, so the first of an address group is kept. */
	return tables__cmp_u64(x->addr, y->addr) ?: tables__cmp_u64(y->prio, x->prio);
}

static uint32_t cand_prio(const GElf_Sym *sym, bool from_symtab)
{
	uint32_t p = 0;

	if (sym->st_size)
		p |= 8;
	if (GELF_ST_BIND(sym->st_info) == STB_GLOBAL)
		p |= 4;
	else if (GELF_ST_BIND(sym->st_info) == STB_WEAK)
		p |= 2;
	if (from_symtab)
		p |= 1;
	return p;
}

struct cand_vec {
	struct cand *v;
	size_t n, cap;
};

/* A new last slot, or NULL when out of memory. */
static struct cand *cand_vec_push(struct cand_vec *cv)
{
	if (cv->n == cv->cap && tables__grow(&cv->v, sizeof(*cv->v), &cv->cap, 1024))
		return NULL;
	return &cv->v[cv->n++];
}

/*
 * Length of a symbol name without its symbol version: .symtab spells a
 * versioned definition "memcpy@@GLIBC_2.14" (default) or "memcpy@GLIBC_2.2.5",
 * and every stack through it would carry the suffix.  The name before the
 * first '@' is the function (as perf shows it); a name that starts with '@'
 * is kept whole.
 */
static size_t plain_len(const char *name, size_t len)
{
	const char *at = memchr(name, '@', len);

	return at && at > name ? (size_t)(at - name) : len;
}

/* Returns 0, or -ENOMEM; a malformed table is counted and skipped. */
static int collect_table(struct elf_syms *es, Elf_Scn *scn, const GElf_Shdr *sh,
			 const uint64_t *sec_end, size_t nsec, size_t max, struct cand_vec *cv)
{
	bool from_symtab = sh->sh_type == SHT_SYMTAB;
	size_t entsize = gelf_fsize(es->elf, ELF_T_SYM, 1, EV_CURRENT);
	Elf_Scn *strscn;
	GElf_Shdr strsh;
	Elf_Data *symd, *strd;
	size_t shnum, nsym;

	if (!entsize || sh->sh_entsize != entsize || !in_file(es, sh->sh_offset, sh->sh_size) ||
	    elf_getshdrnum(es->elf, &shnum) || sh->sh_link == 0 || sh->sh_link >= shnum)
		goto bad;
	strscn = elf_getscn(es->elf, sh->sh_link);
	if (!strscn || !gelf_getshdr(strscn, &strsh) || strsh.sh_type != SHT_STRTAB ||
	    !in_file(es, strsh.sh_offset, strsh.sh_size))
		goto bad;
	symd = elf_getdata(scn, NULL);
	strd = elf_getdata(strscn, NULL);
	if (!symd || !strd || !strd->d_buf || !strd->d_size)
		goto bad;
	if (from_symtab)
		es->info.has_symtab = true;
	else
		es->info.has_dynsym = true;
	nsym = sh->sh_size / entsize;
	if (nsym > INT32_MAX) /* gelf_getsym() takes an int index */
		nsym = INT32_MAX;

	for (size_t i = 0; i < nsym; i++) {
		const char *strtab = strd->d_buf;
		struct cand *c;
		GElf_Sym sym;
		size_t nlen;
		int type;

		if (!gelf_getsym(symd, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
		    sym.st_value == 0)
			continue;
		if (sym.st_name == 0 || sym.st_name >= strd->d_size) {
			es->info.bad_symbols++;
			continue;
		}
		nlen = strnlen(strtab + sym.st_name, strd->d_size - sym.st_name);
		if (nlen == strd->d_size - sym.st_name || nlen == 0 || nlen > UINT32_MAX) {
			es->info.bad_symbols++;
			continue;
		}
		if (cv->n >= max) {
			es->info.dropped++;
			continue;
		}
		nlen = plain_len(strtab + sym.st_name, nlen);
		c = cand_vec_push(cv);
		if (!c)
			return -ENOMEM;
		*c = (struct cand){
			.addr = sym.st_value,
			.size = sym.st_size,
			.bound = sym.st_shndx < nsec ? sec_end[sym.st_shndx] : 0,
			.name = strtab + sym.st_name,
			.name_len = (uint32_t)nlen,
			.prio = cand_prio(&sym, from_symtab),
		};
	}
	return 0;
bad:
	es->info.bad_tables++;
	return 0;
}

struct go_ctx {
	struct elf_syms *es;
	struct cand_vec *cv;
	size_t max;
};

static int go_func(void *ctx, uint64_t entry, uint64_t end, const char *name, size_t name_len)
{
	struct go_ctx *g = ctx;
	struct cand_vec *cv = g->cv;
	struct cand *c;

	if (cv->n >= g->max) {
		g->es->info.dropped++;
		return 0;
	}
	if (name_len > UINT32_MAX) {
		g->es->info.bad_symbols++;
		return 0;
	}
	c = cand_vec_push(cv);
	if (!c)
		return -ENOMEM;
	*c = (struct cand){
		.addr = entry, .size = end - entry, .name = name, .name_len = (uint32_t)name_len,
	};
	return 0;
}

/*
 * Stripped Go binary: the runtime's own table (.gopclntab) still names every
 * function.  Only used without .symtab, whose names are the same.
 */
static int collect_go(struct elf_syms *es, size_t max, struct cand_vec *cv)
{
	struct gopclntab_stats gst;
	struct go_ctx g = { .es = es, .cv = cv, .max = max };
	Elf_Scn *scn = NULL, *pcln = NULL;
	GElf_Shdr sh, pcln_sh;
	uint64_t text = 0;
	size_t shstrndx;
	Elf_Data *d;
	int r;

	if (elf_getshdrstrndx(es->elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(es->elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			break;
		name = elf_strptr(es->elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (!strcmp(name, ".gopclntab") && sh.sh_type == SHT_PROGBITS) {
			pcln = scn;
			pcln_sh = sh;
		} else if (!strcmp(name, ".text")) {
			text = sh.sh_addr;
		}
	}
	if (!pcln)
		return 0;
	if (!in_file(es, pcln_sh.sh_offset, pcln_sh.sh_size) || !(d = elf_rawdata(pcln, NULL)) ||
	    !d->d_buf) {
		es->info.bad_tables++;
		return 0;
	}
	r = gopclntab__parse(d->d_buf, d->d_size, text, es->ei_data == ELFDATA2MSB, 0, go_func, &g, &gst);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		es->info.bad_tables++;
		return 0;
	}
	es->info.go_funcs = gst.funcs;
	es->info.bad_symbols += gst.bad_funcs;
	return 0;
}

/* End of the PT_LOAD segment holding vaddr, or 0. */
static uint64_t segment_end(const struct elf_syms *es, uint64_t vaddr)
{
	for (uint32_t i = 0; i < es->info.nsegments; i++) {
		const struct elf_syms_seg *s = &es->segs[i];

		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->memsz)
			return s->vaddr + s->memsz;
	}
	return 0;
}

/* End address of each allocated section (index < nsec), for unsized symbols.  NULL + ENOMEM. */
static uint64_t *section_ends(struct elf_syms *es, size_t *ret_nsec)
{
	size_t shnum = 0, nsec;
	uint64_t *sec_end;

	if (elf_getshdrnum(es->elf, &shnum))
		shnum = 0;
	nsec = shnum < MAX_SECTION_BOUNDS ? shnum : MAX_SECTION_BOUNDS;
	*ret_nsec = nsec;
	sec_end = calloc(nsec ? nsec : 1, sizeof(*sec_end));
	if (!sec_end)
		return NULL;
	for (size_t i = 1; i < nsec; i++) {
		GElf_Shdr sh;
		Elf_Scn *s = elf_getscn(es->elf, i);

		if (s && gelf_getshdr(s, &sh) && (sh.sh_flags & SHF_ALLOC) && sh.sh_addr + sh.sh_size > sh.sh_addr)
			sec_end[i] = sh.sh_addr + sh.sh_size;
	}
	return sec_end;
}

/* Sorted, one entry per address (the largest size and a known bound win), unsized ones sized. */
static void settle_candidates(struct elf_syms *es, struct cand_vec *cv)
{
	size_t w = 0;

	if (cv->n)
		qsort(cv->v, cv->n, sizeof(*cv->v), cmp_cand);
	for (size_t i = 0; i < cv->n; i++) {
		if (w && cv->v[w - 1].addr == cv->v[i].addr) {
			struct cand *k = &cv->v[w - 1];

			if (cv->v[i].size > k->size)
				k->size = cv->v[i].size;
			if (!k->bound)
				k->bound = cv->v[i].bound;
			continue;
		}
		cv->v[w++] = cv->v[i];
	}
	cv->n = w;
	for (size_t i = 0; i < cv->n; i++) {
		struct cand *c = &cv->v[i];
		uint64_t end;

		if (c->size)
			continue;
		/* Unsized (assembly) symbol: up to the next symbol, within its section. */
		end = c->bound > c->addr ? c->bound : segment_end(es, c->addr);
		if (i + 1 < cv->n && (end == 0 || cv->v[i + 1].addr < end))
			end = cv->v[i + 1].addr;
		c->size = end > c->addr ? end - c->addr : 0;
	}
}

/* The final table: symbols and one arena of their names (at most 4 GiB of names). */
static int build_table(struct elf_syms *es, struct cand_vec *cv)
{
	size_t total = 0;

	for (size_t i = 0; i < cv->n; i++) {
		if (total + cv->v[i].name_len + 1 > UINT32_MAX) {
			es->info.dropped += cv->n - i;
			cv->n = i;
			break;
		}
		total += cv->v[i].name_len + 1;
	}
	if (cv->n) {
		es->syms = malloc(cv->n * sizeof(*es->syms));
		es->arena = malloc(total);
		if (!es->syms || !es->arena)
			return -ENOMEM;
	}
	es->arena_len = total;
	total = 0;
	for (size_t i = 0; i < cv->n; i++) {
		const struct cand *c = &cv->v[i];

		memcpy(es->arena + total, c->name, c->name_len);
		es->arena[total + c->name_len] = '\0';
		es->syms[i] = (struct esym){
			.addr = c->addr,
			.size = c->size > UINT32_MAX ? UINT32_MAX : (uint32_t)c->size,
			.name = (uint32_t)total,
		};
		total += c->name_len + 1;
	}
	es->nsyms = cv->n;
	es->info.symbols = cv->n;
	return (int)cv->n;
}

int elf_syms__load_symbols(struct elf_syms *es, size_t max_symbols)
{
	_cleanup_free_ uint64_t *sec_end = NULL;
	struct cand_vec cv = { 0 };
	size_t nsec;
	Elf_Scn *scn;
	int r = 0;

	if (!es)
		return -EINVAL;
	if (es->loaded)
		return -EALREADY;
	if (!max_symbols)
		max_symbols = ELF_SYMS_DEFAULT_MAX_SYMBOLS;
	if (max_symbols > INT32_MAX)
		max_symbols = INT32_MAX;
	sec_end = section_ends(es, &nsec);
	if (!sec_end) {
		r = -ENOMEM;
		goto out;
	}
	/* .symtab first: under the cap, its (superset of) names win. */
	for (int pass = 0; pass < 2; pass++) {
		scn = NULL;
		while ((scn = elf_nextscn(es->elf, scn))) {
			GElf_Shdr sh;

			if (!gelf_getshdr(scn, &sh))
				break;
			if (sh.sh_type != (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM))
				continue;
			r = collect_table(es, scn, &sh, sec_end, nsec, max_symbols, &cv);
			if (r)
				goto out;
		}
	}
	if (!es->info.has_symtab) {
		r = collect_go(es, max_symbols, &cv);
		if (r)
			goto out;
	}
	settle_candidates(es, &cv);
	r = build_table(es, &cv);
out:
	free(cv.v);
	if (r < 0) {
		free(es->syms);
		free(es->arena);
		es->syms = NULL;
		es->arena = NULL;
		es->nsyms = 0;
		es->arena_len = 0;
		return r;
	}
	es->loaded = true;
	release_elf(es);
	return r;
}

const uint8_t *elf_syms__build_id(const struct elf_syms *es, size_t *ret_len)
{
	if (!es || !es->build_id_len) {
		if (ret_len)
			*ret_len = 0;
		return NULL;
	}
	if (ret_len)
		*ret_len = es->build_id_len;
	return es->build_id;
}

const char *elf_syms__debuglink(const struct elf_syms *es, uint32_t *ret_crc)
{
	if (!es || !es->debuglink)
		return NULL;
	if (ret_crc)
		*ret_crc = es->debuglink_crc;
	return es->debuglink;
}

/*
 * pos as a file offset (or a vaddr) translated through the segment holding
 * it, executable segments first.
 */
static int seg_translate(const struct elf_syms_seg *segs, size_t n, uint64_t pos, bool from_vaddr,
			 uint64_t *ret)
{
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			const struct elf_syms_seg *s = &segs[i];
			uint64_t from = from_vaddr ? s->vaddr : s->off, to = from_vaddr ? s->off : s->vaddr;

			if (pass == 0 && !(s->flags & PF_X))
				continue;
			if (pos >= from && pos - from < s->filesz) {
				*ret = to + (pos - from);
				return 0;
			}
		}
	}
	return -ENOENT;
}

size_t elf_syms__segments(const struct elf_syms *es, struct elf_syms_seg *ret, size_t max)
{
	size_t n = es ? es->info.nsegments : 0;

	if (ret && n)
		memcpy(ret, es->segs, (n < max ? n : max) * sizeof(*ret));
	return n;
}

int elf_syms__segs_offset_to_vaddr(const struct elf_syms_seg *segs, size_t n, uint64_t file_offset,
				   uint64_t *ret_vaddr)
{
	return seg_translate(segs, n, file_offset, false, ret_vaddr);
}

int elf_syms__offset_to_vaddr(const struct elf_syms *es, uint64_t file_offset, uint64_t *ret_vaddr)
{
	return es ? seg_translate(es->segs, es->info.nsegments, file_offset, false, ret_vaddr) : -EINVAL;
}

int elf_syms__vaddr_to_offset(const struct elf_syms *es, uint64_t vaddr, uint64_t *ret_offset)
{
	return es ? seg_translate(es->segs, es->info.nsegments, vaddr, true, ret_offset) : -EINVAL;
}

int elf_syms__lookup(const struct elf_syms *es, uint64_t vaddr, const char **ret_name,
		     uint64_t *ret_offset)
{
	size_t idx;

	return elf_syms__lookup_index(es, vaddr, &idx, ret_name, ret_offset);
}

int elf_syms__lookup_index(const struct elf_syms *es, uint64_t vaddr, size_t *ret_idx,
			   const char **ret_name, uint64_t *ret_offset)
{
	size_t lo;

	if (!es || !es->nsyms)
		return -ENOENT;
	lo = TABLES_UPPER_BOUND(es->syms, es->nsyms, addr, vaddr);
	for (size_t i = lo, k = 0; i > 0 && k < LOOKBACK; i--, k++) {
		const struct esym *s = &es->syms[i - 1];

		if (vaddr - s->addr < s->size) {
			*ret_idx = i - 1;
			*ret_name = es->arena + s->name;
			*ret_offset = vaddr - s->addr;
			return 0;
		}
	}
	return -ENOENT;
}

size_t elf_syms__count(const struct elf_syms *es)
{
	return es ? es->nsyms : 0;
}

int elf_syms__symbol(const struct elf_syms *es, size_t idx, uint64_t *ret_addr, uint64_t *ret_size,
		     const char **ret_name)
{
	if (!es || idx >= es->nsyms)
		return -ENOENT;
	if (ret_addr)
		*ret_addr = es->syms[idx].addr;
	if (ret_size)
		*ret_size = es->syms[idx].size;
	if (ret_name)
		*ret_name = es->arena + es->syms[idx].name;
	return 0;
}

void elf_syms__info(const struct elf_syms *es, struct elf_syms_info *ret)
{
	if (es)
		*ret = es->info;
	else
		*ret = (struct elf_syms_info){ 0 };
}

size_t elf_syms__memory(const struct elf_syms *es)
{
	if (!es)
		return 0;
	return sizeof(*es) + es->nsyms * sizeof(*es->syms) + es->arena_len +
	       (es->debuglink ? strlen(es->debuglink) + 1 : 0);
}
