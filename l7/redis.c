/*
 * Redis serialization protocol, RESP2 and RESP3.
 *
 * Both directions are read as a sequence of RESP values, one line-headed
 * token at a time: simple types (+ - : _ # , ( ) end at CRLF, bulk types
 * ($ = !) carry a length and a body the framer discards past the bytes we
 * look at, aggregates (* % ~ > |) open a level on a bounded stack (maps and
 * attributes count key and value).  RESP3 attributes are metadata attached
 * to the value that follows: they do not count as a reply nor as an
 * element of the aggregate around them.  Clients may also send inline
 * commands (a bare line of words).
 *
 * Replies pair with commands in order (pipelining is FIFO), except pushes:
 * RESP3 '>' values and RESP2 pub/sub "message"/"pmessage"/"smessage" arrays
 * are reported as command "(push)".  (P|S)(UN)SUBSCRIBE with N channels
 * gets N replies.  Without request ids a lost byte makes the pairing
 * unknowable, so a gap outside a bulk body is resolved at the client's
 * next turn (live data: a large array or a long pipeline is written in
 * calls seen only in part).  A gap in the replies: the client's next
 * command closes the reply in progress, summarised by its first token, and
 * the later pipelined commands' replies, which went by in the gap ("?"),
 * then replies are read afresh (l7_framed_spec.cut).  A gap in the
 * commands: replies pair with the commands seen before it, the ones beyond
 * them are reported without a command (gap=request), and commands are read
 * afresh at the client's first write after a reply (req_resume).
 */
#include "l7/l7.h"
#include "l7/l7_framed.h"
#include "l7/l7_util.h"

#include <errno.h>
#include <string.h>

#define REDIS_MAX_DEPTH   32
#define REDIS_MAX_LINE    (64 * 1024)
#define REDIS_MAX_BULK    (512ll * 1024 * 1024)
#define REDIS_MAX_ELEMS   (1ll << 32)
#define REDIS_NAME_MAX    32

struct level {
	int64_t left;
	bool attr;
};

/* Parse state of one direction. */
struct rdir {
	struct level stack[REDIS_MAX_DEPTH];
	unsigned depth;
	bool in_value;        /* a top-level value has started */
	bool top_attr;        /* the top-level value is an attribute */
	bool value_done;      /* a top-level value ended with the last token */
	uint64_t bytes;       /* bytes of the current top-level value */
	uint64_t start;       /* the direction's byte offset where it began */
	uint64_t ts;          /* time of its first byte */
	/* Request side: the command being read. */
	int64_t argc;
	int64_t argi;
	char name[REDIS_NAME_MAX];
	/* Response side: summary of the top-level reply. */
	char reply[48];
	bool is_error;
	bool is_push;
	bool first_elem_pending;  /* top-level array: its first element decides pub/sub pushes */
};

struct pend {
	uint64_t ts, end_ts, req_bytes, seq;   /* first and last byte */
	uint64_t resp_ts, resp_bytes;
	int64_t need;
	bool got;
	bool is_error;
	bool cut;             /* its reply was cut by a gap */
	bool req_gap;         /* a reply to a command lost in a gap */
	char name[REDIS_NAME_MAX];
	char reply[48];
};

struct redis {
	struct l7_framed base;   /* first: framers, pending commands, memory, error */
	struct rdir d[2];
	uint64_t nreq;         /* commands seen: their order for req_seq */
};

static void emit_rec(struct redis *r, const struct pend *p, bool has_req)
{
	struct l7_record rec;

	l7_record__init(&rec, "redis");
	if (has_req) {
		l7_rec_req(&rec, p->ts, p->end_ts, p->req_bytes, p->seq);
	}
	l7_rec_str(&rec, "command", p->name[0] ? p->name : "-");
	if (p->got) {
		l7_rec_resp(&rec, p->resp_ts, p->resp_bytes);
		rec.is_error = p->is_error;
		l7_rec_str(&rec, "reply", p->reply);
		if (p->cut)
			l7_rec_str(&rec, "gap", "response");
		else if (p->req_gap)
			l7_rec_str(&rec, "gap", "request");
	}
	l7_framed__emit(&r->base, &rec);
}

/* Signed decimal in p[0..n); false on junk or overflow. */
static bool parse_int(const uint8_t *p, size_t n, int64_t *v)
{
	bool neg = false;
	int64_t x = 0;
	size_t i = 0;

	if (n && p[0] == '-') {
		neg = true;
		i = 1;
	}
	if (i == n || n - i > 18)
		return false;
	for (; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		x = x * 10 + (p[i] - '0');
	}
	*v = neg ? -x : x;
	return true;
}

static bool is_sub(const char *name)
{
	return !strcmp(name, "SUBSCRIBE") || !strcmp(name, "PSUBSCRIBE") || !strcmp(name, "SSUBSCRIBE") ||
	       !strcmp(name, "UNSUBSCRIBE") || !strcmp(name, "PUNSUBSCRIBE") || !strcmp(name, "SUNSUBSCRIBE");
}

static void set_name(struct rdir *d, const uint8_t *s, size_t n)
{
	size_t i;

	n = l7_min(n, REDIS_NAME_MAX - 1);
	for (i = 0; i < n; i++) {
		uint8_t c = s[i];
		d->name[i] = (char)(c >= 'a' && c <= 'z' ? c - 32 : (c < 0x20 || c >= 0x7f) ? '?' : c);
	}
	d->name[i] = 0;
}

/* One element (leaf or finished aggregate) done: unwind the stack. */
static void value_done(struct rdir *d, bool was_attr)
{
	for (;;) {
		if (!d->depth) {
			if (was_attr && d->top_attr) {
				/* A top-level attribute: the real reply is still to come. */
				d->top_attr = false;
				return;
			}
			d->value_done = true;
			return;
		}
		if (was_attr) {
			/* Attributes are not elements of the aggregate around them. */
			return;
		}
		struct level *l = &d->stack[d->depth - 1];
		if (--l->left > 0)
			return;
		was_attr = l->attr;
		d->depth--;
	}
}

static void begin_value(struct rdir *d, const struct l7_framer *f)
{
	if (d->in_value)
		return;
	d->in_value = true;
	d->bytes = 0;
	d->start = f->bytes - f->len;   /* (a split token's head is in f->bytes already) */
	d->ts = f->msg_ts;
	d->argc = d->argi = 0;
	d->name[0] = 0;
	d->reply[0] = 0;
	d->is_error = d->is_push = d->first_elem_pending = false;
}

static void summarize(struct rdir *d, uint8_t t, const uint8_t *line, size_t n)
{
	size_t k;

	if (d->reply[0])
		return;
	d->reply[0] = (char)t;
	if (t == '-') {
		/* "-ERR message": the first word, like tshark's view. */
		for (k = 0; k < n && line[k] != ' ' && k < sizeof(d->reply) - 2; k++)
			d->reply[1 + k] = (char)line[k];
		d->reply[1 + k] = 0;
		return;
	}
	k = l7_min(n, sizeof(d->reply) - 2);
	memcpy(d->reply + 1, line, k);
	d->reply[1 + k] = 0;
	for (size_t i = 1; i <= k; i++)
		if ((unsigned char)d->reply[i] < 0x20)
			d->reply[i] = '?';
}

/* An inline command: words separated by blanks.  Returns the bytes it takes. */
static ssize_t inline_command(struct rdir *d, const uint8_t *p, size_t line, size_t hdr)
{
	size_t i = 0, s;

	while (i < line && (p[i] == ' ' || p[i] == '\t'))
		i++;
	s = i;
	while (i < line && p[i] != ' ' && p[i] != '\t')
		i++;
	if (i == s) {
		d->in_value = false;
		return (ssize_t)hdr;   /* empty line: ignored by servers too */
	}
	set_name(d, p + s, i - s);
	d->argc = 1;
	while (i < line) {
		while (i < line && (p[i] == ' ' || p[i] == '\t'))
			i++;
		if (i < line)
			d->argc++;
		while (i < line && p[i] != ' ' && p[i] != '\t')
			i++;
	}
	d->value_done = true;
	return (ssize_t)hdr;
}

/* A bulk string ($ = !) of v bytes (-1 = null), whose first `want` bytes are at p + hdr. */
static ssize_t bulk(struct rdir *d, bool req, bool top, uint8_t t, int64_t v, const uint8_t *p, size_t hdr,
		    size_t want)
{
	if (top) {
		char tmp[24];
		size_t k = v < 0 ? 2 : l7_fmt_u64(tmp, (uint64_t)v);
		summarize(d, t, (const uint8_t *)(v < 0 ? "-1" : tmp), k);
		d->is_error = t == '!';
	}
	if (req) {
		if (d->argi++ == 0)
			set_name(d, p + hdr, want);
	} else if (d->first_elem_pending) {
		d->first_elem_pending = false;
		if ((v == 7 && !memcmp(p + hdr, "message", 7)) || (v == 8 && !memcmp(p + hdr, "pmessage", 8)) ||
		    (v == 8 && !memcmp(p + hdr, "smessage", 8)))
			d->is_push = true;
	}
	value_done(d, false);
	return v < 0 ? (ssize_t)hdr : (ssize_t)(hdr + (uint64_t)v + 2);
}

/* An aggregate (* % ~ > |) header: its elements follow as tokens of their own. */
static ssize_t aggregate(struct rdir *d, bool req, bool top, uint8_t t, const uint8_t *p, size_t line, size_t hdr)
{
	int64_t v, n;

	if (!parse_int(p + 1, line - 1, &v) || v < -1 || v > REDIS_MAX_ELEMS)
		return -EPROTO;
	if (req && (t != '*' || d->depth))
		return -EPROTO;
	n = (t == '%' || t == '|') && v > 0 ? v * 2 : v;
	if (top && t == '|')
		d->top_attr = true;
	if (!req && !d->depth && t != '|') {
		summarize(d, t, p + 1, line - 1);
		d->is_push = t == '>';
		d->first_elem_pending = t == '*' && v > 0;
	} else if (d->first_elem_pending) {
		d->first_elem_pending = false;
	}
	if (req)
		d->argc = v;
	if (n <= 0) {
		value_done(d, t == '|');
		return (ssize_t)hdr;
	}
	if (d->depth == REDIS_MAX_DEPTH)
		return -EPROTO;
	d->stack[d->depth].left = n;
	d->stack[d->depth].attr = t == '|';
	d->depth++;
	return (ssize_t)hdr;
}

static ssize_t frame_token(struct redis *r, struct l7_framer *f, const uint8_t *p, size_t avail, size_t *need)
{
	struct rdir *d = &r->d[f->tag];
	const uint8_t *nl;
	size_t line, hdr, want = 0;
	int64_t v = 0;
	uint8_t t;
	bool top, req = f->tag == L7_DIR_REQ;

	nl = memchr(p, '\n', l7_min(avail, REDIS_MAX_LINE));
	if (!nl) {
		if (avail >= REDIS_MAX_LINE)
			return -EPROTO;
		*need = avail + 1;
		return 0;
	}
	hdr = (size_t)(nl - p) + 1;                 /* line with its terminator */
	line = hdr - 1 - (hdr >= 2 && nl[-1] == '\r');
	t = p[0];
	top = !d->in_value;

	if (t == '$' || t == '=' || t == '!') {
		if (!parse_int(p + 1, line - 1, &v) || v < -1 || v > REDIS_MAX_BULK)
			return -EPROTO;
		if (req && d->depth != 1)
			return -EPROTO;   /* commands are flat arrays of bulk strings */
		/* Look into the body when it names the command or a pub/sub push. */
		if (v > 0 && req && d->argi == 0)
			want = l7_min((size_t)v, REDIS_NAME_MAX);
		else if (v > 0 && !req && d->first_elem_pending)
			want = l7_min((size_t)v, 16);
		if (avail < hdr + want) {
			*need = hdr + want;
			return 0;
		}
	}
	/* From here on the token is complete: state may change.  Its line and `want` are all it reads. */
	f->used = hdr + want;
	begin_value(d, f);
	if (req && top && t != '*')
		return inline_command(d, p, line, hdr);
	switch (t) {
	case '$':
	case '=':
	case '!':
		return bulk(d, req, top, t, v, p, hdr, want);
	case '*':
	case '%':
	case '~':
	case '>':
	case '|':
		return aggregate(d, req, top, t, p, line, hdr);
	case '+':
	case '-':
	case ':':
	case '_':
	case '#':
	case ',':
	case '(':
		if (req)
			return -EPROTO;
		if (!d->depth) {
			summarize(d, t, p + 1, line - 1);
			d->is_error = t == '-';
		}
		d->first_elem_pending = false;
		value_done(d, false);
		return (ssize_t)hdr;
	default:
		return -EPROTO;
	}
}

static ssize_t redis_frame(void *ctx, struct l7_framer *f, const uint8_t *p, size_t avail, size_t *need)
{
	struct redis *r = ctx;
	ssize_t n = frame_token(r, f, p, avail, need);

	if (n > 0)
		r->d[f->tag].bytes += (uint64_t)n;
	return n;
}

static int redis_end(void *ctx, struct l7_framer *f)
{
	struct redis *r = ctx;
	struct rdir *d = &r->d[f->tag];
	struct pend *e;

	if (!d->value_done)
		return 0;
	d->value_done = false;
	d->in_value = false;
	if (f->tag == L7_DIR_REQ) {
		if (!d->name[0])
			return 0;
		if (!(e = l7_pendq__push(&r->base.q)))
			return r->base.fatal = -ENOBUFS;
		e->ts = d->ts;
		e->end_ts = f->ts;
		e->seq = ++r->nreq;
		e->req_bytes = d->bytes;
		memcpy(e->name, d->name, sizeof(e->name));
		e->need = is_sub(d->name) && d->argc > 2 ? d->argc - 1 : 1;
		return 0;
	}
	{
		uint64_t bytes = d->bytes;

		if (d->is_push) {
			struct pend push = { .got = true, .resp_ts = f->ts, .resp_bytes = bytes };
			memcpy(push.name, "(push)", 7);
			memcpy(push.reply, d->reply, sizeof(push.reply));
			emit_rec(r, &push, false);
			return 0;
		}
		e = l7_pendq__at(&r->base.q, 0);
		if (!e) {
			struct pend orphan = { .got = true, .resp_ts = f->ts, .resp_bytes = bytes, .is_error = d->is_error,
					       .req_gap = r->base.req_lost };
			memcpy(orphan.reply, d->reply, sizeof(orphan.reply));
			emit_rec(r, &orphan, false);
			return 0;
		}
		if (!e->got) {
			e->got = true;
			e->resp_ts = f->ts;
			e->is_error = d->is_error;
			memcpy(e->reply, d->reply, sizeof(e->reply));
		}
		e->resp_bytes += bytes;
		if (--e->need <= 0) {
			emit_rec(r, e, true);
			l7_pendq__remove(&r->base.q, 0);
		}
	}
	return 0;
}

static const struct l7_framer_ops redis_fops = { .frame = redis_frame, .end = redis_end };

/* Commands still waiting at the close: reported with whatever reply they got. */
static void redis_unanswered(void *st, void *e)
{
	emit_rec(st, e, true);
}

/*
 * A gap cut the replies, and the client sent again: the oldest command's
 * reply was in progress (summarised by what came before the gap), the
 * later ones' (pipelined) went by in the gap.
 */
static int redis_cut(void *st, uint64_t ts)
{
	struct redis *r = st;
	struct rdir *d = &r->d[L7_DIR_RESP];
	const struct l7_framer *f = &r->base.fr[L7_DIR_RESP];
	bool head = d->in_value;
	struct pend *e;

	while ((e = l7_pendq__at(&r->base.q, 0))) {
		if (!e->got) {
			e->got = true;
			e->is_error = head && d->is_error;
			if (head)
				memcpy(e->reply, d->reply, sizeof(e->reply));
			else
				memcpy(e->reply, "?", 2);   /* the gap took the reply from its first byte */
		}
		e->resp_ts = ts;
		e->cut = true;
		if (head)
			e->resp_bytes += f->bytes - d->start;
		emit_rec(r, e, true);
		l7_pendq__remove(&r->base.q, 0);
		head = false;
	}
	memset(d, 0, sizeof(*d));
	return 0;
}

/* The client writes again after a gap in its commands: read them afresh. */
static int redis_req_resume(void *st)
{
	struct redis *r = st;

	memset(&r->d[L7_DIR_REQ], 0, sizeof(r->d[L7_DIR_REQ]));
	return 0;
}

/* A decimal length "N\r\n" at p[0..n): 1 read (*v, *used), 0 cut by the end, -1 not one. */
static int crlf_len(const uint8_t *p, size_t n, int64_t *v, size_t *used)
{
	size_t i = 0;

	*v = 0;
	while (i < n && p[i] >= '0' && p[i] <= '9') {
		if (i == 10)
			return -1;
		*v = *v * 10 + (p[i++] - '0');
	}
	if (i == n || (i + 1 == n && p[i] == '\r'))
		return i < 11 ? 0 : -1;
	if (!i || p[i] != '\r' || p[i + 1] != '\n')
		return -1;
	*used = i + 2;
	return 1;
}

static bool is_inline_cmd(const uint8_t *d, size_t len);

/*
 * After a gap in the client's commands: does this chunk start at one?
 * Every command up to the chunk's end must be a well-formed array of bulk
 * strings ("*N\r\n" then N "$L\r\n" + L bytes + "\r\n"), or the chunk
 * an inline command.
 */
static bool redis_req_start(const uint8_t *p, size_t len)
{
	size_t off = 0, u;
	int64_t argc, l;
	int r;

	if (len && p[0] != '*')
		return is_inline_cmd(p, len);
	while (off < len) {
		if (p[off] != '*')
			return false;
		off++;
		if ((r = crlf_len(p + off, len - off, &argc, &u)) <= 0)
			return r == 0;
		if (argc < 1)
			return false;
		off += u;
		for (int64_t i = 0; i < argc; i++) {
			if (off == len)
				return true;
			if (p[off] != '$')
				return false;
			off++;
			if ((r = crlf_len(p + off, len - off, &l, &u)) <= 0)
				return r == 0;
			off += u;
			if ((uint64_t)l + 2 > len - off)
				return (uint64_t)l >= len - off || (len - off == (size_t)l + 1 && p[len - 1] == '\r');
			if (p[off + l] != '\r' || p[off + l + 1] != '\n')
				return false;
			off += (size_t)l + 2;
		}
	}
	return off > 0;
}

/*
 * After a cut: does this chunk of the server's bytes start at a reply?  Its
 * first token must be one: a type byte, then a length ("$3", "*-1") or, for
 * the simple types, a line without CR or LF, ending in CRLF or at the
 * chunk's end.
 */
static bool redis_resp_start(const uint8_t *p, size_t len)
{
	int64_t v;
	size_t u;

	if (!len)
		return false;
	switch (p[0]) {
	case '$': case '!': case '=': case '*': case '%': case '~': case '>': case '|':
		if (len > 2 && p[1] == '-')
			return p[2] == '1' && (len == 3 || p[3] == '\r');
		return crlf_len(p + 1, len - 1, &v, &u) >= 0;
	case '+': case '-': case ':': case '_': case '#': case ',': case '(':
		for (size_t i = 1; i < len && i < REDIS_MAX_LINE; i++) {
			if (p[i] == '\r')
				return i + 1 == len || p[i + 1] == '\n';
			if (p[i] == '\n')
				return false;
		}
		return true;
	default:
		return false;
	}
}

static const struct l7_framed_spec redis_spec = {
	.fops = &redis_fops,
	.state_size = sizeof(struct redis),
	.entry_size = sizeof(struct pend),
	.resync = false,   /* FIFO pairing */
	.unanswered = redis_unanswered,
	.cut = redis_cut,
	.req_resume = redis_req_resume,
	.req_start = redis_req_start,
	.resp_start = redis_resp_start,
	.heads = true,
};

static void *redis_create(const struct l7_config *cfg, l7_emit_fn emit, void *emit_ctx)
{
	return l7_framed__new(&redis_spec, cfg, emit, emit_ctx);
}

/* Commands worth recognising inline (redis-cli, redis-benchmark, telnet). */
static const char *const inline_cmds[] = {
	"PING", "AUTH", "SET", "GET", "DEL", "INCR", "DECR", "INFO", "KEYS", "EXISTS", "EXPIRE", "TTL",
	"SELECT", "HELLO", "QUIT", "MGET", "MSET", "LPUSH", "RPUSH", "LPOP", "RPOP", "LRANGE", "SADD",
	"SPOP", "HSET", "HGET", "HGETALL", "ZADD", "ZRANGE", "SUBSCRIBE", "PUBLISH", "CLIENT", "CONFIG",
	"MONITOR", "FLUSHALL", "FLUSHDB", "DBSIZE", "SCAN", "ECHO", "XADD", "XRANGE", "EVAL", "MULTI", "EXEC",
};

static bool digits_crlf(const uint8_t *d, size_t len, size_t *end)
{
	size_t i = 0;

	if (i < len && d[i] == '-')
		i++;
	if (i >= len || d[i] < '0' || d[i] > '9')
		return false;
	while (i < len && d[i] >= '0' && d[i] <= '9' && i < 12)
		i++;
	if (i + 1 >= len || d[i] != '\r' || d[i + 1] != '\n')
		return false;
	*end = i + 2;
	return true;
}

/* An inline command we know, by its first word ("GET k\r\n"), and not HTTP or RTSP. */
static bool is_inline_cmd(const uint8_t *d, size_t len)
{
	const uint8_t *nl = memchr(d, '\n', len);
	size_t w = 0;

	while (w < len && ((d[w] >= 'A' && d[w] <= 'Z') || (d[w] >= 'a' && d[w] <= 'z')))
		w++;
	if (!nl || !w || w >= 16 || (d[w] != ' ' && d[w] != '\r' && d[w] != '\n'))
		return false;
	if (memmem(d, (size_t)(nl - d), "HTTP/", 5) || memmem(d, (size_t)(nl - d), "RTSP/", 5))
		return false;
	for (size_t i = 0; i < sizeof(inline_cmds) / sizeof(inline_cmds[0]); i++)
		if (strlen(inline_cmds[i]) == w && !strncasecmp((const char *)d, inline_cmds[i], w))
			return true;
	return false;
}

static int redis_detect(const uint8_t *d, size_t len, enum l7_dir dir, uint16_t port)
{
	int score = 0;
	size_t e;

	if (len < 3)
		return 0;
	if (dir == L7_DIR_REQ) {
		if (d[0] == '*' && digits_crlf(d + 1, len - 1, &e) && d[1] != '-' && 1 + e < len && d[1 + e] == '$') {
			size_t e2;
			score = digits_crlf(d + 2 + e, len - 2 - e, &e2) ? 85 : 60;
		} else if (is_inline_cmd(d, len)) {
			score = 40;
		}
	} else {
		switch (d[0]) {
		case '+': {
			const uint8_t *nl = memchr(d, '\n', len);
			if (nl && nl > d + 1 && nl[-1] == '\r' && (nl - d) < 256)
				score = (len == 5 && !memcmp(d, "+OK\r\n", 5)) || !memcmp(d, "+PONG\r\n", l7_min(len, 7)) ? 40 : 25;
			break;
		}
		case '-':
			if (len > 4 && d[1] >= 'A' && d[1] <= 'Z' && memchr(d, '\n', len) &&
			    (!memcmp(d + 1, "ERR", 3) || !memcmp(d + 1, "WRONG", l7_min(5, len - 1)) ||
			     !memcmp(d + 1, "NOAUTH", l7_min(6, len - 1)) || !memcmp(d + 1, "MOVED", l7_min(5, len - 1))))
				score = 60;
			break;
		case ':':
		case '$':
			if (digits_crlf(d + 1, len - 1, &e))
				score = 35;
			break;
		case '*':
		case '%':
		case '~':
		case '>':
			if (digits_crlf(d + 1, len - 1, &e) && 1 + e < len && memchr("$*:+-%~_#,(=!", d[1 + e], 13))
				score = 45;
			break;
		default:
			break;
		}
	}
	if (score && port == 6379)
		score = score + 10 > 100 ? 100 : score + 10;
	return score;
}

const struct l7_parser_ops l7_redis_ops = {
	.name = "redis",
	.detect = redis_detect,
	.create = redis_create,
	.feed = l7_framed__feed,
	.gap = l7_framed__gap,
	.head = l7_framed__head,
	.finish = l7_framed__finish,
	.free = l7_framed__free,
	.dropped = l7_framed__discarded,   /* chunks discarded while resynchronising */
};
