/*
 * The profiler kinds' unprivileged halves: what the analyzer does with a
 * task of each kind (enum ember_task_kind) and with the ring records its
 * programs write.  A kind's plugin is a const struct analyzer_kind_ops in
 * analyzer/kind_<name>.c; kinds.c names, in one line per kind, the plugin
 * that serves it.  A plugin may serve several kinds (kind_stacks.c: on-CPU,
 * off-CPU and memory); its state is built once, for all of them.
 *
 * The runner (analyzer/runner.c) drives a task through its kind's ops
 * (check, attach flags, open, close or discard), the ring's reader
 * (analyzer/main.c) hands each record to the plugin that reads its type,
 * and the loop ticks the plugins and publishes their counters.
 *
 * The collector's side of a kind is collector/kinds.h.
 */
#ifndef EMBER_ANALYZER_KINDS_H
#define EMBER_ANALYZER_KINDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyzer/tasks.h"
#include "common/counters.h"

struct ember_config;
struct publisher;
struct symbolizer;
struct tls_finder;
struct py_names;
struct ctl_client;
struct l7_record;

/* What the plugins are built from; all borrowed, alive as long as the kinds. */
struct analyzer_kind_env {
	const struct ember_config *cfg;
	struct task_mgr *tm;
	struct publisher *pub;
	struct symbolizer *sym;
	struct tls_finder *tls;     /* NULL: no TLS plaintext */
	struct py_names *py;        /* Python frames' names, filled by the stack kind's records, read by every kind
	                               (NULL: analyzer_kinds__new makes the table) */
	struct ctl_client *cc;      /* the collector; NULL: none (tests) */
	unsigned max_tasks;
	/* Consumes the ring (its records come back through the plugins' record op). */
	void (*drain)(void *ctx);
	/* Optional: a server-side L7 exchange of a followed process (the continuous-profiling monitors). */
	void (*exchange)(void *ctx, uint32_t pid, const struct l7_record *r);
	/* Optional: a followed process of task task_num_id exec'ed or mapped a file executable. */
	void (*maps_changed)(void *ctx, uint64_t task_num_id, uint32_t pid, bool soon);
	void *ctx;
};

/* What the analyzer does around a kind's tasks besides its ops. */
enum {
	/* Its samples walk user stacks: unwind tables go to the collector before it starts
	 * (CTL_ATTACH_F_HOLD) and follow its processes' mappings; the symbolizer preloads them. */
	ANALYZER_KIND_F_USER_STACKS = 1u << 0,
	/* Its processes' TLS libraries get probes (analyzer/tls), at start and as their mappings change. */
	ANALYZER_KIND_F_TLS = 1u << 1,
	/* The continuous-profiling monitors capture through tasks of this kind (task_def__is_monitor);
	 * such a capture gives way to any other task of the kind on its process. */
	ANALYZER_KIND_F_MONITOR_CAPTURE = 1u << 2,
};

struct analyzer_kind_ops {
	const char *name;           /* the plugin's, for messages */
	uint32_t flags;             /* ANALYZER_KIND_F_* */
	uint32_t records;           /* the ring records it reads: bit (1u << EMBER_REC_*) */

	/* Its state, once for every kind it serves.  NULL + errno. */
	void *(*new)(const struct analyzer_kind_env *env);
	void (*free)(void *impl);

	/* Optional: t's parameters that only this kind has: 0, or -errno with the reason in err. */
	int (*check)(void *impl, const struct task_def *t, char *err, size_t errlen);
	/* Optional: the CTL_ATTACH_F_* this kind asks the collector for t (HOLD is the runner's). */
	uint32_t (*attach_flags)(void *impl, const struct task_def *t);
	/* Optional: words of its own for an attach the collector refused with r; false: none. */
	bool (*refused)(void *impl, const struct task_def *t, int r, char *err, size_t errlen);
	/* Starts collecting for t (before the collector attaches).  0 or -errno. */
	int (*open)(void *impl, const struct task_def *t);
	/* Forgets t without output: its start failed after open. */
	void (*discard)(void *impl, const struct task_def *t);
	/* Ends t: what is left goes out; the totals, in words for the log, go to summary. */
	void (*close)(void *impl, const struct task_def *t, char *summary, size_t len);

	/* One ring record of a type in records: 0, or -EBADMSG when it does not add up and the
	 * kind leaves its counting to the reader (analyzer_bad_records). */
	int (*record)(void *impl, uint32_t type, const void *data, uint32_t len);
	/* Optional: periodic work (reports due, ageing) and when it is next due (unix ms, UINT64_MAX: none). */
	void (*tick)(void *impl, uint64_t now_unix_ms);
	uint64_t (*next_due)(const void *impl);

	/* Its counters (common/counters.h): ncounters of them, read into v by stats. */
	const struct counter_def *counters;
	unsigned ncounters;
	void (*stats)(const void *impl, uint64_t *v);
};

/* The plugins, in analyzer/kind_*.c. */
extern const struct analyzer_kind_ops analyzer_kind_stacks;
extern const struct analyzer_kind_ops analyzer_kind_net;
extern const struct analyzer_kind_ops analyzer_kind_threads;

/* The largest ncounters of any plugin: the size of a stats array. */
#define ANALYZER_KIND_COUNTERS_MAX 32

struct analyzer_kinds;

/* Builds the plugins kinds.c names.  NULL + errno (a plugin that could not be built). */
struct analyzer_kinds *analyzer_kinds__new(const struct analyzer_kind_env *env);
/* Accepts NULL.  Returns NULL. */
struct analyzer_kinds *analyzer_kinds__free(struct analyzer_kinds *k);

/* Kind kind's ops and state: false when no plugin serves it. */
bool analyzer_kinds__get(const struct analyzer_kinds *k, uint32_t kind, const struct analyzer_kind_ops **ret_ops,
			 void **ret_impl);
/* The kind's ANALYZER_KIND_F_* flags, 0 for a kind no plugin serves. */
uint32_t analyzer_kinds__flags(const struct analyzer_kinds *k, uint32_t kind);

/* A ring record to the plugin that reads its type: 0, -EBADMSG (counted by the caller), -ENOENT (no reader). */
int analyzer_kinds__record(struct analyzer_kinds *k, uint32_t type, const void *data, uint32_t len);
/* Every plugin's tick, and the earliest of their next dues. */
void analyzer_kinds__tick(struct analyzer_kinds *k, uint64_t now_unix_ms);
uint64_t analyzer_kinds__next_due(const struct analyzer_kinds *k);

/* Iteration over the plugins (each once however many kinds it serves): false past the end. */
bool analyzer_kinds__plugin(const struct analyzer_kinds *k, unsigned idx, const struct analyzer_kind_ops **ret_ops,
			    void **ret_impl);

#endif
