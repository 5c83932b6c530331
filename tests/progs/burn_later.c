/*
 * Continuous-profiling workload: idle for DELAY seconds, then burns one core
 * through burn_outer -> burn_inner for BURN seconds.  Prints the wall-clock
 * time (unix ms) the burning starts, so a test can measure how long a
 * trigger took.  Extra arguments are ignored: tests put a unique tag in the
 * command line for a policy's MatchCmd.
 * usage: burn_later DELAY BURN [TAG...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;

static double now_s(int clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void burn_inner(void)
{
	for (unsigned long i = 0; i < 1000000ul; i++)
		sink += i ^ (i >> 3);
}

__attribute__((noinline)) void burn_outer(double until)
{
	while (now_s(CLOCK_MONOTONIC) < until)
		burn_inner();
}

int main(int argc, char **argv)
{
	double delay = argc > 1 ? atof(argv[1]) : 2, burn = argc > 2 ? atof(argv[2]) : 10;

	usleep((useconds_t)(delay * 1e6));
	printf("burn_start_unix_ms %.0f\n", now_s(CLOCK_REALTIME) * 1000);
	fflush(stdout);
	burn_outer(now_s(CLOCK_MONOTONIC) + burn);
	return 0;
}
