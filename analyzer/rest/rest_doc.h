/*
 * The REST control API's documents (gala-gopher's manual, "REST Dynamic
 * Configuration Interface"): the body of a PUT /<feature>, decoded,
 * validated and applied to the feature's configuration, and the GET answer.
 *
 *   body   json=<document>, form-encoded (curl --data-urlencode json=...)
 *          or as written (curl -d json='{...}'); nothing else
 *   document {"cmd": {"probe": [sub-item...], "bin": s, "check_cmd": s},
 *             "snoopers": {"proc_id": [n], "proc_name": [{"comm", "cmdline",
 *                          "debugging_dir"}], "container_id": [s], "pod_id": [s]},
 *             "params": {name: value}, "state": "running" | "stopped"}
 *
 * As gala-gopher does (parse_probe_json): a PUT changes the items it
 * carries and keeps the others; "cmd" replaces the sub-items, "snoopers"
 * the whole selection, "state" the state ("stoped" stops too, any case),
 * and "params" each parameter it names.  The manual
 * calls the interface stateless, yet its own sequence (the scope, then the
 * parameters, then {"state": "running"}) needs the earlier PUTs kept.
 *
 * Parameters: every name of gala-gopher's table (probe_params_parser.c) or
 * of the manual's is taken by every feature, type- and range-checked as
 * gala-gopher checks it; a feature applies the ones ember implements for
 * it and the answer lists the others as ignored.  Sub-items of
 * gala-gopher's tables that ember does not measure (flamegraph's io and
 * mem_glibc, the manual's tcp_windows...) are taken and listed likewise;
 * so are "bin" and "check_cmd" (nothing a caller sends is run).  A name
 * neither gala-gopher nor ember knows is refused (gala-gopher skips it:
 * a misspelt key must not pass silently), as are a wrong type, a value
 * out of range, a directory that is not a safe absolute path.  A
 * configuration left running with no sub-item is refused, as gala-gopher
 * refuses it.  tprofiling is stricter, its events being read as a timeline
 * where a missing kind looks like one that did not happen: a sub-item of
 * gala-gopher's that ember does not record (python_gc, offcpu...,
 * common/thread_probes.h) is refused, not taken, and running needs a
 * snooper, as gala-gopher requires for tprofiling.  The input is untrusted
 * (any local client): bounded sizes and counts, json-c's depth limit.  No
 * I/O, no logging.
 */
#ifndef EMBER_ANALYZER_REST_REST_DOC_H
#define EMBER_ANALYZER_REST_REST_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REST_MAX_PIDS     256
#define REST_MAX_NAMES    32
#define REST_MAX_IDS      32
#define REST_NAME_MAX     256	/* comm, cmdline, debugging_dir */
#define REST_ID_MAX       128	/* container and pod ids */
#define REST_PATH_MAX     256
#define REST_NOTE_MAX     1024	/* what a PUT kept and ignored, for its answer */

enum rest_feature { REST_FLAMEGRAPH = 0, REST_L7, REST_TCP, REST_BASEINFO, REST_TPROFILING, REST_FEATURE_MAX };
/* Sub-items (cmd.probe), by feature: index into the feature's list. */
enum rest_probe { REST_PROBE_ONCPU = 0, REST_PROBE_OFFCPU, REST_PROBE_MEM, REST_PROBE_MEM_GLIBC, REST_PROBE_IO };
enum rest_l7_probe { REST_L7_BYTES = 0, REST_L7_RPC, REST_L7_TRACE };
enum rest_tcp_probe { REST_TCP_ABNORMAL = 0, REST_TCP_RTT, REST_TCP_WINDOWS, REST_TCP_RATE, REST_TCP_SRTT,
		      REST_TCP_SOCKBUF, REST_TCP_STATS, REST_TCP_DELAY };
enum rest_base_probe { REST_BASE_CPU = 0, REST_BASE_MEM, REST_BASE_NIC, REST_BASE_DISK, REST_BASE_NET, REST_BASE_FS,
		       REST_BASE_PROC, REST_BASE_HOST, REST_BASE_CON };
#define REST_PROBE_MAX 10
/* l7_protocol: gala-gopher's names; bit i = rest_l7_protocols[i] */
extern const char *const rest_l7_protocols[];

struct rest_proc_name {
	char comm[REST_NAME_MAX];	/* exact match on /proc/<pid>/comm ("" = any) */
	char cmdline[REST_NAME_MAX];	/* substring of the command line ("" = any) */
	char debugging_dir[REST_NAME_MAX];	/* accepted, not used */
};

struct rest_doc {
	enum rest_feature feature;
	bool probes[REST_PROBE_MAX];	/* the feature's sub-items (those ember does not measure included) */
	uint32_t pids[REST_MAX_PIDS];
	unsigned npids;
	struct rest_proc_name names[REST_MAX_NAMES];
	unsigned nnames;
	char containers[REST_MAX_IDS][REST_ID_MAX];
	unsigned ncontainers;
	char pods[REST_MAX_IDS][REST_ID_MAX];
	unsigned npods;
	bool running;
	/* flamegraph's params (the manual's table) */
	uint32_t perf_sample_period_ms;	/* 10 [10, 1000] */
	uint32_t svg_period_s;		/* 180 [30, 600] */
	uint32_t report_period_s;	/* 60 [5, 600] */
	bool multi_instance;		/* 0 [0, 1] */
	bool native_stack;		/* 0 [0, 1]; 0 with multi_instance 1: a Java process's stacks hold its Java frames only */
	char svg_dir[REST_PATH_MAX];	/* "/var/log/gala-gopher/stacktrace" */
	char flame_dir[REST_PATH_MAX];	/* "/var/log/gala-gopher/flamegraph" */
	char pyroscope_server[REST_PATH_MAX];	/* "" */
	/* l7 */
	uint32_t l7_protocols;		/* "http" by default, as the manual says */
	bool support_ssl;
	/* tcp */
	uint32_t sample_period_ms;	/* 5000 [100, 10000] */
	/* baseinfo */
	char dev_name[32];		/* "" = every device */
	/* tprofiling: calls at least this long carry their stack (ms; -1: profiling.task.threads.stack_threshold) */
	int64_t stack_threshold_ms;
	/* the last PUT's answer: the items it kept, what it took and ignored */
	char notes[REST_NOTE_MAX];
};

/* The feature named by a URL path ("/flamegraph"); -1 when ember has none by that name. */
int rest_doc__feature(const char *path);
const char *rest_feature__name(enum rest_feature f);
/* The name of sub-item i of feature f, NULL past the last. */
const char *rest_doc__probe_name(enum rest_feature f, unsigned i);
/* "flamegraph, l7, tcp, ...": what a 404 lists. */
const char *rest_doc__supported(void);
/* Whether path names a feature of gala-gopher's manual that ember does not provide. */
bool rest_doc__known_unsupported(const char *path);
/* For such a feature, where ember gives some of it ("baseinfo's proc sub-item..."); NULL if nowhere. */
const char *rest_doc__instead(const char *path);

/* The defaults of feature f (its configuration before any PUT). */
void rest_doc__defaults(struct rest_doc *d, enum rest_feature f);
/*
 * Applies a PUT body (len bytes, not NUL-terminated) to d, the feature's
 * configuration: the items the document carries change, the others stay
 * (see above); d->notes gets the answer's detail.  0, or -EINVAL with the
 * reason in err and d unchanged (all or nothing); -ENOMEM likewise.
 */
int rest_doc__apply(const char *body, size_t len, struct rest_doc *d, char *err, size_t errlen);
/* rest_doc__apply onto the defaults of feature f. */
int rest_doc__parse(const char *body, size_t len, enum rest_feature f, struct rest_doc *d, char *err, size_t errlen);
/* The GET answer: d as a document (malloc'd JSON text), NULL on ENOMEM. */
char *rest_doc__render(const struct rest_doc *d);

#endif
