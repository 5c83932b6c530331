/* PostgreSQL parser: startup, simple and extended query, errors, splits, gaps, captures. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/unit/l7_testlib.h"

extern const struct l7_parser_ops l7_pgsql_ops;
#define OPS (&l7_pgsql_ops)

/* Typed message: type, length (counting itself), body. */
static void msg(struct tbuf *b, char type, const void *body, size_t n)
{
	tb_u8(b, (uint8_t)type);
	tb_be32(b, (uint32_t)(4 + n));
	tb_mem(b, body, n);
}

static void msg_cstr(struct tbuf *b, char type, const char *s) { msg(b, type, s, strlen(s) + 1); }

static void startup(struct tbuf *b, const char *user)
{
	struct tbuf p = { .n = 0 };

	tb_be32(&p, 196608);
	tb_cstr(&p, "user");
	tb_cstr(&p, user);
	tb_cstr(&p, "database");
	tb_cstr(&p, "db");
	tb_u8(&p, 0);
	tb_be32(b, (uint32_t)(4 + p.n));
	tb_mem(b, p.d, p.n);
}

static void ready(struct tbuf *b) { msg(b, 'Z', "I", 1); }

static void error(struct tbuf *b, const char *code, const char *text)
{
	struct tbuf p = { .n = 0 };

	tb_u8(&p, 'S'); tb_cstr(&p, "ERROR");
	tb_u8(&p, 'C'); tb_cstr(&p, code);
	tb_u8(&p, 'M'); tb_cstr(&p, text);
	tb_u8(&p, 0);
	msg(b, 'E', p.d, p.n);
}

static void parse(struct tbuf *b, const char *name, const char *q)
{
	struct tbuf p = { .n = 0 };

	tb_cstr(&p, name);
	tb_cstr(&p, q);
	tb_be16(&p, 0);
	msg(b, 'P', p.d, p.n);
}

static void pg_bind(struct tbuf *b, const char *portal, const char *stmt)
{
	struct tbuf p = { .n = 0 };

	tb_cstr(&p, portal);
	tb_cstr(&p, stmt);
	tb_be16(&p, 0); tb_be16(&p, 0); tb_be16(&p, 0);
	msg(b, 'B', p.d, p.n);
}

static void execute(struct tbuf *b)
{
	uint8_t body[5] = { 0, 0, 0, 0, 0 };
	msg(b, 'E', body, 5);
}

static const size_t steps[] = { 0, 1, 2, 3, 5, 11 };

static void test_startup_simple_query_error(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *ssl = calloc(1, sizeof(*ssl)), *no = calloc(1, sizeof(*no)), *su = calloc(1, sizeof(*su)),
		    *auth = calloc(1, sizeof(*auth)), *q = calloc(1, sizeof(*q)), *r = calloc(1, sizeof(*r));

	(void)state;
	tb_be32(ssl, 8); tb_be32(ssl, 80877103);
	tb_u8(no, 'N');
	startup(su, "alice");
	{ uint8_t ok[4] = { 0, 0, 0, 0 }; msg(auth, 'R', ok, 4); }
	msg(auth, 'S', "client_encoding\0UTF8\0", 21);
	msg(auth, 'K', "\0\0\0\1\0\0\0\2", 8);
	ready(auth);
	msg_cstr(q, 'Q', "SELECT 1;\n SELECT\t2");
	msg_cstr(q, 'Q', "INSERT INTO t VALUES (now())");
	msg_cstr(q, 'Q', "");
	/* Responses to the three pipelined queries. */
	msg(r, 'T', "\0\1a\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 21);
	msg(r, 'D', "\0\1\0\0\0\1" "1", 7);
	msg_cstr(r, 'C', "SELECT 1");
	msg(r, 'D', "\0\1\0\0\0\1" "2", 7);
	msg_cstr(r, 'C', "SELECT 1");
	ready(r);
	msg(r, 'N', "SNOTICE\0Mhello\0\0", 16);
	error(r, "42804", "column \"i\" is of type integer");
	ready(r);
	msg(r, 'I', NULL, 0);
	ready(r);
	struct tstep s[] = {
		{ L7_DIR_REQ, ssl->d, ssl->n }, { L7_DIR_RESP, no->d, no->n }, { L7_DIR_REQ, su->d, su->n },
		{ L7_DIR_RESP, auth->d, auth->n }, { L7_DIR_REQ, q->d, q->n }, { L7_DIR_RESP, r->d, r->n },
	};
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		struct tcollect c = { 0 };
		assert_int_equal(tplay(OPS, &cfg, s, 6, steps[k], &c), 0);
		assert_int_equal(c.n, 4);
		assert_string_equal(tfield(&c.v[0].r, "kind"), "STARTUP");
		assert_string_equal(tfield(&c.v[0].r, "query"), "user=alice");
		assert_string_equal(tfield(&c.v[0].r, "result"), "READY");
		assert_string_equal(tfield(&c.v[1].r, "query"), "SELECT 1; SELECT 2");
		assert_string_equal(tfield(&c.v[1].r, "result"), "SELECT 1");
		assert_string_equal(tfield(&c.v[1].r, "rows"), "2");
		assert_string_equal(tfield(&c.v[2].r, "result"), "ERROR:42804");
		assert_true(c.v[2].r.is_error);
		assert_string_equal(tfield(&c.v[2].r, "error_message"), "column \"i\" is of type integer");
		assert_string_equal(tfield(&c.v[3].r, "result"), "EMPTY");
		assert_int_equal(c.v[3].r.resp_ts_ns, 6000);
		tcollect_free(&c);
	}
	free(ssl); free(no); free(su); free(auth); free(q); free(r);
}

/*
 * A password login: STARTUP's latency is the server's first answer (the
 * authentication request), not the whole login, whose later round trips
 * wait on the client.
 */
static void test_startup_latency_first_answer(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *su = calloc(1, sizeof(*su)), *ask = calloc(1, sizeof(*ask)), *pw = calloc(1, sizeof(*pw)),
		    *ok = calloc(1, sizeof(*ok));
	uint8_t md5[8] = { 0, 0, 0, 5, 1, 2, 3, 4 }, zero[4] = { 0, 0, 0, 0 };

	(void)state;
	startup(su, "carol");
	msg(ask, 'R', md5, 8);
	msg_cstr(pw, 'p', "md5abcdef");
	msg(ok, 'R', zero, 4);
	ready(ok);
	struct tstep s[] = {
		{ L7_DIR_REQ, su->d, su->n }, { L7_DIR_RESP, ask->d, ask->n },
		{ L7_DIR_REQ, pw->d, pw->n }, { L7_DIR_RESP, ok->d, ok->n },
	};
	struct tcollect c = { 0 };
	assert_int_equal(tplay(OPS, &cfg, s, 4, 0, &c), 0);
	assert_int_equal(c.n, 1);
	assert_string_equal(tfield(&c.v[0].r, "kind"), "STARTUP");
	assert_string_equal(tfield(&c.v[0].r, "result"), "READY");
	/* tplay stamps step i at 1000 * (i + 1). */
	assert_int_equal(c.v[0].r.req_ts_ns, 1000);
	assert_int_equal(l7_record__latency_ns(&c.v[0].r), 1000);
	tcollect_free(&c);
	free(su); free(ask); free(pw); free(ok);
}

/*
 * Live data: a backend writes an ErrorResponse at once and the ReadyForQuery
 * after it only once the transaction is aborted (4 ms later seen under
 * load); a long result goes out in 8 KB writes.  A simple query's latency
 * runs to the first answer, as tshark's does; an Execute's to its own
 * completion.
 */
static void test_query_latency_first_answer(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *q1 = calloc(1, sizeof(*q1)), *e1 = calloc(1, sizeof(*e1)), *z = calloc(1, sizeof(*z)),
		    *q2 = calloc(1, sizeof(*q2)), *rows = calloc(1, sizeof(*rows)), *tail = calloc(1, sizeof(*tail)),
		    *x = calloc(1, sizeof(*x)), *xr1 = calloc(1, sizeof(*xr1)), *xr2 = calloc(1, sizeof(*xr2));

	(void)state;
	msg_cstr(q1, 'Q', "SELECT * FROM missing_table;");
	error(e1, "42P01", "relation \"missing_table\" does not exist");
	ready(z);
	msg_cstr(q2, 'Q', "SELECT b FROM pt");
	msg(rows, 'T', "\0\1b\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 21);
	msg(rows, 'D', "\0\1\0\0\0\1" "x", 7);
	msg(tail, 'D', "\0\1\0\0\0\1" "y", 7);
	msg_cstr(tail, 'C', "SELECT 2");
	ready(tail);
	parse(x, "", "SELECT 1");
	pg_bind(x, "", "");
	execute(x);
	msg(x, 'S', NULL, 0);
	msg(xr1, '1', NULL, 0);
	msg(xr1, '2', NULL, 0);
	msg_cstr(xr2, 'C', "SELECT 1");
	ready(xr2);
	/* tplay stamps step i at 1000 * (i + 1). */
	struct tstep s[] = {
		{ L7_DIR_REQ, q1->d, q1->n }, { L7_DIR_RESP, e1->d, e1->n }, { L7_DIR_RESP, z->d, z->n },
		{ L7_DIR_REQ, q2->d, q2->n }, { L7_DIR_RESP, rows->d, rows->n }, { L7_DIR_RESP, tail->d, tail->n },
		{ L7_DIR_REQ, x->d, x->n }, { L7_DIR_RESP, xr1->d, xr1->n }, { L7_DIR_RESP, xr2->d, xr2->n },
	};
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		struct tcollect c = { 0 };
		assert_int_equal(tplay(OPS, &cfg, s, 9, steps[k], &c), 0);
		assert_int_equal(c.n, 3);
		assert_string_equal(tfield(&c.v[0].r, "result"), "ERROR:42P01");
		assert_int_equal(l7_record__latency_ns(&c.v[0].r), 1000);
		assert_string_equal(tfield(&c.v[1].r, "result"), "SELECT 2");
		assert_string_equal(tfield(&c.v[1].r, "rows"), "2");
		assert_int_equal(l7_record__latency_ns(&c.v[1].r), 1000);
		assert_string_equal(tfield(&c.v[2].r, "kind"), "EXECUTE");
		assert_string_equal(tfield(&c.v[2].r, "result"), "SELECT 1");
		assert_int_equal(l7_record__latency_ns(&c.v[2].r), 2000);
		tcollect_free(&c);
	}
	free(q1); free(e1); free(z); free(q2); free(rows); free(tail); free(x); free(xr1); free(xr2);
}

/* Extended protocol: two batches pipelined, an error aborting the rest of batch 1. */
static void test_extended_batches(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *q = calloc(1, sizeof(*q)), *r = calloc(1, sizeof(*r));

	(void)state;
	/* Batch 1: named statement s1 executed, then unnamed executed twice (second aborted). */
	parse(q, "s1", "select * from a where id=$1");
	pg_bind(q, "", "s1");
	execute(q);
	parse(q, "", "update b set x=1");
	pg_bind(q, "", "");
	execute(q);
	pg_bind(q, "", "");
	execute(q);
	msg(q, 'S', NULL, 0);
	/* Batch 2: a Parse only; batch 3: Execute of a statement prepared before the capture. */
	parse(q, "s2", "delete from c");
	msg(q, 'S', NULL, 0);
	pg_bind(q, "", "old");
	execute(q);
	msg(q, 'S', NULL, 0);

	msg(r, '1', NULL, 0); msg(r, '2', NULL, 0);
	msg(r, 'D', "\0\0", 2);
	msg_cstr(r, 'C', "SELECT 1");
	msg(r, '1', NULL, 0); msg(r, '2', NULL, 0);
	error(r, "40P01", "deadlock detected");
	ready(r);
	msg(r, '1', NULL, 0);
	ready(r);
	msg(r, '2', NULL, 0);
	msg_cstr(r, 'C', "DELETE 3");
	ready(r);
	struct tstep s[] = { { L7_DIR_REQ, q->d, q->n }, { L7_DIR_RESP, r->d, r->n } };
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		struct tcollect c = { 0 };
		assert_int_equal(tplay(OPS, &cfg, s, 2, steps[k], &c), 0);
		assert_int_equal(c.n, 5);
		assert_string_equal(tfield(&c.v[0].r, "kind"), "EXECUTE");
		assert_string_equal(tfield(&c.v[0].r, "query"), "select * from a where id=$1");
		assert_string_equal(tfield(&c.v[0].r, "result"), "SELECT 1");
		assert_string_equal(tfield(&c.v[1].r, "query"), "update b set x=1");
		assert_string_equal(tfield(&c.v[1].r, "result"), "ERROR:40P01");
		assert_string_equal(tfield(&c.v[2].r, "result"), "ABORTED");
		assert_false(c.v[2].r.has_response);
		assert_string_equal(tfield(&c.v[3].r, "kind"), "PARSE");
		assert_string_equal(tfield(&c.v[3].r, "query"), "delete from c");
		assert_string_equal(tfield(&c.v[3].r, "result"), "OK");
		assert_string_equal(tfield(&c.v[4].r, "query"), "<stmt:old>");
		assert_string_equal(tfield(&c.v[4].r, "result"), "DELETE 3");
		tcollect_free(&c);
	}
	free(q);
	free(r);
}

/*
 * Live data: a backend writes a long result in 8 KB calls seen only up to a
 * prefix, the rest a gap across DataRows, and the next call starts
 * mid-message; its CommandComplete and ReadyForQuery go by unseen.  With one
 * query outstanding the client's next message closes the cut answer (latency
 * to its first message, no tag, no row count) and the next answer is read
 * afresh.
 */
static void test_answer_cut_by_gap(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *q = calloc(1, sizeof(*q)), *r = calloc(1, sizeof(*r)), *q2 = calloc(1, sizeof(*q2)),
		    *r2 = calloc(1, sizeof(*r2));
	struct tcollect c = { 0 };
	void *st;

	(void)state;
	msg_cstr(q, 'Q', "SELECT g FROM generate_series(1, 2000) g");
	msg(r, 'T', "\0\1g\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 21);
	for (int i = 0; i < 2000; i++)
		msg(r, 'D', "\0\1\0\0\0\4" "1234", 10);
	msg_cstr(r, 'C', "SELECT 2000");
	ready(r);
	msg_cstr(q2, 'Q', "SELECT 2");
	msg(r2, 'T', "\0\1g\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 21);
	msg(r2, 'D', "\0\1\0\0\0\1" "2", 7);
	msg_cstr(r2, 'C', "SELECT 1");
	ready(r2);
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, q->d, q->n, 1), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, r->d, 4096, 2), 0);
	assert_int_equal(OPS->gap(st, L7_DIR_RESP, 8192 - 4096, 2), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, r->d + 8192, 4096, 3), 0);
	assert_int_equal(OPS->gap(st, L7_DIR_RESP, r->n - 8192 - 4096, 3), 0);
	assert_int_equal(c.n, 0);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, q2->d, q2->n, 4), 0);
	assert_int_equal(c.n, 1);
	assert_string_equal(tfield(&c.v[0].r, "kind"), "QUERY");
	assert_null(tfield(&c.v[0].r, "result"));
	assert_null(tfield(&c.v[0].r, "rows"));
	assert_string_equal(tfield(&c.v[0].r, "gap"), "response");
	assert_true(c.v[0].r.has_response);
	assert_int_equal(l7_record__latency_ns(&c.v[0].r), 1);
	assert_int_equal(c.v[0].r.resp_bytes, r->n);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, r2->d, r2->n, 5), 0);
	assert_int_equal(c.n, 2);
	assert_string_equal(tfield(&c.v[1].r, "query"), "SELECT 2");
	assert_string_equal(tfield(&c.v[1].r, "result"), "SELECT 1");
	assert_string_equal(tfield(&c.v[1].r, "rows"), "1");
	OPS->free(st);
	tcollect_free(&c);

	/*
	 * Pipelined: two queries outstanding when the framing went.  The
	 * first one's answer was in progress, the second's went by in the
	 * gap; the next query pairs as before.
	 */
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, q->d, q->n, 1), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, q2->d, q2->n, 1), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, r->d, 4096, 2), 0);
	assert_int_equal(OPS->gap(st, L7_DIR_RESP, r->n - 4096 + r2->n, 2), 0);
	assert_int_equal(c.n, 0);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, q2->d, q2->n, 3), 0);
	assert_int_equal(c.n, 2);
	assert_string_equal(tfield(&c.v[0].r, "query"), "SELECT g FROM generate_series(1, 2000) g");
	assert_string_equal(tfield(&c.v[0].r, "gap"), "response");
	assert_int_equal(c.v[0].r.resp_bytes, r->n + r2->n);
	assert_string_equal(tfield(&c.v[1].r, "query"), "SELECT 2");
	assert_string_equal(tfield(&c.v[1].r, "gap"), "response");
	assert_true(c.v[1].r.has_response);
	assert_null(tfield(&c.v[1].r, "result"));
	/* The rest of an answer the client did not wait for, from a message's middle: dropped. */
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, r->d + 5003, 4000, 4), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, r2->d, r2->n, 4), 0);
	assert_int_equal(c.n, 3);
	assert_string_equal(tfield(&c.v[2].r, "query"), "SELECT 2");
	assert_string_equal(tfield(&c.v[2].r, "result"), "SELECT 1");
	assert_null(tfield(&c.v[2].r, "gap"));
	OPS->free(st);
	tcollect_free(&c);
	free(q); free(r); free(q2); free(r2);
}

/*
 * Live data: a client pipelines extended-protocol batches in one write seen
 * only up to a prefix, so the batches in the rest are unknown.  The answers
 * to the Executes seen pair with them (the open batch's included, though
 * its Sync was lost); the answers to the lost ones are counted as dropped;
 * the client's next write, after the answers, is read afresh and pairs.
 */
static void test_messages_cut_by_gap(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *q = calloc(1, sizeof(*q)), *r = calloc(1, sizeof(*r)), *q2 = calloc(1, sizeof(*q2)),
		    *r2 = calloc(1, sizeof(*r2));
	struct tcollect c = { 0 };
	size_t seen = 0;
	void *st;

	(void)state;
	/* 20 batches: Parse/Bind/Execute/Sync, each answered 1 2 C Z. */
	for (int i = 0; i < 20; i++) {
		char text[64];

		snprintf(text, sizeof(text), "SELECT %d", i);
		parse(q, "", text);
		pg_bind(q, "", "");
		execute(q);
		msg(q, 'S', NULL, 0);
		if (i == 2)
			seen = q->n - 5;   /* the third batch's Sync is in the gap */
		msg(r, '1', NULL, 0);
		msg(r, '2', NULL, 0);
		msg_cstr(r, 'C', "SELECT 1");
		ready(r);
	}
	msg_cstr(q2, 'Q', "SELECT 2");
	msg(r2, 'T', "\0\1g\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 21);
	msg(r2, 'D', "\0\1\0\0\0\1" "2", 7);
	msg_cstr(r2, 'C', "SELECT 1");
	ready(r2);
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, q->d, seen, 1), 0);
	assert_int_equal(OPS->gap(st, L7_DIR_REQ, q->n - seen, 1), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, r->d, r->n, 2), 0);
	assert_int_equal(c.n, 3);
	for (int i = 0; i < 3; i++) {
		char text[64];

		snprintf(text, sizeof(text), "SELECT %d", i);
		assert_string_equal(tfield(&c.v[i].r, "kind"), "EXECUTE");
		assert_string_equal(tfield(&c.v[i].r, "query"), text);
		assert_string_equal(tfield(&c.v[i].r, "result"), "SELECT 1");
	}
	/* 1 2 C Z of each lost batch, and the open batch's Z (its Sync was lost). */
	assert_int_equal(OPS->dropped(st), 17 * 4 + 1);
	/* The rest of a pipeline read after an answer, from mid-message: not a turn. */
	static const size_t mid[] = { 1, 2, 3, 6, 8, 10, 13, 17 };   /* in the Sync, then the Parse after it */
	for (size_t k = 0; k < sizeof(mid) / sizeof(mid[0]); k++)
		assert_int_equal(OPS->feed(st, L7_DIR_REQ, q->d + seen + mid[k], q->n - seen - mid[k], 3), 0);
	/* One at a message, but with no answer since the client's previous chunk: more of it. */
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, q->d + seen + 5, q->n - seen - 5, 3), 0);
	assert_int_equal(c.n, 3);
	{
		struct tbuf z = { .n = 0 };

		ready(&z);   /* the answer to that rest */
		assert_int_equal(OPS->feed(st, L7_DIR_RESP, z.d, z.n, 3), 0);
	}
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, q2->d, q2->n, 3), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, r2->d, r2->n, 4), 0);
	assert_int_equal(c.n, 4);
	assert_string_equal(tfield(&c.v[3].r, "kind"), "QUERY");
	assert_string_equal(tfield(&c.v[3].r, "query"), "SELECT 2");
	assert_string_equal(tfield(&c.v[3].r, "rows"), "1");
	assert_int_equal(c.v[3].r.req_ts_ns, 3);
	OPS->free(st);
	tcollect_free(&c);
	free(q); free(r); free(q2); free(r2);
}

static void test_gap_tls_and_memory(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *b = calloc(1, sizeof(*b));
	struct tcollect c = { 0 };
	void *st;

	(void)state;
	/* A gap inside a long DataRow body is harmless. */
	st = OPS->create(&cfg, tcollect_emit, &c);
	msg_cstr(b, 'Q', "select repeat('x', 100000)");
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, b->d, b->n, 1), 0);
	b->n = 0;
	tb_u8(b, 'D');
	tb_be32(b, 4 + 100000);
	tb_fill(b, 'x', 3000);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, b->d, b->n, 2), 0);
	assert_int_equal(OPS->gap(st, L7_DIR_RESP, 50000, 3), 0);
	b->n = 0;
	tb_fill(b, 'x', 100000 - 3000 - 50000);
	msg_cstr(b, 'C', "SELECT 1");
	ready(b);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, b->d, b->n, 4), 0);
	assert_int_equal(c.n, 1);
	assert_string_equal(tfield(&c.v[0].r, "result"), "SELECT 1");
	assert_int_equal(OPS->gap(st, L7_DIR_REQ, 7, 5), 0);
	OPS->free(st);
	tcollect_free(&c);

	/* SSLRequest answered 'S': TLS follows. */
	st = OPS->create(&cfg, tcollect_emit, &c);
	b->n = 0;
	tb_be32(b, 8); tb_be32(b, 80877103);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, b->d, b->n, 1), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, (const uint8_t *)"S", 1, 2), -EPROTO);
	OPS->free(st);

	/* Unbounded pipelining hits the memory cap. */
	cfg.max_conn_mem = 16 * 1024;
	st = OPS->create(&cfg, tcollect_emit, &c);
	b->n = 0;
	for (int i = 0; i < 200; i++)
		msg_cstr(b, 'Q', "select 1");
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, b->d, b->n, 1), -ENOBUFS);
	OPS->free(st);
	tcollect_free(&c);
	free(b);
}

/*
 * What live capture copies of a call (l7_parser_ops.head): each message's
 * type, length and first 1280 bytes (its query or row, as far as the parser
 * reads); a long INSERT, and a 3000-byte row whose write ends inside it, go
 * by as gaps, and every exchange stays whole with its size and rows.
 */
static void test_head(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *ins = calloc(1, sizeof(*ins)), *ok = calloc(1, sizeof(*ok)), *sel = calloc(1, sizeof(*sel)),
		    *rows = calloc(1, sizeof(*rows)), *tail = calloc(1, sizeof(*tail));
	char *text = calloc(1, 3100), *row = calloc(1, 3100);
	struct tcollect c = { 0 };
	uint64_t ts = 1;
	size_t head_ins, head_rows;
	void *st;

	(void)state;
	memcpy(text, "INSERT INTO t VALUES ('", 23);
	memset(text + 23, 'v', 3000);
	memcpy(text + 3023, "')", 3);
	msg_cstr(ins, 'Q', text);
	msg_cstr(ok, 'C', "INSERT 0 1");
	ready(ok);
	msg_cstr(sel, 'Q', "SELECT b FROM t");
	memcpy(row, "\0\1\0\0\x0b\xb8", 6);   /* one column of 3000 bytes */
	memset(row + 6, 'v', 3000);
	msg(rows, 'T', "\0\1b\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 21);
	msg(rows, 'D', row, 3006);      /* the server's first write ends inside its row */
	msg_cstr(tail, 'C', "SELECT 1");
	ready(tail);
	head_ins = 1 + 1280;
	head_rows = 26 + 1 + 1280;
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_non_null(st);
	assert_true(OPS->head(st, L7_DIR_REQ) == L7_HEAD_ALL);
	/* One exchange of each whole, then 19 cut where head() says. */
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, ins->d, ins->n, ts++), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, ok->d, ok->n, ts++), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, sel->d, sel->n, ts++), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, rows->d, rows->n, ts++), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, tail->d, tail->n, ts++), 0);
	for (int i = 1; i < 20; i++) {
		assert_int_equal(tcapped(OPS, st, L7_DIR_REQ, ins->d, ins->n, ts++), head_ins);
		assert_int_equal(tcapped(OPS, st, L7_DIR_RESP, ok->d, ok->n, ts++), ok->n);
		assert_int_equal(tcapped(OPS, st, L7_DIR_REQ, sel->d, sel->n, ts++), sel->n);
		assert_int_equal(tcapped(OPS, st, L7_DIR_RESP, rows->d, rows->n, ts++), head_rows);
		assert_int_equal(tcapped(OPS, st, L7_DIR_RESP, tail->d, tail->n, ts++), tail->n);
	}
	assert_int_equal(OPS->head(st, L7_DIR_REQ), head_ins);
	assert_int_equal(OPS->head(st, L7_DIR_RESP), head_rows);
	assert_int_equal(c.n, 40);
	for (size_t i = 0; i < c.n; i++) {
		assert_string_equal(tfield(&c.v[i].r, "result"), i % 2 ? "SELECT 1" : "INSERT 0 1");
		assert_null(tfield(&c.v[i].r, "gap"));
		assert_int_equal(c.v[i].r.req_bytes, i % 2 ? sel->n : ins->n);
		assert_int_equal(c.v[i].r.resp_bytes, i % 2 ? rows->n + tail->n : ok->n);
		if (i % 2)
			assert_string_equal(tfield(&c.v[i].r, "rows"), "1");
	}
	OPS->finish(st, ts);
	OPS->free(st);
	tcollect_free(&c);
	free(ins); free(ok); free(sel); free(rows); free(tail); free(text); free(row);
}

/*
 * The session's opening (SSL refused, startup, authentication) says nothing
 * of the queries' sizes: head() asks for every byte until a query and its
 * answer, then for what those needed.
 */
static void test_head_opening(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *ssl = calloc(1, sizeof(*ssl)), *no = calloc(1, sizeof(*no)), *su = calloc(1, sizeof(*su)),
		    *auth = calloc(1, sizeof(*auth)), *pw = calloc(1, sizeof(*pw)), *q = calloc(1, sizeof(*q)),
		    *r = calloc(1, sizeof(*r));
	struct tcollect c = { 0 };
	uint64_t ts = 1;
	void *st;

	(void)state;
	tb_be32(ssl, 8); tb_be32(ssl, 80877103);
	tb_u8(no, 'N');
	startup(su, "alice");
	{ uint8_t md5[8] = { 0, 0, 0, 5, 1, 2, 3, 4 }; msg(auth, 'R', md5, 8); }
	msg_cstr(pw, 'p', "md5a3556571e93b0d20722ba62be61e8c2d");
	{ uint8_t ok[4] = { 0, 0, 0, 0 }; msg(r, 'R', ok, 4); }
	msg(r, 'S', "client_encoding\0UTF8\0", 21);
	msg(r, 'K', "\0\0\0\1\0\0\0\2", 8);
	ready(r);
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_non_null(st);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, ssl->d, ssl->n, ts++), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, no->d, no->n, ts++), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, su->d, su->n, ts++), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, auth->d, auth->n, ts++), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, pw->d, pw->n, ts++), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, r->d, r->n, ts++), 0);
	assert_true(OPS->head(st, L7_DIR_REQ) == L7_HEAD_ALL);
	assert_true(OPS->head(st, L7_DIR_RESP) == L7_HEAD_ALL);
	assert_int_equal(c.n, 1);
	assert_string_equal(tfield(&c.v[0].r, "result"), "READY");
	r->n = 0;
	msg_cstr(q, 'Q', "SELECT 1");
	msg(r, 'D', "\0\1\0\0\0\1" "1", 7);
	msg_cstr(r, 'C', "SELECT 1");
	ready(r);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, q->d, q->n, ts++), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, r->d, r->n, ts++), 0);
	assert_int_equal(OPS->head(st, L7_DIR_REQ), q->n);
	assert_int_equal(OPS->head(st, L7_DIR_RESP), r->n);
	assert_int_equal(c.n, 2);
	assert_string_equal(tfield(&c.v[1].r, "result"), "SELECT 1");
	OPS->finish(st, ts);
	OPS->free(st);
	tcollect_free(&c);
	free(ssl); free(no); free(su); free(auth); free(pw); free(q); free(r);
}

static void test_detect(void **state)
{
	struct tbuf *b = calloc(1, sizeof(*b));

	(void)state;
	startup(b, "bob");
	assert_true(OPS->detect(b->d, b->n, L7_DIR_REQ, 0) >= 80);
	assert_int_equal(OPS->detect(b->d, b->n, L7_DIR_RESP, 0), 0);
	b->n = 0;
	tb_be32(b, 8); tb_be32(b, 80877103);
	assert_true(OPS->detect(b->d, b->n, L7_DIR_REQ, 0) >= 80);
	b->n = 0;
	msg_cstr(b, 'Q', "select 1");
	assert_true(OPS->detect(b->d, b->n, L7_DIR_REQ, 0) >= 50);
	b->n = 0;
	{ uint8_t a[4] = { 0, 0, 0, 10 }; msg(b, 'R', a, 4); }
	assert_true(OPS->detect(b->d, b->n, L7_DIR_RESP, 0) >= 80);
	assert_int_equal(OPS->detect((const uint8_t *)"GET / HTTP/1.1\r\n\r\n", 18, L7_DIR_REQ, 5432), 0);
	assert_int_equal(OPS->detect((const uint8_t *)"*1\r\n$4\r\nPING\r\n", 14, L7_DIR_REQ, 0), 0);
	assert_int_equal(OPS->detect((const uint8_t *)"\x2b\x00\x00\x00\x03select 1", 13, L7_DIR_REQ, 0), 0);
	free(b);
}

static void test_captures(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tcollect c = { 0 };
	struct tpcap tp;
	unsigned exec = 0;

	(void)state;
	assert_int_equal(TCAPTURE("pgsql/zeek-psql-insert-fail-drop-fail.pcap", OPS, &cfg, 5432, &c, &tp), 1);
	assert_int_equal(c.n, 6);
	assert_string_equal(tfield(&c.v[0].r, "result"), "READY");
	assert_string_equal(tfield(&c.v[3].r, "result"), "ERROR:42804");
	assert_string_equal(tfield(&c.v[4].r, "result"), "DROP TABLE");
	assert_string_equal(tfield(&c.v[5].r, "result"), "ERROR:42P01");
	tcollect_free(&c);

	TCAPTURE("pgsql/ndpi-pgsql.pcap", OPS, &cfg, 5432, &c, &tp);
	assert_int_equal(c.n, 11);
	for (size_t i = 0; i < c.n; i++)
		exec += !strcmp(tfield(&c.v[i].r, "kind"), "EXECUTE");
	assert_int_equal(exec, 7);
	tcollect_free(&c);

	assert_int_equal(TCAPTURE("pgsql/zeek-greenhouse-app.pcap", OPS, &cfg, 5432, &c, &tp), 2);
	assert_int_equal(tp.errors, 0);
	assert_int_equal(c.n, 86);
	tcollect_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_startup_simple_query_error),
		cmocka_unit_test(test_startup_latency_first_answer),
		cmocka_unit_test(test_query_latency_first_answer),
		cmocka_unit_test(test_extended_batches),
		cmocka_unit_test(test_answer_cut_by_gap),
		cmocka_unit_test(test_messages_cut_by_gap),
		cmocka_unit_test(test_gap_tls_and_memory),
		cmocka_unit_test(test_head),
		cmocka_unit_test(test_head_opening),
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_captures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
