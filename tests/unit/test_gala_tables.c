/* exporter/gala_tables: gala-gopher's l7 and tcp_link records from hand-built
 * NetFlows: keys for each side, IPv6 addresses, UDP, the rpc metrics'
 * arithmetic and the omission of empty tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "exporter/gala_tables.h"

static const char *key(const struct gala_record *r, const char *name)
{
	for (unsigned i = 0; i < r->nk; i++)
		if (!strcmp(r->keys[i].name, name))
			return r->keys[i].value;
	return NULL;
}

static double metric(const struct gala_record *r, const char *name)
{
	for (unsigned i = 0; i < r->nm; i++)
		if (!strcmp(r->metrics[i].name, name))
			return r->metrics[i].value;
	return -1;
}

static void test_server_flow(void **state)
{
	Ember__NetCalls w = EMBER__NET_CALLS__INIT, rd = EMBER__NET_CALLS__INIT;
	Ember__NetFlow f = EMBER__NET_FLOW__INIT;
	struct gala_record r[GALA_L7_TABLES];

	(void)state;
	w.count = 10, w.bytes = 4000, rd.count = 12, rd.bytes = 900;
	f.pid = 42, f.side = "server", f.peer_address = "10.0.0.9:0", f.local_address = "10.0.0.1:8080";
	f.transport = "tcp", f.protocol = "http1", f.ssl = 1, f.write = &w, f.read = &rd;
	f.requests = 10, f.unanswered = 2, f.errors = 3, f.latency_sum_ns = 8000;
	assert_int_equal(gala_tables__l7(&f, 2000, r), 2);
	assert_string_equal(r[0].t->table, "l7_link");
	assert_string_equal(r[1].t->table, "l7_rpc");
	assert_string_equal(r[1].t->entity, "l7");
	assert_string_equal(key(&r[0], "tgid"), "42");
	assert_string_equal(key(&r[0], "client_ip"), "10.0.0.9");
	assert_string_equal(key(&r[0], "server_ip"), "10.0.0.1");
	assert_string_equal(key(&r[0], "server_port"), "8080");
	assert_string_equal(key(&r[0], "l4_role"), "tcp_server");
	assert_string_equal(key(&r[0], "l7_role"), "server");
	assert_string_equal(key(&r[0], "protocol"), "http");
	assert_string_equal(r[0].labels[0].value, "1");
	assert_true(metric(&r[0], "bytes_sent") == 4000 && metric(&r[0], "bytes_recv") == 900);
	assert_true(metric(&r[0], "segs_sent") == 10 && metric(&r[0], "segs_recv") == 12);
	assert_true(metric(&r[1], "req_count") == 10 && metric(&r[1], "resp_count") == 8);
	assert_true(metric(&r[1], "throughput_req") == 5 && metric(&r[1], "throughput_resp") == 4);
	assert_true(metric(&r[1], "latency_sum") == 8000 && metric(&r[1], "latency_avg") == 1000);
	assert_true(metric(&r[1], "err_count") == 3 && metric(&r[1], "err_ratio") == 30);
}

static void test_client_v6_udp_and_omissions(void **state)
{
	Ember__NetCalls w = EMBER__NET_CALLS__INIT;
	Ember__NetFlow f = EMBER__NET_FLOW__INIT;
	struct gala_record r[GALA_L7_TABLES];

	(void)state;
	w.count = 1, w.bytes = 40;
	f.pid = 7, f.side = "client", f.peer_address = "[2001:db8::1]:53", f.local_address = "[2001:db8::2]:0";
	f.transport = "udp", f.protocol = "dns", f.write = &w, f.requests = 1, f.latency_sum_ns = 300;
	assert_int_equal(gala_tables__l7(&f, 1000, r), 2);
	assert_string_equal(key(&r[1], "client_ip"), "2001:db8::2");
	assert_string_equal(key(&r[1], "server_ip"), "2001:db8::1");
	assert_string_equal(key(&r[1], "server_port"), "53");
	assert_string_equal(key(&r[1], "l4_role"), "udp");
	assert_string_equal(key(&r[1], "l7_role"), "client");
	assert_string_equal(key(&r[1], "protocol"), "dns");
	/* no parser claimed it: no l7_rpc; no traffic: nothing */
	f.protocol = "";
	assert_int_equal(gala_tables__l7(&f, 1000, r), 1);
	assert_string_equal(key(&r[0], "protocol"), "unknown");
	f.write = NULL;
	assert_int_equal(gala_tables__l7(&f, 1000, r), 0);
	/* malformed addresses stay in bounds */
	f.write = &w, f.peer_address = "nonsense", f.local_address = NULL;
	assert_int_equal(gala_tables__l7(&f, 0, r), 1);
	assert_string_equal(key(&r[0], "server_ip"), "nonsense");
	assert_string_equal(key(&r[0], "server_port"), "0");
	assert_string_equal(key(&r[0], "client_ip"), "");
}

static void test_tcp_link(void **state)
{
	Ember__NetCalls w = EMBER__NET_CALLS__INIT, rd = EMBER__NET_CALLS__INIT, rtt = EMBER__NET_CALLS__INIT;
	Ember__NetFlow f = EMBER__NET_FLOW__INIT;
	struct gala_record r[GALA_TCP_TABLES];

	(void)state;
	w.count = 4, w.bytes = 400, rd.count = 5, rd.bytes = 50, rtt.count = 4, rtt.time_ns = 100; /* us */
	f.pid = 9, f.side = "server", f.peer_address = "10.0.0.9:0", f.local_address = "10.0.0.1:443";
	f.transport = "tcp", f.write = &w, f.read = &rd, f.write_rtt = &rtt, f.retransmits = 2;
	assert_int_equal(gala_tables__tcp(&f, r), 3);
	assert_string_equal(r[0].t->table, "tcp_tx_rx");
	assert_string_equal(r[0].t->entity, "tcp_link");
	assert_string_equal(key(&r[0], "role"), "0");
	assert_string_equal(key(&r[0], "server_port"), "443");
	assert_string_equal(key(&r[0], "client_port"), "0");
	assert_string_equal(key(&r[0], "protocol"), "2");
	assert_true(metric(&r[0], "rx_bytes") == 50 && metric(&r[0], "tx_bytes") == 400);
	assert_true(metric(&r[0], "segs_in") == 5 && metric(&r[0], "segs_out") == 4);
	assert_true(metric(&r[1], "srtt") == 25);
	assert_true(metric(&r[2], "retran_packets") == 2 && metric(&r[2], "sk_drops") == 0);
	f.side = "client", f.peer_address = "[::1]:8080", f.local_address = "[::1]:0", f.write_rtt = NULL;
	f.retransmits = 0;
	assert_int_equal(gala_tables__tcp(&f, r), 1);
	assert_string_equal(key(&r[0], "role"), "1");
	assert_string_equal(key(&r[0], "protocol"), "10");
	assert_string_equal(key(&r[0], "server_port"), "8080");
	f.transport = "udp";
	assert_int_equal(gala_tables__tcp(&f, r), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_server_flow),
		cmocka_unit_test(test_tcp_link),
		cmocka_unit_test(test_client_v6_udp_and_omissions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
