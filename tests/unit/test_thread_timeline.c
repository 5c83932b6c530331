/* Unit tests for exporter/thread_timeline: bounds, order, escaping, the JSON island. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <json-c/json.h>

#include "exporter/thread_timeline.h"
#include "exporter/utf8.h"

#define T0 1714564800000000000ull

/* ---- helpers --------------------------------------------------------------- */

static char *html(const struct thread_timeline *tl, const char *title)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(thread_timeline__write_html(tl, title, f), 0);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(strlen(buf), len);	/* no NUL byte in the page */
	return buf;
}

static size_t count_substr(const char *h, const char *needle)
{
	size_t n = 0, k = strlen(needle);

	for (const char *p = strstr(h, needle); p; p = strstr(p + k, needle))
		n++;
	return n;
}

/* The <script type="application/json"> island, parsed by json-c. */
static struct json_object *island(const char *page)
{
	static const char open[] = "<script type=\"application/json\" id=\"tl-data\">";
	const char *a = strstr(page, open), *b;
	struct json_object *o;
	char *text;

	assert_non_null(a);
	a += sizeof(open) - 1;
	b = strstr(a, "</script>");
	assert_non_null(b);
	text = strndup(a, b - a);
	assert_non_null(text);
	o = json_tokener_parse(text);
	free(text);
	assert_non_null(o);
	assert_true(json_object_is_type(o, json_type_object));
	return o;
}

static struct json_object *member(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	assert_true(json_object_object_get_ex(o, key, &v));
	return v;
}

static struct json_object *at(struct json_object *arr, size_t i)
{
	assert_true(i < json_object_array_length(arr));
	return json_object_array_get_idx(arr, i);
}

static uint64_t num_at(struct json_object *arr, size_t i)
{
	return json_object_get_uint64(at(arr, i));
}

/* The island's string for id i of an event or thread array. */
static const char *str_of(struct json_object *root, struct json_object *arr, size_t i)
{
	return json_object_get_string(at(member(root, "strings"), num_at(arr, i)));
}

static bool valid_utf8(const char *s)
{
	size_t n = strlen(s);

	for (size_t i = 0, k; i < n; i += k) {
		k = utf8__char_len((const unsigned char *)s + i, n - i);
		if (!k)
			return false;
	}
	return true;
}

static struct tl_event ev(uint32_t tgid, uint32_t tid, const char *type, uint64_t start, uint64_t end)
{
	return (struct tl_event){
		.tid = tid, .tgid = tgid, .thread_comm = "worker", .proc_name = "app",
		.name = type, .type = type, .start_ns = start, .end_ns = end,
		.duration_ns = end - start, .count = 1,
	};
}

/* Event fields in the island: [thread, name, type, start, end, dur, count, stack, file, sock, futex, ongoing]. */
enum { E_THREAD, E_NAME, E_TYPE, E_START, E_END, E_DUR, E_COUNT, E_STACK, E_FILE, E_SOCK, E_FUTEX, E_ONGOING };

/* ---- tests ----------------------------------------------------------------- */

static void test_lifecycle(void **state)
{
	struct thread_timeline_stats st;
	struct thread_timeline *tl;
	struct tl_event e = ev(1, 1, "oncpu", 10, 20);

	(void)state;
	assert_null(thread_timeline__free(NULL));
	thread_timeline__stats(NULL, &st);
	assert_int_equal(st.events, 0);
	tl = thread_timeline__new(0);
	assert_non_null(tl);
	assert_int_equal(thread_timeline__add(NULL, &e), -EINVAL);
	assert_int_equal(thread_timeline__add(tl, NULL), -EINVAL);
	assert_int_equal(thread_timeline__write_html(NULL, "t", stdout), -EINVAL);
	assert_int_equal(thread_timeline__write_html(tl, "t", NULL), -EINVAL);
	/* end before start: the caller's error, refused, not a drop */
	e.end_ns = 5;
	assert_int_equal(thread_timeline__add(tl, &e), -EINVAL);
	thread_timeline__stats(tl, &st);
	assert_int_equal(st.events, 0);
	assert_int_equal(st.dropped, 0);
	assert_int_equal(st.invalid, 1);
	assert_null(thread_timeline__free(tl));
}

static void test_empty(void **state)
{
	struct thread_timeline *tl = thread_timeline__new(0);
	struct json_object *root;
	char *page;

	(void)state;
	assert_non_null(tl);
	page = html(tl, NULL);
	assert_non_null(strstr(page, "<title>ember thread timeline</title>"));
	assert_non_null(strstr(page, "No events."));
	assert_non_null(strstr(page, "0 threads in 0 processes, 0 events"));
	assert_null(strstr(page, "id=\"dropped\""));
	root = island(page);
	assert_int_equal(json_object_array_length(member(root, "events")), 0);
	assert_int_equal(json_object_array_length(member(root, "threads")), 0);
	assert_int_equal(json_object_get_uint64(member(root, "span")), 0);
	json_object_put(root);
	free(page);
	thread_timeline__free(tl);
}

/* Threads sorted by (tgid, tid), events by (thread, start), times from the first start. */
static void test_order_and_fields(void **state)
{
	struct thread_timeline *tl = thread_timeline__new(0);
	struct thread_timeline_stats st;
	struct json_object *root, *thr, *evs, *e;
	struct tl_event a = ev(200, 201, "net", T0 + 500, T0 + 900);
	struct tl_event b = ev(100, 102, "file", T0 + 300, T0 + 400);
	struct tl_event c = ev(100, 100, "lock", T0 + 100, T0 + 5000);
	struct tl_event d = ev(100, 102, "oncpu", T0 + 50, T0 + 60);
	char *page;

	(void)state;
	a.sock_conn = "10.0.0.1:4000 -> 10.0.0.2:80";
	a.proc_name = "nginx";
	a.thread_comm = "nginx";
	b.file_path = "/etc/hosts";
	b.count = 7;
	b.duration_ns = 42;
	b.stack = "main;load;read";
	c.futex_op = "wait";
	c.ongoing = true;
	c.thread_comm = "old-name";
	d.thread_comm = "";	/* absent: keeps the name it had */
	d.proc_name = NULL;
	assert_non_null(tl);
	assert_int_equal(thread_timeline__add(tl, &a), 0);
	assert_int_equal(thread_timeline__add(tl, &b), 0);
	assert_int_equal(thread_timeline__add(tl, &c), 0);
	assert_int_equal(thread_timeline__add(tl, &d), 0);
	c.thread_comm = "new-name";	/* renamed: the lane takes the latest name */
	c.start_ns = T0 + 6000;
	c.end_ns = T0 + 6100;
	c.ongoing = false;
	c.futex_op = NULL;
	assert_int_equal(thread_timeline__add(tl, &c), 0);
	thread_timeline__stats(tl, &st);
	assert_int_equal(st.events, 5);
	assert_int_equal(st.threads, 3);
	assert_int_equal(st.dropped, 0);

	page = html(tl, "order");
	assert_non_null(strstr(page, "3 threads in 2 processes, 5 events"));
	assert_non_null(strstr(page, "From 2024-05-01 12:00:00.000000050 UTC to 2024-05-01 12:00:00.000006100 UTC"));
	root = island(page);
	assert_string_equal(json_object_get_string(member(root, "t0")), "1714564800000000050");
	assert_int_equal(json_object_get_uint64(member(root, "span")), 6050);
	assert_int_equal(json_object_get_uint64(member(root, "dropped")), 0);
	assert_string_equal(json_object_get_string(at(member(root, "strings"), 0)), "");

	thr = member(root, "threads");
	assert_int_equal(json_object_array_length(thr), 3);
	assert_int_equal(num_at(at(thr, 0), 0), 100);
	assert_int_equal(num_at(at(thr, 0), 1), 100);
	assert_string_equal(str_of(root, at(thr, 0), 2), "new-name");
	assert_int_equal(num_at(at(thr, 1), 1), 102);
	assert_string_equal(str_of(root, at(thr, 1), 2), "worker");
	assert_string_equal(str_of(root, at(thr, 1), 3), "app");
	assert_int_equal(num_at(at(thr, 2), 0), 200);
	assert_string_equal(str_of(root, at(thr, 2), 3), "nginx");

	evs = member(root, "events");
	assert_int_equal(json_object_array_length(evs), 5);
	/* thread 0 (100/100): c then its renamed successor */
	e = at(evs, 0);
	assert_int_equal(num_at(e, E_THREAD), 0);
	assert_string_equal(str_of(root, e, E_TYPE), "lock");
	assert_int_equal(num_at(e, E_START), 50);
	assert_int_equal(num_at(e, E_END), 4950);
	assert_string_equal(str_of(root, e, E_FUTEX), "wait");
	assert_int_equal(num_at(e, E_ONGOING), 1);
	e = at(evs, 1);
	assert_int_equal(num_at(e, E_START), 5950);
	assert_int_equal(num_at(e, E_ONGOING), 0);
	assert_int_equal(num_at(e, E_FUTEX), 0);
	/* thread 1 (100/102): d (start 50) before b (start 300) */
	e = at(evs, 2);
	assert_int_equal(num_at(e, E_THREAD), 1);
	assert_string_equal(str_of(root, e, E_TYPE), "oncpu");
	assert_int_equal(num_at(e, E_START), 0);
	e = at(evs, 3);
	assert_string_equal(str_of(root, e, E_NAME), "file");
	assert_string_equal(str_of(root, e, E_FILE), "/etc/hosts");
	assert_string_equal(str_of(root, e, E_STACK), "main;load;read");
	assert_int_equal(num_at(e, E_DUR), 42);
	assert_int_equal(num_at(e, E_COUNT), 7);
	assert_int_equal(num_at(e, E_SOCK), 0);
	e = at(evs, 4);
	assert_int_equal(num_at(e, E_THREAD), 2);
	assert_string_equal(str_of(root, e, E_SOCK), "10.0.0.1:4000 -> 10.0.0.2:80");
	json_object_put(root);
	free(page);
	thread_timeline__free(tl);
}

/* Past max_events: -ENOSPC, counted, and said in the page. */
static void test_bounds(void **state)
{
	struct thread_timeline *tl = thread_timeline__new(3);
	struct thread_timeline_stats st;
	struct json_object *root;
	char big[700], *page;

	(void)state;
	assert_non_null(tl);
	for (int i = 0; i < 5; i++) {
		struct tl_event e = ev(1, 1, "oncpu", T0 + i * 10, T0 + i * 10 + 5);

		assert_int_equal(thread_timeline__add(tl, &e), i < 3 ? 0 : -ENOSPC);
	}
	thread_timeline__stats(tl, &st);
	assert_int_equal(st.events, 3);
	assert_int_equal(st.dropped, 2);
	page = html(tl, "bounded");
	assert_non_null(strstr(page, "<p id=\"dropped\" class=\"warn\">2 events dropped (past the limit of 3 events"));
	root = island(page);
	assert_int_equal(json_object_get_uint64(member(root, "dropped")), 2);
	assert_int_equal(json_object_array_length(member(root, "events")), 3);
	json_object_put(root);
	free(page);
	thread_timeline__free(tl);

	/* The string arena: 512 bytes per event of the bound. */
	tl = thread_timeline__new(1);
	assert_non_null(tl);
	memset(big, 'f', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	{
		struct tl_event e = ev(1, 1, "oncpu", T0, T0 + 1);

		e.stack = big;
		assert_int_equal(thread_timeline__add(tl, &e), -ENOSPC);
		e.stack = "main;f";
		assert_int_equal(thread_timeline__add(tl, &e), 0);
	}
	thread_timeline__stats(tl, &st);
	assert_int_equal(st.events, 1);
	assert_int_equal(st.dropped, 1);
	assert_true(st.arena_bytes <= 512);
	thread_timeline__free(tl);
}

/* A string repeated in every event is stored once. */
static void test_interning(void **state)
{
	struct thread_timeline *tl = thread_timeline__new(0);
	struct thread_timeline_stats st;
	char stack[300];

	(void)state;
	assert_non_null(tl);
	memset(stack, 'a', sizeof(stack) - 1);
	stack[sizeof(stack) - 1] = '\0';
	for (uint32_t i = 0; i < 20000; i++) {
		struct tl_event e = ev(1 + i % 40, 1 + i % 400, "file", T0 + i, T0 + i + 1);

		e.stack = stack;
		assert_int_equal(thread_timeline__add(tl, &e), 0);
	}
	thread_timeline__stats(tl, &st);
	assert_int_equal(st.events, 20000);
	assert_int_equal(st.threads, 400);
	assert_true(st.arena_bytes < 400);
	thread_timeline__free(tl);
}

/*
 * Hostile strings in every field and the title: nothing of them reaches
 * the page but escaped, the page is UTF-8, and the island parses back to
 * the same strings (bad bytes as U+FFFD).
 */
static void test_escaping(void **state)
{
	static const char inject[] = "</script><script>alert(1)</script>";
	static const char quotes[] = "a\"b'c\\d";
	static const char ctrl[] = "line1\nline2\r\t\x01\x1f\x7f end";
	static const char bad[] = "x\xff\xfey\xc3(\xe2\x82";
	static const char comment[] = "<!--<script>";
	static const char seps[] = "p\xe2\x80\xa8q\xe2\x80\xa9r \xc3\xa9\xf0\x9f\x98\x80";
	struct thread_timeline *tl = thread_timeline__new(0);
	struct json_object *root, *e, *t;
	struct tl_event x = ev(7, 8, "net", T0, T0 + 100);
	char *page;

	(void)state;
	assert_non_null(tl);
	x.thread_comm = inject;
	x.proc_name = quotes;
	x.name = ctrl;
	x.stack = "main;</script>;<!--;x\xff";
	x.file_path = bad;
	x.sock_conn = comment;
	x.futex_op = seps;
	assert_int_equal(thread_timeline__add(tl, &x), 0);
	page = html(tl, "T </script><script>alert(1)</script> & \"q\" 'a' \x01 \xff");

	/* Only the page's own two scripts; no raw injection, no raw bad bytes. */
	assert_int_equal(count_substr(page, "<script"), 2);
	assert_int_equal(count_substr(page, "</script>"), 2);
	assert_null(strstr(page, "<script>alert"));
	assert_null(strstr(page, "<!--"));
	assert_null(strchr(page, '\x01'));
	assert_null(strchr(page, '\x7f'));
	assert_true(valid_utf8(page));
	assert_null(strstr(page, "http://"));
	assert_null(strstr(page, "https://"));
	/* the title as HTML text */
	assert_non_null(strstr(page, "<title>T &lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt; &amp; "
				     "&quot;q&quot; &#39;a&#39; \xef\xbf\xbd \xef\xbf\xbd</title>"));
	/* the island's escapes as written */
	assert_non_null(strstr(page, "\"<\\/script>\\u003cscript>alert(1)<\\/script>\""));
	assert_non_null(strstr(page, "\"a\\\"b'c\\\\d\""));
	assert_non_null(strstr(page, "\"line1\\nline2\\r\\t\\u0001\\u001f\\u007f end\""));
	assert_non_null(strstr(page, "\"x\\ufffd\\ufffdy\\ufffd(\\ufffd\\ufffd\""));
	assert_non_null(strstr(page, "\"\\u003c!--\\u003cscript>\""));
	assert_non_null(strstr(page, "\"p\\u2028q\\u2029r \xc3\xa9\xf0\x9f\x98\x80\""));

	/* and parsed back */
	root = island(page);
	t = at(member(root, "threads"), 0);
	assert_string_equal(str_of(root, t, 2), inject);
	assert_string_equal(str_of(root, t, 3), quotes);
	e = at(member(root, "events"), 0);
	assert_string_equal(str_of(root, e, E_NAME), ctrl);
	assert_string_equal(str_of(root, e, E_STACK), "main;</script>;<!--;x\xef\xbf\xbd");
	assert_string_equal(str_of(root, e, E_FILE), "x\xef\xbf\xbd\xef\xbf\xbdy\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd");
	assert_string_equal(str_of(root, e, E_SOCK), comment);
	assert_string_equal(str_of(root, e, E_FUTEX), seps);
	json_object_put(root);
	free(page);
	thread_timeline__free(tl);
}

/* The page is whole and offline: one file, no URL to fetch. */
static void test_self_contained(void **state)
{
	struct thread_timeline *tl = thread_timeline__new(0);
	struct tl_event e = ev(1, 2, "sched", T0, T0 + 1000);
	char *page;

	(void)state;
	assert_non_null(tl);
	assert_int_equal(thread_timeline__add(tl, &e), 0);
	page = html(tl, "offline");
	assert_int_equal(strncmp(page, "<!DOCTYPE html>\n", 16), 0);
	assert_non_null(strstr(page, "</html>\n"));
	assert_null(strstr(page, " src="));
	assert_null(strstr(page, "<link"));
	assert_null(strstr(page, "@import"));
	for (const char *p = strstr(page, "href="); p; p = strstr(p + 1, "href="))
		assert_true(p[5] == '"' && p[6] == '#');
	assert_null(strstr(page, "innerHTML"));
	assert_non_null(strstr(page, "id=\"zoom-in\""));
	assert_non_null(strstr(page, "id=\"reset\""));
	assert_non_null(strstr(page, "still in progress at the end"));
	free(page);
	thread_timeline__free(tl);
}

static void test_write_error(void **state)
{
	struct thread_timeline *tl = thread_timeline__new(0);
	struct tl_event e = ev(1, 2, "sched", T0, T0 + 1000);
	FILE *f;

	(void)state;
	assert_non_null(tl);
	assert_int_equal(thread_timeline__add(tl, &e), 0);
	f = fopen("/dev/full", "w");
	if (f) {
		assert_int_equal(thread_timeline__write_html(tl, "full", f), -EIO);
		fclose(f);
	}
	thread_timeline__free(tl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lifecycle),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_order_and_fields),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_interning),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_self_contained),
		cmocka_unit_test(test_write_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
