#include "analyzer/net/sampler.h"

#include <errno.h>
#include <net/if.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One kept exchange: the message and everything it points to, in one block. */
struct sample {
	Ember__NetSampledTrace m;
	Ember__NetExchange x;
	Ember__Label lab[L7_MAX_FIELDS], *labp[L7_MAX_FIELDS];
	char val[L7_MAX_FIELDS][L7_FIELD_MAX];
	char uri[L7_FIELD_MAX], peer[64], local[64], comm[16];
	struct sampler_trace tr;
	uint64_t duration;
	uint8_t *req, *resp;
	Ember__NetSyscall sc[SAMPLER_MAX_CALLS], *scp[SAMPLER_MAX_CALLS];
	char ifname[SAMPLER_MAX_CALLS][IF_NAMESIZE];
};

struct key {
	char uri[L7_FIELD_MAX];
	const char *reason;
	unsigned n;
	struct sample *s[SAMPLER_TOP];
};

struct sampler {
	const struct task_def *t;
	regex_t rx[TASK_MAX_SAMPLINGS];
	bool has_rx[TASK_MAX_SAMPLINGS];
	size_t body_limit;
	struct key *keys;           /* SAMPLER_MAX_KEYS, allocated at the first sample */
	unsigned nkeys;
	struct sampler_counts counts;
	Ember__NetSampledTrace **out;
};

struct sampler *sampler__new(const struct task_def *t)
{
	struct sampler *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->t = t;
	for (uint32_t i = 0; i < t->nsamplings; i++) {
		const struct task_sampling *r = &t->samplings[i];
		size_t want;

		if (r->uri_regex[0]) {
			if (regcomp(&s->rx[i], r->uri_regex, REG_EXTENDED | REG_NOSUB)) {
				sampler__free(s);
				errno = EINVAL;
				return NULL;
			}
			s->has_rx[i] = true;
		}
		want = r->complete_request ? (r->max_request_size ? r->max_request_size : SAMPLER_BODY_DEFAULT) : 0;
		if (r->complete_response && (r->max_response_size ? r->max_response_size : SAMPLER_BODY_DEFAULT) > want)
			want = r->max_response_size ? r->max_response_size : SAMPLER_BODY_DEFAULT;
		if (want > s->body_limit)
			s->body_limit = want > SAMPLER_BODY_MAX ? SAMPLER_BODY_MAX : want;
	}
	return s;
}

size_t sampler__body_limit(const struct sampler *s)
{
	return s ? s->body_limit : 0;
}

static void sample_free(struct sample *p)
{
	if (p) {
		free(p->req);
		free(p->resp);
		free(p);
	}
}

void sampler__reset(struct sampler *s)
{
	for (unsigned k = 0; s->keys && k < s->nkeys; k++)
		for (unsigned i = 0; i < s->keys[k].n; i++)
			sample_free(s->keys[k].s[i]);
	s->nkeys = 0;
	memset(&s->counts, 0, sizeof(s->counts));
	free(s->out);
	s->out = NULL;
}

struct sampler *sampler__free(struct sampler *s)
{
	if (!s)
		return NULL;
	sampler__reset(s);
	for (unsigned i = 0; i < TASK_MAX_SAMPLINGS; i++)
		if (s->has_rx[i])
			regfree(&s->rx[i]);
	free(s->keys);
	free(s);
	return NULL;
}

/* ---- trace context ------------------------------------------------------------------ */

static int b64val(char c)
{
	if (c >= 'A' && c <= 'Z') return c - 'A';
	if (c >= 'a' && c <= 'z') return c - 'a' + 26;
	if (c >= '0' && c <= '9') return c - '0' + 52;
	if (c == '+' || c == '-') return 62;
	if (c == '/' || c == '_') return 63;
	return -1;
}

/* Base64 text s[0..n) decoded into a printable string; 0, or -1 when it is not that. */
static int b64_printable(const char *s, size_t n, char *out, size_t size)
{
	unsigned acc = 0, bits = 0;
	size_t o = 0;

	while (n && s[n - 1] == '=')
		n--;
	for (size_t i = 0; i < n; i++) {
		int v = b64val(s[i]);

		if (v < 0)
			return -1;
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			char c = (char)((acc >> (bits - 8)) & 0xff);

			bits -= 8;
			if (c < 0x20 || c > 0x7e || o + 1 >= size)
				return -1;
			out[o++] = c;
		}
	}
	out[o] = 0;
	return o ? 0 : -1;
}

/* A plain id: 1..size-1 bytes of [0-9A-Za-z._-]. */
static int copy_id(const char *s, size_t n, char *out, size_t size)
{
	if (!n || n >= size)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return -1;
	memcpy(out, s, n);
	out[n] = 0;
	return 0;
}

static const char *field(const struct l7_record *r, const char *key)
{
	for (unsigned i = 0; i < r->nfields; i++)
		if (!strcmp(r->fields[i].key, key))
			return r->fields[i].val;
	return NULL;
}

/* sw8: sample-traceId-segmentId-spanId-...: the first four dash-separated parts. */
static int parse_sw8(const char *v, struct sampler_trace *t)
{
	const char *p[5];
	size_t n[4];
	const char *c = v;

	for (int i = 0; i < 4; i++) {
		const char *d = strchr(c, '-');

		if (!d)
			return -1;
		p[i] = c;
		n[i] = (size_t)(d - c);
		c = d + 1;
	}
	p[4] = c;
	if (n[0] != 1 || (p[0][0] != '0' && p[0][0] != '1'))
		return -1;
	if (b64_printable(p[1], n[1], t->trace_id, sizeof(t->trace_id)) ||
	    b64_printable(p[2], n[2], t->segment_id, sizeof(t->segment_id)) ||
	    copy_id(p[3], n[3], t->span_id, sizeof(t->span_id)))
		return -1;
	t->provider = "skywalking";
	return 0;
}

int sampler__trace_of(const struct l7_record *r, struct sampler_trace *t)
{
	const char *v;
	bool seen;

	memset(t, 0, sizeof(*t));
	if ((v = field(r, "sw8")) && !parse_sw8(v, t))
		return 1;
	seen = v != NULL;
	memset(t, 0, sizeof(*t));
	if ((v = field(r, "b3"))) {
		const char *d = strchr(v, '-'), *e;

		seen = true;
		if (d && !copy_id(v, (size_t)(d - v), t->trace_id, sizeof(t->trace_id))) {
			e = strchr(d + 1, '-');
			if (!copy_id(d + 1, e ? (size_t)(e - d - 1) : strlen(d + 1), t->span_id, sizeof(t->span_id))) {
				t->provider = "zipkin";
				return 1;
			}
		}
	}
	memset(t, 0, sizeof(*t));
	seen = seen || field(r, "x-b3-traceid");
	if ((v = field(r, "x-b3-traceid")) && !copy_id(v, strlen(v), t->trace_id, sizeof(t->trace_id))) {
		const char *sp = field(r, "x-b3-spanid");

		if (sp && copy_id(sp, strlen(sp), t->span_id, sizeof(t->span_id)))
			t->span_id[0] = 0;
		t->provider = "zipkin";
		return 1;
	}
	memset(t, 0, sizeof(*t));
	return seen ? -EINVAL : 0;
}

/* ---- rules and the slowest per URI and reason ---------------------------------------- */

static const struct task_sampling *rule_for(struct sampler *s, const char *uri)
{
	const struct task_sampling *def = NULL;

	for (uint32_t i = 0; i < s->t->nsamplings; i++) {
		if (!s->has_rx[i]) {
			if (!def)
				def = &s->t->samplings[i];
		} else if (!regexec(&s->rx[i], uri, 0, NULL, 0)) {
			return &s->t->samplings[i];
		}
	}
	return def;
}

static const char *reason_of(const struct task_sampling *r, const struct l7_record *rec, uint64_t dur)
{
	if (rec->status >= 500 && rec->status < 600 && r->when_5xx)
		return "status_5xx";
	if (rec->status >= 400 && rec->status < 500 && r->when_4xx)
		return "status_4xx";
	if (r->has_min_duration && dur >= r->min_duration_ms * 1000000ull)
		return "slow";
	return NULL;
}

static struct key *key_of(struct sampler *s, const char *uri, const char *reason)
{
	struct key *k;

	for (unsigned i = 0; i < s->nkeys; i++)
		if (s->keys[i].reason == reason && !strcmp(s->keys[i].uri, uri))
			return &s->keys[i];
	if (!s->keys && !(s->keys = calloc(SAMPLER_MAX_KEYS, sizeof(*s->keys))))
		return NULL;
	if (s->nkeys == SAMPLER_MAX_KEYS)
		return NULL;
	k = &s->keys[s->nkeys++];
	snprintf(k->uri, sizeof(k->uri), "%s", uri);
	k->reason = reason;
	k->n = 0;
	return k;
}

static uint8_t *dup_body(const uint8_t *b, size_t n, size_t max, size_t *ret, protobuf_c_boolean *cut)
{
	uint8_t *d;

	*cut = n > max;
	n = n > max ? max : n;
	*ret = 0;
	if (!b || !n || !(d = malloc(n)))
		return NULL;
	memcpy(d, b, n);
	*ret = n;
	return d;
}

static struct sample *sample_new(const struct task_sampling *rule, const struct l7_record *r,
				  const struct sampler_ctx *c, const struct sampler_trace *tr, const char *uri,
				  const char *reason, uint64_t dur)
{
	struct sample *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	ember__net_sampled_trace__init(&p->m);
	ember__net_exchange__init(&p->x);
	snprintf(p->uri, sizeof(p->uri), "%s", uri);
	snprintf(p->peer, sizeof(p->peer), "%s", c->peer);
	snprintf(p->local, sizeof(p->local), "%s", c->local);
	snprintf(p->comm, sizeof(p->comm), "%s", c->process_name);
	p->tr = *tr;
	p->duration = dur;
	p->x.pid = c->pid;
	p->x.connection_id = c->connection_id;
	p->x.protocol = (char *)r->protocol;
	p->x.side = (char *)c->side;
	p->x.peer_address = p->peer;
	p->x.req_unix_ns = c->req_unix_ns;
	p->x.latency_ns = l7_record__latency_ns(r);
	p->x.duration_ns = dur;
	p->x.req_bytes = r->req_bytes;
	p->x.resp_bytes = r->resp_bytes;
	p->x.status = r->status;
	p->x.is_error = r->is_error;
	p->x.is_client_error = r->is_client_error;
	p->x.answered = true;
	p->x.req_seq = r->req_seq;
	p->x.ssl = c->ssl;
	for (unsigned i = 0; i < r->nfields && i < L7_MAX_FIELDS; i++) {
		ember__label__init(&p->lab[i]);
		snprintf(p->val[i], sizeof(p->val[i]), "%s", r->fields[i].val);
		p->lab[i].name = (char *)r->fields[i].key;
		p->lab[i].value = p->val[i];
		p->labp[p->x.n_fields++] = &p->lab[i];
	}
	p->x.fields = p->labp;
	p->m.exchange = &p->x;
	p->m.uri = p->uri;
	p->m.reason = (char *)reason;
	p->m.trace_provider = (char *)tr->provider;
	p->m.trace_id = p->tr.trace_id;
	p->m.segment_id = p->tr.segment_id;
	p->m.span_id = p->tr.span_id;
	p->m.local_address = p->local;
	p->m.process_name = p->comm;
	p->m.peer_known = true;
	p->m.peer_pid = c->peer_pid;
	p->m.peer_local = c->peer_local;
	if (rule->complete_request) {
		p->req = dup_body(r->req_body, r->req_body_len,
				  rule->max_request_size ? rule->max_request_size : SAMPLER_BODY_DEFAULT,
				  &p->m.request.len, &p->m.request_truncated);
		p->m.request.data = p->req;
	}
	if (rule->complete_response) {
		p->resp = dup_body(r->resp_body, r->resp_body_len,
				   rule->max_response_size ? rule->max_response_size : SAMPLER_BODY_DEFAULT,
				   &p->m.response.len, &p->m.response_truncated);
		p->m.response.data = p->resp;
	}
	for (unsigned i = 0; (rule->complete_request || rule->complete_response) && i < c->ncalls &&
			     i < SAMPLER_MAX_CALLS; i++) {
		const struct sampler_call *k = &c->calls[i];
		Ember__NetSyscall *y = &p->sc[i];

		ember__net_syscall__init(y);
		y->start_unix_ns = k->start_unix_ns;
		y->end_unix_ns = k->end_unix_ns;
		y->name = (char *)k->name;
		y->package_count = k->pkts;
		y->package_size = k->pkt_bytes;
		y->ifindex = k->ifindex;
		/* The device may be gone by now: its index still says which it was. */
		if (!k->ifindex || !if_indextoname(k->ifindex, p->ifname[i]))
			p->ifname[i][0] = 0;
		y->ifname = p->ifname[i];
		y->rtt_us = k->rtt_us;
		p->scp[p->m.n_syscalls++] = y;
	}
	p->m.syscalls = p->scp;
	return p;
}

void sampler__offer(struct sampler *s, const struct l7_record *r, const struct sampler_ctx *c)
{
	struct sampler_trace tr;
	const struct task_sampling *rule;
	const char *uri, *reason;
	uint64_t dur = l7_record__duration_ns(r);
	struct key *k;
	unsigned slot;
	int traced;

	if (!s || !s->t->nsamplings || !r->has_request || !r->has_response)
		return;
	/* The rules first (a regex per URI): an exchange they pass over needs no
	 * trace context, one they would sample but cannot is counted by why. */
	uri = field(r, "uri");
	if (!uri || !(rule = rule_for(s, uri)) || !(reason = reason_of(rule, r, dur)))
		return;
	if ((traced = sampler__trace_of(r, &tr)) <= 0) {
		if (traced < 0)
			s->counts.bad_trace++;
		else
			s->counts.no_trace++;
		return;
	}
	k = key_of(s, uri, reason);
	if (!k) {
		s->counts.not_kept++;
		return;
	}
	slot = k->n;
	if (k->n == SAMPLER_TOP) {
		slot = 0;
		for (unsigned i = 1; i < SAMPLER_TOP; i++)
			if (k->s[i]->duration < k->s[slot]->duration)
				slot = i;
		if (k->s[slot]->duration >= dur) {
			s->counts.not_kept++;
			return;
		}
	}
	struct sample *p = sample_new(rule, r, c, &tr, uri, reason, dur);

	if (!p) {
		s->counts.not_kept++;
		return;
	}
	if (slot < k->n) {
		sample_free(k->s[slot]);
		s->counts.not_kept++;
	} else {
		k->n++;
	}
	k->s[slot] = p;
}

size_t sampler__take(struct sampler *s, Ember__NetSampledTrace ***ret, struct sampler_counts *counts)
{
	size_t n = 0;

	*ret = NULL;
	if (s)
		*counts = s->counts;
	else
		memset(counts, 0, sizeof(*counts));
	if (!s || !s->nkeys)
		return 0;
	free(s->out);
	s->out = calloc(SAMPLER_MAX_KEYS * SAMPLER_TOP, sizeof(*s->out));
	if (!s->out)
		return 0;
	for (unsigned k = 0; k < s->nkeys; k++)
		for (unsigned i = 0; i < s->keys[k].n; i++)
			s->out[n++] = &s->keys[k].s[i]->m;
	*ret = s->out;
	return n;
}
