/*
 * HTTP/1.x (RFC 9112) streaming parser.
 *
 * Each direction is a line/body state machine that never stores a message:
 * a line is parsed in place when it lies within one chunk and only a
 * bounded prefix of it is copied when it spans chunks, so 1-byte feeding
 * and huge headers cost no memory.  Requests whose headers are complete wait
 * in a fixed ring (pipelining); each final response pops the oldest.  All
 * memory is allocated on the first exchange and reused, so the steady state
 * allocates nothing (bench/bench_l7.c counts it).
 *
 * Gaps: inside a body of known length the bytes are simply skipped.  Any
 * other gap loses the message it hits (counted in dropped()): a request cut
 * after its request line is kept, without its size; the direction then skips
 * to its next start line (long binary lines included), and the first
 * response after the gap is re-paired by time: it answers the latest pending
 * request that had ended before it began, the older ones lost their answers
 * in the gap.  So a gap costs the exchanges it touched, not every exchange
 * after it.  (With pipelining several requests may have ended before that
 * response; taking the latest can then misplace one more exchange.)
 *
 * One file of ~1000 lines on purpose: it is one parser, one state machine
 * over struct h1 (the two directions, the pipelining ring, the bodies kept
 * for sampling) whose every part (lines, message boundaries, feeding,
 * gaps) moves the same fields; a second file would need that struct and
 * its invariants in a header.  Its seam is l7.h's parser ops, as for every
 * protocol.
 */
#include "l7/l7.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define H1_LINE_KEEP   512           /* prefix of a line kept when it spans chunks */
#define H1_LINE_LIMIT  (64 * 1024)   /* longer lines are not HTTP */
#define H1_PENDING     32            /* pipelined requests awaiting a response */
#define H1_METHOD_MAX  20
#define H1_CHARSET_MAX 32
#define H1_SW8_MAX     200           /* sw8's trace, segment and span ids come first: enough of it */
#define H1_B3_MAX      96            /* b3: trace-span-sampled-parent; x-b3-traceid / spanid fit too */

enum h1_state {
	ST_START = 0,   /* expecting a start line (skips blank lines and garbage) */
	ST_HEADERS,
	ST_BODY_LEN,    /* Content-Length body: remaining bytes */
	ST_CHUNK_SIZE,
	ST_CHUNK_DATA,
	ST_CHUNK_END,   /* CRLF after chunk data */
	ST_TRAILERS,
	ST_BODY_CLOSE,  /* response body delimited by connection close */
	ST_TUNNEL,      /* after 101 / CONNECT: not HTTP any more, ignored */
};

struct h1_req {
	uint64_t seq;
	uint64_t ts_ns, end_ts_ns, bytes;   /* first and last byte; size */
	char method[H1_METHOD_MAX + 1];
	char uri[L7_FIELD_MAX];
	char charset[H1_CHARSET_MAX];
	/* Trace context headers, for sampling traced requests (empty when absent). */
	char sw8[H1_SW8_MAX], b3[H1_B3_MAX], b3_trace[H1_B3_MAX], b3_span[H1_B3_MAX];
	bool head, connect;
	uint8_t *body;      /* sample buffer, body_cap bytes, kept across exchanges */
	size_t body_len;
};

struct h1_dir {
	enum h1_state st;
	char line[H1_LINE_KEEP];
	char tail[10];         /* last bytes of the current line: " HTTP/1.x\r" */
	size_t linelen;        /* bytes stored in line[] */
	size_t linetotal;      /* bytes of the current line so far */
	uint64_t remaining;    /* body / chunk bytes left */
	bool active;           /* a message has started */
	uint64_t ts_ns, bytes; /* message start time and size so far */
	int64_t clen;          /* Content-Length, -1 none */
	bool chunked, upgrade;
	int status;            /* response status, 0 before the (first) status line */
	char charset[H1_CHARSET_MAX];
};

struct h1 {
	const struct l7_config *cfg;
	struct l7_config cfgcopy;
	l7_emit_fn emit;
	void *emit_ctx;
	struct h1_dir d[2];
	struct h1_req cur;              /* request whose headers are being read */
	struct h1_req q[H1_PENDING];    /* ring of requests awaiting a response */
	unsigned qhead, qlen;
	uint64_t next_seq;
	uint64_t body_seq;              /* request whose body is being read, 0 none */
	size_t body_cap;
	uint8_t *resp_body;
	size_t resp_body_len;
	/* Sampling: the head being read, per direction, to lead its message's sample. */
	uint8_t *head[2];
	size_t head_len[2];
	bool resp_matched;              /* the response being read has a request */
	struct h1_req orphan;           /* stands in for a missing request */
	uint64_t dropped;               /* lines skipped while resynchronising, exchanges lost to gaps */
	bool resync[2];                 /* after a gap: skip to the next start line, whatever the line length */
	bool repair;                    /* after a gap: re-pair the next response by time */
	size_t uri_max;
	/*
	 * What live capture must copy of each call (l7_parser_ops.head), per
	 * direction: where in its call the furthest head ended (or a head
	 * still open at the call's end), and whether only every byte will do.
	 */
	size_t head_need[2];
	bool head_all[2];
	size_t feed_off;                /* bytes of the current feed() consumed (for head_need) */
};

/* ---- small helpers --------------------------------------------------- */

static const char *const methods[] = {
	"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "TRACE", "CONNECT",
	"PROPFIND", "PROPPATCH", "MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK", "REPORT",
	"SEARCH", "MKCALENDAR", "PURGE", "LINK", "UNLINK", "MERGE", "CHECKOUT", "NOTIFY",
	"SUBSCRIBE", "UNSUBSCRIBE", "MKACTIVITY", "ACL", "BIND", "REBIND", "UNBIND",
};

static bool is_tchar_upper(char c)
{
	return (c >= 'A' && c <= 'Z') || c == '-' || c == '_';
}

/* "HTTP/1.x" at p[0..8) */
static bool is_http1_version(const char *p, size_t n)
{
	return n >= 8 && !memcmp(p, "HTTP/1.", 7) && p[7] >= '0' && p[7] <= '9';
}

/*
 * p[0..n) equals lower (a lowercase name) but for ASCII case.  Not
 * strncasecmp: header names are ASCII whatever the locale, and the
 * locale-aware call cost about 6% of the analyzer's time per event.
 */
static bool ascii_ieq(const char *p, const char *lower, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char c = p[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c + ('a' - 'A'));
		if (c != lower[i])
			return false;
	}
	return true;
}

static bool hdr_is(const char *p, size_t n, const char *name, size_t nlen, const char **val, size_t *vlen)
{
	size_t i;

	if (n <= nlen || p[nlen] != ':' || !ascii_ieq(p, name, nlen))
		return false;
	i = nlen + 1;
	while (i < n && (p[i] == ' ' || p[i] == '\t'))
		i++;
	*val = p + i;
	*vlen = n - i;
	while (*vlen && (p[i + *vlen - 1] == ' ' || p[i + *vlen - 1] == '\t'))
		(*vlen)--;
	return true;
}

static bool contains_ci(const char *p, size_t n, const char *needle)
{
	size_t m = strlen(needle);

	for (size_t i = 0; i + m <= n; i++)
		if (ascii_ieq(p + i, needle, m))
			return true;
	return false;
}

static void copy_charset(char *dst, const char *p, size_t n)
{
	for (size_t i = 0; i + 8 <= n; i++) {
		size_t j, k = 0;

		if (!ascii_ieq(p + i, "charset=", 8))
			continue;
		j = i + 8;
		if (j < n && p[j] == '"')
			j++;
		while (j < n && k < H1_CHARSET_MAX - 1 && p[j] != ';' && p[j] != '"' && p[j] != ' ')
			dst[k++] = p[j++];
		dst[k] = 0;
		return;
	}
}

/* Parses a decimal Content-Length; -1 if invalid. */
static int64_t parse_len(const char *p, size_t n)
{
	int64_t v = 0;

	if (!n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9' || v > (INT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	return v;
}

/* ---- records ----------------------------------------------------------- */

static void emit_exchange(struct h1 *h, const struct h1_req *r, bool has_req, bool has_resp,
			  uint64_t resp_ts)
{
	struct h1_dir *rd = &h->d[L7_DIR_RESP];
	struct l7_record rec;

	l7_record__init(&rec, "http1");
	rec.has_request = has_req;
	rec.has_response = has_resp;
	if (has_req) {
		rec.req_ts_ns = r->ts_ns;
		rec.req_end_ts_ns = r->end_ts_ns >= r->ts_ns ? r->end_ts_ns : r->ts_ns;
		rec.req_bytes = r->bytes;
		l7_record__add_str(&rec, "method", r->method, strlen(r->method));
		l7_record__add_str(&rec, "uri", r->uri, strnlen(r->uri, h->uri_max));
		if (r->sw8[0])
			l7_record__add_str(&rec, "sw8", r->sw8, strlen(r->sw8));
		if (r->b3[0])
			l7_record__add_str(&rec, "b3", r->b3, strlen(r->b3));
		if (r->b3_trace[0])
			l7_record__add_str(&rec, "x-b3-traceid", r->b3_trace, strlen(r->b3_trace));
		if (r->b3_span[0])
			l7_record__add_str(&rec, "x-b3-spanid", r->b3_span, strlen(r->b3_span));
		if (r->body && r->body_len) {
			rec.req_body = r->body;
			rec.req_body_len = r->body_len;
			l7_record__add(&rec, "req_encoding", "%s",
				       r->charset[0] ? r->charset : h->cfg->req_encoding ? h->cfg->req_encoding : "");
		}
	}
	if (has_resp) {
		rec.resp_ts_ns = resp_ts;
		rec.resp_bytes = rd->bytes;
		rec.status = rd->status;
		rec.is_error = rd->status >= 500;
		rec.is_client_error = rd->status >= 400 && rd->status < 500;
		l7_record__add_u64(&rec, "status", (uint64_t)rd->status);
		if (h->resp_body && h->resp_body_len) {
			rec.resp_body = h->resp_body;
			rec.resp_body_len = h->resp_body_len;
			l7_record__add(&rec, "resp_encoding", "%s",
				       rd->charset[0] ? rd->charset : h->cfg->resp_encoding ? h->cfg->resp_encoding : "");
		}
	}
	h->emit(h->emit_ctx, &rec);
}

static struct h1_req *q_at(struct h1 *h, unsigned i)
{
	return &h->q[(h->qhead + i) % H1_PENDING];
}

/*
 * The oldest request leaves the queue.  An emptied queue starts again at its
 * first slot: without pipelining every request then uses that one slot (and
 * its sample buffer), still in the cache, where walking round the 32 slots
 * of every connection made each request's slot a miss.
 */
static void q_pop(struct h1 *h)
{
	h->qhead = --h->qlen ? (h->qhead + 1) % H1_PENDING : 0;
}

static struct h1_req *q_find(struct h1 *h, uint64_t seq)
{
	for (unsigned i = 0; i < h->qlen; i++)
		if (q_at(h, i)->seq == seq)
			return q_at(h, i);
	return NULL;
}

static int ensure_body(struct h1 *h, uint8_t **buf)
{
	if (!h->body_cap || *buf)
		return 0;
	*buf = malloc(h->body_cap);
	return *buf ? 0 : -ENOBUFS;
}

/* A line of the head being read (without its CR LF), to lead the message's sample. */
static void head_add(struct h1 *h, enum l7_dir dir, const char *p, size_t n)
{
	size_t room;

	if (!h->head[dir])
		return;
	room = h->body_cap - h->head_len[dir];
	if (n > room)
		n = room;
	memcpy(h->head[dir] + h->head_len[dir], p, n);
	h->head_len[dir] += n;
	room -= n;
	memcpy(h->head[dir] + h->head_len[dir], "\r\n", room < 2 ? room : 2);
	h->head_len[dir] += room < 2 ? room : 2;
}

/* The message's sample starts with its head (a message is sampled whole, as Rover sends it). */
static void head_to(struct h1 *h, enum l7_dir dir, uint8_t *buf, size_t *len)
{
	*len = 0;
	if (buf && h->head[dir]) {
		memcpy(buf, h->head[dir], h->head_len[dir]);
		*len = h->head_len[dir];
	}
}

static void sample(struct h1 *h, enum l7_dir dir, const uint8_t *p, size_t n)
{
	uint8_t *buf;
	size_t *len, room;

	if (!h->body_cap)
		return;
	if (dir == L7_DIR_REQ) {
		struct h1_req *r = h->body_seq ? q_find(h, h->body_seq) : NULL;

		if (!r || !r->body)
			return;
		buf = r->body;
		len = &r->body_len;
	} else {
		if (!h->resp_body)
			return;
		buf = h->resp_body;
		len = &h->resp_body_len;
	}
	room = h->body_cap - *len;
	if (n > room)
		n = room;
	memcpy(buf + *len, p, n);
	*len += n;
}

/* ---- message boundaries ------------------------------------------------- */

static void dir_reset(struct h1_dir *d)
{
	d->st = ST_START;
	d->active = false;
	d->bytes = 0;
	d->clen = -1;
	d->chunked = d->upgrade = false;
	d->status = 0;
	d->charset[0] = 0;
}

/* Keeps the last 9 bytes of the line being assembled. */
static void tail_push(struct h1_dir *d, const uint8_t *p, size_t n)
{
	if (n >= sizeof(d->tail)) {
		memcpy(d->tail, p + n - sizeof(d->tail), sizeof(d->tail));
		return;
	}
	memmove(d->tail, d->tail + n, sizeof(d->tail) - n);
	memcpy(d->tail + sizeof(d->tail) - n, p, n);
}

/* A request (headers and body) is complete. */
/* The request being read is complete at time ts. */
static void req_done(struct h1 *h, uint64_t ts)
{
	struct h1_req *last = h->qlen ? q_at(h, h->qlen - 1) : NULL;

	if (last && last->seq == h->body_seq)
		last->end_ts_ns = ts;
	h->body_seq = 0;
	dir_reset(&h->d[L7_DIR_REQ]);
}

/* A response is complete at time ts. */
static void resp_done(struct h1 *h, uint64_t ts)
{
	struct h1_dir *rd = &h->d[L7_DIR_RESP];
	bool interim = rd->status >= 100 && rd->status < 200 && rd->status != 101;

	if (interim) {
		/* Not an exchange: the final response follows (its size includes this). */
		rd->st = ST_START;
		rd->clen = -1;
		rd->chunked = rd->upgrade = false;
		return;
	}
	if (h->resp_matched) {
		struct h1_req *r = q_at(h, 0);

		emit_exchange(h, r, true, true, ts);
		q_pop(h);
		h->resp_matched = false;
	} else {
		emit_exchange(h, &h->orphan, false, true, ts);
	}
	h->resp_body_len = 0;
	dir_reset(rd);
}

static void msg_done(struct h1 *h, enum l7_dir dir, uint64_t ts)
{
	if (dir == L7_DIR_REQ)
		req_done(h, ts);
	else
		resp_done(h, ts);
}

/* ---- lines ---------------------------------------------------------------- */

static int req_start_line(struct h1 *h, const char *p, size_t n, uint64_t ts)
{
	struct h1_dir *d = &h->d[L7_DIR_REQ];
	struct h1_req *r = &h->cur;
	size_t m = 0, u, ulen, keep;

	while (m < n && m <= H1_METHOD_MAX && is_tchar_upper(p[m]))
		m++;
	if (!m || m > H1_METHOD_MAX || m >= n || p[m] != ' ')
		goto skip; /* not a request line: skip it (resynchronising) */
	u = m + 1;
	/* The version ends the line; the URI is everything in between. */
	if (n < u + 10 || p[n - 9] != ' ' || !is_http1_version(p + n - 8, 8))
		goto skip;
	ulen = n - 9 - u;
	memcpy(r->method, p, m);
	r->method[m] = 0;
	keep = ulen < h->uri_max ? ulen : h->uri_max;
	memcpy(r->uri, p + u, keep);
	r->uri[keep] = 0;
	r->head = m == 4 && !memcmp(p, "HEAD", 4);
	r->connect = m == 7 && !memcmp(p, "CONNECT", 7);
	r->ts_ns = d->ts_ns;
	r->end_ts_ns = 0;
	r->charset[0] = 0;
	r->sw8[0] = r->b3[0] = r->b3_trace[0] = r->b3_span[0] = 0;
	d->st = ST_HEADERS;
	h->resync[L7_DIR_REQ] = false;
	(void)ts;
	return 0;
skip:
	d->active = false;
	h->dropped++;
	return 0;
}

/*
 * The first response after a gap began at ts: the requests that had ended
 * before it, all but the latest, lost their responses in the gap; a request
 * that began after it cannot be the one it answers.
 */
static void repair_pairing(struct h1 *h, uint64_t ts)
{
	while (h->qlen >= 2 && q_at(h, 1)->end_ts_ns && q_at(h, 1)->end_ts_ns <= ts) {
		h->dropped++;
		q_pop(h);
	}
	if (h->qlen && q_at(h, 0)->ts_ns > ts)
		h->resp_matched = false;
	h->repair = false;
}

static int resp_start_line(struct h1 *h, const char *p, size_t n)
{
	struct h1_dir *d = &h->d[L7_DIR_RESP];
	bool first = d->status == 0;

	if (n < 12 || !is_http1_version(p, n) || p[8] != ' ' ||
	    p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' || p[11] < '0' || p[11] > '9' ||
	    (n > 12 && p[12] != ' ')) {
		if (first) {
			d->active = false; /* garbage before a response: resynchronising */
			h->dropped++;
		}
		return 0;
	}
	d->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	d->st = ST_HEADERS;
	h->resync[L7_DIR_RESP] = false;
	/* An interim (1xx) response keeps the pairing for the final one. */
	if (first) {
		h->resp_matched = h->qlen > 0;
		if (h->repair)
			repair_pairing(h, d->ts_ns);
	}
	return 0;
}

/* A header's value, truncated to fit, printable bytes only (it becomes a field). */
static void copy_value(char *dst, size_t size, const char *v, size_t n)
{
	size_t i;

	for (i = 0; i < n && i + 1 < size; i++)
		dst[i] = v[i] >= 0x20 && v[i] < 0x7f ? v[i] : '?';
	dst[i] = 0;
}

static void header_line(struct h1 *h, enum l7_dir dir, const char *p, size_t n)
{
	struct h1_dir *d = &h->d[dir];
	const char *v;
	size_t vn;

	switch (p[0] | 0x20) {
	case 'c':
		if (hdr_is(p, n, "content-length", 14, &v, &vn)) {
			int64_t l = parse_len(v, vn);

			if (l >= 0 && d->clen < 0)
				d->clen = l;
		} else if (hdr_is(p, n, "content-type", 12, &v, &vn)) {
			copy_charset(dir == L7_DIR_REQ ? h->cur.charset : d->charset, v, vn);
		}
		break;
	case 't':
		if (hdr_is(p, n, "transfer-encoding", 17, &v, &vn) && contains_ci(v, vn, "chunked"))
			d->chunked = true;
		break;
	case 'u':
		if (hdr_is(p, n, "upgrade", 7, &v, &vn))
			d->upgrade = true;
		break;
	case 's':
		if (dir == L7_DIR_REQ && hdr_is(p, n, "sw8", 3, &v, &vn))
			copy_value(h->cur.sw8, sizeof(h->cur.sw8), v, vn);
		break;
	case 'b':
		if (dir == L7_DIR_REQ && hdr_is(p, n, "b3", 2, &v, &vn))
			copy_value(h->cur.b3, sizeof(h->cur.b3), v, vn);
		break;
	case 'x':
		if (dir == L7_DIR_REQ && hdr_is(p, n, "x-b3-traceid", 12, &v, &vn))
			copy_value(h->cur.b3_trace, sizeof(h->cur.b3_trace), v, vn);
		else if (dir == L7_DIR_REQ && hdr_is(p, n, "x-b3-spanid", 11, &v, &vn))
			copy_value(h->cur.b3_span, sizeof(h->cur.b3_span), v, vn);
		break;
	}
}

/* The request being read (its request line at least) joins the requests awaiting a response. */
static int queue_cur(struct h1 *h, struct h1_req **ret)
{
	struct h1_req *r;
	uint8_t *body;

	if (h->qlen == H1_PENDING)
		return -ENOBUFS; /* more pipelining than we track */
	r = q_at(h, h->qlen);
	h->qlen++;
	/* Keep the slot's sample buffer; take everything else from cur. */
	body = r->body;
	*r = h->cur;
	r->body = body;
	r->body_len = 0;
	r->seq = ++h->next_seq;
	r->bytes = h->d[L7_DIR_REQ].bytes;
	*ret = r;
	return ensure_body(h, &r->body);
}

/* Empty line after the headers: decides how the body is delimited. */
static int headers_done(struct h1 *h, enum l7_dir dir, uint64_t ts)
{
	struct h1_dir *d = &h->d[dir];

	if (h->feed_off > h->head_need[dir])
		h->head_need[dir] = h->feed_off;
	/* A chunked body's end is in its bytes: a capture cut after the head loses the next message. */
	if (d->chunked)
		h->head_all[dir] = true;

	if (dir == L7_DIR_REQ) {
		struct h1_req *r;
		int err;

		if ((err = queue_cur(h, &r)) < 0)
			return err;
		head_to(h, dir, r->body, &r->body_len);
		h->body_seq = r->seq;
		if (d->chunked) {
			d->st = ST_CHUNK_SIZE;
		} else if (d->clen > 0) {
			d->st = ST_BODY_LEN;
			d->remaining = (uint64_t)d->clen;
		} else {
			req_done(h, ts);
		}
		return 0;
	}

	/* Response. */
	{
		const struct h1_req *r = h->resp_matched ? q_at(h, 0) : NULL;
		int st = d->status;

		if (ensure_body(h, &h->resp_body) < 0)
			return -ENOBUFS;
		head_to(h, dir, h->resp_body, &h->resp_body_len);
		if ((st >= 100 && st < 200) || st == 204 || st == 304 || (r && r->head)) {
			bool tunnel = st == 101;

			resp_done(h, ts);
			if (tunnel)
				h->d[0].st = h->d[1].st = ST_TUNNEL;
			return 0;
		}
		if (r && r->connect && st >= 200 && st < 300) {
			resp_done(h, ts);
			h->d[0].st = h->d[1].st = ST_TUNNEL;
			return 0;
		}
		if (d->chunked) {
			d->st = ST_CHUNK_SIZE;
		} else if (d->clen >= 0) {
			if (d->clen == 0) {
				resp_done(h, ts);
				return 0;
			}
			d->st = ST_BODY_LEN;
			d->remaining = (uint64_t)d->clen;
		} else {
			d->st = ST_BODY_CLOSE;
		}
	}
	return 0;
}

static int chunk_size_line(struct h1_dir *d, const char *p, size_t n)
{
	uint64_t v = 0;
	size_t i = 0;

	while (i < n && (p[i] == ' ' || p[i] == '\t'))
		i++;
	if (i == n)
		return -EPROTO;
	for (; i < n; i++) {
		char c = p[i];
		int x;

		if (c >= '0' && c <= '9')
			x = c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			x = (c | 0x20) - 'a' + 10;
		else
			break; /* chunk extension or whitespace */
		if (v >> 56)
			return -EPROTO;
		v = v * 16 + (uint64_t)x;
	}
	if (v == 0) {
		d->st = ST_TRAILERS;
	} else {
		d->st = ST_CHUNK_DATA;
		d->remaining = v;
	}
	return 0;
}

/* One complete line (without CR LF) of direction dir. */
/*
 * After a gap, the tail of the lost message runs into the next start line
 * without a line break ("...helloHTTP/1.1 200 OK"): find where a start line
 * begins inside the line.  Returns its offset, or n if there is none.
 */
static size_t resync_offset(enum l7_dir dir, const char *p, size_t n)
{
	if (dir == L7_DIR_RESP) {
		const char *v = memmem(p, n, "HTTP/1.", 7);

		return v ? (size_t)(v - p) : n;
	}
	/* A request line ends with " HTTP/1.x": look for a method word before it. */
	if (n < 10 || p[n - 9] != ' ' || !is_http1_version(p + n - 8, 8))
		return n;
	for (size_t i = 0; i + 4 < n - 9; i++) {
		for (unsigned m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
			size_t ml = strlen(methods[m]);

			if (i + ml < n && !memcmp(p + i, methods[m], ml) && p[i + ml] == ' ' &&
			    (p[i + ml + 1] == '/' || p[i + ml + 1] == '*' || p[i + ml + 1] == 'h'))
				return i;
		}
	}
	return n;
}

static int line(struct h1 *h, enum l7_dir dir, const char *p, size_t n, uint64_t ts)
{
	struct h1_dir *d = &h->d[dir];
	int err;

	switch (d->st) {
	case ST_START:
		if (!n) {
			if (!d->status)
				d->active = false;
			return 0;
		}
		if (h->resync[dir]) {
			size_t off = resync_offset(dir, p, n);

			if (off && off < n) {
				/* The message starts here, not with the junk before it. */
				d->ts_ns = ts;
				d->bytes = n - off + 2;
			}
			p += off;
			n -= off;
		}
		err = dir == L7_DIR_REQ ? req_start_line(h, p, n, ts) : resp_start_line(h, p, n);
		if (!err && d->st == ST_HEADERS && h->body_cap && !ensure_body(h, &h->head[dir])) {
			/* A start line (a final response's replaces an interim one's head). */
			h->head_len[dir] = 0;
			head_add(h, dir, p, n);
		}
		return err;
	case ST_HEADERS:
		head_add(h, dir, p, n);
		if (!n)
			return headers_done(h, dir, ts);
		header_line(h, dir, p, n);
		return 0;
	case ST_CHUNK_SIZE:
		return chunk_size_line(d, p, n);
	case ST_CHUNK_END:
		if (n)
			return -EPROTO;
		d->st = ST_CHUNK_SIZE;
		return 0;
	case ST_TRAILERS:
		if (!n)
			msg_done(h, dir, ts);
		return 0;
	default:
		return -EPROTO;
	}
}

/* ---- feeding ---------------------------------------------------------------- */

static int h1_feed(void *st, enum l7_dir dir, const uint8_t *data, size_t len, uint64_t ts_ns)
{
	struct h1 *h = st;
	struct h1_dir *d;
	size_t total = len;
	int err;

	if (dir != L7_DIR_REQ && dir != L7_DIR_RESP)
		return -EINVAL;
	d = &h->d[dir];
	while (len) {
		if (d->st == ST_TUNNEL)
			return 0;
		if (!d->active) {
			/* The first byte of a message stamps it. */
			if (d->st == ST_START && d->linetotal == 0 && (data[0] == '\r' || data[0] == '\n')) {
				data++;
				len--;
				continue;
			}
			d->active = true;
			d->ts_ns = ts_ns;
			d->bytes = 0;
		}
		switch (d->st) {
		case ST_BODY_LEN:
		case ST_CHUNK_DATA: {
			size_t n = len < d->remaining ? len : (size_t)d->remaining;

			sample(h, dir, data, n);
			d->remaining -= n;
			d->bytes += n;
			data += n;
			len -= n;
			if (dir == L7_DIR_REQ && h->body_seq) {
				struct h1_req *r = q_find(h, h->body_seq);

				if (r)
					r->bytes += n;
			}
			if (!d->remaining) {
				if (d->st == ST_CHUNK_DATA)
					d->st = ST_CHUNK_END;
				else
					msg_done(h, dir, ts_ns);
			}
			continue;
		}
		case ST_BODY_CLOSE:
			sample(h, dir, data, len);
			d->bytes += len;
			return 0;
		default:
			break;
		}

		/* Line-oriented states. */
		{
			const uint8_t *nl = memchr(data, '\n', len);
			size_t n = nl ? (size_t)(nl - data) : len;
			size_t consumed = nl ? n + 1 : len;
			const char *lp;
			size_t ln;

			if (d->linetotal + n > H1_LINE_LIMIT) {
				if (d->st != ST_START || !h->resync[dir])
					return -EPROTO;
				/* Body bytes of a message lost in a gap: not a line to read. */
				d->linelen = 0;
				d->linetotal = nl ? 0 : H1_LINE_LIMIT;
				d->active = false;
				h->dropped += nl != NULL;
				data += consumed;
				len -= consumed;
				continue;
			}
			d->bytes += consumed;
			if (dir == L7_DIR_REQ && h->body_seq && d->st != ST_START) {
				struct h1_req *r = q_find(h, h->body_seq);

				if (r)
					r->bytes += consumed;
			}
			if (!nl) {
				size_t keep = H1_LINE_KEEP - d->linelen;

				if (keep > n)
					keep = n;
				memcpy(d->line + d->linelen, data, keep);
				d->linelen += keep;
				d->linetotal += n;
				tail_push(d, data, n);
				break;
			}
			if (d->linetotal == 0) {
				lp = (const char *)data;
				ln = n;
			} else {
				size_t keep = H1_LINE_KEEP - d->linelen;

				if (keep > n)
					keep = n;
				memcpy(d->line + d->linelen, data, keep);
				d->linelen += keep;
				lp = d->line;
				ln = d->linelen;
				/*
				 * A truncated line keeps its head (names, method, status) but
				 * loses its tail; for a request line that tail holds the version,
				 * so splice the remembered tail back on.
				 */
				if (d->linetotal + n > H1_LINE_KEEP) {
					tail_push(d, data, n);
					memcpy(d->line + H1_LINE_KEEP - sizeof(d->tail), d->tail, sizeof(d->tail));
					ln = H1_LINE_KEEP;
				}
			}
			if (ln && lp[ln - 1] == '\r')
				ln--;
			data += consumed;
			len -= consumed;
			d->linelen = d->linetotal = 0;
			h->feed_off = total - len;
			err = line(h, dir, lp, ln, ts_ns);
			if (err < 0)
				return err;
		}
	}
	/* A head still open at the call's end: the whole call was head. */
	if (d->active && (d->st == ST_START || d->st == ST_HEADERS) && total > h->head_need[dir])
		h->head_need[dir] = total;
	return 0;
}

/* Bytes lost in dir: skip them inside a known body, else resynchronise or give up. */
/* Body bytes a gap skipped still count in the size of the request they belong to. */
static void req_body_bytes(struct h1 *h, enum l7_dir dir, size_t n)
{
	struct h1_req *r;

	if (dir == L7_DIR_REQ && h->body_seq && (r = q_find(h, h->body_seq)))
		r->bytes += n;
}

static int h1_gap(void *st, enum l7_dir dir, size_t len, uint64_t ts_ns)
{
	struct h1 *h = st;
	struct h1_dir *d;

	if (dir != L7_DIR_REQ && dir != L7_DIR_RESP)
		return -EINVAL;
	d = &h->d[dir];
	if (d->st == ST_TUNNEL)
		return 0;
	if (d->st == ST_BODY_CLOSE) {
		d->bytes += len;
		return 0;
	}
	if ((d->st == ST_BODY_LEN || d->st == ST_CHUNK_DATA) && len <= d->remaining) {
		d->remaining -= len;
		d->bytes += len;
		req_body_bytes(h, dir, len);
		if (!d->remaining) {
			if (d->st == ST_CHUNK_DATA)
				d->st = ST_CHUNK_END;
			else
				msg_done(h, dir, ts_ns);
		}
		return 0;
	}
	/* A head, a chunk or a next message in the gap: a capture cut after the heads does not do here. */
	h->head_all[dir] = true;
	if (d->st == ST_BODY_LEN && d->remaining) {
		/* The body ends inside the gap: the message is done, the rest unknown. */
		len -= d->remaining;
		d->bytes += d->remaining;
		req_body_bytes(h, dir, d->remaining);
		d->remaining = 0;
		msg_done(h, dir, ts_ns);
		/* What follows the body in the gap began a message, lost with it (pipelined or sent on). */
		if (len)
			h->dropped++;
	}
	/* Lost bytes outside a body of known length: the message they hit is lost. */
	if (dir == L7_DIR_REQ) {
		struct h1_req *r;

		if (d->st == ST_HEADERS && queue_cur(h, &r) >= 0) {
			r->end_ts_ns = ts_ns;   /* its request line is known: keep it, size unknown */
		} else if (h->body_seq && (r = q_find(h, h->body_seq))) {
			r->end_ts_ns = ts_ns;   /* it ended somewhere in the gap */
		} else if (d->active) {
			h->dropped++;           /* its request line was cut: unknown */
		}
		h->body_seq = 0;
	} else if (d->active && d->status) {
		/* A response cut short: it and its request are lost. */
		if (h->resp_matched && h->qlen)
			q_pop(h);
		h->resp_matched = false;
		h->resp_body_len = 0;
		h->dropped++;
	}
	dir_reset(d);
	d->linelen = d->linetotal = 0;
	h->resync[dir] = true;
	h->repair = true;
	return 0;
}

static size_t h1_head(const void *st, enum l7_dir dir)
{
	const struct h1 *h = st;

	if (dir != L7_DIR_REQ && dir != L7_DIR_RESP)
		return L7_HEAD_ALL;
	if (h->d[dir].st == ST_TUNNEL)
		return 0;
	/* Sampled bodies, or not one whole head of the direction seen yet. */
	if (h->body_cap || h->head_all[dir] || !h->head_need[dir])
		return L7_HEAD_ALL;
	return h->head_need[dir];
}

static void h1_finish(void *st, uint64_t ts_ns)
{
	struct h1 *h = st;
	struct h1_dir *rd = &h->d[L7_DIR_RESP];
	struct h1_dir *qd = &h->d[L7_DIR_REQ];

	if (rd->st == ST_BODY_CLOSE)
		resp_done(h, ts_ns);
	while (h->qlen) {
		emit_exchange(h, q_at(h, 0), true, false, 0);
		q_pop(h);
	}
	if (qd->st == ST_HEADERS) {
		/* Request line seen, headers cut off by the close. */
		h->cur.bytes = qd->bytes;
		emit_exchange(h, &h->cur, true, false, 0);
	}
	dir_reset(qd);
	dir_reset(rd);
}

static uint64_t h1_dropped(const void *st)
{
	return ((const struct h1 *)st)->dropped;
}

static void *h1_create(const struct l7_config *cfg, l7_emit_fn emit, void *emit_ctx)
{
	struct h1 *h;

	if (!cfg || !emit) {
		errno = EINVAL;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->cfgcopy = *cfg;
	h->cfg = &h->cfgcopy;
	h->emit = emit;
	h->emit_ctx = emit_ctx;
	h->uri_max = cfg->max_query_len && cfg->max_query_len < L7_FIELD_MAX - 1 ?
		     cfg->max_query_len : L7_FIELD_MAX - 1;
	/* Sample buffers (one per pending slot + one response) must fit the budget. */
	h->body_cap = cfg->max_body_len;
	/* Samples of the pending requests and the response, and a head per direction. */
	if (h->body_cap && cfg->max_conn_mem &&
	    h->body_cap > cfg->max_conn_mem / (H1_PENDING + 3))
		h->body_cap = cfg->max_conn_mem / (H1_PENDING + 3);
	for (int i = 0; i < 2; i++)
		dir_reset(&h->d[i]);
	strcpy(h->orphan.method, "-");
	return h;
}

static void h1_free(void *st)
{
	struct h1 *h = st;

	if (!h)
		return;
	for (unsigned i = 0; i < H1_PENDING; i++)
		free(h->q[i].body);
	free(h->resp_body);
	free(h->head[0]);
	free(h->head[1]);
	free(h);
}

/* ---- detection ---------------------------------------------------------------- */

static int h1_detect(const uint8_t *data, size_t len, enum l7_dir dir, uint16_t server_port)
{
	const char *p = (const char *)data;

	(void)server_port;
	if (dir == L7_DIR_RESP) {
		if (len < 9)
			return 0;
		if (!is_http1_version(p, len) || p[8] != ' ')
			return 0;
		if (len >= 12 && p[9] >= '1' && p[9] <= '5' && p[10] >= '0' && p[10] <= '9' &&
		    p[11] >= '0' && p[11] <= '9')
			return 100;
		return 60;
	}
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		size_t m = strlen(methods[i]);
		const uint8_t *nl;
		size_t n;

		if (len <= m || memcmp(p, methods[i], m) || p[m] != ' ')
			continue;
		nl = memchr(data, '\n', len);
		if (!nl)
			return len > m + 1 && p[m + 1] != ' ' ? 60 : 40;
		n = (size_t)(nl - data);
		if (n && p[n - 1] == '\r')
			n--;
		if (n >= m + 10 && p[n - 9] == ' ' && is_http1_version(p + n - 8, 8))
			return 100;
		return 0; /* e.g. "PRI * HTTP/2.0" or not HTTP at all */
	}
	return 0;
}

const struct l7_parser_ops l7_http1_ops = {
	.name = "http1",
	.detect = h1_detect,
	.create = h1_create,
	.feed = h1_feed,
	.gap = h1_gap,
	.finish = h1_finish,
	.free = h1_free,
	.dropped = h1_dropped,
	.head = h1_head,
};
