/*
 * /proc/<pid>/maps text as the analyzer reads it from a broker fd.  Each line
 * goes through the line parser (in an exact-size heap copy, so ASan sees any
 * read past the line), then the whole input through the table reader and
 * lookups.  Invariants: parsed ranges are non-empty, paths lie inside the
 * line, the table is sorted and a found entry contains the address.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbolizer/maps.h"

static int memfd = -1;
static volatile size_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	struct proc_maps *pm;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char *copy = malloc(len ? len : 1);
		struct maps_line m;

		if (!copy)
			abort();
		memcpy(copy, p, len);
		if (maps__parse_line(copy, len, &m) == 0) {
			if (m.start >= m.end || m.path < copy || m.path + m.path_len > copy + len)
				abort();
			sink += m.path_len + m.kind;
		}
		free(copy);
		p += len + 1;
	}

	if (memfd < 0) {
		memfd = memfd_create("fuzz_maps", MFD_CLOEXEC);
		if (memfd < 0)
			abort();
	}
	if (ftruncate(memfd, 0) || (size && pwrite(memfd, data, size, 0) != (ssize_t)size) ||
	    lseek(memfd, 0, SEEK_SET))
		abort();
	pm = proc_maps__read(memfd, size & 1 ? 4 : 0);
	if (!pm)
		return 0;
	for (size_t i = 0; i < proc_maps__count(pm); i++) {
		const struct maps_entry *e = proc_maps__entry(pm, i);
		int idx;

		if (i && e->start < proc_maps__entry(pm, i - 1)->start)
			abort();
		sink += strlen(e->path) + strlen(e->name);
		idx = proc_maps__find(pm, e->start);
		if (idx < 0)
			abort();
		e = proc_maps__entry(pm, (size_t)idx);
		if (!e)
			abort();
		sink += e->end - e->start;
	}
	for (size_t i = 0; i + 8 <= size && i < 128; i += 8) {
		uint64_t a;
		int idx;

		memcpy(&a, data + i, 8);
		idx = proc_maps__find(pm, a);
		if (idx >= 0) {
			const struct maps_entry *e = proc_maps__entry(pm, (size_t)idx);

			if (a < e->start || a >= e->end)
				abort();
		}
	}
	proc_maps__free(pm);
	return 0;
}
