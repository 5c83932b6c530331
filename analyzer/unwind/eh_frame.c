#include "analyzer/unwind/eh_frame.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_ROWS (1u << 24)
#define MAX_STATES 16            /* DW_CFA_remember_state depth */
#define REG_RBP 6
#define REG_RSP 7

/* A bounded reader: any read past end sets bad and yields 0, so callers check once. */
struct rd {
	const uint8_t *p, *end;
	bool bad;
};

static uint8_t rd_u8(struct rd *r)
{
	if (r->p >= r->end) {
		r->bad = true;
		return 0;
	}
	return *r->p++;
}

static uint64_t rd_un(struct rd *r, unsigned n)
{
	uint64_t v = 0;

	if ((size_t)(r->end - r->p) < n) {
		r->bad = true;
		r->p = r->end;
		return 0;
	}
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

/* LEB128, unsigned or sign-extended; more than 64 bits of it is malformed. */
static uint64_t rd_leb(struct rd *r, bool sign)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		b = rd_u8(r);
		if (r->bad || shift > 63) {
			r->bad = true;
			return 0;
		}
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (sign && shift < 64 && (b & 0x40))
		v |= ~0ull << shift;
	return v;
}

static uint64_t rd_uleb(struct rd *r) { return rd_leb(r, false); }
static int64_t rd_sleb(struct rd *r) { return (int64_t)rd_leb(r, true); }

/* Factored offsets wrap instead of overflowing: a nonsense value is then refused by range checks, not UB. */
static int64_t mul(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a * (uint64_t)b);
}

/* A DW_EH_PE-encoded value; field is the virtual address of the value being read (for pcrel). */
static uint64_t rd_ptr(struct rd *r, uint8_t enc, uint64_t field, uint64_t datarel)
{
	uint64_t v;

	switch (enc & 0x0f) {
	case 0x00: case 0x04: case 0x0c: v = rd_un(r, 8); break;
	case 0x01: v = rd_uleb(r); break;
	case 0x02: v = rd_un(r, 2); break;
	case 0x03: v = rd_un(r, 4); break;
	case 0x09: v = (uint64_t)rd_sleb(r); break;
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)rd_un(r, 2); break;
	case 0x0b: v = (uint64_t)(int64_t)(int32_t)rd_un(r, 4); break;
	default: r->bad = true; return 0;
	}
	switch (enc & 0x70) {
	case 0x00: break;
	case 0x10: v += field; break;
	case 0x30: v += datarel; break;
	default: r->bad = true; return 0; /* textrel, funcrel, aligned: not used on x86-64 */
	}
	return v;
}

struct sec {
	const uint8_t *data;
	size_t size;
	uint64_t vaddr;
	bool debug;        /* .debug_frame: CIE id ~0, CIE pointers are section offsets, absolute addresses */
};

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	bool has_z, signal;
	const uint8_t *insns, *insns_end;
};

/* What the unwinder needs of the register rules at one location. */
enum { CFA_REG, CFA_PLT, CFA_OTHER };
enum { R_SAME, R_OFFSET, R_UNDEF, R_OTHER };
struct rules {
	uint8_t cfa_kind, plt_thresh, rbp, ra;
	uint64_t cfa_reg;
	int64_t cfa_off, rbp_off, ra_off;
};

struct xrow {
	uint32_t pc;
	uint32_t seq;
	uint8_t real;      /* 0: the end of an FDE's range (loses to a row that starts there) */
	struct unwind_row row;
};

struct builder {
	struct xrow *v;
	size_t n, cap, max;
	int err;
	struct eh_frame_stats *st;
};

static void push(struct builder *b, uint32_t pc, struct unwind_row row, bool real)
{
	if (b->err)
		return;
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;
		struct xrow *v;

		/* Rows before merging may exceed the cap a little: merging shrinks them. */
		if (b->n >= 2 * b->max) {
			b->err = -E2BIG;
			return;
		}
		v = realloc(b->v, cap * sizeof(*v));
		if (!v) {
			b->err = -ENOMEM;
			return;
		}
		b->v = v;
		b->cap = cap;
	}
	b->v[b->n] = (struct xrow){ .pc = pc, .seq = (uint32_t)b->n, .real = real, .row = row };
	b->n++;
	b->st->raw_rows++;
}

static struct unwind_row to_row(struct builder *b, const struct cie *c, const struct rules *s)
{
	struct unwind_row r = { .type = UNW_NONE };

	if (c->signal) {
		r.type = UNW_SIGNAL;
		return r;
	}
	if (s->ra == R_UNDEF) {
		r.type = UNW_END;
		return r;
	}
	if (s->ra != R_OFFSET || s->ra_off != -8)
		goto unsupported;
	if (s->cfa_kind == CFA_PLT) {
		r.type = UNW_PLT;
		r.cfa_off = s->plt_thresh;
	} else if (s->cfa_kind == CFA_REG && (s->cfa_reg == REG_RSP || s->cfa_reg == REG_RBP) &&
		   s->cfa_off >= 0 && s->cfa_off <= 0xffff) {
		r.type = s->cfa_reg == REG_RSP ? UNW_CFA_RSP : UNW_CFA_RBP;
		r.cfa_off = (uint16_t)s->cfa_off;
	} else {
		goto unsupported;
	}
	if (s->rbp == R_OFFSET && s->rbp_off % 8 == 0 && s->rbp_off / 8 >= -128 && s->rbp_off / 8 <= 127)
		r.fp_off8 = (int8_t)(s->rbp_off / 8);
	return r;
unsupported:
	b->st->unsupported++;
	r.type = UNW_NONE;
	return r;
}

/* glibc/binutils PLT: CFA = rsp + 8 + ((rip & 15) >= N) << 3, as DW_OP_breg7 8; breg16 0; lit15; and; litN; ge; lit3; shl; plus. */
static bool plt_expr(const uint8_t *e, uint64_t len, uint8_t *thresh)
{
	if (len != 11 || e[0] != 0x77 || e[1] != 0x08 || e[2] != 0x80 || e[3] != 0x00 || e[4] != 0x3f ||
	    e[5] != 0x1a || e[6] < 0x30 || e[6] > 0x4f || e[7] != 0x2a || e[8] != 0x33 || e[9] != 0x24 ||
	    e[10] != 0x22)
		return false;
	*thresh = (uint8_t)(e[6] - 0x30);
	return true;
}

static void set_reg(struct rules *s, const struct cie *c, uint64_t reg, int kind, int64_t off)
{
	if (reg == REG_RBP) {
		s->rbp = (uint8_t)kind;
		s->rbp_off = off;
	} else if (reg == c->ra_reg) {
		s->ra = (uint8_t)kind;
		s->ra_off = off;
	}
}

static void restore_reg(struct rules *s, const struct rules *init, const struct cie *c, uint64_t reg)
{
	if (!init)
		return;
	if (reg == REG_RBP) {
		s->rbp = init->rbp;
		s->rbp_off = init->rbp_off;
	} else if (reg == c->ra_reg) {
		s->ra = init->ra;
		s->ra_off = init->ra_off;
	}
}

/*
 * Runs one instruction stream.  With b (an FDE), rows are emitted for
 * [loc, end); without (a CIE's initial instructions), advances are errors.
 * Returns false on a malformed stream.
 */
static bool run(struct builder *b, const struct sec *sec, const struct cie *c, const uint8_t *p,
		const uint8_t *pend, struct rules *s, const struct rules *init, uint64_t *loc, uint64_t end)
{
	struct rd r = { p, pend, false };
	struct rules stack[MAX_STATES];
	unsigned depth = 0;

	while (r.p < r.end && !r.bad) {
		uint8_t op = rd_u8(&r);
		uint64_t reg = 0, delta = 0, newloc = 0, len;
		bool advance = false;

		switch (op >> 6) {
		case 1:
			delta = (uint64_t)(op & 0x3f) * c->code_align;
			advance = true;
			break;
		case 2:
			set_reg(s, c, op & 0x3f, R_OFFSET, mul((int64_t)rd_uleb(&r), c->data_align));
			continue;
		case 3:
			restore_reg(s, init, c, op & 0x3f);
			continue;
		default:
			break;
		}
		if (!advance) {
			switch (op) {
			case 0x00: /* nop */
				break;
			case 0x01: /* set_loc */
				newloc = sec->debug ? rd_un(&r, 8)
						    : rd_ptr(&r, c->fde_enc, sec->vaddr + (uint64_t)(r.p - sec->data), sec->vaddr);
				if (newloc < *loc)
					return false;
				delta = newloc - *loc;
				advance = true;
				break;
			case 0x02: delta = rd_un(&r, 1) * c->code_align; advance = true; break;
			case 0x03: delta = rd_un(&r, 2) * c->code_align; advance = true; break;
			case 0x04: delta = rd_un(&r, 4) * c->code_align; advance = true; break;
			case 0x05: /* offset_extended */
				reg = rd_uleb(&r);
				set_reg(s, c, reg, R_OFFSET, mul((int64_t)rd_uleb(&r), c->data_align));
				break;
			case 0x06: restore_reg(s, init, c, rd_uleb(&r)); break;
			case 0x07: set_reg(s, c, rd_uleb(&r), R_UNDEF, 0); break;
			case 0x08: set_reg(s, c, rd_uleb(&r), R_SAME, 0); break;
			case 0x09: /* register: saved in another register */
				reg = rd_uleb(&r);
				(void)rd_uleb(&r);
				set_reg(s, c, reg, R_OTHER, 0);
				break;
			case 0x0a:
				if (depth == MAX_STATES)
					return false;
				stack[depth++] = *s;
				break;
			case 0x0b:
				if (!depth)
					return false;
				*s = stack[--depth];
				break;
			case 0x0c:
				s->cfa_kind = CFA_REG;
				s->cfa_reg = rd_uleb(&r);
				s->cfa_off = (int64_t)rd_uleb(&r);
				break;
			case 0x0d:
				s->cfa_kind = CFA_REG;
				s->cfa_reg = rd_uleb(&r);
				break;
			case 0x0e: s->cfa_off = (int64_t)rd_uleb(&r); break;
			case 0x0f: /* def_cfa_expression */
				len = rd_uleb(&r);
				if (r.bad || len > (uint64_t)(r.end - r.p))
					return false;
				s->cfa_kind = plt_expr(r.p, len, &s->plt_thresh) ? CFA_PLT : CFA_OTHER;
				r.p += len;
				break;
			case 0x10: /* expression */
			case 0x16: /* val_expression */
				reg = rd_uleb(&r);
				len = rd_uleb(&r);
				if (r.bad || len > (uint64_t)(r.end - r.p))
					return false;
				r.p += len;
				set_reg(s, c, reg, R_OTHER, 0);
				break;
			case 0x11:
				reg = rd_uleb(&r);
				set_reg(s, c, reg, R_OFFSET, mul(rd_sleb(&r), c->data_align));
				break;
			case 0x12:
				s->cfa_kind = CFA_REG;
				s->cfa_reg = rd_uleb(&r);
				s->cfa_off = mul(rd_sleb(&r), c->data_align);
				break;
			case 0x13: s->cfa_off = mul(rd_sleb(&r), c->data_align); break;
			case 0x14: /* val_offset */
			case 0x15:
				reg = rd_uleb(&r);
				if (op == 0x14)
					(void)rd_uleb(&r);
				else
					(void)rd_sleb(&r);
				set_reg(s, c, reg, R_OTHER, 0);
				break;
			case 0x2e: (void)rd_uleb(&r); break; /* GNU_args_size */
			case 0x2f:
				reg = rd_uleb(&r);
				set_reg(s, c, reg, R_OFFSET, mul((int64_t)rd_uleb(&r), mul(-1, c->data_align)));
				break;
			default:
				return false;
			}
		}
		if (r.bad)
			return false;
		if (advance) {
			if (!b)
				return false; /* a CIE's initial instructions do not move */
			if (delta && *loc < end)
				push(b, (uint32_t)*loc, to_row(b, c, s), true);
			if (delta > end - *loc)
				return true; /* the rest lies past the FDE's range */
			*loc += delta;
		}
	}
	return !r.bad;
}

static bool parse_cie(const struct sec *sec, uint64_t off, struct cie *c)
{
	struct rd r;
	uint64_t len, id;
	const uint8_t *end, *aug;
	size_t auglen;
	uint8_t version;
	bool is64 = false;

	if (off >= sec->size)
		return false;
	r = (struct rd){ sec->data + off, sec->data + sec->size, false };
	len = rd_un(&r, 4);
	if (len == 0xffffffffu) {
		len = rd_un(&r, 8);
		is64 = true;
	}
	if (r.bad || len == 0 || len > (uint64_t)(r.end - r.p))
		return false;
	end = r.p + len;
	r.end = end;
	id = rd_un(&r, is64 ? 8 : 4);
	if (sec->debug ? id != (is64 ? ~0ull : 0xffffffffu) : id != 0)
		return false;
	version = rd_u8(&r);
	if (version != 1 && version != 3 && version != 4)
		return false;
	aug = r.p;
	auglen = strnlen((const char *)aug, (size_t)(r.end - r.p));
	if (auglen == (size_t)(r.end - r.p))
		return false;
	r.p += auglen + 1;
	memset(c, 0, sizeof(*c));
	if (version == 4) {
		uint8_t asz = rd_u8(&r);
		(void)rd_u8(&r);
		if (asz != 8)
			return false;
	}
	c->code_align = rd_uleb(&r);
	c->data_align = rd_sleb(&r);
	c->ra_reg = version == 1 ? rd_u8(&r) : rd_uleb(&r);
	c->fde_enc = 0x00; /* absptr */
	if (auglen && aug[0] == 'z') {
		uint64_t alen = rd_uleb(&r);
		const uint8_t *aend;

		if (r.bad || alen > (uint64_t)(r.end - r.p))
			return false;
		aend = r.p + alen;
		c->has_z = true;
		for (size_t i = 1; i < auglen; i++) {
			struct rd ar = { r.p, aend, false };
			uint8_t enc;

			switch (aug[i]) {
			case 'L': (void)rd_u8(&ar); break;
			case 'R': c->fde_enc = rd_u8(&ar); break;
			case 'P':
				enc = rd_u8(&ar);
				(void)rd_ptr(&ar, enc & 0x7f, 0, 0);
				break;
			case 'S': c->signal = true; break;
			default: i = auglen; break; /* the length says where the data ends */
			}
			if (ar.bad)
				return false;
			r.p = ar.p;
		}
		r.p = aend;
	} else if (auglen) {
		return false; /* "eh" and other pre-'z' augmentations: sizes unknown */
	}
	if (r.bad || c->code_align == 0)
		return false;
	c->insns = r.p;
	c->insns_end = end;
	return true;
}

static void parse_section(struct builder *b, const struct sec *sec)
{
	uint64_t off = 0;

	while (off + 4 <= sec->size && !b->err) {
		struct rd r = { sec->data + off, sec->data + sec->size, false };
		uint64_t len, id, id_off, begin, range, loc, end;
		struct cie c;
		struct rules s = { .cfa_kind = CFA_OTHER, .rbp = R_SAME, .ra = R_OTHER }, init;
		bool is64 = false;

		len = rd_un(&r, 4);
		if (len == 0)
			break; /* the terminator */
		if (len == 0xffffffffu) {
			len = rd_un(&r, 8);
			is64 = true;
		}
		if (r.bad || len > (uint64_t)(r.end - r.p)) {
			b->st->bad_entries++;
			break;
		}
		r.end = r.p + len;
		off = (uint64_t)(r.end - sec->data);
		id_off = (uint64_t)(r.p - sec->data);
		id = rd_un(&r, is64 ? 8 : 4);
		if (r.bad) {
			b->st->bad_entries++;
			continue;
		}
		if (sec->debug ? id == (is64 ? ~0ull : 0xffffffffu) : id == 0) {
			b->st->cies++;
			continue;
		}
		b->st->fdes++;
		if (!sec->debug && id > id_off) {
			b->st->bad_entries++;
			continue;
		}
		if (!parse_cie(sec, sec->debug ? id : id_off - id, &c)) {
			b->st->bad_entries++;
			continue;
		}
		if (sec->debug) {
			begin = rd_un(&r, 8);
			range = rd_un(&r, 8);
		} else {
			begin = rd_ptr(&r, c.fde_enc, sec->vaddr + (uint64_t)(r.p - sec->data), sec->vaddr);
			range = rd_ptr(&r, c.fde_enc & 0x0f, 0, 0);
		}
		if (c.has_z) {
			uint64_t alen = rd_uleb(&r);
			if (!r.bad && alen <= (uint64_t)(r.end - r.p))
				r.p += alen;
			else
				r.bad = true;
		}
		if (r.bad) {
			b->st->bad_entries++;
			continue;
		}
		if (begin == 0 || range == 0)
			continue; /* discarded by the linker */
		if (begin >= (1ull << 32) || range > (1ull << 32) - begin) {
			b->st->high_pcs++;
			continue;
		}
		end = begin + range;
		loc = begin;
		if (!run(NULL, sec, &c, c.insns, c.insns_end, &s, NULL, &loc, end)) {
			b->st->bad_entries++;
			continue;
		}
		init = s;
		if (!run(b, sec, &c, r.p, r.end, &s, &init, &loc, end)) {
			b->st->bad_entries++;
			/* The rows pushed so far describe what was parsed: end the range there. */
		}
		if (loc < end)
			push(b, (uint32_t)loc, to_row(b, &c, &s), true);
		if (end < (1ull << 32))
			push(b, (uint32_t)end, (struct unwind_row){ .type = UNW_NONE }, false);
	}
}

static int cmp_xrow(const void *a, const void *b)
{
	const struct xrow *x = a, *y = b;

	if (x->pc != y->pc)
		return x->pc < y->pc ? -1 : 1;
	if (x->real != y->real)
		return x->real < y->real ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static bool same_rule(const struct unwind_row *a, const struct unwind_row *b)
{
	return a->type == b->type && a->cfa_off == b->cfa_off && a->fp_off8 == b->fp_off8;
}

static int finish(struct builder *b, struct unwind_row **ret_rows, size_t *ret_n)
{
	struct unwind_row *out;
	size_t n = 0;

	if (b->err)
		return b->err;
	if (!b->n)
		return 0;
	qsort(b->v, b->n, sizeof(*b->v), cmp_xrow);
	out = malloc(b->n * sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < b->n; i++) {
		if (i + 1 < b->n && b->v[i + 1].pc == b->v[i].pc)
			continue; /* the last row at a pc wins */
		if (n && same_rule(&out[n - 1], &b->v[i].row))
			continue;
		out[n] = b->v[i].row;
		out[n].pc = b->v[i].pc;
		n++;
	}
	if (n > b->max) {
		free(out);
		return -E2BIG;
	}
	*ret_rows = out;
	*ret_n = n;
	return 0;
}

/* .eh_frame through PT_GNU_EH_FRAME, for files without section headers. */
static bool from_eh_frame_hdr(Elf *elf, const uint8_t *img, size_t size, struct sec *ret)
{
	size_t nph;
	GElf_Phdr hdr = { 0 }, ph;
	bool found = false;

	if (elf_getphdrnum(elf, &nph))
		return false;
	for (size_t i = 0; i < nph && !found; i++)
		if (gelf_getphdr(elf, (int)i, &hdr) && hdr.p_type == PT_GNU_EH_FRAME)
			found = true;
	if (!found || hdr.p_offset > size || hdr.p_filesz > size - hdr.p_offset || hdr.p_filesz < 8)
		return false;
	struct rd r = { img + hdr.p_offset, img + hdr.p_offset + hdr.p_filesz, false };
	uint8_t version = rd_u8(&r), enc = rd_u8(&r);
	(void)rd_u8(&r);
	(void)rd_u8(&r);
	if (version != 1 || enc == 0xff)
		return false;
	uint64_t ptr = rd_ptr(&r, enc, hdr.p_vaddr + 4, hdr.p_vaddr);
	if (r.bad)
		return false;
	for (size_t i = 0; i < nph; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || ptr < ph.p_vaddr ||
		    ptr - ph.p_vaddr >= ph.p_filesz || ph.p_offset > size || ph.p_filesz > size - ph.p_offset)
			continue;
		ret->data = img + ph.p_offset + (ptr - ph.p_vaddr);
		ret->size = ph.p_filesz - (ptr - ph.p_vaddr);
		ret->vaddr = ptr;
		ret->debug = false;
		return true;
	}
	return false;
}

static int rows_elf(Elf *elf, size_t max_rows, struct unwind_row **ret_rows, size_t *ret_n,
		    struct eh_frame_stats *st)
{
	GElf_Ehdr eh;
	size_t shstrndx, size = 0;
	Elf_Scn *scn = NULL;
	struct sec eh_frame = { 0 }, debug_frame = { 0 }, *use = NULL;
	const uint8_t *img;
	struct builder b = { .max = max_rows ? max_rows : DEFAULT_MAX_ROWS, .st = st };
	int err;

	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64)
		return -ENOEXEC;
	img = (const uint8_t *)elf_rawfile(elf, &size);
	if (!img)
		return -ENOEXEC;
	if (!elf_getshdrstrndx(elf, &shstrndx)) {
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *name;
			struct sec *s;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
				continue;
			s = !strcmp(name, ".eh_frame") ? &eh_frame : !strcmp(name, ".debug_frame") ? &debug_frame : NULL;
			if (!s || sh.sh_offset > size || sh.sh_size > size - sh.sh_offset || (sh.sh_flags & SHF_COMPRESSED))
				continue;
			s->data = img + sh.sh_offset;
			s->size = sh.sh_size;
			s->vaddr = sh.sh_addr;
			s->debug = s == &debug_frame;
		}
	}
	if (eh_frame.size) {
		use = &eh_frame;
		st->source = 1;
	} else if (debug_frame.size) {
		use = &debug_frame;
		st->source = 2;
	} else if (from_eh_frame_hdr(elf, img, size, &eh_frame)) {
		use = &eh_frame;
		st->source = 3;
	}
	if (use)
		parse_section(&b, use);
	err = finish(&b, ret_rows, ret_n);
	free(b.v);
	return err;
}

int eh_frame__rows_fd(int fd, size_t max_rows, struct unwind_row **ret_rows, size_t *ret_n,
		      struct eh_frame_stats *ret_stats)
{
	struct eh_frame_stats st = { 0 };
	Elf *elf;
	int err;

	*ret_rows = NULL;
	*ret_n = 0;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	err = rows_elf(elf, max_rows, ret_rows, ret_n, &st);
	if (elf)
		elf_end(elf);
	if (ret_stats)
		*ret_stats = st;
	return err;
}

int eh_frame__rows_mem(const void *image, size_t len, size_t max_rows, struct unwind_row **ret_rows,
		       size_t *ret_n, struct eh_frame_stats *ret_stats)
{
	struct eh_frame_stats st = { 0 };
	Elf *elf;
	int err;

	*ret_rows = NULL;
	*ret_n = 0;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOEXEC;
	/* libelf may write to a memory image it is given: hand it a copy. */
	void *copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, image, len);
	elf = elf_memory(copy, len);
	err = rows_elf(elf, max_rows, ret_rows, ret_n, &st);
	if (elf)
		elf_end(elf);
	free(copy);
	if (ret_stats)
		*ret_stats = st;
	return err;
}

int eh_frame__rows_section(const void *sec, size_t len, uint64_t vaddr, int debug, size_t max_rows,
			   struct unwind_row **ret_rows, size_t *ret_n, struct eh_frame_stats *ret_stats)
{
	struct eh_frame_stats st = { .source = debug ? 2 : 1 };
	struct builder b = { .max = max_rows ? max_rows : DEFAULT_MAX_ROWS, .st = &st };
	struct sec s = { .data = sec, .size = len, .vaddr = vaddr, .debug = !!debug };
	int err;

	*ret_rows = NULL;
	*ret_n = 0;
	parse_section(&b, &s);
	err = finish(&b, ret_rows, ret_n);
	free(b.v);
	if (ret_stats)
		*ret_stats = st;
	return err;
}

long eh_frame__find(const struct unwind_row *rows, size_t n, uint32_t pc)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}
