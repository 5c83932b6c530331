/*
 * The fd broker: opens, on the analyzer's behalf, only files the analyzer
 * needs for symbolization.  It never takes a path from the analyzer.
 */
#ifndef EMBER_BROKER_H
#define EMBER_BROKER_H

#include <stdint.h>

/* /proc/<pid>/maps, read-only.  Returns an fd or -errno. */
int broker__open_maps(uint32_t pid);
/*
 * The file pid maps at exactly [start,end) with execute permission, opened
 * through /proc/<pid>/map_files (the kernel resolves the mapping; no path
 * string is involved).  -ENOENT if there is no such mapping, -EACCES if it is
 * not executable.
 */
int broker__open_file(uint32_t pid, uint64_t start, uint64_t end);
int broker__open_kallsyms(void);
/* Whether the range is an executable mapping of pid (reads only the
 * kernel-formatted "start-end perms" prefix of each maps line). */
int broker__is_exec_mapping(uint32_t pid, uint64_t start, uint64_t end);

#endif
