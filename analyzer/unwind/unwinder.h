/*
 * The analyzer's half of unwinding without frame pointers: for each target
 * process of a stack task, the executable mappings (through the collector's
 * fd broker, never a path) -> unwind rows from each file's .eh_frame
 * (analyzer/unwind/eh_frame.h) -> the collector, which checks and stores them
 * (collector/unwind_store.h) and walks the process's stacks with them.
 *
 * A table is keyed by the file's build id (or, without one, its device,
 * inode, size and modification time), so a library shared by a hundred
 * processes is built and sent once; the collector answers whether it holds
 * a key already.  A mapping whose file has no call frame information, whose
 * table does not fit, or that is not a file (JIT code) is walked with frame
 * pointers; a process the collector has no room for is too, and counted.
 * unwinder__process() is cheap when nothing changed: it compares the
 * executable mappings with the last ones sent (dlopen, exec).
 */
#ifndef EMBER_ANALYZER_UNWIND_UNWINDER_H
#define EMBER_ANALYZER_UNWIND_UNWINDER_H

#include <stdint.h>

#include "common/ctl_client.h"

struct unwinder_opts {
	struct ctl_client *cc;   /* borrowed */
	uint32_t max_table_rows; /* a file with more rows is walked with frame pointers (0: UNWIND_MAX_TABLE_ROWS) */
	uint32_t max_procs;      /* processes tracked here (0: 1024) */
};

struct unwinder_stats {
	uint64_t procs;          /* processes whose mappings the collector took */
	uint64_t procs_refused;  /* ... it had no room for: frame pointers there */
	uint64_t tables_built;   /* files converted here */
	uint64_t tables_shared;  /* mappings whose table the collector held already */
	uint64_t rows_sent;
	uint64_t build_us;       /* time spent building tables */
	uint64_t maps_without_table; /* executable mappings walked with frame pointers */
	uint64_t errors;         /* a file unreadable, a table refused: counted per mapping */
};

struct unwinder;

/* NULL + errno. */
struct unwinder *unwinder__new(const struct unwinder_opts *o);
/*
 * Builds pid's tables when its executable mappings changed since the last
 * call, and gives the collector the mappings until it takes them (pid must
 * be a target of an attached stack task of this analyzer).  0 or -errno.
 */
int unwinder__process(struct unwinder *u, uint32_t pid);
/* pid is no longer profiled here (the collector frees its slot when its tasks end). */
void unwinder__forget(struct unwinder *u, uint32_t pid);
void unwinder__stats(const struct unwinder *u, struct unwinder_stats *ret);
/* Accepts NULL.  Returns NULL. */
struct unwinder *unwinder__free(struct unwinder *u);

#endif
