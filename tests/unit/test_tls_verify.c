/*
 * collector/tls_verify: the collector's check of the TLS probe points an
 * analyzer sends.  Over the real files the analyzer probes (Debian's
 * libssl.so.3, node's embedded OpenSSL, Android's BoringSSL libssl.so.0, the
 * Go workload the build makes, with symbols and stripped): every point
 * analyzer/tls/tls_probe finds passes, and hostile variants are refused for
 * the right reason (inside an instruction, in a data segment, in another
 * function, a RET_INSN on a non-ret, a CALL on a non-call, past the end of
 * the file, unknown cookies, functions the file does not have).  Over
 * hand-built images: truncated headers, program headers past the end,
 * huge counts, unterminated names, every truncation and single-byte
 * corruption, refused without a crash.  tls_links counts refusals by reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/tls/tls_probe.h"
#include "bpf/net_abi.h"
#include "collector/tls_links.h"
#include "collector/tls_verify.h"
#include "common/tls_code.h"
#include "common/x86_insn.h"

#define LIBSSL3 "/usr/lib/x86_64-linux-gnu/libssl.so.3"
#define BSSL "/usr/lib/x86_64-linux-gnu/android/libssl.so.0"
#define NODE "/usr/bin/node"

/* ---- helpers ----------------------------------------------------------------- */

static uint64_t ck(unsigned fn, unsigned kind)
{
	return NET_TLS_COOKIE(fn, kind);
}

/* The verdict on one point. */
static unsigned why1(int fd, uint64_t off, uint64_t cookie)
{
	struct ctl_tls_point p = { off, cookie };
	struct tls_verify_verdict v;
	int r = tls_verify__points(fd, &p, 1, &v);

	assert_true(r == 0 || r == -EINVAL);
	assert_int_equal(r == 0, v.why == TLS_VERIFY_OK);
	assert_int_equal(v.index, 0);
	return v.why;
}

static void expect_why(int fd, uint64_t off, uint64_t cookie, unsigned want, const char *what)
{
	unsigned got = why1(fd, off, cookie);

	if (got != want)
		fail_msg("%s: offset 0x%llx cookie 0x%llx: %s, expected %s", what, (unsigned long long)off,
			 (unsigned long long)cookie, tls_verify__why_name(got), tls_verify__why_name(want));
}

/* The analyzer's points of fd, as the control message carries them. */
static size_t analyzer_points(int fd, struct tls_probe_set *set, struct ctl_tls_point *pts)
{
	assert_int_equal(tls_probe__find_fd(fd, set), 0);
	for (size_t i = 0; i < set->n; i++)
		pts[i] = (struct ctl_tls_point){ set->pts[i].off, ck(set->pts[i].fn, set->pts[i].kind) };
	return set->n;
}

/* Every point of the analyzer passes, together and one by one. */
static void all_pass(int fd, const char *path, size_t min_points)
{
	struct tls_probe_set set;
	struct ctl_tls_point pts[TLS_MAX_POINTS];
	struct tls_verify_verdict v;
	size_t n = analyzer_points(fd, &set, pts);

	if (n < min_points)
		fail_msg("%s: %zu points from the analyzer, expected at least %zu", path, n, min_points);
	if (tls_verify__points(fd, pts, (uint32_t)n, &v))
		fail_msg("%s: point %u (0x%llx cookie 0x%llx) refused: %s", path, v.index,
			 (unsigned long long)pts[v.index].off, (unsigned long long)pts[v.index].cookie,
			 tls_verify__why_name(v.why));
	for (size_t i = 0; i < n; i++)
		expect_why(fd, pts[i].off, pts[i].cookie, TLS_VERIFY_OK, path);
	printf("%s: %zu points pass\n", path, n);
}

/* A file offset of section name (NULL: none). */
static bool section_off(int fd, const char *name, uint64_t *ret_off, uint64_t *ret_size)
{
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	bool ok = false;

	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while (!ok && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *nm;

		if (gelf_getshdr(scn, &sh) && (nm = elf_strptr(elf, shstrndx, sh.sh_name)) && !strcmp(nm, name) &&
		    sh.sh_type != SHT_NOBITS && sh.sh_size) {
			*ret_off = sh.sh_offset;
			*ret_size = sh.sh_size;
			ok = true;
		}
	}
	elf_end(elf);
	return ok;
}

/* The file offset of function name (from .symtab or .dynsym) through the executable PT_LOAD. */
static bool function_off(int fd, const char *name, uint64_t *ret_off, uint64_t *ret_size)
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

			if (gelf_getsym(d, (int)i, &s) && GELF_ST_TYPE(s.st_info) == STT_FUNC && s.st_shndx && s.st_size &&
			    (nm = elf_strptr(elf, sh.sh_link, s.st_name)) && !strcmp(nm, name)) {
				found = s;
				break;
			}
		}
	}
	assert_int_equal(elf_getphdrnum(elf, &nph), 0);
	for (size_t i = 0; i < nph && found.st_value && !ok; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X) &&
		    found.st_value >= ph.p_vaddr && found.st_value + found.st_size <= ph.p_vaddr + ph.p_filesz) {
			*ret_off = found.st_value - ph.p_vaddr + ph.p_offset;
			*ret_size = found.st_size;
			ok = true;
		}
	}
	elf_end(elf);
	return ok;
}

/* From start (an instruction start), the offset one byte into the first instruction longer than one byte. */
static uint64_t inside_insn(int fd, uint64_t start)
{
	uint8_t b[1024];
	ssize_t n = pread(fd, b, sizeof(b), (off_t)start);
	size_t pos = 0;

	assert_true(n > 16);
	while (pos + 15 < (size_t)n) {
		int len = x86_insn__len(b + pos, (size_t)n - pos);

		assert_true(len > 0);
		if (len > 1)
			return start + pos + 1;
		pos += (size_t)len;
	}
	fail_msg("no instruction longer than a byte at 0x%llx", (unsigned long long)start);
	return 0;
}

/* The offset of the first ret of a linear decode from start, within size bytes. */
static bool first_ret(int fd, uint64_t start, uint64_t size, uint64_t *ret_off)
{
	uint8_t b[4096];
	ssize_t n = pread(fd, b, size < sizeof(b) ? (size_t)size : sizeof(b), (off_t)start);
	size_t pos = 0;

	while (n > 0 && pos < (size_t)n) {
		int len = x86_insn__len(b + pos, (size_t)n - pos);

		if (len <= 0)
			return false;
		if (x86_insn__op(b + pos, (size_t)n - pos) == X86_OP_RET) {
			*ret_off = start + pos;
			return true;
		}
		pos += (size_t)len;
	}
	return false;
}

static int open_or_skip(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		printf("SKIP: %s not installed\n", path);
		skip();
	}
	return fd;
}

/* ---- OpenSSL and BoringSSL ---------------------------------------------------- */

/* The hostile variants every OpenSSL-shaped file gets (the analyzer's points in set). */
static void openssl_variants(int fd, const char *path, const struct tls_probe_set *set)
{
	uint64_t off, size, read_off = 0, read_size = 0, err_off, err_size, ret;
	struct stat st;
	const struct tls_point *p;
	bool have_read = function_off(fd, "SSL_read", &read_off, &read_size);

	assert_true(have_read);
	assert_int_equal(fstat(fd, &st), 0);
	/* Inside an instruction: one byte into each point's instruction when it is longer, else into the next one. */
	for (size_t i = 0; i < set->n; i++) {
		p = &set->pts[i];
		expect_why(fd, inside_insn(fd, p->off), ck(p->fn, p->kind), TLS_VERIFY_BOUNDARY, path);
	}
	/* In a data segment (read-only data; writable data), and past the end of the file. */
	assert_true(section_off(fd, ".rodata", &off, &size));
	expect_why(fd, off + size / 2, ck(NET_TLS_SSL_READ, NET_TLS_P_ENTRY), TLS_VERIFY_SEGMENT, ".rodata");
	if (section_off(fd, ".data", &off, &size))
		expect_why(fd, off, ck(NET_TLS_SSL_READ, NET_TLS_P_ENTRY), TLS_VERIFY_SEGMENT, ".data");
	expect_why(fd, (uint64_t)st.st_size, ck(NET_TLS_SSL_READ, NET_TLS_P_ENTRY), TLS_VERIFY_SEGMENT, "end of file");
	expect_why(fd, (uint64_t)st.st_size + 4096, ck(NET_TLS_SSL_WRITE, NET_TLS_P_RETURN), TLS_VERIFY_SEGMENT,
		   "past the end");
	expect_why(fd, UINT64_MAX, ck(NET_TLS_SSL_WRITE, NET_TLS_P_ENTRY), TLS_VERIFY_SEGMENT, "UINT64_MAX");
	/* Another function's entry (SSL_get_error) with SSL_read's cookie, both sides. */
	assert_true(function_off(fd, "SSL_get_error", &err_off, &err_size));
	expect_why(fd, err_off, ck(NET_TLS_SSL_READ, NET_TLS_P_ENTRY), TLS_VERIFY_OUTSIDE, "SSL_get_error");
	expect_why(fd, err_off, ck(NET_TLS_SSL_READ, NET_TLS_P_RETURN), TLS_VERIFY_OUTSIDE, "SSL_get_error");
	if (function_off(fd, "SSL_write_ex", &off, &size))
		expect_why(fd, err_off, ck(NET_TLS_SSL_WRITE_EX, NET_TLS_P_ENTRY), TLS_VERIFY_OUTSIDE, "SSL_get_error");
	/* SSL_read's own points with the wrong kinds; its start with a CALL (not a call there). */
	for (size_t i = 0; i < set->n; i++) {
		p = &set->pts[i];
		if (p->fn != NET_TLS_SSL_READ)
			continue;
		if (p->kind == NET_TLS_P_CALL) {
			expect_why(fd, p->off, ck(p->fn, NET_TLS_P_AFTER_CALL), TLS_VERIFY_INSN, "AFTER_CALL on the call");
			expect_why(fd, p->off, ck(p->fn, NET_TLS_P_ENTRY), TLS_VERIFY_INSN, "ENTRY on the call");
		} else if (p->kind == NET_TLS_P_AFTER_CALL) {
			expect_why(fd, p->off, ck(p->fn, NET_TLS_P_CALL), TLS_VERIFY_INSN, "CALL on the jcc");
			expect_why(fd, p->off, ck(p->fn, NET_TLS_P_RETURN), TLS_VERIFY_INSN, "RETURN on the jcc");
		}
	}
	expect_why(fd, read_off, ck(NET_TLS_SSL_READ, NET_TLS_P_CALL), TLS_VERIFY_INSN, "CALL on SSL_read's start");
	expect_why(fd, read_off, ck(NET_TLS_SSL_READ, NET_TLS_P_AFTER_CALL), TLS_VERIFY_INSN, "AFTER_CALL on its start");
	/* A ret of SSL_read with an ENTRY or RETURN cookie: an instruction start, not the entry. */
	if (first_ret(fd, read_off, read_size, &ret)) {
		expect_why(fd, ret, ck(NET_TLS_SSL_READ, NET_TLS_P_ENTRY), TLS_VERIFY_INSN, "ENTRY on a ret");
		expect_why(fd, ret, ck(NET_TLS_SSL_READ, NET_TLS_P_RETURN), TLS_VERIFY_INSN, "RETURN on a ret");
	}
	/* Cookies the TLS program does not serve: RET_INSN and a Go function here, unknown ids, high bits. */
	expect_why(fd, read_off, ck(NET_TLS_SSL_READ, NET_TLS_P_RET_INSN), TLS_VERIFY_COOKIE, "RET_INSN for OpenSSL");
	expect_why(fd, read_off, ck(NET_TLS_GO_READ, NET_TLS_P_RETURN), TLS_VERIFY_COOKIE, "RETURN for Go");
	expect_why(fd, read_off, ck(0, NET_TLS_P_ENTRY), TLS_VERIFY_COOKIE, "function 0");
	expect_why(fd, read_off, ck(NET_TLS_FN_MAX + 1, NET_TLS_P_ENTRY), TLS_VERIFY_COOKIE, "function 7");
	expect_why(fd, read_off, ck(NET_TLS_SSL_READ, 5), TLS_VERIFY_COOKIE, "kind 5");
	expect_why(fd, read_off, ck(NET_TLS_SSL_READ, NET_TLS_P_ENTRY) | 1ull << 16, TLS_VERIFY_COOKIE, "high bits");
	/* Go's functions are not in an OpenSSL library. */
	expect_why(fd, read_off, ck(NET_TLS_GO_READ, NET_TLS_P_ENTRY), TLS_VERIFY_FUNCTION, "Go in OpenSSL");
	/* One bad point refuses the request, and says which. */
	{
		struct ctl_tls_point pts[TLS_MAX_POINTS + 1];
		struct tls_verify_verdict v;
		size_t n = set->n;

		for (size_t i = 0; i < n; i++)
			pts[i] = (struct ctl_tls_point){ set->pts[i].off, ck(set->pts[i].fn, set->pts[i].kind) };
		pts[n] = pts[n - 1];
		pts[n].off = inside_insn(fd, pts[n].off);
		assert_int_equal(tls_verify__points(fd, pts, (uint32_t)n + 1, &v), -EINVAL);
		assert_int_equal(v.index, n);
		assert_int_equal(v.why, TLS_VERIFY_BOUNDARY);
	}
}

static void test_libssl3(void **state)
{
	struct tls_probe_set set;
	struct ctl_tls_point pts[TLS_MAX_POINTS];
	int fd = open_or_skip(LIBSSL3);

	all_pass(fd, LIBSSL3, 8);
	analyzer_points(fd, &set, pts);
	openssl_variants(fd, LIBSSL3, &set);
	/* Debian 12's SSL_read is OpenSSL 3's wrapper: CALL and AFTER_CALL, no ENTRY. */
	for (size_t i = 0; i < set.n; i++)
		if (set.pts[i].fn == NET_TLS_SSL_READ)
			assert_true(set.pts[i].kind == NET_TLS_P_CALL || set.pts[i].kind == NET_TLS_P_AFTER_CALL);
	close(fd);
}

static void test_boringssl(void **state)
{
	struct tls_probe_set set;
	struct ctl_tls_point pts[TLS_MAX_POINTS];
	int fd = open_or_skip(BSSL);

	all_pass(fd, BSSL, 4);
	analyzer_points(fd, &set, pts);
	openssl_variants(fd, BSSL, &set);
	/* BoringSSL has no SSL_read_ex: its cookie names a function this file does not have. */
	expect_why(fd, set.pts[0].off, ck(NET_TLS_SSL_READ_EX, NET_TLS_P_ENTRY), TLS_VERIFY_FUNCTION, "SSL_read_ex");
	close(fd);
}

static void test_node(void **state)
{
	struct tls_probe_set set;
	struct ctl_tls_point pts[TLS_MAX_POINTS];
	uint64_t off, size;
	int fd = open_or_skip(NODE);

	/* NodeSource's node has OpenSSL inside; Debian's links the system's libssl.so.3, whose
	 * points test_libssl3 checks: then that is what node's TLS runs on, or it is a defect. */
	if (!function_off(fd, "SSL_read", &off, &size)) {
		char line[512];
		bool system_ssl = false;
		FILE *p = popen("ldd " NODE, "r");

		assert_non_null(p);
		while (fgets(line, sizeof(line), p))
			system_ssl |= strstr(line, "libssl.so.3 => " LIBSSL3) != NULL ||
				      strstr(line, "libssl.so.3 => /lib/x86_64-linux-gnu/libssl.so.3") != NULL;
		pclose(p);
		close(fd);
		if (!system_ssl)
			fail_msg("%s has no OpenSSL of its own and does not load %s", NODE, LIBSSL3);
		printf("%s loads the system's libssl.so.3 (checked by test_libssl3)\n", NODE);
		return;
	}
	all_pass(fd, NODE, 8);
	analyzer_points(fd, &set, pts);
	openssl_variants(fd, NODE, &set);
	close(fd);
}

/* ---- Go --------------------------------------------------------------------------- */

/* build/<x>/progs/<name> beside this test (build/<x>/tests/test_tls_verify). */
static int open_go(const char *name)
{
	char exe[PATH_MAX], path[PATH_MAX + 64];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int fd;

	assert_true(n > 0);
	exe[n] = 0;
	snprintf(path, sizeof(path), "%s/../progs/%s", dirname(exe), name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		printf("SKIP: %s not built (the Makefile builds it where go is installed)\n", path);
		skip();
	}
	return fd;
}

static void go_variants(int fd, const char *path)
{
	struct tls_probe_set set;
	struct ctl_tls_point pts[TLS_MAX_POINTS];
	uint64_t off, size, entry[2] = { 0, 0 };
	size_t n = analyzer_points(fd, &set, pts), rets = 0;
	struct stat st;

	assert_int_equal(set.lib, TLS_LIB_GO);
	assert_int_equal(fstat(fd, &st), 0);
	for (size_t i = 0; i < n; i++) {
		const struct tls_point *p = &set.pts[i];
		unsigned other = p->fn == NET_TLS_GO_WRITE ? NET_TLS_GO_READ : NET_TLS_GO_WRITE;

		if (p->kind == NET_TLS_P_ENTRY) {
			entry[p->fn - NET_TLS_GO_WRITE] = p->off;
			/* RET_INSN on the entry (a jbe, not a ret) */
			expect_why(fd, p->off, ck(p->fn, NET_TLS_P_RET_INSN), TLS_VERIFY_INSN, "RET_INSN on the entry");
			/* one byte into the jbe */
			expect_why(fd, inside_insn(fd, p->off), ck(p->fn, NET_TLS_P_ENTRY), TLS_VERIFY_BOUNDARY, path);
		} else {
			assert_int_equal(p->kind, NET_TLS_P_RET_INSN);
			rets++;
			/* ENTRY on a ret; the other function's cookie on this one's ret */
			expect_why(fd, p->off, ck(p->fn, NET_TLS_P_ENTRY), TLS_VERIFY_INSN, "ENTRY on a ret");
			expect_why(fd, p->off, ck(other, NET_TLS_P_RET_INSN), TLS_VERIFY_OUTSIDE, "the other function");
			/* uretprobes and OpenSSL's kinds are never Go's */
			expect_why(fd, p->off, ck(p->fn, NET_TLS_P_RETURN), TLS_VERIFY_COOKIE, "RETURN for Go");
			expect_why(fd, p->off, ck(p->fn, NET_TLS_P_CALL), TLS_VERIFY_COOKIE, "CALL for Go");
		}
	}
	assert_true(entry[0] && entry[1] && rets >= 2);
	/* The instruction before the jbe (the stack check's cmp): an instruction start, not the entry. */
	expect_why(fd, entry[0] - 4, ck(NET_TLS_GO_WRITE, NET_TLS_P_ENTRY), TLS_VERIFY_INSN, "ENTRY on the cmp");
	/* Data, past the end, and OpenSSL's names (not in a Go binary). */
	assert_true(section_off(fd, ".rodata", &off, &size));
	expect_why(fd, off + 64, ck(NET_TLS_GO_READ, NET_TLS_P_ENTRY), TLS_VERIFY_SEGMENT, ".rodata");
	assert_true(section_off(fd, ".gopclntab", &off, &size));
	expect_why(fd, off + 64, ck(NET_TLS_GO_READ, NET_TLS_P_RET_INSN), TLS_VERIFY_SEGMENT, ".gopclntab");
	expect_why(fd, (uint64_t)st.st_size, ck(NET_TLS_GO_WRITE, NET_TLS_P_ENTRY), TLS_VERIFY_SEGMENT, "end of file");
	expect_why(fd, entry[0], ck(NET_TLS_SSL_WRITE, NET_TLS_P_ENTRY), TLS_VERIFY_FUNCTION, "SSL_write in Go");
}

static void test_go(void **state)
{
	int fd = open_go("go_tls");

	all_pass(fd, "go_tls", 4);
	go_variants(fd, "go_tls");
	close(fd);
}

static void test_go_stripped(void **state)
{
	uint64_t off, size;
	int fd = open_go("go_tls_stripped");

	/* No .symtab: the functions come from .gopclntab alone. */
	assert_false(section_off(fd, ".symtab", &off, &size));
	all_pass(fd, "go_tls_stripped", 4);
	go_variants(fd, "go_tls_stripped");
	close(fd);
}

/* ---- hand-built images -------------------------------------------------------------- */

#define BASE 0x400000u
#define TEXT_OFF 0x200u
#define DATA_OFF 0x400u

struct sym { const char *name; uint32_t at; uint64_t size; };
struct img { uint8_t b[8192]; size_t n; size_t phoff, shoff, strtab_at, strtab_len, symtab_at, extra_at; };

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
 * An x86-64 ET_DYN: an R+X PT_LOAD over [0, DATA_OFF) with code at TEXT_OFF
 * (.text), an RW one from DATA_OFF (.data: 64 bytes of code-like bytes, so
 * only the flags tell them apart), .symtab + .strtab with global functions
 * syms (at: from TEXT_OFF), the extra section (if name), .shstrtab.
 */
static void build(struct img *m, const uint8_t *code, size_t code_len, const struct sym *syms, size_t nsyms,
		  const char *extra_name, const void *extra, size_t extra_len)
{
	Elf64_Ehdr eh = { 0 };
	Elf64_Phdr ph[2];
	Elf64_Shdr sh[8];
	Elf64_Sym st[8];
	char shstr[128] = "", strtab[256] = "";
	size_t shstr_len = 1, strtab_len = 1, nsh = 1, at;

	memset(m, 0, sizeof(*m));
	memset(ph, 0, sizeof(ph));
	memset(sh, 0, sizeof(sh));
	memset(st, 0, sizeof(st));
	assert_true(TEXT_OFF + code_len <= DATA_OFF && nsyms < 8);
	m->n = TEXT_OFF;
	put(m, code, code_len);
	m->n = DATA_OFF;
	memcpy(m->b + DATA_OFF, code, code_len < 64 ? code_len : 64);
	m->n += 64;
	sh[nsh] = (Elf64_Shdr){ .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
				.sh_addr = BASE + TEXT_OFF, .sh_offset = TEXT_OFF, .sh_size = code_len };
	sh[nsh++].sh_name = (uint32_t)shstr_len;
	shstr_len += (size_t)sprintf(shstr + shstr_len, ".text") + 1;
	sh[nsh] = (Elf64_Shdr){ .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC | SHF_WRITE,
				.sh_addr = BASE + DATA_OFF, .sh_offset = DATA_OFF, .sh_size = 64 };
	sh[nsh++].sh_name = (uint32_t)shstr_len;
	shstr_len += (size_t)sprintf(shstr + shstr_len, ".data") + 1;
	for (size_t i = 0; i < nsyms; i++) {
		st[i + 1].st_name = (uint32_t)strtab_len;
		strtab_len += (size_t)sprintf(strtab + strtab_len, "%s", syms[i].name) + 1;
		st[i + 1].st_info = (uint8_t)ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		st[i + 1].st_shndx = 1;
		st[i + 1].st_value = BASE + TEXT_OFF + syms[i].at;
		st[i + 1].st_size = syms[i].size;
	}
	align(m, 8);
	m->symtab_at = put(m, st, (nsyms + 1) * sizeof(Elf64_Sym));
	m->strtab_at = put(m, strtab, strtab_len);
	m->strtab_len = strtab_len;
	sh[nsh] = (Elf64_Shdr){ .sh_type = SHT_SYMTAB, .sh_offset = m->symtab_at,
				.sh_size = (nsyms + 1) * sizeof(Elf64_Sym), .sh_link = (uint32_t)nsh + 1, .sh_info = 1,
				.sh_entsize = sizeof(Elf64_Sym) };
	sh[nsh++].sh_name = (uint32_t)shstr_len;
	shstr_len += (size_t)sprintf(shstr + shstr_len, ".symtab") + 1;
	sh[nsh] = (Elf64_Shdr){ .sh_type = SHT_STRTAB, .sh_offset = m->strtab_at, .sh_size = strtab_len };
	sh[nsh++].sh_name = (uint32_t)shstr_len;
	shstr_len += (size_t)sprintf(shstr + shstr_len, ".strtab") + 1;
	if (extra_name) {
		align(m, 16);
		at = m->extra_at = put(m, extra, extra_len);
		sh[nsh] = (Elf64_Shdr){ .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC, .sh_addr = BASE + at,
					.sh_offset = at, .sh_size = extra_len };
		sh[nsh++].sh_name = (uint32_t)shstr_len;
		shstr_len += (size_t)sprintf(shstr + shstr_len, "%s", extra_name) + 1;
	}
	sh[nsh] = (Elf64_Shdr){ .sh_name = (uint32_t)shstr_len, .sh_type = SHT_STRTAB };
	shstr_len += (size_t)sprintf(shstr + shstr_len, ".shstrtab") + 1;
	sh[nsh].sh_offset = put(m, shstr, shstr_len);
	sh[nsh++].sh_size = shstr_len;
	align(m, 8);
	m->shoff = put(m, sh, nsh * sizeof(Elf64_Shdr));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = m->phoff = sizeof(eh);
	eh.e_shoff = m->shoff;
	eh.e_ehsize = sizeof(eh);
	eh.e_phentsize = sizeof(Elf64_Phdr);
	eh.e_phnum = 2;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = (uint16_t)nsh;
	eh.e_shstrndx = (uint16_t)(nsh - 1);
	ph[0] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0, .p_vaddr = BASE,
			      .p_filesz = DATA_OFF, .p_memsz = DATA_OFF, .p_align = 0x1000 };
	ph[1] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_W, .p_offset = DATA_OFF,
			      .p_vaddr = BASE + DATA_OFF, .p_filesz = m->n - DATA_OFF, .p_memsz = m->n - DATA_OFF,
			      .p_align = 0x1000 };
	memcpy(m->b, &eh, sizeof(eh));
	memcpy(m->b + sizeof(eh), ph, sizeof(ph));
}

/* bytes[0..n) as a file: a memfd (the collector gets a regular file's fd). */
static int memfd_of(const void *bytes, size_t n)
{
	int fd = memfd_create("tls_verify", MFD_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, bytes, n), (ssize_t)n);
	return fd;
}

/* Verdict on pts[0..n) over the image's first len bytes. */
static unsigned verdict(const struct img *m, size_t len, const struct ctl_tls_point *pts, size_t n)
{
	struct tls_verify_verdict v;
	int fd = memfd_of(m->b, len);
	int r = tls_verify__points(fd, pts, (uint32_t)n, &v);

	close(fd);
	assert_true(r == 0 || r == -EINVAL);
	assert_int_equal(r == 0, v.why == TLS_VERIFY_OK);
	assert_true(v.why < TLS_VERIFY_WHY_MAX && v.index < n);
	return v.why;
}

/*
 * SSL_read: OpenSSL 3's wrapper, byte for byte as Debian 12 builds it (CALL
 * at 30, AFTER_CALL at 37); SSL_write: endbr64, push, ..., ret (entry at 44);
 * SSL_get_error: another function.
 */
static const uint8_t ssl_code[] = {
	/* 0: SSL_read */
	0x48, 0x83, 0xec, 0x18, 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00, 0x48, 0x89, 0x44, 0x24,
	0x08, 0x31, 0xc0, 0x85, 0xd2, 0x78, 0x2f, 0x48, 0x89, 0xe1, 0x48, 0x63, 0xd2, 0xe8, 0x3d, 0xfe, 0xff,
	0xff, 0x85, 0xc0, 0x7e, 0x03, 0xc3,
	/* 40: SSL_write */
	0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
	/* 56: SSL_get_error */
	0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3,
};
static const struct sym ssl_syms[] = {
	{ "SSL_read", 0, 40 }, { "SSL_write", 40, 10 }, { "SSL_get_error", 56, 6 },
};
static const struct ctl_tls_point ssl_pts[] = {
	{ TEXT_OFF + 44, NET_TLS_COOKIE(NET_TLS_SSL_WRITE, NET_TLS_P_ENTRY) },
	{ TEXT_OFF + 44, NET_TLS_COOKIE(NET_TLS_SSL_WRITE, NET_TLS_P_RETURN) },
	{ TEXT_OFF + 30, NET_TLS_COOKIE(NET_TLS_SSL_READ, NET_TLS_P_CALL) },
	{ TEXT_OFF + 37, NET_TLS_COOKIE(NET_TLS_SSL_READ, NET_TLS_P_AFTER_CALL) },
};

static void test_synthetic(void **state)
{
	struct tls_probe_set set;
	struct img m;

	build(&m, ssl_code, sizeof(ssl_code), ssl_syms, 3, NULL, NULL, 0);
	/* The analyzer finds exactly these points, and they pass. */
	assert_int_equal(tls_probe__find_mem(m.b, m.n, &set), 0);
	assert_int_equal(set.n, 4);
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(set.pts[i].off, ssl_pts[i].off);
		assert_int_equal(ck(set.pts[i].fn, set.pts[i].kind), ssl_pts[i].cookie);
	}
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_OK);
	/* Each reason once. */
	struct { uint64_t off, cookie; unsigned why; } bad[] = {
		{ TEXT_OFF + 44, ck(NET_TLS_SSL_WRITE, NET_TLS_P_RET_INSN), TLS_VERIFY_COOKIE },
		{ DATA_OFF, ck(NET_TLS_SSL_WRITE, NET_TLS_P_ENTRY), TLS_VERIFY_SEGMENT },        /* same bytes, RW */
		{ TEXT_OFF + 44, ck(NET_TLS_SSL_READ_EX, NET_TLS_P_ENTRY), TLS_VERIFY_FUNCTION },
		{ TEXT_OFF + 56, ck(NET_TLS_SSL_READ, NET_TLS_P_ENTRY), TLS_VERIFY_OUTSIDE },
		{ TEXT_OFF + 31, ck(NET_TLS_SSL_READ, NET_TLS_P_CALL), TLS_VERIFY_BOUNDARY },
		{ TEXT_OFF + 46, ck(NET_TLS_SSL_WRITE, NET_TLS_P_ENTRY), TLS_VERIFY_BOUNDARY },   /* in the mov */
		{ TEXT_OFF + 45, ck(NET_TLS_SSL_WRITE, NET_TLS_P_ENTRY), TLS_VERIFY_INSN },       /* the mov */
		{ TEXT_OFF + 40, ck(NET_TLS_SSL_WRITE, NET_TLS_P_ENTRY), TLS_VERIFY_INSN },       /* on the endbr64 */
		{ TEXT_OFF + 0, ck(NET_TLS_SSL_READ, NET_TLS_P_ENTRY), TLS_VERIFY_INSN },        /* a wrapper: CALL */
		{ TEXT_OFF + 35, ck(NET_TLS_SSL_READ, NET_TLS_P_AFTER_CALL), TLS_VERIFY_INSN },  /* the test */
		{ TEXT_OFF + 39, ck(NET_TLS_SSL_READ, NET_TLS_P_CALL), TLS_VERIFY_INSN },        /* a ret */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ctl_tls_point p = { bad[i].off, bad[i].cookie };
		unsigned got = verdict(&m, m.n, &p, 1);

		if (got != bad[i].why)
			fail_msg("case %zu: %s, expected %s", i, tls_verify__why_name(got), tls_verify__why_name(bad[i].why));
	}
}

static void put16(struct img *m, size_t at, uint16_t v) { memcpy(m->b + at, &v, 2); }
static void put32(struct img *m, size_t at, uint32_t v) { memcpy(m->b + at, &v, 4); }
static void put64(struct img *m, size_t at, uint64_t v) { memcpy(m->b + at, &v, 8); }

static void test_corrupt_headers(void **state)
{
	struct img m, good;
	size_t ph1 = sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr), sh_symtab, sh_strtab;

	build(&good, ssl_code, sizeof(ssl_code), ssl_syms, 3, NULL, NULL, 0);
	sh_symtab = good.shoff + 3 * sizeof(Elf64_Shdr);
	sh_strtab = good.shoff + 4 * sizeof(Elf64_Shdr);
	/* Not an ELF file, empty, another machine or class, not a regular file. */
	assert_int_equal(verdict(&good, 0, ssl_pts, 4), TLS_VERIFY_FILE);
	assert_int_equal(verdict(&good, 63, ssl_pts, 4), TLS_VERIFY_FILE);
	m = good;
	put16(&m, offsetof(Elf64_Ehdr, e_machine), EM_AARCH64);
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_FILE);
	m = good;
	m.b[EI_CLASS] = ELFCLASS32;
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_FILE);
	m = good;
	m.b[EI_DATA] = ELFDATA2MSB;
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_FILE);
	{
		int p[2];
		struct tls_verify_verdict v;

		assert_int_equal(pipe(p), 0);
		assert_int_equal(tls_verify__points(p[0], ssl_pts, 4, &v), -EINVAL);
		assert_int_equal(v.why, TLS_VERIFY_FILE);
		close(p[0]);
		close(p[1]);
	}
	/* Every truncation cuts the section headers (at the end): not parseable, never a crash. */
	for (size_t len = 0; len < good.n; len++)
		assert_int_equal(verdict(&good, len, ssl_pts, 4), TLS_VERIFY_FILE);
	/* Program headers past the end of the file, huge counts, a wrong entry size. */
	m = good;
	put64(&m, offsetof(Elf64_Ehdr, e_phoff), m.n - 8);
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_FILE);
	m = good;
	put64(&m, offsetof(Elf64_Ehdr, e_phoff), UINT64_MAX - 8);
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_FILE);
	m = good;
	put16(&m, offsetof(Elf64_Ehdr, e_phnum), 0xffff);   /* PN_XNUM, and past the end */
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_FILE);
	m = good;
	put16(&m, offsetof(Elf64_Ehdr, e_phnum), 0);
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_FILE);
	m = good;
	put16(&m, offsetof(Elf64_Ehdr, e_phentsize), 32);
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_FILE);
	m = good;
	put16(&m, offsetof(Elf64_Ehdr, e_shnum), 0xffff);
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_FILE);
	m = good;
	put64(&m, offsetof(Elf64_Ehdr, e_shoff), UINT64_MAX - 63);
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_FILE);
	m = good;
	put16(&m, offsetof(Elf64_Ehdr, e_shstrndx), SHN_XINDEX);
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_FILE);
	/* The executable PT_LOAD's bytes past the end of the file: skipped, so no executable segment. */
	m = good;
	put64(&m, sizeof(Elf64_Ehdr) + offsetof(Elf64_Phdr, p_filesz), m.n + 1);
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_SEGMENT);
	m = good;
	put64(&m, sizeof(Elf64_Ehdr) + offsetof(Elf64_Phdr, p_offset), UINT64_MAX);
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_SEGMENT);
	/* ... or a vaddr that wraps; the RW one made executable instead: the code is then data's. */
	m = good;
	put64(&m, sizeof(Elf64_Ehdr) + offsetof(Elf64_Phdr, p_vaddr), UINT64_MAX - 16);
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_SEGMENT);
	m = good;
	put32(&m, sizeof(Elf64_Ehdr) + offsetof(Elf64_Phdr, p_flags), PF_R);
	put32(&m, ph1 + offsetof(Elf64_Phdr, p_flags), PF_R | PF_X);
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_SEGMENT);
	/* Symbol tables that do not check: wrong entry size, link out of range, strings out of the file. */
	m = good;
	put64(&m, sh_symtab + offsetof(Elf64_Shdr, sh_entsize), 16);
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_FUNCTION);
	m = good;
	put32(&m, sh_symtab + offsetof(Elf64_Shdr, sh_link), 0xffff);
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_FUNCTION);
	m = good;
	put64(&m, sh_strtab + offsetof(Elf64_Shdr, sh_offset), m.n - 4);
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_FUNCTION);
	m = good;
	put64(&m, sh_symtab + offsetof(Elf64_Shdr, sh_size), UINT64_MAX - 7);
	assert_int_equal(verdict(&m, m.n, ssl_pts, 4), TLS_VERIFY_FUNCTION);
	/* A function larger than the bound, or running past its segment: not found. */
	m = good;
	put64(&m, good.symtab_at + 2 * sizeof(Elf64_Sym) + offsetof(Elf64_Sym, st_size), TLS_CODE_MAX_FN + 1);
	assert_int_equal(verdict(&m, m.n, ssl_pts, 1), TLS_VERIFY_FUNCTION);
	m = good;
	put64(&m, good.symtab_at + 2 * sizeof(Elf64_Sym) + offsetof(Elf64_Sym, st_size), DATA_OFF);
	assert_int_equal(verdict(&m, m.n, ssl_pts, 1), TLS_VERIFY_FUNCTION);
}

static void test_corrupt_names(void **state)
{
	static const struct sym last[] = { { "SSL_get_error", 56, 6 }, { "SSL_write", 40, 10 } };
	struct img m;
	size_t sym_write = 2 * sizeof(Elf64_Sym);
	struct ctl_tls_point p[2];

	/* SSL_write's name the last string: unterminated when the table ends before its NUL. */
	build(&m, ssl_code, sizeof(ssl_code), last, 2, NULL, NULL, 0);
	memcpy(p, ssl_pts, sizeof(p));
	assert_int_equal(verdict(&m, m.n, p, 2), TLS_VERIFY_OK);
	put64(&m, m.shoff + 4 * sizeof(Elf64_Shdr) + offsetof(Elf64_Shdr, sh_size), m.strtab_len - 1);
	assert_int_equal(verdict(&m, m.n, p, 2), TLS_VERIFY_FUNCTION);
	/* A name offset past the table, or one that points into the middle of another name. */
	build(&m, ssl_code, sizeof(ssl_code), last, 2, NULL, NULL, 0);
	put32(&m, m.symtab_at + sym_write + offsetof(Elf64_Sym, st_name), 0xffffffffu);
	assert_int_equal(verdict(&m, m.n, p, 2), TLS_VERIFY_FUNCTION);
	put32(&m, m.symtab_at + sym_write + offsetof(Elf64_Sym, st_name), 2);   /* "SL_get_error" */
	assert_int_equal(verdict(&m, m.n, p, 2), TLS_VERIFY_FUNCTION);
	/* A name that is another's tail ("xSSL_write" shares "SSL_write"): found by offset all the same. */
	{
		static const struct sym tail[] = { { "xSSL_write", 56, 6 }, { "SSL_write", 40, 10 } };

		build(&m, ssl_code, sizeof(ssl_code), tail, 2, NULL, NULL, 0);
		put32(&m, m.symtab_at + sym_write + offsetof(Elf64_Sym, st_name), 2);
		assert_int_equal(verdict(&m, m.n, p, 2), TLS_VERIFY_OK);
	}
	/* More places holding the name than the verifier keeps (256): not parseable, rather than a miss. */
	{
		static char many[4096];
		size_t k = 1;

		for (int i = 0; i < 257; i++)
			k += (size_t)sprintf(many + k, "SSL_write") + 1;
		build(&m, ssl_code, sizeof(ssl_code), last, 2, ".comment", many, k);
		put64(&m, m.shoff + 4 * sizeof(Elf64_Shdr) + offsetof(Elf64_Shdr, sh_offset), m.extra_at);
		put64(&m, m.shoff + 4 * sizeof(Elf64_Shdr) + offsetof(Elf64_Shdr, sh_size), k);
		assert_int_equal(verdict(&m, m.n, p, 2), TLS_VERIFY_FILE);
		/* 256 are kept: SSL_write's symbol names the 256th (at 1 + 255 * 10), SSL_get_error's "" */
		put64(&m, m.shoff + 4 * sizeof(Elf64_Shdr) + offsetof(Elf64_Shdr, sh_size), k - 10);
		put32(&m, m.symtab_at + sym_write + offsetof(Elf64_Sym, st_name), 1 + 255 * 10);
		put32(&m, m.symtab_at + sizeof(Elf64_Sym) + offsetof(Elf64_Sym, st_name), 0);
		assert_int_equal(verdict(&m, m.n, p, 2), TLS_VERIFY_OK);
	}
}

/* ---- Go, hand-built: a .gopclntab without .symtab ------------------------------------- */

static const uint8_t go_code[] = {
	/* 0: Write: cmp 0x10(%r14),%rsp; jbe +2; ret; nop; ret $8 (padding after) */
	0x49, 0x3b, 0x66, 0x10, 0x76, 0x02, 0xc3, 0x90, 0xc2, 0x08, 0x00, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
	/* 16: Read: the same */
	0x49, 0x3b, 0x66, 0x10, 0x76, 0x02, 0xc3, 0x90, 0xc2, 0x08, 0x00, 0xcc, 0xcc, 0xcc, 0xcc, 0xcc,
};

/* A Go 1.18+ .gopclntab naming go_code's two functions at text (as tests/unit/test_tls_probe.c builds it). */
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

static void test_go_pclntab(void **state)
{
	static const struct ctl_tls_point go_pts[] = {
		{ TEXT_OFF + 4, NET_TLS_COOKIE(NET_TLS_GO_WRITE, NET_TLS_P_ENTRY) },
		{ TEXT_OFF + 6, NET_TLS_COOKIE(NET_TLS_GO_WRITE, NET_TLS_P_RET_INSN) },
		{ TEXT_OFF + 8, NET_TLS_COOKIE(NET_TLS_GO_WRITE, NET_TLS_P_RET_INSN) },
		{ TEXT_OFF + 20, NET_TLS_COOKIE(NET_TLS_GO_READ, NET_TLS_P_ENTRY) },
		{ TEXT_OFF + 22, NET_TLS_COOKIE(NET_TLS_GO_READ, NET_TLS_P_RET_INSN) },
		{ TEXT_OFF + 24, NET_TLS_COOKIE(NET_TLS_GO_READ, NET_TLS_P_RET_INSN) },
	};
	uint8_t tab[256];
	size_t tab_len = pclntab(tab, BASE + TEXT_OFF);
	struct tls_probe_set set;
	struct img m, good;

	/* No function symbols: the table as .gopclntab names them. */
	build(&good, go_code, sizeof(go_code), NULL, 0, ".gopclntab", tab, tab_len);
	assert_int_equal(tls_probe__find_mem(good.b, good.n, &set), 0);
	assert_int_equal(set.n, 6);
	for (size_t i = 0; i < 6; i++) {
		assert_int_equal(set.pts[i].off, go_pts[i].off);
		assert_int_equal(ck(set.pts[i].fn, set.pts[i].kind), go_pts[i].cookie);
	}
	assert_int_equal(verdict(&good, good.n, go_pts, 6), TLS_VERIFY_OK);
	/* Write's cookie on Read's ret; a RET_INSN on the jbe; the padding after the rets. */
	{
		struct ctl_tls_point p = { TEXT_OFF + 22, NET_TLS_COOKIE(NET_TLS_GO_WRITE, NET_TLS_P_RET_INSN) };

		assert_int_equal(verdict(&good, good.n, &p, 1), TLS_VERIFY_OUTSIDE);
		p = (struct ctl_tls_point){ TEXT_OFF + 4, NET_TLS_COOKIE(NET_TLS_GO_WRITE, NET_TLS_P_RET_INSN) };
		assert_int_equal(verdict(&good, good.n, &p, 1), TLS_VERIFY_INSN);
		p = (struct ctl_tls_point){ TEXT_OFF + 12, NET_TLS_COOKIE(NET_TLS_GO_WRITE, NET_TLS_P_RET_INSN) };
		assert_int_equal(verdict(&good, good.n, &p, 1), TLS_VERIFY_INSN);
		p = (struct ctl_tls_point){ TEXT_OFF + 5, NET_TLS_COOKIE(NET_TLS_GO_WRITE, NET_TLS_P_ENTRY) };
		assert_int_equal(verdict(&good, good.n, &p, 1), TLS_VERIFY_BOUNDARY);
	}
	/* Older table magics (Go 1.2 - 1.17) are not read: nothing found. */
	{
		size_t off = good.extra_at;
		uint64_t pcln;

		m = good;
		m.b[off] = 0xfa;
		assert_int_equal(verdict(&m, m.n, go_pts, 6), TLS_VERIFY_FUNCTION);
		/* nfunc huge; pclnOffset past the table; a name offset out of it; entries going backwards */
		m = good;
		put64(&m, off + 8, UINT64_MAX / 8);
		assert_int_equal(verdict(&m, m.n, go_pts, 6), TLS_VERIFY_FUNCTION);
		m = good;
		put64(&m, off + 8 + 7 * 8, tab_len);
		assert_int_equal(verdict(&m, m.n, go_pts, 6), TLS_VERIFY_FUNCTION);
		m = good;
		memcpy(&pcln, tab + 8 + 7 * 8, sizeof(pcln));
		put32(&m, off + pcln + 20 + 4, 0x7fffffffu);   /* Write's _func: its nameoff */
		assert_int_equal(verdict(&m, m.n, go_pts, 6), TLS_VERIFY_FUNCTION);
		/* Every single-byte corruption of the table: no crash, a verdict in range. */
		for (size_t i = 0; i < tab_len; i++) {
			m = good;
			m.b[off + i] ^= 0xff;
			(void)verdict(&m, m.n, go_pts, 6);
		}
	}
}

/* Every single-byte corruption of a whole image: no crash, a verdict in range. */
static void test_corrupt_bytes(void **state)
{
	struct img m, good;
	int accepted = 0;

	build(&good, ssl_code, sizeof(ssl_code), ssl_syms, 3, NULL, NULL, 0);
	for (size_t i = 0; i < good.n; i++) {
		m = good;
		m.b[i] ^= 0xff;
		accepted += verdict(&m, m.n, ssl_pts, 4) == TLS_VERIFY_OK;
	}
	/* Padding and names nobody reads: some corruptions change nothing checked. */
	assert_true(accepted > 0 && (size_t)accepted < good.n);
}

/* ---- tls_links counts refusals by reason ---------------------------------------------- */

static void test_links_counters(void **state)
{
	struct tls_links *l = tls_links__new(NULL, 4);   /* refusals never reach the BPF side */
	struct tls_links_stats st;
	struct tls_verify_verdict v;
	struct img m;
	struct ctl_tls_point p;
	int fd;

	assert_non_null(l);
	build(&m, ssl_code, sizeof(ssl_code), ssl_syms, 3, NULL, NULL, 0);
	fd = memfd_of(m.b, m.n);
	p = (struct ctl_tls_point){ DATA_OFF, ck(NET_TLS_SSL_WRITE, NET_TLS_P_ENTRY) };
	assert_int_equal(tls_links__add(l, 1, fd, 1, TLS_LINK_PROCESS, &p, 1, &v), -EINVAL);
	assert_int_equal(v.why, TLS_VERIFY_SEGMENT);
	p = (struct ctl_tls_point){ TEXT_OFF + 46, ck(NET_TLS_SSL_WRITE, NET_TLS_P_ENTRY) };
	assert_int_equal(tls_links__add(l, 1, fd, 1, TLS_LINK_PROCESS, &p, 1, NULL), -EINVAL);
	p = (struct ctl_tls_point){ TEXT_OFF + 56, ck(NET_TLS_SSL_READ, NET_TLS_P_ENTRY) };
	assert_int_equal(tls_links__add(l, 1, fd, 1, TLS_LINK_PROCESS, &p, 1, &v), -EINVAL);
	assert_int_equal(v.why, TLS_VERIFY_OUTSIDE);
	p = (struct ctl_tls_point){ TEXT_OFF + 40, ck(NET_TLS_SSL_WRITE, NET_TLS_P_ENTRY) };
	assert_int_equal(tls_links__add(l, 1, fd, 1, TLS_LINK_PROCESS, &p, 1, &v), -EINVAL);
	p = (struct ctl_tls_point){ TEXT_OFF + 44, ck(NET_TLS_GO_WRITE, NET_TLS_P_RETURN) };
	assert_int_equal(tls_links__add(l, 1, fd, 1, TLS_LINK_PROCESS, &p, 1, &v), -EINVAL);
	p = (struct ctl_tls_point){ TEXT_OFF + 44, ck(NET_TLS_SSL_READ_EX, NET_TLS_P_ENTRY) };
	assert_int_equal(tls_links__add(l, 1, fd, 1, TLS_LINK_PROCESS, &p, 1, &v), -EINVAL);
	assert_int_equal(tls_links__add(l, 1, fd, 1, TLS_LINK_PROCESS, &p, 0, &v), -EINVAL);   /* no points: counted in the total only */
	close(fd);
	fd = memfd_of(m.b, 40);
	p = (struct ctl_tls_point){ TEXT_OFF + 44, ck(NET_TLS_SSL_WRITE, NET_TLS_P_ENTRY) };
	assert_int_equal(tls_links__add(l, 1, fd, 1, TLS_LINK_PROCESS, &p, 1, &v), -EINVAL);
	close(fd);
	tls_links__stats(l, &st);
	assert_int_equal(st.refused, 8);
	assert_int_equal(st.refused_segment, 1);
	assert_int_equal(st.refused_boundary, 1);
	assert_int_equal(st.refused_outside, 1);
	assert_int_equal(st.refused_insn, 1);
	assert_int_equal(st.refused_cookie, 1);
	assert_int_equal(st.refused_function, 1);
	assert_int_equal(st.refused_file, 1);
	assert_int_equal(st.files, 0);
	assert_int_equal(st.points, 0);
	assert_null(tls_links__free(l));
	assert_string_equal(tls_verify__why_name(TLS_VERIFY_INSN), "wrong_instruction");
	assert_string_equal(tls_verify__why_name(TLS_VERIFY_WHY_MAX), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_synthetic),
		cmocka_unit_test(test_corrupt_headers),
		cmocka_unit_test(test_corrupt_names),
		cmocka_unit_test(test_go_pclntab),
		cmocka_unit_test(test_corrupt_bytes),
		cmocka_unit_test(test_links_counters),
		cmocka_unit_test(test_libssl3),
		cmocka_unit_test(test_boringssl),
		cmocka_unit_test(test_node),
		cmocka_unit_test(test_go),
		cmocka_unit_test(test_go_stripped),
	};

	elf_version(EV_CURRENT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
