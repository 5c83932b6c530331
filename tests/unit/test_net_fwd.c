/*
 * The collector's forwarding of network events (collector/net_fwd): a full
 * ring drops an event, and what it carried reaches the socket's next event
 * (lost_events, lost_read_bytes, lost_write_bytes), once, with nothing left
 * over for another socket that later uses the same table slot; with several
 * shards, the two ends of a local connection routed to different shards
 * name each other (peer_tgid), and a closed endpoint is forgotten; a
 * batch published without a wake-up is woken for by the next notify, or at
 * once when it holds an event its connection's cap cut for the first time.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "bpf/ember_abi.h"
#include "collector/net_fwd.h"
#include "common/shard.h"
#include "common/shm_ring.h"

struct pair { struct shm_ring *p, *c; };

static void pair_new(struct pair *r, size_t size)
{
	r->p = shm_ring__create(size, "test");
	assert_non_null(r->p);
	r->c = shm_ring__attach(dup(shm_ring__data_fd(r->p)), dup(shm_ring__cons_fd(r->p)),
				dup(shm_ring__event_fd(r->p)));
	assert_non_null(r->c);
}

static void pair_free(struct pair *r)
{
	shm_ring__free(r->c);
	shm_ring__free(r->p);
}

#define MAX_GOT 512
struct got { unsigned n; struct net_event e[MAX_GOT]; };

static int keep(void *ctx, uint32_t type, const void *data, uint32_t len)
{
	struct got *g = ctx;

	assert_int_equal(type, EMBER_REC_NET);
	assert_true(len >= sizeof(struct net_event));
	if (g->n < MAX_GOT)
		memcpy(&g->e[g->n++], data, sizeof(struct net_event));
	return 0;
}

static void drain(struct net_fwd *f, struct pair *r, struct got *g)
{
	net_fwd__notify(f);
	g->n = 0;
	assert_true(shm_ring__consume(r->c, keep, g, 0) >= 0);
}

static struct net_event ev(uint32_t tgid, uint64_t ino, uint16_t op, long ret)
{
	struct net_event e;

	memset(&e, 0, sizeof(e));
	e.tgid = tgid;
	e.tid = tgid;
	e.ino = ino;
	e.op = op;
	e.ret = ret;
	e.family = AF_INET;
	e.type = SOCK_STREAM;
	return e;
}

static void test_losses_reach_the_next_event_once(void **state)
{
	struct pair r;
	struct shm_ring *rings[1];
	struct net_fwd *f;
	struct net_fwd_stats st;
	struct got *g = calloc(1, sizeof(*g));
	struct net_event e;
	unsigned sent = 0;

	(void)state;
	pair_new(&r, SHM_RING_MIN_SIZE);
	rings[0] = r.p;
	f = net_fwd__new(rings, 1);
	assert_non_null(f);
	/* Fill the ring with socket 1's events, then socket 7's read of 100 and write of 30 find no room. */
	for (;;) {
		e = ev(10, 1, NET_OP_READ, 1);
		net_fwd__event(f, &e, sizeof(e));
		net_fwd__stats(f, &st);
		if (st.ring_drops)
			break;
		sent++;
	}
	e = ev(10, 7, NET_OP_READ, 100);
	net_fwd__event(f, &e, sizeof(e));
	e = ev(10, 7, NET_OP_WRITE, 30);
	net_fwd__event(f, &e, sizeof(e));
	net_fwd__stats(f, &st);
	assert_int_equal(st.ring_drops, 3);
	drain(f, &r, g);
	assert_int_equal(g->n, sent);
	/* Socket 7's next event carries both lost events and their bytes, socket 1's its one. */
	e = ev(10, 7, NET_OP_READ, 5);
	net_fwd__event(f, &e, sizeof(e));
	e = ev(10, 1, NET_OP_READ, 5);
	net_fwd__event(f, &e, sizeof(e));
	drain(f, &r, g);
	assert_int_equal(g->n, 2);
	assert_int_equal(g->e[0].ino, 7);
	assert_int_equal(g->e[0].lost_events, 2);
	assert_int_equal(g->e[0].lost_read_bytes, 100);
	assert_int_equal(g->e[0].lost_write_bytes, 30);
	assert_int_equal(g->e[1].ino, 1);
	assert_int_equal(g->e[1].lost_events, 1);
	assert_int_equal(g->e[1].lost_read_bytes, 1);
	/* Once: the events after carry nothing. */
	e = ev(10, 7, NET_OP_READ, 5);
	net_fwd__event(f, &e, sizeof(e));
	drain(f, &r, g);
	assert_int_equal(g->n, 1);
	assert_int_equal(g->e[0].lost_events, 0);
	assert_int_equal(g->e[0].lost_read_bytes + g->e[0].lost_write_bytes, 0);
	/*
	 * Many sockets lose at once, so that their table slots collide and
	 * entries move back as others are forgotten; then each socket's next
	 * event carries exactly its own loss, and a socket that reuses a
	 * slot later starts from nothing.
	 */
	for (uint64_t before = st.ring_drops; st.ring_drops == before;) {
		e = ev(10, 1, NET_OP_READ, 1);
		net_fwd__event(f, &e, sizeof(e));
		net_fwd__stats(f, &st);
	}
	for (uint64_t ino = 100; ino < 1100; ino++) {
		e = ev(10, ino, NET_OP_WRITE, (long)ino);
		net_fwd__event(f, &e, sizeof(e));
	}
	drain(f, &r, g);
	for (uint64_t ino = 100; ino < 1100; ino += 2) {   /* half of them, forgetting theirs */
		e = ev(10, ino, NET_OP_READ, 1);
		net_fwd__event(f, &e, sizeof(e));
		drain(f, &r, g);
		assert_int_equal(g->n, 1);
		assert_int_equal(g->e[0].lost_events, 1);
		assert_int_equal(g->e[0].lost_write_bytes, ino);
	}
	for (uint64_t ino = 101; ino < 1100; ino += 2) {   /* the others still find theirs after the moves */
		e = ev(10, ino, NET_OP_READ, 1);
		net_fwd__event(f, &e, sizeof(e));
		drain(f, &r, g);
		assert_int_equal(g->e[0].lost_events, 1);
		assert_int_equal(g->e[0].lost_write_bytes, ino);
	}
	/* New sockets losing into the freed slots carry their own loss only. */
	net_fwd__stats(f, &st);
	for (uint64_t before = st.ring_drops; st.ring_drops == before;) {
		e = ev(10, 1, NET_OP_READ, 1);
		net_fwd__event(f, &e, sizeof(e));
		net_fwd__stats(f, &st);
	}
	for (uint64_t ino = 5000; ino < 6000; ino++) {
		e = ev(10, ino, NET_OP_READ, 3);
		net_fwd__event(f, &e, sizeof(e));
	}
	drain(f, &r, g);
	for (uint64_t ino = 5000; ino < 6000; ino++) {
		e = ev(10, ino, NET_OP_READ, 1);
		net_fwd__event(f, &e, sizeof(e));
		drain(f, &r, g);
		assert_int_equal(g->e[0].lost_events, 1);
		assert_int_equal(g->e[0].lost_read_bytes, 3);
		assert_int_equal(g->e[0].lost_write_bytes, 0);
	}
	net_fwd__stats(f, &st);
	assert_int_equal(st.untracked, 0);
	net_fwd__free(f);
	pair_free(&r);
	free(g);
}

/* A pid that common/shard.h puts in the given one of two shards. */
static uint32_t pid_in(unsigned shard, uint32_t from)
{
	while (shard__of(from, 2) != shard)
		from++;
	return from;
}

static void test_peers_across_shards(void **state)
{
	struct pair r[2];
	struct shm_ring *rings[2];
	struct net_fwd *f;
	struct net_fwd_stats st;
	struct got *g = calloc(1, sizeof(*g));
	uint32_t srv = pid_in(0, 1000), cli = pid_in(1, 2000), other = pid_in(1, srv + 1);
	struct net_event e;

	(void)state;
	pair_new(&r[0], 1 << 20);
	pair_new(&r[1], 1 << 20);
	rings[0] = r[0].p;
	rings[1] = r[1].p;
	f = net_fwd__new(rings, 2);
	assert_non_null(f);
	/* 127.0.0.1:80 (the server) <-> 127.0.0.1:40000 (the client), several endpoints in between. */
	for (uint16_t port = 30000; port < 30400; port++) {
		e = ev(other, port, NET_OP_WRITE, 1);
		e.laddr[0] = 10;
		e.lport = port;
		net_fwd__event(f, &e, sizeof(e));
	}
	e = ev(srv, 1, NET_OP_READ, 10);
	e.laddr[0] = e.raddr[0] = 127;
	e.laddr[3] = e.raddr[3] = 1;
	e.lport = 80;
	e.rport = 40000;
	net_fwd__event(f, &e, sizeof(e));
	drain(f, &r[0], g);
	assert_int_equal(g->n, 1);
	assert_int_equal(g->e[0].peer_tgid, 0);   /* the client is not known yet */
	e.tgid = e.tid = cli;
	e.ino = 2;
	e.lport = 40000;
	e.rport = 80;
	net_fwd__event(f, &e, sizeof(e));
	drain(f, &r[1], g);
	assert_int_equal(g->n, 400 + 1);   /* the other process's events, then the client's */
	assert_int_equal(g->e[g->n - 1].peer_tgid, srv);
	e.tgid = e.tid = srv;
	e.ino = 1;
	e.lport = 80;
	e.rport = 40000;
	net_fwd__event(f, &e, sizeof(e));
	drain(f, &r[0], g);
	assert_int_equal(g->e[g->n - 1].peer_tgid, cli);
	/* The client closes: its endpoint is forgotten, the server's events name no peer. */
	e.tgid = e.tid = cli;
	e.ino = 2;
	e.op = NET_OP_CLOSE;
	e.lport = 40000;
	e.rport = 80;
	net_fwd__event(f, &e, sizeof(e));
	/* Forgetting moved the other endpoints back: each still routes. */
	for (uint16_t port = 30000; port < 30400; port += 7) {
		e = ev(srv, 1, NET_OP_READ, 1);
		e.lport = 80;
		e.raddr[0] = 10;
		e.rport = port;
		net_fwd__event(f, &e, sizeof(e));
	}
	e = ev(srv, 1, NET_OP_READ, 1);
	e.laddr[0] = e.raddr[0] = 127;
	e.laddr[3] = e.raddr[3] = 1;
	e.lport = 80;
	e.rport = 40000;
	net_fwd__event(f, &e, sizeof(e));
	drain(f, &r[0], g);
	for (unsigned i = 0; i + 1 < g->n; i++)
		assert_int_equal(g->e[i].peer_tgid, other);
	assert_int_equal(g->e[g->n - 1].peer_tgid, 0);
	net_fwd__stats(f, &st);
	assert_int_equal(st.endpoints_full, 0);
	net_fwd__free(f);
	pair_free(&r[0]);
	pair_free(&r[1]);
	free(g);
}

static bool readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLIN);
}

/*
 * A batch published without waking (net_fwd__publish) is visible at once,
 * and the next net_fwd__notify wakes the sleeping analyzer of its shard,
 * and only that one.
 */
static void test_publish_then_notify(void **state)
{
	struct pair r[2];
	struct shm_ring *rings[2];
	struct net_fwd *f;
	struct got *g = calloc(1, sizeof(*g));
	struct net_event e = ev(pid_in(0, 1000), 1, NET_OP_READ, 10);

	(void)state;
	pair_new(&r[0], 1 << 20);
	pair_new(&r[1], 1 << 20);
	rings[0] = r[0].p;
	rings[1] = r[1].p;
	f = net_fwd__new(rings, 2);
	assert_non_null(f);
	assert_int_equal(shm_ring__prepare_wait(r[0].c), 0);
	assert_int_equal(shm_ring__prepare_wait(r[1].c), 0);
	net_fwd__event(f, &e, sizeof(e));
	net_fwd__publish(f);
	assert_false(readable(shm_ring__event_fd(r[0].c)));
	assert_int_equal(shm_ring__consume(r[0].c, keep, g, 0), 1);
	assert_int_equal(shm_ring__prepare_wait(r[0].c), 0);
	net_fwd__event(f, &e, sizeof(e));
	net_fwd__publish(f);
	assert_false(readable(shm_ring__event_fd(r[0].c)));
	net_fwd__notify(f);
	assert_true(readable(shm_ring__event_fd(r[0].c)));
	assert_false(readable(shm_ring__event_fd(r[1].c)));
	assert_int_equal(shm_ring__consume(r[0].c, keep, g, 0), 1);
	net_fwd__free(f);
	pair_free(&r[0]);
	pair_free(&r[1]);
	free(g);
}

/*
 * An event cut for the first time by its connection's cap (NET_F_CUT_FIRST)
 * wakes its analyzer at the publish that follows, without waiting for the
 * notify; the batch after it goes back to waiting; a process event wakes it
 * at once too.
 */
static void test_cut_first_wakes_now(void **state)
{
	struct pair r;
	struct net_fwd *f;
	struct got *g = calloc(1, sizeof(*g));
	struct net_event e = ev(pid_in(0, 1000), 1, NET_OP_READ, 10);

	(void)state;
	pair_new(&r, 1 << 20);
	f = net_fwd__new(&r.p, 1);
	assert_non_null(f);
	assert_int_equal(shm_ring__prepare_wait(r.c), 0);
	net_fwd__event(f, &e, sizeof(e));
	e.flags |= NET_F_CAPPED | NET_F_TRUNCATED | NET_F_CUT_FIRST;
	net_fwd__event(f, &e, sizeof(e));
	e.flags = 0;
	net_fwd__event(f, &e, sizeof(e));
	net_fwd__publish(f);
	assert_true(readable(shm_ring__event_fd(r.c)));
	assert_int_equal(shm_ring__consume(r.c, keep, g, 0), 3);
	assert_int_equal(g->e[1].flags & NET_F_CUT_FIRST, NET_F_CUT_FIRST);
	{ uint64_t v; (void)!read(shm_ring__event_fd(r.c), &v, sizeof(v)); }
	assert_false(readable(shm_ring__event_fd(r.c)));
	assert_int_equal(shm_ring__prepare_wait(r.c), 0);
	net_fwd__event(f, &e, sizeof(e));
	net_fwd__publish(f);
	assert_false(readable(shm_ring__event_fd(r.c)));
	/* a process event (no socket: family 0) does not wait either: its analyzer probes TLS libraries on it */
	e = (struct net_event){ .tgid = pid_in(0, 1000), .tid = pid_in(0, 1000), .op = NET_OP_MMAP_EXEC };
	net_fwd__event(f, &e, sizeof(e));
	net_fwd__publish(f);
	assert_true(readable(shm_ring__event_fd(r.c)));
	net_fwd__free(f);
	pair_free(&r);
	free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_losses_reach_the_next_event_once),
		cmocka_unit_test(test_peers_across_shards),
		cmocka_unit_test(test_publish_then_notify),
		cmocka_unit_test(test_cut_first_wakes_now),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
