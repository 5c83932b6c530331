/* The REST control API's documents: see rest_doc.h. */
#include "analyzer/rest/rest_doc.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fileutil.h"

static const char *const feature_names[REST_FEATURE_MAX] = { "flamegraph", "l7", "tcp", "baseinfo" };
static const char *const probe_names[REST_FEATURE_MAX][REST_PROBE_MAX + 1] = {
	[REST_FLAMEGRAPH] = { "oncpu", "offcpu", "mem", NULL },
	[REST_L7] = { "l7_bytes_metrics", "l7_rpc_metrics", "l7_rpc_trace", NULL },
	[REST_TCP] = { "tcp_abnormal", "tcp_rtt", "tcp_windows", "tcp_rate", "tcp_srtt", "tcp_sockbuf", "tcp_stats",
		       "tcp_delay", NULL },
	[REST_BASEINFO] = { "cpu", "mem", "nic", "disk", "net", "fs", "proc", "host", NULL },
};
/* The manual's sub-items whose data ember does not measure: refused, with what is measured. */
static const char *const unmeasured[] = { "tcp_windows", "tcp_rate", "tcp_srtt", "tcp_sockbuf", "tcp_delay", NULL };
const char *const rest_l7_protocols[] = { "http", "pgsql", "mysql", "redis", "kafka", "mongo", "dns", "http2", "cql",
					  NULL };
/* The manual's other features: answered "not supported by ember", never 404. */
static const char *const other_features[] = { "socket", "io", "proc", "jvm", "ksli", "postgre_sli",
					      "opengauss_sli", "dnsmasq", "lvs", "nginx", "haproxy", "kafka",
					      "virt", "tprofiling", "hw", "container", "sermant",
					      "sli", "flowtracer", NULL };

const char *rest_feature__name(enum rest_feature f) { return (unsigned)f < REST_FEATURE_MAX ? feature_names[f] : "?"; }
const char *rest_doc__supported(void) { return "flamegraph, l7, tcp, baseinfo"; }

const char *rest_doc__probe_name(enum rest_feature f, unsigned i)
{
	return (unsigned)f < REST_FEATURE_MAX && i < REST_PROBE_MAX ? probe_names[f][i] : NULL;
}

static const char *probe_list(enum rest_feature f)
{
	return f == REST_FLAMEGRAPH ? "oncpu, offcpu, mem"
	       : f == REST_L7	    ? "l7_bytes_metrics, l7_rpc_metrics, l7_rpc_trace"
	       : f == REST_TCP	    ? "tcp_abnormal, tcp_rtt, tcp_stats"
				    : "cpu, mem, nic, disk, net, fs, proc, host";
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
}

__attribute__((format(printf, 3, 4))) static int bad(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static void note(struct rest_doc *d, const char *what)
{
	size_t n = strlen(d->notes);

	snprintf(d->notes + n, sizeof(d->notes) - n, "%s%s", n ? "; " : "", what);
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
		return bad(err, errlen, "%s: %lld is out of range [%lld, %lld]", where, (long long)x, (long long)lo,
			   (long long)hi);
	*ret = x;
	return 0;
}

/* A directory a caller may name (common/fileutil.h: fileutil__safe_dir). */
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

static int parse_cmd(json_object *o, struct rest_doc *d, char *err, size_t errlen)
{
	if (!json_object_is_type(o, json_type_object))
		return bad(err, errlen, "cmd must be an object");
	json_object_object_foreach(o, k, v) {
		if (!strcmp(k, "probe")) {
			size_t n;

			if (!json_object_is_type(v, json_type_array))
				return bad(err, errlen, "cmd.probe must be a list of sub-items (oncpu, offcpu, mem)");
			n = json_object_array_length(v);
			for (size_t i = 0; i < n; i++) {
				json_object *e = json_object_array_get_idx(v, i);
				const char *s = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : NULL;
				unsigned p;

				for (p = 0; s && probe_names[d->feature][p] && strcmp(s, probe_names[d->feature][p]); p++)
					;
				if (!s || !probe_names[d->feature][p])
					return bad(err, errlen, "cmd.probe: '%.40s' is not a sub-item of %s (%s)",
						   s ? s : "(not a string)", rest_feature__name(d->feature), probe_list(d->feature));
				for (unsigned u = 0; unmeasured[u]; u++)
					if (!strcmp(s, unmeasured[u]))
						return bad(err, errlen, "cmd.probe: %s is not measured by ember (measured: %s)", s,
							   probe_list(d->feature));
				if (d->feature == REST_L7 && p == REST_L7_TRACE)
					note(d, "l7_rpc_trace: the exchanges are listed in the task's network.json");
				d->probes[p] = true;
			}
		} else if (!strcmp(k, "bin") || !strcmp(k, "check_cmd")) {
			char tmp[REST_NAME_MAX];

			if (get_str(v, !strcmp(k, "bin") ? "cmd.bin" : "cmd.check_cmd", tmp, sizeof(tmp), err, errlen))
				return -EINVAL;
			if (tmp[0])
				note(d, !strcmp(k, "bin") ? "cmd.bin is ignored: ember runs no program"
							  : "cmd.check_cmd is ignored: ember runs no program");
		} else {
			return bad(err, errlen, "cmd: unknown key '%.40s' (probe, bin, check_cmd)", k);
		}
	}
	return 0;
}

static int parse_snoopers(json_object *o, struct rest_doc *d, char *err, size_t errlen)
{
	char where[64];

	if (!json_object_is_type(o, json_type_object))
		return bad(err, errlen, "snoopers must be an object");
	json_object_object_foreach(o, k, v) {
		size_t n;

		if (strcmp(k, "proc_id") && strcmp(k, "proc_name") && strcmp(k, "container_id") && strcmp(k, "pod_id"))
			return bad(err, errlen, "snoopers: unknown key '%.40s' (proc_id, proc_name, container_id, pod_id)",
				   k);
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
				if (pn->debugging_dir[0])
					note(d, "proc_name.debugging_dir is ignored: ember finds debug files by build id");
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

/* Whether feature f takes parameter k (the manual's "Supported Monitoring Scope"). */
static bool takes(enum rest_feature f, const char *k)
{
	static const struct { const char *name; unsigned features; } scope[] = {
		{ "report_period", 1u << REST_FLAMEGRAPH | 1u << REST_L7 | 1u << REST_TCP | 1u << REST_BASEINFO },
		{ "dev_name", 1u << REST_BASEINFO },
		{ "perf_sample_period", 1u << REST_FLAMEGRAPH }, { "svg_period", 1u << REST_FLAMEGRAPH },
		{ "svg_dir", 1u << REST_FLAMEGRAPH }, { "flame_dir", 1u << REST_FLAMEGRAPH },
		{ "multi_instance", 1u << REST_FLAMEGRAPH }, { "native_stack", 1u << REST_FLAMEGRAPH },
		{ "pyroscope_server", 1u << REST_FLAMEGRAPH }, { "l7_protocol", 1u << REST_L7 },
		{ "support_ssl", 1u << REST_L7 }, { "cluster_ip_backend", 1u << REST_L7 | 1u << REST_TCP },
		{ "sample_period", 1u << REST_TCP }, { "report_source_port", 1u << REST_TCP },
		{ "metrics_type", 1u << REST_FLAMEGRAPH | 1u << REST_L7 | 1u << REST_TCP | 1u << REST_BASEINFO },
	};

	for (unsigned i = 0; i < sizeof(scope) / sizeof(scope[0]); i++)
		if (!strcmp(k, scope[i].name))
			return scope[i].features >> f & 1;
	return false;
}

static const char *param_list(enum rest_feature f)
{
	return f == REST_FLAMEGRAPH ? "perf_sample_period, svg_period, svg_dir, flame_dir, multi_instance, native_stack, "
				      "pyroscope_server, report_period, metrics_type"
	       : f == REST_L7	    ? "l7_protocol, support_ssl, report_period, cluster_ip_backend, metrics_type"
	       : f == REST_TCP	    ? "report_period, sample_period, report_source_port, cluster_ip_backend, metrics_type"
				    : "report_period, dev_name, metrics_type";
}

static int parse_params(json_object *o, struct rest_doc *d, char *err, size_t errlen)
{
	char where[80];
	int64_t x;

	if (!json_object_is_type(o, json_type_object))
		return bad(err, errlen, "params must be an object");
	json_object_object_foreach(o, k, v) {
		snprintf(where, sizeof(where), "params.%.60s", k);
		if (!takes(d->feature, k)) {
			/* a parameter of another feature: its range first, as the manual's table gives it */
			if (!strcmp(k, "sample_period") && get_int(v, where, 100, 10000, &x, err, errlen))
				return -EINVAL;
			if (!strcmp(k, "sample_period"))
				return bad(err, errlen, "%s applies to io and tcp, not to %s", where,
					   rest_feature__name(d->feature));
			return bad(err, errlen, "params: '%.40s' is not a parameter of %s (%s)", k,
				   rest_feature__name(d->feature), param_list(d->feature));
		}
		if (!strcmp(k, "perf_sample_period")) {
			if (get_int(v, where, 10, 1000, &x, err, errlen))
				return -EINVAL;
			d->perf_sample_period_ms = (uint32_t)x;
		} else if (!strcmp(k, "svg_period")) {
			if (get_int(v, where, 30, 600, &x, err, errlen))
				return -EINVAL;
			d->svg_period_s = (uint32_t)x;
		} else if (!strcmp(k, "report_period")) {
			if (get_int(v, where, 5, 600, &x, err, errlen))
				return -EINVAL;
			d->report_period_s = (uint32_t)x;
		} else if (!strcmp(k, "sample_period")) {
			if (get_int(v, where, 100, 10000, &x, err, errlen))
				return -EINVAL;
			d->sample_period_ms = (uint32_t)x;
			note(d, "params.sample_period has no effect: ember follows every socket call");
		} else if (!strcmp(k, "multi_instance") || !strcmp(k, "native_stack") || !strcmp(k, "support_ssl") ||
			   !strcmp(k, "cluster_ip_backend") || !strcmp(k, "report_source_port")) {
			if (get_int(v, where, 0, 1, &x, err, errlen))
				return -EINVAL;
			if (!strcmp(k, "multi_instance"))
				d->multi_instance = x;
			else if (!strcmp(k, "native_stack"))
				d->native_stack = x;
			else if (!strcmp(k, "support_ssl"))
				d->support_ssl = x;  /* TLS plaintext: profiling.task.network.tls, for every task */
			else if (x)
				note(d, !strcmp(k, "cluster_ip_backend") ? "params.cluster_ip_backend has no effect"
									  : "params.report_source_port has no effect");
		} else if (!strcmp(k, "svg_dir") || !strcmp(k, "flame_dir")) {
			if (get_dir(v, where, !strcmp(k, "svg_dir") ? d->svg_dir : d->flame_dir, err, errlen))
				return -EINVAL;
		} else if (!strcmp(k, "pyroscope_server")) {
			if (get_server(v, where, d->pyroscope_server, err, errlen))
				return -EINVAL;

		} else if (!strcmp(k, "dev_name")) {
			if (get_str(v, where, d->dev_name, sizeof(d->dev_name), err, errlen))
				return -EINVAL;
			for (const char *c = d->dev_name; *c; c++)
				if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
				      *c == '.' || *c == '_' || *c == '-'))
					return bad(err, errlen, "%s '%s' is not a device name", where, d->dev_name);
		} else if (!strcmp(k, "l7_protocol")) {
			size_t n;

			if (!json_object_is_type(v, json_type_array))
				return bad(err, errlen, "%s must be a list of protocols", where);
			d->l7_protocols = 0;
			n = json_object_array_length(v);
			for (size_t i = 0; i < n; i++) {
				json_object *e = json_object_array_get_idx(v, i);
				const char *s = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : NULL;
				unsigned p;

				for (p = 0; s && rest_l7_protocols[p] && strcmp(s, rest_l7_protocols[p]); p++)
					;
				if (s && !strcmp(s, "rocketmq"))
					return bad(err, errlen, "%s[%zu]: rocketmq is not parsed by ember", where, i);
				if (!s || !rest_l7_protocols[p])
					return bad(err, errlen, "%s[%zu] is not one of http, pgsql, mysql, redis, kafka, mongo, "
						   "dns, http2, cql", where, i);
				d->l7_protocols |= 1u << p;
			}
		} else { /* metrics_type */
			size_t n;

			if (!json_object_is_type(v, json_type_array))
				return bad(err, errlen, "%s must be a list of raw, telemetry", where);
			n = json_object_array_length(v);
			for (size_t i = 0; i < n; i++) {
				json_object *e = json_object_array_get_idx(v, i);

				if (!json_object_is_type(e, json_type_string) ||
				    (strcmp(json_object_get_string(e), "raw") && strcmp(json_object_get_string(e), "telemetry")))
					return bad(err, errlen, "%s[%zu] is not raw or telemetry", where, i);
			}
			note(d, "params.metrics_type has no effect (gala-gopher does not use it either)");
		}
	}
	return 0;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

int rest_doc__parse(const char *body, size_t len, enum rest_feature f, struct rest_doc *d, char *err, size_t errlen)
{
	json_tokener *tok = NULL;
	json_object *root = NULL;
	char *doc = NULL;
	size_t n = 0, i = 5;
	int r = -EINVAL;

	rest_doc__defaults(d, f);
	if (!body || len < 5 || memcmp(body, "json=", 5)) {
		r = bad(err, errlen, "the body is not json=<document> (curl --data-urlencode json='{...}')");
		goto cleanup;
	}
	if (!(doc = malloc(len + 1))) {
		r = bad(err, errlen, "out of memory");
		goto cleanup;
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
		r = bad(err, errlen, "out of memory");
		goto cleanup;
	}
	root = json_tokener_parse_ex(tok, doc, (int)n);
	if (!root || json_tokener_get_error(tok) != json_tokener_success || tok->char_offset != (int)n) {
		enum json_tokener_error e = json_tokener_get_error(tok);

		r = bad(err, errlen, "the document is not JSON: %s at character %d",
			e == json_tokener_continue ? "it ends too early" : json_tokener_error_desc(e), tok->char_offset);
		goto cleanup;
	}
	if (!json_object_is_type(root, json_type_object)) {
		r = bad(err, errlen, "the document is not a JSON object");
		goto cleanup;
	}
	{
		json_object_object_foreach(root, k, v) {
			if (!strcmp(k, "cmd"))
				r = parse_cmd(v, d, err, errlen);
			else if (!strcmp(k, "snoopers"))
				r = parse_snoopers(v, d, err, errlen);
			else if (!strcmp(k, "params"))
				r = parse_params(v, d, err, errlen);
			else if (!strcmp(k, "state")) {
				const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;

				r = 0;
				if (s && !strcmp(s, "running"))
					d->running = true;
				else if (!s || strcmp(s, "stopped"))
					r = bad(err, errlen, "state must be \"running\" or \"stopped\"");
			} else
				r = bad(err, errlen, "unknown key '%.40s' (cmd, snoopers, params, state)", k);
			if (r)
				goto cleanup;
		}
	}
	r = 0;
cleanup:
	json_object_put(root);
	if (tok)
		json_tokener_free(tok);
	free(doc);
	return r;
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
