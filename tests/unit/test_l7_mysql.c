/* MySQL parser: hand-built conversations fed in every split, and the shared captures. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/unit/l7_testlib.h"

extern const struct l7_parser_ops l7_mysql_ops;
#define OPS (&l7_mysql_ops)

static void pkt(struct tbuf *b, uint8_t seq, const void *payload, size_t n)
{
	tb_le24(b, (uint32_t)n);
	tb_u8(b, seq);
	tb_mem(b, payload, n);
}

static void pkt_str(struct tbuf *b, uint8_t seq, const char *s) { pkt(b, seq, s, strlen(s)); }

static void greeting(struct tbuf *b, uint32_t caps)
{
	struct tbuf p = { .n = 0 };

	tb_u8(&p, 0x0a);
	tb_cstr(&p, "8.0.33");
	tb_le32(&p, 42);
	tb_str(&p, "abcdefgh");
	tb_u8(&p, 0);
	tb_le16(&p, caps & 0xffff);
	tb_u8(&p, 0xff);
	tb_le16(&p, 2);
	tb_le16(&p, caps >> 16);
	tb_u8(&p, 21);
	tb_fill(&p, 0, 10);
	tb_str(&p, "ijklmnopqrst");
	tb_u8(&p, 0);
	tb_cstr(&p, "mysql_native_password");
	pkt(b, 0, p.d, p.n);
}

static void login(struct tbuf *b, uint32_t caps, const char *user)
{
	struct tbuf p = { .n = 0 };

	tb_le32(&p, caps);
	tb_le32(&p, 1 << 24);
	tb_u8(&p, 0xff);
	tb_fill(&p, 0, 23);
	tb_cstr(&p, user);
	tb_u8(&p, 20);
	tb_fill(&p, 'x', 20);
	tb_cstr(&p, "mysql_native_password");
	pkt(b, 1, p.d, p.n);
}

static void ok(struct tbuf *b, uint8_t seq, uint16_t status)
{
	uint8_t p[7] = { 0, 0, 0, (uint8_t)status, (uint8_t)(status >> 8), 0, 0 };
	pkt(b, seq, p, sizeof(p));
}

static void eof(struct tbuf *b, uint8_t seq, uint16_t status)
{
	uint8_t p[5] = { 0xfe, 0, 0, (uint8_t)status, (uint8_t)(status >> 8) };
	pkt(b, seq, p, sizeof(p));
}

static void err(struct tbuf *b, uint8_t seq, uint16_t code, const char *msg)
{
	struct tbuf p = { .n = 0 };

	tb_u8(&p, 0xff);
	tb_le16(&p, code);
	tb_str(&p, "#42000");
	tb_str(&p, msg);
	pkt(b, seq, p.d, p.n);
}

static void cmd(struct tbuf *b, uint8_t c, const char *arg)
{
	struct tbuf p = { .n = 0 };

	tb_u8(&p, c);
	tb_str(&p, arg);
	pkt(b, 0, p.d, p.n);
}

/* Result set: ncols definitions, optional EOF, nrows rows, terminator. */
static uint8_t resultset(struct tbuf *b, unsigned ncols, unsigned nrows, bool classic, uint16_t status)
{
	uint8_t seq = 1, one = (uint8_t)ncols;

	pkt(b, seq++, &one, 1);
	for (unsigned i = 0; i < ncols; i++)
		pkt(b, seq++, "\x03" "def\x00\x01t\x01t\x01" "c\x01" "c\x0c\x21\x00\x0b\x00\x00\x00\x03\x00\x00\x00\x00\x00", 27);
	if (classic)
		eof(b, seq++, 2);
	for (unsigned i = 0; i < nrows; i++)
		pkt_str(b, seq++, "\x02" "42");
	if (classic) {
		eof(b, seq++, status);
	} else {
		uint8_t t[7] = { 0xfe, 0, 0, (uint8_t)status, (uint8_t)(status >> 8), 0, 0 };
		pkt(b, seq++, t, sizeof(t));
	}
	return seq;
}

static const size_t steps[] = { 0, 1, 2, 3, 5, 7, 64 };

static void test_login_query_error_quit(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *g = calloc(1, sizeof(*g)), *l = calloc(1, sizeof(*l)), *lok = calloc(1, sizeof(*lok)),
		    *q = calloc(1, sizeof(*q)), *rs = calloc(1, sizeof(*rs)), *idb = calloc(1, sizeof(*idb)),
		    *e = calloc(1, sizeof(*e)), *quit = calloc(1, sizeof(*quit));
	uint32_t caps = 0x00000200 | 0x00008000 | 0x00080000;   /* PROTOCOL_41, SECURE_CONN, PLUGIN_AUTH */

	(void)state;
	greeting(g, caps);
	login(l, caps, "bob");
	ok(lok, 2, 2);
	cmd(q, 0x03, "select a,\n  b from t");
	resultset(rs, 2, 3, true, 2);
	cmd(idb, 0x02, "nosuchdb");
	err(e, 1, 1049, "Unknown database 'nosuchdb'");
	cmd(quit, 0x01, "");
	struct tstep s[] = {
		{ L7_DIR_RESP, g->d, g->n }, { L7_DIR_REQ, l->d, l->n }, { L7_DIR_RESP, lok->d, lok->n },
		{ L7_DIR_REQ, q->d, q->n }, { L7_DIR_RESP, rs->d, rs->n }, { L7_DIR_REQ, idb->d, idb->n },
		{ L7_DIR_RESP, e->d, e->n }, { L7_DIR_REQ, quit->d, quit->n },
	};
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		struct tcollect c = { 0 };
		assert_int_equal(tplay(OPS, &cfg, s, 8, steps[k], &c), 0);
		assert_int_equal(c.n, 4);
		assert_string_equal(tfield(&c.v[0].r, "command"), "LOGIN");
		assert_string_equal(tfield(&c.v[0].r, "argument"), "bob");
		assert_string_equal(tfield(&c.v[0].r, "result"), "OK");
		assert_string_equal(tfield(&c.v[1].r, "command"), "QUERY");
		assert_string_equal(tfield(&c.v[1].r, "argument"), "select a, b from t");
		assert_string_equal(tfield(&c.v[1].r, "result"), "RESULTSET");
		assert_string_equal(tfield(&c.v[1].r, "rows"), "3");
		assert_int_equal(c.v[1].r.req_ts_ns, 4000);
		assert_int_equal(c.v[1].r.resp_ts_ns, 5000);
		assert_int_equal(c.v[1].r.resp_bytes, rs->n);
		assert_false(c.v[1].r.is_error);
		assert_string_equal(tfield(&c.v[2].r, "command"), "INIT_DB");
		assert_string_equal(tfield(&c.v[2].r, "result"), "ERR:1049");
		assert_string_equal(tfield(&c.v[2].r, "error_message"), "Unknown database 'nosuchdb'");
		assert_true(c.v[2].r.is_error);
		assert_int_equal(c.v[2].r.status, 1049);
		assert_string_equal(tfield(&c.v[3].r, "command"), "QUIT");
		assert_false(c.v[3].r.has_response);
		tcollect_free(&c);
	}
	free(g); free(l); free(lok); free(q); free(rs); free(idb); free(e); free(quit);
}

/* Mid-connection, CLIENT_DEPRECATE_EOF in use, two queries pipelined, a multi-result. */
static void test_pipelined_deprecated_eof_multiresult(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *req = calloc(1, sizeof(*req)), *resp = calloc(1, sizeof(*resp));

	(void)state;
	cmd(req, 0x03, "select 1");
	cmd(req, 0x03, "call p()");
	cmd(req, 0x0e, "");
	resultset(resp, 1, 5, false, 2);
	/* call p(): a result set flagged "more results", then the final OK. */
	{
		struct tbuf *t = calloc(1, sizeof(*t));
		uint8_t seq = resultset(t, 1, 2, false, 2 | 0x0008);
		tb_mem(resp, t->d, t->n);
		ok(resp, seq, 2);
		free(t);
	}
	ok(resp, 1, 2);
	struct tstep s[] = { { L7_DIR_REQ, req->d, req->n }, { L7_DIR_RESP, resp->d, resp->n } };
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		struct tcollect c = { 0 };
		assert_int_equal(tplay(OPS, &cfg, s, 2, steps[k], &c), 0);
		assert_int_equal(c.n, 3);
		assert_string_equal(tfield(&c.v[0].r, "argument"), "select 1");
		assert_string_equal(tfield(&c.v[0].r, "rows"), "5");
		assert_string_equal(tfield(&c.v[1].r, "argument"), "call p()");
		assert_string_equal(tfield(&c.v[1].r, "result"), "RESULTSET");
		assert_string_equal(tfield(&c.v[2].r, "command"), "PING");
		assert_string_equal(tfield(&c.v[2].r, "result"), "OK");
		assert_true(c.v[2].r.has_response);
		tcollect_free(&c);
	}
	free(req);
	free(resp);
}

/*
 * Live data: a result set written in several calls, and a login whose
 * server asks for an auth switch.  Latency runs to the first response
 * packet, as tshark's: the rest of a result is transfer, the rest of a
 * login waits on the client.
 */
static void test_latency_first_packet(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *g = calloc(1, sizeof(*g)), *l = calloc(1, sizeof(*l)), *sw = calloc(1, sizeof(*sw)),
		    *auth = calloc(1, sizeof(*auth)), *lok = calloc(1, sizeof(*lok)), *q = calloc(1, sizeof(*q)),
		    *rs = calloc(1, sizeof(*rs));
	uint32_t caps = 0x00000200 | 0x00008000 | 0x00080000;
	struct tcollect c = { 0 };

	(void)state;
	greeting(g, caps);
	login(l, caps, "bob");
	{
		struct tbuf p = { .n = 0 };
		tb_u8(&p, 0xfe);
		tb_cstr(&p, "mysql_native_password");
		tb_fill(&p, 'n', 20);
		pkt(sw, 2, p.d, p.n);
	}
	pkt(auth, 3, "01234567890123456789", 20);
	ok(lok, 4, 2);
	cmd(q, 0x03, "select a from t");
	resultset(rs, 1, 100, true, 2);
	/* tplay stamps step i at 1000 * (i + 1); the result's first packet comes alone. */
	struct tstep s[] = {
		{ L7_DIR_RESP, g->d, g->n }, { L7_DIR_REQ, l->d, l->n }, { L7_DIR_RESP, sw->d, sw->n },
		{ L7_DIR_REQ, auth->d, auth->n }, { L7_DIR_RESP, lok->d, lok->n }, { L7_DIR_REQ, q->d, q->n },
		{ L7_DIR_RESP, rs->d, 5 }, { L7_DIR_RESP, rs->d + 5, rs->n - 5 },
	};
	assert_int_equal(tplay(OPS, &cfg, s, 8, 0, &c), 0);
	assert_int_equal(c.n, 2);
	assert_string_equal(tfield(&c.v[0].r, "command"), "LOGIN");
	assert_string_equal(tfield(&c.v[0].r, "result"), "OK");
	assert_int_equal(l7_record__latency_ns(&c.v[0].r), 1000);
	assert_string_equal(tfield(&c.v[1].r, "result"), "RESULTSET");
	assert_string_equal(tfield(&c.v[1].r, "rows"), "100");
	assert_int_equal(l7_record__latency_ns(&c.v[1].r), 1000);
	assert_int_equal(c.v[1].r.resp_bytes, rs->n);
	tcollect_free(&c);
	free(g); free(l); free(sw); free(auth); free(lok); free(q); free(rs);
}

/* A query just over 16 MB: one continuation packet, never buffered. */
static void test_continuation_and_gap_in_body(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	size_t big = 0xffffff + 100, off = 0;
	uint8_t *buf = malloc(big + 8);
	struct tcollect c = { 0 };
	void *st;

	(void)state;
	buf[off++] = 0xff; buf[off++] = 0xff; buf[off++] = 0xff; buf[off++] = 0;
	buf[off++] = 0x03;
	memset(buf + off, 'a', 0xffffff - 1);
	memcpy(buf + off, "insert into t values ", 21);
	off += 0xffffff - 1;
	buf[off++] = 100; buf[off++] = 0; buf[off++] = 0; buf[off++] = 1;
	memset(buf + off, 'b', 100);
	off += 100;
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_non_null(st);
	/* First 64 KB, then lose 1 MB inside the payload, then the rest. */
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, buf, 65536, 1), 0);
	assert_int_equal(OPS->gap(st, L7_DIR_REQ, 1 << 20, 2), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, buf + 65536 + (1 << 20), off - 65536 - (1 << 20), 3), 0);
	{
		struct tbuf r = { .n = 0 };
		ok(&r, 2, 2);
		assert_int_equal(OPS->feed(st, L7_DIR_RESP, r.d, r.n, 4), 0);
	}
	assert_int_equal(c.n, 1);
	assert_string_equal(tfield(&c.v[0].r, "result"), "OK");
	assert_int_equal(c.v[0].r.req_bytes, off);
	assert_int_equal(strncmp(tfield(&c.v[0].r, "argument"), "insert into t values aaa", 24), 0);
	assert_int_equal(strlen(tfield(&c.v[0].r, "argument")), 255);
	/*
	 * A gap between packets loses the framing: either way it waits for
	 * the client's next turn (see test_result_cut_by_gap).
	 */
	assert_int_equal(OPS->gap(st, L7_DIR_RESP, 10, 5), 0);
	assert_int_equal(OPS->gap(st, L7_DIR_REQ, 10, 5), 0);
	OPS->finish(st, 6);
	OPS->free(st);
	tcollect_free(&c);
	free(buf);
}

/* Responses nobody asked for are counted, not reported. */
/*
 * Live data: mariadbd writes a long result set in 16 KB calls seen only up
 * to a prefix, the rest a gap across row packets, and the next call starts
 * mid-packet.  With one command outstanding the client's next command
 * closes the cut response (RESULTSET from its first packet, answered at its
 * last bytes, no row count) and the next response is read afresh.
 */
static void test_result_cut_by_gap(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *q = calloc(1, sizeof(*q)), *rs = calloc(1, sizeof(*rs)), *q2 = calloc(1, sizeof(*q2)),
		    *rs2 = calloc(1, sizeof(*rs2));
	struct tcollect c = { 0 };
	void *st;

	(void)state;
	cmd(q, 0x03, "select a from big");
	resultset(rs, 1, 1000, true, 2);
	cmd(q2, 0x03, "select 1");
	resultset(rs2, 1, 1, true, 2);
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, q->d, q->n, 1), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, rs->d, 4096, 2), 0);
	assert_int_equal(OPS->gap(st, L7_DIR_RESP, 1001, 2), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, rs->d + 5097, rs->n - 5097, 3), 0);
	assert_int_equal(c.n, 0);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, q2->d, q2->n, 4), 0);
	assert_int_equal(c.n, 1);
	assert_string_equal(tfield(&c.v[0].r, "argument"), "select a from big");
	assert_string_equal(tfield(&c.v[0].r, "result"), "RESULTSET");
	assert_null(tfield(&c.v[0].r, "rows"));
	assert_string_equal(tfield(&c.v[0].r, "gap"), "response");
	assert_true(c.v[0].r.has_response);
	assert_int_equal(c.v[0].r.resp_ts_ns, 2);   /* its first packet */
	assert_int_equal(c.v[0].r.resp_bytes, rs->n);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, rs2->d, rs2->n, 5), 0);
	assert_int_equal(c.n, 2);
	assert_string_equal(tfield(&c.v[1].r, "argument"), "select 1");
	assert_string_equal(tfield(&c.v[1].r, "rows"), "1");
	assert_null(tfield(&c.v[1].r, "gap"));
	assert_int_equal(c.v[1].r.resp_bytes, rs2->n);
	OPS->free(st);
	tcollect_free(&c);

	/*
	 * Pipelined: two commands outstanding when the framing went.  The
	 * first one's response was in progress, the second's went by in the
	 * gap; the next command pairs as before.
	 */
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, q->d, q->n, 1), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, q2->d, q2->n, 1), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, rs->d, 4096, 2), 0);
	assert_int_equal(OPS->gap(st, L7_DIR_RESP, rs->n - 4096 + rs2->n, 2), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, q2->d, q2->n, 3), 0);
	assert_int_equal(c.n, 2);
	assert_string_equal(tfield(&c.v[0].r, "argument"), "select a from big");
	assert_string_equal(tfield(&c.v[0].r, "result"), "RESULTSET");
	assert_string_equal(tfield(&c.v[0].r, "gap"), "response");
	assert_int_equal(c.v[0].r.resp_bytes, rs->n + rs2->n);
	assert_string_equal(tfield(&c.v[1].r, "argument"), "select 1");
	assert_null(tfield(&c.v[1].r, "result"));
	assert_string_equal(tfield(&c.v[1].r, "gap"), "response");
	assert_true(c.v[1].r.has_response);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, rs2->d, rs2->n, 4), 0);
	assert_int_equal(c.n, 3);
	assert_string_equal(tfield(&c.v[2].r, "argument"), "select 1");
	assert_string_equal(tfield(&c.v[2].r, "rows"), "1");
	assert_null(tfield(&c.v[2].r, "gap"));
	OPS->free(st);
	tcollect_free(&c);

	/*
	 * Commands pipelined in one write seen in part: the responses pair
	 * with the commands seen, those to the lost ones are counted as
	 * dropped, and the client's next write, after them, pairs again.
	 */
	{
		struct tbuf *pq = calloc(1, sizeof(*pq)), *pr = calloc(1, sizeof(*pr));
		size_t seen = 0;

		for (int i = 0; i < 8; i++) {
			cmd(pq, 0x0e, "");   /* COM_PING */
			ok(pr, 1, 2);
			if (i == 2)
				seen = pq->n + 2;   /* two bytes of the fourth */
		}
		st = OPS->create(&cfg, tcollect_emit, &c);
		assert_int_equal(OPS->feed(st, L7_DIR_REQ, pq->d, seen, 1), 0);
		assert_int_equal(OPS->gap(st, L7_DIR_REQ, pq->n - seen, 1), 0);
		assert_int_equal(OPS->feed(st, L7_DIR_RESP, pr->d, pr->n, 2), 0);
		assert_int_equal(c.n, 3);
		assert_int_equal(OPS->dropped(st), 5);
		assert_int_equal(OPS->feed(st, L7_DIR_REQ, q2->d, q2->n, 3), 0);
		assert_int_equal(OPS->feed(st, L7_DIR_RESP, rs2->d, rs2->n, 4), 0);
		assert_int_equal(c.n, 4);
		assert_string_equal(tfield(&c.v[3].r, "argument"), "select 1");
		assert_string_equal(tfield(&c.v[3].r, "rows"), "1");
		OPS->free(st);
		tcollect_free(&c);
		free(pq); free(pr);
	}
	free(q); free(rs); free(q2); free(rs2);
}

static void test_orphan_responses_counted(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *b = calloc(1, sizeof(*b));
	struct tcollect c = { 0 };
	void *st = OPS->create(&cfg, tcollect_emit, &c);

	(void)state;
	ok(b, 1, 2);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, b->d, b->n, 1), 0);
	b->n = 0;
	cmd(b, 0x0e, "");
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, b->d, b->n, 2), 0);
	b->n = 0;
	ok(b, 5, 2);   /* wrong sequence id: not this request's answer */
	ok(b, 1, 2);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, b->d, b->n, 3), 0);
	assert_int_equal(OPS->dropped(st), 2);
	assert_int_equal(c.n, 1);
	assert_string_equal(tfield(&c.v[0].r, "result"), "OK");
	OPS->free(st);
	tcollect_free(&c);
	free(b);
}

static void test_memory_cap(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *req = calloc(1, sizeof(*req));
	struct tcollect c = { 0 };
	void *st;
	int rc = 0;

	(void)state;
	cfg.max_conn_mem = 16 * 1024;
	for (int i = 0; i < 200; i++)
		cmd(req, 0x03, "select 1");
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_non_null(st);
	rc = OPS->feed(st, L7_DIR_REQ, req->d, req->n, 1);
	assert_int_equal(rc, -ENOBUFS);
	OPS->free(st);
	tcollect_free(&c);
	free(req);
}

static void test_ssl_request_is_unparseable(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *g = calloc(1, sizeof(*g)), *ssl = calloc(1, sizeof(*ssl));
	struct tbuf p = { .n = 0 };

	(void)state;
	greeting(g, 0x00000200 | 0x00000800);
	tb_le32(&p, 0x00000200 | 0x00000800);
	tb_le32(&p, 1 << 24);
	tb_u8(&p, 0xff);
	tb_fill(&p, 0, 23);
	pkt(ssl, 1, p.d, p.n);
	struct tstep s[] = { { L7_DIR_RESP, g->d, g->n }, { L7_DIR_REQ, ssl->d, ssl->n } };
	struct tcollect c = { 0 };
	assert_int_equal(tplay(OPS, &cfg, s, 2, 0, &c), -EPROTO);
	assert_int_equal(c.n, 0);
	tcollect_free(&c);
	free(g);
	free(ssl);
}

/*
 * What live capture copies of a call (l7_parser_ops.head): each packet's
 * header and first 512 bytes (a query's text, a row's head, as far as the
 * parser reads); a long INSERT, and a 3000-byte row whose write ends inside
 * it, go by as gaps, and every exchange stays whole with its size and rows.
 */
static void test_head(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *g = calloc(1, sizeof(*g)), *l = calloc(1, sizeof(*l)), *lok = calloc(1, sizeof(*lok)),
		    *ins = calloc(1, sizeof(*ins)), *iok = calloc(1, sizeof(*iok)), *sel = calloc(1, sizeof(*sel)),
		    *rows = calloc(1, sizeof(*rows)), *tail = calloc(1, sizeof(*tail));
	uint32_t caps = 0x00000200 | 0x00008000 | 0x00080000 | 0x01000000;   /* ..., DEPRECATE_EOF */
	char *text = calloc(1, 3100), *row = calloc(1, 3100);
	struct tcollect c = { 0 };
	size_t head_rows;
	uint64_t ts = 1;
	void *st;

	(void)state;
	greeting(g, caps);
	login(l, caps, "bob");
	ok(lok, 2, 2);
	memcpy(text, "insert into t values ('", 23);
	memset(text + 23, 'v', 3000);
	memcpy(text + 3023, "')", 3);
	cmd(ins, 0x03, text);
	ok(iok, 1, 2);
	cmd(sel, 0x03, "select b from t");
	pkt(rows, 1, "\x01", 1);
	pkt(rows, 2, "\x03" "def\x00\x01t\x01t\x01" "b\x01" "b\x0c\x21\x00\x0b\x00\x00\x00\x03\x00\x00\x00\x00\x00", 27);
	head_rows = rows->n + 4 + 512;
	row[0] = (char)0xfc; row[1] = (char)0xb8; row[2] = 0x0b;   /* one 3000-byte column */
	memset(row + 3, 'v', 3000);
	pkt(rows, 3, row, 3003);        /* the server's first write ends inside its row */
	{ uint8_t end[7] = { 0xfe, 0, 0, 2, 0, 0, 0 }; pkt(tail, 4, end, sizeof(end)); }
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_non_null(st);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, g->d, g->n, ts++), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, l->d, l->n, ts++), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, lok->d, lok->n, ts++), 0);
	/* The handshake says nothing of the commands' sizes: every byte until one. */
	assert_true(OPS->head(st, L7_DIR_REQ) == L7_HEAD_ALL);
	assert_true(OPS->head(st, L7_DIR_RESP) == L7_HEAD_ALL);
	/* One exchange of each whole, then 19 cut where head() says. */
	for (int i = 0; i < 20; i++) {
		if (!i) {
			assert_int_equal(OPS->feed(st, L7_DIR_REQ, ins->d, ins->n, ts++), 0);
			assert_int_equal(OPS->feed(st, L7_DIR_RESP, iok->d, iok->n, ts++), 0);
			assert_int_equal(OPS->feed(st, L7_DIR_REQ, sel->d, sel->n, ts++), 0);
			assert_int_equal(OPS->feed(st, L7_DIR_RESP, rows->d, rows->n, ts++), 0);
			assert_int_equal(OPS->feed(st, L7_DIR_RESP, tail->d, tail->n, ts++), 0);
			continue;
		}
		assert_int_equal(tcapped(OPS, st, L7_DIR_REQ, ins->d, ins->n, ts++), 4 + 512);
		assert_int_equal(tcapped(OPS, st, L7_DIR_RESP, iok->d, iok->n, ts++), iok->n);
		assert_int_equal(tcapped(OPS, st, L7_DIR_REQ, sel->d, sel->n, ts++), sel->n);
		assert_int_equal(tcapped(OPS, st, L7_DIR_RESP, rows->d, rows->n, ts++), head_rows);
		assert_int_equal(tcapped(OPS, st, L7_DIR_RESP, tail->d, tail->n, ts++), tail->n);
	}
	assert_int_equal(OPS->head(st, L7_DIR_REQ), 4 + 512);
	assert_int_equal(OPS->head(st, L7_DIR_RESP), head_rows);
	assert_int_equal(c.n, 41);
	for (size_t i = 1; i < c.n; i++) {
		assert_string_equal(tfield(&c.v[i].r, "result"), i % 2 ? "OK" : "RESULTSET");
		assert_null(tfield(&c.v[i].r, "gap"));
		assert_int_equal(c.v[i].r.req_bytes, i % 2 ? ins->n : sel->n);
		assert_int_equal(c.v[i].r.resp_bytes, i % 2 ? iok->n : rows->n + tail->n);
		if (!(i % 2))
			assert_string_equal(tfield(&c.v[i].r, "rows"), "1");
	}
	OPS->finish(st, ts);
	OPS->free(st);
	tcollect_free(&c);
	free(g); free(l); free(lok); free(ins); free(iok); free(sel); free(rows); free(tail); free(text); free(row);
}

static void test_detect(void **state)
{
	struct tbuf *b = calloc(1, sizeof(*b));

	(void)state;
	greeting(b, 0x200);
	assert_true(OPS->detect(b->d, b->n, L7_DIR_RESP, 0) >= 80);
	assert_int_equal(OPS->detect(b->d, b->n, L7_DIR_REQ, 0), 0);
	b->n = 0;
	cmd(b, 0x03, "SELECT * FROM users");
	assert_true(OPS->detect(b->d, b->n, L7_DIR_REQ, 0) >= 50);
	assert_int_equal(OPS->detect(b->d, b->n, L7_DIR_RESP, 0), 0);
	b->n = 0;
	login(b, 0x200, "root");
	assert_true(OPS->detect(b->d, b->n, L7_DIR_REQ, 0) >= 80);
	/* Other protocols' openings. */
	assert_int_equal(OPS->detect((const uint8_t *)"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27, L7_DIR_REQ, 3306), 0);
	assert_int_equal(OPS->detect((const uint8_t *)"*1\r\n$4\r\nPING\r\n", 14, L7_DIR_REQ, 0), 0);
	assert_int_equal(OPS->detect((const uint8_t *)"\x00\x00\x00\x08\x04\xd2\x16\x2f", 8, L7_DIR_REQ, 0), 0);
	assert_int_equal(OPS->detect((const uint8_t *)"\x04\x00\x00\x00\x05\x00\x00\x00\x00", 9, L7_DIR_REQ, 0), 0);
	assert_int_equal(OPS->detect((const uint8_t *)"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11, L7_DIR_REQ, 443), 0);
	free(b);
}

static void test_capture_zeek_mysql(void **state)
{
	static const char *const want[] = {
		"LOGIN", "QUERY", "QUERY", "INIT_DB", "QUERY", "QUERY", "FIELD_LIST", "QUERY", "QUERY", "QUERY",
		"QUERY", "QUERY", "QUERY", "QUERY", "QUERY", "QUERY", "QUERY", "QUIT",
	};
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tcollect c = { 0 };
	struct tpcap tp;

	(void)state;
	assert_int_equal(TCAPTURE("mysql/zeek-mysql.pcap", OPS, &cfg, 3306, &c, &tp), 1);
	assert_int_equal(tp.errors, 0);
	assert_int_equal(c.n, 18);
	for (size_t i = 0; i < c.n; i++)
		assert_string_equal(tfield(&c.v[i].r, "command"), want[i]);
	assert_string_equal(tfield(&c.v[0].r, "argument"), "tfoerste");
	assert_string_equal(tfield(&c.v[6].r, "result"), "FIELDS");
	assert_string_equal(tfield(&c.v[6].r, "table"), "agent");
	assert_null(tfield(&c.v[6].r, "argument"));
	assert_string_equal(tfield(&c.v[7].r, "result"), "OK");
	assert_string_equal(tfield(&c.v[10].r, "result"), "RESULTSET");
	tcollect_free(&c);
}

static void test_capture_mid_connection(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tcollect c = { 0 };
	struct tpcap tp;

	(void)state;
	/* No handshake: prepared statement, binary result set, STMT_CLOSE, then a text result set. */
	assert_int_equal(TCAPTURE("mysql/deepflow-truncate-1024.pcap", OPS, &cfg, 6033, &c, &tp), 1);
	assert_int_equal(c.n, 4);
	assert_string_equal(tfield(&c.v[0].r, "command"), "STMT_PREPARE");
	assert_string_equal(tfield(&c.v[0].r, "result"), "OK");
	assert_string_equal(tfield(&c.v[1].r, "command"), "STMT_EXECUTE");
	assert_string_equal(tfield(&c.v[1].r, "argument"), "1");
	assert_string_equal(tfield(&c.v[1].r, "result"), "RESULTSET");
	assert_string_equal(tfield(&c.v[2].r, "command"), "STMT_CLOSE");
	assert_false(c.v[2].r.has_response);
	assert_string_equal(tfield(&c.v[3].r, "result"), "RESULTSET");
	tcollect_free(&c);

	assert_int_equal(TCAPTURE("mysql/deepflow-171-mysql.pcap", OPS, &cfg, 20130, &c, &tp), 6);
	assert_int_equal(c.n, 390);
	for (size_t i = 0; i < c.n; i++)
		assert_true(c.v[i].r.has_response && !c.v[i].r.is_error);
	tcollect_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_login_query_error_quit),
		cmocka_unit_test(test_pipelined_deprecated_eof_multiresult),
		cmocka_unit_test(test_latency_first_packet),
		cmocka_unit_test(test_continuation_and_gap_in_body),
		cmocka_unit_test(test_result_cut_by_gap),
		cmocka_unit_test(test_orphan_responses_counted),
		cmocka_unit_test(test_memory_cap),
		cmocka_unit_test(test_ssl_request_is_unparseable),
		cmocka_unit_test(test_head),
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_capture_zeek_mysql),
		cmocka_unit_test(test_capture_mid_connection),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
