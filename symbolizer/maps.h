/*
 * /proc/<pid>/maps: line parser and a per-process table sorted by address.
 *
 * The table copies every path into one arena; entry strings live until
 * proc_maps__free().  Library code: no logging; malformed lines are skipped
 * and counted, never fatal.  Not thread-safe.
 */
#ifndef EMBER_SYMBOLIZER_MAPS_H
#define EMBER_SYMBOLIZER_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum maps_kind {
	MAPS_ANON = 0,   /* no path */
	MAPS_FILE,       /* absolute path of a file (possibly deleted) */
	MAPS_VDSO,       /* "[vdso]" */
	MAPS_SPECIAL,    /* other "[...]" ([heap], [stack], [vsyscall], [anon:x]) or non-file names */
};

#define MAPS_PERM_R 0x1
#define MAPS_PERM_W 0x2
#define MAPS_PERM_X 0x4
#define MAPS_PERM_SHARED 0x8

/* One parsed line; path points into the caller's line buffer (not NUL-terminated). */
struct maps_line {
	uint64_t start, end;   /* [start, end), start < end */
	uint64_t offset;       /* file offset of start */
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	uint32_t perms;        /* MAPS_PERM_* */
	enum maps_kind kind;
	bool deleted;          /* path ended in " (deleted)"; path_len excludes that suffix */
	const char *path;
	size_t path_len;
};

/* Returns 0, or -EINVAL if the line is not a well-formed maps line. */
int maps__parse_line(const char *line, size_t len, struct maps_line *ret);

struct maps_entry {
	uint64_t start, end, offset;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint32_t perms;
	enum maps_kind kind;
	bool deleted;
	const char *path;      /* NUL-terminated, "" for MAPS_ANON, without " (deleted)" */
	const char *name;      /* basename of path (or path itself for "[...]"), "[anon]" for MAPS_ANON */
};

struct proc_maps;

struct proc_maps_stats {
	uint64_t lines, bad_lines, overlong_lines, dropped_entries /* beyond max_entries */;
};

/*
 * Reads a whole maps file from fd (not closed) and keeps at most max_entries
 * entries (0 = 65536, the kernel's default vm.max_map_count is 65530).
 * Entries are sorted by start; overlapping entries are kept (a lookup finds
 * the one with the greatest start <= addr).  NULL+errno on read or memory error.
 */
struct proc_maps *proc_maps__read(int fd, size_t max_entries);

/* Index of the entry containing addr, or -ENOENT. */
int proc_maps__find(const struct proc_maps *pm, uint64_t addr);
size_t proc_maps__count(const struct proc_maps *pm);
const struct maps_entry *proc_maps__entry(const struct proc_maps *pm, size_t idx);
void proc_maps__stats(const struct proc_maps *pm, struct proc_maps_stats *ret);
/*
 * A hash of the executable mappings (start, end, offset, inode), never 0:
 * equal when nothing executable was mapped, unmapped or replaced (dlopen,
 * exec), for callers that redo work only then.
 */
uint64_t proc_maps__exec_signature(const struct proc_maps *pm);
/* Accepts NULL.  Returns NULL. */
struct proc_maps *proc_maps__free(struct proc_maps *pm);

#endif
