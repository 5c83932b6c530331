#include "analyzer/net/conntrack.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct conntrack {
	size_t max, n, nbuckets;
	uint64_t next_id;
	struct net_conn **buckets;   /* by key */
	struct net_conn **sbuckets;  /* by socket: (tgid, inode) */
	struct net_conn **lbuckets;  /* TCP, by local endpoint */
	struct net_conn *oldest, *newest;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t ep_hash(uint64_t h, const struct net_endpoint *ep)
{
	uint64_t a, b;

	memcpy(&a, ep->addr, 8);
	memcpy(&b, ep->addr + 8, 8);
	return mix(mix(mix(h, ((uint64_t)ep->family << 16) | ep->port), a), b);
}

static bool ep_eq(const struct net_endpoint *x, const struct net_endpoint *y)
{
	return x->family == y->family && x->port == y->port && !memcmp(x->addr, y->addr, 16);
}

static size_t key_slot(const struct conntrack *ct, uint32_t tgid, uint64_t ino, const struct net_endpoint *peer)
{
	return ep_hash(mix(mix(0, tgid), ino), peer) & (ct->nbuckets - 1);
}

static size_t sock_slot(const struct conntrack *ct, uint32_t tgid, uint64_t ino)
{
	return mix(mix(0x1234, tgid), ino) & (ct->nbuckets - 1);
}

static size_t local_slot(const struct conntrack *ct, const struct net_endpoint *ep)
{
	return ep_hash(0x5a5a, ep) & (ct->nbuckets - 1);
}

struct conntrack *conntrack__new(size_t max)
{
	struct conntrack *ct;
	size_t nb = 64;

	if (!max) {
		errno = EINVAL;
		return NULL;
	}
	while (nb < max && nb < ((size_t)1 << 30))
		nb <<= 1;
	ct = calloc(1, sizeof(*ct));
	if (!ct)
		return NULL;
	ct->max = max;
	ct->nbuckets = nb;
	ct->buckets = calloc(nb, sizeof(*ct->buckets));
	ct->lbuckets = calloc(nb, sizeof(*ct->lbuckets));
	ct->sbuckets = calloc(nb, sizeof(*ct->sbuckets));
	if (!ct->buckets || !ct->lbuckets || !ct->sbuckets) {
		conntrack__free(ct);
		errno = ENOMEM;
		return NULL;
	}
	return ct;
}

struct conntrack *conntrack__free(struct conntrack *ct)
{
	if (!ct)
		return NULL;
	while (ct->oldest)
		conntrack__remove(ct, ct->oldest);
	free(ct->buckets);
	free(ct->lbuckets);
	free(ct->sbuckets);
	free(ct);
	return NULL;
}

struct net_conn *conntrack__find(struct conntrack *ct, uint32_t tgid, uint64_t ino, const struct net_endpoint *peer)
{
	for (struct net_conn *c = ct->buckets[key_slot(ct, tgid, ino, peer)]; c; c = c->hnext)
		if (c->tgid == tgid && c->ino == ino && ep_eq(&c->peer, peer))
			return c;
	return NULL;
}

static void lru_unlink(struct conntrack *ct, struct net_conn *c)
{
	if (c->older)
		c->older->newer = c->newer;
	else
		ct->oldest = c->newer;
	if (c->newer)
		c->newer->older = c->older;
	else
		ct->newest = c->older;
	c->older = c->newer = NULL;
}

static void lru_append(struct conntrack *ct, struct net_conn *c)
{
	c->older = ct->newest;
	c->newer = NULL;
	if (ct->newest)
		ct->newest->newer = c;
	else
		ct->oldest = c;
	ct->newest = c;
}

struct net_conn *conntrack__add(struct conntrack *ct, uint32_t tgid, uint64_t ino, bool udp,
				const struct net_endpoint *peer, const struct net_endpoint *local)
{
	struct net_conn *c;
	size_t slot;

	if (ct->n >= ct->max) {
		errno = ENOSPC;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->tgid = tgid;
	c->ino = ino;
	c->udp = udp;
	c->peer = *peer;
	c->local = *local;
	c->id = ++ct->next_id;
	slot = key_slot(ct, tgid, ino, peer);
	c->hnext = ct->buckets[slot];
	ct->buckets[slot] = c;
	slot = sock_slot(ct, tgid, ino);
	c->snext = ct->sbuckets[slot];
	ct->sbuckets[slot] = c;
	if (!udp && local->port) {
		slot = local_slot(ct, local);
		c->lnext = ct->lbuckets[slot];
		ct->lbuckets[slot] = c;
		c->indexed = true;
	}
	lru_append(ct, c);
	ct->n++;
	return c;
}

void conntrack__touch(struct conntrack *ct, struct net_conn *c, uint64_t now_ns)
{
	c->last_ns = now_ns;
	if (ct->newest != c) {
		lru_unlink(ct, c);
		lru_append(ct, c);
	}
}

struct net_conn *conntrack__socket_first(struct conntrack *ct, uint32_t tgid, uint64_t ino)
{
	for (struct net_conn *c = ct->sbuckets[sock_slot(ct, tgid, ino)]; c; c = c->snext)
		if (c->tgid == tgid && c->ino == ino)
			return c;
	return NULL;
}

struct net_conn *conntrack__socket_next(struct conntrack *ct, const struct net_conn *c)
{
	(void)ct;
	for (struct net_conn *n = c->snext; n; n = n->snext)
		if (n->tgid == c->tgid && n->ino == c->ino)
			return n;
	return NULL;
}

struct net_conn *conntrack__by_local(struct conntrack *ct, const struct net_endpoint *ep)
{
	for (struct net_conn *c = ct->lbuckets[local_slot(ct, ep)]; c; c = c->lnext)
		if (ep_eq(&c->local, ep))
			return c;
	return NULL;
}

struct net_conn *conntrack__oldest(struct conntrack *ct)
{
	return ct->oldest;
}

void conntrack__remove(struct conntrack *ct, struct net_conn *c)
{
	struct net_conn **pp = &ct->buckets[key_slot(ct, c->tgid, c->ino, &c->peer)];

	while (*pp && *pp != c)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = c->hnext;
	pp = &ct->sbuckets[sock_slot(ct, c->tgid, c->ino)];
	while (*pp && *pp != c)
		pp = &(*pp)->snext;
	if (*pp)
		*pp = c->snext;
	if (c->indexed) {
		pp = &ct->lbuckets[local_slot(ct, &c->local)];
		while (*pp && *pp != c)
			pp = &(*pp)->lnext;
		if (*pp)
			*pp = c->lnext;
	}
	lru_unlink(ct, c);
	ct->n--;
	free(c);
}

size_t conntrack__count(const struct conntrack *ct)
{
	return ct->n;
}

char *net_endpoint__str(const struct net_endpoint *ep, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	inet_ntop(ep->family == AF_INET6 ? AF_INET6 : AF_INET, ep->addr, a, sizeof(a));
	snprintf(buf, len, ep->family == AF_INET6 ? "[%s]:%u" : "%s:%u", a, ep->port);
	return buf;
}

bool net_endpoint__is_loopback(const struct net_endpoint *ep)
{
	static const uint8_t v6_lo[16] = { [15] = 1 };
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (ep->family == AF_INET)
		return ep->addr[0] == 127;
	return !memcmp(ep->addr, v6_lo, 16) || (!memcmp(ep->addr, v4mapped, 12) && ep->addr[12] == 127);
}

uint64_t conntrack__added(const struct conntrack *ct)
{
	return ct->next_id;
}
