#include "exporter/net_report.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/net_hist.h"
#include "exporter/net_format.h"
#include "exporter/net_sampled.h"

#define NAME_LEN   32
#define ADDR_LEN   64
#define REQ_LEN    120
#define GROUP_HASH (2 * NET_REPORT_MAX_GROUPS)

struct group {
	char side[8], remote[ADDR_LEN], protocol[NAME_LEN];
	uint64_t conns, sent, received;
};

struct proto {
	char name[NAME_LEN];
	uint64_t requests, errors, client_errors, unanswered;
	uint64_t *sketch;	/* NET_SKETCH_BUCKETS counts, allocated at first use */
};

struct slow {
	uint64_t latency_ns, duration_ns, req_unix_ns;
	uint32_t pid;
	int32_t status;
	char protocol[NAME_LEN], side[8], peer[ADDR_LEN], request[REQ_LEN];
};

struct net_report {
	struct group groups[NET_REPORT_MAX_GROUPS];
	unsigned n_groups;
	int16_t index[GROUP_HASH];	/* group + 1, 0 = free */
	struct group other;		/* connections past the groups' bound */
	struct proto protos[NET_REPORT_MAX_PROTOCOLS];
	unsigned n_protos;
	struct proto other_proto;	/* flows past the protocols' bound */
	struct slow slowest[NET_REPORT_SLOWEST];	/* by latency, descending */
	unsigned n_slow;
	uint64_t start_ns, end_ns;
	uint64_t exchanges_not_listed, connections_not_listed;
	struct net_loss loss;		/* the batches' */
	struct net_sampled *sampled;	/* the sampled traces' section */
	struct net_report_stats st;
};

struct net_report *net_report__new(void)
{
	struct net_report *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	if (!(r->sampled = net_sampled__new())) {
		free(r);
		return NULL;
	}
	snprintf(r->other.side, sizeof(r->other.side), "-");
	snprintf(r->other.remote, sizeof(r->other.remote), "other");
	snprintf(r->other.protocol, sizeof(r->other.protocol), "-");
	snprintf(r->other_proto.name, sizeof(r->other_proto.name), "other");
	return r;
}

struct net_report *net_report__free(struct net_report *r)
{
	if (!r)
		return NULL;
	for (unsigned i = 0; i < r->n_protos; i++)
		free(r->protos[i].sketch);
	free(r->other_proto.sketch);
	net_sampled__free(r->sampled);
	free(r);
	return NULL;
}

void net_report__stats(const struct net_report *r, struct net_report_stats *ret)
{
	*ret = r->st;
	ret->sampled = net_sampled__count(r->sampled);
}

static const char *str(const char *s) { return s ? s : ""; }

/* ---- the summary's parts, from messages or from JSON --------------------------------- */

static uint32_t hash3(const char *a, const char *b, const char *c)
{
	uint32_t h = 2166136261u;
	const char *p[3] = { a, b, c };

	for (unsigned i = 0; i < 3; i++) {
		for (const char *s = p[i]; *s; s++)
			h = (h ^ (uint8_t)*s) * 16777619u;
		h = (h ^ 0xff) * 16777619u;
	}
	return h;
}

static struct group *group_of(struct net_report *r, const char *side, const char *remote, const char *protocol)
{
	uint32_t slot = hash3(side, remote, protocol) & (GROUP_HASH - 1);
	struct group *g;

	for (;; slot = (slot + 1) & (GROUP_HASH - 1)) {
		int idx = r->index[slot];

		if (!idx)
			break;
		g = &r->groups[idx - 1];
		if (!strcmp(g->side, side) && !strcmp(g->remote, remote) && !strcmp(g->protocol, protocol))
			return g;
	}
	if (r->n_groups == NET_REPORT_MAX_GROUPS) {
		r->st.groups_merged++;
		return &r->other;
	}
	g = &r->groups[r->n_groups++];
	snprintf(g->side, sizeof(g->side), "%s", side);
	snprintf(g->remote, sizeof(g->remote), "%s", remote);
	snprintf(g->protocol, sizeof(g->protocol), "%s", protocol);
	r->index[slot] = (int16_t)r->n_groups;
	return g;
}

static void add_connection(struct net_report *r, const char *side, const char *remote, const char *protocol,
			   const char *l7_state, uint64_t sent, uint64_t received)
{
	char addr[ADDR_LEN], proto[NAME_LEN];
	const char *colon;
	struct group *g;

	/* A server's peers connect from ephemeral ports: one group per address. */
	snprintf(addr, sizeof(addr), "%s", remote);
	if (!strcmp(side, "server") && (colon = strrchr(remote, ':')) && (size_t)(colon - remote) + 3 <= sizeof(addr))
		snprintf(addr + (colon - remote), sizeof(addr) - (size_t)(colon - remote), ":*");
	if (protocol[0])
		snprintf(proto, sizeof(proto), "%s", protocol);
	else
		snprintf(proto, sizeof(proto), "(%s)", l7_state[0] ? l7_state : "none");
	g = group_of(r, side, addr, proto);
	g->conns++;
	g->sent += sent;
	g->received += received;
	r->st.connections++;
}

static struct proto *proto_of(struct net_report *r, const char *name)
{
	for (unsigned i = 0; i < r->n_protos; i++)
		if (!strcmp(r->protos[i].name, name))
			return &r->protos[i];
	if (r->n_protos == NET_REPORT_MAX_PROTOCOLS) {
		r->st.protocols_merged++;
		return &r->other_proto;
	}
	snprintf(r->protos[r->n_protos].name, NAME_LEN, "%s", name);
	return &r->protos[r->n_protos++];
}

struct flow_l7 {
	const char *protocol;
	uint64_t requests, errors, client_errors, unanswered;
	const uint32_t *index;
	const uint64_t *count;
	size_t n;
};

static void add_flow(struct net_report *r, const struct flow_l7 *f)
{
	struct proto *p;

	r->st.flows++;
	if (!f->protocol[0] || !(f->requests || f->unanswered))
		return;	/* no L7: in the connections only */
	p = proto_of(r, f->protocol);
	p->requests += f->requests;
	p->errors += f->errors;
	p->client_errors += f->client_errors;
	p->unanswered += f->unanswered;
	if (f->n && !p->sketch && !(p->sketch = calloc(NET_SKETCH_BUCKETS, sizeof(*p->sketch))))
		return;	/* without memory the percentiles miss this flow */
	for (size_t i = 0; i < f->n; i++)
		if (f->index[i] < NET_SKETCH_BUCKETS)
			p->sketch[f->index[i]] += f->count[i];
}

/* Keeps the NET_REPORT_SLOWEST slowest answered exchanges. */
static void add_exchange(struct net_report *r, const struct slow *x)
{
	unsigned i;

	r->st.exchanges++;
	if (!x->latency_ns)
		return;	/* unanswered */
	if (r->n_slow == NET_REPORT_SLOWEST && x->latency_ns <= r->slowest[NET_REPORT_SLOWEST - 1].latency_ns)
		return;
	for (i = r->n_slow < NET_REPORT_SLOWEST ? r->n_slow++ : NET_REPORT_SLOWEST - 1;
	     i > 0 && r->slowest[i - 1].latency_ns < x->latency_ns; i--)
		r->slowest[i] = r->slowest[i - 1];
	r->slowest[i] = *x;
}

/* A message of a report: the report counts once, at its first part (the only one of a report that has one). */
static void add_batch(struct net_report *r, uint32_t part, uint64_t start_ns, uint64_t end_ns, uint64_t ex_not_listed,
		      uint64_t conn_not_listed, const struct net_loss *loss)
{
	r->st.parts++;
	r->st.batches += part == 0;
	r->loss.calls += loss->calls;
	r->loss.exchanges += loss->exchanges;
	r->loss.gap_bytes += loss->gap_bytes;
	r->loss.connections += loss->connections;
	r->loss.tls_unprobed += loss->tls_unprobed;
	r->loss.tls_unbound += loss->tls_unbound;
	if (start_ns && (!r->start_ns || start_ns < r->start_ns))
		r->start_ns = start_ns;
	if (end_ns > r->end_ns)
		r->end_ns = end_ns;
	r->exchanges_not_listed += ex_not_listed;
	r->connections_not_listed += conn_not_listed;
}

/* "key=value key=value", cut to fit. */
static void describe(char *buf, size_t len, const char *const *keys, const char *const *values, size_t n)
{
	size_t o = 0;

	buf[0] = 0;
	for (size_t i = 0; i < n && o + 1 < len; i++) {
		int w = snprintf(buf + o, len - o, "%s%s=%s", i ? " " : "", keys[i], values[i]);
		if (w < 0)
			break;
		o += (size_t)w;
	}
	if (o >= len && len > 4)
		memcpy(buf + len - 4, "...", 4);
}

void net_report__add(struct net_report *r, const Ember__NetworkBatch *b)
{
	if (!b)
		return;
	struct net_loss loss = { .calls = b->calls_lost, .exchanges = b->exchanges_lost, .gap_bytes = b->gap_bytes,
				 .connections = b->connections_with_loss, .tls_unprobed = b->tls_connections_unprobed,
				 .tls_unbound = b->tls_calls_unbound };

	add_batch(r, b->part, b->window_start_unix_ns, b->window_end_unix_ns, b->exchanges_not_listed,
		  b->connections_not_listed, &loss);
	for (size_t i = 0; i < b->n_flows; i++) {
		const Ember__NetFlow *f = b->flows[i];
		const Ember__LatencySketch *sk;
		struct flow_l7 l;

		if (!f)
			continue;
		sk = f->latency && f->latency->n_index == f->latency->n_count ? f->latency : NULL;
		l = (struct flow_l7){ .protocol = str(f->protocol), .requests = f->requests, .errors = f->errors,
				      .client_errors = f->client_errors, .unanswered = f->unanswered,
				      .index = sk ? sk->index : NULL, .count = sk ? sk->count : NULL,
				      .n = sk ? sk->n_index : 0 };
		add_flow(r, &l);
	}
	for (size_t i = 0; i < b->n_connections; i++) {
		const Ember__NetConnection *c = b->connections[i];

		if (c)
			add_connection(r, str(c->side), str(c->remote_address), str(c->protocol), str(c->l7_state),
				       c->bytes_written, c->bytes_read);
	}
	for (size_t i = 0; i < b->n_exchanges; i++) {
		const Ember__NetExchange *e = b->exchanges[i];
		const char *keys[16], *values[16];
		struct slow x = { 0 };
		size_t n = 0;

		if (!e)
			continue;
		x = (struct slow){ .latency_ns = e->answered ? e->latency_ns : 0, .duration_ns = e->duration_ns,
				   .req_unix_ns = e->req_unix_ns, .pid = e->pid, .status = e->status };
		snprintf(x.protocol, sizeof(x.protocol), "%s", str(e->protocol));
		snprintf(x.side, sizeof(x.side), "%s", str(e->side));
		snprintf(x.peer, sizeof(x.peer), "%s", str(e->peer_address));
		for (size_t k = 0; k < e->n_fields && n < 16; k++)
			if (e->fields[k]) {
				keys[n] = str(e->fields[k]->name);
				values[n++] = str(e->fields[k]->value);
			}
		describe(x.request, sizeof(x.request), keys, values, n);
		add_exchange(r, &x);
	}
	for (size_t i = 0; i < b->n_sampled; i++)
		net_sampled__add(r->sampled, b->sampled[i]);
	net_sampled__add_not_kept(r->sampled, b->sampled_not_kept);
	net_sampled__add_untraced(r->sampled, b->sampled_no_trace_context, b->sampled_bad_trace_context);
}

/* ---- network.json ---------------------------------------------------------------------- */

static void put_u64(struct json_object *o, const char *k, uint64_t v)
{
	json_object_object_add(o, k, json_object_new_uint64(v));
}

static void put_str(struct json_object *o, const char *k, const char *v)
{
	json_object_object_add(o, k, json_object_new_string(str(v)));
}

static void put_bool(struct json_object *o, const char *k, int v)
{
	json_object_object_add(o, k, json_object_new_boolean(v));
}

static void put_array(struct json_object *o, const char *k, const uint64_t *v, size_t n)
{
	struct json_object *a = json_object_new_array_ext((int)n);

	for (size_t i = 0; a && i < n; i++)
		json_object_array_add(a, json_object_new_uint64(v[i]));
	json_object_object_add(o, k, a);
}

static void put_calls(struct json_object *o, const char *k, const Ember__NetCalls *c, const char *time_key)
{
	struct json_object *x = json_object_new_object();

	if (!x)
		return;
	put_u64(x, "count", c ? c->count : 0);
	put_u64(x, "bytes", c ? c->bytes : 0);
	put_u64(x, time_key, c ? c->time_ns : 0);
	put_u64(x, "untimed", c ? c->untimed : 0);
	put_array(x, "hist", c ? c->hist : NULL, c ? c->n_hist : 0);
	json_object_object_add(o, k, x);
}

static struct json_object *batch_json(const Ember__NetworkBatch *b)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	put_str(o, "type", "batch");
	put_str(o, "task_id", b->task ? b->task->id : "");
	put_u64(o, "window_start_unix_ns", b->window_start_unix_ns);
	put_u64(o, "window_end_unix_ns", b->window_end_unix_ns);
	net_format__put_ms(o, "window_ms", b->window_end_unix_ns > b->window_start_unix_ns ?
				       b->window_end_unix_ns - b->window_start_unix_ns : 0);
	put_u64(o, "flows", b->n_flows);
	put_u64(o, "connections", b->n_connections);
	put_u64(o, "exchanges", b->n_exchanges);
	put_u64(o, "exchanges_not_listed", b->exchanges_not_listed);
	put_u64(o, "connections_not_listed", b->connections_not_listed);
	put_u64(o, "sampled", b->n_sampled);
	put_u64(o, "sampled_not_kept", b->sampled_not_kept);
	put_u64(o, "sampled_no_trace_context", b->sampled_no_trace_context);
	put_u64(o, "sampled_bad_trace_context", b->sampled_bad_trace_context);
	put_u64(o, "calls_lost", b->calls_lost);
	put_u64(o, "exchanges_lost", b->exchanges_lost);
	put_u64(o, "gap_bytes", b->gap_bytes);
	put_u64(o, "connections_with_loss", b->connections_with_loss);
	put_u64(o, "tls_connections_unprobed", b->tls_connections_unprobed);
	put_u64(o, "tls_calls_unbound", b->tls_calls_unbound);
	put_bool(o, "last", b->last);
	put_u64(o, "part", b->part);
	put_u64(o, "parts", b->parts ? b->parts : 1);
	return o;
}

static void flow_l7_json(struct json_object *o, const Ember__NetFlow *f)
{
	struct json_object *st = json_object_new_object(), *lat = json_object_new_object();
	const Ember__LatencySketch *sk = f->latency;
	uint64_t answered = 0;

	put_u64(o, "requests", f->requests);
	put_u64(o, "errors", f->errors);
	put_u64(o, "client_errors", f->client_errors);
	put_u64(o, "unanswered", f->unanswered);
	for (size_t i = 0; st && i < f->n_statuses; i++) {
		char k[16];

		if (!f->statuses[i])
			continue;
		snprintf(k, sizeof(k), "%d", f->statuses[i]->status);
		put_u64(st, k, f->statuses[i]->count);
	}
	json_object_object_add(o, "statuses", st);
	put_u64(o, "req_bytes", f->req_bytes);
	put_u64(o, "resp_bytes", f->resp_bytes);
	put_array(o, "req_size_hist", f->req_size_hist, f->n_req_size_hist);
	put_array(o, "resp_size_hist", f->resp_size_hist, f->n_resp_size_hist);
	put_array(o, "duration_hist", f->duration_hist, f->n_duration_hist);
	put_u64(o, "duration_sum_ns", f->duration_sum_ns);
	if (lat) {
		struct json_object *idx = json_object_new_array();
		size_t n = sk && sk->n_index == sk->n_count ? sk->n_index : 0;

		for (size_t i = 0; idx && i < n; i++) {
			json_object_array_add(idx, json_object_new_uint64(sk->index[i]));
			answered += sk->count[i];
		}
		json_object_object_add(lat, "index", idx);
		put_array(lat, "count", n ? sk->count : NULL, n);
	}
	json_object_object_add(o, "latency", lat);
	put_u64(o, "latency_sum_ns", f->latency_sum_ns);
	if (answered) {
		net_format__put_ms(o, "latency_avg_ms", f->latency_sum_ns / answered);
		net_format__put_ms(o, "latency_p50_ms",
				   net_hist__sketch_quantile(sk->index, sk->count, sk->n_index, 0.5));
		net_format__put_ms(o, "latency_p99_ms",
				   net_hist__sketch_quantile(sk->index, sk->count, sk->n_index, 0.99));
	}
}

static struct json_object *flow_json(const Ember__NetFlow *f, const Ember__NetworkBatch *b)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	put_str(o, "type", "flow");
	put_u64(o, "window_start_unix_ns", b->window_start_unix_ns);
	put_u64(o, "window_end_unix_ns", b->window_end_unix_ns);
	put_u64(o, "pid", f->pid);
	put_str(o, "process_name", f->process_name);
	put_str(o, "side", f->side);
	put_bool(o, "side_guessed", f->side_guessed);
	put_str(o, "peer_address", f->peer_address);
	put_str(o, "local_address", f->local_address);
	put_str(o, "transport", f->transport);
	put_bool(o, "peer_local", f->peer_local);
	put_u64(o, "peer_pid", f->peer_pid);
	put_str(o, "protocol", f->protocol);
	put_bool(o, "ssl", f->ssl);
	put_u64(o, "connections", f->connections);
	put_calls(o, "write", f->write, "time_ns");
	put_calls(o, "read", f->read, "time_ns");
	put_calls(o, "write_rtt", f->write_rtt, "time_us");	/* smoothed RTTs: us */
	put_calls(o, "connect", f->connect, "time_ns");
	put_calls(o, "close", f->close, "time_ns");
	put_u64(o, "retransmits", f->retransmits);
	put_u64(o, "drops", f->drops);
	flow_l7_json(o, f);
	return o;
}

static struct json_object *connection_json(const Ember__NetConnection *c)
{
	struct json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	put_str(o, "type", "connection");
	put_u64(o, "pid", c->pid);
	put_str(o, "process_name", c->process_name);
	put_u64(o, "id", c->id);
	put_str(o, "side", c->side);
	put_bool(o, "side_guessed", c->side_guessed);
	put_str(o, "local_address", c->local_address);
	put_str(o, "remote_address", c->remote_address);
	put_bool(o, "remote_local", c->remote_local);
	put_u64(o, "remote_pid", c->remote_pid);
	put_str(o, "transport", c->transport);
	put_str(o, "protocol", c->protocol);
	put_str(o, "l7_state", c->l7_state);
	put_u64(o, "opened_unix_ns", c->opened_unix_ns);
	put_u64(o, "closed_unix_ns", c->closed_unix_ns);
	if (c->closed_unix_ns >= c->opened_unix_ns && c->closed_unix_ns)
		net_format__put_ms(o, "duration_ms", c->closed_unix_ns - c->opened_unix_ns);
	put_u64(o, "writes", c->writes);
	put_u64(o, "reads", c->reads);
	put_u64(o, "bytes_written", c->bytes_written);
	put_u64(o, "bytes_read", c->bytes_read);
	put_u64(o, "exchanges", c->exchanges);
	put_u64(o, "gaps", c->gaps);
	put_u64(o, "gap_bytes", c->gap_bytes);
	put_u64(o, "retransmits", c->retransmits);
	put_u64(o, "drops", c->drops);
	put_u64(o, "srtt_us", c->srtt_us);
	put_bool(o, "ssl", c->ssl);
	put_u64(o, "tls_reads", c->tls_reads);
	put_u64(o, "tls_writes", c->tls_writes);
	put_u64(o, "calls_lost", c->calls_lost);
	put_u64(o, "request_turns", c->request_turns);
	put_u64(o, "exchanges_lost", c->exchanges_lost);
	put_bool(o, "tls_unprobed", c->tls_unprobed);
	return o;
}

/*
 * An exchange's line, written directly (net_line: a report lists them by
 * the ten thousand, and building json-c objects for them was most of the
 * exporter's time under load): the bytes json-c wrote.  A field name given
 * twice keeps its first place and its last value, as json_object_object_add.
 */
static int exchange_line(struct net_line *l, const Ember__NetExchange *e, FILE *out)
{
	net_line__begin(l);
	net_line__str(l, "type", "exchange");
	net_line__u64(l, "pid", e->pid);
	net_line__u64(l, "connection_id", e->connection_id);
	net_line__str(l, "protocol", str(e->protocol));
	net_line__str(l, "side", str(e->side));
	net_line__str(l, "peer_address", str(e->peer_address));
	net_line__u64(l, "req_unix_ns", e->req_unix_ns);
	net_line__u64(l, "latency_ns", e->latency_ns);
	net_line__ms(l, "latency_ms", e->latency_ns);
	net_line__u64(l, "duration_ns", e->duration_ns);
	net_line__ms(l, "duration_ms", e->duration_ns);
	net_line__u64(l, "req_bytes", e->req_bytes);
	net_line__u64(l, "resp_bytes", e->resp_bytes);
	net_line__int(l, "status", e->status);
	net_line__bool(l, "is_error", e->is_error);
	net_line__bool(l, "is_client_error", e->is_client_error);
	net_line__bool(l, "answered", e->answered);
	net_line__obj_begin(l, "fields");
	for (size_t i = 0; i < e->n_fields; i++) {
		const Ember__Label *f = e->fields[i], *last = f;
		bool seen = false;

		if (!f || !f->name)
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = e->fields[j] && e->fields[j]->name && !strcmp(e->fields[j]->name, f->name);
		if (seen)
			continue;
		for (size_t j = i + 1; j < e->n_fields; j++)
			if (e->fields[j] && e->fields[j]->name && !strcmp(e->fields[j]->name, f->name))
				last = e->fields[j];
		net_line__str(l, f->name, str(last->value));
	}
	net_line__obj_end(l);
	net_line__u64(l, "req_seq", e->req_seq);
	net_line__bool(l, "ssl", e->ssl);
	return net_line__write(l, out);
}

int net_report__write_json(const Ember__NetworkBatch *b, FILE *out)
{
	struct net_line l = { 0 };
	int r = 0;

	if (!b)
		return 0;
	r |= net_format__write_line(batch_json(b), out);
	for (size_t i = 0; i < b->n_flows; i++)
		if (b->flows[i])
			r |= net_format__write_line(flow_json(b->flows[i], b), out);
	for (size_t i = 0; i < b->n_connections; i++)
		if (b->connections[i])
			r |= net_format__write_line(connection_json(b->connections[i]), out);
	for (size_t i = 0; i < b->n_exchanges; i++)
		if (b->exchanges[i])
			r |= exchange_line(&l, b->exchanges[i], out);
	for (size_t i = 0; i < b->n_sampled; i++)
		if (b->sampled[i])
			r |= net_sampled__write_json(b->sampled[i], out);
	net_line__free(&l);
	return r ? -ENOMEM : 0;
}

/* ---- reading network.json back --------------------------------------------------------- */

static void load_flow(struct net_report *r, struct json_object *o)
{
	struct json_object *lat, *idx = NULL, *cnt = NULL;
	uint32_t index[NET_SKETCH_BUCKETS];
	uint64_t count[NET_SKETCH_BUCKETS];
	struct flow_l7 f = { net_format__get_str(o, "protocol"), net_format__get_u64(o, "requests"), net_format__get_u64(o, "errors"),
			     net_format__get_u64(o, "client_errors"), net_format__get_u64(o, "unanswered"), index, count, 0 };

	if (json_object_object_get_ex(o, "latency", &lat) && json_object_object_get_ex(lat, "index", &idx) &&
	    json_object_object_get_ex(lat, "count", &cnt) && json_object_is_type(idx, json_type_array) &&
	    json_object_is_type(cnt, json_type_array) && json_object_array_length(idx) == json_object_array_length(cnt)) {
		for (size_t i = 0; i < json_object_array_length(idx) && f.n < NET_SKETCH_BUCKETS; i++) {
			index[f.n] = (uint32_t)json_object_get_uint64(json_object_array_get_idx(idx, i));
			count[f.n++] = json_object_get_uint64(json_object_array_get_idx(cnt, i));
		}
	}
	add_flow(r, &f);
}

static void load_exchange(struct net_report *r, struct json_object *o)
{
	struct json_object *fields, *v;
	const char *keys[16], *values[16];
	struct slow x = { .duration_ns = net_format__get_u64(o, "duration_ns"), .req_unix_ns = net_format__get_u64(o, "req_unix_ns"),
			  .pid = (uint32_t)net_format__get_u64(o, "pid"), .status = -1 };
	size_t n = 0;

	if (json_object_object_get_ex(o, "answered", &v) && json_object_get_boolean(v))
		x.latency_ns = net_format__get_u64(o, "latency_ns");
	if (json_object_object_get_ex(o, "status", &v))
		x.status = json_object_get_int(v);
	snprintf(x.protocol, sizeof(x.protocol), "%s", net_format__get_str(o, "protocol"));
	snprintf(x.side, sizeof(x.side), "%s", net_format__get_str(o, "side"));
	snprintf(x.peer, sizeof(x.peer), "%s", net_format__get_str(o, "peer_address"));
	if (json_object_object_get_ex(o, "fields", &fields) && json_object_is_type(fields, json_type_object)) {
		json_object_object_foreach(fields, k, fv) {
			if (n < 16) {
				keys[n] = k;
				values[n++] = json_object_get_string(fv);
			}
		}
	}
	describe(x.request, sizeof(x.request), keys, values, n);
	add_exchange(r, &x);
}

static int load_line(struct net_report *r, const char *line)
{
	struct json_object *o = json_tokener_parse(line);
	const char *type;
	int ok = 1;

	if (!o || !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		return -EINVAL;
	}
	type = net_format__get_str(o, "type");
	if (!strcmp(type, "batch")) {
		struct net_loss loss = { .calls = net_format__get_u64(o, "calls_lost"),
					 .exchanges = net_format__get_u64(o, "exchanges_lost"),
					 .gap_bytes = net_format__get_u64(o, "gap_bytes"),
					 .connections = net_format__get_u64(o, "connections_with_loss"),
					 .tls_unprobed = net_format__get_u64(o, "tls_connections_unprobed"),
					 .tls_unbound = net_format__get_u64(o, "tls_calls_unbound") };

		add_batch(r, (uint32_t)net_format__get_u64(o, "part"), net_format__get_u64(o, "window_start_unix_ns"),
			  net_format__get_u64(o, "window_end_unix_ns"),
			  net_format__get_u64(o, "exchanges_not_listed"), net_format__get_u64(o, "connections_not_listed"),
			  &loss);
		net_sampled__add_not_kept(r->sampled, net_format__get_u64(o, "sampled_not_kept"));
		net_sampled__add_untraced(r->sampled, net_format__get_u64(o, "sampled_no_trace_context"),
					  net_format__get_u64(o, "sampled_bad_trace_context"));
	}
	else if (!strcmp(type, "flow"))
		load_flow(r, o);
	else if (!strcmp(type, "connection"))
		add_connection(r, net_format__get_str(o, "side"), net_format__get_str(o, "remote_address"), net_format__get_str(o, "protocol"),
			       net_format__get_str(o, "l7_state"), net_format__get_u64(o, "bytes_written"), net_format__get_u64(o, "bytes_read"));
	else if (!strcmp(type, "exchange"))
		load_exchange(r, o);
	else if (!strcmp(type, "sampled"))
		net_sampled__load(r->sampled, o);
	else
		ok = 0;
	json_object_put(o);
	return ok ? 0 : -EINVAL;
}

int net_report__load_json(struct net_report *r, FILE *in)
{
	char *line = NULL;
	size_t cap = 0;
	int used = 0;

	while (getline(&line, &cap, in) > 0) {
		if (load_line(r, line))
			r->st.bad_lines++;
		else
			used++;
	}
	free(line);
	return used;
}

/* ---- network.txt ----------------------------------------------------------------------- */

static int group_cmp(const void *a, const void *b)
{
	const struct group *x = a, *y = b;
	uint64_t tx = x->sent + x->received, ty = y->sent + y->received;
	int c;

	if (tx != ty)
		return tx > ty ? -1 : 1;
	if (x->conns != y->conns)
		return x->conns > y->conns ? -1 : 1;
	if ((c = strcmp(x->side, y->side)) || (c = strcmp(x->remote, y->remote)))
		return c;
	return strcmp(x->protocol, y->protocol);
}

static void write_group(FILE *out, const struct group *g)
{
	fprintf(out, "%-7s %-40s %-14s %11llu %14llu %14llu\n", g->side, g->remote, g->protocol,
		(unsigned long long)g->conns, (unsigned long long)g->sent, (unsigned long long)g->received);
}

static void write_connections(struct net_report *r, FILE *out)
{
	struct group rest = { .side = "-", .protocol = "-" };

	fprintf(out, "Connections by remote address and protocol (%llu listed",
		(unsigned long long)r->st.connections);
	if (r->connections_not_listed)
		fprintf(out, "; %llu more closed over the per-report bound are not",
			(unsigned long long)r->connections_not_listed);
	fprintf(out, ")\n");
	if (!r->st.connections) {
		fprintf(out, "  (none)\n");
		return;
	}
	fprintf(out, "%-7s %-40s %-14s %11s %14s %14s\n", "side", "remote", "protocol", "connections", "bytes sent",
		"bytes received");
	qsort(r->groups, r->n_groups, sizeof(r->groups[0]), group_cmp);
	/* the order changed: the index is rebuilt by the next connection's lookups */
	memset(r->index, 0, sizeof(r->index));
	for (unsigned i = 0; i < r->n_groups; i++) {
		uint32_t slot = hash3(r->groups[i].side, r->groups[i].remote, r->groups[i].protocol) & (GROUP_HASH - 1);

		while (r->index[slot])
			slot = (slot + 1) & (GROUP_HASH - 1);
		r->index[slot] = (int16_t)(i + 1);
		if (i < NET_REPORT_TEXT_GROUPS) {
			write_group(out, &r->groups[i]);
			continue;
		}
		rest.conns += r->groups[i].conns;
		rest.sent += r->groups[i].sent;
		rest.received += r->groups[i].received;
	}
	rest.conns += r->other.conns;
	rest.sent += r->other.sent;
	rest.received += r->other.received;
	if (rest.conns) {
		snprintf(rest.remote, sizeof(rest.remote), "(the rest)");
		write_group(out, &rest);
	}
}

static uint64_t percentile(const struct proto *p, double q)
{
	uint32_t idx[NET_SKETCH_BUCKETS];
	uint64_t cnt[NET_SKETCH_BUCKETS];
	size_t n = 0;

	for (unsigned i = 0; p->sketch && i < NET_SKETCH_BUCKETS; i++)
		if (p->sketch[i]) {
			idx[n] = i;
			cnt[n++] = p->sketch[i];
		}
	return net_hist__sketch_quantile(idx, cnt, n, q);
}

static void write_protocol(FILE *out, const struct proto *p)
{
	char p50[32] = "-", p90[32] = "-", p99[32] = "-";

	if (p->sketch && percentile(p, 1.0)) {
		net_format__ms(percentile(p, 0.5), p50, sizeof(p50));
		net_format__ms(percentile(p, 0.9), p90, sizeof(p90));
		net_format__ms(percentile(p, 0.99), p99, sizeof(p99));
	}
	fprintf(out, "%-14s %10llu %10llu %14llu %11llu %11s %11s %11s\n", p->name, (unsigned long long)p->requests,
		(unsigned long long)p->errors, (unsigned long long)p->client_errors, (unsigned long long)p->unanswered,
		p50, p90, p99);
}

static int proto_cmp(const void *a, const void *b)
{
	const struct proto *x = a, *y = b;

	if (x->requests != y->requests)
		return x->requests > y->requests ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void write_protocols(struct net_report *r, FILE *out)
{
	fprintf(out, "Exchanges by protocol (latency: request end to response)\n");
	if (!r->n_protos) {
		fprintf(out, "  (none)\n");
		return;
	}
	fprintf(out, "%-14s %10s %10s %14s %11s %11s %11s %11s\n", "protocol", "exchanges", "errors", "client errors",
		"unanswered", "p50 ms", "p90 ms", "p99 ms");
	qsort(r->protos, r->n_protos, sizeof(r->protos[0]), proto_cmp);
	for (unsigned i = 0; i < r->n_protos; i++)
		write_protocol(out, &r->protos[i]);
	if (r->other_proto.requests || r->other_proto.unanswered)
		write_protocol(out, &r->other_proto);
}

static void write_slowest(const struct net_report *r, FILE *out)
{
	fprintf(out, "Slowest exchanges (the %u slowest of the %llu listed", r->n_slow,
		(unsigned long long)r->st.exchanges);
	if (r->exchanges_not_listed)
		fprintf(out, "; %llu more were over the per-report bound and are not listed, but each report lists "
			     "its window's slowest",
			(unsigned long long)r->exchanges_not_listed);
	fprintf(out, ")\n");
	if (!r->n_slow) {
		fprintf(out, "  (none)\n");
		return;
	}
	fprintf(out, "%11s %11s %-14s %-7s %8s %-24s %-24s %6s  %s\n", "latency ms", "duration ms", "protocol", "side",
		"pid", "peer", "request time (UTC)", "status", "request");
	for (unsigned i = 0; i < r->n_slow; i++) {
		const struct slow *x = &r->slowest[i];
		char lat[32], dur[32], when[40], status[16] = "-";

		net_format__ms(x->latency_ns, lat, sizeof(lat));
		net_format__ms(x->duration_ns, dur, sizeof(dur));
		net_format__utc(x->req_unix_ns, when, sizeof(when));
		if (x->status >= 0)
			snprintf(status, sizeof(status), "%d", x->status);
		fprintf(out, "%11s %11s %-14s %-7s %8u %-24s %-24s %6s  %s\n", lat, dur, x->protocol, x->side, x->pid,
			x->peer, when, status, x->request);
	}
}

/* What the agent lost of this task's traffic, or that it lost nothing. */
static void write_loss(const struct net_report *r, FILE *out)
{
	const struct net_loss *l = &r->loss;
	const char *lead = "LOST:";

	if (!l->calls && !l->exchanges && !l->tls_unprobed && !l->tls_unbound && !l->json_unwritten)
		fprintf(out, "Nothing lost: no call was lost, and every request the kernel counted on a connection that "
			"skipped data is an exchange.");
	if (l->calls || l->exchanges) {
		fprintf(out, "%s %llu connection(s) lost %llu call(s) whole (full buffers) and %llu exchange(s) "
			"(requests the kernel counted that no exchange answers); per connection in network.json "
			"(calls_lost, request_turns, exchanges_lost).", lead, (unsigned long long)l->connections,
			(unsigned long long)l->calls, (unsigned long long)l->exchanges);
		lead = "";
	}
	if (l->tls_unprobed) {
		fprintf(out, "%s %llu TLS connection(s) moved data before their process's TLS probes were in place "
			"(a process started or followed mid-task, or a connection open before the task): an exchange "
			"they carried before the probes is missing; per connection in network.json (tls_unprobed).",
			lead, (unsigned long long)l->tls_unprobed);
		lead = "";
	}
	if (l->tls_unbound) {
		fprintf(out, "%s %llu TLS plaintext call(s) could not be tied to a connection (tls_calls_unbound): their "
			"exchanges are missing.", lead, (unsigned long long)l->tls_unbound);
		lead = "";
	}
	if (l->json_unwritten) {
		fprintf(out, "%s %llu report batch(es) with %llu exchange(s) could not be appended to network.json (the "
			"output disk was full): they are in this summary, not in network.json (file_write_errors).",
			lead, (unsigned long long)l->json_unwritten, (unsigned long long)l->json_unwritten_exchanges);
	}
	if (l->gap_bytes)
		fprintf(out, " The parsers skipped %llu bytes not copied (sendfile, over the copy size, no room, lost).",
			(unsigned long long)l->gap_bytes);
	fprintf(out, "\n");
}

void net_report__unwritten(struct net_report *r, const Ember__NetworkBatch *b)
{
	if (!r || !b)
		return;
	r->loss.json_unwritten++;
	r->loss.json_unwritten_exchanges += b->n_exchanges;
}

void net_report__loss(const struct net_report *r, struct net_loss *ret)
{
	*ret = r->loss;
}

int net_report__write_text(struct net_report *r, const char *task_id, FILE *out)
{
	char from[40], to[40];

	net_format__utc(r->start_ns, from, sizeof(from));
	net_format__utc(r->end_ns, to, sizeof(to));
	fprintf(out, "ember network profile, task %s\n", str(task_id));
	fprintf(out, "%llu batches from %s to %s; %llu flows, %llu connections, %llu exchanges listed\n",
		(unsigned long long)r->st.batches, from, to, (unsigned long long)r->st.flows,
		(unsigned long long)r->st.connections, (unsigned long long)r->st.exchanges);
	fprintf(out, "Percentiles come from log-bucketed latency sketches: within 2.2%% of the true value.\n");
	write_loss(r, out);
	fprintf(out, "\n");
	write_connections(r, out);
	fprintf(out, "\n");
	write_protocols(r, out);
	fprintf(out, "\n");
	write_slowest(r, out);
	net_sampled__write_text(r->sampled, out);
	return 0;
}
