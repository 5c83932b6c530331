#include "common/net_hist.h"

#include <math.h>

const uint64_t net_hist__l4_bounds[NET_L4_BUCKETS] = {
	0, 10000, 50000, 100000, 500000, 1000000, 1200000, 1500000, 1700000, 2000000, 2500000,
	3000000, 5000000, 7000000, 10000000, 13000000, 16000000, 20000000, 25000000, 30000000,
	35000000, 40000000, 45000000, 50000000, 70000000, 100000000, 150000000, 200000000, 300000000,
	500000000, 1000000000, 2000000000, 3000000000, 5000000000,
};

/* 1048, not 1024: Rover's table, kept so that the OAP sees the same buckets. */
const uint64_t net_hist__size_bounds[NET_SIZE_BUCKETS] = {
	256, 512, 1048, 1536, 2048, 3072, 5120, 8192, 10240, 15360, 20480, 35840, 51200, 76800,
	102400, 204800, 512000, 819200, 1048576, 1572864, 2097152, 5242880, 10485760, 20971520, 52428800,
};

const uint64_t net_hist__duration_bounds[NET_DURATION_BUCKETS] = {
	1, 2, 5, 10, 15, 20, 25, 30, 40, 45, 50, 60, 65, 70, 80, 90, 100, 110, 130, 150, 170, 200, 230,
	260, 290, 330, 380, 430, 480, 500, 600, 700, 800, 900, 1000, 1100, 1300, 1500, 1800, 2000,
	5000, 10000, 15000, 20000, 30000,
};

/*
 * Halving without a branch on the comparison (the compiler makes it a
 * conditional move): a few of these run per network event, on values
 * (durations, sizes) a branch predictor cannot guess.  The last bound not
 * above v; 0 below the first.
 */
unsigned net_hist__index(const uint64_t *bounds, unsigned n, uint64_t v)
{
	const uint64_t *base = bounds;

	while (n > 1) {
		unsigned half = n / 2;

		base = base[half] <= v ? base + half : base;
		n -= half;
	}
	return (unsigned)(base - bounds);
}

/*
 * 16 sub-buckets per power of two: the top bit gives the power, the next
 * bits, compared against 2^(k/16) thresholds, the sub-bucket.  Exact integer
 * arithmetic, so an index never depends on floating-point rounding.
 */
static const uint32_t sub_thresholds[16] = { /* floor(2^(k/16) * 2^31), k = 0..15 */
	2147483648u, 2242560871u, 2341847523u, 2445529971u, 2553802833u, 2666869344u, 2784941737u,
	2908241642u, 3037000499u, 3171459999u, 3311872529u, 3458501653u, 3611622602u, 3771522796u,
	3938502375u, 4112874773u,
};

unsigned net_hist__sketch_index(uint64_t v)
{
	unsigned msb, k = 0;
	uint32_t top;

	if (v < 1)
		return 0;
	msb = 63 - (unsigned)__builtin_clzll(v);
	if (msb >= NET_SKETCH_BUCKETS / 16)
		return NET_SKETCH_BUCKETS - 1;
	/* The 32 bits below and including the top one, left-aligned. */
	top = msb >= 31 ? (uint32_t)(v >> (msb - 31)) : (uint32_t)(v << (31 - msb));
	while (k < 15 && top >= sub_thresholds[k + 1])
		k++;
	return msb * 16 + k;
}

uint64_t net_hist__sketch_value(unsigned index)
{
	return (uint64_t)llround(exp2(((double)index + 0.5) / 16.0));
}

uint64_t net_hist__sketch_quantile(const uint32_t *index, const uint64_t *count, size_t n, double q)
{
	uint64_t total = 0, seen = 0, rank;

	for (size_t i = 0; i < n; i++)
		total += count[i];
	if (!total)
		return 0;
	rank = (uint64_t)ceil(q * (double)total);
	if (rank < 1)
		rank = 1;
	for (size_t i = 0; i < n; i++) {
		seen += count[i];
		if (seen >= rank)
			return net_hist__sketch_value(index[i]);
	}
	return net_hist__sketch_value(index[n - 1]);
}
