/*
 * The task runner: starts a task (checks it, asks the collector to attach,
 * opens its profile, announces it), ends it (detach, drain the ring, publish
 * the last window, announce), ends tasks whose time is up or whose processes
 * are gone, and keeps the running tasks in a state file so that a restarted
 * analyzer resumes them.  Whoever submits a task (CLI, OAP poller, REST API,
 * triggers) goes through here.
 */
#ifndef EMBER_ANALYZER_RUNNER_H
#define EMBER_ANALYZER_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/kinds.h"
#include "analyzer/mappings.h"
#include "analyzer/publisher.h"
#include "analyzer/tasks.h"
#include "analyzer/python/py_finder.h"
#include "analyzer/java/jvm_finder.h"
#include "analyzer/tls/tls_finder.h"
#include "analyzer/unwind/unwinder.h"
#include "common/counters.h"
#include "common/ctl_client.h"
#include "symbolizer/symbolizer.h"

struct runner_opts {
	struct task_mgr *tm;
	struct ctl_client *cc;
	struct analyzer_kinds *kinds; /* what each kind does with its tasks */
	struct publisher *pub;
	struct symbolizer *sym;
	struct mappings *maps;    /* the mapping manager uw and tls are handlers of (NULL: neither) */
	struct unwinder *uw;      /* NULL: frame pointers only */
	struct py_finder *py;     /* NULL: no Python frames (follows uw's processes) */
	struct jvm_finder *jvm;   /* NULL: no Java agent (follows uw's processes) */
	struct tls_finder *tls;   /* NULL: no TLS plaintext */
	const char *run_dir;      /* the state file is <run_dir>/analyzer-<shard>.tasks */
	unsigned shard, nshards;
	/* Delivers everything in the ring (the collector drains a task's maps into it on detach). */
	void (*drain)(void *ctx);
	void *ctx;
};

struct task_runner;

/* Everything in o is borrowed; uw and tls are registered with maps here.  NULL + errno. */
struct task_runner *runner__new(const struct runner_opts *o);

/*
 * Starts def (id, kind, pids, times and parameters filled).  0, or -errno
 * with the reason in err: a pid gone or of another shard, a parameter out of
 * its bounds, a duplicate, no room, or what the collector refused.
 */
int runner__start(struct task_runner *r, struct task_def *def, char *err, size_t errlen);
/* Ends t (it is freed): why goes to the log ("duration reached", "cancelled"...). */
void runner__end(struct task_runner *r, struct task_def *t, const char *why);
/* Ends the tasks whose duration is over or whose processes have all exited. */
void runner__check(struct task_runner *r, uint64_t now_ms);
/* A followed process of task task_num_id exec'ed or mapped a file executable: its TLS libraries now, if its kind has them. */
void runner__maps_changed(struct task_runner *r, uint64_t task_num_id, uint32_t pid, bool soon);
/* Starts again the tasks of the state file that still have time left. */
void runner__restore(struct task_runner *r);
/* Ends every task and removes the state file (a clean stop resumes nothing). */
void runner__finish_all(struct task_runner *r, const char *why);

enum runner_stat {
	RUNS_STARTED,
	RUNS_FINISHED,
	RUNS_RUNNING,           /* a level: the task manager's tasks now */
	RUNS_MAX
};
/* Their names and natures (common/counters.h), by enum runner_stat. */
extern const struct counter_def runner_counters[RUNS_MAX];
void runner__stats(const struct task_runner *r, uint64_t ret[RUNS_MAX]);

/* Accepts NULL.  Returns NULL. */
struct task_runner *runner__free(struct task_runner *r);

#endif
