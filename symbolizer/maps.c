#include "symbolizer/maps.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "symbolizer/lines.h"
#include "symbolizer/tables.h"

#define MAPS_DEFAULT_MAX_ENTRIES 65536
#define DELETED_SUFFIX " (deleted)"

struct proc_maps {
	struct maps_entry *entries;
	size_t n;
	char *arena;
	size_t arena_len;
	struct proc_maps_stats stats;
};

/* Parses lowercase/uppercase hex up to `stop`; at least one digit, no overflow. */
static int parse_hex(const char **p, const char *end, char stop, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v;

	if (lines__parse_hex(&s, end, &v) || s >= end || *s != stop)
		return -EINVAL;
	*ret = v;
	*p = s + 1; /* skip the stop character */
	return 0;
}

static int parse_dec(const char **p, const char *end, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;
	size_t digits = 0;

	while (s < end && *s >= '0' && *s <= '9') {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
		digits++;
		s++;
	}
	if (!digits || (s < end && *s != ' '))
		return -EINVAL;
	*ret = v;
	*p = s;
	return 0;
}

int maps__parse_line(const char *line, size_t len, struct maps_line *ret)
{
	const char *p = line, *end = line + len;
	struct maps_line m = { 0 };
	uint64_t maj, min;
	static const char *const perm_chars = "rwx";

	if (!line || !ret)
		return -EINVAL;
	if (parse_hex(&p, end, '-', &m.start) || parse_hex(&p, end, ' ', &m.end))
		return -EINVAL;
	if (m.start >= m.end)
		return -EINVAL;
	if (end - p < 5 || p[4] != ' ')
		return -EINVAL;
	for (int i = 0; i < 3; i++) {
		if (p[i] == perm_chars[i])
			m.perms |= 1u << i;
		else if (p[i] != '-')
			return -EINVAL;
	}
	if (p[3] == 's')
		m.perms |= MAPS_PERM_SHARED;
	else if (p[3] != 'p')
		return -EINVAL;
	p += 5;
	if (parse_hex(&p, end, ' ', &m.offset) || parse_hex(&p, end, ':', &maj) ||
	    parse_hex(&p, end, ' ', &min))
		return -EINVAL;
	if (maj > UINT32_MAX || min > UINT32_MAX)
		return -EINVAL;
	m.dev_major = (uint32_t)maj;
	m.dev_minor = (uint32_t)min;
	if (parse_dec(&p, end, &m.inode))
		return -EINVAL;
	while (p < end && *p == ' ')
		p++;
	m.path = p;
	m.path_len = (size_t)(end - p);
	if (memchr(m.path, '\0', m.path_len))
		return -EINVAL;

	if (m.path_len == 0) {
		m.kind = MAPS_ANON;
	} else if (m.path[0] == '/') {
		size_t sl = sizeof(DELETED_SUFFIX) - 1;

		m.kind = MAPS_FILE;
		if (m.path_len > sl && !memcmp(m.path + m.path_len - sl, DELETED_SUFFIX, sl)) {
			m.deleted = true;
			m.path_len -= sl;
		}
	} else if (m.path_len == 6 && !memcmp(m.path, "[vdso]", 6)) {
		m.kind = MAPS_VDSO;
	} else {
		m.kind = MAPS_SPECIAL;
	}
	*ret = m;
	return 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct maps_entry *x = a, *y = b;

	return tables__cmp_u64(x->start, y->start) ?: tables__cmp_u64(x->end, y->end);
}

struct proc_maps *proc_maps__read(int fd, size_t max_entries)
{
	_cleanup_free_ struct line_reader *lr = NULL;
	_cleanup_free_ struct maps_entry *entries = NULL;
	_cleanup_(tables__arena_freep) struct str_arena arena = { 0 };
	_cleanup_free_ struct proc_maps *pm = NULL;
	size_t n = 0, cap = 0;
	bool sorted = true;
	const char *line;
	size_t len;
	int r;

	lr = line_reader__new(fd);
	if (!lr)
		return NULL;
	if (!max_entries)
		max_entries = MAPS_DEFAULT_MAX_ENTRIES;
	if (max_entries > INT32_MAX) /* proc_maps__find() returns an int index */
		max_entries = INT32_MAX;
	pm = calloc(1, sizeof(*pm));
	if (!pm)
		return NULL;
	while ((r = line_reader__next(lr, &line, &len)) > 0) {
		struct maps_line m;
		struct maps_entry *e;
		size_t off;

		pm->stats.lines++;
		if (maps__parse_line(line, len, &m)) {
			pm->stats.bad_lines++;
			continue;
		}
		if (n >= max_entries) {
			pm->stats.dropped_entries++;
			continue;
		}
		if (n == cap && tables__grow(&entries, sizeof(*entries), &cap, 64)) {
			errno = ENOMEM;
			return NULL;
		}
		if (tables__add_string(&arena, m.path, m.path_len, 4096, SIZE_MAX, &off)) {
			errno = ENOMEM;
			return NULL;
		}
		e = &entries[n];
		*e = (struct maps_entry){
			.start = m.start, .end = m.end, .offset = m.offset, .inode = m.inode,
			.dev_major = m.dev_major, .dev_minor = m.dev_minor,
			.perms = m.perms, .kind = m.kind, .deleted = m.deleted,
		};
		/* Offsets for now: the arena may still move. */
		e->path = (const char *)(uintptr_t)off;
		if (n && cmp_entry(&entries[n - 1], e) > 0)
			sorted = false;
		n++;
	}
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	pm->stats.overlong_lines = lr->overlong;
	if (!sorted)
		qsort(entries, n, sizeof(*entries), cmp_entry);
	if (!arena.buf) {
		arena.buf = malloc(1);
		if (!arena.buf) {
			errno = ENOMEM;
			return NULL;
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct maps_entry *e = &entries[i];
		const char *path = arena.buf + (uintptr_t)e->path;
		const char *slash;

		e->path = path;
		switch (e->kind) {
		case MAPS_ANON:
			e->name = "[anon]";
			break;
		case MAPS_FILE:
			slash = strrchr(path, '/');
			e->name = slash && slash[1] ? slash + 1 : path;
			break;
		default:
			e->name = path;
			break;
		}
	}
	pm->entries = TAKE_PTR(entries);
	pm->n = n;
	pm->arena_len = arena.cap;
	pm->arena = TAKE_PTR(arena.buf);
	return TAKE_PTR(pm);
}

int proc_maps__find(const struct proc_maps *pm, uint64_t addr)
{
	size_t lo;

	if (!pm)
		return -ENOENT;
	/* First entry with start > addr; the candidate is the one before it. */
	lo = TABLES_UPPER_BOUND(pm->entries, pm->n, start, addr);
	if (lo == 0)
		return -ENOENT;
	/* Overlaps are not produced by the kernel; still look back a little. */
	for (size_t i = lo, k = 0; i > 0 && k < 4; i--, k++) {
		const struct maps_entry *e = &pm->entries[i - 1];

		if (addr >= e->start && addr < e->end)
			return (int)(i - 1);
	}
	return -ENOENT;
}

size_t proc_maps__count(const struct proc_maps *pm)
{
	return pm ? pm->n : 0;
}

const struct maps_entry *proc_maps__entry(const struct proc_maps *pm, size_t idx)
{
	return pm && idx < pm->n ? &pm->entries[idx] : NULL;
}

void proc_maps__stats(const struct proc_maps *pm, struct proc_maps_stats *ret)
{
	if (pm)
		*ret = pm->stats;
	else
		*ret = (struct proc_maps_stats){ 0 };
}

uint64_t proc_maps__exec_signature(const struct proc_maps *pm)
{
	uint64_t h = 14695981039346656037ull;

	for (size_t i = 0; pm && i < pm->n; i++) {
		const struct maps_entry *e = &pm->entries[i];
		uint64_t v[4] = { e->start, e->end, e->offset, e->inode };
		const unsigned char *b = (const unsigned char *)v;

		if (!(e->perms & MAPS_PERM_X))
			continue;
		for (size_t k = 0; k < sizeof(v); k++)
			h = (h ^ b[k]) * 1099511628211ull;
	}
	return h | 1;
}

struct proc_maps *proc_maps__free(struct proc_maps *pm)
{
	if (!pm)
		return NULL;
	free(pm->entries);
	free(pm->arena);
	free(pm);
	return NULL;
}
