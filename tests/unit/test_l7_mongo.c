/* MongoDB parser: OP_MSG, legacy opcodes, OP_COMPRESSED, responseTo pairing, gaps, captures. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <zlib.h>

#include "tests/unit/l7_testlib.h"

extern const struct l7_parser_ops l7_mongo_ops;
#define OPS (&l7_mongo_ops)

/* Tiny BSON writer: open a document, add elements, close (patches the size). */
static size_t doc_open(struct tbuf *b) { size_t at = b->n; tb_le32(b, 0); return at; }
static void doc_close(struct tbuf *b, size_t at)
{
	tb_u8(b, 0);
	uint32_t sz = (uint32_t)(b->n - at);
	b->d[at] = (uint8_t)sz; b->d[at + 1] = (uint8_t)(sz >> 8); b->d[at + 2] = (uint8_t)(sz >> 16); b->d[at + 3] = (uint8_t)(sz >> 24);
}
static void el_str(struct tbuf *b, const char *k, const char *v)
{
	tb_u8(b, 0x02); tb_cstr(b, k); tb_le32(b, (uint32_t)strlen(v) + 1); tb_cstr(b, v);
}
static void el_double(struct tbuf *b, const char *k, double v)
{
	uint64_t x;
	memcpy(&x, &v, 8);
	tb_u8(b, 0x01); tb_cstr(b, k); tb_le32(b, (uint32_t)x); tb_le32(b, (uint32_t)(x >> 32));
}
static void el_int(struct tbuf *b, const char *k, int32_t v) { tb_u8(b, 0x10); tb_cstr(b, k); tb_le32(b, (uint32_t)v); }
static void el_bool(struct tbuf *b, const char *k, bool v) { tb_u8(b, 0x08); tb_cstr(b, k); tb_u8(b, v); }
static size_t el_doc(struct tbuf *b, const char *k) { tb_u8(b, 0x03); tb_cstr(b, k); return doc_open(b); }

static void header(struct tbuf *b, uint32_t len, int32_t rid, int32_t rto, uint32_t op)
{
	tb_le32(b, len); tb_le32(b, (uint32_t)rid); tb_le32(b, (uint32_t)rto); tb_le32(b, op);
}

/* OP_MSG with one kind-0 section holding body[0..n). */
static void op_msg(struct tbuf *b, int32_t rid, int32_t rto, uint32_t flags, const struct tbuf *body)
{
	bool crc = flags & 1;
	header(b, (uint32_t)(16 + 4 + 1 + body->n + (crc ? 4 : 0)), rid, rto, 2013);
	tb_le32(b, flags);
	tb_u8(b, 0);
	tb_mem(b, body->d, body->n);
	if (crc)
		tb_le32(b, 0xdeadbeef);
}

static void cmd_body(struct tbuf *body, const char *cmd)
{
	size_t d = doc_open(body);
	el_str(body, cmd, "coll");
	el_str(body, "$db", "test");
	doc_close(body, d);
}

static void ok_body(struct tbuf *body, double ok, int code, const char *codename)
{
	size_t d = doc_open(body), c = el_doc(body, "cursor");
	el_int(body, "ok", 5);   /* nested "ok": must not be taken for the top-level one */
	doc_close(body, c);
	if (code) {
		el_str(body, "errmsg", "no such command: 'fnd'");
		el_int(body, "code", code);
		el_str(body, "codeName", codename);
	}
	el_double(body, "ok", ok);
	doc_close(body, d);
}

static const size_t steps[] = { 0, 1, 2, 3, 7, 16 };

static void test_op_msg_and_legacy(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *q = calloc(1, sizeof(*q)), *r = calloc(1, sizeof(*r)), *body = calloc(1, sizeof(*body));
	size_t d;

	(void)state;
	/* OP_QUERY isMaster -> OP_REPLY {ismaster, ok}. */
	d = doc_open(body); el_int(body, "isMaster", 1); doc_close(body, d);
	header(q, (uint32_t)(16 + 4 + 11 + 8 + body->n), 1, 0, 2004);
	tb_le32(q, 0); tb_cstr(q, "admin.$cmd"); tb_le32(q, 0); tb_le32(q, 0xffffffff);
	tb_mem(q, body->d, body->n);
	/* Two OP_MSG, the second with a checksum; then a fire-and-forget OP_INSERT. */
	body->n = 0; cmd_body(body, "find");
	op_msg(q, 2, 0, 0, body);
	body->n = 0; cmd_body(body, "fnd");
	op_msg(q, 3, 0, 1, body);
	header(q, 16 + 4 + 7 + 5, 4, 0, 2002);
	tb_le32(q, 0); tb_cstr(q, "test.c"); tb_le32(q, 5); tb_u8(q, 0);
	/* OP_GET_MORE -> OP_REPLY without "ok": docs=N. */
	header(q, 16 + 4 + 7 + 4 + 8, 5, 0, 2005);
	tb_le32(q, 0); tb_cstr(q, "test.c"); tb_le32(q, 0); tb_le32(q, 1); tb_le32(q, 0);

	/* Replies: the OP_MSGs answered in reverse order. */
	body->n = 0; ok_body(body, 0, 59, "CommandNotFound");
	op_msg(r, 100, 3, 1, body);
	body->n = 0; ok_body(body, 1, 0, NULL);
	op_msg(r, 101, 2, 0, body);
	body->n = 0;
	d = doc_open(body); el_bool(body, "ismaster", true); el_double(body, "ok", 1); doc_close(body, d);
	header(r, (uint32_t)(16 + 20 + body->n), 102, 1, 1);
	tb_le32(r, 8); tb_le32(r, 0); tb_le32(r, 0); tb_le32(r, 0); tb_le32(r, 1);
	tb_mem(r, body->d, body->n);
	body->n = 0;
	d = doc_open(body); el_str(body, "name", "x"); doc_close(body, d);
	header(r, (uint32_t)(16 + 20 + 2 * body->n), 103, 5, 1);
	tb_le32(r, 0); tb_le32(r, 1); tb_le32(r, 0); tb_le32(r, 0); tb_le32(r, 2);
	tb_mem(r, body->d, body->n);
	tb_mem(r, body->d, body->n);
	/* A reply to a request from before the capture. */
	body->n = 0; ok_body(body, 1, 0, NULL);
	op_msg(r, 104, 999, 0, body);

	struct tstep s[] = { { L7_DIR_REQ, q->d, q->n }, { L7_DIR_RESP, r->d, r->n } };
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		struct tcollect c = { 0 };
		assert_int_equal(tplay(OPS, &cfg, s, 2, steps[k], &c), 0);
		assert_int_equal(c.n, 6);
		assert_string_equal(tfield(&c.v[0].r, "opcode"), "OP_INSERT");
		assert_string_equal(tfield(&c.v[0].r, "command"), "test.c");
		assert_false(c.v[0].r.has_response);
		assert_string_equal(tfield(&c.v[1].r, "command"), "fnd");
		assert_string_equal(tfield(&c.v[1].r, "request_id"), "3");
		assert_string_equal(tfield(&c.v[1].r, "result"), "ok=0:59");
		assert_string_equal(tfield(&c.v[1].r, "error_message"), "no such command: 'fnd'");
		assert_true(c.v[1].r.is_error);
		assert_int_equal(c.v[1].r.status, 59);
		assert_string_equal(tfield(&c.v[2].r, "command"), "find");
		assert_string_equal(tfield(&c.v[2].r, "result"), "ok=1");
		assert_false(c.v[2].r.is_error);
		assert_string_equal(tfield(&c.v[3].r, "opcode"), "OP_QUERY");
		assert_string_equal(tfield(&c.v[3].r, "command"), "isMaster");
		assert_string_equal(tfield(&c.v[3].r, "result"), "ok=1");
		assert_string_equal(tfield(&c.v[4].r, "opcode"), "OP_GET_MORE");
		assert_string_equal(tfield(&c.v[4].r, "result"), "docs=2");
		assert_false(c.v[5].r.has_request);
		assert_string_equal(tfield(&c.v[5].r, "response_to"), "999");
		tcollect_free(&c);
	}
	free(q); free(r); free(body);
}

static void compressed(struct tbuf *b, int32_t rid, int32_t rto, uint8_t compressor, const struct tbuf *msg)
{
	/* msg: a whole uncompressed message; wrap its body. */
	uint8_t out[4096];
	uLongf olen = sizeof(out);
	const uint8_t *body = msg->d + 16;
	size_t blen = msg->n - 16;

	if (compressor == 2) {
		assert_int_equal(compress2(out, &olen, body, blen, 6), Z_OK);
	} else {
		memcpy(out, body, blen);   /* noop, or pretend-snappy bytes */
		olen = blen;
	}
	header(b, (uint32_t)(16 + 9 + olen), rid, rto, 2012);
	tb_le32(b, (uint32_t)msg->d[12] | (uint32_t)msg->d[13] << 8 | (uint32_t)msg->d[14] << 16 | (uint32_t)msg->d[15] << 24);
	tb_le32(b, (uint32_t)blen);
	tb_u8(b, compressor);
	tb_mem(b, out, olen);
}

static void test_compressed(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *q = calloc(1, sizeof(*q)), *r = calloc(1, sizeof(*r)), *m = calloc(1, sizeof(*m)),
		    *body = calloc(1, sizeof(*body));

	(void)state;
	cmd_body(body, "aggregate");
	op_msg(m, 7, 0, 0, body);
	compressed(q, 7, 0, 2, m);       /* zlib */
	m->n = 0;
	body->n = 0; cmd_body(body, "insert");
	op_msg(m, 8, 0, 0, body);
	compressed(q, 8, 0, 1, m);       /* snappy: opaque */
	m->n = 0;
	body->n = 0; ok_body(body, 0, 13, "Unauthorized");
	op_msg(m, 50, 7, 0, body);
	compressed(r, 50, 7, 2, m);
	m->n = 0;
	body->n = 0; ok_body(body, 1, 0, NULL);
	op_msg(m, 51, 8, 0, body);
	compressed(r, 51, 8, 1, m);
	struct tstep s[] = { { L7_DIR_REQ, q->d, q->n }, { L7_DIR_RESP, r->d, r->n } };
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		struct tcollect c = { 0 };
		assert_int_equal(tplay(OPS, &cfg, s, 2, steps[k], &c), 0);
		assert_int_equal(c.n, 2);
		assert_string_equal(tfield(&c.v[0].r, "opcode"), "OP_COMPRESSED(OP_MSG)");
		assert_string_equal(tfield(&c.v[0].r, "command"), "aggregate");
		assert_string_equal(tfield(&c.v[0].r, "result"), "ok=0:13");
		assert_true(c.v[0].r.is_error);
		assert_string_equal(tfield(&c.v[1].r, "opcode"), "OP_COMPRESSED(OP_MSG)");
		assert_null(tfield(&c.v[1].r, "command"));
		assert_string_equal(tfield(&c.v[1].r, "compressed"), "opaque");
		assert_false(c.v[1].r.is_error);
		tcollect_free(&c);
	}
	free(q); free(r); free(m); free(body);
}

static void ping(struct tbuf *b, int i)
{
	static struct tbuf body;

	body.n = 0;
	cmd_body(&body, "ping");
	op_msg(b, i + 1, 0, 0, &body);
}

static void test_gap_memory_malformed(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *b = calloc(1, sizeof(*b)), *body = calloc(1, sizeof(*body));
	struct tcollect c = { 0 };
	void *st = OPS->create(&cfg, tcollect_emit, &c);

	(void)state;
	cmd_body(body, "ping");
	op_msg(b, 1, 0, 0, body);
	op_msg(b, 2, 0, 0, body);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, b->d, b->n, 1), 0);
	b->n = 0;
	body->n = 0; ok_body(body, 1, 0, NULL);
	op_msg(b, 10, 1, 0, body);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, b->d, 20, 2), 0);
	assert_int_equal(OPS->gap(st, L7_DIR_RESP, 500, 3), 0);
	b->n = 0;
	op_msg(b, 11, 2, 0, body);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, b->d, b->n, 4), 0);
	assert_int_equal(c.n, 1);
	assert_string_equal(tfield(&c.v[0].r, "request_id"), "2");
	OPS->finish(st, 5);
	assert_int_equal(c.n, 2);
	OPS->free(st);
	tcollect_free(&c);

	/* A BSON document whose sizes lie: walked without reading past the message. */
	st = OPS->create(&cfg, tcollect_emit, &c);
	b->n = 0;
	body->n = 0;
	tb_le32(body, 0x7fffffff); tb_u8(body, 0x02); tb_cstr(body, "k"); tb_le32(body, 0x7ffffff0); tb_str(body, "v");
	op_msg(b, 1, 0, 0, body);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, b->d, b->n, 1), 0);
	b->n = 0;
	op_msg(b, 9, 1, 0, body);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, b->d, b->n, 2), 0);
	assert_int_equal(c.n, 1);
	assert_string_equal(tfield(&c.v[0].r, "result"), "-");
	/* Length below the header size. */
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, (const uint8_t *)"\x08\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\xdd\x07\x00\x00", 16, 3), -EPROTO);
	OPS->free(st);
	tcollect_free(&c);

	assert_int_equal(tflood(OPS, 16 * 1024, ping, 2000), -ENOBUFS);
	free(b); free(body);
}

static void test_detect(void **state)
{
	struct tbuf *b = calloc(1, sizeof(*b)), *body = calloc(1, sizeof(*body));

	(void)state;
	cmd_body(body, "hello");
	op_msg(b, 1, 0, 0, body);
	assert_true(OPS->detect(b->d, b->n, L7_DIR_REQ, 0) >= 80);
	assert_int_equal(OPS->detect(b->d, b->n, L7_DIR_RESP, 0), 0);
	b->n = 0;
	op_msg(b, 5, 1, 0, body);
	assert_true(OPS->detect(b->d, b->n, L7_DIR_RESP, 0) >= 25);
	assert_int_equal(OPS->detect(b->d, b->n, L7_DIR_REQ, 0), 0);
	assert_int_equal(OPS->detect((const uint8_t *)"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27, L7_DIR_REQ, 27017), 0);
	assert_int_equal(OPS->detect((const uint8_t *)"\x00\x00\x00\x1c\x00\x12\x00\x03\x00\x00\x00\x01\x00\x07rdkafka", 23, L7_DIR_REQ, 0), 0);
	free(b); free(body);
}

static void test_captures(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tcollect c = { 0 };
	struct tpcap tp;

	(void)state;
	TCAPTURE("mongo/deepflow-mongo.pcap", OPS, &cfg, 27017, &c, &tp);
	assert_int_equal(tp.errors, 0);
	assert_int_equal(c.n, 15);
	assert_string_equal(tfield(&c.v[0].r, "opcode"), "OP_QUERY");
	assert_string_equal(tfield(&c.v[0].r, "command"), "isMaster");
	assert_string_equal(tfield(&c.v[11].r, "command"), "replSetGetStatus");
	assert_string_equal(tfield(&c.v[11].r, "result"), "ok=0:76");
	tcollect_free(&c);

	TCAPTURE("mongo/mongotools-op_command_2inserts.pcap", OPS, &cfg, 20000, &c, &tp);
	assert_int_equal(c.n, 12);
	assert_string_equal(tfield(&c.v[0].r, "opcode"), "OP_COMMAND");
	assert_string_equal(tfield(&c.v[0].r, "command"), "insert");
	assert_string_equal(tfield(&c.v[2].r, "command"), "serverStatus");
	assert_string_equal(tfield(&c.v[2].r, "result"), "ok=1");   /* "ok" at the end of a 16 KB reply */
	tcollect_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_op_msg_and_legacy),
		cmocka_unit_test(test_compressed),
		cmocka_unit_test(test_gap_memory_malformed),
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_captures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
