/*
 * The task manager: what is being profiled, for how long.  Pure bookkeeping
 * (no I/O) so the CLI, the REST API, the OAP poller and continuous-profiling
 * triggers all drive the same object; and the task's wire form
 * (proto/ember.proto Task), the one place where the BPF task kinds and the
 * message's kinds meet.
 */
#ifndef EMBER_ANALYZER_TASKS_H
#define EMBER_ANALYZER_TASKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "common/ctl_proto.h"
#include "common/task_cause.h"
#include "proto/ember.pb-c.h"

#define TASK_ID_LEN 64
#define TASK_MAX_SAMPLINGS 16
#define TASK_URI_REGEX_MAX 256

/* A network task's sampling rule (proto NetSampling). */
struct task_sampling {
	char uri_regex[TASK_URI_REGEX_MAX];  /* "" = every URI */
	bool has_min_duration;
	uint64_t min_duration_ms;
	bool when_4xx, when_5xx;
	bool complete_request, complete_response;
	uint32_t max_request_size, max_response_size;
};

#define TASK_MAX_CAUSES 8

/* Why a continuous-profiling trigger started the task (proto TriggerCause). */

struct task_def {
	char id[TASK_ID_LEN];     /* printable, [A-Za-z0-9._:-] */
	uint64_t num_id;          /* id on the collector's side */
	uint32_t kind;            /* enum ember_task_kind */
	uint32_t npids;
	uint32_t pids[CTL_MAX_PIDS];
	uint64_t start_unix_ms;
	uint64_t duration_ms;
	uint64_t period_ns;
	uint64_t min_block_ns;       /* off-CPU: its noise filter; threads: the stack threshold */
	uint32_t thread_probes;      /* threads: the events it records (THREAD_P_*, bpf/threads_abi.h) */
	uint64_t report_interval_ms; /* network: period of its batches (0 = the config's) */
	uint32_t nsamplings;         /* network: HTTP sampling rules */
	struct task_sampling samplings[TASK_MAX_SAMPLINGS];
	char origin[16];
	uint32_t shards;          /* analyzers running this task (its pids span them); 0 = 1 */
	uint32_t attach_point;
	uint32_t ncauses;            /* origin "trigger" */
	struct task_cause causes[TASK_MAX_CAUSES];
	struct task_flame {          /* origin "rest": its flame graph files (proto FlameOutput) */
		bool set;
		char svg_dir[256], flame_dir[256];
		bool per_process;
		uint64_t period_start_unix_ms;
		uint32_t part;
		char pyroscope_server[256];
		bool java_only;      /* a Java process's stacks: its Java frames only (proto FlameOutput) */
	} flame;
	uint32_t gala;               /* origin "rest", network: bit i = gala-gopher table i (proto GalaTables) */
	char gala_l7_protocols[128]; /* ... l7 tables for these protocols only: names, comma-separated */
};

struct task_mgr;

struct task_mgr *task_mgr__new(unsigned max_tasks);
/* Validates and copies def.  -EINVAL (bad id/kind/pids/duration), -EEXIST (same
 * id, or a pid already profiled with the same kind), -ENOSPC (too many). */
int task_mgr__add(struct task_mgr *tm, const struct task_def *def, struct task_def **ret);
struct task_def *task_mgr__find(struct task_mgr *tm, const char *id);
struct task_def *task_mgr__find_pid(struct task_mgr *tm, uint32_t pid, uint32_t kind);
int task_mgr__remove(struct task_mgr *tm, const char *id);
/* Iteration: NULL past the end; removal during iteration is not allowed. */
struct task_def *task_mgr__at(struct task_mgr *tm, unsigned idx);
unsigned task_mgr__count(const struct task_mgr *tm);
/* Earliest end (unix ms) over all tasks, UINT64_MAX if none. */
uint64_t task_mgr__next_deadline(struct task_mgr *tm);
int task_def__valid_id(const char *id);
/*
 * A continuous-profiling monitor's capture (origin "monitor"): a NETWORK task
 * whose exchanges feed the L7 monitors only.  It captures the first
 * NET_PREFIX_PAYLOAD bytes of each call (CTL_ATTACH_F_PREFIX), publishes
 * nothing, is not resumed after a restart, and gives way to any other
 * NETWORK task on its process (whose exchanges feed the monitors as well).
 */
bool task_def__is_monitor(const struct task_def *t);
/*
 * A network task whose sampling rules ask for complete requests or
 * responses: its sampled traces carry the system calls behind them, with
 * the packets under each (Rover's "Syscall <name>" events).
 */
bool task_def__wants_calls(const struct task_def *t);
/* Accepts NULL.  Returns NULL. */
struct task_mgr *task_mgr__free(struct task_mgr *tm);

/* enum ember_task_kind <-> Ember__TaskKind (common/profile_kind.h); 0 / UNSPECIFIED for anything else. */
uint32_t task_kind__from_proto(Ember__TaskKind k);
Ember__TaskKind task_kind__to_proto(uint32_t kind);

/* The wire form; p borrows t's id, origin and pids (not the sampling rules: task_def__to_pb). */
void task_def__to_proto(const struct task_def *t, Ember__Task *p);
/* The whole wire form, sampling rules included, in storage the caller owns (borrows t). */
struct task_pb {
	Ember__Task task;
	Ember__NetSampling s[TASK_MAX_SAMPLINGS];
	Ember__NetSampling *sp[TASK_MAX_SAMPLINGS];
	Ember__TriggerCause c[TASK_MAX_CAUSES];
	Ember__TriggerCause *cp[TASK_MAX_CAUSES];
	Ember__FlameOutput flame;
	Ember__GalaTables gala;
	char *gala_protos[16];
	char gala_protos_buf[128];
};
void task_def__to_pb(const struct task_def *t, struct task_pb *pb);
/*
 * From a request or the state file: checks the pids, the kind and the
 * sampling rules (at most TASK_MAX_SAMPLINGS, regexes that compile), copies
 * what is there (the caller fills id, times and defaults).  0, or -EINVAL
 * with a reason in err.
 */
int task_def__from_proto(const Ember__Task *p, struct task_def *ret, char *err, size_t errlen);

#endif
