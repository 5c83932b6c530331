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
 *
 * The unwinder is a handler of the mapping manager (analyzer/mappings.h),
 * which reads a followed process's maps and opens its files: it examines
 * each file once (its key, PT_LOAD segments, and its table built and sent
 * unless the collector holds it), and at each change of a process's
 * executable mappings (dlopen, exec) builds the process's mappings with
 * their tables; the collector is asked whether it still holds a cached
 * file's table at each such change (a table it evicted is built again).
 * The mappings go to the collector until it takes them, at every look.
 */
#ifndef EMBER_ANALYZER_UNWIND_UNWINDER_H
#define EMBER_ANALYZER_UNWIND_UNWINDER_H

#include <stdint.h>

#include "analyzer/mappings.h"
#include "common/counters.h"
#include "common/ctl_client.h"

struct unwinder_opts {
	struct ctl_client *cc;   /* borrowed */
	uint32_t max_table_rows; /* a file with more rows is walked with frame pointers (0: UNWIND_MAX_TABLE_ROWS) */
	uint32_t max_procs;      /* processes tracked here (0: 1024) */
};

/* Its counters (common/counters.h), by enum unwinder_stat. */
enum unwinder_stat {
	UNWS_PROCS,              /* processes whose mappings the collector took */
	UNWS_PROCS_REFUSED,      /* ... it had no room for: frame pointers there */
	UNWS_TABLES_BUILT,       /* files converted here */
	UNWS_TABLES_SHARED,      /* mappings whose table the collector held already */
	UNWS_ROWS_SENT,
	UNWS_BUILD_US,           /* time spent building tables (published in seconds) */
	UNWS_MAPS_WITHOUT_TABLE, /* executable mappings walked with frame pointers */
	UNWS_ERRORS,             /* a file unreadable, a table refused: counted per mapping */
	UNWS_MAX
};
extern const struct counter_def unwinder_counters[UNWS_MAX];

struct unwinder;

/* NULL + errno. */
struct unwinder *unwinder__new(const struct unwinder_opts *o);
/*
 * The manager's handler (ctx = u; no report): follow the targets of
 * attached stack tasks with it, tag 0.  A look's result is 0 or -errno
 * (-ENOSPC: no room here or in the collector: frame pointers).  Unfollowing
 * forgets the process (the collector frees its slot when its tasks end).
 */
void unwinder__handler(struct unwinder *u, struct mappings_handler *ret);
void unwinder__stats(const struct unwinder *u, uint64_t ret[UNWS_MAX]);
/* Accepts NULL.  Returns NULL. */
struct unwinder *unwinder__free(struct unwinder *u);

#endif
