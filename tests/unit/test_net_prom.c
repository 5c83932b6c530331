/* exporter/net_prom: NETWORK batches added up into cumulative Prometheus
 * series: the exact /metrics text after batches of two shards and two
 * intervals, the series cap and expiry.  Every rendering also goes through
 * the independent grammar checker (tests/fuzz/prom_grammar.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/net_prom.h"
#include "tests/fuzz/prom_grammar.h"
#include "tests/unit/net_testlib.h"

static const char *render(struct prom_table *t, struct prom_buf *b)
{
	char why[256];

	assert_int_equal(prom_table__render(t, b), 0);
	if (prom_grammar_check(b->p, b->len, why, sizeof(why)))
		fail_msg("grammar: %s in:\n%s", why, b->p);
	return b->p;
}

/* Upper bounds of Rover's buckets as Prometheus shows them (the next bucket's lower bound, base units). */
static const char *const le_l4[NET_L4_BUCKETS - 1] = {
	"1e-05", "5e-05", "0.0001", "0.0005", "0.001", "0.0012", "0.0015", "0.0017", "0.002", "0.0025", "0.003",
	"0.005", "0.007", "0.01", "0.013", "0.016", "0.02", "0.025", "0.03", "0.035", "0.04", "0.045", "0.05",
	"0.07", "0.1", "0.15", "0.2", "0.3", "0.5", "1", "2", "3", "5",
};
static const char *const le_size[NET_SIZE_BUCKETS - 1] = {
	"512", "1048", "1536", "2048", "3072", "5120", "8192", "10240", "15360", "20480", "35840", "51200",
	"76800", "102400", "204800", "512000", "819200", "1048576", "1572864", "2097152", "5242880", "10485760",
	"20971520", "52428800",
};
static const char *const le_dur[NET_DURATION_BUCKETS - 1] = {
	"0.002", "0.005", "0.01", "0.015", "0.02", "0.025", "0.03", "0.04", "0.045", "0.05", "0.06", "0.065",
	"0.07", "0.08", "0.09", "0.1", "0.11", "0.13", "0.15", "0.17", "0.2", "0.23", "0.26", "0.29", "0.33",
	"0.38", "0.43", "0.48", "0.5", "0.6", "0.7", "0.8", "0.9", "1", "1.1", "1.3", "1.5", "1.8", "2", "5", "10",
	"15", "20", "30",
};

/* A family's HELP/TYPE lines, then one histogram series with observations per bucket index. */
static void want_hist(FILE *w, const char *name, const char *help, const char *labels, const char *const *les,
		      unsigned n, const unsigned *idx, unsigned nidx, const char *sum)
{
	uint64_t cum = 0;

	fprintf(w, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	for (unsigned i = 0; i < n; i++) {
		for (unsigned k = 0; k < nidx; k++)
			cum += idx[k] == i;
		fprintf(w, "%s_bucket{%s,le=\"%s\"} %llu\n", name, labels, les[i], (unsigned long long)cum);
	}
	fprintf(w, "%s_bucket{%s,le=\"+Inf\"} %u\n%s_sum{%s} %s\n%s_count{%s} %u\n", name, labels, nidx, name, labels,
		sum, name, labels, nidx);
}

static void want_counter(FILE *w, const char *name, const char *help, const char *labels, const char *value)
{
	fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s{%s} %s\n", name, help, name, name, labels, value);
}

static void batch_of(Ember__NetworkBatch *b, Ember__NetFlow **fp, struct tflow *t)
{
	ember__network_batch__init(b);
	fp[0] = &t->f;
	b->flows = fp;
	b->n_flows = 1;
}

static void test_cumulative_text(void **state)
{
	static struct tflow a1, a2, s1;
	static const char la[] = "client_process_id=\"100\",is_ssl=\"false\",protocol=\"http1\","
				 "server_address=\"10.0.0.2:8080\",side=\"client\"";
	static const char ls[] = "client_local=\"true\",is_ssl=\"true\",protocol=\"mysql\",server_process_id=\"201\","
				 "side=\"server\"";
	struct prom_table *t = prom_table__new(0);
	struct net_prom *np = net_prom__new(0);
	struct prom_buf buf = { 0 };
	Ember__NetworkBatch b;
	Ember__NetFlow *fp[1];
	struct net_prom_stats st;
	char *want = NULL;
	size_t wlen = 0;
	FILE *w = open_memstream(&want, &wlen);
	(void)state;

	assert_non_null(t);
	assert_non_null(np);
	/* interval 1, analyzer 0: a client's HTTP/1 flow */
	tflow_init(&a1, 100, "client", "http1");
	tflow_call(&a1.write, 20000, 100, 0);
	a1.f.retransmits = 2;
	tflow_exchange(&a1, 200, 100, 1000, 12000000, 10000000);
	batch_of(&b, fp, &a1);
	net_prom__add_batch(np, &b, t, 1000);
	/* interval 1, analyzer 1: a server's MySQL flow from a local client */
	tflow_init(&s1, 201, "server", "mysql");
	s1.f.ssl = 1;
	s1.f.peer_local = 1;
	tflow_call(&s1.read, 1000000, 50, 0);
	batch_of(&b, fp, &s1);
	net_prom__add_batch(np, &b, t, 1000);
	/* interval 2, analyzer 0: the same client flow again */
	tflow_init(&a2, 100, "client", "http1");
	tflow_call(&a2.write, 60000, 300, 0);
	tflow_exchange(&a2, 500, 300, 600, 3000000, 2000000);
	batch_of(&b, fp, &a2);
	net_prom__add_batch(np, &b, t, 3000);

	want_hist(w, "ember_net_http1_duration_seconds", "HTTP/1 exchange duration, first request byte to response", la,
		  le_dur, NET_DURATION_BUCKETS - 1, (const unsigned[]){ 3, 1 }, 2, "0.015");
	want_hist(w, "ember_net_http1_request_size_bytes", "HTTP/1 request sizes", la, le_size, NET_SIZE_BUCKETS - 1,
		  (const unsigned[]){ 0, 0 }, 2, "400");
	want_counter(w, "ember_net_http1_requests_total", "HTTP/1 requests", la, "2");
	want_hist(w, "ember_net_http1_response_size_bytes", "HTTP/1 response sizes", la, le_size,
		  NET_SIZE_BUCKETS - 1, (const unsigned[]){ 1, 1 }, 2, "1600");
	fprintf(w, "# HELP ember_net_http1_responses_total HTTP/1 responses by status code\n"
		   "# TYPE ember_net_http1_responses_total counter\n");
	fprintf(w, "ember_net_http1_responses_total{client_process_id=\"100\",code=\"200\",%s} 1\n",
		la + strlen("client_process_id=\"100\","));
	fprintf(w, "ember_net_http1_responses_total{client_process_id=\"100\",code=\"500\",%s} 1\n",
		la + strlen("client_process_id=\"100\","));
	want_counter(w, "ember_net_read_bytes_total", "Bytes the local process read from network sockets", ls, "50");
	want_hist(w, "ember_net_read_duration_seconds", "Time spent in socket read calls (_count: the calls)", ls, le_l4,
		  NET_L4_BUCKETS - 1, (const unsigned[]){ 5 }, 1, "0.001");
	want_counter(w, "ember_net_retransmits_total", "TCP segments retransmitted", la, "2");
	want_counter(w, "ember_net_write_bytes_total", "Bytes the local process wrote to network sockets", la, "400");
	want_hist(w, "ember_net_write_duration_seconds", "Time spent in socket write calls (_count: the calls)", la,
		  le_l4, NET_L4_BUCKETS - 1, (const unsigned[]){ 1, 2 }, 2, "8e-05");
	fclose(w);
	assert_string_equal(render(t, &buf), want);

	net_prom__stats(np, &st);
	assert_int_equal(st.flows, 3);
	assert_int_equal(st.series, 11);
	assert_int_equal(st.series_added, 11);
	assert_int_equal(st.series_dropped, 0);

	/* Forgotten after max_age without updates: back from zero when seen again. */
	assert_int_equal(net_prom__expire(np, 1000 + 60000, 60000), 0);
	/* the server's two, the client's retransmits and 200s: not updated in interval 2 */
	assert_int_equal(net_prom__expire(np, 1001 + 60000, 60000), 4);
	assert_int_equal(net_prom__expire(np, 3001 + 60000, 60000), 7);
	assert_int_equal(prom_table__expire(t, 3001 + 60000, 1), 11);
	batch_of(&b, fp, &s1);
	net_prom__add_batch(np, &b, t, 70000);
	render(t, &buf);
	assert_non_null(strstr(buf.p, "\nember_net_read_bytes_total{" "client_local=\"true\",is_ssl=\"true\","
				      "protocol=\"mysql\",server_process_id=\"201\",side=\"server\"} 50\n"));
	net_prom__stats(np, &st);
	assert_int_equal(st.series, 2);
	assert_int_equal(st.series_expired, 11);
	free(want);
	prom_buf__release(&buf);
	net_prom__free(np);
	prom_table__free(t);
}

/* Over the cap: new series are refused and counted, the others keep adding up. */
static void test_series_cap(void **state)
{
	static struct tflow f;
	struct prom_table *t = prom_table__new(0);
	struct net_prom *np = net_prom__new(2);
	struct prom_buf buf = { 0 };
	Ember__NetworkBatch b;
	Ember__NetFlow *fp[1];
	struct net_prom_stats st;
	(void)state;

	tflow_init(&f, 7, "client", "");
	tflow_call(&f.write, 1000, 10, 0);	/* write bytes, then (after drops) write duration */
	f.f.drops = 1;				/* the second series: the histogram is refused */
	batch_of(&b, fp, &f);
	net_prom__add_batch(np, &b, t, 1);
	net_prom__add_batch(np, &b, t, 2);
	net_prom__stats(np, &st);
	assert_int_equal(st.series, 2);
	assert_int_equal(st.series_dropped, 2);
	render(t, &buf);
	assert_non_null(strstr(buf.p, "\nember_net_write_bytes_total{client_process_id=\"7\",is_ssl=\"false\","
				      "protocol=\"unknown\",server_address=\"10.0.0.2:8080\",side=\"client\"} 20\n"));
	assert_non_null(strstr(buf.p, "\nember_net_drops_total{"));
	assert_null(strstr(buf.p, "ember_net_write_duration_seconds"));
	/* a flow without a pid is counted, not added */
	f.f.pid = 0;
	net_prom__add_batch(np, &b, t, 3);
	net_prom__stats(np, &st);
	assert_int_equal(st.flows, 2);
	assert_int_equal(st.flows_invalid, 1);
	prom_buf__release(&buf);
	net_prom__free(np);
	prom_table__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cumulative_text),
		cmocka_unit_test(test_series_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
