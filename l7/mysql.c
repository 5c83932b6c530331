/*
 * MySQL client/server protocol (classic protocol 4.1+).
 *
 * Packets are [len:3 LE][seq:1][payload]; a payload of exactly 0xffffff bytes
 * continues in the next packet.  A command is a client packet with seq 0;
 * its response packets carry seq 1, 2, ...  The handshake (server greeting,
 * handshake response, auth switch / more-data rounds) becomes one LOGIN
 * exchange whose result is the first OK or ERR, as tshark reports it; an SSL
 * request or the compressed protocol make the rest unreadable (-EPROTO).
 *
 * Responses: OK / ERR / EOF, result sets (column count, column definitions,
 * optional EOF, rows until an EOF or OK terminator, repeated while the
 * status says more results exist), COM_STMT_PREPARE's parameter and column
 * definitions, COM_FIELD_LIST's definitions.  Whether EOF packets are
 * deprecated is learned from the handshake, or from the first result set
 * when the capture starts mid-connection.
 *
 * Latency runs to the response's first packet, as tshark times it: a login
 * goes on with auth-switch round trips that wait on the client, and a long
 * result set is written in 16 KB calls.
 *
 * Pairing is FIFO: the classic protocol has no request ids, so a gap
 * outside a discarded row body is resolved at the client's next turn (live
 * data: a large result set is written in calls seen only in part).  A gap
 * in the responses: the client's next command closes the commands
 * outstanding, the oldest with the result its first packet gave and no row
 * count, and the next response is read afresh (l7_framed_spec.cut).  A gap
 * in the commands: responses pair with the commands seen before it, those
 * beyond are counted in dropped(), and commands are read afresh at the
 * client's first write after the server's (req_resume).
 */
#include "l7/l7.h"
#include "l7/l7_framed.h"
#include "l7/l7_util.h"

#include <errno.h>
#include <string.h>

#define MYSQL_MAX_PKT     0xffffffu
#define CLIENT_PROTOCOL_41 0x00000200u
#define CLIENT_SSL         0x00000800u
#define CLIENT_COMPRESS    0x00000020u
#define CLIENT_DEPRECATE_EOF 0x01000000u
#define CLIENT_QUERY_ATTRIBUTES 0x08000000u
#define SERVER_MORE_RESULTS 0x0008u

#define CMD_LOGIN 0x100   /* pseudo command: the handshake response */

enum {
	COM_QUIT = 0x01, COM_INIT_DB = 0x02, COM_QUERY = 0x03, COM_FIELD_LIST = 0x04,
	COM_STATISTICS = 0x09, COM_PING = 0x0e, COM_CHANGE_USER = 0x11, COM_BINLOG_DUMP = 0x12,
	COM_STMT_PREPARE = 0x16, COM_STMT_EXECUTE = 0x17, COM_STMT_SEND_LONG_DATA = 0x18,
	COM_STMT_CLOSE = 0x19, COM_STMT_RESET = 0x1a, COM_STMT_FETCH = 0x1c,
	COM_BINLOG_DUMP_GTID = 0x1e, COM_RESET_CONNECTION = 0x1f,
};

static const char *const cmd_names[] = {
	"SLEEP", "QUIT", "INIT_DB", "QUERY", "FIELD_LIST", "CREATE_DB", "DROP_DB", "REFRESH",
	"SHUTDOWN", "STATISTICS", "PROCESS_INFO", "CONNECT", "PROCESS_KILL", "DEBUG", "PING",
	"TIME", "DELAYED_INSERT", "CHANGE_USER", "BINLOG_DUMP", "TABLE_DUMP", "CONNECT_OUT",
	"REGISTER_SLAVE", "STMT_PREPARE", "STMT_EXECUTE", "STMT_SEND_LONG_DATA", "STMT_CLOSE",
	"STMT_RESET", "SET_OPTION", "STMT_FETCH", "DAEMON", "BINLOG_DUMP_GTID", "RESET_CONNECTION",
};

enum conn_state { CS_START, CS_GREETED, CS_AUTH, CS_CMD };
enum eof_mode { EOF_UNKNOWN, EOF_CLASSIC, EOF_DEPRECATED };
enum phase {
	PH_FIRST,      /* waiting for the first response packet */
	PH_AUTH,       /* login: auth switch / more data until OK or ERR */
	PH_COLDEFS,    /* result set column definitions */
	PH_AFTER_COLS, /* EOF separator (classic) or first row / terminator */
	PH_ROWS,
	PH_DEFS,       /* STMT_PREPARE parameter + column definitions */
	PH_FIELDS,     /* COM_FIELD_LIST definitions until EOF */
	PH_INFILE,     /* LOCAL INFILE: client sends the file, then OK / ERR */
};

struct pend {
	uint64_t ts, end_ts, req_bytes, rseq;   /* first and last byte (0 while incomplete) */
	uint16_t cmd;
	uint8_t seq;          /* seq of the command's last packet */
	uint16_t arg_len;
	char arg[L7_FIELD_MAX];
};

struct mysql {
	struct l7_framed base;  /* first: framers, pending commands, memory, error
	                         * (-EPROTO for TLS or compression, -ENOBUFS) */
	enum conn_state cs;
	enum eof_mode eof;
	uint32_t server_caps;
	int qattr;             /* query attributes negotiated: 1 yes, 0 no, -1 unknown */
	bool cont[2];          /* last packet of the direction was 0xffffff long */
	/* Response to the head of q in progress. */
	enum phase ph;
	uint8_t next_seq;
	uint64_t left;         /* definitions still expected */
	uint64_t rows;
	uint64_t resp_bytes;
	uint64_t resp_start;   /* byte offset of its first packet in the direction */
	uint64_t resp1_ts;     /* its first packet completed (0: not yet) */
	bool absorb_eof;       /* a trailing EOF of an already emitted response may follow */
	uint8_t absorb_seq;
	bool done;             /* emit at the end of the current packet */
	bool have_result;
	bool is_error;
	bool cut;              /* the response was cut by a gap: its row count is unknown */
	int32_t status;
	char result[32];
	char errmsg[L7_FIELD_MAX];
	/* Request emitted without response (QUIT, STMT_CLOSE...) at packet end. */
	bool noresp_pending;
	struct pend noresp;
	size_t prefix;
	uint64_t nreq;         /* requests seen: their order for req_seq */
	uint64_t dropped;      /* response packets nobody asked for */
};

static void emit_rec(struct mysql *m, const struct pend *p, bool has_resp, uint64_t resp_ts)
{
	struct l7_record rec;
	const char *name;
	char tmp[16];

	l7_record__init(&rec, "mysql");
	l7_rec_req(&rec, p->ts, p->end_ts, p->req_bytes, p->rseq);
	if (p->cmd == CMD_LOGIN) {
		name = "LOGIN";
	} else if (p->cmd < sizeof(cmd_names) / sizeof(cmd_names[0])) {
		name = cmd_names[p->cmd];
	} else {
		memcpy(tmp, "COM_", 4);
		l7_fmt_u64(tmp + 4, p->cmd);
		name = tmp;
	}
	l7_rec_str(&rec, "command", name);
	/* COM_FIELD_LIST names a table: not an "argument" in tshark's sense (oracle.sh). */
	if (p->arg_len)
		l7_rec_text(&rec, p->cmd == COM_FIELD_LIST ? "table" : "argument", p->arg, p->arg_len);
	if (has_resp) {
		l7_rec_resp(&rec, resp_ts, m->resp_bytes);
		rec.status = m->status;
		rec.is_error = m->is_error;
		if (m->have_result)
			l7_rec_str(&rec, "result", m->result);
		if (!m->cut && (m->rows || !strcmp(m->result, "RESULTSET")))
			l7_rec_u64(&rec, "rows", m->rows);
		if (m->is_error && m->errmsg[0])
			l7_rec_str(&rec, "error_message", m->errmsg);
		if (m->cut)
			l7_rec_str(&rec, "gap", "response");
	}
	l7_framed__emit(&m->base, &rec);
}

static void resp_reset(struct mysql *m)
{
	m->ph = PH_FIRST;
	m->left = m->rows = m->resp_bytes = 0;
	m->done = m->have_result = m->is_error = m->cut = false;
	m->resp1_ts = 0;
	m->status = -1;
	m->result[0] = m->errmsg[0] = 0;
}

static void set_result(struct mysql *m, const char *r)
{
	if (m->have_result)
		return;
	m->have_result = true;
	strncpy(m->result, r, sizeof(m->result) - 1);
	m->result[sizeof(m->result) - 1] = 0;
}

/* Length-encoded integer at p[0..n): bytes used, 0 when truncated or NULL (0xfb). */
static size_t lenenc(const uint8_t *p, size_t n, uint64_t *v)
{
	if (!n)
		return 0;
	if (p[0] < 0xfb) {
		*v = p[0];
		return 1;
	}
	if (p[0] == 0xfc && n >= 3) {
		*v = l7_le16(p + 1);
		return 3;
	}
	if (p[0] == 0xfd && n >= 4) {
		*v = l7_le24(p + 1);
		return 4;
	}
	if (p[0] == 0xfe && n >= 9) {
		*v = l7_le64(p + 1);
		return 9;
	}
	return 0;
}

static void parse_err(struct mysql *m, const uint8_t *p, size_t n)
{
	char tmp[24];
	size_t off = 3;

	m->is_error = true;
	if (n >= 3) {
		m->status = l7_le16(p + 1);
		memcpy(tmp, "ERR:", 4);
		l7_fmt_u64(tmp + 4, (uint64_t)m->status);
		set_result(m, tmp);
	} else {
		set_result(m, "ERR");
	}
	if (n > off && p[off] == '#')
		off += 6;
	if (n > off)
		memcpy(m->errmsg, p + off, l7_min(n - off, sizeof(m->errmsg) - 1)),
		m->errmsg[l7_min(n - off, sizeof(m->errmsg) - 1)] = 0;
}

/* Status flags of an OK packet (0x00 or 0xfe header) or of a 5-byte EOF. */
static uint16_t term_status(const uint8_t *p, size_t n, uint32_t plen)
{
	uint64_t v;
	size_t off = 1, k;

	if (p[0] == 0xfe && plen < 9)
		return n >= 5 ? l7_le16(p + 3) : 0;
	if (!(k = lenenc(p + off, n - off, &v)))
		return 0;
	off += k;
	if (!(k = lenenc(p + off, n - off, &v)))
		return 0;
	off += k;
	return n >= off + 2 ? l7_le16(p + off) : 0;
}

static bool is_eof(const uint8_t *p, size_t n, uint32_t plen)
{
	return n >= 1 && p[0] == 0xfe && plen < 9;
}

/* 0xfe packet that ends a row stream: EOF, or OK with 0xfe header (deprecated EOF). */
static bool is_terminator(const uint8_t *p, size_t n, uint32_t plen)
{
	return n >= 1 && p[0] == 0xfe && plen < MYSQL_MAX_PKT;
}

static void finish_resp(struct mysql *m)
{
	m->done = true;
}

static void client_packet(struct mysql *m, const uint8_t *p, size_t n, uint32_t plen, uint8_t seq, uint64_t total)
{
	struct pend *e;
	uint16_t cmd;
	size_t off;

	if (m->cs == CS_AUTH || (m->cs == CS_CMD && seq != 0) || (m->cs == CS_START && seq != 0 && seq != 1)) {
		/* Auth data, LOCAL INFILE contents, CHANGE_USER auth rounds: part of the open exchange. */
		if ((e = l7_pendq__at(&m->base.q, 0)))
			e->req_bytes += total;
		return;
	}
	if (m->cs == CS_GREETED || (m->cs == CS_START && seq == 1)) {
		uint32_t caps;

		if (n < 4)
			return;
		caps = l7_le32(p);
		if (m->cs == CS_START && (!(caps & CLIENT_PROTOCOL_41) || n < 33))
			return;
		if (caps & CLIENT_PROTOCOL_41 && plen == 32 && (caps & CLIENT_SSL)) {
			m->base.fatal = -EPROTO;   /* SSL request: the rest is TLS */
			return;
		}
		if (m->server_caps & caps & CLIENT_COMPRESS) {
			m->base.fatal = -EPROTO;   /* compressed protocol */
			return;
		}
		if (!(e = l7_pendq__push(&m->base.q))) {
			m->base.fatal = -ENOBUFS;
			return;
		}
		e->cmd = CMD_LOGIN;
		e->rseq = ++m->nreq;
		e->ts = m->base.fr[L7_DIR_REQ].msg_ts;
		e->req_bytes = total;
		e->seq = seq;
		m->cs = CS_AUTH;
		off = caps & CLIENT_PROTOCOL_41 ? 32 : 5;
		if (m->server_caps)
			m->qattr = !!(caps & m->server_caps & CLIENT_QUERY_ATTRIBUTES);
		if (caps & m->server_caps & CLIENT_DEPRECATE_EOF)
			m->eof = EOF_DEPRECATED;
		else if (m->server_caps)
			m->eof = EOF_CLASSIC;
		if (n > off) {
			const uint8_t *z = memchr(p + off, 0, n - off);
			size_t ulen = z ? (size_t)(z - (p + off)) : n - off;
			e->arg_len = (uint16_t)l7_min(ulen, l7_min(m->base.cfg.max_query_len, L7_FIELD_MAX - 1));
			memcpy(e->arg, p + off, e->arg_len);
		}
		return;
	}
	/* A command. */
	if (n < 1)
		return;
	m->cs = CS_CMD;
	cmd = p[0];
	if (cmd == COM_QUIT || cmd == COM_STMT_CLOSE || cmd == COM_STMT_SEND_LONG_DATA) {
		e = &m->noresp;
		memset(e, 0, offsetof(struct pend, arg));
		m->noresp_pending = true;
	} else if (!(e = l7_pendq__push(&m->base.q))) {
		m->base.fatal = -ENOBUFS;
		return;
	}
	e->cmd = cmd;
	e->ts = m->base.fr[L7_DIR_REQ].msg_ts;
	e->req_bytes = total;
	e->rseq = ++m->nreq;
	e->seq = seq;
	e->arg_len = 0;
	switch (cmd) {
	case COM_QUERY:
	case COM_STMT_PREPARE:
	case COM_INIT_DB:
	case COM_FIELD_LIST:
	case COM_CHANGE_USER: {
		size_t alen = n - 1, skip = 0;
		const uint8_t *z;

		/*
		 * With query attributes (MySQL 8.0.23+) COM_QUERY starts with a
		 * parameter count and a parameter set count; mid-connection we
		 * recognise the usual "no attributes" form 00 01.
		 */
		if (cmd == COM_QUERY && (m->qattr == 1 || (m->qattr < 0 && n >= 3 && p[1] == 0 && p[2] == 1))) {
			uint64_t pc = 0, sc = 0;
			size_t k1 = lenenc(p + 1, n - 1, &pc), k2 = k1 ? lenenc(p + 1 + k1, n - 1 - k1, &sc) : 0;

			if (!k1 || !k2 || pc)
				alen = 0;   /* attribute values precede the text: not worth decoding */
			else
				skip = k1 + k2;
			alen = alen ? alen - skip : 0;
		}
		p += skip;

		if (cmd == COM_FIELD_LIST || cmd == COM_CHANGE_USER) {
			z = memchr(p + 1, 0, n - 1);
			if (z)
				alen = (size_t)(z - (p + 1));
		}
		e->arg_len = (uint16_t)l7_min(alen, l7_min(m->base.cfg.max_query_len, L7_FIELD_MAX - 1));
		memcpy(e->arg, p + 1, e->arg_len);
		break;
	}
	case COM_STMT_EXECUTE:
	case COM_STMT_CLOSE:
	case COM_STMT_SEND_LONG_DATA:
	case COM_STMT_RESET:
	case COM_STMT_FETCH:
		if (n >= 5)
			e->arg_len = (uint16_t)l7_fmt_u64(e->arg, l7_le32(p + 1));
		break;
	}
	if (cmd == COM_CHANGE_USER)
		m->cs = CS_CMD;
}

/* The server's greeting: its capabilities tell the EOF style of what follows. */
static void greeting(struct mysql *m, const uint8_t *p, size_t n)
{
	/* Version string, thread id, scramble, capabilities. */
	const uint8_t *z = memchr(p + 1, 0, n - 1);
	size_t off;

	m->cs = CS_GREETED;
	if (z) {
		off = (size_t)(z - p) + 1 + 4 + 8 + 1;
		if (n >= off + 2)
			m->server_caps = l7_le16(p + off);
		if (n >= off + 2 + 1 + 2 + 2)
			m->server_caps |= (uint32_t)l7_le16(p + off + 5) << 16;
	}
}

/* A login's (or COM_CHANGE_USER's) answers: OK or ERR end it; auth switches go on. */
static void auth_packet(struct mysql *m, const uint8_t *p, size_t n, uint32_t plen)
{
	if (p[0] == 0x00 && plen >= 7) {
		set_result(m, "OK");
		m->status = 0;
		m->cs = CS_CMD;
		finish_resp(m);
	} else if (p[0] == 0xff) {
		parse_err(m, p, n);
		m->cs = CS_CMD;
		finish_resp(m);
	}
	/* 0xfe auth switch, 0x01 more data: the login goes on. */
}

/* COM_STMT_PREPARE's OK: the column and parameter definitions follow. */
static void prepare_ok(struct mysql *m, const uint8_t *p, size_t n)
{
	set_result(m, "OK");
	m->status = 0;
	if (n >= 9) {
		uint64_t cols = l7_le16(p + 5), params = l7_le16(p + 7);
		m->left = cols + params;
		/* Classic mode puts an EOF after each non-empty block. */
		if (m->eof == EOF_CLASSIC)
			m->left += (cols > 0) + (params > 0);
	}
	if (!m->left)
		finish_resp(m);
	else
		m->ph = PH_DEFS;
}

/* The first packet of a response: a whole answer (OK, ERR, EOF) or the head of a longer one. */
static void first_packet(struct mysql *m, const struct pend *e, const uint8_t *p, size_t n, uint32_t plen)
{
	uint64_t v;

	if (p[0] == 0xff) {
		parse_err(m, p, n);
		finish_resp(m);
	} else if (p[0] == 0x00 && plen >= 7 && e->cmd == COM_STMT_PREPARE) {
		prepare_ok(m, p, n);
	} else if (p[0] == 0x00 && plen >= 7) {
		set_result(m, "OK");
		m->status = 0;
		if (!(term_status(p, n, plen) & SERVER_MORE_RESULTS))
			finish_resp(m);   /* else another result follows, still PH_FIRST */
	} else if (is_eof(p, n, plen)) {
		set_result(m, "EOF");
		m->status = 0;
		finish_resp(m);
	} else if (e->cmd == COM_FIELD_LIST) {
		set_result(m, "FIELDS");
		m->ph = PH_FIELDS;
	} else if (p[0] == 0xfb && (e->cmd == COM_QUERY)) {
		set_result(m, "DATA");
		m->ph = PH_INFILE;
	} else if ((e->cmd == COM_QUERY || e->cmd == COM_STMT_EXECUTE || e->cmd == COM_STMT_FETCH) &&
		   lenenc(p, n, &v) && v > 0) {
		set_result(m, "RESULTSET");
		m->left = v;
		m->ph = PH_COLDEFS;
	} else {
		set_result(m, "DATA");
		finish_resp(m);
	}
}

/* Definitions of a prepared statement's columns and parameters. */
static void defs_packet(struct mysql *m, const uint8_t *p, size_t n, uint32_t plen)
{
	if (is_eof(p, n, plen) && m->eof != EOF_CLASSIC) {
		/* An EOF between definition blocks: the classic protocol after all. */
		m->eof = EOF_CLASSIC;
		return;
	}
	if (m->left)
		m->left--;
	if (!m->left) {
		if (m->eof == EOF_UNKNOWN) {
			m->absorb_eof = true;
			m->absorb_seq = m->next_seq;
		}
		finish_resp(m);
	}
}

/* A result set's rows, up to its terminator (and the next result set, if it says one follows). */
static void rows_packet(struct mysql *m, struct pend *e, const uint8_t *p, size_t n, uint32_t plen, uint8_t seq)
{
	if (is_terminator(p, n, plen)) {
		if (term_status(p, n, plen) & SERVER_MORE_RESULTS) {
			m->ph = PH_FIRST;
			/* Further result sets answer the same request: no seq check. */
			e->seq = seq;
			return;
		}
		finish_resp(m);
	} else if (p[0] == 0xff && plen < 0x1000) {
		parse_err(m, p, n);
		finish_resp(m);
	} else {
		m->rows++;
	}
}

static void server_packet(struct mysql *m, const uint8_t *p, size_t n, uint32_t plen, uint8_t seq, uint64_t total)
{
	struct pend *e;

	if (m->cs == CS_START && seq == 0 && n >= 2 && p[0] == 0x0a) {
		greeting(m, p, n);
		return;
	}
	if (m->absorb_eof) {
		m->absorb_eof = false;
		if (seq == m->absorb_seq && is_eof(p, n, plen)) {
			m->eof = EOF_CLASSIC;
			return;
		}
	}
	e = l7_pendq__at(&m->base.q, 0);
	if (!e) {
		m->dropped++;
		return;   /* nobody asked: a response from before the capture */
	}
	if (m->ph == PH_FIRST && e->cmd != CMD_LOGIN && e->cmd != COM_CHANGE_USER && seq != (uint8_t)(e->seq + 1)) {
		m->dropped++;
		return;   /* not the start of this request's response */
	}
	m->resp_bytes += total;
	m->next_seq = (uint8_t)(seq + 1);
	if (n < 1)
		return;
	if (m->ph == PH_FIRST && (e->cmd == CMD_LOGIN || e->cmd == COM_CHANGE_USER))
		m->ph = PH_AUTH;
	switch (m->ph) {
	case PH_FIRST:
		first_packet(m, e, p, n, plen);
		break;
	case PH_AUTH:
		auth_packet(m, p, n, plen);
		break;
	case PH_INFILE:
		if (p[0] == 0xff)
			parse_err(m, p, n), finish_resp(m);
		else if (p[0] == 0x00)
			finish_resp(m);
		break;
	case PH_FIELDS:
		if (p[0] == 0xff) {
			m->is_error = true;
			finish_resp(m);
		} else if (is_terminator(p, n, plen)) {
			finish_resp(m);
		}
		break;
	case PH_DEFS:
		defs_packet(m, p, n, plen);
		break;
	case PH_COLDEFS:
		if (p[0] == 0xff && plen < 0x100) {
			parse_err(m, p, n);
			finish_resp(m);
			break;
		}
		if (m->left)
			m->left--;
		if (!m->left)
			m->ph = PH_AFTER_COLS;
		break;
	case PH_AFTER_COLS:
		if (p[0] == 0xfe && plen < 7 && m->eof != EOF_DEPRECATED) {
			m->eof = EOF_CLASSIC;
			m->ph = PH_ROWS;
			break;
		}
		if (m->eof == EOF_UNKNOWN && !is_terminator(p, n, plen))
			m->eof = EOF_DEPRECATED;
		m->ph = PH_ROWS;
		rows_packet(m, e, p, n, plen, seq);
		break;
	case PH_ROWS:
		rows_packet(m, e, p, n, plen, seq);
		break;
	}
}

static ssize_t mysql_frame(void *ctx, struct l7_framer *f, const uint8_t *p, size_t avail, size_t *need)
{
	struct mysql *m = ctx;
	uint32_t plen;
	uint8_t seq;
	size_t want, n;
	bool cont;

	if (avail < 4) {
		*need = 4;
		return 0;
	}
	plen = l7_le24(p);
	seq = p[3];
	want = 4 + l7_min(plen, m->prefix);
	if (avail < want) {
		*need = want;
		return 0;
	}
	/* What it reads, in place or from a split packet's buffer alike: the head, up to the prefix. */
	n = want - 4;
	f->used = want;
	if (f->tag == L7_DIR_RESP && !m->resp_bytes)
		m->resp_start = f->bytes - f->len;   /* (a split packet's head is in f->bytes already) */
	cont = m->cont[f->tag];
	m->cont[f->tag] = plen == MYSQL_MAX_PKT;
	if (cont) {
		/* Continuation of a >16 MB payload: belongs to the packet before. */
		unsigned cnt = l7_pendq__count(&m->base.q);
		struct pend *e = cnt ? l7_pendq__at(&m->base.q, cnt - 1) : NULL;
		if (f->tag == L7_DIR_RESP) {
			m->resp_bytes += 4 + (uint64_t)plen;
		} else if (e) {
			e->req_bytes += 4 + (uint64_t)plen;
			e->seq = seq;   /* the response follows the last packet's seq */
		}
		return (ssize_t)(4 + (uint64_t)plen);
	}
	if (f->tag == L7_DIR_REQ) {
		/* The handshake response and auth rounds: what they need says nothing of the commands'. */
		f->opening = m->cs == CS_GREETED || m->cs == CS_AUTH || (m->cs == CS_START && seq == 1);
		client_packet(m, p + 4, n, plen, seq, 4 + (uint64_t)plen);
		if (m->base.fatal)
			return m->base.fatal;
	} else {
		struct pend *e = l7_pendq__at(&m->base.q, 0);

		/* The greeting and the login's answers. */
		f->opening = (m->cs == CS_START && seq == 0 && n >= 1 && p[4] == 0x0a) || (e && e->cmd == CMD_LOGIN);
		server_packet(m, p + 4, n, plen, seq, 4 + (uint64_t)plen);
	}
	return (ssize_t)(4 + (uint64_t)plen);
}

static int mysql_end(void *ctx, struct l7_framer *f)
{
	struct mysql *m = ctx;
	struct pend *e;

	if (f->tag == L7_DIR_REQ) {
		/* The command framed last is complete (entries are pushed as it starts). */
		e = l7_pendq__count(&m->base.q) ? l7_pendq__at(&m->base.q, l7_pendq__count(&m->base.q) - 1) : NULL;
		if (e && !e->end_ts)
			e->end_ts = f->ts;
		if (m->noresp_pending) {
			m->noresp_pending = false;
			emit_rec(m, &m->noresp, false, 0);
		}
		return 0;
	}
	if (m->resp_bytes && !m->resp1_ts)
		m->resp1_ts = f->ts;
	if (!m->done)
		return 0;
	e = l7_pendq__at(&m->base.q, 0);
	if (e) {
		emit_rec(m, e, true, m->resp1_ts);
		l7_pendq__remove(&m->base.q, 0);
	}
	resp_reset(m);
	return 0;
}

static const struct l7_framer_ops mysql_fops = {
	.frame = mysql_frame,
	.end = mysql_end,
	.sync = NULL,
};

/*
 * A command pending at the close; the head may have a partial response
 * (e.g. rows cut by the close), the others none (resp_reset() clears it).
 */
static void mysql_unanswered(void *st, void *e)
{
	struct mysql *m = st;
	bool partial = m->resp_bytes > 0;

	emit_rec(m, e, partial, m->resp1_ts ? m->resp1_ts : m->base.fr[L7_DIR_RESP].ts);
	resp_reset(m);
}

/*
 * A gap cut the responses, and the client sent again: the oldest command's
 * response was in progress (with the result its first packet gave), the
 * later ones' (pipelined) went by in the gap.
 */
static int mysql_cut(void *st, uint64_t ts)
{
	struct mysql *m = st;
	struct pend *e;

	if (m->resp_bytes)
		m->resp_bytes = m->base.fr[L7_DIR_RESP].bytes - m->resp_start;
	while ((e = l7_pendq__at(&m->base.q, 0))) {
		m->cut = true;
		emit_rec(m, e, true, m->resp1_ts ? m->resp1_ts : ts);
		l7_pendq__remove(&m->base.q, 0);
		resp_reset(m);
	}
	m->cont[L7_DIR_RESP] = false;
	m->absorb_eof = false;
	resp_reset(m);
	return 0;
}

/* The client writes again after a gap in its commands: read them afresh. */
static int mysql_req_resume(void *st)
{
	struct mysql *m = st;

	m->cont[L7_DIR_REQ] = false;
	m->noresp_pending = false;
	return 0;
}

/*
 * After a gap in the client's commands: does this chunk start at one?  A
 * command is a packet with sequence id 0 and a known command byte; every
 * packet up to the chunk's end must be one, chained end to end.
 */
static bool mysql_req_start(const uint8_t *p, size_t len)
{
	size_t off = 0;

	while (len - off >= 5) {
		uint32_t plen = l7_le24(p + off);

		if (p[off + 3] != 0 || plen < 1 || plen == MYSQL_MAX_PKT || p[off + 4] > COM_RESET_CONNECTION)
			return false;
		if (plen >= len - off - 4)
			return true;   /* it runs to the chunk's end or past it */
		off += 4 + (size_t)plen;
	}
	return off > 0;
}

/*
 * After a cut: does this chunk of the server's bytes start at a response?
 * A response's packets count their sequence ids up from 1; every packet up
 * to the chunk's end must follow the one before.
 */
static bool mysql_resp_start(const uint8_t *p, size_t len)
{
	size_t off = 0;
	uint8_t seq = 1;

	while (len - off >= 4) {
		uint32_t plen = l7_le24(p + off);

		if (p[off + 3] != seq++ || (!off && !plen))
			return false;
		if (plen >= len - off - 4)
			return true;   /* it runs to the chunk's end or past it */
		off += 4 + (size_t)plen;
	}
	return off > 0;
}

static const struct l7_framed_spec mysql_spec = {
	.fops = &mysql_fops,
	.state_size = sizeof(struct mysql),
	.entry_size = sizeof(struct pend),
	.resync = false,   /* FIFO pairing */
	.unanswered = mysql_unanswered,
	.cut = mysql_cut,
	.req_resume = mysql_req_resume,
	.req_start = mysql_req_start,
	.resp_start = mysql_resp_start,
	.heads = true,
};

static void *mysql_create(const struct l7_config *cfg, l7_emit_fn emit, void *emit_ctx)
{
	struct mysql *m = l7_framed__new(&mysql_spec, cfg, emit, emit_ctx);

	if (!m)
		return NULL;
	m->qattr = -1;
	/* Enough of a packet for the command, its argument, error texts and OK fields. */
	m->prefix = l7_min(cfg->max_query_len, L7_FIELD_MAX) + 64;
	if (m->prefix < 512)
		m->prefix = 512;
	resp_reset(m);
	return m;
}

static uint64_t mysql_dropped(const void *st)
{
	const struct mysql *m = st;
	return m->dropped;
}

static bool printable(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r') || p[i] == 0x7f)
			return false;
	return true;
}

static int mysql_detect(const uint8_t *d, size_t len, enum l7_dir dir, uint16_t port)
{
	uint32_t plen;
	uint8_t seq;
	int score = 0;

	if (len < 5)
		return 0;
	plen = l7_le24(d);
	seq = d[3];
	if (plen == 0)
		return 0;
	if (dir == L7_DIR_RESP) {
		if (seq == 0 && d[4] == 0x0a && plen >= 20 && plen < 1024) {
			/* Greeting: "5.7.33-log\0" etc. */
			size_t i = 5;
			while (i < len && i < 4 + plen && d[i] && d[i] >= 0x20 && d[i] < 0x7f)
				i++;
			if (i > 5 && i < len && d[i] == 0 && d[5] >= '0' && d[5] <= '9')
				score = 90;
		} else if (seq == 0 && d[4] == 0xff && plen >= 3 && plen < 1024 && 4 + plen == len) {
			score = 50;   /* connection refused with ERR */
		} else if (seq == 1 && d[4] == 0xff && plen >= 9 && plen < 1024 && len >= 8 && d[7] == '#') {
			score = 60;
		} else if (seq == 1 && d[4] == 0x00 && plen >= 7 && plen < 256 && 4 + plen == len) {
			score = 40;
		} else if (seq == 1 && plen == 1 && d[4] > 0 && d[4] < 0xfb && len >= 13 &&
			   d[6] == 0 && d[7] == 0 && d[8] == 2 && d[9] == 3 && !memcmp(d + 10, "def", 3)) {
			score = 75;   /* column count, then a column definition ("def" catalog) */
		}
	} else {
		size_t n = l7_min(len - 4, plen);

		if (seq == 1 && plen >= 32 && len >= 36 && (l7_le32(d + 4) & CLIENT_PROTOCOL_41)) {
			bool zero = true;
			for (size_t i = 13; i < 36; i++)
				zero &= d[i] == 0;
			if (zero)
				score = 85;
		} else if (seq == 0 && plen < (1u << 24) - 1) {
			uint8_t cmd = d[4];
			bool exact = 4 + plen == len;
			switch (cmd) {
			case COM_QUERY:
			case COM_STMT_PREPARE:
				if (cmd == COM_QUERY && n >= 4 && d[5] == 0 && d[6] == 1) {
					/* query attributes header (no attributes), then the text */
					if (printable(d + 7, n - 3))
						score = exact ? 70 : 50;
				} else if (plen >= 2 && printable(d + 5, n - 1)) {
					score = exact ? 70 : 50;
				}
				break;
			case COM_INIT_DB:
				if (plen >= 2 && plen < 256 && printable(d + 5, n - 1))
					score = exact ? 55 : 0;
				break;
			case COM_QUIT:
			case COM_PING:
			case COM_STATISTICS:
			case COM_RESET_CONNECTION:
				score = plen == 1 && exact ? 45 : 0;
				break;
			case COM_STMT_EXECUTE:
				score = plen >= 10 && len >= 10 && d[9] <= 0x0f && (exact || plen > n) ? 35 : 0;
				break;
			case COM_STMT_CLOSE:
			case COM_STMT_RESET:
				score = plen == 5 && exact ? 35 : 0;
				break;
			default:
				break;
			}
		}
	}
	if (score && port == 3306)
		score = score + 10 > 100 ? 100 : score + 10;
	return score;
}

const struct l7_parser_ops l7_mysql_ops = {
	.name = "mysql",
	.detect = mysql_detect,
	.create = mysql_create,
	.feed = l7_framed__feed,
	.gap = l7_framed__gap,
	.head = l7_framed__head,
	.finish = l7_framed__finish,
	.free = l7_framed__free,
	.dropped = mysql_dropped,
};
