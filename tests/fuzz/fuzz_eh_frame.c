/*
 * The call frame information parser (analyzer/unwind/eh_frame.h) runs in the
 * analyzer on any binary a profiled process maps.  The first input byte
 * picks how the rest is presented: 0 as a whole ELF image; 1 (2) as the
 * contents of an .eh_frame (.debug_frame) section alone, so that mutations
 * reach the CFI parser instead of dying in the ELF headers.  Invariants: rows strictly sorted by pc, row
 * types valid, no more rows than asked for, eh_frame__find() agreeing with
 * a linear scan.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/unwind/eh_frame.h"

#define MAX_ROWS 100000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct unwind_row *rows = NULL;
	struct eh_frame_stats st;
	uint8_t *img;
	size_t n = 0;
	int err;

	if (size < 1)
		return 0;
	img = malloc(size - 1 ? size - 1 : 1); /* exactly the bytes: ASan sees any read past them */
	if (!img)
		return 0;
	memcpy(img, data + 1, size - 1);
	if (data[0] == 0)
		err = eh_frame__rows_mem(img, size - 1, MAX_ROWS, &rows, &n, &st);
	else
		err = eh_frame__rows_section(img, size - 1, 0x1000, data[0] == 2, MAX_ROWS, &rows, &n, &st);
	if (err && (rows || n))
		abort();
	if (n > MAX_ROWS)
		abort();
	for (size_t i = 0; i < n; i++) {
		if (rows[i].type >= UNW_TYPE_MAX || (i && rows[i].pc <= rows[i - 1].pc))
			abort();
		/* Merged: no two neighbours with the same rule. */
		if (i && rows[i].type == rows[i - 1].type && rows[i].cfa_off == rows[i - 1].cfa_off &&
		    rows[i].fp_off8 == rows[i - 1].fp_off8)
			abort();
	}
	for (size_t i = 0; i < n && i < 64; i++) {
		uint32_t pc = rows[i].pc + (i + 1 < n ? (rows[i + 1].pc - rows[i].pc) / 2 : 1);
		if (eh_frame__find(rows, n, pc) != (long)i || eh_frame__find(rows, n, rows[i].pc) != (long)i)
			abort();
	}
	if (n && rows[0].pc && eh_frame__find(rows, n, rows[0].pc - 1) != -1)
		abort();
	free(rows);
	free(img);
	return 0;
}
