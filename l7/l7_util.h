/*
 * Small inline helpers shared by the binary L7 parsers: unaligned integer
 * loads and allocation-free record field writers (the hot path emits several
 * fields per exchange; vsnprintf there costs more than the parsing).
 */
#ifndef EMBER_L7_UTIL_H
#define EMBER_L7_UTIL_H

#include <stdint.h>
#include <string.h>

#include "l7/l7.h"

static inline uint16_t l7_be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t l7_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint16_t l7_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t l7_le24(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16; }
static inline uint32_t l7_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t l7_le64(const uint8_t *p) { return (uint64_t)l7_le32(p) | (uint64_t)l7_le32(p + 4) << 32; }

/* Next free field, NULL when the record is full. */
static inline struct l7_field *l7_rec_field(struct l7_record *r, const char *key)
{
	if (r->nfields >= L7_MAX_FIELDS)
		return NULL;
	r->fields[r->nfields].key = key;
	return &r->fields[r->nfields++];
}

/* Copy n bytes (stopping at a NUL), truncated to the field size. */
static inline void l7_rec_strn(struct l7_record *r, const char *key, const void *s, size_t n)
{
	struct l7_field *f = l7_rec_field(r, key);
	const char *z;

	if (!f)
		return;
	if (n > L7_FIELD_MAX - 1)
		n = L7_FIELD_MAX - 1;
	z = memchr(s, 0, n);
	if (z)
		n = (size_t)(z - (const char *)s);
	memcpy(f->val, s, n);
	f->val[n] = 0;
}

/*
 * Query text: runs of white space become one space and the ends are trimmed,
 * so that multi-line SQL stays on one output line; stops at a NUL.
 */
static inline void l7_rec_text(struct l7_record *r, const char *key, const void *s, size_t n)
{
	struct l7_field *f = l7_rec_field(r, key);
	const unsigned char *p = s;
	size_t o = 0;
	int sp = 0;

	if (!f)
		return;
	for (size_t i = 0; i < n && p[i] && o < L7_FIELD_MAX - 1; i++) {
		unsigned char c = p[i];
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
			sp = o > 0;
			continue;
		}
		if (sp && o < L7_FIELD_MAX - 2)
			f->val[o++] = ' ';
		sp = 0;
		f->val[o++] = (char)c;
	}
	f->val[o] = 0;
}

static inline void l7_rec_str(struct l7_record *r, const char *key, const char *s)
{
	l7_rec_strn(r, key, s, strlen(s));
}

/* Decimal into buf (>= 21 bytes), returns the length. */
static inline size_t l7_fmt_u64(char *buf, uint64_t v)
{
	char tmp[20];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = 0;
	return n;
}

static inline void l7_rec_u64(struct l7_record *r, const char *key, uint64_t v)
{
	struct l7_field *f = l7_rec_field(r, key);

	if (f)
		l7_fmt_u64(f->val, v);
}

static inline void l7_rec_i64(struct l7_record *r, const char *key, int64_t v)
{
	struct l7_field *f = l7_rec_field(r, key);

	if (!f)
		return;
	if (v < 0) {
		f->val[0] = '-';
		l7_fmt_u64(f->val + 1, (uint64_t)0 - (uint64_t)v);
	} else {
		l7_fmt_u64(f->val, (uint64_t)v);
	}
}

/* A prefix-and-number value like "ERR:1049" or "*100". */
static inline void l7_rec_tagnum(struct l7_record *r, const char *key, const char *tag, int64_t v)
{
	struct l7_field *f = l7_rec_field(r, key);
	size_t n;

	if (!f)
		return;
	n = strlen(tag);
	if (n > 32)
		n = 32;
	memcpy(f->val, tag, n);
	if (v < 0) {
		f->val[n++] = '-';
		l7_fmt_u64(f->val + n, (uint64_t)0 - (uint64_t)v);
	} else {
		l7_fmt_u64(f->val + n, (uint64_t)v);
	}
}

/*
 * The request half of an exchange: the times of its first and last byte
 * (end_ts 0 = unknown, taken as ts), size and order.
 */
static inline void l7_rec_req(struct l7_record *r, uint64_t ts, uint64_t end_ts, uint64_t bytes, uint64_t seq)
{
	r->has_request = true;
	r->req_ts_ns = ts;
	r->req_end_ts_ns = end_ts >= ts ? end_ts : ts;
	r->req_bytes = bytes;
	r->req_seq = seq;
}

/* The response half: the time it completed and its size. */
static inline void l7_rec_resp(struct l7_record *r, uint64_t ts, uint64_t bytes)
{
	r->has_response = true;
	r->resp_ts_ns = ts;
	r->resp_bytes = bytes;
}

static inline size_t l7_min(size_t a, size_t b) { return a < b ? a : b; }

#endif
