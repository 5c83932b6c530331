/*
 * MongoDB wire protocol.
 *
 * Messages are [len:4 LE][requestID][responseTo][opCode][body].  Requests:
 * OP_MSG (sections of kind 0 = body document, kind 1 = document sequence;
 * the command is the body's first key), legacy OP_QUERY (first key of the
 * query document), OP_COMMAND (its commandName), and the fire-and-forget
 * OP_INSERT / OP_UPDATE / OP_DELETE / OP_KILL_CURSORS (and OP_MSG with
 * moreToCome), which are reported at once without a response.  Replies:
 * OP_MSG, OP_REPLY, OP_COMMANDREPLY; the result is read from the top level of
 * the reply document as "ok=1", "ok=0:<code or codeName>", or "docs=<n>" for
 * an OP_REPLY without "ok" (the oracle.sh conventions).  OP_COMPRESSED
 * is unwrapped when the compressor is noop or zlib and reported as
 * "OP_COMPRESSED(<original opcode>)"; snappy / zstd bodies stay opaque
 * (reported, not an error).
 *
 * BSON is walked with a bounds check on every length; a reply longer than
 * the look-ahead is walked as far as it was buffered.  Pairing is by
 * responseTo = requestID, so after a gap each direction waits for a chunk
 * that starts with a plausible header (a reply must answer a pending id).
 */
#include "l7/l7.h"
#include "l7/l7_framed.h"
#include "l7/l7_util.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define MONGO_HDR       16
#define MONGO_MAX_MSG   (48u * 1000 * 1000)
#define MONGO_REQ_PFX   2048
#define MONGO_MAX_PEND  1024

enum {
	OP_REPLY = 1, OP_UPDATE = 2001, OP_INSERT = 2002, OP_QUERY = 2004, OP_GET_MORE = 2005,
	OP_DELETE = 2006, OP_KILL_CURSORS = 2007, OP_COMMAND = 2010, OP_COMMANDREPLY = 2011,
	OP_COMPRESSED = 2012, OP_MSG = 2013,
};

static const char *op_name(uint32_t op)
{
	switch (op) {
	case OP_REPLY: return "OP_REPLY";
	case OP_UPDATE: return "OP_UPDATE";
	case OP_INSERT: return "OP_INSERT";
	case OP_QUERY: return "OP_QUERY";
	case OP_GET_MORE: return "OP_GET_MORE";
	case OP_DELETE: return "OP_DELETE";
	case OP_KILL_CURSORS: return "OP_KILL_CURSORS";
	case OP_COMMAND: return "OP_COMMAND";
	case OP_COMMANDREPLY: return "OP_COMMANDREPLY";
	case OP_COMPRESSED: return "OP_COMPRESSED";
	case OP_MSG: return "OP_MSG";
	default: return NULL;
	}
}

static bool known_op(uint32_t op)
{
	return op_name(op) != NULL;
}

/* ---- BSON ------------------------------------------------------------- */

struct bson_el {
	uint8_t type;
	const char *name;
	size_t name_len;
	const uint8_t *val;
	size_t val_len;
};

/*
 * Element at p[*off..n) of a document whose bytes end at n; false at the
 * terminating 0x00, at the end of the buffer, or on anything malformed.
 */
static bool bson_next(const uint8_t *p, size_t n, size_t *off, struct bson_el *el)
{
	size_t o = *off, l;
	const uint8_t *z;
	uint32_t sz;

	if (o >= n || p[o] == 0)
		return false;
	el->type = p[o++];
	z = memchr(p + o, 0, n - o);
	if (!z)
		return false;
	el->name = (const char *)p + o;
	el->name_len = (size_t)(z - (p + o));
	o += el->name_len + 1;
	el->val = p + o;
	switch (el->type) {
	case 0x01: case 0x09: case 0x11: case 0x12: l = 8; break;
	case 0x07: l = 12; break;
	case 0x08: l = 1; break;
	case 0x10: l = 4; break;
	case 0x13: l = 16; break;
	case 0x06: case 0x0a: case 0xff: case 0x7f: l = 0; break;
	case 0x02: case 0x0d: case 0x0e:
		if (n - o < 4)
			return false;
		sz = l7_le32(p + o);
		if (sz < 1 || sz > n - o - 4)
			return false;
		l = 4 + (size_t)sz;
		break;
	case 0x03: case 0x04: case 0x0f:
		if (n - o < 4)
			return false;
		sz = l7_le32(p + o);
		if (sz < 5 || sz > n - o)
			return false;
		l = sz;
		break;
	case 0x05:
		if (n - o < 4)
			return false;
		sz = l7_le32(p + o);
		if (sz > n - o - 4 - 1 || n - o < 5)
			return false;
		l = 5 + (size_t)sz;
		break;
	case 0x0b: {
		const uint8_t *z1 = memchr(p + o, 0, n - o), *z2;
		if (!z1)
			return false;
		z2 = memchr(z1 + 1, 0, n - (size_t)(z1 + 1 - p));
		if (!z2)
			return false;
		l = (size_t)(z2 + 1 - (p + o));
		break;
	}
	case 0x0c:
		if (n - o < 4)
			return false;
		sz = l7_le32(p + o);
		if (sz < 1 || (size_t)sz + 12 > n - o - 4)
			return false;
		l = 4 + (size_t)sz + 12;
		break;
	default:
		return false;
	}
	if (l > n - o)
		return false;
	el->val_len = l;
	*off = o + l;
	return true;
}

/* Bounds of the document at p[0..n): its elements start at 4 and end before *end. */
static bool bson_doc(const uint8_t *p, size_t n, size_t *end, size_t *total)
{
	uint32_t sz;

	if (n < 5)
		return false;
	sz = l7_le32(p);
	if (sz < 5 || sz > MONGO_MAX_MSG)
		return false;
	*total = sz;
	/* A document cut by the look-ahead is walked as far as we have it. */
	*end = sz <= n ? sz - 1 : n;
	return true;
}

static bool bson_num(const struct bson_el *el, double *v)
{
	switch (el->type) {
	case 0x01: {
		uint64_t b = l7_le64(el->val);
		memcpy(v, &b, sizeof(*v));
		return true;
	}
	case 0x10: *v = (int32_t)l7_le32(el->val); return true;
	case 0x12: *v = (double)(int64_t)l7_le64(el->val); return true;
	case 0x08: *v = el->val[0] ? 1 : 0; return true;
	default: return false;
	}
}

/* Saturating conversion: BSON numbers are attacker-chosen doubles. */
static int64_t dbl_to_i64(double v)
{
	if (v != v)
		return 0;
	if (v >= 9.2e18)
		return INT64_MAX;
	if (v <= -9.2e18)
		return INT64_MIN;
	return (int64_t)v;
}

/* ---- parser ------------------------------------------------------------ */

struct pend {
	uint64_t ts, end_ts, req_bytes, seq;   /* first and last byte */
	int32_t request_id;
	uint32_t op, orig_op;      /* orig_op != 0: carried by OP_COMPRESSED */
	uint8_t compressor;
	uint16_t cmd_len;
	char cmd[96];
};

struct summary {
	bool have_ok, have_code, have_docs;
	double ok;
	int64_t code;
	char codename[48];
	char errmsg[160];
	int32_t docs;
	bool query_failure;
};

struct mongo {
	struct l7_framed base;     /* first: framers, pending requests, memory, error */
	uint64_t nreq;             /* requests seen: their order for req_seq */
	size_t resp_pfx;
	/* Message framed, to be reported by end(). */
	bool have;
	bool have_req;
	bool noresp;
	struct pend cur;
	uint32_t resp_op, resp_orig;
	int32_t resp_to;
	uint64_t resp_bytes;
	struct summary sum;
	bool opaque;               /* compressed with snappy / zstd */
};

static void fmt_opcode(char *buf, size_t sz, uint32_t op, uint32_t orig)
{
	const char *n = op_name(op), *o = op_name(orig);
	char tmp[16];

	if (op == OP_COMPRESSED && orig) {
		if (!o) {
			l7_fmt_u64(tmp, orig);
			o = tmp;
		}
		snprintf(buf, sz, "OP_COMPRESSED(%s)", o);
	} else if (n) {
		snprintf(buf, sz, "%s", n);
	} else {
		snprintf(buf, sz, "%u", op);
	}
}

static void emit_rec(struct mongo *m, const struct pend *p, bool has_req, bool has_resp, uint64_t resp_ts)
{
	struct l7_record rec;
	struct l7_field *f;
	const struct summary *s = &m->sum;

	l7_record__init(&rec, "mongo");
	if ((f = l7_rec_field(&rec, "opcode"))) {
		if (has_req)
			fmt_opcode(f->val, sizeof(f->val), p->op, p->orig_op);
		else
			fmt_opcode(f->val, sizeof(f->val), m->resp_op, m->resp_orig);
	}
	if (has_req) {
		l7_rec_req(&rec, p->ts, p->end_ts, p->req_bytes, p->seq);
		if (p->cmd_len)
			l7_rec_strn(&rec, "command", p->cmd, p->cmd_len);
		l7_rec_i64(&rec, "request_id", p->request_id);
	} else {
		l7_rec_i64(&rec, "response_to", m->resp_to);
	}
	if (has_resp) {
		l7_rec_resp(&rec, resp_ts, m->resp_bytes);
		if ((f = l7_rec_field(&rec, "result"))) {
			if (s->have_ok && s->ok == 1) {
				strcpy(f->val, "ok=1");
				rec.status = 0;
			} else if (s->have_ok) {
				char code[64] = "";
				if (s->have_code)
					snprintf(code, sizeof(code), ":%lld", (long long)s->code);
				else if (s->codename[0])
					snprintf(code, sizeof(code), ":%s", s->codename);
				snprintf(f->val, sizeof(f->val), "ok=%lld%s", (long long)dbl_to_i64(s->ok), code);
				rec.is_error = true;
				rec.status = s->have_code && s->code >= INT32_MIN && s->code <= INT32_MAX ? (int32_t)s->code : -1;
			} else if (s->have_docs) {
				snprintf(f->val, sizeof(f->val), "docs=%d", s->docs);
				rec.is_error = s->query_failure;
			} else {
				strcpy(f->val, "-");
			}
		}
		if (rec.is_error && s->errmsg[0])
			l7_rec_str(&rec, "error_message", s->errmsg);
		if (m->opaque)
			l7_rec_str(&rec, "compressed", "opaque");
	}
	l7_framed__emit(&m->base, &rec);
}

/* First key of the document at p[0..n) into the pending entry. */
static void first_key(struct pend *e, const uint8_t *p, size_t n)
{
	size_t end, total, off = 4;
	struct bson_el el;

	if (!bson_doc(p, n, &end, &total))
		return;
	if (bson_next(p, end, &off, &el)) {
		e->cmd_len = (uint16_t)l7_min(el.name_len, sizeof(e->cmd));
		memcpy(e->cmd, el.name, e->cmd_len);
		return;
	}
	/* The first element's value may lie past the look-ahead: its name is enough. */
	if (end > 5 && p[4] != 0) {
		const uint8_t *z = memchr(p + 5, 0, end - 5);
		if (z) {
			e->cmd_len = (uint16_t)l7_min((size_t)(z - (p + 5)), sizeof(e->cmd));
			memcpy(e->cmd, p + 5, e->cmd_len);
		}
	}
}

static void reply_doc(struct summary *s, const uint8_t *p, size_t n)
{
	size_t end, total, off = 4;
	struct bson_el el;

	if (!bson_doc(p, n, &end, &total))
		return;
	while (bson_next(p, end, &off, &el)) {
		if (el.name_len == 2 && !memcmp(el.name, "ok", 2) && !s->have_ok) {
			s->have_ok = bson_num(&el, &s->ok);
		} else if (el.name_len == 4 && !memcmp(el.name, "code", 4) && !s->have_code) {
			double v;
			if (bson_num(&el, &v)) {
				s->have_code = true;
				s->code = dbl_to_i64(v);
			}
		} else if (el.type == 0x02 && el.name_len == 8 && !memcmp(el.name, "codeName", 8)) {
			size_t l = l7_min(el.val_len - 5, sizeof(s->codename) - 1);
			memcpy(s->codename, el.val + 4, l);
			s->codename[l] = 0;
		} else if (el.type == 0x02 && ((el.name_len == 6 && !memcmp(el.name, "errmsg", 6)) ||
					       (el.name_len == 4 && !memcmp(el.name, "$err", 4)))) {
			size_t l = l7_min(el.val_len - 5, sizeof(s->errmsg) - 1);
			memcpy(s->errmsg, el.val + 4, l);
			s->errmsg[l] = 0;
		}
	}
}

/* OP_MSG sections: the kind-0 body document, wherever it is. */
static const uint8_t *msg_body(const uint8_t *b, size_t n, size_t *blen)
{
	size_t off = 4;

	while (off < n) {
		uint8_t kind = b[off++];
		if (kind == 0) {
			*blen = n - off;
			return b + off;
		}
		if (kind != 1 || n - off < 4)
			return NULL;
		uint32_t sz = l7_le32(b + off);
		if (sz < 4 || sz > n - off)
			return NULL;
		off += sz;
	}
	return NULL;
}

/* Legacy opcodes whose body starts with a full collection name (after 4 bytes). */
static void collection_name(struct pend *e, const uint8_t *b, size_t n)
{
	const uint8_t *z;

	if (n <= 4)
		return;
	z = memchr(b + 4, 0, n - 4);
	e->cmd_len = (uint16_t)l7_min(z ? (size_t)(z - (b + 4)) : n - 4, sizeof(e->cmd));
	memcpy(e->cmd, b + 4, e->cmd_len);
}

static void parse_request(struct mongo *m, struct pend *e, uint32_t op, const uint8_t *b, size_t n)
{
	const uint8_t *z;
	size_t blen;

	switch (op) {
	case OP_MSG: {
		const uint8_t *body;
		uint32_t flags = n >= 4 ? l7_le32(b) : 0;

		if (flags & 2)
			m->noresp = true;   /* moreToCome: no reply */
		if ((body = msg_body(b, n, &blen)))
			first_key(e, body, blen);
		break;
	}
	case OP_QUERY:
		/* flags, fullCollectionName, numberToSkip, numberToReturn, query */
		if (n > 4 && (z = memchr(b + 4, 0, n - 4)) && (size_t)(z + 1 + 8 - b) < n)
			first_key(e, z + 1 + 8, n - (size_t)(z + 1 + 8 - b));
		break;
	case OP_COMMAND:
		/* database, commandName, metadata, commandArgs */
		if ((z = memchr(b, 0, n)) && (size_t)(z + 1 - b) < n) {
			const uint8_t *c = z + 1, *z2 = memchr(c, 0, n - (size_t)(c - b));
			e->cmd_len = (uint16_t)l7_min(z2 ? (size_t)(z2 - c) : n - (size_t)(c - b), sizeof(e->cmd));
			memcpy(e->cmd, c, e->cmd_len);
		}
		break;
	case OP_INSERT:
	case OP_UPDATE:
	case OP_DELETE:
		m->noresp = true;
		/* fallthrough */
	case OP_GET_MORE:
		collection_name(e, b, n);
		break;
	case OP_KILL_CURSORS:
		m->noresp = true;
		break;
	}
}

static void parse_reply(struct mongo *m, uint32_t op, const uint8_t *b, size_t n)
{
	const uint8_t *body;
	size_t blen;

	switch (op) {
	case OP_MSG:
		if ((body = msg_body(b, n, &blen)))
			reply_doc(&m->sum, body, blen);
		break;
	case OP_REPLY:
		if (n >= 20) {
			uint32_t rflags = l7_le32(b);
			m->sum.have_docs = true;
			m->sum.docs = (int32_t)l7_le32(b + 16);
			m->sum.query_failure = rflags & 2;
			if (m->sum.docs > 0)
				reply_doc(&m->sum, b + 20, n - 20);
		}
		break;
	case OP_COMMANDREPLY:
		reply_doc(&m->sum, b, n);
		break;
	}
}

/*
 * OP_COMPRESSED: originalOpcode, uncompressedSize, compressorId, data.
 * Calls back with the original body (at most `cap` bytes of it).
 */
static void uncompress_body(struct mongo *m, const uint8_t *b, size_t n, uint64_t msg_len, bool req,
			    struct pend *e, size_t cap)
{
	uint32_t orig, usize;
	uint8_t comp;
	uint8_t *out;
	size_t olen;

	if (n < 9)
		return;
	orig = l7_le32(b);
	usize = l7_le32(b + 4);
	comp = b[8];
	if (req) {
		e->orig_op = orig;
		e->compressor = comp;
	} else {
		m->resp_orig = orig;
	}
	b += 9;
	n -= 9;
	if (comp == 0) {
		if (req)
			parse_request(m, e, orig, b, n);
		else
			parse_reply(m, orig, b, n);
		return;
	}
	if (comp != 2) {
		m->opaque = true;   /* snappy / zstd: not linked in */
		return;
	}
	/* zlib: a prefix of the stream inflates to a prefix of the body, which is all we read. */
	(void)msg_len;
	olen = l7_min(usize, cap);
	if (!olen || l7_mem__charge(&m->base.mem, olen) < 0)
		return;
	out = malloc(olen);
	if (out) {
		z_stream zs;
		memset(&zs, 0, sizeof(zs));
		if (inflateInit(&zs) == Z_OK) {
			zs.next_in = (Bytef *)b;
			zs.avail_in = (uInt)n;
			zs.next_out = out;
			zs.avail_out = (uInt)olen;
			int zr = inflate(&zs, Z_SYNC_FLUSH);
			size_t got = olen - zs.avail_out;
			inflateEnd(&zs);
			if (zr == Z_OK || zr == Z_STREAM_END || zr == Z_BUF_ERROR) {
				if (req)
					parse_request(m, e, orig, out, got);
				else
					parse_reply(m, orig, out, got);
			}
		}
		free(out);
	}
	l7_mem__release(&m->base.mem, olen);
}

static bool plausible_header(const uint8_t *p, size_t n, bool req)
{
	uint32_t len, op;
	int32_t rto;

	if (n < MONGO_HDR)
		return false;
	len = l7_le32(p);
	rto = (int32_t)l7_le32(p + 8);
	op = l7_le32(p + 12);
	if (len < MONGO_HDR || len > MONGO_MAX_MSG || !known_op(op))
		return false;
	if (req)
		return op != OP_REPLY && op != OP_COMMANDREPLY;
	return rto != 0 && (op == OP_REPLY || op == OP_MSG || op == OP_COMMANDREPLY || op == OP_COMPRESSED);
}

static ssize_t mongo_frame(void *ctx, struct l7_framer *f, const uint8_t *p, size_t avail, size_t *need)
{
	struct mongo *m = ctx;
	uint32_t len, op;
	size_t want;
	bool req = f->tag == L7_DIR_REQ;

	if (avail < MONGO_HDR) {
		*need = MONGO_HDR;
		return 0;
	}
	len = l7_le32(p);
	op = l7_le32(p + 12);
	if (len < MONGO_HDR || len > MONGO_MAX_MSG)
		return -EPROTO;
	want = l7_min(len, req ? MONGO_REQ_PFX : m->resp_pfx);
	if (avail < want) {
		*need = want;
		return 0;
	}
	m->have = true;
	m->noresp = false;
	m->opaque = false;
	if (req) {
		struct pend *e = &m->cur;
		memset(e, 0, sizeof(*e));
		e->request_id = (int32_t)l7_le32(p + 4);
		e->op = op;
		e->req_bytes = len;
		if (op == OP_COMPRESSED)
			uncompress_body(m, p + MONGO_HDR, want - MONGO_HDR, len, true, e, MONGO_REQ_PFX);
		else
			parse_request(m, e, op, p + MONGO_HDR, want - MONGO_HDR);
		return (ssize_t)len;
	}
	memset(&m->sum, 0, sizeof(m->sum));
	m->resp_op = op;
	m->resp_orig = 0;
	m->resp_to = (int32_t)l7_le32(p + 8);
	m->resp_bytes = len;
	if (op == OP_MSG && want >= MONGO_HDR + 4 && (l7_le32(p + MONGO_HDR) & 1) && want == len)
		want -= 4;   /* CRC-32C trailer (checksumPresent) */
	if (op == OP_COMPRESSED)
		uncompress_body(m, p + MONGO_HDR, want - MONGO_HDR, len, false, NULL, m->resp_pfx);
	else
		parse_reply(m, op, p + MONGO_HDR, want - MONGO_HDR);
	return (ssize_t)len;
}

static int mongo_end(void *ctx, struct l7_framer *f)
{
	struct mongo *m = ctx;
	struct pend *e;

	if (!m->have)
		return 0;
	m->have = false;
	if (f->tag == L7_DIR_REQ) {
		m->cur.ts = f->msg_ts;
		m->cur.end_ts = f->ts;
		m->cur.seq = ++m->nreq;
		if (m->noresp) {
			emit_rec(m, &m->cur, true, false, 0);
			return 0;
		}
		if (l7_pendq__count(&m->base.q) >= MONGO_MAX_PEND) {
			e = l7_pendq__at(&m->base.q, 0);
			emit_rec(m, e, true, false, 0);
			l7_pendq__remove(&m->base.q, 0);
		}
		if (!(e = l7_pendq__push(&m->base.q)))
			return m->base.fatal = -ENOBUFS;
		*e = m->cur;
		return 0;
	}
	for (unsigned i = 0; (e = l7_pendq__at(&m->base.q, i)); i++) {
		if (e->request_id != m->resp_to)
			continue;
		emit_rec(m, e, true, true, f->ts);
		l7_pendq__remove(&m->base.q, i);
		return 0;
	}
	emit_rec(m, NULL, false, true, f->ts);
	return 0;
}

static bool mongo_sync(void *ctx, struct l7_framer *f, const uint8_t *p, size_t len)
{
	struct mongo *m = ctx;
	int32_t rto;

	if (!plausible_header(p, len, f->tag == L7_DIR_REQ))
		return false;
	rto = (int32_t)l7_le32(p + 8);
	if (f->tag == L7_DIR_REQ)
		return rto == 0;   /* requests answer nothing */
	for (unsigned i = 0; i < l7_pendq__count(&m->base.q); i++)
		if (((struct pend *)l7_pendq__at(&m->base.q, i))->request_id == rto)
			return true;
	return false;
}

static const struct l7_framer_ops mongo_fops = { .frame = mongo_frame, .end = mongo_end, .sync = mongo_sync };

/* Requests never answered (the close came first): reported without a response. */
static void mongo_unanswered(void *st, void *e)
{
	emit_rec(st, e, true, false, 0);
}

static const struct l7_framed_spec mongo_spec = {
	.fops = &mongo_fops,
	.state_size = sizeof(struct mongo),
	.entry_size = sizeof(struct pend),
	.resync = true,   /* framing lost or not: ids keep the pairing honest */
	.unanswered = mongo_unanswered,
};

static void *mongo_create(const struct l7_config *cfg, l7_emit_fn emit, void *emit_ctx)
{
	struct mongo *m = l7_framed__new(&mongo_spec, cfg, emit, emit_ctx);

	if (!m)
		return NULL;
	/* Replies keep "ok" last: look at as much of them as half the budget allows. */
	m->resp_pfx = l7_min(cfg->max_conn_mem / 2, 1u << 20);
	if (m->resp_pfx < 1024)
		m->resp_pfx = 1024;
	return m;
}

static int mongo_detect(const uint8_t *d, size_t len, enum l7_dir dir, uint16_t port)
{
	bool req = dir == L7_DIR_REQ;
	uint32_t mlen, op;
	int score = 0;

	if (!plausible_header(d, len, req))
		return 0;
	mlen = l7_le32(d);
	op = l7_le32(d + 12);
	if (req && l7_le32(d + 8) != 0)
		return 0;   /* requests answer nothing */
	if (mlen < MONGO_HDR + 5)
		return 0;
	if (op == OP_MSG && len >= MONGO_HDR + 4 + 1 + 5) {
		uint32_t flags = l7_le32(d + MONGO_HDR);
		uint8_t kind = d[MONGO_HDR + 4];
		uint32_t dsz = l7_le32(d + MONGO_HDR + 5);
		if ((flags & ~0x10003u) == 0 && kind <= 1 && dsz >= 5 && dsz <= mlen - MONGO_HDR - 5)
			score = 85;
	} else if (op == OP_QUERY && len >= MONGO_HDR + 6) {
		const uint8_t *z = memchr(d + MONGO_HDR + 4, 0, len - MONGO_HDR - 4);
		if (z && memchr(d + MONGO_HDR + 4, '.', (size_t)(z - (d + MONGO_HDR + 4))) && l7_le32(d + MONGO_HDR) < 0x100)
			score = 85;
	} else if (op == OP_REPLY && len >= MONGO_HDR + 20) {
		score = l7_le32(d + MONGO_HDR) < 0x10 ? 70 : 0;
	} else if (op == OP_COMPRESSED && len >= MONGO_HDR + 9) {
		score = known_op(l7_le32(d + MONGO_HDR)) && d[MONGO_HDR + 8] <= 3 ? 80 : 0;
	} else if (op == OP_COMMAND || op == OP_COMMANDREPLY) {
		score = 60;
	} else {
		score = 30;
	}
	if (score && (port == 27017 || port == 27018 || port == 27019))
		score = score + 10 > 100 ? 100 : score + 10;
	return score;
}

const struct l7_parser_ops l7_mongo_ops = {
	.name = "mongo",
	.detect = mongo_detect,
	.create = mongo_create,
	.feed = l7_framed__feed,
	.gap = l7_framed__gap,
	.finish = l7_framed__finish,
	.free = l7_framed__free,
	.dropped = l7_framed__discarded,   /* chunks discarded while resynchronising */
};
