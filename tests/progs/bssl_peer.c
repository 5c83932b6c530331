/*
 * TLS peers on BoringSSL (Debian's android-libboringssl: libssl.so.0, which
 * exports SSL_read and SSL_write), speaking what tests/integration/tls_peer.py
 * speaks, so that tls_checks.py checks them the same way:
 *
 *   bssl_peer server PORT CERT KEY   HTTPS/1.1 server, one keep-alive connection at a
 *                                    time: / -> 200 "hello", /status/N -> N, /size/N -> N
 *                                    bytes; prints "listening"
 *   bssl_peer client PORT N          N GET requests over one keep-alive connection: the
 *                                    i-th is /status/404 when i % 5 == 1, /status/500 when
 *                                    i % 7 == 2, else /size/(100 * i); prints
 *                                    "done N 200:a 404:b 500:c"
 *
 * With EMBER_TEST_GO=PATH the client connects once PATH exists (tests/progs/start_gate.h):
 * a library is probed per process, its link made after the process maps it, and the
 * test opens the gate when the client's own probes are there.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "start_gate.h"

static void die(const char *what)
{
	fprintf(stderr, "bssl_peer: %s\n", what);
	ERR_print_errors_fp(stderr);
	exit(1);
}

/* Reads one HTTP head (up to the blank line) into buf; returns its length, 0 at the end of the stream. */
static size_t read_head(SSL *s, char *buf, size_t cap, size_t *have)
{
	for (;;) {
		char *end = *have ? memmem(buf, *have, "\r\n\r\n", 4) : NULL;
		int n;

		if (end)
			return (size_t)(end - buf) + 4;
		if (*have == cap)
			die("head too long");
		n = SSL_read(s, buf + *have, (int)(cap - *have));
		if (n <= 0)
			return 0;
		*have += (size_t)n;
	}
}

static void consume(char *buf, size_t *have, size_t n)
{
	memmove(buf, buf + n, *have - n);
	*have -= n;
}

static void write_all(SSL *s, const char *p, size_t n)
{
	while (n) {
		int w = SSL_write(s, p, (int)n);

		if (w <= 0)
			die("SSL_write");
		p += w;
		n -= (size_t)w;
	}
}

static __attribute__((noreturn)) void server(int port, const char *cert, const char *key)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_method());
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);

	if (!ctx || SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1)
		die("certificate");
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 8))
		die("listen");
	printf("listening\n");
	fflush(stdout);
	for (;;) {
		static char buf[65536], body[65536];
		size_t have = 0, head;
		int c = accept(l, NULL, NULL);
		SSL *s;

		if (c < 0)
			die("accept");
		s = SSL_new(ctx);
		SSL_set_fd(s, c);
		if (SSL_accept(s) != 1) {
			SSL_free(s);
			close(c);
			continue;
		}
		while ((head = read_head(s, buf, sizeof(buf), &have))) {
			char path[256] = "", out[512];
			int status = 200;
			size_t blen = 5;

			sscanf(buf, "GET %255s", path);
			memcpy(body, "hello", 5);
			if (!strncmp(path, "/status/", 8)) {
				status = atoi(path + 8);
				blen = 6;
				memcpy(body, "status", 6);
			} else if (!strncmp(path, "/size/", 6)) {
				blen = strtoul(path + 6, NULL, 10);
				if (blen > sizeof(body))
					blen = sizeof(body);
				memset(body, 's', blen);
			}
			consume(buf, &have, head);
			snprintf(out, sizeof(out), "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\nContent-Type: text/plain\r\n\r\n",
				 status, status == 200 ? "OK" : status == 404 ? "Not Found" : "Internal Server Error", blen);
			write_all(s, out, strlen(out));
			write_all(s, body, blen);
		}
		SSL_shutdown(s);
		SSL_free(s);
		close(c);
	}
}

static const char *path_of(int i, char *buf, size_t len)
{
	if (i % 5 == 1)
		return "/status/404";
	if (i % 7 == 2)
		return "/status/500";
	snprintf(buf, len, "/size/%d", 100 * i);
	return buf;
}

static int client(int port, int n)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_method());
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int c = socket(AF_INET, SOCK_STREAM, 0), counts[600] = { 0 };
	static char buf[131072];
	size_t have = 0;
	SSL *s;

	if (getenv("EMBER_TEST_GO"))
		start_gate__wait();
	if (!ctx || connect(c, (struct sockaddr *)&a, sizeof(a)))
		die("connect");
	s = SSL_new(ctx);
	SSL_set_fd(s, c);
	if (SSL_connect(s) != 1)
		die("SSL_connect");
	for (int i = 0; i < n; i++) {
		char pbuf[64], req[256];
		size_t head, clen = 0;
		int status = 0;
		const char *cl;

		snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", path_of(i, pbuf, sizeof(pbuf)));
		write_all(s, req, strlen(req));
		head = read_head(s, buf, sizeof(buf), &have);
		if (!head || sscanf(buf, "HTTP/1.1 %d", &status) != 1 || status < 100 || status > 599)
			die("response");
		cl = memmem(buf, head, "Content-Length: ", 16);
		if (cl)
			clen = strtoul(cl + 16, NULL, 10);
		consume(buf, &have, head);
		while (have < clen) {
			int r = SSL_read(s, buf + have, (int)(sizeof(buf) - have));

			if (r <= 0)
				die("body");
			have += (size_t)r;
		}
		consume(buf, &have, clen);
		counts[status]++;
	}
	SSL_shutdown(s);
	SSL_free(s);
	close(c);
	printf("done %d", n);
	for (int st = 100; st < 600; st++)
		if (counts[st])
			printf(" %d:%d", st, counts[st]);
	printf("\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "server"))
		server(atoi(argv[2]), argv[3], argv[4]);
	if (argc == 4 && !strcmp(argv[1], "client"))
		return client(atoi(argv[2]), atoi(argv[3]));
	fprintf(stderr, "usage: bssl_peer server PORT CERT KEY | client PORT N\n");
	return 2;
}
