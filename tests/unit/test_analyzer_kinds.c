/*
 * The analyzer's kind seam (analyzer/kinds.h): which plugin serves each
 * kind, where each ring record goes, a task through its kind's ops, and the
 * counters convention's publishing loop (common/counters.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <zmq.h>

#include "analyzer/kinds.h"
#include "analyzer/net/netprof.h"
#include "analyzer/profile.h"
#include "analyzer/publisher.h"
#include "bpf/ember_abi.h"
#include "common/bus.h"
#include "common/config.h"

static struct {
	void *zctx;
	struct publisher *pub;
	struct task_mgr *tm;
	struct ember_config *cfg;
	struct analyzer_kinds *k;
	unsigned drains;
} F;

static void drain(void *ctx)
{
	(void)ctx;
	F.drains++;
}

static int setup(void **state)
{
	(void)state;
	memset(&F, 0, sizeof(F));
	F.zctx = zmq_ctx_new();
	F.pub = publisher__new(F.zctx, "inproc://kinds", 1000, 0);
	F.tm = task_mgr__new(8);
	F.cfg = config__new();
	assert_non_null(F.pub);
	assert_non_null(F.tm);
	assert_non_null(F.cfg);
	F.k = analyzer_kinds__new(&(struct analyzer_kind_env){ .cfg = F.cfg, .tm = F.tm, .pub = F.pub, .max_tasks = 8,
							       .drain = drain });
	assert_non_null(F.k);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	F.k = analyzer_kinds__free(F.k);
	F.tm = task_mgr__free(F.tm);
	F.pub = publisher__free(F.pub);
	zmq_ctx_term(F.zctx);
	config__free(F.cfg);
	return 0;
}

static void test_served(void **state)
{
	const struct analyzer_kind_ops *ops, *net;
	void *impl, *stacks_impl;

	(void)state;
	/* The three stack kinds share one plugin, built once. */
	assert_true(analyzer_kinds__get(F.k, EMBER_TASK_ONCPU, &ops, &stacks_impl));
	assert_ptr_equal(ops, &analyzer_kind_stacks);
	for (uint32_t kind = EMBER_TASK_OFFCPU; kind <= EMBER_TASK_MEM; kind++) {
		assert_true(analyzer_kinds__get(F.k, kind, &ops, &impl));
		assert_ptr_equal(ops, &analyzer_kind_stacks);
		assert_ptr_equal(impl, stacks_impl);
	}
	assert_true(analyzer_kinds__get(F.k, EMBER_TASK_NETWORK, &net, &impl));
	assert_ptr_equal(net, &analyzer_kind_net);
	assert_ptr_not_equal(impl, stacks_impl);
	assert_false(analyzer_kinds__get(F.k, 0, &ops, &impl));
	assert_true(analyzer_kinds__get(F.k, EMBER_TASK_THREADS, &ops, &impl));
	assert_ptr_equal(ops, &analyzer_kind_threads);
	assert_false(analyzer_kinds__get(F.k, EMBER_TASK_THREADS + 1, &ops, &impl));
	assert_false(analyzer_kinds__get(F.k, UINT32_MAX, &ops, &impl));
	assert_int_equal(analyzer_kinds__flags(F.k, EMBER_TASK_MEM), ANALYZER_KIND_F_USER_STACKS);
	assert_int_equal(analyzer_kinds__flags(F.k, EMBER_TASK_NETWORK),
			 ANALYZER_KIND_F_TLS | ANALYZER_KIND_F_MONITOR_CAPTURE);
	assert_int_equal(analyzer_kinds__flags(F.k, 99), 0);
	/* Each plugin once, in kind order. */
	assert_true(analyzer_kinds__plugin(F.k, 0, &ops, &impl));
	assert_ptr_equal(ops, &analyzer_kind_stacks);
	assert_true(analyzer_kinds__plugin(F.k, 1, &ops, &impl));
	assert_ptr_equal(ops, &analyzer_kind_net);
	assert_true(analyzer_kinds__plugin(F.k, 2, &ops, &impl));
	assert_ptr_equal(ops, &analyzer_kind_threads);
	assert_false(analyzer_kinds__plugin(F.k, 3, &ops, &impl));
}

static void stats_of(uint32_t kind, uint64_t *v)
{
	const struct analyzer_kind_ops *ops;
	void *impl;

	assert_true(analyzer_kinds__get(F.k, kind, &ops, &impl));
	ops->stats(impl, v);
}

static void test_records(void **state)
{
	struct { struct ember_rec_stack h; uint64_t ips[2]; } st = { .h = { .kind = EMBER_TASK_ONCPU, .tgid = 1,
									  .count = 3, .nkern = 1, .nuser = 1 } };
	struct ember_rec_window w = { .kind = EMBER_TASK_OFFCPU, .end_ns = 5 };
	uint64_t v[ANALYZER_KIND_COUNTERS_MAX];
	char junk[8] = { 0 };

	(void)state;
	/* A stack of no task: counted by the stack kinds. */
	assert_int_equal(analyzer_kinds__record(F.k, EMBER_REC_STACK, &st, sizeof(st)), 0);
	stats_of(EMBER_TASK_ONCPU, v);
	assert_int_equal(v[PS_STACKS], 1);
	assert_int_equal(v[PS_STACKS_NO_TASK], 1);
	/* Records that do not add up are the reader's to count, but for the network kind's, which counts its own. */
	assert_int_equal(analyzer_kinds__record(F.k, EMBER_REC_STACK, &st, sizeof(st) - 1), -EBADMSG);
	assert_int_equal(analyzer_kinds__record(F.k, EMBER_REC_WINDOW, &w, sizeof(w) - 1), -EBADMSG);
	assert_int_equal(analyzer_kinds__record(F.k, EMBER_REC_WINDOW, &w, sizeof(w)), 0);
	assert_int_equal(analyzer_kinds__record(F.k, EMBER_REC_NET, junk, sizeof(junk)), 0);
	stats_of(EMBER_TASK_NETWORK, v);
	assert_int_equal(v[NPS_RECORDS], 1);
	assert_int_equal(v[NPS_BAD_RECORDS], 1);
	stats_of(EMBER_TASK_ONCPU, v);
	assert_int_equal(v[PS_STACKS], 1);
	/* A type no plugin reads. */
	assert_int_equal(analyzer_kinds__record(F.k, 0, junk, sizeof(junk)), -ENOENT);
	assert_int_equal(analyzer_kinds__record(F.k, 31, junk, sizeof(junk)), -ENOENT);
	assert_int_equal(analyzer_kinds__record(F.k, 1000, junk, sizeof(junk)), -ENOENT);
	/* No network task: nothing due. */
	assert_true(analyzer_kinds__next_due(F.k) == UINT64_MAX);
}

static void test_task(void **state)
{
	const struct analyzer_kind_ops *ops;
	struct task_def def = { .id = "t1", .kind = EMBER_TASK_ONCPU, .npids = 1, .pids = { 1 }, .duration_ms = 1000,
				.start_unix_ms = 1, .period_ns = 1 }, *t;
	char err[256] = "", summary[128] = "";
	void *impl;

	(void)state;
	assert_true(analyzer_kinds__get(F.k, EMBER_TASK_ONCPU, &ops, &impl));
	/* On-CPU checks its period; off-CPU has none. */
	assert_int_equal(ops->check(impl, &def, err, sizeof(err)), -ERANGE);
	assert_non_null(strstr(err, "on-CPU period"));
	def.kind = EMBER_TASK_OFFCPU;
	assert_int_equal(ops->check(impl, &def, err, sizeof(err)), 0);
	def.kind = EMBER_TASK_ONCPU;
	def.period_ns = 10000000;
	assert_int_equal(ops->check(impl, &def, err, sizeof(err)), 0);
	assert_true(ops->refused(impl, &def, -EBUSY, err, sizeof(err)));
	assert_false(ops->refused(impl, &def, -EPERM, err, sizeof(err)));
	assert_int_equal(task_mgr__add(F.tm, &def, &t), 0);
	assert_int_equal(ops->open(impl, t), 0);
	ops->close(impl, t, summary, sizeof(summary));
	assert_string_equal(summary, "0 samples in 0 stacks");
	task_mgr__remove(F.tm, "t1");

	def.kind = EMBER_TASK_NETWORK;
	assert_true(analyzer_kinds__get(F.k, EMBER_TASK_NETWORK, &ops, &impl));
	assert_null(ops->check);
	assert_int_equal(ops->attach_flags(impl, &def), 0);
	def.nsamplings = 1;
	def.samplings[0].complete_request = true;
	assert_int_equal(ops->attach_flags(impl, &def), CTL_ATTACH_F_L2);
	assert_int_equal(task_mgr__add(F.tm, &def, &t), 0);
	assert_int_equal(ops->open(impl, t), 0);
	assert_true(analyzer_kinds__next_due(F.k) != UINT64_MAX);
	ops->close(impl, t, summary, sizeof(summary));
	assert_string_equal(summary, "0 exchanges over 0 connections");
	task_mgr__remove(F.tm, "t1");
}

static void test_counters(void **state)
{
	static struct bus_meter_set ms;
	static const struct counter_def defs[] = {
		{ .name = "a_total" }, { .name = "b_now", .level = true }, { .name = "c_seconds", .per_unit = 1000000 },
	};
	const uint64_t v[] = { 7, 2, 1500000 };

	(void)state;
	bus__meter_set_reset(&ms, NULL, 0);
	assert_int_equal(bus__meter_set_add_counters(&ms, defs, v, 3, 9), 0);
	assert_int_equal(ms.n, 3);
	assert_string_equal(ms.ptrs[0]->name, "ember_a_total");
	assert_int_equal(ms.ptrs[0]->is_counter, 1);
	assert_true(ms.ptrs[0]->value == 7);
	assert_string_equal(ms.ptrs[1]->name, "ember_b_now");
	assert_int_equal(ms.ptrs[1]->is_counter, 0);
	assert_true(ms.ptrs[2]->value == 1.5);
	assert_int_equal(ms.ptrs[2]->timestamp_ms, 9);
	/* A full set leaves the rest out and says so. */
	while (ms.n < BUS_METER_SET_MAX - 1)
		assert_int_equal(bus__meter_set_add(&ms, "x", 0, 1, 0), 0);
	assert_int_equal(bus__meter_set_add_counters(&ms, defs, v, 3, 9), -ENOSPC);
	assert_int_equal(ms.n, BUS_METER_SET_MAX);
	assert_string_equal(ms.ptrs[BUS_METER_SET_MAX - 1]->name, "ember_a_total");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_served, setup, teardown),
		cmocka_unit_test_setup_teardown(test_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_task, setup, teardown),
		cmocka_unit_test(test_counters),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
