/*
 * Hand-built network profiling messages for the exporter's unit tests: a
 * NetFlow filled by observing calls and exchanges one by one, the way an
 * analyzer counts them (common/net_hist.h buckets, latency sketch), so a
 * test states values and checks what each backend makes of them.
 */
#ifndef EMBER_TESTS_NET_TESTLIB_H
#define EMBER_TESTS_NET_TESTLIB_H

#include <stdint.h>
#include <string.h>

#include "common/net_hist.h"
#include "proto/ember.pb-c.h"

#define TFLOW_MAX_STATUSES 64
#define TFLOW_MAX_SKETCH   64

struct tflow {
	Ember__NetFlow f;
	Ember__NetCalls write, read, rtt, connect, close;
	uint64_t h_write[NET_L4_BUCKETS], h_read[NET_L4_BUCKETS], h_rtt[NET_L4_BUCKETS];
	uint64_t h_connect[NET_L4_BUCKETS], h_close[NET_L4_BUCKETS];
	Ember__StatusCount st[TFLOW_MAX_STATUSES], *stp[TFLOW_MAX_STATUSES];
	uint64_t h_req[NET_SIZE_BUCKETS], h_resp[NET_SIZE_BUCKETS], h_dur[NET_DURATION_BUCKETS];
	Ember__LatencySketch lat;
	uint32_t lat_idx[TFLOW_MAX_SKETCH];
	uint64_t lat_cnt[TFLOW_MAX_SKETCH];
};

static inline void tflow_init(struct tflow *t, uint32_t pid, const char *side, const char *protocol)
{
	memset(t, 0, sizeof(*t));
	ember__net_flow__init(&t->f);
	t->f.pid = pid;
	t->f.process_name = "app";
	t->f.side = (char *)side;
	t->f.protocol = (char *)protocol;
	t->f.peer_address = "10.0.0.2:8080";
	ember__net_calls__init(&t->write);
	ember__net_calls__init(&t->read);
	ember__net_calls__init(&t->rtt);
	ember__net_calls__init(&t->connect);
	ember__net_calls__init(&t->close);
	t->write.hist = t->h_write;
	t->read.hist = t->h_read;
	t->rtt.hist = t->h_rtt;
	t->connect.hist = t->h_connect;
	t->close.hist = t->h_close;
	t->f.write = &t->write;
	t->f.read = &t->read;
	t->f.write_rtt = &t->rtt;
	t->f.connect = &t->connect;
	t->f.close = &t->close;
	t->f.statuses = t->stp;
	ember__latency_sketch__init(&t->lat);
	t->lat.index = t->lat_idx;
	t->lat.count = t->lat_cnt;
	t->f.latency = &t->lat;
}

/* One call taking v (ns; for the RTT: us, bucketed on the same bounds / 1000). */
static inline void tflow_call(Ember__NetCalls *k, uint64_t v, uint64_t bytes, int rtt)
{
	k->count++;
	k->bytes += bytes;
	k->time_ns += v;
	k->hist[net_hist__index(net_hist__l4_bounds, NET_L4_BUCKETS, rtt ? v * 1000 : v)]++;
	k->n_hist = NET_L4_BUCKETS;
}

static inline void tflow_sketch_add(Ember__LatencySketch *s, uint64_t v)
{
	uint32_t idx = net_hist__sketch_index(v);
	size_t i = 0;

	while (i < s->n_index && s->index[i] < idx)
		i++;
	if (i < s->n_index && s->index[i] == idx) {
		s->count[i]++;
		return;
	}
	memmove(&s->index[i + 1], &s->index[i], (s->n_index - i) * sizeof(s->index[0]));
	memmove(&s->count[i + 1], &s->count[i], (s->n_index - i) * sizeof(s->count[0]));
	s->index[i] = idx;
	s->count[i] = 1;
	s->n_index++;
	s->n_count++;
}

/* One answered exchange (status < 0: none), or an unanswered one (latency 0). */
static inline void tflow_exchange(struct tflow *t, int status, uint64_t req_bytes, uint64_t resp_bytes,
				  uint64_t duration_ns, uint64_t latency_ns)
{
	Ember__NetFlow *f = &t->f;
	size_t i;

	f->requests++;
	if (!latency_ns) {
		f->unanswered++;
		return;
	}
	if (status >= 500)
		f->errors++;
	else if (status >= 400)
		f->client_errors++;
	if (status >= 0) {
		for (i = 0; i < f->n_statuses && t->st[i].status != status; i++)
			;
		if (i == f->n_statuses) {
			ember__status_count__init(&t->st[i]);
			t->st[i].status = status;
			t->stp[i] = &t->st[i];
			f->n_statuses++;
		}
		t->st[i].count++;
	}
	f->req_bytes += req_bytes;
	f->resp_bytes += resp_bytes;
	t->h_req[net_hist__index(net_hist__size_bounds, NET_SIZE_BUCKETS, req_bytes)]++;
	t->h_resp[net_hist__index(net_hist__size_bounds, NET_SIZE_BUCKETS, resp_bytes)]++;
	t->h_dur[net_hist__index(net_hist__duration_bounds, NET_DURATION_BUCKETS, duration_ns / 1000000)]++;
	f->req_size_hist = t->h_req;
	f->n_req_size_hist = NET_SIZE_BUCKETS;
	f->resp_size_hist = t->h_resp;
	f->n_resp_size_hist = NET_SIZE_BUCKETS;
	f->duration_hist = t->h_dur;
	f->n_duration_hist = NET_DURATION_BUCKETS;
	f->duration_sum_ns += duration_ns;
	f->latency_sum_ns += latency_ns;
	tflow_sketch_add(&t->lat, latency_ns);
}

#endif
