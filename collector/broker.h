/*
 * The fd broker: opens, on the analyzer's behalf, only files the analyzer
 * needs for symbolization.  It never takes a path from the analyzer.
 */
#ifndef EMBER_BROKER_H
#define EMBER_BROKER_H

#include <stddef.h>
#include <stdint.h>

/* /proc/<pid>/maps, read-only.  Returns an fd or -errno. */
int broker__open_maps(uint32_t pid);
/*
 * The file pid maps at exactly [start,end) with execute permission, opened
 * through /proc/<pid>/map_files (the kernel resolves the mapping; no path
 * string is involved).  -ENOENT if there is no such mapping, -EACCES if it is
 * not executable.  A process of another user keeps its map_files from the
 * collector (no CAP_DAC_READ_SEARCH): then the path of the kernel's maps
 * line, resolved inside the target's root, and only if the file opened is
 * the mapping's device and inode (-ESTALE otherwise).
 */
int broker__open_file(uint32_t pid, uint64_t start, uint64_t end);
int broker__open_kallsyms(void);
/*
 * Symbolizer depth.  Paths come from common/debugpath.h's fixed
 * patterns under /proc/<pid>/root; regular files only, opened O_NOFOLLOW on
 * the last component (a symlink in the target's tree could otherwise point
 * anywhere the collector may read; resolving through /proc/<pid>/root keeps
 * absolute links inside the target's root).
 *
 * perf map: /proc/<pid>/root/tmp/perf-<nspid>.map, nspid from NSpid in
 * /proc/<pid>/status.  build id: 2..64 bytes.  debuglink: name must pass
 * debugpath__valid_link_name(); the binary is the executable mapping
 * [start, end) of pid, its directory taken from the kernel
 * (readlink /proc/<pid>/map_files/<start>-<end>).  Return an fd or -errno.
 */
int broker__open_perf_map(uint32_t pid);
int broker__open_debug_build_id(uint32_t pid, const uint8_t *build_id, size_t len);
int broker__open_debuglink(uint32_t pid, uint64_t start, uint64_t end, const char *name);
/* Whether the range is an executable mapping of pid (reads only the
 * kernel-formatted "start-end perms" prefix of each maps line). */
int broker__is_exec_mapping(uint32_t pid, uint64_t start, uint64_t end);

#endif
