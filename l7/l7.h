/*
 * L7 protocol analysis: streaming parsers over the two byte streams of one
 * connection.  Parsers see only bytes (never sockets, never pcap): today
 * `ember analyze-pcap` feeds them reassembled captures, and the same code
 * takes live socket data once network profiling feeds it.
 *
 * A parser is a table of function pointers (struct l7_parser_ops) registered by
 * name in l7/registry.c; adding a protocol touches its own file and one
 * line there.
 *
 * Ownership: the record handed to an l7_emit_fn and everything it points to is
 * valid only during the call; copy what you keep.
 */
#ifndef EMBER_L7_H
#define EMBER_L7_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>
#include <errno.h>

enum l7_dir {
	L7_DIR_REQ = 0,  /* client -> server */
	L7_DIR_RESP = 1, /* server -> client */
};

/* How a connection's bytes are framed (see l7_config.transport). */
enum l7_transport {
	L7_TRANSPORT_TCP = 0, /* byte streams: feed() gets arbitrary splits */
	L7_TRANSPORT_UDP = 1, /* datagrams: every feed() is exactly one datagram */
};

struct l7_config {
	size_t max_conn_mem;   /* per-connection buffering cap, bytes (default 256 KiB) */
	size_t max_query_len;  /* truncate query text / URIs to this (default 256) */
	size_t max_body_len;   /* HTTP body sampling cap, 0 = no bodies (default 0) */
	const char *req_encoding;  /* charset label for sampled request bodies ("UTF-8") */
	const char *resp_encoding; /* charset label for sampled response bodies ("UTF-8") */
	/*
	 * The framing of this connection (TCP by default).  The connection
	 * layer (l7_conn) hands each parser a per-connection copy.
	 */
	enum l7_transport transport;
};

#define L7_CONFIG_DEFAULTS { .max_conn_mem = 256 * 1024, .max_query_len = 256, \
	.max_body_len = 0, .req_encoding = "UTF-8", .resp_encoding = "UTF-8" }

/*
 * Protocol-specific columns.  Keys are static strings named like the columns of
 * shared/testdata/pcap/oracle.sh ("method", "uri", "status", "stream_id",
 * "qname", "qtype", "rcode", "command", "result", "api_key", "correlation_id",
 * "opcode", "request_id", ...), so JSON output lines up with the oracle.
 */
#define L7_MAX_FIELDS 12
#define L7_FIELD_MAX 256
struct l7_field {
	const char *key;
	char val[L7_FIELD_MAX]; /* NUL-terminated, truncated to fit */
};

/* One request/response exchange. */
struct l7_record {
	const char *protocol;   /* parser name: "http1", "http2", "mysql", ... */
	uint64_t req_ts_ns;     /* time of the first byte of the request, 0 if none */
	uint64_t req_end_ts_ns; /* time the request completed (its last byte), 0 = req_ts_ns */
	uint64_t resp_ts_ns;    /* time the response completed, 0 if none (unanswered) */
	uint64_t req_bytes;
	uint64_t resp_bytes;
	int32_t status;         /* protocol status (HTTP status, rcode, error code), -1 none */
	bool is_error;          /* error by the protocol's own rule (HTTP 5xx, ERR packet, rcode!=0...) */
	bool is_client_error;   /* HTTP 4xx (flagged apart from errors, as Rover does) */
	bool has_request, has_response;
	/*
	 * Order of the request within its connection (1, 2, ...; 0 = unknown):
	 * exchanges complete out of order (HTTP/2 streams, Kafka, CQL), and
	 * consumers list them in request order.
	 */
	uint64_t req_seq;
	unsigned nfields;
	struct l7_field fields[L7_MAX_FIELDS];
	/*
	 * Sampled messages (HTTP/1 only): the head as it arrived, then the body
	 * (de-chunked), up to max_body_len bytes; NULL when not captured.
	 */
	const uint8_t *req_body;  size_t req_body_len;
	const uint8_t *resp_body; size_t resp_body_len;
};

/*
 * Latency of an answered exchange: from the request's last byte to the
 * response's completion, the server's time to answer as tshark reports it
 * (a slow upload does not count).  duration adds the request's own
 * transfer: first request byte to response completion.  Both 0 when the
 * exchange is not answered.
 */
static inline uint64_t l7_record__latency_ns(const struct l7_record *r)
{
	uint64_t from = r->req_end_ts_ns ? r->req_end_ts_ns : r->req_ts_ns;

	return r->has_request && r->has_response && r->resp_ts_ns >= from ? r->resp_ts_ns - from : 0;
}

static inline uint64_t l7_record__duration_ns(const struct l7_record *r)
{
	return r->has_request && r->has_response && r->resp_ts_ns >= r->req_ts_ns ? r->resp_ts_ns - r->req_ts_ns : 0;
}

typedef void (*l7_emit_fn)(void *ctx, const struct l7_record *rec);

struct l7_parser_ops {
	const char *name;
	/*
	 * Confidence 0..100 that a direction whose stream begins with data[0..len)
	 * carries this protocol.  server_port is a hint only (0 = unknown); a
	 * parser must not claim a stream from the port alone.
	 *
	 * Scale used by l7_conn (l7/l7_conn.c): >= L7_CONF_CERTAIN
	 * decides at once (a signature that cannot be anything else, e.g.
	 * "GET / HTTP/1.1", the HTTP/2 preface); >= L7_CONF_MIN is considered
	 * once the first message of a direction is complete (the other side
	 * answered, or the detection window is full); below that, no claim.
	 * detect is called again as more bytes arrive, so return 0 rather than
	 * guess while a prefix is too short to judge.
	 */
	int (*detect)(const uint8_t *data, size_t len, enum l7_dir dir, uint16_t server_port);
	/* Per-connection state; NULL with errno set on failure. */
	void *(*create)(const struct l7_config *cfg, l7_emit_fn emit, void *emit_ctx);
	/*
	 * Bytes of one direction, in order, arbitrarily split (1-byte chunks must
	 * work).  Returns 0, or -ENOBUFS when the connection would need more than
	 * cfg->max_conn_mem (the caller marks it unparseable and counts it), or
	 * -EPROTO when the stream can no longer be parsed.
	 */
	int (*feed)(void *st, enum l7_dir dir, const uint8_t *data, size_t len, uint64_t ts_ns);
	/* len bytes of this direction were lost: resynchronise or return -EPROTO. */
	int (*gap)(void *st, enum l7_dir dir, size_t len, uint64_t ts_ns);
	/* Connection closed: emit pending exchanges (requests without response). */
	void (*finish)(void *st, uint64_t ts_ns);
	void (*free)(void *st);
	/*
	 * The parser also understands UDP datagrams (cfg->transport ==
	 * L7_TRANSPORT_UDP, one datagram per feed).  Parsers without it are
	 * never offered UDP flows.
	 */
	bool udp;
	/*
	 * Optional (NULL = none): messages this connection's parser could not
	 * use so far (malformed, unmatched, evicted...).  l7_conn adds it to
	 * l7_stats.parser_dropped when the connection ends.
	 */
	uint64_t (*dropped)(const void *st);
	/*
	 * Optional (NULL: every byte): how much of each read or write of this
	 * direction the parser needs from now on, so that live capture copies
	 * no more (bpf/net_abi.h struct net_cap).  The rest of a call comes as
	 * a gap(), which the parser must then take without losing an exchange:
	 * L7_HEAD_ALL while it cannot (it has not seen a whole head yet, bodies
	 * are sampled, a body whose length only its bytes tell; for HTTP/1, a
	 * call that carried more than one message), else the furthest point
	 * into a call of the direction so far where a byte it read lay: the
	 * end of a message head, or of the last message's when a call carries
	 * several (0: it ignores the direction, a tunnel).  A parser that finds
	 * a gap it could not take answers L7_HEAD_ALL from then on: it costs
	 * the message the gap hit (counted in dropped(), or reported cut).
	 * HTTP/1 (http1.c) and the framed parsers whose frame() says what it
	 * read (l7_framed.h: Redis, Kafka, MySQL, PostgreSQL) answer; the
	 * others need every byte.
	 */
	size_t (*head)(const void *st, enum l7_dir dir);
};

#define L7_HEAD_ALL SIZE_MAX

#define L7_CONF_CERTAIN 80
#define L7_CONF_MIN     25

/* Registry (l7/registry.c). */
const struct l7_parser_ops *l7__find(const char *name);
/* Iterate: returns NULL past the end. */
const struct l7_parser_ops *l7__at(unsigned idx);

/* Helper for parsers: append a field, truncating.  Returns 0 or -ENOSPC. */
int l7_record__add(struct l7_record *rec, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void l7_record__init(struct l7_record *rec, const char *protocol);

/*
 * Append a field from n bytes of s without printf (hot paths), truncating
 * to L7_FIELD_MAX - 1.  Returns 0 or -ENOSPC.
 */
static inline int l7_record__add_str(struct l7_record *rec, const char *key, const char *s, size_t n)
{
	struct l7_field *f;

	if (rec->nfields >= L7_MAX_FIELDS)
		return -ENOSPC;
	f = &rec->fields[rec->nfields++];
	f->key = key;
	if (n > L7_FIELD_MAX - 1)
		n = L7_FIELD_MAX - 1;
	memcpy(f->val, s, n);
	f->val[n] = 0;
	return 0;
}

/* Append an unsigned decimal field without printf. */
static inline int l7_record__add_u64(struct l7_record *rec, const char *key, uint64_t v)
{
	char buf[24];
	size_t i = sizeof(buf);

	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return l7_record__add_str(rec, key, buf + i, sizeof(buf) - i);
}

#endif
