/* Redis parser: RESP2/RESP3 values, inline commands, pipelining, pushes, splits, gaps, captures. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/unit/l7_testlib.h"

extern const struct l7_parser_ops l7_redis_ops;
#define OPS (&l7_redis_ops)

#define S(x) { L7_DIR_REQ, (const uint8_t *)(x), sizeof(x) - 1 }
#define R(x) { L7_DIR_RESP, (const uint8_t *)(x), sizeof(x) - 1 }

static const size_t steps[] = { 0, 1, 2, 3, 4, 7, 13 };

static void test_pipelining_resp2(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	/* Five pipelined commands (one inline), then their replies in one go. */
	struct tstep s[] = {
		S("*3\r\n$3\r\nset\r\n$1\r\nk\r\n$5\r\nhello\r\n"
		  "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
		  "PING\r\n"
		  "*2\r\n$4\r\nINCR\r\n$1\r\nk\r\n"
		  "*3\r\n$6\r\nLRANGE\r\n$1\r\nl\r\n$1\r\n0\r\n"),
		R("+OK\r\n$5\r\nhello\r\n+PONG\r\n"
		  "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
		  "*3\r\n$1\r\na\r\n*2\r\n:1\r\n$-1\r\n*-1\r\n"),
	};
	static const char *const cmds[] = { "SET", "GET", "PING", "INCR", "LRANGE" };
	static const char *const replies[] = { "+OK", "$5", "+PONG", "-WRONGTYPE", "*3" };

	(void)state;
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		struct tcollect c = { 0 };
		assert_int_equal(tplay(OPS, &cfg, s, 2, steps[k], &c), 0);
		assert_int_equal(c.n, 5);
		for (int i = 0; i < 5; i++) {
			assert_string_equal(tfield(&c.v[i].r, "command"), cmds[i]);
			assert_string_equal(tfield(&c.v[i].r, "reply"), replies[i]);
			assert_int_equal(c.v[i].r.is_error, i == 3);
		}
		assert_int_equal(c.v[4].r.resp_bytes, 29);
		tcollect_free(&c);
	}
}

static void test_resp3_types_attributes_pushes(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tstep s[] = {
		S("*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n"),
		R("%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n"),
		S("*1\r\n$4\r\nTIME\r\n*1\r\n$4\r\nINFO\r\n*1\r\n$3\r\nXXX\r\n*2\r\n$3\r\nGET\r\n$1\r\nx\r\n"
		  "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n$1\r\nb\r\n*2\r\n$4\r\nSCAN\r\n$1\r\n0\r\n"),
		/* An attribute before the reply, a push between replies, nested aggregates. */
		R("|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n"
		  "~2\r\n(3492890328409238509324850943850943825024385\r\n#t\r\n"
		  ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n"
		  "=15\r\ntxt:Some string\r\n"
		  "!21\r\nSYNTAX invalid syntax\r\n"
		  "_\r\n"
		  "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n"
		  "*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$3\r\nmsg\r\n"),
		S("*2\r\n$4\r\nSCAN\r\n$1\r\n0\r\n"),
		R("*2\r\n$1\r\n0\r\n*0\r\n*2\r\n$1\r\n0\r\n*1\r\n*2\r\n%1\r\n+a\r\n|1\r\n+x\r\n+y\r\n~0\r\n:5\r\n"),
	};

	(void)state;
	for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		struct tcollect c = { 0 };
		assert_int_equal(tplay(OPS, &cfg, s, 6, steps[k], &c), 0);
		assert_int_equal(c.n, 10);
		assert_string_equal(tfield(&c.v[0].r, "command"), "HELLO");
		assert_string_equal(tfield(&c.v[0].r, "reply"), "%2");
		assert_string_equal(tfield(&c.v[1].r, "command"), "TIME");
		assert_string_equal(tfield(&c.v[1].r, "reply"), "~2");
		assert_string_equal(tfield(&c.v[2].r, "command"), "(push)");
		assert_false(c.v[2].r.has_request);
		assert_string_equal(tfield(&c.v[2].r, "reply"), ">3");
		assert_string_equal(tfield(&c.v[3].r, "command"), "INFO");
		assert_string_equal(tfield(&c.v[3].r, "reply"), "=15");
		assert_string_equal(tfield(&c.v[4].r, "command"), "XXX");
		assert_string_equal(tfield(&c.v[4].r, "reply"), "!21");
		assert_true(c.v[4].r.is_error);
		assert_string_equal(tfield(&c.v[5].r, "command"), "GET");
		assert_string_equal(tfield(&c.v[5].r, "reply"), "_");
		/* SUBSCRIBE a b: two replies, one exchange. */
		assert_string_equal(tfield(&c.v[6].r, "command"), "SUBSCRIBE");
		assert_string_equal(tfield(&c.v[6].r, "reply"), "*3");
		assert_string_equal(tfield(&c.v[7].r, "command"), "(push)");
		assert_string_equal(tfield(&c.v[8].r, "command"), "SCAN");
		assert_string_equal(tfield(&c.v[8].r, "reply"), "*2");
		assert_string_equal(tfield(&c.v[9].r, "command"), "SCAN");
		assert_string_equal(tfield(&c.v[9].r, "reply"), "*2");
		tcollect_free(&c);
	}
}

static void ping(struct tbuf *b, int i)
{
	(void)i;
	tb_str(b, "*1\r\n$4\r\nPING\r\n");
}

static void test_errors_and_limits(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tcollect c = { 0 };
	char deep[32 * 4 + 16];
	size_t n = 0;
	void *st;

	(void)state;
	/* Nesting beyond the bound is refused, not recursed into. */
	for (int i = 0; i < 33; i++)
		n += (size_t)snprintf(deep + n, sizeof(deep) - n, "*1\r\n");
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, (const uint8_t *)"*1\r\n$4\r\nPING\r\n", 14, 1), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, (const uint8_t *)deep, n, 2), -EPROTO);
	OPS->free(st);
	/* Junk type byte, absurd bulk length. */
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, (const uint8_t *)"*1\r\n$99999999999\r\n", 19, 1), -EPROTO);
	OPS->free(st);
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, (const uint8_t *)"?what\r\n", 7, 1), -EPROTO);
	OPS->free(st);
	/* A gap inside a bulk body keeps the stream; elsewhere it waits for the client's turn. */
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, (const uint8_t *)"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", 20, 1), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, (const uint8_t *)"$10\r\n01", 7, 2), 0);
	assert_int_equal(OPS->gap(st, L7_DIR_RESP, 5, 3), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, (const uint8_t *)"789\r\n", 5, 4), 0);
	assert_int_equal(c.n, 1);
	assert_string_equal(tfield(&c.v[0].r, "reply"), "$10");
	assert_int_equal(OPS->gap(st, L7_DIR_REQ, 3, 5), 0);
	OPS->free(st);
	tcollect_free(&c);
	/* Pipelining without bound meets the memory cap. */
	assert_int_equal(tflood(OPS, 8 * 1024, ping, 1000), -ENOBUFS);
}

/*
 * Live data: redis-server writes a large reply in calls seen only up to a
 * prefix, the rest a gap, and the gap runs across element boundaries.  With
 * one command outstanding the client's next command closes that reply
 * (summarised by its first token, answered at its last bytes) and the next
 * reply is read afresh; with several (pipelining) it cannot be told.
 */
static void test_reply_cut_by_gap(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tbuf *big = calloc(1, sizeof(*big));
	struct tcollect c = { 0 };
	void *st;

	(void)state;
	tb_str(big, "*601\r\n");
	for (int i = 0; i < 601; i++)
		tb_str(big, "$6\r\n100000\r\n");
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, (const uint8_t *)"*2\r\n$4\r\nPING\r\n$1\r\nx\r\n", 21, 1), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, (const uint8_t *)"$1\r\nx\r\n", 7, 2), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, (const uint8_t *)"*4\r\n$6\r\nLRANGE\r\n$3\r\nbig\r\n$1\r\n0\r\n$2\r\n-1\r\n", 40, 3), 0);
	/* Two writes: 4096 bytes seen of the first, then a gap; the second starts mid-element. */
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, big->d, 4096, 4), 0);
	assert_int_equal(OPS->gap(st, L7_DIR_RESP, 1000, 4), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, big->d + 5096, big->n - 5096, 5), 0);
	assert_int_equal(c.n, 1);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, (const uint8_t *)"PING\r\n", 6, 6), 0);
	assert_int_equal(c.n, 2);
	assert_string_equal(tfield(&c.v[1].r, "command"), "LRANGE");
	assert_string_equal(tfield(&c.v[1].r, "reply"), "*601");
	assert_string_equal(tfield(&c.v[1].r, "gap"), "response");
	assert_true(c.v[1].r.has_response);
	assert_int_equal(c.v[1].r.resp_ts_ns, 5);
	assert_int_equal(c.v[1].r.resp_bytes, big->n);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, (const uint8_t *)"+PONG\r\n", 7, 7), 0);
	assert_int_equal(c.n, 3);
	assert_string_equal(tfield(&c.v[2].r, "command"), "PING");
	assert_string_equal(tfield(&c.v[2].r, "reply"), "+PONG");
	assert_null(tfield(&c.v[2].r, "gap"));
	OPS->free(st);
	tcollect_free(&c);

	/* redis-cli LRANGE: the close ends the cut reply. */
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, (const uint8_t *)"*4\r\n$6\r\nLRANGE\r\n$3\r\nbig\r\n$1\r\n0\r\n$2\r\n-1\r\n", 40, 1), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, big->d, 4096, 2), 0);
	assert_int_equal(OPS->gap(st, L7_DIR_RESP, big->n - 4096, 2), 0);
	OPS->finish(st, 3);
	assert_int_equal(c.n, 1);
	assert_string_equal(tfield(&c.v[0].r, "reply"), "*601");
	assert_true(c.v[0].r.has_response);
	assert_int_equal(c.v[0].r.resp_ts_ns, 2);
	assert_int_equal(c.v[0].r.resp_bytes, big->n);
	OPS->free(st);
	tcollect_free(&c);

	/*
	 * Pipelined: three commands outstanding when the framing went.  The
	 * reply in progress is the oldest command's; the other two went by
	 * in the gap.  The exchanges after it pair as before.
	 */
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, (const uint8_t *)"PING\r\nLRANGE big 0 -1\r\nPING\r\nGET k\r\n", 36, 1), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, (const uint8_t *)"+PONG\r\n", 7, 2), 0);
	assert_int_equal(c.n, 1);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, big->d, 4096, 3), 0);
	assert_int_equal(OPS->gap(st, L7_DIR_RESP, big->n - 4096 + 7 + 9, 3), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, (const uint8_t *)"PING\r\n", 6, 4), 0);
	assert_int_equal(c.n, 4);
	assert_string_equal(tfield(&c.v[1].r, "command"), "LRANGE");
	assert_string_equal(tfield(&c.v[1].r, "reply"), "*601");
	assert_string_equal(tfield(&c.v[1].r, "gap"), "response");
	assert_int_equal(c.v[1].r.resp_bytes, big->n + 7 + 9);   /* what went by, lost bytes included */
	for (int i = 2; i < 4; i++) {
		assert_string_equal(tfield(&c.v[i].r, "command"), i == 2 ? "PING" : "GET");
		assert_string_equal(tfield(&c.v[i].r, "reply"), "?");
		assert_string_equal(tfield(&c.v[i].r, "gap"), "response");
		assert_true(c.v[i].r.has_response);
		assert_int_equal(c.v[i].r.resp_ts_ns, 3);
	}
	/* The rest of an answer the client did not wait for, from its middle: dropped, not parsed. */
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, big->d + 5000, 600, 5), 0);
	assert_int_equal(c.n, 4);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, (const uint8_t *)"+PONG\r\n", 7, 5), 0);
	assert_int_equal(c.n, 5);
	assert_string_equal(tfield(&c.v[4].r, "reply"), "+PONG");
	assert_null(tfield(&c.v[4].r, "gap"));
	OPS->free(st);
	tcollect_free(&c);
	free(big);
}

/*
 * Live data: redis-benchmark -P writes its pipeline in one call seen only
 * up to a prefix, so the commands in the rest are unknown.  Replies pair
 * with the commands seen; the ones beyond are reported without a command
 * (gap=request); the client's next write, after the replies, is read
 * afresh and pairs again.
 */
static void test_commands_cut_by_gap(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tcollect c = { 0 };
	static const char set[] = "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$3\r\nval\r\n";
	enum { L = sizeof(set) - 1 };
	char pipe[10 * L];
	void *st;

	(void)state;
	for (int i = 0; i < 10; i++)
		memcpy(pipe + i * L, set, L);
	st = OPS->create(&cfg, tcollect_emit, &c);
	/* 4 whole commands and part of the 5th seen, the other 5 and a half lost. */
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, (const uint8_t *)pipe, 4 * L + 10, 1), 0);
	assert_int_equal(OPS->gap(st, L7_DIR_REQ, sizeof(pipe) - 4 * L - 10, 1), 0);
	/* More of the pipeline before any reply: still unknown. */
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, (const uint8_t *)set + 5, L - 5, 2), 0);
	for (int i = 0; i < 11; i++)
		assert_int_equal(OPS->feed(st, L7_DIR_RESP, (const uint8_t *)"+OK\r\n", 5, 3 + (uint64_t)i), 0);
	assert_int_equal(c.n, 11);
	for (int i = 0; i < 11; i++) {
		assert_string_equal(tfield(&c.v[i].r, "reply"), "+OK");
		if (i < 4) {
			assert_string_equal(tfield(&c.v[i].r, "command"), "SET");
			assert_true(c.v[i].r.has_request);
			assert_null(tfield(&c.v[i].r, "gap"));
		} else {
			assert_string_equal(tfield(&c.v[i].r, "command"), "-");
			assert_false(c.v[i].r.has_request);
			assert_string_equal(tfield(&c.v[i].r, "gap"), "request");
		}
	}
	/*
	 * A server reads a long pipeline in parts and may answer between
	 * them: a chunk that starts mid-command is not a turn, and is dropped;
	 * nor is one that starts at a command but comes with no answer since
	 * the client's previous chunk (more of the same pipeline).
	 */
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, (const uint8_t *)set + 9, L - 9, 19), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, (const uint8_t *)set, L, 19), 0);
	assert_int_equal(c.n, 11);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, (const uint8_t *)"+OK\r\n", 5, 19), 0);
	assert_int_equal(c.n, 12);
	assert_string_equal(tfield(&c.v[11].r, "gap"), "request");
	/* The client's turn: its next command is read from its first byte. */
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, (const uint8_t *)"*2\r\n$3\r\nGET\r\n$3\r\nkey\r\n", 22, 20), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, (const uint8_t *)"$3\r\nval\r\n", 9, 21), 0);
	assert_int_equal(c.n, 13);
	assert_string_equal(tfield(&c.v[12].r, "command"), "GET");
	assert_string_equal(tfield(&c.v[12].r, "reply"), "$3");
	assert_int_equal(c.v[12].r.req_ts_ns, 20);
	assert_null(tfield(&c.v[12].r, "gap"));
	OPS->free(st);
	tcollect_free(&c);
}

/*
 * What live capture copies of a call (l7_parser_ops.head): a token's line
 * and the bytes it looks into (a command's name), so a large value goes by
 * as a gap; every exchange stays, whole, with its size.
 */
static void test_head(void **state)
{
	static char get[] = "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", set[64 + 3000], val[64 + 3000];
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tcollect c = { 0 };
	size_t sl, vl;
	uint64_t ts = 1;
	void *st;

	(void)state;
	sl = (size_t)snprintf(set, sizeof(set), "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3000\r\n");
	memset(set + sl, 'v', 3000);
	memcpy(set + sl + 3000, "\r\n", 2);
	sl += 3002;
	vl = (size_t)snprintf(val, sizeof(val), "$3000\r\n");
	memset(val + vl, 'v', 3000);
	memcpy(val + vl + 3000, "\r\n", 2);
	vl += 3002;
	st = OPS->create(&cfg, tcollect_emit, &c);
	assert_non_null(st);
	assert_true(OPS->head(st, L7_DIR_REQ) == L7_HEAD_ALL);
	assert_true(OPS->head(st, L7_DIR_RESP) == L7_HEAD_ALL);
	/* One exchange of each kind whole, then 19 cut exactly where head() says. */
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, (const uint8_t *)set, sl, ts++), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, (const uint8_t *)"+OK\r\n", 5, ts++), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, (const uint8_t *)get, strlen(get), ts++), 0);
	assert_int_equal(OPS->feed(st, L7_DIR_RESP, (const uint8_t *)val, vl, ts++), 0);
	for (int i = 1; i < 20; i++) {
		assert_int_equal(tcapped(OPS, st, L7_DIR_REQ, set, sl, ts++), 27);
		assert_int_equal(tcapped(OPS, st, L7_DIR_RESP, "+OK\r\n", 5, ts++), 5);
		assert_int_equal(tcapped(OPS, st, L7_DIR_REQ, get, strlen(get), ts++), strlen(get));
		assert_int_equal(tcapped(OPS, st, L7_DIR_RESP, val, vl, ts++), 7);
	}
	/* the SET's value token starts at 20 and its line is 7 bytes; the reply's line is 7 */
	assert_int_equal(OPS->head(st, L7_DIR_REQ), 27);
	assert_int_equal(OPS->head(st, L7_DIR_RESP), 7);
	assert_int_equal(c.n, 40);
	for (size_t i = 0; i < c.n; i++) {
		assert_string_equal(tfield(&c.v[i].r, "command"), i % 2 ? "GET" : "SET");
		assert_string_equal(tfield(&c.v[i].r, "reply"), i % 2 ? "$3000" : "+OK");
		assert_int_equal(c.v[i].r.req_bytes, i % 2 ? strlen(get) : sl);
		assert_int_equal(c.v[i].r.resp_bytes, i % 2 ? vl : 5);
	}
	assert_int_equal(OPS->dropped(st), 0);
	/* Two replies in one call cut inside the first: the framing is lost, every byte from then on. */
	/* (the requests whole: PING's name ends at 32) */
	assert_int_equal(OPS->feed(st, L7_DIR_REQ, (const uint8_t *)"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n",
				   34, ts++), 0);
	memcpy(val + vl, "+PONG\r\n", 7);
	assert_int_equal(tcapped(OPS, st, L7_DIR_RESP, val, vl + 7, ts++), 7);
	assert_true(OPS->head(st, L7_DIR_RESP) == L7_HEAD_ALL);
	assert_int_equal(OPS->head(st, L7_DIR_REQ), 32);
	/* The same on the requests' side: a pipelined command cut, every byte from then on. */
	assert_int_equal(tcapped(OPS, st, L7_DIR_REQ, set, sl, ts++), 32);
	assert_int_equal(tcapped(OPS, st, L7_DIR_REQ, "*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3000\r\n", 41,
				 ts++), 32);
	assert_true(OPS->head(st, L7_DIR_REQ) == L7_HEAD_ALL);
	OPS->finish(st, ts);
	OPS->free(st);
	tcollect_free(&c);
}

static void test_detect(void **state)
{
	(void)state;
	assert_true(OPS->detect((const uint8_t *)"*1\r\n$4\r\nPING\r\n", 14, L7_DIR_REQ, 0) >= 80);
	assert_true(OPS->detect((const uint8_t *)"PING\r\n", 6, L7_DIR_REQ, 0) > 0);
	assert_true(OPS->detect((const uint8_t *)"-ERR unknown command\r\n", 22, L7_DIR_RESP, 0) > 0);
	assert_int_equal(OPS->detect((const uint8_t *)"*1\r\n$4\r\nPING\r\n", 14, L7_DIR_RESP, 0) >= 80, 0);
	assert_int_equal(OPS->detect((const uint8_t *)"GET / HTTP/1.1\r\nHost: a\r\n\r\n", 27, L7_DIR_REQ, 6379), 0);
	assert_int_equal(OPS->detect((const uint8_t *)"HELO mail.example.com\r\n", 23, L7_DIR_REQ, 0), 0);
	assert_int_equal(OPS->detect((const uint8_t *)"\x00\x00\x00\x08\x04\xd2\x16\x2f", 8, L7_DIR_REQ, 0), 0);
	assert_int_equal(OPS->detect((const uint8_t *)"SSH-2.0-OpenSSH_9.2\r\n", 21, L7_DIR_REQ, 0), 0);
}

static void test_captures(void **state)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tcollect c = { 0 };
	struct tpcap tp;
	unsigned arrays = 0;

	(void)state;
	assert_int_equal(TCAPTURE("redis/tcpdump-resp_1_benchmark.pcap", OPS, &cfg, 6379, &c, &tp), 15);
	assert_int_equal(tp.errors, 0);
	assert_int_equal(c.n, 15);
	assert_string_equal(tfield(&c.v[0].r, "command"), "PING");   /* inline */
	for (size_t i = 0; i < c.n; i++)
		arrays += !strcmp(tfield(&c.v[i].r, "command"), "LRANGE");
	assert_int_equal(arrays, 4);
	tcollect_free(&c);

	TCAPTURE("redis/zeek-auth.pcap", OPS, &cfg, 6379, &c, &tp);
	assert_int_equal(c.n, 3);
	assert_string_equal(tfield(&c.v[0].r, "reply"), "-WRONGPASS");
	assert_true(c.v[0].r.is_error);
	assert_string_equal(tfield(&c.v[1].r, "reply"), "+OK");
	tcollect_free(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipelining_resp2),
		cmocka_unit_test(test_resp3_types_attributes_pushes),
		cmocka_unit_test(test_errors_and_limits),
		cmocka_unit_test(test_reply_cut_by_gap),
		cmocka_unit_test(test_commands_cut_by_gap),
		cmocka_unit_test(test_head),
		cmocka_unit_test(test_detect),
		cmocka_unit_test(test_captures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
