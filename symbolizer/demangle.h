/*
 * C++ (Itanium ABI) and Rust (legacy and v0) demangling through libiberty's
 * demangler (cplus_demangle, DMGL_AUTO: Rust is tried first since legacy Rust
 * names are valid Itanium names), plus a bounded per-module cache keyed by
 * symbol index, so each name is demangled at most once while it is cached
 * and modules that are never hit pay nothing at load time.
 *
 * Lifetimes: a name from dm_cache__get() lives until dm_cache__free(), or --
 * when the cache is full and the name had to go to the caller's scratch list
 * -- until dm_scratch__clear() on that list.  Library code: no logging.
 */
#ifndef EMBER_SYMBOLIZER_DEMANGLE_H
#define EMBER_SYMBOLIZER_DEMANGLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Mangled names longer than this are left as they are (the demangler recurses). */
#define DEMANGLE_MAX_INPUT 4096

/* Cheap prefix test: "_Z", "__Z" (Mach-O style), "_R" (Rust v0). */
bool demangle__looks_mangled(const char *name);

/* Demangled copy (malloc'd, caller frees), or NULL if name is not mangled or not demanglable. */
char *demangle__dup(const char *name);

/* Strings that outlived a full cache: freed together by the caller at a safe point. */
struct dm_scratch {
	char **v;
	size_t n, cap;
};
void dm_scratch__clear(struct dm_scratch *s);

struct dm_cache;

struct dm_stats {
	uint64_t demangled;      /* names demangled (cache fills + scratch) */
	uint64_t not_mangled;    /* looked mangled but the demangler refused */
	uint64_t scratch;        /* demangled while the cache was full */
};

/* max_bytes: heap the cache may hold (0 = 16 MiB).  NULL on ENOMEM. */
struct dm_cache *dm_cache__new(size_t max_bytes);

/*
 * Display name of symbol idx whose raw name is `name`: the demangled form
 * (cached) or name itself.  If the cache is full, a new demangled name is
 * pushed to *scratch instead (or name is returned if even that fails).
 */
const char *dm_cache__get(struct dm_cache *c, size_t idx, const char *name, struct dm_scratch *scratch,
			  struct dm_stats *st);
size_t dm_cache__memory(const struct dm_cache *c);
/* Accepts NULL.  Returns NULL. */
struct dm_cache *dm_cache__free(struct dm_cache *c);

#endif
