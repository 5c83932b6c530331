#include "collector/tls_verify.h"

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "bpf/net_abi.h"
#include "common/cleanup.h"
#include "common/tls_code.h"
#include "common/x86_insn.h"

#define MAX_SEGS 64                /* PT_LOADs kept, in header order, as the analyzer does */
#define SYM_SIZE 24                /* Elf64_Sym */
#define SHDR_SIZE 64               /* Elf64_Shdr */
#define PHDR_SIZE 56               /* Elf64_Phdr */
#define NAME_MAX_LEN 25            /* the longest name looked for, with its NUL */
#define MAX_HITS 256               /* places a string table holds the names looked for */
#define PCLN_MAGIC_118 0xfffffff0u
#define PCLN_MAGIC_120 0xfffffff1u

_Static_assert(sizeof("crypto/tls.(*Conn).Write") == NAME_MAX_LEN, "NAME_MAX_LEN: the longest name looked for, with its NUL");

/* Names by enum net_tls_fn. */
static const char *const fn_names[NET_TLS_FN_MAX + 1] = {
	[NET_TLS_SSL_WRITE] = "SSL_write",
	[NET_TLS_SSL_READ] = "SSL_read",
	[NET_TLS_SSL_WRITE_EX] = "SSL_write_ex",
	[NET_TLS_SSL_READ_EX] = "SSL_read_ex",
	[NET_TLS_GO_WRITE] = "crypto/tls.(*Conn).Write",
	[NET_TLS_GO_READ] = "crypto/tls.(*Conn).Read",
};

/* A window on the file: the bytes at [off, off + len). */
struct win {
	uint64_t off;
	size_t len;
	uint8_t b[TLS_VERIFY_WINDOW];
};

struct seg { uint64_t vaddr, off, filesz; bool exec; };
/* A section's bytes in the file (size 0: absent). */
struct sect { uint64_t off, size; };
/* A function found: address, size, and binding rank (global 2, weak 1, local 0; -1 not found). */
struct func { uint64_t vaddr, size; int rank; };

/* Where a string table holds the names looked for: offsets from its start, and which name (enum net_tls_fn). */
struct hits {
	size_t n;
	uint64_t off[MAX_HITS];
	uint8_t fn[MAX_HITS];
};

struct vf {
	int fd;
	uint64_t size;
	unsigned reads;
	bool over_budget;      /* the read budget spent, or more than MAX_HITS names: not parseable */
	struct win hdr, sym, str, tab, fnc;   /* headers; symbols; names; Go's functab; Go's _func records */
	struct seg segs[MAX_SEGS];
	size_t nsegs;
	struct sect symtab, symstr, dynsym, dynstr, pclntab;
	uint64_t text_addr;
	bool go;
	struct func found[NET_TLS_FN_MAX + 1];
	/* The bytes of one function, where its instructions start, and the points its code gets. */
	unsigned code_fn;                     /* 0: none loaded */
	int code_err;                         /* enum tls_verify_why when it could not be loaded */
	uint64_t code_off;
	size_t code_len;
	uint8_t code[TLS_CODE_MAX_FN];
	uint8_t starts[TLS_CODE_MAX_FN / 8];
	struct tls_code_point pts[CTL_TLS_MAX_POINTS];
	int npts;
};

static uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/*
 * n bytes (n <= TLS_VERIFY_WINDOW) at file offset off, through window w: from
 * the bytes it holds, else one pread of a window's worth from off.  NULL if
 * they are not all inside the file, the read comes back short, or the read
 * budget is spent.
 */
static const uint8_t *rd(struct vf *f, struct win *w, uint64_t off, size_t n)
{
	size_t want;
	ssize_t got;

	if (n > TLS_VERIFY_WINDOW || off > f->size || n > f->size - off)
		return NULL;
	if (w->len && off >= w->off && off - w->off <= w->len && n <= w->len - (off - w->off))
		return w->b + (off - w->off);
	if (f->reads >= TLS_VERIFY_MAX_READS) {
		f->over_budget = true;
		return NULL;
	}
	f->reads++;
	want = f->size - off < TLS_VERIFY_WINDOW ? (size_t)(f->size - off) : TLS_VERIFY_WINDOW;
	w->len = 0;
	got = pread(f->fd, w->b, want, (off_t)off);
	if (got < 0 || (size_t)got < n)
		return NULL;
	w->off = off;
	w->len = (size_t)got;
	return w->b;
}

/* Whether the NUL-terminated name at off (inside a string table ending at end) is exactly want. */
static bool name_is(struct vf *f, struct win *w, uint64_t off, uint64_t end, const char *want)
{
	size_t len = strlen(want);
	const uint8_t *p;

	if (off >= end || len + 1 > end - off)
		return false;
	p = rd(f, w, off, len + 1);
	return p && !memcmp(p, want, len) && p[len] == 0;
}

/* A section's bytes, if they are in the file (not SHT_NOBITS, not compressed). */
static bool sect_of(const struct vf *f, const uint8_t *sh, struct sect *ret)
{
	uint64_t type = le(sh + offsetof(Elf64_Shdr, sh_type), 4), flags = le(sh + offsetof(Elf64_Shdr, sh_flags), 8);
	uint64_t off = le(sh + offsetof(Elf64_Shdr, sh_offset), 8), size = le(sh + offsetof(Elf64_Shdr, sh_size), 8);

	if (type == SHT_NOBITS || (flags & SHF_COMPRESSED) || off > f->size || size > f->size - off)
		return false;
	*ret = (struct sect){ .off = off, .size = size };
	return true;
}

/* Section header i (i < shnum, checked by the caller against the file), or NULL. */
static const uint8_t *shdr(struct vf *f, uint64_t shoff, uint64_t i)
{
	return rd(f, &f->hdr, shoff + i * SHDR_SIZE, SHDR_SIZE);
}

/* A symbol table (sh: its header) and its string table (sh_link). */
static void symtab_of(struct vf *f, const uint8_t *sh, uint64_t shoff, uint64_t shnum, struct sect *tab,
		      struct sect *str)
{
	uint64_t link = le(sh + offsetof(Elf64_Shdr, sh_link), 4);
	struct sect t, s;
	const uint8_t *lsh;

	if (le(sh + offsetof(Elf64_Shdr, sh_entsize), 8) != SYM_SIZE || !sect_of(f, sh, &t) || link >= shnum)
		return;
	lsh = shdr(f, shoff, link);   /* moves the window: sh is not used after this */
	if (!lsh || le(lsh + offsetof(Elf64_Shdr, sh_type), 4) != SHT_STRTAB || !sect_of(f, lsh, &s) || !s.size)
		return;
	*tab = t;
	*str = s;
}

/*
 * ELF header, program headers (the PT_LOADs inside the file), section
 * headers (symbol tables, .text's address, .gopclntab).  Returns false if the
 * file is not an x86-64 ELF file whose headers lie inside it.
 */
static bool load(struct vf *f)
{
	const uint8_t *e = rd(f, &f->hdr, 0, sizeof(Elf64_Ehdr));
	uint64_t phoff, shoff, phnum, shnum, shstrndx, type;
	struct sect shstr = { 0, 0 };

	if (!e || memcmp(e, ELFMAG, SELFMAG) || e[EI_CLASS] != ELFCLASS64 || e[EI_DATA] != ELFDATA2LSB)
		return false;
	type = le(e + offsetof(Elf64_Ehdr, e_type), 2);
	if ((type != ET_EXEC && type != ET_DYN) || le(e + offsetof(Elf64_Ehdr, e_machine), 2) != EM_X86_64)
		return false;
	phoff = le(e + offsetof(Elf64_Ehdr, e_phoff), 8);
	shoff = le(e + offsetof(Elf64_Ehdr, e_shoff), 8);
	phnum = le(e + offsetof(Elf64_Ehdr, e_phnum), 2);
	shnum = le(e + offsetof(Elf64_Ehdr, e_shnum), 2);
	shstrndx = le(e + offsetof(Elf64_Ehdr, e_shstrndx), 2);
	if (le(e + offsetof(Elf64_Ehdr, e_phentsize), 2) != PHDR_SIZE || !phnum || phnum > TLS_VERIFY_MAX_PHDRS ||
	    phoff > f->size || phnum * PHDR_SIZE > f->size - phoff)
		return false;
	if (shoff && (le(e + offsetof(Elf64_Ehdr, e_shentsize), 2) != SHDR_SIZE || !shnum ||
		      shoff > f->size || shnum * SHDR_SIZE > f->size - shoff || shstrndx == SHN_XINDEX))
		return false;
	for (uint64_t i = 0; i < phnum; i++) {
		const uint8_t *p = rd(f, &f->hdr, phoff + i * PHDR_SIZE, PHDR_SIZE);
		uint64_t vaddr, off, filesz;

		if (!p)
			return false;
		vaddr = le(p + offsetof(Elf64_Phdr, p_vaddr), 8);
		off = le(p + offsetof(Elf64_Phdr, p_offset), 8);
		filesz = le(p + offsetof(Elf64_Phdr, p_filesz), 8);
		if (le(p + offsetof(Elf64_Phdr, p_type), 4) != PT_LOAD || off > f->size || filesz > f->size - off ||
		    vaddr + filesz < vaddr || f->nsegs == MAX_SEGS)
			continue;
		f->segs[f->nsegs++] = (struct seg){ .vaddr = vaddr, .off = off, .filesz = filesz,
						    .exec = le(p + offsetof(Elf64_Phdr, p_flags), 4) & PF_X };
	}
	if (!shoff)
		return true;   /* no sections: nothing to find by name */
	if (shstrndx < shnum) {
		const uint8_t *s = shdr(f, shoff, shstrndx);

		if (!s)
			return false;
		if (le(s + offsetof(Elf64_Shdr, sh_type), 4) != SHT_STRTAB || !sect_of(f, s, &shstr))
			shstr = (struct sect){ 0, 0 };
	}
	for (uint64_t i = 1; i < shnum; i++) {
		const uint8_t *s = shdr(f, shoff, i);
		uint64_t type, name, addr;
		struct sect blob;

		if (!s)
			return false;
		type = le(s + offsetof(Elf64_Shdr, sh_type), 4);
		name = le(s + offsetof(Elf64_Shdr, sh_name), 4);
		addr = le(s + offsetof(Elf64_Shdr, sh_addr), 8);
		if (!sect_of(f, s, &blob))
			blob = (struct sect){ 0, 0 };
		/* By type, whatever their names: a symbol table found is searched by name below. */
		if (type == SHT_SYMTAB) {
			symtab_of(f, s, shoff, shnum, &f->symtab, &f->symstr);
			continue;
		}
		if (type == SHT_DYNSYM) {
			symtab_of(f, s, shoff, shnum, &f->dynsym, &f->dynstr);
			continue;
		}
		/* The names below are read through the names' window: s stays valid. */
		if (!shstr.size || name >= shstr.size)
			continue;
		if (name_is(f, &f->str, shstr.off + name, shstr.off + shstr.size, ".text")) {
			f->text_addr = addr;
		} else if (name_is(f, &f->str, shstr.off + name, shstr.off + shstr.size, ".gopclntab") ||
			   name_is(f, &f->str, shstr.off + name, shstr.off + shstr.size, ".data.rel.ro.gopclntab")) {
			f->go = true;   /* a Go binary even when the section's bytes are out of the file */
			if (blob.size)
				f->pclntab = blob;
		} else if (name_is(f, &f->str, shstr.off + name, shstr.off + shstr.size, ".go.buildinfo") ||
			   name_is(f, &f->str, shstr.off + name, shstr.off + shstr.size, ".note.go.buildid")) {
			f->go = true;
		}
	}
	return true;
}

/*
 * Every offset in string table str where one of fn_names[lo..hi] is, with
 * its NUL (a symbol's name may be the tail of a longer string), from one
 * sequential pass: windows that overlap by NAME_MAX_LEN - 1 bytes, a match
 * taken from the window where it starts before the overlap (or the last
 * one), so each is found once.  False if the table cannot be read or holds
 * more than MAX_HITS of them (over_budget then).
 */
static bool find_names(struct vf *f, const struct sect *str, unsigned lo, unsigned hi, struct hits *h)
{
	uint64_t pos = 0;

	h->n = 0;
	/* Each step moves on by at least TLS_VERIFY_WINDOW - NAME_MAX_LEN + 1 bytes. */
	while (pos < str->size) {
		size_t n = str->size - pos < TLS_VERIFY_WINDOW ? (size_t)(str->size - pos) : TLS_VERIFY_WINDOW;
		bool last = pos + n == str->size;
		size_t fresh = last ? n : n - (NAME_MAX_LEN - 1);   /* matches starting before this are this window's */
		const uint8_t *b = rd(f, &f->str, str->off + pos, n);

		if (!b)
			return false;
		for (unsigned k = lo; k <= hi; k++) {
			size_t len = strlen(fn_names[k]) + 1;
			const uint8_t *p = b, *end = b + n;

			while ((size_t)(end - p) >= len && (p = memmem(p, (size_t)(end - p), fn_names[k], len)) &&
			       (size_t)(p - b) < fresh) {
				if (h->n == MAX_HITS) {
					f->over_budget = true;
					return false;
				}
				h->off[h->n] = pos + (uint64_t)(p - b);
				h->fn[h->n++] = (uint8_t)k;
				p++;
			}
		}
		if (last)
			break;
		pos += fresh;
	}
	return true;
}

/*
 * Defined, sized function symbols of tab named fn_names[lo..hi] ->
 * found[]: global over weak over local, first wins (as the analyzer ranks
 * them).  Names are compared by offset against where str holds them, so the
 * symbols are read in one sequential pass too: at most tab->size / SYM_SIZE.
 */
static void scan_symbols(struct vf *f, const struct sect *tab, const struct sect *str, unsigned lo, unsigned hi)
{
	uint64_t count = tab->size / SYM_SIZE;
	struct hits h;

	if (!find_names(f, str, lo, hi, &h) || !h.n)
		return;
	for (uint64_t i = 1; i < count; i++) {
		const uint8_t *s = rd(f, &f->sym, tab->off + i * SYM_SIZE, SYM_SIZE);
		uint64_t name, shndx, size;
		uint8_t info;
		int rank;

		if (!s)
			return;
		info = s[offsetof(Elf64_Sym, st_info)];
		shndx = le(s + offsetof(Elf64_Sym, st_shndx), 2);
		size = le(s + offsetof(Elf64_Sym, st_size), 8);
		rank = ELF64_ST_BIND(info) == STB_GLOBAL ? 2 : ELF64_ST_BIND(info) == STB_WEAK ? 1 :
		       ELF64_ST_BIND(info) == STB_LOCAL ? 0 : -1;
		if (ELF64_ST_TYPE(info) != STT_FUNC || shndx == SHN_UNDEF || shndx >= SHN_LORESERVE || !size || rank < 0)
			continue;
		name = le(s + offsetof(Elf64_Sym, st_name), 4);
		for (size_t j = 0; j < h.n; j++) {
			unsigned k = h.fn[j];

			if (h.off[j] != name)
				continue;
			if (rank > f->found[k].rank)
				f->found[k] = (struct func){ .vaddr = le(s + offsetof(Elf64_Sym, st_value), 8),
							     .size = size, .rank = rank };
			break;
		}
	}
}

/*
 * Go's crypto/tls functions from .gopclntab (Go 1.18+), the first of each
 * name in table order, with the checks symbolizer/gopclntab applies:
 *
 *   header: magic u32, 0, 0, minLC u8, ptrSize u8, then ptrSize words
 *           nfunc, nfiles, textStart, funcnameOffset, cuOffset,
 *           filetabOffset, pctabOffset, pclnOffset (offsets from the header)
 *   functab at pclnOffset: nfunc pairs {entryoff u32, funcoff u32} + an end entryoff
 *   _func at pclnOffset + funcoff: {entryoff u32, nameoff i32, ...}
 *   name: NUL-terminated at funcnameOffset + nameoff
 *
 * At most nfunc <= (section size - pclnOffset) / 8 functions.
 */
static void scan_pclntab(struct vf *f, bool want_write, bool want_read)
{
	const struct sect *t = &f->pclntab;
	const uint8_t *h = rd(f, &f->tab, t->off, 8);
	uint64_t len = t->size, nfunc, text, names, pcln, magic;
	unsigned ptr;

	if (!h || len < 8 || h[4] || h[5] || (h[6] != 1 && h[6] != 2 && h[6] != 4) || (h[7] != 4 && h[7] != 8))
		return;
	magic = le(h, 4);
	ptr = h[7];
	if ((magic != PCLN_MAGIC_118 && magic != PCLN_MAGIC_120) || len < 8 + 8 * (uint64_t)ptr)
		return;
	h = rd(f, &f->tab, t->off, 8 + 8 * (size_t)ptr);
	if (!h)
		return;
	nfunc = le(h + 8, ptr);
	text = le(h + 8 + 2 * ptr, ptr);
	names = le(h + 8 + 3 * ptr, ptr);
	pcln = le(h + 8 + 7 * ptr, ptr);
	if (!text)
		text = f->text_addr;   /* a PIE's textStart is filled in by a relocation */
	if (names >= len || pcln >= len || nfunc > (len - pcln) / 8 || nfunc * 8 + 4 > len - pcln)
		return;
	for (uint64_t i = 0; i < nfunc && (want_write || want_read); i++) {
		const uint8_t *e = rd(f, &f->tab, t->off + pcln + i * 8, 12), *fr;
		uint64_t entry_off, func_off, end_off, fpos, npos;
		int32_t nameoff;

		if (!e)
			return;
		entry_off = le(e, 4);
		func_off = le(e + 4, 4);
		end_off = le(e + 8, 4);
		if (end_off <= entry_off || text + end_off < text || func_off > len - pcln || len - (pcln + func_off) < 8)
			continue;
		fpos = pcln + func_off;
		fr = rd(f, &f->fnc, t->off + fpos, 8);
		if (!fr)
			return;
		nameoff = (int32_t)le(fr + 4, 4);
		if (nameoff < 0 || (uint64_t)nameoff >= len - names)
			continue;
		npos = names + (uint64_t)nameoff;
		for (unsigned k = NET_TLS_GO_WRITE; k <= NET_TLS_GO_READ; k++) {
			bool *want = k == NET_TLS_GO_WRITE ? &want_write : &want_read;

			if (!*want || !name_is(f, &f->str, t->off + npos, t->off + len, fn_names[k]))
				continue;
			f->found[k] = (struct func){ .vaddr = text + entry_off, .size = end_off - entry_off, .rank = 0 };
			*want = false;
		}
	}
}

/* The functions the points' cookies name, found as the analyzer finds them. */
static void find_functions(struct vf *f, const struct ctl_tls_point *pts, uint32_t n)
{
	bool ssl = false, go = false;

	for (unsigned k = 0; k <= NET_TLS_FN_MAX; k++)
		f->found[k].rank = -1;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t fn = pts[i].cookie & 0xff;

		ssl |= fn >= NET_TLS_SSL_WRITE && fn <= NET_TLS_SSL_READ_EX;
		go |= fn == NET_TLS_GO_WRITE || fn == NET_TLS_GO_READ;
	}
	if (ssl) {
		if (f->symtab.size)
			scan_symbols(f, &f->symtab, &f->symstr, NET_TLS_SSL_WRITE, NET_TLS_SSL_READ_EX);
		if (f->dynsym.size)
			scan_symbols(f, &f->dynsym, &f->dynstr, NET_TLS_SSL_WRITE, NET_TLS_SSL_READ_EX);
	}
	if (go && f->go) {
		if (f->symtab.size)
			scan_symbols(f, &f->symtab, &f->symstr, NET_TLS_GO_WRITE, NET_TLS_GO_READ);
		/* Stripped (neither name in .symtab): the runtime's own table names every function. */
		if (f->found[NET_TLS_GO_WRITE].rank < 0 && f->found[NET_TLS_GO_READ].rank < 0 && f->pclntab.size)
			scan_pclntab(f, true, true);
	}
}

/* The file range of [vaddr, vaddr + len) inside one executable PT_LOAD's file bytes (the first such). */
static bool exec_range(const struct vf *f, uint64_t vaddr, uint64_t len, uint64_t *ret_off)
{
	for (size_t i = 0; i < f->nsegs; i++) {
		const struct seg *s = &f->segs[i];
		uint64_t d;

		if (!s->exec || vaddr < s->vaddr)
			continue;
		d = vaddr - s->vaddr;
		if (d >= s->filesz || len > s->filesz - d)
			continue;
		*ret_off = s->off + d;
		return true;
	}
	return false;
}

/* Function fn's bytes into f->code, its instruction starts, and its points; 0 or enum tls_verify_why. */
static int load_code(struct vf *f, unsigned fn)
{
	const struct func *fu = &f->found[fn];
	ssize_t got;
	size_t pos = 0;

	if (f->code_fn == fn)
		return f->code_err;
	f->code_fn = fn;
	f->code_err = TLS_VERIFY_FUNCTION;
	if (fu->rank < 0 || !fu->size || fu->size > TLS_CODE_MAX_FN || !exec_range(f, fu->vaddr, fu->size, &f->code_off))
		return f->code_err;
	f->code_len = (size_t)fu->size;
	f->code_err = TLS_VERIFY_FILE;
	if (f->reads >= TLS_VERIFY_MAX_READS)
		return f->code_err;
	f->reads++;
	got = pread(f->fd, f->code, f->code_len, (off_t)f->code_off);
	if (got < 0 || (size_t)got != f->code_len)
		return f->code_err;
	/*
	 * Instruction starts, decoding from the first byte until the end or the
	 * first bytes not decoded (at most code_len steps of one byte or more).
	 */
	memset(f->starts, 0, sizeof(f->starts));
	while (pos < f->code_len) {
		int len = x86_insn__len(f->code + pos, f->code_len - pos);

		if (len <= 0)
			break;
		f->starts[pos / 8] |= (uint8_t)(1u << (pos % 8));
		pos += (size_t)len;
	}
	f->npts = tls_code__points(f->code, f->code_len, fn, f->pts, CTL_TLS_MAX_POINTS);
	f->code_err = TLS_VERIFY_OK;
	return f->code_err;
}

/* A cookie the TLS program serves: a known function, and a side that function has. */
static bool cookie_ok(uint64_t cookie)
{
	uint64_t fn = cookie & 0xff, kind = (cookie >> 8) & 0xff;
	bool go = fn == NET_TLS_GO_WRITE || fn == NET_TLS_GO_READ;

	if (cookie >> 16 || !fn || fn > NET_TLS_FN_MAX)
		return false;
	if (kind == NET_TLS_P_ENTRY)
		return true;
	if (kind == NET_TLS_P_RETURN || kind == NET_TLS_P_CALL || kind == NET_TLS_P_AFTER_CALL)
		return !go;        /* never uretprobes on Go: it moves goroutine stacks */
	return kind == NET_TLS_P_RET_INSN && go;
}

static int check_point(struct vf *f, bool parsed, const struct ctl_tls_point *p)
{
	unsigned fn = (unsigned)(p->cookie & 0xff), kind = (unsigned)((p->cookie >> 8) & 0xff);
	uint64_t rel;
	bool in_exec = false;
	int err;

	if (!cookie_ok(p->cookie))
		return TLS_VERIFY_COOKIE;
	if (!parsed)
		return TLS_VERIFY_FILE;
	for (size_t i = 0; i < f->nsegs && !in_exec; i++)
		in_exec = f->segs[i].exec && p->off >= f->segs[i].off && p->off - f->segs[i].off < f->segs[i].filesz;
	if (!in_exec)
		return TLS_VERIFY_SEGMENT;
	err = load_code(f, fn);
	if (err)
		return err;
	if (p->off < f->code_off || p->off - f->code_off >= f->code_len)
		return TLS_VERIFY_OUTSIDE;
	rel = p->off - f->code_off;
	if (!(f->starts[rel / 8] & (1u << (rel % 8))))
		return TLS_VERIFY_BOUNDARY;
	for (int i = 0; i < f->npts; i++)
		if (f->pts[i].off == rel && f->pts[i].kind == kind)
			return TLS_VERIFY_OK;
	return TLS_VERIFY_INSN;
}

int tls_verify__points(int fd, const struct ctl_tls_point *pts, uint32_t n, struct tls_verify_verdict *ret)
{
	_cleanup_free_ struct vf *f = NULL;
	struct stat st;
	bool parsed;

	*ret = (struct tls_verify_verdict){ TLS_VERIFY_OK, 0 };
	if (!n)
		return 0;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->fd = fd;
	parsed = !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size > 0;
	if (parsed) {
		f->size = (uint64_t)st.st_size;
		parsed = load(f);
	}
	if (parsed)
		find_functions(f, pts, n);
	if (f->over_budget)
		parsed = false;
	for (uint32_t i = 0; i < n; i++) {
		int why = check_point(f, parsed, &pts[i]);

		if (why != TLS_VERIFY_OK) {
			*ret = (struct tls_verify_verdict){ (uint32_t)why, i };
			return -EINVAL;
		}
	}
	return 0;
}

const char *tls_verify__why_name(unsigned why)
{
	static const char *const names[TLS_VERIFY_WHY_MAX] = {
		[TLS_VERIFY_OK] = "ok",
		[TLS_VERIFY_COOKIE] = "bad_cookie",
		[TLS_VERIFY_FILE] = "unparseable_file",
		[TLS_VERIFY_SEGMENT] = "not_executable",
		[TLS_VERIFY_FUNCTION] = "function_not_found",
		[TLS_VERIFY_OUTSIDE] = "outside_function",
		[TLS_VERIFY_BOUNDARY] = "not_instruction_start",
		[TLS_VERIFY_INSN] = "wrong_instruction",
	};

	return why < TLS_VERIFY_WHY_MAX ? names[why] : "unknown";
}
