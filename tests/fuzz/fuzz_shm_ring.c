/*
 * Fuzzes the consumer side of shm_ring against a hostile producer: the input
 * becomes the producer position, the consumer's starting position and the
 * record bytes of a 4096-byte ring.  Every payload delivered is read in full
 * (an out-of-bounds pointer faults or trips ASan), and what shm_ring__consume
 * delivers is compared with a small reference walk of the same bytes: the
 * same records at the same relative offsets, or -EBADMSG at the same point.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/shm_ring.h"

#define SIZE 4096u
#define MAXREC (SIZE / 4)
#define MAX_RECORDS (SIZE / 8 + 1)

static uint8_t meta[256];
static long page;

struct rec {
	const uint8_t *data;
	uint32_t type, len;
	uint64_t off;
};

struct got {
	struct rec r[MAX_RECORDS];
	unsigned n;
	uint64_t sum;
};

static int cb(void *ctx, uint32_t type, const void *data, uint32_t len)
{
	struct got *g = ctx;
	const volatile uint8_t *p = data;

	if (g->n >= MAX_RECORDS)
		abort();
	for (uint32_t i = 0; i < len; i++)
		g->sum += p[i];
	g->r[g->n].data = data;
	g->r[g->n].type = type;
	g->r[g->n].len = len;
	g->n++;
	return 0;
}

/* The record format, walked independently.  Returns the count or -EBADMSG;
 * *count is the number of good records before the end or the bad one. */
static int reference(const uint8_t *data, uint64_t prod, uint64_t pos, struct rec *out, int *count)
{
	int n = 0;

	*count = 0;

	if ((prod & 7) || prod - pos > SIZE)
		return -EBADMSG;
	while (pos != prod) {
		uint64_t off = pos & (SIZE - 1), avail = prod - pos, total;
		uint32_t len, type;

		memcpy(&len, data + off, 4);
		memcpy(&type, data + off + 4, 4);
		if (type == SHM_RING_TYPE_PAD) {
			total = SIZE - off;
			if (len != total - 8 || total > avail)
				return -EBADMSG;
			pos += total;
			continue;
		}
		if (len > MAXREC)
			return -EBADMSG;
		total = 8 + (((uint64_t)len + 7) & ~7ull);
		if (total > avail || total > SIZE - off)
			return -EBADMSG;
		out[n].off = off + 8;
		out[n].type = type;
		out[n].len = len;
		*count = ++n;
		pos += total;
	}
	return n;
}

static void init(void)
{
	struct shm_ring *r;

	page = sysconf(_SC_PAGESIZE);
	r = shm_ring__create(SIZE, "fuzz");
	if (!r || pread(shm_ring__data_fd(r), meta, sizeof(meta), 0) != (ssize_t)sizeof(meta))
		abort();
	shm_ring__free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size)
{
	static struct rec want[MAX_RECORDS];
	static struct got got;
	static uint8_t data[SIZE];
	uint64_t prod, cons, start;
	struct shm_ring *c;
	int dfd, cfd, ret, exp, count;

	if (!page)
		init();
	if (size < 16)
		return 0;
	memcpy(&prod, in, 8);
	memcpy(&cons, in + 8, 8);
	/* Mostly plausible positions, so the walk gets past the first check. */
	if (!(prod >> 63)) {
		prod = cons + (prod % (SIZE + 16));
		prod &= (cons >> 62) ? ~0ull : ~7ull;
	}
	memset(data, 0, sizeof(data));
	memcpy(data, in + 16, size - 16 < SIZE ? size - 16 : SIZE);

	dfd = memfd_create("fuzz-data", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	cfd = memfd_create("fuzz-cons", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (dfd < 0 || cfd < 0 || ftruncate(dfd, page + SIZE) < 0 || ftruncate(cfd, page) < 0 ||
	    pwrite(dfd, meta, sizeof(meta), 0) != (ssize_t)sizeof(meta) ||
	    pwrite(dfd, &prod, 8, 128) != 8 || pwrite(dfd, data, SIZE, page) != SIZE ||
	    pwrite(cfd, &cons, 8, 0) != 8 ||
	    fcntl(dfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0 ||
	    fcntl(cfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
		abort();
	c = shm_ring__attach(dfd, cfd, -1);
	if (!c)
		abort();
	/* attach's rule for a leftover position it cannot use. */
	start = ((cons & 7) || prod - cons > SIZE) ? prod : cons;
	exp = reference(data, prod, start, want, &count);

	got.n = 0;
	ret = shm_ring__consume(c, cb, &got, 0);
	if (exp < 0) {
		/* Records before the bad one are delivered first. */
		if (ret != -EBADMSG || shm_ring__consume(c, cb, &got, 0) != -EBADMSG)
			abort();
	} else if (ret != exp) {
		abort();
	}
	if ((int)got.n != count)
		abort();
	for (unsigned i = 0; i < got.n; i++) {
		if (got.r[i].type != want[i].type || got.r[i].len != want[i].len ||
		    got.r[i].data - got.r[0].data != (ptrdiff_t)(want[i].off - want[0].off))
			abort();
	}
	if (exp >= 0 && shm_ring__prepare_wait(c) != 0)
		abort();
	shm_ring__free(c);
	return 0;
}
