/*
 * A strict checker of the Prometheus text exposition format 0.0.4 as ember
 * renders it, shared by tests/unit/test_prom_text.c and
 * tests/fuzz/fuzz_prom_text.c.  Independent of the renderer: it re-derives
 * the grammar from the format's description.
 *
 * prom_grammar_check(text, len, why, whylen) returns 0 when:
 *   - the text is valid UTF-8, empty or ending in '\n', every line one of
 *       # HELP <metric-name> <escaped text>
 *       # TYPE <metric-name> counter|gauge|histogram
 *       <metric-name>[{<label-name>="<escaped value>"(,...)*}] <number>
 *     with names [a-zA-Z_:][a-zA-Z0-9_:]* / [a-zA-Z_][a-zA-Z0-9_]*, escapes
 *     only \\ \" \n (no \" in help), numbers as floats, NaN, +Inf, -Inf;
 *   - HELP and TYPE come once per family, before its samples, and samples
 *     belong to the family of the last TYPE (histograms: _bucket, _sum,
 *     _count); counters end in _total; no label name repeats in a sample;
 *   - a histogram series is buckets with strictly increasing le and
 *     non-decreasing counts ending with le="+Inf", then _sum, then _count
 *     equal to the +Inf bucket;
 *   - no sample line (name and labels) appears twice.
 * Otherwise 1, with the line number and reason in why.
 */
#ifndef EMBER_TESTS_PROM_GRAMMAR_H
#define EMBER_TESTS_PROM_GRAMMAR_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pg_state {
	char family[512];
	int type;		/* 0 none, 1 counter, 2 gauge, 3 histogram */
	/* histogram series in progress */
	char hkey[8192];	/* labels without le */
	int hstage;		/* 0 idle, 1 buckets, 2 +Inf seen, 3 sum seen */
	double last_le;
	unsigned long long last_count, inf_count;
	/* seen families and sample keys (hashes) */
	uint64_t *seen;
	size_t nseen, capseen;
};

static int pg_fail(char *why, size_t len, size_t line, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(why, len, "line %zu: ", line);
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < len)
		vsnprintf(why + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	return 1;
}

static uint64_t pg_hash(const char *s, size_t n, uint64_t seed)
{
	uint64_t h = seed;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

/* 1 if h was already recorded, else records it. */
static int pg_seen(struct pg_state *st, uint64_t h)
{
	for (size_t i = 0; i < st->nseen; i++)
		if (st->seen[i] == h)
			return 1;
	if (st->nseen == st->capseen) {
		size_t cap = st->capseen ? st->capseen * 2 : 256;
		uint64_t *p = realloc(st->seen, cap * sizeof(*p));
		if (!p)
			abort();
		st->seen = p;
		st->capseen = cap;
	}
	st->seen[st->nseen++] = h;
	return 0;
}

static int pg_utf8_ok(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned c = s[i];
		size_t k;
		uint32_t cp;
		if (c < 0x80) { i++; continue; }
		if (c >= 0xc2 && c <= 0xdf) { k = 2; cp = c & 0x1f; }
		else if (c >= 0xe0 && c <= 0xef) { k = 3; cp = c & 0x0f; }
		else if (c >= 0xf0 && c <= 0xf4) { k = 4; cp = c & 0x07; }
		else return 0;
		if (i + k > n)
			return 0;
		for (size_t j = 1; j < k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + j] & 0x3f);
		}
		if ((k == 3 && cp < 0x800) || (k == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += k;
	}
	return 1;
}

static size_t pg_name(const char *s, size_t n, int label)
{
	size_t i = 0;
	for (; i < n; i++) {
		char c = s[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (!label && c == ':') ||
			 (i > 0 && c >= '0' && c <= '9');
		if (!ok)
			break;
	}
	return i;
}

/* [-+]?(digits[.digits*]|.digits)([eE][-+]?digits)? | NaN | +Inf | -Inf ; whole token */
static int pg_number(const char *s, size_t n, double *ret)
{
	char buf[64];
	size_t i = 0, d = 0;

	if (n == 0 || n >= sizeof(buf))
		return 0;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (!strcmp(buf, "NaN")) { *ret = NAN; return 1; }
	if (!strcmp(buf, "+Inf")) { *ret = INFINITY; return 1; }
	if (!strcmp(buf, "-Inf")) { *ret = -INFINITY; return 1; }
	if (buf[i] == '-' || buf[i] == '+')
		i++;
	while (i < n && buf[i] >= '0' && buf[i] <= '9') { i++; d++; }
	if (i < n && buf[i] == '.') {
		i++;
		while (i < n && buf[i] >= '0' && buf[i] <= '9') { i++; d++; }
	}
	if (!d)
		return 0;
	if (i < n && (buf[i] == 'e' || buf[i] == 'E')) {
		size_t e = 0;
		i++;
		if (i < n && (buf[i] == '-' || buf[i] == '+'))
			i++;
		while (i < n && buf[i] >= '0' && buf[i] <= '9') { i++; e++; }
		if (!e)
			return 0;
	}
	if (i != n)
		return 0;
	*ret = strtod(buf, NULL);
	return 1;
}

/* Escaped text up to an unescaped terminator (quote: '"', else end of line); returns bytes consumed or -1. */
static long pg_escaped(const char *s, size_t n, int quote)
{
	size_t i = 0;
	for (; i < n; i++) {
		if (s[i] == '\\') {
			if (i + 1 >= n || !(s[i + 1] == '\\' || s[i + 1] == 'n' || (quote && s[i + 1] == '"')))
				return -1;
			i++;
		} else if (quote && s[i] == '"') {
			return (long)i;
		}
	}
	return quote ? -1 : (long)i;
}

static int pg_ends(const char *s, size_t n, const char *suf)
{
	size_t k = strlen(suf);
	return n >= k && !memcmp(s + n - k, suf, k);
}

static int pg_sample(struct pg_state *st, const char *s, size_t n, size_t ln, char *why, size_t wl)
{
	size_t nl = pg_name(s, n, 0), i, fl = strlen(st->family), sfl = 0;
	char labels_wo_le[8192];
	size_t lw = 0;
	int has_le = 0;
	double le = 0, v;
	const char *suffix = "";
	char names[64][256];
	size_t nnames = 0;

	if (nl == 0)
		return pg_fail(why, wl, ln, "no metric name");
	if (!st->type)
		return pg_fail(why, wl, ln, "sample before any TYPE");
	if (nl == fl && !memcmp(s, st->family, fl)) {
		if (st->type == 3)
			return pg_fail(why, wl, ln, "bare sample of histogram %s", st->family);
	} else if (st->type == 3 && nl > fl && !memcmp(s, st->family, fl)) {
		suffix = s + fl;
		sfl = nl - fl;
		if (!((sfl == 7 && !memcmp(suffix, "_bucket", 7)) || (sfl == 4 && !memcmp(suffix, "_sum", 4)) ||
		      (sfl == 6 && !memcmp(suffix, "_count", 6))))
			return pg_fail(why, wl, ln, "sample %.*s outside family %s", (int)nl, s, st->family);
	} else {
		return pg_fail(why, wl, ln, "sample %.*s outside family %s", (int)nl, s, st->family);
	}
	i = nl;
	if (i < n && s[i] == '{') {
		i++;
		while (i < n && s[i] != '}') {
			size_t ln2 = pg_name(s + i, n - i, 1), start = i;
			long vl;
			if (ln2 == 0)
				return pg_fail(why, wl, ln, "bad label name at column %zu", i);
			if (ln2 >= sizeof(names[0]) || nnames >= 64)
				return pg_fail(why, wl, ln, "label name too long or too many labels");
			for (size_t k = 0; k < nnames; k++)
				if (strlen(names[k]) == ln2 && !memcmp(names[k], s + i, ln2))
					return pg_fail(why, wl, ln, "duplicate label %.*s", (int)ln2, s + i);
			memcpy(names[nnames], s + i, ln2);
			names[nnames++][ln2] = '\0';
			i += ln2;
			if (i + 1 >= n || s[i] != '=' || s[i + 1] != '"')
				return pg_fail(why, wl, ln, "expected =\" at column %zu", i);
			i += 2;
			vl = pg_escaped(s + i, n - i, 1);
			if (vl < 0)
				return pg_fail(why, wl, ln, "bad label value at column %zu", i);
			if (ln2 == 2 && !memcmp(s + start, "le", 2)) {
				if (!pg_number(s + i, (size_t)vl, &le))
					return pg_fail(why, wl, ln, "le is not a number");
				has_le = 1;
			} else {
				if (lw + (size_t)vl + ln2 + 8 >= sizeof(labels_wo_le))
					return pg_fail(why, wl, ln, "labels too long");
				memcpy(labels_wo_le + lw, s + start, i - start + (size_t)vl);
				lw += i - start + (size_t)vl;
				labels_wo_le[lw++] = ',';
			}
			i += (size_t)vl + 1;
			if (i < n && s[i] == ',')
				i++;
			else if (i < n && s[i] != '}')
				return pg_fail(why, wl, ln, "expected , or } at column %zu", i);
		}
		if (i >= n)
			return pg_fail(why, wl, ln, "unterminated label set");
		i++;
	}
	labels_wo_le[lw] = '\0';
	if (i >= n || s[i] != ' ')
		return pg_fail(why, wl, ln, "expected a space before the value");
	i++;
	{
		size_t vs = i;
		while (i < n && s[i] != ' ')
			i++;
		if (!pg_number(s + vs, i - vs, &v))
			return pg_fail(why, wl, ln, "bad value '%.*s'", (int)(i - vs), s + vs);
		if (i != n)
			return pg_fail(why, wl, ln, "trailing text after the value");
		if (pg_seen(st, pg_hash(s, vs - 1, 0x51ed)))
			return pg_fail(why, wl, ln, "duplicate sample");
	}
	if (st->type != 3) {
		if (has_le)
			return pg_fail(why, wl, ln, "le label outside a histogram");
		return 0;
	}
	/* histogram series state machine */
	if (sfl == 7) {
		if (!has_le)
			return pg_fail(why, wl, ln, "bucket without le");
		if (v < 0 || v != floor(v))
			return pg_fail(why, wl, ln, "bucket count not a natural number");
		if (st->hstage == 1 && !strcmp(st->hkey, labels_wo_le)) {
			if (!(le > st->last_le) || v < (double)st->last_count)
				return pg_fail(why, wl, ln, "buckets not increasing");
		} else if (st->hstage == 0) {
			snprintf(st->hkey, sizeof(st->hkey), "%s", labels_wo_le);
			st->hstage = 1;
		} else {
			return pg_fail(why, wl, ln, "bucket of another series before _count");
		}
		st->last_le = le;
		st->last_count = (unsigned long long)v;
		if (isinf(le) && le > 0) {
			st->hstage = 2;
			st->inf_count = (unsigned long long)v;
		}
		return 0;
	}
	if (has_le)
		return pg_fail(why, wl, ln, "le on _sum/_count");
	if (strcmp(st->hkey, labels_wo_le))
		return pg_fail(why, wl, ln, "_sum/_count of another series");
	if (sfl == 4) {
		if (st->hstage != 2)
			return pg_fail(why, wl, ln, "_sum before le=\"+Inf\"");
		st->hstage = 3;
		return 0;
	}
	if (st->hstage != 3)
		return pg_fail(why, wl, ln, "_count before _sum");
	if (v != (double)st->inf_count)
		return pg_fail(why, wl, ln, "_count differs from the +Inf bucket");
	st->hstage = 0;
	return 0;
}

static int prom_grammar_check(const char *text, size_t len, char *why, size_t wl)
{
	struct pg_state st;
	size_t ln = 0, pos = 0;
	int ret = 0;

	memset(&st, 0, sizeof(st));
	snprintf(why, wl, "ok");
	if (memchr(text, '\0', len))
		return pg_fail(why, wl, 0, "NUL byte");
	if (!pg_utf8_ok((const unsigned char *)text, len))
		return pg_fail(why, wl, 0, "invalid UTF-8");
	if (len && text[len - 1] != '\n')
		return pg_fail(why, wl, 0, "no final newline");
	while (pos < len && !ret) {
		const char *s = text + pos, *e = memchr(s, '\n', len - pos);
		size_t n = (size_t)(e - s);
		pos += n + 1;
		ln++;
		if (n >= 7 && (!memcmp(s, "# HELP ", 7) || !memcmp(s, "# TYPE ", 7))) {
			int help = s[2] == 'H';
			size_t nl = pg_name(s + 7, n - 7, 0);
			const char *rest = s + 7 + nl;
			size_t rn = n - 7 - nl;
			if (!nl || !rn || rest[0] != ' ') {
				ret = pg_fail(why, wl, ln, "bad HELP/TYPE name");
				break;
			}
			if (help) {
				if (pg_escaped(rest + 1, rn - 1, 0) < 0)
					ret = pg_fail(why, wl, ln, "bad escape in HELP");
				else if (pg_seen(&st, pg_hash(s + 7, nl, 0x4e1)))
					ret = pg_fail(why, wl, ln, "second HELP for %.*s", (int)nl, s + 7);
				else if (st.hstage)
					ret = pg_fail(why, wl, ln, "histogram series left unfinished");
				/* HELP opens a family: the TYPE that follows must name it */
				snprintf(st.family, sizeof(st.family), "%.*s", (int)nl, s + 7);
				st.type = 0;
				continue;
			}
			if (st.type || strlen(st.family) != nl || memcmp(st.family, s + 7, nl)) {
				ret = pg_fail(why, wl, ln, "TYPE not right after its HELP");
				break;
			}
			if (rn == 8 && !memcmp(rest, " counter", 8))
				st.type = 1;
			else if (rn == 6 && !memcmp(rest, " gauge", 6))
				st.type = 2;
			else if (rn == 10 && !memcmp(rest, " histogram", 10))
				st.type = 3;
			else
				ret = pg_fail(why, wl, ln, "unknown type '%.*s'", (int)rn, rest);
			if (st.type == 1 && !pg_ends(st.family, nl, "_total"))
				ret = pg_fail(why, wl, ln, "counter without _total");
			continue;
		}
		if (n && s[0] == '#') {
			ret = pg_fail(why, wl, ln, "unexpected comment");
			break;
		}
		ret = pg_sample(&st, s, n, ln, why, wl);
	}
	if (!ret && st.hstage)
		ret = pg_fail(why, wl, ln, "histogram series left unfinished");
	free(st.seen);
	return ret;
}

#endif
