/*
 * shm_ring: the single-producer single-consumer shared-memory ring between the
 * privileged collector (producer) and one unprivileged analyzer (consumer, a
 * different process and uid).  One ring = one shard.
 *
 * Three fds make a ring; the producer creates them and hands them over (by
 * SCM_RIGHTS, not this module's job):
 *   data fd  memfd: metadata page + producer position + record data.  Sealed
 *            SHRINK|GROW|FUTURE_WRITE|SEAL after the producer mapped it, so
 *            the consumer can map it read-only and nothing else.
 *   cons fd  memfd, one page: consumer position and sleep announcements.  The
 *            consumer maps it read-write; the producer maps it read-only and
 *            treats every value in it as untrusted.  Sealed SHRINK|GROW|SEAL.
 *   wake fd  the consumer's end of an AF_UNIX datagram socketpair; poll it for
 *            POLLIN.  Not an eventfd on purpose: an eventfd is one file
 *            description shared by both sides, so the consumer could clear
 *            O_NONBLOCK on it and saturate its counter, and the producer's
 *            next write(2) would block forever.  The producer sends with
 *            MSG_DONTWAIT|MSG_NOSIGNAL on its own socket instead, which never
 *            blocks and never raises SIGPIPE whatever the consumer does.
 *
 * Records are {u32 len, u32 type} + payload, 8-byte aligned.  The producer
 * publishes them in batches (shm_ring__commit).  Neither side blocks: a
 * record that does not fit is dropped and counted.  Neither side
 * trusts the other beyond the bounds of the mapping: the producer validates
 * the consumer position (hostile_cons), the consumer validates every position
 * and length it reads (-EBADMSG).
 *
 * Thread-safety: none.  One thread drives one side of a ring at a time.
 */
#ifndef EMBER_SHM_RING_H
#define EMBER_SHM_RING_H

#include <stddef.h>
#include <stdint.h>

#include "common/counters.h"

struct shm_ring; /* opaque; one handle type for both sides */

/* Record type reserved for the wrap-around padding record; never delivered. */
#define SHM_RING_TYPE_PAD UINT32_MAX
/* Bytes of record header in front of every payload. */
#define SHM_RING_HDR_SIZE 8u
#define SHM_RING_MIN_SIZE 4096u
#define SHM_RING_MAX_SIZE (1ull << 30)

struct shm_ring_stats {
	/* producer side */
	uint64_t produced;       /* records committed */
	uint64_t produced_bytes; /* payload bytes committed */
	uint64_t drops;          /* records not written: full, hostile or oversize */
	uint64_t drop_bytes;     /* payload bytes of those */
	uint64_t hostile_cons;   /* drops caused by an invalid consumer position */
	uint64_t oversize;       /* drops because len > shm_ring__max_record() */
	uint64_t wakeups;        /* wake-up datagrams sent by shm_ring__notify() */
	/* consumer side */
	uint64_t consumed;       /* records delivered to the callback */
	uint64_t consumed_bytes; /* payload bytes delivered */
	uint64_t corrupt;        /* consume calls that found a bad position or length */
	uint64_t hold_overflows; /* holds let go because they kept over half the ring */
};

/* ---- producer side ------------------------------------------------------ */

/*
 * Creates a ring with data_size bytes of record space (a power of two in
 * [SHM_RING_MIN_SIZE, SHM_RING_MAX_SIZE]).  name (may be NULL) labels the
 * memfds in /proc/<pid>/fd.  Returns NULL and sets errno: EINVAL (size),
 * ENOMEM, or the errno of memfd_create/ftruncate/mmap/fcntl/socketpair.
 */
struct shm_ring *shm_ring__create(size_t data_size, const char *name);

/*
 * The fds to hand to the consumer.  They stay owned by the ring (closed by
 * shm_ring__free); SCM_RIGHTS duplicates them for the receiver.  On a
 * consumer handle these return the fds it was attached with.
 */
int shm_ring__data_fd(const struct shm_ring *r);
int shm_ring__cons_fd(const struct shm_ring *r);
int shm_ring__event_fd(const struct shm_ring *r); /* the consumer's wake fd */

/*
 * Reserves room for one record of len payload bytes and returns a pointer to
 * its payload (8-byte aligned), to be filled and then passed to
 * shm_ring__commit() or shm_ring__discard().  At most one reservation is
 * outstanding.  Returns NULL and sets errno:
 *   ENOSPC   no room, or the consumer position is invalid (counted as drop)
 *   EMSGSIZE len > shm_ring__max_record()                (counted as drop)
 *   EINVAL   type == SHM_RING_TYPE_PAD                     (not counted)
 *   EBUSY    a reservation is already outstanding          (not counted)
 *   EPERM    r is a consumer handle                        (not counted)
 */
void *shm_ring__reserve(struct shm_ring *r, uint32_t type, uint32_t len);

/*
 * Commits the reserved record rec.  Committed records become visible to the
 * consumer in batches: at the latest at the next shm_ring__notify(), earlier
 * once 16 KiB (a sixteenth of a small ring) have been committed since the
 * last publication.  Returns 0, or -EINVAL if rec is not the outstanding
 * reservation (nothing is committed then).
 */
int shm_ring__commit(struct shm_ring *r, void *rec);

/* Abandons the outstanding reservation rec; nothing becomes visible and
 * nothing is counted.  Returns 0 or -EINVAL. */
int shm_ring__discard(struct shm_ring *r, void *rec);

/* reserve + copy + commit.  Returns 0 or the -errno of shm_ring__reserve
 * (-ENOSPC when full). */
int shm_ring__write(struct shm_ring *r, uint32_t type, const void *data, uint32_t len);

/*
 * Ends a batch: publishes every record committed so far, and sends one
 * wake-up if records were committed since the last call and the consumer
 * announced a sleep (shm_ring__prepare_wait) that has not been answered yet.
 * Makes no syscall otherwise.  Never blocks.
 * Returns 1 if a wake-up was sent (or one is already pending), 0 if none was
 * needed, -EPIPE/-ECONNREFUSED if the consumer closed its end, -EPERM on a
 * consumer handle.
 */
int shm_ring__notify(struct shm_ring *r);

/*
 * Ends a batch like shm_ring__notify (everything committed so far becomes
 * visible), but answers a sleep announcement only once an eighth of the
 * ring has been committed since the last wake-up check: a producer whose
 * batches come faster than the consumer needs waking saves it (and itself)
 * a wake-up per batch.  Records below that wait for the next
 * shm_ring__notify, which the producer must call within a bounded time.
 * Returns as shm_ring__notify.
 */
int shm_ring__publish(struct shm_ring *r);

/* Bytes the producer could reserve now (header and padding included), 0 if
 * the consumer position is invalid.  Nothing is counted.  For back-pressure
 * in tests and benchmarks and for fill-level metrics; the collector drops. */
size_t shm_ring__writable(struct shm_ring *r);

/* ---- consumer side ------------------------------------------------------ */

/*
 * Maps a ring created by another process.  Takes ownership of the three fds
 * in every case: they are closed by shm_ring__free(), or at once on failure.
 * event_fd may be -1 (no wake-ups; the consumer polls).  The data fd is
 * mapped read-only and must carry at least F_SEAL_SHRINK|F_SEAL_GROW (so it
 * cannot be shrunk under us).  Returns NULL and sets errno:
 *   EBADF  a fd is negative            EINVAL  bad metadata or file sizes
 *   EPERM  data fd is not sealed       ENOMEM, or the errno of fstat/mmap
 */
struct shm_ring *shm_ring__attach(int data_fd, int cons_fd, int event_fd);

/*
 * Called once per record.  data points into the shared mapping and is valid
 * only during the call; a misbehaving producer could change it concurrently,
 * so parse it as untrusted input (copy before re-reading a field).  Return 0
 * to continue, > 0 to stop after this record, < 0 to stop and make
 * shm_ring__consume return that value.  The record counts as consumed in all
 * cases.
 */
typedef int (*shm_ring_record_fn)(void *ctx, uint32_t type, const void *data, uint32_t len);

/*
 * Delivers up to max_records records (0 = all available) to cb, then
 * releases their space to the producer.  Returns the number delivered, the
 * callback's negative value, -EBADMSG if a position or length read from the
 * ring is out of bounds (the ring then stays broken: every later call
 * returns -EBADMSG; records delivered before are still counted), -EINVAL
 * (cb NULL) or -EPERM on a producer handle.
 */
int shm_ring__consume(struct shm_ring *r, shm_ring_record_fn cb, void *ctx, size_t max_records);

/*
 * A hold keeps records the consumer has read from going back to the
 * producer, so that a consumer attaching after this one dies (a restarted
 * analyzer) reads them again: for a batch of records whose effect the
 * consumer makes durable only at the batch's last record (a window of stacks
 * published at its marker).  shm_ring__hold() from a callback holds from the
 * record being delivered on (outside one, from the next record); a hold
 * already in place stays where it is.  shm_ring__release() ends it: from a
 * callback, the record being delivered goes back with those before it, as
 * soon as the callback returns (outside one, at the next consume).  A
 * hold found more than half a ring behind the consumer where space goes back
 * (each quarter ring read, each consume's end) is let go (counted in
 * hold_overflows): the producer would otherwise see the ring full.  The
 * producer sees only positions; it trusts the consumer no more than before.
 * No-ops on a producer handle.
 */
void shm_ring__hold(struct shm_ring *r);
void shm_ring__release(struct shm_ring *r);

/*
 * Announces that the consumer is about to sleep on the wake fd.  Drains
 * pending wake-ups first, so a level-triggered poll loop does not spin.
 * Returns 1 if records are already waiting (consume instead of sleeping),
 * 0 if the caller may sleep: the producer's next shm_ring__notify() after a
 * commit will wake it.  -EBADMSG if the ring is broken, -EPERM on a producer
 * handle.
 */
int shm_ring__prepare_wait(struct shm_ring *r);

/* ---- both sides --------------------------------------------------------- */

/* Copies this side's counters; the other side's fields are 0. */
void shm_ring__stats(const struct shm_ring *r, struct shm_ring_stats *ret);

/*
 * The consumer's counters as the consumer's process publishes them
 * (common/counters.h); the producer's are its own process's to publish.
 */
enum shm_ring_consumer_stat {
	SRC_CONSUMED,            /* records delivered to the callback */
	SRC_HOLD_OVERFLOWS,      /* holds let go: over half the ring */
	SRC_MAX
};
extern const struct counter_def shm_ring_consumer_counters[SRC_MAX];
void shm_ring__consumer_stats(const struct shm_ring *r, uint64_t ret[SRC_MAX]);

/* Largest payload a record may carry: data_size / 4. */
size_t shm_ring__max_record(const struct shm_ring *r);

/* Record space in bytes (the data_size given to create). */
size_t shm_ring__data_size(const struct shm_ring *r);

/* Unmaps and closes everything.  Accepts NULL.  Returns NULL. */
struct shm_ring *shm_ring__free(struct shm_ring *r);

#endif
