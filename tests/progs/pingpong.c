/*
 * Context-switch-heavy workload: two threads pass a byte back and forth
 * through two pipes, ROUNDS times (each round = 2 blocking reads = 2 context
 * switches at least).  Prints "rounds N elapsed_ns T".
 * usage: pingpong [ROUNDS [DELAY_S]]   (default 300000 rounds, no delay; the
 * delay lets a profiler attach before the measured loop starts)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int a2b[2], b2a[2];
static long rounds;

static void *ponger(void *arg)
{
	char c;
	(void)arg;
	for (long i = 0; i < rounds; i++) {
		if (read(a2b[0], &c, 1) != 1 || write(b2a[1], &c, 1) != 1)
			break;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	pthread_t t;
	char c = 'x';

	rounds = argc > 1 ? atol(argv[1]) : 300000;
	if (argc > 2)
		usleep((useconds_t)(atof(argv[2]) * 1e6));
	if (pipe(a2b) || pipe(b2a))
		return 1;
	pthread_create(&t, NULL, ponger, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < rounds; i++) {
		if (write(a2b[1], &c, 1) != 1 || read(b2a[0], &c, 1) != 1)
			break;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pthread_join(t, NULL);
	printf("rounds %ld elapsed_ns %lld\n", rounds,
	       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec));
	return 0;
}
