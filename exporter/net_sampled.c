#include "exporter/net_sampled.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/net_format.h"
#include "exporter/utf8.h"

#define FIELD_MAX 96	/* bytes of a listed trace id or URI; longer ones end in "..." */

enum reason { R_SLOW, R_4XX, R_5XX, R_OTHER, R_MAX };
static const char *const reason_names[R_MAX] = { "slow", "status_4xx", "status_5xx", "other" };

struct entry {
	uint64_t duration_ns, req_unix_ns;
	uint32_t pid;
	int32_t status;
	bool request, response;
	char side[8], provider[12], peer[64], trace_id[FIELD_MAX], uri[FIELD_MAX];
};

struct net_sampled {
	uint64_t count[R_MAX], not_kept, no_trace, bad_trace;
	struct entry top[R_MAX][NET_SAMPLED_LISTED];	/* by duration, descending */
	unsigned n[R_MAX];
};

struct net_sampled *net_sampled__new(void)
{
	return calloc(1, sizeof(struct net_sampled));
}

struct net_sampled *net_sampled__free(struct net_sampled *s)
{
	free(s);
	return NULL;
}

uint64_t net_sampled__count(const struct net_sampled *s)
{
	uint64_t n = 0;

	for (unsigned r = 0; r < R_MAX; r++)
		n += s->count[r];
	return n;
}

static const char *str(const char *s) { return s ? s : ""; }

/* ---- network.json -------------------------------------------------------------------- */

/* Text from the network as a JSON string: valid UTF-8. */
static void put_text(struct json_object *o, const char *k, const void *data, size_t len)
{
	size_t n;
	char *s = utf8__sanitize(data ? data : "", data ? len : 0, &n, NULL);

	if (s)
		json_object_object_add(o, k, json_object_new_string_len(s, (int)n));
	free(s);
}

static void put_str(struct json_object *o, const char *k, const char *v)
{
	put_text(o, k, str(v), strlen(str(v)));
}

static void put_u64(struct json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

/* "request": the bytes kept, "request_bytes": how many, "request_truncated": cut by the analyzer or here. */
static void put_body(struct json_object *o, const char *k, const ProtobufCBinaryData *d, bool truncated)
{
	char key[32];
	size_t n = d->len > NET_SAMPLED_BODY_MAX ? NET_SAMPLED_BODY_MAX : d->len;

	if (!d->len && !truncated)
		return;	/* the rule did not ask for it */
	put_text(o, k, d->data, n);
	snprintf(key, sizeof(key), "%s_bytes", k);
	put_u64(o, key, d->len);
	snprintf(key, sizeof(key), "%s_truncated", k);
	json_object_object_add(o, key, json_object_new_boolean(truncated || n < d->len));
}

int net_sampled__write_json(const Ember__NetSampledTrace *t, FILE *out)
{
	const Ember__NetExchange *x = t->exchange;
	struct json_object *o = json_object_new_object(), *fields;

	if (!o)
		return -ENOMEM;
	put_str(o, "type", "sampled");
	put_u64(o, "pid", x ? x->pid : 0);
	put_str(o, "process_name", t->process_name);
	put_str(o, "side", x ? x->side : "");
	put_str(o, "local_address", t->local_address);
	put_str(o, "peer_address", x ? x->peer_address : "");
	put_u64(o, "connection_id", x ? x->connection_id : 0);
	put_str(o, "protocol", x ? x->protocol : "");
	put_u64(o, "req_unix_ns", x ? x->req_unix_ns : 0);
	put_u64(o, "latency_ns", x ? x->latency_ns : 0);
	net_format__put_ms(o, "latency_ms", x ? x->latency_ns : 0);
	put_u64(o, "duration_ns", x ? x->duration_ns : 0);
	net_format__put_ms(o, "duration_ms", x ? x->duration_ns : 0);
	put_u64(o, "req_bytes", x ? x->req_bytes : 0);
	put_u64(o, "resp_bytes", x ? x->resp_bytes : 0);
	json_object_object_add(o, "status", json_object_new_int(x ? x->status : -1));
	put_str(o, "uri", t->uri);
	put_str(o, "reason", t->reason);
	put_str(o, "trace_provider", t->trace_provider);
	put_str(o, "trace_id", t->trace_id);
	put_str(o, "segment_id", t->segment_id);
	put_str(o, "span_id", t->span_id);
	fields = json_object_new_object();
	for (size_t i = 0; fields && x && i < x->n_fields; i++)
		if (x->fields[i] && x->fields[i]->name)
			put_str(fields, x->fields[i]->name, x->fields[i]->value);
	json_object_object_add(o, "fields", fields);
	put_body(o, "request", &t->request, t->request_truncated);
	put_body(o, "response", &t->response, t->response_truncated);
	if (t->n_syscalls) {
		/* The calls that carried it, with the packets under each. */
		struct json_object *a = json_object_new_array();

		for (size_t i = 0; a && i < t->n_syscalls; i++) {
			const Ember__NetSyscall *c = t->syscalls[i];
			struct json_object *j = json_object_new_object();

			if (!j)
				break;
			put_str(j, "name", c->name);
			put_u64(j, "start_unix_ns", c->start_unix_ns);
			put_u64(j, "end_unix_ns", c->end_unix_ns);
			put_u64(j, "packets", c->package_count);
			put_u64(j, "packet_bytes", c->package_size);
			put_u64(j, "ifindex", c->ifindex);
			put_str(j, "ifname", c->ifname);
			put_u64(j, "rtt_us", c->rtt_us);
			json_object_array_add(a, j);
		}
		json_object_object_add(o, "syscalls", a);
	}
	return net_format__write_line(o, out);
}

/* ---- the summary ----------------------------------------------------------------------- */

static enum reason reason_of(const char *s)
{
	for (unsigned r = 0; r < R_OTHER; r++)
		if (!strcmp(str(s), reason_names[r]))
			return (enum reason)r;
	return R_OTHER;
}

/* s, valid UTF-8, cut to the field's size between characters ("..." when cut). */
static void copy_text(char *buf, size_t cap, const char *s)
{
	size_t n;
	char *c = utf8__sanitize(str(s), strlen(str(s)), &n, NULL);

	buf[0] = 0;
	if (!c)
		return;
	if (n >= cap) {
		n = cap - 4;
		while (n && ((unsigned char)c[n] & 0xc0) == 0x80)
			n--;
		memcpy(c + n, "...", 4);
	}
	snprintf(buf, cap, "%s", c);
	free(c);
}

static void add_entry(struct net_sampled *s, enum reason r, const struct entry *e)
{
	struct entry *top = s->top[r];
	unsigned i;

	s->count[r]++;
	if (s->n[r] == NET_SAMPLED_LISTED && e->duration_ns <= top[NET_SAMPLED_LISTED - 1].duration_ns)
		return;
	for (i = s->n[r] < NET_SAMPLED_LISTED ? s->n[r]++ : NET_SAMPLED_LISTED - 1;
	     i > 0 && top[i - 1].duration_ns < e->duration_ns; i--)
		top[i] = top[i - 1];
	top[i] = *e;
}

struct fields {
	const char *reason, *side, *peer, *provider, *trace_id, *uri;
};

static void add(struct net_sampled *s, struct entry *e, const struct fields *f)
{
	snprintf(e->side, sizeof(e->side), "%s", str(f->side));
	snprintf(e->provider, sizeof(e->provider), "%s", str(f->provider));
	snprintf(e->peer, sizeof(e->peer), "%s", str(f->peer));
	copy_text(e->trace_id, sizeof(e->trace_id), f->trace_id);
	copy_text(e->uri, sizeof(e->uri), f->uri);
	add_entry(s, reason_of(f->reason), e);
}

void net_sampled__add(struct net_sampled *s, const Ember__NetSampledTrace *t)
{
	const Ember__NetExchange *x;
	struct entry e = { .status = -1 };

	if (!t)
		return;
	x = t->exchange;
	if (x)
		e = (struct entry){ .duration_ns = x->duration_ns, .req_unix_ns = x->req_unix_ns, .pid = x->pid,
				    .status = x->status };
	e.request = t->request.len || t->request_truncated;
	e.response = t->response.len || t->response_truncated;
	add(s, &e, &(struct fields){ t->reason, x ? x->side : "", x ? x->peer_address : "", t->trace_provider,
				     t->trace_id, t->uri });
}

void net_sampled__add_not_kept(struct net_sampled *s, uint64_t n)
{
	s->not_kept += n;
}

void net_sampled__add_untraced(struct net_sampled *s, uint64_t no_trace, uint64_t bad_trace)
{
	s->no_trace += no_trace;
	s->bad_trace += bad_trace;
}

void net_sampled__load(struct net_sampled *s, struct json_object *o)
{
	struct json_object *v;
	struct entry e = { .duration_ns = net_format__get_u64(o, "duration_ns"), .req_unix_ns = net_format__get_u64(o, "req_unix_ns"),
			   .pid = (uint32_t)net_format__get_u64(o, "pid"), .status = -1 };

	if (json_object_object_get_ex(o, "status", &v))
		e.status = json_object_get_int(v);
	e.request = json_object_object_get_ex(o, "request", &v);
	e.response = json_object_object_get_ex(o, "response", &v);
	add(s, &e, &(struct fields){ net_format__get_str(o, "reason"), net_format__get_str(o, "side"), net_format__get_str(o, "peer_address"),
				     net_format__get_str(o, "trace_provider"), net_format__get_str(o, "trace_id"), net_format__get_str(o, "uri") });
}

/* ---- network.txt ----------------------------------------------------------------------- */

void net_sampled__write_text(const struct net_sampled *s, FILE *out)
{
	uint64_t total = net_sampled__count(s);

	if (!total && !s->not_kept && !s->no_trace && !s->bad_trace)
		return;
	fprintf(out, "\nSampled traces (HTTP exchanges with a trace id that matched a sampling rule: %llu kept",
		(unsigned long long)total);
	if (s->not_kept)
		fprintf(out, "; %llu more matched but were over the analyzer's bound per URI and reason",
			(unsigned long long)s->not_kept);
	if (s->no_trace || s->bad_trace)
		fprintf(out, "; %llu more matched without a trace context, so none was sampled (no sw8, b3 or "
			"x-b3-traceid header: %llu; only malformed ones: %llu)",
			(unsigned long long)(s->no_trace + s->bad_trace), (unsigned long long)s->no_trace,
			(unsigned long long)s->bad_trace);
	fprintf(out, ")\n%-12s %8s\n", "reason", "traces");
	for (unsigned r = 0; r < R_MAX; r++)
		if (r < R_OTHER || s->count[r])
			fprintf(out, "%-12s %8llu\n", reason_names[r], (unsigned long long)s->count[r]);
	if (!total)
		return;
	fprintf(out, "The %u slowest per reason (duration: first request byte to response)\n", NET_SAMPLED_LISTED);
	fprintf(out, "%11s %-12s %6s %-7s %8s %-24s %-24s %-10s %-9s %-34s %s\n", "duration ms", "reason", "status",
		"side", "pid", "peer", "request time (UTC)", "provider", "kept", "trace id", "uri");
	for (unsigned r = 0; r < R_MAX; r++)
		for (unsigned i = 0; i < s->n[r]; i++) {
			const struct entry *e = &s->top[r][i];
			char dur[32], when[40], status[16] = "-";

			net_format__ms(e->duration_ns, dur, sizeof(dur));
			net_format__utc(e->req_unix_ns, when, sizeof(when));
			if (e->status >= 0)
				snprintf(status, sizeof(status), "%d", e->status);
			fprintf(out, "%11s %-12s %6s %-7s %8u %-24s %-24s %-10s %-9s %-34s %s\n", dur, reason_names[r],
				status, e->side, e->pid, e->peer, when, e->provider,
				e->request && e->response ? "req+resp" : e->request ? "req" : e->response ? "resp" : "-",
				e->trace_id, e->uri);
		}
}
