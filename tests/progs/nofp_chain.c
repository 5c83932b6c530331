/*
 * Test workload built without frame pointers (-O2 -fomit-frame-pointer, see
 * the Makefile's PROG_CFLAGS_nofp_chain) with known call chains, for the
 * unwinder: only unwind tables (.eh_frame) give whole stacks here.
 *
 * usage: nofp_chain SECONDS MODE
 *   cpu    main -> work -> outer -> middle -> leaf, spinning in leaf
 *   qsort  main -> sort_loop -> qsort (libc) -> ... -> by_value, the comparator spinning
 *   block  main -> reader -> wait_data -> read(pipe), a thread writing every 5 ms (off-CPU)
 *   fault  main -> mapper -> toucher: first touches of fresh pages (page faults, memory profile)
 *   deep [N]  main -> deep -> recurse x (N + 1) -> leaf (N = 110): a stack deeper than most
 * Prints "ready" once running.
 */
#include <pthread.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))

volatile unsigned long sink;
static double secs;
static int depth = 110;
static struct timespec t0;
static int pipefd[2];

static int expired(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 >= secs;
}

/* Locals spill to the stack so that each frame has a size of its own: a CFA other than rsp+8. */
NOINLINE void leaf(unsigned long n)
{
	volatile unsigned long buf[8];

	for (unsigned long i = 0; i < n; i++) {
		buf[i & 7] = i * 7;
		sink += buf[(i + 3) & 7];
	}
}

NOINLINE void middle(unsigned long n)
{
	volatile unsigned long pad[4] = { n, n, n, n };

	leaf(pad[1]);
	sink += pad[2];
}

NOINLINE void outer(unsigned long n)
{
	volatile unsigned long pad[16];

	pad[5] = n;
	middle(pad[5]);
	sink += pad[5];
}

NOINLINE void work(void)
{
	while (!expired())
		outer(2000000);
}

NOINLINE int by_value(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	for (int i = 0; i < 2000; i++)
		sink += i;
	return x < y ? -1 : x > y;
}

NOINLINE void sort_loop(void)
{
	static unsigned long v[512];

	while (!expired()) {
		for (unsigned i = 0; i < 512; i++)
			v[i] = (i * 2654435761u) % 1000;
		qsort(v, 512, sizeof(v[0]), by_value);
	}
}

NOINLINE void wait_data(void)
{
	char c;

	if (read(pipefd[0], &c, 1) != 1)
		exit(1);
	sink += (unsigned char)c;
}

NOINLINE void reader(void)
{
	while (!expired())
		wait_data();
}

NOINLINE void toucher(volatile char *p, size_t len)
{
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
}

NOINLINE void mapper(void)
{
	while (!expired()) {
		size_t len = 4u << 20;
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			exit(1);
		toucher(p, len);
		munmap(p, len);
	}
}

/* Each level keeps a frame of its own (a local used after the call), so no call becomes a jump. */
NOINLINE void recurse(int n)
{
	volatile int depth = n;

	if (n == 0)
		leaf(200000);
	else
		recurse(n - 1);
	sink += depth;
}

NOINLINE void deep(void)
{
	while (!expired())
		recurse(depth);
}

static void *writer(void *arg)
{
	struct timespec ts = { 0, 5000000 };

	(void)arg;
	for (;;) {
		nanosleep(&ts, NULL);
		if (write(pipefd[1], "x", 1) != 1)
			return NULL;
	}
}

int main(int argc, char **argv)
{
	pthread_t th;

	if (argc == 4)
		depth = atoi(argv[3]);
	if (argc < 3 || argc > 4 || depth < 0 || depth > 10000) {
		fprintf(stderr, "usage: nofp_chain SECONDS cpu|qsort|block|fault|deep [DEPTH]\n");
		return 2;
	}
	secs = atof(argv[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	printf("ready\n");
	fflush(stdout);
	if (!strcmp(argv[2], "cpu"))
		work();
	else if (!strcmp(argv[2], "qsort"))
		sort_loop();
	else if (!strcmp(argv[2], "block")) {
		if (pipe(pipefd) || pthread_create(&th, NULL, writer, NULL))
			return 1;
		reader();
	} else if (!strcmp(argv[2], "fault"))
		mapper();
	else if (!strcmp(argv[2], "deep"))
		deep();
	else
		return 2;
	return 0;
}
