/*
 * NETWORK tasks' sampled HTTP traces (NetworkBatch.sampled: exchanges that
 * carried a trace id and matched one of the task's sampling rules), sent as
 * Rover sends them (spec section 4.5, points 2 and 3):
 *
 *   - one LogData per trace, on LogReportService/collect, one stream per
 *     service: the local process's service, instance and layer, the
 *     batch's end as timestamp, tag LOG_KIND=NET_PROFILING_SAMPLED_TRACE
 *     (the OAP's sampled-trace rules key on it), the trace id (and for sw8
 *     the segment and span), and a JSON body with Rover's fields in
 *     Rover's order.  The local process is named by its OAP id; the peer
 *     by its OAP id when it is a process of the same service instance,
 *     else "local" when its address is one of this host's, else by
 *     ip:port (Rover's three cases).
 *   - per trace whose rule asked for the complete request or response, a
 *     SpanAttachedEvent each, on SpanAttachedEventReportService/collect:
 *     "HTTP Request Sampling" / "HTTP Response Sampling" with Rover's tags
 *     and the trace's span as traceContext.
 *
 *   - and, for those traces, an event "Syscall <name>" per call that
 *     carried the request or the response (NetSampledTrace.syscalls:
 *     Rover's function names, "Write", "Read", "Writev", "SslWrite", ...)
 *     with Rover's tags: the packets under it (package_size,
 *     package_count), the device (network_name, network_index), the three
 *     entity tags, and avg_rtt_time when the connection's RTT is known.
 *
 * A trace whose local process the OAP has no id for cannot be named: it is
 * counted and left out, like such a process's flows.  Text from the network
 * (URI, trace ids, bodies) is made valid UTF-8 first: the OAP refuses a
 * whole stream over one malformed protobuf string.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/cleanup.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "exporter/skywalking/sw.h"
#include "exporter/utf8.h"
#include "proto/sw_logging.pb-c.h"
#include "proto/sw_tracing.pb-c.h"

/* data_content past this many bytes is cut (the rule's own bound applied already in the analyzer). */
#define CONTENT_MAX (64u << 10)

/* Strings made for one trace, freed together. */
struct strs {
	char *v[8];
	unsigned n;
	bool nomem;
};

static const char *clean(struct strs *s, const char *in)
{
	char *c;

	if (!in || !in[0])
		return "";
	if (s->n == sizeof(s->v) / sizeof(s->v[0]) || !(c = utf8__sanitize(in, strlen(in), NULL, NULL))) {
		s->nomem = true;
		return "";
	}
	return s->v[s->n++] = c;
}

static void strs_free(struct strs *s)
{
	for (unsigned i = 0; i < s->n; i++)
		free(s->v[i]);
	s->n = 0;
}

/* ---- who is at each end -------------------------------------------------------------- */

/* One end of the exchange in the body: {"process_id","local","address"}, as Rover fills it. */
struct end {
	const char *process_id;
	bool local;
	const char *address;
};

/* "ip:port" and a flow's peer (a server's peers have port 0 there): the same remote? */
static bool same_remote(const char *flow_peer, const char *peer, bool server)
{
	const char *a = strrchr(flow_peer, ':'), *b = strrchr(peer, ':');

	if (!server)
		return !strcmp(flow_peer, peer);
	return a && b && a - flow_peer == b - peer && !strncmp(flow_peer, peer, (size_t)(a - flow_peer));
}

static bool loopback(const char *addr)
{
	return !strncmp(addr, "127.", 4) || !strncmp(addr, "[::1]", 5) || !strncmp(addr, "[::ffff:127.", 12);
}

/*
 * The peer of trace t: the analyzer says who it is (peer_known); for batches
 * without that, its pid and whether it is on this host come from
 * the batch, the connection's record when it closed within the batch, else
 * the flows of x's process, side and remote.  A server's flow stands for
 * every client process of one address: when they differ, the peer is only
 * known to be local.
 */
static void peer_of(struct sw_backend *b, const Ember__NetworkBatch *nb, const Ember__NetSampledTrace *t,
		    const struct pf_process *me, struct end *ret)
{
	const Ember__NetExchange *x = t->exchange;
	const char *peer = x->peer_address ? x->peer_address : "";
	bool server = x->side && !strcmp(x->side, "server"), known = t->peer_known, local = t->peer_local;
	uint32_t peer_pid = t->peer_pid;
	struct pf_process *p;

	for (size_t i = 0; i < nb->n_connections && !known; i++) {
		const Ember__NetConnection *c = nb->connections[i];

		if (c && c->pid == x->pid && c->id == x->connection_id) {
			peer_pid = c->remote_pid;
			local = c->remote_local;
			known = true;
		}
	}
	for (size_t i = 0; i < nb->n_flows && !known; i++) {
		const Ember__NetFlow *f = nb->flows[i];

		if (!f || f->pid != x->pid || !f->side || !x->side || strcmp(f->side, x->side) || !f->peer_address ||
		    !same_remote(f->peer_address, peer, server))
			continue;
		for (size_t j = i; j < nb->n_flows; j++) {
			const Ember__NetFlow *g = nb->flows[j];

			if (!g || g->pid != x->pid || !g->side || strcmp(g->side, x->side) || !g->peer_address ||
			    !same_remote(g->peer_address, peer, server))
				continue;
			if (g->peer_pid != f->peer_pid)
				peer_pid = 0;	/* several processes there: only "local" is sure */
			else if (j == i)
				peer_pid = f->peer_pid;
			local |= g->peer_local;
		}
		known = true;
	}
	*ret = (struct end){ .process_id = "", .address = "" };
	if (peer_pid && (p = process_finder__by_pid(b->pf, peer_pid)) && p->status == PF_REPORTED && p->oap_id[0] &&
	    !strcmp(p->e.service, me->e.service) && !strcmp(p->e.instance, me->e.instance))
		ret->process_id = p->oap_id;
	else if (local || (!known && loopback(peer)))
		ret->local = true;
	else
		ret->address = peer;
}

/* ---- the LogData --------------------------------------------------------------------- */

static struct json_object *end_json(const struct end *e)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "process_id", json_object_new_string(e->process_id));
	json_object_object_add(o, "local", json_object_new_boolean(e->local));
	json_object_object_add(o, "address", json_object_new_string(e->address));
	return o;
}

static const char *field(const Ember__NetExchange *x, const char *name)
{
	for (size_t i = 0; i < x->n_fields; i++)
		if (x->fields[i] && x->fields[i]->name && !strcmp(x->fields[i]->name, name))
			return x->fields[i]->value;
	return NULL;
}

/* The body's JSON in Rover's field order (SamplingTraceLogBody), malloc'ed. */
static char *log_body(const Ember__NetSampledTrace *t, const char *uri, const struct end *me, const struct end *peer)
{
	const Ember__NetExchange *x = t->exchange;
	bool server = x->side && !strcmp(x->side, "server");
	struct json_object *o = json_object_new_object();
	char *s = NULL;

	if (!o)
		return NULL;
	json_object_object_add(o, "uri", json_object_new_string(uri));
	json_object_object_add(o, "reason", json_object_new_string(t->reason ? t->reason : ""));
	json_object_object_add(o, "latency", json_object_new_int64((int64_t)(x->duration_ns / 1000000)));
	json_object_object_add(o, "trace_provider", json_object_new_string(t->trace_provider ? t->trace_provider : ""));
	json_object_object_add(o, "client_process", end_json(server ? peer : me));
	json_object_object_add(o, "server_process", end_json(server ? me : peer));
	json_object_object_add(o, "detect_point", json_object_new_string(server ? "server" : "client"));
	json_object_object_add(o, "component", json_object_new_string("http"));
	json_object_object_add(o, "ssl", json_object_new_boolean(x->ssl));
	json_object_object_add(o, "status", json_object_new_int(x->status));
	if (json_object_object_length(o) == 10) {
		const char *j = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

		s = j ? strdup(j) : NULL;
	}
	json_object_put(o);
	return s;
}

static bool is_sw8(const Ember__NetSampledTrace *t)
{
	return !t->trace_provider || strcmp(t->trace_provider, "zipkin");
}

/* sw8's span id is a decimal int32; anything else is no span. */
static int32_t span_int(const char *s)
{
	int64_t v;

	return s && !sw_codec__parse_i64(s, &v) && v <= INT32_MAX ? (int32_t)v : 0;
}

static int push_log(const Ember__NetSampledTrace *t, const struct pf_process *me, const struct end *peer,
		    int64_t ts, struct strs *ss, struct sw_msgs *out)
{
	Skywalking__V3__LogData d = SKYWALKING__V3__LOG_DATA__INIT;
	Skywalking__V3__LogDataBody body = SKYWALKING__V3__LOG_DATA_BODY__INIT;
	Skywalking__V3__JSONLog json = SKYWALKING__V3__JSONLOG__INIT;
	Skywalking__V3__TraceContext tc = SKYWALKING__V3__TRACE_CONTEXT__INIT;
	Skywalking__V3__LogTags tags = SKYWALKING__V3__LOG_TAGS__INIT;
	Skywalking__V3__KeyStringValuePair kind = SKYWALKING__V3__KEY_STRING_VALUE_PAIR__INIT, *kindp = &kind;
	const struct end self = { .process_id = me->oap_id, .address = "" };
	const char *uri = t->uri && t->uri[0] ? t->uri : field(t->exchange, "uri");
	int r;

	json.json = log_body(t, clean(ss, uri), &self, peer);
	if (!json.json || ss->nomem) {
		free(json.json);
		return -ENOMEM;
	}
	d.timestamp = ts;
	d.service = (char *)me->e.service;
	d.serviceinstance = (char *)me->e.instance;
	d.layer = (char *)me->e.layer;
	kind.key = "LOG_KIND";
	kind.value = "NET_PROFILING_SAMPLED_TRACE";
	tags.n_data = 1;
	tags.data = &kindp;
	d.tags = &tags;
	tc.traceid = (char *)clean(ss, t->trace_id);
	if (is_sw8(t)) {
		tc.tracesegmentid = (char *)clean(ss, t->segment_id);
		tc.spanid = span_int(t->span_id);
	}
	d.tracecontext = &tc;
	body.type = "json";
	body.content_case = SKYWALKING__V3__LOG_DATA_BODY__CONTENT_JSON;
	body.json = &json;
	d.body = &body;
	r = ss->nomem ? -ENOMEM : sw_msgs__push(out, &d.base);
	free(json.json);
	return r;
}

/* ---- the span events ----------------------------------------------------------------- */

/* A header's value in an HTTP head (case-insensitive name), trimmed, into buf ("" when absent). */
static void header(const char *head, size_t len, const char *name, char *buf, size_t cap)
{
	size_t nl = strlen(name);

	buf[0] = 0;
	for (size_t i = 0; i < len;) {
		const char *eol = memchr(head + i, '\n', len - i);
		size_t end = eol ? (size_t)(eol - head) : len, a, z;

		if (i > 0 && end - i > nl && head[i + nl] == ':' && !strncasecmp(head + i, name, nl)) {
			for (a = i + nl + 1; a < end && (head[a] == ' ' || head[a] == '\t'); a++)
				;
			for (z = end; z > a && (head[z - 1] == '\r' || head[z - 1] == ' ' || head[z - 1] == '\t'); z--)
				;
			snprintf(buf, cap, "%.*s", (int)(z - a), head + a);
			return;
		}
		i = end + 1;
	}
}

/* text/..., application/json (with parameters), or no Content-Type at all: Rover shows the body. */
static bool plain(const char *ct)
{
	size_t n = strcspn(ct, ";");

	while (n && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
		n--;
	return !ct[0] || !strncasecmp(ct, "text/", 5) || (n == 16 && !strncasecmp(ct, "application/json", 16));
}

/* s (n bytes of UTF-8) cut to CONTENT_MAX bytes, between characters. */
static char *utf8_cut(char *s, size_t n, bool *cut)
{
	*cut = s && n > CONTENT_MAX;
	if (*cut) {
		n = CONTENT_MAX;
		while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
		s[n] = 0;
	}
	return s;
}

/*
 * data_content as Rover makes it: the message as kept (its head, then its
 * body) when its body is text, else its head and a note saying what the
 * body is.  Without a head (a message kept without one), a body that is
 * not UTF-8 text (a NUL, or more than one byte in 16 not UTF-8) is noted
 * instead.
 * Rover decodes gzip and other charsets; here a gzip body is noted, other
 * charsets shown as UTF-8 with what is not replaced.  Valid UTF-8, at most
 * CONTENT_MAX bytes; *cut says it was cut.  Malloc'ed.
 */
static char *content(const uint8_t *data, size_t len, bool *cut)
{
	const char *end = memmem(data, len, "\r\n\r\n", 4);
	size_t head = end ? (size_t)(end - (const char *)data) + 4 : len, n, nl, bad;
	char ct[128], ce[64], note[200], *raw, *s;

	header((const char *)data, head, "Content-Type", ct, sizeof(ct));
	header((const char *)data, head, "Content-Encoding", ce, sizeof(ce));
	note[0] = 0;
	if (head < len && !strcasecmp(ce, "gzip"))
		snprintf(note, sizeof(note), "[gzip body not decoded, content type: %s]", ct);
	else if (head < len && !plain(ct))
		snprintf(note, sizeof(note), "[not plain, current content type: %s]", ct);
	if (!note[0]) {
		s = utf8__sanitize(data, len, &n, &bad);
		if (!s || (!memchr(data, 0, len) && bad <= len / 16))
			return utf8_cut(s, n, cut);
		free(s);
		head = end ? head : 0;
		snprintf(note, sizeof(note), "[not plain, %zu bytes that are not UTF-8 text]", len - head);
	}
	nl = strlen(note);
	raw = malloc(head + nl);
	if (!raw)
		return NULL;
	memcpy(raw, data, head);
	memcpy(raw + head, note, nl);
	s = utf8__sanitize(raw, head + nl, &n, NULL);
	free(raw);
	return utf8_cut(s, n, cut);
}

/* Go's units.BytesSize, which Rover's data_size is: "%.4g" of the size in B, KiB, MiB... */
static void bytes_size(uint64_t v, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double x = (double)v;
	unsigned u = 0;

	while (x >= 1024 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		x /= 1024;
		u++;
	}
	snprintf(buf, len, "%.4g%s", x, unit[u]);
}

static Skywalking__V3__Instant instant(uint64_t ns)
{
	Skywalking__V3__Instant i = SKYWALKING__V3__INSTANT__INIT;

	i.seconds = (int64_t)(ns / 1000000000ull);
	i.nanos = (int32_t)(ns % 1000000000ull);
	return i;
}

/* The trace's span, as both events of the trace name it. */
struct span {
	Skywalking__V3__SpanAttachedEvent__SpanReference ref;
	const char *service, *instance, *process;
};

/*
 * One "HTTP Request Sampling" or "HTTP Response Sampling" event.  Times:
 * the request from its first byte to its last, the response at its first
 * byte (the analyzers do not report when a response ends).
 */
static int push_event(const Ember__NetSampledTrace *t, const struct span *sp, bool request, struct sw_msgs *out,
		      uint64_t *cut_count)
{
	static const char *const keys[8] = { "data_size", "data_content", "data_direction", "data_type",
					     "connection_role", "service_name", "service_instance_name",
					     "process_name" };
	const Ember__NetExchange *x = t->exchange;
	const ProtobufCBinaryData *data = request ? &t->request : &t->response;
	bool server = x->side && !strcmp(x->side, "server"), cut = false;
	uint64_t total = request ? x->req_bytes : x->resp_bytes, start, end;
	Skywalking__V3__SpanAttachedEvent e = SKYWALKING__V3__SPAN_ATTACHED_EVENT__INIT;
	Skywalking__V3__KeyStringValuePair kv[8], *kvp[8];
	Skywalking__V3__Instant ts, te;
	const char *vals[8];
	char size[32], *text;
	int r;

	if (!(text = content(data->data, data->len, &cut)))
		return -ENOMEM;
	*cut_count += cut;
	bytes_size(total > data->len ? total : data->len, size, sizeof(size));
	vals[0] = size;
	vals[1] = text;
	/* the request leaves the client and enters the server; the response the other way */
	vals[2] = request != server ? "outbound" : "inbound";
	vals[3] = request ? "request" : "response";
	vals[4] = server ? "server" : "client";
	vals[5] = sp->service;
	vals[6] = sp->instance;
	vals[7] = sp->process;
	for (unsigned i = 0; i < 8; i++) {
		skywalking__v3__key_string_value_pair__init(&kv[i]);
		kv[i].key = (char *)keys[i];
		kv[i].value = (char *)vals[i];
		kvp[i] = &kv[i];
	}
	if (request) {
		start = x->req_unix_ns;
		end = x->req_unix_ns + (x->duration_ns > x->latency_ns ? x->duration_ns - x->latency_ns : 0);
	} else {
		start = end = x->req_unix_ns + x->duration_ns;
	}
	ts = instant(start);
	te = instant(end);
	e.starttime = &ts;
	e.endtime = &te;
	e.event = request ? "HTTP Request Sampling" : "HTTP Response Sampling";
	e.n_tags = 8;
	e.tags = kvp;
	e.tracecontext = (Skywalking__V3__SpanAttachedEvent__SpanReference *)&sp->ref;
	r = sw_msgs__push(out, &e.base);
	free(text);
	return r;
}

/* One "Syscall <name>" event: the call's own times. */
static int push_syscall(const Ember__NetSyscall *c, const struct span *sp, struct sw_msgs *out)
{
	const char *cn = c->name && c->name[0] ? c->name : "Unknown", *ci = c->ifname ? c->ifname : "";
	_cleanup_free_ char *nm = utf8__sanitize(cn, strlen(cn), NULL, NULL);
	_cleanup_free_ char *ifn = utf8__sanitize(ci, strlen(ci), NULL, NULL);
	static const char *const keys[8] = { "package_size", "package_count", "network_name", "network_index",
					     "service_name", "service_instance_name", "process_name", "avg_rtt_time" };
	Skywalking__V3__SpanAttachedEvent e = SKYWALKING__V3__SPAN_ATTACHED_EVENT__INIT;
	Skywalking__V3__KeyStringValuePair kv[8], *kvp[8];
	Skywalking__V3__Instant ts, te;
	char size[32], count[16], index[16], rtt[32], name[64];
	const char *vals[8];
	unsigned n = 7;

	if (!nm || !ifn)
		return -ENOMEM;

	bytes_size(c->package_size, size, sizeof(size));
	snprintf(count, sizeof(count), "%u", c->package_count);
	snprintf(index, sizeof(index), "%u", c->ifindex);
	snprintf(name, sizeof(name), "Syscall %s", nm);
	vals[0] = size;
	vals[1] = count;
	vals[2] = ifn;
	vals[3] = index;
	vals[4] = sp->service;
	vals[5] = sp->instance;
	vals[6] = sp->process;
	if (c->rtt_us) {
		snprintf(rtt, sizeof(rtt), "%lluns", (unsigned long long)c->rtt_us * 1000ull);
		vals[n++] = rtt;
	}
	for (unsigned i = 0; i < n; i++) {
		skywalking__v3__key_string_value_pair__init(&kv[i]);
		kv[i].key = (char *)keys[i];
		kv[i].value = (char *)vals[i];
		kvp[i] = &kv[i];
	}
	ts = instant(c->start_unix_ns);
	te = instant(c->end_unix_ns);
	e.starttime = &ts;
	e.endtime = &te;
	e.event = name;
	e.n_tags = n;
	e.tags = kvp;
	e.tracecontext = (Skywalking__V3__SpanAttachedEvent__SpanReference *)&sp->ref;
	return sw_msgs__push(out, &e.base);
}

/* The trace's LogData into logs, its events into events: 0, or -ENOMEM. */
static int one_trace(struct sw_backend *b, const Ember__NetworkBatch *nb, const Ember__NetSampledTrace *t,
		     const struct pf_process *me, int64_t ts, struct sw_msgs *logs, struct sw_msgs *events)
{
	struct strs ss = { 0 };
	struct end peer;
	struct span sp = { .service = me->e.service, .instance = me->e.instance, .process = me->e.process };
	int r;

	peer_of(b, nb, t, me, &peer);
	r = push_log(t, me, &peer, ts, &ss, logs);
	if (!r && (t->request.len || t->response.len)) {
		skywalking__v3__span_attached_event__span_reference__init(&sp.ref);
		sp.ref.type = is_sw8(t) ? SKYWALKING__V3__SPAN_ATTACHED_EVENT__SPAN_REFERENCE_TYPE__SKYWALKING
					: SKYWALKING__V3__SPAN_ATTACHED_EVENT__SPAN_REFERENCE_TYPE__ZIPKIN;
		sp.ref.traceid = (char *)clean(&ss, t->trace_id);
		sp.ref.tracesegmentid = (char *)(is_sw8(t) ? clean(&ss, t->segment_id) : "");
		sp.ref.spanid = (char *)clean(&ss, t->span_id);
		if (!sp.process[0])
			sp.process = clean(&ss, t->process_name);
		if (ss.nomem)
			r = -ENOMEM;
		if (!r && t->request.len && !(r = push_event(t, &sp, true, events, &b->c[SC_NET_CONTENT_CUT])))
			b->c[SC_NET_SPAN_EVENTS]++;
		if (!r && t->response.len && !(r = push_event(t, &sp, false, events, &b->c[SC_NET_CONTENT_CUT])))
			b->c[SC_NET_SPAN_EVENTS]++;
		for (size_t i = 0; !r && i < t->n_syscalls; i++)
			if (!(r = push_syscall(t->syscalls[i], &sp, events)))
				b->c[SC_NET_SPAN_EVENTS]++;
	}
	if (!r)
		b->c[SC_NET_SAMPLED]++;
	strs_free(&ss);
	return r;
}

void sw_network_sampled(struct sw_backend *b, const Ember__NetworkBatch *nb)
{
	int64_t ts = nb->window_end_unix_ns ? (int64_t)(nb->window_end_unix_ns / 1000000) : (int64_t)timeutil__unix_ms();
	struct sw_msgs events = { 0 };
	struct pf_process **procs;

	b->c[SC_NET_SAMPLED_NOT_KEPT] += nb->sampled_not_kept;
	b->c[SC_NET_SAMPLED_NO_TRACE] += nb->sampled_no_trace_context;
	b->c[SC_NET_SAMPLED_BAD_TRACE] += nb->sampled_bad_trace_context;
	if ((nb->sampled_no_trace_context || nb->sampled_bad_trace_context) && !b->warned_untraced) {
		/* Once: a user whose rules never fire asks why here first; the counters keep the tally. */
		const char *eid = nb->task && nb->task->id ? nb->task->id : "";
		const struct sw_task *k = sw_task_by_ember_id(b, eid);

		log_info("NETWORK task %s: %llu HTTP exchange(s) matched its sampling rules without a trace context "
			 "(%llu with none, %llu malformed): only requests carrying a sw8 or b3 header become sampled "
			 "traces (counted in skywalking_network_sampled_no_trace_context and _bad_trace_context)",
			 k && k->oap_task[0] ? k->oap_task : eid,
			 (unsigned long long)(nb->sampled_no_trace_context + nb->sampled_bad_trace_context),
			 (unsigned long long)nb->sampled_no_trace_context,
			 (unsigned long long)nb->sampled_bad_trace_context);
		b->warned_untraced = true;
	}
	if (!nb->n_sampled)
		return;
	procs = calloc(nb->n_sampled, sizeof(*procs));
	if (!procs) {
		b->c[SC_DROPPED_BATCHES]++;
		return;
	}
	/* the local process of every trace, or NULL when it cannot be sent */
	for (size_t i = 0; i < nb->n_sampled; i++) {
		const Ember__NetSampledTrace *t = nb->sampled[i];
		struct pf_process *p;

		if (!t || !t->exchange || !t->trace_id || !t->trace_id[0]) {
			b->c[SC_NET_SAMPLED_BAD]++;
			continue;
		}
		p = process_finder__by_pid(b->pf, t->exchange->pid);
		if (p && p->status == PF_REPORTED && p->oap_id[0])
			procs[i] = p;
		else
			b->c[SC_NET_SAMPLED_UNKNOWN]++;
	}
	/* one stream of LogData per service, in the order the services come */
	for (size_t i = 0; i < nb->n_sampled; i++) {
		const char *service = procs[i] ? procs[i]->e.service : NULL;
		struct sw_msgs logs = { 0 };
		int r = 0;

		for (size_t j = i; service && j < nb->n_sampled && !r; j++) {
			if (!procs[j] || strcmp(procs[j]->e.service, service))
				continue;
			r = one_trace(b, nb, nb->sampled[j], procs[j], ts > 0 ? ts : 1, &logs, &events);
			procs[j] = NULL;	/* done (service points into the finder's record, not here) */
		}
		if (r) {
			b->c[SC_DROPPED_BATCHES]++;
			sw_msgs__release(&logs);
			continue;
		}
		if (service)
			sw_enqueue_keyed(b, I_NET_LOGS, service, &logs);
	}
	free(procs);
	sw_enqueue(b, I_NET_EVENTS, &events);
}
