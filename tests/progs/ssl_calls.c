/*
 * Calls one of libssl's read/write functions in a loop, for the TLS probe
 * cost (bench/tls.sh): the SSL object is a client in its handshake over
 * memory BIOs, so every call returns at once (WANT_READ) having done the
 * same tiny amount of work: what a probe adds is most of what changes.
 *
 *   ssl_calls FN N     FN: read | write | read_ex | write_ex
 *
 * Prints "ns_per_call X" after every N calls, forever (the bench samples
 * lines while it switches probes on and off).  libssl is loaded with
 * dlopen: no development package is needed, and it is mapped like any
 * library, where the analyzer finds it.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void *(*fn0)(void);
typedef void *(*fn1)(void *);

int main(int argc, char **argv)
{
	void *h = dlopen("libssl.so.3", RTLD_NOW);
	char buf[64] = "x";
	size_t done;
	long n;

	if (argc != 3 || (n = atol(argv[2])) <= 0) {
		fprintf(stderr, "usage: ssl_calls read|write|read_ex|write_ex N\n");
		return 2;
	}
	if (!h) {
		fprintf(stderr, "ssl_calls: %s\n", dlerror());
		return 1;
	}
	void *ctx = ((fn1)dlsym(h, "SSL_CTX_new"))(((fn0)dlsym(h, "TLS_client_method"))());
	void *ssl = ((fn1)dlsym(h, "SSL_new"))(ctx);
	void *(*bio_s_mem)(void) = (fn0)dlsym(h, "BIO_s_mem");
	void *(*bio_new)(void *) = (fn1)dlsym(h, "BIO_new");
	void (*set_bio)(void *, void *, void *) = (void (*)(void *, void *, void *))dlsym(h, "SSL_set_bio");
	void (*connect_state)(void *) = (void (*)(void *))dlsym(h, "SSL_set_connect_state");
	int (*rw)(void *, void *, int) = NULL;
	int (*rw_ex)(void *, void *, size_t, size_t *) = NULL;

	if (!ctx || !ssl || !bio_s_mem || !bio_new || !set_bio || !connect_state) {
		fprintf(stderr, "ssl_calls: libssl.so.3 lacks what is needed\n");
		return 1;
	}
	set_bio(ssl, bio_new(bio_s_mem()), bio_new(bio_s_mem()));
	connect_state(ssl);
	if (!strcmp(argv[1], "read"))
		rw = (int (*)(void *, void *, int))dlsym(h, "SSL_read");
	else if (!strcmp(argv[1], "write"))
		rw = (int (*)(void *, void *, int))dlsym(h, "SSL_write");
	else if (!strcmp(argv[1], "read_ex"))
		rw_ex = (int (*)(void *, void *, size_t, size_t *))dlsym(h, "SSL_read_ex");
	else if (!strcmp(argv[1], "write_ex"))
		rw_ex = (int (*)(void *, void *, size_t, size_t *))dlsym(h, "SSL_write_ex");
	if (!rw && !rw_ex) {
		fprintf(stderr, "ssl_calls: unknown function %s\n", argv[1]);
		return 2;
	}
	for (;;) {
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		for (long i = 0; i < n; i++)
			if (rw)
				(void)rw(ssl, buf, sizeof(buf));
			else
				(void)rw_ex(ssl, buf, sizeof(buf), &done);
		clock_gettime(CLOCK_MONOTONIC, &b);
		printf("ns_per_call %.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
		fflush(stdout);
	}
}
