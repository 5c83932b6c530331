/*
 * The names of a profiling task's files, in one place: the file backend
 * writes them under <ember.output_dir>/<task id>/, and `ember profile`
 * copies them from there to --out.
 *
 *   <kind>.folded / <kind>.svg              weighted by samples, blocked time or faults
 *   <kind>.count.folded / <kind>.count.svg  off-CPU only: weighted by the number of switches
 *   network.json / network.txt              network only (no flame graphs): every report's
 *                                           flows, connections and exchanges as JSON lines,
 *                                           and a readable summary (exporter/net_report.h)
 *   threads.json / threads.html             thread profiling only: its events as JSON lines
 *                                           (one per thread and window), and the timeline
 *                                           (exporter/thread_timeline.h)
 *   task.json                               written last: its presence means the rest is final
 *
 * <kind> is the kind's name, and which files a kind has its row's files
 * (common/profile_kind.h).  The task's own files come before PF_TASK_JSON,
 * so a loop up to it visits every one of them.
 */
#ifndef EMBER_COMMON_PROFILE_FILES_H
#define EMBER_COMMON_PROFILE_FILES_H

#include <stddef.h>
#include "proto/ember.pb-c.h"

enum profile_file {
	PF_FOLDED, PF_SVG, PF_COUNT_FOLDED, PF_COUNT_SVG, PF_NETWORK_JSON, PF_NETWORK_TXT, PF_THREADS_JSON, PF_TIMELINE_HTML,
	PF_TASK_JSON, PF_MAX
};

#define PROFILE_FILES_DONE "task.json"

/* The kind's name ("oncpu", ...), or "profile" for a number that is no kind. */
const char *profile_files__kind(Ember__TaskKind kind);

/*
 * The file's name for a task of this kind into buf.  Returns its length, or
 * -ENOENT when a task of this kind has no such file (a count-weighted graph
 * of an on-CPU task, a flame graph of a network task), -EINVAL for a number
 * that is no kind or no file, -ENAMETOOLONG when buf is short.
 */
int profile_files__name(Ember__TaskKind kind, enum profile_file f, char *buf, size_t len);

#endif
