/*
 * The processes a REST feature's snoopers select, as their union: the
 * listed pids that exist; processes whose /proc/<pid>/comm equals a
 * proc_name's comm and whose command line contains its cmdline (either may
 * be empty, not both); processes whose container (common/cgroup_id.h, from
 * /proc/<pid>/cgroup) has a listed container_id, in full or as its prefix
 * (docker's short id), or whose pod has a listed pod_id.
 * Processes of self_uid (ember's own) and kernel threads (no command line)
 * are never selected.  /proc is read with bounded buffers; a process that
 * exits meanwhile is skipped.
 */
#ifndef EMBER_ANALYZER_REST_REST_SELECT_H
#define EMBER_ANALYZER_REST_REST_SELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzer/rest/rest_doc.h"

/*
 * Fills sel (sorted) with at most max selected pids and returns how many;
 * *over gets how many more there were.  proc_root NULL: "/proc"; self_uid 0:
 * no user excluded.
 */
unsigned rest_select__scan(const struct rest_doc *d, const char *proc_root, uint32_t self_uid, uint32_t *sel,
			   unsigned max, uint64_t *over);

/* Whether pid is among the n pids of sel (sorted, as the scan leaves it). */
bool rest_select__has(const uint32_t *sel, unsigned n, uint32_t pid);

#endif
