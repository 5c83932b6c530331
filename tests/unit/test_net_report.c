/* exporter/net_report and the file backend's network files: the exact
 * network.json lines and network.txt summary of synthetic batches from two
 * analyzers over two intervals (sampled HTTP traces among them: their lines
 * with the kept bodies, the summary's section), a report in parts adding up
 * to the same, the summary rebuilt after a restart, and task.json written
 * last. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "common/config.h"
#include "exporter/backend.h"
#include "exporter/net_report.h"
#include "tests/unit/net_testlib.h"

#define T0 1700000000000000000ull	/* 2023-11-14T22:13:20Z */
#define MS 1000000ull

struct tconn {
	Ember__NetConnection c;
};

static void conn_init(struct tconn *k, uint32_t pid, uint64_t id, const char *side, const char *remote,
		      const char *protocol, const char *l7_state, uint64_t written, uint64_t read)
{
	ember__net_connection__init(&k->c);
	k->c.pid = pid;
	k->c.process_name = "app";
	k->c.id = id;
	k->c.side = (char *)side;
	k->c.local_address = "10.0.0.1:40000";
	k->c.remote_address = (char *)remote;
	k->c.transport = "tcp";
	k->c.protocol = (char *)protocol;
	k->c.l7_state = (char *)l7_state;
	k->c.opened_unix_ns = T0 + 100 * MS;
	k->c.closed_unix_ns = T0 + 1100 * MS;
	k->c.writes = 2;
	k->c.reads = 3;
	k->c.bytes_written = written;
	k->c.bytes_read = read;
	k->c.exchanges = 2;
	k->c.srtt_us = 150;
	k->c.ssl = 1;
	k->c.tls_reads = 3;
	k->c.tls_writes = 2;
}

struct tex {
	Ember__NetExchange e;
	Ember__Label l[2], *lp[2];
};

static void ex_init(struct tex *x, uint32_t pid, const char *protocol, const char *side, const char *peer,
		    uint64_t req_ns, uint64_t latency_ns, int status, const char *k1, const char *v1, const char *k2,
		    const char *v2)
{
	ember__net_exchange__init(&x->e);
	x->e.pid = pid;
	x->e.connection_id = 1;
	x->e.protocol = (char *)protocol;
	x->e.side = (char *)side;
	x->e.peer_address = (char *)peer;
	x->e.req_unix_ns = req_ns;
	x->e.latency_ns = latency_ns;
	x->e.duration_ns = latency_ns ? latency_ns + MS : 0;
	x->e.req_bytes = 100;
	x->e.resp_bytes = latency_ns ? 1000 : 0;
	x->e.status = status;
	x->e.is_error = status >= 500;
	x->e.is_client_error = status >= 400 && status < 500;
	x->e.answered = latency_ns != 0;
	x->e.req_seq = 7;
	x->e.ssl = 1;
	for (unsigned i = 0; i < 2; i++) {
		ember__label__init(&x->l[i]);
		x->lp[i] = &x->l[i];
	}
	x->l[0].name = (char *)k1;
	x->l[0].value = (char *)v1;
	x->l[1].name = (char *)k2;
	x->l[1].value = (char *)v2;
	x->e.fields = x->lp;
	x->e.n_fields = k2 ? 2 : 1;
}

struct tsampled {
	Ember__NetSampledTrace t;
	struct tex x;
};

static void sampled_init(struct tsampled *k, uint32_t pid, const char *side, const char *peer, uint64_t req_ns,
			 uint64_t latency_ns, int status, const char *reason, const char *provider, const char *trace_id,
			 const char *segment_id, const char *span_id, const char *uri)
{
	ex_init(&k->x, pid, "http1", side, peer, req_ns, latency_ns, status, "method", "GET", "uri", uri);
	ember__net_sampled_trace__init(&k->t);
	k->t.exchange = &k->x.e;
	k->t.uri = (char *)uri;
	k->t.reason = (char *)reason;
	k->t.trace_provider = (char *)provider;
	k->t.trace_id = (char *)trace_id;
	k->t.segment_id = (char *)segment_id;
	k->t.span_id = (char *)span_id;
	k->t.local_address = "10.0.0.1:40000";
	k->t.process_name = "app";
}

/* Three batches of task "net-1": analyzers 0 and 1 in the first interval, analyzer 0 in the second (last). */
static struct fixture {
	Ember__Task task;
	Ember__NetworkBatch b[3];
	struct tflow fa, fb, fa2;
	Ember__NetFlow *f1[1], *f2[1], *f3[1];
	struct tconn c[4];
	Ember__NetConnection *c1[1], *c2[3];
	struct tex x[5];
	Ember__NetExchange *x1[2], *x2[2], *x3[1];
	struct tsampled s[3];
	Ember__NetSampledTrace *s1[1], *s2[1], *s3[1];
} F;

static void fixture(void)
{
	memset(&F, 0, sizeof(F));
	ember__task__init(&F.task);
	F.task.id = "net-1";
	F.task.kind = EMBER__TASK_KIND__NETWORK;
	F.task.start_unix_ms = T0 / MS;
	F.task.duration_ms = 4000;
	F.task.shards = 2;
	for (unsigned i = 0; i < 3; i++) {
		ember__network_batch__init(&F.b[i]);
		F.b[i].task = &F.task;
		F.b[i].window_start_unix_ns = i < 2 ? T0 : T0 + 2000 * MS;
		F.b[i].window_end_unix_ns = i < 2 ? T0 + 2000 * MS : T0 + 4000 * MS;
	}
	/* analyzer 0, interval 1: a client's HTTP/1 flow, its connection and two exchanges */
	tflow_init(&F.fa, 100, "client", "http1");
	tflow_call(&F.fa.write, 20000, 400, 0);
	tflow_exchange(&F.fa, 200, 100, 1000, 12 * MS, 10 * MS);
	tflow_exchange(&F.fa, 404, 300, 600, 3 * MS, 2 * MS);
	F.f1[0] = &F.fa.f;
	F.b[0].flows = F.f1;
	F.b[0].n_flows = 1;
	conn_init(&F.c[0], 100, 1, "client", "10.0.0.2:8080", "http1", "parsed", 400, 1600);
	F.c1[0] = &F.c[0].c;
	F.b[0].connections = F.c1;
	F.b[0].n_connections = 1;
	ex_init(&F.x[0], 100, "http1", "client", "10.0.0.2:8080", T0 + 200 * MS, 10 * MS, 200, "method", "GET", "uri",
		"/a");
	ex_init(&F.x[1], 100, "http1", "client", "10.0.0.2:8080", T0 + 300 * MS, 2 * MS, 404, "method", "GET", "uri",
		"/missing");
	F.x1[0] = &F.x[0].e;
	F.x1[1] = &F.x[1].e;
	F.b[0].exchanges = F.x1;
	F.b[0].n_exchanges = 2;
	/* analyzer 1, interval 1: a MySQL server with two clients from one host, one DNS query without a parser */
	tflow_init(&F.fb, 201, "server", "mysql");
	F.fb.f.peer_address = "10.0.0.9:0";
	tflow_exchange(&F.fb, -1, 50, 70, 6 * MS, 5 * MS);
	tflow_exchange(&F.fb, -1, 50, 0, 0, 0);
	F.f2[0] = &F.fb.f;
	F.b[1].flows = F.f2;
	F.b[1].n_flows = 1;
	conn_init(&F.c[1], 201, 1, "server", "10.0.0.9:51000", "mysql", "parsed", 70, 50);
	conn_init(&F.c[2], 201, 2, "server", "10.0.0.9:51002", "mysql", "parsed", 0, 50);
	conn_init(&F.c[3], 201, 3, "client", "10.0.0.3:53", "", "undetected", 30, 90);
	F.c[3].c.transport = "udp";
	for (unsigned i = 0; i < 3; i++)
		F.c2[i] = &F.c[1 + i].c;
	F.b[1].connections = F.c2;
	F.b[1].n_connections = 3;
	ex_init(&F.x[2], 201, "mysql", "server", "10.0.0.9:0", T0 + 400 * MS, 5 * MS, -1, "command", "COM_QUERY",
		"query", "select \"x\"");
	ex_init(&F.x[3], 201, "mysql", "server", "10.0.0.9:0", T0 + 500 * MS, 0, -1, "command", "COM_PING", NULL,
		NULL);
	F.x2[0] = &F.x[2].e;
	F.x2[1] = &F.x[3].e;
	F.b[1].exchanges = F.x2;
	F.b[1].n_exchanges = 2;
	F.b[1].exchanges_not_listed = 3;
	/* analyzer 0, interval 2: the slowest exchange, the last batch */
	tflow_init(&F.fa2, 100, "client", "http1");
	tflow_exchange(&F.fa2, 503, 100, 10, 21 * MS, 20 * MS);
	F.f3[0] = &F.fa2.f;
	F.b[2].flows = F.f3;
	F.b[2].n_flows = 1;
	ex_init(&F.x[4], 100, "http1", "client", "10.0.0.2:8080", T0 + 2500 * MS, 20 * MS, 503, "method", "POST", "uri",
		"/slow");
	F.x3[0] = &F.x[4].e;
	F.b[2].exchanges = F.x3;
	F.b[2].n_exchanges = 1;
	F.b[2].last = 1;
	/* sampled traces: a slow zipkin one, a 5xx with the bodies its rule kept (and a URI that is not
	 * UTF-8), a 4xx; more matched in analyzer 1 than it kept */
	sampled_init(&F.s[0], 100, "client", "10.0.0.2:8080", T0 + 200 * MS, 10 * MS, 200, "slow", "zipkin",
		     "463ac35c9f6413ad48485a3953bb6124", "", "a2fb4a1d1a96d312", "/a");
	sampled_init(&F.s[1], 202, "server", "10.0.0.7:51000", T0 + 600 * MS, 30 * MS, 503, "status_5xx",
		     "skywalking", "t-1.2.3", "seg-9", "1", "/pay?id=\xff");
	F.s[1].t.request.data = (uint8_t *)"POST /pay HTTP/1.1\r\nHost: x\r\n\r\n{\"a\":1}";
	F.s[1].t.request.len = strlen((char *)F.s[1].t.request.data);
	F.s[1].t.response.data = (uint8_t *)"HTTP/1.1 503 Busy\r\n\r\nno";
	F.s[1].t.response.len = strlen((char *)F.s[1].t.response.data);
	F.s[1].t.response_truncated = 1;
	sampled_init(&F.s[2], 100, "client", "10.0.0.2:8080", T0 + 2600 * MS, 2 * MS, 404, "status_4xx", "skywalking",
		     "t-4.5.6", "seg-1", "0", "/missing");
	F.s1[0] = &F.s[0].t;
	F.s2[0] = &F.s[1].t;
	F.s3[0] = &F.s[2].t;
	F.b[0].sampled = F.s1;
	F.b[0].n_sampled = 1;
	F.b[1].sampled = F.s2;
	F.b[1].n_sampled = 1;
	F.b[1].sampled_not_kept = 4;
	F.b[0].sampled_bad_trace_context = 2;	/* matched a rule with a malformed sw8 */
	F.b[2].sampled_no_trace_context = 264;	/* ... with no trace header at all */
	F.b[2].sampled = F.s3;
	F.b[2].n_sampled = 1;
}

/* Percentiles are sketch values: 10.194 for 10 ms, 20.388 for 20 ms, 5.097 for 5 ms (+1.9%). */
static const char want_txt[] =
	"ember network profile, task net-1\n"
	"3 batches from 2023-11-14T22:13:20.000Z to 2023-11-14T22:13:24.000Z; 3 flows, 4 connections, 5 exchanges "
	"listed\n"
	"Percentiles come from log-bucketed latency sketches: within 2.2% of the true value.\n"
	"Nothing lost: no call was lost, and every request the kernel counted on a connection that skipped data is an "
	"exchange.\n"
	"\n"
	"Connections by remote address and protocol (4 listed)\n"
	"side    remote                                   protocol       connections     bytes sent bytes received\n"
	"client  10.0.0.2:8080                            http1                    1            400           1600\n"
	"server  10.0.0.9:*                               mysql                    2             70            100\n"
	"client  10.0.0.3:53                              (undetected)             1             30             90\n"
	"\n"
	"Exchanges by protocol (latency: request end to response)\n"
	"protocol        exchanges     errors  client errors  unanswered      p50 ms      p90 ms      p99 ms\n"
	"http1                   3          1              1           0      10.194      20.388      20.388\n"
	"mysql                   2          0              0           1       5.097       5.097       5.097\n"
	"\n"
	"Slowest exchanges (the 4 slowest of the 5 listed; 3 more were over the per-report bound and are not listed, "
	"but each report lists its window's slowest)\n"
	" latency ms duration ms protocol       side         pid peer                     request time (UTC)       "
	"status  request\n"
	"     20.000      21.000 http1          client       100 10.0.0.2:8080            2023-11-14T22:13:22.500Z    "
	"503  method=POST uri=/slow\n"
	"     10.000      11.000 http1          client       100 10.0.0.2:8080            2023-11-14T22:13:20.200Z    "
	"200  method=GET uri=/a\n"
	"      5.000       6.000 mysql          server       201 10.0.0.9:0               2023-11-14T22:13:20.400Z    "
	"  -  command=COM_QUERY query=select \"x\"\n"
	"      2.000       3.000 http1          client       100 10.0.0.2:8080            2023-11-14T22:13:20.300Z    "
	"404  method=GET uri=/missing\n"
	"\n"
	"Sampled traces (HTTP exchanges with a trace id that matched a sampling rule: 3 kept; 4 more matched but were "
	"over the analyzer's bound per URI and reason; 266 more matched without a trace context, so none was sampled "
	"(no sw8, b3 or x-b3-traceid header: 264; only malformed ones: 2))\n"
	"reason         traces\n"
	"slow                1\n"
	"status_4xx          1\n"
	"status_5xx          1\n"
	"The 10 slowest per reason (duration: first request byte to response)\n"
	"duration ms reason       status side         pid peer                     request time (UTC)       provider   "
	"kept      trace id                           uri\n"
	"     11.000 slow            200 client       100 10.0.0.2:8080            2023-11-14T22:13:20.200Z zipkin     "
	"-         463ac35c9f6413ad48485a3953bb6124   /a\n"
	"      3.000 status_4xx      404 client       100 10.0.0.2:8080            2023-11-14T22:13:22.600Z skywalking "
	"-         t-4.5.6                            /missing\n"
	"     31.000 status_5xx      503 server       202 10.0.0.7:51000           2023-11-14T22:13:20.600Z skywalking "
	"req+resp  t-1.2.3                            /pay?id=\xef\xbf\xbd\n";

static char *text_of(struct net_report *r)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);

	assert_int_equal(net_report__write_text(r, "net-1", f), 0);
	fclose(f);
	return s;
}

static void test_summary(void **state)
{
	struct net_report *r = net_report__new();
	struct net_report_stats st;
	char *s;
	(void)state;

	fixture();
	for (unsigned i = 0; i < 3; i++)
		net_report__add(r, &F.b[i]);
	s = text_of(r);
	assert_string_equal(s, want_txt);
	free(s);
	/* the text sorts the groups: later connections still find theirs */
	net_report__add(r, &F.b[1]);
	net_report__stats(r, &st);
	assert_int_equal(st.connections, 7);
	assert_int_equal(st.groups_merged, 0);
	s = text_of(r);
	assert_non_null(strstr(s, "\nserver  10.0.0.9:*                               mysql                    4"
				  "            140            200\n"));
	assert_non_null(strstr(s, "\nclient  10.0.0.3:53                              (undetected)             2"));
	free(s);
	net_report__free(r);
}

/*
 * F.b[1] as an analyzer sends a big report: in parts of the same window, the
 * first with the flows, the sampled traces and the counters, each with a
 * share of the connections, then of the exchanges.
 */
static void split_b1(Ember__NetworkBatch p[3])
{
	for (unsigned i = 0; i < 3; i++) {
		ember__network_batch__init(&p[i]);
		p[i].task = F.b[1].task;
		p[i].window_start_unix_ns = F.b[1].window_start_unix_ns;
		p[i].window_end_unix_ns = F.b[1].window_end_unix_ns;
		p[i].part = i;
		p[i].parts = 3;
	}
	p[0].flows = F.b[1].flows;
	p[0].n_flows = F.b[1].n_flows;
	p[0].sampled = F.b[1].sampled;
	p[0].n_sampled = F.b[1].n_sampled;
	p[0].sampled_not_kept = F.b[1].sampled_not_kept;
	p[0].exchanges_not_listed = F.b[1].exchanges_not_listed;
	p[0].connections = F.b[1].connections;
	p[0].n_connections = 2;
	p[1].connections = F.b[1].connections + 2;
	p[1].n_connections = 1;
	p[1].exchanges = F.b[1].exchanges;
	p[1].n_exchanges = 1;
	p[2].exchanges = F.b[1].exchanges + 1;
	p[2].n_exchanges = 1;
}

/* A report in parts adds up to the same summary as in one batch, and counts as one report, through network.json too. */
static void test_parts_add_up(void **state)
{
	struct net_report *r = net_report__new(), *r2 = net_report__new();
	Ember__NetworkBatch p[3];
	struct net_report_stats st;
	char *s, *js = NULL;
	size_t jn = 0;
	FILE *f;
	(void)state;

	fixture();
	split_b1(p);
	f = open_memstream(&js, &jn);
	net_report__add(r, &F.b[0]);
	assert_int_equal(net_report__write_json(&F.b[0], f), 0);
	for (unsigned i = 0; i < 3; i++) {
		net_report__add(r, &p[i]);
		assert_int_equal(net_report__write_json(&p[i], f), 0);
	}
	net_report__add(r, &F.b[2]);
	assert_int_equal(net_report__write_json(&F.b[2], f), 0);
	fclose(f);
	s = text_of(r);
	assert_string_equal(s, want_txt);
	free(s);
	net_report__stats(r, &st);
	assert_int_equal(st.batches, 3);
	assert_int_equal(st.parts, 5);
	assert_non_null(strstr(js, "\"part\":2,\"parts\":3}"));

	/* an exporter restart: the summary rebuilt from those lines */
	f = fmemopen(js, jn, "r");
	/* a batch line per message, then its flows, connections, exchanges and sampled traces */
	assert_int_equal(net_report__load_json(r2, f), 6 + (5 + 3 + 2) + 4);
	fclose(f);
	s = text_of(r2);
	assert_string_equal(s, want_txt);
	free(s);
	net_report__stats(r2, &st);
	assert_int_equal(st.batches, 3);
	assert_int_equal(st.parts, 5);
	free(js);
	net_report__free(r);
	net_report__free(r2);
}

/* Losses in the batches: summed, said at the top of network.txt, and kept through network.json. */
static void test_loss(void **state)
{
	struct net_report *r = net_report__new(), *r2 = net_report__new();
	Ember__NetworkBatch b = EMBER__NETWORK_BATCH__INIT;
	struct net_loss l;
	char *s, *js = NULL;
	size_t jn = 0;
	FILE *f;
	(void)state;

	b.calls_lost = 3;
	b.exchanges_lost = 2;
	b.gap_bytes = 100;
	b.connections_with_loss = 1;
	net_report__add(r, &b);
	b.calls_lost = 4;
	b.exchanges_lost = 0;
	net_report__add(r, &b);
	net_report__loss(r, &l);
	assert_int_equal(l.calls, 7);
	assert_int_equal(l.exchanges, 2);
	assert_int_equal(l.gap_bytes, 200);
	assert_int_equal(l.connections, 2);
	s = text_of(r);
	assert_non_null(strstr(s, "\nLOST: 2 connection(s) lost 7 call(s) whole (full buffers) and 2 exchange(s) "));
	assert_non_null(strstr(s, "The parsers skipped 200 bytes not copied"));
	assert_null(strstr(s, "Nothing lost"));
	free(s);
	f = open_memstream(&js, &jn);
	assert_int_equal(net_report__write_json(&b, f), 0);
	fclose(f);
	f = fmemopen(js, jn, "r");
	assert_int_equal(net_report__load_json(r2, f), 1);   /* the batch's one line */
	fclose(f);
	net_report__loss(r2, &l);
	assert_int_equal(l.calls, 4);
	assert_int_equal(l.gap_bytes, 100);
	assert_int_equal(l.connections, 1);
	free(js);
	net_report__free(r);
	net_report__free(r2);

	/* TLS calls before the probes: a loss of their own, said alone or beside the others, kept through network.json. */
	r = net_report__new();
	r2 = net_report__new();
	b = (Ember__NetworkBatch)EMBER__NETWORK_BATCH__INIT;
	b.tls_connections_unprobed = 2;
	b.connections_with_loss = 2;
	net_report__add(r, &b);
	net_report__loss(r, &l);
	assert_int_equal(l.tls_unprobed, 2);
	s = text_of(r);
	assert_non_null(strstr(s, "\nLOST: 2 TLS connection(s) moved data before their process's TLS probes were "
				  "in place"));
	assert_null(strstr(s, "Nothing lost"));
	free(s);
	b.calls_lost = 1;
	net_report__add(r, &b);
	s = text_of(r);
	assert_non_null(strstr(s, "\nLOST: 4 connection(s) lost 1 call(s) whole"));
	assert_null(strstr(s, "tls_calls_unbound"));
	assert_non_null(strstr(s, " 4 TLS connection(s) moved data before their process's TLS probes were in place"));
	free(s);
	js = NULL;
	f = open_memstream(&js, &jn);
	assert_int_equal(net_report__write_json(&b, f), 0);
	fclose(f);
	f = fmemopen(js, jn, "r");
	assert_int_equal(net_report__load_json(r2, f), 1);
	fclose(f);
	net_report__loss(r2, &l);
	assert_int_equal(l.tls_unprobed, 2);
	b = (Ember__NetworkBatch)EMBER__NETWORK_BATCH__INIT;
	b.tls_calls_unbound = 3;
	net_report__add(r2, &b);
	net_report__loss(r2, &l);
	assert_int_equal(l.tls_unbound, 3);
	s = text_of(r2);
	assert_non_null(strstr(s, " 3 TLS plaintext call(s) could not be tied to a connection (tls_calls_unbound)"));
	free(s);
	free(js);
	net_report__free(r);
	net_report__free(r2);
}

/* Past the bounds: groups beyond NET_REPORT_MAX_GROUPS add up in one row, only the first groups are shown. */
static void test_bounds(void **state)
{
	static struct tconn c[NET_REPORT_MAX_GROUPS + 76];
	static Ember__NetConnection *cp[NET_REPORT_MAX_GROUPS + 76];
	static char addr[NET_REPORT_MAX_GROUPS + 76][32];
	struct net_report *r = net_report__new();
	Ember__NetworkBatch b = EMBER__NETWORK_BATCH__INIT;
	struct net_report_stats st;
	char *s, *rest;
	(void)state;

	for (unsigned i = 0; i < NET_REPORT_MAX_GROUPS + 76; i++) {
		snprintf(addr[i], sizeof(addr[i]), "10.1.%u.%u:80", i / 256, i % 256);
		/* the first one moves the most bytes: it sorts first */
		conn_init(&c[i], 1, i, "client", addr[i], "http1", "parsed", i ? 1 : 1000, 1);
		cp[i] = &c[i].c;
	}
	b.connections = cp;
	b.n_connections = NET_REPORT_MAX_GROUPS + 76;
	net_report__add(r, &b);
	net_report__stats(r, &st);
	assert_int_equal(st.connections, NET_REPORT_MAX_GROUPS + 76);
	assert_int_equal(st.groups_merged, 76);
	s = text_of(r);
	assert_non_null(strstr(s, "\nclient  10.1.0.0:80                              http1                    1"
				  "           1000              1\n"));
	rest = strstr(s, "\n-       (the rest)                               -                     1000"
			 "           1000           1000\n");
	assert_non_null(rest);
	free(s);
	net_report__free(r);
}

/* Lines as net_report__write_json writes them for the first batch. */
static void test_json_lines(void **state)
{
	char *s = NULL, *line;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);
	(void)state;

	fixture();
	assert_int_equal(net_report__write_json(&F.b[0], f), 0);
	fclose(f);
	line = strtok(s, "\n");
	assert_string_equal(line, "{\"type\":\"batch\",\"task_id\":\"net-1\",\"window_start_unix_ns\":1700000000000000000,"
				  "\"window_end_unix_ns\":1700000002000000000,\"window_ms\":2000.000,\"flows\":1,"
				  "\"connections\":1,\"exchanges\":2,\"exchanges_not_listed\":0,"
				  "\"connections_not_listed\":0,\"sampled\":1,\"sampled_not_kept\":0,"
				  "\"sampled_no_trace_context\":0,\"sampled_bad_trace_context\":2,\"calls_lost\":0,"
				  "\"exchanges_lost\":0,\"gap_bytes\":0,\"connections_with_loss\":0,\"tls_connections_unprobed\":0,\"tls_calls_unbound\":0,\"last\":false,"
				  "\"part\":0,\"parts\":1}");
	line = strtok(NULL, "\n");
	assert_string_equal(line,
		"{\"type\":\"flow\",\"window_start_unix_ns\":1700000000000000000,"
		"\"window_end_unix_ns\":1700000002000000000,\"pid\":100,\"process_name\":\"app\",\"side\":\"client\","
		"\"side_guessed\":false,\"peer_address\":\"10.0.0.2:8080\",\"local_address\":\"\",\"transport\":\"\","
		"\"peer_local\":false,\"peer_pid\":0,"
		"\"protocol\":\"http1\",\"ssl\":false,\"connections\":0,"
		"\"write\":{\"count\":1,\"bytes\":400,\"time_ns\":20000,\"untimed\":0,\"hist\":[0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,"
		"0,0,0,0,0,0,0,0,0,0,0,0,0]},"
		"\"read\":{\"count\":0,\"bytes\":0,\"time_ns\":0,\"untimed\":0,\"hist\":[]},"
		"\"write_rtt\":{\"count\":0,\"bytes\":0,\"time_us\":0,\"untimed\":0,\"hist\":[]},"
		"\"connect\":{\"count\":0,\"bytes\":0,\"time_ns\":0,\"untimed\":0,\"hist\":[]},"
		"\"close\":{\"count\":0,\"bytes\":0,\"time_ns\":0,\"untimed\":0,\"hist\":[]},"
		"\"retransmits\":0,\"drops\":0,\"requests\":2,\"errors\":0,\"client_errors\":1,\"unanswered\":0,"
		"\"statuses\":{\"200\":1,\"404\":1},\"req_bytes\":400,\"resp_bytes\":1600,"
		"\"req_size_hist\":[2,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"
		"\"resp_size_hist\":[0,2,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"
		"\"duration_hist\":[0,1,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"
		"\"duration_sum_ns\":15000000,\"latency\":{\"index\":[334,372],\"count\":[1,1]},"
		"\"latency_sum_ns\":12000000,\"latency_avg_ms\":6.000,\"latency_p50_ms\":1.965,\"latency_p99_ms\":10.194}");
	line = strtok(NULL, "\n");
	assert_string_equal(line,
		"{\"type\":\"connection\",\"pid\":100,\"process_name\":\"app\",\"id\":1,\"side\":\"client\","
		"\"side_guessed\":false,\"local_address\":\"10.0.0.1:40000\",\"remote_address\":\"10.0.0.2:8080\","
		"\"remote_local\":false,\"remote_pid\":0,\"transport\":\"tcp\",\"protocol\":\"http1\","
		"\"l7_state\":\"parsed\",\"opened_unix_ns\":1700000000100000000,\"closed_unix_ns\":1700000001100000000,"
		"\"duration_ms\":1000.000,\"writes\":2,\"reads\":3,\"bytes_written\":400,\"bytes_read\":1600,"
		"\"exchanges\":2,\"gaps\":0,\"gap_bytes\":0,\"retransmits\":0,\"drops\":0,\"srtt_us\":150,"
		"\"ssl\":true,\"tls_reads\":3,\"tls_writes\":2,\"calls_lost\":0,\"request_turns\":0,\"exchanges_lost\":0,\"tls_unprobed\":false}");
	line = strtok(NULL, "\n");
	assert_string_equal(line,
		"{\"type\":\"exchange\",\"pid\":100,\"connection_id\":1,\"protocol\":\"http1\",\"side\":\"client\","
		"\"peer_address\":\"10.0.0.2:8080\",\"req_unix_ns\":1700000000200000000,\"latency_ns\":10000000,"
		"\"latency_ms\":10.000,\"duration_ns\":11000000,\"duration_ms\":11.000,\"req_bytes\":100,"
		"\"resp_bytes\":1000,\"status\":200,\"is_error\":false,\"is_client_error\":false,\"answered\":true,"
		"\"fields\":{\"method\":\"GET\",\"uri\":\"/a\"},\"req_seq\":7,\"ssl\":true}");
	line = strtok(NULL, "\n");
	assert_non_null(line);	/* the second exchange */
	line = strtok(NULL, "\n");
	assert_string_equal(line,
		"{\"type\":\"sampled\",\"pid\":100,\"process_name\":\"app\",\"side\":\"client\","
		"\"local_address\":\"10.0.0.1:40000\",\"peer_address\":\"10.0.0.2:8080\",\"connection_id\":1,"
		"\"protocol\":\"http1\",\"req_unix_ns\":1700000000200000000,\"latency_ns\":10000000,"
		"\"latency_ms\":10.000,\"duration_ns\":11000000,\"duration_ms\":11.000,\"req_bytes\":100,"
		"\"resp_bytes\":1000,\"status\":200,\"uri\":\"/a\",\"reason\":\"slow\",\"trace_provider\":\"zipkin\","
		"\"trace_id\":\"463ac35c9f6413ad48485a3953bb6124\",\"segment_id\":\"\",\"span_id\":\"a2fb4a1d1a96d312\","
		"\"fields\":{\"method\":\"GET\",\"uri\":\"/a\"}}");
	assert_null(strtok(NULL, "\n"));
	free(s);

	/* the second batch's trace: the bodies its rule kept, as JSON strings; a URI that is not UTF-8 */
	s = NULL;
	f = open_memstream(&s, &n);
	assert_int_equal(net_report__write_json(&F.b[1], f), 0);
	fclose(f);
	line = strstr(s, "{\"type\":\"sampled\"");
	assert_non_null(line);
	assert_string_equal(line,
		"{\"type\":\"sampled\",\"pid\":202,\"process_name\":\"app\",\"side\":\"server\","
		"\"local_address\":\"10.0.0.1:40000\",\"peer_address\":\"10.0.0.7:51000\",\"connection_id\":1,"
		"\"protocol\":\"http1\",\"req_unix_ns\":1700000000600000000,\"latency_ns\":30000000,"
		"\"latency_ms\":30.000,\"duration_ns\":31000000,\"duration_ms\":31.000,\"req_bytes\":100,"
		"\"resp_bytes\":1000,\"status\":503,\"uri\":\"/pay?id=\xef\xbf\xbd\",\"reason\":\"status_5xx\","
		"\"trace_provider\":\"skywalking\",\"trace_id\":\"t-1.2.3\",\"segment_id\":\"seg-9\",\"span_id\":\"1\","
		"\"fields\":{\"method\":\"GET\",\"uri\":\"/pay?id=\xef\xbf\xbd\"},"
		"\"request\":\"POST /pay HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n{\\\"a\\\":1}\",\"request_bytes\":38,"
		"\"request_truncated\":false,\"response\":\"HTTP/1.1 503 Busy\\r\\n\\r\\nno\",\"response_bytes\":23,"
		"\"response_truncated\":true}\n");
	free(s);
}

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

static char *slurp(const char *dir, const char *name)
{
	char path[512], *s = NULL;
	size_t cap = 0;
	FILE *f;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/net-1/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	n = getdelim(&s, &cap, 0, f);
	fclose(f);
	if (n < 0) {
		free(s);
		return strdup("");
	}
	return s;
}

static void task_event(const struct exporter_backend_ops *ops, void *st, Ember__TaskEvent__State state)
{
	Ember__TaskEvent ev = EMBER__TASK_EVENT__INIT;

	ev.task = &F.task;
	ev.state = state;
	ops->on_task_event(st, &ev);
}

/* Through the file backend: network.json appended batch by batch, across a restart; network.txt and task.json at the end. */
static void test_file_backend(void **state)
{
	const struct exporter_backend_ops *ops = exporter_backend__find("file");
	struct ember_config *cfg = config__new();
	char dir[] = "/tmp/ember-test-net-XXXXXX", err[256], *want_json = NULL, *s;
	size_t wlen = 0;
	FILE *w;
	void *st;
	(void)state;

	fixture();
	assert_non_null(ops);
	assert_non_null(ops->on_network);
	assert_non_null(mkdtemp(dir));
	assert_int_equal(config__set(cfg, "ember.output_dir", dir, err, sizeof(err)), 0);
	w = open_memstream(&want_json, &wlen);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(net_report__write_json(&F.b[i], w), 0);
	fclose(w);

	st = ops->init(cfg, err, sizeof(err));
	assert_non_null(st);
	task_event(ops, st, EMBER__TASK_EVENT__STATE__STARTED);
	ops->on_network(st, &F.b[0]);
	ops->on_network(st, &F.b[1]);
	ops->tick(st, 0, 0);
	s = slurp(dir, "network.txt");	/* the summary so far, for a look while the task runs */
	assert_non_null(s);
	assert_non_null(strstr(s, "2 batches from "));
	free(s);
	assert_null(slurp(dir, "task.json"));
	ops->free(st);	/* an exporter restart: the summary comes back from network.json */

	st = ops->init(cfg, err, sizeof(err));
	assert_non_null(st);
	ops->on_network(st, &F.b[2]);
	task_event(ops, st, EMBER__TASK_EVENT__STATE__FINISHED);
	s = slurp(dir, "network.json");
	assert_string_equal(s, want_json);
	free(s);
	s = slurp(dir, "network.txt");
	assert_string_equal(s, want_txt);
	free(s);
	s = slurp(dir, "task.json");
	assert_string_equal(s, "{\"task_id\":\"net-1\",\"kind\":\"network\",\"state\":\"finished\","
			       "\"start_unix_ms\":1700000000000,\"duration_ms\":4000,\"batches\":3,\"flows\":3,"
			       "\"connections\":4,\"exchanges\":5,\"exchanges_lost\":0,\"calls_lost\":0,\"gap_bytes\":0,"
			       "\"connections_with_loss\":0,\"tls_connections_unprobed\":0,\"tls_calls_unbound\":0,\"attach_point\":\"\"}\n");
	free(s);
	assert_null(slurp(dir, "network.folded"));
	ops->free(st);
	free(want_json);
	config__free(cfg);
	nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

static uint64_t counter(const struct exporter_backend_ops *ops, void *st, const char *name)
{
	struct backend_counter c[32];
	unsigned n = ops->counters(st, c, 32);

	for (unsigned i = 0; i < n; i++)
		if (!strcmp(c[i].name, name))
			return c[i].value;
	fail_msg("no counter %s", name);
	return 0;
}

/* A batch that does not fit goes into network.json not at all: the file ends on the last whole
 * batch (no torn line), the failure is counted, and the next batch that fits follows it.  The
 * file size limit cuts the write at a chosen byte, as a full disk does. */
static void test_file_backend_whole_batches(void **state)
{
	const struct exporter_backend_ops *ops = exporter_backend__find("file");
	struct ember_config *cfg = config__new();
	char dir[] = "/tmp/ember-test-net-XXXXXX", err[256], path[600], *j[3] = { 0 }, *s, *want;
	size_t jlen[3] = { 0 };
	struct rlimit old, lim;
	struct stat sb;
	void *st;
	(void)state;

	fixture();
	assert_non_null(mkdtemp(dir));
	assert_int_equal(config__set(cfg, "ember.output_dir", dir, err, sizeof(err)), 0);
	for (unsigned i = 0; i < 3; i++) {
		FILE *w = open_memstream(&j[i], &jlen[i]);
		assert_int_equal(net_report__write_json(&F.b[i], w), 0);
		fclose(w);
	}
	assert_true(jlen[1] > 2);
	st = ops->init(cfg, err, sizeof(err));
	assert_non_null(st);
	task_event(ops, st, EMBER__TASK_EVENT__STATE__STARTED);
	ops->on_network(st, &F.b[0]);
	snprintf(path, sizeof(path), "%s/net-1/network.json", dir);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal((size_t)sb.st_size, jlen[0]);

	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = jlen[0] + jlen[1] / 2;	/* the second batch's write stops half way */
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	ops->on_network(st, &F.b[1]);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(counter(ops, st, "file_write_errors"), 1);
	s = slurp(dir, "network.json");
	assert_string_equal(s, j[0]);
	free(s);

	ops->on_network(st, &F.b[2]);
	assert_int_equal(counter(ops, st, "file_write_errors"), 1);
	s = slurp(dir, "network.json");
	assert_int_equal(asprintf(&want, "%s%s", j[0], j[2]) > 0, 1);
	assert_string_equal(s, want);
	free(want);
	free(s);
	/* The summary has the batch network.json could not take, and says so. */
	task_event(ops, st, EMBER__TASK_EVENT__STATE__FINISHED);
	s = slurp(dir, "network.txt");
	assert_non_null(s);
	assert_int_equal(asprintf(&want, "LOST: 1 report batch(es) with %zu exchange(s) could not be appended to "
				 "network.json", F.b[1].n_exchanges) > 0, 1);
	assert_non_null(strstr(s, want));
	assert_null(strstr(s, "Nothing lost"));
	free(want);
	free(s);
	ops->free(st);
	for (unsigned i = 0; i < 3; i++)
		free(j[i]);
	config__free(cfg);
	nftw(dir, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

/*
 * The exchange lines are written without json-c (net_line): the bytes must
 * be json-c's for the same members, whatever the strings hold (quotes,
 * backslashes, slashes, every control byte, DEL, UTF-8 and stray high
 * bytes), with negative and large numbers and a field name given twice.
 */
static struct json_object *jc_exchange(const Ember__NetExchange *e)
{
	struct json_object *o = json_object_new_object(), *f = json_object_new_object();
	char ms[32];

	json_object_object_add(o, "type", json_object_new_string("exchange"));
	json_object_object_add(o, "pid", json_object_new_uint64(e->pid));
	json_object_object_add(o, "connection_id", json_object_new_uint64(e->connection_id));
	json_object_object_add(o, "protocol", json_object_new_string(e->protocol));
	json_object_object_add(o, "side", json_object_new_string(e->side));
	json_object_object_add(o, "peer_address", json_object_new_string(e->peer_address));
	json_object_object_add(o, "req_unix_ns", json_object_new_uint64(e->req_unix_ns));
	json_object_object_add(o, "latency_ns", json_object_new_uint64(e->latency_ns));
	snprintf(ms, sizeof(ms), "%llu.%03llu", (unsigned long long)(e->latency_ns / 1000000),
		 (unsigned long long)(e->latency_ns / 1000 % 1000));
	json_object_object_add(o, "latency_ms", json_object_new_double_s(0, ms));
	json_object_object_add(o, "duration_ns", json_object_new_uint64(e->duration_ns));
	snprintf(ms, sizeof(ms), "%llu.%03llu", (unsigned long long)(e->duration_ns / 1000000),
		 (unsigned long long)(e->duration_ns / 1000 % 1000));
	json_object_object_add(o, "duration_ms", json_object_new_double_s(0, ms));
	json_object_object_add(o, "req_bytes", json_object_new_uint64(e->req_bytes));
	json_object_object_add(o, "resp_bytes", json_object_new_uint64(e->resp_bytes));
	json_object_object_add(o, "status", json_object_new_int(e->status));
	json_object_object_add(o, "is_error", json_object_new_boolean(e->is_error));
	json_object_object_add(o, "is_client_error", json_object_new_boolean(e->is_client_error));
	json_object_object_add(o, "answered", json_object_new_boolean(e->answered));
	for (size_t i = 0; i < e->n_fields; i++)
		json_object_object_add(f, e->fields[i]->name, json_object_new_string(e->fields[i]->value));
	json_object_object_add(o, "fields", f);
	json_object_object_add(o, "req_seq", json_object_new_uint64(e->req_seq));
	json_object_object_add(o, "ssl", json_object_new_boolean(e->ssl));
	return o;
}

static void test_exchange_lines_as_json_c(void **state)
{
	char nasty[300], *buf = NULL;
	size_t n = 0, len;
	Ember__Label lab[4], *labs[4] = { &lab[0], &lab[1], &lab[2], &lab[3] };
	Ember__NetExchange x[3], *xs[3] = { &x[0], &x[1], &x[2] };
	Ember__NetworkBatch b;
	FILE *f;

	(void)state;
	for (int i = 1; i < 256; i++)
		nasty[i - 1] = (char)i;          /* every byte but NUL, in order */
	strcpy(nasty + 255, "\"\\/ é \xff\x80");
	for (int i = 0; i < 4; i++)
		ember__label__init(&lab[i]);
	lab[0].name = "method"; lab[0].value = "GET";
	lab[1].name = "uri"; lab[1].value = nasty;
	lab[2].name = "method"; lab[2].value = "POST";   /* given twice: first place, last value */
	lab[3].name = "host"; lab[3].value = "";
	for (int i = 0; i < 3; i++) {
		ember__net_exchange__init(&x[i]);
		x[i].pid = 4242 + i;
		x[i].connection_id = UINT64_MAX - i;
		x[i].protocol = "http1";
		x[i].side = i ? "client" : "server";
		x[i].peer_address = i == 1 ? nasty : "10.0.0.1:80";
		x[i].req_unix_ns = T0 + i;
		x[i].latency_ns = i * 1234567ull;
		x[i].duration_ns = 987654321ull * i + 999;
		x[i].req_bytes = 100; x[i].resp_bytes = 1ull << 40;
		x[i].status = i == 2 ? -1 : 200;
		x[i].is_error = i == 1; x[i].is_client_error = i == 2; x[i].answered = i != 2;
		x[i].req_seq = i + 1;
		x[i].ssl = i == 0;
		x[i].fields = i == 2 ? NULL : labs;
		x[i].n_fields = i == 2 ? 0 : 4;
	}
	ember__network_batch__init(&b);
	b.exchanges = xs;
	b.n_exchanges = 3;
	f = open_memstream(&buf, &n);
	assert_non_null(f);
	assert_int_equal(net_report__write_json(&b, f), 0);
	fclose(f);
	len = 0;
	for (int i = 0; i < 3; i++) {
		struct json_object *o = jc_exchange(&x[i]);
		const char *want = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		const char *line = strstr(buf + len, "{\"type\":\"exchange\"");
		size_t wl = strlen(want);

		assert_non_null(line);
		if (strncmp(line, want, wl) || line[wl] != '\n')
			fail_msg("exchange %d:\n  net_line %.*s\n  json-c   %s", i, (int)(strchr(line, '\n') - line), line, want);
		len = (size_t)(line - buf) + wl + 1;
		json_object_put(o);
	}
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_loss),
		cmocka_unit_test(test_parts_add_up),
		cmocka_unit_test(test_json_lines),
		cmocka_unit_test(test_exchange_lines_as_json_c),
		cmocka_unit_test(test_file_backend),
		cmocka_unit_test(test_file_backend_whole_batches),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
