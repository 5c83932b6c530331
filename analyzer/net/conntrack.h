/*
 * The connections of the processes a network task follows, keyed as the
 * kernel knows them: (tgid, socket inode, peer).  The peer is part of the key
 * because one unconnected UDP socket talks to many peers (a DNS server's
 * one socket is a connection per client); a TCP socket has one peer for
 * life.  The table is bounded (over the bound a new connection is refused
 * and the caller counts it), keeps connections in least-recently-used order
 * for ageing, and indexes TCP connections by their local endpoint, which is
 * how the two ends of a loopback connection find each other.
 *
 * Pure bookkeeping: what a connection carries beyond its identity belongs
 * to the caller (net_conn.user), which frees it before removing.
 */
#ifndef EMBER_ANALYZER_NET_CONNTRACK_H
#define EMBER_ANALYZER_NET_CONNTRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct net_endpoint {
	uint16_t family;      /* AF_INET, AF_INET6 */
	uint16_t port;
	uint8_t addr[16];     /* IPv4 in the first 4 bytes, the rest zero */
};

struct net_conn {
	uint32_t tgid;
	bool udp;
	uint64_t ino;
	struct net_endpoint peer, local;
	uint64_t id;          /* 1, 2, ... in order of creation */
	uint64_t last_ns;     /* last event, monotonic: ageing order */
	void *user;
	/* the table's links */
	struct net_conn *hnext, *snext, *lnext, *older, *newer;
	bool indexed;         /* in the local-endpoint index */
};

struct conntrack;

/* Up to max connections at once.  NULL + errno. */
struct conntrack *conntrack__new(size_t max);
struct net_conn *conntrack__find(struct conntrack *ct, uint32_t tgid, uint64_t ino, const struct net_endpoint *peer);
/* A new connection (user NULL), newest; NULL with errno ENOSPC when the table is full. */
struct net_conn *conntrack__add(struct conntrack *ct, uint32_t tgid, uint64_t ino, bool udp,
				const struct net_endpoint *peer, const struct net_endpoint *local);
/* Marks c used at now (it becomes the newest). */
void conntrack__touch(struct conntrack *ct, struct net_conn *c, uint64_t now_ns);
/*
 * The connections of one socket (a UDP socket has one per peer), for its
 * close: first, then next (take next before removing the current one).
 */
struct net_conn *conntrack__socket_first(struct conntrack *ct, uint32_t tgid, uint64_t ino);
struct net_conn *conntrack__socket_next(struct conntrack *ct, const struct net_conn *c);
/* The TCP connection whose local endpoint is ep (the other end of a local peer), or NULL. */
struct net_conn *conntrack__by_local(struct conntrack *ct, const struct net_endpoint *ep);
/* The least recently used connection (ageing walks from here with ->newer), or NULL. */
struct net_conn *conntrack__oldest(struct conntrack *ct);
void conntrack__remove(struct conntrack *ct, struct net_conn *c);
size_t conntrack__count(const struct conntrack *ct);
/* Connections added so far: a lookup that found nothing stays true until this moves. */
uint64_t conntrack__added(const struct conntrack *ct);
/* Accepts NULL (the connections' user data must be gone).  Returns NULL. */
struct conntrack *conntrack__free(struct conntrack *ct);

/* "1.2.3.4:80" / "[::1]:80" into buf; returns buf. */
char *net_endpoint__str(const struct net_endpoint *ep, char *buf, size_t len);
bool net_endpoint__is_loopback(const struct net_endpoint *ep);

#endif
