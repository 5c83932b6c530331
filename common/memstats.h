/* Allocator and process memory figures, reported as agent meters. */
#ifndef EMBER_MEMSTATS_H
#define EMBER_MEMSTATS_H

#include <stdint.h>

struct memstats {
	int jemalloc;         /* 1 when the process runs on jemalloc */
	uint64_t allocated;   /* jemalloc stats.allocated */
	uint64_t resident;    /* jemalloc stats.resident */
	uint64_t rss;         /* VmRSS of the process */
	uint64_t rss_peak;    /* VmHWM */
};

int memstats__read(struct memstats *ret);

#endif
