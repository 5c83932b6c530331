#include "exporter/prom_text.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum ptype { PT_COUNTER, PT_GAUGE, PT_HISTOGRAM };
static const char *const ptype_names[] = { "counter", "gauge", "histogram" };

struct family {
	char *name;		/* sanitised, "_total" included for counters */
	char *help;		/* escaped; NULL = generic text */
	size_t name_len;
	uint64_t hash;
	int32_t hnext;
	uint32_t nseries;
	enum ptype type;
	int used;
};

struct series {
	char *labels;		/* escaped `a="x",b="y"`, sorted by name; "" when none */
	size_t labels_len;
	struct prom_bucket *buckets;	/* finite bounds only; +Inf is hist_count */
	size_t n_buckets, cap_buckets;
	double value;
	uint64_t hist_count;
	uint64_t updated_ms;
	uint64_t hash;
	int32_t family;
	int32_t hnext;
	int used;
};

struct prom_table {
	size_t max;
	size_t nhash;			/* power of two */
	struct series *series;
	struct family *fams;
	int32_t *s_heads, *f_heads;	/* hash chains, -1 terminated */
	int32_t *s_free, *f_free;	/* free-slot stacks */
	size_t ns_free, nf_free;
	int32_t *order;			/* render scratch */
	struct prom_table_stats st;
};

/* ---- text helpers ------------------------------------------------------------ */

static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}
#define FNV_SEED 0xcbf29ce484222325ull

/* Length of the valid UTF-8 sequence at s (n bytes available), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) { len = 2; cp = c & 0x1f; }
	else if (c >= 0xe0 && c <= 0xef) { len = 3; cp = c & 0x0f; }
	else if (c >= 0xf0 && c <= 0xf4) { len = 4; cp = c & 0x07; }
	else return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* overlong forms, UTF-16 surrogates, beyond U+10FFFF */
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/*
 * Escape in into out (cap bytes, NUL-terminated): '\\' and '\n' always, '"'
 * when quote is set; invalid UTF-8 becomes U+FFFD.  Stops at the last whole
 * character that fits; returns the output length and sets *cut when input
 * was left over.
 */
static size_t escape(const char *in, int quote, char *out, size_t cap, int *cut)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t n = strlen(in), o = 0;

	*cut = 0;
	for (size_t i = 0; i < n;) {
		char tmp[4];
		size_t k = utf8_len(s + i, n - i), w;
		const char *src = tmp;

		if (k == 0) {
			memcpy(tmp, "\xef\xbf\xbd", 3);
			w = 3;
			k = 1;
		} else if (s[i] == '\\') {
			memcpy(tmp, "\\\\", 2);
			w = 2;
		} else if (s[i] == '\n') {
			memcpy(tmp, "\\n", 2);
			w = 2;
		} else if (s[i] == '"' && quote) {
			memcpy(tmp, "\\\"", 2);
			w = 2;
		} else {
			src = (const char *)s + i;
			w = k;
		}
		if (o + w + 1 > cap) {
			*cut = 1;
			break;
		}
		memcpy(out + o, src, w);
		o += w;
		i += k;
	}
	if (cap)
		out[o] = '\0';
	return o;
}

static int is_alpha_(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

int prom_text__sanitize_name(const char *in, int is_label, char *buf, size_t len)
{
	size_t o = 0, n;

	if (!in || !*in)
		return -EINVAL;
	if (is_label)
		while (in[0] == '_' && in[1] == '_')	/* "__" prefixes are Prometheus' own */
			in++;
	n = strlen(in);
	if (n + 2 > len)
		return -ENAMETOOLONG;
	if (is_digit(in[0]))
		buf[o++] = '_';
	for (size_t i = 0; i < n; i++) {
		char c = in[i];
		buf[o++] = is_alpha_(c) || is_digit(c) || (c == ':' && !is_label) ? c : '_';
	}
	buf[o] = '\0';
	return (int)o;
}

int prom_text__format_double(double v, char *buf, size_t len)
{
	int n;

	if (isnan(v))
		return snprintf(buf, len, "NaN");
	if (isinf(v))
		return snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
	/* Shortest of the two precisions that reads back as the same double. */
	n = snprintf(buf, len, "%.15g", v);
	if (strtod(buf, NULL) != v)
		n = snprintf(buf, len, "%.17g", v);
	return n;
}

static int ends_with(const char *s, size_t n, const char *suf)
{
	size_t k = strlen(suf);
	return n >= k && !memcmp(s + n - k, suf, k);
}

/* ---- table ------------------------------------------------------------------- */

struct prom_table *prom_table__new(size_t max_series)
{
	struct prom_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->max = max_series ? max_series : PROM_DEFAULT_MAX_SERIES;
	if (t->max > (1u << 24)) {
		free(t);
		errno = EINVAL;
		return NULL;
	}
	t->nhash = 16;
	while (t->nhash < 2 * t->max)
		t->nhash <<= 1;
	t->series = calloc(t->max, sizeof(*t->series));
	t->fams = calloc(t->max, sizeof(*t->fams));
	t->s_heads = malloc(t->nhash * sizeof(int32_t));
	t->f_heads = malloc(t->nhash * sizeof(int32_t));
	t->s_free = malloc(t->max * sizeof(int32_t));
	t->f_free = malloc(t->max * sizeof(int32_t));
	t->order = malloc(t->max * sizeof(int32_t));
	if (!t->series || !t->fams || !t->s_heads || !t->f_heads || !t->s_free || !t->f_free || !t->order) {
		prom_table__free(t);
		errno = ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < t->nhash; i++)
		t->s_heads[i] = t->f_heads[i] = -1;
	/* Stacks popped from the end: slot 0 first, for a predictable layout. */
	for (size_t i = 0; i < t->max; i++)
		t->s_free[i] = t->f_free[i] = (int32_t)(t->max - 1 - i);
	t->ns_free = t->nf_free = t->max;
	return t;
}

struct prom_table *prom_table__free(struct prom_table *t)
{
	if (!t)
		return NULL;
	for (size_t i = 0; t->series && i < t->max; i++) {
		free(t->series[i].labels);
		free(t->series[i].buckets);
	}
	for (size_t i = 0; t->fams && i < t->max; i++) {
		free(t->fams[i].name);
		free(t->fams[i].help);
	}
	free(t->series);
	free(t->fams);
	free(t->s_heads);
	free(t->f_heads);
	free(t->s_free);
	free(t->f_free);
	free(t->order);
	free(t);
	return NULL;
}

static int32_t family_find(const struct prom_table *t, const char *name, size_t len, uint64_t h)
{
	for (int32_t i = t->f_heads[h & (t->nhash - 1)]; i >= 0; i = t->fams[i].hnext)
		if (t->fams[i].hash == h && t->fams[i].name_len == len && !memcmp(t->fams[i].name, name, len))
			return i;
	return -1;
}

static int32_t family_find_str(const struct prom_table *t, const char *name, size_t len)
{
	return family_find(t, name, len, fnv1a(FNV_SEED, name, len));
}

static int32_t series_find(const struct prom_table *t, int32_t fam, const char *labels, size_t len, uint64_t h)
{
	for (int32_t i = t->s_heads[h & (t->nhash - 1)]; i >= 0; i = t->series[i].hnext) {
		const struct series *s = &t->series[i];
		if (s->hash == h && s->family == fam && s->labels_len == len && !memcmp(s->labels, labels, len))
			return i;
	}
	return -1;
}

static void chain_unlink(int32_t *heads, size_t nhash, uint64_t h, int32_t idx, int32_t *(*next)(void *, int32_t),
			 void *base)
{
	int32_t *p = &heads[h & (nhash - 1)];
	while (*p >= 0) {
		if (*p == idx) {
			*p = *next(base, idx);
			return;
		}
		p = next(base, *p);
	}
}
static int32_t *series_next(void *base, int32_t i) { return &((struct series *)base)[i].hnext; }
static int32_t *family_next(void *base, int32_t i) { return &((struct family *)base)[i].hnext; }

static void family_remove(struct prom_table *t, int32_t fi)
{
	struct family *f = &t->fams[fi];

	chain_unlink(t->f_heads, t->nhash, f->hash, fi, family_next, t->fams);
	free(f->name);
	free(f->help);
	memset(f, 0, sizeof(*f));
	t->f_free[t->nf_free++] = fi;
	t->st.families--;
}

static void series_remove(struct prom_table *t, int32_t si)
{
	struct series *s = &t->series[si];
	int32_t fi = s->family;

	chain_unlink(t->s_heads, t->nhash, s->hash, si, series_next, t->series);
	free(s->labels);
	free(s->buckets);
	memset(s, 0, sizeof(*s));
	t->s_free[t->ns_free++] = si;
	t->st.series--;
	if (--t->fams[fi].nseries == 0)
		family_remove(t, fi);
}

/* Would a new family `name` of type `type` make two families render the same sample name? */
static int name_collides(const struct prom_table *t, const char *name, size_t len, enum ptype type)
{
	static const char *const sfx[] = { "_bucket", "_sum", "_count" };
	char buf[PROM_MAX_NAME + 16];

	for (unsigned i = 0; i < 3; i++) {
		size_t k = strlen(sfx[i]);
		if (type == PT_HISTOGRAM) {
			if (len + k >= sizeof(buf))
				continue;
			memcpy(buf, name, len);
			memcpy(buf + len, sfx[i], k);
			if (family_find_str(t, buf, len + k) >= 0)
				return 1;
		} else if (ends_with(name, len, sfx[i])) {
			int32_t f = family_find_str(t, name, len - k);
			if (f >= 0 && t->fams[f].type == PT_HISTOGRAM)
				return 1;
		}
	}
	return 0;
}

struct lab { char name[PROM_MAX_LABEL_NAME + 2]; const char *value; };

static int lab_cmp(const void *a, const void *b)
{
	return strcmp(((const struct lab *)a)->name, ((const struct lab *)b)->name);
}

/* The canonical, escaped label set; its length or -EINVAL. */
static int build_labels(const struct prom_meter *m, char *out, size_t cap)
{
	struct lab labs[PROM_MAX_LABELS];
	size_t o = 0;

	if (m->n_labels > PROM_MAX_LABELS || (m->n_labels && !m->labels))
		return -EINVAL;
	for (size_t i = 0; i < m->n_labels; i++) {
		const char *v = m->labels[i].value ? m->labels[i].value : "";
		if (prom_text__sanitize_name(m->labels[i].name, 1, labs[i].name, sizeof(labs[i].name)) < 0 ||
		    strlen(v) > PROM_MAX_LABEL_VALUE)
			return -EINVAL;
		/* reserved for histograms' buckets and summaries' quantiles */
		if (!strcmp(labs[i].name, "le") || !strcmp(labs[i].name, "quantile"))
			return -EINVAL;
		labs[i].value = v;
	}
	qsort(labs, m->n_labels, sizeof(labs[0]), lab_cmp);
	out[0] = '\0';
	for (size_t i = 0; i < m->n_labels; i++) {
		size_t nl = strlen(labs[i].name);
		int cut;

		if (i && !strcmp(labs[i].name, labs[i - 1].name))
			return -EINVAL;	/* duplicate (possibly only after sanitising) */
		if (o + nl + 4 + (i > 0) > cap)
			return -EINVAL;
		if (i)
			out[o++] = ',';
		memcpy(out + o, labs[i].name, nl);
		o += nl;
		out[o++] = '=';
		out[o++] = '"';
		o += escape(labs[i].value, 1, out + o, cap - o, &cut);
		if (cut || o + 2 > cap)
			return -EINVAL;
		out[o++] = '"';
		out[o] = '\0';
	}
	return (int)o;
}

static int check_buckets(const struct prom_meter *m, size_t *ret_finite)
{
	size_t n = m->n_buckets;

	if (n > PROM_MAX_BUCKETS || !m->buckets)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		double ub = m->buckets[i].upper_bound;
		if (isnan(ub) || (i && (ub <= m->buckets[i - 1].upper_bound ||
					m->buckets[i].count < m->buckets[i - 1].count)))
			return -EINVAL;
	}
	/* An explicit +Inf bucket must agree with the count it stands for. */
	if (isinf(m->buckets[n - 1].upper_bound) && m->buckets[n - 1].upper_bound > 0) {
		if (m->buckets[n - 1].count != m->hist_count)
			return -EINVAL;
		n--;
	}
	if (n && m->buckets[n - 1].count > m->hist_count)
		return -EINVAL;
	*ret_finite = n;
	return 0;
}

/* The latest non-empty help wins; without memory the old one stays (counted). */
static void set_help(struct prom_table *t, struct family *f, const char *help)
{
	char buf[PROM_MAX_HELP];
	int cut;
	char *dup;

	if (!help || !*help)
		return;
	escape(help, 0, buf, sizeof(buf), &cut);	/* a long text is cut, not refused */
	if (f->help && !strcmp(f->help, buf))
		return;
	dup = strdup(buf);
	if (!dup) {
		t->st.nomem++;
		return;
	}
	free(f->help);
	f->help = dup;
}

int prom_table__update(struct prom_table *t, const struct prom_meter *m, uint64_t now_ms)
{
	char name[PROM_MAX_NAME + 16], labels[PROM_MAX_LABELSET];
	enum ptype type;
	size_t nlen, llen, finite = 0;
	uint64_t fh, sh;
	int32_t fi, si;
	struct series *s;
	int r;

	if (!m)
		return -EINVAL;
	type = m->n_buckets ? PT_HISTOGRAM : m->is_counter ? PT_COUNTER : PT_GAUGE;
	if (!m->name || strlen(m->name) > PROM_MAX_NAME ||
	    (r = prom_text__sanitize_name(m->name, 0, name, sizeof(name))) < 0)
		goto invalid;
	nlen = (size_t)r;
	if (type == PT_COUNTER && !ends_with(name, nlen, "_total")) {
		memcpy(name + nlen, "_total", 7);
		nlen += 6;
	}
	if ((r = build_labels(m, labels, sizeof(labels))) < 0)
		goto invalid;
	llen = (size_t)r;
	if (type == PT_HISTOGRAM && check_buckets(m, &finite))
		goto invalid;

	fh = fnv1a(FNV_SEED, name, nlen);
	fi = family_find(t, name, nlen, fh);
	if (fi >= 0 && t->fams[fi].type != type) {
		t->st.conflicts++;
		return -EEXIST;
	}
	sh = fnv1a(fnv1a(fh, "\xff", 1), labels, llen);
	si = fi >= 0 ? series_find(t, fi, labels, llen, sh) : -1;
	if (si < 0) {
		if (!t->ns_free) {
			t->st.series_dropped++;
			return -ENOSPC;
		}
		if (fi < 0) {
			struct family *f;
			if (name_collides(t, name, nlen, type)) {
				t->st.conflicts++;
				return -EEXIST;
			}
			fi = t->f_free[t->nf_free - 1];
			f = &t->fams[fi];
			f->name = malloc(nlen + 1);
			if (!f->name)
				goto nomem;
			memcpy(f->name, name, nlen + 1);
			f->name_len = nlen;
			f->hash = fh;
			f->type = type;
			f->used = 1;
			f->hnext = t->f_heads[fh & (t->nhash - 1)];
			t->f_heads[fh & (t->nhash - 1)] = fi;
			t->nf_free--;
			t->st.families++;
		}
		si = t->s_free[t->ns_free - 1];
		s = &t->series[si];
		s->labels = malloc(llen + 1);
		if (!s->labels) {
			if (t->fams[fi].nseries == 0)
				family_remove(t, fi);
			goto nomem;
		}
		memcpy(s->labels, labels, llen + 1);
		s->labels_len = llen;
		s->hash = sh;
		s->family = fi;
		s->used = 1;
		s->hnext = t->s_heads[sh & (t->nhash - 1)];
		t->s_heads[sh & (t->nhash - 1)] = si;
		t->ns_free--;
		t->fams[fi].nseries++;
		t->st.series++;
		t->st.series_added++;
	}
	s = &t->series[si];
	if (finite > s->cap_buckets) {
		struct prom_bucket *nb = realloc(s->buckets, finite * sizeof(*nb));
		if (!nb)
			goto nomem;	/* the series keeps its previous value */
		s->buckets = nb;
		s->cap_buckets = finite;
	}
	if (finite)
		memcpy(s->buckets, m->buckets, finite * sizeof(*s->buckets));
	s->n_buckets = finite;
	s->value = m->value;
	s->hist_count = m->hist_count;
	s->updated_ms = now_ms;
	t->st.updates++;
	set_help(t, &t->fams[fi], m->help);
	return 0;
invalid:
	t->st.invalid++;
	return -EINVAL;
nomem:
	t->st.nomem++;
	return -ENOMEM;
}

size_t prom_table__expire(struct prom_table *t, uint64_t now_ms, uint64_t max_age_ms)
{
	size_t n = 0;

	for (size_t i = 0; i < t->max; i++) {
		struct series *s = &t->series[i];
		if (s->used && now_ms > s->updated_ms && now_ms - s->updated_ms > max_age_ms) {
			series_remove(t, (int32_t)i);
			n++;
		}
	}
	t->st.series_expired += n;
	return n;
}

int prom_table__drop(struct prom_table *t, const char *prefix, const char *label, const char *value)
{
	char lname[PROM_MAX_LABEL_NAME + 2], needle[PROM_MAX_LABEL_NAME + 3 * PROM_MAX_LABEL_VALUE + 8];
	char pfx[PROM_MAX_NAME + 2] = "";
	size_t plen, nlen;
	int r, cut, n = 0;

	if (!prefix || !label || !value || strlen(prefix) > PROM_MAX_NAME || strlen(label) > PROM_MAX_LABEL_NAME ||
	    strlen(value) > PROM_MAX_LABEL_VALUE || (r = prom_text__sanitize_name(label, 1, lname, sizeof(lname))) < 0 ||
	    (*prefix && prom_text__sanitize_name(prefix, 0, pfx, sizeof(pfx)) < 0))
		return -EINVAL;
	/* the label as build_labels() renders it: name="escaped value" */
	nlen = (size_t)r;
	memcpy(needle, lname, nlen);
	needle[nlen++] = '=';
	needle[nlen++] = '"';
	nlen += escape(value, 1, needle + nlen, sizeof(needle) - nlen - 1, &cut);
	if (cut)
		return -EINVAL;
	needle[nlen++] = '"';
	needle[nlen] = '\0';
	plen = strlen(pfx);	/* as the names were sanitised */
	for (size_t i = 0; i < t->max; i++) {
		struct series *s = &t->series[i];
		const char *at;

		if (!s->used || strncmp(t->fams[s->family].name, pfx, plen))
			continue;
		/* a whole label: at the start or after a ',', and followed by ',' or the end */
		for (at = strstr(s->labels, needle); at; at = strstr(at + 1, needle))
			if ((at == s->labels || at[-1] == ',') && (at[nlen] == ',' || !at[nlen]))
				break;
		if (at) {
			series_remove(t, (int32_t)i);
			n++;
		}
	}
	t->st.series_dropped_by_label += (uint64_t)n;
	return n;
}

/* ---- rendering --------------------------------------------------------------- */

static int order_cmp(const void *a, const void *b, void *ctx)
{
	const struct prom_table *t = ctx;
	const struct series *x = &t->series[*(const int32_t *)a], *y = &t->series[*(const int32_t *)b];
	int c = x->family == y->family ? 0 : strcmp(t->fams[x->family].name, t->fams[y->family].name);
	return c ? c : strcmp(x->labels, y->labels);
}

struct w {
	struct prom_buf *b;
	int err;
};

static void put(struct w *w, const char *s, size_t n)
{
	if (w->err)
		return;
	if (w->b->len + n + 1 > w->b->cap) {
		size_t cap = w->b->cap ? w->b->cap : 4096;
		char *p;
		while (cap < w->b->len + n + 1)
			cap *= 2;
		p = realloc(w->b->p, cap);
		if (!p) {
			w->err = -ENOMEM;
			return;
		}
		w->b->p = p;
		w->b->cap = cap;
	}
	memcpy(w->b->p + w->b->len, s, n);
	w->b->len += n;
	w->b->p[w->b->len] = '\0';
}
static void puts_(struct w *w, const char *s) { put(w, s, strlen(s)); }

/* name[suffix]{labels[,extra]} value\n */
static void sample(struct w *w, const struct family *f, const char *suffix, const struct series *s,
		   const char *extra, const char *value)
{
	put(w, f->name, f->name_len);
	puts_(w, suffix);
	if (s->labels_len || extra) {
		put(w, "{", 1);
		put(w, s->labels, s->labels_len);
		if (extra) {
			if (s->labels_len)
				put(w, ",", 1);
			puts_(w, extra);
		}
		put(w, "}", 1);
	}
	put(w, " ", 1);
	puts_(w, value);
	put(w, "\n", 1);
}

int prom_table__render(struct prom_table *t, struct prom_buf *out)
{
	struct w w = { out, 0 };
	size_t n = 0;
	int32_t last = -1;

	out->len = 0;
	put(&w, "", 0);	/* out->p is a string even when there is nothing to show */
	for (size_t i = 0; i < t->max; i++)
		if (t->series[i].used)
			t->order[n++] = (int32_t)i;
	qsort_r(t->order, n, sizeof(int32_t), order_cmp, t);
	for (size_t i = 0; i < n && !w.err; i++) {
		const struct series *s = &t->series[t->order[i]];
		const struct family *f = &t->fams[s->family];
		char num[64], le[80];

		if (out->len > PROM_MAX_RENDER) {
			t->st.render_truncated++;
			break;
		}
		if (s->family != last) {
			last = s->family;
			puts_(&w, "# HELP ");
			put(&w, f->name, f->name_len);
			puts_(&w, " ");
			puts_(&w, f->help ? f->help : "ember meter (no description)");
			puts_(&w, "\n# TYPE ");
			put(&w, f->name, f->name_len);
			puts_(&w, " ");
			puts_(&w, ptype_names[f->type]);
			puts_(&w, "\n");
		}
		if (f->type != PT_HISTOGRAM) {
			prom_text__format_double(s->value, num, sizeof(num));
			sample(&w, f, "", s, NULL, num);
			continue;
		}
		for (size_t b = 0; b < s->n_buckets; b++) {
			prom_text__format_double(s->buckets[b].upper_bound, num, sizeof(num));
			snprintf(le, sizeof(le), "le=\"%s\"", num);
			snprintf(num, sizeof(num), "%llu", (unsigned long long)s->buckets[b].count);
			sample(&w, f, "_bucket", s, le, num);
		}
		snprintf(num, sizeof(num), "%llu", (unsigned long long)s->hist_count);
		sample(&w, f, "_bucket", s, "le=\"+Inf\"", num);
		prom_text__format_double(s->value, num, sizeof(num));
		sample(&w, f, "_sum", s, NULL, num);
		snprintf(num, sizeof(num), "%llu", (unsigned long long)s->hist_count);
		sample(&w, f, "_count", s, NULL, num);
	}
	if (w.err) {
		t->st.nomem++;
		out->len = 0;
		if (out->p)
			out->p[0] = '\0';
		return w.err;
	}
	t->st.renders++;
	t->st.render_bytes += out->len;
	return 0;
}

void prom_table__stats(const struct prom_table *t, struct prom_table_stats *ret)
{
	*ret = t->st;
}

void prom_buf__release(struct prom_buf *b)
{
	if (!b)
		return;
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}
