/*
 * Off-CPU test workload with known blocking points:
 *   thread "waiter": waiter -> wait_on_pipe -> read() on a pipe that the
 *     "writer" thread writes every 50 ms;
 *   main thread: sleeper -> nanosleep(200 ms), repeatedly.
 * The blocking calls go through read()/nanosleep() wrappers defined here (raw
 * syscalls, built with frame pointers like the rest of this file): glibc's
 * own wrappers have no frame pointer, which hides their caller from any
 * frame-pointer unwinder (perf's too).
 * usage: offcpu_wait SECONDS   (starts measuring at start_gate.h's signal)
 * At exit prints the time each blocked, measured around the calls, and how
 * many calls each made:
 *   blocked_ns wait_on_pipe N
 *   blocked_ns sleeper N
 *   calls wait_on_pipe N
 *   calls sleeper N
 *   switches waiter|main VOLUNTARY INVOLUNTARY
 * The last lines are each thread's context switches over its measured life
 * (getrusage RUSAGE_THREAD): a blocking call is one voluntary switch, and on
 * a loaded machine a call may also be preempted inside the kernel, which the
 * profiler rightly counts as a second switch of the same stack.
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "start_gate.h"

static int pfd[2];
static volatile int stop;
static unsigned long long pipe_ns, sleep_ns, pipe_calls, sleep_calls;
static struct rusage waiter_ru;

__attribute__((noinline)) long raw_syscall3(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return ret;
}

/* Named after what they do; they shadow nothing (static, distinct names). */
__attribute__((noinline)) static long read_pipe(int fd, void *buf, long n) { return raw_syscall3(SYS_read, fd, (long)buf, n); }
__attribute__((noinline)) static long do_nanosleep(const struct timespec *ts) { return raw_syscall3(SYS_nanosleep, (long)ts, 0, 0); }

static unsigned long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

__attribute__((noinline)) void wait_on_pipe(void)
{
	char c;
	unsigned long long t = now_ns();
	if (read_pipe(pfd[0], &c, 1) != 1)
		stop = 1;
	pipe_ns += now_ns() - t;
	pipe_calls++;
}

__attribute__((noinline)) void *waiter(void *arg)
{
	struct rusage r0;

	(void)arg;
	getrusage(RUSAGE_THREAD, &r0);
	while (!stop)
		wait_on_pipe();
	getrusage(RUSAGE_THREAD, &waiter_ru);
	waiter_ru.ru_nvcsw -= r0.ru_nvcsw;
	waiter_ru.ru_nivcsw -= r0.ru_nivcsw;
	return NULL;
}

__attribute__((noinline)) void *writer(void *arg)
{
	(void)arg;
	while (!stop) {
		struct timespec ts = { 0, 50 * 1000000 };
		nanosleep(&ts, NULL);
		if (write(pfd[1], "x", 1) != 1)
			break;
	}
	return NULL;
}

__attribute__((noinline)) void sleeper(void)
{
	struct timespec ts = { 0, 200 * 1000000 };
	unsigned long long t = now_ns();
	do_nanosleep(&ts);
	sleep_ns += now_ns() - t;
	sleep_calls++;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10;
	unsigned long long end;
	pthread_t w, r;
	struct rusage m0, m1;

	if (pipe(pfd))
		return 1;
	/* Every page in memory before measuring: a page-in that blocks (a slow or network root file
	 * system) would be a voluntary switch outside the blocking calls measured.  Locking faults
	 * them in; they need not stay locked (and a user's RLIMIT_MEMLOCK may refuse it: then not). */
	if (!mlockall(MCL_CURRENT))
		munlockall();
	start_gate__wait();
	getrusage(RUSAGE_THREAD, &m0);
	pthread_create(&w, NULL, waiter, NULL);
	pthread_create(&r, NULL, writer, NULL);
	end = now_ns() + (unsigned long long)(secs * 1e9);
	while (now_ns() < end)
		sleeper();
	getrusage(RUSAGE_THREAD, &m1);
	stop = 1;
	(void)!write(pfd[1], "x", 1);
	pthread_join(w, NULL);
	pthread_join(r, NULL);
	printf("blocked_ns wait_on_pipe %llu\nblocked_ns sleeper %llu\n", pipe_ns, sleep_ns);
	printf("calls wait_on_pipe %llu\ncalls sleeper %llu\n", pipe_calls, sleep_calls);
	printf("switches waiter %ld %ld\n", waiter_ru.ru_nvcsw, waiter_ru.ru_nivcsw);
	printf("switches main %ld %ld\n", m1.ru_nvcsw - m0.ru_nvcsw, m1.ru_nivcsw - m0.ru_nivcsw);
	return 0;
}
