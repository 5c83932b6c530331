#include "exporter/net_meters.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Longest name part after the prefix: "_http1_response_package_size_histogram". */
#define LONGEST_REST 48
/* HTTP/1 meters after the status codes: 3 averages, 3 histograms. */
#define HTTP1_AFTER_STATUSES 6

struct build {
	const Ember__NetFlow *f;
	const char *prefix;
	const char *role;
	struct net_meter_set *s;
	struct net_label common[5];
};

/* A new meter with the common labels, or NULL when the set is full (counted). */
static struct net_meter *add(struct build *b, enum net_meter_id id, enum net_meter_unit unit, bool with_role,
			     const char *part, const char *suffix)
{
	struct net_meter *m;

	if (b->s->n >= NET_METERS_MAX) {
		b->s->truncated++;
		return NULL;
	}
	m = &b->s->m[b->s->n++];
	memset(m, 0, offsetof(struct net_meter, lower));
	m->id = id;
	m->unit = unit;
	/* Rover: <prefix>_<role>_<what>_<suffix> for L4, <prefix>_http1_[<role>_]<what> for HTTP/1 */
	snprintf(m->name, sizeof(m->name), "%s_%s%s%s%s", b->prefix, with_role ? b->role : "", with_role ? "_" : "",
		 part, suffix);
	memcpy(m->labels, b->common, sizeof(b->common));
	m->n_labels = 5;
	return m;
}

static void single(struct build *b, enum net_meter_id id, enum net_meter_unit unit, bool with_role, const char *part,
		   const char *suffix, double value, double sum, uint64_t count)
{
	struct net_meter *m = add(b, id, unit, with_role, part, suffix);

	if (!m)
		return;
	m->value = value;
	m->sum = sum;
	m->count = count;
}

/* A histogram with all its buckets, when one of them is non-zero. */
static void hist(struct build *b, enum net_meter_id id, enum net_meter_unit unit, bool with_role, const char *part,
		 const uint64_t *counts, size_t n, const uint64_t *bounds, unsigned nb, unsigned div, double sum)
{
	uint64_t total = 0;
	struct net_meter *m;

	if (!n)
		return;
	if (n != nb) {
		b->s->bad_hists++;
		return;
	}
	for (unsigned i = 0; i < nb; i++)
		total += counts[i];
	if (!total || !(m = add(b, id, unit, with_role, part, "_histogram")))
		return;
	m->n_buckets = nb;
	for (unsigned i = 0; i < nb; i++) {
		m->lower[i] = (double)bounds[i] / div;
		m->counts[i] = counts[i];
	}
	m->sum = sum;
	m->count = total;
}

/* <role>_<what>_counts_counter, _bytes_counter and _exe_time_counter (an average) of one kind of call. */
static void calls(struct build *b, const Ember__NetCalls *k, const char *what, enum net_meter_id counts_id,
		  int bytes_id, enum net_meter_id time_id, enum net_meter_unit time_unit)
{
	char part[32];

	if (!k || !k->count)
		return;
	snprintf(part, sizeof(part), "%s_", what);
	single(b, counts_id, NET_UNIT_COUNT, true, part, "counts_counter", (double)k->count, (double)k->count, 0);
	if (bytes_id >= 0 && k->bytes)
		single(b, (enum net_meter_id)bytes_id, NET_UNIT_BYTES, true, part, "bytes_counter", (double)k->bytes,
		       (double)k->bytes, 0);
	/* the average of the calls whose time is known (socket-layer capture sees a call's end only) */
	if (k->time_ns && k->count > k->untimed)
		single(b, time_id, time_unit, true, part, "exe_time_counter",
		       (double)k->time_ns / (double)(k->count - k->untimed), (double)k->time_ns, k->count - k->untimed);
}

static const uint64_t *hist_of(const Ember__NetCalls *k, size_t *n)
{
	*n = k ? k->n_hist : 0;
	return k ? k->hist : NULL;
}

static void layer4(struct build *b)
{
	const Ember__NetFlow *f = b->f;
	size_t n;
	const uint64_t *h;

	calls(b, f->write, "write", NM_WRITE_COUNTS, NM_WRITE_BYTES, NM_WRITE_EXE_TIME, NET_UNIT_NS);
	calls(b, f->read, "read", NM_READ_COUNTS, NM_READ_BYTES, NM_READ_EXE_TIME, NET_UNIT_NS);
	calls(b, f->write_rtt, "write_rtt", NM_WRITE_RTT_COUNTS, -1, NM_WRITE_RTT_EXE_TIME, NET_UNIT_US);
	calls(b, f->connect, "connect", NM_CONNECT_COUNTS, -1, NM_CONNECT_EXE_TIME, NET_UNIT_NS);
	calls(b, f->close, "close", NM_CLOSE_COUNTS, -1, NM_CLOSE_EXE_TIME, NET_UNIT_NS);
	if (f->retransmits)
		single(b, NM_RETRANSMIT_COUNTS, NET_UNIT_COUNT, true, "retransmit_", "counts_counter",
		       (double)f->retransmits, (double)f->retransmits, 0);
	if (f->drops)
		single(b, NM_DROP_COUNTS, NET_UNIT_COUNT, true, "drop_", "counts_counter", (double)f->drops,
		       (double)f->drops, 0);
	/* The RTT is in us, on the same bounds as the call times in ns: bounds / 1000. */
	h = hist_of(f->write_rtt, &n);
	hist(b, NM_WRITE_RTT_HIST, NET_UNIT_US, true, "write_rtt", h, n, net_hist__l4_bounds, NET_L4_BUCKETS, 1000,
	     f->write_rtt ? (double)f->write_rtt->time_ns : 0);
	h = hist_of(f->write, &n);
	hist(b, NM_WRITE_EXE_TIME_HIST, NET_UNIT_NS, true, "write_exe_time", h, n, net_hist__l4_bounds, NET_L4_BUCKETS,
	     1, f->write ? (double)f->write->time_ns : 0);
	h = hist_of(f->read, &n);
	hist(b, NM_READ_EXE_TIME_HIST, NET_UNIT_NS, true, "read_exe_time", h, n, net_hist__l4_bounds, NET_L4_BUCKETS,
	     1, f->read ? (double)f->read->time_ns : 0);
	h = hist_of(f->connect, &n);
	hist(b, NM_CONNECT_EXE_TIME_HIST, NET_UNIT_NS, true, "connect_exe_time", h, n, net_hist__l4_bounds,
	     NET_L4_BUCKETS, 1, f->connect ? (double)f->connect->time_ns : 0);
	h = hist_of(f->close, &n);
	hist(b, NM_CLOSE_EXE_TIME_HIST, NET_UNIT_NS, true, "close_exe_time", h, n, net_hist__l4_bounds, NET_L4_BUCKETS,
	     1, f->close ? (double)f->close->time_ns : 0);
}

static uint64_t total_of(const uint64_t *v, size_t n, size_t want)
{
	uint64_t t = 0;

	if (n != want)
		return 0;
	for (size_t i = 0; i < n; i++)
		t += v[i];
	return t;
}

/* An average only when both its sum and its count are non-zero (Rover sends no zero averages). */
static void avg(struct build *b, enum net_meter_id id, enum net_meter_unit unit, bool with_role, const char *part,
		double sum, uint64_t count)
{
	if (sum > 0 && count)
		single(b, id, unit, with_role, part, "_avg", sum / (double)count, sum, count);
}

static void http1(struct build *b)
{
	const Ember__NetFlow *f = b->f;
	uint64_t nreq = total_of(f->req_size_hist, f->n_req_size_hist, NET_SIZE_BUCKETS);
	uint64_t nresp = total_of(f->resp_size_hist, f->n_resp_size_hist, NET_SIZE_BUCKETS);
	uint64_t ndur = total_of(f->duration_hist, f->n_duration_hist, NET_DURATION_BUCKETS);
	uint64_t statuses = 0;
	char part[32];

	if (f->requests)
		single(b, NM_HTTP1_REQUESTS, NET_UNIT_COUNT, false, "http1_request", "_counter", (double)f->requests,
		       (double)f->requests, 0);
	for (size_t i = 0; i < f->n_statuses; i++) {
		const Ember__StatusCount *sc = f->statuses[i];
		struct net_meter *m;

		if (!sc || !sc->count)
			continue;
		statuses += sc->count;
		/* the averages and histograms that follow matter more than one more code */
		if (b->s->n >= NET_METERS_MAX - HTTP1_AFTER_STATUSES) {
			b->s->truncated++;
			continue;
		}
		if (!(m = add(b, NM_HTTP1_STATUS, NET_UNIT_COUNT, false, "http1_response_status", "_counter")))
			continue;
		snprintf(b->s->codes[b->s->n - 1], sizeof(b->s->codes[0]), "%d", sc->status);
		m->labels[m->n_labels++] = (struct net_label){ "code", b->s->codes[b->s->n - 1] };
		m->value = m->sum = (double)sc->count;
	}
	/* The size averages are over the exchanges whose sizes were counted;
	 * without size histograms, over the requests and the responses. */
	avg(b, NM_HTTP1_REQ_SIZE_AVG, NET_UNIT_BYTES, false, "http1_request_package_size", (double)f->req_bytes,
	    nreq ? nreq : f->requests);
	avg(b, NM_HTTP1_RESP_SIZE_AVG, NET_UNIT_BYTES, false, "http1_response_package_size", (double)f->resp_bytes,
	    nresp ? nresp : statuses);
	hist(b, NM_HTTP1_REQ_SIZE_HIST, NET_UNIT_BYTES, false, "http1_request_package_size", f->req_size_hist,
	     f->n_req_size_hist, net_hist__size_bounds, NET_SIZE_BUCKETS, 1, (double)f->req_bytes);
	hist(b, NM_HTTP1_RESP_SIZE_HIST, NET_UNIT_BYTES, false, "http1_response_package_size", f->resp_size_hist,
	     f->n_resp_size_hist, net_hist__size_bounds, NET_SIZE_BUCKETS, 1, (double)f->resp_bytes);
	snprintf(part, sizeof(part), "http1_%s_duration", b->role);
	avg(b, NM_HTTP1_DURATION_AVG, NET_UNIT_MS, false, part, (double)f->duration_sum_ns / 1e6,
	    ndur ? ndur : f->requests);
	hist(b, NM_HTTP1_DURATION_HIST, NET_UNIT_MS, false, part, f->duration_hist, f->n_duration_hist,
	     net_hist__duration_bounds, NET_DURATION_BUCKETS, 1, (double)f->duration_sum_ns / 1e6);
}

static const char *protocol_label(const Ember__NetFlow *f, enum net_protocol_label how)
{
	const char *p = f->protocol && f->protocol[0] ? f->protocol : NULL;

	if (how == NET_PROTOCOL_PARSER)
		return p ? p : "unknown";
	return p && (!strcmp(p, "http1") || !strcmp(p, "http2")) ? "http" : "unknown";
}

int net_meters__from_flow(const Ember__NetFlow *f, const struct net_meters_opts *o, struct net_meter_set *set)
{
	struct build b = { .f = f, .s = set };
	const char *peer;

	if (!f || !o || !o->resolve || !set)
		return -EINVAL;
	set->n = set->truncated = set->bad_hists = 0;
	b.prefix = o->prefix && o->prefix[0] ? o->prefix : "rover_net_p";
	if (strlen(b.prefix) + LONGEST_REST >= NET_METER_NAME_MAX)
		return -ENAMETOOLONG;
	/* Rover reports a connection of unknown role as a client's. */
	b.role = f->side && !strcmp(f->side, "server") ? "server" : "client";
	peer = b.role[0] == 's' ? "client" : "server";
	if (o->resolve(o->ctx, f->pid, set->role_id, sizeof(set->role_id)))
		return -ENOENT;
	snprintf(set->role_id_label, sizeof(set->role_id_label), "%s_process_id", b.role);
	if (f->peer_pid && !o->resolve(o->ctx, f->peer_pid, set->peer_value, sizeof(set->peer_value))) {
		snprintf(set->peer_label, sizeof(set->peer_label), "%s_process_id", peer);
	} else if (f->peer_local) {
		snprintf(set->peer_label, sizeof(set->peer_label), "%s_local", peer);
		snprintf(set->peer_value, sizeof(set->peer_value), "true");
	} else {
		snprintf(set->peer_label, sizeof(set->peer_label), "%s_address", peer);
		snprintf(set->peer_value, sizeof(set->peer_value), "%s", f->peer_address ? f->peer_address : "");
	}
	b.common[0] = (struct net_label){ set->role_id_label, set->role_id };
	b.common[1] = (struct net_label){ set->peer_label, set->peer_value };
	b.common[2] = (struct net_label){ "side", b.role };
	b.common[3] = (struct net_label){ "protocol", protocol_label(f, o->protocol) };
	b.common[4] = (struct net_label){ "is_ssl", f->ssl ? "true" : "false" };
	layer4(&b);
	if (f->protocol && !strcmp(f->protocol, "http1"))
		http1(&b);
	return 0;
}
