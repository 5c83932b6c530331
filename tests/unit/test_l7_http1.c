/* HTTP/1.x parser: the hard cases (splits, pipelining, bodies, gaps). */
#include "tests/unit/l7_test.h"

#include <errno.h>

extern const struct l7_parser_ops l7_http1_ops;
static const struct l7_parser_ops *ops = &l7_http1_ops;

struct fix {
	struct l7_config cfg;
	struct rec_log log;
	void *st;
};

static struct fix *fix_new(size_t body)
{
	struct fix *f = calloc(1, sizeof(*f));
	struct l7_config def = L7_CONFIG_DEFAULTS;

	assert_non_null(f);
	f->cfg = def;
	f->cfg.max_body_len = body;
	f->st = ops->create(&f->cfg, rec_log_emit, &f->log);
	assert_non_null(f->st);
	return f;
}

static void fix_free(struct fix *f)
{
	ops->free(f->st);
	free(f);
}

#define REQ1 "GET /a?x=1 HTTP/1.1\r\nHost: h\r\nUser-Agent: t\r\n\r\n"
#define RESP1 "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello"
#define REQ2 "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
#define RESP2 "HTTP/1.1 503 Unavailable\r\nContent-Length: 0\r\n\r\n"

static void run_basic(size_t step)
{
	struct fix *f = fix_new(0);

	feed_steps(ops, f->st, L7_DIR_REQ, REQ1, strlen(REQ1), step, 1000);
	feed_steps(ops, f->st, L7_DIR_RESP, RESP1, strlen(RESP1), step, 5000);
	feed_steps(ops, f->st, L7_DIR_REQ, REQ2, strlen(REQ2), step, 6000);
	feed_steps(ops, f->st, L7_DIR_RESP, RESP2, strlen(RESP2), step, 9000);
	assert_int_equal(f->log.n, 2);
	assert_field(&f->log.r[0], "method", "GET");
	assert_field(&f->log.r[0], "uri", "/a?x=1");
	assert_field(&f->log.r[0], "status", "200");
	assert_int_equal(f->log.r[0].req_ts_ns, 1000);
	assert_int_equal(f->log.r[0].resp_ts_ns, 5000);
	assert_int_equal(f->log.r[0].req_bytes, strlen(REQ1));
	assert_int_equal(f->log.r[0].resp_bytes, strlen(RESP1));
	assert_false(f->log.r[0].is_error);
	assert_field(&f->log.r[1], "method", "POST");
	assert_field(&f->log.r[1], "status", "503");
	assert_int_equal(f->log.r[1].req_bytes, strlen(REQ2));
	assert_true(f->log.r[1].is_error);
	ops->finish(f->st, 10000);
	assert_int_equal(f->log.n, 2);
	fix_free(f);
}

/* Trace context headers become fields (for sampling traced requests); absent ones do not. */
static void test_trace_headers(void **s)
{
	const char *r1 = "GET /t HTTP/1.1\r\nHost: h\r\nsw8: 1-dHJhY2U=-c2Vn-3-c3Zj-aW5z-L2Vw-aDo4MA==\r\n\r\n";
	const char *r2 = "GET /z HTTP/1.1\r\nX-B3-TraceId: 463ac35c9f6413ad\r\nX-B3-SpanId: a2fb4a1d1a96d312\r\n\r\n";
	const char *r3 = "GET /n HTTP/1.1\r\nb3: 80f198ee56343ba8-e457b5a2e4d86bd1-1\r\n\r\n";
	const char *ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
	struct fix *f = fix_new(0);

	(void)s;
	for (int i = 0; i < 3; i++) {
		const char *r = i == 0 ? r1 : i == 1 ? r2 : r3;

		feed_steps(ops, f->st, L7_DIR_REQ, r, strlen(r), 7, 1000 + i);
		feed_steps(ops, f->st, L7_DIR_RESP, ok, strlen(ok), 0, 2000 + i);
	}
	assert_int_equal(f->log.n, 3);
	assert_field(&f->log.r[0], "sw8", "1-dHJhY2U=-c2Vn-3-c3Zj-aW5z-L2Vw-aDo4MA==");
	assert_null(rec_field(&f->log.r[0], "b3"));
	assert_field(&f->log.r[1], "x-b3-traceid", "463ac35c9f6413ad");
	assert_field(&f->log.r[1], "x-b3-spanid", "a2fb4a1d1a96d312");
	assert_null(rec_field(&f->log.r[1], "sw8"));
	assert_field(&f->log.r[2], "b3", "80f198ee56343ba8-e457b5a2e4d86bd1-1");
	fix_free(f);
}

/*
 * A request whose body arrives later (a slow upload, Expect: 100-continue):
 * latency counts from its last byte, duration from its first.
 */
static void test_latency_from_request_end(void **s)
{
	const char *hdr = "POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 6\r\nExpect: 100-continue\r\n\r\n";
	const char *cont = "HTTP/1.1 100 Continue\r\n\r\n";
	const char *resp = "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n";
	struct fix *f = fix_new(0);

	(void)s;
	feed_steps(ops, f->st, L7_DIR_REQ, hdr, strlen(hdr), 0, 1000);
	feed_steps(ops, f->st, L7_DIR_RESP, cont, strlen(cont), 0, 2000);
	feed_steps(ops, f->st, L7_DIR_REQ, "abc", 3, 0, 3000);
	feed_steps(ops, f->st, L7_DIR_REQ, "def", 3, 0, 4000);
	feed_steps(ops, f->st, L7_DIR_RESP, resp, strlen(resp), 0, 9000);
	assert_int_equal(f->log.n, 1);
	assert_field(&f->log.r[0], "status", "201");
	assert_int_equal(f->log.r[0].req_ts_ns, 1000);
	assert_int_equal(f->log.r[0].req_end_ts_ns, 4000);
	assert_int_equal(l7_record__latency_ns(&f->log.r[0]), 5000);
	assert_int_equal(l7_record__duration_ns(&f->log.r[0]), 8000);
	fix_free(f);
}

static void test_one_shot(void **s) { (void)s; run_basic(0); }
static void test_one_byte(void **s) { (void)s; run_basic(1); }
static void test_seven_bytes(void **s) { (void)s; run_basic(7); }

static void test_pipelining(void **s)
{
	const char *reqs = "GET /1 HTTP/1.1\r\nHost: h\r\n\r\n"
			   "GET /2 HTTP/1.1\r\nHost: h\r\n\r\n"
			   "HEAD /3 HTTP/1.1\r\nHost: h\r\n\r\n";
	const char *resps = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
			    "HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nno!"
			    "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n" /* HEAD: no body */
			    "HTTP/1.1 200 OK\r\n\r\n";                          /* orphan, no request */
	struct fix *f = fix_new(0);

	(void)s;
	feed_steps(ops, f->st, L7_DIR_REQ, reqs, strlen(reqs), 0, 1);
	feed_steps(ops, f->st, L7_DIR_RESP, resps, strlen(resps), 3, 2);
	assert_int_equal(f->log.n, 3);
	assert_field(&f->log.r[0], "uri", "/1");
	assert_field(&f->log.r[0], "status", "200");
	assert_field(&f->log.r[1], "uri", "/2");
	assert_field(&f->log.r[1], "status", "404");
	assert_true(f->log.r[1].is_client_error);
	assert_false(f->log.r[1].is_error);
	assert_field(&f->log.r[2], "method", "HEAD");
	assert_field(&f->log.r[2], "status", "200");
	/* The last response has no length: delimited by the close. */
	ops->finish(f->st, 3);
	assert_int_equal(f->log.n, 4);
	assert_false(f->log.r[3].has_request);
	assert_true(f->log.r[3].has_response);
	fix_free(f);
}

static void test_chunked(void **s)
{
	const char *resp = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
			   "5;ext=1\r\nhello\r\n"
			   "A\r\n0123456789\r\n"
			   "0\r\nX-Trailer: y\r\n\r\n";
	const char *want = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\nhello0123456789";
	struct fix *f = fix_new(128);

	(void)s;
	for (int round = 0; round < 2; round++) {
		feed_steps(ops, f->st, L7_DIR_REQ, REQ1, strlen(REQ1), 0, 1);
		feed_steps(ops, f->st, L7_DIR_RESP, resp, strlen(resp), round ? 1 : 0, 2);
	}
	assert_int_equal(f->log.n, 2);
	for (int i = 0; i < 2; i++) {
		assert_field(&f->log.r[i], "status", "200");
		assert_int_equal(f->log.r[i].resp_bytes, strlen(resp));
		/* The sample is the whole message, its head then its body de-chunked (fed a byte at a time too). */
		assert_int_equal(f->log.r[i].resp_body_len, strlen(want));
		assert_memory_equal(f->log.r[i].resp_body, want, strlen(want));
		assert_field(&f->log.r[i], "resp_encoding", "UTF-8");
	}
	fix_free(f);
}

static void test_interim_and_bodyless(void **s)
{
	const char *req = "POST /up HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n";
	const char *r100 = "HTTP/1.1 100 Continue\r\n\r\n";
	const char *r200 = "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
	const char *more = "GET /x HTTP/1.1\r\n\r\nGET /y HTTP/1.1\r\n\r\n";
	const char *r204 = "HTTP/1.1 204 No Content\r\nContent-Length: 99\r\n\r\n"
			   "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n";
	struct fix *f = fix_new(128);

	(void)s;
	feed_steps(ops, f->st, L7_DIR_REQ, req, strlen(req), 0, 10);
	feed_steps(ops, f->st, L7_DIR_RESP, r100, strlen(r100), 0, 20);
	assert_int_equal(f->log.n, 0); /* 100 is not an exchange */
	feed_steps(ops, f->st, L7_DIR_REQ, "data", 4, 1, 30);
	feed_steps(ops, f->st, L7_DIR_RESP, r200, strlen(r200), 0, 40);
	assert_int_equal(f->log.n, 1);
	assert_field(&f->log.r[0], "status", "201");
	assert_int_equal(f->log.r[0].req_ts_ns, 10);
	assert_int_equal(f->log.r[0].resp_ts_ns, 40);
	assert_int_equal(f->log.r[0].resp_bytes, strlen(r100) + strlen(r200));
	/* Samples: the request's head and body; the final response's head (not the 100's) and body. */
	assert_int_equal(f->log.r[0].req_body_len, strlen(req) + 4);
	assert_memory_equal(f->log.r[0].req_body, req, strlen(req));
	assert_memory_equal(f->log.r[0].req_body + strlen(req), "data", 4);
	assert_int_equal(f->log.r[0].resp_body_len, strlen(r200));
	assert_memory_equal(f->log.r[0].resp_body, r200, strlen(r200));
	feed_steps(ops, f->st, L7_DIR_REQ, more, strlen(more), 0, 50);
	feed_steps(ops, f->st, L7_DIR_RESP, r204, strlen(r204), 0, 60);
	assert_int_equal(f->log.n, 3);
	assert_field(&f->log.r[1], "status", "204");
	assert_field(&f->log.r[2], "uri", "/y");
	assert_field(&f->log.r[2], "status", "304");
	fix_free(f);
}

/* A sample longer than its budget keeps the message's first bytes: the head first. */
static void test_sample_cut(void **s)
{
	const char *req = "POST /long/path HTTP/1.1\r\nHost: example\r\nContent-Length: 4\r\n\r\nbody";
	const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	struct fix *f = fix_new(20);

	(void)s;
	feed_steps(ops, f->st, L7_DIR_REQ, req, strlen(req), 3, 1);
	feed_steps(ops, f->st, L7_DIR_RESP, resp, strlen(resp), 0, 2);
	assert_int_equal(f->log.n, 1);
	assert_int_equal(f->log.r[0].req_body_len, 20);
	assert_memory_equal(f->log.r[0].req_body, req, 20);
	assert_int_equal(f->log.r[0].resp_body_len, 20);
	assert_memory_equal(f->log.r[0].resp_body, resp, 20);
	assert_int_equal(f->log.r[0].req_bytes, strlen(req));
	fix_free(f);
}

static void test_gap(void **s)
{
	const char *resp_head = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
	struct fix *f = fix_new(0);

	(void)s;
	/* A gap inside a body of known length is skipped. */
	feed_steps(ops, f->st, L7_DIR_REQ, REQ1, strlen(REQ1), 0, 1);
	feed_steps(ops, f->st, L7_DIR_RESP, resp_head, strlen(resp_head), 0, 2);
	feed_steps(ops, f->st, L7_DIR_RESP, "0123456789", 10, 0, 3);
	assert_int_equal(ops->gap(f->st, L7_DIR_RESP, 900, 4), 0);
	feed_steps(ops, f->st, L7_DIR_RESP, "x", 1, 0, 5);
	assert_int_equal(f->log.n, 0);
	feed_steps(ops, f->st, L7_DIR_RESP, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghi", 89, 0, 6);
	assert_int_equal(f->log.n, 1);
	assert_int_equal(f->log.r[0].resp_bytes, strlen(resp_head) + 1000);

	/* A gap between exchanges with nothing outstanding: resynchronise. */
	assert_int_equal(ops->gap(f->st, L7_DIR_REQ, 50, 7), 0);
	feed_steps(ops, f->st, L7_DIR_REQ, "tail of a lost request\r\n\r\n", 26, 0, 8);
	feed_steps(ops, f->st, L7_DIR_REQ, REQ2, strlen(REQ2), 0, 9);
	feed_steps(ops, f->st, L7_DIR_RESP, RESP2, strlen(RESP2), 0, 10);
	assert_int_equal(f->log.n, 2);
	assert_field(&f->log.r[1], "method", "POST");
	assert_field(&f->log.r[1], "status", "503");

	/* A gap in the middle of a response's headers while its request waits:
	 * that exchange is lost (counted), the next one is whole. */
	feed_steps(ops, f->st, L7_DIR_REQ, REQ1, strlen(REQ1), 0, 11);
	feed_steps(ops, f->st, L7_DIR_RESP, "HTTP/1.1 200 OK\r\nCont", 21, 0, 12);
	assert_int_equal(ops->gap(f->st, L7_DIR_RESP, 10, 13), 0);
	feed_steps(ops, f->st, L7_DIR_RESP, "ent-Length: 5\r\n\r\nhello", 22, 0, 14);
	feed_steps(ops, f->st, L7_DIR_REQ, REQ2, strlen(REQ2), 0, 15);
	feed_steps(ops, f->st, L7_DIR_RESP, RESP2, strlen(RESP2), 0, 16);
	assert_int_equal(f->log.n, 3);
	assert_field(&f->log.r[2], "method", "POST");
	assert_field(&f->log.r[2], "status", "503");
	assert_true(ops->dropped(f->st) >= 1);
	fix_free(f);
}

/*
 * A keep-alive connection of 100 exchanges with gaps of every kind: in a
 * chunked body, across two responses, in a request's headers, across a
 * whole request, in a response's status line.  Each gap costs the exchanges
 * it touched; every other exchange is reported, paired right.
 */
static void test_gap_resync_keepalive(void **s)
{
	struct fix *f = fix_new(0);
	char req[128], resp[256];
	uint64_t ts = 1000;
	int lost_expected = 0;

	(void)s;
	for (int i = 0; i < 100; i++) {
		int rl = snprintf(req, sizeof(req), "GET /item/%d HTTP/1.1\r\nHost: h\r\n\r\n", i);
		int sl = snprintf(resp, sizeof(resp),
				  "HTTP/1.1 %d X\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
				  200 + i);

		switch (i) {
		case 10: /* the response's chunked body is cut */
			feed_steps(ops, f->st, L7_DIR_REQ, req, (size_t)rl, 0, ts++);
			feed_steps(ops, f->st, L7_DIR_RESP, resp, 50, 0, ts++);
			assert_int_equal(ops->gap(f->st, L7_DIR_RESP, 8, ts++), 0);
			feed_steps(ops, f->st, L7_DIR_RESP, resp + 58, (size_t)sl - 58, 0, ts++);
			lost_expected++;
			continue;
		case 20: /* the request's headers are cut: it is kept, its response pairs */
			feed_steps(ops, f->st, L7_DIR_REQ, req, 24, 0, ts++);
			assert_int_equal(ops->gap(f->st, L7_DIR_REQ, (size_t)rl - 24, ts++), 0);
			feed_steps(ops, f->st, L7_DIR_RESP, resp, (size_t)sl, 0, ts++);
			continue;
		case 30: /* a whole request is lost: its response has no request */
			assert_int_equal(ops->gap(f->st, L7_DIR_REQ, (size_t)rl, ts++), 0);
			feed_steps(ops, f->st, L7_DIR_RESP, resp, (size_t)sl, 0, ts++);
			lost_expected++;
			continue;
		case 40: /* one gap swallows the end of response 40 and the start of 41 */
			feed_steps(ops, f->st, L7_DIR_REQ, req, (size_t)rl, 0, ts++);
			feed_steps(ops, f->st, L7_DIR_RESP, resp, 30, 0, ts++);
			assert_int_equal(ops->gap(f->st, L7_DIR_RESP, (size_t)sl - 30 + 20, ts++), 0);
			rl = snprintf(req, sizeof(req), "GET /item/%d HTTP/1.1\r\nHost: h\r\n\r\n", 41);
			feed_steps(ops, f->st, L7_DIR_REQ, req, (size_t)rl, 0, ts - 2); /* sent before the gap's bytes */
			sl = snprintf(resp, sizeof(resp), "HTTP/1.1 %d X\r\nTransfer-Encoding: chunked\r\n\r\n"
				      "5\r\nhello\r\n0\r\n\r\n", 241);
			feed_steps(ops, f->st, L7_DIR_RESP, resp + 20, (size_t)sl - 20, 0, ts++);
			lost_expected += 2;
			i++;
			continue;
		case 50: /* a response's status line is cut */
			feed_steps(ops, f->st, L7_DIR_REQ, req, (size_t)rl, 0, ts++);
			feed_steps(ops, f->st, L7_DIR_RESP, resp, 5, 0, ts++);
			assert_int_equal(ops->gap(f->st, L7_DIR_RESP, 10, ts++), 0);
			feed_steps(ops, f->st, L7_DIR_RESP, resp + 15, (size_t)sl - 15, 0, ts++);
			lost_expected++;
			continue;
		}
		feed_steps(ops, f->st, L7_DIR_REQ, req, (size_t)rl, 0, ts++);
		feed_steps(ops, f->st, L7_DIR_RESP, resp, (size_t)sl, 0, ts++);
	}
	ops->finish(f->st, ts);
	/* Records with both halves, each pairing request /item/N with status 200 + N. */
	int paired = 0, wrong = 0;
	for (size_t k = 0; k < f->log.n; k++) {
		const struct l7_record *r = &f->log.r[k];
		const char *uri = NULL, *st = NULL;

		for (unsigned j = 0; j < r->nfields; j++) {
			if (!strcmp(r->fields[j].key, "uri"))
				uri = r->fields[j].val;
			if (!strcmp(r->fields[j].key, "status"))
				st = r->fields[j].val;
		}
		if (!r->has_request || !r->has_response)
			continue;
		paired++;
		if (!uri || !st || atoi(uri + strlen("/item/")) + 200 != atoi(st))
			wrong++;
	}
	assert_int_equal(wrong, 0);
	assert_int_equal(paired, 100 - lost_expected);
	assert_true(ops->dropped(f->st) >= (uint64_t)lost_expected);
	fix_free(f);
}

/*
 * What live capture must copy of each call (ops->head): the heads, once
 * whole heads were seen, then only what a capture cut after them cannot
 * lose.  A connection captured that way (each call's first head() bytes,
 * the rest as a gap) keeps every exchange.
 */
static void test_head_need(void **s)
{
	static char resp[64 + 3000];
	const char *pipe2 = "GET /p1 HTTP/1.1\r\nHost: h\r\n\r\nGET /p2 HTTP/1.1\r\nHost: h\r\n\r\n";
	size_t rh, rl, need;
	struct fix *f = fix_new(0);
	uint64_t ts = 1;

	(void)s;
	assert_true(ops->head(f->st, L7_DIR_REQ) == L7_HEAD_ALL);
	assert_true(ops->head(f->st, L7_DIR_RESP) == L7_HEAD_ALL);
	rh = (size_t)snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nContent-Length: 3000\r\n\r\n");
	memset(resp + rh, 'a', 3000);
	rl = rh + 3000;
	feed_steps(ops, f->st, L7_DIR_REQ, REQ1, strlen(REQ1), 0, ts++);
	feed_steps(ops, f->st, L7_DIR_RESP, resp, rl, 0, ts++);
	assert_int_equal(ops->head(f->st, L7_DIR_REQ), strlen(REQ1));
	assert_int_equal(ops->head(f->st, L7_DIR_RESP), rh);
	/* 50 exchanges captured at the heads: every one is there, nothing dropped. */
	for (int i = 0; i < 50; i++) {
		need = ops->head(f->st, L7_DIR_RESP);
		feed_steps(ops, f->st, L7_DIR_REQ, REQ1, strlen(REQ1), 0, ts++);
		assert_int_equal(ops->feed(f->st, L7_DIR_RESP, (const uint8_t *)resp, need, ts), 0);
		assert_int_equal(ops->gap(f->st, L7_DIR_RESP, rl - need, ts++), 0);
	}
	assert_int_equal(f->log.n, 51);
	assert_int_equal(f->log.r[50].resp_bytes, rl);
	assert_int_equal(ops->dropped(f->st), 0);
	assert_int_equal(ops->head(f->st, L7_DIR_RESP), rh);
	/* A head split over two calls: the first call was all head. */
	feed_steps(ops, f->st, L7_DIR_REQ, REQ1, 10, 0, ts);
	feed_steps(ops, f->st, L7_DIR_REQ, REQ1 + 10, strlen(REQ1) - 10, 0, ts++);
	assert_int_equal(ops->head(f->st, L7_DIR_REQ), strlen(REQ1));
	feed_steps(ops, f->st, L7_DIR_RESP, resp, rl, 0, ts++);
	/* Two requests in one call cut after the first head: one lost, counted; every byte from then on. */
	/* (cut inside the second start line: with it whole, the request would be kept, its size unknown) */
	need = 34;
	assert_true(ops->head(f->st, L7_DIR_REQ) > 29);
	assert_int_equal(ops->feed(f->st, L7_DIR_REQ, (const uint8_t *)pipe2, need, ts), 0);
	assert_int_equal(ops->gap(f->st, L7_DIR_REQ, strlen(pipe2) - need, ts++), 0);
	assert_int_equal(ops->dropped(f->st), 1);
	assert_true(ops->head(f->st, L7_DIR_REQ) == L7_HEAD_ALL);
	assert_int_equal(ops->head(f->st, L7_DIR_RESP), rh);
	fix_free(f);

	/* A chunked body, and a connection whose bodies are sampled: every byte. */
	f = fix_new(0);
	feed_steps(ops, f->st, L7_DIR_REQ, REQ1, strlen(REQ1), 0, 1);
	feed_steps(ops, f->st, L7_DIR_RESP, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		   59, 0, 2);
	assert_int_equal(f->log.n, 1);
	assert_int_equal(ops->head(f->st, L7_DIR_REQ), strlen(REQ1));
	assert_true(ops->head(f->st, L7_DIR_RESP) == L7_HEAD_ALL);
	fix_free(f);
	f = fix_new(1024);
	feed_steps(ops, f->st, L7_DIR_REQ, REQ1, strlen(REQ1), 0, 1);
	feed_steps(ops, f->st, L7_DIR_RESP, RESP1, strlen(RESP1), 0, 2);
	assert_true(ops->head(f->st, L7_DIR_REQ) == L7_HEAD_ALL);
	assert_true(ops->head(f->st, L7_DIR_RESP) == L7_HEAD_ALL);
	fix_free(f);
}

static void test_finish_unanswered(void **s)
{
	struct fix *f = fix_new(0);

	(void)s;
	feed_steps(ops, f->st, L7_DIR_REQ, REQ1 REQ1, 2 * strlen(REQ1), 0, 1);
	feed_steps(ops, f->st, L7_DIR_REQ, "GET /cut HTTP/1.1\r\nHo", 21, 0, 2);
	ops->finish(f->st, 3);
	assert_int_equal(f->log.n, 3);
	for (int i = 0; i < 3; i++) {
		assert_true(f->log.r[i].has_request);
		assert_false(f->log.r[i].has_response);
		assert_null(rec_field(&f->log.r[i], "status"));
	}
	assert_field(&f->log.r[2], "uri", "/cut");
	fix_free(f);
}

static void test_long_lines(void **s)
{
	char req[4096], uri[2000];
	struct fix *f = fix_new(0);
	int n;

	(void)s;
	memset(uri, 'u', sizeof(uri) - 1);
	uri[0] = '/';
	uri[sizeof(uri) - 1] = 0;
	n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nCookie: %s\r\n\r\n", uri, uri);
	feed_steps(ops, f->st, L7_DIR_REQ, req, (size_t)n, 1, 1);
	feed_steps(ops, f->st, L7_DIR_RESP, RESP1, strlen(RESP1), 0, 2);
	assert_int_equal(f->log.n, 1);
	/* Truncated to max_query_len, within what a field holds. */
	assert_int_equal(strlen(rec_field(&f->log.r[0], "uri")), L7_FIELD_MAX - 1);
	assert_memory_equal(rec_field(&f->log.r[0], "uri"), uri, L7_FIELD_MAX - 1);
	assert_int_equal(f->log.r[0].req_bytes, (size_t)n);
	fix_free(f);
}

static void test_too_much_pipelining(void **s)
{
	struct fix *f = fix_new(0);
	int err = 0;

	(void)s;
	for (int i = 0; i < 40 && !err; i++)
		err = ops->feed(f->st, L7_DIR_REQ, (const uint8_t *)REQ1, strlen(REQ1), 1);
	assert_int_equal(err, -ENOBUFS);
	fix_free(f);
}

static void test_detect(void **s)
{
	(void)s;
	assert_int_equal(ops->detect((const uint8_t *)REQ1, strlen(REQ1), L7_DIR_REQ, 80), 100);
	assert_int_equal(ops->detect((const uint8_t *)RESP1, strlen(RESP1), L7_DIR_RESP, 80), 100);
	assert_true(ops->detect((const uint8_t *)"GET /", 5, L7_DIR_REQ, 0) >= L7_CONF_MIN);
	assert_true(ops->detect((const uint8_t *)"GET /", 5, L7_DIR_REQ, 0) < L7_CONF_CERTAIN);
	assert_int_equal(ops->detect((const uint8_t *)"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24, L7_DIR_REQ, 0), 0);
	assert_int_equal(ops->detect((const uint8_t *)"\x16\x03\x01\x02\x00", 5, L7_DIR_REQ, 443), 0);
	assert_int_equal(ops->detect((const uint8_t *)RESP1, strlen(RESP1), L7_DIR_REQ, 80), 0);
	assert_int_equal(ops->detect((const uint8_t *)"*3\r\n$3\r\nSET\r\n", 13, L7_DIR_REQ, 6379), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_shot),
		cmocka_unit_test(test_latency_from_request_end),
		cmocka_unit_test(test_trace_headers),
		cmocka_unit_test(test_gap_resync_keepalive),
		cmocka_unit_test(test_one_byte),
		cmocka_unit_test(test_seven_bytes),
		cmocka_unit_test(test_pipelining),
		cmocka_unit_test(test_chunked),
		cmocka_unit_test(test_interim_and_bodyless),
		cmocka_unit_test(test_sample_cut),
		cmocka_unit_test(test_gap),
		cmocka_unit_test(test_head_need),
		cmocka_unit_test(test_finish_unanswered),
		cmocka_unit_test(test_long_lines),
		cmocka_unit_test(test_too_much_pipelining),
		cmocka_unit_test(test_detect),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
