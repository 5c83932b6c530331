/*
 * Message framing for the binary L7 parsers (MySQL, PostgreSQL, Redis, Kafka,
 * CQL, MongoDB): turns one direction's arbitrarily split byte stream into
 * whole messages, or into message prefixes when the parser only needs the
 * head of a long message.
 *
 * The parser's frame() callback looks at the bytes at the start of a message
 * and answers either "the message is N bytes long" (N may exceed what it was
 * shown: the framer then discards the rest as it arrives, without buffering
 * it) or "show me at least N bytes".  Bytes are parsed in place from the
 * caller's chunk whenever a message (prefix) lies entirely inside it; only a
 * prefix split across chunks is copied, into a buffer charged to a
 * per-connection memory account (struct l7_mem) and never larger than
 * mem->cap in total.  end() runs once the last byte of each message has gone
 * by, so a parser can time a response by its completion.
 *
 * A gap that falls inside a message body being discarded costs nothing; any
 * other gap loses the framing, and the framer then waits for a chunk that the
 * parser's sync() callback accepts as the start of a message.
 *
 * What live capture must copy of each chunk (l7_parser_ops.head): a frame()
 * that tells which of the bytes it was shown it needed (f->used) lets the
 * framer know where in each chunk the last needed byte was; the rest of a
 * chunk inside a discarded body may then arrive as a gap at no cost.
 *
 * Embedded by value in parser state; not thread-safe.
 */
#ifndef EMBER_L7_FRAMER_H
#define EMBER_L7_FRAMER_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/types.h>

/* Memory account shared by every buffer of one connection. */
struct l7_mem {
	size_t used;
	size_t cap;
};

/* Charge / release n bytes.  charge returns 0 or -ENOBUFS (nothing charged). */
int l7_mem__charge(struct l7_mem *m, size_t n);
void l7_mem__release(struct l7_mem *m, size_t n);

struct l7_framer;

struct l7_framer_ops {
	/*
	 * p[0..avail) starts a message.  Returns its total length (> 0, may be
	 * > avail), or 0 with *need set to the number of bytes wanted (> avail),
	 * or -errno (returned from feed()).  With a length, it may set f->used
	 * (0 before each call) to the bytes of p it needed: it would have given
	 * the same answer, and parsed the same, from p[0..used) alone.  Left 0,
	 * every byte shown counts as needed.  It may set f->opening (false
	 * before each call) for a message of the session's opening (a startup,
	 * a login): how much of it was needed says nothing of the traffic after.
	 */
	ssize_t (*frame)(void *ctx, struct l7_framer *f, const uint8_t *p, size_t avail, size_t *need);
	/* The message last framed is over (f->ts = time of its last byte).  Optional. */
	int (*end)(void *ctx, struct l7_framer *f);
	/* After lost framing: does this chunk start a message?  NULL = never. */
	bool (*sync)(void *ctx, struct l7_framer *f, const uint8_t *p, size_t len);
};

struct l7_framer {
	const struct l7_framer_ops *ops;
	void *ctx;
	struct l7_mem *mem;
	int tag;               /* free for the parser (its direction) */
	uint8_t *buf;          /* pending prefix of a split message */
	size_t len, cap, need;
	uint64_t skip;         /* bytes of the current message still to discard */
	bool end_pending;      /* call end() when skip reaches 0 */
	bool lost;             /* framing lost: waiting for sync() */
	uint64_t msg_ts;       /* time of the chunk holding the message's first byte */
	uint64_t ts;           /* time of the chunk being fed */
	uint64_t bytes;        /* bytes consumed (fed, skipped or lost) */
	uint64_t discarded;    /* chunks thrown away while waiting for sync() */
	/*
	 * Set by end() to stop feed() right after the current message (a
	 * protocol switching framing, e.g. CQL v5 after READY): feed() then
	 * returns 0 with the bytes it did not look at in `unconsumed`.  Only
	 * honoured when the message was parsed in place, not from the buffer.
	 */
	bool pause;
	size_t unconsumed;
	size_t used;           /* set by frame(): see l7_framer_ops.frame */
	bool opening;          /* ditto */
	/*
	 * The furthest offset into a chunk fed at which a byte was needed
	 * (0 before the first message past the opening), and whether every byte is needed since
	 * the framing was lost in a gap (a cut chunk would lose it again).
	 */
	size_t head_need;
	bool head_all;
};

void l7_framer__init(struct l7_framer *f, const struct l7_framer_ops *ops, void *ctx,
		     struct l7_mem *mem, int tag);
/* 0, -ENOBUFS (buffer would exceed mem->cap), -EPROTO or a callback's -errno. */
int l7_framer__feed(struct l7_framer *f, const uint8_t *data, size_t len, uint64_t ts);
/*
 * len bytes lost.  Returns 0 when the gap fell inside a discarded body
 * (framing intact), 1 when the framing was lost (the framer now waits for
 * sync()), or a callback's -errno.
 */
int l7_framer__gap(struct l7_framer *f, size_t len, uint64_t ts);
/* Drop any partial message and resume at the next byte fed (no sync). */
void l7_framer__reset(struct l7_framer *f);
/* Frees the buffer (the framer stays usable). */
void l7_framer__release(struct l7_framer *f);

#endif
