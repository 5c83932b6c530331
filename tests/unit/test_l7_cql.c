/* CQL parser: v4 multiplexing, v5 segments, errors, events, gaps, captures. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/unit/l7_testlib.h"

extern const struct l7_parser_ops l7_cql_ops;
#define OPS (&l7_cql_ops)

static void env(struct tbuf *b, uint8_t version, int16_t stream, uint8_t op, const void *body, size_t n)
{
	tb_u8(b, version);
	tb_u8(b, 0);
	tb_be16(b, (uint16_t)stream);
	tb_u8(b, op);
	tb_be32(b, (uint32_t)n);
	tb_mem(b, body, n);
}

static void longstr(struct tbuf *b, const char *s)
{
	tb_be32(b, (uint32_t)strlen(s));
	tb_str(b, s);
}

static void query(struct tbuf *b, uint8_t v, int16_t stream, uint8_t op, const char *q)
{
	struct tbuf p = { .n = 0 };

	longstr(&p, q);
	if (op == 7) {
		tb_be16(&p, 1);    /* consistency ONE */
		tb_u8(&p, 0);      /* flags (v4: byte) */
	}
	env(b, v, stream, op, p.d, p.n);
}

static void startup(struct tbuf *b, uint8_t v, bool compress)
{
	struct tbuf p = { .n = 0 };

	tb_be16(&p, compress ? 2 : 1);
	tb_be16(&p, 11); tb_str(&p, "CQL_VERSION");
	tb_be16(&p, 5); tb_str(&p, "3.0.0");
	if (compress) {
		tb_be16(&p, 11); tb_str(&p, "COMPRESSION");
		tb_be16(&p, 3); tb_str(&p, "lz4");
	}
	env(b, v, 0, 1, p.d, p.n);
}

static void result(struct tbuf *b, uint8_t v, int16_t stream, int32_t kind)
{
	uint8_t k[4] = { 0, 0, 0, (uint8_t)kind };
	env(b, v | 0x80, stream, 8, k, 4);
}

static void error(struct tbuf *b, uint8_t v, int16_t stream, uint32_t code, const char *msg)
{
	struct tbuf p = { .n = 0 };

	tb_be32(&p, code);
	tb_be16(&p, (unsigned)strlen(msg));
	tb_str(&p, msg);
	env(b, v | 0x80, stream, 0, p.d, p.n);
}

static const size_t steps[] = { 0, 1, 2, 3, 7, 10 };

static void test_v4_multiplexing(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *q = calloc(1, sizeof(*q)), *r = calloc(1, sizeof(*r));

	(void)state;
	env(q, 4, 0, 5, NULL, 0);   /* OPTIONS */
	startup(q, 4, false);
	query(q, 4, 1, 7, "SELECT * FROM\n   system.local");
	query(q, 4, 2, 7, "INSERT INTO t (a) VALUES (1)");
	query(q, 4, 3, 7, "SELEC oops");
	query(q, 4, 4, 9, "SELECT * FROM t WHERE a = ?");
	env(q, 4, 5, 10, "\x00\x04\xde\xad\xbe\xef\x00\x01\x00", 9);   /* EXECUTE id=deadbeef */
	env(q, 4, 6, 13, "\x00\x00\x02", 3);                          /* BATCH of 2 */

	env(r, 0x84, 0, 6, "\x00\x01\x00\x0b" "CQL_VERSION\x00\x01\x00\x05" "3.4.5", 24);
	env(r, 0x84, 0, 2, NULL, 0);
	env(r, 0x84, -1, 12, "\x00\x0d" "SCHEMA_CHANGE", 15);   /* event: not an exchange */
	error(r, 4, 3, 0x2000, "line 1:0 no viable alternative at input 'SELEC'");
	result(r, 4, 2, 1);
	result(r, 4, 1, 2);
	result(r, 4, 4, 4);
	result(r, 4, 6, 1);
	error(r, 4, 5, 0x2500, "Prepared query with ID deadbeef not found");
	struct tstep s[] = { { L7_DIR_REQ, q->d, q->n }, { L7_DIR_RESP, r->d, r->n } };
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		struct tcollect c = { 0 };
		assert_int_equal(tplay(OPS, &cfg, s, 2, steps[k], &c), 0);
		assert_int_equal(c.n, 8);
		assert_string_equal(tfield(&c.v[0].r, "opcode"), "OPTIONS");
		assert_string_equal(tfield(&c.v[0].r, "result"), "SUPPORTED");
		assert_string_equal(tfield(&c.v[1].r, "opcode"), "STARTUP");
		assert_string_equal(tfield(&c.v[1].r, "result"), "READY");
		assert_string_equal(tfield(&c.v[2].r, "stream_id"), "3");
		assert_int_equal(c.v[2].r.req_seq, 5);   /* fifth request, answered third */
		assert_string_equal(tfield(&c.v[2].r, "result"), "ERROR:0x2000");
		assert_true(c.v[2].r.is_error);
		assert_int_equal(c.v[2].r.status, 0x2000);
		assert_string_equal(tfield(&c.v[2].r, "error_message"), "line 1:0 no viable alternative at input 'SELEC'");
		assert_string_equal(tfield(&c.v[3].r, "stream_id"), "2");
		assert_string_equal(tfield(&c.v[3].r, "result"), "RESULT:Void");
		assert_string_equal(tfield(&c.v[4].r, "query"), "SELECT * FROM system.local");
		assert_string_equal(tfield(&c.v[4].r, "result"), "RESULT:Rows");
		assert_string_equal(tfield(&c.v[5].r, "opcode"), "PREPARE");
		assert_string_equal(tfield(&c.v[5].r, "result"), "RESULT:Prepared");
		assert_string_equal(tfield(&c.v[6].r, "query"), "batch(2)");
		assert_string_equal(tfield(&c.v[7].r, "opcode"), "EXECUTE");
		assert_string_equal(tfield(&c.v[7].r, "query"), "id=deadbeef");
		assert_string_equal(tfield(&c.v[7].r, "result"), "ERROR:0x2500");
		tcollect_free(&c);
	}
	free(q);
	free(r);
}

static uint32_t crc24(const uint8_t *p, size_t n)
{
	uint32_t crc = 0x875060;

	for (size_t i = 0; i < n; i++) {
		crc ^= (uint32_t)p[i] << 16;
		for (int b = 0; b < 8; b++) {
			crc <<= 1;
			if (crc & 0x1000000)
				crc ^= 0x1974f0b;
		}
	}
	return crc & 0xffffff;
}

static void segment(struct tbuf *b, const uint8_t *payload, size_t n, bool self_contained)
{
	uint32_t h = (uint32_t)n | (self_contained ? 1u << 17 : 0);
	uint8_t hb[3] = { (uint8_t)h, (uint8_t)(h >> 8), (uint8_t)(h >> 16) };

	tb_mem(b, hb, 3);
	tb_le24(b, crc24(hb, 3));
	tb_mem(b, payload, n);
	tb_le32(b, 0x12345678);   /* payload CRC32: not checked */
}

static void test_v5_segments(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *q1 = calloc(1, sizeof(*q1)), *r1 = calloc(1, sizeof(*r1)), *env2 = calloc(1, sizeof(*env2)),
		    *q2 = calloc(1, sizeof(*q2)), *r2 = calloc(1, sizeof(*r2)), *big = calloc(1, sizeof(*big));
	char longq[3000];

	(void)state;
	startup(q1, 5, false);
	env(r1, 0x85, 0, 2, NULL, 0);   /* READY, then segments from the next byte */
	/* Two small envelopes in one self-contained segment... */
	query(env2, 5, 1, 7, "SELECT a FROM t");
	query(env2, 5, 2, 7, "SELECT b FROM t");
	segment(q2, env2->d, env2->n, true);
	/* ...and a large one split over two segments. */
	memset(longq, 'x', sizeof(longq) - 1);
	memcpy(longq, "SELECT ", 7);
	longq[sizeof(longq) - 1] = 0;
	query(big, 5, 3, 7, longq);
	segment(q2, big->d, 1000, false);
	segment(q2, big->d + 1000, big->n - 1000, false);
	env2->n = 0;
	result(env2, 5, 2, 2);
	result(env2, 5, 3, 1);
	result(env2, 5, 1, 2);
	segment(r2, env2->d, env2->n, true);
	/* READY and the first segment in the same chunk: the switch happens mid-chunk. */
	tb_mem(r1, r2->d, r2->n);
	struct tstep s[] = { { L7_DIR_REQ, q1->d, q1->n }, { L7_DIR_REQ, q2->d, q2->n }, { L7_DIR_RESP, r1->d, r1->n } };
	/* The client sends its queries only after READY in reality; order the steps that way. */
	struct tstep s2[] = { s[0], s[2], s[1] };
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		struct tcollect c = { 0 };
		/* Response bytes before the queries would be orphans: feed READY alone first. */
		struct tstep play[] = { s2[0], { L7_DIR_RESP, r1->d, 9 }, s2[2], { L7_DIR_RESP, r1->d + 9, r1->n - 9 } };
		assert_int_equal(tplay(OPS, &cfg, play, 4, steps[k], &c), 0);
		assert_int_equal(c.n, 4);
		assert_string_equal(tfield(&c.v[0].r, "result"), "READY");
		assert_string_equal(tfield(&c.v[1].r, "stream_id"), "2");
		assert_string_equal(tfield(&c.v[1].r, "result"), "RESULT:Rows");
		assert_string_equal(tfield(&c.v[2].r, "stream_id"), "3");
		assert_int_equal(strncmp(tfield(&c.v[2].r, "query"), "SELECT xxx", 10), 0);
		assert_string_equal(tfield(&c.v[3].r, "query"), "SELECT a FROM t");
		tcollect_free(&c);
	}
	/* Segments: the framer's offsets are the envelopes', not the calls': every byte. */
	{
		struct tcollect c = { 0 };
		void *st = OPS->create(&cfg, tcollect_emit, &c);

		assert_non_null(st);
		assert_int_equal(OPS->feed(st, L7_DIR_REQ, q1->d, q1->n, 1), 0);
		assert_int_equal(OPS->feed(st, L7_DIR_RESP, r1->d, r1->n, 2), 0);
		assert_int_equal(OPS->feed(st, L7_DIR_REQ, q2->d, q2->n, 3), 0);
		assert_int_equal(c.n, 4);
		assert_true(OPS->head(st, L7_DIR_REQ) == L7_HEAD_ALL);
		assert_true(OPS->head(st, L7_DIR_RESP) == L7_HEAD_ALL);
		OPS->finish(st, 4);
		OPS->free(st);
		tcollect_free(&c);
	}
	/* READY and a segment in one chunk: the framing switches mid-chunk. */
	{
		struct tcollect c = { 0 };
		struct tstep play[] = { s2[0], s2[1] };
		assert_int_equal(tplay(OPS, &cfg, play, 2, 0, &c), 0);
		assert_int_equal(c.n, 4);
		assert_string_equal(tfield(&c.v[0].r, "result"), "READY");
		for (int i = 1; i < 4; i++)
			assert_false(c.v[i].r.has_request);   /* answers to queries never sent */
		assert_string_equal(tfield(&c.v[2].r, "result"), "RESULT:Void");
		tcollect_free(&c);
	}
	/* A corrupt segment header ends the analysis. */
	{
		struct tcollect c = { 0 };
		q2->d[4] ^= 0x55;
		struct tstep play[] = { s2[0], { L7_DIR_RESP, r1->d, 9 }, s2[2] };
		assert_int_equal(tplay(OPS, &cfg, play, 3, 0, &c), -EPROTO);
		tcollect_free(&c);
	}
	/* LZ4-compressed v5 segments are not readable. */
	{
		struct tcollect c = { 0 };
		q1->n = 0;
		startup(q1, 5, true);
		struct tstep play[] = { { L7_DIR_REQ, q1->d, q1->n }, { L7_DIR_RESP, r1->d, 9 } };
		assert_int_equal(tplay(OPS, &cfg, play, 2, 0, &c), -EPROTO);
		tcollect_free(&c);
	}
	free(q1); free(r1); free(env2); free(q2); free(r2); free(big);
}

static void select_1(struct tbuf *b, int i)
{
	query(b, 4, (int16_t)(i & 0x7fff), 7, "SELECT 1");
}

static void test_gap_resync_and_memory(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *b = calloc(1, sizeof(*b));
	struct tcollect c = { 0 };
	void *st = OPS->create(&cfg, tcollect_emit, &c);

	(void)state;
	query(b, 4, 1, 7, "SELECT 1");
	query(b, 4, 2, 7, "SELECT 2");
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, b->d, b->n, 1), 0);
	b->n = 0;
	result(b, 4, 1, 2);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, b->d, 5, 2), 0);
	assert_int_equal(OPS->gap(st, L7_DIR_RESP, 100, 3), 0);
	/* A chunk for a stream nobody uses is not taken as a resync point. */
	b->n = 0;
	result(b, 4, 77, 2);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, b->d, b->n, 4), 0);
	b->n = 0;
	result(b, 4, 2, 1);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, b->d, b->n, 5), 0);
	assert_int_equal(c.n, 1);
	assert_string_equal(tfield(&c.v[0].r, "stream_id"), "2");
	assert_string_equal(tfield(&c.v[0].r, "result"), "RESULT:Void");
	OPS->finish(st, 6);
	assert_int_equal(c.n, 2);
	assert_false(c.v[1].r.has_response);
	OPS->free(st);
	tcollect_free(&c);

	assert_int_equal(tflood(OPS, 16 * 1024, select_1, 5000), -ENOBUFS);
	free(b);
}

/*
 * Live capture of v4 envelopes copies what the parser reads of each: after
 * the handshake (every byte: its sizes say nothing of the queries'), a
 * query's header and prefix, a result's header and prefix.  The rest of a
 * long INSERT and of a large Rows result goes by as a gap, and every
 * exchange stays whole with its sizes.
 */
static void test_head(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *hs = calloc(1, sizeof(*hs)), *hr = calloc(1, sizeof(*hr)), *ins = calloc(1, sizeof(*ins)),
		    *iok = calloc(1, sizeof(*iok)), *rows = calloc(1, sizeof(*rows));
	char *text = calloc(1, 3100);
	uint8_t *body = calloc(1, 3010);
	struct tcollect c = { 0 };
	size_t head_ins, head_rows;
	uint64_t ts = 1;
	void *st;

	(void)state;
	env(hs, 4, 0, 5, NULL, 0);   /* OPTIONS */
	startup(hs, 4, false);
	env(hr, 0x84, 0, 6, "\x00\x01\x00\x0b" "CQL_VERSION\x00\x01\x00\x05" "3.4.5", 24);
	env(hr, 0x84, 0, 2, NULL, 0);
	memcpy(text, "INSERT INTO t (a) VALUES ('", 27);
	memset(text + 27, 'v', 3000);
	memcpy(text + 3027, "')", 3);
	query(ins, 4, 1, 7, text);
	result(iok, 4, 1, 1);
	body[3] = 2;                 /* Rows, then 3006 bytes of metadata and rows */
	memset(body + 4, 'r', 3006);
	env(rows, 0x84, 2, 8, body, 3010);
	head_ins = 9 + cfg.max_query_len + 512;
	head_rows = 9 + 1024;
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_non_null(st);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, hs->d, hs->n, ts++), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, hr->d, hr->n, ts++), 0);
	assert_true(OPS->head(st, L7_DIR_REQ) == L7_HEAD_ALL);
	assert_true(OPS->head(st, L7_DIR_RESP) == L7_HEAD_ALL);
	/* One exchange of each whole, then 19 cut where head() says. */
	for (int i = 0; i < 20; i++) {
		/* stream ids: 2i + 1 for the INSERT answered Void, 2i + 2 for the one answered Rows */
		ins->d[3] = iok->d[3] = (uint8_t)(2 * i + 1);
		rows->d[3] = (uint8_t)(2 * i + 2);
		if (!i) {
			assert_int_equal(OPS->feed(st, L7_DIR_REQ, ins->d, ins->n, ts++), 0);
			assert_int_equal(OPS->feed(st, L7_DIR_RESP, iok->d, iok->n, ts++), 0);
			ins->d[3] = (uint8_t)(2 * i + 2);
			assert_int_equal(OPS->feed(st, L7_DIR_REQ, ins->d, ins->n, ts++), 0);
			assert_int_equal(OPS->feed(st, L7_DIR_RESP, rows->d, rows->n, ts++), 0);
			continue;
		}
		assert_int_equal(tcapped(OPS, st, L7_DIR_REQ, ins->d, ins->n, ts++), head_ins);
		assert_int_equal(tcapped(OPS, st, L7_DIR_RESP, iok->d, iok->n, ts++), iok->n);
		ins->d[3] = (uint8_t)(2 * i + 2);
		assert_int_equal(tcapped(OPS, st, L7_DIR_REQ, ins->d, ins->n, ts++), head_ins);
		assert_int_equal(tcapped(OPS, st, L7_DIR_RESP, rows->d, rows->n, ts++), head_rows);
	}
	assert_int_equal(OPS->head(st, L7_DIR_REQ), head_ins);
	assert_int_equal(OPS->head(st, L7_DIR_RESP), head_rows);
	assert_int_equal(c.n, 42);
	for (size_t i = 2; i < c.n; i++) {
		assert_string_equal(tfield(&c.v[i].r, "result"), i % 2 ? "RESULT:Rows" : "RESULT:Void");
		assert_null(tfield(&c.v[i].r, "gap"));
		assert_int_equal(c.v[i].r.req_bytes, ins->n);
		assert_int_equal(c.v[i].r.resp_bytes, i % 2 ? rows->n : iok->n);
	}
	OPS->finish(st, ts);
	OPS->free(st);
	tcollect_free(&c);
	free(hs); free(hr); free(ins); free(iok); free(rows); free(text); free(body);
}

static void test_detect(void **state)
{
	struct tbuf *b = calloc(1, sizeof(*b));

	(void)state;
	startup(b, 4, false);
	assert_true(OPS->detect(b->d, b->n, L7_DIR_REQ, 0) >= 80);
	assert_int_equal(OPS->detect(b->d, b->n, L7_DIR_RESP, 0), 0);
	b->n = 0;
	env(b, 4, 0, 5, NULL, 0);
	assert_true(OPS->detect(b->d, b->n, L7_DIR_REQ, 0) >= 50);
	b->n = 0;
	result(b, 4, 1, 2);
	assert_true(OPS->detect(b->d, b->n, L7_DIR_RESP, 0) > 0);
	assert_int_equal(OPS->detect((const uint8_t *)"GET / HTTP/1.1\r\n\r\n", 18, L7_DIR_REQ, 9042), 0);
	assert_int_equal(OPS->detect((const uint8_t *)"\x00\x00\x00\x08\x04\xd2\x16\x2f\x00", 9, L7_DIR_REQ, 0), 0);
	assert_int_equal(OPS->detect((const uint8_t *)"\x16\x03\x01\x02\x00\x01\x00\x01\xfc", 9, L7_DIR_REQ, 9042), 0);
	free(b);
}

static void test_capture(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tcollect c = { 0 };
	struct tpcap tp;
	unsigned rows = 0, schema = 0, answered = 0;

	(void)state;
	assert_int_equal(TCAPTURE("cql/ndpi-cassandra-v4.pcap", OPS, &cfg, 9042, &c, &tp), 2);
	assert_int_equal(tp.errors, 0);
	assert_int_equal(c.n, 107);
	for (size_t i = 0; i < c.n; i++) {
		const char *r = tfield(&c.v[i].r, "result");
		answered += c.v[i].r.has_request && c.v[i].r.has_response;
		rows += r && !strcmp(r, "RESULT:Rows");
		schema += r && !strcmp(r, "RESULT:Schema_change");
	}
	assert_int_equal(answered, 107);
	assert_int_equal(schema, 6);
	assert_int_equal(rows, 83);   /* as oracle.sh counts them */
	tcollect_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v4_multiplexing),
		cmocka_unit_test(test_v5_segments),
		cmocka_unit_test(test_gap_resync_and_memory),
		cmocka_unit_test(test_head),
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_capture),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
