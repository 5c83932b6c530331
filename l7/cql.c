/*
 * Cassandra CQL native protocol, versions 3 to 5.
 *
 * Envelopes ("frames" before v5) are [version][flags][stream:2][opcode]
 * [length:4] + body, all big-endian; the top bit of version marks responses.
 * Requests and responses pair by stream id (multiplexed, answered in any
 * order); server EVENT pushes on negative streams are not exchanges.
 *
 * v5 wraps envelopes in segments once the server has answered a v5 STARTUP
 * with READY or AUTHENTICATE: [payload length:17 bits | self-contained:1 bit,
 * 3 bytes LE][CRC24 of those 3 bytes][payload][CRC32].  Segments are peeled
 * here without buffering (their payload bytes stream into the envelope
 * framer, which reassembles an envelope split over several segments); the
 * header CRC24 is checked, the payload CRC32 is not.  Compressed v5
 * segments (LZ4 negotiated in STARTUP) and a gap inside segment framing end
 * the analysis (-EPROTO).  Envelopes with the compression flag (v3/v4 LZ4 or
 * Snappy) are reported by opcode, without their query text.
 *
 * Reported: stream_id, opcode (of the request), query (QUERY / PREPARE text
 * truncated to max_query_len, EXECUTE "id=<hex>", BATCH "batch(<n>)") and
 * result ("RESULT:<kind>", "ERROR:0x<code>", or the response opcode).
 */
#include "l7/l7.h"
#include "l7/l7_framed.h"
#include "l7/l7_util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define CQL_HDR        9
#define CQL_MAX_BODY   (256u * 1024 * 1024)
#define CQL_RESP_PFX   1024
#define CQL_MAX_PEND   4096
#define SEG_HDR        6
#define SEG_TRAILER    4

enum {
	OPC_ERROR = 0, OPC_STARTUP = 1, OPC_READY = 2, OPC_AUTHENTICATE = 3, OPC_OPTIONS = 5,
	OPC_SUPPORTED = 6, OPC_QUERY = 7, OPC_RESULT = 8, OPC_PREPARE = 9, OPC_EXECUTE = 10,
	OPC_REGISTER = 11, OPC_EVENT = 12, OPC_BATCH = 13, OPC_AUTH_CHALLENGE = 14,
	OPC_AUTH_RESPONSE = 15, OPC_AUTH_SUCCESS = 16,
};

static const char *const opc_names[] = {
	"ERROR", "STARTUP", "READY", "AUTHENTICATE", NULL, "OPTIONS", "SUPPORTED", "QUERY", "RESULT",
	"PREPARE", "EXECUTE", "REGISTER", "EVENT", "BATCH", "AUTH_CHALLENGE", "AUTH_RESPONSE", "AUTH_SUCCESS",
};
#define NOPC ((int)(sizeof(opc_names) / sizeof(opc_names[0])))

static bool is_request_op(uint8_t op)
{
	return op == OPC_STARTUP || op == OPC_OPTIONS || op == OPC_QUERY || op == OPC_PREPARE ||
	       op == OPC_EXECUTE || op == OPC_REGISTER || op == OPC_BATCH || op == OPC_AUTH_RESPONSE;
}

static bool is_response_op(uint8_t op)
{
	return op == OPC_ERROR || op == OPC_READY || op == OPC_AUTHENTICATE || op == OPC_SUPPORTED ||
	       op == OPC_RESULT || op == OPC_EVENT || op == OPC_AUTH_CHALLENGE || op == OPC_AUTH_SUCCESS;
}

static const char *const kinds[] = { NULL, "Void", "Rows", "Set_keyspace", "Prepared", "Schema_change" };

struct pend {
	uint64_t ts, end_ts, req_bytes, seq;   /* first and last byte */
	int16_t stream;
	uint8_t op;
	uint16_t qlen;
	char q[L7_FIELD_MAX];
};

/* v5 segment layer of one direction. */
struct seg {
	bool on;
	uint8_t hdr[SEG_HDR];
	unsigned hlen;
	uint32_t pay_left;
	uint32_t trail_left;
};

struct cql {
	struct l7_framed base;    /* first: framers, pending requests, memory, error */
	struct seg seg[2];
	size_t req_pfx;
	uint64_t nreq;            /* requests seen: their order for req_seq */
	int version;              /* 0 until the first envelope */
	bool v5_startup;          /* a v5 STARTUP awaits READY / AUTHENTICATE */
	bool v5_compressed;
	/* Envelope framed, reported by end(). */
	bool have;
	bool have_req;
	bool event;
	struct pend cur;
	uint8_t resp_op;
	int16_t resp_stream;
	uint64_t resp_bytes;
	char result[40];
	bool is_error;
	int32_t status;
	char errmsg[160];
};

static void emit_rec(struct cql *c, const struct pend *p, bool has_req, bool has_resp, uint64_t resp_ts)
{
	struct l7_record rec;

	l7_record__init(&rec, "cql");
	l7_rec_i64(&rec, "stream_id", has_req ? p->stream : c->resp_stream);
	if (has_req) {
		l7_rec_req(&rec, p->ts, p->end_ts, p->req_bytes, p->seq);
		l7_rec_str(&rec, "opcode", p->op < NOPC && opc_names[p->op] ? opc_names[p->op] : "?");
		if (p->qlen)
			l7_rec_text(&rec, "query", p->q, p->qlen);
	}
	if (has_resp) {
		l7_rec_resp(&rec, resp_ts, c->resp_bytes);
		rec.is_error = c->is_error;
		rec.status = c->status;
		l7_rec_str(&rec, "result", c->result);
		if (c->is_error && c->errmsg[0])
			l7_rec_str(&rec, "error_message", c->errmsg);
	}
	l7_framed__emit(&c->base, &rec);
}

/* Skip the optional prefix of a body: tracing id, warnings, custom payload. */
static size_t body_start(const uint8_t *b, size_t n, uint8_t flags, bool req)
{
	size_t off = 0;

	if (!req && (flags & 0x02))
		off += 16;
	if (!req && (flags & 0x08)) {
		/* [string list] */
		if (off + 2 > n)
			return n;
		unsigned cnt = l7_be16(b + off);
		off += 2;
		while (cnt--) {
			if (off + 2 > n)
				return n;
			off += 2 + (size_t)l7_be16(b + off);
		}
	}
	if (flags & 0x04) {
		/* [bytes map] */
		if (off + 2 > n)
			return n;
		unsigned cnt = l7_be16(b + off);
		off += 2;
		while (cnt--) {
			if (off + 2 > n)
				return n;
			off += 2 + (size_t)l7_be16(b + off);
			if (off + 4 > n)
				return n;
			int32_t l = (int32_t)l7_be32(b + off);
			off += 4 + (l > 0 ? (size_t)l : 0);
		}
	}
	return off > n ? n : off;
}

static void parse_request(struct cql *c, struct pend *e, uint8_t flags, const uint8_t *b, size_t n)
{
	size_t off;
	size_t qmax = l7_min(c->base.cfg.max_query_len, L7_FIELD_MAX - 1);

	if (e->op == OPC_STARTUP) {
		/* [string map]: note protocol v5 and compression. */
		if (c->version == 5)
			c->v5_startup = true;
		if (n >= 2) {
			unsigned cnt = l7_be16(b);
			off = 2;
			while (cnt-- && off + 2 <= n) {
				size_t kl = l7_be16(b + off);
				const uint8_t *k = b + off + 2;
				off += 2 + kl;
				if (off + 2 > n)
					break;
				size_t vl = l7_be16(b + off);
				off += 2 + vl;
				if (off > n)
					break;
				if (kl == 11 && !memcmp(k, "COMPRESSION", 11))
					c->v5_compressed = true;
			}
		}
		return;
	}
	if (flags & 0x01)
		return;   /* compressed body */
	off = body_start(b, n, flags, true);
	switch (e->op) {
	case OPC_QUERY:
	case OPC_PREPARE:
		if (off + 4 <= n) {
			int32_t l = (int32_t)l7_be32(b + off);
			if (l > 0) {
				e->qlen = (uint16_t)l7_min(l7_min((size_t)l, n - off - 4), qmax);
				memcpy(e->q, b + off + 4, e->qlen);
			}
		}
		break;
	case OPC_EXECUTE:
		if (off + 2 <= n) {
			size_t l = l7_be16(b + off), o = 3;
			const uint8_t *id = b + off + 2;
			l = l7_min(l, n - off - 2);
			memcpy(e->q, "id=", 3);
			for (size_t i = 0; i < l && o + 2 < qmax + 1 && o + 2 < sizeof(e->q); i++) {
				static const char hx[] = "0123456789abcdef";
				e->q[o++] = hx[id[i] >> 4];
				e->q[o++] = hx[id[i] & 15];
			}
			e->qlen = (uint16_t)o;
		}
		break;
	case OPC_BATCH:
		if (off + 3 <= n) {
			int k = snprintf(e->q, sizeof(e->q), "batch(%u)", l7_be16(b + off + 1));
			e->qlen = (uint16_t)(k > 0 ? k : 0);
		}
		break;
	}
}

static void parse_response(struct cql *c, uint8_t flags, const uint8_t *b, size_t n)
{
	uint8_t op = c->resp_op;
	size_t off;

	c->is_error = false;
	c->status = -1;
	c->errmsg[0] = 0;
	if (op == OPC_RESULT) {
		off = (flags & 0x01) ? n : body_start(b, n, flags, false);
		if (off + 4 <= n) {
			int32_t k = (int32_t)l7_be32(b + off);
			if (k >= 1 && k <= 5)
				snprintf(c->result, sizeof(c->result), "RESULT:%s", kinds[k]);
			else
				snprintf(c->result, sizeof(c->result), "RESULT:%d", k);
		} else {
			strcpy(c->result, "RESULT");
		}
		c->status = 0;
		return;
	}
	if (op == OPC_ERROR) {
		c->is_error = true;
		off = (flags & 0x01) ? n : body_start(b, n, flags, false);
		if (off + 4 <= n) {
			int32_t code = (int32_t)l7_be32(b + off);
			c->status = code;
			snprintf(c->result, sizeof(c->result), "ERROR:0x%04x", (unsigned)code);
			if (off + 6 <= n) {
				size_t l = l7_min(l7_be16(b + off + 4), n - off - 6);
				l = l7_min(l, sizeof(c->errmsg) - 1);
				memcpy(c->errmsg, b + off + 6, l);
				c->errmsg[l] = 0;
			}
		} else {
			strcpy(c->result, "ERROR");
		}
		return;
	}
	snprintf(c->result, sizeof(c->result), "%s", op < NOPC && opc_names[op] ? opc_names[op] : "?");
}

static bool plausible_header(const uint8_t *p, size_t n, bool req)
{
	uint8_t v, op;

	if (n < CQL_HDR)
		return false;
	v = p[0];
	op = p[4];
	if ((v & 0x80) != (req ? 0 : 0x80) || (v & 0x7f) < 3 || (v & 0x7f) > 5)
		return false;
	if (p[1] & 0xe0)
		return false;
	if (l7_be32(p + 5) > CQL_MAX_BODY)
		return false;
	return req ? is_request_op(op) : is_response_op(op);
}

static ssize_t cql_frame(void *ctx, struct l7_framer *f, const uint8_t *p, size_t avail, size_t *need)
{
	struct cql *c = ctx;
	bool req = f->tag == L7_DIR_REQ;
	uint32_t blen;
	size_t want;

	if (avail < CQL_HDR) {
		*need = CQL_HDR;
		return 0;
	}
	if (!plausible_header(p, CQL_HDR, req))
		return -EPROTO;
	blen = l7_be32(p + 5);
	want = CQL_HDR + l7_min(blen, req ? c->req_pfx : CQL_RESP_PFX);
	if (avail < want) {
		*need = want;
		return 0;
	}
	if (!c->version)
		c->version = p[0] & 0x7f;
	c->have = true;
	/* What it reads, in place or from a split envelope's buffer alike: the header and the prefix. */
	f->used = want;
	/* The handshake's sizes say nothing of the queries' (l7_framer.opening). */
	f->opening = req ? p[4] == OPC_STARTUP || p[4] == OPC_OPTIONS || p[4] == OPC_AUTH_RESPONSE :
			   p[4] == OPC_READY || p[4] == OPC_AUTHENTICATE || p[4] == OPC_SUPPORTED ||
			   p[4] == OPC_AUTH_CHALLENGE || p[4] == OPC_AUTH_SUCCESS;
	if (req) {
		struct pend *e = &c->cur;
		memset(e, 0, sizeof(*e));
		e->stream = (int16_t)l7_be16(p + 2);
		e->op = p[4];
		e->req_bytes = CQL_HDR + (uint64_t)blen;
		if ((p[0] & 0x7f) == 5 && e->op == OPC_STARTUP)
			c->version = 5;
		parse_request(c, e, p[1], p + CQL_HDR, want - CQL_HDR);
	} else {
		c->resp_op = p[4];
		c->resp_stream = (int16_t)l7_be16(p + 2);
		c->resp_bytes = CQL_HDR + (uint64_t)blen;
		c->event = c->resp_op == OPC_EVENT || c->resp_stream < 0;
		if (!c->event)
			parse_response(c, p[1], p + CQL_HDR, want - CQL_HDR);
		if (c->v5_startup && (p[0] & 0x7f) == 5 &&
		    (c->resp_op == OPC_READY || c->resp_op == OPC_AUTHENTICATE)) {
			/* Both sides use v5 segments from the next byte on. */
			c->v5_startup = false;
			if (c->v5_compressed)
				c->base.fatal = -EPROTO;
			c->seg[L7_DIR_REQ].on = c->seg[L7_DIR_RESP].on = true;
			f->pause = true;
		}
	}
	return (ssize_t)(CQL_HDR + (uint64_t)blen);
}

static int cql_end(void *ctx, struct l7_framer *f)
{
	struct cql *c = ctx;
	struct pend *e;

	if (!c->have)
		return 0;
	c->have = false;
	if (f->tag == L7_DIR_REQ) {
		c->cur.ts = f->msg_ts;
		c->cur.end_ts = f->ts;
		c->cur.seq = ++c->nreq;
		if (l7_pendq__count(&c->base.q) >= CQL_MAX_PEND) {
			e = l7_pendq__at(&c->base.q, 0);
			emit_rec(c, e, true, false, 0);
			l7_pendq__remove(&c->base.q, 0);
		}
		if (!(e = l7_pendq__push(&c->base.q)))
			return c->base.fatal = -ENOBUFS;
		*e = c->cur;
		return 0;
	}
	if (c->event)
		return 0;   /* server push, not an exchange */
	for (unsigned i = 0; (e = l7_pendq__at(&c->base.q, i)); i++) {
		if (e->stream != c->resp_stream)
			continue;
		emit_rec(c, e, true, true, f->ts);
		l7_pendq__remove(&c->base.q, i);
		return 0;
	}
	emit_rec(c, NULL, false, true, f->ts);
	return 0;
}

static bool cql_sync(void *ctx, struct l7_framer *f, const uint8_t *p, size_t len)
{
	struct cql *c = ctx;
	int16_t sid;

	if (!plausible_header(p, len, f->tag == L7_DIR_REQ))
		return false;
	if (c->version && (p[0] & 0x7f) != c->version)
		return false;
	if (f->tag == L7_DIR_REQ)
		return true;
	sid = (int16_t)l7_be16(p + 2);
	if (sid < 0)
		return p[4] == OPC_EVENT;
	for (unsigned i = 0; i < l7_pendq__count(&c->base.q); i++)
		if (((struct pend *)l7_pendq__at(&c->base.q, i))->stream == sid)
			return true;
	return false;
}

static const struct l7_framer_ops cql_fops = { .frame = cql_frame, .end = cql_end, .sync = cql_sync };

/* CRC24 of the v5 segment header (Cassandra's: init 0x875060, poly 0x1974f0b). */
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

/* v5: strip segment headers and trailers, stream payloads into the envelope framer. */
static int seg_feed(struct cql *c, enum l7_dir dir, const uint8_t *d, size_t len, uint64_t ts)
{
	struct seg *s = &c->seg[dir];
	int err;

	while (len) {
		if (s->trail_left) {
			size_t n = l7_min(len, s->trail_left);
			s->trail_left -= (uint32_t)n;
			d += n;
			len -= n;
			continue;
		}
		if (s->pay_left) {
			size_t n = l7_min(len, s->pay_left);
			if ((err = l7_framer__feed(&c->base.fr[dir], d, n, ts)) < 0)
				return err;
			s->pay_left -= (uint32_t)n;
			d += n;
			len -= n;
			if (!s->pay_left)
				s->trail_left = SEG_TRAILER;
			continue;
		}
		s->hdr[s->hlen++] = *d++;
		len--;
		if (s->hlen < SEG_HDR)
			continue;
		s->hlen = 0;
		if (crc24(s->hdr, 3) != l7_le24(s->hdr + 3))
			return -EPROTO;
		s->pay_left = l7_le24(s->hdr) & 0x1ffff;
		if (!s->pay_left)
			s->trail_left = SEG_TRAILER;
	}
	return 0;
}

static int cql_feed(void *st, enum l7_dir dir, const uint8_t *data, size_t len, uint64_t ts)
{
	struct cql *c = st;
	int err;

	if (!l7_framed__dir_ok(dir))
		return -EINVAL;
	if (c->base.fatal)
		return c->base.fatal;
	if (c->seg[dir].on) {
		err = seg_feed(c, dir, data, len, ts);
	} else {
		err = l7_framer__feed(&c->base.fr[dir], data, len, ts);
		if (!err && c->base.fatal)
			err = c->base.fatal;
		if (!err && c->base.fr[dir].unconsumed) {
			size_t used = len - c->base.fr[dir].unconsumed;
			err = seg_feed(c, dir, data + used, len - used, ts);
		}
	}
	if (err < 0)
		c->base.fatal = err;
	return err;
}

static int cql_gap(void *st, enum l7_dir dir, size_t len, uint64_t ts)
{
	struct cql *c = st;

	if (l7_framed__dir_ok(dir) && !c->base.fatal && c->seg[dir].on)
		return c->base.fatal = -EPROTO;   /* segment boundaries are gone */
	/* Otherwise stream ids keep the pairing honest across the resync. */
	return l7_framed__gap(st, dir, len, ts);
}

/*
 * l7_parser_ops.head: the framer's (envelopes before v5) until v5 segments
 * are negotiated; from then on every byte, as the framer's offsets are the
 * envelopes' and no longer the calls'.
 */
static size_t cql_head(const void *st, enum l7_dir dir)
{
	const struct cql *c = st;

	if (c->v5_startup || c->seg[L7_DIR_REQ].on || c->seg[L7_DIR_RESP].on)
		return L7_HEAD_ALL;
	return l7_framed__head(st, dir);
}

/* Requests never answered (the close came first): reported without a response. */
static void cql_unanswered(void *st, void *e)
{
	emit_rec(st, e, true, false, 0);
}

static const struct l7_framed_spec cql_spec = {
	.fops = &cql_fops,
	.state_size = sizeof(struct cql),
	.entry_size = sizeof(struct pend),
	.resync = true,
	.unanswered = cql_unanswered,
	.heads = true,
};

static void *cql_create(const struct l7_config *cfg, l7_emit_fn emit, void *emit_ctx)
{
	struct cql *c = l7_framed__new(&cql_spec, cfg, emit, emit_ctx);

	if (!c)
		return NULL;
	c->req_pfx = l7_min(cfg->max_query_len, L7_FIELD_MAX) + 512;
	return c;
}

static int cql_detect(const uint8_t *d, size_t len, enum l7_dir dir, uint16_t port)
{
	bool req = dir == L7_DIR_REQ;
	uint32_t blen;
	int score;
	uint8_t op;

	if (!plausible_header(d, len, req))
		return 0;
	blen = l7_be32(d + 5);
	op = d[4];
	if (req && (int16_t)l7_be16(d + 2) < 0)
		return 0;
	if (blen > 16u * 1024 * 1024)
		return 0;
	switch (op) {
	case OPC_OPTIONS:
		score = blen == 0 ? 75 : 0;
		break;
	case OPC_STARTUP:
		score = len >= CQL_HDR + 2 + 2 + 11 && memmem(d + CQL_HDR, len - CQL_HDR, "CQL_VERSION", 11) ? 95 : 40;
		break;
	case OPC_SUPPORTED:
		score = len >= CQL_HDR + 4 && memmem(d + CQL_HDR, len - CQL_HDR, "CQL_VERSION", 11) ? 90 : 40;
		break;
	case OPC_QUERY:
	case OPC_PREPARE:
		score = len >= CQL_HDR + 4 && l7_be32(d + CQL_HDR) <= blen - 4 && blen >= 4 ? 60 : 30;
		break;
	default:
		score = len == CQL_HDR + blen ? 45 : 30;
		break;
	}
	if (score && port == 9042)
		score = score + 10 > 100 ? 100 : score + 10;
	return score;
}

const struct l7_parser_ops l7_cql_ops = {
	.name = "cql",
	.detect = cql_detect,
	.create = cql_create,
	.feed = cql_feed,
	.gap = cql_gap,
	.finish = l7_framed__finish,
	.free = l7_framed__free,
	.dropped = l7_framed__discarded,   /* chunks discarded while resynchronising */
	.head = cql_head,
};
