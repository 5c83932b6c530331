/*
 * Unit tests for analyzer/rest/rest_doc (a PUT changes the items it
 * carries, params per key, all or nothing, with gala-gopher's names taken
 * and said to be ignored) and analyzer/rest/rest_select (kernel threads are
 * never selected).  The manual's documents are its text, verbatim.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "analyzer/rest/rest_doc.h"
#include "analyzer/rest/rest_select.h"

/* The manual's "Configuring the Probe Monitoring Scope" example. */
static const char scope_example[] = "json=\n"
	"{\n"
	"    \"cmd\": {\n"
	"        \"bin\": \"/opt/gala-gopher/extend_probes/stackprobe\",\n"
	"        \"check_cmd\": \"\",\n"
	"        \"probe\": [\n"
	"            \"oncpu\",\n"
	"            \"offcpu\"\n"
	"        ]\n"
	"    },\n"
	"    \"snoopers\": {\n"
	"        \"proc_id\": [\n"
	"            101,\n"
	"            102\n"
	"        ],\n"
	"        \"proc_name\": [\n"
	"            {\n"
	"                \"comm\": \"app1\",\n"
	"                \"cmdline\": \"\",\n"
	"                \"debugging_dir\": \"\"\n"
	"            },\n"
	"            {\n"
	"                \"comm\": \"app2\",\n"
	"                \"cmdline\": \"\",\n"
	"                \"debugging_dir\": \"\"\n"
	"            }\n"
	"        ],\n"
	"        \"pod_id\": [\n"
	"            \"pod1\",\n"
	"            \"pod2\"\n"
	"        ],\n"
	"        \"container_id\": [\n"
	"            \"container1\",\n"
	"            \"container2\"\n"
	"        ]\n"
	"    }\n"
	"}";
/* "Configuring Probe Runtime Parameters" */
static const char params_example[] = "json=\n"
	"{\n"
	"    \"params\": {\n"
	"        \"report_period\": 180,\n"
	"        \"sample_period\": 180,\n"
	"        \"metrics_type\": [\n"
	"            \"raw\",\n"
	"            \"telemetry\"\n"
	"        ]\n"
	"    }\n"
	"}";
/* "Starting and Stopping Probes", its comment included */
static const char state_example[] = "json=\n"
	"{\n"
	"    \"state\": \"running\" // optional: running, stopped\n"
	"}";

static char err[512];

/* rest_doc__apply of a NUL-terminated body. */
static int apply(struct rest_doc *d, const char *body)
{
	err[0] = 0;
	return rest_doc__apply(body, strlen(body), d, err, sizeof(err));
}

static void assert_contains(const char *text, const char *want)
{
	if (!strstr(text, want))
		fail_msg("'%s' does not say '%s'", text, want);
}

/* Whether a and b are the same configuration, the answers' notes aside. */
static bool same_config(const struct rest_doc *a, const struct rest_doc *b)
{
	struct rest_doc *x = malloc(sizeof(*x)), *y = malloc(sizeof(*y));
	bool same;

	assert_non_null(x);
	assert_non_null(y);
	memcpy(x, a, sizeof(*x));
	memcpy(y, b, sizeof(*y));
	memset(x->notes, 0, sizeof(x->notes));
	memset(y->notes, 0, sizeof(y->notes));
	same = !memcmp(x, y, sizeof(*x));
	free(x);
	free(y);
	return same;
}

static struct rest_doc *new_doc(enum rest_feature f)
{
	struct rest_doc *d = malloc(sizeof(*d));

	assert_non_null(d);
	rest_doc__defaults(d, f);
	return d;
}

/* The manual's sequence: scope, then parameters, then the state, each PUT one item. */
static void test_manual_sequence(void **state)
{
	struct rest_doc *d = new_doc(REST_FLAMEGRAPH), *before = new_doc(REST_FLAMEGRAPH);
	char *get;

	(void)state;
	assert_int_equal(apply(d, scope_example), 0);
	assert_true(d->probes[REST_PROBE_ONCPU] && d->probes[REST_PROBE_OFFCPU] && !d->probes[REST_PROBE_MEM]);
	assert_int_equal(d->npids, 2);
	assert_int_equal(d->nnames, 2);
	assert_false(d->running);
	assert_contains(d->notes, "unchanged: params, state (stopped)");
	assert_contains(d->notes, "cmd.bin (ember runs no program)");

	assert_int_equal(apply(d, params_example), 0);
	assert_int_equal(d->report_period_s, 180);
	/* the scope of the PUT before is kept */
	assert_true(d->probes[REST_PROBE_ONCPU] && d->probes[REST_PROBE_OFFCPU]);
	assert_int_equal(d->npids, 2);
	assert_int_equal(d->pids[0], 101);
	assert_int_equal(d->nnames, 2);
	assert_string_equal(d->names[1].comm, "app2");
	assert_int_equal(d->npods, 2);
	assert_int_equal(d->ncontainers, 2);
	/* the answer: what stayed, and what flamegraph takes without using */
	assert_contains(d->notes, "unchanged: cmd, snoopers, state (stopped)");
	assert_contains(d->notes, "ignored by flamegraph: params.report_period, params.sample_period, params.metrics_type");

	memcpy(before, d, sizeof(*d));
	assert_int_equal(apply(d, state_example), 0);
	assert_true(d->running);
	before->running = true;
	assert_true(same_config(d, before));
	assert_contains(d->notes, "unchanged: cmd, snoopers, params");
	get = rest_doc__render(d);
	assert_non_null(get);
	assert_contains(get, "\"state\": \"running\"");
	assert_contains(get, "\"report_period\": 180");
	assert_contains(get, "\"comm\": \"app1\"");
	assert_contains(get, "\"offcpu\"");
	free(get);
	free(d);
	free(before);
}

/* Bodies refused, each with a reason, each leaving the configuration as it was. */
static void test_refusal_changes_nothing(void **state)
{
	static const struct {
		const char *body, *says;
	} bad[] = {
		{ "json={\"cmd\": {\"probe\": [\"mem\"]}, \"params\": {\"svg_period\": 5}}",
		  "params.svg_period invalid value 5, must be in [30, 600]" },
		{ "json={\"snoopers\": {\"proc_id\": [7]}, \"params\": {\"report_perod\": 60}}",
		  "params: 'report_perod' is not a parameter of gala-gopher's or ember's (flamegraph applies "
		  "perf_sample_period, svg_period, svg_dir, output_dir, flame_dir" },
		{ "json={\"params\": {\"latency_thr\": 5}}", "params.latency_thr invalid value 5, must be in [10, 100000]" },
		{ "json={\"params\": {\"kafka_port\": \"9092\"}}", "params.kafka_port must be an integer in [1, 65535]" },
		{ "json={\"params\": {\"ringbuf_map_size\": 3}}", "params.ringbuf_map_size: 3 is not a power of two" },
		{ "json={\"params\": {\"custom_param\": [{\"a\": \"b\"}]}}", "params.custom_param names parameters of "
		  "gala-gopher's custom probes" },
		{ "json={\"params\": {\"l7_protocol\": [\"http\", \"gopher\"]}}", "params.l7_protocol[1] is not one of" },
		{ "json={\"params\": {\"profiling_channel\": \"disk\"}}", "params.profiling_channel 'disk' is not one of "
		  "local, kafka" },
		{ "json={\"params\": {\"svg_dir\": \"/a/b\", \"output_dir\": \"/c/d\"}}", "name the same directory" },
		{ "json={\"params\": {\"elf_path\": \"bin/nginx\"}}", "params.elf_path 'bin/nginx' is not an absolute" },
		{ "json={\"state\": \"paused\"}", "must be running or stopped" },
		{ "json={\"cmd\": {\"probe\": []}, \"state\": \"running\"}", "state running needs a sub-item" },
		{ "json={\"cmd\": {\"bin\": \"/x\"}}", "cmd.probe is missing" },
		{ "json={\"cmd\": {\"probe\": [\"tcp_rtt\"]}}", "cmd.probe: 'tcp_rtt' is not a sub-item of flamegraph "
		  "(oncpu, offcpu, mem; taken and ignored: mem_glibc, io)" },
		{ "json={\"blacklist\": {\"proc_id\": [1]}}", "blacklist is not supported by ember" },
		{ "json={\"cmdd\": {}}", "unknown key 'cmdd'" },
		{ "json={\"state\": \"stopped\"", "not JSON" },
		{ "config={}", "not json=<document>" },
	};
	struct rest_doc *d = new_doc(REST_FLAMEGRAPH), *before = new_doc(REST_FLAMEGRAPH);

	(void)state;
	assert_int_equal(apply(d, scope_example), 0);
	assert_int_equal(apply(d, params_example), 0);
	assert_int_equal(apply(d, state_example), 0);
	memcpy(before, d, sizeof(*d));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (apply(d, bad[i].body) != -EINVAL)
			fail_msg("'%s' was taken", bad[i].body);
		assert_contains(err, bad[i].says);
		if (memcmp(d, before, sizeof(*d)))
			fail_msg("'%s', refused, changed the configuration", bad[i].body);
	}
	/* running with no sub-item: refused from the defaults too, as gala-gopher refuses it */
	rest_doc__defaults(d, REST_FLAMEGRAPH);
	memcpy(before, d, sizeof(*d));
	assert_int_equal(apply(d, state_example), -EINVAL);
	assert_contains(err, "state running needs a sub-item, and none is set: send cmd.probe");
	assert_memory_equal(d, before, sizeof(*d));
	free(d);
	free(before);
}

/* cmd and snoopers replace their item; params change the keys they name. */
static void test_items_and_keys(void **state)
{
	struct rest_doc *d = new_doc(REST_FLAMEGRAPH);
	struct rest_doc *l7 = new_doc(REST_L7);

	(void)state;
	assert_int_equal(apply(d, "json={\"params\": {\"svg_period\": 300}}"), 0);
	assert_int_equal(apply(d, "json={\"params\": {\"perf_sample_period\": 100, \"multi_instance\": 1}}"), 0);
	assert_int_equal(d->svg_period_s, 300);
	assert_int_equal(d->perf_sample_period_ms, 100);
	assert_true(d->multi_instance);
	assert_int_equal(d->report_period_s, 60);
	/* gala-gopher's name for svg_dir */
	assert_int_equal(apply(d, "json={\"params\": {\"output_dir\": \"/srv/svg\"}}"), 0);
	assert_string_equal(d->svg_dir, "/srv/svg");
	assert_string_equal(d->flame_dir, "/var/log/gala-gopher/flamegraph");

	assert_int_equal(apply(d, "json={\"snoopers\": {\"proc_id\": [5, 6]}}"), 0);
	assert_int_equal(apply(d, "json={\"snoopers\": {\"proc_name\": [{\"comm\": \"x\"}]}}"), 0);
	assert_int_equal(d->npids, 0);
	assert_int_equal(d->nnames, 1);
	assert_int_equal(apply(d, "json={\"cmd\": {\"probe\": [\"oncpu\", \"offcpu\"]}}"), 0);
	assert_int_equal(apply(d, "json={\"cmd\": {\"probe\": [\"MEM\"]}}"), 0);
	assert_true(!d->probes[REST_PROBE_ONCPU] && !d->probes[REST_PROBE_OFFCPU] && d->probes[REST_PROBE_MEM]);
	assert_int_equal(d->svg_period_s, 300);

	/* running stays running through a PUT without state */
	assert_int_equal(apply(d, "json={\"state\": \"Running\"}"), 0);
	assert_int_equal(apply(d, "json={\"params\": {\"svg_period\": 60}}"), 0);
	assert_true(d->running);
	assert_contains(d->notes, "unchanged: cmd, snoopers, state (running)");
	/* gala-gopher's spelling and case */
	assert_int_equal(apply(d, "json={\"state\": \"stoped\"}"), 0);
	assert_false(d->running);
	assert_int_equal(apply(d, "json={\"state\": \"running\"}"), 0);
	assert_int_equal(apply(d, "json={\"state\": \"STOPPED\"}"), 0);
	assert_false(d->running);

	/* l7_protocol is one key: its list replaces the last */
	assert_int_equal(apply(l7, "json={\"params\": {\"l7_protocol\": [\"mysql\", \"redis\"]}}"), 0);
	assert_int_equal(apply(l7, "json={\"params\": {\"support_ssl\": 1}}"), 0);
	assert_int_equal(l7->l7_protocols, 1u << 2 | 1u << 3);
	assert_true(l7->support_ssl);
	assert_int_equal(apply(l7, "json={\"params\": {\"l7_protocol\": [\"HTTP\"]}}"), 0);
	assert_int_equal(l7->l7_protocols, 1u);
	free(d);
	free(l7);
}

/* gala-gopher's names ember does not implement: taken, listed as ignored. */
static void test_gala_gopher_names(void **state)
{
	struct rest_doc *d = new_doc(REST_FLAMEGRAPH), *d2 = new_doc(REST_FLAMEGRAPH);
	struct rest_doc *tcp = new_doc(REST_TCP), *l7 = new_doc(REST_L7);
	char *get, *body;

	(void)state;
	assert_int_equal(apply(d, "json={\"cmd\": {\"probe\": [\"oncpu\", \"io\", \"mem_glibc\"]}, \"state\": "
				  "\"running\"}"), 0);
	assert_true(d->probes[REST_PROBE_ONCPU] && d->probes[REST_PROBE_IO] && d->probes[REST_PROBE_MEM_GLIBC]);
	assert_contains(d->notes, "ignored by flamegraph: cmd.probe io (not measured by ember), cmd.probe mem_glibc");
	/* GET shows them, and what GET says, PUT takes */
	get = rest_doc__render(d);
	assert_non_null(get);
	assert_contains(get, "\"io\"");
	assert_true(asprintf(&body, "json=%s", get) > 0);
	assert_int_equal(apply(d2, body), 0);
	assert_true(same_config(d, d2));
	free(body);
	free(get);
	/* only io: running, as gala-gopher runs it */
	assert_int_equal(apply(d, "json={\"cmd\": {\"probe\": [\"io\"]}}"), 0);
	assert_true(d->running);

	/* every parameter of gala-gopher's table and of the manual's, to a feature that applies few */
	assert_int_equal(apply(tcp, "json={\"cmd\": {\"probe\": [\"tcp_windows\", \"tcp_stats\"]}, \"params\": {"
				    "\"sample_period\": 180, \"report_period\": 30, \"latency_thr\": 10, \"offline_thr\": "
				    "100000, \"drops_thr\": 50, \"res_lower_thr\": 0, \"res_upper_thr\": 100, "
				    "\"report_event\": 1, \"ringbuf_map_size\": 8, \"report_cport\": 1, "
				    "\"report_source_port\": 0, \"l7_protocol\": [\"crpc\"], \"support_ssl\": 1, "
				    "\"pyroscope_server\": \"localhost:4040\", \"svg_period\": 30, \"perf_sample_period\": "
				    "10, \"multi_instance\": 1, \"native_stack\": 0, \"output_dir\": \"/srv/svg\", "
				    "\"svg_dir\": \"/srv/svg\", \"flame_dir\": \"/srv/f\", \"cluster_ip_backend\": 2, "
				    "\"dev_name\": \"eth0\", \"continuous_sampling\": 0, \"elf_path\": \"/usr/sbin/nginx\", "
				    "\"kafka_port\": 9092, \"cadvisor_port\": 8080, \"profiling_channel\": \"kafka\", "
				    "\"min_exec_dur\": 0, \"min_aggr_dur\": 10, \"custom_param\": [], \"metrics_type\": "
				    "[\"raw\"], \"env\": \"kubenet\"}, \"state\": \"running\"}"), 0);
	assert_true(tcp->probes[REST_TCP_WINDOWS] && tcp->probes[REST_TCP_STATS]);
	assert_int_equal(tcp->report_period_s, 30);
	assert_int_equal(tcp->sample_period_ms, 180);
	assert_string_equal(tcp->svg_dir, "/var/log/gala-gopher/stacktrace"); /* tcp does not keep it */
	assert_contains(tcp->notes, "ignored by tcp: cmd.probe tcp_windows (not measured by ember), "
				    "params.sample_period, params.latency_thr");
	assert_contains(tcp->notes, "params.env");
	assert_false(strstr(tcp->notes, "params.report_period"));

	/* protocols of gala-gopher's and of the manual's that ember does not parse */
	assert_int_equal(apply(l7, "json={\"params\": {\"l7_protocol\": [\"http\", \"crpc\", \"ROCKETMQ\"]}}"), 0);
	assert_int_equal(l7->l7_protocols, 1u);
	assert_contains(l7->notes, "params.l7_protocol crpc (not parsed by ember), params.l7_protocol rocketmq");
	free(d);
	free(d2);
	free(tcp);
	free(l7);
}

/* PUT /proc's 501 points to baseinfo's proc sub-item, PUT /jvm's to the Java agent; others have nothing instead. */
static void test_instead(void **state)
{
	(void)state;
	assert_true(rest_doc__known_unsupported("/proc"));
	assert_non_null(rest_doc__instead("/proc"));
	assert_contains(rest_doc__instead("/proc"), "baseinfo's proc sub-item");
	assert_true(rest_doc__known_unsupported("/jvm"));
	assert_non_null(rest_doc__instead("/jvm"));
	assert_contains(rest_doc__instead("/jvm"), "profiling.java.agent: true");
	assert_true(rest_doc__known_unsupported("/ksli"));
	assert_null(rest_doc__instead("/ksli"));
}

static void put_file(const char *dir, unsigned pid, const char *name, const char *text, size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u", dir, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%u/%s", dir, pid, name);
	assert_non_null(f = fopen(path, "w"));
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
}

/* Kernel threads (no command line) are never selected: the collector refuses a task naming one. */
static void test_select_skips_kernel_threads(void **state)
{
	char dir[] = "/tmp/ember-rest-select-XXXXXX", cmd[64];
	struct rest_doc *d = new_doc(REST_FLAMEGRAPH);
	uint32_t sel[8];
	uint64_t over;

	(void)state;
	assert_non_null(mkdtemp(dir));
	put_file(dir, 101, "comm", "kworker/0:1\n", 12);
	put_file(dir, 101, "cmdline", "", 0);
	put_file(dir, 202, "comm", "app1\n", 5);
	put_file(dir, 202, "cmdline", "app1\0-x\0", 8);
	put_file(dir, 303, "comm", "app1\n", 5);
	put_file(dir, 303, "cmdline", "", 0);
	assert_int_equal(apply(d, "json={\"snoopers\": {\"proc_id\": [101, 202], \"proc_name\": [{\"comm\": "
				  "\"app1\"}]}}"), 0);
	assert_int_equal(rest_select__scan(d, dir, 0, sel, 8, &over), 1);
	assert_int_equal(sel[0], 202);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_manual_sequence),
		cmocka_unit_test(test_refusal_changes_nothing),
		cmocka_unit_test(test_items_and_keys),
		cmocka_unit_test(test_gala_gopher_names),
		cmocka_unit_test(test_instead),
		cmocka_unit_test(test_select_skips_kernel_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
