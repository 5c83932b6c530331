/*
 * The network histograms' bucket index (common/net_hist): the last bound
 * not above a value, 0 below the first, for every table, at, around and
 * between every bound, and against a linear scan over values of every
 * magnitude.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdint.h>
#include <stdlib.h>

#include "common/net_hist.h"

static unsigned scan(const uint64_t *b, unsigned n, uint64_t v)
{
	unsigned i = 0;

	while (i + 1 < n && b[i + 1] <= v)
		i++;
	return i;
}

static void check_table(const uint64_t *b, unsigned n)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(net_hist__index(b, n, b[i]), i);
		assert_int_equal(net_hist__index(b, n, b[i] + 1), scan(b, n, b[i] + 1));
		if (b[i])
			assert_int_equal(net_hist__index(b, n, b[i] - 1), i ? i - 1 : 0);
	}
	assert_int_equal(net_hist__index(b, n, UINT64_MAX), n - 1);
	assert_int_equal(net_hist__index(b, n, 0), 0);
	for (unsigned k = 0; k < 100000; k++) {
		uint64_t v;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		v = x >> (x % 64);   /* every magnitude */
		assert_int_equal(net_hist__index(b, n, v), scan(b, n, v));
	}
}

static void test_index(void **state)
{
	(void)state;
	check_table(net_hist__l4_bounds, NET_L4_BUCKETS);
	check_table(net_hist__size_bounds, NET_SIZE_BUCKETS);
	check_table(net_hist__duration_bounds, NET_DURATION_BUCKETS);
	/* One bound, two bounds: the smallest tables. */
	{
		static const uint64_t one[] = { 5 }, two[] = { 5, 9 };

		assert_int_equal(net_hist__index(one, 1, 0), 0);
		assert_int_equal(net_hist__index(one, 1, 100), 0);
		assert_int_equal(net_hist__index(two, 2, 8), 0);
		assert_int_equal(net_hist__index(two, 2, 9), 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_index),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
