/*
 * Unit tests for common/shm_ring: wrap-around, exact drop accounting,
 * hostile consumer positions, corrupted records, read-only enforcement by
 * the kernel, and a producer/consumer pair in two processes with wake-ups.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/falloc.h>

#include "common/shm_ring.h"

/*
 * Cross-process layout the tests poke at as a hostile peer would: consumer
 * position at offset 0 and sleep sequence at offset 128 of the cons page,
 * producer position at offset 128 of the metadata page.
 */
#define CONS_POS_OFF  0
#define CONS_SEQ_OFF  128
#define META_PROD_OFF 128

static int page;

/* ---- deterministic record contents -------------------------------------- */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static uint32_t type_of(uint64_t seq)
{
	return (uint32_t)(mix(seq) % 0xfffffff0u);
}

static uint8_t byte_of(uint64_t seq, uint32_t i)
{
	return (uint8_t)(mix(seq * 0x10001 + i) >> 17);
}

static void fill(uint8_t *buf, uint64_t seq, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		buf[i] = byte_of(seq, i);
}

/* Expected records, in order: what the producer managed to commit. */
struct expect {
	uint64_t *seq;
	uint32_t *len;
	size_t head, tail, cap;
	size_t delivered, bad;
};

static void expect_init(struct expect *e, size_t cap)
{
	memset(e, 0, sizeof(*e));
	e->cap = cap;
	e->seq = calloc(cap, sizeof(*e->seq));
	e->len = calloc(cap, sizeof(*e->len));
	assert_non_null(e->seq);
	assert_non_null(e->len);
}

static void expect_fini(struct expect *e)
{
	free(e->seq);
	free(e->len);
}

static void expect_push(struct expect *e, uint64_t seq, uint32_t len)
{
	assert_true(e->tail - e->head < e->cap);
	e->seq[e->tail % e->cap] = seq;
	e->len[e->tail % e->cap] = len;
	e->tail++;
}

static size_t expect_pending(const struct expect *e)
{
	return e->tail - e->head;
}

/* Callback: every record must be the next expected one, byte for byte. */
static int check_cb(void *ctx, uint32_t type, const void *data, uint32_t len)
{
	struct expect *e = ctx;
	const uint8_t *p = data;
	uint64_t seq;

	if (e->head == e->tail) {
		e->bad++;
		return -EPROTO;
	}
	seq = e->seq[e->head % e->cap];
	if (len != e->len[e->head % e->cap] || type != type_of(seq)) {
		e->bad++;
		return -EPROTO;
	}
	if (((uintptr_t)data & 7) != 0)
		e->bad++;
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != byte_of(seq, i)) {
			e->bad++;
			return -EPROTO;
		}
	e->head++;
	e->delivered++;
	return 0;
}

static int write_rec(struct shm_ring *r, struct expect *e, uint64_t seq, uint32_t len)
{
	uint8_t *rec = shm_ring__reserve(r, type_of(seq), len);

	if (!rec)
		return -errno;
	fill(rec, seq, len);
	assert_int_equal(shm_ring__commit(r, rec), 0);
	expect_push(e, seq, len);
	return 0;
}

/* Ends the producer's batch (publishing what it committed), then consumes. */
static int consume(struct shm_ring *p, struct shm_ring *c, shm_ring_record_fn cb, void *ctx, size_t max)
{
	assert_true(shm_ring__notify(p) >= 0);
	return shm_ring__consume(c, cb, ctx, max);
}

/* A producer and a consumer of the same ring in this process. */
static void pair_new(size_t size, struct shm_ring **prod, struct shm_ring **cons)
{
	*prod = shm_ring__create(size, "test");
	assert_non_null(*prod);
	*cons = shm_ring__attach(dup(shm_ring__data_fd(*prod)), dup(shm_ring__cons_fd(*prod)),
				 dup(shm_ring__event_fd(*prod)));
	assert_non_null(*cons);
}

static bool readable(int fd);

static volatile uint64_t *map_cons_page(struct shm_ring *prod)
{
	void *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, shm_ring__cons_fd(prod), 0);

	assert_true(p != MAP_FAILED);
	return p;
}

static struct shm_ring_stats stats(struct shm_ring *r)
{
	struct shm_ring_stats s;

	shm_ring__stats(r, &s);
	return s;
}

/* ---- tests ----------------------------------------------------------------- */

static void test_create_args(void **state)
{
	static const size_t bad[] = { 0, 8, 2048, 4095, 4097, 6144, (size_t)1 << 31 };
	struct shm_ring *r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		assert_null(shm_ring__create(bad[i], "x"));
		assert_int_equal(errno, EINVAL);
	}
	r = shm_ring__create(4096, NULL);
	assert_non_null(r);
	assert_int_equal(shm_ring__max_record(r), 1024);
	assert_int_equal(shm_ring__data_size(r), 4096);
	assert_true(shm_ring__data_fd(r) >= 0);
	assert_true(shm_ring__cons_fd(r) >= 0);
	assert_true(shm_ring__event_fd(r) >= 0);
	assert_true(fcntl(shm_ring__data_fd(r), F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(shm_ring__cons_fd(r), F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(shm_ring__event_fd(r), F_GETFD) & FD_CLOEXEC);
	assert_int_equal(shm_ring__writable(r), 4096);
	assert_null(shm_ring__free(r));
	assert_null(shm_ring__free(NULL));
}

/* Every length from 0 to max_record, then random ones, through many laps of
 * a small ring, with partial consumes at random points. */
static void test_wrap_many_sizes(void **state)
{
	struct shm_ring *p, *c;
	struct expect e;
	uint64_t seq = 0, attempts = 0, enospc = 0, rnd = 12345;
	size_t maxrec;

	pair_new(4096, &p, &c);
	maxrec = shm_ring__max_record(p);
	expect_init(&e, 8192);
	while (seq < 60000) {
		uint32_t len;
		int err;

		rnd = mix(rnd + 1);
		if (seq <= maxrec)
			len = (uint32_t)seq;
		else if (rnd & 1)
			len = (uint32_t)(rnd >> 8) % 64;
		else
			len = (uint32_t)((rnd >> 8) % (maxrec + 1));
		attempts++;
		err = write_rec(p, &e, seq, len);
		if (err == 0) {
			seq++;
			continue;
		}
		assert_int_equal(err, -ENOSPC);
		enospc++;
		/* Full: read a random number of records (at least one). */
		size_t want = 1 + (rnd >> 20) % (expect_pending(&e) ? expect_pending(&e) : 1);
		int n = consume(p, c, check_cb, &e, want);
		assert_int_equal(e.bad, 0);
		assert_true(n >= 1);
		assert_int_equal((size_t)n, want);
	}
	assert_int_equal(consume(p, c, check_cb, &e, 0), (int)expect_pending(&e));
	assert_int_equal(e.bad, 0);
	assert_int_equal(expect_pending(&e), 0);
	assert_int_equal(e.delivered, seq);

	struct shm_ring_stats ps = stats(p), cs = stats(c);
	assert_int_equal(ps.produced, seq);
	assert_int_equal(ps.drops, enospc);
	assert_int_equal(ps.produced + ps.drops, attempts);
	assert_int_equal(ps.hostile_cons, 0);
	assert_int_equal(cs.consumed, seq);
	assert_int_equal(cs.consumed_bytes, ps.produced_bytes);
	assert_int_equal(cs.corrupt, 0);
	/* Many laps, so the wrap path ran many times. */
	assert_true(ps.produced_bytes > 500 * 4096);
	expect_fini(&e);
	shm_ring__free(c);
	shm_ring__free(p);
}

static void test_full_ring_exact_drops(void **state)
{
	struct shm_ring *p, *c;
	struct expect e;
	uint64_t seq = 0;
	int ok = 0, full = 0;

	pair_new(4096, &p, &c);
	expect_init(&e, 1024);
	/* 56-byte payload = 64 bytes with header: exactly 64 fit. */
	for (int i = 0; i < 100; i++) {
		int err = write_rec(p, &e, seq, 56);

		if (err == 0) {
			ok++;
			seq++;
		} else {
			assert_int_equal(err, -ENOSPC);
			full++;
		}
	}
	assert_int_equal(ok, 64);
	assert_int_equal(full, 36);
	assert_int_equal(shm_ring__writable(p), 0);
	struct shm_ring_stats s = stats(p);
	assert_int_equal(s.produced, 64);
	assert_int_equal(s.produced_bytes, 64 * 56);
	assert_int_equal(s.drops, 36);
	assert_int_equal(s.drop_bytes, 36 * 56);

	errno = 0;
	assert_null(shm_ring__reserve(p, 1, 8));
	assert_int_equal(errno, ENOSPC);
	assert_int_equal(shm_ring__write(p, 1, "x", (uint32_t)shm_ring__max_record(p) + 1), -EMSGSIZE);
	s = stats(p);
	assert_int_equal(s.drops, 38);
	assert_int_equal(s.drop_bytes, 36 * 56 + 8 + shm_ring__max_record(p) + 1);
	assert_int_equal(s.oversize, 1);
	assert_int_equal(s.hostile_cons, 0);

	/* Free ten, write ten, the eleventh is dropped again. */
	assert_int_equal(consume(p, c, check_cb, &e, 10), 10);
	assert_int_equal(shm_ring__writable(p), 640);
	for (int i = 0; i < 10; i++, seq++)
		assert_int_equal(write_rec(p, &e, seq, 56), 0);
	assert_int_equal(write_rec(p, &e, seq, 56), -ENOSPC);
	assert_int_equal(consume(p, c, check_cb, &e, 0), 64);
	assert_int_equal(e.bad, 0);
	assert_int_equal(consume(p, c, check_cb, &e, 0), 0);
	s = stats(p);
	assert_int_equal(s.produced, 74);
	assert_int_equal(s.drops, 39);
	assert_int_equal(stats(c).consumed, 74);
	expect_fini(&e);
	shm_ring__free(c);
	shm_ring__free(p);
}

/* The wrap needs tail + record bytes free: 100-byte payloads take 112 bytes,
 * 36 fit (4032 bytes) and leave a 64-byte tail. */
static void test_wrap_space_accounting(void **state)
{
	struct shm_ring *p, *c;
	struct expect e;
	uint64_t seq = 0;

	pair_new(4096, &p, &c);
	expect_init(&e, 256);
	while (write_rec(p, &e, seq, 100) == 0)
		seq++;
	assert_int_equal(seq, 36);
	assert_int_equal(consume(p, c, check_cb, &e, 1), 1);
	/* 64 + 112 = 176 bytes free, but split: a 128-byte record would have
	 * to straddle the end, so it needs 64 (pad) + 128. */
	assert_int_equal(shm_ring__writable(p), 176);
	assert_int_equal(write_rec(p, &e, seq, 120), -ENOSPC);
	/* A 112-byte one fits exactly: pad the tail, start again at 0. */
	assert_int_equal(write_rec(p, &e, seq, 100), 0);
	seq++;
	assert_int_equal(shm_ring__writable(p), 0);
	/* The pad is skipped, never delivered. */
	assert_int_equal(consume(p, c, check_cb, &e, 0), 36);
	assert_int_equal(e.bad, 0);
	assert_int_equal(e.delivered, seq);
	assert_int_equal(stats(p).drops, 2);
	assert_int_equal(stats(p).produced, 37);
	assert_int_equal(shm_ring__writable(p), 4096);
	expect_fini(&e);
	shm_ring__free(c);
	shm_ring__free(p);
}

struct midbatch {
	struct shm_ring *prod;
	int n;
	size_t writable_at_40;
};

static int midbatch_cb(void *ctx, uint32_t type, const void *data, uint32_t len)
{
	struct midbatch *m = ctx;

	if (++m->n == 40)
		m->writable_at_40 = shm_ring__writable(m->prod);
	return 0;
}

/* A long batch hands space back every quarter ring, not only at its end. */
static void test_space_released_during_batch(void **state)
{
	struct shm_ring *p, *c;
	struct midbatch m = { 0 };

	pair_new(4096, &p, &c);
	while (shm_ring__write(p, 1, "0123456789abcdef0123456789abcdef0123456789abcdef01234567", 56) == 0)
		;
	m.prod = p;
	assert_int_equal(consume(p, c, midbatch_cb, &m, 0), 64);
	/* 39 records (2496 bytes) were done; at least two quarters released. */
	assert_true(m.writable_at_40 >= 2048);
	assert_true(m.writable_at_40 <= 39 * 64);
	assert_int_equal(shm_ring__writable(p), 4096);
	shm_ring__free(c);
	shm_ring__free(p);
}

static void test_zero_loss_when_keeping_up(void **state)
{
	struct shm_ring *p, *c;
	struct expect e;
	uint64_t seq = 0, rnd = 99;

	pair_new(65536, &p, &c);
	expect_init(&e, 4096);
	for (int batch = 0; batch < 20000; batch++) {
		int n = 1 + (int)(mix(rnd++) % 32);

		for (int i = 0; i < n; i++, seq++)
			assert_int_equal(write_rec(p, &e, seq, (uint32_t)(mix(seq) % 600)), 0);
		assert_int_equal(consume(p, c, check_cb, &e, 0), n);
	}
	assert_int_equal(e.bad, 0);
	assert_int_equal(stats(p).drops, 0);
	assert_int_equal(stats(p).produced, seq);
	assert_int_equal(stats(c).consumed, seq);
	assert_int_equal(stats(c).consumed_bytes, stats(p).produced_bytes);
	expect_fini(&e);
	shm_ring__free(c);
	shm_ring__free(p);
}

static int count_cb(void *ctx, uint32_t type, const void *data, uint32_t len)
{
	(*(int *)ctx)++;
	return 0;
}

static int stop_cb(void *ctx, uint32_t type, const void *data, uint32_t len)
{
	int *n = ctx;

	(*n)++;
	return *n == 2 ? -ECANCELED : 0;
}

static int len_cb(void *ctx, uint32_t type, const void *data, uint32_t len)
{
	*(uint32_t *)ctx = len + 1;
	return 1;
}

static void test_reserve_commit_discard(void **state)
{
	struct shm_ring *p, *c;
	void *rec, *rec2;
	int n = 0;
	uint32_t got = 0;

	pair_new(4096, &p, &c);
	rec = shm_ring__reserve(p, 7, 16);
	assert_non_null(rec);
	assert_int_equal((uintptr_t)rec & 7, 0);
	errno = 0;
	assert_null(shm_ring__reserve(p, 7, 16));
	assert_int_equal(errno, EBUSY);
	assert_int_equal(shm_ring__commit(p, (char *)rec + 8), -EINVAL);
	assert_int_equal(shm_ring__discard(p, rec), 0);
	assert_int_equal(shm_ring__commit(p, rec), -EINVAL);
	assert_int_equal(consume(p, c, count_cb, &n, 0), 0);
	assert_int_equal(stats(p).produced, 0);
	assert_int_equal(stats(p).drops, 0);

	errno = 0;
	assert_null(shm_ring__reserve(p, SHM_RING_TYPE_PAD, 8));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(shm_ring__reserve(c, 1, 8));
	assert_int_equal(errno, EPERM);
	assert_int_equal(shm_ring__write(c, 1, "x", 1), -EPERM);
	assert_int_equal(shm_ring__notify(c), -EPERM);
	assert_int_equal(shm_ring__writable(c), 0);
	assert_int_equal(shm_ring__consume(p, count_cb, &n, 0), -EPERM);
	assert_int_equal(shm_ring__prepare_wait(p), -EPERM);
	assert_int_equal(consume(p, c, NULL, NULL, 0), -EINVAL);

	/* Zero-length records exist and are delivered with len 0. */
	assert_int_equal(shm_ring__write(p, 3, NULL, 0), 0);
	assert_int_equal(consume(p, c, len_cb, &got, 0), 1);
	assert_int_equal(got, 1);

	/* Callback control: > 0 stops after the record, < 0 is returned. */
	for (int i = 0; i < 4; i++)
		assert_int_equal(shm_ring__write(p, 1, "abcd", 4), 0);
	assert_int_equal(consume(p, c, stop_cb, &n, 0), -ECANCELED);
	assert_int_equal(n, 2);
	assert_int_equal(consume(p, c, len_cb, &got, 0), 1);
	assert_int_equal(got, 5);
	n = 0;
	assert_int_equal(consume(p, c, count_cb, &n, 0), 1);
	assert_int_equal(stats(c).consumed, 5);

	/* A reservation after a wrap can be discarded too. */
	rec2 = shm_ring__reserve(p, 1, 1000);
	assert_non_null(rec2);
	assert_int_equal(shm_ring__discard(p, rec2), 0);
	assert_int_equal(consume(p, c, count_cb, &n, 0), 0);
	shm_ring__free(c);
	shm_ring__free(p);
}

/* Fill the ring (so the producer must re-read the consumer position), then
 * show each kind of bad position: every write is dropped and counted as
 * hostile, and the unread records survive byte for byte. */
static void test_hostile_cons_exact(void **state)
{
	struct shm_ring *p, *c;
	struct expect e;
	volatile uint64_t *cp;
	uint64_t seq = 0, prod, truth, hostile = 0, drops = 0, rnd = 7;

	pair_new(4096, &p, &c);
	cp = map_cons_page(p);
	expect_init(&e, 256);
	/* One lap, fully consumed, then full again: prod = 8192, truth = 4096. */
	while (write_rec(p, &e, seq, 56) == 0)
		seq++;
	assert_int_equal(consume(p, c, check_cb, &e, 0), 64);
	while (write_rec(p, &e, seq, 56) == 0)
		seq++;
	drops = 2;
	prod = 8192;
	truth = cp[CONS_POS_OFF / 8];
	assert_int_equal(truth, 4096);

	const uint64_t bad[] = {
		prod + 8,              /* ahead of the producer */
		prod + (1ull << 40),   /* far ahead */
		prod - 4096 - 8,       /* further behind than the ring */
		0,                     /* two laps behind */
		truth + 4,             /* misaligned, otherwise in range */
		truth + 1,
		truth - 64,            /* backwards from what we saw */
		UINT64_MAX,
		UINT64_MAX - 7,
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cp[CONS_POS_OFF / 8] = bad[i];
		for (int k = 0; k < 3; k++) {
			assert_int_equal(write_rec(p, &e, seq, 56), -ENOSPC);
			assert_null(shm_ring__reserve(p, 1, 0));
			hostile += 2;
			drops += 2;
		}
		assert_int_equal(shm_ring__writable(p), 0);
	}
	for (int i = 0; i < 2000; i++) {
		uint64_t v = mix(rnd++);

		if (!(v & 7) && v >= truth && v <= prod)
			continue;
		cp[CONS_POS_OFF / 8] = v;
		assert_int_equal(write_rec(p, &e, seq, 8), -ENOSPC);
		hostile++;
		drops++;
	}
	struct shm_ring_stats s = stats(p);
	assert_int_equal(s.hostile_cons, hostile);
	assert_int_equal(s.drops, drops);
	assert_int_equal(s.produced, 128);

	/* Back to the truth: the 64 unread records are intact. */
	cp[CONS_POS_OFF / 8] = truth;
	assert_int_equal(consume(p, c, check_cb, &e, 0), 64);
	assert_int_equal(e.bad, 0);
	assert_int_equal(e.delivered, 128);
	/* And the ring works normally afterwards. */
	assert_int_equal(write_rec(p, &e, seq++, 56), 0);
	assert_int_equal(consume(p, c, check_cb, &e, 0), 1);
	assert_int_equal(e.bad, 0);
	assert_int_equal(stats(p).hostile_cons, hostile);
	munmap((void *)cp, (size_t)page);
	expect_fini(&e);
	shm_ring__free(c);
	shm_ring__free(p);
}

/* Random traffic with a consumer that now and then writes garbage, or an
 * older valid position, between its honest consumes.  The producer must
 * never overwrite what the honest consumer has not read yet. */
static void test_hostile_cons_random(void **state)
{
	struct shm_ring *p, *c;
	struct expect e;
	volatile uint64_t *cp;
	uint64_t seq = 0, attempts = 0, rnd = 4242, truth;

	pair_new(8192, &p, &c);
	cp = map_cons_page(p);
	expect_init(&e, 4096);
	for (int round = 0; round < 30000; round++) {
		uint64_t v = mix(rnd++), prod;
		uint32_t len = (uint32_t)(mix(rnd++) % 300);

		truth = cp[CONS_POS_OFF / 8];
		prod = truth;
		/* A rough upper bound for the current producer position. */
		for (size_t i = e.head; i < e.tail; i++)
			prod += 8 + ((e.len[i % e.cap] + 7u) & ~7u) + 1024;
		switch (v % 8) {
		case 0: cp[CONS_POS_OFF / 8] = v; break;                         /* random */
		case 1: cp[CONS_POS_OFF / 8] = truth + 8 * (v >> 40);  break;    /* ahead */
		case 2: cp[CONS_POS_OFF / 8] = truth - 8 * (1 + (v >> 50)); break; /* behind */
		case 3: cp[CONS_POS_OFF / 8] = truth | (1 + (v >> 61)); break;   /* misaligned */
		default: break;                                                  /* honest */
		}
		/* Skip garbage that happens to be a valid, larger position: the
		 * producer must believe such a claim, and the test would then
		 * accuse it of overwriting records the consumer gave up. */
		uint64_t w = cp[CONS_POS_OFF / 8];
		if (w != truth && !(w & 7) && w > truth && w <= prod)
			cp[CONS_POS_OFF / 8] = truth;
		for (int k = 0; k < 4; k++) {
			attempts++;
			if (write_rec(p, &e, seq, len) == 0)
				seq++;
		}
		cp[CONS_POS_OFF / 8] = truth;
		if (v % 3 == 0) {
			int n = consume(p, c, check_cb, &e, 1 + (v >> 32) % 8);
			assert_true(n >= 0);
			assert_int_equal(e.bad, 0);
		}
	}
	assert_int_equal(consume(p, c, check_cb, &e, 0), (int)expect_pending(&e));
	assert_int_equal(e.bad, 0);
	assert_int_equal(e.delivered, seq);
	struct shm_ring_stats s = stats(p);
	assert_int_equal(s.produced, seq);
	assert_int_equal(s.produced + s.drops, attempts);
	assert_true(s.hostile_cons > 100);
	assert_true(s.produced > 10000);
	munmap((void *)cp, (size_t)page);
	expect_fini(&e);
	shm_ring__free(c);
	shm_ring__free(p);
}

/* Corrupt a committed header through the producer's own mapping, with good
 * records before and after it. */
static void corrupt_case(uint32_t good, uint32_t bad_len, uint32_t bad_type, uint32_t after)
{
	struct shm_ring *p, *c;
	struct expect e;
	uint32_t *rec;

	pair_new(4096, &p, &c);
	expect_init(&e, 128);
	for (uint32_t i = 0; i < good; i++)
		assert_int_equal(write_rec(p, &e, i, 24), 0);
	rec = shm_ring__reserve(p, 5, 16);
	assert_non_null(rec);
	rec[-2] = bad_len;
	rec[-1] = bad_type;
	assert_int_equal(shm_ring__commit(p, rec), 0);
	for (uint32_t i = 0; i < after; i++)
		assert_int_equal(shm_ring__write(p, 9, "after", 5), 0);
	assert_int_equal(consume(p, c, check_cb, &e, 0), -EBADMSG);
	assert_int_equal(e.delivered, good);
	assert_int_equal(e.bad, 0);
	/* Broken for good: nothing past a bad record can be located. */
	assert_int_equal(consume(p, c, check_cb, &e, 0), -EBADMSG);
	assert_int_equal(shm_ring__prepare_wait(c), -EBADMSG);
	struct shm_ring_stats s = stats(c);
	assert_int_equal(s.consumed, good);
	assert_int_equal(s.corrupt, 1);
	expect_fini(&e);
	shm_ring__free(c);
	shm_ring__free(p);
}

/*
 * Publication is batched: nothing is visible before the batch ends (notify),
 * a full ring publishes by itself (a dropping producer never waits on its
 * own unpublished records), and 32 KiB of commits publish without notify.
 */
static void test_batched_publication(void **state)
{
	struct shm_ring *p, *c;
	struct expect e;
	uint64_t seq = 0;

	pair_new(4096, &p, &c);
	expect_init(&e, 256);
	assert_int_equal(write_rec(p, &e, seq++, 24), 0);
	assert_int_equal(shm_ring__consume(c, check_cb, &e, 0), 0);
	assert_int_equal(shm_ring__notify(p), 0);
	assert_int_equal(shm_ring__consume(c, check_cb, &e, 0), 1);
	while (write_rec(p, &e, seq, 24) == 0)
		seq++;
	assert_int_equal(shm_ring__consume(c, check_cb, &e, 0), (int)expect_pending(&e));
	assert_int_equal(e.bad, 0);
	shm_ring__free(c);
	shm_ring__free(p);
	expect_fini(&e);

	pair_new(1 << 20, &p, &c);
	expect_init(&e, 4096);
	for (seq = 0; seq < 1000; seq++)    /* 1000 * 40 bytes: one publication at 32 KiB */
		assert_int_equal(write_rec(p, &e, seq, 32), 0);
	assert_int_equal(shm_ring__consume(c, check_cb, &e, 0), (32 << 10) / 40 + 1);
	assert_int_equal(consume(p, c, check_cb, &e, 0), (int)expect_pending(&e));
	assert_int_equal(e.bad, 0);
	assert_int_equal(e.delivered, 1000);
	expect_fini(&e);
	shm_ring__free(c);
	shm_ring__free(p);
}

/*
 * A consumer that pauses, wherever in the buffer it caught up last, has the
 * whole ring as buffer: the producer fits all but a record's worth of pad
 * without a drop.  (The analyzer pauses for a report while the collector
 * goes on; a producer that wrapped early, to keep its laps in cache, would
 * leave a pause right after such a wrap an eighth of the ring.)
 */
static void test_pause_anywhere_gets_whole_ring(void **state)
{
	const size_t size = 4 << 20;
	const uint32_t payload = 248, rec = payload + 8;
	struct shm_ring *p, *c;
	struct expect e;
	volatile uint64_t *cp;
	uint64_t seq = 0, offs = 0;

	pair_new(size, &p, &c);
	cp = map_cons_page(p);
	expect_init(&e, 1 << 15);
	for (int round = 0; round < 48; round++) {
		uint64_t fits = (size - rec) / rec, n = 1 + mix((uint64_t)round) % 3000;

		/* Move the meeting point: a few batches of odd sizes, each consumed. */
		for (uint64_t i = 0; i < n; i++, seq++)
			assert_int_equal(write_rec(p, &e, seq, (uint32_t)(mix(seq) % 500)), 0);
		assert_int_equal(consume(p, c, check_cb, &e, 0), (int)n);
		offs |= 1ull << ((cp[CONS_POS_OFF / 8] & (size - 1)) * 8 / size);
		/* The consumer pauses here; the producer goes on. */
		for (uint64_t i = 0; i < fits; i++, seq++)
			assert_int_equal(write_rec(p, &e, seq, payload), 0);
		assert_int_equal(stats(p).drops, 0);
		assert_int_equal(consume(p, c, check_cb, &e, 0), (int)fits);
	}
	/* The pauses began in every eighth of the buffer. */
	assert_int_equal(offs, 0xff);
	assert_int_equal(e.bad, 0);
	assert_int_equal(e.delivered, seq);
	munmap((void *)cp, (size_t)page);
	expect_fini(&e);
	shm_ring__free(c);
	shm_ring__free(p);
}

static void test_consumer_rejects_corrupt_length(void **state)
{
	corrupt_case(0, 1025, 5, 0);               /* > max_record */
	corrupt_case(3, 1025, 5, 0);               /* good ones before are delivered */
	corrupt_case(2, 1025, 5, 100);             /* > max_record, < committed */
	corrupt_case(2, 17, 5, 0);                 /* rounds past what was committed */
	corrupt_case(0, 1000, 5, 0);               /* <= max_record, > committed */
	corrupt_case(1, UINT32_MAX, 5, 100);
	corrupt_case(0, 16, SHM_RING_TYPE_PAD, 0); /* a pad that does not end the ring */
	corrupt_case(1, 16, SHM_RING_TYPE_PAD, 150);
	corrupt_case(1, 4096 - 8 - 32, SHM_RING_TYPE_PAD, 0); /* ends the ring, not committed */
}

/* The producer position itself corrupted: misaligned or beyond a lap. */
static void test_consumer_rejects_corrupt_prod(void **state)
{
	const uint64_t bad[] = { 12, 4096 + 8, UINT64_MAX - 7 };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct shm_ring *p, *c;
		uint8_t *rec;
		int n = 0;

		pair_new(4096, &p, &c);
		/* Bigger than the producer's stage (a sixteenth of the ring), so
		 * the reservation lies in the ring itself, at position 0: the data
		 * area starts at rec - 8, meta a page before. */
		rec = shm_ring__reserve(p, 1, 300);
		assert_non_null(rec);
		volatile uint64_t *prod = (volatile uint64_t *)(void *)(rec - 8 - page + META_PROD_OFF);
		assert_int_equal(shm_ring__commit(p, rec), 0);
		assert_int_equal(shm_ring__notify(p), 0);
		assert_int_equal(*prod, 8 + 304);
		*prod = bad[i];
		assert_int_equal(consume(p, c, count_cb, &n, 0), -EBADMSG);
		assert_int_equal(n, 0);
		assert_int_equal(stats(c).corrupt, 1);
		shm_ring__free(c);
		shm_ring__free(p);
	}
}

static void segv_exit(int sig)
{
	_exit(42);
}

/* The consumer can read the data memfd and nothing more, whatever it tries. */
static void test_readonly_enforced(void **state)
{
	struct shm_ring *p, *c;
	int dfd, cfd, fd, n = 0;
	size_t len;
	void *m;
	char path[64], byte = 1;
	pid_t pid;
	int status;

	pair_new(4096, &p, &c);
	dfd = shm_ring__data_fd(c);
	cfd = shm_ring__cons_fd(c);
	len = (size_t)page + 4096;
	assert_int_equal(shm_ring__write(p, 1, "payload!", 8), 0);

	errno = 0;
	assert_true(mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, dfd, 0) == MAP_FAILED);
	assert_int_equal(errno, EPERM);
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, dfd, 0);
	assert_true(m != MAP_FAILED);
	assert_int_equal(mprotect(m, len, PROT_READ | PROT_WRITE), -1);
	assert_int_equal(pwrite(dfd, &byte, 1, page), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(ftruncate(dfd, page), -1);
	assert_int_equal(ftruncate(dfd, (off_t)len * 2), -1);
	assert_int_equal(fallocate(dfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)len), -1);
	assert_int_equal(fcntl(dfd, F_ADD_SEALS, F_SEAL_WRITE), -1);
	assert_int_equal(errno, EPERM);
	/* Reopening gives a new, writable file description of the same inode;
	 * the seals are on the inode, so it changes nothing. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", dfd);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		assert_true(mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED);
		assert_int_equal(pwrite(fd, &byte, 1, page + 8), -1);
		close(fd);
	}
	/* A private writable mapping is a copy: scribbling there is invisible. */
	uint8_t *priv = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, dfd, 0);
	assert_true(priv != MAP_FAILED);
	memset(priv + page, 0xff, 4096);
	munmap(priv, len);
	/* The cons page: writable, but not resizable. */
	assert_int_equal(ftruncate(cfd, 0), -1);
	assert_int_equal(ftruncate(cfd, page * 2), -1);
	assert_int_equal(fcntl(cfd, F_ADD_SEALS, F_SEAL_WRITE), -1);

	/* A store through the read-only mapping faults (in a child). */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = segv_exit;
		sigaction(SIGSEGV, &sa, NULL);
		sigaction(SIGBUS, &sa, NULL);
		((volatile uint8_t *)m)[page + 8] = 0;
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 42);
	munmap(m, len);

	/* The record is still what the producer wrote. */
	uint32_t got = 0;
	assert_int_equal(consume(p, c, len_cb, &got, 0), 1);
	assert_int_equal(got, 9);
	assert_int_equal(consume(p, c, count_cb, &n, 0), 0);
	shm_ring__free(c);
	shm_ring__free(p);
}

static bool fd_closed(int fd)
{
	return fcntl(fd, F_GETFD) < 0 && errno == EBADF;
}

static void test_attach_validation(void **state)
{
	struct shm_ring *p, *c;
	int a, b, e, fd;
	uint8_t meta[256];

	p = shm_ring__create(4096, "v");
	assert_non_null(p);

	errno = 0;
	assert_null(shm_ring__attach(-1, -1, -1));
	assert_int_equal(errno, EBADF);

	/* Takes ownership even on failure. */
	a = dup(shm_ring__data_fd(p));
	errno = 0;
	assert_null(shm_ring__attach(a, -1, -1));
	assert_int_equal(errno, EBADF);
	assert_true(fd_closed(a));

	/* Data and cons fds swapped: no ring metadata there. */
	a = dup(shm_ring__cons_fd(p));
	b = dup(shm_ring__data_fd(p));
	e = dup(shm_ring__event_fd(p));
	errno = 0;
	assert_null(shm_ring__attach(a, b, e));
	assert_int_equal(errno, EINVAL);
	assert_true(fd_closed(a) && fd_closed(b) && fd_closed(e));

	/* An unsealed memfd with a perfect copy of the metadata. */
	assert_int_equal(pread(shm_ring__data_fd(p), meta, sizeof(meta), 0), sizeof(meta));
	fd = memfd_create("fake", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, page + 4096), 0);
	assert_int_equal(pwrite(fd, meta, sizeof(meta), 0), sizeof(meta));
	errno = 0;
	assert_null(shm_ring__attach(fd, dup(shm_ring__cons_fd(p)), -1));
	assert_int_equal(errno, EPERM);

	/* Sealed, but its size disagrees with the metadata. */
	fd = memfd_create("fake", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_int_equal(ftruncate(fd, page + 8192), 0);
	assert_int_equal(pwrite(fd, meta, sizeof(meta), 0), sizeof(meta));
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	errno = 0;
	assert_null(shm_ring__attach(fd, dup(shm_ring__cons_fd(p)), -1));
	assert_int_equal(errno, EINVAL);

	/* Sealed, right size, bad data_size field. */
	fd = memfd_create("fake", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_int_equal(ftruncate(fd, page + 4096), 0);
	assert_int_equal(pwrite(fd, meta, sizeof(meta), 0), sizeof(meta));
	uint64_t bogus = 4095;
	assert_int_equal(pwrite(fd, &bogus, 8, 16), 8);
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
	errno = 0;
	assert_null(shm_ring__attach(fd, dup(shm_ring__cons_fd(p)), -1));
	assert_int_equal(errno, EINVAL);

	/* An unsealed cons page. */
	fd = memfd_create("fake", MFD_CLOEXEC);
	assert_int_equal(ftruncate(fd, page), 0);
	errno = 0;
	assert_null(shm_ring__attach(dup(shm_ring__data_fd(p)), fd, -1));
	assert_int_equal(errno, EPERM);

	/* No wake fd is allowed: the consumer polls. */
	c = shm_ring__attach(dup(shm_ring__data_fd(p)), dup(shm_ring__cons_fd(p)), -1);
	assert_non_null(c);
	assert_int_equal(shm_ring__event_fd(c), -1);
	assert_int_equal(shm_ring__prepare_wait(c), 0);
	assert_int_equal(shm_ring__write(p, 1, "z", 1), 0);
	assert_int_equal(shm_ring__notify(p), 1);
	assert_int_equal(shm_ring__prepare_wait(c), 1);
	shm_ring__free(c);
	shm_ring__free(p);
}

static bool readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

static void test_wakeups(void **state)
{
	struct shm_ring *p, *c;
	int n = 0, wfd;

	pair_new(4096, &p, &c);
	wfd = shm_ring__event_fd(c);
	/* Nothing committed: no syscall, nothing to wake. */
	assert_int_equal(shm_ring__notify(p), 0);
	assert_int_equal(shm_ring__prepare_wait(c), 0);
	assert_int_equal(shm_ring__notify(p), 0);
	assert_false(readable(wfd));

	/* Consumer asleep, a batch arrives: one wake-up for the batch. */
	for (int i = 0; i < 10; i++)
		assert_int_equal(shm_ring__write(p, 1, "abc", 3), 0);
	assert_int_equal(shm_ring__notify(p), 1);
	assert_true(readable(wfd));
	/* More batches while it has not slept again: no more syscalls. */
	for (int i = 0; i < 5; i++) {
		assert_int_equal(shm_ring__write(p, 1, "abc", 3), 0);
		assert_int_equal(shm_ring__notify(p), 0);
	}
	assert_int_equal(stats(p).wakeups, 1);
	assert_int_equal(consume(p, c, count_cb, &n, 0), 15);
	/* Going back to sleep drains the pending datagram. */
	assert_int_equal(shm_ring__prepare_wait(c), 0);
	assert_false(readable(wfd));

	/* Committed records stay invisible until the batch ends; notify then
	 * publishes them and answers the announcement, and prepare_wait sees
	 * them instead of sleeping. */
	assert_int_equal(shm_ring__write(p, 1, "abc", 3), 0);
	assert_int_equal(shm_ring__consume(c, count_cb, &n, 0), 0);
	assert_int_equal(shm_ring__notify(p), 1); /* saw the announcement */
	assert_int_equal(shm_ring__prepare_wait(c), 1);
	assert_int_equal(shm_ring__consume(c, count_cb, &n, 0), 1);
	assert_int_equal(shm_ring__prepare_wait(c), 0);
	assert_false(readable(wfd));
	assert_int_equal(stats(p).wakeups, 2);
	shm_ring__free(c);
	shm_ring__free(p);
}

/*
 * shm_ring__publish makes records visible at once, but answers a sleep only
 * once an eighth of the ring was committed since the last check; the next
 * shm_ring__notify answers it for what is below.
 */
static void test_lazy_publish(void **state)
{
	struct shm_ring *p, *c;
	int n = 0, wfd, woke = 0, writes = 0;

	pair_new(4096, &p, &c);   /* an eighth: 512 bytes, 32 records of 16 */
	wfd = shm_ring__event_fd(c);
	assert_int_equal(shm_ring__publish(c), -EPERM);
	assert_int_equal(shm_ring__prepare_wait(c), 0);

	/* Visible without a wake-up. */
	assert_int_equal(shm_ring__write(p, 1, "abc", 3), 0);
	assert_int_equal(shm_ring__publish(p), 0);
	assert_false(readable(wfd));
	assert_int_equal(shm_ring__consume(c, count_cb, &n, 0), 1);

	/* Asleep again: a small batch is published without waking it, and the
	 * next notify wakes it for that batch. */
	assert_int_equal(shm_ring__prepare_wait(c), 0);
	assert_int_equal(shm_ring__write(p, 1, "abc", 3), 0);
	assert_int_equal(shm_ring__publish(p), 0);
	assert_false(readable(wfd));
	assert_int_equal(shm_ring__notify(p), 1);
	assert_true(readable(wfd));
	assert_int_equal(shm_ring__consume(c, count_cb, &n, 0), 1);
	assert_int_equal(stats(p).wakeups, 1);

	/* Asleep: the batch that brings an eighth of the ring wakes it, not before. */
	assert_int_equal(shm_ring__prepare_wait(c), 0);
	while (!woke) {
		assert_int_equal(shm_ring__write(p, 1, "abc", 3), 0);
		writes++;
		woke = shm_ring__publish(p);
		assert_true(woke >= 0);
		assert_int_equal(readable(wfd), woke);
	}
	assert_int_equal(writes, 4096 / 8 / 16);
	assert_int_equal(stats(p).wakeups, 2);
	assert_int_equal(shm_ring__consume(c, count_cb, &n, 0), writes);
	assert_int_equal(n, 2 + writes);
	shm_ring__free(c);
	shm_ring__free(p);
}

/* A consumer that never drains, made its socket blocking and keeps
 * announcing sleeps must not be able to block the producer. */
static void test_hostile_wake_fd(void **state)
{
	struct shm_ring *p, *c;
	volatile uint32_t *seq;
	char byte = 0;
	int wfd, fl;

	pair_new(4096, &p, &c);
	wfd = shm_ring__event_fd(c);
	seq = (volatile uint32_t *)(void *)((char *)map_cons_page(p) + CONS_SEQ_OFF);
	fl = fcntl(wfd, F_GETFL);
	assert_int_equal(fcntl(wfd, F_SETFL, fl & ~O_NONBLOCK), 0);
	alarm(20);
	for (int i = 0; i < 2000; i++) {
		(*seq)++;
		assert_int_equal(shm_ring__write(p, 1, "x", 1), 0);
		assert_int_equal(shm_ring__notify(p), 1);
		int n = 0;
		assert_int_equal(consume(p, c, count_cb, &n, 0), 1);
	}
	alarm(0);
	/* The queue is bounded: most notifies found it full (that is fine, the
	 * consumer has a wake-up pending). */
	assert_true(stats(p).wakeups < 2000);
	assert_true(stats(p).wakeups >= 1);
	/* The consumer cannot talk back on the producer's socket. */
	assert_int_equal(send(wfd, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL), -1);
	munmap((void *)((char *)seq - CONS_SEQ_OFF), (size_t)page);
	shm_ring__free(c);
	shm_ring__free(p);
}

/* A restarted consumer resumes at the published position; a garbage
 * position left behind makes it skip to the producer instead. */
static void test_consumer_restart(void **state)
{
	struct shm_ring *p, *c;
	struct expect e;
	volatile uint64_t *cp;
	int n = 0;

	pair_new(4096, &p, &c);
	expect_init(&e, 64);
	for (uint64_t i = 0; i < 10; i++)
		assert_int_equal(write_rec(p, &e, i, 40), 0);
	assert_int_equal(consume(p, c, check_cb, &e, 0), 10);
	/* Records already visible: no sleep announced. */
	assert_int_equal(write_rec(p, &e, 10, 40), 0);
	assert_int_equal(shm_ring__notify(p), 0);
	assert_int_equal(shm_ring__prepare_wait(c), 1);
	assert_int_equal(consume(p, c, check_cb, &e, 0), 1);
	/* The old consumer's last sleep is answered; it dies before reading. */
	assert_int_equal(shm_ring__prepare_wait(c), 0);
	for (uint64_t i = 11; i < 17; i++)
		assert_int_equal(write_rec(p, &e, i, 40), 0);
	assert_int_equal(shm_ring__notify(p), 1);
	shm_ring__free(c);
	c = shm_ring__attach(dup(shm_ring__data_fd(p)), dup(shm_ring__cons_fd(p)),
			     dup(shm_ring__event_fd(p)));
	assert_non_null(c);
	assert_int_equal(consume(p, c, check_cb, &e, 0), 6);
	assert_int_equal(e.bad, 0);
	assert_int_equal(e.delivered, 17);
	/* The new consumer's first sleep is a new one to the producer. */
	assert_int_equal(shm_ring__prepare_wait(c), 0);
	assert_int_equal(shm_ring__write(p, 1, "q", 1), 0);
	assert_int_equal(shm_ring__notify(p), 1);
	assert_true(readable(shm_ring__event_fd(c)));
	shm_ring__free(c);

	cp = map_cons_page(p);
	cp[CONS_POS_OFF / 8] = 3;
	c = shm_ring__attach(dup(shm_ring__data_fd(p)), dup(shm_ring__cons_fd(p)), -1);
	assert_non_null(c);
	assert_int_equal(consume(p, c, count_cb, &n, 0), 0);
	assert_int_equal(cp[CONS_POS_OFF / 8] & 7, 0);
	assert_int_equal(shm_ring__write(p, 1, "q", 1), 0);
	assert_int_equal(consume(p, c, count_cb, &n, 0), 1);
	munmap((void *)cp, (size_t)page);
	expect_fini(&e);
	shm_ring__free(c);
	shm_ring__free(p);
}

/*
 * Holds: records of a batch whose effect becomes durable at the batch's end
 * (type 2, ended by type 3) stay in the ring until that end, and a consumer
 * attaching after the first dies reads them again; records outside a batch
 * (type 1) do not come back.
 */
struct hold_ctx {
	struct shm_ring *c;
	volatile uint64_t *cp;
	uint64_t seq[64], handed[64];	/* each record's sequence, and the position handed back before it */
	unsigned n;
};

static int hold_cb(void *ctx, uint32_t type, const void *data, uint32_t len)
{
	struct hold_ctx *h = ctx;

	if (type == 2)
		shm_ring__hold(h->c);
	else if (type == 3)
		shm_ring__release(h->c);
	if (len == 8 && h->n < 64) {
		h->handed[h->n] = h->cp[CONS_POS_OFF / 8];
		memcpy(&h->seq[h->n++], data, 8);
	}
	return 0;
}

static void put(struct shm_ring *p, uint32_t type, uint64_t seq)
{
	assert_int_equal(shm_ring__write(p, type, &seq, sizeof(seq)), 0);
}

static void test_hold_survives_restart(void **state)
{
	static const uint32_t types[] = { 1, 2, 2, 3, 1, 2, 1, 2 };
	struct shm_ring *p, *c;
	struct hold_ctx h = { 0 };
	volatile uint64_t *cp;

	pair_new(4096, &p, &c);
	cp = map_cons_page(p);
	h.c = c;
	h.cp = cp;
	for (uint64_t i = 0; i < 8; i++)
		put(p, types[i], i);
	assert_int_equal(consume(p, c, hold_cb, &h, 0), 8);
	/* The batch's end goes back at once, before the next record is read. */
	assert_int_equal(h.handed[3], 0);
	assert_int_equal(h.handed[4], 4 * 16);
	/* 16 bytes a record: handed back up to the open batch's first record (seq 5). */
	assert_int_equal(cp[CONS_POS_OFF / 8], 5 * 16);
	assert_int_equal(shm_ring__writable(p), 4096 - 3 * 16);
	shm_ring__free(c);
	c = shm_ring__attach(dup(shm_ring__data_fd(p)), dup(shm_ring__cons_fd(p)), -1);
	assert_non_null(c);
	h = (struct hold_ctx){ .c = c, .cp = cp };
	put(p, 3, 8);
	assert_int_equal(consume(p, c, hold_cb, &h, 0), 4);
	assert_int_equal(h.seq[0], 5);
	assert_int_equal(h.seq[1], 6);	/* read twice: it lies inside the batch */
	assert_int_equal(h.seq[3], 8);
	assert_int_equal(cp[CONS_POS_OFF / 8], 9 * 16);
	assert_int_equal(stats(c).hold_overflows, 0);

	/* A batch longer than half the ring is let go, and counted. */
	for (uint64_t i = 9; i < 9 + 300; i++) {
		put(p, 2, i);
		if (i % 32 == 0)
			assert_true(consume(p, c, hold_cb, &h, 0) > 0);
	}
	assert_true(consume(p, c, hold_cb, &h, 0) > 0);
	assert_int_equal(stats(c).hold_overflows, 2);
	/* Let go at a hand-back with over half the ring held; the records after it hold again. */
	assert_true(shm_ring__writable(p) >= 4096 / 2 - 32 * 16);
	assert_int_equal(stats(p).drops, 0);
	munmap((void *)cp, (size_t)page);
	shm_ring__free(c);
	shm_ring__free(p);
}

/* ---- two processes ----------------------------------------------------- */

static int send_fds(int sock, const int *fds, int n)
{
	char dummy = 'F';
	struct iovec iov = { .iov_base = &dummy, .iov_len = 1 };
	union { char buf[CMSG_SPACE(3 * sizeof(int))]; struct cmsghdr align; } u;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = CMSG_SPACE((size_t)n * sizeof(int)) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	memset(u.buf, 0, sizeof(u.buf));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN((size_t)n * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, (size_t)n * sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fds(int sock, int *fds, int n)
{
	char dummy;
	struct iovec iov = { .iov_base = &dummy, .iov_len = 1 };
	union { char buf[CMSG_SPACE(3 * sizeof(int))]; struct cmsghdr align; } u;
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;

	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN((size_t)n * sizeof(int)))
		return -1;
	memcpy(fds, CMSG_DATA(cm), (size_t)n * sizeof(int));
	return 0;
}

#define XPROC_RECORDS 300000

struct child_report {
	uint64_t retries;
	uint64_t batches;
	struct shm_ring_stats st;
};

/* Child: the producer.  Retries dropped records so the parent can check the
 * full sequence; pauses now and then so the parent goes to sleep. */
static int producer_child(int sock)
{
	struct shm_ring *r = shm_ring__create(65536, "xproc");
	struct child_report rep;
	uint8_t buf[2048];
	uint64_t seq = 0, rnd = 1;
	int fds[3];
	char ack;

	if (!r)
		return 10;
	/* Do not outlive a parent whose assertion failed. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	memset(&rep, 0, sizeof(rep));
	fds[0] = shm_ring__data_fd(r);
	fds[1] = shm_ring__cons_fd(r);
	fds[2] = shm_ring__event_fd(r);
	if (send_fds(sock, fds, 3) < 0)
		return 11;
	while (seq < XPROC_RECORDS) {
		int n = 1 + (int)(mix(rnd++) % 64);

		for (int i = 0; i < n && seq < XPROC_RECORDS; i++) {
			uint32_t len = (uint32_t)(mix(seq) % 700);
			int err;

			fill(buf, seq, len);
			while ((err = shm_ring__write(r, type_of(seq), buf, len)) == -ENOSPC) {
				if (++rep.retries > 1000000)
					return 17;
				if (shm_ring__notify(r) < 0)
					return 12;
				usleep(50);
			}
			if (err)
				return 13;
			seq++;
		}
		rep.batches++;
		if (shm_ring__notify(r) < 0)
			return 14;
		if (rep.batches % 97 == 0)
			usleep(2000);
	}
	shm_ring__stats(r, &rep.st);
	if (write(sock, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
		return 15;
	if (read(sock, &ack, 1) != 1)
		return 16;
	shm_ring__free(r);
	return 0;
}

struct xproc_ctx {
	uint64_t next;
	uint64_t bad;
};

static int xproc_cb(void *ctx, uint32_t type, const void *data, uint32_t len)
{
	struct xproc_ctx *x = ctx;
	const uint8_t *p = data;

	if (type != type_of(x->next) || len != (uint32_t)(mix(x->next) % 700)) {
		x->bad++;
		return -EPROTO;
	}
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != byte_of(x->next, i)) {
			x->bad++;
			return -EPROTO;
		}
	x->next++;
	return 0;
}

static void test_cross_process(void **state)
{
	struct xproc_ctx x = { 0, 0 };
	struct child_report rep;
	struct shm_ring *c;
	int sv[2], fds[3], status, wakes = 0, sleeps = 0;
	pid_t pid;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		_exit(producer_child(sv[1]));
	}
	close(sv[1]);
	assert_int_equal(recv_fds(sv[0], fds, 3), 0);
	c = shm_ring__attach(fds[0], fds[1], fds[2]);
	assert_non_null(c);
	while (x.next < XPROC_RECORDS) {
		int n = shm_ring__consume(c, xproc_cb, &x, 256);

		assert_true(n >= 0);
		if (n > 0)
			continue;
		int w = shm_ring__prepare_wait(c);
		assert_true(w >= 0);
		if (w)
			continue;
		struct pollfd pfd = { .fd = shm_ring__event_fd(c), .events = POLLIN };
		sleeps++;
		/* A lost wake-up shows up as this timeout. */
		assert_int_equal(poll(&pfd, 1, 10000), 1);
		wakes++;
	}
	assert_int_equal(x.bad, 0);
	assert_int_equal(read(sv[0], &rep, sizeof(rep)), sizeof(rep));
	assert_int_equal(write(sv[0], "k", 1), 1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	struct shm_ring_stats cs = stats(c);
	assert_int_equal(rep.st.produced, XPROC_RECORDS);
	assert_int_equal(cs.consumed, XPROC_RECORDS);
	assert_int_equal(cs.consumed_bytes, rep.st.produced_bytes);
	assert_int_equal(rep.st.drops, rep.retries);
	assert_int_equal(rep.st.hostile_cons, 0);
	/* Batched: at most one datagram per batch (plus retries' notifies),
	 * and the parent really slept and was woken. */
	assert_true(rep.st.wakeups <= rep.batches + rep.retries);
	assert_true(rep.st.wakeups >= 1);
	assert_true(sleeps >= 1);
	assert_int_equal(wakes, sleeps);
	print_message("xproc: %llu batches, %llu wake-ups, %d sleeps, %llu retries\n",
		      (unsigned long long)rep.batches, (unsigned long long)rep.st.wakeups, sleeps,
		      (unsigned long long)rep.retries);
	shm_ring__free(c);
	close(sv[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_args),
		cmocka_unit_test(test_wrap_many_sizes),
		cmocka_unit_test(test_full_ring_exact_drops),
		cmocka_unit_test(test_wrap_space_accounting),
		cmocka_unit_test(test_space_released_during_batch),
		cmocka_unit_test(test_zero_loss_when_keeping_up),
		cmocka_unit_test(test_reserve_commit_discard),
		cmocka_unit_test(test_hostile_cons_exact),
		cmocka_unit_test(test_hostile_cons_random),
		cmocka_unit_test(test_batched_publication),
		cmocka_unit_test(test_pause_anywhere_gets_whole_ring),
		cmocka_unit_test(test_consumer_rejects_corrupt_length),
		cmocka_unit_test(test_consumer_rejects_corrupt_prod),
		cmocka_unit_test(test_readonly_enforced),
		cmocka_unit_test(test_attach_validation),
		cmocka_unit_test(test_wakeups),
		cmocka_unit_test(test_lazy_publish),
		cmocka_unit_test(test_hostile_wake_fd),
		cmocka_unit_test(test_consumer_restart),
		cmocka_unit_test(test_hold_survives_restart),
		cmocka_unit_test(test_cross_process),
	};

	page = (int)sysconf(_SC_PAGESIZE);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
