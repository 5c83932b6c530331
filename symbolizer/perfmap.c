#include "symbolizer/perfmap.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "symbolizer/lines.h"
#include "symbolizer/tables.h"

/* Entries overlapping an address are searched this far back from the last start <= addr. */
#define LOOKBACK 16

struct pm_entry {
	uint64_t start, size;
	uint32_t seq;    /* line order: the newest covering entry wins */
	uint32_t name;   /* arena offset */
};

struct perf_map {
	struct pm_entry *e;
	size_t n;
	char *arena;
	size_t arena_len;
	struct perf_map_stats st;
};

/* Hex number then exactly one space; no overflow. */
static int parse_hex(const char **p, const char *end, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v;

	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (lines__parse_hex(&s, end, &v) || s >= end || *s != ' ')
		return -EINVAL;
	*ret = v;
	*p = s + 1;
	return 0;
}

int perf_map__parse_line(const char *line, size_t len, uint64_t *ret_start, uint64_t *ret_size,
			 const char **ret_name, size_t *ret_name_len)
{
	const char *p = line, *end = line + len;
	uint64_t start, size;

	if (!line)
		return -EINVAL;
	if (len && end[-1] == '\r')
		end--;
	if (parse_hex(&p, end, &start) || parse_hex(&p, end, &size))
		return -EINVAL;
	if (size == 0 || start + size < start || p >= end)
		return -EINVAL;
	if ((size_t)(end - p) > PERF_MAP_MAX_NAME || memchr(p, '\0', (size_t)(end - p)))
		return -EINVAL;
	*ret_start = start;
	*ret_size = size;
	*ret_name = p;
	*ret_name_len = (size_t)(end - p);
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct pm_entry *x = a, *y = b;

	return tables__cmp_u64(x->start, y->start) ?: tables__cmp_u64(x->seq, y->seq);
}

struct perf_map *perf_map__read(int fd, size_t max_entries, size_t max_bytes)
{
	_cleanup_free_ struct line_reader *lr = NULL;
	_cleanup_free_ struct pm_entry *e = NULL;
	_cleanup_(tables__arena_freep) struct str_arena arena = { 0 };
	_cleanup_free_ struct perf_map *pm = NULL;
	size_t n = 0, cap = 0, w;
	bool sorted = true;
	const char *line;
	size_t len;
	int r;

	lr = line_reader__new(fd);
	if (!lr)
		return NULL;
	if (!max_entries)
		max_entries = PERF_MAP_DEFAULT_MAX_ENTRIES;
	if (max_entries > UINT32_MAX)
		max_entries = UINT32_MAX;
	if (!max_bytes)
		max_bytes = PERF_MAP_DEFAULT_MAX_BYTES;
	if (max_bytes > UINT32_MAX)
		max_bytes = UINT32_MAX;
	pm = calloc(1, sizeof(*pm));
	if (!pm)
		return NULL;
	while ((r = line_reader__next(lr, &line, &len)) > 0) {
		uint64_t start, size;
		const char *name;
		size_t nlen, off;

		pm->st.lines++;
		if (perf_map__parse_line(line, len, &start, &size, &name, &nlen)) {
			pm->st.bad_lines++;
			continue;
		}
		if (n >= max_entries || arena.len + nlen + 1 > max_bytes) {
			pm->st.dropped++;
			continue;
		}
		if (n == cap && tables__grow(&e, sizeof(*e), &cap, 256)) {
			errno = ENOMEM;
			return NULL;
		}
		if (tables__add_string(&arena, name, nlen, 16384, SIZE_MAX, &off)) {
			errno = ENOMEM;
			return NULL;
		}
		e[n] = (struct pm_entry){ .start = start, .size = size, .seq = (uint32_t)n, .name = (uint32_t)off };
		if (n && e[n - 1].start > start)
			sorted = false;
		n++;
	}
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	pm->st.overlong_lines = lr->overlong;
	pm->st.bytes = lr->bytes;
	if (!sorted)
		qsort(e, n, sizeof(*e), cmp_entry);
	/* Same start: only the newest matters. */
	w = 0;
	for (size_t i = 0; i < n; i++) {
		if (w && e[w - 1].start == e[i].start)
			w--;
		e[w++] = e[i];
	}
	pm->st.entries = w;
	pm->n = w;
	pm->e = TAKE_PTR(e);
	pm->arena_len = arena.cap;
	pm->arena = TAKE_PTR(arena.buf);
	return TAKE_PTR(pm);
}

int perf_map__lookup(const struct perf_map *pm, uint64_t addr, const char **ret_name, uint64_t *ret_offset)
{
	const struct pm_entry *best = NULL;
	size_t lo;

	if (!pm || !pm->n)
		return -ENOENT;
	lo = TABLES_UPPER_BOUND(pm->e, pm->n, start, addr);
	for (size_t i = lo, k = 0; i > 0 && k < LOOKBACK; i--, k++) {
		const struct pm_entry *x = &pm->e[i - 1];

		if (addr - x->start < x->size && (!best || x->seq > best->seq))
			best = x;
	}
	if (!best)
		return -ENOENT;
	*ret_name = pm->arena + best->name;
	*ret_offset = addr - best->start;
	return 0;
}

size_t perf_map__count(const struct perf_map *pm)
{
	return pm ? pm->n : 0;
}

void perf_map__stats(const struct perf_map *pm, struct perf_map_stats *ret)
{
	if (pm)
		*ret = pm->st;
	else
		*ret = (struct perf_map_stats){ 0 };
}

size_t perf_map__memory(const struct perf_map *pm)
{
	return pm ? sizeof(*pm) + pm->n * sizeof(*pm->e) + pm->arena_len : 0;
}

struct perf_map *perf_map__free(struct perf_map *pm)
{
	if (!pm)
		return NULL;
	free(pm->e);
	free(pm->arena);
	free(pm);
	return NULL;
}
