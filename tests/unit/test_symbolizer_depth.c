/*
 * Symbolizer depth: separate debug files (build id, .gnu_debuglink
 * with CRC), stripped Go binaries (.gopclntab), C++ and Rust demangling, perf
 * maps for JIT code, memfd and anonymous labels.  Real binaries built by the
 * group setup with cc, objcopy, strip, g++, go and rustc (each test skips
 * with "SKIP: <tool>" when its tool is missing); the programs print the
 * addresses of known functions and wait on stdin, the tests resolve those
 * addresses through the symbolizer's direct callbacks, with a temp dir as
 * the "target root" where debug files and perf maps are installed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include "symbolizer/debuginfod.h"
#include "common/debugpath.h"
#include "symbolizer/demangle.h"
#include "symbolizer/elf_syms.h"
#include "symbolizer/gopclntab.h"
#include "symbolizer/perfmap.h"
#include "symbolizer/symbolizer.h"
#include "analyzer/python/py_stack.h"
#include "tests/unit/sym_testlib.h"

static bool have_cc, have_gxx, have_go, have_rust;

static const char c_src[] =
	"#include <stdio.h>\n"
	"#include <unistd.h>\n"
	"volatile int sink;\n"
	"__attribute__((noinline)) int dbg_alpha(int x)\n"
	"{ for (int i = 0; i < x; i++) sink += i * x; return sink; }\n"
	"static __attribute__((noinline)) int dbg_local(int x) { sink += x; return sink; }\n"
	"int main(void)\n"
	"{\n"
	"	char c;\n"
	"	dbg_alpha(3); dbg_local(1);\n"
	"	printf(\"alpha %p\\n\", (void *)((char *)&dbg_alpha + 5));\n"
	"	printf(\"local %p\\n\", (void *)((char *)&dbg_local + 2));\n"
	"	printf(\"ready\\n\");\n"
	"	fflush(stdout);\n"
	"	while (read(0, &c, 1) > 0)\n"
	"		;\n"
	"	return 0;\n"
	"}\n";

static const char cxx_src[] =
	"#include <cstdio>\n"
	"#include <unistd.h>\n"
	"volatile long sink;\n"
	"namespace outer { namespace inner {\n"
	"template <typename T> __attribute__((noinline)) T scale(T x) { sink += x; return x * 3; }\n"
	"template <typename T> struct Widget {\n"
	"	static __attribute__((noinline)) int run(int n) { sink += n + sizeof(T); return (int)sink; }\n"
	"};\n"
	"} }\n"
	"int main()\n"
	"{\n"
	"	char c;\n"
	"	outer::inner::scale<long>(2); outer::inner::Widget<char>::run(1);\n"
	"	std::printf(\"alpha %p\\n\", (void *)((char *)&outer::inner::scale<long> + 4));\n"
	"	std::printf(\"beta %p\\n\", (void *)((char *)&outer::inner::Widget<char>::run + 4));\n"
	"	std::printf(\"ready\\n\");\n"
	"	std::fflush(stdout);\n"
	"	while (read(0, &c, 1) > 0)\n"
	"		;\n"
	"	return 0;\n"
	"}\n";

static const char go_src[] =
	"package main\n"
	"import (\n"
	"	\"fmt\"\n"
	"	\"os\"\n"
	"	\"reflect\"\n"
	")\n"
	"var sink int\n"
	"//go:noinline\n"
	"func goAlpha(x int) int { for i := 0; i < x; i++ { sink += i * x }; return sink }\n"
	"type Gadget struct{ n int }\n"
	"//go:noinline\n"
	"func (g *Gadget) Spin(x int) int { g.n += x; return g.n }\n"
	"func main() {\n"
	"	goAlpha(3)\n"
	"	g := &Gadget{}\n"
	"	g.Spin(1)\n"
	"	fmt.Printf(\"alpha %x\\n\", reflect.ValueOf(goAlpha).Pointer()+4)\n"
	"	fmt.Printf(\"beta %x\\n\", reflect.ValueOf((*Gadget).Spin).Pointer()+4)\n"
	"	fmt.Printf(\"ready\\n\")\n"
	"	b := make([]byte, 1)\n"
	"	for { if n, _ := os.Stdin.Read(b); n <= 0 { break } }\n"
	"}\n";

static const char rust_src[] =
	"use std::io::Read;\n"
	"mod rmod {\n"
	"    #[inline(never)]\n"
	"    pub fn ralpha(x: u64) -> u64 { let mut s = 0u64; for i in 0..x { s = s.wrapping_add(i * x); } s }\n"
	"}\n"
	"fn main() {\n"
	"    let f: fn(u64) -> u64 = rmod::ralpha;\n"
	/* printed, so the call stays (std::hint::black_box is Rust 1.66; Debian 12 has 1.63) */
	"    println!(\"r {}\", f(3));\n"
	"    println!(\"alpha {:x}\", f as usize + 4);\n"
	"    println!(\"ready\");\n"
	"    let mut b = [0u8; 1];\n"
	"    while std::io::stdin().read(&mut b).map(|n| n > 0).unwrap_or(false) {}\n"
	"}\n";

/* ---- helpers ------------------------------------------------------------------ */

static struct symbolizer *new_direct(const char *root, bool no_demangle)
{
	struct symbolizer_opts o;
	struct symbolizer *s;

	symbolizer__direct_opts(&o);
	o.ctx = (void *)root;
	o.no_demangle = no_demangle;
	o.perf_map_refresh_ms = -1;
	s = symbolizer__new(&o);
	assert_non_null(s);
	return s;
}

/* A fixture whose tool is missing or whose build failed skips with the reason (the build's own words). */
static char why_go[512], why_rust[512];
#define NEED(flag, what, why) do { if (!(flag)) { \
	fprintf(stderr, "SKIP: %s not available%s%s\n", what, (why)[0] ? ": " : "", why); skip(); } } while (0)

/* The last lines of a fixture's build log, for NEED. */
static void read_why(char *why, size_t len, const char *log)
{
	char p[512];
	FILE *f;
	size_t n;

	snprintf(p, sizeof(p), "%s/%s", tmpdir, log);
	f = fopen(p, "r");
	snprintf(why, len, "its build failed");
	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	if (ftell(f) > (long)len - 1)
		fseek(f, -(long)len + 1, SEEK_END);
	else
		fseek(f, 0, SEEK_SET);
	n = fread(why, 1, len - 1, f);
	why[n] = 0;
	for (char *c = why; *c; c++)
		if (*c == '\n')
			*c = ' ';
	fclose(f);
}

/* ---- setup ---------------------------------------------------------------------- */

static int group_setup(void **state)
{
	const char *flags = "-O1 -g -fno-inline -fno-optimize-sibling-calls -fno-omit-frame-pointer -w";
	char p[512];

	if (make_tmpdir("/tmp/ember-symdepth-XXXXXX"))
		return -1;
	have_cc = tool("cc --version") && tool("objcopy --version") && tool("strip --version");
	have_gxx = tool("g++ --version");
	have_go = tool("go version");
	have_rust = tool("rustc --version") || tool("$HOME/.cargo/bin/rustc --version");
	if (have_cc) {
		path_of(p, sizeof(p), "dbg.c");
		if (write_file(p, c_src) ||
		    run("cd %s && cc %s -fPIE -pie -Wl,--build-id=sha1 -o dbg_full dbg.c && "
			"objcopy --only-keep-debug dbg_full dbg.debug && "
			"cp dbg_full dbg_stripped && strip --strip-all dbg_stripped && "
			"objcopy --add-gnu-debuglink=dbg.debug dbg_stripped && "
			/* Another build (different build id) for the mismatch test. */
			"cc %s -fPIE -pie -DOTHER=1 -Wl,--build-id=sha1 -o dbg_other dbg.c -Wl,-z,norelro && "
			"objcopy --only-keep-debug dbg_other other.debug",
			tmpdir, flags, flags))
			have_cc = false;
	}
	if (have_gxx) {
		path_of(p, sizeof(p), "cxx.cc");
		if (write_file(p, cxx_src) || run("cd %s && g++ %s -o cxx_prog cxx.cc", tmpdir, flags))
			have_gxx = false;
	}
	if (have_go) {
		path_of(p, sizeof(p), "gomain.go");
		/* -s -w: no .symtab, no DWARF; strip too, as distributions do. */
		if (write_file(p, go_src) ||
		    run("cd %s && HOME=%s GOCACHE=%s/gocache GOFLAGS= GO111MODULE=off CGO_ENABLED=0 "
			"go build -ldflags='-s -w' -o go_stripped gomain.go >go.log 2>&1 && strip go_stripped",
			tmpdir, tmpdir, tmpdir)) {
			have_go = false;
			read_why(why_go, sizeof(why_go), "go.log");
		}
	}
	if (have_rust) {
		path_of(p, sizeof(p), "rmain.rs");
		if (write_file(p, rust_src) ||
		    run("cd %s && PATH=$PATH:$HOME/.cargo/bin rustc -O -C debuginfo=0 -o rust_prog rmain.rs "
			">rust.log 2>&1", tmpdir)) {
			have_rust = false;
			read_why(why_rust, sizeof(why_rust), "rust.log");
		}
	}
	return 0;
}

/* ---- pure parsers ---------------------------------------------------------------- */

static void test_perf_map_parse(void **state)
{
	static const char text[] =
		"7f0000001000 40 LazyCompile:*hot /app/x.js:3\n"
		"0x7f0000002000 0x20 Stub:CEntry\n"
		"garbage\n"
		"7f0000003000 0 zero_size\n"
		"ffffffffffffff00 1000 wraps\n"
		"7f0000001000 10 newer_at_same_start\n"
		"7f0000000f00 400 covering_older\n"
		"7f0000004000 10 crlf\r\n"
		"7f0000005000 10";
	struct perf_map_stats st;
	struct perf_map *pm;
	const char *name;
	uint64_t off, start, size;
	size_t nlen;
	int fd;

	assert_int_equal(perf_map__parse_line("1 2 a b", 7, &start, &size, &name, &nlen), 0);
	assert_int_equal(start, 1);
	assert_int_equal(size, 2);
	assert_int_equal(nlen, 3);
	assert_int_equal(perf_map__parse_line("1 2 ", 4, &start, &size, &name, &nlen), -EINVAL);
	assert_int_equal(perf_map__parse_line("x 2 a", 5, &start, &size, &name, &nlen), -EINVAL);
	assert_int_equal(perf_map__parse_line("11111111111111111 2 a", 21, &start, &size, &name, &nlen), -EINVAL);

	fd = memfd_with(text, strlen(text));
	assert_true(fd >= 0);
	pm = perf_map__read(fd, 0, 0);
	close(fd);
	assert_non_null(pm);
	perf_map__stats(pm, &st);
	assert_int_equal(st.lines, 9);
	assert_int_equal(st.bad_lines, 4); /* garbage, zero size, wrap, no name */
	assert_int_equal(perf_map__count(pm), 4); /* same start: newest only */

	/* Newest covering entry wins: the later, larger entry covers 0x...1000+0x20. */
	assert_int_equal(perf_map__lookup(pm, 0x7f0000001020, &name, &off), 0);
	assert_string_equal(name, "covering_older");
	assert_int_equal(perf_map__lookup(pm, 0x7f0000002008, &name, &off), 0);
	assert_string_equal(name, "Stub:CEntry");
	assert_int_equal(off, 8);
	assert_int_equal(perf_map__lookup(pm, 0x7f0000004001, &name, &off), 0);
	assert_string_equal(name, "crlf");
	assert_int_equal(perf_map__lookup(pm, 0x7f0000002020, &name, &off), -ENOENT);
	assert_int_equal(perf_map__lookup(pm, 0x10, &name, &off), -ENOENT);
	perf_map__free(pm);

	/* Caps: entries and bytes. */
	fd = memfd_with(text, strlen(text));
	pm = perf_map__read(fd, 2, 0);
	close(fd);
	assert_non_null(pm);
	perf_map__stats(pm, &st);
	assert_int_equal(st.dropped, 3);
	assert_int_equal(perf_map__count(pm), 2);
	perf_map__free(pm);
}

static void test_debugpath(void **state)
{
	static const uint8_t id[] = { 0xab, 0xcd, 0xef, 0x01 };
	char buf[256], longname[300];
	uint32_t nspid = 0;

	assert_int_equal(debugpath__build_id(buf, sizeof(buf), "/proc/7/root", id, 4),
			 (int)strlen("/proc/7/root/usr/lib/debug/.build-id/ab/cdef01.debug"));
	assert_string_equal(buf, "/proc/7/root/usr/lib/debug/.build-id/ab/cdef01.debug");
	assert_int_equal(debugpath__build_id(buf, sizeof(buf), "/r", id, 1), -EINVAL);
	assert_int_equal(debugpath__build_id(buf, 10, "/r", id, 4), -ENAMETOOLONG);

	assert_true(debugpath__valid_link_name("libc.so.6.debug"));
	assert_false(debugpath__valid_link_name(""));
	assert_false(debugpath__valid_link_name(".."));
	assert_false(debugpath__valid_link_name("."));
	assert_false(debugpath__valid_link_name("a/b"));
	assert_false(debugpath__valid_link_name("a b"));
	assert_false(debugpath__valid_link_name("a\x01"));
	memset(longname, 'a', 256);
	longname[256] = '\0';
	assert_false(debugpath__valid_link_name(longname));
	longname[255] = '\0';
	assert_true(debugpath__valid_link_name(longname));

	assert_true(debugpath__link(buf, sizeof(buf), "/R", "/usr/bin/prog", "prog.debug", 0) > 0);
	assert_string_equal(buf, "/R/usr/bin/prog.debug");
	assert_true(debugpath__link(buf, sizeof(buf), "/R", "/usr/bin/prog", "prog.debug", 1) > 0);
	assert_string_equal(buf, "/R/usr/bin/.debug/prog.debug");
	assert_true(debugpath__link(buf, sizeof(buf), "/R", "/usr/bin/prog", "prog.debug", 2) > 0);
	assert_string_equal(buf, "/R/usr/lib/debug/usr/bin/prog.debug");
	assert_int_equal(debugpath__link(buf, sizeof(buf), "/R", "/usr/bin/prog", "../etc/shadow", 0), -EINVAL);
	assert_int_equal(debugpath__link(buf, sizeof(buf), "/R", "/a/../b/prog", "p.debug", 0), -EINVAL);
	assert_int_equal(debugpath__link(buf, sizeof(buf), "/R", "rel/prog", "p.debug", 0), -EINVAL);
	assert_int_equal(debugpath__link(buf, sizeof(buf), "/R", "/p", "p.debug", 3), -EINVAL);

	assert_int_equal(debugpath__perf_map(buf, sizeof(buf), "/proc/9/root", 12), (int)strlen("/proc/9/root/tmp/perf-12.map"));
	assert_string_equal(buf, "/proc/9/root/tmp/perf-12.map");
	assert_int_equal(debugpath__parse_nspid("Name:\tx\nNSpid:\t4242\t17\nX:\t1\n", 29, &nspid), 0);
	assert_int_equal(nspid, 17);
	assert_int_equal(debugpath__parse_nspid("NSpid:\t4242", 11, &nspid), 0);
	assert_int_equal(nspid, 4242);
	assert_int_equal(debugpath__parse_nspid("NSpid:\t99999999999\n", 19, &nspid), -ENOENT);
	assert_int_equal(debugpath__parse_nspid("NSpid:\tx1\n", 10, &nspid), -ENOENT);
	assert_int_equal(debugpath__parse_nspid("Pid:\t1\n", 7, &nspid), -ENOENT);
}

static void test_demangle_cache(void **state)
{
	struct dm_scratch scratch = { 0 };
	struct dm_stats st = { 0 };
	struct dm_cache *c;
	const char *a, *b;
	char *d;

	d = demangle__dup("_ZN3foo3barIiE3bazEv");
	assert_non_null(d);
	assert_string_equal(d, "foo::bar<int>::baz()");
	free(d);
	d = demangle__dup("_ZN4core3fmt5write17h0123456789abcdefE"); /* legacy Rust: hash hidden */
	assert_non_null(d);
	assert_string_equal(d, "core::fmt::write");
	free(d);
	assert_null(demangle__dup("main"));
	assert_null(demangle__dup("_Zgarbage"));

	c = dm_cache__new(0);
	assert_non_null(c);
	a = dm_cache__get(c, 3, "_ZN3foo3barEv", &scratch, &st);
	b = dm_cache__get(c, 3, "_ZN3foo3barEv", &scratch, &st);
	assert_string_equal(a, "foo::bar()");
	assert_ptr_equal(a, b);            /* cached: demangled once */
	assert_int_equal(st.demangled, 1);
	assert_string_equal(dm_cache__get(c, 4, "plain_c", &scratch, &st), "plain_c");
	assert_string_equal(dm_cache__get(c, 5, "_Zjunk", &scratch, &st), "_Zjunk");
	assert_string_equal(dm_cache__get(c, 5, "_Zjunk", &scratch, &st), "_Zjunk");
	assert_int_equal(st.not_mangled, 1); /* the negative answer is cached too */
	dm_cache__free(c);

	/* A tiny budget: names still come back right, through the scratch list. */
	c = dm_cache__new(64);
	assert_non_null(c);
	for (int i = 0; i < 100; i++)
		assert_string_equal(dm_cache__get(c, (size_t)i, "_ZN1a1bEv", &scratch, &st), "a::b()");
	assert_true(st.scratch >= 100);
	assert_true(dm_cache__memory(c) <= 64);
	dm_scratch__clear(&scratch);
	free(scratch.v);
	dm_cache__free(c);
}

/* A hand-made Go 1.18 pclntab: two functions, then the same with broken offsets. */
static size_t make_pclntab(uint8_t *b, size_t cap)
{
	uint64_t hdr[8] = { 0 };
	uint32_t magic = 0xfffffff0u;
	size_t names = 8 + 64, pcln = names + 32;
	uint32_t ftab[5], func[4];

	memset(b, 0, cap);
	memcpy(b, &magic, 4);
	b[6] = 1;
	b[7] = 8;
	hdr[0] = 2;          /* nfunc */
	hdr[2] = 0x401000;   /* textStart */
	hdr[3] = names;      /* funcnameOffset */
	hdr[7] = pcln;       /* pclnOffset */
	memcpy(b + 8, hdr, sizeof(hdr));
	memcpy(b + names, "main.one\0main.two\0", 18);
	ftab[0] = 0x10; ftab[1] = 24;    /* entryoff, funcoff */
	ftab[2] = 0x40; ftab[3] = 32;
	ftab[4] = 0x80;                  /* end */
	memcpy(b + pcln, ftab, sizeof(ftab));
	func[0] = 0x10; func[1] = 0;     /* nameoff 0 */
	func[2] = 0x40; func[3] = 9;
	memcpy(b + pcln + 24, func, sizeof(func));
	return pcln + 40;
}

struct go_seen { int n; uint64_t entry[4], end[4]; char name[4][32]; };

static int go_cb(void *ctx, uint64_t entry, uint64_t end, const char *name, size_t len)
{
	struct go_seen *g = ctx;

	if (g->n < 4) {
		g->entry[g->n] = entry;
		g->end[g->n] = end;
		snprintf(g->name[g->n], sizeof(g->name[0]), "%.*s", (int)len, name);
	}
	g->n++;
	return 0;
}

static void test_gopclntab_synthetic(void **state)
{
	uint8_t b[256];
	size_t len = make_pclntab(b, sizeof(b));
	struct gopclntab_stats st;
	struct go_seen g = { 0 };
	uint32_t v;

	assert_int_equal(gopclntab__parse(b, len, 0, false, 0, go_cb, &g, &st), 2);
	assert_int_equal(g.n, 2);
	assert_string_equal(g.name[0], "main.one");
	assert_int_equal(g.entry[0], 0x401010);
	assert_int_equal(g.end[0], 0x401040);
	assert_string_equal(g.name[1], "main.two");
	assert_int_equal(g.end[1], 0x401080);

	/* Every truncation is rejected or parsed partially, never read past the end. */
	for (size_t l = 0; l < len; l++) {
		uint8_t *copy = malloc(l ? l : 1);

		memcpy(copy, b, l);
		memset(&g, 0, sizeof(g));
		(void)gopclntab__parse(copy, l, 0, false, 0, go_cb, &g, &st);
		free(copy);
	}
	/* Name offset outside the section: counted, not followed. */
	v = 0x7fffffff;
	memcpy(b + 8 + 64 + 32 + 24 + 4, &v, 4);
	memset(&g, 0, sizeof(g));
	assert_int_equal(gopclntab__parse(b, len, 0, false, 0, go_cb, &g, &st), 1);
	assert_int_equal(st.bad_funcs, 1);
	/* Old layouts are refused. */
	v = 0xfffffffau;
	memcpy(b, &v, 4);
	assert_int_equal(gopclntab__parse(b, len, 0, false, 0, go_cb, &g, &st), -EPROTONOSUPPORT);
	v = 0x12345678;
	memcpy(b, &v, 4);
	assert_int_equal(gopclntab__parse(b, len, 0, false, 0, go_cb, &g, &st), -ENOEXEC);
}

/* ---- separate debug files ------------------------------------------------------------ */

/* Installs src as <root>/usr/lib/debug/.build-id/xx/rest.debug of binary bin. */
static void install_by_build_id(const char *root, const char *bin, const char *src)
{
	char hex[130];

	assert_int_equal(oracle_build_id(bin, hex, sizeof(hex)), 0);
	assert_int_equal(run("mkdir -p '%s/usr/lib/debug/.build-id/%.2s' && cp '%s' '%s/usr/lib/debug/.build-id/%.2s/%s.debug'",
			     root, hex, src, root, hex, hex + 2), 0);
}

static void test_debug_by_build_id(void **state)
{
	struct symbolizer_stats st;
	struct sym_frame f[2];
	struct child c;
	uint64_t addrs[2];
	char root[512], bin[512], dbg[512];
	struct symbolizer *s;

	NEED(have_cc, "cc/objcopy/strip", "");
	snprintf(root, sizeof(root), "%s/root-bid", tmpdir);
	snprintf(bin, sizeof(bin), "%s/dbg_stripped", tmpdir);
	snprintf(dbg, sizeof(dbg), "%s/dbg.debug", tmpdir);
	install_by_build_id(root, bin, dbg);

	assert_int_equal(spawn("dbg_stripped", &c), 0);
	addrs[0] = c.alpha;
	addrs[1] = c.local;

	/* Without the debug file: nothing (no .symtab, and these are not exported). */
	s = new_direct("/nonexistent-root", false);
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, addrs, 2, f), 0);
	assert_int_equal(f[0].reason, SYM_NO_SYMBOL);
	symbolizer__free(s);

	s = new_direct(root, false);
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, addrs, 2, f), 2);
	assert_string_equal(f[0].name, "dbg_alpha");
	assert_int_equal(f[0].offset, 5);
	assert_string_equal(f[0].module, "dbg_stripped");
	assert_string_equal(f[1].name, "dbg_local"); /* a static function: only the debug file has it */
	assert_int_equal(f[1].offset, 2);
	symbolizer__stats(s, &st);
	assert_int_equal(st.debug_files_loaded, 1);
	assert_int_equal(st.debug_files_rejected, 0);
	symbolizer__free(s);
	reap(&c);
}

static void test_debug_wrong_build_id(void **state)
{
	struct symbolizer_stats st;
	struct sym_frame f;
	struct child c;
	char root[512], bin[512], dbg[512];
	struct symbolizer *s;

	NEED(have_cc, "cc/objcopy/strip", "");
	/* Another build's debug file under this binary's build id path: rejected. */
	snprintf(root, sizeof(root), "%s/root-wrong", tmpdir);
	snprintf(bin, sizeof(bin), "%s/dbg_stripped", tmpdir);
	snprintf(dbg, sizeof(dbg), "%s/other.debug", tmpdir);
	install_by_build_id(root, bin, dbg);
	assert_int_equal(spawn("dbg_stripped", &c), 0);
	s = new_direct(root, false);
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, &c.alpha, 1, &f), 0);
	assert_false(f.resolved);
	symbolizer__stats(s, &st);
	assert_int_equal(st.debug_files_loaded, 0);
	assert_true(st.debug_files_rejected >= 1);
	symbolizer__free(s);
	reap(&c);
}

static void test_debuglink(void **state)
{
	struct symbolizer_stats st;
	struct sym_frame f;
	struct child c;
	char root[512];
	struct symbolizer *s;

	NEED(have_cc, "cc/objcopy/strip", "");
	/* <root><dir>/.debug/dbg.debug, no build-id tree: found through .gnu_debuglink. */
	snprintf(root, sizeof(root), "%s/root-link", tmpdir);
	assert_int_equal(run("mkdir -p '%s%s/.debug' && cp '%s/dbg.debug' '%s%s/.debug/dbg.debug'", root, tmpdir,
			     tmpdir, root, tmpdir), 0);
	assert_int_equal(spawn("dbg_stripped", &c), 0);
	s = new_direct(root, false);
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, &c.local, 1, &f), 1);
	assert_string_equal(f.name, "dbg_local");
	symbolizer__stats(s, &st);
	assert_int_equal(st.debug_files_loaded, 1);
	symbolizer__free(s);

	/* Same file with one byte appended: same build id, wrong CRC -> rejected. */
	assert_int_equal(run("printf x >> '%s%s/.debug/dbg.debug'", root, tmpdir), 0);
	s = new_direct(root, false);
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, &c.local, 1, &f), 0);
	assert_false(f.resolved);
	symbolizer__stats(s, &st);
	assert_int_equal(st.debug_files_loaded, 0);
	assert_int_equal(st.debug_files_rejected, 1);
	symbolizer__free(s);
	reap(&c);
}

static bool port_open(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (fd >= 0)
		close(fd);
	return ok;
}

/* A debuginfod server of our own: python3's http.server over a /buildid/<id>/debuginfo tree, loopback only. */
static void test_debuginfod(void **state)
{
	struct symbolizer_stats st;
	struct symbolizer_opts o;
	struct symbolizer *s;
	struct debuginfod *d;
	struct sym_frame f;
	struct child c;
	char hex[130], bin[512], srv[512], cache[512], url[64], port_s[16];
	pid_t py = -1;
	int port = 0, stat;

	NEED(have_cc, "cc/objcopy/strip", "");
	NEED(tool("python3 --version"), "python3", "");
	snprintf(bin, sizeof(bin), "%s/dbg_stripped", tmpdir);
	snprintf(srv, sizeof(srv), "%s/dinfod", tmpdir);
	snprintf(cache, sizeof(cache), "%s/dinfod-cache", tmpdir);
	assert_int_equal(oracle_build_id(bin, hex, sizeof(hex)), 0);
	assert_int_equal(run("mkdir -p '%s/buildid/%s' && cp '%s/dbg.debug' '%s/buildid/%s/debuginfo'", srv, hex,
			     tmpdir, srv, hex), 0);
	d = debuginfod__new("http://127.0.0.1:1", cache);
	if (!d && errno == ENOENT) {
		fprintf(stderr, "SKIP: libdebuginfod.so.1 not available\n");
		skip();
	}
	debuginfod__free(d);

	for (int attempt = 0; attempt < 5 && !port; attempt++) {
		int p = 20000 + (int)((getpid() * 7 + attempt * 131) % 30000);

		if (port_open(p))
			continue;
		snprintf(port_s, sizeof(port_s), "%d", p);
		py = fork();
		assert_true(py >= 0);
		if (py == 0) {
			int dn = open("/dev/null", O_RDWR);

			dup2(dn, 1);
			dup2(dn, 2);
			execlp("python3", "python3", "-m", "http.server", port_s, "--bind", "127.0.0.1", "--directory",
			       srv, (char *)NULL);
			_exit(127);
		}
		for (int i = 0; i < 100 && !port_open(p); i++)
			usleep(50000);
		if (port_open(p))
			port = p;
		else {
			kill(py, SIGTERM);
			waitpid(py, &stat, 0);
		}
	}
	assert_true(port > 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	d = debuginfod__new(url, cache);
	assert_non_null(d);

	assert_int_equal(spawn("dbg_stripped", &c), 0);
	/* No local debug file lookups (ctx is the client here): only the server has it. */
	symbolizer__direct_opts(&o);
	o.ctx = d;
	o.open_debuginfod = debuginfod__open_cb;
	o.open_perf_map = NULL;
	o.open_debug_build_id = NULL;
	o.open_debuglink = NULL;
	s = symbolizer__new(&o);
	assert_non_null(s);
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, &c.local, 1, &f), 1);
	assert_string_equal(f.name, "dbg_local");
	symbolizer__stats(s, &st);
	assert_int_equal(st.debuginfod_fetches, 1);
	assert_int_equal(st.debug_files_loaded, 1);
	symbolizer__free(s);
	/* Downloaded into the cache. */
	assert_int_equal(run("test -s '%s/%s/debuginfo'", cache, hex), 0);
	debuginfod__free(d);
	kill(py, SIGTERM);
	waitpid(py, &stat, 0);
	reap(&c);
}

/* ---- Go, C++, Rust ----------------------------------------------------------------------- */

static void test_go_stripped(void **state)
{
	struct symbolizer_stats st;
	struct sym_frame f[2];
	struct child c;
	uint64_t addrs[2];
	struct symbolizer *s;
	char cmd[600];

	NEED(have_go, "go (Debian golang-go)", why_go);
	/* Really stripped: no .symtab section. */
	snprintf(cmd, sizeof(cmd), "readelf -S '%s/go_stripped' | grep -q '\\.symtab'", tmpdir);
	assert_int_not_equal(system(cmd), 0);
	assert_int_equal(spawn("go_stripped", &c), 0);
	addrs[0] = c.alpha;
	addrs[1] = c.beta;
	s = new_direct("/nonexistent-root", false);
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, addrs, 2, f), 2);
	assert_string_equal(f[0].name, "main.goAlpha");
	assert_int_equal(f[0].offset, 4);
	assert_string_equal(f[1].name, "main.(*Gadget).Spin");
	assert_int_equal(f[1].offset, 4);
	symbolizer__stats(s, &st);
	assert_int_equal(st.go_modules, 1);
	symbolizer__free(s);
	reap(&c);
}

static void test_cxx_templates(void **state)
{
	struct sym_frame f[2];
	struct child c;
	uint64_t addrs[2];
	struct symbolizer *s;

	NEED(have_gxx, "g++", "");
	assert_int_equal(spawn("cxx_prog", &c), 0);
	addrs[0] = c.alpha;
	addrs[1] = c.beta;
	s = new_direct(NULL, false);
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, addrs, 2, f), 2);
	assert_string_equal(f[0].name, "long outer::inner::scale<long>(long)");
	assert_int_equal(f[0].offset, 4);
	assert_string_equal(f[1].name, "outer::inner::Widget<char>::run(int)");
	/* Again: from the cache, same text. */
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, addrs, 1, f), 1);
	assert_string_equal(f[0].name, "long outer::inner::scale<long>(long)");
	symbolizer__free(s);

	s = new_direct(NULL, true);
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, addrs, 1, f), 1);
	assert_string_equal(f[0].name, "_ZN5outer5inner5scaleIlEET_S2_");
	symbolizer__free(s);
	reap(&c);
}

static void test_rust_mangled(void **state)
{
	struct sym_frame f;
	struct child c;
	struct symbolizer *s;

	NEED(have_rust, "rustc", why_rust);
	assert_int_equal(spawn("rust_prog", &c), 0);
	s = new_direct(NULL, false);
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)c.pid, &c.alpha, 1, &f), 1);
	/* Legacy (_ZN..17h<hash>E) or v0 (_R...) mangling, both demangled, hash hidden. */
	assert_string_equal(f.name, "rmain::rmod::ralpha");
	assert_int_equal(f.offset, 4);
	symbolizer__free(s);
	reap(&c);
}

/* ---- perf maps, memfd, anonymous ------------------------------------------------------------ */

static void write_perf_map(const char *root, const char *text)
{
	char p[600];

	snprintf(p, sizeof(p), "%s/tmp", root);
	mkdir(root, 0755);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/tmp/perf-%d.map", root, (int)getpid());
	assert_int_equal(write_file(p, text), 0);
}

static void unlink_perf_map(const char *root)
{
	char p[600];

	snprintf(p, sizeof(p), "%s/tmp/perf-%d.map", root, (int)getpid());
	assert_int_equal(unlink(p), 0);
}

/*
 * Inlined JIT methods (jvm/ember_jvmti.c): a perf map name holding ';' is a
 * scope, outermost first, and becomes one frame per method, innermost first;
 * empty parts are skipped, a name of nothing but ';' stays one frame, and a
 * scope of a couple of hundred parts fills the stack to its bound and no further.
 */
static void test_perf_map_scopes(void **state)
{
	static struct py_stack_frame out[EMBER_MAX_STACK_DEPTH];
	uint64_t st[PYS_MAX] = { 0 }, ips[4];
	char root[512], *text, *p;
	struct symbolizer *s;
	uint8_t *jit;
	size_t cap = 8192;
	int n;

	(void)state;
	snprintf(root, sizeof(root), "%s/root-scopes", tmpdir);
	jit = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(jit != MAP_FAILED);
	text = malloc(cap);
	assert_non_null(text);
	p = text + snprintf(text, cap, "%" PRIx64 " 100 a.B::outer\n%" PRIx64 " 10 a.B::outer;a.B::middle;a.B::leaf\n"
			    "%" PRIx64 " 10 ;;;\n%" PRIx64 " 10 x;;y;\n%" PRIx64 " 10 ",
			    (uint64_t)(uintptr_t)jit, (uint64_t)(uintptr_t)jit + 0x20, (uint64_t)(uintptr_t)jit + 0x40,
			    (uint64_t)(uintptr_t)jit + 0x60, (uint64_t)(uintptr_t)jit + 0x80);
	for (int i = 0; i < 200; i++)   /* 890 bytes: within the reader's 1024 */
		p += sprintf(p, "m%d;", i);
	strcpy(p, "\n");
	write_perf_map(root, text);
	free(text);
	s = new_direct(root, false);
	/* Innermost first; the others are return addresses (looked up one byte back). */
	ips[0] = (uint64_t)(uintptr_t)jit + 0x25;
	ips[1] = (uint64_t)(uintptr_t)jit + 0x41;
	ips[2] = (uint64_t)(uintptr_t)jit + 0x61;
	ips[3] = (uint64_t)(uintptr_t)jit + 0x81;
	n = py_stack__resolve(s, NULL, (uint32_t)getpid(), ips, 4, out, st);
	assert_int_equal(n, EMBER_MAX_STACK_DEPTH);
	assert_string_equal(out[0].text, "a.B::leaf");
	assert_string_equal(out[1].text, "a.B::middle");
	assert_string_equal(out[2].text, "a.B::outer");
	assert_string_equal(out[3].text, "___");
	assert_string_equal(out[4].text, "y");
	assert_string_equal(out[5].text, "x");
	/* The long scope, innermost (last written) first, cut at the bound. */
	assert_string_equal(out[6].text, "m199");
	assert_string_equal(out[EMBER_MAX_STACK_DEPTH - 1].text, "m79");
	for (int i = 0; i < n; i++)
		assert_true(out[i].resolved && !out[i].python);
	/* Without the scope, the body's own name. */
	ips[0] = (uint64_t)(uintptr_t)jit + 0x10;
	assert_int_equal(py_stack__resolve(s, NULL, (uint32_t)getpid(), ips, 1, out, st), 1);
	assert_string_equal(out[0].text, "a.B::outer");
	symbolizer__free(s);
	munmap(jit, 4096);
}

static void test_perf_map_jit(void **state)
{
	struct symbolizer_stats st;
	struct sym_frame f[3];
	uint64_t addrs[3];
	char root[512], text[512], buf[128];
	struct symbolizer *s;
	uint8_t *jit, *mf;
	int fd;

	snprintf(root, sizeof(root), "%s/root-jit", tmpdir);
	jit = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(jit != MAP_FAILED);
	/* JIT code in a memfd (double-mapped code heap): not an ELF, named by the map too. */
	fd = memfd_with("not an elf, jit code here", 25);
	assert_true(fd >= 0);
	mf = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	close(fd);
	assert_true(mf != MAP_FAILED);
	snprintf(text, sizeof(text), "%" PRIx64 " 100 LazyCompile:*hotLoop /app/x.js:3\n"
		 "%" PRIx64 " 40 Builtin:ArgumentsAdaptor\n",
		 (uint64_t)(uintptr_t)jit, (uint64_t)(uintptr_t)mf);
	write_perf_map(root, text);

	s = new_direct(root, false);
	addrs[0] = (uint64_t)(uintptr_t)jit + 0x10;
	addrs[1] = (uint64_t)(uintptr_t)mf + 4;
	addrs[2] = (uint64_t)(uintptr_t)jit + 0x1000; /* not in the map (yet) */
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)getpid(), addrs, 3, f), 2);
	assert_string_equal(f[0].name, "LazyCompile:*hotLoop /app/x.js:3");
	assert_int_equal(f[0].offset, 0x10);
	assert_string_equal(f[0].module, "[anon]");
	assert_string_equal(f[1].name, "Builtin:ArgumentsAdaptor");
	assert_int_equal(f[1].offset, 4);
	assert_false(f[2].resolved);
	assert_int_equal(f[2].reason, SYM_ANON);
	assert_int_equal(sym_frame__format(&f[2], buf, sizeof(buf)), (int)strlen("[anon]+0x1000"));
	assert_string_equal(buf, "[anon]+0x1000");

	/* The JIT appends: a miss re-reads the map (no rate limit in this test). */
	snprintf(text + strlen(text), sizeof(text) - strlen(text), "%" PRIx64 " 20 LazyCompile:later\n",
		 (uint64_t)(uintptr_t)jit + 0x1000);
	write_perf_map(root, text);
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)getpid(), &addrs[2], 1, f), 1);
	assert_string_equal(f[0].name, "LazyCompile:later");
	symbolizer__stats(s, &st);
	assert_int_equal(st.perf_map_resolved, 3);
	assert_int_equal(st.perf_map_reads, 2);
	assert_true(st.perf_map_bytes > 0);
	symbolizer__free(s);

	/* Rate limit: a second miss within the interval does not re-read. */
	{
		struct symbolizer_opts o;

		symbolizer__direct_opts(&o);
		o.ctx = root;
		o.perf_map_refresh_ms = 60000;
		s = symbolizer__new(&o);
		assert_non_null(s);
		addrs[0] = (uint64_t)(uintptr_t)jit + 0x1800;
		for (int i = 0; i < 3; i++)
			assert_int_equal(symbolizer__resolve_user(s, (uint32_t)getpid(), addrs, 1, f), 0);
		symbolizer__stats(s, &st);
		assert_int_equal(st.perf_map_reads, 1);
		assert_int_equal(st.perf_map_refresh_limited, 2);
		symbolizer__free(s);
	}

	/* No perf map at all: clearly labelled, never a crash. */
	s = new_direct("/nonexistent-root", false);
	addrs[0] = (uint64_t)(uintptr_t)jit + 0x10;
	addrs[1] = (uint64_t)(uintptr_t)mf + 4;
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)getpid(), addrs, 2, f), 0);
	assert_int_equal(f[0].reason, SYM_ANON);
	assert_int_equal(f[1].reason, SYM_BAD_ELF);
	assert_int_equal(sym_frame__format(&f[1], buf, sizeof(buf)), (int)strlen("memfd:symtest+0x4"));
	assert_string_equal(buf, "memfd:symtest+0x4");
	symbolizer__free(s);
	munmap(jit, 8192);
	munmap(mf, 4096);
}

/*
 * A task's stacks are symbolized when it is drained, which may be after its
 * process exited, when the broker can no longer open anything of it: the
 * perf map read at preload and kept by symbolizer__refresh_perf_map() while
 * the process lived must name its JIT frames then.
 */
struct gone_ctx {
	const char *root;
	bool gone;
};

static int gone_open_maps(void *ctx, uint32_t pid)
{
	const struct gone_ctx *g = ctx;

	return g->gone ? -ESRCH : symbolizer__direct_open_maps((void *)g->root, pid);
}

static int gone_open_mapped_file(void *ctx, uint32_t pid, uint64_t start, uint64_t end, const char *path)
{
	const struct gone_ctx *g = ctx;

	return g->gone ? -ESRCH : symbolizer__direct_open_mapped_file((void *)g->root, pid, start, end, path);
}

static int gone_open_perf_map(void *ctx, uint32_t pid)
{
	const struct gone_ctx *g = ctx;

	return g->gone ? -ESRCH : symbolizer__direct_open_perf_map((void *)g->root, pid);
}

static struct symbolizer *new_gone(struct gone_ctx *g, int64_t refresh_ms)
{
	struct symbolizer_opts o = { .sz = sizeof(o) };
	struct symbolizer *s;

	o.ctx = g;
	o.open_maps = gone_open_maps;
	o.open_mapped_file = gone_open_mapped_file;
	o.open_perf_map = gone_open_perf_map;
	o.perf_map_refresh_ms = refresh_ms;
	s = symbolizer__new(&o);
	assert_non_null(s);
	return s;
}

static void test_perf_map_after_exit(void **state)
{
	struct gone_ctx g = { 0 };
	struct symbolizer_stats st;
	struct sym_frame f[2];
	uint64_t addrs[2];
	char root[512], text[512];
	const char *early;
	struct symbolizer *s;
	uint8_t *jit;

	(void)state;
	snprintf(root, sizeof(root), "%s/root-gone", tmpdir);
	g.root = root;
	jit = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(jit != MAP_FAILED);
	snprintf(text, sizeof(text), "%" PRIx64 " 100 JS:*early /app/x.js:1\n", (uint64_t)(uintptr_t)jit);
	write_perf_map(root, text);
	addrs[0] = (uint64_t)(uintptr_t)jit + 0x10;
	addrs[1] = (uint64_t)(uintptr_t)jit + 0x110;

	s = new_gone(&g, -1);
	assert_true(symbolizer__preload(s, (uint32_t)getpid()) >= 0);
	/* The JIT names more code while the process runs; the runner's tick reads it. */
	snprintf(text + strlen(text), sizeof(text) - strlen(text), "%" PRIx64 " 20 JS:*later /app/x.js:9\n",
		 (uint64_t)(uintptr_t)jit + 0x100);
	write_perf_map(root, text);
	assert_int_equal(symbolizer__refresh_perf_map(s, (uint32_t)getpid()), 1);
	g.gone = true;
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)getpid(), addrs, 2, f), 2);
	assert_string_equal(f[0].name, "JS:*early /app/x.js:1");
	assert_string_equal(f[1].name, "JS:*later /app/x.js:9");
	early = f[0].name;

	/* An unchanged file is looked at, not parsed again: the names stay where they were. */
	g.gone = false;
	assert_int_equal(symbolizer__refresh_perf_map(s, (uint32_t)getpid()), 1);
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)getpid(), addrs, 1, f), 1);
	assert_ptr_equal(f[0].name, early);
	symbolizer__stats(s, &st);
	assert_int_equal(st.perf_map_reads, 3);
	symbolizer__free(s);

	/* A map written after the preload (a JIT agent loaded later): anonymous code asks for looks. */
	unlink_perf_map(root);
	s = new_gone(&g, -1);
	assert_true(symbolizer__preload(s, (uint32_t)getpid()) >= 0);
	write_perf_map(root, text);
	assert_int_equal(symbolizer__refresh_perf_map(s, (uint32_t)getpid()), 1);
	g.gone = true;
	assert_int_equal(symbolizer__resolve_user(s, (uint32_t)getpid(), addrs, 2, f), 2);
	assert_string_equal(f[1].name, "JS:*later /app/x.js:9");
	g.gone = false;
	symbolizer__free(s);

	/* Within perf_map_refresh_ms of the last read, the tick does not look. */
	s = new_gone(&g, 60000);
	assert_true(symbolizer__preload(s, (uint32_t)getpid()) >= 0);
	assert_int_equal(symbolizer__refresh_perf_map(s, (uint32_t)getpid()), 0);
	symbolizer__free(s);

	/* No perf map and no JIT code: the tick costs nothing, as for a pid never seen. */
	munmap(jit, 8192);
	g.root = "/nonexistent-root";
	s = new_gone(&g, -1);
	assert_true(symbolizer__preload(s, (uint32_t)getpid()) >= 0);
	assert_int_equal(symbolizer__refresh_perf_map(s, (uint32_t)getpid()), 0);
	assert_int_equal(symbolizer__refresh_perf_map(s, 1), 0);
	symbolizer__stats(s, &st);
	assert_int_equal(st.perf_map_reads, 1);
	symbolizer__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_perf_map_parse),
		cmocka_unit_test(test_debugpath),
		cmocka_unit_test(test_demangle_cache),
		cmocka_unit_test(test_gopclntab_synthetic),
		cmocka_unit_test(test_debug_by_build_id),
		cmocka_unit_test(test_debug_wrong_build_id),
		cmocka_unit_test(test_debuglink),
		cmocka_unit_test(test_debuginfod),
		cmocka_unit_test(test_go_stripped),
		cmocka_unit_test(test_cxx_templates),
		cmocka_unit_test(test_rust_mangled),
		cmocka_unit_test(test_perf_map_jit),
		cmocka_unit_test(test_perf_map_after_exit),
		cmocka_unit_test(test_perf_map_scopes),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
