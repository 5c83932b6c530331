/*
 * Kernel symbols from /proc/kallsyms: parsed once, sorted once, binary search.
 *
 * Only text symbols (types t, T, w, W) with a non-zero address are kept.  The
 * file has no sizes: a symbol extends to the next symbol's address, and the
 * last symbol of the table to at most KALLSYMS_LAST_SPAN bytes.  Names and
 * "[module]" labels live in one arena and stay valid until kallsyms__free().
 * Not thread-safe.
 */
#ifndef EMBER_SYMBOLIZER_KALLSYMS_H
#define EMBER_SYMBOLIZER_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

#define KALLSYMS_LAST_SPAN (64 * 1024)

struct kallsyms;

struct kallsyms_stats {
	uint64_t lines, bad_lines, skipped /* non-text or zero address */, dropped /* beyond the cap */;
	uint64_t symbols, modules;
};

/*
 * Reads fd (not closed) to EOF and keeps at most max_symbols (0 = 4M).
 * NULL+errno: EIO/ENOMEM, or EPERM when every address was zero
 * (kptr_restrict hid them from the opener).
 */
struct kallsyms *kallsyms__read(int fd, size_t max_symbols);

/*
 * Returns 0 and sets *ret_name, *ret_offset (addr - symbol address) and
 * *ret_module (NULL for the core kernel, else the label without brackets),
 * or -ENOENT.
 */
int kallsyms__lookup(const struct kallsyms *ks, uint64_t addr, const char **ret_name,
		     uint64_t *ret_offset, const char **ret_module);

/* Address of the first symbol with this exact name (core kernel first), or 0. */
uint64_t kallsyms__find_name(const struct kallsyms *ks, const char *name);

void kallsyms__stats(const struct kallsyms *ks, struct kallsyms_stats *ret);
size_t kallsyms__memory(const struct kallsyms *ks);
/* Accepts NULL.  Returns NULL. */
struct kallsyms *kallsyms__free(struct kallsyms *ks);

#endif
