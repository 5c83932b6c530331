/*
 * Continuous-profiling policies: which monitor, over which threshold, how
 * often within how long, starts which profiling task.  One parser for both
 * sources, since they have the same fields (spec section 2.10):
 *
 *   the OAP's ServiceWithPolicyJSON   [{"ServiceName": s, "UUID": u,
 *                                        "Profiling": {TARGET: {MONITOR: item}}}]
 *   ember's profiling.continuous.policies (YAML; JSON is valid input too)
 *                                      - Name: n            (optional)
 *                                        MatchCmd: regex    (the processes: command line, POSIX ERE)
 *                                        Profiling: {TARGET: {MONITOR: item}}
 *
 * TARGET: ON_CPU, OFF_CPU, NETWORK, and ember's THREADS (local policies only:
 * "when p99 latency holds over the threshold, record what every thread was
 * doing").  MONITOR: PROCESS_CPU, PROCESS_THREAD_COUNT,
 * SYSTEM_LOAD, HTTP_ERROR_RATE, HTTP_AVG_RESPONSE_TIME (Rover's, HTTP/1.x),
 * and ember's own for the other protocols the network path parses, named
 * the same way: <P>_ERROR_RATE and <P>_AVG_RESPONSE_TIME with P one of HTTP2,
 * MYSQL, PGSQL, REDIS, MONGO, KAFKA, DNS, CQL (local policies only: the OAP
 * knows Rover's five).  item: {Threshold:
 * number (a string in the OAP's JSON), Period: seconds, Count: slots,
 * URIList: [uri], URIRegex: regex}.
 *
 * Validation follows Rover (Threshold non-empty and a number, Period > 0,
 * Count > 0, Count <= Period) with ember's differences: every threshold may
 * be fractional (Rover parses CPU and thread count as integers and drops
 * "80.5"), Period is at most CP_PERIOD_MAX (the window's memory is bounded),
 * regexes must compile.  An invalid item is kept out of the set and
 * described in the set's problems, never dropped silently: the OAP's are
 * logged and counted, a local configuration with any is refused.
 *
 * The input is untrusted (config file, OAP reply): bounded lengths and
 * counts, no recursion beyond the fixed nesting.  No logging.
 */
#ifndef EMBER_COMMON_CP_POLICY_H
#define EMBER_COMMON_CP_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Order = enum ember_task_kind is not the point: these are Rover's names. */
enum cp_target { CP_TARGET_ON_CPU = 0, CP_TARGET_OFF_CPU, CP_TARGET_NETWORK, CP_TARGET_ROVER_MAX,
	/* ember's: a thread profile (local policies only: the OAP knows Rover's three) */
	CP_TARGET_THREADS = CP_TARGET_ROVER_MAX, CP_TARGET_MAX };
/*
 * The first five in the order of ContinuousProfilingTriggeredMonitorType
 * (spec section 2.4); then ember's, an error rate and an average response
 * time per protocol (cp_monitor__protocol).
 */
enum cp_monitor {
	CP_MON_PROCESS_CPU = 0,
	CP_MON_PROCESS_THREAD_COUNT = 1,
	CP_MON_SYSTEM_LOAD = 2,
	CP_MON_HTTP_ERROR_RATE = 3,
	CP_MON_HTTP_AVG_RESPONSE_TIME = 4,
	CP_MON_ROVER_MAX,
	CP_MON_HTTP2_ERROR_RATE = CP_MON_ROVER_MAX, CP_MON_HTTP2_AVG_RESPONSE_TIME,
	CP_MON_MYSQL_ERROR_RATE, CP_MON_MYSQL_AVG_RESPONSE_TIME,
	CP_MON_PGSQL_ERROR_RATE, CP_MON_PGSQL_AVG_RESPONSE_TIME,
	CP_MON_REDIS_ERROR_RATE, CP_MON_REDIS_AVG_RESPONSE_TIME,
	CP_MON_MONGO_ERROR_RATE, CP_MON_MONGO_AVG_RESPONSE_TIME,
	CP_MON_KAFKA_ERROR_RATE, CP_MON_KAFKA_AVG_RESPONSE_TIME,
	CP_MON_DNS_ERROR_RATE, CP_MON_DNS_AVG_RESPONSE_TIME,
	CP_MON_CQL_ERROR_RATE, CP_MON_CQL_AVG_RESPONSE_TIME,
	CP_MON_MAX
};

#define CP_PERIOD_MAX    3600	/* seconds: one hour of 1-s slots per window */
#define CP_MAX_URIS      8
#define CP_MAX_ITEMS     24	/* per policy: Rover's targets x monitors are 15 */
#define CP_URI_MAX       200
#define CP_NAME_MAX      72
#define CP_MATCH_MAX     512
#define CP_MAX_POLICIES  64
#define CP_MAX_PROBLEMS  32
#define CP_PROBLEM_MAX   240

struct cp_item {
	enum cp_target target;
	enum cp_monitor monitor;
	double threshold;
	char threshold_text[32];	/* as given, for reports */
	uint32_t period, count;		/* seconds, slots */
	char uri_regex[CP_URI_MAX];	/* "" = none */
	unsigned n_uris;
	char uris[CP_MAX_URIS][CP_URI_MAX];
};

struct cp_policy {
	char name[CP_NAME_MAX];		/* local: Name, or "policy N"; OAP: the service name */
	char service[CP_NAME_MAX];	/* OAP: ServiceName */
	char uuid[CP_NAME_MAX];		/* OAP: UUID ("" + no items = removed) */
	char match_cmd[CP_MATCH_MAX];	/* local: the processes' command-line regex */
	bool removed;			/* OAP: UUID "" and no Profiling */
	unsigned n_items;
	struct cp_item items[CP_MAX_ITEMS];
};

enum cp_source { CP_SOURCE_LOCAL = 0, CP_SOURCE_OAP = 1 };

struct cp_policies {
	unsigned n;
	struct cp_policy *v;		/* n of them */
	unsigned n_problems;		/* invalid items or policies, all of them counted */
	char problems[CP_MAX_PROBLEMS][CP_PROBLEM_MAX];	/* the first CP_MAX_PROBLEMS described */
};

/*
 * Parses text (NULL or empty: no policies).  NULL + errno (EINVAL: not a
 * list of mappings, err says where; ENOMEM) when the text as a whole is
 * unusable; otherwise the valid policies and items, with what was invalid
 * in problems.
 */
struct cp_policies *cp_policies__parse(const char *text, enum cp_source src, char *err, size_t errlen);
/* Accepts NULL.  Returns NULL. */
struct cp_policies *cp_policies__free(struct cp_policies *p);
/*
 * A local configuration's policies are all valid: 0, or -EINVAL with the
 * first problem (and whether there are more) in err.
 */
int cp_policies__check_local(const char *text, char *err, size_t errlen);

const char *cp_target__name(enum cp_target t);	/* "ON_CPU", ... */
const char *cp_monitor__name(enum cp_monitor m);	/* "PROCESS_CPU", ... */
/* A monitor of network exchanges (an error rate or an average response time). */
bool cp_monitor__is_l7(enum cp_monitor m);
bool cp_monitor__is_error_rate(enum cp_monitor m);
/* Whether its items may filter by URI (HTTP/1.x and HTTP/2: the path). */
bool cp_monitor__has_uri(enum cp_monitor m);
/* The network path's parser whose exchanges an L7 monitor counts ("http1", "redis", ...); NULL for others. */
const char *cp_monitor__protocol(enum cp_monitor m);

#endif
