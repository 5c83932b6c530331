#include "collector/net_fwd.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "bpf/ember_abi.h"
#include "common/shard.h"

struct lost_slot {
	uint64_t ino;          /* 0 = free (socket inodes are never 0) */
	uint32_t events;
	uint64_t read_bytes, write_bytes;
};

/* A local TCP endpoint of a followed process (family 0 = free). */
struct endpoint {
	uint8_t addr[16];
	uint16_t port;
	uint16_t family;
	uint32_t tgid;
	uint32_t route;        /* the pid its events are routed by (net_event.root, else tgid) */
};

/* A shard was written an event its analyzer should see now (NET_F_CUT_FIRST). */
#define WRITTEN_NOW 2

struct net_fwd {
	struct shm_ring **rings;
	unsigned nshards;
	struct endpoint *ep;   /* NET_FWD_ENDPOINT_SLOTS, with several shards only */
	unsigned nep;
	uint8_t *written;      /* per shard: something to notify (WRITTEN_NOW: at once) */
	unsigned nlost;        /* slots in use */
	struct lost_slot lost[NET_FWD_LOST_SLOTS];
	struct net_fwd_stats st;
};

struct net_fwd *net_fwd__new(struct shm_ring **rings, unsigned nshards)
{
	struct net_fwd *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->written = calloc(nshards, 1);
	if (!f->written) {
		free(f);
		errno = ENOMEM;
		return NULL;
	}
	if (nshards > 1 && !(f->ep = calloc(NET_FWD_ENDPOINT_SLOTS, sizeof(*f->ep)))) {
		free(f->written);
		free(f);
		errno = ENOMEM;
		return NULL;
	}
	f->rings = rings;
	f->nshards = nshards;
	return f;
}

struct net_fwd *net_fwd__free(struct net_fwd *f)
{
	if (f) {
		free(f->ep);
		free(f->written);
		free(f);
	}
	return NULL;
}

/* Linear probing over a power-of-two table; deletion leaves no tombstones (backward shift). */
static unsigned slot_of(uint64_t ino)
{
	return (unsigned)((ino * 0x9e3779b97f4a7c15ull) >> 52) & (NET_FWD_LOST_SLOTS - 1);
}

static struct lost_slot *lost_find(struct net_fwd *f, uint64_t ino, int create)
{
	for (unsigned i = slot_of(ino), n = 0; n < NET_FWD_LOST_SLOTS; i = (i + 1) & (NET_FWD_LOST_SLOTS - 1), n++) {
		struct lost_slot *s = &f->lost[i];

		if (s->ino == ino)
			return s;
		if (!s->ino) {
			/* Kept below 3/4 full so that probes stay short. */
			if (!create || f->nlost >= NET_FWD_LOST_SLOTS * 3 / 4)
				return NULL;
			f->nlost++;
			s->ino = ino;
			return s;
		}
	}
	return NULL;
}

/*
 * Backward-shift deletion in a linear-probing table of mask + 1 slots of esz
 * bytes (no tombstones): slot i is emptied, then each entry after it moves
 * back into the hole unless its home slot lies cyclically in (hole, entry].
 * home() gives an entry's home slot, or UINT_MAX for an empty slot (all
 * zero bytes: emptied slots are zeroed whole, so none is reused with what
 * it held).
 */
static void probe_remove(void *table, size_t esz, unsigned mask, unsigned i, unsigned (*home)(const void *))
{
	uint8_t *t = table;
	unsigned j = i, h;

	memset(t + (size_t)i * esz, 0, esz);
	for (;;) {
		j = (j + 1) & mask;
		if ((h = home(t + (size_t)j * esz)) == UINT_MAX)
			return;
		if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
			memcpy(t + (size_t)i * esz, t + (size_t)j * esz, esz);
			memset(t + (size_t)j * esz, 0, esz);
			i = j;
		}
	}
}

static unsigned lost_home(const void *slot)
{
	const struct lost_slot *s = slot;

	return s->ino ? slot_of(s->ino) : UINT_MAX;
}

static void lost_remove(struct net_fwd *f, struct lost_slot *s)
{
	probe_remove(f->lost, sizeof(*f->lost), NET_FWD_LOST_SLOTS - 1, (unsigned)(s - f->lost), lost_home);
	f->nlost--;
}

/* ---- local endpoints (several shards): linear probing, backward-shift deletion ---- */

static unsigned ep_slot(uint16_t family, const uint8_t *addr, uint16_t port)
{
	uint64_t h = 1469598103934665603ull ^ family ^ ((uint64_t)port << 16);

	for (unsigned i = 0; i < 16; i++)
		h = (h ^ addr[i]) * 1099511628211ull;
	return (unsigned)(h >> 20) & (NET_FWD_ENDPOINT_SLOTS - 1);
}

static bool ep_is(const struct endpoint *p, uint16_t family, const uint8_t *addr, uint16_t port)
{
	return p->family == family && p->port == port && !memcmp(p->addr, addr, 16);
}

static struct endpoint *ep_find(struct net_fwd *f, uint16_t family, const uint8_t *addr, uint16_t port, bool create)
{
	for (unsigned i = ep_slot(family, addr, port), n = 0; n < NET_FWD_ENDPOINT_SLOTS;
	     i = (i + 1) & (NET_FWD_ENDPOINT_SLOTS - 1), n++) {
		struct endpoint *p = &f->ep[i];

		if (p->family && ep_is(p, family, addr, port))
			return p;
		if (!p->family) {
			if (!create)
				return NULL;
			if (f->nep >= NET_FWD_ENDPOINT_SLOTS * 3 / 4) {
				f->st.endpoints_full++;
				return NULL;
			}
			f->nep++;
			p->family = family;
			p->port = port;
			memcpy(p->addr, addr, 16);
			return p;
		}
	}
	return NULL;
}

static unsigned ep_home(const void *slot)
{
	const struct endpoint *p = slot;

	return p->family ? ep_slot(p->family, p->addr, p->port) : UINT_MAX;
}

static void ep_remove(struct net_fwd *f, struct endpoint *p)
{
	probe_remove(f->ep, sizeof(*f->ep), NET_FWD_ENDPOINT_SLOTS - 1, (unsigned)(p - f->ep), ep_home);
	f->nep--;
}

/*
 * Remembers e's local endpoint (forgets it at its close) and returns the
 * followed process at the other end when another shard has it, else 0.
 */
static uint32_t peer_across(struct net_fwd *f, const struct net_event *e, unsigned sh)
{
	struct endpoint *p;
	uint32_t route = e->root ? e->root : e->tgid;

	if (e->type != SOCK_STREAM || (e->family != AF_INET && e->family != AF_INET6))
		return 0;
	p = ep_find(f, e->family, e->laddr, e->lport, e->op != NET_OP_CLOSE);
	if (p && e->op == NET_OP_CLOSE) {
		if (p->tgid == e->tgid)
			ep_remove(f, p);
	} else if (p) {
		p->tgid = e->tgid;
		p->route = route;
	}
	p = ep_find(f, e->family, e->raddr, e->rport, false);
	if (!p || shard__of(p->route, f->nshards) == sh)
		return 0;
	f->st.peers_across++;
	return p->tgid;
}

int net_fwd__event(struct net_fwd *f, const struct net_event *e, uint32_t len)
{
	unsigned sh;
	struct net_event *rec;
	struct lost_slot *l;
	uint32_t peer;

	if (len < sizeof(*e) || len - sizeof(*e) < e->payload) {
		f->st.bad++;
		return 0;
	}
	len = sizeof(*e) + e->payload;
	/* A followed child's events go where its task is: to the process the task named. */
	sh = shard__of(e->root ? e->root : e->tgid, f->nshards);
	peer = f->ep ? peer_across(f, e, sh) : 0;
	l = f->nlost ? lost_find(f, e->ino, 0) : NULL;
	rec = shm_ring__reserve(f->rings[sh], EMBER_REC_NET, len);
	if (!rec) {
		uint64_t moved = e->ret > 0 ? (uint64_t)e->ret : 0;

		f->st.ring_drops++;
		if (!l)
			l = lost_find(f, e->ino, 1);
		if (!l) {
			f->st.untracked++;
			return 0;
		}
		l->events += 1 + e->lost_events;
		l->read_bytes += e->lost_read_bytes + (e->op == NET_OP_READ ? moved : 0);
		l->write_bytes += e->lost_write_bytes + (e->op == NET_OP_WRITE ? moved : 0);
		return 0;
	}
	memcpy(rec, e, len);
	rec->peer_tgid = peer;
	if (l) {
		rec->lost_events += l->events;
		rec->lost_read_bytes += l->read_bytes;
		rec->lost_write_bytes += l->write_bytes;
		lost_remove(f, l);
	}
	shm_ring__commit(f->rings[sh], rec);
	/* a cut call raises its connection's cap, a process event its TLS probes: their analyzer acts now */
	if ((e->flags & NET_F_CUT_FIRST) || !e->family)
		f->written[sh] = WRITTEN_NOW;
	else if (!f->written[sh])
		f->written[sh] = 1;
	f->st.events++;
	return 0;
}

void net_fwd__notify(struct net_fwd *f)
{
	for (unsigned s = 0; s < f->nshards; s++)
		if (f->written[s]) {
			f->written[s] = 0;
			(void)shm_ring__notify(f->rings[s]);
		}
}

void net_fwd__publish(struct net_fwd *f)
{
	/* written[] stays set: the next net_fwd__notify checks these shards' sleeps. */
	for (unsigned s = 0; s < f->nshards; s++) {
		if (f->written[s] == WRITTEN_NOW) {
			f->written[s] = 0;
			(void)shm_ring__notify(f->rings[s]);
		} else if (f->written[s]) {
			(void)shm_ring__publish(f->rings[s]);
		}
	}
}

void net_fwd__stats(const struct net_fwd *f, struct net_fwd_stats *ret)
{
	*ret = f->st;
}
