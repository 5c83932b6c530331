/*
 * FIFO of fixed-size entries (requests awaiting their response), grown on
 * demand and charged to the connection's memory account (l7_framer.h), so a
 * client that pipelines without bound hits -ENOBUFS instead of growing the
 * analyzer.  Entries can be taken out of the middle for protocols that answer
 * out of order (Kafka correlation ids, CQL stream ids, MongoDB responseTo).
 */
#ifndef EMBER_L7_PENDQ_H
#define EMBER_L7_PENDQ_H

#include <stddef.h>
#include <stdint.h>

#include "l7/l7_framer.h"

struct l7_pendq {
	uint8_t *slots;
	size_t esz;
	unsigned head, count, cap;   /* cap: power of two */
	struct l7_mem *mem;
};

void l7_pendq__init(struct l7_pendq *q, size_t entry_size, struct l7_mem *mem);
/* New zeroed entry at the tail, or NULL with errno ENOBUFS / ENOMEM. */
void *l7_pendq__push(struct l7_pendq *q);
/* i-th oldest entry (0 = head), NULL past the end. */
void *l7_pendq__at(const struct l7_pendq *q, unsigned i);
/* Remove the i-th oldest entry, keeping the order of the others. */
void l7_pendq__remove(struct l7_pendq *q, unsigned i);
static inline unsigned l7_pendq__count(const struct l7_pendq *q) { return q->count; }
void l7_pendq__release(struct l7_pendq *q);

#endif
