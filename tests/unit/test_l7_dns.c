/* DNS parser: UDP and TCP framing, compression (and its loops), pairing. */
#include "tests/unit/l7_test.h"

#include <errno.h>

extern const struct l7_parser_ops l7_dns_ops;
static const struct l7_parser_ops *ops = &l7_dns_ops;

struct msg {
	uint8_t b[512];
	size_t n;
};

static void put16(struct msg *m, unsigned v)
{
	m->b[m->n++] = (uint8_t)(v >> 8);
	m->b[m->n++] = (uint8_t)v;
}

static void put_name(struct msg *m, const char *name)
{
	while (*name) {
		const char *dot = strchr(name, '.');
		size_t l = dot ? (size_t)(dot - name) : strlen(name);

		m->b[m->n++] = (uint8_t)l;
		memcpy(m->b + m->n, name, l);
		m->n += l;
		name += l + (dot ? 1 : 0);
	}
	m->b[m->n++] = 0;
}

static void header(struct msg *m, unsigned id, unsigned flags, unsigned qd, unsigned an)
{
	m->n = 0;
	put16(m, id);
	put16(m, flags);
	put16(m, qd);
	put16(m, an);
	put16(m, 0);
	put16(m, 0);
}

static void query(struct msg *m, unsigned id, const char *name, unsigned type)
{
	header(m, id, 0x0100, 1, 0);
	put_name(m, name);
	put16(m, type);
	put16(m, 1);
}

/* Answer: CNAME (name compressed to the question) then A. */
static void response(struct msg *m, unsigned id, const char *name, unsigned type, unsigned rcode, bool answers)
{
	header(m, id, 0x8180 | rcode, 1, answers ? 2 : 0);
	put_name(m, name);
	put16(m, type);
	put16(m, 1);
	if (!answers)
		return;
	put16(m, 0xc00c);      /* name: pointer to the question */
	put16(m, 5);           /* CNAME */
	put16(m, 1);
	put16(m, 0);
	put16(m, 60);
	put16(m, 2);           /* rdata: pointer */
	put16(m, 0xc00c);
	put16(m, 0xc00c);
	put16(m, 1);           /* A */
	put16(m, 1);
	put16(m, 0);
	put16(m, 60);
	put16(m, 4);
	put16(m, 0x0a00);
	put16(m, 0x0001);
}

struct fix {
	struct l7_config cfg;
	struct rec_log log;
	void *st;
};

static struct fix *fix_new(bool udp)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct l7_config def = L7_CONFIG_DEFAULTS;

	assert_non_null(f);
	f->cfg = def;
	f->cfg.transport = udp ? L7_TRANSPORT_UDP : L7_TRANSPORT_TCP;
	f->st = ops->create(&f->cfg, rec_log_emit, &f->log);
	assert_non_null(f->st);
	return f;
}

static void fix_free(struct fix *f)
{
	ops->free(f->st);
	free(f);
}

static void test_udp_pairs_by_id(void **s)
{
	struct fix *f = fix_new(true);
	struct msg q1, q2, r1, r2;

	(void)s;
	query(&q1, 0x1111, "www.example.com", 1);
	query(&q2, 0x2222, "nope.example.com", 28);
	response(&r1, 0x1111, "www.example.com", 1, 0, true);
	response(&r2, 0x2222, "nope.example.com", 28, 3, false);
	assert_int_equal(ops->feed(f->st, L7_DIR_REQ, q1.b, q1.n, 100), 0);
	assert_int_equal(ops->feed(f->st, L7_DIR_REQ, q2.b, q2.n, 200), 0);
	/* Answered out of order. */
	assert_int_equal(ops->feed(f->st, L7_DIR_RESP, r2.b, r2.n, 300), 0);
	assert_int_equal(ops->feed(f->st, L7_DIR_RESP, r1.b, r1.n, 400), 0);
	assert_int_equal(f->log.n, 2);
	assert_field(&f->log.r[0], "qname", "nope.example.com");
	assert_field(&f->log.r[0], "qtype", "AAAA");
	assert_field(&f->log.r[0], "rcode", "NXDOMAIN");
	assert_field(&f->log.r[0], "answer_types", "-");
	assert_field(&f->log.r[0], "transport", "udp");
	assert_true(f->log.r[0].is_error);
	assert_int_equal(f->log.r[0].req_ts_ns, 200);
	assert_int_equal(f->log.r[0].resp_ts_ns, 300);
	assert_field(&f->log.r[1], "qname", "www.example.com");
	assert_field(&f->log.r[1], "qtype", "A");
	assert_field(&f->log.r[1], "rcode", "NOERROR");
	assert_field(&f->log.r[1], "answer_types", "CNAME,A");
	assert_false(f->log.r[1].is_error);
	assert_int_equal(f->log.r[1].resp_bytes, r1.n);
	fix_free(f);
}

static void test_tcp_framing(void **s)
{
	struct msg q1, q2, r1, r2;
	uint8_t req[1024], resp[1024];
	size_t rq = 0, rs = 0;

	(void)s;
	query(&q1, 7, "a.b", 16);
	query(&q2, 8, "c.d", 15);
	response(&r1, 7, "a.b", 16, 0, true);
	response(&r2, 8, "c.d", 15, 2, false);
	struct msg *qs[] = { &q1, &q2 }, *rsps[] = { &r1, &r2 };
	for (int i = 0; i < 2; i++) {
		req[rq++] = (uint8_t)(qs[i]->n >> 8);
		req[rq++] = (uint8_t)qs[i]->n;
		memcpy(req + rq, qs[i]->b, qs[i]->n);
		rq += qs[i]->n;
		resp[rs++] = (uint8_t)(rsps[i]->n >> 8);
		resp[rs++] = (uint8_t)rsps[i]->n;
		memcpy(resp + rs, rsps[i]->b, rsps[i]->n);
		rs += rsps[i]->n;
	}
	for (size_t step = 0; step <= 3; step++) {
		struct fix *f = fix_new(false);

		feed_steps(ops, f->st, L7_DIR_REQ, req, rq, step, 1);
		feed_steps(ops, f->st, L7_DIR_RESP, resp, rs, step, 2);
		assert_int_equal(f->log.n, 2);
		assert_field(&f->log.r[0], "qtype", "TXT");
		assert_field(&f->log.r[0], "transport", "tcp");
		assert_field(&f->log.r[0], "answer_types", "CNAME,A");
		assert_field(&f->log.r[1], "qtype", "MX");
		assert_field(&f->log.r[1], "rcode", "SERVFAIL");
		fix_free(f);
	}
}

static void test_compression_loop(void **s)
{
	struct fix *f = fix_new(true);
	struct msg q, r;

	(void)s;
	query(&q, 9, "loop.example", 1);
	/* Answer name: a pointer to itself. */
	header(&r, 9, 0x8180, 1, 1);
	put_name(&r, "loop.example");
	put16(&r, 1);
	put16(&r, 1);
	put16(&r, 0xc000 | (unsigned)r.n);
	put16(&r, 1);
	put16(&r, 1);
	put16(&r, 0);
	put16(&r, 0);
	put16(&r, 4);
	put16(&r, 0);
	put16(&r, 0);
	assert_int_equal(ops->feed(f->st, L7_DIR_REQ, q.b, q.n, 1), 0);
	assert_int_equal(ops->feed(f->st, L7_DIR_RESP, r.b, r.n, 2), 0);
	/* Two pointers chasing each other, in the question. */
	header(&r, 9, 0x8180, 1, 0);
	put16(&r, 0xc00e);
	put16(&r, 0xc00c);
	assert_int_equal(ops->feed(f->st, L7_DIR_RESP, r.b, r.n, 3), 0);
	/* A truncated message and garbage. */
	assert_int_equal(ops->feed(f->st, L7_DIR_RESP, r.b, 5, 4), 0);
	assert_int_equal(f->log.n, 0); /* malformed responses pair with nothing */
	ops->finish(f->st, 5);
	assert_int_equal(f->log.n, 1);
	assert_false(f->log.r[0].has_response);
	assert_field(&f->log.r[0], "qname", "loop.example");
	fix_free(f);
}

static void test_orphan_and_unanswered(void **s)
{
	struct fix *f = fix_new(true);
	struct msg q, r;

	(void)s;
	response(&r, 1, "late.example", 1, 0, true);
	assert_int_equal(ops->feed(f->st, L7_DIR_RESP, r.b, r.n, 1), 0);
	assert_int_equal(f->log.n, 1);
	assert_false(f->log.r[0].has_request);
	assert_field(&f->log.r[0], "qname", "late.example");
	/* Same id, different name: not a match. */
	query(&q, 2, "one.example", 1);
	response(&r, 2, "other.example", 1, 0, false);
	assert_int_equal(ops->feed(f->st, L7_DIR_REQ, q.b, q.n, 2), 0);
	assert_int_equal(ops->feed(f->st, L7_DIR_RESP, r.b, r.n, 3), 0);
	assert_int_equal(f->log.n, 2);
	assert_false(f->log.r[1].has_request);
	ops->finish(f->st, 4);
	assert_int_equal(f->log.n, 3);
	assert_field(&f->log.r[2], "qname", "one.example");
	assert_false(f->log.r[2].has_response);
	fix_free(f);
}

static void test_tcp_gap(void **s)
{
	struct fix *f = fix_new(false);
	struct msg q;
	uint8_t buf[600];
	size_t n = 0;

	(void)s;
	query(&q, 3, "gap.example", 1);
	buf[n++] = 0;
	buf[n++] = (uint8_t)q.n;
	memcpy(buf + n, q.b, q.n);
	n += q.n;
	/* First 10 bytes of a message, then the rest is lost. */
	feed_steps(ops, f->st, L7_DIR_REQ, buf, 10, 0, 1);
	assert_int_equal(ops->gap(f->st, L7_DIR_REQ, n - 10, 2), 0);
	feed_steps(ops, f->st, L7_DIR_REQ, buf, n, 0, 3);
	ops->finish(f->st, 4);
	assert_int_equal(f->log.n, 1);
	assert_field(&f->log.r[0], "qname", "gap.example");
	/* A gap at a message boundary loses the framing. */
	assert_int_equal(ops->gap(f->st, L7_DIR_REQ, 7, 5), -EPROTO);
	fix_free(f);
}

static void test_detect(void **s)
{
	struct msg q, r;
	uint8_t tcp[600];
	static const uint8_t nbns[] = {
		0x80, 0x01, 0x01, 0x10, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20,
		'E', 'C', 'F', 'C', 'F', 'H', 'E', 'D', 'D', 'A', 'E', 'D', 'E', 'C', 'D', 'D',
		'D', 'I', 'D', 'D', 'E', 'E', 'D', 'B', 'E', 'G', 'D', 'E', 'D', 'C', 'A', 'A',
		0x00, 0x00, 0x20, 0x00, 0x01,
	};

	(void)s;
	query(&q, 0x4242, "example.org", 1);
	response(&r, 0x4242, "example.org", 1, 0, true);
	assert_true(ops->detect(q.b, q.n, L7_DIR_REQ, 53) >= L7_CONF_CERTAIN);
	assert_true(ops->detect(q.b, q.n, L7_DIR_REQ, 0) >= L7_CONF_MIN);
	assert_true(ops->detect(r.b, r.n, L7_DIR_RESP, 0) >= L7_CONF_MIN);
	/* The QR bit disagrees with the direction: weaker. */
	assert_true(ops->detect(q.b, q.n, L7_DIR_RESP, 0) < ops->detect(q.b, q.n, L7_DIR_REQ, 0));
	tcp[0] = 0;
	tcp[1] = (uint8_t)q.n;
	memcpy(tcp + 2, q.b, q.n);
	assert_true(ops->detect(tcp, q.n + 2, L7_DIR_REQ, 0) >= L7_CONF_MIN);
	assert_int_equal(ops->detect(nbns, sizeof(nbns), L7_DIR_REQ, 137), 0);
	assert_int_equal(ops->detect((const uint8_t *)"GET / HTTP/1.1\r\nHost: a\r\n\r\n", 27, L7_DIR_REQ, 0), 0);
	assert_int_equal(ops->detect(q.b, 8, L7_DIR_REQ, 53), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_udp_pairs_by_id),
		cmocka_unit_test(test_tcp_framing),
		cmocka_unit_test(test_compression_loop),
		cmocka_unit_test(test_orphan_and_unanswered),
		cmocka_unit_test(test_tcp_gap),
		cmocka_unit_test(test_detect),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
