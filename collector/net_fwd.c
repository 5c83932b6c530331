#include "collector/net_fwd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/ember_abi.h"
#include "common/shard.h"

struct lost_slot {
	uint64_t ino;          /* 0 = free (socket inodes are never 0) */
	uint32_t events;
	uint64_t read_bytes, write_bytes;
};

struct net_fwd {
	struct shm_ring **rings;
	unsigned nshards;
	uint8_t *written;      /* per shard: something to notify */
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
	f->rings = rings;
	f->nshards = nshards;
	return f;
}

struct net_fwd *net_fwd__free(struct net_fwd *f)
{
	if (f) {
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

static void lost_remove(struct net_fwd *f, struct lost_slot *s)
{
	unsigned i = (unsigned)(s - f->lost), j = i;

	f->lost[i].ino = 0;
	f->nlost--;
	for (;;) {
		j = (j + 1) & (NET_FWD_LOST_SLOTS - 1);
		if (!f->lost[j].ino)
			return;
		unsigned home = slot_of(f->lost[j].ino);
		/* Move j back into the hole at i unless its home lies cyclically in (i, j]. */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			f->lost[i] = f->lost[j];
			f->lost[j].ino = 0;
			i = j;
		}
	}
}

int net_fwd__event(struct net_fwd *f, const struct net_event *e, uint32_t len)
{
	unsigned sh;
	struct net_event *rec;
	struct lost_slot *l;

	if (len < sizeof(*e) || len - sizeof(*e) < e->payload) {
		f->st.bad++;
		return 0;
	}
	len = sizeof(*e) + e->payload;
	/* A followed child's events go where its task is: to the process the task named. */
	sh = shard__of(e->root ? e->root : e->tgid, f->nshards);
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
	if (l) {
		rec->lost_events += l->events;
		rec->lost_read_bytes += l->read_bytes;
		rec->lost_write_bytes += l->write_bytes;
		lost_remove(f, l);
	}
	shm_ring__commit(f->rings[sh], rec);
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

void net_fwd__stats(const struct net_fwd *f, struct net_fwd_stats *ret)
{
	*ret = f->st;
}
