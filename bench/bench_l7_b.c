/*
 * Parse throughput of the MySQL, PostgreSQL, Redis, Kafka, CQL and MongoDB
 * parsers on realistic synthetic conversations, one core.
 *
 * Each generator writes a conversation of typical exchanges (queries with
 * small result sets, cache GETs and SETs, produce batches, finds with a
 * document reply...) as a list of messages, each delivered by its own
 * feed() call as a TCP read would.  The conversation is replayed into fresh
 * parser instances until at least `secs` have elapsed.
 *
 * Output, one line per figure:  l7_<proto>_mb_s: X MB/s  and
 * l7_<proto>_exchanges_s: Y exchanges/s.   Usage: bench_l7_b [secs] [proto]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "l7/l7.h"

extern const struct l7_parser_ops l7_mysql_ops, l7_pgsql_ops, l7_redis_ops, l7_kafka_ops, l7_cql_ops,
	l7_mongo_ops;

struct msg {
	uint8_t dir;
	uint32_t off, len;
};

struct conv {
	uint8_t *buf;
	size_t len, cap;
	struct msg *m;
	size_t n, mcap;
	size_t exchanges;
	/* message being built */
	size_t start;
};

static void die(const char *what)
{
	fprintf(stderr, "bench_l7_b: %s\n", what);
	exit(1);
}

static void put(struct conv *c, const void *p, size_t n)
{
	if (c->len + n > c->cap) {
		c->cap = (c->cap + n) * 2;
		if (!(c->buf = realloc(c->buf, c->cap)))
			die("out of memory");
	}
	memcpy(c->buf + c->len, p, n);
	c->len += n;
}
static void put8(struct conv *c, unsigned v) { uint8_t b = (uint8_t)v; put(c, &b, 1); }
static void be16(struct conv *c, unsigned v) { put8(c, v >> 8); put8(c, v); }
static void be32(struct conv *c, uint32_t v) { be16(c, v >> 16); be16(c, v & 0xffff); }
static void le16(struct conv *c, unsigned v) { put8(c, v); put8(c, v >> 8); }
static void le32(struct conv *c, uint32_t v) { le16(c, v & 0xffff); le16(c, v >> 16); }
static void str(struct conv *c, const char *s) { put(c, s, strlen(s)); }
static void cstr(struct conv *c, const char *s) { put(c, s, strlen(s) + 1); }
static void fill(struct conv *c, int ch, size_t n) { while (n--) put8(c, (unsigned)ch); }
/* Patch a length field written earlier. */
static void patch_be32(struct conv *c, size_t at, uint32_t v)
{
	c->buf[at] = (uint8_t)(v >> 24); c->buf[at + 1] = (uint8_t)(v >> 16);
	c->buf[at + 2] = (uint8_t)(v >> 8); c->buf[at + 3] = (uint8_t)v;
}
static void patch_le32(struct conv *c, size_t at, uint32_t v)
{
	c->buf[at] = (uint8_t)v; c->buf[at + 1] = (uint8_t)(v >> 8);
	c->buf[at + 2] = (uint8_t)(v >> 16); c->buf[at + 3] = (uint8_t)(v >> 24);
}

static void begin(struct conv *c) { c->start = c->len; }
static void end(struct conv *c, uint8_t dir)
{
	if (c->n == c->mcap) {
		c->mcap = c->mcap ? c->mcap * 2 : 1024;
		if (!(c->m = realloc(c->m, c->mcap * sizeof(*c->m))))
			die("out of memory");
	}
	c->m[c->n++] = (struct msg){ dir, (uint32_t)c->start, (uint32_t)(c->len - c->start) };
}

/* ---- MySQL: point selects with a 10-row result set, and inserts ------------ */
static void my_pkt_begin(struct conv *c) { put(c, "\0\0\0", 3); }
static void my_pkt_end(struct conv *c, size_t at, uint8_t seq)
{
	uint32_t n = (uint32_t)(c->len - at - 4);
	c->buf[at] = (uint8_t)n; c->buf[at + 1] = (uint8_t)(n >> 8); c->buf[at + 2] = (uint8_t)(n >> 16);
	c->buf[at + 3] = seq;
}
static void gen_mysql(struct conv *c, unsigned i)
{
	size_t at;
	uint8_t seq = 1;
	char q[128];

	begin(c);
	at = c->len; my_pkt_begin(c); put8(c, 0);
	if (i % 4 == 3) {
		snprintf(q, sizeof(q), "\x03INSERT INTO audit (user_id, action, ts) VALUES (%u, 'login', NOW())", i);
		str(c, q); my_pkt_end(c, at, 0); end(c, 0);
		begin(c);
		at = c->len; my_pkt_begin(c); put8(c, 0);
		put(c, "\x00\x01\x00\x02\x00\x00\x00", 7); my_pkt_end(c, at, 1); end(c, 1);
		return;
	}
	snprintf(q, sizeof(q), "\x03SELECT id, name, email FROM users WHERE org_id = %u ORDER BY id LIMIT 10", i);
	str(c, q); my_pkt_end(c, at, 0); end(c, 0);
	begin(c);
	at = c->len; my_pkt_begin(c); put8(c, 0); put8(c, 3); my_pkt_end(c, at, seq++);
	for (int k = 0; k < 3; k++) {
		at = c->len; my_pkt_begin(c); put8(c, 0);
		str(c, "\x03" "def\x03" "app\x05users\x05users\x04name\x04name\x0c\x21\x00\xfd\x02\x00\x00\xfd\x00\x00\x00\x00\x00");
		my_pkt_end(c, at, seq++);
	}
	at = c->len; my_pkt_begin(c); put8(c, 0); put(c, "\xfe\x00\x00\x22\x00", 5); my_pkt_end(c, at, seq++);
	for (int r = 0; r < 10; r++) {
		at = c->len; my_pkt_begin(c); put8(c, 0);
		str(c, "\x05" "12345\x0c" "Alice Martin\x17" "alice.martin@example.com");
		my_pkt_end(c, at, seq++);
	}
	at = c->len; my_pkt_begin(c); put8(c, 0); put(c, "\xfe\x00\x00\x22\x00", 5); my_pkt_end(c, at, seq++);
	end(c, 1);
}

/* ---- PostgreSQL: simple queries with 10 rows -------------------------------- */
static void pg_msg(struct conv *c, char t, const void *b, size_t n) { put8(c, (unsigned)t); be32(c, (uint32_t)(n + 4)); put(c, b, n); }
#define PGL(c, t, lit) pg_msg((c), (t), (lit), sizeof(lit) - 1)
static void gen_pgsql(struct conv *c, unsigned i)
{
	char q[128];
	int n = snprintf(q, sizeof(q), "SELECT id, name, email FROM users WHERE org_id = %u ORDER BY id LIMIT 10", i);

	begin(c); pg_msg(c, 'Q', q, (size_t)n + 1); end(c, 0);
	begin(c);
	PGL(c, 'T', "\x00\x03id\x00\x00\x00\x40\x01\x00\x01\x00\x00\x00\x17\x00\x04\xff\xff\xff\xff\x00\x00"
		       "name\x00\x00\x00\x40\x01\x00\x02\x00\x00\x00\x19\xff\xff\xff\xff\xff\xff\x00\x00"
		       "email\x00\x00\x00\x40\x01\x00\x03\x00\x00\x00\x19\xff\xff\xff\xff\xff\xff\x00\x00");
	for (int r = 0; r < 10; r++)
		PGL(c, 'D', "\x00\x03\x00\x00\x00\x05" "12345\x00\x00\x00\x0c" "Alice Martin\x00\x00\x00\x18" "alice.martin@example.com");
	pg_msg(c, 'C', "SELECT 10", 10);
	PGL(c, 'Z', "I");
	end(c, 1);
}

/* ---- Redis: GET of 512-byte values, SET, INCR --------------------------------- */
static void gen_redis(struct conv *c, unsigned i)
{
	char k[64];
	int n = snprintf(k, sizeof(k), "session:%08u", i);

	begin(c);
	if (i % 3 == 0) {
		str(c, "*3\r\n$3\r\nSET\r\n");
		snprintf(k + 32, 32, "$%d\r\n", n); str(c, k + 32); put(c, k, (size_t)n); str(c, "\r\n$512\r\n");
		fill(c, 'v', 512); str(c, "\r\n");
		end(c, 0);
		begin(c); str(c, "+OK\r\n"); end(c, 1);
		return;
	}
	str(c, "*2\r\n$3\r\nGET\r\n");
	snprintf(k + 32, 32, "$%d\r\n", n); str(c, k + 32); put(c, k, (size_t)n); str(c, "\r\n");
	end(c, 0);
	begin(c); str(c, "$512\r\n"); fill(c, 'v', 512); str(c, "\r\n"); end(c, 1);
}

/* ---- Kafka: Produce v7 of a 4 KB batch, Fetch v11 returning 8 KB ---------- */
static void gen_kafka(struct conv *c, unsigned i)
{
	size_t at;

	begin(c);
	at = c->len; be32(c, 0);
	if (i % 2 == 0) {
		be16(c, 0); be16(c, 7); be32(c, i); be16(c, 10); str(c, "producer-1");
		be16(c, 0xffff); be16(c, 1); be32(c, 30000); be32(c, 1); be16(c, 6); str(c, "events");
		be32(c, 1); be32(c, 0); be32(c, 4096); fill(c, 0x42, 4096);
		patch_be32(c, at, (uint32_t)(c->len - at - 4)); end(c, 0);
		begin(c); at = c->len; be32(c, 0); be32(c, i);
		be32(c, 1); be16(c, 6); str(c, "events"); be32(c, 1); be32(c, 0); be16(c, 0); fill(c, 0, 28);
		patch_be32(c, at, (uint32_t)(c->len - at - 4)); end(c, 1);
		return;
	}
	be16(c, 1); be16(c, 11); be32(c, i); be16(c, 10); str(c, "consumer-1");
	fill(c, 0, 60);
	patch_be32(c, at, (uint32_t)(c->len - at - 4)); end(c, 0);
	begin(c); at = c->len; be32(c, 0); be32(c, i); be32(c, 0); be16(c, 0); be32(c, 0);
	fill(c, 0x17, 8192);
	patch_be32(c, at, (uint32_t)(c->len - at - 4)); end(c, 1);
}

/* ---- CQL v4: queries answered with a 1 KB Rows result, streams interleaved -- */
static void gen_cql(struct conv *c, unsigned i)
{
	static const char q[] = "SELECT user_id, name, email, created FROM app.users WHERE user_id = ?";
	int16_t s = (int16_t)(i % 128);

	begin(c);
	put8(c, 4); put8(c, 0); be16(c, (unsigned)s); put8(c, 7); be32(c, (uint32_t)(4 + sizeof(q) - 1 + 2 + 1 + 2 + 4 + 4));
	be32(c, sizeof(q) - 1); str(c, q); be16(c, 1); put8(c, 1); be16(c, 1); be32(c, 4); be32(c, 0x12345678);
	end(c, 0);
	begin(c);
	put8(c, 0x84); put8(c, 0); be16(c, (unsigned)s); put8(c, 8); be32(c, 4 + 1024);
	be32(c, 2); fill(c, 0x61, 1024);
	end(c, 1);
}

/* ---- MongoDB: OP_MSG find with a 1.5 KB cursor reply, ok last -------------- */
static void bson_str(struct conv *c, const char *k, const char *v)
{
	put8(c, 2); cstr(c, k); le32(c, (uint32_t)strlen(v) + 1); cstr(c, v);
}
static void gen_mongo(struct conv *c, unsigned i)
{
	size_t at, d, d2;

	begin(c);
	at = c->len; le32(c, 0); le32(c, i + 1); le32(c, 0); le32(c, 2013); le32(c, 0); put8(c, 0);
	d = c->len; le32(c, 0);
	bson_str(c, "find", "orders"); bson_str(c, "$db", "shop");
	put8(c, 3); cstr(c, "filter"); d2 = c->len; le32(c, 0); bson_str(c, "status", "open"); put8(c, 0);
	patch_le32(c, d2, (uint32_t)(c->len - d2));
	put8(c, 0x10); cstr(c, "limit"); le32(c, 10);
	put8(c, 0); patch_le32(c, d, (uint32_t)(c->len - d));
	patch_le32(c, at, (uint32_t)(c->len - at)); end(c, 0);
	begin(c);
	at = c->len; le32(c, 0); le32(c, i + 100000); le32(c, i + 1); le32(c, 2013); le32(c, 0); put8(c, 0);
	d = c->len; le32(c, 0);
	put8(c, 3); cstr(c, "cursor"); d2 = c->len; le32(c, 0);
	for (int k = 0; k < 10; k++) {
		char key[8];
		snprintf(key, sizeof(key), "f%d", k);
		bson_str(c, key, "0123456789012345678901234567890123456789012345678901234567890123456789"
				 "0123456789012345678901234567890123456789012345678901234567890123456789");
	}
	put8(c, 0); patch_le32(c, d2, (uint32_t)(c->len - d2));
	put8(c, 1); cstr(c, "ok"); le32(c, 0); le32(c, 0x3ff00000);
	put8(c, 0); patch_le32(c, d, (uint32_t)(c->len - d));
	patch_le32(c, at, (uint32_t)(c->len - at)); end(c, 1);
}

static void count(void *ctx, const struct l7_record *rec)
{
	(void)rec;
	++*(size_t *)ctx;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void run(const char *name, const struct l7_parser_ops *ops, void (*gen)(struct conv *, unsigned),
		unsigned nex, double secs)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct conv c = { 0 };
	size_t records = 0, bytes = 0, iters = 0;
	double t0, dt;

	for (unsigned i = 0; i < nex; i++)
		gen(&c, i);
	t0 = now();
	do {
		void *st = ops->create(&cfg, count, &records);
		if (!st)
			die("create failed");
		for (size_t k = 0; k < c.n; k++)
			if (ops->feed(st, c.m[k].dir, c.buf + c.m[k].off, c.m[k].len, (uint64_t)k) < 0)
				die("feed failed");
		ops->finish(st, c.n);
		ops->free(st);
		bytes += c.len;
		iters++;
		dt = now() - t0;
	} while (dt < secs);
	if (records != iters * nex) {
		fprintf(stderr, "bench_l7_b: %s: %zu records for %zu exchanges\n", name, records, iters * nex);
		exit(1);
	}
	printf("l7_%s_mb_s: %.0f MB/s\n", name, bytes / dt / 1e6);
	printf("l7_%s_exchanges_s: %.0f exchanges/s\n", name, records / dt);
	free(c.buf);
	free(c.m);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	const char *only = argc > 2 ? argv[2] : NULL;
	static const struct {
		const char *name;
		const struct l7_parser_ops *ops;
		void (*gen)(struct conv *, unsigned);
	} all[] = {
		{ "mysql", &l7_mysql_ops, gen_mysql }, { "pgsql", &l7_pgsql_ops, gen_pgsql },
		{ "redis", &l7_redis_ops, gen_redis }, { "kafka", &l7_kafka_ops, gen_kafka },
		{ "cql", &l7_cql_ops, gen_cql }, { "mongo", &l7_mongo_ops, gen_mongo },
	};

	if (secs <= 0)
		secs = 1.0;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (!only || !strcmp(only, all[i].name))
			run(all[i].name, all[i].ops, all[i].gen, 2000, secs);
	return 0;
}
