/*
 * A call to a noreturn function as the last instruction of its caller: the
 * return address on the stack is the first byte of the next function in
 * the binary (after_reader), so a profiler that looks return addresses up
 * as they are names the wrong caller.
 * usage: noreturn_call SECONDS   (spins in spin_forever under reader)
 */
#include <stdlib.h>
#include <time.h>

static double end_at;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noreturn, noinline)) void spin_forever(void)
{
	volatile unsigned long x = 0;

	for (;;) {
		for (int i = 0; i < 1000000; i++)
			x += i;
		if (now_s() > end_at)
			exit(0);
	}
}

__attribute__((noinline)) void reader(void)
{
	spin_forever();
}

__attribute__((noinline)) int after_reader(int v)
{
	return v * 3 + 1;
}

int main(int argc, char **argv)
{
	end_at = now_s() + (argc > 1 ? atof(argv[1]) : 10);
	if (argc > 2)
		return after_reader(argc);
	reader();
}
