/*
 * Perf maps: /tmp/perf-<pid>.map as written by JIT runtimes (node
 * --perf-basic-prof, Java perf-map agents, LuaJIT, ...), one symbol a line:
 *
 *   START SIZE NAME        START and SIZE in hex (optional 0x), NAME to end of line
 *
 * The text comes from the profiled process and is untrusted: lines are
 * bounded (LINES_MAX_LEN), names capped at PERF_MAP_MAX_NAME bytes (longer
 * ones are skipped and counted), entries capped, ranges that wrap are
 * rejected.  Later lines win over earlier ones for the same address (a JIT
 * reuses code memory), so the table keeps the line number of each entry.
 * Library code: no logging.  Names live until perf_map__free().
 */
#ifndef EMBER_SYMBOLIZER_PERFMAP_H
#define EMBER_SYMBOLIZER_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

#define PERF_MAP_MAX_NAME 1024
#define PERF_MAP_DEFAULT_MAX_ENTRIES (1u << 20)
#define PERF_MAP_DEFAULT_MAX_BYTES ((size_t)64 << 20)

struct perf_map;

struct perf_map_stats {
	uint64_t lines, entries;
	uint64_t bad_lines;      /* malformed, zero size, wrapping range, name too long */
	uint64_t overlong_lines; /* longer than the line reader's buffer */
	uint64_t dropped;        /* over max_entries or max_bytes */
	uint64_t bytes;          /* bytes read */
};

/* One line; *ret_name points into line (not NUL-terminated).  0 or -EINVAL. */
int perf_map__parse_line(const char *line, size_t len, uint64_t *ret_start, uint64_t *ret_size,
			 const char **ret_name, size_t *ret_name_len);

/*
 * Reads a whole perf map from fd (not closed), at most max_entries entries
 * (0 = PERF_MAP_DEFAULT_MAX_ENTRIES) and max_bytes of names
 * (0 = PERF_MAP_DEFAULT_MAX_BYTES).  NULL+errno on read or memory error.
 */
struct perf_map *perf_map__read(int fd, size_t max_entries, size_t max_bytes);

/* The newest entry containing addr: 0 with its name and addr - start, or -ENOENT. */
int perf_map__lookup(const struct perf_map *pm, uint64_t addr, const char **ret_name, uint64_t *ret_offset);
size_t perf_map__count(const struct perf_map *pm);
void perf_map__stats(const struct perf_map *pm, struct perf_map_stats *ret);
size_t perf_map__memory(const struct perf_map *pm);
/* Accepts NULL.  Returns NULL. */
struct perf_map *perf_map__free(struct perf_map *pm);

#endif
