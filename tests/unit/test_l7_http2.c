/* HTTP/2 parser and HPACK: RFC 7541 examples, streams, CONTINUATION, splits. */
#include "tests/unit/l7_test.h"
#include "l7/hpack.h"

#include <errno.h>

extern const struct l7_parser_ops l7_http2_ops;
static const struct l7_parser_ops *ops = &l7_http2_ops;

/* ---- HPACK, RFC 7541 Appendix C ------------------------------------------ */

struct hdrs {
	unsigned n, unknown;
	char name[16][64], value[16][128];
};

static void on_hdr(void *ctx, const char *name, size_t nlen, const char *value, size_t vlen, unsigned flags)
{
	struct hdrs *h = ctx;

	if (flags & HPACK_UNKNOWN)
		h->unknown++;
	assert_true(h->n < 16 && nlen < 64 && vlen < 128);
	memcpy(h->name[h->n], name, nlen);
	h->name[h->n][nlen] = 0;
	memcpy(h->value[h->n], value, vlen);
	h->value[h->n][vlen] = 0;
	h->n++;
}

static void decode_hex(struct hpack *hp, const char *hex, struct hdrs *out)
{
	uint8_t b[512];
	size_t n = unhex(hex, b, sizeof(b));

	memset(out, 0, sizeof(*out));
	assert_int_equal(hpack__decode(hp, b, n, on_hdr, out), 0);
}

static void test_hpack_rfc_requests(void **s)
{
	/* C.3 (plain literals) and C.4 (the same requests, Huffman-coded). */
	static const char *const c3[3] = {
		"828684410f7777772e6578616d706c652e636f6d",
		"828684be58086e6f2d6361636865",
		"828785bf400a637573746f6d2d6b65790c637573746f6d2d76616c7565",
	};
	static const char *const c4[3] = {
		"828684418cf1e3c2e5f23a6ba0ab90f4ff",
		"828684be5886a8eb10649cbf",
		"828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf",
	};
	static const size_t sizes[3] = { 57, 110, 164 };
	const char *const *sets[2] = { c3, c4 };

	(void)s;
	for (int set = 0; set < 2; set++) {
		struct hpack *hp = hpack__new(4096);
		struct hdrs h;

		assert_non_null(hp);
		for (int i = 0; i < 3; i++) {
			decode_hex(hp, sets[set][i], &h);
			assert_int_equal(hpack__table_size(hp), sizes[i]);
			assert_int_equal(hpack__table_len(hp), (size_t)i + 1);
			assert_string_equal(h.name[3], ":authority");
			assert_string_equal(h.value[3], "www.example.com");
		}
		assert_int_equal(h.n, 5);
		assert_string_equal(h.value[0], "GET");
		assert_string_equal(h.value[1], "https");
		assert_string_equal(h.value[2], "/index.html");
		assert_string_equal(h.name[4], "custom-key");
		assert_string_equal(h.value[4], "custom-value");
		hpack__free(hp);
	}
}

static void test_hpack_rfc_responses_evict(void **s)
{
	/* C.6: responses with Huffman, table of 256 bytes, entries evicted. */
	static const char *const c6[3] = {
		"488264025885aec3771a4b6196d07abe941054d444a8200595040b8166e082a62d1bff6e919d29ad171863c78f0b97c8e9ae82ae43d3",
		"4883640effc1c0bf",
		"88c16196d07abe941054d444a8200595040b8166e084a62d1bffc05a839bd9ab77ad94e7821dd7f2e6c7b335dfdfcd5b3960d5af27087f3672c1ab270fb5291f9587316065c003ed4ee5b1063d5007",
	};
	static const size_t sizes[3] = { 222, 222, 215 };
	static const size_t lens[3] = { 4, 4, 3 };
	struct hpack *hp = hpack__new(256);
	struct hdrs h;

	(void)s;
	assert_non_null(hp);
	for (int i = 0; i < 3; i++) {
		decode_hex(hp, c6[i], &h);
		assert_int_equal(hpack__table_size(hp), sizes[i]);
		assert_int_equal(hpack__table_len(hp), lens[i]);
	}
	assert_int_equal(h.n, 6);
	assert_string_equal(h.value[0], "200");
	assert_string_equal(h.value[1], "private");
	assert_string_equal(h.value[2], "Mon, 21 Oct 2013 20:13:22 GMT");
	assert_string_equal(h.value[3], "https://www.example.com");
	assert_string_equal(h.name[4], "content-encoding");
	assert_string_equal(h.value[4], "gzip");
	assert_string_equal(h.value[5], "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1");
	assert_true(hpack__stats(hp)->evictions >= 3);
	hpack__free(hp);
}

static void test_hpack_size_update_and_unknown(void **s)
{
	struct hpack *hp = hpack__new(4096);
	struct hdrs h;
	uint8_t bad[] = { 0x82, 0x40 }; /* literal without its name */

	(void)s;
	decode_hex(hp, "400a637573746f6d2d6b65790c637573746f6d2d76616c7565", &h);
	assert_int_equal(hpack__table_len(hp), 1);
	/* Size update to 0 empties the table, then back to 4096 and a new entry. */
	decode_hex(hp, "20" "3fe11f" "4003666f6f03626172", &h);
	assert_int_equal(hpack__table_len(hp), 1);
	assert_int_equal(hpack__table_size(hp), 3 + 3 + 32);
	/* Index 63 is gone (never seen): reported unknown, the rest still decodes. */
	hpack__set_partial(hp, true);
	decode_hex(hp, "bf" "be" "82", &h);
	assert_int_equal(h.n, 3);
	assert_int_equal(h.unknown, 1);
	assert_string_equal(h.name[1], "foo");
	assert_string_equal(h.value[2], "GET");
	assert_int_equal(hpack__decode(hp, bad, sizeof(bad), on_hdr, &h), -EPROTO);
	hpack__free(hp);
}

static void test_huffman_errors(void **s)
{
	char out[16];
	uint8_t eos[] = { 0xff, 0xff, 0xff, 0xff };       /* EOS symbol */
	uint8_t zeros[] = { 0x00 };                        /* '0' then 3 zero bits of padding */
	uint8_t longpad[] = { 0x1f, 0xff };                /* 'a'?? no: 00011 + 11 ones: >7 bits pad */

	(void)s;
	assert_int_equal(hpack__huffman_decode(eos, sizeof(eos), out, sizeof(out)), -EPROTO);
	assert_int_equal(hpack__huffman_decode(zeros, sizeof(zeros), out, sizeof(out)), -EPROTO);
	assert_int_equal(hpack__huffman_decode(longpad, sizeof(longpad), out, sizeof(out)), -EPROTO);
	/* Truncated output still reports the full length. */
	uint8_t www[32];
	size_t n = unhex("f1e3c2e5f23a6ba0ab90f4ff", www, sizeof(www));
	assert_int_equal(hpack__huffman_decode(www, n, out, 4), 15);
	assert_string_equal(out, "www");
}

/* ---- frames ------------------------------------------------------------------ */

struct buf {
	uint8_t b[4096];
	size_t n;
};

static void frame(struct buf *o, uint8_t type, uint8_t flags, uint32_t sid, const void *p, size_t n)
{
	assert_true(o->n + 9 + n <= sizeof(o->b));
	o->b[o->n++] = (uint8_t)(n >> 16);
	o->b[o->n++] = (uint8_t)(n >> 8);
	o->b[o->n++] = (uint8_t)n;
	o->b[o->n++] = type;
	o->b[o->n++] = flags;
	o->b[o->n++] = (uint8_t)(sid >> 24);
	o->b[o->n++] = (uint8_t)(sid >> 16);
	o->b[o->n++] = (uint8_t)(sid >> 8);
	o->b[o->n++] = (uint8_t)sid;
	memcpy(o->b + o->n, p, n);
	o->n += n;
}

/* Literal header with incremental indexing, new name (adds to the table). */
static size_t lit(uint8_t *p, const char *name, const char *value)
{
	size_t n = 0, nl = strlen(name), vl = strlen(value);

	p[n++] = 0x40;
	p[n++] = (uint8_t)nl;
	memcpy(p + n, name, nl);
	n += nl;
	p[n++] = (uint8_t)vl;
	memcpy(p + n, value, vl);
	return n + vl;
}

/* Literal header with indexed name (static), without indexing. */
static size_t lit_idx(uint8_t *p, unsigned idx, const char *value)
{
	size_t vl = strlen(value);

	p[0] = (uint8_t)idx; /* 0000xxxx, idx < 15 */
	p[1] = (uint8_t)vl;
	memcpy(p + 2, value, vl);
	return 2 + vl;
}

struct fix {
	struct l7_config cfg;
	struct rec_log log;
	void *st;
};

static struct fix *fix_new(void)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct l7_config def = L7_CONFIG_DEFAULTS;

	assert_non_null(f);
	f->cfg = def;
	f->st = ops->create(&f->cfg, rec_log_emit, &f->log);
	assert_non_null(f->st);
	return f;
}

static void fix_free(struct fix *f)
{
	ops->free(f->st);
	free(f);
}

#define PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

/*
 * Client: preface, SETTINGS, HEADERS s1 (GET /one, x-id literal indexed),
 * HEADERS s3 split over HEADERS + 2 CONTINUATION (POST /three, references the
 * dynamic entry of s1), DATA s3 END_STREAM.
 * Server: SETTINGS, HEADERS s3 :status 500 (literal, indexed), DATA s3
 * END_STREAM, HEADERS s1 :status 200 (dynamic ref) + END_STREAM, then
 * HEADERS s5 on a stream never requested.
 */
static void build_conversation(struct buf *c, struct buf *sv)
{
	uint8_t blk[256];
	size_t n;

	memset(c, 0, sizeof(*c));
	memset(sv, 0, sizeof(*sv));
	memcpy(c->b, PREFACE, 24);
	c->n = 24;
	frame(c, 4, 0, 0, "\x00\x01\x00\x00\x10\x00", 6);
	n = 0;
	blk[n++] = 0x82;                                   /* :method GET */
	blk[n++] = 0x86;                                   /* :scheme http */
	n += lit_idx(blk + n, 4, "/one");                  /* :path /one */
	n += lit(blk + n, "x-id", "abc");                  /* dynamic 62 */
	frame(c, 1, 0x5, 1, blk, n);                       /* END_STREAM|END_HEADERS */
	n = 0;
	blk[n++] = 0x83;                                   /* :method POST */
	blk[n++] = 0x86;
	n += lit_idx(blk + n, 4, "/three");
	blk[n++] = 0xbe;                                   /* dynamic 62: x-id abc */
	frame(c, 1, 0x0, 3, blk, 3);
	frame(c, 9, 0x0, 3, blk + 3, 4);
	frame(c, 9, 0x4, 3, blk + 7, n - 7);
	frame(c, 0, 0x1, 3, "body", 4);

	frame(sv, 4, 0, 0, "", 0);
	n = 0;
	blk[n++] = 0x8e;                                   /* :status 500 */
	n += lit(blk + n, ":status", "200");               /* dynamic 62 for the server */
	frame(sv, 1, 0x4, 3, blk, 1);                      /* s3: 500 */
	frame(sv, 0, 0x1, 3, "oops", 4);
	frame(sv, 1, 0x5, 1, blk + 1, n - 1);              /* s1: 200, adds to table */
	blk[0] = 0xbe;                                     /* s5: :status 200 from the table */
	frame(sv, 1, 0x5, 5, blk, 1);
}

static void check_conversation(struct fix *f)
{
	assert_int_equal(f->log.n, 3);
	assert_field(&f->log.r[0], "stream_id", "3");
	assert_field(&f->log.r[0], "method", "POST");
	assert_field(&f->log.r[0], "path", "/three");
	assert_field(&f->log.r[0], "status", "500");
	assert_true(f->log.r[0].is_error);
	assert_field(&f->log.r[1], "stream_id", "1");
	assert_field(&f->log.r[1], "method", "GET");
	assert_field(&f->log.r[1], "path", "/one");
	assert_field(&f->log.r[1], "status", "200");
	assert_true(f->log.r[1].req_seq < f->log.r[0].req_seq);
	/* Response on a stream we never saw a request for. */
	assert_field(&f->log.r[2], "stream_id", "5");
	assert_false(f->log.r[2].has_request);
	assert_field(&f->log.r[2], "status", "200");
}

static void test_streams_interleaved(void **s)
{
	struct buf c, sv;

	(void)s;
	build_conversation(&c, &sv);
	for (size_t step = 0; step <= 2; step++) {
		struct fix *f = fix_new();

		feed_steps(ops, f->st, L7_DIR_REQ, c.b, c.n, step, 10);
		feed_steps(ops, f->st, L7_DIR_RESP, sv.b, sv.n, step, 20);
		ops->finish(f->st, 30);
		check_conversation(f);
		fix_free(f);
	}
}

static void test_mid_connection_unknown_refs(void **s)
{
	struct fix *f = fix_new();
	struct buf c = { .n = 0 }, sv = { .n = 0 };
	uint8_t blk[] = { 0x83, 0xc5, 0xbf };              /* POST, dynamic 69, dynamic 63 */
	uint8_t rsp[] = { 0x88 };

	(void)s;
	frame(&c, 1, 0x5, 18131981, blk, sizeof(blk));
	frame(&c, 1, 0x5, 18131983, blk, sizeof(blk));
	frame(&sv, 1, 0x4, 18131983, rsp, sizeof(rsp));
	frame(&sv, 3, 0x0, 18131983, "\x00\x00\x00\x08", 4); /* RST_STREAM ends it */
	frame(&sv, 1, 0x5, 18131981, rsp, sizeof(rsp));
	feed_steps(ops, f->st, L7_DIR_REQ, c.b, c.n, 0, 1);
	feed_steps(ops, f->st, L7_DIR_RESP, sv.b, sv.n, 0, 2);
	assert_int_equal(f->log.n, 2);
	for (int i = 0; i < 2; i++) {
		assert_field(&f->log.r[i], "method", "POST");
		assert_field(&f->log.r[i], "path", "?");
		assert_field(&f->log.r[i], "status", "200");
	}
	assert_field(&f->log.r[0], "stream_id", "18131983");
	fix_free(f);
}

static void test_trailers_grpc(void **s)
{
	struct fix *f = fix_new();
	struct buf c = { .n = 0 }, sv = { .n = 0 };
	uint8_t blk[64], t[64];
	size_t n = 0, tn;

	(void)s;
	blk[n++] = 0x83;
	n += lit_idx(blk + n, 4, "/pkg.Svc/Call");
	frame(&c, 1, 0x4, 1, blk, n);
	frame(&c, 0, 0x1, 1, "\x00\x00\x00\x00\x00", 5);
	frame(&sv, 1, 0x4, 1, "\x88", 1);
	frame(&sv, 0, 0x0, 1, "\x00\x00\x00\x00\x00", 5);
	tn = lit(t, "grpc-status", "14");
	frame(&sv, 1, 0x5, 1, t, tn);
	feed_steps(ops, f->st, L7_DIR_REQ, c.b, c.n, 0, 1);
	feed_steps(ops, f->st, L7_DIR_RESP, sv.b, sv.n, 0, 2);
	assert_int_equal(f->log.n, 1);
	assert_field(&f->log.r[0], "status", "200");
	assert_field(&f->log.r[0], "grpc_status", "14");
	assert_true(f->log.r[0].is_error);
	fix_free(f);
}

/*
 * Live data: a socket call is seen up to a bounded prefix (4 KB), the rest is
 * a gap.  nghttpd answers three streams in one write: HEADERS + 5000 bytes of
 * DATA for s1, then HEADERS + DATA for s3, all past the prefix.  s1 ends with
 * the gap (its DATA header said END_STREAM); s3's status is lost with the
 * gap, so s3 is not reported; the HPACK entries the lost block inserted are
 * forgotten.  The next call starts mid-frame (a partial write's rest): it is
 * discarded.  The one after starts with frames: s5 is read again, its
 * reference to a lost entry comes out unknown, its static :status decodes.
 */
static void test_gap_resync(void **s)
{
	struct fix *f = fix_new();
	struct buf c = { .n = 0 }, w1 = { .n = 0 }, w3 = { .n = 0 };
	uint8_t blk[64], big[4096], junk[100];
	size_t n, seen, hdr_s3, data_s3;

	(void)s;
	memcpy(c.b, PREFACE, 24);
	c.n = 24;
	frame(&c, 4, 0, 0, "", 0);
	for (uint32_t sid = 1; sid <= 5; sid += 2) {
		n = 0;
		blk[n++] = 0x82;
		blk[n++] = 0x86;
		n += lit_idx(blk + n, 4, sid == 1 ? "/big" : sid == 3 ? "/nope" : "/small");
		frame(&c, 1, 0x5, sid, blk, n);
	}
	feed_steps(ops, f->st, L7_DIR_REQ, c.b, c.n, 0, 10);

	frame(&w1, 4, 0, 0, "", 0);
	n = 0;
	blk[n++] = 0x88;                                    /* :status 200 */
	n += lit(blk + n, "server", "nghttpd");            /* dynamic 62 */
	frame(&w1, 1, 0x4, 1, blk, n);
	/* DATA s1, 5000 bytes, END_STREAM: its header and the start of its payload are seen. */
	w1.b[w1.n++] = 0; w1.b[w1.n++] = 0x13; w1.b[w1.n++] = 0x88;
	w1.b[w1.n++] = 0; w1.b[w1.n++] = 0x1;
	w1.b[w1.n++] = 0; w1.b[w1.n++] = 0; w1.b[w1.n++] = 0; w1.b[w1.n++] = 1;
	seen = sizeof(big) - w1.n;
	memset(big, 'h', sizeof(big));
	memcpy(big, w1.b, w1.n);
	hdr_s3 = 9 + 1 + 1 + 6 + 1 + 7 + 1;                /* :status 404, server (lit), x (lit) */
	data_s3 = 9 + 10;
	assert_int_equal(ops->feed(f->st, L7_DIR_RESP, big, sizeof(big), 20), 0);
	assert_int_equal(ops->gap(f->st, L7_DIR_RESP, 5000 - seen + hdr_s3 + data_s3, 20), 0);
	assert_int_equal(f->log.n, 1);
	assert_field(&f->log.r[0], "stream_id", "1");
	assert_field(&f->log.r[0], "status", "200");
	assert_int_equal(f->log.r[0].resp_ts_ns, 20);

	memset(junk, 'h', sizeof(junk));
	assert_int_equal(ops->feed(f->st, L7_DIR_RESP, junk, sizeof(junk), 30), 0);
	assert_int_equal(f->log.n, 1);

	n = 0;
	blk[n++] = 0x88;                                    /* :status 200 (static) */
	blk[n++] = 0xbf;                                    /* dynamic 63: from the lost block */
	n += lit(blk + n, "date", "now");
	frame(&w3, 1, 0x4, 5, blk, n);
	frame(&w3, 0, 0x1, 5, "small", 5);
	assert_int_equal(ops->feed(f->st, L7_DIR_RESP, w3.b, w3.n, 40), 0);
	ops->finish(f->st, 50);
	assert_int_equal(f->log.n, 2);
	assert_field(&f->log.r[1], "stream_id", "5");
	assert_field(&f->log.r[1], "path", "/small");
	assert_field(&f->log.r[1], "status", "200");
	assert_int_equal(f->log.r[1].resp_ts_ns, 40);
	/* s3 lost, the junk chunk discarded. */
	assert_int_equal(ops->dropped(f->st), 2);
	fix_free(f);

	/* A gap in the preface is still the end. */
	f = fix_new();
	assert_int_equal(ops->gap(f->st, L7_DIR_REQ, 24, 1), -EPROTO);
	fix_free(f);
}

static void test_protocol_errors(void **s)
{
	struct fix *f = fix_new();
	struct buf c = { .n = 0 };

	(void)s;
	/* A header block interrupted by another frame is invalid. */
	frame(&c, 1, 0x0, 1, "\x82", 1);
	frame(&c, 0, 0x0, 1, "x", 1);
	assert_int_equal(ops->feed(f->st, L7_DIR_REQ, c.b, c.n, 1), -EPROTO);
	fix_free(f);
	f = fix_new();
	/* Half a preface. */
	assert_int_equal(ops->feed(f->st, L7_DIR_REQ, (const uint8_t *)"PRI * HTTP/1.1", 14, 1), -EPROTO);
	fix_free(f);
}

static void test_detect(void **s)
{
	struct buf c, sv;

	(void)s;
	build_conversation(&c, &sv);
	assert_int_equal(ops->detect(c.b, c.n, L7_DIR_REQ, 0), 100);
	assert_int_equal(ops->detect(c.b, 10, L7_DIR_REQ, 0), 0);
	/* Without preface: a chain of valid frames. */
	assert_true(ops->detect(sv.b, sv.n, L7_DIR_RESP, 0) >= L7_CONF_MIN);
	assert_true(ops->detect(c.b + 24, c.n - 24, L7_DIR_REQ, 0) >= L7_CONF_MIN);
	assert_int_equal(ops->detect((const uint8_t *)"GET / HTTP/1.1\r\n\r\n", 18, L7_DIR_REQ, 80), 0);
	assert_int_equal(ops->detect((const uint8_t *)"\x21\x00\x00\x00\x03SELECT 1", 14, L7_DIR_REQ, 3306), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hpack_rfc_requests),
		cmocka_unit_test(test_hpack_rfc_responses_evict),
		cmocka_unit_test(test_hpack_size_update_and_unknown),
		cmocka_unit_test(test_huffman_errors),
		cmocka_unit_test(test_streams_interleaved),
		cmocka_unit_test(test_mid_connection_unknown_refs),
		cmocka_unit_test(test_trailers_grpc),
		cmocka_unit_test(test_gap_resync),
		cmocka_unit_test(test_protocol_errors),
		cmocka_unit_test(test_detect),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
