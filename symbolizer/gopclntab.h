/*
 * Function names of a Go binary from its .gopclntab section (the runtime's
 * own symbol table, present even when .symtab was stripped), Go 1.18+
 * layout (header magic 0xfffffff0 / 0xfffffff1):
 *
 *   header: magic u32, 0, 0, minLC u8, ptrSize u8, then ptrSize words
 *           nfunc, nfiles, textStart, funcnameOffset, cuOffset,
 *           filetabOffset, pctabOffset, pclnOffset (offsets from the header)
 *   functab at pclnOffset: nfunc pairs {entryoff u32, funcoff u32} + an end entryoff
 *   _func at pclnOffset + funcoff: {entryoff u32, nameoff i32, ...}
 *   name: NUL-terminated at funcnameOffset + nameoff
 *
 * The section is attacker-controlled: every offset is checked against the
 * buffer, names must be terminated inside it, entries must not go backwards.
 * Older layouts (Go <= 1.17) are reported as -EPROTONOSUPPORT.
 */
#ifndef EMBER_SYMBOLIZER_GOPCLNTAB_H
#define EMBER_SYMBOLIZER_GOPCLNTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gopclntab_stats {
	uint64_t funcs;        /* reported through the callback */
	uint64_t bad_funcs;    /* offsets outside the section, unterminated names, backwards entries */
	uint64_t dropped;      /* beyond max_funcs */
};

/* Returns 0 to go on, non-zero to stop (that value is returned by the parser). */
typedef int (*gopclntab_fn)(void *ctx, uint64_t entry, uint64_t end, const char *name, size_t name_len);

/*
 * Parses buf[0..len).  text_fallback is used when the header's textStart is 0
 * (a PIE whose value is filled in by a relocation): pass the .text address.
 * big_endian: the ELF's byte order.  Calls fn for at most max_funcs functions
 * (0 = unlimited) in table order.  Returns the number of functions reported,
 * the callback's non-zero value, or -ENOEXEC (no pclntab header),
 * -EPROTONOSUPPORT (other Go version), -EBADMSG (header inconsistent).
 */
int gopclntab__parse(const uint8_t *buf, size_t len, uint64_t text_fallback, bool big_endian,
		     size_t max_funcs, gopclntab_fn fn, void *ctx, struct gopclntab_stats *ret_stats);

#endif
