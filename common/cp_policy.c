/* Continuous-profiling policies: see cp_policy.h. */
#include "common/cp_policy.h"

#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/regex_guard.h"

static const char *const target_names[CP_TARGET_MAX] = { "ON_CPU", "OFF_CPU", "NETWORK", "THREADS" };
static const struct {
	const char *name, *protocol;
} monitors[CP_MON_MAX] = {
#define L7(M, P) [CP_MON_##M##_ERROR_RATE] = { #M "_ERROR_RATE", P }, \
		 [CP_MON_##M##_AVG_RESPONSE_TIME] = { #M "_AVG_RESPONSE_TIME", P }
	[CP_MON_PROCESS_CPU] = { "PROCESS_CPU", NULL },
	[CP_MON_PROCESS_THREAD_COUNT] = { "PROCESS_THREAD_COUNT", NULL },
	[CP_MON_SYSTEM_LOAD] = { "SYSTEM_LOAD", NULL },
	L7(HTTP, "http1"), L7(HTTP2, "http2"), L7(MYSQL, "mysql"), L7(PGSQL, "pgsql"), L7(REDIS, "redis"),
	L7(MONGO, "mongo"), L7(KAFKA, "kafka"), L7(DNS, "dns"), L7(CQL, "cql"),
#undef L7
};

const char *cp_target__name(enum cp_target t) { return (unsigned)t < CP_TARGET_MAX ? target_names[t] : "?"; }
const char *cp_monitor__name(enum cp_monitor m) { return (unsigned)m < CP_MON_MAX ? monitors[m].name : "?"; }
const char *cp_monitor__protocol(enum cp_monitor m) { return (unsigned)m < CP_MON_MAX ? monitors[m].protocol : NULL; }
bool cp_monitor__is_l7(enum cp_monitor m) { return m >= CP_MON_HTTP_ERROR_RATE && m < CP_MON_MAX; }
bool cp_monitor__is_error_rate(enum cp_monitor m) { return cp_monitor__is_l7(m) && (m - CP_MON_HTTP_ERROR_RATE) % 2 == 0; }
bool cp_monitor__has_uri(enum cp_monitor m)
{
	return m == CP_MON_HTTP_ERROR_RATE || m == CP_MON_HTTP_AVG_RESPONSE_TIME || m == CP_MON_HTTP2_ERROR_RATE ||
	       m == CP_MON_HTTP2_AVG_RESPONSE_TIME;
}

/* The monitors a source may name: the OAP knows Rover's. */
static int lookup_monitor(const char *s, enum cp_source src)
{
	for (unsigned i = 0; s && i < (src == CP_SOURCE_OAP ? CP_MON_ROVER_MAX : CP_MON_MAX); i++)
		if (!strcmp(s, monitors[i].name))
			return (int)i;
	return -1;
}

struct parse {
	yaml_document_t *doc;
	struct cp_policies *set;
	enum cp_source src;
};

__attribute__((format(printf, 2, 3))) static void problem(struct cp_policies *set, const char *fmt, ...)
{
	va_list ap;

	if (set->n_problems < CP_MAX_PROBLEMS) {
		va_start(ap, fmt);
		vsnprintf(set->problems[set->n_problems], CP_PROBLEM_MAX, fmt, ap);
		va_end(ap);
	}
	set->n_problems++;
}

/* A scalar's text, NULL if n is not a scalar. */
static const char *scalar(yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int lookup_name(const char *s, const char *const *names, unsigned n)
{
	for (unsigned i = 0; s && i < n; i++)
		if (!strcmp(s, names[i]))
			return (int)i;
	return -1;
}

/* A whole-string decimal integer in [lo, hi]. */
static int parse_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *ret)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -EINVAL;
	*ret = (uint32_t)v;
	return 0;
}

static bool regex_ok(const char *re)
{
	regex_t rx;

	if (regex_guard__too_heavy(re) || regcomp(&rx, re, REG_EXTENDED | REG_NOSUB))
		return false;
	regfree(&rx);
	return true;
}

/* "where" names the item in problems: "policy 'x' ON_CPU.PROCESS_CPU". */
static int parse_item(struct parse *p, struct cp_item *it, yaml_node_t *n, const char *where)
{
	const char *thr = NULL, *period = NULL, *count = NULL;
	char *end;

	if (n->type != YAML_MAPPING_NODE) {
		problem(p->set, "%s: not a mapping of Threshold, Period, Count", where);
		return -EINVAL;
	}
	for (yaml_node_pair_t *kv = n->data.mapping.pairs.start; kv < n->data.mapping.pairs.top; kv++) {
		const char *k = scalar(yaml_document_get_node(p->doc, kv->key));
		yaml_node_t *v = yaml_document_get_node(p->doc, kv->value);

		if (!k) {
			problem(p->set, "%s: a key that is not a string", where);
			return -EINVAL;
		}
		if (!strcmp(k, "Threshold")) {
			thr = scalar(v);
		} else if (!strcmp(k, "Period")) {
			period = scalar(v);
		} else if (!strcmp(k, "Count")) {
			count = scalar(v);
		} else if (!strcmp(k, "URIRegex")) {
			const char *re = scalar(v);

			if (v && v->type == YAML_SCALAR_NODE && (!re[0] || !strcmp(re, "null") || !strcmp(re, "~")))
				continue; /* absent, as the OAP's encoder omits nulls */
			if (!re || strlen(re) >= CP_URI_MAX || !regex_ok(re)) {
				problem(p->set, "%s: URIRegex is not a regular expression of at most %d characters that "
					"repeats little (one repetition per atom, up to {%d})", where, CP_URI_MAX - 1,
					REGEX_GUARD_MAX_REPEAT);
				return -EINVAL;
			}
			snprintf(it->uri_regex, sizeof(it->uri_regex), "%s", re);
		} else if (!strcmp(k, "URIList")) {
			if (v && v->type == YAML_SCALAR_NODE && (!strcmp(scalar(v), "null") || !strcmp(scalar(v), "~") ||
								 !scalar(v)[0]))
				continue;
			if (!v || v->type != YAML_SEQUENCE_NODE) {
				problem(p->set, "%s: URIList is not a list", where);
				return -EINVAL;
			}
			for (yaml_node_item_t *u = v->data.sequence.items.start; u < v->data.sequence.items.top; u++) {
				const char *s = scalar(yaml_document_get_node(p->doc, *u));

				if (!s || !s[0] || strlen(s) >= CP_URI_MAX || it->n_uris >= CP_MAX_URIS) {
					problem(p->set, "%s: URIList holds at most %d non-empty URIs of at most %d characters",
						where, CP_MAX_URIS, CP_URI_MAX - 1);
					return -EINVAL;
				}
				snprintf(it->uris[it->n_uris++], CP_URI_MAX, "%s", s);
			}
		} else {
			problem(p->set, "%s: unknown key '%.40s' (Threshold, Period, Count, URIList, URIRegex)", where, k);
			return -EINVAL;
		}
	}
	if (!thr || !thr[0]) {
		problem(p->set, "%s: Threshold is missing", where);
		return -EINVAL;
	}
	errno = 0;
	it->threshold = strtod(thr, &end);
	if (errno || *end || end == thr || !isfinite(it->threshold) || it->threshold < 0 ||
	    strlen(thr) >= sizeof(it->threshold_text)) {
		problem(p->set, "%s: Threshold '%.31s' is not a non-negative number", where, thr);
		return -EINVAL;
	}
	snprintf(it->threshold_text, sizeof(it->threshold_text), "%s", thr);
	if (cp_monitor__is_error_rate(it->monitor) && it->threshold > 100) {
		problem(p->set, "%s: Threshold %s is over 100 (a percentage)", where, thr);
		return -EINVAL;
	}
	if (parse_u32(period, 1, CP_PERIOD_MAX, &it->period)) {
		problem(p->set, "%s: Period '%.31s' is not a number of seconds from 1 to %d", where, period ? period : "",
			CP_PERIOD_MAX);
		return -EINVAL;
	}
	if (parse_u32(count, 1, it->period, &it->count)) {
		problem(p->set, "%s: Count '%.31s' is not a number from 1 to Period (%u)", where, count ? count : "",
			it->period);
		return -EINVAL;
	}
	if ((it->n_uris || it->uri_regex[0]) && !cp_monitor__has_uri(it->monitor)) {
		problem(p->set, "%s: URIList and URIRegex apply to HTTP and HTTP2 monitors only", where);
		return -EINVAL;
	}
	if (it->n_uris && it->uri_regex[0]) {
		problem(p->set, "%s: URIList and URIRegex are exclusive", where);
		return -EINVAL;
	}
	return 0;
}

static void parse_profiling(struct parse *p, struct cp_policy *pol, yaml_node_t *n)
{
	char where[CP_NAME_MAX + 64];

	if (n->type != YAML_MAPPING_NODE) {
		problem(p->set, "policy '%s': Profiling is not a mapping of targets", pol->name);
		return;
	}
	for (yaml_node_pair_t *t = n->data.mapping.pairs.start; t < n->data.mapping.pairs.top; t++) {
		const char *tk = scalar(yaml_document_get_node(p->doc, t->key));
		yaml_node_t *tv = yaml_document_get_node(p->doc, t->value);
		int target = lookup_name(tk, target_names, p->src == CP_SOURCE_OAP ? CP_TARGET_ROVER_MAX : CP_TARGET_MAX);

		if (target < 0) {
			problem(p->set, "policy '%s': unknown target '%.40s' (ON_CPU, OFF_CPU, NETWORK%s)", pol->name,
				tk ? tk : "", p->src == CP_SOURCE_OAP ? "" : ", THREADS");
			continue;
		}
		if (!tv || tv->type != YAML_MAPPING_NODE) {
			problem(p->set, "policy '%s' %s: not a mapping of monitors", pol->name, tk);
			continue;
		}
		for (yaml_node_pair_t *m = tv->data.mapping.pairs.start; m < tv->data.mapping.pairs.top; m++) {
			const char *mk = scalar(yaml_document_get_node(p->doc, m->key));
			yaml_node_t *mv = yaml_document_get_node(p->doc, m->value);
			int mon = lookup_monitor(mk, p->src);
			struct cp_item it = { .target = (enum cp_target)target };

			if (mon < 0) {
				problem(p->set, "policy '%s' %s: unknown monitor '%.40s' (PROCESS_CPU, PROCESS_THREAD_COUNT, "
					"SYSTEM_LOAD, HTTP_ERROR_RATE, HTTP_AVG_RESPONSE_TIME%s)", pol->name, tk, mk ? mk : "",
					p->src == CP_SOURCE_LOCAL ? "; <P>_ERROR_RATE, <P>_AVG_RESPONSE_TIME for P in HTTP2, "
								    "MYSQL, PGSQL, REDIS, MONGO, KAFKA, DNS, CQL" : "");
				continue;
			}
			it.monitor = (enum cp_monitor)mon;
			snprintf(where, sizeof(where), "policy '%s' %s.%s", pol->name, tk, mk);
			if (!mv || parse_item(p, &it, mv, where))
				continue;
			for (unsigned i = 0; i < pol->n_items; i++)
				if (pol->items[i].target == it.target && pol->items[i].monitor == it.monitor) {
					problem(p->set, "%s: given twice", where);
					mon = -1;
				}
			if (mon >= 0 && pol->n_items == CP_MAX_ITEMS) {
				problem(p->set, "%s: a policy holds at most %d items", where, CP_MAX_ITEMS);
				mon = -1;
			}
			if (mon >= 0)
				pol->items[pol->n_items++] = it;
		}
	}
}

static void parse_policy(struct parse *p, unsigned idx, yaml_node_t *n)
{
	struct cp_policy *pol = &p->set->v[p->set->n];
	yaml_node_t *prof = NULL;

	memset(pol, 0, sizeof(*pol));
	snprintf(pol->name, sizeof(pol->name), "policy %u", idx + 1);
	if (n->type != YAML_MAPPING_NODE) {
		problem(p->set, "policy %u: not a mapping", idx + 1);
		return;
	}
	for (yaml_node_pair_t *kv = n->data.mapping.pairs.start; kv < n->data.mapping.pairs.top; kv++) {
		const char *k = scalar(yaml_document_get_node(p->doc, kv->key));
		yaml_node_t *v = yaml_document_get_node(p->doc, kv->value);
		const char *s = scalar(v);
		char *dst = NULL;
		size_t cap = 0;

		if (!k) {
			problem(p->set, "policy %u: a key that is not a string", idx + 1);
			return;
		}
		if (!strcmp(k, "Profiling")) {
			prof = v;
			continue;
		}
		if (!strcmp(k, "Name") && p->src == CP_SOURCE_LOCAL) {
			dst = pol->name;
			cap = sizeof(pol->name);
		} else if (!strcmp(k, "MatchCmd") && p->src == CP_SOURCE_LOCAL) {
			dst = pol->match_cmd;
			cap = sizeof(pol->match_cmd);
		} else if (!strcmp(k, "ServiceName") && p->src == CP_SOURCE_OAP) {
			dst = pol->service;
			cap = sizeof(pol->service);
		} else if (!strcmp(k, "UUID") && p->src == CP_SOURCE_OAP) {
			dst = pol->uuid;
			cap = sizeof(pol->uuid);
		} else {
			problem(p->set, "policy %u: unknown key '%.40s' (%s)", idx + 1, k,
				p->src == CP_SOURCE_LOCAL ? "Name, MatchCmd, Profiling" : "ServiceName, UUID, Profiling");
			return;
		}
		if (!s || strlen(s) >= cap) {
			problem(p->set, "policy %u: %s is not a string of at most %zu characters", idx + 1, k, cap - 1);
			return;
		}
		snprintf(dst, cap, "%s", s);
	}
	if (p->src == CP_SOURCE_OAP) {
		if (!pol->service[0]) {
			problem(p->set, "policy %u: no ServiceName", idx + 1);
			return;
		}
		snprintf(pol->name, sizeof(pol->name), "%s", pol->service);
		if (!pol->uuid[0] && (!prof || (prof->type == YAML_SCALAR_NODE && (!strcmp(scalar(prof), "null") ||
										 !scalar(prof)[0])))) {
			pol->removed = true;
			p->set->n++;
			return;
		}
	} else {
		if (!pol->match_cmd[0]) {
			problem(p->set, "policy '%s': MatchCmd (a regex on the command line) is missing", pol->name);
			return;
		}
		if (!regex_ok(pol->match_cmd)) {
			problem(p->set, "policy '%s': MatchCmd '%.60s' is not a POSIX extended regular expression "
				"that repeats little (one repetition per atom, up to {%d})", pol->name, pol->match_cmd,
				REGEX_GUARD_MAX_REPEAT);
			return;
		}
	}
	if (!prof) {
		problem(p->set, "policy '%s': no Profiling", pol->name);
		return;
	}
	parse_profiling(p, pol, prof);
	if (!pol->n_items) {
		problem(p->set, "policy '%s': no valid item", pol->name);
		return;
	}
	p->set->n++;
}

struct cp_policies *cp_policies__parse(const char *text, enum cp_source src, char *err, size_t errlen)
{
	struct cp_policies *set = calloc(1, sizeof(*set));
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	unsigned n = 0;
	int e = 0;

	if (!set) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (!text || !text[0])
		return set;
	if (!yaml_parser_initialize(&parser)) {
		free(set);
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
	if (!yaml_parser_load(&parser, &doc)) {
		snprintf(err, errlen, "not YAML or JSON: %s at line %zu, column %zu",
			 parser.problem ? parser.problem : "syntax error", parser.problem_mark.line + 1,
			 parser.problem_mark.column + 1);
		yaml_parser_delete(&parser);
		free(set);
		errno = EINVAL;
		return NULL;
	}
	root = yaml_document_get_root_node(&doc);
	if (root && root->type == YAML_SCALAR_NODE && (!strcmp(scalar(root), "null") || !scalar(root)[0]))
		root = NULL;
	if (root && root->type != YAML_SEQUENCE_NODE) {
		snprintf(err, errlen, "not a list of policies");
		e = EINVAL;
		goto cleanup;
	}
	if (root)
		n = (unsigned)(root->data.sequence.items.top - root->data.sequence.items.start);
	if (n > CP_MAX_POLICIES) {
		snprintf(err, errlen, "%u policies, at most %d", n, CP_MAX_POLICIES);
		e = EINVAL;
		goto cleanup;
	}
	set->v = n ? calloc(n, sizeof(*set->v)) : NULL;
	if (n && !set->v) {
		snprintf(err, errlen, "out of memory");
		e = ENOMEM;
		goto cleanup;
	}
	{
		struct parse p = { .doc = &doc, .set = set, .src = src };

		for (unsigned i = 0; i < n; i++)
			parse_policy(&p, i, yaml_document_get_node(&doc, root->data.sequence.items.start[i]));
	}
cleanup:
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (e) {
		cp_policies__free(set);
		errno = e;
		return NULL;
	}
	return set;
}

struct cp_policies *cp_policies__free(struct cp_policies *p)
{
	if (p) {
		free(p->v);
		free(p);
	}
	return NULL;
}

int cp_policies__check_local(const char *text, char *err, size_t errlen)
{
	struct cp_policies *set = cp_policies__parse(text, CP_SOURCE_LOCAL, err, errlen);
	int r = 0;

	if (!set)
		return -errno;
	if (set->n_problems) {
		snprintf(err, errlen, "%s%s", set->problems[0],
			 set->n_problems > 1 ? " (and more problems: fix this one first)" : "");
		r = -EINVAL;
	}
	cp_policies__free(set);
	return r;
}
