/*
 * DNS over UDP moved in batches, as glibc's resolver and busy DNS servers do:
 * sendmmsg / recvmmsg with several messages per call.
 *
 *   mmsg_dns server PORT TOTAL       answers TOTAL queries (NXDOMAIN, the
 *                                    query echoed), reading them with
 *                                    recvmmsg once poll says some wait (up
 *                                    to 8 a call, MSG_WAITFORONE)
 *                                    and answering each batch with one
 *                                    sendmmsg to the queries' sources
 *   mmsg_dns client PORT SOCKS ROUNDS
 *                                    from SOCKS sockets (a source port each),
 *                                    ROUNDS batches of 4 queries per socket:
 *                                    one sendmmsg, the 4 answers by recvmmsg;
 *                                    names q<socket>-<round>-<i>.ember.test
 *
 * Prints what it moved ("server: N queries in C calls"), exits 0 when every
 * answer came back with its query's id.
 */
#define _GNU_SOURCE   /* sendmmsg, recvmmsg */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define BATCH 8
#define PER_ROUND 4

/* A query for name with id: header, QNAME, QTYPE A, QCLASS IN.  Returns its length. */
static size_t query(unsigned char *b, unsigned id, const char *name)
{
	size_t n = 12;
	const char *p = name;

	memset(b, 0, 12);
	b[0] = (unsigned char)(id >> 8);
	b[1] = (unsigned char)id;
	b[2] = 0x01;    /* RD */
	b[5] = 1;       /* QDCOUNT */
	while (*p) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);

		b[n++] = (unsigned char)l;
		memcpy(b + n, p, l);
		n += l;
		p += l + (dot ? 1 : 0);
	}
	b[n++] = 0;
	b[n++] = 0, b[n++] = 1;
	b[n++] = 0, b[n++] = 1;
	return n;
}

static int server(int port, int total)
{
	unsigned char buf[BATCH][512];
	struct sockaddr_in src[BATCH], a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct iovec iov[BATCH];
	struct mmsghdr m[BATCH];
	int fd = socket(AF_INET, SOCK_DGRAM, 0), got = 0, calls = 0;

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a))) {
		perror("server: bind");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (got < total) {
		int n;

		for (int i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){ buf[i], sizeof(buf[i]) };
			m[i].msg_hdr = (struct msghdr){ .msg_name = &src[i], .msg_namelen = sizeof(src[i]),
							.msg_iov = &iov[i], .msg_iovlen = 1 };
		}
		/* waits in poll, as event-loop servers do: a read is never in flight when a task starts */
		if (poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1, -1) != 1) {
			perror("server: poll");
			return 1;
		}
		n = recvmmsg(fd, m, BATCH, MSG_WAITFORONE, NULL);
		if (n <= 0) {
			perror("server: recvmmsg");
			return 1;
		}
		calls++;
		for (int i = 0; i < n; i++) {
			buf[i][2] |= 0x80;   /* QR */
			buf[i][3] = 0x83;    /* RA, NXDOMAIN */
			iov[i].iov_len = m[i].msg_len;
			m[i].msg_hdr.msg_namelen = sizeof(src[i]);
		}
		if (sendmmsg(fd, m, (unsigned)n, 0) != n) {
			perror("server: sendmmsg");
			return 1;
		}
		got += n;
	}
	printf("server: %d queries in %d recvmmsg calls\n", got, calls);
	return 0;
}

static int client(int port, int socks, int rounds)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	unsigned char q[PER_ROUND][512], r[PER_ROUND][512];
	struct iovec qv[PER_ROUND], rv[PER_ROUND];
	struct mmsghdr qm[PER_ROUND], rm[PER_ROUND];
	int fds[64], bad = 0;

	inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
	if (socks > 64)
		return 2;
	for (int s = 0; s < socks; s++)
		if ((fds[s] = socket(AF_INET, SOCK_DGRAM, 0)) < 0)
			return 1;
	for (int round = 0; round < rounds; round++) {
		for (int s = 0; s < socks; s++) {
			int got = 0;

			for (int i = 0; i < PER_ROUND; i++) {
				char name[64];

				snprintf(name, sizeof(name), "q%d-%d-%d.ember.test", s, round, i);
				qv[i] = (struct iovec){ q[i], query(q[i], (unsigned)(s * 1000 + round * 10 + i), name) };
				qm[i].msg_hdr = (struct msghdr){ .msg_name = &dst, .msg_namelen = sizeof(dst),
								 .msg_iov = &qv[i], .msg_iovlen = 1 };
			}
			if (sendmmsg(fds[s], qm, PER_ROUND, 0) != PER_ROUND) {
				perror("client: sendmmsg");
				return 1;
			}
			while (got < PER_ROUND) {
				int n;

				for (int i = 0; i < PER_ROUND; i++) {
					rv[i] = (struct iovec){ r[i], sizeof(r[i]) };
					rm[i].msg_hdr = (struct msghdr){ .msg_iov = &rv[i], .msg_iovlen = 1 };
				}
				n = recvmmsg(fds[s], rm, (unsigned)(PER_ROUND - got), MSG_WAITFORONE, NULL);
				if (n <= 0) {
					perror("client: recvmmsg");
					return 1;
				}
				for (int i = 0; i < n; i++) {
					unsigned id = (unsigned)r[i][0] << 8 | r[i][1];

					bad += id / 1000 != (unsigned)s || (id % 1000) / 10 != (unsigned)round;
				}
				got += n;
			}
		}
	}
	printf("client: %d queries, %d answers not this round's\n", socks * rounds * PER_ROUND, bad);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "server"))
		return server(atoi(argv[2]), atoi(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "client"))
		return client(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
	fprintf(stderr, "usage: mmsg_dns server PORT TOTAL | client PORT SOCKS ROUNDS\n");
	return 2;
}
