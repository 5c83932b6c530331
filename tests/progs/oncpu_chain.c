/*
 * Test workload with a known call chain: main -> outer -> middle -> leaf,
 * spinning in leaf (~93% of the time), plus main -> other (~7%) so that the
 * share of leaf is a figure a profiler can get wrong.  Built with frame
 * pointers and no inlining.
 * usage: oncpu_chain [seconds [wait]]   (default: run until killed)
 * With "wait", it blocks until SIGUSR1 before spinning, so that a test can
 * start its profile first and compare the whole run's CPU time with it.
 */
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

volatile unsigned long sink;

__attribute__((noinline)) void leaf(void)
{
	for (unsigned long i = 0; i < 20000000ul; i++)
		sink += i * 7;
}

__attribute__((noinline)) void other(void)
{
	for (unsigned long i = 0; i < 1500000ul; i++)
		sink += i * 3;
}

__attribute__((noinline)) void middle(void)
{
	leaf();
	sink++;
}

__attribute__((noinline)) void outer(void)
{
	middle();
	sink++;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0;
	struct timespec start, now;

	if (argc > 2 && strcmp(argv[2], "wait") == 0) {
		sigset_t set;
		int sig;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		printf("waiting\n");
		fflush(stdout);
		sigwait(&set, &sig);
	}
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		outer();
		other();
		if (secs > 0) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 >= secs) {
				struct rusage ru;
				/* Tests compare a profile with the CPU time really used. */
				getrusage(RUSAGE_SELF, &ru);
				printf("cpu_ms %ld\n", ru.ru_utime.tv_sec * 1000 + ru.ru_utime.tv_usec / 1000 +
				       ru.ru_stime.tv_sec * 1000 + ru.ru_stime.tv_usec / 1000);
				return 0;
			}
		}
	}
}
