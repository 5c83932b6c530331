#include "analyzer/tls/tls_probe.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/tls_code.h"
#include "symbolizer/gopclntab.h"

/* ---- the ELF file ------------------------------------------------------- */

#define MAX_SEGS 64
#define SYM_SIZE 24                /* Elf64_Sym */
#define GO_VERSION_MIN 117         /* register ABI on amd64 */

struct seg { uint64_t vaddr, off, filesz; bool exec; };
/* A section's bytes inside the image (size 0: absent). */
struct blob { const uint8_t *p; size_t size; uint64_t addr; };

struct file {
	const uint8_t *img;
	size_t size;
	struct seg segs[MAX_SEGS];
	size_t nsegs;
	struct blob symtab, symstr, dynsym, dynstr, buildinfo, pclntab;
	uint64_t text_addr;
	bool go;
};

/* A function found: where, and how sure (binding: global 2, weak 1, local 0; -1 none). */
struct func { uint64_t vaddr, size; int rank; };

static uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static uint64_t be(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* The file range of [vaddr, vaddr + len) inside one PT_LOAD's file bytes (exec: executable ones only), or NULL. */
static const uint8_t *at_vaddr(const struct file *f, uint64_t vaddr, uint64_t len, bool exec, uint64_t *ret_off)
{
	for (size_t i = 0; i < f->nsegs; i++) {
		const struct seg *s = &f->segs[i];
		uint64_t d;

		if ((exec && !s->exec) || vaddr < s->vaddr)
			continue;
		d = vaddr - s->vaddr;
		if (d >= s->filesz || len > s->filesz - d)
			continue;
		if (ret_off)
			*ret_off = s->off + d;
		return f->img + s->off + d;
	}
	return NULL;
}

/* A section's contents, if they lie inside the file. */
static bool blob_of(const struct file *f, const GElf_Shdr *sh, struct blob *ret)
{
	if (sh->sh_type == SHT_NOBITS || (sh->sh_flags & SHF_COMPRESSED) || sh->sh_offset > f->size ||
	    sh->sh_size > f->size - sh->sh_offset)
		return false;
	ret->p = f->img + sh->sh_offset;
	ret->size = sh->sh_size;
	ret->addr = sh->sh_addr;
	return true;
}

/* A symbol table and its string table (sh_link). */
static void symtab_of(Elf *elf, struct file *f, const GElf_Shdr *sh, struct blob *tab, struct blob *str)
{
	Elf_Scn *ls = elf_getscn(elf, sh->sh_link);
	GElf_Shdr lsh;
	struct blob t, s;

	if (sh->sh_entsize != SYM_SIZE || !ls || !gelf_getshdr(ls, &lsh) || lsh.sh_type != SHT_STRTAB ||
	    !blob_of(f, sh, &t) || !blob_of(f, &lsh, &s) || !s.size)
		return;
	*tab = t;
	*str = s;
}

static int load(Elf *elf, struct file *f)
{
	GElf_Ehdr eh;
	size_t nph, shstrndx;
	Elf_Scn *scn = NULL;

	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64 ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN))
		return -ENOEXEC;
	f->img = (const uint8_t *)elf_rawfile(elf, &f->size);
	if (!f->img)
		return -ENOEXEC;
	if (elf_getphdrnum(elf, &nph))
		return -ENOEXEC;
	for (size_t i = 0; i < nph && f->nsegs < MAX_SEGS; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || ph.p_offset > f->size ||
		    ph.p_filesz > f->size - ph.p_offset || ph.p_vaddr + ph.p_filesz < ph.p_vaddr)
			continue;
		f->segs[f->nsegs++] = (struct seg){ .vaddr = ph.p_vaddr, .off = ph.p_offset, .filesz = ph.p_filesz,
						    .exec = ph.p_flags & PF_X };
	}
	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;   /* no sections: nothing to find by name */
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (sh.sh_type == SHT_SYMTAB)
			symtab_of(elf, f, &sh, &f->symtab, &f->symstr);
		else if (sh.sh_type == SHT_DYNSYM)
			symtab_of(elf, f, &sh, &f->dynsym, &f->dynstr);
		else if (!strcmp(name, ".text"))
			f->text_addr = sh.sh_addr;
		/* A Go binary even when the section's bytes are out of the file. */
		if (!strcmp(name, ".go.buildinfo")) {
			f->go = true;
			(void)blob_of(f, &sh, &f->buildinfo);
		} else if (!strcmp(name, ".gopclntab") || !strcmp(name, ".data.rel.ro.gopclntab")) {
			f->go = true;
			(void)blob_of(f, &sh, &f->pclntab);
		} else if (!strcmp(name, ".note.go.buildid")) {
			f->go = true;
		}
	}
	return 0;
}

/* Defined, sized function symbols named one of names[0..n) -> found[]: global over weak over local, first wins. */
static void scan_symbols(const struct blob *tab, const struct blob *str, const char *const *names, size_t n,
			 struct func *found)
{
	size_t count = tab->size / SYM_SIZE;

	for (size_t i = 1; i < count; i++) {
		const uint8_t *s = tab->p + i * SYM_SIZE;
		uint64_t name = le(s, 4), value = le(s + 8, 8), size = le(s + 16, 8);
		uint8_t info = s[4];
		unsigned shndx = (unsigned)le(s + 6, 2);
		int rank = ELF64_ST_BIND(info) == STB_GLOBAL ? 2 : ELF64_ST_BIND(info) == STB_WEAK ? 1 :
			   ELF64_ST_BIND(info) == STB_LOCAL ? 0 : -1;
		const char *nm;
		size_t len;

		if (ELF64_ST_TYPE(info) != STT_FUNC || shndx == SHN_UNDEF || shndx >= SHN_LORESERVE || !size ||
		    rank < 0 || name >= str->size)
			continue;
		nm = (const char *)str->p + name;
		len = strnlen(nm, str->size - name);
		if (len == str->size - name)
			continue;   /* not terminated inside the table */
		for (size_t k = 0; k < n; k++) {
			if (len != strlen(names[k]) || memcmp(nm, names[k], len))
				continue;
			if (rank > found[k].rank)
				found[k] = (struct func){ .vaddr = value, .size = size, .rank = rank };
			break;
		}
	}
}

/* ---- Go ------------------------------------------------------------------ */

/* "go1.N..." (or "devel go1.N-...") -> 100 + N, else 0. */
static unsigned parse_go_version(const uint8_t *s, size_t len)
{
	unsigned minor = 0;
	size_t i = 0, digits = 0;

	if (len >= 6 && !memcmp(s, "devel ", 6)) {
		s += 6;
		len -= 6;
	}
	if (len < 5 || memcmp(s, "go1.", 4))
		return 0;
	for (i = 4; i < len && s[i] >= '0' && s[i] <= '9' && digits < 3; i++, digits++)
		minor = minor * 10 + (unsigned)(s[i] - '0');
	return digits ? 100 + minor : 0;
}

/*
 * The version string of .go.buildinfo: magic "\xff Go buildinf:", pointer
 * size, flags; with flags & 2 (Go 1.18+) varint-length strings follow at
 * offset 32, the version first; before, two pointers at 16 to Go string
 * headers {data, len} (the version's first), in the byte order of flags & 1.
 */
static unsigned go_version_of(const struct file *f)
{
	static const char magic[14] = "\xff Go buildinf:";
	const uint8_t *b = f->buildinfo.p, *hdr, *str;
	size_t len = f->buildinfo.size;
	uint64_t (*rd)(const uint8_t *, unsigned);
	unsigned ptr, shift = 0;
	uint64_t v = 0, data, n;
	size_t i;

	if (len < 32 || memcmp(b, magic, sizeof(magic)))
		return 0;
	ptr = b[14];
	if (b[15] & 2) {
		for (i = 32; i < len && shift < 64; i++, shift += 7) {
			v |= (uint64_t)(b[i] & 0x7f) << shift;
			if (!(b[i] & 0x80))
				break;
		}
		if (i >= len || shift >= 64 || v > len - i - 1)
			return 0;
		return parse_go_version(b + i + 1, (size_t)v);
	}
	if (ptr != 4 && ptr != 8)
		return 0;
	rd = (b[15] & 1) ? be : le;
	hdr = at_vaddr(f, rd(b + 16, ptr), 2 * (uint64_t)ptr, false, NULL);
	if (!hdr)
		return 0;
	data = rd(hdr, ptr);
	n = rd(hdr + ptr, ptr);
	if (n > 64)
		n = 64;     /* "go1.NN.N" and then some: the start is all that is read */
	str = at_vaddr(f, data, n, false, NULL);
	return str ? parse_go_version(str, (size_t)n) : 0;
}

static const char *const go_names[2] = { "crypto/tls.(*Conn).Write", "crypto/tls.(*Conn).Read" };

struct go_ctx { struct func *found; };

static int go_func(void *ctx, uint64_t entry, uint64_t end, const char *name, size_t len)
{
	struct go_ctx *g = ctx;

	for (size_t k = 0; k < 2; k++)
		if (g->found[k].rank < 0 && len == strlen(go_names[k]) && !memcmp(name, go_names[k], len))
			g->found[k] = (struct func){ .vaddr = entry, .size = end - entry, .rank = 0 };
	return g->found[0].rank >= 0 && g->found[1].rank >= 0;   /* both: stop */
}

/* Stripped (no .symtab, or not these names in it): the runtime's own table (Go 1.18+ layout) names every function. */
static void go_from_pclntab(const struct file *f, struct func *found)
{
	struct go_ctx g = { .found = found };

	if (f->pclntab.size)
		(void)gopclntab__parse(f->pclntab.p, f->pclntab.size, f->text_addr, false, 0, go_func, &g, NULL);
}

/* ---- points ---------------------------------------------------------------- */

/* A function found, whose bytes are all inside an executable segment. */
static bool located(const struct file *f, const struct func *fn)
{
	return fn->rank >= 0 && at_vaddr(f, fn->vaddr, fn->size, true, NULL);
}

/* The points common/tls_code gives the function's bytes, as file offsets. */
static int add_points(const struct file *f, const struct func *fn, int id, struct tls_probe_set *set)
{
	struct tls_code_point pts[TLS_MAX_POINTS];
	uint64_t off;
	const uint8_t *code = at_vaddr(f, fn->vaddr, fn->size, true, &off);
	int n;

	if (!code)
		return 0;
	n = tls_code__points(code, (size_t)fn->size, (unsigned)id, pts, TLS_MAX_POINTS - set->n);
	for (int i = 0; i < n; i++)
		set->pts[set->n++] = (struct tls_point){ .off = off + pts[i].off, .fn = (uint8_t)id, .kind = pts[i].kind,
							 .insn = pts[i].insn };
	return n < 0 ? n : 0;
}

static int find(Elf *elf, struct tls_probe_set *set)
{
	static const char *const ssl_names[4] = { "SSL_write", "SSL_read", "SSL_write_ex", "SSL_read_ex" };
	struct file f = { 0 };
	struct func found[4];
	int err;

	memset(set, 0, sizeof(*set));
	err = load(elf, &f);
	if (err)
		return err;
	for (size_t k = 0; k < 4; k++)
		found[k].rank = -1;
	if (f.go) {
		set->go_version = go_version_of(&f);
		if (set->go_version && set->go_version < GO_VERSION_MIN) {
			set->lib = TLS_LIB_GO;
			return -ENOTSUP;
		}
		if (!set->go_version && f.pclntab.size >= 4) {
			/* No version: the table's magic dates it (fffffffa: 1.16 or 1.17, fffffffb: older). */
			uint32_t magic = (uint32_t)le(f.pclntab.p, 4);

			if (magic == 0xfffffffau || magic == 0xfffffffbu) {
				set->lib = TLS_LIB_GO;
				return -ENOTSUP;
			}
		}
		if (f.symtab.size)
			scan_symbols(&f.symtab, &f.symstr, go_names, 2, found);
		if (found[0].rank < 0 && found[1].rank < 0)
			go_from_pclntab(&f, found);   /* stripped */
		for (size_t k = 0; k < 2; k++)
			if (located(&f, &found[k]))
				set->lib = TLS_LIB_GO;
		if (set->lib) {
			for (size_t k = 0; k < 2 && !err; k++)
				if (located(&f, &found[k]))
					err = add_points(&f, &found[k], k ? TLS_FN_GO_READ : TLS_FN_GO_WRITE, set);
			if (err)
				set->n = 0;
			return err;
		}
	}
	for (size_t k = 0; k < 4; k++)
		found[k].rank = -1;
	if (f.symtab.size)
		scan_symbols(&f.symtab, &f.symstr, ssl_names, 4, found);
	if (f.dynsym.size)
		scan_symbols(&f.dynsym, &f.dynstr, ssl_names, 4, found);
	for (size_t k = 0; k < 4 && !err; k++) {
		if (!located(&f, &found[k]))
			continue;
		set->lib = TLS_LIB_OPENSSL;
		err = add_points(&f, &found[k], TLS_FN_SSL_WRITE + (int)k, set);
	}
	if (err)
		set->n = 0;
	return err;
}

int tls_probe__find_fd(int fd, struct tls_probe_set *ret)
{
	Elf *elf;
	int err;

	memset(ret, 0, sizeof(*ret));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = find(elf, ret);
	if (elf)
		elf_end(elf);
	return err;
}

int tls_probe__find_mem(const void *image, size_t len, struct tls_probe_set *ret)
{
	Elf *elf;
	void *copy;
	int err;

	memset(ret, 0, sizeof(*ret));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	/* libelf may write to a memory image it is given: hand it a copy. */
	copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	if (len)
		memcpy(copy, image, len);
	elf = elf_memory(copy, len);
	err = find(elf, ret);
	if (elf)
		elf_end(elf);
	free(copy);
	return err;
}
