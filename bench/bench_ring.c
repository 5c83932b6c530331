/*
 * bench_ring: shm_ring throughput between two processes (producer = parent,
 * consumer = forked child that attaches like the analyzer does), next to two
 * unix-socket baselines measured in the same run: SOCK_SEQPACKET with
 * sendmmsg/recvmmsg batches of 64, and SOCK_STREAM with 64 KiB batched
 * writes of length-prefixed records.  The ring's producer ends a batch
 * (shm_ring__notify) after the same 64 KiB of records.
 *
 * Mode 1 (keep-up): the producer waits when the ring is full, so nothing may
 * be lost; "lost" is attempted - delivered and must be 0.  A wait is one
 * failed write (counted by the ring as a drop) followed by a retry of the
 * same record, so full_waits == the ring's drop counter.
 * Mode 2 (slow consumer): the producer never waits and the consumer sleeps
 * regularly; drops must account exactly: attempted = produced + drops and
 * produced = consumed.
 *
 * The ring and the stream run alternately on the same record count and are
 * compared pair by pair (see size_round).  RING_BENCH_ONLY=ring runs the
 * ring alone, for profiling it (perf record on both processes).
 * Scale the record counts with RING_BENCH_SCALE (e.g. 0.1 for a quick run).
 * Output: one "name: value unit" line per figure.
 */
#include "common/shm_ring.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RING_SIZE   (8u << 20) /* ember.ring_size default */
#define T_DATA      1u
#define T_END       2u
#define BATCH       64
#define STREAM_BUF  (64u << 10)

struct result {
	uint64_t records;
	uint64_t bytes;
	uint64_t bad;     /* sequence or content errors */
	uint64_t end_ns;  /* when the consumer saw the end marker */
	uint64_t sum;
	uint64_t waits;   /* consumer sleeps on the wake fd */
};

struct run {
	double secs;
	uint64_t attempted, produced, drops, consumed, bad, waits, wakeups, sleeps;
};

static int ncpu;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (ncpu < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu % ncpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -EIO;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Shared by all consumers: seq in the first 8 bytes, and one word of every
 * cache line folded into a sum, so each consumer really reads its records
 * (the ring consumer reads them in place, the socket ones from their copy). */
struct check {
	uint64_t next;
	bool gaps_ok;
	struct result res;
};

static inline void check_record(struct check *c, const uint8_t *data, uint32_t len)
{
	uint64_t seq, tail;

	if (len < 16) {
		c->res.bad++;
		return;
	}
	memcpy(&seq, data, 8);
	for (uint32_t off = 64; off + 8 <= len; off += 64) {
		memcpy(&tail, data + off, 8);
		c->res.sum += tail;
	}
	memcpy(&tail, data + len - 8, 8);
	if (c->gaps_ok ? seq < c->next : seq != c->next)
		c->res.bad++;
	c->next = seq + 1;
	c->res.records++;
	c->res.bytes += len;
	c->res.sum += tail;
}

/*
 * How every producer here writes a record: the payload, then the sequence
 * number over its first 8 bytes, straight into its destination.  Copied in
 * 32-byte steps (sizes here are multiples of 32), not by a variable-length
 * memcpy, whose `rep movs` start-up would cost more than the 64-byte copy
 * and hide what the transports themselves cost.
 */
static inline void fill_record(uint8_t *dst, const uint8_t *payload, uint32_t size, uint64_t seq)
{
	for (uint32_t i = 0; i < size; i += 32)
		memcpy(dst + i, payload + i, 32);
	memcpy(dst, &seq, 8);
}

static void fill_payload(uint8_t *buf, size_t len)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(i * 7 + 1);
}

/* Fork a consumer pinned to the other CPU; it reports a struct result. */
static pid_t spawn(int ctl[2], int (*fn)(int ctl, void *arg), void *arg)
{
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(ctl[0]);
		pin(1);
		_exit(fn(ctl[1], arg));
	}
	close(ctl[1]);
	pin(0);
	return pid;
}

static int finish(pid_t pid, int ctl, struct result *res)
{
	int status, err = read_all(ctl, res, sizeof(*res));

	close(ctl);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -ECHILD;
	return err;
}

/* ---- shm_ring ------------------------------------------------------------ */

struct ring_consumer_arg {
	struct shm_ring *prod;
	bool gaps_ok;
	unsigned slow_every, slow_us;
};

struct ring_check {
	struct check c;
	bool done;
	unsigned slow_every, slow_us;
};

static int ring_cb(void *ctx, uint32_t type, const void *data, uint32_t len)
{
	struct ring_check *rc = ctx;

	if (type == T_END) {
		rc->done = true;
		return 1;
	}
	check_record(&rc->c, data, len);
	if (rc->slow_every && rc->c.res.records % rc->slow_every == 0)
		usleep(rc->slow_us);
	return 0;
}

static int ring_consumer(int ctl, void *argp)
{
	struct ring_consumer_arg *a = argp;
	struct ring_check rc;
	struct shm_ring *r;

	memset(&rc, 0, sizeof(rc));
	rc.c.gaps_ok = a->gaps_ok;
	rc.slow_every = a->slow_every;
	rc.slow_us = a->slow_us;
	r = shm_ring__attach(dup(shm_ring__data_fd(a->prod)), dup(shm_ring__cons_fd(a->prod)),
			     dup(shm_ring__event_fd(a->prod)));
	if (!r)
		return 2;
	if (write_all(ctl, "R", 1) < 0)
		return 3;
	while (!rc.done) {
		int n = shm_ring__consume(r, ring_cb, &rc, 0);

		if (n < 0)
			return 4;
		if (n > 0 || rc.done)
			continue;
		n = shm_ring__prepare_wait(r);
		if (n < 0)
			return 5;
		if (n == 0) {
			struct pollfd pfd = { .fd = shm_ring__event_fd(r), .events = POLLIN };

			rc.c.res.waits++;
			if (poll(&pfd, 1, 5000) != 1)
				return 6; /* a lost wake-up */
		}
	}
	rc.c.res.end_ns = now_ns();
	shm_ring__free(r);
	return write_all(ctl, &rc.c.res, sizeof(rc.c.res)) < 0 ? 7 : 0;
}

static int ring_run(uint32_t size, uint64_t n, bool slow, struct run *out)
{
	struct ring_consumer_arg arg = { 0 };
	struct shm_ring_stats st;
	struct result res;
	struct shm_ring *r;
	uint8_t *buf = malloc(size);
	uint64_t t0, waits = 0, total = SHM_RING_HDR_SIZE + ((size + 7u) & ~7u);
	/* A batch ends (shm_ring__notify) after as many bytes as one write(2)
	 * of the stream baseline carries: both sides pay their per-batch cost
	 * (a fence there, a syscall here) equally often. */
	int ctl[2], err, batch = 0, batch_records = (int)(STREAM_BUF / (8 + size));
	char ready;
	pid_t pid;

	r = shm_ring__create(RING_SIZE, "bench");
	if (!r || !buf) {
		free(buf);
		shm_ring__free(r);
		return -ENOMEM;
	}
	fill_payload(buf, size);
	arg.prod = r;
	arg.gaps_ok = slow;
	if (slow) {
		arg.slow_every = 1000;
		arg.slow_us = 200;
	}
	pid = spawn(ctl, ring_consumer, &arg);
	if (pid < 0 || read_all(ctl[0], &ready, 1) < 0) {
		free(buf);
		shm_ring__free(r);
		return -ECHILD;
	}
	t0 = now_ns();
	for (uint64_t seq = 0; seq < n; seq++) {
		/* As the collector and the stream producer below do: fill the
		 * record in place (payload, then the sequence number over its
		 * head), no staging copy. */
		uint8_t *rec = shm_ring__reserve(r, T_DATA, size);

		if (!rec && errno == ENOSPC && !slow) {
			/* Back-pressure for this mode only: let the consumer drain. */
			waits++;
			shm_ring__notify(r);
			while (shm_ring__writable(r) < 2 * total)
				cpu_relax();
			rec = shm_ring__reserve(r, T_DATA, size);
		}
		err = rec ? 0 : -errno;
		if (rec) {
			fill_record(rec, buf, size, seq);
			err = shm_ring__commit(r, rec);
		}
		if (err && !(slow && err == -ENOSPC)) {
			fprintf(stderr, "bench_ring: write: %s\n", strerror(-err));
			break;
		}
		if (++batch == batch_records) {
			shm_ring__notify(r);
			batch = 0;
		}
	}
	shm_ring__stats(r, &st);
	while (shm_ring__write(r, T_END, NULL, 0) == -ENOSPC) {
		shm_ring__notify(r);
		sched_yield();
	}
	shm_ring__notify(r);
	err = finish(pid, ctl[0], &res);
	free(buf);
	shm_ring__free(r);
	if (err)
		return err;
	out->secs = (double)(res.end_ns - t0) / 1e9;
	out->attempted = n;
	out->produced = st.produced;
	out->drops = st.drops;
	out->consumed = res.records;
	out->bad = res.bad;
	out->waits = waits;
	out->wakeups = st.wakeups;
	out->sleeps = res.waits;
	return 0;
}

/* ---- unix SOCK_SEQPACKET, sendmmsg/recvmmsg batches -------------------- */

struct sock_arg {
	int fd;
	uint32_t size;
};

static int seqpacket_consumer(int ctl, void *argp)
{
	struct sock_arg *a = argp;
	struct check c;
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	uint8_t *bufs = malloc((size_t)BATCH * a->size);
	bool done = false;

	memset(&c, 0, sizeof(c));
	if (!bufs)
		return 2;
	for (int i = 0; i < BATCH; i++) {
		iov[i].iov_base = bufs + (size_t)i * a->size;
		iov[i].iov_len = a->size;
	}
	if (write_all(ctl, "R", 1) < 0)
		return 3;
	while (!done) {
		memset(msgs, 0, sizeof(msgs));
		for (int i = 0; i < BATCH; i++) {
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		int k = recvmmsg(a->fd, msgs, BATCH, MSG_WAITFORONE, NULL);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return 4;
		}
		if (k == 0)
			break;
		for (int i = 0; i < k; i++) {
			if (msgs[i].msg_len == 0) {
				done = true;
				break;
			}
			check_record(&c, iov[i].iov_base, msgs[i].msg_len);
		}
	}
	c.res.end_ns = now_ns();
	free(bufs);
	return write_all(ctl, &c.res, sizeof(c.res)) < 0 ? 5 : 0;
}

static int seqpacket_run(uint32_t size, uint64_t n, struct run *out)
{
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	uint8_t *bufs = malloc((size_t)BATCH * size);
	struct sock_arg arg;
	struct result res;
	int sv[2], ctl[2], err = 0;
	uint64_t t0, seq = 0;
	char ready;
	pid_t pid;

	if (!bufs || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		free(bufs);
		return -ENOMEM;
	}
	for (int i = 0; i < BATCH; i++) {
		fill_payload(bufs + (size_t)i * size, size);
		iov[i].iov_base = bufs + (size_t)i * size;
		iov[i].iov_len = size;
	}
	arg.fd = sv[1];
	arg.size = size;
	pid = spawn(ctl, seqpacket_consumer, &arg);
	close(sv[1]);
	if (pid < 0 || read_all(ctl[0], &ready, 1) < 0) {
		free(bufs);
		close(sv[0]);
		return -ECHILD;
	}
	t0 = now_ns();
	while (seq < n && !err) {
		int cnt = n - seq < BATCH ? (int)(n - seq) : BATCH, sent = 0;

		memset(msgs, 0, sizeof(msgs));
		for (int i = 0; i < cnt; i++) {
			uint64_t s = seq + (uint64_t)i;

			memcpy(iov[i].iov_base, &s, 8);
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		while (sent < cnt) {
			int k = sendmmsg(sv[0], msgs + sent, (unsigned)(cnt - sent), 0);

			if (k < 0) {
				if (errno == EINTR)
					continue;
				err = -errno;
				break;
			}
			sent += k;
		}
		seq += (uint64_t)cnt;
	}
	/* A zero-length message ends the stream. */
	send(sv[0], "", 0, 0);
	err = finish(pid, ctl[0], &res) ?: err;
	close(sv[0]);
	free(bufs);
	if (err)
		return err;
	memset(out, 0, sizeof(*out));
	out->secs = (double)(res.end_ns - t0) / 1e9;
	out->attempted = out->produced = n;
	out->consumed = res.records;
	out->bad = res.bad;
	return 0;
}

/* ---- unix SOCK_STREAM, 64 KiB batches of length-prefixed records ------- */

static int stream_consumer(int ctl, void *argp)
{
	struct sock_arg *a = argp;
	size_t cap = 4 * STREAM_BUF, have = 0;
	uint8_t *buf = malloc(cap);
	struct check c;

	memset(&c, 0, sizeof(c));
	if (!buf)
		return 2;
	if (write_all(ctl, "R", 1) < 0)
		return 3;
	for (;;) {
		ssize_t k = read(a->fd, buf + have, cap - have);
		size_t off = 0;

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return 4;
		}
		if (k == 0)
			break;
		have += (size_t)k;
		while (have - off >= 8) {
			uint32_t len;

			memcpy(&len, buf + off, 4);
			if (len > cap - 8)
				return 5;
			if (have - off < 8 + (size_t)len)
				break;
			check_record(&c, buf + off + 8, len);
			off += 8 + len;
		}
		memmove(buf, buf + off, have - off);
		have -= off;
	}
	c.res.end_ns = now_ns();
	free(buf);
	return write_all(ctl, &c.res, sizeof(c.res)) < 0 ? 6 : 0;
}

static int stream_run(uint32_t size, uint64_t n, struct run *out)
{
	uint8_t *buf = malloc(STREAM_BUF), *payload = malloc(size);
	struct sock_arg arg;
	struct result res;
	int sv[2], ctl[2], err = 0;
	size_t used = 0;
	uint64_t t0;
	char ready;
	pid_t pid;

	if (!buf || !payload || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		free(buf);
		free(payload);
		return -ENOMEM;
	}
	fill_payload(payload, size);
	arg.fd = sv[1];
	arg.size = size;
	pid = spawn(ctl, stream_consumer, &arg);
	close(sv[1]);
	if (pid < 0 || read_all(ctl[0], &ready, 1) < 0) {
		free(buf);
		free(payload);
		close(sv[0]);
		return -ECHILD;
	}
	t0 = now_ns();
	for (uint64_t seq = 0; seq < n && !err; seq++) {
		uint32_t hdr[2] = { size, T_DATA };

		if (used + 8 + size > STREAM_BUF) {
			err = write_all(sv[0], buf, used);
			used = 0;
		}
		memcpy(buf + used, hdr, 8);
		fill_record(buf + used + 8, payload, size, seq);
		used += 8 + size;
	}
	if (!err && used)
		err = write_all(sv[0], buf, used);
	shutdown(sv[0], SHUT_WR);
	err = finish(pid, ctl[0], &res) ?: err;
	close(sv[0]);
	free(buf);
	free(payload);
	if (err)
		return err;
	memset(out, 0, sizeof(*out));
	out->secs = (double)(res.end_ns - t0) / 1e9;
	out->attempted = out->produced = n;
	out->consumed = res.records;
	out->bad = res.bad;
	return 0;
}

/* ---- driver ------------------------------------------------------------ */

static double rate(const struct run *r)
{
	return r->secs > 0 ? (double)r->consumed / r->secs : 0;
}

static int check_lossless(const char *what, const struct run *r)
{
	if (r->consumed != r->attempted || r->bad) {
		fprintf(stderr, "bench_ring: %s: %llu of %llu delivered, %llu bad\n", what,
			(unsigned long long)r->consumed, (unsigned long long)r->attempted,
			(unsigned long long)r->bad);
		return -1;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * PAIRS rounds of (ring, stream) on the same record count, back to back, and
 * the ratio taken within each pair: a neighbour on the shared vCPUs slows a
 * pair's two runs alike, where comparing best-of figures taken seconds apart
 * compares two different machines.  The median pair is the figure; the range
 * is printed with it.  SOCK_SEQPACKET is two orders of magnitude slower and is
 * run twice on a tenth of the records, for scale only.
 */
#define PAIRS 7

static int size_round(uint32_t size, uint64_t n)
{
	struct run ring[PAIRS], stream[PAIRS], seqp[2];
	double ratio[PAIRS], rr[PAIRS], sr[PAIRS], qr[2];
	double ring_med, stream_med, ratio_med, best_seq;
	uint64_t nq = n / 10 ? n / 10 : 1;
	const char *only = getenv("RING_BENCH_ONLY");
	bool ring_only = only && !strcmp(only, "ring");
	char name[64];
	int rc = 0;

	for (int i = 0; i < PAIRS; i++) {
		if (ring_run(size, n, false, &ring[i]) ||
		    (!ring_only && stream_run(size, n, &stream[i]))) {
			fprintf(stderr, "bench_ring: a %uB run failed\n", size);
			return -1;
		}
		snprintf(name, sizeof(name), "ring %uB", size);
		rc |= check_lossless(name, &ring[i]);
		rr[i] = rate(&ring[i]);
		if (ring_only)
			continue;
		snprintf(name, sizeof(name), "stream %uB", size);
		rc |= check_lossless(name, &stream[i]);
		sr[i] = rate(&stream[i]);
		ratio[i] = rr[i] / sr[i];
	}
	/* median() sorts, so each range below is its sorted array's ends */
	ring_med = median(rr, PAIRS);
	printf("ring_%uB_records_per_s: %.0f records/s (median of %d, range %.0f..%.0f M)\n", size,
	       ring_med, PAIRS, rr[0] / 1e6, rr[PAIRS - 1] / 1e6);
	printf("ring_%uB_ns_per_record: %.2f ns\n", size, 1e9 / ring_med);
	printf("ring_%uB_MB_per_s: %.1f MB/s\n", size, ring_med * size / 1e6);
	printf("ring_%uB_records: %llu records per run\n", size, (unsigned long long)n);
	{
		uint64_t lost = 0, waits = 0, sleeps = 0, wakeups = 0;

		for (int i = 0; i < PAIRS; i++) {
			lost += ring[i].attempted - ring[i].consumed;
			waits += ring[i].waits;
			sleeps += ring[i].sleeps;
			wakeups += ring[i].wakeups;
		}
		printf("ring_%uB_lost: %llu records (all runs)\n", size, (unsigned long long)lost);
		printf("ring_%uB_full_waits: %llu waits (all runs)\n", size, (unsigned long long)waits);
		printf("ring_%uB_consumer_sleeps: %llu sleeps (all runs)\n", size, (unsigned long long)sleeps);
		printf("ring_%uB_wakeups_sent: %llu wakeups (all runs)\n", size, (unsigned long long)wakeups);
	}
	if (ring_only)
		return rc;
	for (int i = 0; i < 2; i++) {
		if (seqpacket_run(size, nq, &seqp[i])) {
			fprintf(stderr, "bench_ring: a %uB seqpacket run failed\n", size);
			return -1;
		}
		snprintf(name, sizeof(name), "seqpacket %uB", size);
		rc |= check_lossless(name, &seqp[i]);
		qr[i] = rate(&seqp[i]);
	}
	stream_med = median(sr, PAIRS);
	ratio_med = median(ratio, PAIRS);
	best_seq = qr[0] > qr[1] ? qr[0] : qr[1];
	printf("unix_stream_batched_%uB_records_per_s: %.0f records/s (median of %d, range %.0f..%.0f M)\n",
	       size, stream_med, PAIRS, sr[0] / 1e6, sr[PAIRS - 1] / 1e6);
	printf("unix_stream_batched_%uB_MB_per_s: %.1f MB/s\n", size, stream_med * size / 1e6);
	printf("unix_seqpacket_mmsg_%uB_records_per_s: %.0f records/s (best of 2)\n", size, best_seq);
	printf("ring_vs_stream_%uB: %.2f x (median of %d alternated pairs, range %.2f..%.2f)\n", size,
	       ratio_med, PAIRS, ratio[0], ratio[PAIRS - 1]);
	printf("ring_vs_seqpacket_%uB: %.2f x\n", size, ring_med / best_seq);
	return rc;
}

static int slow_round(uint64_t n)
{
	struct run r;
	bool ok;

	if (ring_run(64, n, true, &r)) {
		fprintf(stderr, "bench_ring: slow-consumer run failed\n");
		return -1;
	}
	ok = r.attempted == r.produced + r.drops && r.produced == r.consumed && r.bad == 0;
	printf("ring_slow_consumer_attempted: %llu records\n", (unsigned long long)r.attempted);
	printf("ring_slow_consumer_produced: %llu records\n", (unsigned long long)r.produced);
	printf("ring_slow_consumer_consumed: %llu records\n", (unsigned long long)r.consumed);
	printf("ring_slow_consumer_drops: %llu records\n", (unsigned long long)r.drops);
	printf("ring_slow_consumer_drop_ratio: %.3f\n", (double)r.drops / (double)r.attempted);
	printf("ring_slow_consumer_accounting_exact: %d bool\n", ok ? 1 : 0);
	return ok && r.drops > 0 ? 0 : -1;
}

int main(void)
{
	const char *s = getenv("RING_BENCH_SCALE");
	double scale = s ? atof(s) : 1.0;
	int rc = 0;

	if (scale <= 0)
		scale = 1.0;
	signal(SIGPIPE, SIG_IGN);
	ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	printf("ring_bench_cpus: %d cpus\n", ncpu);
	rc |= size_round(64, (uint64_t)(20e6 * scale));
	rc |= size_round(512, (uint64_t)(5e6 * scale));
	rc |= slow_round((uint64_t)(5e6 * scale));
	return rc ? 1 : 0;
}
