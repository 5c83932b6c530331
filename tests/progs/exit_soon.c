/*
 * Short-lived target: sleeps until SIGUSR1, then spins 100 ms (wall clock)
 * in main -> soon_outer -> soon_leaf and exits -- so a profile started just
 * before the signal ends after the process is gone, and its stacks can only
 * be named from what the analyzer loaded while it lived.
 * usage: exit_soon [ms]   (default 100)
 */
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

volatile unsigned long sink;
static volatile sig_atomic_t go;

static void on_usr1(int sig) { (void)sig; go = 1; }

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void soon_leaf(void)
{
	for (unsigned long i = 0; i < 200000ul; i++)
		sink += i * 5;
}

__attribute__((noinline)) void soon_outer(double until)
{
	while (now_s() < until)
		soon_leaf();
	sink++;
}

int main(int argc, char **argv)
{
	double ms = argc > 1 ? atof(argv[1]) : 100;
	struct sigaction sa = { .sa_handler = on_usr1 };

	sigaction(SIGUSR1, &sa, NULL);
	while (!go)
		pause();
	soon_outer(now_s() + ms / 1000.0);
	return 0;
}
