/*
 * Small building blocks shared by the symbol tables (proc maps, perf maps,
 * kallsyms, ELF symbols): a doubling array, a NUL-terminated string arena
 * addressed by offsets (offsets survive the arena moving), and the sorted
 * address search they all start their lookups with.
 */
#ifndef EMBER_SYMBOLIZER_TABLES_H
#define EMBER_SYMBOLIZER_TABLES_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * Doubles the capacity of the array *pptr (a pointer to any element pointer)
 * of elem-sized elements, starting at init; call when it is full.  Returns 0
 * or -ENOMEM (array and *cap unchanged).
 */
int tables__grow(void *pptr, size_t elem, size_t *cap, size_t init);

struct str_arena {
	char *buf;
	size_t len, cap;
};

/* For __attribute__((cleanup)): frees what the arena holds unless taken with TAKE_PTR(a.buf). */
static inline void tables__arena_freep(struct str_arena *a)
{
	free(a->buf);
}

/*
 * Appends s[0, len) and a NUL; *ret_off is where it starts.  The capacity
 * doubles from init_cap.  Returns 0, -ENOMEM, or -E2BIG when the capacity
 * would pass max_cap (the arena is unchanged on error).
 */
int tables__add_string(struct str_arena *a, const char *s, size_t len, size_t init_cap, size_t max_cap,
		       size_t *ret_off);

/*
 * For n elements of elem bytes sorted by the uint64_t at key_off: the number
 * of leading elements whose key is <= key (the candidate covering key is the
 * one before that index).  Inline: it runs on every frame resolved.
 */
static inline size_t tables__upper_bound(const void *base, size_t n, size_t elem, size_t key_off, uint64_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (*(const uint64_t *)((const char *)base + mid * elem + key_off) <= key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Three-way comparison for qsort() comparators: -1, 0 or 1. */
static inline int tables__cmp_u64(uint64_t a, uint64_t b)
{
	return (a > b) - (a < b);
}

/* tables__upper_bound() over an array of structs sorted by their uint64_t field. */
#define TABLES_UPPER_BOUND(arr, n, field, key) \
	tables__upper_bound((arr), (n), sizeof(*(arr)), offsetof(__typeof__(*(arr)), field), (key))

#endif
