/*
 * Call frame information (.eh_frame, or .debug_frame when a file has no
 * .eh_frame) of one x86-64 ELF file -> compact unwind rows (bpf/unwind_abi.h)
 * that the BPF unwinder can apply without DWARF: per address range, how to
 * find the CFA (rsp or rbp plus an offset, or a PLT stub's expression),
 * where rbp was saved, signal trampolines, and the outermost frame.
 *
 * The file is attacker-controlled: every length, pointer encoding, LEB128,
 * CIE reference and instruction operand is bounds-checked; a malformed entry
 * is skipped and counted, and a rule the unwinder cannot apply (a CFA from
 * another register, a return address not at CFA-8, an expression other than
 * the PLT's) becomes UNW_NONE over its range, which the unwinder walks with
 * frame pointers.  Library code: no logging, not thread-safe per call.
 */
#ifndef EMBER_ANALYZER_UNWIND_EH_FRAME_H
#define EMBER_ANALYZER_UNWIND_EH_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/unwind_abi.h"

struct eh_frame_stats {
	uint64_t cies, fdes;
	uint64_t bad_entries;     /* CIE/FDE malformed or referencing outside the section: skipped */
	uint64_t unsupported;     /* rows an unwinder rule cannot express (UNW_NONE) */
	uint64_t high_pcs;        /* FDEs at or above 4 GiB: skipped (rows hold 32-bit pcs) */
	uint64_t raw_rows;        /* before sorting and merging */
	int source;               /* 0 none, 1 .eh_frame, 2 .debug_frame, 3 .eh_frame through PT_GNU_EH_FRAME */
};

/*
 * Rows of the ELF file open at fd (not taken; its offset is not used), sorted
 * by pc, one per pc, consecutive equal rules merged.  *ret_rows is malloc'ed
 * (NULL with *ret_n = 0 when the file has no call frame information, which
 * is not an error).  At most max_rows rows (0 = 1 << 24): -E2BIG beyond.
 * Returns 0 or -errno (ENOEXEC: not an x86-64 ELF file; ENOMEM).
 */
int eh_frame__rows_fd(int fd, size_t max_rows, struct unwind_row **ret_rows, size_t *ret_n,
		      struct eh_frame_stats *ret_stats);
/* The same over an ELF image in memory (the vDSO; fuzzing). */
int eh_frame__rows_mem(const void *image, size_t len, size_t max_rows, struct unwind_row **ret_rows,
		       size_t *ret_n, struct eh_frame_stats *ret_stats);

/*
 * The same over the contents of one section already found: an .eh_frame
 * (debug = 0; vaddr: the section's address, for pc-relative pointers) or a
 * .debug_frame (debug = 1).  For tests and fuzzing of the CFI parser alone.
 */
int eh_frame__rows_section(const void *sec, size_t len, uint64_t vaddr, int debug, size_t max_rows,
			   struct unwind_row **ret_rows, size_t *ret_n, struct eh_frame_stats *ret_stats);

/* Index of the row covering pc (the last with row.pc <= pc), or -1. */
long eh_frame__find(const struct unwind_row *rows, size_t n, uint32_t pc);

#endif
