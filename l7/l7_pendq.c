#include "l7/l7_pendq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void l7_pendq__init(struct l7_pendq *q, size_t entry_size, struct l7_mem *mem)
{
	memset(q, 0, sizeof(*q));
	q->esz = entry_size;
	q->mem = mem;
}

static inline uint8_t *slot(const struct l7_pendq *q, unsigned i)
{
	return q->slots + (size_t)((q->head + i) & (q->cap - 1)) * q->esz;
}

static int grow(struct l7_pendq *q)
{
	unsigned ncap = q->cap ? q->cap * 2 : 8;
	uint8_t *ns;
	int err;

	if (ncap < q->cap || (size_t)ncap > SIZE_MAX / q->esz)
		return -ENOBUFS;
	err = l7_mem__charge(q->mem, (size_t)(ncap - q->cap) * q->esz);
	if (err)
		return err;
	ns = malloc((size_t)ncap * q->esz);
	if (!ns) {
		l7_mem__release(q->mem, (size_t)(ncap - q->cap) * q->esz);
		return -ENOMEM;
	}
	/* Unwrap the ring into the new array. */
	for (unsigned i = 0; i < q->count; i++)
		memcpy(ns + (size_t)i * q->esz, slot(q, i), q->esz);
	free(q->slots);
	q->slots = ns;
	q->cap = ncap;
	q->head = 0;
	return 0;
}

void *l7_pendq__push(struct l7_pendq *q)
{
	uint8_t *e;
	int err;

	if (q->count == q->cap && (err = grow(q)) < 0) {
		errno = -err;
		return NULL;
	}
	e = slot(q, q->count++);
	memset(e, 0, q->esz);
	return e;
}

void *l7_pendq__at(const struct l7_pendq *q, unsigned i)
{
	return i < q->count ? slot(q, i) : NULL;
}

void l7_pendq__remove(struct l7_pendq *q, unsigned i)
{
	if (i >= q->count)
		return;
	/* Shift the older entries up by one: removal is usually at or near the head. */
	for (unsigned j = i; j > 0; j--)
		memcpy(slot(q, j), slot(q, j - 1), q->esz);
	q->head = (q->head + 1) & (q->cap - 1);
	q->count--;
}


void l7_pendq__release(struct l7_pendq *q)
{
	if (q->slots)
		l7_mem__release(q->mem, (size_t)q->cap * q->esz);
	free(q->slots);
	q->slots = NULL;
	q->head = q->count = q->cap = 0;
}
