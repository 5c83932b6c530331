/*
 * PostgreSQL frontend/backend protocol v3.
 *
 * After the untyped startup phase (StartupMessage, SSLRequest and
 * GSSENCRequest with their one-byte answers, CancelRequest) every message is
 * [type:1][len:4 BE, counting itself][body].  Exchanges, named like tshark's
 * view of them (oracle.sh):
 *   STARTUP  StartupMessage .. ReadyForQuery (READY) or ErrorResponse
 *   QUERY    simple query 'Q' .. ReadyForQuery; result = first error, else
 *            the last CommandComplete tag
 *   FUNCTION function call 'F' .. ReadyForQuery
 *   EXECUTE  one per extended-protocol Execute; query = the text of the Parse
 *            that prepared the bound statement (or <stmt:NAME> when that Parse
 *            came before the capture); completed by its CommandComplete /
 *            EmptyQueryResponse / PortalSuspended / ErrorResponse.  After an
 *            error the server skips to Sync, so the batch's later Executes
 *            are reported as ABORTED without a response.
 *   PARSE    a Parse .. Sync batch without any Execute
 *
 * Latency of STARTUP, QUERY, FUNCTION and PARSE runs to the server's first
 * message (its first answer, as tshark times them): a login goes on with
 * password round trips that wait on the client, a backend flushes an
 * ErrorResponse at once but the ReadyForQuery after it only once the
 * transaction is aborted, and a long result goes out in 8 KB writes.  An
 * EXECUTE runs to its own CommandComplete or ErrorResponse.
 *
 * Pairing: every Q / F / Sync / StartupMessage is answered by exactly one
 * ReadyForQuery, so requests are numbered by the ReadyForQuery that closes
 * them; that keeps pipelined batches apart.  FIFO pairing without ids cannot
 * follow lost bytes, so a gap outside a discarded message body is resolved
 * at the client's next turn (live data: a long result is written in 8 KB
 * calls, a pipeline in one write, seen only in part).  A gap in the
 * answers: the client's next message closes the exchanges outstanding, the
 * oldest with the error or tag seen before the gap (none when the
 * CommandComplete went by in it), no row count, and the next answer is
 * read afresh (l7_framed_spec.cut).  A gap in the client's messages: the
 * answers to the exchanges seen before it pair as usual, those to the lost
 * ones are counted in dropped(), and the client's messages are read afresh
 * at its first write after the server's (req_resume).
 */
#include "l7/l7.h"
#include "l7/l7_framed.h"
#include "l7/l7_util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define PG_PROTO_V3      196608u
#define PG_SSL_REQUEST   80877103u
#define PG_GSS_REQUEST   80877104u
#define PG_CANCEL        80877102u
#define PG_MAX_MSG       (1u << 30)
#define PG_MAX_STARTUP   10000u
#define PG_NSTMTS        16
#define PG_NAME_MAX      64

enum kind { K_STARTUP, K_QUERY, K_FUNCTION, K_EXECUTE, K_PARSE };
static const char *const kind_names[] = { "STARTUP", "QUERY", "FUNCTION", "EXECUTE", "PARSE" };

struct txn {
	uint64_t ts, end_ts;   /* the request's first and last byte (end 0 while incomplete) */
	uint64_t resp1_ts;     /* the server's first message completed (see latency above) */
	uint64_t req_bytes, resp_bytes, rows, seq;
	uint64_t resp_start;   /* byte offset of the first server message in the direction */
	uint64_t batch;
	uint8_t kind;
	bool got_resp;
	bool cut;            /* the answer was cut by a gap: its row count is unknown */
	uint16_t qlen;
	char q[L7_FIELD_MAX];
	char tag[64];
	char err[16];        /* "ERROR:<sqlstate>" */
	char errmsg[160];
};

struct stmt {
	bool used;
	uint64_t stamp;
	char name[PG_NAME_MAX];
	uint16_t qlen;
	char q[L7_FIELD_MAX];
};

struct pgsql {
	struct l7_framed base;  /* first: framers, pending exchanges, memory, error */
	size_t prefix;
	size_t used;            /* bytes of the message being framed that it read (l7_framer.used) */
	bool opening;           /* ... and whether it belongs to the session's start (l7_framer.opening) */
	uint64_t nreq;          /* exchanges opened: their order for req_seq */
	uint64_t dropped;       /* orphan backend messages, evicted statements */
	uint64_t msg_start;     /* byte offset of the server message being framed */
	bool cli_untyped;       /* next client message may be a startup-phase one */
	bool srv_ssl_answer;    /* next server byte answers SSLRequest / GSSENCRequest */
	uint64_t cli_batch;     /* ReadyForQuery-producing messages sent */
	uint64_t srv_batch;     /* ReadyForQuery messages received */
	/* Extended-protocol batch being built by the client. */
	unsigned batch_execs;
	bool batch_parse;
	char parse_name[PG_NAME_MAX];
	char bound[PG_NAME_MAX];
	bool have_bound;
	uint64_t stmt_clock;
	struct stmt stmts[PG_NSTMTS];
	/* Emission at the end of the current server message. */
	uint64_t srv_msg_bytes;
};

static void copy_cstr(char *dst, size_t dsz, const uint8_t *p, size_t n)
{
	const uint8_t *z = memchr(p, 0, n);
	size_t l = z ? (size_t)(z - p) : n;

	if (l > dsz - 1)
		l = dsz - 1;
	memcpy(dst, p, l);
	dst[l] = 0;
}

/* Length of the C string at p[0..n) including its NUL, 0 if unterminated. */
static size_t cstr_len(const uint8_t *p, size_t n)
{
	const uint8_t *z = memchr(p, 0, n);
	return z ? (size_t)(z - p) + 1 : 0;
}

static struct stmt *stmt_find(struct pgsql *s, const char *name)
{
	for (unsigned i = 0; i < PG_NSTMTS; i++)
		if (s->stmts[i].used && !strcmp(s->stmts[i].name, name))
			return &s->stmts[i];
	return NULL;
}

static struct stmt *stmt_slot(struct pgsql *s, const char *name)
{
	struct stmt *st = stmt_find(s, name), *old = &s->stmts[0];

	if (st)
		return st;
	/* Evict the least recently prepared: its Executes then report <stmt:NAME>. */
	for (unsigned i = 0; i < PG_NSTMTS; i++) {
		if (!s->stmts[i].used)
			return &s->stmts[i];
		if (s->stmts[i].stamp < old->stamp)
			old = &s->stmts[i];
	}
	s->dropped++;
	return old;
}

static size_t qmax(const struct pgsql *s)
{
	return l7_min(s->base.cfg.max_query_len, L7_FIELD_MAX - 1);
}

static void emit_txn(struct pgsql *s, const struct txn *t, bool aborted, uint64_t resp_ts)
{
	struct l7_record rec;

	l7_record__init(&rec, "pgsql");
	l7_rec_req(&rec, t->ts, t->end_ts, t->req_bytes, t->seq);
	l7_rec_str(&rec, "kind", kind_names[t->kind]);
	if (t->qlen)
		l7_rec_text(&rec, "query", t->q, t->qlen);
	if (aborted) {
		l7_rec_str(&rec, "result", "ABORTED");
	} else if (t->got_resp) {
		l7_rec_resp(&rec, t->kind != K_EXECUTE && t->resp1_ts ? t->resp1_ts : resp_ts, t->resp_bytes);
		if (t->err[0]) {
			rec.is_error = true;
			l7_rec_str(&rec, "result", t->err);
			if (t->errmsg[0])
				l7_rec_str(&rec, "error_message", t->errmsg);
		} else if (t->tag[0]) {
			l7_rec_str(&rec, "result", t->tag);
		}
		if (t->rows && !t->cut)
			l7_rec_u64(&rec, "rows", t->rows);
		if (t->cut)
			l7_rec_str(&rec, "gap", "response");
	}
	l7_framed__emit(&s->base, &rec);
}

static struct txn *new_txn(struct pgsql *s, uint8_t kind, uint64_t bytes)
{
	struct txn *t = l7_pendq__push(&s->base.q);

	if (!t) {
		s->base.fatal = -ENOBUFS;
		return NULL;
	}
	t->kind = kind;
	t->ts = s->base.fr[L7_DIR_REQ].msg_ts;
	t->req_bytes = bytes;
	t->batch = s->cli_batch;
	t->seq = ++s->nreq;
	return t;
}

static void set_query(struct pgsql *s, struct txn *t, const char *q, size_t n)
{
	t->qlen = (uint16_t)l7_min(n, qmax(s));
	memcpy(t->q, q, t->qlen);
}

static void startup_message(struct pgsql *s, const uint8_t *p, size_t n, uint32_t len)
{
	uint32_t code = l7_be32(p + 4);
	struct txn *t;

	if (code == PG_SSL_REQUEST || code == PG_GSS_REQUEST) {
		s->srv_ssl_answer = true;
		return;   /* another untyped message follows if the server says 'N' */
	}
	if (code == PG_CANCEL) {
		s->cli_untyped = false;
		return;
	}
	s->cli_untyped = false;
	if (!(t = new_txn(s, K_STARTUP, len)))
		return;
	s->cli_batch++;
	/* Parameters: key\0value\0 ... \0; report user=. */
	for (size_t off = 8; off < n;) {
		size_t kl = cstr_len(p + off, n - off), vl;

		if (kl <= 1)
			break;
		vl = cstr_len(p + off + kl, n - off - kl);
		if (!vl)
			break;
		if (kl == 5 && !memcmp(p + off, "user", 4)) {
			char tmp[L7_FIELD_MAX];
			size_t l = 5 + vl - 1;

			memcpy(tmp, "user=", 5);
			memcpy(tmp + 5, p + off + kl, l7_min(vl - 1, sizeof(tmp) - 6));
			set_query(s, t, tmp, l7_min(l, sizeof(tmp) - 1));
		}
		off += kl + vl;
	}
}

static void client_message(struct pgsql *s, uint8_t type, const uint8_t *b, size_t n, uint64_t total)
{
	struct txn *t;
	size_t l;

	switch (type) {
	case 'Q':
		if (!(t = new_txn(s, K_QUERY, total)))
			return;
		s->cli_batch++;
		l = cstr_len(b, n);
		set_query(s, t, (const char *)b, l ? l - 1 : n);
		return;
	case 'F':
		if (!(t = new_txn(s, K_FUNCTION, total)))
			return;
		s->cli_batch++;
		return;
	case 'P': {
		char name[PG_NAME_MAX];
		struct stmt *st;
		size_t nl = cstr_len(b, n);

		copy_cstr(name, sizeof(name), b, n);
		st = stmt_slot(s, name);
		st->used = true;
		st->stamp = ++s->stmt_clock;
		memcpy(st->name, name, sizeof(name));
		st->qlen = 0;
		if (nl && nl < n) {
			l = cstr_len(b + nl, n - nl);
			st->qlen = (uint16_t)l7_min(l ? l - 1 : n - nl, qmax(s));
			memcpy(st->q, b + nl, st->qlen);
		}
		if (!s->batch_parse) {
			s->batch_parse = true;
			memcpy(s->parse_name, name, sizeof(name));
		}
		return;
	}
	case 'B': {
		size_t pl = cstr_len(b, n);

		if (pl && pl < n) {
			copy_cstr(s->bound, sizeof(s->bound), b + pl, n - pl);
			s->have_bound = true;
		}
		return;
	}
	case 'E': {
		struct stmt *st;
		const char *name = s->have_bound ? s->bound : "";

		if (!(t = new_txn(s, K_EXECUTE, total)))
			return;
		s->batch_execs++;
		st = stmt_find(s, name);
		if (st && st->qlen) {
			set_query(s, t, st->q, st->qlen);
		} else {
			char tmp[PG_NAME_MAX + 8];
			int k = snprintf(tmp, sizeof(tmp), "<stmt:%s>", name[0] ? name : "unnamed");
			set_query(s, t, tmp, (size_t)k < sizeof(tmp) ? (size_t)k : sizeof(tmp) - 1);
		}
		return;
	}
	case 'S':
		if (!s->batch_execs && s->batch_parse) {
			struct stmt *st = stmt_find(s, s->parse_name);

			if ((t = new_txn(s, K_PARSE, total)) && st)
				set_query(s, t, st->q, st->qlen);
		}
		s->cli_batch++;
		s->batch_execs = 0;
		s->batch_parse = false;
		return;
	default:
		/* Describe, Close, Flush, Terminate, copy data, auth responses. */
		if ((t = l7_pendq__at(&s->base.q, l7_pendq__count(&s->base.q) - 1)) && l7_pendq__count(&s->base.q))
			t->req_bytes += total;
		return;
	}
}


/*
 * A typed message (type byte, then a 4-byte length that counts itself):
 * its head, up to the prefix the parser looks at, goes to fn.
 */
static ssize_t typed_message(struct pgsql *s, const uint8_t *p, size_t avail, size_t *need,
			     void (*fn)(struct pgsql *, uint8_t, const uint8_t *, size_t, uint64_t))
{
	uint32_t len;
	size_t want;

	if (avail < 5) {
		*need = 5;
		return 0;
	}
	len = l7_be32(p + 1);
	if (len < 4 || len > PG_MAX_MSG)
		return -EPROTO;
	want = 1 + l7_min(len, s->prefix);
	if (avail < want) {
		*need = want;
		return 0;
	}
	s->used = want;
	fn(s, p[0], p + 5, want - 5, 1 + (uint64_t)len);
	return s->base.fatal ? s->base.fatal : (ssize_t)(1 + (uint64_t)len);
}

static ssize_t pg_frame_req(struct pgsql *s, const uint8_t *p, size_t avail, size_t *need)
{
	uint32_t len;
	size_t want;

	if (s->cli_untyped) {
		if (avail < 8) {
			*need = 8;
			return 0;
		}
		len = l7_be32(p);
		if (len >= 8 && len <= PG_MAX_STARTUP) {
			uint32_t code = l7_be32(p + 4);
			if (code == PG_PROTO_V3 || code == PG_SSL_REQUEST || code == PG_GSS_REQUEST ||
			    code == PG_CANCEL || (code >> 16) == 3) {
				want = l7_min(len, 2048);
				if (avail < want) {
					*need = want;
					return 0;
				}
				s->used = want;
				s->opening = true;
				startup_message(s, p, want, len);
				return s->base.fatal ? s->base.fatal : (ssize_t)len;
			}
		}
		/* Mid-connection: typed messages from the start. */
		s->cli_untyped = false;
	}
	s->opening = p[0] == 'p';   /* password, SASL */
	return typed_message(s, p, avail, need, client_message);
}

/* Oldest transaction awaiting the current ReadyForQuery, NULL if none. */
static struct txn *current(struct pgsql *s, unsigned *idx)
{
	struct txn *t = l7_pendq__at(&s->base.q, 0);

	if (!t || t->batch != s->srv_batch)
		return NULL;
	if (idx)
		*idx = 0;
	return t;
}

static void server_message(struct pgsql *s, uint8_t type, const uint8_t *b, size_t n, uint64_t total)
{
	struct txn *t;
	unsigned i;

	t = current(s, &i);
	if (t) {
		if (!t->got_resp)
			t->resp_start = s->msg_start;
		t->got_resp = true;
		t->resp_bytes += total;
	} else if (type != 'S' && type != 'N' && type != 'A' && (type != 'Z' || s->srv_batch >= s->cli_batch)) {
		/* Answers a request from before the capture or lost in a gap (async messages aside). */
		s->dropped++;
	}
	switch (type) {
	case 'Z': {
		/* Everything still open in this batch is answered. */
		while ((t = current(s, NULL))) {
			if (!t->tag[0] && !t->err[0])
				strcpy(t->tag, t->kind == K_STARTUP ? "READY" : "OK");
			emit_txn(s, t, false, s->base.fr[L7_DIR_RESP].ts);
			l7_pendq__remove(&s->base.q, 0);
		}
		if (s->srv_batch < s->cli_batch)
			s->srv_batch++;
		return;
	}
	case 'C':
	case 'I':
	case 's':
	case 'E': {
		if (!t)
			return;
		if (type == 'E') {
			/* Fields: code byte + C string, until a 0 code. */
			char code[8] = "", msg[160] = "";
			for (size_t off = 0; off < n && b[off];) {
				uint8_t f = b[off++];
				size_t l = cstr_len(b + off, n - off);
				if (f == 'C')
					copy_cstr(code, sizeof(code), b + off, n - off);
				else if (f == 'M')
					copy_cstr(msg, sizeof(msg), b + off, n - off);
				if (!l)
					break;
				off += l;
			}
			if (!t->err[0]) {
				snprintf(t->err, sizeof(t->err), "ERROR:%s", code);
				memcpy(t->errmsg, msg, sizeof(msg));
			}
		} else if (type == 'C') {
			copy_cstr(t->tag, sizeof(t->tag), b, n);
		} else if (type == 'I') {
			if (!t->tag[0] || t->kind == K_EXECUTE)
				strcpy(t->tag, "EMPTY");
		} else {
			strcpy(t->tag, "SUSPENDED");
		}
		if (t->kind != K_EXECUTE)
			return;
		/* This Execute is done. */
		emit_txn(s, t, false, s->base.fr[L7_DIR_RESP].ts);
		uint64_t batch = t->batch;
		l7_pendq__remove(&s->base.q, 0);
		if (type == 'E') {
			/* The server skips to Sync: the batch's other Executes never run. */
			for (unsigned j = 0; (t = l7_pendq__at(&s->base.q, j)) && t->batch == batch;) {
				if (t->kind == K_EXECUTE || t->kind == K_PARSE) {
					emit_txn(s, t, true, 0);
					l7_pendq__remove(&s->base.q, j);
				} else {
					j++;
				}
			}
		}
		return;
	}
	case 'D':
		if (t)
			t->rows++;
		return;
	default:
		/* Auth, ParameterStatus, BackendKeyData, RowDescription, ParseComplete... */
		return;
	}
}

static ssize_t pg_frame_resp(struct pgsql *s, const uint8_t *p, size_t avail, size_t *need)
{
	struct txn *t;

	if (s->srv_ssl_answer) {
		s->srv_ssl_answer = false;
		if (p[0] == 'N') {
			s->used = 1;
			s->opening = true;
			return 1;   /* refused: the client goes on in clear */
		}
		if (p[0] == 'S' || p[0] == 'G')
			return -EPROTO;   /* TLS / GSS encryption from here on */
		/* An old server answering with an ErrorResponse: parse it as typed. */
	}
	/* Authentication, BackendKeyData, and whatever answers the startup. */
	t = current(s, NULL);
	s->opening = p[0] == 'R' || p[0] == 'K' || (t && t->kind == K_STARTUP);
	return typed_message(s, p, avail, need, server_message);
}

static ssize_t pg_frame(void *ctx, struct l7_framer *f, const uint8_t *p, size_t avail, size_t *need)
{
	struct pgsql *s = ctx;

	ssize_t r;

	if (f->tag == L7_DIR_RESP)
		s->msg_start = f->bytes - f->len;   /* (a split message's head is in f->bytes already) */
	s->used = 0;
	s->opening = false;
	r = f->tag == L7_DIR_REQ ? pg_frame_req(ctx, p, avail, need) : pg_frame_resp(ctx, p, avail, need);
	f->used = s->used;
	f->opening = s->opening;
	return r;
}

/* A message is over: time the request it completes, or the first answer to one. */
static int pg_end(void *ctx, struct l7_framer *f)
{
	struct pgsql *s = ctx;
	unsigned n = l7_pendq__count(&s->base.q);
	struct txn *t;

	if (f->tag == L7_DIR_REQ) {
		if (n && !(t = l7_pendq__at(&s->base.q, n - 1))->end_ts)
			t->end_ts = f->ts;
	} else if ((t = current(s, NULL)) && t->kind != K_EXECUTE && !t->resp1_ts) {
		t->resp1_ts = f->ts;
	}
	return 0;
}

static const struct l7_framer_ops pg_fops = { .frame = pg_frame, .end = pg_end };

/* Exchanges open at the close: reported with what their response gave so far. */
static void pg_unanswered(void *st, void *t)
{
	struct pgsql *s = st;

	emit_txn(s, t, false, s->base.fr[L7_DIR_RESP].ts);
}

/*
 * A gap cut the answers, and the client sent again: the oldest exchange's
 * answer was in progress (with the error or tag seen before the gap), the
 * later ones' (pipelined) went by in the gap.
 */
static int pg_cut(void *st, uint64_t ts)
{
	struct pgsql *s = st;
	struct txn *t;

	while ((t = l7_pendq__at(&s->base.q, 0))) {
		if (t->got_resp)
			t->resp_bytes = s->base.fr[L7_DIR_RESP].bytes - t->resp_start;
		t->got_resp = true;
		t->cut = true;
		emit_txn(s, t, false, ts);
		l7_pendq__remove(&s->base.q, 0);
	}
	/* Its ReadyForQuery went by in the gap: everything sent so far is answered. */
	s->srv_batch = s->cli_batch;
	s->srv_ssl_answer = false;
	return 0;
}

/*
 * The client writes again after a gap in its messages: every cycle it sent
 * is answered by now, so the two sides' ReadyForQuery counts agree again,
 * and the batch it was building is forgotten.
 */
static int pg_req_resume(void *st)
{
	struct pgsql *s = st;

	s->cli_batch = s->srv_batch;
	s->batch_execs = 0;
	s->batch_parse = false;
	s->have_bound = false;
	s->cli_untyped = false;
	return 0;
}

/*
 * Does p[0..len) start at a message, by its headers?  Every header up to the
 * chunk's end must be one of the direction's types with a plausible length
 * (ok() checks what a type fixes: a bodiless message's length, a first body
 * byte when the chunk has it), chained end to end.
 */
static bool pg_chain(const uint8_t *p, size_t len, const char *types,
		     bool (*ok)(uint8_t t, uint32_t l, const uint8_t *body, size_t avail))
{
	size_t off = 0;

	while (len - off >= 5) {
		uint8_t t = p[off];
		uint32_t l = l7_be32(p + off + 1);

		if (!t || !strchr(types, t) || l < 4 || l > PG_MAX_MSG || !ok(t, l, p + off + 5, len - off - 5))
			return false;
		if (l >= len - off - 1)
			return true;   /* it runs to the chunk's end or past it */
		off += 1 + (size_t)l;
	}
	return off > 0;
}

static bool frontend_ok(uint8_t t, uint32_t l, const uint8_t *body, size_t avail)
{
	if (t == 'S' || t == 'H' || t == 'X' || t == 'c')
		return l == 4;
	if (t == 'D' || t == 'C')
		return l >= 6 && (!avail || body[0] == 'S' || body[0] == 'P');
	return true;
}

static bool backend_ok(uint8_t t, uint32_t l, const uint8_t *body, size_t avail)
{
	if (t == '1' || t == '2' || t == '3' || t == 'n' || t == 's' || t == 'I' || t == 'c')
		return l == 4;
	if (t == 'Z')
		return l == 5 && (!avail || body[0] == 'I' || body[0] == 'T' || body[0] == 'E');
	return true;
}

/* After a gap in the client's messages: does this chunk start at one? */
static bool pg_req_start(const uint8_t *p, size_t len)
{
	return pg_chain(p, len, "QPBEDSHCFXdcfp", frontend_ok);
}

/* After a cut: does this chunk of the server's bytes start at a message? */
static bool pg_resp_start(const uint8_t *p, size_t len)
{
	return pg_chain(p, len, "123cCdDEGHIKnNRsStTVWZAv", backend_ok);
}

static const struct l7_framed_spec pg_spec = {
	.fops = &pg_fops,
	.state_size = sizeof(struct pgsql),
	.entry_size = sizeof(struct txn),
	.resync = false,   /* FIFO pairing */
	.unanswered = pg_unanswered,
	.cut = pg_cut,
	.req_resume = pg_req_resume,
	.req_start = pg_req_start,
	.resp_start = pg_resp_start,
	.heads = true,
};

static void *pg_create(const struct l7_config *cfg, l7_emit_fn emit, void *emit_ctx)
{
	struct pgsql *s = l7_framed__new(&pg_spec, cfg, emit, emit_ctx);

	if (!s)
		return NULL;
	s->prefix = l7_min(cfg->max_query_len, L7_FIELD_MAX) + 1024;
	s->cli_untyped = true;
	return s;
}

static uint64_t pg_dropped(const void *st)
{
	const struct pgsql *s = st;
	return s->dropped;
}

static bool printable(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r') || p[i] == 0x7f)
			return false;
	return true;
}

static int pg_detect(const uint8_t *d, size_t len, enum l7_dir dir, uint16_t port)
{
	int score = 0;
	uint32_t l;

	if (len < 5)
		return 0;
	if (dir == L7_DIR_REQ) {
		l = l7_be32(d);
		if (len >= 8) {
			uint32_t code = l7_be32(d + 4);
			if ((code == PG_SSL_REQUEST || code == PG_GSS_REQUEST) && l == 8)
				score = 90;
			else if (code == PG_CANCEL && l == 16)
				score = 80;
			else if (code == PG_PROTO_V3 && l >= 9 && l <= PG_MAX_STARTUP && len >= 13 &&
				 printable(d + 8, l7_min(len, l) - 8 > 4 ? 4 : l7_min(len, l) - 8))
				score = 95;
		}
		if (!score && (d[0] == 'Q' || d[0] == 'P')) {
			/* Mid-connection: a query / parse whose length fits what we see. */
			l = l7_be32(d + 1);
			if (l >= 5 && l < PG_MAX_MSG) {
				size_t body = l7_min(len - 5, l - 4);
				const uint8_t *z = memchr(d + 5, 0, body);
				if (d[0] == 'Q' && z && printable(d + 5, (size_t)(z - (d + 5))) && (size_t)(z - d) == l)
					score = 60;
				else if (d[0] == 'P' && z && body > 1)
					score = 40;
			}
		}
	} else {
		l = l7_be32(d + 1);
		if (len == 1 && (d[0] == 'N' || d[0] == 'S'))
			return 0;   /* SSL answer alone: too little to tell */
		if (d[0] == 'R' && l >= 8 && l < 1024 && len >= 9 && l7_be32(d + 5) <= 12)
			score = 85;   /* authentication request */
		else if (d[0] == 'E' && l >= 8 && l < 65536 && len >= 6 && d[5] == 'S')
			score = 70;
		else if ((d[0] == 'T' || d[0] == 'C' || d[0] == '1' || d[0] == 'Z') && l >= 4 && l < PG_MAX_MSG &&
			 len >= 1 + l && (d[0] != 'Z' || l == 5)) {
			/* A complete first message followed by a plausible second header. */
			if (len == 1 + l)
				score = 30;
			else if (len >= 1 + l + 5 && l7_be32(d + 1 + l + 1) >= 4 && l7_be32(d + 1 + l + 1) < PG_MAX_MSG &&
				 memchr("TDCZ12nstIE", d[1 + l], 11))
				score = 55;
		}
	}
	if (score && port == 5432)
		score = score + 10 > 100 ? 100 : score + 10;
	return score;
}

const struct l7_parser_ops l7_pgsql_ops = {
	.name = "pgsql",
	.detect = pg_detect,
	.create = pg_create,
	.feed = l7_framed__feed,
	.gap = l7_framed__gap,
	.head = l7_framed__head,
	.finish = l7_framed__finish,
	.free = l7_framed__free,
	.dropped = pg_dropped,
};
