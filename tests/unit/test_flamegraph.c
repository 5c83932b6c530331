/* Unit tests for exporter/flamegraph: trie, folded I/O, bounds, SVG. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <ftw.h>
#include <poll.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/config.h"
#include "exporter/backend.h"
#include "exporter/flamegraph.h"

/* ---- helpers --------------------------------------------------------------- */

static char *folded(const struct flamegraph *fg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(flamegraph__write_folded(fg, f), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static char *svg(const struct flamegraph *fg, const struct flamegraph_svg_opts *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(flamegraph__write_svg(fg, f, o), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* Adds a stack written as "a;b;c" (split here, not by the folded reader). */
static void add(struct flamegraph *fg, const char *stack, uint64_t w)
{
	char *copy = strdup(stack), *save = NULL;
	const char *frames[64];
	size_t n = 0;

	assert_non_null(copy);
	for (char *t = strtok_r(copy, ";", &save); t; t = strtok_r(NULL, ";", &save)) {
		assert_true(n < 64);
		frames[n++] = t;
	}
	assert_int_equal(flamegraph__add(fg, frames, n, w), 0);
	free(copy);
}

static size_t count_substr(const char *h, const char *needle)
{
	size_t n = 0, k = strlen(needle);

	for (const char *p = strstr(h, needle); p; p = strstr(p + k, needle))
		n++;
	return n;
}

/* Sum of the counts of folded lines, and of those with a given frame. */
static uint64_t sum_lines(const char *text, const char *frame)
{
	uint64_t sum = 0;
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n'), *sp;
		char line[8192];
		size_t n;

		assert_non_null(nl);
		n = (size_t)(nl - p);
		assert_true(n < sizeof(line));
		memcpy(line, p, n);
		line[n] = 0;
		sp = strrchr(line, ' ');
		assert_non_null(sp);
		if (!frame || strstr(line, frame))
			sum += strtoull(sp + 1, NULL, 10);
		p = nl + 1;
	}
	return sum;
}

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rnd(void)
{
	/* xorshift64*: deterministic test data */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

/* Frame geometry of the <g> whose tooltip starts with "name\n". */
struct geom {
	double x, y, w;
	uint64_t weight;
	char label[256];
};

static int find_frame(const char *s, const char *name, struct geom *g)
{
	char key[512];
	const char *t, *gs, *r, *tx, *end;

	snprintf(key, sizeof(key), "<title>%s\n", name);
	t = strstr(s, key);
	if (!t)
		return -1;
	assert_null(strstr(t + 1, key));	/* one <g> per frame */
	gs = t;
	while (gs > s && strncmp(gs, "<g data-w=\"", 11))
		gs--;
	assert_true(gs > s);
	g->weight = strtoull(gs + 11, NULL, 10);
	r = strstr(t, "<rect ");
	assert_non_null(r);
	assert_int_equal(sscanf(r, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\"", &g->x, &g->y, &g->w), 3);
	tx = strstr(r, "<text ");
	tx = strchr(tx, '>') + 1;
	end = strstr(tx, "</text>");
	assert_true((size_t)(end - tx) < sizeof(g->label));
	memcpy(g->label, tx, (size_t)(end - tx));
	g->label[end - tx] = 0;
	return 0;
}

/* Runs xmllint on the text; skips the test when xmllint is missing. */
static void assert_well_formed(const char *text)
{
	char path[] = "/tmp/ember-fg-XXXXXX", cmd[128];
	int fd = mkstemp(path), rc;
	size_t len = strlen(text);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	if (system("command -v xmllint >/dev/null 2>&1") != 0) {
		unlink(path);
		fprintf(stderr, "SKIP: xmllint not installed (deploy/install-deps.sh)\n");
		skip();
	}
	snprintf(cmd, sizeof(cmd), "xmllint --noout %s", path);
	rc = system(cmd);
	unlink(path);
	assert_true(WIFEXITED(rc));
	assert_int_equal(WEXITSTATUS(rc), 0);
}

/* ---- trie and folded output ------------------------------------------------- */

static void test_merge_prefixes(void **state)
{
	struct flamegraph *fg = flamegraph__new(0);
	struct flamegraph_stats st;
	char *out;

	(void)state;
	assert_non_null(fg);
	add(fg, "a;b;c", 1);
	add(fg, "a;b;d", 2);
	add(fg, "a;e", 3);
	add(fg, "a;b;c", 4);
	add(fg, "a;b", 0);	/* weight 0: no-op */
	flamegraph__stats(fg, &st);
	assert_int_equal(st.nodes, 5);	/* a b c d e */
	assert_int_equal(st.unique_stacks, 3);
	assert_int_equal(st.stacks, 4);
	assert_int_equal(flamegraph__total(fg), 10);
	out = folded(fg);
	assert_string_equal(out, "a;b;c 5\na;b;d 2\na;e 3\n");
	free(out);
	/* An inner node gains self weight: a line of its own. */
	add(fg, "a;b", 7);
	flamegraph__stats(fg, &st);
	assert_int_equal(st.nodes, 5);
	assert_int_equal(st.unique_stacks, 4);
	out = folded(fg);
	assert_string_equal(out, "a;b 7\na;b;c 5\na;b;d 2\na;e 3\n");
	free(out);
	flamegraph__free(fg);
}

static void test_folded_sorted_summed(void **state)
{
	struct flamegraph *fg = flamegraph__new(0);
	char *out;

	(void)state;
	add(fg, "main;zeta;work", 5);
	add(fg, "main;alpha", 1);
	add(fg, "libc_start;main;alpha", 2);
	add(fg, "main;zeta;work", 6);
	add(fg, "main", 3);
	add(fg, "main;alpha;x", 4);
	add(fg, "Main", 9);	/* bytewise: 'M' < 'l' < 'm' */
	add(fg, "main;alpha", 10);
	out = folded(fg);
	assert_string_equal(out,
			    "Main 9\n"
			    "libc_start;main;alpha 2\n"
			    "main 3\n"
			    "main;alpha 11\n"
			    "main;alpha;x 4\n"
			    "main;zeta;work 11\n");
	free(out);
	flamegraph__free(fg);

	/* Frame-wise order: a stack's extensions come right after it. */
	fg = flamegraph__new(0);
	add(fg, "a!", 2);
	add(fg, "a;x", 1);
	add(fg, "a", 3);
	out = folded(fg);
	assert_string_equal(out, "a 3\na;x 1\na! 2\n");
	free(out);
	flamegraph__free(fg);
}

static const char *const vocab[] = {
	"main", "start_thread", "__libc_start_main", "do_work", "std::vector<int>::push_back(int const&)",
	"schedule_[k]", "do_syscall_64_[k]", "[unknown]", "java.lang.Thread.run", "µ-service",
	"read", "write", "épée", "handle request", "x", "libfoo.so+0x1234", "operator new(unsigned long)",
};

static void build_random(struct flamegraph *fg, int nstacks, uint64_t *ret_total)
{
	uint64_t total = 0;

	for (int i = 0; i < nstacks; i++) {
		const char *frames[40];
		size_t n = 1 + rnd() % 30;
		uint64_t w = 1 + rnd() % 1000;

		for (size_t k = 0; k < n; k++)
			frames[k] = vocab[rnd() % (sizeof(vocab) / sizeof(vocab[0]))];
		assert_int_equal(flamegraph__add(fg, frames, n, w), 0);
		total += w;
	}
	*ret_total = total;
}

static void test_roundtrip(void **state)
{
	struct flamegraph *a = flamegraph__new(0), *b = flamegraph__new(0), *c = flamegraph__new(0);
	struct flamegraph_stats sa, sb, sc;
	uint64_t total;
	char *ta, *tb, *tc;
	FILE *f;

	(void)state;
	build_random(a, 3000, &total);
	assert_int_equal(flamegraph__total(a), total);
	ta = folded(a);
	assert_int_equal(sum_lines(ta, NULL), total);
	/* buffer reader */
	assert_int_equal(flamegraph__load_folded_buf(b, ta, strlen(ta)), 0);
	tb = folded(b);
	assert_string_equal(ta, tb);
	/* stream reader, with lines split across its reads */
	f = fmemopen(ta, strlen(ta), "r");
	assert_non_null(f);
	assert_int_equal(flamegraph__load_folded(c, f), 0);
	fclose(f);
	tc = folded(c);
	assert_string_equal(ta, tc);
	flamegraph__stats(a, &sa);
	flamegraph__stats(b, &sb);
	flamegraph__stats(c, &sc);
	assert_int_equal(sa.nodes, sb.nodes);
	assert_int_equal(sa.unique_stacks, sb.unique_stacks);
	assert_int_equal(sb.lines, sb.unique_stacks);
	assert_int_equal(sc.lines, sa.unique_stacks);
	assert_int_equal(sb.bad_lines, 0);
	assert_int_equal(flamegraph__total(b), total);
	assert_int_equal(flamegraph__total(c), total);
	free(ta);
	free(tb);
	free(tc);
	flamegraph__free(a);
	flamegraph__free(b);
	flamegraph__free(c);
}

static void test_escaping(void **state)
{
	struct flamegraph *fg = flamegraph__new(0), *back = flamegraph__new(0);
	const char *frames[] = { "a;b", "line\nbreak", "cr\rx", "", "\xff\xc0 bad", "ok", "tab\there" };
	struct flamegraph_stats st;
	char *out, *out2;

	(void)state;
	assert_int_equal(flamegraph__add(fg, frames, 7, 7), 0);
	out = folded(fg);
	assert_string_equal(out, "a:b;line?break;cr?x;[unknown];\xef\xbf\xbd\xef\xbf\xbd bad;ok;tab?here 7\n");
	assert_int_equal(count_substr(out, "\n"), 1);
	flamegraph__stats(fg, &st);
	assert_int_equal(st.sanitized_frames, 6);
	assert_int_equal(st.long_frames, 0);
	/* The rule is idempotent: the line reads back to the same stack. */
	assert_int_equal(flamegraph__load_folded_buf(back, out, strlen(out)), 0);
	out2 = folded(back);
	assert_string_equal(out, out2);
	flamegraph__stats(back, &st);
	assert_int_equal(st.sanitized_frames, 0);
	free(out);
	free(out2);
	flamegraph__free(fg);
	flamegraph__free(back);
}

static void test_long_frames(void **state)
{
	struct flamegraph *fg = flamegraph__new(0);
	struct flamegraph_stats st;
	char *big = malloc(5001), *edge = malloc(FLAMEGRAPH_MAX_FRAME_LEN + 2), *out;
	const char *frames[2];

	(void)state;
	memset(big, 'x', 5000);
	big[5000] = 0;
	/* A 2-byte character straddling the limit is dropped whole. */
	memset(edge, 'y', FLAMEGRAPH_MAX_FRAME_LEN - 1);
	memcpy(edge + FLAMEGRAPH_MAX_FRAME_LEN - 1, "\xc3\xa9", 3);
	frames[0] = big;
	frames[1] = edge;
	assert_int_equal(flamegraph__add(fg, frames, 2, 1), 0);
	flamegraph__stats(fg, &st);
	assert_int_equal(st.long_frames, 2);
	assert_int_equal(st.sanitized_frames, 2);
	out = folded(fg);
	assert_int_equal(strlen(out), FLAMEGRAPH_MAX_FRAME_LEN + 1 + FLAMEGRAPH_MAX_FRAME_LEN - 1 + 3);
	assert_int_equal(strspn(out, "x"), FLAMEGRAPH_MAX_FRAME_LEN);
	assert_int_equal(out[FLAMEGRAPH_MAX_FRAME_LEN], ';');
	assert_int_equal(strspn(out + FLAMEGRAPH_MAX_FRAME_LEN + 1, "y"), FLAMEGRAPH_MAX_FRAME_LEN - 1);
	assert_string_equal(out + 2 * FLAMEGRAPH_MAX_FRAME_LEN, " 1\n");
	free(out);
	free(big);
	free(edge);
	flamegraph__free(fg);
}

static void test_node_cap_exact(void **state)
{
	/* 16 nodes: 14 for frames, one for inner "[truncated]", one for the root's. */
	struct flamegraph *fg = flamegraph__new(16);
	struct flamegraph_stats st;
	char stack[32], *out;
	uint64_t total = 0;

	(void)state;
	for (int i = 0; i < 20; i++) {
		snprintf(stack, sizeof(stack), "r;c%02d", i);
		add(fg, stack, (uint64_t)i + 1);
		total += (uint64_t)i + 1;
	}
	flamegraph__stats(fg, &st);
	assert_int_equal(st.nodes, 15);		/* r, c00..c12, r;[truncated] */
	assert_int_equal(st.truncated_stacks, 7);	/* c13..c19 */
	assert_int_equal(st.truncated_weight, 14 + 15 + 16 + 17 + 18 + 19 + 20);
	add(fg, "x;y", 5);		/* no room under the root but its own slot */
	add(fg, "z", 7);
	add(fg, "r;c03;deeper", 2);	/* no room for c03;[truncated]: root's */
	add(fg, "r;c04", 100);		/* existing stacks still count normally */
	total += 5 + 7 + 2 + 100;
	flamegraph__stats(fg, &st);
	assert_int_equal(st.nodes, 16);
	assert_int_equal(st.truncated_stacks, 10);
	assert_int_equal(st.truncated_weight, 119 + 14);
	assert_int_equal(flamegraph__total(fg), total);
	out = folded(fg);
	assert_true(!strncmp(out, "[truncated] 14\nr;[truncated] 119\nr;c00 1\n", 39));
	assert_non_null(strstr(out, "\nr;[truncated] 119\n"));
	assert_non_null(strstr(out, "\nr;c04 105\n"));
	assert_int_equal(sum_lines(out, NULL), total);
	assert_int_equal(sum_lines(out, "[truncated]"), st.truncated_weight);
	free(out);

	flamegraph__clear(fg);
	flamegraph__stats(fg, &st);
	assert_int_equal(st.nodes, 0);
	assert_int_equal(st.truncated_weight, 0);
	assert_int_equal(flamegraph__total(fg), 0);
	add(fg, "after;clear", 3);
	out = folded(fg);
	assert_string_equal(out, "after;clear 3\n");
	free(out);
	flamegraph__free(fg);
}

static void test_node_cap_random(void **state)
{
	static const size_t caps[] = { 1, 2, 3, 17, 100, 1000 };

	(void)state;
	for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
		struct flamegraph *fg = flamegraph__new(caps[k]);
		struct flamegraph_stats st;
		uint64_t total;
		char *out;

		assert_non_null(fg);
		build_random(fg, 2000, &total);
		flamegraph__stats(fg, &st);
		assert_true(st.nodes <= caps[k]);
		assert_true(st.truncated_stacks > 0);
		assert_int_equal(flamegraph__total(fg), total);
		out = folded(fg);
		assert_int_equal(sum_lines(out, NULL), total);
		assert_int_equal(sum_lines(out, "[truncated]"), st.truncated_weight);
		free(out);
		flamegraph__free(fg);
	}
}

static void test_depth_limit(void **state)
{
	struct flamegraph *fg = flamegraph__new(0), *back = flamegraph__new(0);
	const char **frames = calloc(1500, sizeof(*frames));
	struct flamegraph_stats st;
	char *out, *out2;

	(void)state;
	for (int i = 0; i < 1500; i++)
		frames[i] = (i % 2) ? "odd" : "even";
	assert_int_equal(flamegraph__add(fg, frames, 1500, 9), 0);
	flamegraph__stats(fg, &st);
	assert_int_equal(st.deep_stacks, 1);
	assert_int_equal(st.nodes, FLAMEGRAPH_MAX_DEPTH + 1);
	out = folded(fg);
	assert_int_equal(count_substr(out, ";"), FLAMEGRAPH_MAX_DEPTH);
	assert_non_null(strstr(out, ";[truncated] 9\n"));
	assert_int_equal(flamegraph__load_folded_buf(back, out, strlen(out)), 0);
	out2 = folded(back);
	assert_string_equal(out, out2);
	free(out);
	free(out2);
	free(frames);
	flamegraph__free(fg);
	flamegraph__free(back);
}

static void test_bad_input(void **state)
{
	static const char *const bad[] = {
		"", "\n", "abc", "a 12x", "a -1", "a +1", "a 1 ", " 5", "a 0x10",
		"a 18446744073709551616",	/* UINT64_MAX + 1 */
		"a 000000000000000000001",	/* 21 digits */
		"a\t5", "a 5\n\n",
	};
	struct flamegraph *fg = flamegraph__new(0);
	const char *frames[] = { "x", NULL };
	struct flamegraph_stats st;
	char *out;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(flamegraph__add_folded_line(fg, bad[i], strlen(bad[i])), -EINVAL);
	assert_int_equal(flamegraph__add(fg, frames, 0, 1), -EINVAL);
	assert_int_equal(flamegraph__add(fg, frames, 2, 1), -EINVAL);
	assert_int_equal(flamegraph__total(fg), 0);
	flamegraph__stats(fg, &st);
	assert_int_equal(st.nodes, 0);

	assert_int_equal(flamegraph__add_folded_line(fg, "a;b 5\n", 6), 0);
	assert_int_equal(flamegraph__add_folded_line(fg, "a;b 5\r\n", 7), 0);
	assert_int_equal(flamegraph__add_folded_line(fg, "a 18446744073709551615", 22), 0);
	assert_int_equal(flamegraph__add_folded_line(fg, "a b 1 3", 7), 0);	/* frame "a b 1" */
	assert_int_equal(flamegraph__add_folded_line(fg, "z 0", 3), 0);		/* no-op */
	/* Not NUL-terminated: only len bytes count. */
	assert_int_equal(flamegraph__add_folded_line(fg, "q 2XXXX", 3), 0);
	out = folded(fg);
	assert_string_equal(out, "a 18446744073709551615\na;b 10\na b 1 3\nq 2\n");
	free(out);
	flamegraph__stats(fg, &st);
	assert_int_equal(flamegraph__total(fg), UINT64_MAX);	/* saturated sum */
	assert_int_equal(st.saturated, 3);	/* the last three additions */
	add(fg, "a", 1);
	flamegraph__stats(fg, &st);
	assert_int_equal(st.saturated, 4);
	flamegraph__free(fg);

	assert_null(flamegraph__new((size_t)FLAMEGRAPH_MAX_NODES_LIMIT + 1));
	assert_int_equal(errno, EINVAL);
	flamegraph__free(NULL);
}

static void test_load_stream(void **state)
{
	struct flamegraph *fg = flamegraph__new(0);
	struct flamegraph_stats st;
	FILE *f = tmpfile();
	char *out;

	(void)state;
	assert_non_null(f);
	fputs("main;a 1\n\nmain;b 2\r\nbroken line\nmain;a 3\n\r\n", f);
	/* A line past FLAMEGRAPH_MAX_LINE is one bad line, whatever its length. */
	for (size_t i = 0; i < FLAMEGRAPH_MAX_LINE + 100000; i++)
		putc(i % 7 ? 'x' : ';', f);
	fputs(" 5\n", f);
	fputs("main;c 4", f);	/* last line without '\n' */
	rewind(f);
	assert_int_equal(flamegraph__load_folded(fg, f), 0);
	fclose(f);
	flamegraph__stats(fg, &st);
	assert_int_equal(st.lines, 4);
	assert_int_equal(st.bad_lines, 2);
	out = folded(fg);
	assert_string_equal(out, "main;a 4\nmain;b 2\nmain;c 4\n");
	free(out);

	/* The buffer reader agrees, with embedded NUL bytes sanitised. */
	flamegraph__clear(fg);
	assert_int_equal(flamegraph__load_folded_buf(fg, "n\0l;x 2\nbad\n", 12), 0);
	flamegraph__stats(fg, &st);
	assert_int_equal(st.lines, 1);
	assert_int_equal(st.bad_lines, 1);
	out = folded(fg);
	assert_string_equal(out, "n?l;x 2\n");
	free(out);
	flamegraph__free(fg);
}

/* ---- SVG -------------------------------------------------------------------- */

static void test_svg_widths(void **state)
{
	struct flamegraph *fg = flamegraph__new(0);
	struct flamegraph_svg_opts o = { .sz = sizeof(o), .width = 1000 };
	struct geom all, m, foo, bar, baz;
	char *s;

	(void)state;
	add(fg, "main;foo", 1);
	add(fg, "main;bar", 2);
	add(fg, "main;baz", 1);
	s = svg(fg, &o);
	assert_int_equal(find_frame(s, "all", &all), 0);
	assert_int_equal(find_frame(s, "main", &m), 0);
	assert_int_equal(find_frame(s, "foo", &foo), 0);
	assert_int_equal(find_frame(s, "bar", &bar), 0);
	assert_int_equal(find_frame(s, "baz", &baz), 0);
	/* One <g>, one <rect> per visible frame (plus the background rect). */
	assert_int_equal(count_substr(s, "<g data-w="), 5);
	assert_int_equal(count_substr(s, "<rect "), 6);
	assert_int_equal(m.weight, 4);
	assert_int_equal(foo.weight, 1);
	assert_true(fabs(all.w - 980) < 0.01);
	assert_true(fabs(m.w - all.w) < 0.01);
	assert_true(fabs(foo.w - 0.25 * m.w) < 0.01);
	assert_true(fabs(baz.w - 0.25 * m.w) < 0.01);
	assert_true(fabs(bar.w - 0.50 * m.w) < 0.01);
	/* Children sorted by name, packed from the parent's left edge. */
	assert_true(fabs(bar.x - m.x) < 0.01);
	assert_true(fabs(baz.x - (bar.x + bar.w)) < 0.01);
	assert_true(fabs(foo.x - (baz.x + baz.w)) < 0.01);
	/* Root at the bottom, one row per level. */
	assert_true(fabs(all.y - m.y - 16) < 0.01);
	assert_true(fabs(m.y - foo.y - 16) < 0.01);
	assert_true(fabs(bar.y - foo.y) < 0.01);
	assert_string_equal(foo.label, "foo");
	assert_well_formed(s);
	free(s);
	flamegraph__free(fg);
}

static void test_svg_escaping(void **state)
{
	struct flamegraph *fg = flamegraph__new(0);
	const char *frames[] = { "main", "<script>&\"x\"", "it's\x01\x7f", "\xff\xfe", "ok" };
	struct flamegraph_svg_opts o = {
		.sz = sizeof(o), .title = "T<i>tle & \"co\"", .subtitle = "sub\x02<b>",
		.unit = "\xc2\xb5s\xff",
	};
	char *s;

	(void)state;
	assert_int_equal(flamegraph__add(fg, frames, 5, 3), 0);
	s = svg(fg, &o);
	assert_null(strstr(s, "<script>&"));
	assert_null(strstr(s, "\"x\""));
	assert_null(strstr(s, "T<i>"));
	assert_null(strstr(s, "<b>"));
	assert_null(strchr(s, '\x01'));
	assert_null(strchr(s, '\x02'));
	assert_null(strchr(s, '\x7f'));
	assert_null(strstr(s, "\xff"));
	/* The only "<script" are our two script elements. */
	assert_int_equal(count_substr(s, "<script"), 2);
	assert_non_null(strstr(s, "<title>&lt;script&gt;&amp;&quot;x&quot;\n3 \xc2\xb5s\xef\xbf\xbd (100.00%)</title>"));
	assert_non_null(strstr(s, "<title>it&apos;s??\n"));	/* sanitised in the trie */
	assert_non_null(strstr(s, "<title>\xef\xbf\xbd\xef\xbf\xbd\n"));
	assert_non_null(strstr(s, ">T&lt;i&gt;tle &amp; &quot;co&quot;</text>"));
	assert_non_null(strstr(s, ">sub&lt;b&gt;</text>"));
	assert_well_formed(s);
	free(s);
	flamegraph__free(fg);
}

static void test_svg_min_width_and_labels(void **state)
{
	struct flamegraph *fg = flamegraph__new(0);
	struct geom m, big, lng;
	char *s, name[128];

	(void)state;
	add(fg, "main;big", 1000000);
	add(fg, "main;tiny", 1);		/* 0.001 px wide at 1200 px */
	add(fg, "main;tiny;deeper", 1);
	memset(name, 'n', 100);
	strcpy(name + 100, "_end");
	{
		const char *f[] = { "main", name };

		assert_int_equal(flamegraph__add(fg, f, 2, 100000), 0);	/* ~107 px */
	}
	s = svg(fg, NULL);
	assert_null(strstr(s, "<title>tiny"));
	assert_null(strstr(s, "<title>deeper"));
	assert_int_equal(count_substr(s, "<g data-w="), 4);
	assert_int_equal(find_frame(s, "main", &m), 0);
	assert_int_equal(m.weight, 1100002);	/* hidden weight still counted */
	assert_int_equal(find_frame(s, "big", &big), 0);
	assert_string_equal(big.label, "big");
	assert_int_equal(find_frame(s, name, &lng), 0);
	/* (w - 6) / 7.3 px per character, the last two of them "..". */
	{
		size_t n = (size_t)((lng.w - 6) / 7.3);

		if (n < 3) {
			assert_string_equal(lng.label, "");
		} else {
			assert_int_equal(strlen(lng.label), n);
			assert_string_equal(lng.label + n - 2, "..");
		}
	}
	assert_well_formed(s);
	free(s);

	/* Label boundary: 1180 px for 1180 units, 1 unit = 1 px. */
	{
		struct flamegraph *px = flamegraph__new(0);
		struct geom fits, cut;

		add(px, "abcdefghij", 80);	/* (80 - 6) / 7.3 = 10.1: 10 chars fit */
		add(px, "klmnopqrst", 78);	/* 9.8: 9 chars, "klmnopq.." */
		add(px, "zz", 1022);
		s = svg(px, NULL);
		assert_int_equal(find_frame(s, "abcdefghij", &fits), 0);
		assert_int_equal(find_frame(s, "klmnopqrst", &cut), 0);
		assert_true(fabs(fits.w - 80) < 0.01);
		assert_string_equal(fits.label, "abcdefghij");
		assert_string_equal(cut.label, "klmnopq..");
		free(s);
		flamegraph__free(px);
	}

	{
		struct flamegraph_svg_opts o = { .sz = sizeof(o), .min_width = 0.0001 };

		s = svg(fg, &o);
		assert_non_null(strstr(s, "<title>tiny\n"));
		assert_int_equal(count_substr(s, "<g data-w="), 6);
		free(s);
	}
	flamegraph__free(fg);
}

static void test_svg_script_and_text(void **state)
{
	struct flamegraph *fg = flamegraph__new(0);
	struct flamegraph_svg_opts o = {
		.sz = sizeof(o), .title = "On-CPU ember", .subtitle = "pid 42", .unit = "\xc2\xb5s",
	};
	struct geom k, u;
	unsigned r, g, b;
	char *s, *p;

	(void)state;
	add(fg, "main;do_syscall_64_[k]", 3);
	add(fg, "main;user_fn", 1);
	s = svg(fg, &o);
	assert_true(!strncmp(s, "<?xml", 5));
	assert_non_null(strstr(s, "xmlns=\"http://www.w3.org/2000/svg\""));
	/* Self-contained: no external references. */
	assert_null(strstr(s, "href"));
	assert_null(strstr(s, "src="));
	assert_null(strstr(s, "@import"));
	assert_non_null(strstr(s, "<style"));
	assert_non_null(strstr(s, "function zoom("));
	assert_non_null(strstr(s, "function unzoom("));
	assert_non_null(strstr(s, "function search("));
	assert_non_null(strstr(s, "new RegExp("));
	assert_non_null(strstr(s, "ev.ctrlKey"));
	assert_non_null(strstr(s, "Matched: "));
	assert_non_null(strstr(s, ">Reset zoom</text>"));
	assert_non_null(strstr(s, ">Search</text>"));
	assert_non_null(strstr(s, "id=\"details\""));
	assert_non_null(strstr(s, ">On-CPU ember</text>"));
	assert_non_null(strstr(s, ">pid 42</text>"));
	assert_non_null(strstr(s, "<title>main\n4 \xc2\xb5s (100.00%)</title>"));
	assert_non_null(strstr(s, "<title>user_fn\n1 \xc2\xb5s (25.00%)</title>"));
	assert_non_null(strstr(s, "total: 4,"));
	assert_int_equal(count_substr(s, "]]>"), 3);	/* style + 2 scripts */

	/* Kernel frames blue, user frames warm. */
	assert_int_equal(find_frame(s, "do_syscall_64_[k]", &k), 0);
	assert_int_equal(find_frame(s, "user_fn", &u), 0);
	p = strstr(s, "<title>do_syscall_64_[k]\n");
	p = strstr(p, "fill=\"rgb(");
	assert_int_equal(sscanf(p, "fill=\"rgb(%u,%u,%u)", &r, &g, &b), 3);
	assert_true(b > r && b >= 205);
	p = strstr(s, "<title>user_fn\n");
	p = strstr(p, "fill=\"rgb(");
	assert_int_equal(sscanf(p, "fill=\"rgb(%u,%u,%u)", &r, &g, &b), 3);
	assert_true(r >= 205 && b <= 65);
	assert_well_formed(s);
	free(s);

	/* Colour is stable: the same name, the same fill, in another graph. */
	{
		struct flamegraph *other = flamegraph__new(0);
		char *s2, *q, fill1[32], fill2[32];

		add(other, "x;y;user_fn", 10);
		s = svg(fg, NULL);
		s2 = svg(other, NULL);
		q = strstr(strstr(s, "<title>user_fn\n"), "fill=");
		snprintf(fill1, sizeof(fill1), "%.*s", (int)(strchr(q + 6, '"') - q), q);
		q = strstr(strstr(s2, "<title>user_fn\n"), "fill=");
		snprintf(fill2, sizeof(fill2), "%.*s", (int)(strchr(q + 6, '"') - q), q);
		assert_string_equal(fill1, fill2);
		free(s);
		free(s2);
		flamegraph__free(other);
	}
	flamegraph__free(fg);
}

static void test_svg_opts_and_empty(void **state)
{
	struct flamegraph *fg = flamegraph__new(0);
	struct flamegraph_svg_opts o = { .sz = 0 };
	union {
		struct flamegraph_svg_opts o;
		unsigned char raw[sizeof(struct flamegraph_svg_opts) + 16];
	} big;
	FILE *f = fopen("/dev/null", "w");
	char *s;

	(void)state;
	assert_int_equal(flamegraph__write_svg(fg, f, &o), -EINVAL);
	o = (struct flamegraph_svg_opts){ .sz = sizeof(o), .width = 50 };
	assert_int_equal(flamegraph__write_svg(fg, f, &o), -EINVAL);
	o = (struct flamegraph_svg_opts){ .sz = sizeof(o), .min_width = -1 };
	assert_int_equal(flamegraph__write_svg(fg, f, &o), -EINVAL);
	/* A newer caller's larger struct: fine while the tail is zero. */
	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	assert_int_equal(flamegraph__write_svg(fg, f, &big.o), 0);
	big.raw[sizeof(struct flamegraph_svg_opts) + 3] = 1;
	assert_int_equal(flamegraph__write_svg(fg, f, &big.o), -EINVAL);
	fclose(f);
	/* An older caller's smaller struct: fields past sz are not read. */
	o = (struct flamegraph_svg_opts){ .title = "old", .unit = (const char *)1 };
	o.sz = offsetof(struct flamegraph_svg_opts, title) + sizeof(o.title);
	add(fg, "m", 2);
	s = svg(fg, &o);
	assert_non_null(strstr(s, ">old</text>"));
	assert_non_null(strstr(s, "<title>m\n2 samples (100.00%)</title>"));
	free(s);

	/* Empty graph: still a valid document. */
	flamegraph__clear(fg);
	s = svg(fg, NULL);
	assert_non_null(strstr(s, ">No samples</text>"));
	assert_int_equal(count_substr(s, "<g data-w="), 0);
	assert_well_formed(s);
	free(s);
	s = folded(fg);
	assert_string_equal(s, "");
	free(s);
	flamegraph__free(fg);
}

static void test_svg_big_random_well_formed(void **state)
{
	struct flamegraph *fg = flamegraph__new(0);
	uint64_t total;
	char *s;

	(void)state;
	build_random(fg, 5000, &total);
	s = svg(fg, NULL);
	assert_non_null(strstr(s, "</svg>\n"));
	assert_well_formed(s);
	free(s);
	flamegraph__free(fg);
}

/* ---- the graph as drawn: merged unresolved frames, stack count, header ------ */

/* The text of <text id="id">, unescaped, tspans joined with '|', its <title> left out. */
static void header_text(const char *s, const char *id, char *buf, size_t len)
{
	char key[64];
	const char *p, *end;
	size_t o = 0;

	snprintf(key, sizeof(key), "<text id=\"%s\"", id);
	p = strstr(s, key);
	assert_non_null(p);
	p = strchr(p, '>') + 1;
	end = strstr(p, "</text>");
	assert_non_null(end);
	while (p < end) {
		if (!strncmp(p, "<title>", 7)) {
			p = strstr(p, "</title>") + 8;
		} else if (!strncmp(p, "<tspan", 6)) {
			if (o)
				buf[o++] = '|';
			p = strchr(p, '>') + 1;
		} else if (!strncmp(p, "</tspan>", 8)) {
			p += 8;
		} else if (*p == '&') {	/* one character */
			static const char *const ent[][2] = { { "&lt;", "<" }, { "&gt;", ">" }, { "&amp;", "&" },
							      { "&quot;", "\"" }, { "&apos;", "'" } };
			size_t e = 0;

			while (e < 5 && strncmp(p, ent[e][0], strlen(ent[e][0])))
				e++;
			assert_true(e < 5 && o + 1 < len);
			buf[o++] = ent[e][1][0];
			p += strlen(ent[e][0]);
		} else {
			assert_true(o + 1 < len);
			buf[o++] = *p++;
		}
	}
	buf[o] = 0;
}

/* The tooltip (<title> text) of the frame named name. */
static void frame_tip(const char *s, const char *name, char *buf, size_t len)
{
	char key[512];
	const char *t, *end;

	snprintf(key, sizeof(key), "<title>%s\n", name);
	t = strstr(s, key);
	assert_non_null(t);
	t += 7;
	end = strstr(t, "</title>");
	assert_true((size_t)(end - t) < len);
	memcpy(buf, t, (size_t)(end - t));
	buf[end - t] = 0;
}

/*
 * A stripped library's hot code: 50 unresolved offsets under one caller are
 * one box weighing their sum; a run of them calling each other is one box
 * too; the folded output keeps every offset.
 */
static void test_svg_unresolved_merged(void **state)
{
	struct flamegraph *fg = flamegraph__new(0);
	struct flamegraph_svg_opts o = { .sz = sizeof(o), .count_stacks = true };
	struct geom box, caller, k;
	uint64_t sum = 0;
	char *s, *f, line[128], tip[2048], sub[256];

	(void)state;
	for (unsigned i = 0; i < 50; i++) {
		snprintf(line, sizeof(line), "openssl;main;EVP_Digest;libcrypto.so.3+0x%x", 0x1a000 + 0x40 * i);
		add(fg, line, i + 1);
		sum += i + 1;
	}
	s = svg(fg, &o);
	assert_int_equal(find_frame(s, "[libcrypto.so.3]", &box), 0);
	assert_int_equal(box.weight, sum);
	assert_int_equal(find_frame(s, "EVP_Digest", &caller), 0);
	assert_true(fabs(box.w - caller.w) < 0.01);	/* the whole width, not 50 slivers */
	assert_null(strstr(s, "<title>libcrypto.so.3+0x"));
	assert_int_equal(count_substr(s, "<g data-w="), 5);	/* all, openssl, main, EVP_Digest, the box */
	/* Its offsets, heaviest first, in the tooltip; the rest counted. */
	frame_tip(s, "[libcrypto.so.3]", tip, sizeof(tip));
	assert_non_null(strstr(tip, "\nlibcrypto.so.3+0x1ac40 50 samples\nlibcrypto.so.3+0x1ac00 49 samples\n"));
	assert_non_null(strstr(tip, "\n... and 42 more offsets"));
	header_text(s, "subtitle", sub, sizeof(sub));
	assert_string_equal(sub, "1 stack");
	assert_well_formed(s);
	free(s);
	f = folded(fg);
	assert_int_equal(sum_lines(f, "libcrypto.so.3+0x"), sum);
	assert_int_equal(count_substr(f, "libcrypto.so.3+0x"), 50);
	free(f);
	flamegraph__free(fg);

	/* Runs collapse, offsets add up to the box, other modules and the kernel's merge apart. */
	fg = flamegraph__new(0);
	add(fg, "app;run;libcrypto.so.3+0x10;libcrypto.so.3+0x20;libcrypto.so.3+0x30", 5);
	add(fg, "app;run;libcrypto.so.3+0x10;libcrypto.so.3+0x20", 3);
	add(fg, "app;run;libcrypto.so.3+0x40;cb_in_app;libcrypto.so.3+0x50", 2);
	add(fg, "app;run;libstdc++.so.6+0x99", 4);
	add(fg, "app;run;operator+", 1);		/* resolved: left alone */
	add(fg, "app;run;not+0xzz", 1);			/* not an offset */
	add(fg, "app;run;sys;[kernel]+0xffffffff81000010_[k]", 6);
	add(fg, "app;run;sys;[kernel]+0xffffffff81000020_[k]", 7);
	s = svg(fg, &o);
	assert_int_equal(count_substr(s, "<title>[libcrypto.so.3]\n"), 2);	/* under run, and under cb_in_app */
	{
		const char *t = strstr(s, "<title>[libcrypto.so.3]\n10 samples");

		assert_non_null(t);	/* 5 + 3 + 2 under run, one box for the run of three */
		frame_tip(t, "[libcrypto.so.3]", tip, sizeof(tip));
		/* +0x30 holds 5, +0x20 8 - 5, +0x10 8 - 8, +0x40 2: they add up to 10. */
		assert_string_equal(tip, "[libcrypto.so.3]\n10 samples (34.48%)\nlibcrypto.so.3+0x30 5 samples\n"
				    "libcrypto.so.3+0x20 3 samples\nlibcrypto.so.3+0x40 2 samples");
	}
	assert_int_equal(find_frame(s, "cb_in_app", &caller), 0);
	assert_int_equal(find_frame(s, "[libstdc++.so.6]", &box), 0);
	assert_int_equal(box.weight, 4);
	assert_int_equal(find_frame(s, "operator+", &box), 0);
	assert_int_equal(find_frame(s, "not+0xzz", &box), 0);
	assert_int_equal(find_frame(s, "[kernel]_[k]", &k), 0);
	assert_int_equal(k.weight, 13);
	header_text(s, "subtitle", sub, sizeof(sub));
	assert_string_equal(sub, "6 stacks");	/* the run's two stacks are one as drawn */
	assert_well_formed(s);
	free(s);
	f = folded(fg);
	assert_int_equal(count_substr(f, "\n"), 8);	/* exact frames kept */
	assert_int_equal(sum_lines(f, NULL), 29);
	free(f);
	flamegraph__free(fg);
}

/* Random stacks with unresolved frames: every depth of the drawn graph weighs what the trie does. */
static void test_svg_unresolved_conserved(void **state)
{
	struct flamegraph *fg = flamegraph__new(0);
	struct flamegraph_svg_opts o = { .sz = sizeof(o), .min_width = 1e-9 };
	static const char *const names[] = { "a", "b", "libx.so+0x10", "libx.so+0x20", "libx.so+0x30",
					     "liby.so+0x10", "[anon]+0x8", "c" };
	uint64_t total = 0;
	char *s;

	(void)state;
	for (int i = 0; i < 3000; i++) {
		const char *fr[8];
		size_t n = 1 + rnd() % 8;
		uint64_t w = 1 + rnd() % 5;

		for (size_t j = 0; j < n; j++)
			fr[j] = names[rnd() % 8];
		assert_int_equal(flamegraph__add(fg, fr, n, w), 0);
		total += w;
	}
	s = svg(fg, &o);
	/* Frames at one depth (same y) never weigh more than the total, and depth 1 weighs all of it. */
	{
		double ys[64];
		uint64_t ws[64] = { 0 };
		size_t ny = 0;

		for (const char *p = strstr(s, "<g data-w=\""); p; p = strstr(p + 1, "<g data-w=\"")) {
			uint64_t w = strtoull(p + 11, NULL, 10);
			double y;
			size_t i;

			assert_int_equal(sscanf(strstr(p, "<rect "), "<rect x=\"%*f\" y=\"%lf\"", &y), 1);
			for (i = 0; i < ny && ys[i] != y; i++)
				;
			if (i == ny) {
				assert_true(ny < 64);
				ys[ny++] = y;
			}
			ws[i] += w;
		}
		for (size_t i = 0; i < ny; i++)
			assert_true(ws[i] <= total);
		assert_int_equal(ws[0], total);		/* "all" */
		assert_int_equal(ws[1], total);		/* the first frames */
	}
	assert_null(strstr(s, "<title>libx.so+0x"));
	assert_null(strstr(s, "<title>[anon]+0x"));
	assert_well_formed(s);
	free(s);
	flamegraph__free(fg);
}

/* The subtitle's stack count is the graph's: one stack added 26 times is one. */
static void test_svg_stack_count(void **state)
{
	struct flamegraph *fg = flamegraph__new(0);
	struct flamegraph_svg_opts o = { .sz = sizeof(o), .subtitle = "ember task t: 26 samples",
					 .count_stacks = true };
	char *s, sub[256];

	(void)state;
	for (int i = 0; i < 26; i++)
		add(fg, "main;work;spin", 1000);
	s = svg(fg, &o);
	header_text(s, "subtitle", sub, sizeof(sub));
	assert_string_equal(sub, "ember task t: 26 samples, 1 stack");
	free(s);
	add(fg, "main;work", 1000000);
	add(fg, "main;rare", 1);	/* 0.001 px: not drawn */
	s = svg(fg, &o);
	header_text(s, "subtitle", sub, sizeof(sub));
	assert_string_equal(sub, "ember task t: 26 samples, 3 stacks (1 too narrow to show)");
	free(s);
	o.count_stacks = false;
	s = svg(fg, &o);
	header_text(s, "subtitle", sub, sizeof(sub));
	assert_string_equal(sub, "ember task t: 26 samples");
	free(s);
	flamegraph__free(fg);
}

/* A long title wraps between "Reset zoom" and "Search" instead of running into them. */
static void test_svg_long_title(void **state)
{
	struct flamegraph *fg = flamegraph__new(0);
	const char *title = "On-CPU flame graph of nginx (pid 4242), started by policy 'web-latency': "
			    "http_p99_ms 812.5 >= 500 in 5 of 10 s for /api/v1/orders/checkout";
	struct flamegraph_svg_opts o = { .sz = sizeof(o), .title = title, .subtitle = "sub" };
	char *s, text[1024];
	unsigned height, top_y;
	struct geom m;

	(void)state;
	add(fg, "main", 1);
	s = svg(fg, &o);
	header_text(s, "title", text, sizeof(text));
	/* Lines of at most (1200 - 2 * (10 + 12 * 7.3 + 12)) / 10.3 = 95 characters, centred:
	 * the longest ends left of the Search button (1190 - 6 * 7.3). */
	{
		size_t nlines = 1, run = 0, longest = 0;
		char joined[1024];

		for (const char *p = text; *p; p++) {
			if (*p == '|') {
				nlines++;
				run = 0;
				continue;
			}
			if (++run > longest)
				longest = run;
		}
		assert_int_equal(nlines, 2);
		assert_true(longest <= 95);
		assert_true(600 + longest * 10.3 / 2 < 1190 - 6 * 7.3);
		assert_true(600 - longest * 10.3 / 2 > 10 + 10 * 7.3);
		/* Broken at a space, nothing lost. */
		snprintf(joined, sizeof(joined), "%s", text);
		*strchr(joined, '|') = ' ';
		assert_string_equal(joined, title);
	}
	assert_null(strstr(s, "<text id=\"title\" x=\"600.0\" y=\"24.0\"><title>"));	/* not cut */
	/* The subtitle and the frames move down a line. */
	assert_non_null(strstr(s, "<text id=\"subtitle\" x=\"600.0\" y=\"64.0\">sub</text>"));
	assert_int_equal(sscanf(strstr(s, "<svg "), "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" "
				"width=\"1200\" height=\"%u\"", &height), 1);
	assert_int_equal(find_frame(s, "main", &m), 0);
	top_y = (unsigned)m.y;
	assert_true(top_y >= 64 + 16);
	assert_well_formed(s);
	free(s);

	/* Far too long: three lines, the last cut with "..", the whole title as the tooltip. */
	{
		char big[2000];

		memset(big, 0, sizeof(big));
		for (int i = 0; i < 60; i++)
			strcat(big, "word12345 ");
		o.title = big;
		s = svg(fg, &o);
		header_text(s, "title", text, sizeof(text));
		assert_int_equal(count_substr(text, "|"), 2);
		assert_true(strlen(text) >= 3 && !strcmp(text + strlen(text) - 2, ".."));
		assert_non_null(strstr(s, "<text id=\"title\" x=\"600.0\" y=\"24.0\"><title>word12345 word12345"));
		assert_well_formed(s);
		free(s);
	}
	flamegraph__free(fg);
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

static char *slurp(const char *dir, const char *name)
{
	char path[512], *s = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	if (getdelim(&s, &cap, 0, f) < 0) {
		free(s);
		s = strdup("");
	}
	fclose(f);
	return s;
}

/* A batch of one task's one stack (user frames innermost first), for the file backend. */
struct one_stack {
	Ember__Task task;
	Ember__StackSample smp, *sp;
	Ember__ProfileBatch b;
};

static void one_stack_init(struct one_stack *o, const char *id, Ember__TaskKind kind, char **user, size_t nuser,
			   uint64_t count)
{
	ember__task__init(&o->task);
	o->task.id = (char *)id;
	o->task.kind = kind;
	ember__stack_sample__init(&o->smp);
	o->smp.pid = 7;
	o->smp.process_name = "srv";
	o->smp.user_frames = user;
	o->smp.n_user_frames = nuser;
	o->smp.count = count;
	o->sp = &o->smp;
	ember__profile_batch__init(&o->b);
	o->b.task = &o->task;
	o->b.samples = &o->sp;
	o->b.n_samples = 1;
}

/* The file backend writing into a new directory dir (a mkdtemp template). */
static void *file_backend_in(char *dir, struct ember_config *cfg)
{
	char err[256];
	void *st;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(config__set(cfg, "ember.output_dir", dir, err, sizeof(err)), 0);
	st = exporter_backend__find("file")->init(cfg, err, sizeof(err));
	assert_non_null(st);
	return st;
}

/* The task's end through the file backend st; tdir gets the task's directory under dir. */
static void finish_task(void *st, Ember__Task *task, const char *dir, char *tdir, size_t len)
{
	Ember__TaskEvent ev;

	ember__task_event__init(&ev);
	ev.task = task;
	ev.state = EMBER__TASK_EVENT__STATE__FINISHED;
	exporter_backend__find("file")->on_task_event(st, &ev);
	snprintf(tdir, len, "%s/%s", dir, task->id);
}

/*
 * Through the file backend: an off-CPU task whose one stack came in 26
 * windows.  Its two SVGs say which weight they show, the time graph's
 * subtitle the total time blocked, and both count one stack.
 */
static void test_file_backend_offcpu(void **state)
{
	const struct exporter_backend_ops *ops = exporter_backend__find("file");
	struct ember_config *cfg = config__new();
	char dir[] = "/tmp/ember-test-fg-XXXXXX", sub[256], title[256], count_title[256], tdir[600];
	char *user[] = { "do_read", "__libc_start_main", "main" }, *kern[] = { "schedule" };
	struct one_stack o;
	char *s;
	void *st;

	(void)state;
	assert_non_null(ops);
	st = file_backend_in(dir, cfg);
	one_stack_init(&o, "off-1", EMBER__TASK_KIND__OFF_CPU, user, 3, 1);
	o.smp.kernel_frames = kern;
	o.smp.n_kernel_frames = 1;
	o.smp.weight = 1500000;	/* 1.5 ms blocked, in ns */
	for (int i = 0; i < 26; i++)
		ops->on_profile(st, &o.b);
	finish_task(st, &o.task, dir, tdir, sizeof(tdir));

	s = slurp(tdir, "offcpu.svg");
	assert_non_null(s);
	header_text(s, "title", title, sizeof(title));
	header_text(s, "subtitle", sub, sizeof(sub));
	assert_string_equal(sub, "ember task off-1: 26 switches, 0.039 s blocked, 1 stack");
	assert_non_null(strstr(s, "<title>srv\n39,000 \xc2\xb5s (100.00%)</title>"));
	free(s);
	s = slurp(tdir, "offcpu.count.svg");
	assert_non_null(s);
	header_text(s, "title", count_title, sizeof(count_title));
	header_text(s, "subtitle", sub, sizeof(sub));
	assert_string_equal(sub, "ember task off-1: 26 switches, 0.039 s blocked, 1 stack");
	assert_non_null(strstr(s, "<title>srv\n26 switches (100.00%)</title>"));
	free(s);
	assert_string_equal(title, "Off-CPU flame graph (time blocked)");
	assert_string_equal(count_title, "Off-CPU flame graph (switch count)");
	s = slurp(tdir, "offcpu.folded");
	assert_string_equal(s, "srv;main;__libc_start_main;do_read;schedule_[k] 39000\n");
	free(s);
	s = slurp(tdir, "task.json");
	assert_non_null(s);
	free(s);
	ops->free(st);
	config__free(cfg);
	nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

static int readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/*
 * A window reaches the files at once, not at the exporter's next 250-ms tick:
 * the backend's event fd turns readable with a window its files lack (the
 * exporter then ticks it), and the tick writes it and clears the fd.  What
 * the exporter holds unwritten dies with it.
 */
static void test_file_backend_window_at_once(void **state)
{
	const struct exporter_backend_ops *ops = exporter_backend__find("file");
	struct ember_config *cfg = config__new();
	char dir[] = "/tmp/ember-test-fg-XXXXXX", tdir[600];
	char *user[] = { "spin", "main" };
	struct one_stack o;
	char *s;
	void *st;
	int fd;

	(void)state;
	st = file_backend_in(dir, cfg);
	one_stack_init(&o, "on-1", EMBER__TASK_KIND__ON_CPU, user, 2, 3);
	assert_non_null(ops->event_fd);
	fd = ops->event_fd(st);
	assert_true(fd >= 0);
	snprintf(tdir, sizeof(tdir), "%s/on-1", dir);
	for (int w = 1; w <= 2; w++) {
		char want[64];

		assert_false(readable(fd));
		ops->on_profile(st, &o.b);
		ops->on_profile(st, &o.b);	/* a second analyzer's part of the window: one wake-up */
		assert_true(readable(fd));
		ops->tick(st, 0, 0);
		assert_false(readable(fd));
		s = slurp(tdir, "oncpu.folded");
		assert_non_null(s);
		snprintf(want, sizeof(want), "srv;main;spin %d\n", 6 * w);
		assert_string_equal(s, want);
		free(s);
	}
	ops->free(st);
	config__free(cfg);
	nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

/*
 * An exporter restarted mid-task goes on from the files: the new one's
 * task.json counts the samples, distinct stacks and windows of both.
 */
static void test_file_backend_resume(void **state)
{
	const struct exporter_backend_ops *ops = exporter_backend__find("file");
	struct ember_config *cfg = config__new();
	char dir[] = "/tmp/ember-test-fg-XXXXXX", err[256], tdir[600];
	char *user[] = { "spin", "main" }, *user2[] = { "wait", "main" };
	struct one_stack o, o2;
	char *s;
	void *st;

	(void)state;
	st = file_backend_in(dir, cfg);
	one_stack_init(&o, "on-2", EMBER__TASK_KIND__ON_CPU, user, 2, 3);
	one_stack_init(&o2, "on-2", EMBER__TASK_KIND__ON_CPU, user2, 2, 1);
	ops->on_profile(st, &o.b);
	ops->tick(st, 0, 0);
	ops->on_profile(st, &o.b);
	ops->on_profile(st, &o2.b);
	ops->tick(st, 0, 0);
	ops->free(st);		/* killed: no final write */
	st = ops->init(cfg, err, sizeof(err));
	assert_non_null(st);
	ops->on_profile(st, &o.b);
	finish_task(st, &o.task, dir, tdir, sizeof(tdir));
	s = slurp(tdir, "task.json");
	assert_non_null(s);
	assert_non_null(strstr(s, "\"samples\":10,\"stacks\":2,\"windows\":4,"));
	free(s);
	s = slurp(tdir, "oncpu.folded");
	assert_string_equal(s, "srv;main;spin 9\nsrv;main;wait 1\n");
	free(s);
	ops->free(st);
	config__free(cfg);
	nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

static void test_write_errors(void **state)
{
	struct flamegraph *fg = flamegraph__new(0);
	FILE *f = fopen("/dev/full", "w");

	(void)state;
	if (!f) {
		fprintf(stderr, "SKIP: /dev/full cannot be opened\n");
		skip();
	}
	add(fg, "a;b", 1);
	assert_int_equal(flamegraph__write_folded(fg, f), -EIO);
	clearerr(f);
	assert_int_equal(flamegraph__write_svg(fg, f, NULL), -EIO);
	fclose(f);
	flamegraph__free(fg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_prefixes),
		cmocka_unit_test(test_folded_sorted_summed),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_long_frames),
		cmocka_unit_test(test_node_cap_exact),
		cmocka_unit_test(test_node_cap_random),
		cmocka_unit_test(test_depth_limit),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_load_stream),
		cmocka_unit_test(test_svg_widths),
		cmocka_unit_test(test_svg_escaping),
		cmocka_unit_test(test_svg_min_width_and_labels),
		cmocka_unit_test(test_svg_script_and_text),
		cmocka_unit_test(test_svg_opts_and_empty),
		cmocka_unit_test(test_svg_big_random_well_formed),
		cmocka_unit_test(test_svg_unresolved_merged),
		cmocka_unit_test(test_svg_unresolved_conserved),
		cmocka_unit_test(test_svg_stack_count),
		cmocka_unit_test(test_svg_long_title),
		cmocka_unit_test(test_file_backend_offcpu),
		cmocka_unit_test(test_file_backend_window_at_once),
		cmocka_unit_test(test_file_backend_resume),
		cmocka_unit_test(test_write_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
