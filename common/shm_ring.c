/*
 * shm_ring: SPSC shared-memory ring, see shm_ring.h for the contract.
 *
 * Layout.  Data memfd = one metadata page (magic, sizes, producer position on
 * its own 128-byte block) followed by data_size bytes of records.  Cons memfd
 * = one page (consumer position, sleep sequence).  Positions are free-running
 * 64-bit byte counters; offset = pos & mask.  Every record is
 * {u32 len, u32 type} + payload padded to 8 bytes, so every position either
 * side publishes is 8-aligned and a header never straddles the end.
 *
 * Wrap-around uses a padding record (type SHM_RING_TYPE_PAD) that fills the
 * tail of the buffer when the next record does not fit there, rather than
 * mapping the data twice back to back like the BPF ringbuf.  Double mapping
 * would need two MAP_FIXED mappings in both processes, page-multiple sizes
 * and a fragile dance to reserve the address range; padding costs at most
 * one record's worth of space per lap, and max_record is a quarter of the
 * ring, so a record always fits after a pad once the consumer catches up.
 *
 * Where the time goes, and what the producer does about it (measured with
 * perf and bench/bench_ring.c, two processes on two vCPUs):
 *  - a record written straight into the ring costs a read-for-ownership of
 *    each cache line, which the consumer last held: records are built in a
 *    private stage (32 KiB, hot in L1) and copied into the ring in bulk;
 *  - publishing the position per record makes the consumer read lines the
 *    producer is still filling: it is published per 32 KiB and at notify;
 *  - the producer walks the whole buffer each lap, even while the consumer
 *    keeps up and laps within a cached eighth would move small records
 *    faster: a consumer that pauses right after such an early wrap, before it
 *    skips the pad, has only that eighth, and the analyzer's pauses of a few
 *    ms under load fill more than an eighth of 8 MiB.  Absorbing a consumer's
 *    pause is what the ring is for.
 * None of this changes what the producer trusts: the consumer position is
 * validated as before, against what was published.
 */
#include "common/shm_ring.h"
#include "common/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define RING_MAGIC   0x47524d45u /* "EMRG" little-endian */
#define RING_VERSION 1u

/* Spatial prefetchers pull 64-byte lines in pairs; 128 keeps hot words apart. */
#define RING_LINE 128

/*
 * The producer publishes its position once per this many bytes (and at
 * every shm_ring__notify), not once per record.  A consumer that keeps up
 * then trails by at least this much and never reads a cache line the
 * producer is still filling: each line moves from one core to the other
 * once, instead of bouncing while both sides work on it, and the position's
 * own line is written once per batch.
 */
#define RING_PUBLISH_BYTES (32u << 10)

/* Page 0 of the data memfd; read-only for the consumer. */
struct ring_meta {
	uint32_t magic;
	uint16_t version;
	uint16_t hdr_size;
	uint32_t reserved;
	uint32_t reserved2;
	uint64_t data_size;
	uint64_t data_off;
	_Alignas(RING_LINE) _Atomic uint64_t prod_pos;
};

/* The cons memfd; written only by the consumer. */
struct ring_cons {
	_Alignas(RING_LINE) _Atomic uint64_t cons_pos;
	/* Own block: bumped once per sleep, not per batch like cons_pos. */
	_Alignas(RING_LINE) _Atomic uint32_t sleep_seq;
};

_Static_assert(sizeof(struct ring_meta) <= SHM_RING_MIN_SIZE, "meta fits a page");
_Static_assert(sizeof(struct ring_cons) <= SHM_RING_MIN_SIZE, "cons fits a page");

struct shm_ring {
	bool producer;
	bool broken;           /* consumer: a bad position/length was seen */
	int data_fd;
	int cons_fd;
	int wake_fd;           /* the consumer's end of the wake socketpair */
	int wake_tx;           /* producer: its own end; -1 on the consumer */
	void *map;             /* whole data memfd */
	size_t map_len;
	struct ring_meta *meta;
	uint8_t *data;
	struct ring_cons *cons;
	size_t cons_len;
	uint64_t size;
	uint64_t mask;
	uint64_t max_record;

	/* producer */
	uint64_t prod;         /* end of the last committed record */
	uint64_t published;    /* prod as last stored in meta->prod_pos */
	uint64_t publish_every; /* bytes committed between two publications */
	uint64_t cached_cons;  /* last consumer position that passed validation */
	uint64_t notified;     /* prod at the last notify */
	uint32_t woken_seq;    /* sleep_seq answered by the last wake-up */
	void *resv;            /* outstanding reservation's payload, or NULL */
	uint64_t resv_end;
	uint32_t resv_len;
	bool resv_staged;      /* the reservation lies in stage[] */
	uint8_t *stage;        /* records committed but not yet copied to the ring */
	uint64_t stage_pos;    /* ring position of stage[0] */
	uint64_t stage_len;
	uint64_t stage_cap;

	/* consumer */
	uint64_t cpos;         /* our position */
	uint64_t handed;       /* the position last stored in the page */
	uint64_t hold_pos;     /* the first record held, while held */
	bool held;
	bool hand_back;        /* a hold ended in the callback: hand back after it */
	uint32_t sleep_seq;

	struct shm_ring_stats st;
};

static inline uint64_t rec_total(uint32_t len)
{
	return SHM_RING_HDR_SIZE + (((uint64_t)len + 7) & ~(uint64_t)7);
}

/* A header is one 64-bit word so the consumer reads it with a single load:
 * a producer rewriting it concurrently cannot make us validate one length
 * and then use another. */
static inline uint64_t hdr_pack(uint32_t type, uint32_t len)
{
	return (uint64_t)type << 32 | len;
}

static inline void hdr_write(uint8_t *p, uint32_t type, uint32_t len)
{
	__atomic_store_n((uint64_t *)(void *)p, hdr_pack(type, len), __ATOMIC_RELAXED);
}

static int page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p > 0 ? (int)p : 4096;
}

static bool size_valid(uint64_t size)
{
	return size >= SHM_RING_MIN_SIZE && size <= SHM_RING_MAX_SIZE && !(size & (size - 1));
}

struct shm_ring *shm_ring__free(struct shm_ring *r)
{
	if (!r)
		return NULL;
	if (r->map)
		munmap(r->map, r->map_len);
	if (r->cons)
		munmap(r->cons, r->cons_len);
	zclose(&r->data_fd);
	zclose(&r->cons_fd);
	zclose(&r->wake_fd);
	zclose(&r->wake_tx);
	free(r->stage);
	free(r);
	return NULL;
}

static struct shm_ring *ring_alloc(bool producer)
{
	struct shm_ring *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->producer = producer;
	r->data_fd = r->cons_fd = r->wake_fd = r->wake_tx = -1;
	return r;
}

static void ring_set_size(struct shm_ring *r, uint64_t size)
{
	r->size = size;
	r->mask = size - 1;
	r->max_record = size / 4;
	r->publish_every = size / 16 < RING_PUBLISH_BYTES ? size / 16 : RING_PUBLISH_BYTES;
}

static void ring_freep(struct shm_ring **r)
{
	shm_ring__free(*r);
}

struct shm_ring *shm_ring__create(size_t data_size, const char *name)
{
	_cleanup_(ring_freep) struct shm_ring *r = NULL;
	int page = page_size(), sv[2];
	char label[64];
	void *p;

	if (!size_valid(data_size)) {
		errno = EINVAL;
		return NULL;
	}
	r = ring_alloc(true);
	if (!r)
		return NULL;
	ring_set_size(r, data_size);
	r->stage_cap = r->publish_every;
	r->stage = malloc(r->stage_cap);
	if (!r->stage)
		return NULL;
	snprintf(label, sizeof(label), "ember-ring:%s", name ? name : "");

	r->data_fd = memfd_create(label, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (r->data_fd < 0)
		return NULL;
	r->map_len = (size_t)page + data_size;
	if (ftruncate(r->data_fd, (off_t)r->map_len) < 0)
		return NULL;
	/* Populate now: a page fault in the collector's hot path costs more
	 * than the whole ring's worth of zeroing at start. */
	p = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->data_fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	r->map = p;
	r->meta = p;
	r->data = (uint8_t *)p + page;
	r->meta->magic = RING_MAGIC;
	r->meta->version = RING_VERSION;
	r->meta->hdr_size = SHM_RING_HDR_SIZE;
	r->meta->data_size = data_size;
	r->meta->data_off = (uint64_t)page;
	atomic_store_explicit(&r->meta->prod_pos, 0, memory_order_relaxed);
	/* FUTURE_WRITE after our writable mapping exists: ours keeps working,
	 * every later PROT_WRITE shared mapping, mprotect to writable, write(2)
	 * and hole punch fails, for any fd on this inode (seals are per inode,
	 * so reopening /proc/<pid>/fd/N O_RDWR does not help either).  SEAL
	 * stops the consumer from adding F_SEAL_WRITE, which would not hurt us
	 * but is not its call. */
	if (fcntl(r->data_fd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) < 0)
		return NULL;

	snprintf(label, sizeof(label), "ember-ring-cons:%s", name ? name : "");
	r->cons_fd = memfd_create(label, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (r->cons_fd < 0)
		return NULL;
	r->cons_len = (size_t)page;
	if (ftruncate(r->cons_fd, (off_t)r->cons_len) < 0)
		return NULL;
	/* Read-only for us: nothing the consumer controls is ever written by
	 * the privileged side.  Sealed against resizing so the consumer cannot
	 * truncate it and SIGBUS us on the next load. */
	if (fcntl(r->cons_fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		return NULL;
	p = mmap(NULL, r->cons_len, PROT_READ, MAP_SHARED | MAP_POPULATE, r->cons_fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	r->cons = p;

	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) < 0)
		return NULL;
	r->wake_tx = sv[0];
	r->wake_fd = sv[1];
	/* We never read our end: refuse whatever the consumer sends to it
	 * (its send gets EPIPE) instead of letting it queue there. */
	if (shutdown(r->wake_tx, SHUT_RD) < 0)
		return NULL;
	return TAKE_PTR(r);
}

int shm_ring__data_fd(const struct shm_ring *r)
{
	return r->data_fd;
}

int shm_ring__cons_fd(const struct shm_ring *r)
{
	return r->cons_fd;
}

int shm_ring__event_fd(const struct shm_ring *r)
{
	return r->wake_fd;
}

size_t shm_ring__max_record(const struct shm_ring *r)
{
	return r->max_record;
}

size_t shm_ring__data_size(const struct shm_ring *r)
{
	return r->size;
}

void shm_ring__stats(const struct shm_ring *r, struct shm_ring_stats *ret)
{
	*ret = r->st;
}

const struct counter_def shm_ring_consumer_counters[SRC_MAX] = {
	[SRC_CONSUMED] = { .name = "ring_consumed" },
	[SRC_HOLD_OVERFLOWS] = { .name = "ring_hold_overflows" },
};

void shm_ring__consumer_stats(const struct shm_ring *r, uint64_t ret[SRC_MAX])
{
	ret[SRC_CONSUMED] = r->st.consumed;
	ret[SRC_HOLD_OVERFLOWS] = r->st.hold_overflows;
}

/*
 * Reads the consumer position and accepts it only inside
 * [cached_cons, published] and 8-aligned.  Anything else (ahead of us, further
 * back than the ring, backwards, misaligned) is hostile or broken, and using
 * it could let us overwrite records the consumer has not read.  Since
 * prod - cached_cons <= size always holds, accepting c bounds the free space
 * to [0, size].  Returns false, leaving cached_cons alone, if c is invalid.
 */
static bool cons_refresh(struct shm_ring *r)
{
	/* acquire: pairs with the consumer's release store, so its reads of the
	 * records it released are done before we overwrite their space. */
	uint64_t c = atomic_load_explicit(&r->cons->cons_pos, memory_order_acquire);

	if ((c & 7) || r->published - c > r->published - r->cached_cons)
		return false;
	r->cached_cons = c;
	return true;
}

static void count_drop(struct shm_ring *r, uint32_t len)
{
	r->st.drops++;
	r->st.drop_bytes += len;
}

static void prod_publish(struct shm_ring *r)
{
	/* release: the pad, header and payload stores of every record below
	 * prod become visible before the position that covers them (the
	 * consumer load-acquires it). */
	atomic_store_explicit(&r->meta->prod_pos, r->prod, memory_order_release);
	r->published = r->prod;
}

/*
 * Copies the staged records into the ring in one go.  A bulk copy writes
 * whole cache lines (`rep movsb` needs no read-for-ownership), where
 * record-by-record stores would each fetch a line the consumer last held.
 * No record straddles the end, but the staged run does when a record ended
 * exactly there: then it is two copies.
 */
static void stage_flush(struct shm_ring *r)
{
	uint64_t off = r->stage_pos & r->mask, first;

	if (!r->stage_len)
		return;
	first = r->size - off < r->stage_len ? r->size - off : r->stage_len;
	memcpy(r->data + off, r->stage, first);
	if (first < r->stage_len)
		memcpy(r->data, r->stage + first, r->stage_len - first);
	r->stage_len = 0;
}

/* Everything but the common case: errors, a full-looking ring, a wrap, a
 * record too big for the stage.  Kept out of line so the fast path below
 * saves no registers. */
static __attribute__((noinline)) void *reserve_slow(struct shm_ring *r, uint32_t type, uint32_t len)
{
	uint64_t total, pos, off, tail, need;

	if (!r->producer) {
		errno = EPERM;
		return NULL;
	}
	if (r->resv) {
		errno = EBUSY;
		return NULL;
	}
	if (type == SHM_RING_TYPE_PAD) {
		errno = EINVAL;
		return NULL;
	}
	if (len > r->max_record) {
		count_drop(r, len);
		r->st.oversize++;
		errno = EMSGSIZE;
		return NULL;
	}
	total = rec_total(len);
	pos = r->prod;
	off = pos & r->mask;
	tail = r->size - off;
	/* A record never straddles the end: if it does not fit in the tail, the
	 * tail becomes a pad record and the record starts at offset 0. */
	need = tail < total ? tail + total : total;
	/* Only look at the consumer page when our cached view says full: the
	 * consumer's cache line is touched once per lap, not once per record. */
	if (need > r->size - (pos - r->cached_cons)) {
		/* Full: whatever is still unpublished goes out now, so that a
		 * producer that drops (or waits) is never waiting on itself. */
		if (r->prod != r->published) {
			stage_flush(r);
			prod_publish(r);
		}
		if (!cons_refresh(r)) {
			r->st.hostile_cons++;
			count_drop(r, len);
			errno = ENOSPC;
			return NULL;
		}
		if (need > r->size - (pos - r->cached_cons)) {
			count_drop(r, len);
			errno = ENOSPC;
			return NULL;
		}
	}
	if (tail < total) {
		stage_flush(r);
		hdr_write(r->data + off, SHM_RING_TYPE_PAD, (uint32_t)(tail - SHM_RING_HDR_SIZE));
		pos += tail;
		off = 0;
	}
	if (r->stage_len + total > r->stage_cap)
		stage_flush(r);
	if (total <= r->stage_cap) {
		uint8_t *h;

		if (!r->stage_len)
			r->stage_pos = pos;
		h = r->stage + r->stage_len;
		memcpy(h, &(uint64_t){ hdr_pack(type, len) }, 8);
		r->resv = h + SHM_RING_HDR_SIZE;
		r->resv_staged = true;
	} else {
		hdr_write(r->data + off, type, len);
		r->resv = r->data + off + SHM_RING_HDR_SIZE;
		r->resv_staged = false;
	}
	r->resv_end = pos + total;
	r->resv_len = len;
	return r->resv;
}


void *shm_ring__reserve(struct shm_ring *r, uint32_t type, uint32_t len)
{
	uint64_t total = rec_total(len), pos = r->prod, off = pos & r->mask;
	uint8_t *h;

	/* The common case: a valid request that fits the stage, before the end
	 * of the buffer, in the space the cached consumer position leaves. */
	if (__builtin_expect(!r->resv && type != SHM_RING_TYPE_PAD && len <= r->max_record &&
			     total <= r->size - off &&
			     total <= r->size - (pos - r->cached_cons) &&
			     r->stage_len + total <= r->stage_cap && r->producer, 1)) {
		if (!r->stage_len)
			r->stage_pos = pos;
		h = r->stage + r->stage_len;
		memcpy(h, &(uint64_t){ hdr_pack(type, len) }, sizeof(uint64_t));
		r->resv = h + SHM_RING_HDR_SIZE;
		r->resv_staged = true;
		r->resv_end = pos + total;
		r->resv_len = len;
		return r->resv;
	}
	return reserve_slow(r, type, len);
}

int shm_ring__commit(struct shm_ring *r, void *rec)
{
	/* A consumer handle never has a reservation, so this also refuses it. */
	if (!rec || rec != r->resv)
		return -EINVAL;
	if (r->resv_staged)
		r->stage_len += rec_total(r->resv_len);   /* a pad is never staged */
	r->prod = r->resv_end;
	if (r->prod - r->published >= r->publish_every) {
		stage_flush(r);
		prod_publish(r);
	}
	r->st.produced++;
	r->st.produced_bytes += r->resv_len;
	r->resv = NULL;
	return 0;
}

int shm_ring__discard(struct shm_ring *r, void *rec)
{
	if (!r->producer || !rec || rec != r->resv)
		return -EINVAL;
	/* Nothing was published: forgetting the reservation is enough. */
	r->resv = NULL;
	return 0;
}

int shm_ring__write(struct shm_ring *r, uint32_t type, const void *data, uint32_t len)
{
	void *rec = shm_ring__reserve(r, type, len);

	if (!rec)
		return -errno;
	if (len)
		memcpy(rec, data, len);
	return shm_ring__commit(r, rec);
}

size_t shm_ring__writable(struct shm_ring *r)
{
	if (!r->producer || !cons_refresh(r))
		return 0;
	return r->size - (r->prod - r->cached_cons);
}

/*
 * Lost wake-ups are prevented Dekker-style.  Consumer (prepare_wait):
 * store sleep_seq; full fence; load prod_pos.  Producer (here): store
 * prod_pos (commit); full fence; load sleep_seq.  With both fences seq_cst,
 * at least one side sees the other's store: either the consumer sees the new
 * records and does not sleep, or we see the new sleep_seq and send.
 * Every sleep bumps sleep_seq, so comparing with the last answered value
 * tells a new sleep from one we already woke; a consumer that bumps it
 * needlessly only costs itself one datagram per batch.
 */
static int notify(struct shm_ring *r, uint64_t min_bytes)
{
	static const char one = 1;
	uint32_t seq;

	if (!r->producer)
		return -EPERM;
	/* Nothing committed since the last check: that check already either woke
	 * the consumer or saw it awake, and it has seen those records. */
	if (r->prod == r->notified)
		return 0;
	if (r->prod != r->published) {
		stage_flush(r);
		prod_publish(r);
	}
	/* Published but not checked: `notified` stays, so the next check
	 * answers an announcement made before or after this publication. */
	if (r->prod - r->notified < min_bytes)
		return 0;
	r->notified = r->prod;
	/* seq_cst: orders the prod_pos stores of this batch before the
	 * sleep_seq load below (store->load needs a full fence). */
	atomic_thread_fence(memory_order_seq_cst);
	seq = atomic_load_explicit(&r->cons->sleep_seq, memory_order_relaxed);
	if (seq == r->woken_seq)
		return 0;
	r->woken_seq = seq;
	/* MSG_DONTWAIT: never block, whatever the consumer did to its socket.
	 * EAGAIN means datagrams are already queued, so it will wake anyway. */
	if (send(r->wake_tx, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 1;
		return -errno;
	}
	r->st.wakeups++;
	return 1;
}

int shm_ring__notify(struct shm_ring *r)
{
	return notify(r, 0);
}

int shm_ring__publish(struct shm_ring *r)
{
	return notify(r, r->size / 8);
}

/* ---- consumer ---------------------------------------------------------- */

struct shm_ring *shm_ring__attach(int data_fd, int cons_fd, int event_fd)
{
	_cleanup_close_ int dfd = data_fd, cfd = cons_fd, efd = event_fd;
	_cleanup_(ring_freep) struct shm_ring *r = NULL;
	int page = page_size(), seals;
	struct ring_meta m;
	struct stat st;
	uint64_t prod, c;
	void *p;

	if (dfd < 0 || cfd < 0) {
		errno = EBADF;
		return NULL;
	}
	/* Without SHRINK the producer could truncate the file and turn our
	 * next read into SIGBUS; without GROW the size checked here could
	 * change.  Ask the kernel, not the producer. */
	seals = fcntl(dfd, F_GET_SEALS);
	if (seals < 0)
		return NULL;
	if ((seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
		errno = EPERM;
		return NULL;
	}
	seals = fcntl(cfd, F_GET_SEALS);
	if (seals < 0)
		return NULL;
	if (!(seals & F_SEAL_SHRINK)) {
		errno = EPERM;
		return NULL;
	}
	if (fstat(dfd, &st) < 0)
		return NULL;
	if (pread(dfd, &m, sizeof(m), 0) != (ssize_t)sizeof(m)) {
		errno = EINVAL;
		return NULL;
	}
	if (m.magic != RING_MAGIC || m.version != RING_VERSION || m.hdr_size != SHM_RING_HDR_SIZE ||
	    m.data_off != (uint64_t)page || !size_valid(m.data_size) ||
	    st.st_size < 0 || (uint64_t)st.st_size != m.data_off + m.data_size) {
		errno = EINVAL;
		return NULL;
	}
	if (fstat(cfd, &st) < 0)
		return NULL;
	if (st.st_size < page) {
		errno = EINVAL;
		return NULL;
	}

	r = ring_alloc(false);
	if (!r)
		return NULL;
	ring_set_size(r, m.data_size);
	r->map_len = (size_t)(m.data_off + m.data_size);
	p = mmap(NULL, r->map_len, PROT_READ, MAP_SHARED | MAP_POPULATE, dfd, 0);
	if (p == MAP_FAILED)
		return NULL;
	r->map = p;
	r->meta = p;
	r->data = (uint8_t *)p + page;
	r->cons_len = (size_t)page;
	p = mmap(NULL, r->cons_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, cfd, 0);
	if (p == MAP_FAILED)
		return NULL;
	r->cons = p;

	/* Resume where a previous consumer of this ring stopped (analyzer
	 * restart).  Its position is only a hint: if it is not a plausible
	 * position, skip to the producer, dropping what was unread. */
	prod = atomic_load_explicit(&r->meta->prod_pos, memory_order_acquire);
	c = atomic_load_explicit(&r->cons->cons_pos, memory_order_relaxed);
	if ((c & 7) || prod - c > r->size) {
		c = prod;
		atomic_store_explicit(&r->cons->cons_pos, c, memory_order_release);
	}
	r->cpos = r->handed = c;
	/* Continue the previous consumer's sequence: restarting at 0 could
	 * repeat the value the producer last answered and lose a wake-up. */
	r->sleep_seq = atomic_load_explicit(&r->cons->sleep_seq, memory_order_relaxed);

	r->data_fd = TAKE_FD(dfd);
	r->cons_fd = TAKE_FD(cfd);
	r->wake_fd = TAKE_FD(efd);
	return TAKE_PTR(r);
}

/* Hands back the space read, up to a hold. */
static void cons_publish(struct shm_ring *r)
{
	uint64_t pos = r->cpos;

	r->hand_back = false;
	if (r->held && r->cpos - r->hold_pos > r->size / 2) {
		r->held = false;
		r->st.hold_overflows++;
	}
	if (r->held)
		pos = r->hold_pos;
	if (pos == r->handed)
		return;
	r->handed = pos;
	/* release: our (and the callback's) reads of the records before pos
	 * complete before the producer can see their space as free. */
	atomic_store_explicit(&r->cons->cons_pos, pos, memory_order_release);
}

void shm_ring__hold(struct shm_ring *r)
{
	/* In a callback cpos is still the delivered record's position. */
	if (!r->producer && !r->held) {
		r->held = true;
		r->hold_pos = r->cpos;
	}
}

void shm_ring__release(struct shm_ring *r)
{
	if (r->producer || !r->held)
		return;
	r->held = false;
	r->hand_back = true;
}

/*
 * The next record's head (its header and the start of its payload, up to
 * PREFETCH_BYTES of the avail bytes at pos) is fetched while the current one
 * is handled: the ring is larger than the caches, and its lines were last
 * written by the producer on another CPU, so each first read is otherwise a
 * miss the consumer waits for (under wrk, the analyzer's costliest load).
 * A hint only: nothing is read from it, and a bad length costs nothing.
 */
#define PREFETCH_BYTES 512u

static inline void prefetch_head(const struct shm_ring *r, uint64_t pos, uint64_t avail)
{
	uint64_t off = pos & r->mask, n = avail < PREFETCH_BYTES ? avail : PREFETCH_BYTES;

	if (n > r->size - off)
		n = r->size - off;
	for (uint64_t i = 0; i < n; i += 64)
		__builtin_prefetch(r->data + off + i);
}

int shm_ring__consume(struct shm_ring *r, shm_ring_record_fn cb, void *ctx, size_t max_records)
{
	uint64_t prod, published, batch = r->size / 4;
	int n = 0, ret = 0;

	if (r->producer)
		return -EPERM;
	if (!cb)
		return -EINVAL;
	if (r->broken)
		return -EBADMSG;
	if (max_records == 0 || max_records > INT32_MAX)
		max_records = INT32_MAX;
	/* acquire: pairs with the producer's release in commit; the records
	 * below prod are fully written once we see prod. */
	prod = atomic_load_explicit(&r->meta->prod_pos, memory_order_acquire);
	if ((prod & 7) || prod - r->cpos > r->size) {
		ret = -EBADMSG;
		goto bad;
	}
	published = r->cpos;
	while (r->cpos != prod && (size_t)n < max_records) {
		uint64_t off = r->cpos & r->mask, avail = prod - r->cpos, total, hdr;
		uint32_t len, type;
		int err;

		/* off is 8-aligned and size a multiple of 8, so the header is in
		 * bounds; read it once, then use only the copy. */
		hdr = __atomic_load_n((const uint64_t *)(const void *)(r->data + off), __ATOMIC_RELAXED);
		len = (uint32_t)hdr;
		type = (uint32_t)(hdr >> 32);
		if (type == SHM_RING_TYPE_PAD) {
			total = r->size - off;
			if (len != total - SHM_RING_HDR_SIZE || total > avail) {
				ret = -EBADMSG;
				goto bad;
			}
			r->cpos += total;
			continue;
		}
		if (len > r->max_record) {
			ret = -EBADMSG;
			goto bad;
		}
		total = rec_total(len);
		if (total > avail || total > r->size - off) {
			ret = -EBADMSG;
			goto bad;
		}
		if (total < avail)
			prefetch_head(r, r->cpos + total, avail - total);
		err = cb(ctx, type, r->data + off + SHM_RING_HDR_SIZE, len);
		r->cpos += total;
		n++;
		r->st.consumed++;
		r->st.consumed_bytes += len;
		if (err) {
			ret = err < 0 ? err : n;
			break;
		}
		/* Hand space back during long batches too, so the producer does
		 * not see a full ring while we work through a whole lap, and at
		 * once at the end of a hold: a successor must not read its batch
		 * again once the consumer has made it durable. */
		if (r->cpos - published >= batch || r->hand_back) {
			cons_publish(r);
			published = r->cpos;
		}
	}
	cons_publish(r);
	return ret ? ret : n;
bad:
	/* Release what was delivered; the rest is unreadable for good: the
	 * position cannot be trusted past a bad record. */
	cons_publish(r);
	r->broken = true;
	r->st.corrupt++;
	return ret;
}

int shm_ring__prepare_wait(struct shm_ring *r)
{
	uint64_t prod;
	char buf[16];

	if (r->producer)
		return -EPERM;
	if (r->broken)
		return -EBADMSG;
	/* Drain before announcing: a datagram sent after the announcement below
	 * must survive until we poll.  Bounded: the queue is short
	 * (net.unix.max_dgram_qlen) and a wake-up is a hint, not a count. */
	if (r->wake_fd >= 0)
		for (int i = 0; i < 64 && recv(r->wake_fd, buf, sizeof(buf), MSG_DONTWAIT) >= 0; i++)
			;
	/* Records already visible: no announcement, so the producer does not
	 * send a wake-up nobody needs. */
	if (atomic_load_explicit(&r->meta->prod_pos, memory_order_acquire) != r->cpos)
		return 1;
	r->sleep_seq++;
	atomic_store_explicit(&r->cons->sleep_seq, r->sleep_seq, memory_order_relaxed);
	/* seq_cst: the sleep_seq store must be ordered before the prod_pos load
	 * (store->load); pairs with the fence in shm_ring__notify. */
	atomic_thread_fence(memory_order_seq_cst);
	prod = atomic_load_explicit(&r->meta->prod_pos, memory_order_acquire);
	return prod != r->cpos;
}
