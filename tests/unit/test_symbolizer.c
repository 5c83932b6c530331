/*
 * symbolizer/ unit tests.  Real inputs: the group setup compiles a PIE, a
 * non-PIE, a shared library and a program using it (plus stripped copies)
 * with `cc` into a temp dir; the tests run them, read the addresses they
 * print, and resolve those through the symbolizer with the direct callbacks.
 * The expected file offsets of unresolved frames come from an independent
 * sscanf-based reading of /proc/<pid>/maps, build ids from `readelf -n`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "symbolizer/elf_syms.h"
#include "symbolizer/kallsyms.h"
#include "symbolizer/maps.h"
#include "symbolizer/symbolizer.h"
#include "tests/unit/sym_testlib.h"

static bool have_cc;

static const char prog_src[] =
	"#include <stdio.h>\n"
	"#include <unistd.h>\n"
	"volatile int sink;\n"
	"#ifdef WITH_LIB\n"
	"void lib_report(void);\n"
	"#endif\n"
	"__attribute__((noinline)) int sym_alpha(int x)\n"
	"{ for (int i = 0; i < x; i++) sink += i * x; return sink; }\n"
	"__attribute__((noinline)) void *get_ra(void) { return __builtin_return_address(0); }\n"
	"__attribute__((noinline)) void *sym_beta(void)\n"
	"{ void *r = get_ra(); __asm__ volatile(\"\" ::: \"memory\"); sink++; return r; }\n"
	"int main(void)\n"
	"{\n"
	"	char c;\n"
	"	sym_alpha(3);\n"
	"	printf(\"alpha %p\\n\", (void *)((char *)&sym_alpha + 5));\n"
	"	printf(\"beta %p\\n\", sym_beta());\n"
	"#ifdef WITH_LIB\n"
	"	lib_report();\n"
	"#endif\n"
	"	printf(\"ready\\n\");\n"
	"	fflush(stdout);\n"
	"	while (read(0, &c, 1) > 0)\n"
	"		;\n"
	"	return 0;\n"
	"}\n";

static const char lib_src[] =
	"#include <stdio.h>\n"
	"volatile int lsink;\n"
	"__attribute__((noinline)) int lib_gamma(int x)\n"
	"{ for (int i = 0; i < x; i++) lsink += i ^ x; return lsink; }\n"
	"static __attribute__((noinline)) void *lib_ra(void) { return __builtin_return_address(0); }\n"
	"__attribute__((noinline)) void *lib_delta(void)\n"
	"{ void *r = lib_ra(); __asm__ volatile(\"\" ::: \"memory\"); lsink++; return r; }\n"
	"void lib_report(void)\n"
	"{\n"
	"	lib_gamma(2);\n"
	"	printf(\"gamma %p\\n\", (void *)((char *)&lib_gamma + 7));\n"
	"	printf(\"delta %p\\n\", lib_delta());\n"
	"}\n";

/* ---- helpers ------------------------------------------------------------------ */

/* Independent oracle: file offset of addr in pid's maps, and the mapping's path. */
static int oracle_file_offset(pid_t pid, uint64_t addr, uint64_t *ret_off, char *ret_path, size_t plen)
{
	char p[64], line[1024];
	FILE *f;
	int found = -1;

	snprintf(p, sizeof(p), "/proc/%d/maps", (int)pid);
	f = fopen(p, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end, off;
		char perms[8], path[512] = "";

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %511s", &start, &end, perms, &off, path) < 4)
			continue;
		if (addr >= start && addr < end) {
			*ret_off = addr - start + off;
			snprintf(ret_path, plen, "%s", path);
			found = 0;
			break;
		}
	}
	fclose(f);
	return found;
}

static void hexify(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	out[2 * n] = '\0';
}

static struct symbolizer *new_direct(size_t max_modules, int64_t refresh_ms)
{
	struct symbolizer_opts o;
	struct symbolizer *s;

	symbolizer__direct_opts(&o);
	o.max_modules = max_modules;
	o.maps_refresh_ms = refresh_ms;
	s = symbolizer__new(&o);
	assert_non_null(s);
	return s;
}

#define NEED_CC() do { if (!have_cc) { fprintf(stderr, "SKIP: no cc\n"); skip(); } } while (0)

/* ---- setup ---------------------------------------------------------------------- */

static int group_setup(void **state)
{
	const char *flags = "-O1 -g -fno-inline -fno-optimize-sibling-calls -fno-omit-frame-pointer -w";

	char prog_c[512], lib_c[512];

	if (make_tmpdir("/tmp/ember-symtest-XXXXXX"))
		return -1;
	have_cc = tool("cc --version");
	if (!have_cc)
		return 0;
	path_of(prog_c, sizeof(prog_c), "prog.c");
	path_of(lib_c, sizeof(lib_c), "lib.c");
	if (write_file(prog_c, prog_src) || write_file(lib_c, lib_src))
		return -1;
	if (run("cd %s && cc %s -fPIE -pie -o prog_pie prog.c", tmpdir, flags) ||
	    run("cd %s && cc %s -fno-pie -no-pie -o prog_nopie prog.c", tmpdir, flags) ||
	    run("cd %s && cc %s -fPIC -shared -o libsymtest.so lib.c", tmpdir, flags) ||
	    run("cd %s && cc %s -DWITH_LIB -o prog_lib prog.c -L. -lsymtest -Wl,-rpath,%s", tmpdir,
		flags, tmpdir) ||
	    run("cd %s && cp prog_nopie prog_stripped && strip --strip-all prog_stripped", tmpdir) ||
	    run("cd %s && cc %s -rdynamic -o prog_rdyn prog.c && strip --strip-all prog_rdyn", tmpdir,
		flags) ||
	    run("cd %s && cp prog_pie prog_copy", tmpdir))
		return -1;
	return 0;
}

/* ---- maps parser ------------------------------------------------------------------ */

static void test_maps_parse_line(void **state)
{
	struct maps_line m;
	const char *l1 = "7f91337c4000-7f91337ce000 r-xp 00027000 fe:01 332383                     /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2";
	const char *l2 = "7ffc64d34000-7ffc64d55000 rw-p 00000000 00:00 0                          [stack]";
	const char *l3 = "55d0c0000000-55d0c0021000 rw-p 00000000 00:00 0 ";
	const char *l4 = "7f0000000000-7f0000001000 r-xs 00001000 08:02 42 /tmp/my lib.so (deleted)";
	const char *l5 = "7fff0000-7fff2000 r-xp 00000000 00:00 0 [vdso]";
	const char *bad[] = {
		"", "zz-10 r-xp 0 00:00 0", "10-10 r-xp 0 00:00 0", "20-10 r-xp 0 00:00 0",
		"10-20 rxxp 0 00:00 0", "10-20 r-xq 0 00:00 0", "10-20 r-xp 0 0000 0",
		"10-20 r-xp 0 00:00", "10-20 r-xp 0 00:00 12a /x", "10000000000000000-10000000000000001 r-xp 0 00:00 0",
		"10-20 r-xp 0 00:00 99999999999999999999 /x",
	};

	assert_int_equal(maps__parse_line(l1, strlen(l1), &m), 0);
	assert_int_equal(m.start, 0x7f91337c4000ull);
	assert_int_equal(m.end, 0x7f91337ce000ull);
	assert_int_equal(m.offset, 0x27000);
	assert_int_equal(m.dev_major, 0xfe);
	assert_int_equal(m.dev_minor, 1);
	assert_int_equal(m.inode, 332383);
	assert_int_equal(m.perms, MAPS_PERM_R | MAPS_PERM_X);
	assert_int_equal(m.kind, MAPS_FILE);
	assert_false(m.deleted);
	assert_int_equal(m.path_len, strlen("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"));

	assert_int_equal(maps__parse_line(l2, strlen(l2), &m), 0);
	assert_int_equal(m.kind, MAPS_SPECIAL);
	assert_int_equal(m.perms, MAPS_PERM_R | MAPS_PERM_W);

	assert_int_equal(maps__parse_line(l3, strlen(l3), &m), 0);
	assert_int_equal(m.kind, MAPS_ANON);
	assert_int_equal(m.path_len, 0);

	assert_int_equal(maps__parse_line(l4, strlen(l4), &m), 0);
	assert_int_equal(m.kind, MAPS_FILE);
	assert_true(m.deleted);
	assert_true(m.perms & MAPS_PERM_SHARED);
	assert_int_equal(m.path_len, strlen("/tmp/my lib.so"));
	assert_memory_equal(m.path, "/tmp/my lib.so", m.path_len);

	assert_int_equal(maps__parse_line(l5, strlen(l5), &m), 0);
	assert_int_equal(m.kind, MAPS_VDSO);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(maps__parse_line(bad[i], strlen(bad[i]), &m), -EINVAL);
}

static void test_proc_maps_read(void **state)
{
	/* Out of order, one malformed line, one overlong line, no trailing newline. */
	char *text, *big;
	struct proc_maps *pm;
	struct proc_maps_stats st;
	const struct maps_entry *e;
	int fd, idx;

	big = malloc(70000);
	assert_non_null(big);
	memset(big, 'a', 69999);
	big[69999] = '\0';
	assert_true(asprintf(&text,
			     "3000-4000 r-xp 00002000 08:01 77 /usr/lib/libz.so.1 (deleted)\n"
			     "garbage line\n"
			     "1000-2000 r--p 00000000 08:01 77 /usr/lib/libz.so.1\n"
			     "5000-6000 r-xp 00000000 00:00 0 %s\n"
			     "7000-8000 rw-p 00000000 00:00 0 [heap]", big) > 0);
	fd = memfd_with(text, strlen(text));
	assert_true(fd >= 0);
	pm = proc_maps__read(fd, 0);
	close(fd);
	assert_non_null(pm);
	proc_maps__stats(pm, &st);
	assert_int_equal(st.bad_lines, 1);
	assert_int_equal(st.overlong_lines, 1);
	assert_int_equal(proc_maps__count(pm), 3);
	assert_int_equal(proc_maps__find(pm, 0xfff), -ENOENT);
	idx = proc_maps__find(pm, 0x1000);
	assert_int_equal(idx, 0);
	idx = proc_maps__find(pm, 0x3fff);
	assert_int_equal(idx, 1);
	e = proc_maps__entry(pm, (size_t)idx);
	assert_true(e->deleted);
	assert_string_equal(e->path, "/usr/lib/libz.so.1");
	assert_string_equal(e->name, "libz.so.1");
	assert_int_equal(proc_maps__find(pm, 0x4000), -ENOENT);
	e = proc_maps__entry(pm, (size_t)proc_maps__find(pm, 0x7abc));
	assert_string_equal(e->name, "[heap]");
	assert_null(proc_maps__entry(pm, 3));
	proc_maps__free(pm);

	/* The entry cap drops and counts. */
	fd = memfd_with(text, strlen(text));
	pm = proc_maps__read(fd, 2);
	close(fd);
	assert_non_null(pm);
	proc_maps__stats(pm, &st);
	assert_int_equal(proc_maps__count(pm), 2);
	assert_int_equal(st.dropped_entries, 1);
	proc_maps__free(pm);
	free(text);
	free(big);
}

/* ---- kallsyms ---------------------------------------------------------------------- */

static void test_kallsyms_synthetic(void **state)
{
	static const char text[] =
		"ffffffff81000000 T _stext\n"
		"ffffffff81000000 T _text\n"
		"ffffffff81000100 t helper_a\n"
		"ffffffff81000200 D some_data\n"
		"ffffffff81000300 T helper_b\n"
		"not a line\n"
		"ffffffff81000400 W weak_fn\n"
		"ffffffffc0001000 t mod_fn\t[mymod]\n"
		"ffffffffc0001080 t mod_fn2\t[mymod]\n"
		"ffffffffc0100000 t other_fn\t[other]\n";
	static const char hidden[] = "0000000000000000 T _stext\n0000000000000000 T schedule\n";
	struct kallsyms *ks;
	struct kallsyms_stats st;
	const char *name, *mod;
	uint64_t off;
	int fd;

	fd = memfd_with(text, sizeof(text) - 1);
	ks = kallsyms__read(fd, 0);
	close(fd);
	assert_non_null(ks);
	kallsyms__stats(ks, &st);
	assert_int_equal(st.bad_lines, 1);
	assert_int_equal(st.modules, 2);
	assert_int_equal(st.symbols, 7); /* _text folded into _stext; the D symbol skipped */

	assert_int_equal(kallsyms__lookup(ks, 0xffffffff81000010, &name, &off, &mod), 0);
	assert_string_equal(name, "_stext");
	assert_int_equal(off, 0x10);
	assert_null(mod);
	/* some_data is not text: helper_a extends over it to helper_b. */
	assert_int_equal(kallsyms__lookup(ks, 0xffffffff81000250, &name, &off, &mod), 0);
	assert_string_equal(name, "helper_a");
	assert_int_equal(off, 0x150);
	assert_int_equal(kallsyms__lookup(ks, 0xffffffffc0001084, &name, &off, &mod), 0);
	assert_string_equal(name, "mod_fn2");
	assert_string_equal(mod, "[mymod]");
	assert_int_equal(off, 4);
	/* The last symbol of a module does not run into the next module. */
	assert_int_equal(kallsyms__lookup(ks, 0xffffffffc0001080 + KALLSYMS_LAST_SPAN + 1, &name,
					  &off, &mod), -ENOENT);
	assert_int_equal(kallsyms__lookup(ks, 0xffffffffc0100010, &name, &off, &mod), 0);
	assert_string_equal(mod, "[other]");
	assert_int_equal(kallsyms__lookup(ks, 0xffffffff80000000, &name, &off, &mod), -ENOENT);
	assert_int_equal(kallsyms__find_name(ks, "weak_fn"), 0xffffffff81000400ull);
	assert_int_equal(kallsyms__find_name(ks, "nope"), 0);
	kallsyms__free(ks);

	/* kptr_restrict: all zero -> EPERM, not an empty table. */
	fd = memfd_with(hidden, sizeof(hidden) - 1);
	errno = 0;
	ks = kallsyms__read(fd, 0);
	close(fd);
	assert_null(ks);
	assert_int_equal(errno, EPERM);
}

static void test_kernel_real(void **state)
{
	struct symbolizer *s = new_direct(0, 0);
	struct symbolizer_stats st;
	struct sym_frame f[3];
	char line[512], name[256] = "", alias[256] = "";
	uint64_t want = 0;
	FILE *k = fopen("/proc/kallsyms", "r");

	/* Find a text symbol whose address no alias shares: "schedule" if it qualifies. */
	assert_non_null(k);
	while (fgets(line, sizeof(line), k)) {
		char type, n[256];
		unsigned long long a;

		if (sscanf(line, "%llx %c %255s", &a, &type, n) != 3)
			continue;
		if (!strcmp(n, "schedule") && (type == 'T' || type == 't'))
			want = a;
	}
	fclose(k);
	if (!want) {
		symbolizer__free(s);
		fprintf(stderr, "SKIP: kallsyms hidden (kptr_restrict) or no schedule\n");
		skip();
	}
	/* Check that no other symbol shares schedule's address (else the name may be the alias). */
	k = fopen("/proc/kallsyms", "r");
	while (fgets(line, sizeof(line), k)) {
		char type;
		unsigned long long a;

		if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3)
			continue;
		if (a == want && strcmp(name, "schedule") && strchr("tTwW", type))
			snprintf(alias, sizeof(alias), "%s", name);
	}
	fclose(k);
	{
		/* 0x1000 is a user-space address: no kernel symbol covers it. */
		uint64_t addrs[3] = { want + 1, 0x1000, want };

		assert_int_equal(symbolizer__resolve_kernel(s, addrs, 3, f), 2);
	}
	assert_true(f[0].resolved && f[0].kernel);
	if (!alias[0]) {
		assert_string_equal(f[0].name, "schedule");
		assert_int_equal(f[0].offset, 1);
	}
	assert_string_equal(f[0].module, "[kernel]");
	assert_false(f[1].resolved);
	assert_string_equal(f[1].name, "[unknown]");
	assert_int_equal(f[1].reason, SYM_NO_SYMBOL);
	assert_int_equal(f[2].offset, 0);
	symbolizer__stats(s, &st);
	assert_int_equal(st.kallsyms_loads, 1);
	assert_int_equal(st.kernel_resolved, 2);
	assert_int_equal(st.kernel_unknown, 1);
	assert_true(st.kallsyms_symbols > 1000);
	symbolizer__free(s);
}

static int failing_kallsyms(void *ctx) { (void)ctx; return -EACCES; }

static void test_kernel_unavailable(void **state)
{
	struct symbolizer_opts o = { .sz = sizeof(o), .open_kallsyms = failing_kallsyms };
	struct symbolizer *s = symbolizer__new(&o);
	struct symbolizer_stats st;
	uint64_t a = 0xffffffff81000000ull;
	struct sym_frame f;
	char buf[64];

	assert_non_null(s);
	assert_int_equal(symbolizer__resolve_kernel(s, &a, 1, &f), 0);
	assert_false(f.resolved);
	assert_int_equal(f.reason, SYM_KERNEL_UNAVAILABLE);
	assert_int_equal(sym_frame__format(&f, buf, sizeof(buf)), (int)strlen("[kernel]+0xffffffff81000000"));
	assert_string_equal(buf, "[kernel]+0xffffffff81000000");
	symbolizer__stats(s, &st);
	assert_int_equal(st.open_failed, 1);
	assert_int_equal(st.by_reason[SYM_KERNEL_UNAVAILABLE], 1);
	symbolizer__free(s);
}

static const char fake_kallsyms[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81000100 T core_fn\n"
	"ffffffffc0001000 t mod_fn\t[mymod]\n"
	"ffffffffc0001080 t mod_fn2\t[mymod]\n";

static int open_fake_kallsyms(void *ctx)
{
	(*(int *)ctx)++;
	return memfd_with(fake_kallsyms, sizeof(fake_kallsyms) - 1);
}

static void test_kernel_via_callback(void **state)
{
	int calls = 0;
	struct symbolizer_opts o = { .sz = sizeof(o), .ctx = &calls, .open_kallsyms = open_fake_kallsyms,
				     .kallsyms_refresh_ms = -1 };
	struct symbolizer *s = symbolizer__new(&o);
	struct symbolizer_stats st;
	uint64_t a[3] = { 0xffffffff81000104ull, 0xffffffffc0001090ull, 0xffffffff00000000ull };
	struct sym_frame f[3];
	char buf[64];

	assert_non_null(s);
	assert_int_equal(symbolizer__resolve_kernel(s, a, 2, f), 2);
	assert_string_equal(f[0].name, "core_fn");
	assert_string_equal(f[0].module, "[kernel]");
	assert_int_equal(f[0].offset, 4);
	assert_string_equal(f[1].name, "mod_fn2");
	assert_string_equal(f[1].module, "[mymod]");
	assert_int_equal(f[1].offset, 0x10);
	assert_int_equal(sym_frame__format(&f[1], buf, sizeof(buf)), 7);
	assert_int_equal(calls, 1);
	/* A miss re-reads kallsyms (no rate limit here): a module may have been loaded. */
	assert_int_equal(symbolizer__resolve_kernel(s, &a[2], 1, f), 0);
	assert_int_equal(f[0].reason, SYM_NO_SYMBOL);
	assert_int_equal(calls, 2);
	symbolizer__stats(s, &st);
	assert_int_equal(st.kallsyms_loads, 2);
	assert_int_equal(st.kallsyms_symbols, 4);
	symbolizer__free(s);
}

/* ---- ELF module ---------------------------------------------------------------------- */

static void test_elf_syms_file(void **state)
{
	char path[512], hex[130], want_hex[130];
	struct elf_syms *es;
	struct elf_syms_info info;
	const uint8_t *bid;
	const char *name;
	uint64_t addr = 0, size = 0, off, vaddr;
	size_t bid_len, n;
	int fd;

	NEED_CC();
	path_of(path, sizeof(path), "prog_nopie");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	es = elf_syms__open(fd);
	assert_non_null(es);
	bid = elf_syms__build_id(es, &bid_len);
	if (oracle_build_id(path, want_hex, sizeof(want_hex)) == 0) {
		assert_non_null(bid);
		hexify(bid, bid_len, hex);
		assert_string_equal(hex, want_hex);
	}
	assert_true(elf_syms__load_symbols(es, 0) > 0);
	assert_int_equal(elf_syms__load_symbols(es, 0), -EALREADY);
	close(fd);
	elf_syms__info(es, &info);
	assert_false(info.is_dyn);
	assert_true(info.has_symtab);
	n = elf_syms__count(es);
	for (size_t i = 0; i < n; i++) {
		uint64_t a, sz;

		assert_int_equal(elf_syms__symbol(es, i, &a, &sz, &name), 0);
		if (i)
			assert_true(a > addr || !strcmp(name, "sym_alpha"));
		if (!strcmp(name, "sym_alpha")) {
			addr = a;
			size = sz;
			break;
		}
		addr = a;
	}
	assert_true(size > 5);
	assert_int_equal(elf_syms__lookup(es, addr + 5, &name, &off), 0);
	assert_string_equal(name, "sym_alpha");
	assert_int_equal(off, 5);
	assert_int_equal(elf_syms__lookup(es, 1, &name, &off), -ENOENT);
	/* Non-PIE: a .text address's file offset maps back to the same vaddr. */
	assert_int_equal(elf_syms__offset_to_vaddr(es, addr - 0x400000, &vaddr), 0);
	assert_int_equal(vaddr, addr);
	assert_int_equal(elf_syms__vaddr_to_offset(es, addr, &off), 0);
	assert_int_equal(off, addr - 0x400000);
	assert_int_equal(elf_syms__vaddr_to_offset(es, 0x10, &off), -ENOENT);
	assert_true(elf_syms__memory(es) >= n * 16);
	elf_syms__free(es);
	elf_syms__free(NULL);
}

/*
 * Versioned definitions: .symtab names them "ver_fn@@VERS_2" (the default)
 * and "ver_fn@VERS_1"; stacks show the plain name, as perf does.
 */
static void test_symbol_versions(void **state)
{
	static const char src[] =
		"__attribute__((noinline)) int ver_new(int x) { return x + 1; }\n"
		"__asm__(\".symver ver_new, ver_fn@@VERS_2\");\n"
		"__attribute__((noinline)) int ver_old(int x) { return x + 2; }\n"
		"__asm__(\".symver ver_old, ver_fn@VERS_1\");\n";
	char path[512], map[512];
	struct elf_syms *es;
	const char *name;
	size_t plain = 0;
	int fd;

	(void)state;
	NEED_CC();
	path_of(path, sizeof(path), "ver.c");
	path_of(map, sizeof(map), "ver.map");
	assert_int_equal(write_file(path, src), 0);
	assert_int_equal(write_file(map, "VERS_1 { global: ver_fn; local: *; };\nVERS_2 { global: ver_fn; } VERS_1;\n"), 0);
	assert_int_equal(run("cd %s && cc -O1 -fPIC -shared -Wl,--version-script=ver.map -o libver.so ver.c", tmpdir), 0);
	/* The oracle: the file's .symtab does spell the versions. */
	assert_int_equal(run("readelf -W --syms %s/libver.so | grep -q ' ver_fn@@VERS_2$'", tmpdir), 0);
	path_of(path, sizeof(path), "libver.so");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	es = elf_syms__open(fd);
	assert_non_null(es);
	assert_true(elf_syms__load_symbols(es, 0) > 0);
	close(fd);
	for (size_t i = 0; i < elf_syms__count(es); i++) {
		uint64_t a, off;

		assert_int_equal(elf_syms__symbol(es, i, &a, NULL, &name), 0);
		assert_null(strchr(name, '@'));
		if (strcmp(name, "ver_fn"))
			continue;
		plain++;
		assert_int_equal(elf_syms__lookup(es, a + 1, &name, &off), 0);
		assert_string_equal(name, "ver_fn");
		assert_int_equal(off, 1);
	}
	assert_int_equal(plain, 2);	/* both versions, each at its own address */
	elf_syms__free(es);
}

static void test_elf_malformed(void **state)
{
	char path[512];
	struct stat stt;
	uint8_t *img, *mut;
	size_t len;
	uint32_t seed = 12345;
	int fd;
	struct elf_syms *es;

	NEED_CC();
	/* Not ELF at all. */
	fd = memfd_with("hello world, not an ELF file\n", 29);
	errno = 0;
	assert_null(elf_syms__open(fd));
	assert_int_equal(errno, ENOEXEC);
	close(fd);
	fd = memfd_with("", 0);
	assert_null(elf_syms__open(fd));
	close(fd);
	assert_null(elf_syms__open(-1));

	path_of(path, sizeof(path), "libsymtest.so");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &stt), 0);
	len = (size_t)stt.st_size;
	img = malloc(len);
	mut = malloc(len);
	assert_true(img && mut);
	assert_int_equal(read(fd, img, len), (ssize_t)len);
	close(fd);

	/* Truncations: must fail cleanly or load what is inside. */
	for (size_t cut = 0; cut < len; cut += len / 97 + 1) {
		fd = memfd_with(img, cut);
		es = elf_syms__open(fd);
		if (es) {
			const char *n;
			uint64_t o;

			assert_true(elf_syms__load_symbols(es, 0) >= 0);
			elf_syms__lookup(es, 0x1100, &n, &o);
		}
		elf_syms__free(es);
		close(fd);
	}
	/* Random byte flips in the headers and tables (ASan/UBSan watch). */
	for (int round = 0; round < 300; round++) {
		memcpy(mut, img, len);
		for (int k = 0; k < 8; k++) {
			size_t pos;

			seed = seed * 1103515245u + 12345u;
			/* Half the flips in the first 4 KiB (headers), half anywhere. */
			pos = (k & 1) ? (seed >> 8) % len : (seed >> 8) % (len < 4096 ? len : 4096);
			seed = seed * 1103515245u + 12345u;
			mut[pos] = (uint8_t)(seed >> 16);
		}
		fd = memfd_with(mut, len);
		es = elf_syms__open(fd);
		if (es) {
			const char *n;
			uint64_t o, v;

			if (elf_syms__load_symbols(es, 0) >= 0) {
				for (size_t i = 0; i < elf_syms__count(es); i++) {
					uint64_t a;

					elf_syms__symbol(es, i, &a, NULL, &n);
					assert_true(strlen(n) > 0);
					elf_syms__lookup(es, a, &n, &o);
				}
				elf_syms__offset_to_vaddr(es, 0x1100, &v);
			}
		}
		elf_syms__free(es);
		close(fd);
	}
	/* In-memory variant. */
	es = elf_syms__open_mem(img, len);
	assert_non_null(es);
	assert_true(elf_syms__load_symbols(es, 0) > 0);
	elf_syms__free(es);
	/* Cap on symbols per module. */
	es = elf_syms__open_mem(img, len);
	assert_non_null(es);
	assert_int_equal(elf_syms__load_symbols(es, 1), 1);
	{
		struct elf_syms_info info;

		elf_syms__info(es, &info);
		assert_true(info.dropped > 0);
	}
	elf_syms__free(es);
	free(img);
	free(mut);
}

/* ---- end to end ------------------------------------------------------------------------ */

static void check_prog(const char *prog, bool with_lib)
{
	struct symbolizer *s = new_direct(0, 0);
	struct sym_frame f[4];
	struct child c;
	uint64_t addrs[4];
	size_t n = with_lib ? 4 : 2;
	char buf[128], want_hex[130], hex[130], path[512];

	NEED_CC();
	assert_int_equal(spawn(prog, &c), 0);
	addrs[0] = c.alpha;
	addrs[1] = c.beta;
	addrs[2] = c.gamma;
	addrs[3] = c.delta;
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, addrs, n, f), (int)n);
	assert_true(f[0].resolved);
	assert_string_equal(f[0].name, "sym_alpha");
	assert_int_equal(f[0].offset, 5);
	assert_string_equal(f[0].module, prog);
	assert_string_equal(f[1].name, "sym_beta");
	assert_true(f[1].offset > 0);
	assert_int_equal(sym_frame__format(&f[0], buf, sizeof(buf)), 9);
	assert_string_equal(buf, "sym_alpha");
	path_of(path, sizeof(path), prog);
	if (oracle_build_id(path, want_hex, sizeof(want_hex)) == 0) {
		assert_non_null(f[0].build_id);
		hexify(f[0].build_id, f[0].build_id_len, hex);
		assert_string_equal(hex, want_hex);
	}
	if (with_lib) {
		assert_string_equal(f[2].name, "lib_gamma");
		assert_int_equal(f[2].offset, 7);
		assert_string_equal(f[2].module, "libsymtest.so");
		assert_string_equal(f[3].name, "lib_delta");
		assert_true(f[3].offset > 0);
	}
	reap(&c);
	symbolizer__free(s);
}

static void test_resolve_pie(void **state) { check_prog("prog_pie", false); }
static void test_resolve_nopie(void **state) { check_prog("prog_nopie", false); }
static void test_resolve_shared_lib(void **state) { check_prog("prog_lib", true); }

static void test_stripped(void **state)
{
	struct symbolizer *s = new_direct(0, 0);
	struct sym_frame f[2];
	struct child c;
	uint64_t want_off = 0;
	char path[512], buf[128], want[160];

	NEED_CC();
	/* No .symtab, and the .dynsym of a normal executable has no local functions. */
	assert_int_equal(spawn("prog_stripped", &c), 0);
	assert_int_equal(oracle_file_offset(c.pid, c.alpha, &want_off, path, sizeof(path)), 0);
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, &c.alpha, 1, f), 0);
	assert_false(f[0].resolved);
	assert_string_equal(f[0].name, "[unknown]");
	assert_string_equal(f[0].module, "prog_stripped");
	assert_int_equal(f[0].reason, SYM_NO_SYMBOL);
	assert_int_equal(f[0].offset, want_off);
	assert_int_equal(f[0].file_offset, want_off);
	snprintf(want, sizeof(want), "prog_stripped+0x%" PRIx64, want_off);
	assert_int_equal(sym_frame__format(&f[0], buf, sizeof(buf)), (int)strlen(want));
	assert_string_equal(buf, want);
	reap(&c);

	/* -rdynamic exports them in .dynsym, which survives strip. */
	assert_int_equal(spawn("prog_rdyn", &c), 0);
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, &c.alpha, 1, f), 1);
	assert_string_equal(f[0].name, "sym_alpha");
	assert_int_equal(f[0].offset, 5);
	reap(&c);
	symbolizer__free(s);
}

static void test_no_mapping_and_refresh(void **state)
{
	struct symbolizer *s = new_direct(0, 0);
	struct symbolizer_stats st, st2;
	struct sym_frame f;
	uint64_t a = 0x10; /* below mmap_min_addr: never mapped */
	uint32_t me = (uint32_t)getpid();

	assert_int_equal(symbolizer__resolve_user(s, me, &a, 1, &f), 0);
	assert_false(f.resolved);
	assert_string_equal(f.name, "[unknown]");
	assert_string_equal(f.module, "[unmapped]");
	assert_int_equal(f.reason, SYM_NO_MAPPING);
	assert_int_equal(f.offset, 0x10);
	/* A second miss right away is rate-limited. */
	assert_int_equal(symbolizer__resolve_user(s, me, &a, 1, &f), 0);
	symbolizer__stats(s, &st);
	assert_int_equal(st.no_mapping, 2);
	assert_int_equal(st.unknown, 2);
	assert_int_equal(st.maps_reads, 1);
	assert_int_equal(st.maps_refresh_limited, 1);
	/* After the interval a miss re-reads the maps. */
	usleep(300 * 1000);
	assert_int_equal(symbolizer__resolve_user(s, me, &a, 1, &f), 0);
	symbolizer__stats(s, &st2);
	assert_int_equal(st2.maps_reads, 2);
	symbolizer__free(s);

	/* No limit: a new mapping is found on the next miss. */
	s = new_direct(0, -1);
	{
		struct sym_frame g;
		uint64_t b;
		void *p;

		assert_int_equal(symbolizer__resolve_user(s, me, &a, 1, &g), 0);
		p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		assert_true(p != MAP_FAILED);
		b = (uint64_t)(uintptr_t)p + 8;
		assert_int_equal(symbolizer__resolve_user(s, me, &b, 1, &g), 0);
		assert_int_equal(g.reason, SYM_ANON);
		assert_string_equal(g.module, "[anon]");
		assert_int_equal(g.offset, 8);
		munmap(p, 4096);
	}
	symbolizer__stats(s, &st);
	assert_int_equal(st.maps_reads, 2);
	assert_int_equal(st.by_reason[SYM_ANON], 1);
	symbolizer__free(s);
}

static void test_shared_module(void **state)
{
	struct symbolizer *s = new_direct(0, 0);
	struct symbolizer_stats st1, st2, st3;
	struct sym_frame f[2];
	struct child a, b, c;
	uint64_t addrs[2];

	NEED_CC();
	assert_int_equal(spawn("prog_pie", &a), 0);
	assert_int_equal(spawn("prog_pie", &b), 0);
	assert_int_equal(spawn("prog_copy", &c), 0);
	addrs[0] = a.alpha;
	addrs[1] = a.beta;
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)a.pid, addrs, 2, f), 2);
	symbolizer__stats(s, &st1);
	assert_int_equal(st1.modules_loaded, 1);
	addrs[0] = b.alpha;
	addrs[1] = b.beta;
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)b.pid, addrs, 2, f), 2);
	assert_string_equal(f[0].name, "sym_alpha");
	symbolizer__stats(s, &st2);
	assert_int_equal(st2.modules_loaded, 1); /* same file: loaded once */
	assert_int_equal(st2.pids_cached, 2);
	/* Another file with the same build id: opened, matched, not parsed again. */
	addrs[0] = c.alpha;
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, addrs, 1, f), 1);
	assert_string_equal(f[0].name, "sym_alpha");
	assert_string_equal(f[0].module, "prog_copy");
	symbolizer__stats(s, &st3);
	assert_int_equal(st3.modules_loaded, 1);
	assert_int_equal(st3.modules_shared, 1);
	assert_int_equal(st3.modules_cached, 1);
	assert_true(st3.module_bytes > 0);

	symbolizer__forget_pid(s, (uint32_t)b.pid);
	symbolizer__forget_pid(s, 0x7fffffff); /* unknown pid: no-op */
	symbolizer__stats(s, &st3);
	assert_int_equal(st3.pids_cached, 2);
	reap(&a);
	reap(&b);
	reap(&c);
	/* Gone and forgotten: its maps cannot be read any more. */
	addrs[0] = 0x1234;
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)b.pid, addrs, 1, f), 0);
	assert_int_equal(f[0].reason, SYM_NO_MAPS);
	assert_string_equal(f[0].module, "[unmapped]");
	symbolizer__stats(s, &st3);
	assert_true(st3.open_failed >= 1);
	symbolizer__free(s);
}

static void test_eviction(void **state)
{
	struct symbolizer *s = new_direct(2, 0);
	struct symbolizer_stats st;
	struct sym_frame f[4];
	struct child c;
	uint64_t addrs[4];

	NEED_CC();
	assert_int_equal(spawn("prog_lib", &c), 0);
	/* Two modules (exe, libsymtest.so) in a cache of two. */
	addrs[0] = c.alpha;
	addrs[1] = c.gamma;
	addrs[2] = c.beta;
	addrs[3] = c.delta;
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, addrs, 4, f), 4);
	symbolizer__stats(s, &st);
	assert_int_equal(st.modules_cached, 2);
	/* A third module: the current call pins what it uses, older ones go. */
	{
		uint64_t self_addr = (uint64_t)(uintptr_t)&test_eviction;

		assert_int_equal(symbolizer__resolve_user(s, (uint32_t)getpid(), &self_addr, 1, f), 1);
		assert_string_equal(f[0].name, "test_eviction");
	}
	symbolizer__stats(s, &st);
	assert_int_equal(st.modules_cached, 2);
	assert_int_equal(st.modules_evicted, 1);
	/* All four frames in one call again: exe reloaded, everything still right. */
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, addrs, 4, f), 4);
	assert_string_equal(f[0].name, "sym_alpha");
	assert_string_equal(f[1].name, "lib_gamma");
	assert_string_equal(f[2].name, "sym_beta");
	assert_string_equal(f[3].name, "lib_delta");
	/*
	 * LRU before this call: self, libsymtest.so (exe was evicted).  Loading
	 * the exe evicts libsymtest.so, which gamma then reloads; self goes when
	 * the call ends: 5 loads in all, and the cache is back to its cap.
	 */
	symbolizer__stats(s, &st);
	assert_int_equal(st.modules_loaded, 5);
	assert_int_equal(st.modules_evicted, 3);
	assert_int_equal(st.modules_cached, 2);
	symbolizer__free(s);

	/* A byte budget smaller than two modules keeps one between calls. */
	{
		struct symbolizer_opts o;

		symbolizer__direct_opts(&o);
		o.max_cache_bytes = 1;
		s = symbolizer__new(&o);
		assert_non_null(s);
	}
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, addrs, 4, f), 4);
	assert_string_equal(f[3].name, "lib_delta");
	symbolizer__stats(s, &st);
	assert_int_equal(st.modules_cached, 2); /* both pinned by the call */
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, addrs, 1, f), 1);
	symbolizer__stats(s, &st);
	assert_int_equal(st.modules_cached, 1);
	reap(&c);
	symbolizer__free(s);
}

static void test_vdso_and_special(void **state)
{
	struct symbolizer *s = new_direct(0, 0);
	struct sym_frame f[2];
	uint64_t addrs[2];
	void *h, *cg;
	int local = 0;

	h = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
	cg = h ? dlsym(h, "__vdso_clock_gettime") : NULL;
#ifdef __x86_64__
	assert_non_null(cg); /* every x86-64 process has a vDSO */
#endif
	addrs[0] = cg ? (uint64_t)(uintptr_t)cg + 1 : 0x10;
	addrs[1] = (uint64_t)(uintptr_t)&local;
	symbolizer__resolve_user(s, (uint32_t)getpid(), addrs, 2, f);
	if (cg) {
		assert_string_equal(f[0].module, "[vdso]");
		assert_true(f[0].resolved);
		assert_non_null(strstr(f[0].name, "clock_gettime"));
		assert_int_equal(f[0].offset, 1);
	}
	assert_false(f[1].resolved);
	assert_int_equal(f[1].reason, SYM_SPECIAL);
	assert_string_equal(f[1].module, "[stack]");
	if (h)
		dlclose(h);
	symbolizer__free(s);
}

static void test_bad_elf_mapping(void **state)
{
	struct symbolizer *s = new_direct(0, 0);
	struct symbolizer_stats st;
	struct sym_frame f;
	char path[512];
	uint64_t a;
	void *p;
	int fd;

	snprintf(path, sizeof(path), "%s/not-elf.bin", tmpdir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "this is not an ELF file, padding padding padding\n", 49), 49);
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	assert_true(p != MAP_FAILED);
	a = (uint64_t)(uintptr_t)p + 16;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(symbolizer__resolve_user(s, (uint32_t)getpid(), &a, 1, &f), 0);
		assert_int_equal(f.reason, SYM_BAD_ELF);
		assert_string_equal(f.module, "not-elf.bin");
		assert_int_equal(f.offset, 16);
	}
	symbolizer__stats(s, &st);
	assert_int_equal(st.bad_elf, 1); /* opened once, remembered */
	munmap(p, 4096);
	symbolizer__free(s);
}

static void test_deleted_binary(void **state)
{
	struct symbolizer *s = new_direct(0, 0);
	struct sym_frame f;
	struct child c;
	char path[512];

	NEED_CC();
	assert_int_equal(run("cp %s/prog_pie %s/prog_gone", tmpdir, tmpdir), 0);
	assert_int_equal(spawn("prog_gone", &c), 0);
	path_of(path, sizeof(path), "prog_gone");
	assert_int_equal(unlink(path), 0);
	/* map_files still names the deleted file. */
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, &c.alpha, 1, &f), 1);
	assert_string_equal(f.name, "sym_alpha");
	assert_string_equal(f.module, "prog_gone");
	reap(&c);
	symbolizer__free(s);
}

static int refuse_file(void *ctx, uint32_t pid, uint64_t start, uint64_t end, const char *path)
{
	(*(int *)ctx)++;
	return -EPERM;
}

static void test_open_refused(void **state)
{
	struct symbolizer_opts o;
	struct symbolizer *s;
	struct symbolizer_stats st;
	struct sym_frame f;
	uint64_t a = (uint64_t)(uintptr_t)&test_open_refused;
	int calls = 0;

	symbolizer__direct_opts(&o);
	o.open_mapped_file = refuse_file;
	o.ctx = &calls;
	s = symbolizer__new(&o);
	assert_non_null(s);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(symbolizer__resolve_user(s, (uint32_t)getpid(), &a, 1, &f), 0);
		assert_int_equal(f.reason, SYM_OPEN_FAILED);
		assert_string_equal(f.module, "test_symbolizer");
	}
	assert_int_equal(calls, 1); /* not asked again for the same mapping */
	symbolizer__stats(s, &st);
	assert_int_equal(st.by_reason[SYM_OPEN_FAILED], 3);
	symbolizer__free(s);
}

static void test_format_and_opts(void **state)
{
	struct sym_frame f = { .name = "a;b\nc", .module = "m", .resolved = true };
	struct symbolizer_opts o;
	unsigned char big[sizeof(struct symbolizer_opts) + 8];
	char buf[8];

	assert_int_equal(sym_frame__format(&f, buf, sizeof(buf)), 5);
	assert_string_equal(buf, "a_b_c");
	f = (struct sym_frame){ .name = "[unknown]", .module = "libfoo.so", .offset = 0x1234 };
	assert_int_equal(sym_frame__format(&f, buf, sizeof(buf)), -ENOSPC);
	assert_string_equal(buf, "libfoo.");
	assert_int_equal(sym_frame__format(&f, buf, 0), -EINVAL);
	assert_int_equal(sym_frame__format(NULL, buf, sizeof(buf)), -EINVAL);
	assert_string_equal(sym_reason__str(SYM_NO_SYMBOL), "no_symbol");
	assert_string_equal(sym_reason__str(SYM_REASON_MAX), "invalid");

	/* Option struct sizing (libbpf rules). */
	o = (struct symbolizer_opts){ .sz = 4 };
	errno = 0;
	assert_null(symbolizer__new(&o));
	assert_int_equal(errno, EINVAL);
	assert_null(symbolizer__new(NULL));
	memset(big, 0, sizeof(big));
	symbolizer__direct_opts((struct symbolizer_opts *)big);
	((struct symbolizer_opts *)big)->sz = sizeof(big);
	{
		struct symbolizer *s = symbolizer__new((struct symbolizer_opts *)big);

		assert_non_null(s);
		symbolizer__free(s);
	}
	big[sizeof(big) - 1] = 1;
	assert_null(symbolizer__new((struct symbolizer_opts *)big));
	/* Old, shorter callers are fine. */
	symbolizer__direct_opts(&o);
	o.sz = offsetof(struct symbolizer_opts, max_modules);
	{
		struct symbolizer *s = symbolizer__new(&o);

		assert_non_null(s);
		assert_int_equal(symbolizer__resolve_user(s, 1, NULL, 1, NULL), -EINVAL);
		assert_int_equal(symbolizer__resolve_user(s, 1, NULL, 0, NULL), 0);
		symbolizer__free(s);
	}
	symbolizer__free(NULL);
	symbolizer__forget_pid(NULL, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maps_parse_line),
		cmocka_unit_test(test_proc_maps_read),
		cmocka_unit_test(test_kallsyms_synthetic),
		cmocka_unit_test(test_kernel_real),
		cmocka_unit_test(test_kernel_unavailable),
		cmocka_unit_test(test_kernel_via_callback),
		cmocka_unit_test(test_elf_syms_file),
		cmocka_unit_test(test_symbol_versions),
		cmocka_unit_test(test_elf_malformed),
		cmocka_unit_test(test_resolve_pie),
		cmocka_unit_test(test_resolve_nopie),
		cmocka_unit_test(test_resolve_shared_lib),
		cmocka_unit_test(test_stripped),
		cmocka_unit_test(test_no_mapping_and_refresh),
		cmocka_unit_test(test_shared_module),
		cmocka_unit_test(test_eviction),
		cmocka_unit_test(test_vdso_and_special),
		cmocka_unit_test(test_bad_elf_mapping),
		cmocka_unit_test(test_deleted_binary),
		cmocka_unit_test(test_open_refused),
		cmocka_unit_test(test_format_and_opts),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
