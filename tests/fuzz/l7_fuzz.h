/*
 * Shared driver for the L7 parser fuzz targets: the input is split into
 * chunks by its own bytes (direction, length), fed through one parser, with
 * the occasional gap, then finished.  Every record is checked for sanity.
 */
#ifndef EMBER_FUZZ_L7_H
#define EMBER_FUZZ_L7_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/l7/l7.h"

static void fuzz_l7_emit(void *ctx, const struct l7_record *rec)
{
	(void)ctx;
	if (rec->nfields > L7_MAX_FIELDS)
		abort();
	for (unsigned i = 0; i < rec->nfields; i++)
		if (!rec->fields[i].key || strnlen(rec->fields[i].val, L7_FIELD_MAX) == L7_FIELD_MAX)
			abort();
	/* Sampled bodies must be readable for their whole length. */
	if (rec->req_body && rec->req_body_len) {
		volatile uint8_t x = rec->req_body[rec->req_body_len - 1];
		(void)x;
	}
	if (rec->resp_body && rec->resp_body_len) {
		volatile uint8_t x = rec->resp_body[rec->resp_body_len - 1];
		(void)x;
	}
}

/*
 * Layout: byte 0 = options (bit0 UDP, bit1 body sampling, bit2 small memory),
 * then records of [ctl][data...]: ctl bit7 = direction, bit6 = gap,
 * bits0-5 = chunk length (0 => 1 byte).
 */
static int fuzz_l7_run(const struct l7_parser_ops *ops, const uint8_t *data, size_t size)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	uint64_t ts = 1;
	void *st;
	size_t i = 1;
	bool dead = false;

	if (!size)
		return 0;
	cfg.transport = (data[0] & 1) && ops->udp ? L7_TRANSPORT_UDP : L7_TRANSPORT_TCP;
	cfg.max_body_len = (data[0] & 2) ? 64 : 0;
	cfg.max_conn_mem = (data[0] & 4) ? 4096 : 256 * 1024;
	st = ops->create(&cfg, fuzz_l7_emit, NULL);
	if (!st)
		return 0;
	(void)ops->detect(data + 1, size - 1, L7_DIR_REQ, 0);
	(void)ops->detect(data + 1, size - 1, L7_DIR_RESP, 0);
	while (i < size && !dead) {
		uint8_t ctl = data[i++];
		enum l7_dir dir = (ctl & 0x80) ? L7_DIR_RESP : L7_DIR_REQ;
		size_t n = (ctl & 0x3f) ? (ctl & 0x3f) : 1;

		if (n > size - i)
			n = size - i;
		ts += 1000;
		if (ctl & 0x40) {
			dead = ops->gap(st, dir, n * 7, ts) < 0;
			continue;
		}
		dead = ops->feed(st, dir, data + i, n, ts) < 0;
		i += n;
	}
	if (!dead)
		ops->finish(st, ts + 1);
	ops->free(st);
	return 0;
}

#endif
