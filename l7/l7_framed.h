/*
 * Per-connection plumbing shared by the framed binary L7 parsers (MySQL,
 * PostgreSQL, Redis, Kafka, CQL, MongoDB): the connection's config copy and
 * emit callback, its memory account, one framer per direction
 * (l7_framer.h), the queue of requests awaiting a response (l7_pendq.h) and
 * the sticky error, plus the feed / gap / finish / free / dropped entry
 * points that are the same for all of them.
 *
 * A parser's state starts with `struct l7_framed base;` (first member, so
 * the state pointer l7_conn hands back is also a struct l7_framed *) and is
 * allocated by l7_framed__new(); its l7_parser_ops can then point straight
 * at l7_framed__feed, __gap, __finish, __free and __discarded, or wrap them
 * when the protocol needs more (CQL's v5 segment layer).
 *
 * Errors are sticky: once feed() or gap() has returned -errno (or a framer
 * callback has stored one in base.fatal), every later feed() / gap()
 * returns it without touching the framers.  finish() still reports what is
 * pending.
 */
#ifndef EMBER_L7_FRAMED_H
#define EMBER_L7_FRAMED_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "l7/l7.h"
#include "l7/l7_framer.h"
#include "l7/l7_pendq.h"

/* What a parser tells l7_framed__new(); static, outlives every connection. */
struct l7_framed_spec {
	const struct l7_framer_ops *fops;  /* both directions; framer tag = enum l7_dir */
	size_t state_size;                 /* sizeof the parser's state (charged to the account) */
	size_t entry_size;                 /* sizeof one pending-queue entry */
	/*
	 * A gap that loses the framing: true = fops->sync finds the next
	 * message (protocols that pair by id), false = -EPROTO (FIFO pairing
	 * cannot survive lost bytes).
	 */
	bool resync;
	/* finish(): report one entry still pending at the close (oldest first).  NULL = drop them. */
	void (*unanswered)(void *st, void *entry);
	/*
	 * Optional, for FIFO protocols (resync false): a gap lost the
	 * framing of the responses (live data: a socket call is seen up to a
	 * bounded prefix, and one write can hold many messages).  Called
	 * when the client next sends (or at the close): a client that waits
	 * for each answer has had all of it by then, so the parser reports
	 * every exchange still pending: the oldest one's response was cut
	 * (answered at ts, the last response bytes; fr[L7_DIR_RESP].bytes
	 * counts what went by, lost bytes included), the later ones' (a
	 * pipelining client's) went by in the gap.  It resets its response
	 * side, and the response framer starts afresh.  Returns 0 or -errno.
	 * NULL = such a gap ends the analysis.
	 */
	int (*cut)(void *st, uint64_t ts);
	/*
	 * Optional, for FIFO protocols: a gap lost the framing of the
	 * requests (a pipelining client's write seen in part), so the
	 * requests in it are unknown.  Answers keep pairing with the requests
	 * seen before the gap; the parser reports any beyond them as answers
	 * to lost requests (l7_framed.req_lost is set meanwhile).  At the
	 * client's first write after the server has sent again (a client
	 * that waits for its answers has had them all by then), this resets
	 * the parser's request side and the request framer starts afresh.
	 * Returns 0 or -errno.  NULL = such a gap ends the analysis.
	 */
	int (*req_resume)(void *st);
	/*
	 * With req_resume: does this chunk of the client's bytes start at a
	 * message, by its headers up to the chunk's end?  A server reads a
	 * long pipeline in parts and may answer between them, so the first
	 * chunk after an answer can start mid-message; it is discarded, and
	 * the next one is tried.  NULL = trust the turn.
	 */
	bool (*req_start)(const uint8_t *p, size_t len);
	/*
	 * With cut: does this chunk of the server's bytes start at a message?
	 * After a cut the answers are read afresh from the first chunk that
	 * does (the rest of an answer the client did not wait for is dropped,
	 * not parsed from its middle).  NULL = from the next chunk.
	 */
	bool (*resp_start)(const uint8_t *p, size_t len);
	/*
	 * fops->frame sets f->used (l7_framer.h) in both directions: the
	 * connection's head() is then what its framers needed, else every byte.
	 */
	bool heads;
};

struct l7_framed {
	const struct l7_framed_spec *spec;
	struct l7_config cfg;
	l7_emit_fn emit;
	void *emit_ctx;
	struct l7_mem mem;                 /* cap = cfg.max_conn_mem; the state itself counts */
	struct l7_framer fr[2];            /* indexed by enum l7_dir */
	struct l7_pendq q;
	int fatal;                         /* sticky -errno, 0 while parsing */
	bool resp_cut;                     /* response framing lost: spec->cut at the next request */
	bool resp_wait;                    /* after a cut: answers resume at a chunk spec->resp_start accepts */
	bool req_lost;                     /* request framing lost: spec->req_resume at the next turn */
	uint64_t req_lost_mark;            /* fr[L7_DIR_RESP].bytes when the requests' gap came */
};

/*
 * Zeroed state of spec->state_size bytes whose first member is a struct
 * l7_framed, set up for this connection (framer ctx = the state).  NULL with
 * errno set on failure.
 */
void *l7_framed__new(const struct l7_framed_spec *spec, const struct l7_config *cfg,
		     l7_emit_fn emit, void *emit_ctx);

/* l7_parser_ops entry points; st is the parser state (a struct l7_framed *). */
int l7_framed__feed(void *st, enum l7_dir dir, const uint8_t *data, size_t len, uint64_t ts);
int l7_framed__gap(void *st, enum l7_dir dir, size_t len, uint64_t ts);
void l7_framed__finish(void *st, uint64_t ts);
void l7_framed__free(void *st);
/* Chunks the framers threw away while resynchronising after a gap. */
uint64_t l7_framed__discarded(const void *st);
/*
 * l7_parser_ops.head: L7_HEAD_ALL unless spec->heads, before the direction's
 * first message past the opening (l7_framer.opening) and once its framing
 * was lost in a gap; else the furthest
 * offset into a chunk at which its framer needed a byte.
 */
size_t l7_framed__head(const void *st, enum l7_dir dir);

static inline bool l7_framed__dir_ok(enum l7_dir dir)
{
	return dir == L7_DIR_REQ || dir == L7_DIR_RESP;
}

static inline void l7_framed__emit(const struct l7_framed *b, const struct l7_record *rec)
{
	b->emit(b->emit_ctx, rec);
}

#endif
