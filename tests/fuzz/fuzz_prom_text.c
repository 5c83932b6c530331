/*
 * Fuzzes exporter/prom_text: the input is a script of meter updates (names,
 * labels, help, values, histogram buckets all taken from the bytes, with a
 * small dictionary so families, suffixes and reserved names collide),
 * expiries and renders on a small table.  Every rendering must pass the
 * independent grammar checker (tests/fuzz/prom_grammar.h) and agree with the
 * table's statistics.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/prom_text.h"
#include "tests/fuzz/prom_grammar.h"

struct in { const uint8_t *p; size_t n; };

static unsigned byte(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static double dbl(struct in *in)
{
	uint64_t u = 0;
	double d;
	for (int i = 0; i < 8; i++)
		u = u << 8 | byte(in);
	memcpy(&d, &u, sizeof(d));
	return d;
}

/* Strings live in one arena per input: the table copies what it keeps. */
struct arena { char buf[1 << 16]; size_t used; };

static const char *str(struct in *in, struct arena *a, const char *const *dict, size_t ndict)
{
	unsigned c = byte(in);
	size_t len;
	char *s;

	if (dict && (c & 0x80))
		return dict[(c & 0x7f) % ndict];
	if (c == 0x7f)
		len = PROM_MAX_LABEL_VALUE + (byte(in) & 3);	/* around the limit */
	else
		len = c & 0x3f;
	if (a->used + len + 1 > sizeof(a->buf))
		return "";
	s = a->buf + a->used;
	if (c == 0x7f) {
		memset(s, 'a' + (int)(byte(in) % 26), len);
	} else {
		for (size_t i = 0; i < len; i++)
			s[i] = (char)byte(in);
	}
	s[len] = '\0';	/* an embedded NUL just ends the string early */
	a->used += len + 1;
	return s;
}

static const char *const names[] = { "a", "a_total", "h", "h_bucket", "h_sum", "h_count", "b:c", "9x", "x.y", "" };
static const char *const lnames[] = { "le", "quantile", "a", "b", "__x", "a.b", "a-b", "k" };

static void check(struct prom_table *t, struct prom_buf *b)
{
	char why[512];
	struct prom_table_stats st;
	size_t types = 0;

	if (prom_table__render(t, b))
		return;	/* out of memory: nothing to check */
	if (prom_grammar_check(b->p, b->len, why, sizeof(why))) {
		fprintf(stderr, "grammar: %s\n---\n%s---\n", why, b->p);
		abort();
	}
	prom_table__stats(t, &st);
	for (const char *p = b->p; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		types += !strncmp(p, "# TYPE ", 7);	/* at a line start: help texts may contain it */
	if (types != st.families || st.series > st.series_added) {
		fprintf(stderr, "%zu TYPE lines for %llu families\n", types, (unsigned long long)st.families);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	static struct arena a;
	struct prom_buf b = { 0 };
	struct prom_table *t = prom_table__new(1 + byte(&in) % 48);
	uint64_t now = 0;
	struct prom_table_stats st;

	if (!t)
		return 0;
	a.used = 0;
	while (in.n) {
		unsigned op = byte(&in);
		struct prom_label labels[PROM_MAX_LABELS + 1];
		struct prom_bucket bk[PROM_MAX_BUCKETS + 2];
		struct prom_meter m = { 0 };

		now += byte(&in);
		if ((op & 7) == 7) {
			prom_table__expire(t, now, byte(&in) * 4);
			continue;
		}
		if ((op & 7) == 6) {
			check(t, &b);
			continue;
		}
		m.name = (op & 0x10) ? names[byte(&in) % (sizeof(names) / sizeof(names[0]))] : str(&in, &a, NULL, 0);
		m.is_counter = !!(op & 0x20);
		m.value = dbl(&in);
		if (op & 0x08)
			m.help = str(&in, &a, NULL, 0);
		m.n_labels = byte(&in);
		m.n_labels = m.n_labels == 0xff ? PROM_MAX_LABELS + 1 : m.n_labels % 5;
		m.labels = labels;
		for (size_t i = 0; i < m.n_labels; i++) {
			labels[i].name = str(&in, &a, lnames, sizeof(lnames) / sizeof(lnames[0]));
			labels[i].value = byte(&in) == 0 ? NULL : str(&in, &a, NULL, 0);
		}
		if (op & 0x40) {
			unsigned nb = byte(&in);
			double ub = -1;
			uint64_t cnt = 0;

			m.n_buckets = nb == 0xff ? PROM_MAX_BUCKETS + 1 : 1 + nb % 6;
			m.buckets = bk;
			for (size_t i = 0; i < m.n_buckets; i++) {
				unsigned k = byte(&in);
				if (k & 0x80) {	/* raw: mostly invalid layouts */
					bk[i].upper_bound = dbl(&in);
					bk[i].count = byte(&in);
				} else {	/* well-formed: increasing bounds, cumulative counts */
					ub += 0.25 * (1 + (k & 7));
					cnt += k >> 3;
					bk[i].upper_bound = (op & 0x80) && i + 1 == m.n_buckets ? INFINITY : ub;
					bk[i].count = cnt;
				}
			}
			m.hist_count = bk[m.n_buckets - 1].count + (byte(&in) & 1);
		}
		prom_table__update(t, &m, now);
	}
	check(t, &b);
	prom_table__stats(t, &st);
	if (st.series > 48 || st.families > st.series)
		abort();
	prom_buf__release(&b);
	prom_table__free(t);
	return 0;
}
