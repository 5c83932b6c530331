/* exporter/net_meters: Rover's network meters from hand-built NetFlows: exact
 * names and order, label order and values, averages, histogram bounds, and
 * the omission rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/net_meters.h"
#include "tests/unit/net_testlib.h"

/* pids 100 and 200 are known processes, anything else is not. */
static int resolve(void *ctx, uint32_t pid, char *buf, size_t len)
{
	(void)ctx;
	if (pid != 100 && pid != 200)
		return -ENOENT;
	snprintf(buf, len, "proc-%u", pid);
	return 0;
}

static const struct net_meters_opts rover = { .prefix = "rover_net_p", .protocol = NET_PROTOCOL_ROVER,
					      .resolve = resolve };

static void check_labels(const struct net_meter *m, const char *const *want, unsigned n)
{
	assert_int_equal(m->n_labels, n);
	for (unsigned i = 0; i < n; i++) {
		assert_string_equal(m->labels[i].name, want[2 * i]);
		assert_string_equal(m->labels[i].value, want[2 * i + 1]);
	}
}

static void check_single(const struct net_meter *m, const char *name, double value)
{
	assert_string_equal(m->name, name);
	assert_int_equal(m->n_buckets, 0);
	if (fabs(m->value - value) > 1e-9 * fabs(value))
		fail_msg("%s: %.17g, want %.17g", name, m->value, value);
}

/* A client's HTTP/1 flow with every kind of call: the full list, in Rover's order. */
static void test_client_http1(void **state)
{
	static struct tflow t;
	static struct net_meter_set s;
	static const char *const common[] = { "client_process_id", "proc-100", "server_process_id", "proc-200",
					      "side", "client", "protocol", "http", "is_ssl", "false" };
	static const char *const with_code[] = { "client_process_id", "proc-100", "server_process_id", "proc-200",
						 "side", "client", "protocol", "http", "is_ssl", "false",
						 "code", "404" };
	static const char *const names[] = {
		"rover_net_p_client_write_counts_counter", "rover_net_p_client_write_bytes_counter",
		"rover_net_p_client_write_exe_time_counter", "rover_net_p_client_read_counts_counter",
		"rover_net_p_client_read_exe_time_counter", "rover_net_p_client_write_rtt_counts_counter",
		"rover_net_p_client_write_rtt_exe_time_counter", "rover_net_p_client_connect_counts_counter",
		"rover_net_p_client_connect_exe_time_counter", "rover_net_p_client_retransmit_counts_counter",
		"rover_net_p_client_write_rtt_histogram", "rover_net_p_client_write_exe_time_histogram",
		"rover_net_p_client_read_exe_time_histogram", "rover_net_p_client_connect_exe_time_histogram",
		"rover_net_p_http1_request_counter", "rover_net_p_http1_response_status_counter",
		"rover_net_p_http1_response_status_counter", "rover_net_p_http1_request_package_size_avg",
		"rover_net_p_http1_response_package_size_avg", "rover_net_p_http1_request_package_size_histogram",
		"rover_net_p_http1_response_package_size_histogram", "rover_net_p_http1_client_duration_avg",
		"rover_net_p_http1_client_duration_histogram",
	};
	const struct net_meter *m;
	(void)state;

	tflow_init(&t, 100, "client", "http1");
	t.f.peer_pid = 200;
	tflow_call(&t.write, 20000, 100, 0);
	tflow_call(&t.write, 60000, 300, 0);
	tflow_call(&t.read, 5000, 0, 0);	/* no bytes: no bytes meter */
	tflow_call(&t.rtt, 120, 0, 1);
	tflow_call(&t.rtt, 80, 0, 1);
	tflow_call(&t.connect, 1500000, 0, 0);
	t.f.retransmits = 3;			/* drops 0, closes 0: nothing */
	tflow_exchange(&t, 200, 100, 1000, 12000000, 10000000);
	tflow_exchange(&t, 404, 300, 600, 3000000, 2000000);
	tflow_exchange(&t, 200, 2000, 100, 1000000, 1000000);

	assert_int_equal(net_meters__from_flow(&t.f, &rover, &s), 0);
	assert_int_equal(s.n, sizeof(names) / sizeof(names[0]));
	for (unsigned i = 0; i < s.n; i++) {
		assert_string_equal(s.m[i].name, names[i]);
		if (i != 15 && i != 16)
			check_labels(&s.m[i], common, 5);
	}
	check_labels(&s.m[16], with_code, 6);
	assert_int_equal(s.m[15].n_labels, 6);
	check_single(&s.m[0], names[0], 2);
	check_single(&s.m[1], names[1], 400);
	check_single(&s.m[2], names[2], 40000);		/* average ns */
	assert_true(s.m[2].sum == 80000 && s.m[2].count == 2);
	check_single(&s.m[3], names[3], 1);
	check_single(&s.m[4], names[4], 5000);
	check_single(&s.m[5], names[5], 2);
	check_single(&s.m[6], names[6], 100);		/* average us */
	assert_int_equal(s.m[6].unit, NET_UNIT_US);
	check_single(&s.m[7], names[7], 1);
	check_single(&s.m[8], names[8], 1500000);
	check_single(&s.m[9], names[9], 3);

	/* RTT: the L4 bounds in us; 80 us in [50, 100), 120 us in [100, 500) */
	m = &s.m[10];
	assert_int_equal(m->n_buckets, NET_L4_BUCKETS);
	assert_int_equal(m->unit, NET_UNIT_US);
	assert_true(m->lower[0] == 0 && m->lower[1] == 10 && m->lower[2] == 50 && m->lower[3] == 100);
	assert_true(m->lower[NET_L4_BUCKETS - 1] == 5000000);
	for (unsigned i = 0; i < NET_L4_BUCKETS; i++)
		assert_int_equal(m->counts[i], i == 2 || i == 3 ? 1 : 0);
	assert_true(m->sum == 200 && m->count == 2);
	/* write time: ns bounds; 20 us in [10 us, 50 us), 60 us in [50 us, 100 us) */
	m = &s.m[11];
	assert_true(m->lower[1] == 10000 && m->lower[NET_L4_BUCKETS - 1] == 5e9);
	assert_int_equal(m->counts[1], 1);
	assert_int_equal(m->counts[2], 1);
	assert_true(m->sum == 80000 && m->count == 2);
	assert_int_equal(s.m[13].counts[7], 1);	/* 1.5 ms */

	check_single(&s.m[14], names[14], 3);
	check_single(&s.m[15], names[15], 2);
	assert_string_equal(s.m[15].labels[5].value, "200");
	check_single(&s.m[16], names[16], 1);
	check_single(&s.m[17], names[17], 800);
	check_single(&s.m[18], names[18], 1700.0 / 3);
	m = &s.m[19];
	assert_int_equal(m->n_buckets, NET_SIZE_BUCKETS);
	assert_true(m->lower[0] == 256 && m->lower[2] == 1048 && m->lower[NET_SIZE_BUCKETS - 1] == 52428800);
	assert_int_equal(m->counts[0], 2);	/* 100 and 300 bytes: under 512 */
	assert_int_equal(m->counts[3], 1);	/* 2000 bytes: [1536, 2048) */
	check_single(&s.m[21], names[21], 16.0 / 3);	/* ms */
	m = &s.m[22];
	assert_int_equal(m->n_buckets, NET_DURATION_BUCKETS);
	assert_int_equal(m->unit, NET_UNIT_MS);
	assert_int_equal(m->counts[0], 1);	/* 1 ms */
	assert_int_equal(m->counts[1], 1);	/* 3 ms: [2, 5) */
	assert_int_equal(m->counts[3], 1);	/* 12 ms: [10, 15) */
	assert_true(m->sum == 16 && m->count == 3);
	assert_int_equal(s.truncated, 0);
	assert_int_equal(s.bad_hists, 0);
}

/* A server's flow: server_ names, the peer as client_local or client_address, no HTTP meters for mysql. */
static void test_server_and_peer_labels(void **state)
{
	static struct tflow t;
	static struct net_meter_set s;
	static const char *const local[] = { "server_process_id", "proc-200", "client_local", "true", "side",
					     "server", "protocol", "unknown", "is_ssl", "true" };
	static const char *const addr[] = { "server_process_id", "proc-200", "client_address", "10.0.0.2:0", "side",
					    "server", "protocol", "mysql", "is_ssl", "true" };
	struct net_meters_opts parser = { .prefix = "my_net", .protocol = NET_PROTOCOL_PARSER, .resolve = resolve };
	(void)state;

	tflow_init(&t, 200, "server", "mysql");
	t.f.ssl = 1;
	t.f.peer_pid = 300;	/* followed by the analyzer but unknown to the resolver */
	t.f.peer_local = 1;
	t.f.peer_address = "10.0.0.2:0";
	tflow_call(&t.read, 1000, 64, 0);
	t.f.drops = 2;
	tflow_exchange(&t, -1, 10, 20, 1000000, 500000);
	assert_int_equal(net_meters__from_flow(&t.f, &rover, &s), 0);
	assert_int_equal(s.n, 5);
	assert_string_equal(s.m[0].name, "rover_net_p_server_read_counts_counter");
	assert_string_equal(s.m[1].name, "rover_net_p_server_read_bytes_counter");
	assert_string_equal(s.m[2].name, "rover_net_p_server_read_exe_time_counter");
	assert_string_equal(s.m[3].name, "rover_net_p_server_drop_counts_counter");
	assert_string_equal(s.m[4].name, "rover_net_p_server_read_exe_time_histogram");
	for (unsigned i = 0; i < s.n; i++)
		check_labels(&s.m[i], local, 5);

	/* not local either: the address; the parser's name as protocol; another prefix */
	t.f.peer_local = 0;
	assert_int_equal(net_meters__from_flow(&t.f, &parser, &s), 0);
	assert_int_equal(s.n, 5);
	assert_string_equal(s.m[0].name, "my_net_server_read_counts_counter");
	check_labels(&s.m[0], addr, 5);
}

static void test_roles_and_protocols(void **state)
{
	static struct tflow t;
	static struct net_meter_set s;
	struct net_meters_opts parser = rover;
	(void)state;

	parser.protocol = NET_PROTOCOL_PARSER;
	/* unknown role: reported as a client's; http2 is "http" for the OAP */
	tflow_init(&t, 100, "", "http2");
	tflow_call(&t.write, 100, 1, 0);
	assert_int_equal(net_meters__from_flow(&t.f, &rover, &s), 0);
	assert_string_equal(s.m[0].name, "rover_net_p_client_write_counts_counter");
	assert_string_equal(s.m[0].labels[0].name, "client_process_id");
	assert_string_equal(s.m[0].labels[1].name, "server_address");
	assert_string_equal(s.m[0].labels[1].value, "10.0.0.2:8080");
	assert_string_equal(s.m[0].labels[3].value, "http");
	assert_int_equal(net_meters__from_flow(&t.f, &parser, &s), 0);
	assert_string_equal(s.m[0].labels[3].value, "http2");
	/* no parser: unknown either way */
	t.f.protocol = "";
	assert_int_equal(net_meters__from_flow(&t.f, &rover, &s), 0);
	assert_string_equal(s.m[0].labels[3].value, "unknown");
	assert_int_equal(net_meters__from_flow(&t.f, &parser, &s), 0);
	assert_string_equal(s.m[0].labels[3].value, "unknown");
	/* a local process nobody knows: nothing */
	t.f.pid = 300;
	assert_int_equal(net_meters__from_flow(&t.f, &rover, &s), -ENOENT);
	assert_int_equal(net_meters__from_flow(NULL, &rover, &s), -EINVAL);
}

/* Zero counts, empty or all-zero histograms and zero averages are left out; a bad histogram is counted. */
static void test_omissions(void **state)
{
	static struct tflow t;
	static struct net_meter_set s;
	static uint64_t short_hist[3] = { 1, 0, 0 };
	char prefix[NET_METER_NAME_MAX];
	struct net_meters_opts o = rover;
	(void)state;

	tflow_init(&t, 100, "client", "http1");
	assert_int_equal(net_meters__from_flow(&t.f, &rover, &s), 0);
	assert_int_equal(s.n, 0);
	/* a count with zero time and zero bytes: only the count */
	t.close.count = 4;
	t.close.n_hist = NET_L4_BUCKETS;	/* all zero: no histogram */
	assert_int_equal(net_meters__from_flow(&t.f, &rover, &s), 0);
	assert_int_equal(s.n, 1);
	check_single(&s.m[0], "rover_net_p_client_close_counts_counter", 4);
	/* a histogram of the wrong length is left out and counted */
	t.write.count = 1;
	t.write.time_ns = 7;
	t.write.hist = short_hist;
	t.write.n_hist = 3;
	assert_int_equal(net_meters__from_flow(&t.f, &rover, &s), 0);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.m[0].name, "rover_net_p_client_write_counts_counter");
	assert_string_equal(s.m[1].name, "rover_net_p_client_write_exe_time_counter");
	assert_int_equal(s.bad_hists, 1);
	/* calls of unknown time (socket layer): the average is the timed calls' */
	tflow_init(&t, 100, "client", "http1");
	t.read.count = 5;
	t.read.untimed = 3;
	t.read.time_ns = 800;
	assert_int_equal(net_meters__from_flow(&t.f, &rover, &s), 0);
	assert_int_equal(s.n, 2);
	check_single(&s.m[0], "rover_net_p_client_read_counts_counter", 5);
	check_single(&s.m[1], "rover_net_p_client_read_exe_time_counter", 400);
	/* none timed: no average */
	t.read.untimed = 5;
	t.read.time_ns = 0;
	assert_int_equal(net_meters__from_flow(&t.f, &rover, &s), 0);
	assert_int_equal(s.n, 1);
	/* unanswered requests only: the request counter, no averages or histograms */
	tflow_init(&t, 100, "client", "http1");
	tflow_exchange(&t, 200, 0, 0, 0, 0);
	assert_int_equal(net_meters__from_flow(&t.f, &rover, &s), 0);
	assert_int_equal(s.n, 1);
	check_single(&s.m[0], "rover_net_p_http1_request_counter", 1);
	/* a prefix that leaves no room */
	memset(prefix, 'p', sizeof(prefix) - 1);
	prefix[sizeof(prefix) - 1] = 0;
	o.prefix = prefix;
	assert_int_equal(net_meters__from_flow(&t.f, &o, &s), -ENAMETOOLONG);
}

/* More status codes than the set holds: what fits is kept in order, the rest counted. */
static void test_many_statuses(void **state)
{
	static struct tflow t;
	static struct net_meter_set s;
	(void)state;

	tflow_init(&t, 100, "server", "http1");
	for (int i = 0; i < TFLOW_MAX_STATUSES; i++)
		tflow_exchange(&t, 100 + i, 10, 10, 1000000, 1000000);
	assert_int_equal(net_meters__from_flow(&t.f, &rover, &s), 0);
	assert_int_equal(s.n, NET_METERS_MAX);
	assert_string_equal(s.m[0].name, "rover_net_p_http1_request_counter");
	assert_string_equal(s.m[1].labels[5].value, "100");
	/* the statuses leave room for the averages and histograms: 57 fit, 7 do not */
	assert_string_equal(s.m[57].labels[5].value, "156");
	assert_string_equal(s.m[58].name, "rover_net_p_http1_request_package_size_avg");
	assert_string_equal(s.m[NET_METERS_MAX - 1].name, "rover_net_p_http1_server_duration_histogram");
	assert_int_equal(s.truncated, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_client_http1),
		cmocka_unit_test(test_server_and_peer_labels),
		cmocka_unit_test(test_roles_and_protocols),
		cmocka_unit_test(test_omissions),
		cmocka_unit_test(test_many_statuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
