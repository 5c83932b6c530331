/*
 * bench_ringbuf [SECONDS] [ROUNDS]: what one BPF ring buffer record costs the
 * program that writes it (bench/ringbuf_cost.bpf.c), by record size and by
 * where its reader runs: on the writer's CPU between batches, on another CPU
 * every 5 ms (as the collector drains, woken per quarter ring or by its
 * timer), or on another CPU without pause (a reader that polls).  A network
 * event is one record in the socket call's context, so this is the part of
 * a traced call's price that the ring buffer's cache lines set.
 *
 * The writer runs the program by BPF_PROG_TEST_RUN on CPU 0, 100 records a
 * batch, a batch a millisecond (100k records a second: a followed nginx's
 * rate), for SECONDS (1) a cell; the cells alternate, ROUNDS (3) times, and
 * each figure is the median with the rounds' values.  Every record written
 * is read: written + failed (ring full) = attempts, read = written.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench/ringbuf_cost.skel.h"

#define BATCH 100
#define MAX_ROUNDS 9

enum reader { SAME_CPU, OTHER_CPU_BATCHED, OTHER_CPU_POLLING, NREADERS };
static const char *const reader_name[NREADERS] = { "same_cpu", "other_cpu_every_5ms", "other_cpu_polling" };
static const unsigned sizes[] = { 64, 256, 1024 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

struct reader_thread {
	struct ring_buffer *rb;
	atomic_int stop;
	int polling;
	int cpu;
};

static unsigned long long records_read;

static int on_record(void *ctx, void *data, size_t len)
{
	(void)ctx;
	(void)len;
	/* The reader touches the record, as the collector reads an event's header. */
	records_read += ((volatile unsigned char *)data)[0] == 1;
	return 0;
}

static int pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return sched_setaffinity(0, sizeof(s), &s) ? -errno : 0;
}

static void *reader_main(void *arg)
{
	struct reader_thread *r = arg;

	if (pin(r->cpu))
		return NULL;
	while (!atomic_load(&r->stop)) {
		ring_buffer__consume(r->rb);
		if (!r->polling)
			usleep(5000);
	}
	ring_buffer__consume(r->rb);
	return NULL;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* One cell: ns per record, or a negative -errno. */
static double cell(struct ringbuf_cost_bpf *skel, struct ring_buffer *rb, enum reader rd, double secs)
{
	int fd = bpf_program__fd(skel->progs.rb_record);
	struct reader_thread r = { .rb = rb, .polling = rd == OTHER_CPU_POLLING, .cpu = 1 };
	unsigned char pkt[64] = { 0 };
	unsigned long long ns = 0, runs = 0;
	pthread_t th;
	double end;
	int err = 0;

	if (rd != SAME_CPU && pthread_create(&th, NULL, reader_main, &r))
		return -EAGAIN;
	for (end = now_s() + secs; now_s() < end;) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = sizeof(pkt), .repeat = BATCH);

		if (bpf_prog_test_run_opts(fd, &o)) {
			err = -errno;
			break;
		}
		ns += (unsigned long long)o.duration * BATCH;
		runs += BATCH;
		if (rd == SAME_CPU)
			ring_buffer__consume(rb);
		usleep(1000);
	}
	if (rd != SAME_CPU) {
		atomic_store(&r.stop, 1);
		pthread_join(th, NULL);
	}
	ring_buffer__consume(rb);
	if (err)
		return err;
	return runs ? (double)ns / (double)runs : -ENODATA;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0, v[NSIZES][NREADERS][MAX_ROUNDS];
	int rounds = argc > 2 ? atoi(argv[2]) : 3, nreaders = NREADERS;
	struct ringbuf_cost_bpf *skel;
	struct ring_buffer *rb;

	if (argc > 3 || secs <= 0 || secs > 60 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: bench_ringbuf [SECONDS 1] [ROUNDS 3 (at most %d)]\n", MAX_ROUNDS);
		return 2;
	}
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		fprintf(stderr, "bench_ringbuf: one CPU: only the reader on the writer's CPU is measured\n");
		nreaders = 1;
	}
	if (pin(0)) {
		fprintf(stderr, "bench_ringbuf: cannot run on CPU 0: %s\n", strerror(errno));
		return 1;
	}
	skel = ringbuf_cost_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "bench_ringbuf: loading the program failed: %s\n", strerror(errno));
		return 1;
	}
	rb = ring_buffer__new(bpf_map__fd(skel->maps.rb), on_record, NULL, NULL);
	if (!rb) {
		fprintf(stderr, "bench_ringbuf: reading the ring buffer: %s\n", strerror(errno));
		ringbuf_cost_bpf__destroy(skel);
		return 1;
	}
	for (int k = 0; k < rounds; k++)
		for (unsigned s = 0; s < NSIZES; s++)
			for (int rd = 0; rd < nreaders; rd++) {
				skel->data->record_size = sizes[s];
				v[s][rd][k] = cell(skel, rb, (enum reader)rd, secs);
				if (v[s][rd][k] < 0) {
					fprintf(stderr, "bench_ringbuf: running the program failed: %s\n",
						strerror((int)-v[s][rd][k]));
					ring_buffer__free(rb);
					ringbuf_cost_bpf__destroy(skel);
					return 1;
				}
			}
	printf("ringbuf_workload: one bpf_ringbuf_output per run from a per-CPU scratch (BPF_PROG_TEST_RUN on CPU 0), "
	       "%d records a batch, a batch a millisecond, %.1f s a cell, %d rounds alternated; ring 1 MiB\n",
	       BATCH, secs, rounds);
	for (unsigned s = 0; s < NSIZES; s++)
		for (int rd = 0; rd < nreaders; rd++) {
			double sorted[MAX_ROUNDS];

			memcpy(sorted, v[s][rd], sizeof(double) * rounds);
			qsort(sorted, rounds, sizeof(double), cmp_double);
			printf("ringbuf_ns_per_record_%uB_%s: %.0f ns (runs", sizes[s], reader_name[rd], sorted[rounds / 2]);
			for (int k = 0; k < rounds; k++)
				printf("%s %.0f", k ? "," : "", v[s][rd][k]);
			printf(")\n");
		}
	printf("ringbuf_records: %llu written, %llu read, %llu not written (ring full); unaccounted: %lld\n",
	       (unsigned long long)skel->bss->written, records_read, (unsigned long long)skel->bss->failed,
	       (long long)(skel->bss->written - records_read));
	ring_buffer__free(rb);
	ringbuf_cost_bpf__destroy(skel);
	return 0;
}
