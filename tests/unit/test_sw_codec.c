/* exporter/sw_codec: OAP task command decoding (with a NETWORK task's sampling rules), profiling data and
 * meter messages. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "exporter/skywalking/codec.h"
#include "proto/sw_meter.pb-c.h"
#include "proto/sw_profile.pb-c.h"

/* ---- a command built from key/value pairs ---- */

struct cmd {
	Skywalking__V3__Command c;
	Skywalking__V3__KeyStringValuePair kv[16], *p[16];
};

static void cmd_init(struct cmd *k, const char *name)
{
	memset(k, 0, sizeof(*k));
	skywalking__v3__command__init(&k->c);
	k->c.command = (char *)name;
	k->c.args = k->p;
}

static void cmd_add(struct cmd *k, const char *key, const char *value)
{
	size_t i = k->c.n_args++;
	skywalking__v3__key_string_value_pair__init(&k->kv[i]);
	k->kv[i].key = (char *)key;
	k->kv[i].value = (char *)value;
	k->p[i] = &k->kv[i];
}

/* The OAP's argument order; any value may be overridden (NULL = leave out). */
static void cmd_task(struct cmd *k, const char *target, const char *pids, const char *ext, const char *dur)
{
	cmd_init(k, "EBPFProfilingTaskQuery");
	cmd_add(k, "SerialNumber", "5b9d1a3e-0000-4000-8000-000000000001");
	cmd_add(k, "TaskId", "3f1c0a5e6f0d4c0b9d1e2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f");
	cmd_add(k, "ProcessId", pids);
	cmd_add(k, "TaskUpdateTime", "1700000000123");
	cmd_add(k, "TriggerType", "FIXED_TIME");
	cmd_add(k, "TargetType", target);
	cmd_add(k, "TaskStartTime", "1700000000000");
	cmd_add(k, "ExtensionConfigJSON", ext);
	if (dur)
		cmd_add(k, "FixedTriggerDuration", dur);
}

static void test_decode_valid(void **state)
{
	struct cmd k;
	struct sw_task_cmd t;
	char why[160];

	(void)state;
	cmd_task(&k, "ON_CPU", "abc123", "null", "60");
	assert_int_equal(sw_codec__decode_task(&k.c, &t, why, sizeof(why)), 0);
	assert_string_equal(t.task_id, "3f1c0a5e6f0d4c0b9d1e2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f");
	assert_int_equal(t.n_process_ids, 1);
	assert_string_equal(t.process_ids[0], "abc123");
	assert_int_equal(t.update_time_ms, 1700000000123LL);
	assert_int_equal(t.start_time_ms, 1700000000000LL);
	assert_int_equal(t.duration_s, 60);
	assert_int_equal(t.target, SW_TARGET_ON_CPU);
	assert_int_equal(t.trigger, SW_TRIGGER_FIXED_TIME);
	assert_true(t.extension_null);

	cmd_task(&k, "OFF_CPU", "p1", "{\"NetworkSamplings\": []}  ", "5");
	assert_int_equal(sw_codec__decode_task(&k.c, &t, why, sizeof(why)), 0);
	assert_int_equal(t.target, SW_TARGET_OFF_CPU);
	assert_false(t.extension_null);

	/* NETWORK lists every process of the instance */
	cmd_task(&k, "NETWORK", "p1,p2,p3",
		 "{\"NetworkSamplings\":[{\"URIRegex\":\"/a.*\",\"MinDuration\":10,\"When4xx\":true,\"When5xx\":false,"
		 "\"Settings\":{\"RequireCompleteRequest\":true,\"MaxRequestSize\":100}}]}", "600");
	assert_int_equal(sw_codec__decode_task(&k.c, &t, why, sizeof(why)), 0);
	assert_int_equal(t.target, SW_TARGET_NETWORK);
	assert_int_equal(t.n_process_ids, 3);
	assert_string_equal(t.process_ids[2], "p3");
}

static void expect_invalid(struct cmd *k, const char *why_part)
{
	struct sw_task_cmd t;
	char why[160];

	assert_int_equal(sw_codec__decode_task(&k->c, &t, why, sizeof(why)), -EINVAL);
	if (!strstr(why, why_part))
		fail_msg("reason '%s' does not mention '%s'", why, why_part);
}

static void test_decode_invalid(void **state)
{
	struct cmd k;
	struct sw_task_cmd t;
	char why[160];

	(void)state;
	cmd_init(&k, "ContinuousProfilingPolicyQuery");
	cmd_add(&k, "SerialNumber", "x");
	assert_int_equal(sw_codec__decode_task(&k.c, &t, why, sizeof(why)), -ENOENT);

	cmd_task(&k, "ON_CPU", "p1", "null", NULL);
	expect_invalid(&k, "FixedTriggerDuration");
	cmd_task(&k, "ON_CPU", "p1", "{\"a\": ", "60");
	expect_invalid(&k, "JSON");
	cmd_task(&k, "ON_CPU", "p1", "nullx", "60");
	expect_invalid(&k, "JSON");
	cmd_task(&k, "ON_CPU", "p1", "{} {}", "60");
	expect_invalid(&k, "JSON");
	cmd_task(&k, "ON_CPU", "p1", "", "60");
	expect_invalid(&k, "JSON");
	/* a NETWORK task's is its sampling rules: their decoder refuses it, as the task's failure */
	cmd_task(&k, "NETWORK", "p1", "{\"a\": ", "60");
	assert_int_equal(sw_codec__decode_task(&k.c, &t, why, sizeof(why)), 0);
	cmd_task(&k, "CPU_MAGIC", "p1", "null", "60");
	expect_invalid(&k, "TargetType");
	cmd_task(&k, "ON_CPU", "p1,p2", "null", "60");
	expect_invalid(&k, "exactly one");
	cmd_task(&k, "NETWORK", "p1,,p2", "null", "60");
	expect_invalid(&k, "ProcessId");
	cmd_task(&k, "NETWORK", "p1,", "null", "60");
	expect_invalid(&k, "ProcessId");
	cmd_task(&k, "ON_CPU", "p 1", "null", "60");
	expect_invalid(&k, "ProcessId");
	cmd_task(&k, "ON_CPU", "p1", "null", "-5");
	expect_invalid(&k, "FixedTriggerDuration");
	cmd_task(&k, "ON_CPU", "p1", "null", "0");
	expect_invalid(&k, "FixedTriggerDuration");
	cmd_task(&k, "ON_CPU", "p1", "null", "60");
	cmd_add(&k, "TaskId", "again");
	expect_invalid(&k, "twice");
	cmd_task(&k, "ON_CPU", "p1", "null", "60");
	k.kv[3].value = "12x";	/* TaskUpdateTime */
	expect_invalid(&k, "TaskUpdateTime");
	k.kv[3].value = "99999999999999999999";
	expect_invalid(&k, "TaskUpdateTime");
	cmd_task(&k, "ON_CPU", "p1", "null", "60");
	k.kv[4].value = "CONTINUOUS_PROFILING";
	expect_invalid(&k, "TriggerType");
	cmd_task(&k, "ON_CPU", "p1", "null", "60");
	k.kv[1].value = "";
	expect_invalid(&k, "TaskId");
	cmd_task(&k, "ON_CPU", "p1", "null", "60");
	k.kv[3].value = NULL;	/* protobuf-c never does this, a hostile caller might */
	expect_invalid(&k, "argument 3");
	{
		/* 65 process ids: more than we keep */
		static char many[65 * 3];
		size_t n = 0;
		for (int i = 0; i < 65; i++)
			n += (size_t)snprintf(many + n, sizeof(many) - n, "%s%02d", i ? "," : "", i);
		cmd_task(&k, "NETWORK", many, "null", "60");
		expect_invalid(&k, "more than");
	}
}

/* ---- ExtensionConfigJSON's NetworkSamplings ---- */

static void test_samplings(void **state)
{
	struct sw_sampling r[SW_MAX_SAMPLINGS];
	char why[160], many[4096], big[400];
	size_t o;
	(void)state;

	/* the OAP's encoder omits absent values: the second rule is the default one, without a minimum */
	assert_int_equal(sw_codec__decode_samplings(
				 "{\"NetworkSamplings\":[{\"URIRegex\":\"^/api/(v1|v2)/.*\",\"MinDuration\":200,"
				 "\"When4xx\":false,\"When5xx\":true,\"Settings\":{\"RequireCompleteRequest\":true,"
				 "\"MaxRequestSize\":1024,\"RequireCompleteResponse\":true,\"MaxResponseSize\":-1}},"
				 "{\"When4xx\":true}]}",
				 r, SW_MAX_SAMPLINGS, why, sizeof(why)),
			 2);
	assert_string_equal(r[0].uri_regex, "^/api/(v1|v2)/.*");
	assert_true(r[0].has_min_duration);
	assert_int_equal(r[0].min_duration_ms, 200);
	assert_false(r[0].when_4xx);
	assert_true(r[0].when_5xx);
	assert_true(r[0].complete_request);
	assert_int_equal(r[0].max_request_size, 1024);
	assert_true(r[0].complete_response);
	assert_int_equal(r[0].max_response_size, 0);	/* Rover: <= 0 is no bound */
	assert_string_equal(r[1].uri_regex, "");
	assert_false(r[1].has_min_duration);
	assert_true(r[1].when_4xx);
	assert_false(r[1].when_5xx || r[1].complete_request || r[1].complete_response);
	assert_int_equal(r[1].max_request_size, 0);
	/* null values, other keys, keys in another case (Go's decoder), MinDuration 0 is a minimum */
	assert_int_equal(sw_codec__decode_samplings("{\"networksamplings\":[{\"uriRegex\":null,\"MinDuration\":0,"
						    "\"Settings\":null,\"Extra\":[1]}],\"Other\":{}}",
						    r, SW_MAX_SAMPLINGS, why, sizeof(why)),
			 1);
	assert_string_equal(r[0].uri_regex, "");
	assert_true(r[0].has_min_duration);
	assert_int_equal(r[0].min_duration_ms, 0);
	/* RE2's lazy repetition and intervals a URI needs are taken */
	assert_int_equal(sw_codec__decode_samplings("{\"NetworkSamplings\":[{\"URIRegex\":"
						    "\"^/api/.*?/[0-9]{1,20}(/[a-z]+)*$\"},{\"URIRegex\":\"[a-z]{255}\"}]}",
						    r, SW_MAX_SAMPLINGS, why, sizeof(why)),
			 2);
	/* no rules at all */
	assert_int_equal(sw_codec__decode_samplings("null", r, SW_MAX_SAMPLINGS, why, sizeof(why)), 0);
	assert_int_equal(sw_codec__decode_samplings(" {} ", r, SW_MAX_SAMPLINGS, why, sizeof(why)), 0);
	assert_int_equal(sw_codec__decode_samplings("{\"NetworkSamplings\":null}", r, SW_MAX_SAMPLINGS, why, sizeof(why)),
			 0);
	assert_int_equal(sw_codec__decode_samplings("{\"NetworkSamplings\":[]}", r, SW_MAX_SAMPLINGS, why, sizeof(why)),
			 0);

	/* refused, with the reason */
	static const struct { const char *json, *why; } bad[] = {
		{ "{\"NetworkSamplings\":[", "ExtensionConfigJSON is not valid JSON" },
		{ "{} {}", "ExtensionConfigJSON is not valid JSON" },
		{ "[1]", "ExtensionConfigJSON is not an object" },
		{ "{\"NetworkSamplings\":{}}", "NetworkSamplings is not an array" },
		{ "{\"NetworkSamplings\":[null]}", "sampling rule 1 is not an object" },
		{ "{\"NetworkSamplings\":[{},{\"URIRegex\":\"(a\"}]}",
		  "sampling rule 2: URIRegex '(a' does not compile: Unmatched ( or \\(" },
		{ "{\"NetworkSamplings\":[{\"URIRegex\":\"a{1,1000}\"}]}",
		  "sampling rule 1: URIRegex 'a{1,1000}' repeats too much (one repetition per atom, up to {255}, weight "
		  "1024)" },
		{ "{\"NetworkSamplings\":[{\"URIRegex\":\"(a{1,100}){1,100}\"}]}",
		  "sampling rule 1: URIRegex '(a{1,100}){1,100}' repeats too much (one repetition per atom, up to {255}, "
		  "weight 1024)" },
		{ "{\"NetworkSamplings\":[{\"URIRegex\":\"/a??++\"}]}",
		  "sampling rule 1: URIRegex '/a??++' repeats too much (one repetition per atom, up to {255}, weight 1024)" },
		{ "{\"NetworkSamplings\":[{\"URIRegex\":\"((((((((((a|b?)+)+)+)+)+)+)+)+)+)+\"}]}",
		  "sampling rule 1: URIRegex '((((((((((a|b?)+)+)+)+)+)+)+)+)+)+' repeats too much (one repetition per atom, "
		  "up to {255}, weight 1024)" },
		{ "{\"NetworkSamplings\":[{\"URIRegex\":\"a\\u0000b\"}]}", "sampling rule 1: URIRegex holds a NUL" },
		{ "{\"NetworkSamplings\":[{\"URIRegex\":7}]}", "sampling rule 1: URIRegex is not a string" },
		{ "{\"NetworkSamplings\":[{\"MinDuration\":1.5}]}",
		  "sampling rule 1: MinDuration is not an integer within int32" },
		{ "{\"NetworkSamplings\":[{\"MinDuration\":2147483648}]}",
		  "sampling rule 1: MinDuration is not an integer within int32" },
		{ "{\"NetworkSamplings\":[{\"When5xx\":\"true\"}]}", "sampling rule 1: When5xx is not a boolean" },
		{ "{\"NetworkSamplings\":[{\"Settings\":[]}]}", "sampling rule 1: Settings is not an object" },
		{ "{\"NetworkSamplings\":[{\"Settings\":{\"RequireCompleteRequest\":1}}]}",
		  "sampling rule 1: Settings.RequireCompleteRequest is not a boolean" },
		{ "{\"NetworkSamplings\":[{\"Settings\":{\"MaxResponseSize\":99999999999}}]}",
		  "sampling rule 1: Settings.MaxResponseSize is not an integer within int32" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(sw_codec__decode_samplings(bad[i].json, r, SW_MAX_SAMPLINGS, why, sizeof(why)),
				 -EINVAL);
		assert_string_equal(why, bad[i].why);
	}
	/* a regex of 255 bytes is taken, not one of 256 */
	snprintf(big, sizeof(big), "{\"NetworkSamplings\":[{\"URIRegex\":\"%.*s\"}]}", SW_MAX_URI_REGEX - 1,
		 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	assert_int_equal(sw_codec__decode_samplings(big, r, SW_MAX_SAMPLINGS, why, sizeof(why)), 1);
	assert_int_equal(strlen(r[0].uri_regex), SW_MAX_URI_REGEX - 1);
	snprintf(big, sizeof(big), "{\"NetworkSamplings\":[{\"URIRegex\":\"y%s\"}]}", r[0].uri_regex);
	assert_int_equal(sw_codec__decode_samplings(big, r, SW_MAX_SAMPLINGS, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "sampling rule 1: URIRegex longer than 255 bytes");
	/* SW_MAX_SAMPLINGS rules are taken, one more is refused */
	for (unsigned n = SW_MAX_SAMPLINGS; n <= SW_MAX_SAMPLINGS + 1; n++) {
		o = (size_t)snprintf(many, sizeof(many), "{\"NetworkSamplings\":[");
		for (unsigned i = 0; i < n; i++)
			o += (size_t)snprintf(many + o, sizeof(many) - o, "%s{\"URIRegex\":\"/r%u\",\"When5xx\":true}",
					      i ? "," : "", i);
		snprintf(many + o, sizeof(many) - o, "]}");
		if (n == SW_MAX_SAMPLINGS) {
			assert_int_equal(sw_codec__decode_samplings(many, r, SW_MAX_SAMPLINGS, why, sizeof(why)), n);
			assert_string_equal(r[n - 1].uri_regex, "/r15");
		} else {
			assert_int_equal(sw_codec__decode_samplings(many, r, SW_MAX_SAMPLINGS, why, sizeof(why)), -EINVAL);
			assert_string_equal(why, "17 sampling rules (at most 16)");
		}
	}
}

static void test_parse_i64(void **state)
{
	int64_t v;

	(void)state;
	assert_int_equal(sw_codec__parse_i64("9223372036854775807", &v), 0);
	assert_true(v == INT64_MAX);
	assert_int_equal(sw_codec__parse_i64("9223372036854775808", &v), -ERANGE);
	assert_int_equal(sw_codec__parse_i64("+1", &v), -EINVAL);
	assert_int_equal(sw_codec__parse_i64(" 1", &v), -EINVAL);
	assert_int_equal(sw_codec__parse_i64("", &v), -EINVAL);
	assert_int_equal(sw_codec__parse_i64("0", &v), 0);
	assert_int_equal(v, 0);
}

/* ---- profiling data ---- */

static void test_build_profile(void **state)
{
	char *kf[] = { "do_syscall_64", "entry_SYSCALL_64" };
	char *uf[] = { "leaf", "0x7f00+12", "outer", "main" };
	protobuf_c_boolean kres[] = { 1, 1 }, ures[] = { 1, 0, 1, 1 };
	char *uf2[] = { "leaf", "middle", "outer", "main" };
	Ember__StackSample s[4];
	Ember__StackSample *sp[4] = { &s[0], &s[1], &s[2], &s[3] };
	Ember__Task task = EMBER__TASK__INIT;
	Ember__ProfileBatch b = EMBER__PROFILE_BATCH__INIT;
	struct sw_profile_meta m = { .task_id = "T1", .process_id = "P1", .profiling_start_ms = 1000,
				     .current_ms = 2000, .with_task = true };
	struct sw_profile_stats st = { 0 };
	struct sw_msgs out = { 0 };
	Skywalking__V3__EBPFProfilingData *d0, *d1;

	(void)state;
	for (int i = 0; i < 4; i++)
		ember__stack_sample__init(&s[i]);
	/* 0: kernel + user with one unresolved user frame */
	s[0].n_kernel_frames = 2; s[0].kernel_frames = kf; s[0].n_kernel_resolved = 2; s[0].kernel_resolved = kres;
	s[0].n_user_frames = 4; s[0].user_frames = uf; s[0].n_user_resolved = 4; s[0].user_resolved = ures;
	s[0].count = 7;
	/* 1: same symbols, different addresses upstream: merged */
	s[1] = s[0];
	s[1].count = 3;
	/* 2: no frames at all: dropped */
	s[2].count = 5;
	/* 3: user only, flags absent (older analyzer): all resolved; count saturates */
	s[3].n_user_frames = 4; s[3].user_frames = uf2; s[3].count = 5000000000ull;
	task.id = "sw-x";
	b.task = &task;
	b.n_samples = 4;
	b.samples = sp;
	assert_int_equal(sw_codec__build_profile(&b, &m, &out, &st), 0);
	assert_int_equal(out.n, 2);
	assert_int_equal(st.messages, 2);
	assert_int_equal(st.merged, 1);
	assert_int_equal(st.empty, 1);
	assert_int_equal(st.missing, 1);	/* the merged pair is built once */

	d0 = skywalking__v3__ebpfprofiling_data__unpack(NULL, out.v[0].len, out.v[0].data);
	d1 = skywalking__v3__ebpfprofiling_data__unpack(NULL, out.v[1].len, out.v[1].data);
	assert_non_null(d0);
	assert_non_null(d1);
	/* the task only on the first message */
	assert_non_null(d0->task);
	assert_string_equal(d0->task->taskid, "T1");
	assert_string_equal(d0->task->processid, "P1");
	assert_int_equal(d0->task->profilingstarttime, 1000);
	assert_int_equal(d0->task->currenttime, 2000);
	assert_null(d1->task);
	assert_int_equal(d0->profiling_case, SKYWALKING__V3__EBPFPROFILING_DATA__PROFILING_ON_CPU);
	assert_int_equal(d0->oncpu->dumpcount, 10);
	assert_int_equal(d0->oncpu->n_stacks, 2);
	/* kernel first, innermost first, [MISSING] for the unresolved frame */
	assert_int_equal(d0->oncpu->stacks[0]->stacktype, SKYWALKING__V3__EBPFPROFILING_STACK_TYPE__PROCESS_KERNEL_SPACE);
	assert_string_equal(d0->oncpu->stacks[0]->stacksymbols[0], "do_syscall_64");
	assert_int_equal(d0->oncpu->stacks[1]->stacktype, SKYWALKING__V3__EBPFPROFILING_STACK_TYPE__PROCESS_USER_SPACE);
	assert_int_equal(d0->oncpu->stacks[1]->n_stacksymbols, 4);
	assert_string_equal(d0->oncpu->stacks[1]->stacksymbols[0], "leaf");
	assert_string_equal(d0->oncpu->stacks[1]->stacksymbols[1], SW_MISSING);
	assert_string_equal(d0->oncpu->stacks[1]->stacksymbols[3], "main");
	assert_true(d0->oncpu->stacks[0]->stackid > 0);
	assert_true(d0->oncpu->stacks[1]->stackid > 0);
	/* user-only message; count clamped to int32 */
	assert_int_equal(d1->oncpu->n_stacks, 1);
	assert_int_equal(d1->oncpu->stacks[0]->stacktype, SKYWALKING__V3__EBPFPROFILING_STACK_TYPE__PROCESS_USER_SPACE);
	assert_string_equal(d1->oncpu->stacks[0]->stacksymbols[1], "middle");
	assert_int_equal(d1->oncpu->dumpcount, INT32_MAX);
	assert_int_equal(st.saturated, 1);
	assert_true(d0->oncpu->stacks[1]->stackid != d1->oncpu->stacks[0]->stackid);
	skywalking__v3__ebpfprofiling_data__free_unpacked(d0, NULL);
	skywalking__v3__ebpfprofiling_data__free_unpacked(d1, NULL);
	sw_msgs__release(&out);

	/* off-CPU: switchCount and duration (ns) */
	memset(&st, 0, sizeof(st));
	s[3].count = 4;
	s[3].weight = 123456789;
	b.n_samples = 1;
	b.samples = &sp[3];
	m.off_cpu = true;
	assert_int_equal(sw_codec__build_profile(&b, &m, &out, &st), 0);
	assert_int_equal(out.n, 1);
	d0 = skywalking__v3__ebpfprofiling_data__unpack(NULL, out.v[0].len, out.v[0].data);
	assert_non_null(d0);
	assert_int_equal(d0->profiling_case, SKYWALKING__V3__EBPFPROFILING_DATA__PROFILING_OFF_CPU);
	assert_int_equal(d0->offcpu->switchcount, 4);
	assert_int_equal(d0->offcpu->duration, 123456789);
	assert_non_null(d0->task);
	skywalking__v3__ebpfprofiling_data__free_unpacked(d0, NULL);
	sw_msgs__release(&out);
}

/* ---- meters ---- */

static void test_build_meters(void **state)
{
	Ember__Meter m[3], *mp[3] = { &m[0], &m[1], &m[2] };
	Ember__Label l[3], *lp[3] = { &l[0], &l[1], &l[2] };
	Ember__Bucket bk[3], *bkp[3] = { &bk[0], &bk[1], &bk[2] };
	Ember__MeterBatch b = EMBER__METER_BATCH__INIT;
	struct sw_meter_opts o = { .service = "svc", .instance = "inst", .net_prefix = "my_net",
				   .con_prefix = "rover_con_p" };
	struct sw_meter_stats st = { 0 };
	struct sw_msgs out = { 0 };
	Skywalking__V3__MeterDataCollection *c;
	char name[256];

	(void)state;
	for (int i = 0; i < 3; i++) {
		ember__meter__init(&m[i]);
		ember__label__init(&l[i]);
		ember__bucket__init(&bk[i]);
	}
	l[0].name = "analyzer"; l[0].value = "0";
	l[1].name = "analyzer"; l[1].value = "1";	/* duplicate name: dropped */
	l[2].name = "kind"; l[2].value = "x";
	m[0].name = "ember_ring.drops"; m[0].value = 5; m[0].is_counter = 1; m[0].timestamp_ms = 1700000000000ull;
	m[0].n_labels = 3; m[0].labels = lp;
	m[1].name = "rover_net_p_client_write_rtt_histogram";	/* prefix replaced */
	bk[0].upper_bound = 10; bk[0].count = 2;
	bk[1].upper_bound = 100; bk[1].count = 5;
	bk[2].upper_bound = INFINITY; bk[2].count = 6;
	m[1].n_buckets = 3; m[1].buckets = bkp; m[1].hist_count = 6;
	m[2].name = "";	/* unusable */
	b.n_meters = 3;
	b.meters = mp;
	assert_int_equal(sw_codec__build_meters(&b, &o, 1700000000999LL, &out, &st), 2);
	assert_int_equal(st.bad, 1);
	assert_int_equal(st.dup_labels, 1);
	assert_int_equal(out.n, 1);
	c = skywalking__v3__meter_data_collection__unpack(NULL, out.v[0].len, out.v[0].data);
	assert_non_null(c);
	assert_int_equal(c->n_meterdata, 2);
	for (size_t i = 0; i < 2; i++) {
		assert_string_equal(c->meterdata[i]->service, "svc");
		assert_string_equal(c->meterdata[i]->serviceinstance, "inst");
		assert_true(c->meterdata[i]->timestamp > 0);
	}
	assert_int_equal(c->meterdata[0]->timestamp, 1700000000000LL);
	assert_int_equal(c->meterdata[1]->timestamp, 1700000000999LL);	/* no timestamp: now */
	assert_int_equal(c->meterdata[0]->metric_case, SKYWALKING__V3__METER_DATA__METRIC_SINGLE_VALUE);
	assert_string_equal(c->meterdata[0]->singlevalue->name, "ember_ring_drops");
	assert_int_equal(c->meterdata[0]->singlevalue->n_labels, 2);
	assert_string_equal(c->meterdata[0]->singlevalue->labels[1]->name, "kind");
	assert_true(c->meterdata[0]->singlevalue->value == 5);
	assert_int_equal(c->meterdata[1]->metric_case, SKYWALKING__V3__METER_DATA__METRIC_HISTOGRAM);
	{
		Skywalking__V3__MeterHistogram *h = c->meterdata[1]->histogram;
		assert_string_equal(h->name, "my_net_client_write_rtt_histogram");
		/* [-inf,10): 2, [10,100): 3, [100,+inf): 1 */
		assert_int_equal(h->n_values, 3);
		assert_true(h->values[0]->isnegativeinfinity);
		assert_int_equal(h->values[0]->count, 2);
		assert_true(h->values[1]->bucket == 10);
		assert_int_equal(h->values[1]->count, 3);
		assert_true(h->values[2]->bucket == 100);
		assert_int_equal(h->values[2]->count, 1);
	}
	skywalking__v3__meter_data_collection__free_unpacked(c, NULL);
	sw_msgs__release(&out);

	assert_true(sw_codec__meter_name("9lives", &o, name, sizeof(name)) > 0);
	assert_string_equal(name, "_lives");
	assert_true(sw_codec__meter_name("rover_con_p_process_cpu", &o, name, sizeof(name)) > 0);
	assert_string_equal(name, "rover_con_p_process_cpu");
	assert_int_equal(sw_codec__meter_name("abcdef", &o, name, 4), -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_valid),
		cmocka_unit_test(test_decode_invalid),
		cmocka_unit_test(test_samplings),
		cmocka_unit_test(test_parse_i64),
		cmocka_unit_test(test_build_profile),
		cmocka_unit_test(test_build_meters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
