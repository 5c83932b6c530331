/*
 * .gopclntab comes from any Go binary a profiled process maps (untrusted).
 * The parser gets the input as an exact-size heap buffer (ASan sees any read
 * past it), both byte orders.  Invariants: reported functions are non-empty
 * ranges with non-empty names inside the buffer.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer/gopclntab.h"

static volatile size_t sink;

struct ctx { const uint8_t *b; size_t len; };

static int cb(void *p, uint64_t entry, uint64_t end, const char *name, size_t len)
{
	const struct ctx *c = p;

	if (end <= entry || !len || (const uint8_t *)name < c->b || (const uint8_t *)name + len >= c->b + c->len ||
	    name[len] != '\0')
		abort();
	sink += len + (size_t)(end - entry);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);
	struct gopclntab_stats st;
	struct ctx c = { copy, size };

	if (!copy)
		abort();
	memcpy(copy, data, size);
	for (int be = 0; be < 2; be++)
		(void)gopclntab__parse(copy, size, 0x400000, be, size & 1 ? 2 : 0, cb, &c, &st);
	free(copy);
	return 0;
}
