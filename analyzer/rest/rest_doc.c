/* The REST control API's documents: see rest_doc.h. */
#include "analyzer/rest/rest_doc.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/fileutil.h"
#include "common/thread_probes.h"

#define F_FL   (1u << REST_FLAMEGRAPH)
#define F_L7   (1u << REST_L7)
#define F_TCP  (1u << REST_TCP)
#define F_BASE (1u << REST_BASEINFO)
#define F_TP   (1u << REST_TPROFILING)
#define F_ALL  (F_FL | F_L7 | F_TCP | F_BASE | F_TP)

static const char *const feature_names[REST_FEATURE_MAX] = { "flamegraph", "l7", "tcp", "baseinfo", "tprofiling" };
/* gala-gopher's sub-items (probe_range_define), by feature, in the order of the rest_*_probe enums */
static const char *const probe_names[REST_FEATURE_MAX][REST_PROBE_MAX + 1] = {
	[REST_FLAMEGRAPH] = { "oncpu", "offcpu", "mem", "mem_glibc", "io", NULL },
	[REST_L7] = { "l7_bytes_metrics", "l7_rpc_metrics", "l7_rpc_trace", NULL },
	[REST_TCP] = { "tcp_abnormal", "tcp_rtt", "tcp_windows", "tcp_rate", "tcp_srtt", "tcp_sockbuf", "tcp_stats",
		       "tcp_delay", NULL },
	[REST_BASEINFO] = { "cpu", "mem", "nic", "disk", "net", "fs", "proc", "host", "con", NULL },
	/* what ember records, in THREAD_P_* bit order (test_rest_threads); gala-gopher's others are refused */
	[REST_TPROFILING] = { "oncpu", "syscall_file", "syscall_net", "syscall_lock", "syscall_sched", NULL },
};
/* The sub-items whose data ember does not measure: taken, kept, and said to be ignored. */
static const unsigned unmeasured[REST_FEATURE_MAX] = {
	[REST_FLAMEGRAPH] = 1u << REST_PROBE_MEM_GLIBC | 1u << REST_PROBE_IO,
	[REST_TCP] = 1u << REST_TCP_WINDOWS | 1u << REST_TCP_RATE | 1u << REST_TCP_SRTT | 1u << REST_TCP_SOCKBUF |
		     1u << REST_TCP_DELAY,
	[REST_BASEINFO] = 1u << REST_BASE_CON,
};
const char *const rest_l7_protocols[] = { "http", "pgsql", "mysql", "redis", "kafka", "mongo", "dns", "http2", "cql",
					  NULL };
/* l7_protocol values of gala-gopher's (crpc) and of the manual's (rocketmq) that ember does not parse */
static const char *const l7_unparsed[] = { "rocketmq", "crpc", NULL };
/* The manual's other features: answered "not supported by ember", never 404. */
static const char *const other_features[] = { "socket", "io", "proc", "jvm", "ksli", "postgre_sli",
					      "opengauss_sli", "dnsmasq", "lvs", "nginx", "haproxy", "kafka",
					      "virt", "hw", "container", "sermant",
					      "sli", "flowtracer", NULL };

enum ptype {
	P_INT,		/* an integer in [lo, hi] (JSON booleans count as 0 and 1) */
	P_POW2,		/* P_INT, a power of two */
	P_DIR,		/* a safe absolute directory (fileutil__safe_dir) */
	P_FILE,		/* a safe absolute path */
	P_SERVER,	/* host:port or "" */
	P_DEV,		/* a device name or "" */
	P_WORD,		/* one of words */
	P_WORDS,	/* a list of words */
	P_PROTOS,	/* a list of l7 protocols */
	P_EMPTY_LIST,	/* custom_param: names a custom probe's parameters; a built-in probe has none */
};

/*
 * Every parameter gala-gopher's table (param_keys) or the manual's knows,
 * with gala-gopher's types and ranges.  keeps: the features whose
 * configuration holds it (GET shows it); acts: those ember applies it to.
 * Every feature takes every parameter, as gala-gopher does; where it does
 * not act, the answer says it was ignored.
 */
static const struct param {
	const char *name;
	enum ptype type;
	int64_t lo, hi;
	unsigned keeps, acts;
	const char *words;
} param_table[] = {
	{ "report_period", P_INT, 5, 600, F_ALL, F_L7 | F_TCP | F_BASE, NULL },
	{ "perf_sample_period", P_INT, 10, 1000, F_FL, F_FL, NULL },
	{ "svg_period", P_INT, 30, 600, F_FL, F_FL, NULL },
	{ "svg_dir", P_DIR, 0, 0, F_FL, F_FL, NULL },		/* the manual's name */
	{ "output_dir", P_DIR, 0, 0, F_FL, F_FL, NULL },	/* gala-gopher's name for svg_dir */
	{ "flame_dir", P_DIR, 0, 0, F_FL, F_FL, NULL },
	{ "multi_instance", P_INT, 0, 1, F_FL, F_FL, NULL },
	{ "native_stack", P_INT, 0, 1, F_FL, F_FL, NULL },	/* 0 with multi_instance 1: Java frames only */
	{ "pyroscope_server", P_SERVER, 0, 0, F_FL, F_FL, NULL },
	{ "l7_protocol", P_PROTOS, 0, 0, F_L7, F_L7, NULL },
	{ "support_ssl", P_INT, 0, 1, F_L7, F_L7, NULL },	/* TLS plaintext: profiling.task.network.tls */
	{ "dev_name", P_DEV, 0, 0, F_BASE, F_BASE, NULL },
	/* ember's: profiling.task.threads.stack_threshold for one feature's tasks (ms, up to the collector's 1 h) */
	{ "stack_threshold", P_INT, 0, 3600000, F_TP, F_TP, NULL },
	{ "sample_period", P_INT, 100, 10000, F_TCP, 0, NULL },	/* ember follows every socket call */
	{ "latency_thr", P_INT, 10, 100000, 0, 0, NULL },
	{ "offline_thr", P_INT, 10, 100000, 0, 0, NULL },
	{ "drops_thr", P_INT, 10, 100000, 0, 0, NULL },
	{ "res_lower_thr", P_INT, 0, 100, 0, 0, NULL },
	{ "res_upper_thr", P_INT, 0, 100, 0, 0, NULL },
	{ "report_event", P_INT, 0, 1, 0, 0, NULL },
	{ "ringbuf_map_size", P_POW2, 1, 32, 0, 0, NULL },
	{ "report_source_port", P_INT, 0, 1, 0, 0, NULL },	/* the manual's name */
	{ "report_cport", P_INT, 0, 1, 0, 0, NULL },		/* gala-gopher's */
	{ "cluster_ip_backend", P_INT, 0, 2, 0, 0, NULL },
	{ "continuous_sampling", P_INT, 0, 1, 0, 0, NULL },
	{ "elf_path", P_FILE, 0, 0, 0, 0, NULL },
	{ "kafka_port", P_INT, 1, 65535, 0, 0, NULL },
	{ "cadvisor_port", P_INT, 1, 65535, 0, 0, NULL },
	{ "profiling_channel", P_WORD, 0, 0, 0, 0, "local, kafka" },
	{ "min_exec_dur", P_INT, 0, 1000000, 0, 0, NULL },
	{ "min_aggr_dur", P_INT, 10, 10000, 0, 0, NULL },
	{ "custom_param", P_EMPTY_LIST, 0, 0, 0, 0, NULL },
	{ "metrics_type", P_WORDS, 0, 0, 0, 0, "raw, telemetry" },	/* gala-gopher does not use it either */
	{ "env", P_WORD, 0, 0, 0, 0, "node, container, kubenet" },
};

/* One PUT being applied: the new configuration and what its answer says. */
struct put {
	struct rest_doc *d;
	char ignored[REST_NOTE_MAX];	/* "cmd.bin (...), params.sample_period, ..." */
	char info[REST_NOTE_MAX];	/* other remarks */
	const char *dir_key;		/* svg_dir or output_dir, the first of this PUT */
	char dir[REST_PATH_MAX];	/* its value */
	bool debugging_dir;
	char snooper[16];		/* the snooper being parsed: gala-gopher's refusals name it */
	char *err;
	size_t errlen;
};

const char *rest_feature__name(enum rest_feature f) { return (unsigned)f < REST_FEATURE_MAX ? feature_names[f] : "?"; }
const char *rest_doc__supported(void) { return "flamegraph, l7, tcp, baseinfo, tprofiling"; }

const char *rest_doc__probe_name(enum rest_feature f, unsigned i)
{
	return (unsigned)f < REST_FEATURE_MAX && i < REST_PROBE_MAX ? probe_names[f][i] : NULL;
}

/* "oncpu, offcpu, mem; taken and ignored: mem_glibc, io" */
static const char *probe_list(enum rest_feature f, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (int pass = 0; pass < 2; pass++) {
		bool first = true;

		for (unsigned i = 0; probe_names[f][i] && n < len; i++) {
			if (!(unmeasured[f] >> i & 1) != !pass)
				continue;
			n += (size_t)snprintf(buf + n, len - n, "%s%s", first && pass ? "; taken and ignored: " : first ? ""
											    : ", ",
					      probe_names[f][i]);
			first = false;
		}
	}
	return buf;
}

int rest_doc__feature(const char *path)
{
	if (!path || path[0] != '/')
		return -1;
	for (unsigned i = 0; i < REST_FEATURE_MAX; i++)
		if (!strcmp(path + 1, feature_names[i]))
			return (int)i;
	return -1;
}

bool rest_doc__known_unsupported(const char *path)
{
	for (unsigned i = 0; path && path[0] == '/' && other_features[i]; i++)
		if (!strcmp(path + 1, other_features[i]))
			return true;
	return false;
}

const char *rest_doc__instead(const char *path)
{
	if (path && !strcmp(path, "/proc"))
		return "per-process metrics (utime, stime, page faults, threads, memory) are baseinfo's proc sub-item: "
		       "PUT /baseinfo with {\"cmd\": {\"probe\": [\"proc\"]}, \"snoopers\": {...}, \"state\": \"running\"}";
	if (path && !strcmp(path, "/jvm"))
		return "the JVM's GC, thread and memory metrics are not measured; Java methods in flame graphs come from "
		       "ember's JVMTI agent (profiling.java.agent: true) with PUT /flamegraph (native_stack 0 and "
		       "multi_instance 1: Java frames only)";
	return NULL;
}

void rest_doc__defaults(struct rest_doc *d, enum rest_feature f)
{
	memset(d, 0, sizeof(*d));
	d->feature = f;
	d->perf_sample_period_ms = 10;
	d->svg_period_s = 180;
	d->report_period_s = 60;
	snprintf(d->svg_dir, sizeof(d->svg_dir), "/var/log/gala-gopher/stacktrace");
	snprintf(d->flame_dir, sizeof(d->flame_dir), "/var/log/gala-gopher/flamegraph");
	d->l7_protocols = 1; /* http */
	d->sample_period_ms = 5000;
	d->stack_threshold_ms = -1;
}

__attribute__((format(printf, 3, 4))) static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/*
 * err, after gala-gopher's own words for the same refusal (what a script
 * written against gala-gopher looks for), then ember's detail (after ": ",
 * or a space when gala-gopher's words end a sentence).
 */
__attribute__((format(printf, 3, 4))) static int gala_said(char *err, size_t errlen, const char *fmt, ...)
{
	char said[160], *detail = strdup(err);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(said, sizeof(said), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "%s%s%s", said, said[0] && said[strlen(said) - 1] == '.' ? " " : ": ",
		 detail ? detail : "");
	free(detail);
	return -EINVAL;
}

/* Appends to a REST_NOTE_MAX buffer, after sep if it holds something; what does not fit ends in "...". */
__attribute__((format(printf, 3, 4))) static void append(char *buf, const char *sep, const char *fmt, ...)
{
	size_t n = strlen(buf);
	va_list ap;
	int w;

	if (n + 4 >= REST_NOTE_MAX)
		return; /* full: it ends in "..." already */
	if (n) {
		snprintf(buf + n, REST_NOTE_MAX - n, "%s", sep);
		n = strlen(buf);
	}
	va_start(ap, fmt);
	w = vsnprintf(buf + n, REST_NOTE_MAX - n, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= REST_NOTE_MAX - n)
		memcpy(buf + REST_NOTE_MAX - 4, "...", 4);
}

/* A string of at most cap-1 bytes, no control characters. */
static int get_str(json_object *v, const char *where, char *dst, size_t cap, char *err, size_t errlen)
{
	const char *s;
	size_t n;

	if (!json_object_is_type(v, json_type_string))
		return bad(err, errlen, "%s must be a string", where);
	s = json_object_get_string(v);
	n = (size_t)json_object_get_string_len(v);
	if (n >= cap)
		return bad(err, errlen, "%s is longer than %zu characters", where, cap - 1);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return bad(err, errlen, "%s holds a control character", where);
	memcpy(dst, s, n);
	dst[n] = 0;
	return 0;
}

/* An integer in [lo, hi] (JSON booleans count as 0 and 1). */
static int get_int(json_object *v, const char *where, int64_t lo, int64_t hi, int64_t *ret, char *err, size_t errlen)
{
	int64_t x;

	if (json_object_is_type(v, json_type_boolean))
		x = json_object_get_boolean(v);
	else if (json_object_is_type(v, json_type_int))
		x = json_object_get_int64(v);
	else
		return bad(err, errlen, "%s must be an integer in [%lld, %lld]", where, (long long)lo, (long long)hi);
	if (x < lo || x > hi)
		return bad(err, errlen, "%s invalid value %lld, must be in [%lld, %lld]", where, (long long)x,
			   (long long)lo, (long long)hi);
	*ret = x;
	return 0;
}

/* A directory (or a file's path) a caller may name (common/fileutil.h: fileutil__safe_dir). */
static int get_dir(json_object *v, const char *where, char *dst, char *err, size_t errlen)
{
	char p[REST_PATH_MAX], why[96];

	if (get_str(v, where, p, sizeof(p), err, errlen))
		return -EINVAL;
	if (fileutil__safe_dir(p, why, sizeof(why)))
		return bad(err, errlen, "%s '%s' %s", where, p, why);
	snprintf(dst, REST_PATH_MAX, "%s", p);
	return 0;
}

/* host:port, or "" (no upload) */
static int get_server(json_object *v, const char *where, char *dst, char *err, size_t errlen)
{
	char s[REST_PATH_MAX];
	const char *colon;
	char *end;
	long port;

	if (get_str(v, where, s, sizeof(s), err, errlen))
		return -EINVAL;
	if (!s[0]) {
		dst[0] = 0;
		return 0;
	}
	colon = strrchr(s, ':');
	if (!colon || colon == s)
		return bad(err, errlen, "%s '%s' is not host:port", where, s);
	for (const char *c = s; c < colon; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' ||
		      *c == '-'))
			return bad(err, errlen, "%s '%s' is not host:port", where, s);
	port = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || port < 1 || port > 65535)
		return bad(err, errlen, "%s '%s': the port is not in [1, 65535]", where, s);
	snprintf(dst, REST_PATH_MAX, "%s", s);
	return 0;
}

/* Whether s is one of words ("a, b, c"). */
static bool in_words(const char *words, const char *s)
{
	size_t n = strlen(s);

	for (const char *w = words; n && w; w = strchr(w, ',') ? strchr(w, ',') + 2 : NULL)
		if (!strncmp(w, s, n) && (!w[n] || w[n] == ','))
			return true;
	return false;
}

static int parse_cmd(json_object *o, struct put *p)
{
	struct rest_doc *d = p->d;
	char list[200];
	json_object *probe;

	if (!json_object_is_type(o, json_type_object))
		return bad(p->err, p->errlen, "cmd must be an object");
	/* cmd sets the sub-items: gala-gopher refuses a cmd without them */
	if (!json_object_object_get_ex(o, "probe", &probe))
		return bad(p->err, p->errlen, "cmd.probe is missing: cmd sets the sub-items (%s)",
			   probe_list(d->feature, list, sizeof(list)));
	memset(d->probes, 0, sizeof(d->probes));
	json_object_object_foreach(o, k, v) {
		if (!strcmp(k, "probe")) {
			size_t n;

			if (!json_object_is_type(v, json_type_array))
				return bad(p->err, p->errlen, "cmd.probe must be a list of sub-items (%s)",
					   probe_list(d->feature, list, sizeof(list)));
			n = json_object_array_length(v);
			for (size_t i = 0; i < n; i++) {
				json_object *e = json_object_array_get_idx(v, i);
				const char *s = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : NULL;
				unsigned u;

				/* gala-gopher compares sub-items without case */
				for (u = 0; s && probe_names[d->feature][u] && strcasecmp(s, probe_names[d->feature][u]); u++)
					;
				if (s && !probe_names[d->feature][u] && d->feature == REST_TPROFILING) {
					int known;

					(void)thread_probes__bit(s, &known);
					if (known)
						return bad(p->err, p->errlen, "cmd.probe: %.40s is a sub-item of "
							   "gala-gopher's tprofiling that ember does not record (ember "
							   "records %s): refused, so that its events are not read as "
							   "absent", s, probe_list(d->feature, list, sizeof(list)));
				}
				if (!s || !probe_names[d->feature][u]) {
					bad(p->err, p->errlen, "cmd.probe: '%.40s' is not a sub-item of %s (%s)",
					    s ? s : "(not a string)", rest_feature__name(d->feature),
					    probe_list(d->feature, list, sizeof(list)));
					return s ? gala_said(p->err, p->errlen, "unsupported probe range: %.40s.", s)
						 : gala_said(p->err, p->errlen, "Invalid probe range: must be string.");
				}
				if (unmeasured[d->feature] >> u & 1 && !d->probes[u])
					append(p->ignored, ", ", "cmd.probe %s (not measured by ember)", probe_names[d->feature][u]);
				if (d->feature == REST_L7 && u == REST_L7_TRACE && !d->probes[u])
					append(p->info, "; ", "l7_rpc_trace: the exchanges are listed in the task's network.json");
				d->probes[u] = true;
			}
		} else if (!strcmp(k, "bin") || !strcmp(k, "check_cmd")) {
			char tmp[REST_NAME_MAX], where[16];

			snprintf(where, sizeof(where), "cmd.%s", k);
			if (get_str(v, where, tmp, sizeof(tmp), p->err, p->errlen))
				return -EINVAL;
			if (tmp[0])
				append(p->ignored, ", ", "%s (ember runs no program)", where);
		} else {
			return bad(p->err, p->errlen, "cmd: unknown key '%.40s' (probe, bin, check_cmd)", k);
		}
	}
	return 0;
}

static int parse_snoopers(json_object *o, struct put *p)
{
	struct rest_doc *d = p->d;
	char *err = p->err, where[64];
	size_t errlen = p->errlen;

	if (!json_object_is_type(o, json_type_object))
		return bad(err, errlen, "snoopers must be an object");
	/* snoopers replace the whole selection, as gala-gopher's do */
	d->npids = d->nnames = d->ncontainers = d->npods = 0;
	json_object_object_foreach(o, k, v) {
		size_t n;

		if (strcmp(k, "proc_id") && strcmp(k, "proc_name") && strcmp(k, "container_id") && strcmp(k, "pod_id"))
			return bad(err, errlen, "snoopers: unknown key '%.40s' (proc_id, proc_name, container_id, pod_id)",
				   k);
		snprintf(p->snooper, sizeof(p->snooper), "%s", k);
		if (!json_object_is_type(v, json_type_array))
			return bad(err, errlen, "snoopers.%s must be a list", k);
		n = json_object_array_length(v);
		for (size_t i = 0; i < n; i++) {
			json_object *e = json_object_array_get_idx(v, i);

			snprintf(where, sizeof(where), "snoopers.%s[%zu]", k, i);
			if (!strcmp(k, "proc_id")) {
				int64_t pid;

				if (d->npids == REST_MAX_PIDS)
					return bad(err, errlen, "snoopers.proc_id holds at most %d pids", REST_MAX_PIDS);
				if (get_int(e, where, 1, 4194304, &pid, err, errlen))
					return -EINVAL;
				d->pids[d->npids++] = (uint32_t)pid;
			} else if (!strcmp(k, "proc_name")) {
				struct rest_proc_name *pn;

				if (d->nnames == REST_MAX_NAMES)
					return bad(err, errlen, "snoopers.proc_name holds at most %d entries", REST_MAX_NAMES);
				if (!json_object_is_type(e, json_type_object))
					return bad(err, errlen, "%s must be an object {comm, cmdline, debugging_dir}", where);
				pn = &d->names[d->nnames];
				memset(pn, 0, sizeof(*pn));
				json_object_object_foreach(e, nk, nv) {
					char w2[96];
					char *dst = !strcmp(nk, "comm") ? pn->comm : !strcmp(nk, "cmdline") ? pn->cmdline
						    : !strcmp(nk, "debugging_dir") ? pn->debugging_dir : NULL;

					if (!dst)
						return bad(err, errlen, "%s: unknown key '%.40s' (comm, cmdline, debugging_dir)",
							   where, nk);
					snprintf(w2, sizeof(w2), "%s.%s", where, nk);
					if (get_str(nv, w2, dst, REST_NAME_MAX, err, errlen))
						return -EINVAL;
				}
				if (!pn->comm[0] && !pn->cmdline[0])
					return bad(err, errlen, "%s names no process: give comm or cmdline", where);
				if (pn->debugging_dir[0] && !p->debugging_dir) {
					append(p->ignored, ", ",
					       "snoopers.proc_name.debugging_dir (ember finds debug files by build id)");
					p->debugging_dir = true;
				}
				d->nnames++;
			} else {
				bool pod = !strcmp(k, "pod_id");
				unsigned *cnt = pod ? &d->npods : &d->ncontainers;
				char(*ids)[REST_ID_MAX] = pod ? d->pods : d->containers;

				if (*cnt == REST_MAX_IDS)
					return bad(err, errlen, "snoopers.%s holds at most %d ids", k, REST_MAX_IDS);
				if (get_str(e, where, ids[*cnt], REST_ID_MAX, err, errlen))
					return -EINVAL;
				if (!ids[*cnt][0] || strchr(ids[*cnt], '/'))
					return bad(err, errlen, "%s is empty or holds a '/'", where);
				(*cnt)++;
			}
		}
	}
	return 0;
}

/* "perf_sample_period, svg_period...": the parameters ember applies to feature f. */
static const char *param_list(enum rest_feature f, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = 0;
	for (size_t i = 0; i < sizeof(param_table) / sizeof(param_table[0]) && n < len; i++)
		if (param_table[i].acts >> f & 1)
			n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", param_table[i].name);
	return buf;
}

/* The elements of list v, each one of words. */
static int get_words(json_object *v, const char *where, const char *words, char *err, size_t errlen)
{
	size_t n;

	if (!json_object_is_type(v, json_type_array))
		return bad(err, errlen, "%s must be a list of %s", where, words);
	n = json_object_array_length(v);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(v, i);

		if (!json_object_is_type(e, json_type_string) || !in_words(words, json_object_get_string(e)))
			return bad(err, errlen, "%s[%zu] is not one of %s", where, i, words);
	}
	return 0;
}

/* l7_protocol: each a protocol gala-gopher or ember knows; what ember does not parse is said. */
static int get_protos(json_object *v, const char *where, uint32_t *ret, struct put *p)
{
	static const char *const known = "http, pgsql, mysql, redis, kafka, mongo, dns, http2, cql, rocketmq, crpc";
	uint32_t bits = 0;
	size_t n;

	if (!json_object_is_type(v, json_type_array))
		return bad(p->err, p->errlen, "%s must be a list of protocols (%s)", where, known);
	n = json_object_array_length(v);
	for (size_t i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(v, i);
		const char *s = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : NULL;
		unsigned u, x;

		/* gala-gopher compares protocols without case */
		for (u = 0; s && rest_l7_protocols[u] && strcasecmp(s, rest_l7_protocols[u]); u++)
			;
		for (x = 0; s && !rest_l7_protocols[u] && l7_unparsed[x] && strcasecmp(s, l7_unparsed[x]); x++)
			;
		if (!s || (!rest_l7_protocols[u] && !l7_unparsed[x]))
			return bad(p->err, p->errlen, "%s[%zu] is not one of %s", where, i, known);
		if (rest_l7_protocols[u])
			bits |= 1u << u;
		else if (p->d->feature == REST_L7)
			append(p->ignored, ", ", "%s %s (not parsed by ember)", where, l7_unparsed[x]);
	}
	*ret = bits;
	return 0;
}

/* One parameter, checked as its table row says and kept where the feature keeps it. */
static int parse_param(const struct param *pa, json_object *v, struct put *p)
{
	struct rest_doc *d = p->d;
	bool keep = pa->keeps >> d->feature & 1;
	char where[80], s[REST_PATH_MAX], *err = p->err;
	size_t errlen = p->errlen;
	const char *name = pa->name;
	int64_t x = 0;

	snprintf(where, sizeof(where), "params.%s", name);
	switch (pa->type) {
	case P_INT:
	case P_POW2:
		if (get_int(v, where, pa->lo, pa->hi, &x, err, errlen))
			return -EINVAL;
		if (pa->type == P_POW2 && (x & (x - 1)))
			return bad(err, errlen, "%s: %lld is not a power of two", where, (long long)x);
		break;
	case P_DIR:
		if (get_dir(v, where, s, err, errlen))
			return -EINVAL;
		if (!strcmp(name, "flame_dir"))
			break;
		/* svg_dir (the manual's) and output_dir (gala-gopher's) name one directory */
		if (p->dir_key && strcmp(s, p->dir))
			return bad(err, errlen, "params.%s and %s name the same directory (svg_dir is the manual's "
				   "name, output_dir gala-gopher's): give one", p->dir_key, where);
		p->dir_key = name;
		snprintf(p->dir, sizeof(p->dir), "%s", s);
		break;
	case P_FILE:
		if (get_dir(v, where, s, err, errlen))
			return -EINVAL;
		break;
	case P_SERVER:
		if (get_server(v, where, s, err, errlen))
			return -EINVAL;
		break;
	case P_DEV:
		if (get_str(v, where, s, sizeof(d->dev_name), err, errlen))
			return -EINVAL;
		for (const char *c = s; *c; c++)
			if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
			      *c == '.' || *c == '_' || *c == '-'))
				return bad(err, errlen, "%s '%s' is not a device name", where, s);
		break;
	case P_WORD:
		if (get_str(v, where, s, sizeof(s), err, errlen))
			return -EINVAL;
		if (!in_words(pa->words, s))
			return bad(err, errlen, "%s '%s' is not one of %s", where, s, pa->words);
		break;
	case P_WORDS:
		if (get_words(v, where, pa->words, err, errlen))
			return -EINVAL;
		break;
	case P_PROTOS: {
		uint32_t bits = 0;

		if (get_protos(v, where, &bits, p))
			return -EINVAL;
		if (keep)
			d->l7_protocols = bits;
		break;
	}
	case P_EMPTY_LIST:
		if (!json_object_is_type(v, json_type_array) || json_object_array_length(v))
			return bad(err, errlen, "%s names parameters of gala-gopher's custom probes; %s takes only []", where,
				   rest_feature__name(d->feature));
		break;
	}
	if (!(pa->acts >> d->feature & 1))
		append(p->ignored, ", ", "%s", where);
	if (!keep)
		return 0;
	if (!strcmp(name, "report_period"))
		d->report_period_s = (uint32_t)x;
	else if (!strcmp(name, "perf_sample_period"))
		d->perf_sample_period_ms = (uint32_t)x;
	else if (!strcmp(name, "svg_period"))
		d->svg_period_s = (uint32_t)x;
	else if (!strcmp(name, "sample_period"))
		d->sample_period_ms = (uint32_t)x;
	else if (!strcmp(name, "multi_instance"))
		d->multi_instance = x;
	else if (!strcmp(name, "native_stack"))
		d->native_stack = x;
	else if (!strcmp(name, "support_ssl"))
		d->support_ssl = x;
	else if (!strcmp(name, "svg_dir") || !strcmp(name, "output_dir"))
		snprintf(d->svg_dir, sizeof(d->svg_dir), "%s", s);
	else if (!strcmp(name, "flame_dir"))
		snprintf(d->flame_dir, sizeof(d->flame_dir), "%s", s);
	else if (!strcmp(name, "pyroscope_server"))
		snprintf(d->pyroscope_server, sizeof(d->pyroscope_server), "%s", s);
	else if (!strcmp(name, "dev_name"))
		snprintf(d->dev_name, sizeof(d->dev_name), "%s", s);
	else if (!strcmp(name, "stack_threshold"))
		d->stack_threshold_ms = x;
	return 0;
}

/* params change each parameter they name, as gala-gopher's parse_params does. */
static int parse_params(json_object *o, struct put *p)
{
	char list[300];

	if (!json_object_is_type(o, json_type_object))
		return bad(p->err, p->errlen, "params must be an object");
	json_object_object_foreach(o, k, v) {
		size_t i;

		for (i = 0; i < sizeof(param_table) / sizeof(param_table[0]) && strcmp(k, param_table[i].name); i++)
			;
		if (i == sizeof(param_table) / sizeof(param_table[0]))
			return bad(p->err, p->errlen, "params: '%.40s' is not a parameter of gala-gopher's or ember's "
				   "(%s applies %s)", k, rest_feature__name(p->d->feature),
				   param_list(p->d->feature, list, sizeof(list)));
		if (parse_param(&param_table[i], v, p))
			return -EINVAL;
	}
	return 0;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The body's document, decoded: a JSON object (*root, the caller's), or -EINVAL/-ENOMEM with why in err. */
static int decode(const char *body, size_t len, json_object **root, char *err, size_t errlen)
{
	json_tokener *tok = NULL;
	char *doc = NULL;
	size_t n = 0, i = 5;
	int r = -EINVAL;

	*root = NULL;
	if (!body || len < 5 || memcmp(body, "json=", 5))
		return bad(err, errlen, "the body is not json=<document> (curl --data-urlencode json='{...}')");
	if (!(doc = malloc(len + 1))) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n'))
		i++;
	if (i < len && body[i] == '{') {
		/* as written (curl -d json='{...}'): the document itself */
		memcpy(doc, body + i, len - i);
		n = len - i;
	} else {
		/* form-encoded (curl --data-urlencode): %XX and '+' for a space */
		for (; i < len; i++) {
			if (body[i] == '%') {
				int hi = i + 2 < len ? hexval(body[i + 1]) : -1, lo = i + 2 < len ? hexval(body[i + 2]) : -1;

				if (hi < 0 || lo < 0) {
					r = bad(err, errlen, "the body's form encoding is broken at byte %zu", i);
					goto cleanup;
				}
				doc[n++] = (char)(hi << 4 | lo);
				i += 2;
			} else if (body[i] == '&') {
				r = bad(err, errlen, "the body holds more than json=<document>");
				goto cleanup;
			} else {
				doc[n++] = body[i] == '+' ? ' ' : body[i];
			}
		}
	}
	if (memchr(doc, 0, n)) {
		r = bad(err, errlen, "the document holds a NUL byte");
		goto cleanup;
	}
	tok = json_tokener_new_ex(16);
	if (!tok) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
		goto cleanup;
	}
	*root = json_tokener_parse_ex(tok, doc, (int)n);
	if (!*root || json_tokener_get_error(tok) != json_tokener_success || tok->char_offset != (int)n) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		r = bad(err, errlen, "the document is not JSON: %s at character %d",
			e == json_tokener_continue ? "it ends too early" : json_tokener_error_desc(e), tok->char_offset);
		goto cleanup;
	}
	if (!json_object_is_type(*root, json_type_object)) {
		r = bad(err, errlen, "the document is not a JSON object");
		goto cleanup;
	}
	r = 0;
cleanup:
	if (r) {
		json_object_put(*root);
		*root = NULL;
	}
	if (tok)
		json_tokener_free(tok);
	free(doc);
	return r;
}

int rest_doc__apply(const char *body, size_t len, struct rest_doc *d, char *err, size_t errlen)
{
	static const char *const items[] = { "cmd", "snoopers", "params", "state" };
	struct put *p = calloc(1, sizeof(*p));
	struct rest_doc *nd = malloc(sizeof(*nd));
	bool seen[4] = { false, false, false, false }, any = false;
	json_object *root = NULL;
	char list[200], kept[64] = "";
	int r;

	if (!p || !nd) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
		goto cleanup;
	}
	if ((r = decode(body, len, &root, err, errlen))) {
		if (r == -EINVAL)
			gala_said(err, errlen, len >= 5 && !memcmp(body, "json=", 5) ? "invalid json format"
										 : "put data must start with json=");
		goto cleanup;
	}
	/* built on a copy: d changes only when the whole document is taken */
	*nd = *d;
	nd->notes[0] = 0;
	p->d = nd;
	p->err = err;
	p->errlen = errlen;
	{
		json_object_object_foreach(root, k, v) {
			unsigned i;

			for (i = 0; i < 4 && strcmp(k, items[i]); i++)
				;
			if (i < 4)
				seen[i] = true;
			if (i == 0)
				r = parse_cmd(v, p);
			else if (i == 1) {
				p->snooper[0] = 0;
				if ((r = parse_snoopers(v, p)) && p->snooper[0])
					gala_said(err, errlen, "Error occurs when parsing snooper %s", p->snooper);
			} else if (i == 2)
				r = parse_params(v, p);
			else if (i == 3) {
				const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;

				/* gala-gopher compares without case; "stoped", a spelling users send, stops too */
				r = 0;
				if (s && !strcasecmp(s, "running"))
					nd->running = true;
				else if (s && (!strcasecmp(s, "stopped") || !strcasecmp(s, "stoped")))
					nd->running = false;
				else if (s)
					r = bad(err, errlen, "invalid state %.40s: must be running or stopped", s);
				else
					r = bad(err, errlen, "invalid state: must be string");
			} else if (!strcmp(k, "blacklist"))
				r = bad(err, errlen, "blacklist is not supported by ember: name the processes to follow in "
					"snoopers");
			else
				r = bad(err, errlen, "unknown key '%.40s' (cmd, snoopers, params, state)", k);
			if (r)
				goto cleanup;
		}
	}
	for (unsigned i = 0; i < REST_PROBE_MAX; i++)
		any |= nd->probes[i];
	if (nd->running && !any) {
		r = bad(err, errlen, "state running needs a sub-item, and none is set: send cmd.probe (%s) in this PUT "
			"or an earlier one", probe_list(nd->feature, list, sizeof(list)));
		goto cleanup;
	}
	/* gala-gopher's rule for tprofiling: running without a snooper would follow nothing */
	if (nd->feature == REST_TPROFILING && nd->running && !nd->npids && !nd->nnames && !nd->ncontainers &&
	    !nd->npods) {
		r = bad(err, errlen, "the snooper for tprofiling cannot be empty: state running needs snoopers (proc_id, "
			"proc_name, container_id, pod_id) in this PUT or an earlier one");
		goto cleanup;
	}
	for (unsigned i = 0; i < 4; i++)
		if (!seen[i])
			snprintf(kept + strlen(kept), sizeof(kept) - strlen(kept), "%s%s", kept[0] ? ", " : "", items[i]);
	if (kept[0])
		append(nd->notes, "; ", "unchanged: %s%s", kept, seen[3] ? "" : nd->running ? " (running)" : " (stopped)");
	if (p->ignored[0])
		append(nd->notes, "; ", "ignored by %s: %s", rest_feature__name(nd->feature), p->ignored);
	if (p->info[0])
		append(nd->notes, "; ", "%s", p->info);
	*d = *nd;
	r = 0;
cleanup:
	json_object_put(root);
	free(nd);
	free(p);
	return r;
}

int rest_doc__parse(const char *body, size_t len, enum rest_feature f, struct rest_doc *d, char *err, size_t errlen)
{
	rest_doc__defaults(d, f);
	return rest_doc__apply(body, len, d, err, errlen);
}

char *rest_doc__render(const struct rest_doc *d)
{
	json_object *o = json_object_new_object(), *cmd = json_object_new_object(), *probe = json_object_new_array();
	json_object *sn = json_object_new_object(), *ids = json_object_new_array(), *names = json_object_new_array();
	json_object *cons = json_object_new_array(), *pods = json_object_new_array(), *par = json_object_new_object();
	char *ret = NULL;

	if (!o || !cmd || !probe || !sn || !ids || !names || !cons || !pods || !par)
		goto cleanup;
	for (unsigned i = 0; i < REST_PROBE_MAX && probe_names[d->feature][i]; i++)
		if (d->probes[i])
			json_object_array_add(probe, json_object_new_string(probe_names[d->feature][i]));
	json_object_object_add(cmd, "probe", probe);
	probe = NULL;
	json_object_object_add(o, "cmd", cmd);
	cmd = NULL;
	for (unsigned i = 0; i < d->npids; i++)
		json_object_array_add(ids, json_object_new_int64(d->pids[i]));
	for (unsigned i = 0; i < d->nnames; i++) {
		json_object *n = json_object_new_object();

		json_object_object_add(n, "comm", json_object_new_string(d->names[i].comm));
		json_object_object_add(n, "cmdline", json_object_new_string(d->names[i].cmdline));
		json_object_object_add(n, "debugging_dir", json_object_new_string(d->names[i].debugging_dir));
		json_object_array_add(names, n);
	}
	for (unsigned i = 0; i < d->ncontainers; i++)
		json_object_array_add(cons, json_object_new_string(d->containers[i]));
	for (unsigned i = 0; i < d->npods; i++)
		json_object_array_add(pods, json_object_new_string(d->pods[i]));
	json_object_object_add(sn, "proc_id", ids);
	json_object_object_add(sn, "proc_name", names);
	json_object_object_add(sn, "pod_id", pods);
	json_object_object_add(sn, "container_id", cons);
	ids = names = pods = cons = NULL;
	json_object_object_add(o, "snoopers", sn);
	sn = NULL;
	json_object_object_add(par, "report_period", json_object_new_int64(d->report_period_s));
	if (d->feature == REST_FLAMEGRAPH) {
		json_object_object_add(par, "perf_sample_period", json_object_new_int64(d->perf_sample_period_ms));
		json_object_object_add(par, "svg_period", json_object_new_int64(d->svg_period_s));
		json_object_object_add(par, "svg_dir", json_object_new_string(d->svg_dir));
		json_object_object_add(par, "flame_dir", json_object_new_string(d->flame_dir));
		json_object_object_add(par, "pyroscope_server", json_object_new_string(d->pyroscope_server));
		json_object_object_add(par, "multi_instance", json_object_new_int64(d->multi_instance));
		json_object_object_add(par, "native_stack", json_object_new_int64(d->native_stack));
	} else if (d->feature == REST_L7) {
		json_object *pl = json_object_new_array();

		for (unsigned i = 0; pl && rest_l7_protocols[i]; i++)
			if (d->l7_protocols >> i & 1)
				json_object_array_add(pl, json_object_new_string(rest_l7_protocols[i]));
		json_object_object_add(par, "l7_protocol", pl);
		json_object_object_add(par, "support_ssl", json_object_new_int64(d->support_ssl));
	} else if (d->feature == REST_TCP) {
		json_object_object_add(par, "sample_period", json_object_new_int64(d->sample_period_ms));
	} else if (d->feature == REST_TPROFILING) {
		/* unset: the agent's profiling.task.threads.stack_threshold, which this module does not know */
		if (d->stack_threshold_ms >= 0)
			json_object_object_add(par, "stack_threshold", json_object_new_int64(d->stack_threshold_ms));
	} else {
		json_object_object_add(par, "dev_name", json_object_new_string(d->dev_name));
	}
	json_object_object_add(o, "params", par);
	par = NULL;
	json_object_object_add(o, "state", json_object_new_string(d->running ? "running" : "stopped"));
	ret = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
							      JSON_C_TO_STRING_NOSLASHESCAPE));
cleanup:
	json_object_put(o);
	json_object_put(cmd);
	json_object_put(probe);
	json_object_put(sn);
	json_object_put(ids);
	json_object_put(names);
	json_object_put(cons);
	json_object_put(pods);
	json_object_put(par);
	return ret;
}
