/*
 * analyzer/tls/tls_probe and what it is built on: the x86-64 length decoder
 * (common/x86_insn) on hand-written encodings (each length checked against
 * objdump when written), the kernel's view of an instruction, probe points of hand-built ELF images (OpenSSL
 * names, Go with both .go.buildinfo layouts, refused functions, limits) and
 * of the system's libssl.so.3 and node, against offsets computed here with
 * libelf.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/tls/tls_probe.h"
#include "common/x86_insn.h"

/* ---- the decoder ---------------------------------------------------------- */

struct vec { const char *hex; int len; };

/* Bytes from "48 8b 05 ..." into b; returns the count. */
static size_t unhex(const char *s, uint8_t *b, size_t cap)
{
	size_t n = 0;

	while (*s && n < cap) {
		char *end;
		unsigned long v = strtoul(s, &end, 16);

		if (end == s)
			break;
		b[n++] = (uint8_t)v;
		s = end;
	}
	return n;
}

static const struct vec lengths[] = {
	/* nops, prefixes */
	{ "90", 1 }, { "66 90", 2 }, { "0f 1f 00", 3 }, { "0f 1f 44 00 00", 5 },
	{ "66 0f 1f 84 00 00 00 00 00", 9 }, { "66 2e 0f 1f 84 00 00 00 00 00", 10 }, { "f3 0f 1e fa", 4 },
	/* REX.W mov imm64; 66 and REX.W together (REX.W wins) */
	{ "48 b8 88 77 66 55 44 33 22 11", 10 }, { "49 bb 88 77 66 55 44 33 22 11", 10 },
	{ "b8 44 33 22 11", 5 }, { "66 b8 22 11", 4 }, { "66 48 b8 88 77 66 55 44 33 22 11", 11 },
	{ "48 c7 c0 44 33 22 11", 7 }, { "66 c7 00 22 11", 5 },
	/* ModRM, SIB, displacements, rip-relative */
	{ "48 8b 05 44 33 22 11", 7 }, { "48 8b 04 25 44 33 22 11", 8 }, { "8b 44 24 08", 4 },
	{ "8b 84 24 00 01 00 00", 7 }, { "8b 04 24", 3 }, { "41 8b 45 00", 4 }, { "8b 04 05 44 33 22 11", 7 },
	{ "c7 05 44 33 22 11 01 00 00 00", 10 }, { "66 c7 05 44 33 22 11 01 00", 9 },
	/* f6/f7: an immediate only for /0 and /1 */
	{ "f6 c0 01", 3 }, { "f6 d0", 2 }, { "f6 40 08 01", 4 }, { "f6 50 08", 3 },
	{ "f7 c0 44 33 22 11", 6 }, { "f7 d8", 2 }, { "66 f7 c0 22 11", 5 }, { "48 f7 c0 44 33 22 11", 7 },
	{ "a8 01", 2 }, { "a9 44 33 22 11", 5 },
	/* moffs, enter, ret imm16 */
	{ "a1 88 77 66 55 44 33 22 11", 9 }, { "67 a1 44 33 22 11", 6 }, { "48 a1 88 77 66 55 44 33 22 11", 10 },
	{ "c8 10 00 01", 4 }, { "c2 08 00", 3 }, { "c3", 1 }, { "f3 c3", 2 },
	/* branches */
	{ "e8 44 33 22 11", 5 }, { "e9 44 33 22 11", 5 }, { "eb 00", 2 }, { "74 05", 2 },
	{ "0f 84 44 33 22 11", 6 }, { "f2 e8 44 33 22 11", 6 }, { "e3 05", 2 }, { "66 74 05", 3 },
	{ "68 44 33 22 11", 5 }, { "6a 01", 2 }, { "69 c0 44 33 22 11", 6 }, { "6b c0 01", 3 },
	/* VEX */
	{ "c4 e2 79 18 05 44 33 22 11", 9 }, { "c5 fc 28 c1", 4 }, { "c5 f8 77", 3 }, { "c4 e3 7d 18 c1 01", 6 },
	{ "c5 f9 70 c1 1b", 5 }, { "c4 e2 f9 f7 c1", 5 }, { "c4 e2 63 f6 0d 44 33 22 11", 9 }, { "c5 f9 6f c1", 4 },
	/* EVEX (a compressed disp8 is still one byte) */
	{ "62 f1 7c 48 28 c1", 6 }, { "62 f1 fd 48 6f 44 24 01", 8 }, { "62 f3 7d 48 1b c1 01", 7 },
	{ "62 f1 7d 48 72 e0 05", 7 }, { "62 f2 7d 48 58 05 44 33 22 11", 10 },
	/* XOP maps 8 (imm8), 9, 10 (imm32); 8f /0 is pop */
	{ "8f e8 78 c0 c1 05", 6 }, { "8f e9 78 90 c1", 5 }, { "8f ea 78 10 c1 44 33 22 11", 9 }, { "8f c0", 2 },
	/* x87 */
	{ "d9 ee", 2 }, { "dd 04 24", 3 }, { "d9 d0", 2 }, { "d8 c1", 2 }, { "9b", 1 },
	/* 0f, 0f 38, 0f 3a, groups */
	{ "f0 48 0f b1 0a", 5 }, { "66 0f 3a 0f c1 08", 6 }, { "66 0f 38 00 c1", 5 }, { "66 0f 3a 44 c1 11", 6 },
	{ "66 0f 38 dc c1", 5 }, { "0f 0b", 2 }, { "0f 05", 2 }, { "0f 20 c0", 3 }, { "0f ba e0 05", 4 },
	{ "c6 f8 01", 3 }, { "c7 f8 44 33 22 11", 6 }, { "ff d0", 2 }, { "ff 18", 2 }, { "ff 25 44 33 22 11", 6 },
	{ "0f 0f c1 b4", 4 }, { "66 0f 78 c0 01 02", 6 }, { "0f c7 f0", 3 }, { "0f c7 0f", 3 }, { "48 0f c7 0e", 4 },
	{ "f3 48 0f b8 c1", 5 }, { "f3 0f b8 c1", 4 }, { "0f a2", 2 }, { "0f 31", 2 }, { "0f ae e8", 3 },
	{ "0f ae 38", 3 }, { "66 0f 6f 05 44 33 22 11", 8 }, { "0f 10 05 44 33 22 11", 7 }, { "f2 0f 10 04 c8", 5 },
	{ "f3 0f a7 c8", 4 }, { "d7", 1 }, { "cc", 1 }, { "cd 80", 2 }, { "e4 10", 2 }, { "f4", 1 }, { "8e d0", 2 },
	{ "41 90", 2 }, { "f3 90", 2 }, { "55", 1 }, { "41 57", 2 }, { "48 55", 2 }, { "66 55", 2 },
	{ "48 83 ec 18", 4 }, { "0f 1f c8", 3 },
	/* invalid in 64-bit mode, undefined, or refused on purpose */
	{ "06", -1 }, { "07", -1 }, { "0e", -1 }, { "16", -1 }, { "1f", -1 }, { "27", -1 }, { "37", -1 },
	{ "60", -1 }, { "61", -1 }, { "82 c0 01", -1 }, { "9a 00 00 00 00 00 00", -1 }, { "ce", -1 },
	{ "d4 0a", -1 }, { "d6", -1 }, { "ea 00 00 00 00 00 00", -1 },
	{ "66 e8 44 33 22 11", -1 }, { "66 e9 44 33 22 11", -1 }, { "66 0f 84 44 33 22 11", -1 },
	{ "48 66 90", -1 }, { "40 40 90", -1 }, { "48 9b", -1 }, { "66 c5 fc 28 c1", -1 }, { "48 c5 fc 28 c1", -1 },
	{ "0f 38 ff c1", -1 }, { "0f 3a ff c1 00", -1 }, { "0f 04", -1 }, { "0f ff c0", 3 }, { "0f 24 c0", -1 },
	{ "8d c0", -1 }, { "ff f8", -1 }, { "ff d8", -1 }, { "fe d0", -1 }, { "c6 c8 01", -1 }, { "c7 c8 00 00 00 00", -1 },
	{ "8f c8", -1 }, { "8c f0", -1 }, { "8e c8", -1 }, { "0f ba c0 05", -1 }, { "0f c7 c8", -1 }, { "0f b8 c1", -1 },
	{ "d9 d1", -1 }, { "d9 08", -1 }, { "dd 28", -1 }, { "c4 e0 79 18 c1", -1 }, { "62 f4 7c 48 28 c1", -1 },
	{ "62 f1 7c 48 28 c1", 6 }, { "62 f1 78 48 28 c1", -1 }, { "62 f9 7c 48 28 c1", -1 }, { "8f eb 78 10 c1", -1 },
};

static void test_insn_len(void **state)
{
	uint8_t b[32];

	for (size_t i = 0; i < sizeof(lengths) / sizeof(lengths[0]); i++) {
		size_t n = unhex(lengths[i].hex, b, sizeof(b));
		int got = x86_insn__len(b, n);

		if (got != lengths[i].len)
			fail_msg("%s: length %d, expected %d", lengths[i].hex, got, lengths[i].len);
		if (got <= 0)
			continue;
		/* Exactly its bytes are read: one fewer is truncated, more changes nothing. */
		assert_int_equal(x86_insn__len(b, (size_t)got - 1), -1);
		memset(b + n, 0x90, sizeof(b) - n);
		assert_int_equal(x86_insn__len(b, sizeof(b)), got);
	}
	assert_int_equal(x86_insn__len(NULL, 0), -1);
	assert_int_equal(x86_insn__len(b, 0), -1);
	/* 15 bytes at most: 14 prefixes + nop is one instruction, 15 + nop is none. */
	memset(b, 0x66, 15);
	b[14] = 0x90;
	assert_int_equal(x86_insn__len(b, sizeof(b)), 15);
	b[15] = 0x90;
	b[14] = 0x66;
	assert_int_equal(x86_insn__len(b, sizeof(b)), -1);
}

static const struct vec classes[] = {
	{ "90", X86_INSN_NOP }, { "66 90", X86_INSN_NOP }, { "0f 1f 44 00 00", X86_INSN_NOP },
	{ "66 0f 1f 84 00 00 00 00 00", X86_INSN_NOP }, { "f3 90", X86_INSN_STEPPED }, { "0f 1f c8", X86_INSN_STEPPED },
	{ "e8 44 33 22 11", X86_INSN_EMULATED }, { "e9 44 33 22 11", X86_INSN_EMULATED }, { "eb 05", X86_INSN_EMULATED },
	{ "74 05", X86_INSN_EMULATED }, { "0f 84 44 33 22 11", X86_INSN_EMULATED }, { "f2 e8 44 33 22 11", X86_INSN_EMULATED },
	{ "55", X86_INSN_EMULATED }, { "41 57", X86_INSN_EMULATED }, { "50", X86_INSN_EMULATED },
	{ "48 55", X86_INSN_STEPPED }, { "66 55", X86_INSN_STEPPED }, { "48 83 ec 18", X86_INSN_STEPPED },
	{ "f3 0f 1e fa", X86_INSN_STEPPED }, { "c3", X86_INSN_STEPPED }, { "c2 08 00", X86_INSN_STEPPED },
	{ "49 3b 66 10", X86_INSN_STEPPED }, { "48 8b 05 44 33 22 11", X86_INSN_STEPPED }, { "ff d0", X86_INSN_STEPPED },
	{ "0f 05", X86_INSN_STEPPED }, { "66 0f 38 00 c1", X86_INSN_STEPPED }, { "c5 fc 28 c1", X86_INSN_STEPPED },
	{ "62 f1 7c 48 28 c1", X86_INSN_STEPPED }, { "64 48 8b 04 25 28 00 00 00", X86_INSN_STEPPED },
	/* refused by the kernel */
	{ "cc", -1 }, { "cd 80", -1 }, { "f4", -1 }, { "e4 10", -1 }, { "6c", -1 }, { "f0 48 0f b1 0a", -1 },
	{ "2e 74 05", -1 }, { "3e ff e0", -1 }, { "66 2e 0f 1f 84 00 00 00 00 00", -1 }, { "66 74 05", -1 },
	{ "8e d0", -1 }, { "41 90", -1 },
	/* VEX opcodes the kernel would take for a branch or nop, or off its table */
	{ "c5 f9 70 c1 1b", -1 }, { "c5 f8 77", -1 }, { "c5 f9 fe c0", X86_INSN_STEPPED }, { "c5 f9 eb c0", -1 },
	{ "c5 f9 ef c0", -1 },
	{ "c5 f9 6f c1", -1 }, { "8f e9 78 90 c1", -1 },
	/* not decodable */
	{ "06", -1 }, { "48 66 90", -1 }, { "", -1 },
};

static void test_insn_class(void **state)
{
	uint8_t b[32];

	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		size_t n = unhex(classes[i].hex, b, sizeof(b));
		int got = x86_insn__class(b, n);

		if (got != classes[i].len)
			fail_msg("%s: class %d, expected %d", classes[i].hex, got, classes[i].len);
	}
}

/* ---- hand-built ELF images ------------------------------------------------ */

#define BASE 0x400000u
#define TEXT_OFF 0x200u

struct sym { const char *name; uint32_t at; uint64_t size; uint8_t type, bind; bool undef; };
struct sec { const char *name; const void *data; size_t len; };

struct img { uint8_t b[16384]; size_t n; };

static size_t put(struct img *m, const void *p, size_t n)
{
	size_t at = m->n;

	assert_true(m->n + n <= sizeof(m->b));
	memcpy(m->b + at, p, n);
	m->n += n;
	return at;
}

static void align(struct img *m, size_t a)
{
	while (m->n % a)
		m->b[m->n++] = 0;
}

/*
 * An x86-64 ET_EXEC: one R+X PT_LOAD over the whole file at BASE; sections
 * .text (code at TEXT_OFF), a symbol table (.symtab, or .dynsym when dyn;
 * none when syms is NULL) with its strings, the extra sections (allocated,
 * at BASE + their offset), .shstrtab.
 */
static void build_x(struct img *m, const uint8_t *code, size_t code_len, const struct sym *syms, size_t nsyms,
		    bool dyn, const struct sec *extra, size_t nextra)
{
	Elf64_Ehdr eh = { 0 };
	Elf64_Phdr ph = { 0 };
	Elf64_Shdr sh[8];
	Elf64_Sym st[16];
	char shstr[256] = "", strtab[512] = "";
	size_t shstr_len = 1, strtab_len = 1, nsh = 1, symtab_at, strtab_at, shstr_at;

	memset(m, 0, sizeof(*m));
	memset(sh, 0, sizeof(sh));
	memset(st, 0, sizeof(st));
	assert_true(sizeof(eh) + sizeof(ph) <= TEXT_OFF && nsyms < 16 && nextra <= 3);
	m->n = TEXT_OFF;
	put(m, code, code_len);
	sh[nsh++] = (Elf64_Shdr){ .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
				  .sh_addr = BASE + TEXT_OFF, .sh_offset = TEXT_OFF, .sh_size = code_len,
				  .sh_addralign = 16 };
	sh[nsh - 1].sh_name = (uint32_t)shstr_len;
	shstr_len += (size_t)sprintf(shstr + shstr_len, ".text") + 1;
	if (syms) {
		for (size_t i = 0; i < nsyms; i++) {
			st[i + 1].st_name = (uint32_t)strtab_len;
			strtab_len += (size_t)sprintf(strtab + strtab_len, "%s", syms[i].name) + 1;
			st[i + 1].st_info = (uint8_t)ELF64_ST_INFO(syms[i].bind, syms[i].type);
			st[i + 1].st_shndx = syms[i].undef ? SHN_UNDEF : 1;
			st[i + 1].st_value = syms[i].undef ? 0 : BASE + TEXT_OFF + syms[i].at;
			st[i + 1].st_size = syms[i].size;
		}
		align(m, 8);
		symtab_at = put(m, st, (nsyms + 1) * sizeof(Elf64_Sym));
		strtab_at = put(m, strtab, strtab_len);
		sh[nsh] = (Elf64_Shdr){ .sh_type = dyn ? SHT_DYNSYM : SHT_SYMTAB, .sh_offset = symtab_at,
					.sh_size = (nsyms + 1) * sizeof(Elf64_Sym), .sh_link = (uint32_t)nsh + 1,
					.sh_info = 1, .sh_entsize = sizeof(Elf64_Sym), .sh_addralign = 8 };
		sh[nsh++].sh_name = (uint32_t)shstr_len;
		shstr_len += (size_t)sprintf(shstr + shstr_len, dyn ? ".dynsym" : ".symtab") + 1;
		sh[nsh] = (Elf64_Shdr){ .sh_type = SHT_STRTAB, .sh_offset = strtab_at, .sh_size = strtab_len,
					.sh_addralign = 1 };
		sh[nsh++].sh_name = (uint32_t)shstr_len;
		shstr_len += (size_t)sprintf(shstr + shstr_len, dyn ? ".dynstr" : ".strtab") + 1;
	}
	for (size_t i = 0; i < nextra; i++) {
		size_t at;

		align(m, 16);
		at = put(m, extra[i].data, extra[i].len);
		sh[nsh] = (Elf64_Shdr){ .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC, .sh_addr = BASE + at,
					.sh_offset = at, .sh_size = extra[i].len, .sh_addralign = 16 };
		sh[nsh++].sh_name = (uint32_t)shstr_len;
		shstr_len += (size_t)sprintf(shstr + shstr_len, "%s", extra[i].name) + 1;
	}
	uint32_t shstr_name = (uint32_t)shstr_len;

	shstr_len += (size_t)sprintf(shstr + shstr_len, ".shstrtab") + 1;
	shstr_at = put(m, shstr, shstr_len);
	sh[nsh++] = (Elf64_Shdr){ .sh_name = shstr_name, .sh_type = SHT_STRTAB, .sh_offset = shstr_at,
				  .sh_size = shstr_len, .sh_addralign = 1 };
	align(m, 8);
	eh.e_shoff = put(m, sh, nsh * sizeof(Elf64_Shdr));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_entry = BASE + TEXT_OFF;
	eh.e_phoff = sizeof(eh);
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(ph);
	eh.e_phnum = 1;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = (uint16_t)nsh;
	eh.e_shstrndx = (uint16_t)(nsh - 1);
	ph.p_type = PT_LOAD;
	ph.p_flags = PF_R | PF_X;
	ph.p_vaddr = ph.p_paddr = BASE;
	ph.p_filesz = ph.p_memsz = m->n;
	ph.p_align = 0x1000;
	memcpy(m->b, &eh, sizeof(eh));
	memcpy(m->b + sizeof(eh), &ph, sizeof(ph));
}

/* The common case: symbols in .symtab (.dynsym when dyn), a .go.buildinfo when bi is given. */
static void build(struct img *m, const uint8_t *code, size_t code_len, const struct sym *syms, size_t nsyms,
		  bool dyn, const uint8_t *bi, size_t bi_len)
{
	const struct sec s = { ".go.buildinfo", bi, bi_len };

	build_x(m, code, code_len, syms, nsyms, dyn, &s, bi ? 1 : 0);
}

static void point_is(const struct tls_point *p, uint64_t off, int fn, int kind, int insn)
{
	assert_int_equal(p->off, off);
	assert_int_equal(p->fn, fn);
	assert_int_equal(p->kind, kind);
	assert_int_equal(p->insn, insn);
}

static void test_openssl(void **state)
{
	static const uint8_t code[] = {
		/* 0: SSL_write: endbr64; push %rbp; mov %rsp,%rbp; ...; ret */
		0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
		/* 16: SSL_read: sub $0x18,%rsp; add $0x18,%rsp; ret */
		0x48, 0x83, 0xec, 0x18, 0x48, 0x83, 0xc4, 0x18, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
		/* 32: SSL_read_ex: starts with int3, which the kernel will not probe */
		0xcc, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
		/* 48: a local SSL_read (loses to the global one) */
		0x90, 0xc3,
	};
	const struct sym syms[] = {
		{ "SSL_write", 0, 10, STT_FUNC, STB_GLOBAL, false },
		{ "SSL_read", 48, 2, STT_FUNC, STB_LOCAL, false },
		{ "SSL_read", 16, 9, STT_FUNC, STB_GLOBAL, false },
		{ "SSL_read_ex", 32, 2, STT_FUNC, STB_GLOBAL, false },
		{ "SSL_write_ex", 0, 0, STT_FUNC, STB_GLOBAL, true },     /* imported */
		{ "SSL_peek", 0, 10, STT_FUNC, STB_GLOBAL, false },
	};
	struct tls_probe_set set;
	struct img m;

	for (int dyn = 0; dyn <= 1; dyn++) {
		build(&m, code, sizeof(code), syms, sizeof(syms) / sizeof(syms[0]), dyn, NULL, 0);
		assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), 0);
		assert_int_equal(set.lib, TLS_LIB_OPENSSL);
		assert_int_equal(set.go_version, 0);
		assert_int_equal(set.n, 4);
		/* past endbr64, both kinds at the same offset */
		point_is(&set.pts[0], TEXT_OFF + 4, TLS_FN_SSL_WRITE, TLS_PROBE_ENTRY, X86_INSN_EMULATED);
		point_is(&set.pts[1], TEXT_OFF + 4, TLS_FN_SSL_WRITE, TLS_PROBE_RETURN, X86_INSN_EMULATED);
		point_is(&set.pts[2], TEXT_OFF + 16, TLS_FN_SSL_READ, TLS_PROBE_ENTRY, X86_INSN_STEPPED);
		point_is(&set.pts[3], TEXT_OFF + 16, TLS_FN_SSL_READ, TLS_PROBE_RETURN, X86_INSN_STEPPED);
	}

	/*
	 * OpenSSL 3's wrapper shape (Debian 12's SSL_read, byte for byte): CALL on
	 * the call, AFTER_CALL on the jle after `test %eax,%eax`.  The same with
	 * one instruction not on the list before the call (mov %rsi,%rdi writes an
	 * argument): ENTRY + RETURN.  No RCX on the stack before the call: the same.
	 */
	static const uint8_t wrap[] = {
		/* 0: SSL_read */
		0x48, 0x83, 0xec, 0x18, 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00, 0x48, 0x89, 0x44, 0x24,
		0x08, 0x31, 0xc0, 0x85, 0xd2, 0x78, 0x2f, 0x48, 0x89, 0xe1, 0x48, 0x63, 0xd2, 0xe8, 0x3d, 0xfe, 0xff,
		0xff, 0x85, 0xc0, 0x7e, 0x03, 0xc3,
		/* 40: SSL_write: the same with mov %rsi,%rdi before the call */
		0x48, 0x83, 0xec, 0x18, 0x48, 0x89, 0xf7, 0x48, 0x89, 0xe1, 0xe8, 0x00, 0x00, 0x00, 0x00, 0x85, 0xc0,
		0x7e, 0x03, 0xc3,
		/* 60: SSL_read_ex: no RCX set before the call */
		0x48, 0x83, 0xec, 0x08, 0xe8, 0x00, 0x00, 0x00, 0x00, 0x85, 0xc0, 0x7e, 0x03, 0xc3,
	};
	const struct sym wsyms[] = {
		{ "SSL_read", 0, 40, STT_FUNC, STB_GLOBAL, false },
		{ "SSL_write", 40, 20, STT_FUNC, STB_GLOBAL, false },
		{ "SSL_read_ex", 60, 14, STT_FUNC, STB_GLOBAL, false },
	};
	build(&m, wrap, sizeof(wrap), wsyms, 3, false, NULL, 0);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), 0);
	assert_int_equal(set.n, 6);
	point_is(&set.pts[0], TEXT_OFF + 40, TLS_FN_SSL_WRITE, TLS_PROBE_ENTRY, X86_INSN_STEPPED);
	point_is(&set.pts[1], TEXT_OFF + 40, TLS_FN_SSL_WRITE, TLS_PROBE_RETURN, X86_INSN_STEPPED);
	point_is(&set.pts[2], TEXT_OFF + 30, TLS_FN_SSL_READ, TLS_PROBE_CALL, X86_INSN_EMULATED);
	point_is(&set.pts[3], TEXT_OFF + 37, TLS_FN_SSL_READ, TLS_PROBE_AFTER_CALL, X86_INSN_EMULATED);
	point_is(&set.pts[4], TEXT_OFF + 60, TLS_FN_SSL_READ_EX, TLS_PROBE_ENTRY, X86_INSN_STEPPED);
	point_is(&set.pts[5], TEXT_OFF + 60, TLS_FN_SSL_READ_EX, TLS_PROBE_RETURN, X86_INSN_STEPPED);

	/* A function running past its segment's file bytes, one of size 0, one not STT_FUNC: none. */
	const struct sym bad[] = {
		{ "SSL_write", 0, 1 << 20, STT_FUNC, STB_GLOBAL, false },
		{ "SSL_read", 16, 0, STT_FUNC, STB_GLOBAL, false },
		{ "SSL_read_ex", 16, 9, STT_OBJECT, STB_GLOBAL, false },
	};
	build(&m, code, sizeof(code), bad, 3, false, NULL, 0);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), 0);
	assert_int_equal(set.lib, TLS_LIB_NONE);
	assert_int_equal(set.n, 0);

	/* Only endbr64: nothing after it to probe. */
	const struct sym tiny[] = { { "SSL_write", 0, 4, STT_FUNC, STB_GLOBAL, false } };
	build(&m, code, sizeof(code), tiny, 1, false, NULL, 0);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), 0);
	assert_int_equal(set.lib, TLS_LIB_OPENSSL);
	assert_int_equal(set.n, 0);
}

/* .go.buildinfo, Go 1.18+ layout: the version inline at 32. */
static size_t buildinfo_new(uint8_t *b, const char *version)
{
	size_t n = strlen(version);

	memset(b, 0, 64);
	memcpy(b, "\xff Go buildinf:", 14);
	b[14] = 8;
	b[15] = 2;
	b[32] = (uint8_t)n;
	memcpy(b + 33, version, n);
	b[33 + n] = 0;   /* empty module info */
	return 34 + n;
}

/*
 * Older layout: pointers at 16 to Go string headers.  The section is placed
 * 16-aligned after the strings and symbols; its own address is unknown here,
 * so the header and the text are put in .text (the one segment covers it all).
 */
static const uint8_t go_code[] = {
	/* 0: Write: cmp 0x10(%r14),%rsp; jbe +2; ret; nop; ret $8 (padding after) */
	0x49, 0x3b, 0x66, 0x10, 0x76, 0x02, 0xc3, 0x90, 0xc2, 0x08, 0x00, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
	/* 16: Read: an instruction invalid in 64-bit mode before its ret */
	0x49, 0x3b, 0x66, 0x10, 0x06, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
	/* 32: a string header {ptr, len} and the bytes, for the old .go.buildinfo */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	'g', 'o', '1', '.', '1', '6', '.', '1', '5', 0, 0, 0, 0, 0, 0, 0,
};

/*
 * A Go 1.18+ .gopclntab naming the two functions of go_code at text: header
 * (magic, pad, minLC, ptrsize, then nfunc, nfiles, textStart and the offsets
 * of the name table and the function table), names, functab {entryoff,
 * funcoff} pairs + the end, and _func {entryoff, nameoff} records.
 */
static size_t pclntab(uint8_t *b, uint64_t text)
{
	static const char names[] = "crypto/tls.(*Conn).Write\0crypto/tls.(*Conn).Read";
	uint64_t hdr[8] = { 2, 0, text, 72, 0, 0, 0, 72 + sizeof(names) + 7 - (72 + sizeof(names) + 7) % 8 };
	uint32_t tab[9] = { 0, 20, 16, 28, 32, /* _func */ 0, 0, 16, 25 };
	size_t pcln = hdr[7];

	memset(b, 0, 256);
	memcpy(b, "\xf0\xff\xff\xff\0\0\1\x08", 8);
	memcpy(b + 8, hdr, sizeof(hdr));
	memcpy(b + 72, names, sizeof(names));
	memcpy(b + pcln, tab, sizeof(tab));
	return pcln + sizeof(tab);
}

static const struct sym go_syms[] = {
	{ "crypto/tls.(*Conn).Write", 0, 16, STT_FUNC, STB_GLOBAL, false },
	{ "crypto/tls.(*Conn).Read", 16, 16, STT_FUNC, STB_GLOBAL, false },
	{ "main.main", 0, 16, STT_FUNC, STB_GLOBAL, false },
};

static void test_go(void **state)
{
	struct tls_probe_set set;
	struct img m;
	uint8_t bi[64], code[sizeof(go_code)];
	size_t n;

	n = buildinfo_new(bi, "go1.19.8");
	build(&m, go_code, sizeof(go_code), go_syms, 3, false, bi, n);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), 0);
	assert_int_equal(set.lib, TLS_LIB_GO);
	assert_int_equal(set.go_version, 119);
	/* Write: entry + two RETs; Read: dropped (an instruction not decodable) */
	assert_int_equal(set.n, 3);
	/* the entry on the stack check's jbe (emulated), not the cmp (single-stepped) */
	point_is(&set.pts[0], TEXT_OFF + 4, TLS_FN_GO_WRITE, TLS_PROBE_ENTRY, X86_INSN_EMULATED);
	point_is(&set.pts[1], TEXT_OFF + 6, TLS_FN_GO_WRITE, TLS_PROBE_RET_INSN, X86_INSN_STEPPED);
	point_is(&set.pts[2], TEXT_OFF + 8, TLS_FN_GO_WRITE, TLS_PROBE_RET_INSN, X86_INSN_STEPPED);

	/* Versions: devel builds, go1.17 (the first with the register ABI), older ones refused. */
	n = buildinfo_new(bi, "devel go1.22-a1b2c3 Mon Jan 1");
	build(&m, go_code, sizeof(go_code), go_syms, 3, false, bi, n);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), 0);
	assert_int_equal(set.go_version, 122);
	n = buildinfo_new(bi, "go1.16.15");
	build(&m, go_code, sizeof(go_code), go_syms, 3, false, bi, n);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), -ENOTSUP);
	assert_int_equal(set.lib, TLS_LIB_GO);
	assert_int_equal(set.go_version, 116);
	assert_int_equal(set.n, 0);

	/* The pre-1.18 layout: pointer at 16 -> {data, len} -> "go1.16.15" (in .text here). */
	memcpy(code, go_code, sizeof(code));
	uint64_t str = BASE + TEXT_OFF + 48, len = 9, hdr = BASE + TEXT_OFF + 32;
	memcpy(code + 32, &str, 8);
	memcpy(code + 40, &len, 8);
	memset(bi, 0, sizeof(bi));
	memcpy(bi, "\xff Go buildinf:", 14);
	bi[14] = 8;
	memcpy(bi + 16, &hdr, 8);
	build(&m, code, sizeof(code), go_syms, 3, false, bi, 32);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), -ENOTSUP);
	assert_int_equal(set.go_version, 116);
	code[48 + 4] = '7';   /* go1.76.15: newer than any, fine */
	build(&m, code, sizeof(code), go_syms, 3, false, bi, 32);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), 0);
	assert_int_equal(set.go_version, 176);
	/* A pointer outside every segment: version unknown, not refused. */
	hdr = 0x10;
	memcpy(bi + 16, &hdr, 8);
	build(&m, code, sizeof(code), go_syms, 3, false, bi, 32);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), 0);
	assert_int_equal(set.go_version, 0);
	assert_int_equal(set.lib, TLS_LIB_GO);

	/* Stripped: no symbol table, the functions from .gopclntab (Go 1.18+ layout). */
	uint8_t tab[256];
	size_t tab_len = pclntab(tab, BASE + TEXT_OFF);
	n = buildinfo_new(bi, "go1.19.8");
	const struct sec secs[] = { { ".gopclntab", tab, tab_len }, { ".go.buildinfo", bi, n } };
	build_x(&m, go_code, sizeof(go_code), NULL, 0, false, secs, 2);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), 0);
	assert_int_equal(set.lib, TLS_LIB_GO);
	assert_int_equal(set.go_version, 119);
	assert_int_equal(set.n, 3);
	/* the entry on the stack check's jbe (emulated), not the cmp (single-stepped) */
	point_is(&set.pts[0], TEXT_OFF + 4, TLS_FN_GO_WRITE, TLS_PROBE_ENTRY, X86_INSN_EMULATED);
	point_is(&set.pts[1], TEXT_OFF + 6, TLS_FN_GO_WRITE, TLS_PROBE_RET_INSN, X86_INSN_STEPPED);
	point_is(&set.pts[2], TEXT_OFF + 8, TLS_FN_GO_WRITE, TLS_PROBE_RET_INSN, X86_INSN_STEPPED);
	/* The same without a version: the table's magic says 1.18+. */
	build_x(&m, go_code, sizeof(go_code), NULL, 0, false, secs, 1);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), 0);
	assert_int_equal(set.go_version, 0);
	assert_int_equal(set.n, 3);
	/* ... and a Go 1.16/1.17 table (fffffffa) without a version is refused. */
	tab[0] = 0xfa;
	build_x(&m, go_code, sizeof(go_code), NULL, 0, false, secs, 1);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), -ENOTSUP);
	assert_int_equal(set.lib, TLS_LIB_GO);

	/* A Go binary with OpenSSL linked in (cgo) and no crypto/tls: the OpenSSL names count. */
	const struct sym cgo[] = {
		{ "crypto/tls.(*Conn).Write", 0, 1 << 20, STT_FUNC, STB_GLOBAL, false },   /* past the segment */
		{ "SSL_write", 0, 16, STT_FUNC, STB_GLOBAL, false },
	};
	n = buildinfo_new(bi, "go1.21.0");
	build(&m, go_code, sizeof(go_code), cgo, 2, false, bi, n);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), 0);
	assert_int_equal(set.lib, TLS_LIB_OPENSSL);
	assert_int_equal(set.n, 2);
	point_is(&set.pts[0], TEXT_OFF, TLS_FN_SSL_WRITE, TLS_PROBE_ENTRY, X86_INSN_STEPPED);

	/* A Go binary without crypto/tls: nothing, not an error. */
	n = buildinfo_new(bi, "go1.21.0");
	build(&m, go_code, sizeof(go_code), go_syms + 2, 1, false, bi, n);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), 0);
	assert_int_equal(set.lib, TLS_LIB_NONE);
	assert_int_equal(set.n, 0);
	assert_int_equal(set.go_version, 121);
}

static void test_limits(void **state)
{
	uint8_t code[128], bi[64];
	struct sym syms[] = { { "crypto/tls.(*Conn).Write", 0, 0, STT_FUNC, STB_GLOBAL, false } };
	struct tls_probe_set set;
	struct img m;
	size_t n = buildinfo_new(bi, "go1.20");

	/* 63 RETs + the entry fit; 64 do not. */
	memset(code, 0xc3, sizeof(code));
	syms[0].size = TLS_MAX_POINTS - 1;
	build(&m, code, sizeof(code), syms, 1, false, bi, n);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), 0);
	assert_int_equal(set.n, TLS_MAX_POINTS);
	syms[0].size = TLS_MAX_POINTS;
	build(&m, code, sizeof(code), syms, 1, false, bi, n);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), -E2BIG);
	assert_int_equal(set.n, 0);
	/* A ret the kernel refuses to probe (cs ret) drops its function. */
	memset(code, 0x90, sizeof(code));
	code[4] = 0x2e;
	code[5] = 0xc3;
	syms[0].size = 6;
	build(&m, code, sizeof(code), syms, 1, false, bi, n);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), 0);
	assert_int_equal(set.lib, TLS_LIB_GO);
	assert_int_equal(set.n, 0);
	code[4] = 0x90;
	build(&m, code, sizeof(code), syms, 1, false, bi, n);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), 0);
	assert_int_equal(set.n, 2);
	point_is(&set.pts[0], TEXT_OFF, TLS_FN_GO_WRITE, TLS_PROBE_ENTRY, X86_INSN_NOP);
	point_is(&set.pts[1], TEXT_OFF + 5, TLS_FN_GO_WRITE, TLS_PROBE_RET_INSN, X86_INSN_STEPPED);
	/* A function ending inside an instruction is dropped (the sweep must end on a boundary). */
	memset(code, 0x90, sizeof(code));
	code[0] = 0xe8;   /* call rel32: 5 bytes */
	syms[0].size = 3;
	build(&m, code, sizeof(code), syms, 1, false, bi, n);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), 0);
	assert_int_equal(set.lib, TLS_LIB_GO);
	assert_int_equal(set.n, 0);
}

static void test_malformed(void **state)
{
	struct tls_probe_set set;
	struct img m;
	uint8_t bi[64];
	size_t n = buildinfo_new(bi, "go1.19.8");

	assert_int_equal(tls_probe__find_mem("", 0, &set), -ENOEXEC);
	assert_int_equal(tls_probe__find_mem("#!/bin/sh\n", 10, &set), -ENOEXEC);
	build(&m, go_code, sizeof(go_code), go_syms, 3, false, bi, n);
	/* Other machines and classes */
	m.b[EI_CLASS] = ELFCLASS32;
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), -ENOEXEC);
	m.b[EI_CLASS] = ELFCLASS64;
	uint16_t mach = EM_AARCH64;
	memcpy(m.b + offsetof(Elf64_Ehdr, e_machine), &mach, 2);
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), -ENOEXEC);
	/* Every truncation and single-byte corruption of a valid image: no crash, sane answers. */
	build(&m, go_code, sizeof(go_code), go_syms, 3, false, bi, n);
	for (size_t len = 0; len <= m.n; len++) {
		int r = tls_probe__find_mem(m.b, len, &set);

		assert_true(r == 0 || r == -ENOEXEC);
		assert_true(set.n <= TLS_MAX_POINTS);
	}
	for (size_t i = 0; i < m.n; i++) {
		uint8_t keep = m.b[i];

		m.b[i] ^= 0xff;
		int r = tls_probe__find_mem(m.b, m.n, &set);
		assert_true(r == 0 || r == -ENOEXEC || r == -ENOTSUP || r == -E2BIG);
		for (size_t k = 0; k < set.n; k++)
			assert_true(set.pts[k].off < m.n);
		m.b[i] = keep;
	}
}

/* ---- the system's files ---------------------------------------------------- */

/* What readelf -Ws and the PT_LOAD math give for a function, computed with libelf: file offset past endbr64. */
static bool expected_offset(int fd, const char *name, uint64_t *ret_off, uint8_t first[16])
{
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	GElf_Sym found = { 0 };
	bool ok = false;
	size_t nph;

	assert_non_null(elf);
	while (!found.st_value && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *nm;

			if (gelf_getsym(d, (int)i, &s) && GELF_ST_TYPE(s.st_info) == STT_FUNC && s.st_shndx &&
			    s.st_size && (nm = elf_strptr(elf, sh.sh_link, s.st_name)) && !strcmp(nm, name)) {
				found = s;
				break;
			}
		}
	}
	assert_int_equal(elf_getphdrnum(elf, &nph), 0);
	for (size_t i = 0; i < nph && found.st_value; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
		    found.st_value >= ph.p_vaddr && found.st_value + found.st_size <= ph.p_vaddr + ph.p_filesz) {
			*ret_off = found.st_value - ph.p_vaddr + ph.p_offset;
			ok = true;
		}
	}
	elf_end(elf);
	if (ok) {
		assert_int_equal(pread(fd, first, 16, (off_t)*ret_off), 16);
		if (!memcmp(first, "\xf3\x0f\x1e\xfa", 4)) {
			*ret_off += 4;
			assert_int_equal(pread(fd, first, 16, (off_t)*ret_off), 16);
		}
	}
	return ok;
}

static void check_file(const char *path, const char *const *names, size_t nnames, size_t min_found)
{
	struct tls_probe_set set;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t found = 0;

	assert_true(fd >= 0);
	assert_int_equal(tls_probe__find_fd(fd, &set), 0);
	assert_int_equal(set.lib, TLS_LIB_OPENSSL);
	for (size_t k = 0; k < nnames; k++) {
		uint64_t off;
		uint8_t first[16];
		size_t at = set.n;

		if (!expected_offset(fd, names[k], &off, first))
			continue;
		found++;
		for (size_t i = 0; i < set.n; i++)
			if (set.pts[i].fn == TLS_FN_SSL_WRITE + k) {
				at = i;
				break;
			}
		if (at + 1 >= set.n)
			fail_msg("%s: %s: no points", path, names[k]);
		if (set.pts[at].kind == TLS_PROBE_CALL) {
			/* The wrapper shape: a call inside the function, then test %eax,%eax and a jcc. */
			uint8_t c[8];

			assert_true(set.pts[at].fn == TLS_FN_SSL_READ || set.pts[at].fn == TLS_FN_SSL_WRITE);
			assert_int_equal(set.pts[at + 1].kind, TLS_PROBE_AFTER_CALL);
			assert_true(set.pts[at].off > off && set.pts[at].off < off + 64);
			assert_int_equal(set.pts[at + 1].off, set.pts[at].off + 7);
			assert_int_equal(pread(fd, c, sizeof(c), (off_t)set.pts[at].off), (ssize_t)sizeof(c));
			assert_int_equal(c[0], 0xe8);
			assert_true(c[5] == 0x85 && c[6] == 0xc0 && c[7] >= 0x70 && c[7] <= 0x7f);
			assert_int_equal(set.pts[at].insn, X86_INSN_EMULATED);
			assert_int_equal(set.pts[at + 1].insn, X86_INSN_EMULATED);
			continue;
		}
		assert_int_equal(set.pts[at].off, off);
		assert_int_equal(set.pts[at].kind, TLS_PROBE_ENTRY);
		assert_int_equal(set.pts[at + 1].off, off);
		assert_int_equal(set.pts[at + 1].kind, TLS_PROBE_RETURN);
		assert_int_equal(set.pts[at].insn, x86_insn__class(first, sizeof(first)));
	}
	assert_int_equal(set.n, 2 * found);
	assert_true(found >= min_found);
	close(fd);
}

static void test_system_files(void **state)
{
	static const char *const names[4] = { "SSL_write", "SSL_read", "SSL_write_ex", "SSL_read_ex" };
	const char *libssl = "/usr/lib/x86_64-linux-gnu/libssl.so.3", *node = "/usr/bin/node";
	struct tls_probe_set a, b;
	struct stat st;
	int fd;

	elf_version(EV_CURRENT);
	fd = open(libssl, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		printf("SKIP: %s not installed\n", libssl);
		skip();
	}
	check_file(libssl, names, 4, 4);
	/* Debian 12's SSL_read begins with sub $0x18,%rsp (single-stepped); the fd and memory paths agree. */
	assert_int_equal(tls_probe__find_fd(fd, &a), 0);
	assert_int_equal(a.n, 8);
	assert_int_equal(fstat(fd, &st), 0);
	uint8_t *img = malloc((size_t)st.st_size);
	assert_non_null(img);
	assert_int_equal(pread(fd, img, (size_t)st.st_size, 0), st.st_size);
	assert_int_equal(tls_probe__find_mem(img, (size_t)st.st_size, &b), 0);
	assert_memory_equal(&a, &b, sizeof(a));
	for (size_t i = 0; i < a.n; i++)
		if (a.pts[i].fn == TLS_FN_SSL_READ && !memcmp(img + a.pts[i].off, "\x48\x83\xec\x18", 4))
			assert_int_equal(a.pts[i].insn, X86_INSN_STEPPED);
	free(img);
	close(fd);
	/*
	 * node: NodeSource's builds link OpenSSL in and export SSL_read and
	 * SSL_write (found in the executable); Debian's link libssl.so.3 (the
	 * executable has none: libssl's are probed).
	 */
	if (access(node, R_OK)) {
		printf("SKIP: %s not installed\n", node);
		skip();
	}
	fd = open(node, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	{
		uint64_t off;
		uint8_t first[16];

		if (expected_offset(fd, "SSL_read", &off, first)) {
			close(fd);
			check_file(node, names, 4, 2);
		} else {
			assert_int_equal(tls_probe__find_fd(fd, &a), 0);
			assert_int_equal(a.lib, TLS_LIB_NONE);
			close(fd);
		}
	}
	/* A file with no TLS function at all. */
	fd = open("/bin/sh", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		assert_int_equal(tls_probe__find_fd(fd, &a), 0);
		assert_int_equal(a.lib, TLS_LIB_NONE);
		assert_int_equal(a.n, 0);
		close(fd);
	}
	fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		assert_int_equal(tls_probe__find_fd(fd, &a), -ENOEXEC);
		close(fd);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_insn_len),
		cmocka_unit_test(test_insn_class),
		cmocka_unit_test(test_openssl),
		cmocka_unit_test(test_go),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_system_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
