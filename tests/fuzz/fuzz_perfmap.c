/*
 * Perf maps are text written by the profiled process (untrusted): each line
 * through the line parser in an exact-size copy, then the whole input through
 * the table reader and lookups.  Invariants: parsed names lie inside the line
 * and are non-empty, a found entry contains the address and its name is a
 * NUL-terminated string of at most PERF_MAP_MAX_NAME bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbolizer/perfmap.h"

static int memfd = -1;
static volatile size_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	struct perf_map *pm;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char *copy = malloc(len ? len : 1);
		uint64_t start, sz;
		const char *name;
		size_t nlen;

		if (!copy)
			abort();
		memcpy(copy, p, len);
		if (perf_map__parse_line(copy, len, &start, &sz, &name, &nlen) == 0) {
			if (!sz || start + sz < start || !nlen || name < copy || name + nlen > copy + len)
				abort();
			sink += nlen;
		}
		free(copy);
		p += len + 1;
	}
	if (memfd < 0) {
		memfd = memfd_create("fuzz_perfmap", MFD_CLOEXEC);
		if (memfd < 0)
			abort();
	}
	if (ftruncate(memfd, 0) || (size && pwrite(memfd, data, size, 0) != (ssize_t)size) ||
	    lseek(memfd, 0, SEEK_SET))
		abort();
	pm = perf_map__read(memfd, size & 1 ? 3 : 0, size & 2 ? 64 : 0);
	if (!pm)
		return 0;
	for (size_t i = 0; i + 8 <= size && i < 256; i += 4) {
		const char *name;
		uint64_t a, off;

		memcpy(&a, data + i, 8);
		if (perf_map__lookup(pm, a, &name, &off) == 0) {
			if (off > a || strlen(name) > PERF_MAP_MAX_NAME)
				abort();
			sink += off;
		}
	}
	sink += perf_map__memory(pm) + perf_map__count(pm);
	perf_map__free(pm);
	return 0;
}
