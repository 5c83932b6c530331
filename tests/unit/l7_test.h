/* Helpers shared by the L7 parser unit tests (header-only, test code). */
#ifndef EMBER_TEST_L7_H
#define EMBER_TEST_L7_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "l7/l7.h"

#define REC_MAX 128

/* A copy of each emitted record. */
struct rec_log {
	unsigned n;
	struct l7_record r[REC_MAX];
	uint8_t req_body[REC_MAX][256], resp_body[REC_MAX][256];
};

static inline void rec_log_emit(void *ctx, const struct l7_record *rec)
{
	struct rec_log *l = ctx;

	assert_true(l->n < REC_MAX);
	l->r[l->n] = *rec;
	if (rec->req_body) {
		assert_true(rec->req_body_len <= sizeof(l->req_body[0]));
		memcpy(l->req_body[l->n], rec->req_body, rec->req_body_len);
		l->r[l->n].req_body = l->req_body[l->n];
	}
	if (rec->resp_body) {
		assert_true(rec->resp_body_len <= sizeof(l->resp_body[0]));
		memcpy(l->resp_body[l->n], rec->resp_body, rec->resp_body_len);
		l->r[l->n].resp_body = l->resp_body[l->n];
	}
	l->n++;
}

/* Value of field key, or NULL. */
static inline const char *rec_field(const struct l7_record *r, const char *key)
{
	for (unsigned i = 0; i < r->nfields; i++)
		if (!strcmp(r->fields[i].key, key))
			return r->fields[i].val;
	return NULL;
}

#define assert_field(rec, key, want) do { \
	const char *_v = rec_field((rec), (key)); \
	if (!_v) fail_msg("field %s missing", (key)); \
	assert_string_equal(_v, (want)); \
} while (0)

/* Feeds len bytes in chunks of `step` (0 = all at once); asserts success. */
static inline void feed_steps(const struct l7_parser_ops *ops, void *st, enum l7_dir dir,
			      const void *data, size_t len, size_t step, uint64_t ts)
{
	const uint8_t *p = data;

	if (!step)
		step = len ? len : 1;
	for (size_t off = 0; off < len; off += step) {
		size_t n = len - off < step ? len - off : step;

		assert_int_equal(ops->feed(st, dir, p + off, n, ts), 0);
	}
}

static inline size_t unhex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;

	while (*s && n < cap) {
		unsigned v;

		if (*s == ' ' || *s == '\n') {
			s++;
			continue;
		}
		assert_int_equal(sscanf(s, "%2x", &v), 1);
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

#endif
