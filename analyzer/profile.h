/*
 * The stack -> profile builder: stack records from the ring (one per unique
 * stack per process and flush window, aggregated in the kernel) become
 * symbolized StackSamples of their task, and each task's window goes to the
 * exporter when the collector marks the window's end.
 *
 * Ring records are untrusted input (a misbehaving producer could write
 * anything): every length is checked, and a record that does not add up is
 * skipped and refused (-EBADMSG): the ring's reader counts it.
 */
#ifndef EMBER_ANALYZER_PROFILE_H
#define EMBER_ANALYZER_PROFILE_H

#include <stdint.h>

#include "analyzer/publisher.h"
#include "analyzer/python/py_names.h"
#include "analyzer/tasks.h"
#include "common/counters.h"
#include "symbolizer/symbolizer.h"

enum profile_stat {
	PS_STACKS,           /* stack records */
	PS_STACKS_NO_TASK,   /* ... of a process no task (any more) wants */
	PS_WINDOW_CAP_DROPS, /* stacks over the per-window cap */
	PS_FRAMES,           /* frames symbolized */
	PS_FRAMES_UNKNOWN,   /* ... left as module+offset */
	PS_TRACING_FRAMES,   /* BPF and tracing glue frames removed from kernel stacks */
	PS_PY_FRAMES,        /* Python frames placed (bpf/py_abi.h) */
	PS_PY_UNNAMED,       /* ... without names (their record lost): "[python]" */
	PS_PY_UNPLACED,      /* ... beyond the native stack's interpreter frames: put at its outer end */
	PS_PY_NAMES_BAD,     /* EMBER_REC_PYCODE records that did not add up */
	PS_MAX
};

struct profile_builder;

/* tm is borrowed, to find a record's task; py (borrowed) names Python frames.  NULL + errno. */
struct profile_builder *profile__new(struct symbolizer *sym, struct publisher *pub, struct task_mgr *tm,
				     unsigned max_tasks, const struct py_names *py);

/* Starts collecting for t; its first window starts at its start time.  0 or -ENOSPC. */
int profile__open(struct profile_builder *pb, const struct task_def *t);
/* One EMBER_REC_STACK record: 0, or -EBADMSG when its lengths do not add up. */
int profile__stack_record(struct profile_builder *pb, const void *data, uint32_t len);
/* One EMBER_REC_PYCODE record into names (the kinds' shared table): 0, or -EBADMSG (counted). */
int profile__py_code_record(struct profile_builder *pb, struct py_names *names, const void *data, uint32_t len);
/* The collector closed a window of this kind: every open task of it publishes its window. */
void profile__window_end(struct profile_builder *pb, uint32_t kind, uint64_t end_ns);
/* Publishes what is left of task_id's window and stops; totals go to *samples and *stacks. */
void profile__close(struct profile_builder *pb, const char *task_id, uint64_t end_ns, uint64_t *samples,
		    uint64_t *stacks);

void profile__stats(const struct profile_builder *pb, uint64_t ret[PS_MAX]);
/* Their names and natures (common/counters.h), by enum profile_stat. */
extern const struct counter_def profile_counters[PS_MAX];

/* Accepts NULL.  Returns NULL. */
struct profile_builder *profile__free(struct profile_builder *pb);

#endif
