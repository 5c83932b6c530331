/*
 * Off-CPU test workload: one call site, two kernel wait points.  The main
 * thread blocks N times through the same futex() call (same instruction,
 * same stack, same futex word, same sleeping state), alternately:
 *   FUTEX_WAIT       -> futex_wait_queue: a helper wakes it after 50 ms;
 *   FUTEX_LOCK_PI    -> the PI path (rt_mutex): the helper holds the lock
 *                       and unlocks it after 50 ms.
 * Everything a profiler could read cheaply at the switch-out is the same
 * for both; only the kernel stack tells them apart.
 * usage: kwait ROUNDS   (starts at start_gate.h's signal)
 * At exit prints the time blocked in each, measured around the calls:
 *   blocked_ns wait N
 *   blocked_ns lock_pi N
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "start_gate.h"

static volatile unsigned word;          /* the futex: a plain word, then the PI lock's owner */
static volatile int phase;              /* 1 main waits; 2 main wants the lock; 3 the helper holds it; 0 done */
static unsigned long long wait_ns, lock_ns;

__attribute__((noinline)) long raw_futex(volatile unsigned *addr, long op, long val)
{
	long ret;
	register long r10 __asm__("r10") = 0;   /* no timeout */

	__asm__ volatile("syscall" : "=a"(ret) : "a"((long)SYS_futex), "D"(addr), "S"(op), "d"(val), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

/* The one call site both waits go through. */
__attribute__((noinline)) long block_here(long op, long val) { return raw_futex(&word, op, val); }

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void pause_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };

	nanosleep(&ts, NULL);
}

static void *helper(void *arg)
{
	long rounds = (long)arg;
	unsigned me = (unsigned)syscall(SYS_gettid);

	for (long i = 0; i < rounds; i++) {
		while (phase != 1)
			pause_ms(1);
		pause_ms(50);
		word = 1;
		raw_futex(&word, FUTEX_WAKE, 1);
		while (phase != 2)
			pause_ms(1);
		word = me;                      /* the PI lock, held by this thread */
		phase = 3;
		pause_ms(50);
		raw_futex(&word, FUTEX_UNLOCK_PI, 0);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 10;
	pthread_t h;

	start_gate__wait();
	if (pthread_create(&h, NULL, helper, (void *)rounds))
		return 1;
	for (long i = 0; i < rounds; i++) {
		unsigned long long t;

		word = 0;
		phase = 1;
		t = now_ns();
		while (word == 0)
			block_here(FUTEX_WAIT, 0);
		wait_ns += now_ns() - t;
		phase = 2;
		while (phase != 3)
			pause_ms(1);
		t = now_ns();
		if (block_here(FUTEX_LOCK_PI, 0))
			return 2;
		lock_ns += now_ns() - t;
		if (raw_futex(&word, FUTEX_UNLOCK_PI, 0))
			return 3;
		phase = 0;
	}
	pthread_join(h, NULL);
	printf("blocked_ns wait %llu\nblocked_ns lock_pi %llu\n", wait_ns, lock_ns);
	return 0;
}
