/*
 * analyzer/net/sampler: trace contexts (sw8, b3, x-b3-*), the first matching
 * rule (regex rules before the default), reasons (5xx, 4xx, slow), the 10
 * slowest per URI and reason, bodies as the rule asks, and what is counted
 * as not kept.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/net/sampler.h"

/* "1-" base64("trace-1") "-" base64("seg-1") "-3-..." */
#define SW8 "1-dHJhY2UtMQ==-c2VnLTE=-3-c3Zj-aW5z-L2Vw-aDo4MA=="

static struct l7_record rec(const char *uri, int status, uint64_t dur_ms, const char *hk, const char *hv)
{
	struct l7_record r;

	l7_record__init(&r, "http1");
	r.has_request = r.has_response = true;
	r.req_ts_ns = 1000000000;
	r.resp_ts_ns = r.req_ts_ns + dur_ms * 1000000;
	r.status = status;
	r.is_error = status >= 500;
	r.is_client_error = status >= 400 && status < 500;
	l7_record__add_str(&r, "method", "GET", 3);
	l7_record__add_str(&r, "uri", uri, strlen(uri));
	if (hk)
		l7_record__add_str(&r, hk, hv, strlen(hv));
	return r;
}

static const struct sampler_ctx ctx = { .pid = 7, .process_name = "app", .connection_id = 1, .side = "server",
					.peer = "10.0.0.9:5000", .local = "10.0.0.1:80", .req_unix_ns = 1 };

static void test_trace_contexts(void **state)
{
	struct sampler_trace t;
	struct l7_record r;

	(void)state;
	r = rec("/", 200, 1, "sw8", SW8);
	assert_int_equal(sampler__trace_of(&r, &t), 1);
	assert_string_equal(t.provider, "skywalking");
	assert_string_equal(t.trace_id, "trace-1");
	assert_string_equal(t.segment_id, "seg-1");
	assert_string_equal(t.span_id, "3");
	r = rec("/", 200, 1, "b3", "80f198ee56343ba8-e457b5a2e4d86bd1-1");
	assert_int_equal(sampler__trace_of(&r, &t), 1);
	assert_string_equal(t.provider, "zipkin");
	assert_string_equal(t.trace_id, "80f198ee56343ba8");
	assert_string_equal(t.span_id, "e457b5a2e4d86bd1");
	r = rec("/", 200, 1, "x-b3-traceid", "463ac35c9f6413ad");
	assert_int_equal(sampler__trace_of(&r, &t), 1);
	assert_string_equal(t.trace_id, "463ac35c9f6413ad");
	/* Malformed values are no trace context, told apart from none. */
	r = rec("/", 200, 1, "sw8", "1-not base64!-x-1");
	assert_int_equal(sampler__trace_of(&r, &t), -EINVAL);
	r = rec("/", 200, 1, "sw8", "2-dHJhY2UtMQ==-c2VnLTE=-3");
	assert_int_equal(sampler__trace_of(&r, &t), -EINVAL);
	r = rec("/", 200, 1, "b3", "only\x01" "bad");
	assert_int_equal(sampler__trace_of(&r, &t), -EINVAL);
	r = rec("/", 200, 1, "x-b3-traceid", "");
	assert_int_equal(sampler__trace_of(&r, &t), -EINVAL);
	/* a malformed sw8 beside a good b3: the b3 */
	r = rec("/", 200, 1, "sw8", "garbage");
	l7_record__add_str(&r, "b3", "aa-bb", 5);
	assert_int_equal(sampler__trace_of(&r, &t), 1);
	assert_string_equal(t.provider, "zipkin");
	r = rec("/", 200, 1, NULL, NULL);
	assert_int_equal(sampler__trace_of(&r, &t), 0);
}

static struct task_def *task_with_rules(void)
{
	struct task_def *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	t->nsamplings = 2;
	/* The default rule comes first in the list; the regex rule still wins for its URIs. */
	t->samplings[0] = (struct task_sampling){ .has_min_duration = true, .min_duration_ms = 100, .when_5xx = true };
	t->samplings[1] = (struct task_sampling){ .uri_regex = "^/api/", .when_4xx = true, .when_5xx = true,
						  .complete_response = true, .max_response_size = 4 };
	return t;
}

static const char *reason_of_uri(Ember__NetSampledTrace **s, size_t n, const char *uri)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s[i]->uri, uri))
			return s[i]->reason;
	return NULL;
}

static void test_rules_and_reasons(void **state)
{
	struct task_def *t = task_with_rules();
	struct sampler *s = sampler__new(t);
	Ember__NetSampledTrace **out;
	struct sampler_counts cn;
	struct l7_record r;
	size_t n;

	(void)state;
	assert_non_null(s);
	assert_int_equal(sampler__body_limit(s), 4);
	r = rec("/api/a", 404, 1, "sw8", SW8);       /* the /api/ rule: 4xx */
	sampler__offer(s, &r, &ctx);
	r = rec("/page", 404, 500, "sw8", SW8);      /* default rule: no 4xx, but slow */
	sampler__offer(s, &r, &ctx);
	r = rec("/fast", 200, 5, "sw8", SW8);        /* default rule: nothing */
	sampler__offer(s, &r, &ctx);
	r = rec("/api/slow", 200, 900, "sw8", SW8);  /* /api/ rule has no minimum: nothing */
	sampler__offer(s, &r, &ctx);
	r = rec("/err", 503, 1, NULL, NULL);         /* no trace context: counted, not kept */
	sampler__offer(s, &r, &ctx);
	r = rec("/api/body", 500, 2, "b3", "aa-bb");
	r.resp_body = (const uint8_t *)"0123456789";
	r.resp_body_len = 10;
	{
		/* The calls behind it go with a rule that keeps bodies, their device named. */
		static const struct sampler_call calls[2] = {
			{ .start_unix_ns = 10, .end_unix_ns = 20, .name = "Recvfrom", .pkts = 1, .pkt_bytes = 80, .ifindex = 1 },
			{ .start_unix_ns = 30, .end_unix_ns = 40, .name = "Writev", .pkts = 3, .pkt_bytes = 4000,
			  .ifindex = 1, .rtt_us = 12 },
		};
		struct sampler_ctx c2 = ctx;

		c2.calls = calls;
		c2.ncalls = 2;
		c2.ssl = true;
		sampler__offer(s, &r, &c2);
		r = rec("/page", 404, 600, "sw8", SW8);      /* the default rule keeps no body: no calls */
		sampler__offer(s, &r, &c2);
	}
	n = sampler__take(s, &out, &cn);
	assert_int_equal(n, 4);   /* /page twice */
	assert_int_equal(cn.not_kept, 0);
	assert_int_equal(cn.no_trace, 1);
	assert_int_equal(cn.bad_trace, 0);
	assert_string_equal(reason_of_uri(out, n, "/api/a"), "status_4xx");
	assert_string_equal(reason_of_uri(out, n, "/page"), "slow");
	assert_string_equal(reason_of_uri(out, n, "/api/body"), "status_5xx");
	for (size_t i = 0; i < n; i++) {
		if (strcmp(out[i]->uri, "/api/body"))
			continue;
		assert_string_equal(out[i]->trace_provider, "zipkin");
		assert_int_equal(out[i]->response.len, 4);
		assert_memory_equal(out[i]->response.data, "0123", 4);
		assert_true(out[i]->response_truncated);
		assert_string_equal(out[i]->local_address, "10.0.0.1:80");
		assert_string_equal(out[i]->exchange->peer_address, "10.0.0.9:5000");
		assert_true(out[i]->exchange->ssl);
		assert_int_equal(out[i]->n_syscalls, 2);
		assert_string_equal(out[i]->syscalls[0]->name, "Recvfrom");
		assert_int_equal(out[i]->syscalls[0]->package_count, 1);
		assert_int_equal(out[i]->syscalls[0]->package_size, 80);
		assert_string_equal(out[i]->syscalls[0]->ifname, "lo");
		assert_int_equal(out[i]->syscalls[1]->start_unix_ns, 30);
		assert_int_equal(out[i]->syscalls[1]->end_unix_ns, 40);
		assert_string_equal(out[i]->syscalls[1]->name, "Writev");
		assert_int_equal(out[i]->syscalls[1]->rtt_us, 12);
	}
	for (size_t i = 0; i < n; i++)
		if (!strcmp(out[i]->uri, "/page"))
			assert_int_equal(out[i]->n_syscalls, 0);
	sampler__reset(s);
	assert_int_equal(sampler__take(s, &out, &cn), 0);
	assert_int_equal(cn.no_trace, 0);
	sampler__free(s);
	free(t);
}

static void test_top_ten_slowest(void **state)
{
	struct task_def *t = task_with_rules();
	struct sampler *s = sampler__new(t);
	Ember__NetSampledTrace **out;
	struct sampler_counts cn;
	uint64_t min = UINT64_MAX;
	struct l7_record r;
	size_t n;

	(void)state;
	/* 30 slow exchanges of one URI, 100..390 ms in a shuffled order: the 10 slowest stay. */
	for (int i = 0; i < 30; i++) {
		r = rec("/slow", 200, 100 + (uint64_t)((i * 7) % 30) * 10, "sw8", SW8);
		sampler__offer(s, &r, &ctx);
	}
	n = sampler__take(s, &out, &cn);
	assert_int_equal(n, SAMPLER_TOP);
	assert_int_equal(cn.not_kept, 20);
	for (size_t i = 0; i < n; i++)
		if (out[i]->exchange->duration_ns < min)
			min = out[i]->exchange->duration_ns;
	assert_int_equal(min, 300 * 1000000ull);
	sampler__free(s);
	free(t);
}

/*
 * Exchanges the rules would sample but that carry no trace context, or only
 * a malformed one, are counted by reason; those no rule samples are not.
 */
static void test_untraced_counted(void **state)
{
	struct task_def *t = task_with_rules();
	struct sampler *s = sampler__new(t);
	Ember__NetSampledTrace **out;
	struct sampler_counts cn;
	struct l7_record r;

	(void)state;
	for (int i = 0; i < 5; i++) {
		r = rec("/api/x", 500, 1, NULL, NULL);            /* 5xx, the /api/ rule: no trace */
		sampler__offer(s, &r, &ctx);
	}
	r = rec("/slow", 200, 300, "user-agent", "curl");       /* slow, default rule: no trace */
	sampler__offer(s, &r, &ctx);
	r = rec("/api/y", 404, 1, "sw8", "1-not base64!-x-1");  /* 4xx: a malformed sw8 */
	sampler__offer(s, &r, &ctx);
	r = rec("/slow", 200, 300, "b3", "nodash");             /* slow: a malformed b3 */
	sampler__offer(s, &r, &ctx);
	r = rec("/fast", 200, 5, NULL, NULL);                   /* no rule samples it: not counted */
	sampler__offer(s, &r, &ctx);
	r = rec("/api/z", 200, 900, "sw8", "garbage");          /* the /api/ rule has no minimum: not counted */
	sampler__offer(s, &r, &ctx);
	r = rec("/api/q", 500, 1, "sw8", SW8);                  /* traced: kept */
	sampler__offer(s, &r, &ctx);
	assert_int_equal(sampler__take(s, &out, &cn), 1);
	assert_int_equal(cn.no_trace, 6);
	assert_int_equal(cn.bad_trace, 2);
	assert_int_equal(cn.not_kept, 0);
	/* a report's counts are its own */
	sampler__reset(s);
	r = rec("/api/x", 500, 1, NULL, NULL);
	sampler__offer(s, &r, &ctx);
	assert_int_equal(sampler__take(s, &out, &cn), 0);
	assert_int_equal(cn.no_trace, 1);
	assert_int_equal(cn.bad_trace, 0);
	sampler__free(s);
	free(t);
}

static void test_bad_regex(void **state)
{
	struct task_def *t = task_with_rules();

	(void)state;
	strcpy(t->samplings[1].uri_regex, "([");
	assert_null(sampler__new(t));
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trace_contexts),
		cmocka_unit_test(test_rules_and_reasons),
		cmocka_unit_test(test_top_ten_slowest),
		cmocka_unit_test(test_untraced_counted),
		cmocka_unit_test(test_bad_regex),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
