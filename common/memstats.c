#include "common/memstats.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/*
 * Weak, so programs built without jemalloc (sanitizer builds, the CLI) link:
 * then mallctl is NULL and only the kernel's RSS figures are reported.
 */
extern int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
	__attribute__((weak));

int memstats__read(struct memstats *ret)
{
	char line[256];
	FILE *f;

	memset(ret, 0, sizeof(*ret));
	if (mallctl) {
		uint64_t epoch = 1;
		size_t sz = sizeof(epoch), v, vs = sizeof(v);
		/* Statistics are cached; bumping the epoch refreshes them. */
		mallctl("epoch", &epoch, &sz, &epoch, sz);
		if (!mallctl("stats.allocated", &v, &vs, NULL, 0)) {
			ret->jemalloc = 1;
			ret->allocated = v;
		}
		vs = sizeof(v);
		if (!mallctl("stats.resident", &v, &vs, NULL, 0))
			ret->resident = v;
	}
	f = fopen("/proc/self/status", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long kb;
		if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
			ret->rss = kb * 1024;
		else if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
			ret->rss_peak = kb * 1024;
	}
	fclose(f);
	return 0;
}
