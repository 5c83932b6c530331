/* common/bus meter sets: names, labels, timestamps, truncation and the capacity limit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bus.h"

static void test_add_and_labels(void **state)
{
	static struct bus_meter_set ms;
	Ember__Label l = EMBER__LABEL__INIT, *lp[1] = { &l };

	l.name = "analyzer";
	l.value = "3";
	bus__meter_set_reset(&ms, lp, 1);
	assert_int_equal(bus__meter_set_add(&ms, "ring_consumed", 42, 1, 1700000000123ull), 0);
	assert_int_equal(bus__meter_set_add(&ms, "rss_bytes", 1.5e9, 0, 7), 0);
	assert_int_equal(ms.n, 2);
	assert_ptr_equal(ms.ptrs[0], &ms.m[0]);
	assert_ptr_equal(ms.ptrs[1], &ms.m[1]);
	assert_string_equal(ms.ptrs[0]->name, "ember_ring_consumed");
	assert_true(ms.ptrs[0]->value == 42);
	assert_int_equal(ms.ptrs[0]->is_counter, 1);
	assert_int_equal(ms.ptrs[0]->timestamp_ms, 1700000000123ull);
	assert_int_equal(ms.ptrs[0]->n_labels, 1);
	assert_string_equal(ms.ptrs[0]->labels[0]->value, "3");
	assert_string_equal(ms.ptrs[1]->name, "ember_rss_bytes");
	assert_int_equal(ms.ptrs[1]->is_counter, 0);
	assert_true(ms.ptrs[1]->value == 1.5e9);

	/* A reset empties the set and changes the labels of what follows. */
	bus__meter_set_reset(&ms, NULL, 0);
	assert_int_equal(ms.n, 0);
	assert_int_equal(bus__meter_set_add(&ms, "x", 1, 1, 1), 0);
	assert_int_equal(ms.ptrs[0]->n_labels, 0);
	assert_null(ms.ptrs[0]->labels);
}

static void test_long_name_and_full(void **state)
{
	static struct bus_meter_set ms;
	char longname[200];

	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	bus__meter_set_reset(&ms, NULL, 0);
	assert_int_equal(bus__meter_set_add(&ms, longname, 1, 1, 1), 0);
	assert_int_equal(strlen(ms.ptrs[0]->name), BUS_METER_NAME_LEN - 1);
	assert_memory_equal(ms.ptrs[0]->name, "ember_nnn", 9);

	for (unsigned i = 1; i < BUS_METER_SET_MAX; i++) {
		char name[32];

		snprintf(name, sizeof(name), "c%u", i);
		assert_int_equal(bus__meter_set_add(&ms, name, i, 1, 1), 0);
	}
	assert_int_equal(ms.n, BUS_METER_SET_MAX);
	assert_int_equal(bus__meter_set_add(&ms, "one_too_many", 1, 1, 1), -ENOSPC);
	assert_int_equal(ms.n, BUS_METER_SET_MAX);
	snprintf(longname, sizeof(longname), "ember_c%u", BUS_METER_SET_MAX - 1);
	assert_string_equal(ms.ptrs[BUS_METER_SET_MAX - 1]->name, longname);
	assert_true(ms.ptrs[BUS_METER_SET_MAX - 1]->value == BUS_METER_SET_MAX - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_and_labels),
		cmocka_unit_test(test_long_name_and_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
