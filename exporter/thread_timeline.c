/*
 * Thread timeline: events kept in one array, their strings interned once in
 * an arena (a stack or a comm repeats in thousands of events), threads in a
 * small table keyed by (tgid, tid).  The HTML carries the data as one JSON
 * island (a string table, the threads, the events as arrays of numbers) and
 * draws it with its own script: 200k events are ~60 bytes each, where one
 * SVG rect with its tooltip per event would be ~1 KiB.
 *
 * The page's script and style are in this file as string constants; they
 * are the page's code, not data, and never see a byte of the events but
 * through JSON.parse and textContent (never innerHTML).
 */
#include "exporter/thread_timeline.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exporter/utf8.h"

/* Arena bytes allowed per event of max_events (the header's contract). */
#define ARENA_BYTES_PER_EVENT 512u
#define ARENA_MIN_CAP	      (64u * 1024)
/* String id 0 is "": an absent attribute costs one digit per event. */
#define STR_NONE	      0u
#define NO_SLOT		      0u

struct tl_rec {
	uint64_t start, end, dur, count;
	uint32_t thread;
	uint32_t name, type, stack, file, sock, futex;
	bool ongoing;
};

struct tl_str {
	uint32_t off, len, hash;
};

struct tl_thread {
	uint32_t tid, tgid;
	uint32_t comm, proc;	/* the last non-empty ones reported */
};

struct thread_timeline {
	size_t max_events;

	struct tl_rec *recs;
	size_t nrecs, recs_cap;

	char *arena;
	size_t arena_len, arena_cap, arena_limit;
	struct tl_str *strs;
	uint32_t nstrs, strs_cap;
	uint32_t *str_ht;	/* string id + 1 per slot, 0 = empty */
	uint32_t str_ht_mask;

	struct tl_thread *threads;
	uint32_t nthreads, threads_cap;
	uint32_t *thr_ht;	/* thread index + 1 per slot, 0 = empty */
	uint32_t thr_ht_mask;

	uint64_t t0, t1;	/* first start, last end */
	uint64_t dropped, invalid;
};

/* The five types of the manual, in the legend's and the summary's order. */
static const struct {
	const char *type, *color;
} TYPES[] = {
	{ "oncpu", "#e8702a" },
	{ "file", "#3b7dd8" },
	{ "net", "#2ca58d" },
	{ "lock", "#c0392b" },
	{ "sched", "#8e6bbf" },
};
#define OTHER_COLOR "#9a9a9a"

static uint32_t hash_bytes(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static uint32_t hash_thread(uint32_t tgid, uint32_t tid)
{
	uint64_t k = ((uint64_t)tgid << 32 | tid) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(k >> 32);
}

/*
 * Makes room in a table of ids + 1 for one more of the n ids it holds
 * (ids from..n-1): rebuilt at twice the size past half full, before the
 * insertion, so a failed allocation leaves the table as it was.
 */
static int ht_reserve(uint32_t **ht, uint32_t *mask, uint32_t from, uint32_t n,
		      uint32_t (*hash_of)(const struct thread_timeline *, uint32_t),
		      const struct thread_timeline *tl)
{
	uint32_t cap = *ht ? (*mask + 1) * 2 : 1024, *nt;

	if (*ht && ((uint64_t)n + 1) * 2 <= (uint64_t)*mask + 1)
		return 0;
	if (cap == 0)
		return -ENOMEM;
	nt = calloc(cap, sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	for (uint32_t id = from; id < n; id++) {
		uint32_t i = hash_of(tl, id) & (cap - 1);

		while (nt[i] != NO_SLOT)
			i = (i + 1) & (cap - 1);
		nt[i] = id + 1;
	}
	free(*ht);
	*ht = nt;
	*mask = cap - 1;
	return 0;
}

static uint32_t str_hash_of(const struct thread_timeline *tl, uint32_t id)
{
	return tl->strs[id].hash;
}

static uint32_t thr_hash_of(const struct thread_timeline *tl, uint32_t id)
{
	return hash_thread(tl->threads[id].tgid, tl->threads[id].tid);
}

static int grow(void **p, size_t *cap, size_t want, size_t elem, size_t limit)
{
	size_t n = *cap ? *cap : 64;
	void *np;

	if (want <= *cap)
		return 0;
	if (want > limit)
		return -ENOSPC;
	while (n < want)
		n *= 2;
	if (n > limit)
		n = limit;
	np = reallocarray(*p, n, elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = n;
	return 0;
}

static int intern(struct thread_timeline *tl, const char *s, uint32_t *ret_id)
{
	size_t len = s ? strlen(s) : 0;
	uint32_t h, i;
	int err;

	if (!len) {
		*ret_id = STR_NONE;
		return 0;
	}
	h = hash_bytes(s, len);
	for (i = h & tl->str_ht_mask; tl->str_ht[i] != NO_SLOT; i = (i + 1) & tl->str_ht_mask) {
		const struct tl_str *e = &tl->strs[tl->str_ht[i] - 1];

		if (e->hash == h && e->len == len && !memcmp(tl->arena + e->off, s, len)) {
			*ret_id = tl->str_ht[i] - 1;
			return 0;
		}
	}
	if (len > tl->arena_limit - tl->arena_len)
		return -ENOSPC;
	if (tl->arena_len + len > tl->arena_cap) {
		size_t cap = tl->arena_cap ? tl->arena_cap : ARENA_MIN_CAP;

		while (cap < tl->arena_len + len)
			cap *= 2;
		if (cap > tl->arena_limit)
			cap = tl->arena_limit;
		char *na = realloc(tl->arena, cap);
		if (!na)
			return -ENOMEM;
		tl->arena = na;
		tl->arena_cap = cap;
	}
	if (tl->nstrs == tl->strs_cap) {
		size_t cap = tl->strs_cap;

		err = grow((void **)&tl->strs, &cap, (size_t)tl->nstrs + 1, sizeof(*tl->strs), UINT32_MAX - 1);
		if (err)
			return err;
		tl->strs_cap = cap;
	}
	err = ht_reserve(&tl->str_ht, &tl->str_ht_mask, 1, tl->nstrs, str_hash_of, tl);
	if (err)
		return err;
	for (i = h & tl->str_ht_mask; tl->str_ht[i] != NO_SLOT; i = (i + 1) & tl->str_ht_mask)
		;
	memcpy(tl->arena + tl->arena_len, s, len);
	tl->strs[tl->nstrs] = (struct tl_str){ .off = tl->arena_len, .len = len, .hash = h };
	tl->arena_len += len;
	tl->str_ht[i] = ++tl->nstrs;
	*ret_id = tl->nstrs - 1;
	return 0;
}

static int thread_of(struct thread_timeline *tl, uint32_t tgid, uint32_t tid, uint32_t comm,
		     uint32_t proc, uint32_t *ret_idx)
{
	uint32_t i = hash_thread(tgid, tid) & tl->thr_ht_mask;
	struct tl_thread *t;
	int err;

	for (; tl->thr_ht[i] != NO_SLOT; i = (i + 1) & tl->thr_ht_mask) {
		t = &tl->threads[tl->thr_ht[i] - 1];
		if (t->tgid == tgid && t->tid == tid)
			goto found;
	}
	if (tl->nthreads == tl->threads_cap) {
		size_t cap = tl->threads_cap;

		err = grow((void **)&tl->threads, &cap, (size_t)tl->nthreads + 1, sizeof(*tl->threads),
			   UINT32_MAX - 1);
		if (err)
			return err;
		tl->threads_cap = cap;
	}
	err = ht_reserve(&tl->thr_ht, &tl->thr_ht_mask, 0, tl->nthreads, thr_hash_of, tl);
	if (err)
		return err;
	for (i = hash_thread(tgid, tid) & tl->thr_ht_mask; tl->thr_ht[i] != NO_SLOT; i = (i + 1) & tl->thr_ht_mask)
		;
	t = &tl->threads[tl->nthreads];
	*t = (struct tl_thread){ .tid = tid, .tgid = tgid };
	tl->thr_ht[i] = ++tl->nthreads;
found:
	/* A thread renamed (prctl, exec) is shown under its latest name. */
	if (comm != STR_NONE)
		t->comm = comm;
	if (proc != STR_NONE)
		t->proc = proc;
	*ret_idx = t - tl->threads;
	return 0;
}

struct thread_timeline *thread_timeline__new(size_t max_events)
{
	struct thread_timeline *tl = calloc(1, sizeof(*tl));

	if (!tl)
		return NULL;
	tl->max_events = max_events ? max_events : THREAD_TIMELINE_DEFAULT_MAX_EVENTS;
	/* String offsets are 32 bits: the arena stays under 4 GiB whatever max_events is. */
	tl->arena_limit = tl->max_events > (UINT32_MAX - 1) / ARENA_BYTES_PER_EVENT
		? UINT32_MAX - 1 : tl->max_events * ARENA_BYTES_PER_EVENT;
	if (tl->max_events > UINT32_MAX - 1)
		tl->max_events = UINT32_MAX - 1;
	tl->t0 = UINT64_MAX;
	tl->strs_cap = 256;
	tl->strs = calloc(tl->strs_cap, sizeof(*tl->strs));
	if (!tl->strs || ht_reserve(&tl->str_ht, &tl->str_ht_mask, 1, 0, str_hash_of, tl) ||
	    ht_reserve(&tl->thr_ht, &tl->thr_ht_mask, 0, 0, thr_hash_of, tl)) {
		thread_timeline__free(tl);
		errno = ENOMEM;
		return NULL;
	}
	tl->nstrs = 1;	/* STR_NONE: "", never looked up (intern returns it for "") */
	return tl;
}

struct thread_timeline *thread_timeline__free(struct thread_timeline *tl)
{
	if (!tl)
		return NULL;
	free(tl->recs);
	free(tl->arena);
	free(tl->strs);
	free(tl->str_ht);
	free(tl->threads);
	free(tl->thr_ht);
	free(tl);
	return NULL;
}

int thread_timeline__add(struct thread_timeline *tl, const struct tl_event *e)
{
	uint32_t ids[8], thread;
	const char *strs[8];
	struct tl_rec *r;
	int err;

	if (!tl || !e)
		return -EINVAL;
	if (e->end_ns < e->start_ns) {
		tl->invalid++;
		return -EINVAL;
	}
	if (tl->nrecs >= tl->max_events) {
		err = -ENOSPC;
		goto drop;
	}
	err = grow((void **)&tl->recs, &tl->recs_cap, tl->nrecs + 1, sizeof(*tl->recs), tl->max_events);
	if (err)
		goto drop;
	strs[0] = e->name;
	strs[1] = e->type;
	strs[2] = e->stack;
	strs[3] = e->file_path;
	strs[4] = e->sock_conn;
	strs[5] = e->futex_op;
	strs[6] = e->thread_comm;
	strs[7] = e->proc_name;
	/* Strings interned before a failure stay in the arena: bounded by it, harmless. */
	for (size_t i = 0; i < 8; i++) {
		err = intern(tl, strs[i], &ids[i]);
		if (err)
			goto drop;
	}
	err = thread_of(tl, e->tgid, e->tid, ids[6], ids[7], &thread);
	if (err)
		goto drop;
	r = &tl->recs[tl->nrecs++];
	*r = (struct tl_rec){
		.start = e->start_ns, .end = e->end_ns, .dur = e->duration_ns, .count = e->count,
		.thread = thread, .name = ids[0], .type = ids[1], .stack = ids[2], .file = ids[3],
		.sock = ids[4], .futex = ids[5], .ongoing = e->ongoing,
	};
	if (e->start_ns < tl->t0)
		tl->t0 = e->start_ns;
	if (e->end_ns > tl->t1)
		tl->t1 = e->end_ns;
	return 0;
drop:
	tl->dropped++;
	return err;
}

void thread_timeline__stats(const struct thread_timeline *tl, struct thread_timeline_stats *ret)
{
	if (!ret)
		return;
	*ret = (struct thread_timeline_stats){ 0 };
	if (!tl)
		return;
	ret->events = tl->nrecs;
	ret->dropped = tl->dropped;
	ret->invalid = tl->invalid;
	ret->threads = tl->nthreads;
	ret->arena_bytes = tl->arena_len;
}

/* ---- writing ------------------------------------------------------------ */

static void put(FILE *out, const char *s, size_t n)
{
	if (n)
		fwrite(s, 1, n, out);
}

static void puts_(FILE *out, const char *s)
{
	put(out, s, strlen(s));
}

/* Decimal digits of v at the end of buf[21]; returns where they start. */
static char *u64_dec(uint64_t v, char *end)
{
	*--end = '0' + v % 10;
	while ((v /= 10))
		*--end = '0' + v % 10;
	return end;
}

static void put_u64(FILE *out, uint64_t v)
{
	char buf[21], *p = u64_dec(v, buf + sizeof(buf));

	put(out, p, buf + sizeof(buf) - p);
}

/*
 * s[0..n) as the inside of a JSON string that an HTML <script> element can
 * hold: invalid UTF-8 becomes U+FFFD (JSON must be text, and a browser
 * would guess otherwise), controls are \-escaped, "</" is written "<\/" so
 * no "</script" can end the element, and every other '<' is "\u003c" so no
 * "<!--" or "<script" can switch the parser into its escaped states: the
 * island holds no tag opener at all.  U+2028/9 are escaped too: they end a
 * line in older JavaScript.
 */
static void put_json_chars(FILE *out, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t run = 0, i = 0;
	char esc[8];

	while (i < n) {
		unsigned char c = s[i];
		const char *rep = NULL;
		size_t k = 1;

		if (c >= 0x80) {
			k = utf8__char_len(s + i, n - i);
			if (!k) {
				rep = "\\ufffd";
				k = 1;
			} else if (k == 3 && c == 0xe2 && s[i + 1] == 0x80 && (s[i + 2] & 0xfe) == 0xa8) {
				rep = s[i + 2] == 0xa8 ? "\\u2028" : "\\u2029";
			}
		} else if (c == '"') {
			rep = "\\\"";
		} else if (c == '\\') {
			rep = "\\\\";
		} else if (c == '<' && i + 1 < n && s[i + 1] == '/') {
			rep = "<\\/";
			k = 2;
		} else if (c == '<') {
			rep = "\\u003c";
		} else if (c < 0x20 || c == 0x7f) {
			switch (c) {
			case '\n': rep = "\\n"; break;
			case '\r': rep = "\\r"; break;
			case '\t': rep = "\\t"; break;
			case '\b': rep = "\\b"; break;
			case '\f': rep = "\\f"; break;
			default:
				snprintf(esc, sizeof(esc), "\\u%04x", c);
				rep = esc;
			}
		}
		if (rep) {
			put(out, str + i - run, run);
			run = 0;
			puts_(out, rep);
		} else {
			run += k;
		}
		i += k;
	}
	put(out, str + i - run, run);
}

/* s as HTML text or attribute value: markup characters as entities, bad bytes and controls U+FFFD. */
static void put_html(FILE *out, const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	size_t n = strlen((const char *)s), run = 0, i = 0;

	while (i < n) {
		unsigned char c = s[i];
		const char *rep = NULL;
		size_t k = 1;

		if (c >= 0x80) {
			k = utf8__char_len(s + i, n - i);
			if (!k) {
				rep = "\xef\xbf\xbd";
				k = 1;
			}
		} else if (c == '&') {
			rep = "&amp;";
		} else if (c == '<') {
			rep = "&lt;";
		} else if (c == '>') {
			rep = "&gt;";
		} else if (c == '"') {
			rep = "&quot;";
		} else if (c == '\'') {
			rep = "&#39;";
		} else if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f) {
			rep = "\xef\xbf\xbd";
		}
		if (rep) {
			put(out, (const char *)s + i - run, run);
			run = 0;
			puts_(out, rep);
		} else {
			run += k;
		}
		i += k;
	}
	put(out, (const char *)s + i - run, run);
}

static void put_json_str(FILE *out, const struct thread_timeline *tl, uint32_t id)
{
	const struct tl_str *s = &tl->strs[id];

	putc('"', out);
	if (id != STR_NONE)
		put_json_chars(out, tl->arena + s->off, s->len);
	putc('"', out);
}

/* "2024-05-01 12:00:00.123456789 UTC" */
static void put_time(FILE *out, uint64_t ns)
{
	time_t sec = ns / 1000000000u;
	struct tm tm;
	char buf[64];

	if (!gmtime_r(&sec, &tm) || !strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, sizeof(buf), "%" PRIu64, (uint64_t)sec);
	fprintf(out, "%s.%09" PRIu64 " UTC", buf, ns % 1000000000u);
}

struct sort_ctx {
	const struct thread_timeline *tl;
	const uint32_t *rank;	/* a thread's place in (tgid, tid) order */
};

static int cmp_threads(const void *a, const void *b, void *arg)
{
	const struct thread_timeline *tl = arg;
	const struct tl_thread *x = &tl->threads[*(const uint32_t *)a], *y = &tl->threads[*(const uint32_t *)b];

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int cmp_events(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *c = arg;
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
	const struct tl_rec *x = &c->tl->recs[ia], *y = &c->tl->recs[ib];

	if (c->rank[x->thread] != c->rank[y->thread])
		return c->rank[x->thread] < c->rank[y->thread] ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return ia < ib ? -1 : ia > ib;	/* stable: the order they came in */
}

static const char PAGE_STYLE[] =
	"body{font:13px/1.35 system-ui,sans-serif;margin:12px;color:#222;background:#fff}\n"
	"h1{font-size:18px;margin:0 0 4px}h2{font-size:15px;margin:18px 0 6px}h3{font-size:13px;margin:12px 0 4px}\n"
	"header p{margin:2px 0}.warn{color:#a00;font-weight:bold}\n"
	"#controls{margin:8px 0;position:sticky;top:0;background:#fff;padding:4px 0;z-index:1}\n"
	"#controls button{min-width:2.2em;margin-right:2px}#view{margin-left:10px;color:#555}\n"
	".legend span{display:inline-block;margin-right:12px}.legend svg{vertical-align:middle;margin-right:3px}\n"
	"#timeline{display:block;user-select:none;cursor:grab}\n"
	"#timeline .lane{fill:#f4f4f4}#timeline .lab{font-size:11px;fill:#222}\n"
	"#timeline .proc{font-size:12px;font-weight:bold;fill:#000}\n"
	"#timeline .tick{stroke:#ddd;stroke-width:1}#timeline .ticklab{font-size:10px;fill:#555;text-anchor:middle}\n"
	"#timeline .ev:hover{stroke:#000;stroke-width:1}\n"
	"#timeline .ongoing{stroke:#000;stroke-width:1;stroke-dasharray:3 2}\n"
	"#timeline .hatch{pointer-events:none;stroke:none}\n"
	".tip{position:absolute;z-index:2;background:#ffffe8;border:1px solid #888;padding:6px 8px;"
	"white-space:pre;font:12px/1.3 ui-monospace,monospace;max-width:900px;overflow:hidden;"
	"pointer-events:none;box-shadow:2px 2px 6px rgba(0,0,0,.25)}\n"
	"table{border-collapse:collapse;margin-bottom:6px}td,th{border:1px solid #ccc;padding:2px 6px;"
	"text-align:right;white-space:nowrap}td:first-child,th:first-child{text-align:left}\n"
	"tr.total td{font-weight:bold}.proc-sum{margin-bottom:14px}.pie{margin:4px 0}\n";

/*
 * The page's script.  Its DOM use stays within what
 * tests/integration/timeline_html_check.js stubs (getElementById,
 * createElement[NS], setAttribute, textContent, addEventListener), so the
 * test runs this very code; no "//" comments, so one line could hold it all.
 */
static const char PAGE_SCRIPT[] =
	"(function () {\n"
	"'use strict';\n"
	"var doc = document;\n"
	"var D = JSON.parse(doc.getElementById('tl-data').textContent);\n"
	"var S = D.strings, TH = D.threads, EV = D.events;\n"
	"var SPAN = Math.max(D.span, 1);\n"
	"var svg = doc.getElementById('timeline'), NS = svg.namespaceURI;\n"
	"var gAxis = doc.getElementById('axis'), gLanes = doc.getElementById('lanes');\n"
	"var tip = doc.getElementById('tip'), viewText = doc.getElementById('view');\n"
	"var LABEL_W = 240, ROW_H = 16, PROC_H = 20, AXIS_H = 28;\n"
	"var plotW = Math.max(400, Math.floor(((doc.body && doc.body.clientWidth) || 1270) - LABEL_W - 30));\n"
	"var MIN_W = Math.min(SPAN, plotW);\n"
	"var T0 = BigInt(D.t0), E9 = BigInt(1000000000);\n"
	"var view = { a: 0, b: SPAN };\n"
	"var segs = [], rows = [], drag = null;\n"
	"\n"
	"function str(i) { return S[i] || ''; }\n"
	"function make(e, attrs, parent, text) {\n"
	"\tfor (var k in attrs)\n"
	"\t\te.setAttribute(k, attrs[k]);\n"
	"\tif (text !== undefined)\n"
	"\t\te.textContent = text;\n"
	"\tif (parent)\n"
	"\t\tparent.appendChild(e);\n"
	"\treturn e;\n"
	"}\n"
	"function el(tag, attrs, parent, text) { return make(doc.createElementNS(NS, tag), attrs, parent, text); }\n"
	"function hel(tag, attrs, parent, text) { return make(doc.createElement(tag), attrs, parent, text); }\n"
	"function color(type) { return D.colors[type] || D.colors.other; }\n"
	"function fmtDur(ns) {\n"
	"\tif (ns < 1e3) return ns + ' ns';\n"
	"\tif (ns < 1e6) return (ns / 1e3).toFixed(3) + ' \\u00b5s';\n"
	"\tif (ns < 1e9) return (ns / 1e6).toFixed(3) + ' ms';\n"
	"\treturn (ns / 1e9).toFixed(3) + ' s';\n"
	"}\n"
	"/* Exact to the ns: the offsets are exact below 2^53 ns (104 days), t0 is a string. */\n"
	"function fmtAbs(rel) {\n"
	"\tvar abs = T0 + BigInt(Math.round(rel)), frac = String(abs % E9);\n"
	"\tvar iso = new Date(Number(abs / E9) * 1000).toISOString();\n"
	"\treturn iso.slice(0, 10) + ' ' + iso.slice(11, 19) + '.' + '000000000'.slice(frac.length) + frac +\n"
	"\t\t' UTC (' + abs + ' ns)';\n"
	"}\n"
	"function threadLabel(t) { return (str(TH[t][2]) || '?') + ' (' + TH[t][1] + ')'; }\n"
	"\n"
	"/* Threads come sorted by (tgid, tid) and events by (thread, start): a lane is a slice. */\n"
	"(function buildRows() {\n"
	"\tvar ei = 0;\n"
	"\tfor (var t = 0; t < TH.length; t++) {\n"
	"\t\tif (t === 0 || TH[t][0] !== TH[t - 1][0]) {\n"
	"\t\t\tvar name = '';\n"
	"\t\t\tfor (var k = t; k < TH.length && TH[k][0] === TH[t][0]; k++)\n"
	"\t\t\t\tif (str(TH[k][3]) && (!name || TH[k][1] === TH[k][0]))\n"
	"\t\t\t\t\tname = str(TH[k][3]);\n"
	"\t\t\trows.push({ tgid: TH[t][0], label: (name || '?') + ' (' + TH[t][0] + ')' });\n"
	"\t\t}\n"
	"\t\tvar first = ei;\n"
	"\t\twhile (ei < EV.length && EV[ei][0] === t)\n"
	"\t\t\tei++;\n"
	"\t\trows.push({ th: t, first: first, end: ei, label: threadLabel(t) });\n"
	"\t}\n"
	"})();\n"
	"\n"
	"function X(t) { return LABEL_W + (t - view.a) * plotW / (view.b - view.a); }\n"
	"\n"
	"function axisLabel(t, step) {\n"
	"\tvar b = view.b, u = b >= 1e9 ? 1e9 : b >= 1e6 ? 1e6 : b >= 1e3 ? 1e3 : 1;\n"
	"\tvar unit = { 1e9: 's', 1e6: 'ms', 1e3: '\\u00b5s', 1: 'ns' }[u];\n"
	"\tvar dec = Math.min(9, Math.max(0, Math.ceil(Math.log10(u / step) - 1e-9)));\n"
	"\treturn '+' + (t / u).toFixed(dec) + ' ' + unit;\n"
	"}\n"
	"\n"
	"function drawAxis(height) {\n"
	"\tgAxis.textContent = '';\n"
	"\tvar w = view.b - view.a, raw = w / Math.max(1, plotW / 110);\n"
	"\tvar p = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));\n"
	"\tvar step = Math.max(1, [1, 2, 5, 10].filter(function (m) { return m * p >= raw; })[0] * p);\n"
	"\tfor (var t = Math.ceil(view.a / step) * step; t <= view.b; t += step) {\n"
	"\t\tvar x = X(t).toFixed(1);\n"
	"\t\tel('line', { x1: x, x2: x, y1: AXIS_H - 6, y2: height, 'class': 'tick' }, gAxis);\n"
	"\t\tel('text', { x: x, y: AXIS_H - 10, 'class': 'ticklab' }, gAxis, axisLabel(t, step));\n"
	"\t}\n"
	"\tviewText.textContent = 'showing ' + axisLabel(view.a, 1e6 > w ? 1 : 1e3) + ' to ' +\n"
	"\t\taxisLabel(view.b, 1e6 > w ? 1 : 1e3) + ' (' + fmtDur(Math.round(w)) + ' of ' + fmtDur(SPAN) + ')';\n"
	"}\n"
	"\n"
	"function flush(seg) {\n"
	"\tvar k = segs.push(seg) - 1;\n"
	"\tvar a = { x: seg.x0.toFixed(2), y: seg.y + 1, width: (seg.x1 - seg.x0).toFixed(2), height: ROW_H - 3,\n"
	"\t\tfill: color(str(seg.type)), 'class': seg.ong ? 'ev ongoing' : 'ev', 'data-seg': k };\n"
	"\tel('rect', a, gLanes);\n"
	"\tif (seg.ong) {\n"
	"\t\ta.fill = 'url(#hatch)';\n"
	"\t\ta['class'] = 'hatch';\n"
	"\t\tdelete a['data-seg'];\n"
	"\t\tel('rect', a, gLanes);\n"
	"\t}\n"
	"}\n"
	"\n"
	"/*\n"
	" * One rect per event, but events of one type that touch within a pixel and\n"
	" * of which one is under 3 px share a rect: the page stays light at any zoom\n"
	" * and the tooltip says how many it holds.\n"
	" */\n"
	"function lane(row, y) {\n"
	"\tvar open = {}, xmax = LABEL_W + plotW;\n"
	"\tel('rect', { x: LABEL_W, y: y, width: plotW, height: ROW_H - 1, 'class': 'lane' }, gLanes);\n"
	"\tel('text', { x: 12, y: y + ROW_H - 4, 'class': 'lab' }, gLanes, row.label);\n"
	"\tfor (var i = row.first; i < row.end; i++) {\n"
	"\t\tvar e = EV[i], s = e[3], en = e[11] ? Math.max(e[4], SPAN) : e[4];\n"
	"\t\tif (s > view.b)\n"
	"\t\t\tbreak;\n"
	"\t\tif (en < view.a)\n"
	"\t\t\tcontinue;\n"
	"\t\tvar x0 = Math.min(Math.max(LABEL_W, X(s)), xmax - 1), x1 = Math.min(xmax, X(en));\n"
	"\t\tif (x1 - x0 < 1)\n"
	"\t\t\tx1 = x0 + 1;\n"
	"\t\tvar key = e[2] + (e[11] ? 'o' : ''), last = open[key];\n"
	"\t\tif (last && x0 <= last.x1 + 0.5 && (x1 - x0 < 3 || last.x1 - last.x0 < 3)) {\n"
	"\t\t\tlast.evs.push(i);\n"
	"\t\t\tlast.x1 = Math.max(last.x1, x1);\n"
	"\t\t\tcontinue;\n"
	"\t\t}\n"
	"\t\tif (last)\n"
	"\t\t\tflush(last);\n"
	"\t\topen[key] = { type: e[2], ong: e[11], x0: x0, x1: x1, y: y, evs: [i] };\n"
	"\t}\n"
	"\tfor (var k in open)\n"
	"\t\tflush(open[k]);\n"
	"}\n"
	"\n"
	"function render() {\n"
	"\tvar height = AXIS_H + 4;\n"
	"\trows.forEach(function (r) { height += r.th === undefined ? PROC_H : ROW_H; });\n"
	"\tsvg.setAttribute('width', LABEL_W + plotW + 10);\n"
	"\tsvg.setAttribute('height', height);\n"
	"\tgLanes.textContent = '';\n"
	"\tsegs = [];\n"
	"\tvar y = AXIS_H;\n"
	"\trows.forEach(function (r) {\n"
	"\t\tif (r.th === undefined) {\n"
	"\t\t\tel('text', { x: 2, y: y + PROC_H - 5, 'class': 'proc' }, gLanes, r.label);\n"
	"\t\t\ty += PROC_H;\n"
	"\t\t} else {\n"
	"\t\t\tlane(r, y);\n"
	"\t\t\ty += ROW_H;\n"
	"\t\t}\n"
	"\t});\n"
	"\tdrawAxis(height);\n"
	"}\n"
	"\n"
	"function describe(seg) {\n"
	"\tvar e = EV[seg.evs[0]], th = TH[e[0]], L = [];\n"
	"\tL.push('event.name: ' + str(e[1]), 'event.type: ' + str(e[2]),\n"
	"\t\t'thread: ' + threadLabel(e[0]), 'process: ' + (str(th[3]) || '?') + ' (' + th[0] + ')',\n"
	"\t\t'start: ' + fmtAbs(e[3]), 'end: ' + fmtAbs(e[4]));\n"
	"\tif (e[11])\n"
	"\t\tL.push('still in progress at the end');\n"
	"\tL.push('duration: ' + fmtDur(e[5]) + ' (' + e[5] + ' ns)', 'count: ' + e[6]);\n"
	"\tif (e[8]) L.push('file.path: ' + str(e[8]));\n"
	"\tif (e[9]) L.push('sock.conn: ' + str(e[9]));\n"
	"\tif (e[10]) L.push('futex.op: ' + str(e[10]));\n"
	"\tif (e[7]) {\n"
	"\t\tL.push('func.stack (root first):');\n"
	"\t\tstr(e[7]).split(';').forEach(function (f) { L.push('  ' + f); });\n"
	"\t}\n"
	"\tif (seg.evs.length > 1)\n"
	"\t\tL.push('', '+' + (seg.evs.length - 1) + ' more ' + str(e[2]) +\n"
	"\t\t\t' events in this bar: zoom in to tell them apart');\n"
	"\treturn L.join('\\n');\n"
	"}\n"
	"\n"
	"function hideTip() { tip.hidden = true; }\n"
	"function setView(a, w) {\n"
	"\tw = Math.min(SPAN, Math.max(MIN_W, w));\n"
	"\ta = Math.min(Math.max(0, a), SPAN - w);\n"
	"\tview.a = a;\n"
	"\tview.b = a + w;\n"
	"\thideTip();\n"
	"\trender();\n"
	"}\n"
	"function zoom(f, frac) {\n"
	"\tvar w = view.b - view.a;\n"
	"\tsetView(view.a + w * frac - w * f * frac, w * f);\n"
	"}\n"
	"function pan(frac) { setView(view.a + (view.b - view.a) * frac, view.b - view.a); }\n"
	"function reset() { setView(0, SPAN); }\n"
	"function plotFrac(ev) {\n"
	"\tvar r = svg.getBoundingClientRect(), f = (ev.clientX - r.left - LABEL_W) / plotW;\n"
	"\treturn Math.min(1, Math.max(0, f));\n"
	"}\n"
	"\n"
	"svg.addEventListener('wheel', function (ev) {\n"
	"\tev.preventDefault();\n"
	"\tzoom(ev.deltaY < 0 ? 0.8 : 1.25, plotFrac(ev));\n"
	"}, { passive: false });\n"
	"svg.addEventListener('mousedown', function (ev) {\n"
	"\tdrag = { x: ev.clientX, a: view.a, w: view.b - view.a };\n"
	"\tev.preventDefault();\n"
	"});\n"
	"doc.addEventListener('mousemove', function (ev) {\n"
	"\tif (!drag)\n"
	"\t\treturn;\n"
	"\tsetView(drag.a - (ev.clientX - drag.x) * drag.w / plotW, drag.w);\n"
	"});\n"
	"doc.addEventListener('mouseup', function () { drag = null; });\n"
	"svg.addEventListener('mouseover', function (ev) {\n"
	"\tvar k = ev.target && ev.target.getAttribute ? ev.target.getAttribute('data-seg') : null;\n"
	"\tif (k === null || drag)\n"
	"\t\treturn hideTip();\n"
	"\ttip.textContent = describe(segs[+k]);\n"
	"\ttip.hidden = false;\n"
	"\ttip.style.left = (ev.pageX + 14) + 'px';\n"
	"\ttip.style.top = (ev.pageY + 14) + 'px';\n"
	"});\n"
	"svg.addEventListener('mouseout', hideTip);\n"
	"doc.getElementById('zoom-in').addEventListener('click', function () { zoom(0.5, 0.5); });\n"
	"doc.getElementById('zoom-out').addEventListener('click', function () { zoom(2, 0.5); });\n"
	"doc.getElementById('pan-left').addEventListener('click', function () { pan(-0.25); });\n"
	"doc.getElementById('pan-right').addEventListener('click', function () { pan(0.25); });\n"
	"doc.getElementById('reset').addEventListener('click', reset);\n"
	"doc.addEventListener('keydown', function (ev) {\n"
	"\tvar f = { '+': function () { zoom(0.5, 0.5); }, '=': function () { zoom(0.5, 0.5); },\n"
	"\t\t'-': function () { zoom(2, 0.5); }, ArrowLeft: function () { pan(-0.25); },\n"
	"\t\tArrowRight: function () { pan(0.25); }, '0': reset }[ev.key];\n"
	"\tif (f && !ev.ctrlKey && !ev.metaKey && !ev.altKey)\n"
	"\t\tf();\n"
	"});\n"
	"\n"
	"/* The summary: per thread the summed duration_ns per type, a stacked bar, a pie per process. */\n"
	"function pie(parent, sums, types, total) {\n"
	"\tvar R = 60, s = el('svg', { width: 2 * R + 4, height: 2 * R + 4, 'class': 'pie' }, parent), a = 0;\n"
	"\ttypes.forEach(function (ty) {\n"
	"\t\tvar v = sums[ty] || 0;\n"
	"\t\tif (!v)\n"
	"\t\t\treturn;\n"
	"\t\tvar f = v / total, t = ty + ': ' + fmtDur(v) + ' (' + (100 * f).toFixed(1) + '%)', p;\n"
	"\t\tif (f >= 0.999999) {\n"
	"\t\t\tp = el('circle', { cx: R + 2, cy: R + 2, r: R, fill: color(ty), 'data-type': ty }, s);\n"
	"\t\t} else {\n"
	"\t\t\tvar a2 = a + f * 2 * Math.PI;\n"
	"\t\t\tvar x1 = R + 2 + R * Math.sin(a), y1 = R + 2 - R * Math.cos(a);\n"
	"\t\t\tvar x2 = R + 2 + R * Math.sin(a2), y2 = R + 2 - R * Math.cos(a2);\n"
	"\t\t\tp = el('path', { d: 'M' + (R + 2) + ',' + (R + 2) + ' L' + x1.toFixed(2) + ',' + y1.toFixed(2) +\n"
	"\t\t\t\t' A' + R + ',' + R + ' 0 ' + (f > 0.5 ? 1 : 0) + ' 1 ' + x2.toFixed(2) + ',' + y2.toFixed(2) + ' Z',\n"
	"\t\t\t\tfill: color(ty), 'data-type': ty }, s);\n"
	"\t\t\ta = a2;\n"
	"\t\t}\n"
	"\t\tel('title', {}, p, t);\n"
	"\t});\n"
	"\treturn s;\n"
	"}\n"
	"\n"
	"function summary() {\n"
	"\tvar root = doc.getElementById('summary'), types = D.types.slice(), seen = {};\n"
	"\tEV.forEach(function (e) { seen[str(e[2])] = 1; });\n"
	"\tObject.keys(seen).sort().forEach(function (ty) { if (types.indexOf(ty) < 0) types.push(ty); });\n"
	"\tvar sums = TH.map(function () { return {}; });\n"
	"\tEV.forEach(function (e) {\n"
	"\t\tvar m = sums[e[0]], ty = str(e[2]);\n"
	"\t\tm[ty] = (m[ty] || 0) + e[5];\n"
	"\t});\n"
	"\troot.textContent = '';\n"
	"\trows.forEach(function (r) {\n"
	"\t\tif (r.th !== undefined)\n"
	"\t\t\treturn;\n"
	"\t\tvar box = hel('div', { 'class': 'proc-sum', 'data-tgid': r.tgid }, root), tot = {}, all = 0;\n"
	"\t\thel('h3', {}, box, r.label);\n"
	"\t\tvar tbl = hel('table', {}, box), hr = hel('tr', {}, tbl);\n"
	"\t\thel('th', {}, hr, 'thread');\n"
	"\t\ttypes.forEach(function (ty) { hel('th', {}, hr, ty || '(none)'); });\n"
	"\t\thel('th', {}, hr, 'total');\n"
	"\t\thel('th', {}, hr, 'share of its time');\n"
	"\t\tvar add = function (label, m, attrs) {\n"
	"\t\t\tvar tr = hel('tr', attrs, tbl), total = 0;\n"
	"\t\t\ttypes.forEach(function (ty) { total += m[ty] || 0; });\n"
	"\t\t\thel('td', {}, tr, label);\n"
	"\t\t\ttypes.forEach(function (ty) {\n"
	"\t\t\t\tvar v = m[ty] || 0;\n"
	"\t\t\t\thel('td', { 'data-type': ty, 'data-ns': v }, tr,\n"
	"\t\t\t\t\tv ? fmtDur(v) + ' (' + (100 * v / total).toFixed(1) + '%)' : '-');\n"
	"\t\t\t});\n"
	"\t\t\thel('td', { 'data-type': '', 'data-ns': total }, tr, fmtDur(total));\n"
	"\t\t\tvar bar = el('svg', { width: 200, height: 12, 'class': 'bar' }, hel('td', {}, tr)), x = 0;\n"
	"\t\t\ttypes.forEach(function (ty) {\n"
	"\t\t\t\tvar v = m[ty] || 0;\n"
	"\t\t\t\tif (!v)\n"
	"\t\t\t\t\treturn;\n"
	"\t\t\t\tvar w = 200 * v / total;\n"
	"\t\t\t\tel('title', {}, el('rect', { x: x.toFixed(2), y: 0, width: w.toFixed(2), height: 12,\n"
	"\t\t\t\t\tfill: color(ty), 'data-type': ty }, bar), ty + ': ' + fmtDur(v));\n"
	"\t\t\t\tx += w;\n"
	"\t\t\t});\n"
	"\t\t\treturn total;\n"
	"\t\t};\n"
	"\t\tfor (var t = 0; t < TH.length; t++) {\n"
	"\t\t\tif (TH[t][0] !== r.tgid)\n"
	"\t\t\t\tcontinue;\n"
	"\t\t\tadd(threadLabel(t), sums[t], { 'data-tid': TH[t][1], 'class': 'thread' });\n"
	"\t\t\ttypes.forEach(function (ty) { tot[ty] = (tot[ty] || 0) + (sums[t][ty] || 0); });\n"
	"\t\t}\n"
	"\t\tall = add('process total', tot, { 'class': 'total' });\n"
	"\t\tif (all)\n"
	"\t\t\tpie(box, tot, types, all);\n"
	"\t});\n"
	"}\n"
	"\n"
	"reset();\n"
	"summary();\n"
	"window.emberTimeline = { view: view, segs: function () { return segs; }, rows: rows, plotW: plotW,\n"
	"\tLABEL_W: LABEL_W, zoom: zoom, pan: pan, reset: reset, describe: describe };\n"
	"})();\n";

int thread_timeline__write_html(const struct thread_timeline *tl, const char *title, FILE *out)
{
	uint32_t *order = NULL, *rank = NULL, *evs = NULL, nproc = 0;
	uint64_t t0, span;
	int err = 0;

	if (!tl || !out)
		return -EINVAL;
	if (!title || !*title)
		title = "ember thread timeline";
	order = malloc(((size_t)tl->nthreads + 1) * sizeof(*order));
	rank = malloc(((size_t)tl->nthreads + 1) * sizeof(*rank));
	evs = malloc((tl->nrecs + 1) * sizeof(*evs));
	if (!order || !rank || !evs) {
		err = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < tl->nthreads; i++)
		order[i] = i;
	qsort_r(order, tl->nthreads, sizeof(*order), cmp_threads, (void *)tl);
	for (uint32_t i = 0; i < tl->nthreads; i++) {
		rank[order[i]] = i;
		if (!i || tl->threads[order[i]].tgid != tl->threads[order[i - 1]].tgid)
			nproc++;
	}
	for (size_t i = 0; i < tl->nrecs; i++)
		evs[i] = i;
	qsort_r(evs, tl->nrecs, sizeof(*evs), cmp_events, &(struct sort_ctx){ .tl = tl, .rank = rank });
	t0 = tl->nrecs ? tl->t0 : 0;
	span = tl->nrecs ? tl->t1 - tl->t0 : 0;

	puts_(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>");
	put_html(out, title);
	puts_(out, "</title>\n<style>\n");
	puts_(out, PAGE_STYLE);
	puts_(out, "</style>\n</head>\n<body>\n<header>\n<h1 id=\"title\">");
	put_html(out, title);
	puts_(out, "</h1>\n<p id=\"range\">");
	if (tl->nrecs) {
		puts_(out, "From ");
		put_time(out, tl->t0);
		puts_(out, " to ");
		put_time(out, tl->t1);
		fprintf(out, " (%.3f s); the axis counts from the start.", span / 1e9);
	} else {
		puts_(out, "No events.");
	}
	fprintf(out, "</p>\n<p id=\"counts\">%" PRIu32 " thread%s in %" PRIu32 " process%s, %zu event%s</p>\n",
		tl->nthreads, tl->nthreads == 1 ? "" : "s", nproc, nproc == 1 ? "" : "es",
		tl->nrecs, tl->nrecs == 1 ? "" : "s");
	if (tl->dropped)
		fprintf(out, "<p id=\"dropped\" class=\"warn\">%" PRIu64 " events dropped (past the limit of %zu "
			"events or out of memory): the timeline and the summary leave them out.</p>\n",
			tl->dropped, tl->max_events);
	if (tl->invalid)
		fprintf(out, "<p id=\"invalid\" class=\"warn\">%" PRIu64 " events rejected (ending before "
			"they start).</p>\n", tl->invalid);
	puts_(out, "</header>\n<noscript><p class=\"warn\">The timeline and its summary are drawn by the "
		   "page's script: allow JavaScript for this file.</p></noscript>\n");
	puts_(out, "<div id=\"controls\"><button id=\"zoom-in\" title=\"zoom in (+, mouse wheel)\">+</button>"
		   "<button id=\"zoom-out\" title=\"zoom out (-, mouse wheel)\">&#8722;</button>"
		   "<button id=\"pan-left\" title=\"earlier (left arrow, or drag)\">&#8592;</button>"
		   "<button id=\"pan-right\" title=\"later (right arrow, or drag)\">&#8594;</button>"
		   "<button id=\"reset\" title=\"the whole time range (0)\">reset</button>"
		   "<span id=\"view\"></span></div>\n<div class=\"legend\" id=\"legend\">");
	for (size_t i = 0; i < sizeof(TYPES) / sizeof(TYPES[0]); i++)
		fprintf(out, "<span><svg width=\"12\" height=\"12\"><rect width=\"12\" height=\"12\" "
			"fill=\"%s\"/></svg>%s</span>", TYPES[i].color, TYPES[i].type);
	puts_(out, "<span><svg width=\"12\" height=\"12\"><rect width=\"12\" height=\"12\" fill=\"" OTHER_COLOR
		   "\"/></svg>other</span><span><svg width=\"24\" height=\"12\"><rect x=\"0.5\" y=\"0.5\" "
		   "width=\"23\" height=\"11\" fill=\"" OTHER_COLOR "\" class=\"ongoing\" stroke=\"#000\" "
		   "stroke-dasharray=\"3 2\"/><rect width=\"24\" height=\"12\" fill=\"url(#hatch)\"/></svg>"
		   "still in progress at the end</span></div>\n");
	puts_(out, "<svg id=\"timeline\" width=\"100\" height=\"10\"><defs><pattern id=\"hatch\" width=\"6\" "
		   "height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"3\" "
		   "height=\"6\" fill=\"rgba(255,255,255,0.6)\"/></pattern></defs><g id=\"axis\"></g>"
		   "<g id=\"lanes\"></g></svg>\n<div id=\"tip\" class=\"tip\" hidden></div>\n"
		   "<h2>Time per type</h2>\n<p>Per thread, the summed duration of its events of each type "
		   "(their calls' own time, not the bars' length).</p>\n<div id=\"summary\"></div>\n");

	/* The data island: one event per line, so a diff or a grep of the file stays useful. */
	puts_(out, "<script type=\"application/json\" id=\"tl-data\">{\"version\":1,\"t0\":\"");
	put_u64(out, t0);
	puts_(out, "\",\"span\":");
	put_u64(out, span);
	fprintf(out, ",\"dropped\":%" PRIu64 ",\"invalid\":%" PRIu64 ",\"max_events\":%zu,\n\"types\":[",
		tl->dropped, tl->invalid, tl->max_events);
	for (size_t i = 0; i < sizeof(TYPES) / sizeof(TYPES[0]); i++)
		fprintf(out, "%s\"%s\"", i ? "," : "", TYPES[i].type);
	puts_(out, "],\"colors\":{");
	for (size_t i = 0; i < sizeof(TYPES) / sizeof(TYPES[0]); i++)
		fprintf(out, "\"%s\":\"%s\",", TYPES[i].type, TYPES[i].color);
	puts_(out, "\"other\":\"" OTHER_COLOR "\"},\n\"strings\":[");
	for (uint32_t i = 0; i < tl->nstrs; i++) {
		if (i)
			putc(',', out);
		if (!(i % 64))
			putc('\n', out);
		put_json_str(out, tl, i);
	}
	puts_(out, "],\n\"threads\":[");
	for (uint32_t i = 0; i < tl->nthreads; i++) {
		const struct tl_thread *t = &tl->threads[order[i]];

		fprintf(out, "%s\n[%" PRIu32 ",%" PRIu32 ",%" PRIu32 ",%" PRIu32 "]", i ? "," : "",
			t->tgid, t->tid, t->comm, t->proc);
	}
	puts_(out, "],\n\"events\":[");
	for (size_t i = 0; i < tl->nrecs; i++) {
		const struct tl_rec *r = &tl->recs[evs[i]];
		const uint64_t num[] = { rank[r->thread], r->name, r->type, r->start - t0, r->end - t0, r->dur,
					 r->count, r->stack, r->file, r->sock, r->futex, r->ongoing };
		char line[sizeof(num) / sizeof(num[0]) * 21 + 8], *p = line;

		if (i)
			*p++ = ',';
		*p++ = '\n';
		*p++ = '[';
		for (size_t k = 0; k < sizeof(num) / sizeof(num[0]); k++) {
			char buf[21], *d = u64_dec(num[k], buf + sizeof(buf));

			if (k)
				*p++ = ',';
			memcpy(p, d, buf + sizeof(buf) - d);
			p += buf + sizeof(buf) - d;
		}
		*p++ = ']';
		put(out, line, p - line);
	}
	puts_(out, "]}</script>\n<script>\n");
	puts_(out, PAGE_SCRIPT);
	puts_(out, "</script>\n</body>\n</html>\n");
	if (fflush(out) || ferror(out))
		err = -EIO;
out:
	free(order);
	free(rank);
	free(evs);
	return err;
}
