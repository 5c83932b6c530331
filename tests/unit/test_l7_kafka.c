/* Kafka parser: headers by api version, out-of-order correlation ids, acks=0, gaps, captures. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/unit/l7_testlib.h"

extern const struct l7_parser_ops l7_kafka_ops;
#define OPS (&l7_kafka_ops)

static void request(struct tbuf *b, int key, int ver, int32_t corr, const char *client, bool flex,
		    const void *body, size_t n)
{
	size_t cl = client ? strlen(client) : 0;
	uint32_t size = (uint32_t)(8 + 2 + cl + (flex ? 1 : 0) + n);

	tb_be32(b, size);
	tb_be16(b, (unsigned)key);
	tb_be16(b, (unsigned)ver);
	tb_be32(b, (uint32_t)corr);
	tb_be16(b, client ? (unsigned)cl : 0xffff);
	tb_mem(b, client, cl);
	if (flex)
		tb_u8(b, 0);   /* no tagged fields */
	tb_mem(b, body, n);
}

static void response(struct tbuf *b, int32_t corr, bool flex, const void *body, size_t n)
{
	tb_be32(b, (uint32_t)(4 + (flex ? 1 : 0) + n));
	tb_be32(b, (uint32_t)corr);
	if (flex)
		tb_u8(b, 0);
	tb_mem(b, body, n);
}

static void metadata_v1(struct tbuf *b, int i)
{
	request(b, 3, 1, i, "p", false, "\x00\x00\x00\x00", 4);
}

static const size_t steps[] = { 0, 1, 2, 3, 5, 9 };

static void test_out_of_order_and_errors(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *q = calloc(1, sizeof(*q)), *r = calloc(1, sizeof(*r));

	(void)state;
	request(q, 18, 3, 7, "app", true, "\x04java\x06" "3.6.0\x00", 13);    /* ApiVersions v3 */
	request(q, 3, 1, 8, "app", false, "\x00\x00\x00\x00", 4);          /* Metadata v1 */
	request(q, 11, 5, 9, "app", false, "\x00\x01g", 3);                /* JoinGroup v5 */
	request(q, 0, 3, 10, "app", false, "\xff\xff\x00\x00\x00\x00\x75\x30", 8); /* Produce v3, acks=0 */
	/* JoinGroup answered first: throttle_time_ms, then error 79 (MEMBER_ID_REQUIRED). */
	response(r, 9, false, "\x00\x00\x00\x00\x00\x4f", 6);
	response(r, 7, false, "\x00\x00\x00\x00\x00\x00", 6);   /* ApiVersions: header v0 always */
	response(r, 8, false, "\x00\x00\x00\x00\x00\x00\x00\x00", 8);
	response(r, 1234, false, "\x00\x00", 2);                /* nobody asked */
	struct tstep s[] = { { L7_DIR_REQ, q->d, q->n }, { L7_DIR_RESP, r->d, r->n } };
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		struct tcollect c = { 0 };
		assert_int_equal(tplay(OPS, &cfg, s, 2, steps[k], &c), 0);
		assert_int_equal(c.n, 5);
		assert_string_equal(tfield(&c.v[0].r, "api_name"), "Produce");
		assert_false(c.v[0].r.has_response);   /* acks=0: reported at once */
		assert_string_equal(tfield(&c.v[1].r, "api_name"), "JoinGroup");
		assert_string_equal(tfield(&c.v[1].r, "api_version"), "5");
		assert_string_equal(tfield(&c.v[1].r, "correlation_id"), "9");
		assert_string_equal(tfield(&c.v[1].r, "error_code"), "79");
		assert_true(c.v[1].r.is_error);
		assert_string_equal(tfield(&c.v[2].r, "api_name"), "ApiVersions");
		assert_string_equal(tfield(&c.v[2].r, "client_id"), "app");
		assert_string_equal(tfield(&c.v[2].r, "error_code"), "0");
		assert_false(c.v[2].r.is_error);
		assert_string_equal(tfield(&c.v[3].r, "api_key"), "3");
		assert_string_equal(tfield(&c.v[3].r, "api_name"), "Metadata");
		assert_null(tfield(&c.v[3].r, "error_code"));
		assert_false(c.v[4].r.has_request);
		assert_string_equal(tfield(&c.v[4].r, "correlation_id"), "1234");
		tcollect_free(&c);
	}
	free(q);
	free(r);
}

/* A 1 MB Produce with a 16 KB budget: bodies are skipped, never buffered. */
static void test_large_body_gap_resync(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tcollect c = { 0 };
	size_t big = 1 << 20;
	uint8_t *body = calloc(1, big);
	struct tbuf *b = calloc(1, sizeof(*b));
	void *st;

	(void)state;
	cfg.max_conn_mem = 16 * 1024;
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_non_null(st);
	body[0] = 0xff; body[1] = 0xff; body[2] = 0; body[3] = 1;   /* no transactional id, acks=1 */
	request(b, 0, 7, 1, "p", false, NULL, 0);
	/* Patch the size for the body that follows separately. */
	{ uint32_t size = (uint32_t)(b->n - 4 + big); b->d[0] = size >> 24; b->d[1] = size >> 16; b->d[2] = size >> 8; b->d[3] = size; }
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, b->d, b->n, 1), 0);
	for (size_t off = 0; off < big; off += 1000)
		assert_int_equal(OPS->feed(st, L7_DIR_REQ, body + off, (big - off < 1000 ? big - off : 1000), 2), 0);
	b->n = 0;
	request(b, 1, 11, 2, "p", false, "\xff\xff\xff\xff", 4);
	request(b, 3, 8, 3, "p", false, "\x00", 1);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, b->d, b->n, 3), 0);
	/* Responses: the first is cut by a gap; the stream resumes at the next header. */
	b->n = 0;
	response(b, 1, false, "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 10);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, b->d, 6, 4), 0);
	assert_int_equal(OPS->gap(st, L7_DIR_RESP, 20, 5), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, (const uint8_t *)"junk", 4, 6), 0);   /* not a header */
	assert_int_equal(OPS->dropped(st), 1);
	b->n = 0;
	response(b, 3, false, "\x00\x00", 2);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, b->d, b->n, 7), 0);
	assert_int_equal(c.n, 1);
	assert_string_equal(tfield(&c.v[0].r, "correlation_id"), "3");
	assert_int_equal(c.v[0].r.resp_ts_ns, 7);
	OPS->finish(st, 8);
	assert_int_equal(c.n, 3);
	assert_string_equal(tfield(&c.v[1].r, "api_name"), "Produce");
	assert_int_equal(c.v[1].r.req_bytes, 4 + 8 + 2 + 1 + big);
	assert_false(c.v[1].r.has_response);
	assert_string_equal(tfield(&c.v[2].r, "api_name"), "Fetch");
	OPS->free(st);
	tcollect_free(&c);

	/* Unanswered requests pile up until the cap. */
	assert_int_equal(tflood(OPS, 16 * 1024, metadata_v1, 2000), -ENOBUFS);
	free(body);
	free(b);
}

/*
 * What live capture copies of a call (l7_parser_ops.head): a request's
 * first 512 bytes after its size and a response's first 64, all the parser
 * reads; large bodies go by as gaps and every exchange stays, with its size.
 */
static void test_head(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *q = calloc(1, sizeof(*q)), *pr = calloc(1, sizeof(*pr)), *fq = calloc(1, sizeof(*fq)),
		    *fr = calloc(1, sizeof(*fr));
	uint8_t *body = calloc(1, 3000);
	struct tcollect c = { 0 };
	uint64_t ts = 1;
	void *st;

	(void)state;
	body[0] = 0xff; body[1] = 0xff; body[2] = 0; body[3] = 1;   /* no transactional id, acks=1 */
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_non_null(st);
	assert_true(OPS->head(st, L7_DIR_REQ) == L7_HEAD_ALL);
	assert_true(OPS->head(st, L7_DIR_RESP) == L7_HEAD_ALL);
	for (int i = 0; i < 20; i++) {
		q->n = pr->n = fq->n = fr->n = 0;
		request(q, 0, 7, 2 * i + 1, "p", false, body, 3000);               /* Produce v7 */
		response(pr, 2 * i + 1, false, "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", 12);
		request(fq, 1, 11, 2 * i + 2, "p", false, "\xff\xff\xff\xff", 4);    /* Fetch v11 */
		response(fr, 2 * i + 2, false, body + 4, 2996);
		if (!i) {   /* one exchange of each whole, then cut where head() says */
			assert_int_equal(OPS->feed(st, L7_DIR_REQ, q->d, q->n, ts++), 0);
			assert_int_equal(OPS->feed(st, L7_DIR_RESP, pr->d, pr->n, ts++), 0);
			assert_int_equal(OPS->feed(st, L7_DIR_REQ, fq->d, fq->n, ts++), 0);
			assert_int_equal(OPS->feed(st, L7_DIR_RESP, fr->d, fr->n, ts++), 0);
			continue;
		}
		assert_int_equal(tcapped(OPS, st, L7_DIR_REQ, q->d, q->n, ts++), 516);
		assert_int_equal(tcapped(OPS, st, L7_DIR_RESP, pr->d, pr->n, ts++), pr->n);
		assert_int_equal(tcapped(OPS, st, L7_DIR_REQ, fq->d, fq->n, ts++), fq->n);
		assert_int_equal(tcapped(OPS, st, L7_DIR_RESP, fr->d, fr->n, ts++), 68);
	}
	assert_int_equal(OPS->head(st, L7_DIR_REQ), 516);
	assert_int_equal(OPS->head(st, L7_DIR_RESP), 68);
	assert_int_equal(c.n, 40);
	for (size_t i = 0; i < c.n; i++) {
		assert_string_equal(tfield(&c.v[i].r, "api_name"), i % 2 ? "Fetch" : "Produce");
		assert_true(c.v[i].r.has_response);
		assert_int_equal(c.v[i].r.req_bytes, i % 2 ? fq->n : q->n);
		assert_int_equal(c.v[i].r.resp_bytes, i % 2 ? fr->n : pr->n);
	}
	assert_int_equal(OPS->dropped(st), 0);
	/* Two responses in one call cut inside the first: the second is lost, every byte from then on. */
	q->n = fr->n = 0;
	request(q, 1, 11, 100, "p", false, "\xff\xff\xff\xff", 4);
	request(q, 1, 11, 101, "p", false, "\xff\xff\xff\xff", 4);
	response(fr, 100, false, body + 4, 2996);
	response(fr, 101, false, body + 4, 2996);
	assert_int_equal(tcapped(OPS, st, L7_DIR_REQ, q->d, q->n, ts++), q->n);
	assert_int_equal(tcapped(OPS, st, L7_DIR_RESP, fr->d, fr->n, ts++), 68);
	assert_true(OPS->head(st, L7_DIR_RESP) == L7_HEAD_ALL);
	assert_int_equal(OPS->head(st, L7_DIR_REQ), 516);
	OPS->finish(st, ts);
	OPS->free(st);
	tcollect_free(&c);
	free(q);
	free(pr);
	free(fq);
	free(fr);
	free(body);
}

static void test_detect(void **state)
{
	struct tbuf *b = calloc(1, sizeof(*b));

	(void)state;
	request(b, 18, 3, 1, "rdkafka", true, "\x00", 1);
	assert_true(OPS->detect(b->d, b->n, L7_DIR_REQ, 0) >= 80);
	b->n = 0;
	request(b, 3, 0, 1, NULL, false, "\x00\x00\x00\x00", 4);
	assert_true(OPS->detect(b->d, b->n, L7_DIR_REQ, 9092) >= 25);
	assert_int_equal(OPS->detect(b->d, b->n, L7_DIR_RESP, 0) >= 25, 0);
	/* A response-only stream: claimed only with the broker port. */
	b->n = 0;
	response(b, 131, false, "\x00\x00\x00\x00", 4);
	response(b, 132, false, "\x00\x00", 2);
	assert_true(OPS->detect(b->d, b->n, L7_DIR_RESP, 0) < 25);
	assert_true(OPS->detect(b->d, b->n, L7_DIR_RESP, 9092) >= 25);
	assert_int_equal(OPS->detect(b->d, b->n - 1, L7_DIR_RESP, 9092) >= 25, 0);
	b->n = 0;
	request(b, 250, 3, 1, "x", false, NULL, 0);   /* unknown api key */
	assert_int_equal(OPS->detect(b->d, b->n, L7_DIR_REQ, 9092), 0);
	assert_int_equal(OPS->detect((const uint8_t *)"GET / HTTP/1.1\r\n\r\n", 18, L7_DIR_REQ, 9092), 0);
	assert_int_equal(OPS->detect((const uint8_t *)"\x00\x00\x00\x08\x04\xd2\x16\x2f", 8, L7_DIR_REQ, 0), 0);
	assert_int_equal(OPS->detect((const uint8_t *)"\x04\x00\x00\x00\x05\x00\x00\x00\x00", 9, L7_DIR_REQ, 0), 0);
	free(b);
}

static void test_captures(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tcollect c = { 0 };
	struct tpcap tp;
	unsigned orphans = 0, unanswered = 0;

	(void)state;
	TCAPTURE("kafka/ndpi-kafka.pcapng", OPS, &cfg, 9092, &c, &tp);
	assert_int_equal(tp.errors, 0);
	assert_int_equal(c.n, 17);
	for (size_t i = 0; i < c.n; i++) {
		orphans += !c.v[i].r.has_request;
		unanswered += !c.v[i].r.has_response;
	}
	assert_int_equal(orphans, 3);
	assert_int_equal(unanswered, 3);
	tcollect_free(&c);

	TCAPTURE("kafka/deepflow-11-join-group-v7.pcap", OPS, &cfg, 36333, &c, &tp);
	assert_int_equal(c.n, 1);
	assert_string_equal(tfield(&c.v[0].r, "api_name"), "JoinGroup");
	assert_string_equal(tfield(&c.v[0].r, "api_version"), "7");
	assert_string_equal(tfield(&c.v[0].r, "correlation_id"), "120");
	/* tshark agrees: "Error: Unexpected Server Error (-1)". */
	assert_string_equal(tfield(&c.v[0].r, "error_code"), "-1");
	assert_true(c.v[0].r.is_error);
	tcollect_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_out_of_order_and_errors),
		cmocka_unit_test(test_large_body_gap_resync),
		cmocka_unit_test(test_head),
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_captures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
