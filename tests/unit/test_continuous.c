/*
 * Continuous profiling: the policy parser (common/cp_policy), the 1-s
 * window, and the monitors on a fake /proc driven with a fake clock: which
 * item fires when, with which cause, per-item periods, silence, a running
 * task, pid reuse, exec, and ember's own processes left alone.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "analyzer/continuous/monitors.h"
#include "analyzer/continuous/window.h"
#include "common/cp_policy.h"

static char err[512];

/* ---- policies ---------------------------------------------------------------------------- */

static void test_local_policy(void **state)
{
	struct cp_policies *p = cp_policies__parse(
		"- Name: web\n"
		"  MatchCmd: 'nginx|java'\n"
		"  Profiling:\n"
		"    ON_CPU: {PROCESS_CPU: {Threshold: '80.5', Period: 30, Count: 10}, SYSTEM_LOAD: {Threshold: 3, Period: 5, Count: 5}}\n"
		"    NETWORK: {HTTP_ERROR_RATE: {Threshold: 10, Period: 10, Count: 3, URIList: [/a, /b]}}\n"
		"    OFF_CPU: {HTTP_AVG_RESPONSE_TIME: {Threshold: 100, Period: 10, Count: 3, URIRegex: '^/api/.*'}}\n",
		CP_SOURCE_LOCAL, err, sizeof(err));

	assert_non_null(p);
	assert_int_equal(p->n_problems, 0);
	assert_int_equal(p->n, 1);
	assert_string_equal(p->v[0].name, "web");
	assert_string_equal(p->v[0].match_cmd, "nginx|java");
	assert_int_equal(p->v[0].n_items, 4);
	assert_int_equal(p->v[0].items[0].target, CP_TARGET_ON_CPU);
	assert_int_equal(p->v[0].items[0].monitor, CP_MON_PROCESS_CPU);
	assert_true(p->v[0].items[0].threshold == 80.5); /* fractional: Rover would drop it */
	assert_int_equal(p->v[0].items[0].period, 30);
	assert_int_equal(p->v[0].items[0].count, 10);
	assert_int_equal(p->v[0].items[2].n_uris, 2);
	assert_string_equal(p->v[0].items[2].uris[1], "/b");
	assert_string_equal(p->v[0].items[3].uri_regex, "^/api/.*");
	cp_policies__free(p);
}

static void test_oap_policy_json(void **state)
{
	/* The OAP's ServiceWithPolicyJSON, with a removal and nulls its encoder may leave. */
	struct cp_policies *p = cp_policies__parse(
		"[{\"ServiceName\":\"svc-a\",\"UUID\":\"u1\",\"Profiling\":{\"ON_CPU\":{\"PROCESS_THREAD_COUNT\":"
		"{\"Threshold\":\"50\",\"Period\":10,\"Count\":2,\"URIList\":null,\"URIRegex\":null}}}},"
		"{\"ServiceName\":\"svc-b\",\"UUID\":\"\"}]",
		CP_SOURCE_OAP, err, sizeof(err));

	assert_non_null(p);
	assert_int_equal(p->n_problems, 0);
	assert_int_equal(p->n, 2);
	assert_string_equal(p->v[0].service, "svc-a");
	assert_string_equal(p->v[0].uuid, "u1");
	assert_false(p->v[0].removed);
	assert_int_equal(p->v[0].items[0].monitor, CP_MON_PROCESS_THREAD_COUNT);
	assert_true(p->v[1].removed);
	cp_policies__free(p);
	/* The OAP knows Rover's monitors only: ember's own protocols are a problem from it. */
	p = cp_policies__parse("[{\"ServiceName\":\"s\",\"UUID\":\"u\",\"Profiling\":{\"NETWORK\":{\"REDIS_ERROR_RATE\":"
			       "{\"Threshold\":\"5\",\"Period\":10,\"Count\":2}}}}]", CP_SOURCE_OAP, err, sizeof(err));
	assert_non_null(p);
	assert_int_equal(p->n_problems, 2);
	assert_non_null(strstr(p->problems[0], "unknown monitor 'REDIS_ERROR_RATE'"));
	assert_non_null(strstr(p->problems[1], "no valid item"));
	cp_policies__free(p);
	/* ember's THREADS target is a local policy's: the OAP has no task of that kind. */
	p = cp_policies__parse("[{\"ServiceName\":\"s\",\"UUID\":\"u\",\"Profiling\":{\"THREADS\":{\"PROCESS_CPU\":"
			       "{\"Threshold\":\"5\",\"Period\":10,\"Count\":2}}}}]", CP_SOURCE_OAP, err, sizeof(err));
	assert_non_null(p);
	assert_int_equal(p->n_problems, 2);
	assert_non_null(strstr(p->problems[0], "unknown target 'THREADS' (ON_CPU, OFF_CPU, NETWORK)"));
	cp_policies__free(p);
	p = cp_policies__parse("[{MatchCmd: svc, Profiling: {THREADS: {HTTP_AVG_RESPONSE_TIME: "
			       "{Threshold: 200, Period: 10, Count: 3}}}}]", CP_SOURCE_LOCAL, err, sizeof(err));
	assert_non_null(p);
	assert_int_equal(p->n_problems, 0);
	assert_int_equal(p->v[0].items[0].target, CP_TARGET_THREADS);
	assert_int_equal(p->v[0].items[0].monitor, CP_MON_HTTP_AVG_RESPONSE_TIME);
	cp_policies__free(p);
}

/* One invalid item per line, each described; the valid item of the same policy stays. */
static void test_invalid_items(void **state)
{
	static const struct { const char *item, *why; } cases[] = {
		{ "PROCESS_CPU: {Period: 5, Count: 1}", "Threshold is missing" },
		{ "PROCESS_CPU: {Threshold: '', Period: 5, Count: 1}", "Threshold is missing" },
		{ "PROCESS_CPU: {Threshold: abc, Period: 5, Count: 1}", "not a non-negative number" },
		{ "PROCESS_CPU: {Threshold: -1, Period: 5, Count: 1}", "not a non-negative number" },
		{ "PROCESS_CPU: {Threshold: nan, Period: 5, Count: 1}", "not a non-negative number" },
		{ "PROCESS_CPU: {Threshold: 1, Period: 0, Count: 1}", "Period '0'" },
		{ "PROCESS_CPU: {Threshold: 1, Period: 3601, Count: 1}", "Period '3601'" },
		{ "PROCESS_CPU: {Threshold: 1, Period: 5, Count: 0}", "Count '0'" },
		{ "PROCESS_CPU: {Threshold: 1, Period: 5, Count: 6}", "Count '6' is not a number from 1 to Period (5)" },
		{ "PROCESS_CPU: {Threshold: 1, Period: 5, Count: 2, URIList: [/a]}", "HTTP and HTTP2 monitors only" },
		{ "REDIS_ERROR_RATE: {Threshold: 1, Period: 5, Count: 2, URIList: [/a]}", "HTTP and HTTP2 monitors only" },
		{ "MYSQL_ERROR_RATE: {Threshold: 100.5, Period: 5, Count: 2}", "over 100" },
		{ "REDIS_ERROR_RATIO: {Threshold: 1, Period: 5, Count: 2}", "for P in HTTP2, MYSQL" },
		{ "HTTP_ERROR_RATE: {Threshold: 101, Period: 5, Count: 2}", "over 100" },
		{ "HTTP_ERROR_RATE: {Threshold: 1, Period: 5, Count: 2, URIRegex: '('}", "URIRegex" },
		{ "HTTP_ERROR_RATE: {Threshold: 1, Period: 5, Count: 2, URIRegex: x, URIList: [/a]}", "exclusive" },
		{ "PROCESS_CPU: {Threshold: 1, Period: 5, Count: 2, Extra: 1}", "unknown key 'Extra'" },
		{ "NO_SUCH: {Threshold: 1, Period: 5, Count: 2}", "unknown monitor 'NO_SUCH'" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char text[512];
		struct cp_policies *p;

		snprintf(text, sizeof(text),
			 "[{MatchCmd: x, Profiling: {OFF_CPU: {SYSTEM_LOAD: {Threshold: 2, Period: 3, Count: 1}}, "
			 "ON_CPU: {%s}}}]", cases[i].item);
		p = cp_policies__parse(text, CP_SOURCE_LOCAL, err, sizeof(err));
		assert_non_null(p);
		if (p->n_problems != 1 || !strstr(p->problems[0], cases[i].why))
			fail_msg("case %zu (%s): %u problems, first '%s'", i, cases[i].item, p->n_problems,
				 p->n_problems ? p->problems[0] : "");
		assert_int_equal(p->n, 1);
		assert_int_equal(p->v[0].n_items, 1);
		assert_int_equal(p->v[0].items[0].monitor, CP_MON_SYSTEM_LOAD);
		cp_policies__free(p);
	}
}

static void test_invalid_policies(void **state)
{
	struct cp_policies *p;

	assert_null(cp_policies__parse("{a: 1}", CP_SOURCE_LOCAL, err, sizeof(err)));
	assert_non_null(strstr(err, "not a list of policies"));
	assert_null(cp_policies__parse("[{", CP_SOURCE_LOCAL, err, sizeof(err)));
	if (!strstr(err, "line "))
		fail_msg("%s", err);
	p = cp_policies__parse("[{Profiling: {ON_CPU: {PROCESS_CPU: {Threshold: 1, Period: 1, Count: 1}}}},"
			       " {MatchCmd: '(', Profiling: {}}, {MatchCmd: x, ServiceName: y}, 7]",
			       CP_SOURCE_LOCAL, err, sizeof(err));
	assert_non_null(p);
	assert_int_equal(p->n, 0);
	assert_int_equal(p->n_problems, 4);
	assert_non_null(strstr(p->problems[0], "MatchCmd (a regex on the command line) is missing"));
	assert_non_null(strstr(p->problems[1], "not a POSIX extended regular expression"));
	assert_non_null(strstr(p->problems[2], "unknown key 'ServiceName'"));
	assert_non_null(strstr(p->problems[3], "policy 4: not a mapping"));
	cp_policies__free(p);
	/* Empty and [] are "no policies", not errors. */
	p = cp_policies__parse("[]", CP_SOURCE_LOCAL, err, sizeof(err));
	assert_non_null(p);
	assert_int_equal(p->n + p->n_problems, 0);
	cp_policies__free(p);
	assert_int_equal(cp_policies__check_local("[]", err, sizeof(err)), 0);
	assert_int_equal(cp_policies__check_local("[{MatchCmd: x, Profiling: {NETWORK: {HTTP_ERROR_RATE: "
						  "{Threshold: 1, Period: 2, Count: 1}}}}]", err, sizeof(err)), 0);
	assert_int_equal(cp_policies__check_local("[{MatchCmd: x, Profiling: {NETWORK: {HTTP_ERROR_RATE: "
						  "{Threshold: 1, Period: 2, Count: 3}}}}]", err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "Count '3'"));
}

/* ---- window ------------------------------------------------------------------------------ */

static void test_window(void **state)
{
	struct cp_window w = { 0 };
	double last = -1;

	assert_int_equal(cp_window__resize(&w, 5), 0);
	for (int64_t s = 100; s < 110; s++)
		cp_window__put(&w, s, (double)(s % 2 ? 90 : 10)); /* odd seconds over 50 */
	/* 105..109: 105, 107, 109 over */
	assert_int_equal(cp_window__count(&w, 109, 5, 50, &last), 3);
	assert_true(last == 90);
	assert_int_equal(cp_window__count(&w, 109, 2, 50, NULL), 1);
	/* A period longer than the window counts what the window holds. */
	assert_int_equal(cp_window__count(&w, 109, 60, 50, NULL), 3);
	/* Missing seconds do not count; an older put does not replace a newer second. */
	assert_int_equal(cp_window__count(&w, 112, 5, 50, NULL), 1);
	cp_window__put(&w, 104, 99);
	assert_int_equal(cp_window__count(&w, 109, 5, 0, NULL), 5);
	/* Resizing keeps the seconds that fit. */
	assert_int_equal(cp_window__resize(&w, 3), 0);
	assert_int_equal(cp_window__count(&w, 109, 3, 50, NULL), 2);
	assert_int_equal(cp_window__resize(&w, 30), 0);
	assert_int_equal(cp_window__count(&w, 109, 30, 0, NULL), 3);
	assert_true(cp_window__latest(&w, NULL) == 90);
	cp_window__fini(&w);
	assert_int_equal(cp_window__resize(&w, 0), -EINVAL);
}

/* ---- monitors on a fake /proc -------------------------------------------------------------- */

static char root[64];

static void put_n(const char *rel, const char *data, size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w"); /* in place: the monitors keep stat open */
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void put(const char *rel, const char *data) { put_n(rel, data, strlen(data)); }

static void proc(unsigned pid, const char *comm, unsigned long long ticks, unsigned threads, unsigned long long start,
		 const char *cmdline)
{
	char rel[160], buf[512];

	snprintf(rel, sizeof(rel), "%s/%u", root, pid);
	mkdir(rel, 0755);
	/* utime = ticks, stime 0; num_threads; starttime */
	snprintf(buf, sizeof(buf), "%u (%s) S 1 1 1 0 -1 0 0 0 0 0 %llu 0 0 0 20 0 %u 0 %llu 1000 10\n", pid, comm,
		 ticks, threads, start);
	snprintf(rel, sizeof(rel), "%u/stat", pid);
	put(rel, buf);
	/* argv as the kernel shows it: '|' in the argument stands for the NUL after each word */
	snprintf(buf, sizeof(buf), "%s%s", cmdline, cmdline[0] ? "|" : "");
	for (char *p = buf; *p; p++)
		if (*p == '|')
			*p = 0;
	snprintf(rel, sizeof(rel), "%u/cmdline", pid);
	put_n(rel, buf, strlen(cmdline) + (cmdline[0] ? 1 : 0));
}

static void gone(unsigned pid)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf %s/%u", root, pid);
	assert_int_equal(system(cmd), 0);
}

struct cb { struct mon_trigger t[16]; unsigned n; uint32_t running_pid; int fail; };

static int on_start(void *ctx, const struct mon_trigger *t)
{
	struct cb *c = ctx;

	if (c->fail)
		return -ENOSPC;
	if (c->n < 16)
		c->t[c->n++] = *t;
	return 0;
}

static bool on_running(void *ctx, uint32_t pid, enum cp_target t)
{
	return ((struct cb *)ctx)->running_pid == pid && t == CP_TARGET_ON_CPU;
}

static struct monitors *new_mon(struct cb *c, const char *policies)
{
	struct monitors_opts o = { .proc_root = root, .nshards = 1, .fetch_interval_ms = 1000, .check_interval_ms = 5000,
				   .silence_ms = 20000, .start = on_start, .running = on_running, .ctx = c };
	struct monitors *m = monitors__new(&o);
	struct cp_policies *p = cp_policies__parse(policies, CP_SOURCE_LOCAL, err, sizeof(err));

	assert_non_null(m);
	assert_non_null(p);
	assert_int_equal(p->n_problems, 0);
	assert_int_equal(monitors__set_policies(m, p), 0);
	cp_policies__free(p);
	return m;
}

static int setup_root(void **state)
{
	snprintf(root, sizeof(root), "/tmp/ember-cp-test.XXXXXX");
	assert_non_null(mkdtemp(root));
	put("loadavg", "0.50 0.40 0.30 1/100 12345\n");
	return 0;
}

static int teardown_root(void **state)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd);
}

/*
 * A process at 0% for 10 s, then 100% (CLK_TCK ticks per s): PROCESS_CPU >= 80 in 3 of 5
 * fires at the first check with 3 hot slots; the 60 s item of the same process does not
 * (each item has its own Period: Rover's longest-Period judging would fire both).
 */
static void test_cpu_trigger_and_silence(void **state)
{
	struct cb c = { 0 };
	struct monitors *m = new_mon(&c, "[{Name: hot, MatchCmd: 'app --serve', Profiling: {"
					 "ON_CPU: {PROCESS_CPU: {Threshold: 80, Period: 5, Count: 3}},"
					 "OFF_CPU: {PROCESS_CPU: {Threshold: 80, Period: 60, Count: 30}}}}]");
	long hz = sysconf(_SC_CLK_TCK);
	unsigned long long ticks = 0;
	uint64_t now = 1000000;
	uint64_t st[MS_MAX];

	proc(4242, "app", 0, 4, 777, "app|--serve");
	proc(4243, "other", 0, 1, 778, "other");
	proc(4244, "ember-analyzer", 0, 1, 779, "app --serve"); /* ember itself: never */
	proc(4245, "kworker/0:1", 0, 1, 780, "");		 /* kernel thread: no command line */
	for (int s = 0; s < 40; s++, now += 1000) {
		if (s >= 10)
			ticks += (unsigned long long)hz;
		proc(4242, "app", ticks, 4, 777, "app|--serve");
		monitors__tick(m, now);
		if (c.n)
			break;
	}
	monitors__stats(m, st);
	assert_int_equal(st[MS_PROCESSES], 1);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.t[0].pid, 4242);
	assert_int_equal(c.t[0].target, CP_TARGET_ON_CPU);
	assert_int_equal(c.t[0].n_causes, 1);
	assert_int_equal(c.t[0].causes[0].monitor, CP_MON_PROCESS_CPU);
	assert_true(c.t[0].causes[0].current > 95 && c.t[0].causes[0].current < 105);
	assert_true(c.t[0].causes[0].matched >= 3);
	assert_string_equal(c.t[0].causes[0].policy, "hot");
	assert_string_equal(c.t[0].comm, "app");
	/* Hot from s=10 (the first hot slot is s=11: a share needs two samples); checks every 5 s. */
	assert_true(now - 1000000 >= 13000 && now - 1000000 <= 13000 + 5000);
	/* Stays hot: no second ON_CPU within 20 s of silence; the OFF_CPU item fires once 30 of 60 hold. */
	uint64_t first = now;
	for (now += 1000; now < first + 40000; now += 1000) {
		ticks += (unsigned long long)hz;
		proc(4242, "app", ticks, 4, 777, "app|--serve");
		monitors__tick(m, now);
	}
	monitors__stats(m, st);
	assert_true(st[MS_SILENCED] > 0);
	unsigned on = 0, off = 0;
	for (unsigned i = 0; i < c.n; i++) {
		on += c.t[i].target == CP_TARGET_ON_CPU;
		off += c.t[i].target == CP_TARGET_OFF_CPU;
	}
	assert_int_equal(on, 2);  /* first, and one after 20 s */
	assert_int_equal(off, 1);
	for (unsigned i = 1; i < c.n; i++)
		if (c.t[i].target == CP_TARGET_OFF_CPU)
			assert_int_equal(c.t[i].causes[0].period, 60);
	monitors__free(m);
	gone(4242);
	gone(4243);
	gone(4244);
	gone(4245);
}

/* Thread count and system load; a running task blocks; a failed start retries at the next check. */
static void test_threads_load_running(void **state)
{
	struct cb c = { .running_pid = 5000 };
	struct monitors *m = new_mon(&c, "[{MatchCmd: svc, Profiling: {"
					 "ON_CPU: {PROCESS_THREAD_COUNT: {Threshold: 20, Period: 3, Count: 2}},"
					 "NETWORK: {SYSTEM_LOAD: {Threshold: 2.5, Period: 3, Count: 3}}}}]");
	uint64_t now = 5000000, st[MS_MAX];

	proc(5000, "svc", 0, 50, 1, "svc");
	proc(5001, "svc", 0, 5, 2, "svc");
	for (int s = 0; s < 6; s++, now += 1000)
		monitors__tick(m, now);
	/* 5000 has 50 threads but runs an ON_CPU task; 5001 has 5. */
	monitors__stats(m, st);
	assert_int_equal(c.n, 0);
	assert_true(st[MS_ALREADY_RUNNING] > 0);
	proc(5001, "svc", 0, 30, 2, "svc");
	put("loadavg", "3.00 1.00 1.00 1/100 1\n");
	c.fail = 1;
	for (int s = 0; s < 6; s++, now += 1000)
		monitors__tick(m, now);
	monitors__stats(m, st);
	assert_true(st[MS_START_FAILURES] > 0);
	c.fail = 0;
	for (int s = 0; s < 6; s++, now += 1000)
		monitors__tick(m, now);
	/* 5001: ON_CPU by threads; 5000 and 5001: NETWORK by load (5000's NETWORK is not running). */
	unsigned threads = 0, load = 0;
	for (unsigned i = 0; i < c.n; i++) {
		if (c.t[i].causes[0].monitor == CP_MON_PROCESS_THREAD_COUNT) {
			threads++;
			assert_int_equal(c.t[i].pid, 5001);
			assert_true(c.t[i].causes[0].current == 30);
		}
		if (c.t[i].causes[0].monitor == CP_MON_SYSTEM_LOAD) {
			load++;
			assert_int_equal(c.t[i].target, CP_TARGET_NETWORK);
			assert_true(c.t[i].causes[0].current == 3.0);
		}
	}
	assert_int_equal(threads, 1);
	assert_int_equal(load, 2);
	/* pid reuse (new start time) and exit: forgotten. */
	proc(5001, "svc", 0, 30, 99, "svc");
	gone(5000);
	monitors__tick(m, now);
	monitors__stats(m, st);
	assert_true(st[MS_PROCESSES] <= 1);
	monitors__tick(m, now + 5000);
	monitors__stats(m, st);
	assert_int_equal(st[MS_PROCESSES], 1); /* 5001 again, as a new process */
	/* An exec to something the policy does not match: dropped at the next scan. */
	proc(5001, "other", 0, 30, 99, "other");
	monitors__tick(m, now + 6000);
	monitors__tick(m, now + 11000);
	monitors__stats(m, st);
	assert_int_equal(st[MS_PROCESSES], 0);
	/* No policies: nothing monitored, nothing due. */
	assert_int_equal(monitors__set_policies(m, NULL), 0);
	monitors__tick(m, now + 12000);
	assert_true(monitors__next_due(m) == UINT64_MAX);
	monitors__free(m);
	gone(5001);
}

static int captures_on, captures_off;
static int on_capture(void *ctx, uint32_t pid, bool on)
{
	(void)ctx;
	(void)pid;
	*(on ? &captures_on : &captures_off) += 1;
	return 0;
}

/*
 * L7 items: a capture is asked for; per-URI windows; error rate and average
 * time per second; each item counts its own protocol's exchanges only.
 */
static void test_http_items(void **state)
{
	struct cb c = { 0 };
	struct monitors_opts o = { .proc_root = root, .nshards = 1, .fetch_interval_ms = 1000, .check_interval_ms = 5000,
				   .silence_ms = 60000, .start = on_start, .running = on_running, .capture = on_capture,
				   .ctx = &c };
	struct monitors *m = monitors__new(&o);
	struct cp_policies *p = cp_policies__parse(
		"[{Name: web, MatchCmd: web, Profiling: {"
		"ON_CPU: {HTTP_ERROR_RATE: {Threshold: 50, Period: 5, Count: 3, URIList: [/fail, /ok]}},"
		"OFF_CPU: {HTTP_AVG_RESPONSE_TIME: {Threshold: 100, Period: 5, Count: 3, URIRegex: '^/slow'}},"
		"NETWORK: {HTTP_ERROR_RATE: {Threshold: 50, Period: 5, Count: 3},"
		"          REDIS_ERROR_RATE: {Threshold: 50, Period: 5, Count: 3}}}}]",
		CP_SOURCE_LOCAL, err, sizeof(err));
	uint64_t now = 9000000, st[MS_MAX];

	assert_non_null(p);
	assert_int_equal(p->n_problems, 0);
	assert_int_equal(monitors__set_policies(m, p), 0);
	cp_policies__free(p);
	proc(6000, "web", 0, 1, 1, "web");
	for (int s = 0; s < 12; s++, now += 1000) {
		monitors__tick(m, now);
		/*
		 * Each second, over HTTP/1: /fail fails, /ok does not, /slow/x takes
		 * 150 ms, /fast 10 ms.  Over HTTP/2, /ok fails: not HTTP_ERROR_RATE's
		 * protocol.  Redis: 2 errors of 3.
		 */
		for (int k = 0; k < 3; k++) {
			monitors__exchange(m, 6000, "http1", "/fail", true, 1, now);
			monitors__exchange(m, 6000, "http1", "/ok", false, 1, now);
			monitors__exchange(m, 6000, "http1", "/slow/x", false, 150, now);
			monitors__exchange(m, 6000, "http1", "/fast", false, 10, now);
			monitors__exchange(m, 6000, "http2", "/ok", true, 1, now);
			monitors__exchange(m, 6000, "redis", NULL, k < 2, 1, now);
		}
	}
	assert_true(captures_on > 0);
	/* The analyzer hands over the exchanges of watched processes only. */
	assert_true(monitors__wants_exchanges(m, 6000));
	assert_false(monitors__wants_exchanges(m, 6001));
	monitors__stats(m, st);
	assert_int_equal(st[MS_EXCHANGES], 12 * 18);
	unsigned on = 0, off = 0, net = 0;
	for (unsigned i = 0; i < c.n; i++) {
		const struct mon_cause *x = &c.t[i].causes[0];

		if (c.t[i].target == CP_TARGET_ON_CPU) {
			on++;
			/* only /fail holds: 100% errors */
			assert_int_equal(c.t[i].n_causes, 1);
			assert_string_equal(x->uri, "/fail");
			assert_true(x->current == 100);
		} else if (c.t[i].target == CP_TARGET_OFF_CPU) {
			off++;
			assert_string_equal(x->uri, "^/slow");
			assert_true(x->uri_is_regex);
			assert_true(x->current == 150);
		} else {
			/* HTTP/1 as a whole: 3 errors of 12 per second = 25%, never; Redis: 67% */
			net++;
			assert_int_equal(c.t[i].n_causes, 1);
			assert_int_equal(x->monitor, CP_MON_REDIS_ERROR_RATE);
			assert_string_equal(x->uri, "");
			assert_true(x->current > 66 && x->current < 67);
		}
	}
	assert_int_equal(on, 1);
	assert_int_equal(off, 1);
	assert_int_equal(net, 1);
	monitors__free(m);
	assert_true(captures_off > 0);
	gone(6000);
}

/* What the values callback was told: the last values (pid, comm) and every ended pid. */
struct vals { uint32_t pid[16]; char comm[16][16]; unsigned n, calls; uint32_t ended[16]; unsigned n_ended; };

static void on_values(void *ctx, const struct mon_value *v, unsigned n, const uint32_t *ended, unsigned n_ended)
{
	struct vals *x = ctx;

	x->calls++;
	x->n = 0;
	for (unsigned i = 0; i < n && x->n < 16; i++, x->n++) {
		x->pid[x->n] = v[i].pid;
		snprintf(x->comm[x->n], sizeof(x->comm[0]), "%s", v[i].comm ? v[i].comm : "(null)");
	}
	for (unsigned i = 0; i < n_ended && x->n_ended < 16; i++)
		x->ended[x->n_ended++] = ended[i];
}

/*
 * The values name the process (comm); a process that exits, one whose command line no longer
 * matches after an exec, and every process when the policies go are reported once as ended.
 */
static void test_values_comm_and_ended(void **state)
{
	struct vals x = { 0 };
	struct monitors_opts o = { .proc_root = root, .nshards = 1, .fetch_interval_ms = 1000, .check_interval_ms = 1000,
				   .values = on_values, .ctx = &x };
	struct monitors *m = monitors__new(&o);
	struct cp_policies *p = cp_policies__parse("[{MatchCmd: svc, Profiling: {ON_CPU: {PROCESS_THREAD_COUNT: "
						   "{Threshold: 99, Period: 3, Count: 2}}}}]", CP_SOURCE_LOCAL, err, sizeof(err));
	uint64_t now = 7000000;

	(void)state;
	assert_non_null(m);
	assert_non_null(p);
	assert_int_equal(monitors__set_policies(m, p), 0);
	proc(6001, "svc-a", 0, 3, 100, "svc|a");
	proc(6002, "svc-b", 0, 5, 101, "svc|b");
	proc(6003, "svc-c", 0, 7, 102, "svc|c");
	for (int s = 0; s < 3; s++, now += 1000)
		monitors__tick(m, now);
	assert_int_equal(x.n, 3);
	for (unsigned i = 0; i < x.n; i++) {
		char want[16];

		snprintf(want, sizeof(want), "svc-%c", 'a' + (int)(x.pid[i] - 6001));
		assert_string_equal(x.comm[i], want);
	}
	assert_int_equal(x.n_ended, 0);
	gone(6001);                             /* exits */
	proc(6002, "other", 0, 5, 101, "other"); /* execs into something no policy selects */
	for (int s = 0; s < 3; s++, now += 1000)
		monitors__tick(m, now);
	assert_int_equal(x.n, 1);
	assert_int_equal(x.pid[0], 6003);
	assert_int_equal(x.n_ended, 2);
	assert_true((x.ended[0] == 6001 && x.ended[1] == 6002) || (x.ended[0] == 6002 && x.ended[1] == 6001));
	/* no policy left: the last process ends too, though there are no values to send with it */
	assert_int_equal(monitors__set_policies(m, NULL), 0);
	x.calls = 0;
	monitors__tick(m, now);
	assert_int_equal(x.calls, 1);
	assert_int_equal(x.n, 0);
	assert_int_equal(x.n_ended, 3);
	assert_int_equal(x.ended[2], 6003);
	monitors__tick(m, now + 1000);
	assert_int_equal(x.calls, 1);	/* told once */
	cp_policies__free(p);
	monitors__free(m);
	gone(6002);
	gone(6003);
}

static unsigned open_fds(void)
{
	char cmd[64];
	FILE *f;
	unsigned n = 0;

	snprintf(cmd, sizeof(cmd), "ls /proc/%d/fd | wc -l", (int)getpid());
	f = popen(cmd, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%u", &n), 1);
	pclose(f);
	return n;
}

/* Descriptors kept open stay under half of RLIMIT_NOFILE; the processes beyond are monitored all the same. */
static void test_fd_bound(void **state)
{
	struct rlimit old, low;
	struct cb c = { 0 };
	struct monitors *m;
	uint64_t st[MS_MAX];
	unsigned before;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 200; /* half is 100, less a reserve of 64: 36 kept */
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	for (unsigned pid = 7000; pid < 7050; pid++)
		proc(pid, "many", 0, 1, 1, "many");
	before = open_fds();
	m = new_mon(&c, "[{MatchCmd: many, Profiling: {ON_CPU: {PROCESS_THREAD_COUNT: {Threshold: 5, Period: 2, Count: 1}}}}]");
	monitors__tick(m, 1000);
	monitors__tick(m, 2000);
	monitors__stats(m, st);
	assert_int_equal(st[MS_PROCESSES], 50);
	assert_int_equal(st[MS_READ_ERRORS], 0);
	assert_true(open_fds() <= before + 36);
	assert_true(open_fds() >= before + 30);
	monitors__free(m);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	for (unsigned pid = 7000; pid < 7050; pid++)
		gone(pid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_local_policy),
		cmocka_unit_test(test_oap_policy_json),
		cmocka_unit_test(test_invalid_items),
		cmocka_unit_test(test_invalid_policies),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_cpu_trigger_and_silence),
		cmocka_unit_test(test_threads_load_running),
		cmocka_unit_test(test_http_items),
		cmocka_unit_test(test_values_comm_and_ended),
		cmocka_unit_test(test_fd_bound),
	};
	return cmocka_run_group_tests(tests, setup_root, teardown_root);
}
