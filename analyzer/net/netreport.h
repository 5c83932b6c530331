/*
 * A network task's report while it builds (analyzer/net/netprof.h says what
 * a report carries): its flows (connections' calls and exchanges summed by
 * process, side, peer, protocol and TLS), the exchanges and the closed
 * connections it lists as NetworkBatch messages, the window's loss
 * counters, and the parts it goes out in.  One per task.
 *
 * The seam with netprof, which follows the connections (events, parsers,
 * TLS, the connection table): the report never sees a connection's state,
 * netprof tells it what belongs in the report.
 *   - A connection is described at each call by a struct netreport_conn
 *     netprof fills (borrowed for the call); the flow it belongs to is
 *     found from that description, and remembered in the connection's
 *     struct netreport_flow_cache.
 *   - netprof counts a connection's calls of the window in its struct
 *     netreport_window; netreport__fold sums them into the flow and clears
 *     them.
 *   - Listed exchanges and connections are messages netprof fills on its
 *     stack; the report copies them, and the strings it says, into the
 *     memory of the report.
 *   - netreport__publish takes the lists from the report (which starts the
 *     next one at once: what netprof adds while the parts go out, the ring
 *     drained between them, belongs to the next report) and sends the parts.
 *
 * Bounds: up to max_exchanges listed exchanges, and max(max_exchanges, 1000)
 * closed connections; past them an item is not listed (the caller counts
 * it) but its flow still counts it.  Not thread-safe.
 */
#ifndef EMBER_ANALYZER_NET_NETREPORT_H
#define EMBER_ANALYZER_NET_NETREPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "l7/l7.h"
#include "analyzer/net/conntrack.h"
#include "analyzer/net/sampler.h"
#include "analyzer/publisher.h"
#include "analyzer/tasks.h"
#include "common/net_hist.h"

enum netreport_side { NETREPORT_CLIENT = 0, NETREPORT_SERVER = 1 };

/* The kinds of calls a flow counts (NetFlow's write, read, write_rtt, connect, close). */
enum netreport_call { NC_WRITE, NC_READ, NC_RTT, NC_CONNECT, NC_CLOSE, NC_MAX };

/* A connection's calls of one kind in the window: 32-bit buckets (a flow sums them in 64). */
struct netreport_calls {
	uint64_t count, bytes, time;
	uint64_t untimed;           /* of count: calls whose time is unknown (not in time or hist) */
	uint32_t hist[NET_L4_BUCKETS];
};

/* What a connection did in the report's window, kept by netprof in the connection. */
struct netreport_window {
	struct netreport_calls w[NC_MAX];
	uint64_t retrans, drops;
	bool active;              /* something to fold */
};

/* The flow a connection last went to, kept in the connection: valid for the report it was found in. */
struct netreport_flow;
struct netreport_flow_cache {
	struct netreport_flow *flow;
	uint64_t gen;
};

/* A connection as its report sees it: filled by netprof, borrowed for the call. */
struct netreport_conn {
	const struct net_conn *nc;    /* process, id, endpoints, transport */
	const char *comm;
	uint8_t side;                 /* enum netreport_side, as protocol detection left it */
	bool side_guessed;
	bool tls;
	bool peer_local;              /* the peer is an address of this host */
	uint32_t peer_pid;            /* the other end's process when known, else 0 */
	const char *protocol;         /* a parser's name (static) or "" */
	struct netreport_flow_cache *cache;
};

struct netreport;

/* A report lists its window's slowest answered exchanges besides its even sample. */
#define NETREPORT_SLOWEST 10

/* The report of a task that lists up to max_exchanges exchanges (and its slowest); its window starts now.  NULL + errno. */
struct netreport *netreport__new(size_t max_exchanges);

/* Sums the window w of connection c into c's flow and clears it (also when there is no memory for the flow). */
void netreport__fold(struct netreport *r, const struct netreport_conn *c, struct netreport_window *w);

/* An exchange of connection c into c's flow: requests, errors, statuses, sizes, durations, latencies. */
void netreport__flow_exchange(struct netreport *r, const struct netreport_conn *c, const struct l7_record *rec);

/*
 * Offers exchange x to the report's list: an even sample of the window's
 * exchanges (up to max_exchanges, each kept with the same chance: a busy
 * window is not listed by its first seconds only) and, besides, its
 * NETREPORT_SLOWEST slowest answered ones.  A kept x is copied with its
 * peer_address, and its fields are rec's (names static, values copied); its
 * other strings must be static.  Returns how many exchanges the list lost
 * by it (0-2: x itself, or the ones it displaced); every offered exchange
 * is listed or counted so (exchanges_not_listed).
 */
unsigned netreport__list_exchange(struct netreport *r, const Ember__NetExchange *x, const struct l7_record *rec);

/*
 * Lists connection m, ended in the window, and adds its losses to the
 * window's counters (those whether listed or not): m is copied with its
 * process_name, local_address and remote_address; its other strings must
 * be static.  false: not listed (over the bound, or no memory).
 */
bool netreport__list_connection(struct netreport *r, const Ember__NetConnection *m);

/* "client" or "server" (static), as the messages name a side. */
const char *netreport__side_name(uint8_t side);

/* n TLS plaintext calls of the task's processes were tied to no connection. */
void netreport__tls_unbound(struct netreport *r, uint64_t n);

struct netreport_publish {
	struct publisher *pub;
	const struct task_def *def;
	struct sampler *sampler;      /* the sampled traces the first part carries, reset after; NULL: none */
	uint64_t now_unix_ns;         /* the window's end, the next one's start */
	bool last;                    /* the task's last report (NetworkBatch.last on its last part) */
	bool monitor;                 /* a monitor's capture: nothing goes out, the flows are let go */
	size_t part_items;            /* connections + exchanges per part */
	void (*drain)(void *ctx);     /* optional: between parts (netprof_opts.drain) */
	void *ctx;
};

/*
 * Publishes the report: the first part carries the flows, the sampled
 * traces and the window's counters, which are then let go; every part a
 * share of the listed connections, then exchanges.  Returns the number of
 * NetworkBatch messages published.
 */
unsigned netreport__publish(struct netreport *r, const struct netreport_publish *p);

/* Its lists and flows.  Accepts NULL.  Returns NULL. */
struct netreport *netreport__free(struct netreport *r);

#endif
