/*
 * The REST API's flamegraph feature at work: the processes its snoopers
 * select, and the profiling tasks that give gala-gopher's flame graph
 * files, one set per svg_period.
 *
 * Snoopers select, as their union: the listed pids that exist; processes
 * whose /proc/<pid>/comm equals a proc_name's comm and whose command line
 * contains its cmdline (either may be empty, not both); processes whose
 * /proc/<pid>/cgroup names a listed container_id or pod_id.  Matching runs
 * again every scan interval: a process that starts later is profiled from
 * then on, within the period.
 *
 * Each running sub-item (oncpu, offcpu, mem) has periods of svg_period:
 * at a period's start one task covers the selected processes for the
 * period (multi_instance: one task per process); a process selected during
 * the period gets a task of its own until the period's end.  Tasks carry
 * Task.flame (the directories and names the exporter writes them under)
 * and origin "rest"; they are submitted to the analyzers that own their
 * processes (common/task_submit.h).  A new configuration cancels the
 * tasks of the old one.  Bounded: at most max_pids selected processes (more
 * are counted).  Runs on the REST thread; not thread-safe.
 */
#ifndef EMBER_ANALYZER_REST_REST_FLAME_H
#define EMBER_ANALYZER_REST_REST_FLAME_H

#include <stdint.h>

#include "analyzer/rest/rest_doc.h"

struct rest_flame_opts {
	const char *run_dir;		/* the agent's, for its analyzers' endpoints */
	unsigned analyzers;
	const char *proc_root;		/* NULL: "/proc" */
	uint64_t scan_ms;		/* 0: 2000 */
	unsigned max_pids;		/* 0: 1024 */
	uint32_t self_uid;		/* never: processes of ember's own user (0: none excluded) */
};

struct rest_flame_stats {
	uint64_t tasks_started, task_failures, tasks_cancelled, selected, over_limit, scans;
	char last_error[512];
};

struct rest_flame;

/* NULL + errno.  zctx: a ZeroMQ context of the calling thread's process. */
struct rest_flame *rest_flame__new(const struct rest_flame_opts *o, void *zctx);
/* What it started ends by itself (within svg_period).  Accepts NULL; returns NULL. */
struct rest_flame *rest_flame__free(struct rest_flame *f);
/* The feature's whole new configuration (cancels the old one's tasks). */
void rest_flame__set(struct rest_flame *f, const struct rest_doc *d);
/* Scans and starts periods when due (monotonic ms). */
void rest_flame__tick(struct rest_flame *f, uint64_t now_ms);
void rest_flame__stats(const struct rest_flame *f, struct rest_flame_stats *ret);
/*
 * The output directories of d can be written: each is created (with its
 * parents) if missing.  0, or -errno with the directory and why in err.
 */
int rest_flame__check_dirs(const struct rest_doc *d, char *err, size_t errlen);

#endif
