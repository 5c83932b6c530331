/* Fixed amount of CPU work through a known call chain, for overhead benchmarks.
 * usage: cpu_work [rounds]  (default 200; ~10 ms of CPU each) */
#include <stdlib.h>

volatile unsigned long sink;

__attribute__((noinline)) void work_leaf(void)
{
	for (unsigned long i = 0; i < 5000000ul; i++)
		sink += i ^ (i >> 3);
}

__attribute__((noinline)) void work_mid(void) { work_leaf(); sink++; }

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 200;
	for (long r = 0; r < rounds; r++)
		work_mid();
	return 0;
}
