/* Unit tests for exporter/prom_text: exact exposition text, escaping, name
 * sanitising, conflicts, the series cap and expiry.  Every rendering is also
 * run through the independent grammar checker (tests/fuzz/prom_grammar.h). */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "exporter/prom_text.h"
#include "tests/fuzz/prom_grammar.h"

static const char *render(struct prom_table *t, struct prom_buf *b)
{
	char why[256];

	assert_int_equal(prom_table__render(t, b), 0);
	assert_non_null(b->p);
	assert_int_equal(strlen(b->p), b->len);
	if (prom_grammar_check(b->p, b->len, why, sizeof(why)))
		fail_msg("grammar: %s in:\n%s", why, b->p);
	return b->p;
}

static struct prom_meter gauge(const char *name, double v)
{
	return (struct prom_meter){ .name = name, .value = v };
}

static void test_counter_and_gauge(void **state)
{
	struct prom_table *t = prom_table__new(0);
	struct prom_buf b = { 0 };
	struct prom_label an = { "analyzer", "0" };
	struct prom_meter c = { .name = "ember_events", .help = "Events seen", .labels = &an, .n_labels = 1,
				.value = 42, .is_counter = 1 };
	struct prom_meter g = gauge("ember_tasks_running", 3);
	(void)state;

	assert_non_null(t);
	assert_string_equal(render(t, &b), "");
	assert_int_equal(prom_table__update(t, &g, 1), 0);
	assert_int_equal(prom_table__update(t, &c, 1), 0);
	assert_string_equal(render(t, &b),
			    "# HELP ember_events_total Events seen\n"
			    "# TYPE ember_events_total counter\n"
			    "ember_events_total{analyzer=\"0\"} 42\n"
			    "# HELP ember_tasks_running ember meter (no description)\n"
			    "# TYPE ember_tasks_running gauge\n"
			    "ember_tasks_running 3\n");
	/* The latest value replaces the previous one; a name already ending in _total keeps it. */
	c.value = 43.5;
	c.name = "ember_events_total";
	assert_int_equal(prom_table__update(t, &c, 2), 0);
	g.value = -0.25;
	assert_int_equal(prom_table__update(t, &g, 2), 0);
	assert_string_equal(render(t, &b),
			    "# HELP ember_events_total Events seen\n"
			    "# TYPE ember_events_total counter\n"
			    "ember_events_total{analyzer=\"0\"} 43.5\n"
			    "# HELP ember_tasks_running ember meter (no description)\n"
			    "# TYPE ember_tasks_running gauge\n"
			    "ember_tasks_running -0.25\n");
	struct prom_table_stats st;
	prom_table__stats(t, &st);
	assert_int_equal(st.series, 2);
	assert_int_equal(st.families, 2);
	assert_int_equal(st.updates, 4);
	assert_int_equal(st.renders, 3);
	prom_buf__release(&b);
	prom_table__free(t);
}

static void test_label_order_and_sorting(void **state)
{
	struct prom_table *t = prom_table__new(0);
	struct prom_buf b = { 0 };
	struct prom_label l1[] = { { "pid", "20" }, { "comm", "nginx" } };
	struct prom_label l2[] = { { "comm", "nginx" }, { "pid", "20" } };
	struct prom_label l3[] = { { "comm", "bash" }, { "pid", "7" } };
	struct prom_meter m = { .name = "proc_cpu_seconds", .labels = l1, .n_labels = 2, .value = 1, .is_counter = 1 };
	(void)state;

	assert_int_equal(prom_table__update(t, &m, 1), 0);
	m.labels = l2;
	m.value = 2;
	assert_int_equal(prom_table__update(t, &m, 1), 0);	/* same series: order does not matter */
	m.labels = l3;
	m.value = 5;
	assert_int_equal(prom_table__update(t, &m, 1), 0);
	assert_int_equal(prom_table__update(t, &(struct prom_meter){ .name = "a_first", .value = 1 }, 1), 0);
	assert_string_equal(render(t, &b),
			    "# HELP a_first ember meter (no description)\n"
			    "# TYPE a_first gauge\n"
			    "a_first 1\n"
			    "# HELP proc_cpu_seconds_total ember meter (no description)\n"
			    "# TYPE proc_cpu_seconds_total counter\n"
			    "proc_cpu_seconds_total{comm=\"bash\",pid=\"7\"} 5\n"
			    "proc_cpu_seconds_total{comm=\"nginx\",pid=\"20\"} 2\n");
	prom_buf__release(&b);
	prom_table__free(t);
}

static void test_histogram(void **state)
{
	struct prom_table *t = prom_table__new(0);
	struct prom_buf b = { 0 };
	struct prom_label path = { "path", "/x" };
	struct prom_bucket bk[] = { { 0.005, 1 }, { 0.1, 3 }, { 1, 5 }, { INFINITY, 6 } };
	struct prom_meter h = { .name = "rpc_latency_seconds", .help = "Latency", .labels = &path, .n_labels = 1,
				.value = 2.5, .buckets = bk, .n_buckets = 3, .hist_count = 6 };
	const char *want =
		"# HELP rpc_latency_seconds Latency\n"
		"# TYPE rpc_latency_seconds histogram\n"
		"rpc_latency_seconds_bucket{path=\"/x\",le=\"0.005\"} 1\n"
		"rpc_latency_seconds_bucket{path=\"/x\",le=\"0.1\"} 3\n"
		"rpc_latency_seconds_bucket{path=\"/x\",le=\"1\"} 5\n"
		"rpc_latency_seconds_bucket{path=\"/x\",le=\"+Inf\"} 6\n"
		"rpc_latency_seconds_sum{path=\"/x\"} 2.5\n"
		"rpc_latency_seconds_count{path=\"/x\"} 6\n";
	(void)state;

	assert_int_equal(prom_table__update(t, &h, 1), 0);
	assert_string_equal(render(t, &b), want);
	/* An explicit +Inf bucket equal to the count renders the same. */
	h.n_buckets = 4;
	assert_int_equal(prom_table__update(t, &h, 2), 0);
	assert_string_equal(render(t, &b), want);
	/* ... and one that disagrees is refused, leaving the series as it was. */
	bk[3].count = 7;
	assert_int_equal(prom_table__update(t, &h, 3), -EINVAL);
	bk[3].count = 6;
	/* Non-cumulative counts, unsorted bounds, NaN bounds, counts above hist_count. */
	bk[1].count = 0;
	assert_int_equal(prom_table__update(t, &h, 3), -EINVAL);
	bk[1].count = 3;
	bk[1].upper_bound = 0.001;
	assert_int_equal(prom_table__update(t, &h, 3), -EINVAL);
	bk[1].upper_bound = NAN;
	assert_int_equal(prom_table__update(t, &h, 3), -EINVAL);
	bk[1].upper_bound = 0.1;
	h.n_buckets = 3;
	h.hist_count = 4;
	assert_int_equal(prom_table__update(t, &h, 3), -EINVAL);
	assert_string_equal(render(t, &b), want);

	/* A new bucket layout replaces the old one; no labels, only +Inf. */
	struct prom_bucket one[] = { { INFINITY, 9 } };
	struct prom_meter h2 = { .name = "q", .value = 0.5, .buckets = one, .n_buckets = 1, .hist_count = 9 };
	char want2[1024];
	assert_int_equal(prom_table__update(t, &h2, 4), 0);
	snprintf(want2, sizeof(want2), "%s%s", "# HELP q ember meter (no description)\n"
					      "# TYPE q histogram\n"
					      "q_bucket{le=\"+Inf\"} 9\n"
					      "q_sum 0.5\n"
					      "q_count 9\n", want);
	assert_string_equal(render(t, &b), want2);
	struct prom_table_stats st;
	prom_table__stats(t, &st);
	assert_int_equal(st.invalid, 5);
	assert_int_equal(st.series, 2);
	prom_buf__release(&b);
	prom_table__free(t);
}

static void test_escaping(void **state)
{
	struct prom_table *t = prom_table__new(0);
	struct prom_buf b = { 0 };
	struct prom_label l[] = { { "v", "a\\b\"c\nd" }, { "u", "caf\xc3\xa9 \xff\xc0\xaf!" } };
	struct prom_meter m = { .name = "esc", .help = "say \"hi\"\\\nbye\xed\xa0\x80", .labels = l, .n_labels = 2,
				.value = 1 };
	(void)state;

	assert_int_equal(prom_table__update(t, &m, 1), 0);
	/* help: backslash and newline escaped, quotes not; invalid UTF-8 (here
	 * an encoded surrogate, an overlong '/', a stray 0xff) becomes U+FFFD per byte */
	assert_string_equal(render(t, &b),
			    "# HELP esc say \"hi\"\\\\\\nbye\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\n"
			    "# TYPE esc gauge\n"
			    "esc{u=\"caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd!\",v=\"a\\\\b\\\"c\\nd\"} 1\n");
	/* A label value at the limit passes, one byte over is refused. */
	char *big = malloc(PROM_MAX_LABEL_VALUE + 2);
	memset(big, 'x', PROM_MAX_LABEL_VALUE + 1);
	big[PROM_MAX_LABEL_VALUE + 1] = '\0';
	struct prom_label bl = { "big", big };
	struct prom_meter bm = { .name = "big", .labels = &bl, .n_labels = 1 };
	assert_int_equal(prom_table__update(t, &bm, 1), -EINVAL);
	big[PROM_MAX_LABEL_VALUE] = '\0';
	assert_int_equal(prom_table__update(t, &bm, 1), 0);
	render(t, &b);
	free(big);
	prom_buf__release(&b);
	prom_table__free(t);
}

static void test_sanitize(void **state)
{
	char buf[64];
	(void)state;

	assert_int_equal(prom_text__sanitize_name("ember.events-rate", 0, buf, sizeof(buf)), 17);
	assert_string_equal(buf, "ember_events_rate");
	assert_int_equal(prom_text__sanitize_name("1abc", 0, buf, sizeof(buf)), 5);
	assert_string_equal(buf, "_1abc");
	prom_text__sanitize_name("job:rate5m", 0, buf, sizeof(buf));
	assert_string_equal(buf, "job:rate5m");
	prom_text__sanitize_name("job:rate5m", 1, buf, sizeof(buf));
	assert_string_equal(buf, "job_rate5m");
	prom_text__sanitize_name("__name__", 1, buf, sizeof(buf));
	assert_string_equal(buf, "_name__");
	prom_text__sanitize_name("caf\xc3\xa9 x", 0, buf, sizeof(buf));
	assert_string_equal(buf, "caf___x");
	assert_int_equal(prom_text__sanitize_name("", 0, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(prom_text__sanitize_name(NULL, 1, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(prom_text__sanitize_name("abcdefgh", 0, buf, 9), -ENAMETOOLONG);
	assert_int_equal(prom_text__sanitize_name("abcdefg", 0, buf, 9), 7);

	/* In the table: sanitised names render; names that collide after sanitising are refused. */
	struct prom_table *t = prom_table__new(0);
	struct prom_buf b = { 0 };
	struct prom_label ok[] = { { "k8s.pod", "p" } }, dup[] = { { "a.b", "1" }, { "a-b", "2" } };
	struct prom_label reserved[] = { { "le", "1" } };
	struct prom_meter m = { .name = "9lives.count", .labels = ok, .n_labels = 1, .value = 7 };
	assert_int_equal(prom_table__update(t, &m, 1), 0);
	assert_string_equal(render(t, &b), "# HELP _9lives_count ember meter (no description)\n"
					   "# TYPE _9lives_count gauge\n"
					   "_9lives_count{k8s_pod=\"p\"} 7\n");
	m.labels = dup;
	m.n_labels = 2;
	assert_int_equal(prom_table__update(t, &m, 1), -EINVAL);
	m.labels = reserved;
	m.n_labels = 1;
	assert_int_equal(prom_table__update(t, &m, 1), -EINVAL);
	m.labels = ok;
	m.n_labels = PROM_MAX_LABELS + 1;	/* refused before the array is read */
	assert_int_equal(prom_table__update(t, &m, 1), -EINVAL);
	m.n_labels = 0;
	m.name = "";
	assert_int_equal(prom_table__update(t, &m, 1), -EINVAL);
	m.name = NULL;
	assert_int_equal(prom_table__update(t, &m, 1), -EINVAL);
	char longname[PROM_MAX_NAME + 2];
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	m.name = longname;
	assert_int_equal(prom_table__update(t, &m, 1), -EINVAL);
	longname[PROM_MAX_NAME] = '\0';
	m.is_counter = 1;	/* at the limit, and with room for "_total" */
	assert_int_equal(prom_table__update(t, &m, 1), 0);
	render(t, &b);
	assert_non_null(strstr(b.p, "n_total 7\n"));
	prom_buf__release(&b);
	prom_table__free(t);
}

static void test_conflicts(void **state)
{
	struct prom_table *t = prom_table__new(0);
	struct prom_buf b = { 0 };
	struct prom_bucket bk[] = { { 1, 1 } };
	struct prom_meter cnt = { .name = "x", .value = 1, .is_counter = 1 };
	struct prom_meter hist = { .name = "h", .buckets = bk, .n_buckets = 1, .hist_count = 2, .value = 3 };
	struct prom_table_stats st;
	(void)state;

	assert_int_equal(prom_table__update(t, &cnt, 1), 0);
	assert_int_equal(prom_table__update(t, &(struct prom_meter){ .name = "x_total", .value = 2 }, 1), -EEXIST);
	assert_int_equal(prom_table__update(t, &hist, 1), 0);
	assert_int_equal(prom_table__update(t, &(struct prom_meter){ .name = "h", .value = 2 }, 1), -EEXIST);
	assert_int_equal(prom_table__update(t, &(struct prom_meter){ .name = "h_count", .value = 2 }, 1), -EEXIST);
	assert_int_equal(prom_table__update(t, &(struct prom_meter){ .name = "g_sum", .value = 2 }, 1), 0);
	hist.name = "g";
	assert_int_equal(prom_table__update(t, &hist, 1), -EEXIST);
	prom_table__stats(t, &st);
	assert_int_equal(st.conflicts, 4);
	assert_int_equal(st.series, 3);
	render(t, &b);
	prom_buf__release(&b);
	prom_table__free(t);
}

static void test_cap_and_expiry(void **state)
{
	struct prom_table *t = prom_table__new(3);
	struct prom_buf b = { 0 };
	struct prom_label l = { "i", NULL };
	struct prom_meter m = { .name = "s", .labels = &l, .n_labels = 1, .value = 1 };
	struct prom_table_stats st;
	char v[8];
	(void)state;

	for (int i = 0; i < 5; i++) {
		snprintf(v, sizeof(v), "%d", i);
		l.value = v;
		assert_int_equal(prom_table__update(t, &m, 1000 + (uint64_t)i), i < 3 ? 0 : -ENOSPC);
	}
	prom_table__stats(t, &st);
	assert_int_equal(st.series, 3);
	assert_int_equal(st.series_dropped, 2);
	/* existing series still update when full */
	l.value = "0";
	m.value = 10;
	assert_int_equal(prom_table__update(t, &m, 5000), 0);
	assert_string_equal(render(t, &b), "# HELP s ember meter (no description)\n"
					   "# TYPE s gauge\n"
					   "s{i=\"0\"} 10\n"
					   "s{i=\"1\"} 1\n"
					   "s{i=\"2\"} 1\n");
	/* at 6000 with max age 2000: i=1 (1001) and i=2 (1002) are stale, i=0 (5000) is not */
	assert_int_equal(prom_table__expire(t, 6000, 2000), 2);
	assert_string_equal(render(t, &b), "# HELP s ember meter (no description)\n"
					   "# TYPE s gauge\n"
					   "s{i=\"0\"} 10\n");
	/* freed slots take new series, in a new family too */
	assert_int_equal(prom_table__update(t, &(struct prom_meter){ .name = "z", .value = 2 }, 6000), 0);
	l.value = "9";
	assert_int_equal(prom_table__update(t, &m, 6000), 0);
	assert_int_equal(prom_table__update(t, &(struct prom_meter){ .name = "y", .value = 2 }, 6000), -ENOSPC);
	assert_int_equal(prom_table__expire(t, 100000, 1), 3);
	prom_table__stats(t, &st);
	assert_int_equal(st.series, 0);
	assert_int_equal(st.families, 0);
	assert_int_equal(st.series_expired, 5);
	assert_string_equal(render(t, &b), "");
	prom_buf__release(&b);
	prom_table__free(t);
	prom_table__free(NULL);
}

/* A process that ended: its series go at once, whatever else carries a look-alike label stays. */
static void test_drop_by_label(void **state)
{
	struct prom_table *t = prom_table__new(0);
	struct prom_buf b = { 0 };
	struct prom_table_stats st;
	struct prom_label p12[] = { { "comm", "a" }, { "pid", "12" } }, p123[] = { { "pid", "123" } },
			  in_value[] = { { "pid", "7" }, { "uri", "x,pid=\"12\"" } }, tgid12[] = { { "tgid", "12" } },
			  ppid12[] = { { "pid", "8" }, { "ppid", "12" } };
	const char *out;

	(void)state;
	assert_non_null(t);
	assert_int_equal(prom_table__update(t, &(struct prom_meter){ .name = "rover_con_p_process_cpu", .value = 1,
								       .labels = p12, .n_labels = 2 }, 0), 0);
	assert_int_equal(prom_table__update(t, &(struct prom_meter){ .name = "rover_con_p_process_threads", .value = 2,
								       .labels = p12, .n_labels = 2 }, 0), 0);
	assert_int_equal(prom_table__update(t, &(struct prom_meter){ .name = "rover_con_p_process_cpu", .value = 3,
								       .labels = p123, .n_labels = 1 }, 0), 0);
	assert_int_equal(prom_table__update(t, &(struct prom_meter){ .name = "rover_con_p_http_error_rate", .value = 4,
								       .labels = in_value, .n_labels = 2 }, 0), 0);
	assert_int_equal(prom_table__update(t, &(struct prom_meter){ .name = "other_process_cpu", .value = 5,
								       .labels = p12, .n_labels = 2 }, 0), 0);
	assert_int_equal(prom_table__update(t, &(struct prom_meter){ .name = "rover_con_p_tgid", .value = 6,
								       .labels = tgid12, .n_labels = 1 }, 0), 0);
	assert_int_equal(prom_table__update(t, &(struct prom_meter){ .name = "rover_con_p_parent", .value = 7,
								       .labels = ppid12, .n_labels = 2 }, 0), 0);
	/* the prefix limits the families; pid="12" is neither pid="123", ppid="12" nor a quoted part of a value */
	assert_int_equal(prom_table__drop(t, "rover_con_p_", "pid", "12"), 2);
	out = render(t, &b);
	assert_null(strstr(out, "rover_con_p_process_cpu{comm=\"a\",pid=\"12\"}"));
	assert_null(strstr(out, "rover_con_p_process_threads"));	/* its family went with its only series */
	assert_non_null(strstr(out, "rover_con_p_process_cpu{pid=\"123\"} 3\n"));
	assert_non_null(strstr(out, "rover_con_p_http_error_rate{pid=\"7\",uri=\"x,pid=\\\"12\\\"\"} 4\n"));
	assert_non_null(strstr(out, "other_process_cpu{comm=\"a\",pid=\"12\"} 5\n"));
	assert_non_null(strstr(out, "rover_con_p_tgid{tgid=\"12\"} 6\n"));
	assert_non_null(strstr(out, "rover_con_p_parent{pid=\"8\",ppid=\"12\"} 7\n"));
	assert_int_equal(prom_table__drop(t, "rover_con_p_", "pid", "12"), 0);
	/* an empty prefix: every family */
	assert_int_equal(prom_table__drop(t, "", "pid", "12"), 1);
	prom_table__stats(t, &st);
	assert_int_equal(st.series_dropped_by_label, 3);
	assert_int_equal(st.series, 4);
	assert_int_equal(prom_table__drop(t, "x", "", "1"), -EINVAL);
	assert_int_equal(prom_table__drop(t, "x", NULL, "1"), -EINVAL);
	/* the slots are free again: the same series comes back */
	assert_int_equal(prom_table__update(t, &(struct prom_meter){ .name = "rover_con_p_process_cpu", .value = 9,
								       .labels = p12, .n_labels = 2 }, 0), 0);
	out = render(t, &b);
	assert_non_null(strstr(out, "rover_con_p_process_cpu{comm=\"a\",pid=\"12\"} 9\n"));
	prom_buf__release(&b);
	prom_table__free(t);
}

static void test_many_series(void **state)
{
	struct prom_table *t = prom_table__new(0);
	struct prom_buf b = { 0 };
	struct prom_label l[2] = { { "a", NULL }, { "b", "x" } };
	struct prom_bucket bk[] = { { 0.5, 1 }, { 5, 2 } };
	char v[16], name[32];
	size_t lines = 0;
	(void)state;

	for (int i = 0; i < PROM_DEFAULT_MAX_SERIES + 10; i++) {
		struct prom_meter m = { .name = name, .labels = l, .n_labels = 2, .value = i };
		snprintf(v, sizeof(v), "%d", i % 100);
		snprintf(name, sizeof(name), "fam_%d", i / 100);
		l[0].value = v;
		if (i % 3 == 0) {
			m.buckets = bk;
			m.n_buckets = 2;
			m.hist_count = 3;
			snprintf(name, sizeof(name), "hist_%d", i / 100);
		}
		prom_table__update(t, &m, 1);
	}
	render(t, &b);
	for (size_t i = 0; i < b.len; i++)
		lines += b.p[i] == '\n';
	struct prom_table_stats st;
	prom_table__stats(t, &st);
	assert_int_equal(st.series, PROM_DEFAULT_MAX_SERIES);
	assert_int_equal(st.series_dropped, 10);
	/* 2 header lines per family; gauges 1 line, histograms 5 lines per series */
	size_t hist = 0;
	for (int i = 0; i < PROM_DEFAULT_MAX_SERIES; i++)
		hist += i % 3 == 0;
	assert_int_equal(lines, 2 * st.families + (PROM_DEFAULT_MAX_SERIES - hist) + 5 * hist);
	assert_int_equal(st.render_bytes, b.len);
	prom_buf__release(&b);
	prom_table__free(t);
}

static void test_format_double(void **state)
{
	char buf[64];
	double vals[] = { 0.1, 1.0 / 3, 1e21, 123456789012345678.0, 5e-324, -2.5, 0 };
	(void)state;

	prom_text__format_double(42, buf, sizeof(buf));
	assert_string_equal(buf, "42");
	prom_text__format_double(0.1, buf, sizeof(buf));
	assert_string_equal(buf, "0.1");
	prom_text__format_double(1e21, buf, sizeof(buf));
	assert_string_equal(buf, "1e+21");
	prom_text__format_double(NAN, buf, sizeof(buf));
	assert_string_equal(buf, "NaN");
	prom_text__format_double(INFINITY, buf, sizeof(buf));
	assert_string_equal(buf, "+Inf");
	prom_text__format_double(-INFINITY, buf, sizeof(buf));
	assert_string_equal(buf, "-Inf");
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		prom_text__format_double(vals[i], buf, sizeof(buf));
		assert_true(strtod(buf, NULL) == vals[i]);
	}
}

/* The checker must be able to fail, or the other tests prove nothing. */
static void test_grammar_checker_rejects(void **state)
{
	static const char *const bad[] = {
		"x 1\n",						/* no TYPE */
		"# HELP x h\n# TYPE x gauge\nx 1",			/* no final newline */
		"# HELP x h\n# TYPE x gauge\nx{a=\"\\q\"} 1\n",		/* bad escape */
		"# HELP x h\n# TYPE x gauge\nx{a=\"1\",a=\"2\"} 1\n",	/* duplicate label */
		"# HELP x h\n# TYPE x gauge\nx 1\nx 2\n",		/* duplicate sample */
		"# HELP x h\n# TYPE x counter\nx 1\n",			/* counter without _total */
		"# HELP x h\n# TYPE x gauge\ny 1\n",			/* outside its family */
		"# HELP x h\n# TYPE x gauge\nx 1.2.3\n",		/* bad number */
		"# HELP x h\n# TYPE x gauge\nx{1a=\"v\"} 1\n",		/* bad label name */
		"# HELP x h\n# TYPE x gauge\nx{a=\"\xff\"} 1\n",	/* invalid UTF-8 */
		"# HELP h h\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",	/* no +Inf */
		"# HELP h h\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
		"# HELP h h\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",	/* count != +Inf */
		"# HELP x h\n# TYPE x gauge\n# HELP x h\n# TYPE x gauge\n",	/* second HELP */
	};
	char why[256];
	(void)state;

	const char *good = "# HELP x h\n# TYPE x gauge\nx{a=\"b\"} -1e+21\n";
	assert_int_equal(prom_grammar_check(good, strlen(good), why, sizeof(why)), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (!prom_grammar_check(bad[i], strlen(bad[i]), why, sizeof(why)))
			fail_msg("checker accepted bad input %zu:\n%s", i, bad[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counter_and_gauge),
		cmocka_unit_test(test_label_order_and_sorting),
		cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_sanitize),
		cmocka_unit_test(test_conflicts),
		cmocka_unit_test(test_cap_and_expiry),
		cmocka_unit_test(test_drop_by_label),
		cmocka_unit_test(test_many_series),
		cmocka_unit_test(test_format_double),
		cmocka_unit_test(test_grammar_checker_rejects),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
