/*
 * One connection's L7 analysis: protocol detection over the first bytes of
 * each direction, then feeding the chosen parser (l7/l7.h).
 *
 * Knows nothing about pcap or sockets: the caller delivers the bytes of each
 * direction in order (TCP already reassembled), reports lost bytes with
 * l7_conn__gap() and closes with l7_conn__finish().  Used by
 * `ember analyze-pcap` (l7/pcap_flow.c) and by the live analyzer.
 *
 * Detection: every registered parser's detect() is run on the buffered prefix
 * of both directions (and, when the caller is not sure which side is the
 * client, on the swapped assignment too).  The highest confidence wins, ties
 * by registry order; a score >= L7_CONF_CERTAIN decides at once, a score >=
 * L7_CONF_MIN once a direction's first message looks complete (the other side
 * started talking, the window is full, a gap, or finish); a gap before that
 * much evidence starts detection again after it (L7_DETECT_RESTARTS times at
 * most).  The buffered bytes
 * are then replayed into the parser in their original interleaving, with
 * their original timestamps.
 *
 * Not thread-safe: one connection (and its stats block) per thread.
 */
#ifndef EMBER_L7_CONN_H
#define EMBER_L7_CONN_H

#include "l7/l7.h"

/* Largest registry the counters cover; parsers past it count as "other". */
#define L7_STATS_MAX_PARSERS 32
/* Detection window per direction, bytes. */
#define L7_DETECT_WINDOW 2048
/* Gaps after which detection begins again before the connection counts as undetected. */
#define L7_DETECT_RESTARTS 16

/*
 * Counters shared by many connections (owned by the caller, zero it first).
 * A connection is counted in exactly one of detected[] / undetected once it
 * leaves detection; unparseable and over_memory count connections whose
 * parser gave up (they stay counted as detected).
 */
struct l7_stats {
	uint64_t conns;                              /* connections created */
	uint64_t detected[L7_STATS_MAX_PARSERS];     /* by registry index */
	uint64_t forced;                             /* parser chosen by override */
	uint64_t undetected;                         /* no parser claimed it */
	uint64_t unparseable;                        /* parser returned -EPROTO */
	uint64_t over_memory;                        /* parser returned -ENOBUFS */
	uint64_t swapped;                            /* detection swapped client/server */
	uint64_t gaps;                               /* gap() calls */
	uint64_t gap_bytes;
	uint64_t records;                            /* exchanges emitted */
	uint64_t parser_dropped;                     /* sum of ops->dropped() of ended connections */
	uint64_t ignored_bytes;                      /* bytes of undetected / dead connections */
};

enum l7_conn_state {
	L7_CONN_DETECTING = 0,
	L7_CONN_PARSING,
	L7_CONN_UNDETECTED,   /* no parser claimed it: bytes are ignored */
	L7_CONN_UNPARSEABLE,  /* parser gave up (-EPROTO / -ENOBUFS): bytes ignored */
	L7_CONN_FINISHED,
};

struct l7_conn_opts {
	const struct l7_config *cfg;          /* required; copied (transport included) */
	const struct l7_parser_ops *force;    /* NULL = detect; else use this parser */
	uint16_t client_port, server_port;    /* hints for detect(), 0 = unknown */
	bool dir_certain;                     /* false: detection may swap the directions */
	l7_emit_fn emit;                      /* required */
	void *emit_ctx;
	struct l7_stats *stats;               /* optional */
};

struct l7_conn;

/* NULL with errno set (EINVAL, ENOMEM). */
struct l7_conn *l7_conn__new(const struct l7_conn_opts *opts);
/*
 * Bytes of one direction, in order (for UDP: exactly one datagram).
 * Returns 0, or the parser's -EPROTO / -ENOBUFS on the call that made the
 * connection unparseable (later calls on a dead connection return 0 and only
 * count ignored bytes).
 */
int l7_conn__feed(struct l7_conn *c, enum l7_dir dir, const uint8_t *data, size_t len, uint64_t ts_ns);
/* len bytes of dir were lost.  Same return convention as feed. */
int l7_conn__gap(struct l7_conn *c, enum l7_dir dir, size_t len, uint64_t ts_ns);
/* Close: decides detection if still pending, lets the parser emit what is left. */
void l7_conn__finish(struct l7_conn *c, uint64_t ts_ns);
/* Frees without emitting (call finish first to flush).  Accepts NULL, returns NULL. */
struct l7_conn *l7_conn__free(struct l7_conn *c);

enum l7_conn_state l7_conn__state(const struct l7_conn *c);
/* The chosen parser, NULL while detecting or when undetected. */
const struct l7_parser_ops *l7_conn__parser(const struct l7_conn *c);
/*
 * True when detection decided that the caller's client/server assignment was
 * backwards; from then on the caller's L7_DIR_REQ bytes are treated as
 * responses and vice versa (the caller keeps using its own directions).
 */
bool l7_conn__swapped(const struct l7_conn *c);

/*
 * The bytes of each call of dir (the caller's direction) the connection's
 * parser needs from now on (l7_parser_ops.head): L7_HEAD_ALL while
 * detecting or when the parser needs every byte, 0 when the connection is
 * undetected or unparseable (its bytes are ignored).
 */
size_t l7_conn__head(const struct l7_conn *c, enum l7_dir dir);

/* Registry index of a parser (for l7_stats.detected), -1 if not registered. */
int l7_conn__parser_index(const struct l7_parser_ops *ops);

#endif
