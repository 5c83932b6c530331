/*
 * Continuous profiling: cheap monitors on the processes a policy selects,
 * 1-second windows, and the triggers that start a profiling task when a
 * policy item holds (spec section 4.6, with the differences below).
 *
 * Each analyzer monitors the processes of its shard.  Every check interval
 * it lists /proc, matches new processes' command lines against the local
 * policies' MatchCmd, and their pids against the processes the exporter
 * found for each OAP policy's service (kernel threads and ember's own
 * processes are never monitored), and forgets processes that are gone.
 * Every fetch interval it reads each monitored process's /proc/<pid>/stat
 * (through a descriptor kept open: one pread per process; at most half of
 * RLIMIT_NOFILE are kept, the rest opened at each read) and, when a policy
 * needs it, /proc/loadavg:
 *
 *   PROCESS_CPU           the process's CPU time over the last interval as a
 *                         percentage of one core (Rover: the lifetime average,
 *                         which a long-running process with a fresh spike may
 *                         never trip)
 *   PROCESS_THREAD_COUNT  its threads
 *   SYSTEM_LOAD           the 1-minute load average
 *
 * Each item is judged over its own Period (Rover: over the longest Period of
 * the monitor's items).  Every check interval, for each process and target
 * type: unless a task of that type runs on the process or the last one
 * started within the silence duration, the items that hold become the causes
 * of one trigger.  Dimension: the process, for every target type (the
 * exporter groups an OAP policy's NETWORK triggers by service instance, as
 * Rover does; local policies have no instance).
 * The L7 monitors, HTTP_ERROR_RATE and HTTP_AVG_RESPONSE_TIME (HTTP/1.x, as
 * Rover) and ember's <P>_ERROR_RATE and <P>_AVG_RESPONSE_TIME for the other
 * protocols the network path parses (cp_policy.h): a process under such an
 * item gets a network capture (opts.capture: the network path's own, whose
 * server-side exchanges come back through monitors__exchange), and each
 * item a window of per-second aggregates (count, errors, summed time) of
 * its protocol's exchanges, one per URI of its URIList, one for the URIs its
 * URIRegex matches, or one for every exchange.  Errors and latency follow
 * each protocol's own rule (l7.h); URI filters need a URI (HTTP, HTTP2).
 *
 * Bounded: at most max_processes monitored (more are counted, not grown),
 * windows of at most CP_PERIOD_MAX slots.  /proc is untrusted input: every
 * read is bounded and parsed defensively.  No logging.
 */
#ifndef EMBER_ANALYZER_CONTINUOUS_MONITORS_H
#define EMBER_ANALYZER_CONTINUOUS_MONITORS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/counters.h"

#include "common/cp_policy.h"

#define MON_MAX_CAUSES 32	/* of one trigger: the items that hold for one process and target */

struct mon_cause {
	enum cp_monitor monitor;
	double threshold, current;	/* current: the latest slot value that satisfied the threshold */
	uint32_t period, count, matched;	/* matched of the last period slots; count needed */
	char uri[CP_URI_MAX];		/* L7 items: the listed URI or the regex ("" for every URI) */
	bool uri_is_regex;
	char policy[CP_NAME_MAX];
	bool oap;			/* of an OAP policy: the OAP names the task */
	char service[CP_NAME_MAX];	/* the OAP policy's service */
};

struct mon_trigger {
	uint32_t pid;
	char comm[16];
	enum cp_target target;
	unsigned n_causes;
	struct mon_cause causes[MON_MAX_CAUSES];
};

struct mon_value {
	uint32_t pid;
	enum cp_monitor monitor;
	enum cp_target target;
	double value;
	const char *service;	/* the OAP policy's service, "" for local policies */
	const char *uri;	/* L7 monitors: the listed URI, the regex or "global"; NULL for the others */
	const char *comm;	/* the process's name */
};

struct monitors_opts {
	const char *proc_root;		/* NULL: "/proc" */
	unsigned shard, nshards;
	uint64_t fetch_interval_ms, check_interval_ms, silence_ms;
	unsigned max_processes;		/* 0: 1024 */
	/* Starts the task; 0 when it started (the silence begins), -errno otherwise. */
	int (*start)(void *ctx, const struct mon_trigger *t);
	/* Whether a task of that target type runs on pid now. */
	bool (*running)(void *ctx, uint32_t pid, enum cp_target target);
	/* Starts (on) or ends the network capture whose exchanges monitors__exchange gets, for a
	 * process under an L7 item; asked again at every check while wanted (idempotent).  0 or -errno. */
	int (*capture)(void *ctx, uint32_t pid, bool on);
	/* Optional, after each check: the latest value of each monitor a process is under, once per
	 * (process, monitor, target using it, OAP service), and for L7 monitors the value of each
	 * 1-s slot with exchanges since the previous check (Rover's rover_con_p_* meters); and the
	 * processes no longer monitored since the previous call (exited, or no policy selects them
	 * any more), so that their values can be forgotten.  Called when either list has entries. */
	void (*values)(void *ctx, const struct mon_value *v, unsigned n, const uint32_t *ended, unsigned n_ended);
	void *ctx;
};

enum monitors_stat {
	MS_POLICIES,		/* policies in force */
	MS_EXCHANGES,		/* server-side exchanges of processes under L7 items */
	MS_CAPTURE_FAILURES,	/* network captures for L7 items that could not start (retried each check) */
	MS_PROCESSES,		/* processes monitored now */
	MS_PROCESSES_OVER,	/* matching processes not monitored: max_processes reached (each rescan) */
	MS_SCANS,
	MS_FETCHES,
	MS_CHECKS,
	MS_READ_ERRORS,		/* /proc reads that failed or did not parse (besides a process exiting) */
	MS_TRIGGERS,		/* tasks started */
	MS_SILENCED,		/* items held but the target was in its silence duration */
	MS_ALREADY_RUNNING,	/* items held but a task of that type runs on the process */
	MS_START_FAILURES,	/* the task could not start (see the analyzer's log) */
	MS_ENDED_UNREPORTED,	/* processes no longer monitored that the values callback was not told of
				 * (more than max_processes between two calls): their values age out */
	MS_MAX
};

struct monitors;

/* NULL + errno.  o is copied. */
struct monitors *monitors__new(const struct monitors_opts *o);
/* Accepts NULL.  Returns NULL. */
struct monitors *monitors__free(struct monitors *m);
/*
 * Replaces the policies (the set is copied; NULL = none).  Processes are
 * matched again at the next scan; windows and silences of processes that
 * stay monitored are kept.  0 or -errno (a MatchCmd that does not compile).
 */
int monitors__set_policies(struct monitors *m, const struct cp_policies *set);
/*
 * Replaces the OAP's policies (set from cp_policies__parse(..., CP_SOURCE_OAP);
 * NULL = none): each applies to the processes svc lists for its service.
 * The local policies stay.  0 or -errno.
 */
struct mon_service_pids { const char *service; const uint32_t *pids; unsigned n_pids; };
int monitors__set_oap_policies(struct monitors *m, const struct cp_policies *set, const struct mon_service_pids *svc,
			       unsigned n_svc);
/* Scans, fetches and checks when each is due (monotonic ms). */
void monitors__tick(struct monitors *m, uint64_t now_ms);
/*
 * A server-side exchange of a monitored process, completed now (monotonic
 * ms): protocol is the parser's name (l7_record.protocol), uri NULL when it
 * has none.  Into the windows of its L7 items of that protocol whose URI
 * filter it passes.
 */
void monitors__exchange(struct monitors *m, uint32_t pid, const char *protocol, const char *uri, bool error,
			double latency_ms, uint64_t now_ms);
/* Whether pid has an L7 item whose windows monitors__exchange fills: exchanges of other
 * processes need not be looked at (nor the clock read for them). */
bool monitors__wants_exchanges(const struct monitors *m, uint32_t pid);
/* When the next tick has work (monotonic ms); UINT64_MAX without policies. */
uint64_t monitors__next_due(const struct monitors *m);
void monitors__stats(const struct monitors *m, uint64_t ret[MS_MAX]);
const char *monitors__stat_name(enum monitors_stat s);
/* Their names and natures (common/counters.h), by enum monitors_stat. */
extern const struct counter_def monitors_counters[MS_MAX];

#endif
