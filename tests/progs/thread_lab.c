/*
 * Thread-profiling workloads with their own clocks, for exact expectations
 * (tests/integration/test_threads.sh).  Each writes JSON lines to stdout:
 * what it did and when (CLOCK_REALTIME ns, the profile's clock).
 *
 *   thread_lab deadlock FILE MS
 *     LockThd1 and LockThd2 each take their mutex, write and fsync FILE
 *     (4 KiB x 20 each), then after MS ms take each other's: a deadlock
 *     from then on (the main thread waits in pthread_join forever).
 *     Prints {"tid1", "tid2", "main", "locked_ns"} once both block.
 *   thread_lab contention ROUNDS HOLD_MS
 *     CompeteThd1 computes for HOLD_MS ms holding a mutex, ROUNDS times;
 *     CompeteThd2 waits for it, then writes 64 bytes to a TCP connection
 *     that the tcp-server thread reads.  Prints each wait of CompeteThd2
 *     ({"wait_ns"}), and at the end {"tid1", "tid2", "server", "port"}.
 *
 *   thread_lab storm PAIRS SECONDS
 *     PAIRS pairs of threads hand a turn to each other through a mutex and a
 *     condition variable for SECONDS: futex waits and wakes by the hundred
 *     thousand (bench/threads.sh).  Prints {"ops"} (turns taken).
 *
 * All start their measured part at the start gate (start_gate.h).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "start_gate.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static pid_t tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* ---- deadlock ---- */

static pthread_mutex_t m1 = PTHREAD_MUTEX_INITIALIZER, m2 = PTHREAD_MUTEX_INITIALIZER;
static const char *dl_file;
static unsigned dl_ms;
static volatile pid_t dl_tid[2];

static void write_file(void)
{
	char buf[4096];
	int fd = open(dl_file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	memset(buf, 'x', sizeof(buf));
	for (int i = 0; i < 20 && fd >= 0; i++) {
		if (write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			break;
		fsync(fd);
	}
	if (fd >= 0)
		close(fd);
}

static void *lock_thread(void *arg)
{
	int which = (int)(intptr_t)arg;
	pthread_mutex_t *mine = which ? &m2 : &m1, *theirs = which ? &m1 : &m2;

	pthread_setname_np(pthread_self(), which ? "LockThd2" : "LockThd1");
	dl_tid[which] = tid();
	pthread_mutex_lock(mine);
	write_file();
	usleep(dl_ms * 1000u);
	pthread_mutex_lock(theirs);   /* never returns */
	return NULL;
}

static int deadlock(int argc, char **argv)
{
	pthread_t a, b;

	if (argc < 4)
		return 2;
	dl_file = argv[2];
	dl_ms = (unsigned)atoi(argv[3]);
	start_gate__wait();
	pthread_create(&a, NULL, lock_thread, (void *)0);
	pthread_create(&b, NULL, lock_thread, (void *)1);
	/* Both have their own mutex and will block on the other's after dl_ms. */
	usleep(dl_ms * 1000u + 200000u);
	printf("{\"tid1\": %d, \"tid2\": %d, \"main\": %d, \"locked_ns\": %llu}\n", dl_tid[0], dl_tid[1], tid(),
	       (unsigned long long)now_ns());
	fflush(stdout);
	pthread_join(a, NULL);
	return 0;
}

/* ---- contention ---- */

static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static int rounds, hold_ms, conn_fd, port;
static volatile int done, go2;
static volatile pid_t c_tid[3];

static void *compute_thread(void *arg)
{
	volatile uint64_t x = 0;

	(void)arg;
	pthread_setname_np(pthread_self(), "CompeteThd1");
	c_tid[0] = tid();
	for (int r = 0; r < rounds; r++) {
		uint64_t t0;

		pthread_mutex_lock(&cm);
		go2 = 1;
		t0 = cpu_ns();
		while (cpu_ns() - t0 < (uint64_t)hold_ms * 1000000u)
			x++;
		pthread_mutex_unlock(&cm);
		usleep(20000);
	}
	done = 1;
	return NULL;
}

static void *writer_thread(void *arg)
{
	char msg[64];

	(void)arg;
	pthread_setname_np(pthread_self(), "CompeteThd2");
	c_tid[1] = tid();
	memset(msg, 'm', sizeof(msg));
	while (!go2)
		usleep(100);
	while (!done) {
		uint64_t t0 = now_ns(), t1;

		pthread_mutex_lock(&cm);
		t1 = now_ns();
		pthread_mutex_unlock(&cm);
		printf("{\"wait_ns\": %llu}\n", (unsigned long long)(t1 - t0));
		if (write(conn_fd, msg, sizeof(msg)) != (ssize_t)sizeof(msg))
			break;
		usleep(5000);
	}
	shutdown(conn_fd, SHUT_WR);
	return NULL;
}

static void *server_thread(void *arg)
{
	int lfd = (int)(intptr_t)arg, fd;
	char buf[256];

	pthread_setname_np(pthread_self(), "tcp-server");
	c_tid[2] = tid();
	fd = accept(lfd, NULL, NULL);
	while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
		;
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int contention(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	pthread_t a, b, s;
	int lfd;

	if (argc < 4)
		return 2;
	rounds = atoi(argv[2]);
	hold_ms = atoi(argv[3]);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl))
		return 1;
	port = ntohs(sa.sin_port);
	pthread_create(&s, NULL, server_thread, (void *)(intptr_t)lfd);
	conn_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (conn_fd < 0 || connect(conn_fd, (struct sockaddr *)&sa, sizeof(sa)))
		return 1;
	start_gate__wait();
	pthread_create(&a, NULL, compute_thread, NULL);
	pthread_create(&b, NULL, writer_thread, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	pthread_join(s, NULL);
	printf("{\"tid1\": %d, \"tid2\": %d, \"server\": %d, \"port\": %d}\n", c_tid[0], c_tid[1], c_tid[2], port);
	return 0;
}

/* ---- storm ---- */

/* Pairs of threads hand a turn back and forth through a mutex and a condition: a futex wait and wake each. */
struct pair {
	pthread_mutex_t m;
	pthread_cond_t c;
	int turn;
	unsigned long long ops;
};
static struct pair pairs[32];
static volatile int storm_stop;

static void *storm_thread(void *arg)
{
	struct pair *p = &pairs[(intptr_t)arg / 2];
	int me = (int)((intptr_t)arg % 2);

	pthread_mutex_lock(&p->m);
	while (!storm_stop) {
		while (p->turn != me && !storm_stop)
			pthread_cond_wait(&p->c, &p->m);
		p->turn = !me;
		p->ops++;
		pthread_cond_signal(&p->c);
	}
	p->turn = !me;
	pthread_cond_broadcast(&p->c);
	pthread_mutex_unlock(&p->m);
	return NULL;
}

static int storm(int argc, char **argv)
{
	pthread_t t[64];
	unsigned long long ops = 0;
	int n;

	if (argc < 4)
		return 2;
	n = atoi(argv[2]);
	if (n < 1 || n > 32)
		return 2;
	for (int i = 0; i < n; i++) {
		pthread_mutex_init(&pairs[i].m, NULL);
		pthread_cond_init(&pairs[i].c, NULL);
	}
	start_gate__wait();
	for (int i = 0; i < 2 * n; i++)
		pthread_create(&t[i], NULL, storm_thread, (void *)(intptr_t)i);
	usleep((unsigned)(atof(argv[3]) * 1e6));
	storm_stop = 1;
	for (int i = 0; i < n; i++) {
		pthread_mutex_lock(&pairs[i].m);
		pthread_cond_broadcast(&pairs[i].c);
		pthread_mutex_unlock(&pairs[i].m);
	}
	for (int i = 0; i < 2 * n; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < n; i++)
		ops += pairs[i].ops;
	printf("{\"ops\": %llu}\n", ops);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "deadlock"))
		return deadlock(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "contention"))
		return contention(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "storm"))
		return storm(argc, argv);
	fprintf(stderr, "usage: thread_lab deadlock FILE MS | contention ROUNDS HOLD_MS | storm THREADS SECONDS\n");
	return 2;
}
