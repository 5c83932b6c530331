/*
 * L7 parser throughput on one core: for every registered parser that has a
 * synthetic generator below, a realistic stream of exchanges is fed
 * repeatedly (one feed per message / datagram, as a socket or reassembly
 * would deliver it) and timed with the thread's CPU clock.
 *
 * Prints, per parser:  l7_<name>_throughput: MB/s, l7_<name>_exchanges:
 * exchanges/s, and l7_<name>_allocs_per_exchange (steady state, after one
 * warm-up pass), counted by interposing malloc & co. in this program (not in
 * sanitizer builds, where the sanitizer owns malloc).
 *
 * Adding a protocol: write a generator and add a line to generators[].
 *
 *   bench_l7 [--seconds S] [--only NAME]
 */
#include "l7/l7.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- allocation counting ------------------------------------------------- */

static volatile int count_allocs;
static unsigned long long nallocs;

#ifndef EMBER_SANITIZED
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

void *malloc(size_t n)
{
	if (count_allocs)
		nallocs++;
	return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	if (count_allocs)
		nallocs++;
	return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	if (count_allocs)
		nallocs++;
	return __libc_realloc(p, n);
}

void free(void *p)
{
	__libc_free(p);
}
#define ALLOCS_COUNTED 1
#else
#define ALLOCS_COUNTED 0
#endif

/* ---- synthetic streams ------------------------------------------------------- */

struct piece {
	uint8_t dir;
	size_t off, len;
};

struct stream {
	uint8_t *buf;
	size_t len, cap;
	struct piece *p;
	size_t n, pcap;
	size_t prologue;    /* pieces fed once (e.g. the HTTP/2 preface) */
	size_t exchanges;   /* per pass over the repeated part */
};

static void add(struct stream *s, int dir, const void *data, size_t len)
{
	if (s->len + len > s->cap) {
		s->cap = (s->len + len) * 2 + 4096;
		s->buf = realloc(s->buf, s->cap);
	}
	if (s->n == s->pcap) {
		s->pcap = s->pcap * 2 + 64;
		s->p = realloc(s->p, s->pcap * sizeof(*s->p));
	}
	if (!s->buf || !s->p) {
		fprintf(stderr, "bench_l7: out of memory\n");
		exit(1);
	}
	memcpy(s->buf + s->len, data, len);
	s->p[s->n++] = (struct piece){ .dir = (uint8_t)dir, .off = s->len, .len = len };
	s->len += len;
}

#define EXCHANGES 2000

/* A browser-like GET and a typical API response with a small JSON body. */
static void gen_http1(struct stream *s)
{
	char req[2048], resp[2048];

	for (int i = 0; i < EXCHANGES; i++) {
		int rq = snprintf(req, sizeof(req),
			"GET /api/v1/items/%d?fields=name,price&lang=en HTTP/1.1\r\n"
			"Host: shop.example.com\r\n"
			"User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0\r\n"
			"Accept: application/json, text/plain, */*\r\n"
			"Accept-Language: en-US,en;q=0.5\r\n"
			"Accept-Encoding: gzip, deflate, br\r\n"
			"Referer: https://shop.example.com/catalog?page=%d\r\n"
			"Cookie: session=8f14e45fceea167a5a36dedd4bea2543; theme=dark; ab=%d\r\n"
			"Connection: keep-alive\r\n"
			"\r\n", i, i % 50, i % 7);
		char body[160];
		int bl = snprintf(body, sizeof(body),
			"{\"id\":%08d,\"name\":\"item\",\"price\":12.50,\"stock\":3,\"tags\":[\"a\",\"b\"]}", i);
		int rs = snprintf(resp, sizeof(resp),
			"HTTP/1.1 %s\r\n"
			"Date: Mon, 15 Jan 2024 10:00:00 GMT\r\n"
			"Server: nginx/1.24.0\r\n"
			"Content-Type: application/json; charset=utf-8\r\n"
			"Content-Length: %d\r\n"
			"Cache-Control: no-cache\r\n"
			"X-Request-Id: 4c1a7f3e-%08d\r\n"
			"\r\n%s",
			i % 97 ? "200 OK" : "404 Not Found", bl, i, body);
		add(s, L7_DIR_REQ, req, (size_t)rq);
		add(s, L7_DIR_RESP, resp, (size_t)rs);
	}
	s->exchanges = EXCHANGES;
}

static void frame(struct stream *s, int dir, uint8_t type, uint8_t flags, uint32_t sid,
		  const uint8_t *p, size_t n)
{
	uint8_t f[16384 + 9];

	f[0] = (uint8_t)(n >> 16);
	f[1] = (uint8_t)(n >> 8);
	f[2] = (uint8_t)n;
	f[3] = type;
	f[4] = flags;
	f[5] = (uint8_t)(sid >> 24);
	f[6] = (uint8_t)(sid >> 16);
	f[7] = (uint8_t)(sid >> 8);
	f[8] = (uint8_t)sid;
	memcpy(f + 9, p, n);
	add(s, dir, f, n + 9);
}

static size_t hp_lit(uint8_t *p, uint8_t first, const char *name, const char *value)
{
	size_t n = 0, nl = name ? strlen(name) : 0, vl = strlen(value);

	p[n++] = first;
	if (name) {
		p[n++] = (uint8_t)nl;
		memcpy(p + n, name, nl);
		n += nl;
	}
	p[n++] = (uint8_t)vl;
	memcpy(p + n, value, vl);
	return n + vl;
}

/*
 * gRPC-style unary calls on one connection: request HEADERS mixing static
 * and dynamic-table references with literals (one Huffman string), a 200 byte
 * DATA message, response HEADERS + DATA + trailers; 8 streams in flight.
 */
static void gen_http2(struct stream *s)
{
	static const uint8_t settings[] = { 0, 1, 0, 0, 0x10, 0 };
	/* "www.example.com" Huffman-coded (RFC 7541 C.4.1). */
	static const uint8_t huff_authority[] = { 0x41, 0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a,
						  0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff };
	uint8_t blk[512], data[512];
	uint32_t sid = 1;

	add(s, L7_DIR_REQ, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
	frame(s, L7_DIR_REQ, 4, 0, 0, settings, sizeof(settings));
	frame(s, L7_DIR_RESP, 4, 0, 0, settings, sizeof(settings));
	s->prologue = s->n;
	memset(data, 'd', sizeof(data));
	data[0] = 0;
	for (int i = 0; i < EXCHANGES; i += 8) {
		for (int k = 0; k < 8; k++) {
			size_t n = 0;
			char path[64];

			snprintf(path, sizeof(path), "/shop.v1.Catalog/GetItem%d", (i + k) % 16);
			blk[n++] = 0x83;                                   /* :method POST */
			blk[n++] = 0x86;                                   /* :scheme http */
			n += hp_lit(blk + n, 0x04, NULL, path);            /* :path, not indexed */
			memcpy(blk + n, huff_authority, sizeof(huff_authority));
			n += sizeof(huff_authority);                       /* :authority, indexed */
			n += hp_lit(blk + n, 0x5f, NULL, "application/grpc"); /* content-type (31) */
			n += hp_lit(blk + n, 0x40, "te", "trailers");
			n += hp_lit(blk + n, 0x40, "grpc-timeout", "1S");
			frame(s, L7_DIR_REQ, 1, 0x4, sid + 2u * (uint32_t)k, blk, n);
			frame(s, L7_DIR_REQ, 0, 0x1, sid + 2u * (uint32_t)k, data, 200);
		}
		for (int k = 7; k >= 0; k--) {
			size_t n = 0;

			blk[n++] = 0x88;                                   /* :status 200 */
			n += hp_lit(blk + n, 0x5f, NULL, "application/grpc");
			frame(s, L7_DIR_RESP, 1, 0x4, sid + 2u * (uint32_t)k, blk, n);
			frame(s, L7_DIR_RESP, 0, 0x0, sid + 2u * (uint32_t)k, data, 300);
			n = hp_lit(blk, 0x40, "grpc-status", "0");
			frame(s, L7_DIR_RESP, 1, 0x5, sid + 2u * (uint32_t)k, blk, n);
		}
		sid += 16;
	}
	s->exchanges = EXCHANGES;
}

static size_t dns_msg(uint8_t *m, unsigned id, bool resp, int i)
{
	static const uint8_t ans[] = {
		/* CNAME to the question name (pointer 0x0c), then two A records for it */
		0xc0, 0x0c, 0x00, 0x05, 0x00, 0x01, 0x00, 0x00, 0x01, 0x2c, 0x00, 0x02, 0xc0, 0x0c,
		0xc0, 0x0c, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x01, 0x2c, 0x00, 0x04, 10, 1, 2, 3,
		0xc0, 0x0c, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x01, 0x2c, 0x00, 0x04, 10, 1, 2, 4,
	};
	char name[64];
	size_t n = 12;
	char *lab;

	m[0] = (uint8_t)(id >> 8);
	m[1] = (uint8_t)id;
	m[2] = resp ? 0x81 : 0x01;
	m[3] = resp ? 0x80 : 0x00;
	m[4] = 0;
	m[5] = 1;
	m[6] = 0;
	m[7] = resp ? 3 : 0;
	memset(m + 8, 0, 4);
	snprintf(name, sizeof(name), "api%d.service.example.com", i % 100);
	for (lab = strtok(name, "."); lab; lab = strtok(NULL, ".")) {
		m[n++] = (uint8_t)strlen(lab);
		memcpy(m + n, lab, strlen(lab));
		n += strlen(lab);
	}
	m[n++] = 0;
	m[n++] = 0;
	m[n++] = 1;
	m[n++] = 0;
	m[n++] = 1;
	if (resp) {
		memcpy(m + n, ans, sizeof(ans));
		n += sizeof(ans);
	}
	return n;
}

/* A resolver answering A queries with CNAME + 2 A records, over UDP. */
static void gen_dns(struct stream *s)
{
	uint8_t m[512];

	for (int i = 0; i < EXCHANGES; i++) {
		add(s, L7_DIR_REQ, m, dns_msg(m, (unsigned)i, false, i));
		add(s, L7_DIR_RESP, m, dns_msg(m, (unsigned)i, true, i));
	}
	s->exchanges = EXCHANGES;
}

static const struct generator {
	const char *name;
	enum l7_transport transport;
	void (*gen)(struct stream *s);
} generators[] = {
	{ "http1", L7_TRANSPORT_TCP, gen_http1 },
	{ "http2", L7_TRANSPORT_TCP, gen_http2 },
	{ "dns", L7_TRANSPORT_UDP, gen_dns },
	/* BENCH_GENERATORS_END */
};

/* ---- measuring ------------------------------------------------------------------ */

static unsigned long long records;

static void on_rec(void *ctx, const struct l7_record *rec)
{
	(void)ctx;
	(void)rec;
	records++;
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int pass(const struct l7_parser_ops *ops, void *st, const struct stream *s, size_t from)
{
	for (size_t i = from; i < s->n; i++) {
		const struct piece *p = &s->p[i];
		int err = ops->feed(st, (enum l7_dir)p->dir, s->buf + p->off, p->len, 1000 * i);

		if (err < 0)
			return err;
	}
	return 0;
}

static int bench_one(const struct l7_parser_ops *ops, const struct generator *g, double seconds)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct stream s = { 0 };
	unsigned long long passes = 0, allocs;
	size_t bytes = 0;
	double t0, t;
	void *st;
	int err;

	g->gen(&s);
	for (size_t i = s.prologue; i < s.n; i++)
		bytes += s.p[i].len;
	cfg.transport = g->transport;
	st = ops->create(&cfg, on_rec, NULL);
	if (!st) {
		fprintf(stderr, "bench_l7: %s: create failed\n", g->name);
		return -1;
	}
	err = pass(ops, st, &s, 0); /* warm-up: first allocations, detection of tables */
	records = 0;
	nallocs = 0;
	count_allocs = 1;
	t0 = cpu_now();
	do {
		err = err ? err : pass(ops, st, &s, s.prologue);
		passes++;
		t = cpu_now() - t0;
	} while (!err && t < seconds);
	count_allocs = 0;
	allocs = nallocs;
	ops->finish(st, 0);
	ops->free(st);
	free(s.buf);
	free(s.p);
	if (err) {
		fprintf(stderr, "bench_l7: %s: parser failed on its synthetic stream (%s)\n", g->name, strerror(-err));
		return -1;
	}
	if (records != passes * s.exchanges)
		fprintf(stderr, "bench_l7: %s: %llu records for %llu exchanges\n", g->name, records,
			passes * (unsigned long long)s.exchanges);
	printf("l7_%s_throughput: %.1f MB/s\n", g->name, (double)bytes * (double)passes / t / 1e6);
	printf("l7_%s_exchanges: %.0f exchanges/s\n", g->name, (double)records / t);
	if (ALLOCS_COUNTED)
		printf("l7_%s_allocs_per_exchange: %.3f allocs\n", g->name,
		       (double)allocs / (double)(passes * s.exchanges));
	return 0;
}

int main(int argc, char **argv)
{
	const struct l7_parser_ops *ops;
	const char *only = NULL;
	double seconds = 1.0;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--only") && i + 1 < argc)
			only = argv[++i];
		else {
			fprintf(stderr, "usage: bench_l7 [--seconds S] [--only NAME]\n");
			return 2;
		}
	}
	for (unsigned i = 0; (ops = l7__at(i)); i++) {
		const struct generator *g = NULL;

		if (only && strcmp(only, ops->name))
			continue;
		for (size_t k = 0; k < sizeof(generators) / sizeof(generators[0]); k++)
			if (!strcmp(generators[k].name, ops->name))
				g = &generators[k];
		if (!g) {
			fprintf(stderr, "bench_l7: %s: no synthetic generator, skipped\n", ops->name);
			continue;
		}
		if (bench_one(ops, g, seconds) < 0)
			rc = 1;
	}
	return rc;
}
