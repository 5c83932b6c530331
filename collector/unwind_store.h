/*
 * Unwind tables in the collector: which tables the BPF maps hold, where, who
 * uses them, and which target processes are walked with them.  The analyzer
 * builds tables (unprivileged); this module only checks what it is sent --
 * table ids, row counts and order, row types, mapping order and overlap,
 * ownership -- and writes the maps through the callbacks.  A table is
 * written once, in order, by the shard that reserved it, and is read-only
 * when complete; tables no process uses stay as a cache and are evicted,
 * least recently used first, when a new table needs the room.
 *
 * Bounds: max_rows rows in all (the rows' array map), max_procs processes,
 * UNWIND_STORE_MAX_TABLES tables.  When a table or process does not fit the
 * answer is -ENOSPC and it is counted: that process walks frame pointers.
 */
#ifndef EMBER_COLLECTOR_UNWIND_STORE_H
#define EMBER_COLLECTOR_UNWIND_STORE_H

#include <stdint.h>

#include "bpf/unwind_abi.h"
#include "common/ctl_proto.h"

#define UNWIND_STORE_MAX_TABLES 4096

struct unwind_store_ops {
	/* Writes rows[0..n) at index first of the rows' map. 0 or -errno. */
	int (*write_rows)(void *ctx, uint32_t first, const struct unwind_row *rows, uint32_t n);
	/* Sets (p != NULL) or clears the process's slot. 0 or -errno. */
	int (*set_proc)(void *ctx, uint32_t tgid, uint32_t slot, const struct unwind_proc *p);
	void *ctx;
};

struct unwind_store_stats { uint64_t tables, rows, rows_max, procs, refused; };

struct unwind_store;

/*
 * NULL + errno (EINVAL: a bound is 0).  A table becomes evictable grace_ns
 * after it was last written or last used by a process: an analyzer sending
 * a process's tables one after the other never sees the first evicted for
 * the last (then a table that does not fit is refused instead).
 */
struct unwind_store *unwind_store__new(uint32_t max_rows, uint32_t max_procs, uint64_t grace_ns,
				       const struct unwind_store_ops *ops);
/*
 * The table with this key: its id and whether it is complete; with nrows > 0
 * and no such table, reserves room for nrows rows, owned by shard until
 * complete.  -ENOENT (look-up only, unknown), -EBUSY (another shard is
 * writing it), -ENOSPC, -EINVAL.
 */
int unwind_store__table(struct unwind_store *us, uint32_t shard, const struct ctl_unwind_table *req,
			struct ctl_unwind_table_ans *ans);
/* A chunk of rows; -EINVAL (bad id, owner, order, count or type), -EALREADY (complete). */
int unwind_store__rows(struct unwind_store *us, uint32_t shard, const struct ctl_unwind_rows *req);
/* A process's mappings (pid already checked as the caller's target); -EINVAL, -ENOSPC. */
int unwind_store__proc(struct unwind_store *us, const struct ctl_unwind_proc *req);
/* The process is no longer a stack target: its slot is freed, its tables unreferenced. */
void unwind_store__forget(struct unwind_store *us, uint32_t tgid);
void unwind_store__stats(const struct unwind_store *us, struct unwind_store_stats *ret);
/* Accepts NULL.  Returns NULL. */
struct unwind_store *unwind_store__free(struct unwind_store *us);

#endif
