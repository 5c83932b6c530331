/*
 * Shared body of the L7 parser fuzz targets (fuzz_l7_<proto>.c).
 *
 * Input layout: byte 0 picks the configuration (memory cap, query length,
 * sample size: messages kept for sampling, HTTP/1),
 * then a sequence of chunks, each a control byte followed by its bytes:
 *   bit 0      direction (0 request, 1 response)
 *   bit 1      with bit 7: report the chunk as lost (gap) instead of feeding it
 *   bits 2..6  chunk length - 1 (1..32 bytes)
 * so the fuzzer controls both directions' interleaving and every split point.
 * detect() also sees the raw input in both directions.  Records are checked
 * for well-formed strings and samples within their budget, and head() after
 * every chunk for an answer within the longest chunk fed (a point inside a
 * call) or L7_HEAD_ALL; the sanitizers do the rest.
 */
#ifndef EMBER_FUZZ_L7_H
#define EMBER_FUZZ_L7_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>

#include "l7/l7.h"

static size_t fuzz_l7_body_cap;

static void fuzz_l7_emit(void *ctx, const struct l7_record *rec)
{
	size_t *n = ctx;

	if (rec->req_body_len > fuzz_l7_body_cap || rec->resp_body_len > fuzz_l7_body_cap ||
	    (rec->req_body_len && !rec->req_body) || (rec->resp_body_len && !rec->resp_body))
		abort();

	if (rec->nfields > L7_MAX_FIELDS)
		abort();
	for (unsigned i = 0; i < rec->nfields; i++)
		if (!rec->fields[i].key || !memchr(rec->fields[i].val, 0, L7_FIELD_MAX))
			abort();
	if (!rec->protocol)
		abort();
	(*n)++;
}

static inline int fuzz_l7_run(const struct l7_parser_ops *ops, const uint8_t *data, size_t size)
{
	static const size_t caps[] = { 256 * 1024, 4096, 16 * 1024, 1 << 20 };
	static const size_t bodies[] = { 0, 0, 37, 2048 };
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	size_t nrec = 0, off = 1, longest = 0;
	uint64_t ts = 1;
	bool dead = false;
	void *st;

	if (size < 1)
		return 0;
	(void)ops->detect(data, size, L7_DIR_REQ, 0);
	(void)ops->detect(data, size, L7_DIR_RESP, 0);
	cfg.max_conn_mem = caps[data[0] & 3];
	cfg.max_query_len = (data[0] >> 2) & 1 ? 16 : 256;
	cfg.max_body_len = fuzz_l7_body_cap = bodies[(data[0] >> 3) & 3];
	st = ops->create(&cfg, fuzz_l7_emit, &nrec);
	if (!st)
		return 0;
	while (off < size && !dead) {
		uint8_t c = data[off++];
		enum l7_dir dir = (c & 1) ? L7_DIR_RESP : L7_DIR_REQ;
		size_t len = (size_t)((c >> 2) & 0x1f) + 1;
		int rc;

		if (len > size - off)
			len = size - off;
		if ((c & 0x82) == 0x82) {
			rc = ops->gap(st, dir, len, ts);
		} else {
			rc = ops->feed(st, dir, data + off, len, ts);
			longest = len > longest ? len : longest;
		}
		off += len;
		for (int d = 0; ops->head && rc >= 0 && d < 2; d++) {
			size_t h = ops->head(st, (enum l7_dir)d);

			if (h != L7_HEAD_ALL && h > longest)
				abort();
		}
		ts += 1000;
		if (rc < 0)
			dead = true;   /* as l7_conn does: stop feeding an unparseable connection */
	}
	ops->finish(st, ts);
	ops->free(st);
	return 0;
}

#endif
