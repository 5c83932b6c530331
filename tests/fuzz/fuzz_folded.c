/*
 * libFuzzer target for the folded-stacks reader (untrusted files) and the
 * writers fed by it.  Oracles: the node bound holds; folded output reads
 * back into the same text with no bad line and the same total; the SVG is
 * valid UTF-8 without control characters and frame names never open markup.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/flamegraph.h"

static char *folded(const struct flamegraph *fg, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		abort();
	if (flamegraph__write_folded(fg, f))
		abort();
	fclose(f);
	return buf;
}

/* The oracle's own byte loop needs no coverage feedback (it dominated). */
#if defined(__clang__) && __clang_major__ >= 13
__attribute__((no_sanitize("coverage"), noinline))
#endif
static void check_svg(const struct flamegraph *fg)
{
	char *buf = NULL;
	size_t len = 0, scripts = 0;
	FILE *f = open_memstream(&buf, &len);
	const unsigned char *u;

	if (!f)
		abort();
	if (flamegraph__write_svg(fg, f, NULL))
		abort();
	fclose(f);
	u = (const unsigned char *)buf;
	for (size_t i = 0; i < len;) {
		unsigned char c = u[i];
		size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 :
			   (c & 0xf8) == 0xf0 ? 4 : 0;

		if (!n || i + n > len)
			abort();	/* invalid lead byte or cut sequence */
		for (size_t k = 1; k < n; k++)
			if ((u[i + k] & 0xc0) != 0x80)
				abort();
		if ((c < 0x20 && c != '\n') || c == 0x7f)
			abort();
		if (c == '<' && len - i >= 7 && !memcmp(buf + i, "<script", 7))
			scripts++;
		i += n;
	}
	if (scripts != 2)
		abort();
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct flamegraph *a, *b;
	struct flamegraph_stats sa, sb;
	size_t cap, la, lb;
	char *ta, *tb;

	if (size < 1)
		return 0;
	/* Small bounds make truncation reachable with small inputs. */
	cap = data[0] & 0x80 ? 1 + (data[0] & 0x3f) : 0;
	a = flamegraph__new(cap);
	b = flamegraph__new(0);
	if (!a || !b)
		abort();
	if (flamegraph__load_folded_buf(a, (const char *)data + 1, size - 1))
		abort();
	(void)flamegraph__add_folded_line(a, (const char *)data + 1, size - 1);
	flamegraph__stats(a, &sa);
	if (cap && sa.nodes > cap)
		abort();
	if (sa.truncated_weight > flamegraph__total(a))
		abort();

	ta = folded(a, &la);
	if (flamegraph__load_folded_buf(b, ta, la))
		abort();
	flamegraph__stats(b, &sb);
	if (sb.bad_lines || sb.lines != sa.unique_stacks || sb.sanitized_frames)
		abort();
	if (flamegraph__total(a) != flamegraph__total(b))
		abort();
	tb = folded(b, &lb);
	if (la != lb || memcmp(ta, tb, la))
		abort();

	/* The stream reader must agree with the buffer reader. */
	if (size > 1) {
		struct flamegraph *c = flamegraph__new(0);
		FILE *f = fmemopen((void *)(data + 1), size - 1, "r");
		char *tc;
		size_t lc;

		if (!c || !f)
			abort();
		flamegraph__clear(b);
		if (flamegraph__load_folded_buf(c, (const char *)data + 1, size - 1))
			abort();
		if (flamegraph__load_folded(b, f))
			abort();
		fclose(f);
		free(tb);
		tb = folded(b, &lb);
		tc = folded(c, &lc);
		if (lc != lb || memcmp(tc, tb, lc))
			abort();
		free(tc);
		flamegraph__free(c);
	}

	check_svg(a);
	free(ta);
	free(tb);
	flamegraph__free(a);
	flamegraph__free(b);
	return 0;
}
