/*
 * HPACK (RFC 7541) header-block decoder for one direction of an HTTP/2
 * connection: static table, dynamic table with size updates, Huffman.
 *
 * Built for passive observation: when the connection was picked up mid-way
 * (hpack__set_partial), a reference to a dynamic entry inserted before the
 * capture yields a header flagged HPACK_UNKNOWN instead of an error, and the
 * rest of the block still decodes.  Memory is bounded: strings longer than
 * HPACK_STR_MAX are kept truncated (their full length still counts towards
 * the table size, so evictions stay in step with the encoder) and the table
 * never holds more than the max_table bytes given at creation.
 *
 * Not thread-safe; one decoder per direction.
 */
#ifndef EMBER_HPACK_H
#define EMBER_HPACK_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define HPACK_STR_MAX 4096

/* Header flags passed to hpack_header_fn. */
#define HPACK_UNKNOWN   0x1 /* name and value unknown (entry from before the capture) */
#define HPACK_TRUNCATED 0x2 /* value longer than HPACK_STR_MAX, cut */

/* name/value are NUL-terminated and valid only during the call. */
typedef void (*hpack_header_fn)(void *ctx, const char *name, size_t nlen,
				const char *value, size_t vlen, unsigned flags);

struct hpack_stats {
	uint64_t blocks, headers;
	uint64_t unknown_refs;  /* references to entries we never saw */
	uint64_t truncated;     /* strings cut at HPACK_STR_MAX */
	uint64_t evictions;
	uint64_t malformed;     /* blocks that failed to decode */
};

struct hpack;

/* max_table: cap on the dynamic table we keep (bytes, RFC accounting). */
struct hpack *hpack__new(size_t max_table);
struct hpack *hpack__free(struct hpack *h);
/* The table's history before our first block is unknown (mid-connection). */
void hpack__set_partial(struct hpack *h, bool partial);
/*
 * Header blocks were lost (a gap in the stream): the encoder's table holds
 * entries we never saw, ahead of ours, so every index we hold is off.  Empties
 * the table: static references and entries inserted from now on decode
 * exactly, older dynamic references come out HPACK_UNKNOWN.
 */
void hpack__forget(struct hpack *h);
/*
 * Decodes one complete header block, calling cb per header field.
 * Returns 0, or -EPROTO on a malformed block (the dynamic table may then be
 * out of step with the encoder; the caller should stop decoding).
 */
int hpack__decode(struct hpack *h, const uint8_t *block, size_t len, hpack_header_fn cb, void *ctx);
const struct hpack_stats *hpack__stats(const struct hpack *h);
/* Current dynamic table: entry count and size (RFC accounting). */
size_t hpack__table_len(const struct hpack *h);
size_t hpack__table_size(const struct hpack *h);

/*
 * Huffman-decodes in[0..n) into out (capacity cap, NUL-terminated, output
 * truncated to cap-1).  Returns the decoded length (may exceed cap-1 when
 * truncated), or -EPROTO on invalid code / padding / EOS.
 */
long hpack__huffman_decode(const uint8_t *in, size_t n, char *out, size_t cap);

#endif
