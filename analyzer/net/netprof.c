#include "analyzer/net/netprof.h"

#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "l7/l7_conn.h"
#include "analyzer/net/conntrack.h"
#include "analyzer/net/sampler.h"
#include "bpf/ember_abi.h"
#include "bpf/net_abi.h"
#include "common/net_hist.h"
#include "common/timeutil.h"

#define MAX_TASKS 64
#define FLOW_BUCKETS 256
#define MAX_STATUSES 32      /* distinct statuses per flow and report; the rest count as -1 */
#define MAX_LOCAL_ADDRS 64
/* Followed children: bounded like the BPF side's target table (max_targets, 1024 by default). */
#define MAX_CHILDREN 4096
#define TLS_OBJ_SLOTS 4096   /* direct-mapped: a collision forgets an older binding, the thread's I/O rebinds */
#define TLS_TID_SLOTS 1024
#define ARENA_CHUNK (64 * 1024)
#define EPHEMERAL_MIN 32768  /* Linux's default ip_local_port_range starts here */

enum side { SIDE_CLIENT = 0, SIDE_SERVER = 1 };
enum { NC_WRITE, NC_READ, NC_RTT, NC_CONNECT, NC_CLOSE, NC_MAX };

/* One kind of call over a report: flows keep 64-bit buckets, connections 32-bit. */
struct calls {
	uint64_t count, bytes, time;
	uint64_t hist[NET_L4_BUCKETS];
};
struct wcalls {
	uint64_t count, bytes, time;
	uint32_t hist[NET_L4_BUCKETS];
};

struct status_count { int32_t status; uint64_t count; };

struct flow {
	struct flow *next;
	uint32_t pid;
	char comm[16];
	uint8_t side;
	bool side_guessed;
	char peer[64];
	char local[64];         /* its first connection's local endpoint (a client's port 0) */
	bool udp;               /* its first connection's transport */
	bool ssl;               /* TLS connections (a flow of its own beside the plaintext ones) */
	bool peer_local;
	uint32_t peer_pid;
	const char *protocol;   /* a parser's name (static) or "" */
	uint32_t conns;
	struct calls l4[NC_MAX];
	uint64_t retrans, drops;
	uint64_t requests, errors, client_errors, unanswered;
	struct status_count st[MAX_STATUSES];
	unsigned nst;
	uint64_t req_bytes, resp_bytes;
	uint64_t req_size[NET_SIZE_BUCKETS], resp_size[NET_SIZE_BUCKETS], dur[NET_DURATION_BUCKETS];
	uint64_t dur_sum, lat_sum;
	uint32_t *sketch;       /* NET_SKETCH_BUCKETS, allocated at the first answered exchange */
};

/* Bump allocator for one report's messages: freed all at once after publishing. */
struct arena_chunk { struct arena_chunk *next; size_t used, size; _Alignas(16) uint8_t data[]; };

struct ntask {
	bool used;
	char id[TASK_ID_LEN];
	const struct task_def *def;  /* the task manager's, valid until netprof__close */
	uint64_t report_ms, next_ms;
	uint64_t win_start_ns;       /* unix */
	uint64_t gen;                /* report number: cached flow pointers of older reports are stale */
	struct flow *flows[FLOW_BUCKETS];
	size_t nflows;
	Ember__NetExchange **ex;     /* grows as exchanges are listed, up to opts.max_exchanges */
	size_t nex, cap_ex;
	uint64_t ex_not_listed;
	Ember__NetConnection **cl;
	size_t ncl, cap_cl;
	uint64_t cl_not_listed;
	uint64_t calls_lost, exchanges_lost, gap_bytes, conns_lossy; /* of the connections ended in the window */
	uint64_t tls_unprobed;
	uint64_t tls_unbound;        /* TLS plaintext events of its processes tied to no connection */
	struct arena_chunk *arena;
	uint64_t total_exchanges, total_conns;
	struct sampler *sampler;     /* HTTP sampling rules, NULL when the task has none */
	struct l7_config cfg_tcp, cfg_udp; /* the parsers' limits, bodies kept for its sampling rules */
	bool monitor;                /* a monitor's capture: exchanges go to opts.exchange only */
	bool calls;                  /* its sampled traces carry their calls (task_def__wants_calls) */
	bool closing;                /* its last report is going out: records drained meanwhile are past its end */
};

/*
 * A report taken from its task, its lists and the arena that holds their
 * messages: it is published part by part while records drained between the
 * parts fill the task's next report.
 */
struct nreport {
	Ember__NetExchange **ex;
	size_t nex;
	Ember__NetConnection **cl;
	size_t ncl;
	struct arena_chunk *arena;
};

/*
 * The latest data calls of a connection, for the calls behind a sampled
 * exchange (only for tasks that want them): a ring, so bounded.
 */
#define CALL_RING SAMPLER_MAX_CALLS
struct dcall {
	uint64_t ts, end;            /* monotonic: entry, exit */
	uint32_t pkts, pkt_bytes, ifindex, srtt_us;
	uint16_t nr;                 /* syscall number; TLS calls: enum net_tls_fn */
	uint16_t op;                 /* NET_OP_READ, _WRITE, _TLS_READ, _TLS_WRITE */
};
struct dcalls {
	unsigned head, n;
	struct dcall c[CALL_RING];
};

/* What netprof keeps per connection (net_conn.user). */
struct cstate {
	struct netprof *np;
	struct net_conn *nc;
	struct ntask *task;
	char comm[16];
	uint8_t feed_side;        /* the side the parser's directions were set from */
	bool side_guessed;
	bool peer_local;
	uint32_t peer_pid;
	uint32_t peer_across;     /* the peer process as the collector knows it, followed by another analyzer */
	struct l7_conn *l7;
	/*
	 * TLS: the socket carries records (seen on the wire, or its library's
	 * plaintext arrived); its syscalls' data is never parsed, the plaintext
	 * from the TLS probes is.
	 */
	bool tls;
	bool tls_plain;           /* plaintext has reached the parser */
	uint64_t tls_reads, tls_writes;
	uint64_t opened_unix_ns;
	uint64_t writes, reads, bytes_written, bytes_read, exchanges, gaps, gap_bytes, retrans, drops, srtt_us;
	uint64_t calls_lost;      /* net_event.lost_events of its events */
	bool tls_unprobed;        /* moved data before the process's TLS probes (note_tls_unprobed()) */
	bool tls_pending;         /* ... read while the process had no probes yet */
	uint32_t turn;            /* the latest net_event.turn (NET_TURN_*) */
	struct wcalls w[NC_MAX];
	uint64_t w_retrans, w_drops;
	bool w_active;
	struct flow *flow;        /* cached for the report gen flow_gen */
	uint64_t flow_gen;
	struct dcalls *dc;        /* task->calls: its latest data calls, allocated at the first */
};

struct netprof {
	struct netprof_opts o;
	struct l7_config cfg_tcp, cfg_udp;
	struct conntrack *ct;
	struct ntask tasks[MAX_TASKS];
	struct l7_stats l7st;
	uint64_t st[NPS_MAX];
	int64_t mono_to_unix;     /* unix ns = monotonic ns + this */
	struct net_endpoint local_addrs[MAX_LOCAL_ADDRS];
	unsigned nlocal;
	uint64_t last_age_ms;
	/* Children of target processes (NET_OP_FORK) and the process their task named. */
	struct { uint32_t child, root; } children[MAX_CHILDREN];
	unsigned nchildren;
	/* TLS plaintext without a socket: the socket of its library object, else of its thread's last I/O. */
	struct { uint32_t tgid; uint64_t obj, ino; } tls_objs[TLS_OBJ_SLOTS];
	struct { uint32_t tid, tgid; uint64_t ino; } tls_tids[TLS_TID_SLOTS];
};

const struct counter_def netprof_counters[NPS_MAX] = {
	[NPS_RECORDS] = { .name = "net_records" },
	[NPS_BAD_RECORDS] = { .name = "net_bad_records" },
	[NPS_NO_TASK] = { .name = "net_records_no_task" },
	[NPS_CONNECTIONS] = { .name = "net_connections" },
	[NPS_TABLE_FULL] = { .name = "net_connection_table_full_drops" },
	[NPS_AGED] = { .name = "net_connections_aged_out" },
	[NPS_UNKNOWN_CLOSES] = { .name = "net_closes_unknown_socket" },
	[NPS_LOST_EVENTS] = { .name = "net_events_lost_upstream" },
	[NPS_GAPS] = { .name = "net_parser_gaps" },
	[NPS_GAP_BYTES] = { .name = "net_parser_gap_bytes" },
	[NPS_EXCHANGES] = { .name = "net_exchanges" },
	[NPS_EXCHANGES_NOT_LISTED] = { .name = "net_exchanges_not_listed" },
	[NPS_CONNS_NOT_LISTED] = { .name = "net_connections_not_listed" },
	[NPS_UNDETECTED] = { .name = "net_connections_undetected" },
	[NPS_UNPARSEABLE] = { .name = "net_connections_unparseable" },
	[NPS_PARSER_DROPPED] = { .name = "net_parser_dropped_messages" },
	[NPS_BATCHES] = { .name = "net_batches" },
	[NPS_CHILDREN] = { .name = "net_children_followed" },
	[NPS_CHILDREN_FULL] = { .name = "net_children_table_full" },
	[NPS_TLS_EVENTS] = { .name = "net_tls_events" },
	[NPS_TLS_UNBOUND] = { .name = "net_tls_events_unbound" },
	[NPS_TLS_CONNECTIONS] = { .name = "net_tls_connections" },
	[NPS_CALLS_NOMEM] = { .name = "net_sampled_calls_nomem" },
	[NPS_TLS_UNPROBED] = { .name = "net_tls_connections_unprobed" },
};

const char *netprof__stat_name(unsigned stat)
{
	return stat < NPS_MAX ? netprof_counters[stat].name : "unknown";
}

void netprof__stats(const struct netprof *np, uint64_t ret[NPS_MAX])
{
	memcpy(ret, np->st, sizeof(np->st));
	ret[NPS_UNDETECTED] = np->l7st.undetected;
	ret[NPS_UNPARSEABLE] = np->l7st.unparseable + np->l7st.over_memory;
	ret[NPS_PARSER_DROPPED] = np->l7st.parser_dropped;
}

/* ---- arena ---------------------------------------------------------------------------- */

static void *arena_alloc(struct ntask *t, size_t size)
{
	struct arena_chunk *c = t->arena;

	size = (size + 15) & ~(size_t)15;
	if (!c || c->used + size > c->size) {
		size_t cap = size > ARENA_CHUNK ? size : ARENA_CHUNK;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->size = cap;
		c->used = 0;
		c->next = t->arena;
		t->arena = c;
	}
	c->used += size;
	return memset(c->data + c->used - size, 0, size);
}

static char *arena_str(struct ntask *t, const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = arena_alloc(t, n);

	return d ? memcpy(d, s, n) : (char *)"";
}

static void arena_free(struct arena_chunk **a)
{
	while (*a) {
		struct arena_chunk *n = (*a)->next;
		free(*a);
		*a = n;
	}
}

/* A list of message pointers with room for one more, up to max of them; NULL when full or out of memory. */
static void *list_room(void *list, size_t n, size_t *cap, size_t max)
{
	size_t c = *cap ? *cap * 2 : 1024;
	void *l;

	if (n < *cap)
		return list;
	if (n >= max)
		return NULL;
	if (c > max)
		c = max;
	l = realloc(list, c * sizeof(void *));
	if (l)
		*cap = c;
	return l;
}

/* ---- clocks and addresses ------------------------------------------------------------- */

static void refresh_clock(struct netprof *np)
{
	np->mono_to_unix = (int64_t)timeutil__now_ns(CLOCK_REALTIME) - (int64_t)timeutil__now_ns(CLOCK_MONOTONIC);
}

/* Unsigned: a timestamp from a hostile record may be anything, and wrapping is defined there. */
static uint64_t to_unix(const struct netprof *np, uint64_t mono)
{
	return mono + (uint64_t)np->mono_to_unix;
}

/* The host's addresses: a peer there is "local" (Rover's <peer>_local). */
static void refresh_local_addrs(struct netprof *np)
{
	struct ifaddrs *ifa, *i;

	np->nlocal = 0;
	if (getifaddrs(&ifa))
		return;
	for (i = ifa; i && np->nlocal < MAX_LOCAL_ADDRS; i = i->ifa_next) {
		struct net_endpoint *ep = &np->local_addrs[np->nlocal];

		if (!i->ifa_addr)
			continue;
		memset(ep, 0, sizeof(*ep));
		if (i->ifa_addr->sa_family == AF_INET) {
			ep->family = AF_INET;
			memcpy(ep->addr, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			ep->family = AF_INET6;
			memcpy(ep->addr, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
		} else {
			continue;
		}
		np->nlocal++;
	}
	freeifaddrs(ifa);
}

static bool is_local(const struct netprof *np, const struct net_endpoint *ep)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	if (net_endpoint__is_loopback(ep))
		return true;
	for (unsigned i = 0; i < np->nlocal; i++) {
		const struct net_endpoint *l = &np->local_addrs[i];

		if (l->family == ep->family && !memcmp(l->addr, ep->addr, 16))
			return true;
		if (l->family == AF_INET && ep->family == AF_INET6 && !memcmp(ep->addr, v4mapped, 12) &&
		    !memcmp(ep->addr + 12, l->addr, 4))
			return true;
	}
	return false;
}

/* ---- life cycle ----------------------------------------------------------------------- */

struct netprof *netprof__new(const struct netprof_opts *o)
{
	struct netprof *np = calloc(1, sizeof(*np));

	if (!np)
		return NULL;
	np->o = *o;
	np->cfg_tcp = o->l7;
	np->cfg_tcp.transport = L7_TRANSPORT_TCP;
	np->cfg_udp = o->l7;
	np->cfg_udp.transport = L7_TRANSPORT_UDP;
	np->ct = conntrack__new(o->max_connections);
	if (!np->ct) {
		free(np);
		return NULL;
	}
	refresh_clock(np);
	refresh_local_addrs(np);
	return np;
}

static void flows_free(struct ntask *t)
{
	for (unsigned b = 0; b < FLOW_BUCKETS; b++)
		while (t->flows[b]) {
			struct flow *n = t->flows[b]->next;
			free(t->flows[b]->sketch);
			free(t->flows[b]);
			t->flows[b] = n;
		}
	t->nflows = 0;
}

/* Takes t's lists, their arena and its counters of the window: the task starts its next report. */
static void report_take(struct ntask *t, struct nreport *r)
{
	*r = (struct nreport){ .ex = t->ex, .nex = t->nex, .cl = t->cl, .ncl = t->ncl, .arena = t->arena };
	t->ex = NULL;
	t->cl = NULL;
	t->arena = NULL;
	t->nex = t->cap_ex = t->ncl = t->cap_cl = 0;
	t->ex_not_listed = t->cl_not_listed = 0;
	t->calls_lost = t->exchanges_lost = t->gap_bytes = t->conns_lossy = t->tls_unprobed = 0;
	t->tls_unbound = 0;
}

static void report_release(struct nreport *r)
{
	arena_free(&r->arena);
	free(r->ex);
	free(r->cl);
	*r = (struct nreport){ 0 };
}

/* The flows and sampled traces of the report are published: the next report starts its own. */
static void task_reset_flows(struct ntask *t)
{
	flows_free(t);
	if (t->sampler)
		sampler__reset(t->sampler);
	t->gen++;
}

static void task_reset_report(struct ntask *t)
{
	struct nreport r;

	report_take(t, &r);
	report_release(&r);
	task_reset_flows(t);
}

static void cstate_drop(struct netprof *np, struct cstate *cs)
{
	l7_conn__free(cs->l7);
	conntrack__remove(np->ct, cs->nc);
	free(cs->dc);
	free(cs);
}

struct netprof *netprof__free(struct netprof *np)
{
	if (!np)
		return NULL;
	for (struct net_conn *c = conntrack__oldest(np->ct), *n; c; c = n) {
		n = c->newer;
		cstate_drop(np, c->user);
	}
	for (unsigned i = 0; i < MAX_TASKS; i++) {
		task_reset_report(&np->tasks[i]);
		np->tasks[i].sampler = sampler__free(np->tasks[i].sampler);
	}
	conntrack__free(np->ct);
	free(np);
	return NULL;
}

int netprof__open(struct netprof *np, const struct task_def *def)
{
	struct ntask *t = NULL;

	for (unsigned i = 0; i < MAX_TASKS && !t; i++)
		if (!np->tasks[i].used)
			t = &np->tasks[i];
	if (!t)
		return -ENOSPC;
	/* A free slot's lists went with its last report (report_take): nothing to free. */
	memset(t, 0, sizeof(*t));
	if (def->nsamplings && !(t->sampler = sampler__new(def)))
		return -errno;
	t->cfg_tcp = np->cfg_tcp;
	t->cfg_udp = np->cfg_udp;
	t->cfg_tcp.max_body_len = sampler__body_limit(t->sampler);
	t->used = true;
	t->monitor = task_def__is_monitor(def);
	t->calls = t->sampler && task_def__wants_calls(def);
	t->def = def;
	snprintf(t->id, sizeof(t->id), "%s", def->id);
	t->report_ms = def->report_interval_ms ? def->report_interval_ms : np->o.default_report_ms;
	if (!t->report_ms)
		t->report_ms = 2000;
	t->next_ms = timeutil__unix_ms() + t->report_ms;
	t->win_start_ns = timeutil__now_ns(CLOCK_REALTIME);
	return 0;
}

static int child_index(const struct netprof *np, uint32_t child)
{
	for (unsigned i = 0; i < np->nchildren; i++)
		if (np->children[i].child == child)
			return (int)i;
	return -1;
}

/* The task that wants tgid: one that named it, or the one that named the process it was forked from. */
static struct ntask *task_of_pid(struct netprof *np, uint32_t tgid)
{
	struct task_def *def = task_mgr__find_pid(np->o.tm, tgid, EMBER_TASK_NETWORK);
	int c;

	if (!def && (c = child_index(np, tgid)) >= 0)
		def = task_mgr__find_pid(np->o.tm, np->children[c].root, EMBER_TASK_NETWORK);

	if (!def)
		return NULL;
	for (unsigned i = 0; i < MAX_TASKS; i++)
		if (np->tasks[i].used && !np->tasks[i].closing && !strcmp(np->tasks[i].id, def->id))
			return &np->tasks[i];
	return NULL;
}

/* ---- flows ---------------------------------------------------------------------------- */

static uint8_t side_of(const struct cstate *cs)
{
	bool swapped = cs->l7 && l7_conn__swapped(cs->l7);

	return swapped ? (uint8_t)!cs->feed_side : cs->feed_side;
}

static const char *protocol_of(const struct cstate *cs)
{
	const struct l7_parser_ops *ops = cs->l7 ? l7_conn__parser(cs->l7) : NULL;

	return ops ? ops->name : "";
}

/* The peer of a flow: a server peer by address and port, a client peer by address alone
 * (its port is ephemeral: one series per connection would grow without bound). */
static void peer_label(const struct cstate *cs, uint8_t side, char *buf, size_t len)
{
	struct net_endpoint p = cs->nc->peer;

	if (side == SIDE_SERVER)
		p.port = 0;
	net_endpoint__str(&p, buf, len);
}

/* The other end, when it is a process this analyzer follows too. */
static void link_peer(struct netprof *np, struct cstate *cs)
{
	struct net_conn *o;

	if (cs->peer_pid || !cs->peer_local || cs->nc->udp)
		return;
	/* Its local endpoint is our peer and its peer is us: the same connection, seen from there. */
	o = conntrack__by_local(np->ct, &cs->nc->peer);
	if (o && !memcmp(&o->peer, &cs->nc->local, sizeof(o->peer)))
		cs->peer_pid = o->tgid;
	else if (cs->peer_across)
		cs->peer_pid = cs->peer_across;  /* its analyzer is another: the collector saw both ends */
}

static struct flow *flow_of(struct netprof *np, struct ntask *t, struct cstate *cs)
{
	uint8_t side = side_of(cs);
	const char *proto = protocol_of(cs);
	char peer[64];
	uint64_t h = 1469598103934665603ull;
	struct flow *f;

	link_peer(np, cs);
	f = cs->flow;
	if (f && cs->flow_gen == t->gen && f->side == side && f->protocol == proto && f->peer_pid == cs->peer_pid &&
	    f->ssl == cs->tls)
		return f;
	peer_label(cs, side, peer, sizeof(peer));
	for (const char *c = peer; *c; c++)
		h = (h ^ (uint8_t)*c) * 1099511628211ull;
	h = (h ^ cs->nc->tgid ^ ((uint64_t)side << 40) ^ ((uint64_t)cs->peer_pid << 20) ^ ((uint64_t)cs->tls << 60)) *
	    1099511628211ull;
	for (const char *c = proto; *c; c++)
		h = (h ^ (uint8_t)*c) * 1099511628211ull;
	h &= FLOW_BUCKETS - 1;
	for (f = t->flows[h]; f; f = f->next)
		if (f->pid == cs->nc->tgid && f->side == side && f->peer_pid == cs->peer_pid && f->ssl == cs->tls &&
		    !strcmp(f->protocol, proto) && !strcmp(f->peer, peer))
			break;
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f)
			return NULL;
		f->pid = cs->nc->tgid;
		memcpy(f->comm, cs->comm, sizeof(f->comm));
		f->side = side;
		f->side_guessed = cs->side_guessed;
		snprintf(f->peer, sizeof(f->peer), "%s", peer);
		{
			struct net_endpoint l = cs->nc->local;

			if (side != SIDE_SERVER)
				l.port = 0;
			net_endpoint__str(&l, f->local, sizeof(f->local));
		}
		f->udp = cs->nc->udp;
		f->ssl = cs->tls;
		f->peer_local = cs->peer_local;
		f->peer_pid = cs->peer_pid;
		f->protocol = proto;
		f->next = t->flows[h];
		t->flows[h] = f;
		t->nflows++;
	}
	cs->flow = f;
	cs->flow_gen = t->gen;
	return f;
}

/* A connection's calls of the report into its flow. */
static void fold(struct netprof *np, struct cstate *cs)
{
	struct flow *f;

	if (!cs->w_active)
		return;
	f = flow_of(np, cs->task, cs);
	if (f) {
		for (unsigned k = 0; k < NC_MAX; k++) {
			f->l4[k].count += cs->w[k].count;
			f->l4[k].bytes += cs->w[k].bytes;
			f->l4[k].time += cs->w[k].time;
			for (unsigned b = 0; b < NET_L4_BUCKETS; b++)
				f->l4[k].hist[b] += cs->w[k].hist[b];
		}
		f->retrans += cs->w_retrans;
		f->drops += cs->w_drops;
		f->conns++;
	}
	memset(cs->w, 0, sizeof(cs->w));
	cs->w_retrans = cs->w_drops = 0;
	cs->w_active = false;
}

static void flow_status(struct flow *f, int32_t status)
{
	unsigned i;

	for (i = 0; i < f->nst; i++)
		if (f->st[i].status == status)
			break;
	if (i == f->nst) {
		if (f->nst == MAX_STATUSES) {
			status = -1;   /* other */
			for (i = 0; i < f->nst && f->st[i].status != -1; i++)
				;
			if (i == f->nst)
				i = f->nst - 1;
		} else {
			f->nst++;
		}
		f->st[i].status = status;
	}
	f->st[i].count++;
}

static void flow_exchange(struct flow *f, const struct l7_record *r)
{
	uint64_t lat = l7_record__latency_ns(r), dur = l7_record__duration_ns(r);

	if (r->has_request)
		f->requests++;
	if (r->has_request && !r->has_response)
		f->unanswered++;
	f->errors += r->is_error;
	f->client_errors += r->is_client_error;
	if (r->has_response && r->status >= 0)
		flow_status(f, r->status);
	f->req_bytes += r->req_bytes;
	f->resp_bytes += r->resp_bytes;
	if (r->has_request)
		f->req_size[net_hist__index(net_hist__size_bounds, NET_SIZE_BUCKETS, r->req_bytes)]++;
	if (r->has_response)
		f->resp_size[net_hist__index(net_hist__size_bounds, NET_SIZE_BUCKETS, r->resp_bytes)]++;
	if (!(r->has_request && r->has_response))
		return;
	f->dur[net_hist__index(net_hist__duration_bounds, NET_DURATION_BUCKETS, dur / 1000000)]++;
	f->dur_sum += dur;
	f->lat_sum += lat;
	if (!f->sketch)
		f->sketch = calloc(NET_SKETCH_BUCKETS, sizeof(*f->sketch));
	if (f->sketch)
		f->sketch[net_hist__sketch_index(lat)]++;
}

/* ---- exchanges and connections as messages ------------------------------------------- */

static const char *side_name(uint8_t side)
{
	return side == SIDE_SERVER ? "server" : "client";
}

static void list_exchange(struct netprof *np, struct cstate *cs, const struct l7_record *r)
{
	struct ntask *t = cs->task;
	Ember__NetExchange *x, **l = list_room(t->ex, t->nex, &t->cap_ex, np->o.max_exchanges);
	char peer[64];

	if (l)
		t->ex = l;
	if (!l || !(x = arena_alloc(t, sizeof(*x)))) {
		t->ex_not_listed++;
		np->st[NPS_EXCHANGES_NOT_LISTED]++;
		return;
	}
	ember__net_exchange__init(x);
	x->pid = cs->nc->tgid;
	x->connection_id = cs->nc->id;
	x->protocol = (char *)r->protocol;
	x->side = (char *)side_name(side_of(cs));
	x->peer_address = arena_str(t, net_endpoint__str(&cs->nc->peer, peer, sizeof(peer)));
	x->req_unix_ns = r->req_ts_ns ? to_unix(np, r->req_ts_ns) : 0;
	x->latency_ns = l7_record__latency_ns(r);
	x->duration_ns = l7_record__duration_ns(r);
	x->req_bytes = r->req_bytes;
	x->resp_bytes = r->resp_bytes;
	x->status = r->status;
	x->is_error = r->is_error;
	x->is_client_error = r->is_client_error;
	x->answered = r->has_request && r->has_response;
	x->req_seq = r->req_seq;
	x->ssl = cs->tls;
	x->fields = arena_alloc(t, r->nfields * sizeof(*x->fields) + 1);
	for (unsigned i = 0; x->fields && i < r->nfields; i++) {
		Ember__Label *l = arena_alloc(t, sizeof(*l));

		if (!l)
			break;
		ember__label__init(l);
		l->name = (char *)r->fields[i].key;
		l->value = arena_str(t, r->fields[i].val);
		x->fields[x->n_fields++] = l;
	}
	t->ex[t->nex++] = x;
}

/* A data call of the connection, for the calls behind its sampled exchanges. */
static void record_call(struct netprof *np, struct cstate *cs, const struct net_event *e)
{
	struct dcall *d;

	if (!cs->task || !cs->task->calls)
		return;
	if (!cs->dc && !(cs->dc = calloc(1, sizeof(*cs->dc)))) {
		np->st[NPS_CALLS_NOMEM]++;
		return;
	}
	d = &cs->dc->c[cs->dc->head];
	cs->dc->head = (cs->dc->head + 1) % CALL_RING;
	if (cs->dc->n < CALL_RING)
		cs->dc->n++;
	d->ts = e->ts_ns;
	d->end = e->ts_ns + e->dur_ns;
	d->pkts = e->l2_pkts;
	d->pkt_bytes = e->l2_bytes;
	d->ifindex = e->l2_ifindex;
	d->srtt_us = e->srtt_us;
	d->nr = e->syscall;
	d->op = e->op;
}

static bool is_tls_op(uint16_t op)
{
	return op == NET_OP_TLS_READ || op == NET_OP_TLS_WRITE;
}

static bool is_write_op(uint16_t op)
{
	return op == NET_OP_WRITE || op == NET_OP_TLS_WRITE;
}

/* Rover's names of the functions that move a connection's data (SocketFunctionName). */
static const char *call_name(const struct dcall *d)
{
	bool w = is_write_op(d->op);

	if (is_tls_op(d->op))
		return d->nr == NET_TLS_GO_WRITE || d->nr == NET_TLS_GO_READ ? (w ? "GoTLSWrite" : "GoTLSRead")
									  : (w ? "SslWrite" : "SslRead");
	switch (d->nr) {
	case SYS_read: return "Read";
	case SYS_write: return "Write";
	case SYS_readv: return "Readv";
	case SYS_writev: return "Writev";
	case SYS_sendto: return "Sendto";
	case SYS_recvfrom: return "Recvfrom";
	case SYS_sendmsg: return "SendMsg";
	case SYS_recvmsg: return "RecvMsg";
	case SYS_sendmmsg: return "SendMMSg";
	case SYS_recvmmsg: return "RecvMMsg";
	case SYS_sendfile: return "SendFile";
	default: return w ? "Write" : "Read";
	}
}

/*
 * The calls that moved the exchange's bytes: those whose data reached the
 * parser from the request's first byte to the response's last (a write at
 * its entry, a read at its exit, as data_call feeds them).  On a TLS
 * connection the library's calls, each with the packets of the syscalls
 * under it.  Oldest first; returns how many.
 */
static unsigned calls_of(const struct netprof *np, const struct cstate *cs, const struct l7_record *r,
			 struct sampler_call *out)
{
	const struct dcalls *dc = cs->dc;
	uint64_t from = r->req_ts_ns, to = r->resp_ts_ns;
	unsigned n = 0;

	if (!dc || !from || to < from)
		return 0;
	for (unsigned i = 0; i < dc->n; i++) {
		const struct dcall *d = &dc->c[(dc->head + CALL_RING - dc->n + i) % CALL_RING];
		uint64_t at = is_write_op(d->op) ? d->ts : d->end;
		struct sampler_call *o;

		if (at < from || at > to || is_tls_op(d->op) != cs->tls)
			continue;
		o = &out[n++];
		o->start_unix_ns = to_unix(np, d->ts);
		o->end_unix_ns = to_unix(np, d->end);
		o->name = call_name(d);
		o->pkts = d->pkts;
		o->pkt_bytes = d->pkt_bytes;
		o->ifindex = d->ifindex;
		o->rtt_us = d->srtt_us;
		for (unsigned j = 0; cs->tls && j < dc->n; j++) {
			const struct dcall *w = &dc->c[(dc->head + CALL_RING - dc->n + j) % CALL_RING];

			if (is_tls_op(w->op) || w->ts < d->ts || w->end > d->end)
				continue;
			o->pkts += w->pkts;
			o->pkt_bytes += w->pkt_bytes;
			if (w->ifindex)
				o->ifindex = w->ifindex;
			if (w->srtt_us)
				o->rtt_us = w->srtt_us;
		}
	}
	return n;
}

static void offer_sample(struct netprof *np, struct cstate *cs, const struct l7_record *r)
{
	struct sampler_call calls[CALL_RING];
	char peer[64], local[64];
	struct sampler_ctx c = {
		.pid = cs->nc->tgid,
		.process_name = cs->comm,
		.connection_id = cs->nc->id,
		.side = side_name(side_of(cs)),
		.peer = net_endpoint__str(&cs->nc->peer, peer, sizeof(peer)),
		.local = net_endpoint__str(&cs->nc->local, local, sizeof(local)),
		.req_unix_ns = r->req_ts_ns ? to_unix(np, r->req_ts_ns) : 0,
		.peer_local = cs->peer_local,
		.ssl = cs->tls,
	};

	link_peer(np, cs);
	c.peer_pid = cs->peer_pid;
	c.ncalls = calls_of(np, cs, r, calls);
	c.calls = calls;
	sampler__offer(cs->task->sampler, r, &c);
}

static void on_exchange(void *ctx, const struct l7_record *r)
{
	struct cstate *cs = ctx;
	struct netprof *np = cs->np;
	struct flow *f;

	np->st[NPS_EXCHANGES]++;
	cs->exchanges++;
	cs->task->total_exchanges++;
	if (np->o.exchange && side_of(cs) == SIDE_SERVER)
		np->o.exchange(np->o.ctx, cs->nc->tgid, r);
	if (cs->task->monitor)
		return;
	f = flow_of(np, cs->task, cs);
	if (f)
		flow_exchange(f, r);
	list_exchange(np, cs, r);
	if (cs->task->sampler && !strcmp(r->protocol, "http1"))
		offer_sample(np, cs, r);
}

static const char *l7_state_name(const struct cstate *cs, enum l7_conn_state before)
{
	if (!cs->l7)
		return "none";
	if (before == L7_CONN_UNPARSEABLE)
		return "unparseable";
	return l7_conn__parser(cs->l7) ? "parsed" : "undetected";
}

/*
 * The turns in the request direction up to the latest the kernel counted:
 * turns alternate in direction, the latest's is known.
 */
static uint64_t request_turns(const struct cstate *cs)
{
	uint64_t n = cs->turn & NET_TURN_MASK;
	bool last_write = cs->turn & NET_TURN_WRITE, req_write = side_of(cs) == SIDE_CLIENT;

	return last_write == req_write ? (n + 1) / 2 : n / 2;
}

/* A connection that waited for its process's probes: counted if it has them now, or ended without. */
static void settle_tls_pending(struct netprof *np, struct cstate *cs)
{
	if (!cs->tls_pending || !np->o.tls_ready_ns || !np->o.tls_ready_ns(np->o.ctx, cs->nc->tgid))
		return;
	cs->tls_pending = false;
	if (!cs->tls_unprobed) {
		cs->tls_unprobed = true;
		np->st[NPS_TLS_UNPROBED]++;
	}
}

/*
 * Exchanges a connection lost with its data: the requests the kernel counted
 * that no exchange answers.  Only where that holds: TCP (a datagram socket's
 * turns mix its peers), not TLS (turns of ciphertext), parsed, and data lost.
 */
static uint64_t exchanges_lost(const struct cstate *cs, uint64_t req_turns)
{
	if (cs->nc->udp || cs->tls || !cs->l7 || !l7_conn__parser(cs->l7) || (!cs->calls_lost && !cs->gaps))
		return 0;
	return req_turns > cs->exchanges ? req_turns - cs->exchanges : 0;
}

static void list_connection(struct netprof *np, struct cstate *cs, uint64_t closed_unix_ns, const char *l7_state)
{
	struct ntask *t = cs->task;
	Ember__NetConnection *m, **l;
	uint64_t req_turns = request_turns(cs), ex_lost = exchanges_lost(cs, req_turns);
	char buf[64];

	t->calls_lost += cs->calls_lost;
	t->exchanges_lost += ex_lost;
	t->gap_bytes += cs->gap_bytes;
	settle_tls_pending(np, cs);
	t->tls_unprobed += cs->tls_unprobed;
	t->conns_lossy += cs->calls_lost || ex_lost || cs->tls_unprobed;
	/* Connections closed in a report: bounded like its exchanges, and at least 1000. */
	l = list_room(t->cl, t->ncl, &t->cap_cl, np->o.max_exchanges > 1000 ? np->o.max_exchanges : 1000);
	if (l)
		t->cl = l;
	if (!l || !(m = arena_alloc(t, sizeof(*m)))) {
		t->cl_not_listed++;
		np->st[NPS_CONNS_NOT_LISTED]++;
		return;
	}
	ember__net_connection__init(m);
	m->pid = cs->nc->tgid;
	m->process_name = arena_str(t, cs->comm);
	m->id = cs->nc->id;
	m->side = (char *)side_name(side_of(cs));
	m->side_guessed = cs->side_guessed;
	m->local_address = arena_str(t, net_endpoint__str(&cs->nc->local, buf, sizeof(buf)));
	m->remote_address = arena_str(t, net_endpoint__str(&cs->nc->peer, buf, sizeof(buf)));
	m->remote_local = cs->peer_local;
	m->remote_pid = cs->peer_pid;
	m->transport = (char *)(cs->nc->udp ? "udp" : "tcp");
	m->protocol = (char *)protocol_of(cs);
	m->l7_state = (char *)l7_state;
	m->opened_unix_ns = cs->opened_unix_ns;
	m->closed_unix_ns = closed_unix_ns;
	m->writes = cs->writes;
	m->reads = cs->reads;
	m->bytes_written = cs->bytes_written;
	m->bytes_read = cs->bytes_read;
	m->exchanges = cs->exchanges;
	m->gaps = cs->gaps;
	m->gap_bytes = cs->gap_bytes;
	m->retransmits = cs->retrans;
	m->drops = cs->drops;
	m->srtt_us = cs->srtt_us;
	m->ssl = cs->tls;
	m->tls_reads = cs->tls_reads;
	m->tls_writes = cs->tls_writes;
	m->calls_lost = cs->calls_lost;
	m->request_turns = req_turns;
	m->exchanges_lost = ex_lost;
	m->tls_unprobed = cs->tls_unprobed;
	t->cl[t->ncl++] = m;
}

/* The connection ends in the books: its parser finishes, its calls go to its flow, it is listed. */
static void conn_end(struct netprof *np, struct cstate *cs, uint64_t now_mono, bool closed)
{
	enum l7_conn_state before = cs->l7 ? l7_conn__state(cs->l7) : L7_CONN_DETECTING;

	if (cs->l7)
		l7_conn__finish(cs->l7, now_mono);
	fold(np, cs);
	list_connection(np, cs, closed ? to_unix(np, now_mono) : 0, l7_state_name(cs, before));
	cstate_drop(np, cs);
}

/* ---- reports -------------------------------------------------------------------------- */

static Ember__NetCalls *calls_msg(struct ntask *t, struct calls *c)
{
	Ember__NetCalls *m = arena_alloc(t, sizeof(*m));

	if (!m)
		return NULL;
	ember__net_calls__init(m);
	m->count = c->count;
	m->bytes = c->bytes;
	m->time_ns = c->time;
	if (c->count) {
		m->n_hist = NET_L4_BUCKETS;
		m->hist = c->hist;
	}
	return m;
}

static Ember__NetFlow *flow_msg(struct ntask *t, struct flow *f)
{
	Ember__NetFlow *m = arena_alloc(t, sizeof(*m));

	if (!m)
		return NULL;
	ember__net_flow__init(m);
	m->pid = f->pid;
	m->process_name = arena_str(t, f->comm);
	m->side = (char *)side_name(f->side);
	m->side_guessed = f->side_guessed;
	m->peer_address = f->peer;
	m->local_address = f->local;
	m->transport = f->udp ? "udp" : "tcp";
	m->peer_local = f->peer_local;
	m->peer_pid = f->peer_pid;
	m->protocol = (char *)f->protocol;
	m->ssl = f->ssl;
	m->connections = f->conns;
	m->write = calls_msg(t, &f->l4[NC_WRITE]);
	m->read = calls_msg(t, &f->l4[NC_READ]);
	m->write_rtt = calls_msg(t, &f->l4[NC_RTT]);
	m->connect = calls_msg(t, &f->l4[NC_CONNECT]);
	m->close = calls_msg(t, &f->l4[NC_CLOSE]);
	m->retransmits = f->retrans;
	m->drops = f->drops;
	m->requests = f->requests;
	m->errors = f->errors;
	m->client_errors = f->client_errors;
	m->unanswered = f->unanswered;
	m->statuses = arena_alloc(t, f->nst * sizeof(*m->statuses) + 1);
	for (unsigned i = 0; m->statuses && i < f->nst; i++) {
		Ember__StatusCount *s = arena_alloc(t, sizeof(*s));

		if (!s)
			break;
		ember__status_count__init(s);
		s->status = f->st[i].status;
		s->count = f->st[i].count;
		m->statuses[m->n_statuses++] = s;
	}
	m->req_bytes = f->req_bytes;
	m->resp_bytes = f->resp_bytes;
	if (f->requests || f->unanswered) {
		m->n_req_size_hist = NET_SIZE_BUCKETS;
		m->req_size_hist = f->req_size;
		m->n_resp_size_hist = NET_SIZE_BUCKETS;
		m->resp_size_hist = f->resp_size;
		m->n_duration_hist = NET_DURATION_BUCKETS;
		m->duration_hist = f->dur;
	}
	m->duration_sum_ns = f->dur_sum;
	m->latency_sum_ns = f->lat_sum;
	if (f->sketch) {
		unsigned n = 0;
		Ember__LatencySketch *sk = arena_alloc(t, sizeof(*sk));

		for (unsigned i = 0; i < NET_SKETCH_BUCKETS; i++)
			n += !!f->sketch[i];
		if (sk) {
			ember__latency_sketch__init(sk);
			sk->index = arena_alloc(t, n * sizeof(*sk->index));
			sk->count = arena_alloc(t, n * sizeof(*sk->count));
			for (unsigned i = 0; sk->index && sk->count && i < NET_SKETCH_BUCKETS; i++)
				if (f->sketch[i]) {
					sk->index[sk->n_index++] = i;
					sk->count[sk->n_count++] = f->sketch[i];
				}
			m->latency = sk;
		}
	}
	return m;
}

/* Part k of report r: its share of the connections, then of the exchanges, per items each. */
static void report_part(Ember__NetworkBatch *b, const struct nreport *r, uint32_t k, size_t per)
{
	size_t lo = (size_t)k * per, hi = lo + per, n = r->ncl + r->nex;
	size_t c0, c1, e0, e1;

	if (hi > n)
		hi = n;
	c0 = lo < r->ncl ? lo : r->ncl;
	c1 = hi < r->ncl ? hi : r->ncl;
	e0 = (lo > r->ncl ? lo : r->ncl) - r->ncl;
	e1 = (hi > r->ncl ? hi : r->ncl) - r->ncl;
	b->part = k;
	b->connections = c1 > c0 ? r->cl + c0 : NULL;
	b->n_connections = c1 - c0;
	b->exchanges = e1 > e0 ? r->ex + e0 : NULL;
	b->n_exchanges = e1 - e0;
}

static void publish(struct netprof *np, struct ntask *t, Ember__NetworkBatch *b)
{
	publisher__network(np->o.pub, t->def, b);
	np->st[NPS_BATCHES]++;
}

/*
 * Publishes t's report up to now; last: every connection ends first (listed
 * still open).  The report is taken from the task and goes out in parts,
 * the ring drained between them: the first part carries the flows, the
 * sampled traces and the window's counters, which are then let go; the
 * records drained meanwhile fill the task's next report, never this one.
 */
static void report(struct netprof *np, struct ntask *t, bool last)
{
	Ember__NetworkBatch b = EMBER__NETWORK_BATCH__INIT;
	uint64_t now_mono = timeutil__now_ns(CLOCK_MONOTONIC), now_unix = timeutil__now_ns(CLOCK_REALTIME);
	struct sampler_counts sc;
	size_t nf = 0, per = np->o.part_items ? np->o.part_items : NETPROF_PART_ITEMS;
	struct nreport r;
	uint32_t parts;

	/* Records drained while its last report goes out come after the task's end. */
	t->closing = last;
	for (struct net_conn *c = conntrack__oldest(np->ct), *n; c; c = n) {
		struct cstate *cs = c->user;

		n = c->newer;
		if (cs->task != t)
			continue;
		if (last)
			conn_end(np, cs, now_mono, false);
		else
			fold(np, cs);
	}
	b.flows = arena_alloc(t, t->nflows * sizeof(*b.flows) + 1);
	for (unsigned h = 0; b.flows && h < FLOW_BUCKETS; h++)
		for (struct flow *f = t->flows[h]; f; f = f->next) {
			Ember__NetFlow *m = flow_msg(t, f);
			if (m)
				b.flows[nf++] = m;
		}
	b.n_flows = nf;
	b.window_start_unix_ns = t->win_start_ns;
	b.window_end_unix_ns = now_unix;
	b.exchanges_not_listed = t->ex_not_listed;
	b.connections_not_listed = t->cl_not_listed;
	b.calls_lost = t->calls_lost;
	b.exchanges_lost = t->exchanges_lost;
	b.gap_bytes = t->gap_bytes;
	b.connections_with_loss = t->conns_lossy;
	b.tls_connections_unprobed = t->tls_unprobed;
	b.tls_calls_unbound = t->tls_unbound;
	b.n_sampled = sampler__take(t->sampler, &b.sampled, &sc);
	b.sampled_not_kept = sc.not_kept;
	b.sampled_no_trace_context = sc.no_trace;
	b.sampled_bad_trace_context = sc.bad_trace;
	report_take(t, &r);
	t->win_start_ns = now_unix;
	/* Items are bounded by twice max_exchanges (10^7): the count of parts fits. */
	parts = r.ncl + r.nex ? (uint32_t)((r.ncl + r.nex + per - 1) / per) : 1;
	b.parts = parts;
	for (uint32_t k = 0; k < parts && !t->monitor; k++) {
		if (k && np->o.drain)
			np->o.drain(np->o.ctx);
		report_part(&b, &r, k, per);
		b.last = last && k == parts - 1;
		publish(np, t, &b);
		if (k)
			continue;
		/* The flows and the sampled traces went in the first part, with the window's counters. */
		task_reset_flows(t);
		b.flows = NULL;
		b.n_flows = 0;
		b.sampled = NULL;
		b.n_sampled = 0;
		b.sampled_not_kept = b.sampled_no_trace_context = b.sampled_bad_trace_context = 0;
		b.exchanges_not_listed = b.connections_not_listed = 0;
		b.calls_lost = b.exchanges_lost = b.gap_bytes = b.connections_with_loss = 0;
		b.tls_connections_unprobed = b.tls_calls_unbound = 0;
	}
	if (t->monitor)
		task_reset_flows(t);
	report_release(&r);
}

uint64_t netprof__next_due(const struct netprof *np)
{
	uint64_t best = UINT64_MAX;

	for (unsigned i = 0; i < MAX_TASKS; i++)
		if (np->tasks[i].used && np->tasks[i].next_ms < best)
			best = np->tasks[i].next_ms;
	return best;
}

void netprof__tick(struct netprof *np, uint64_t now_ms)
{
	uint64_t now_mono = timeutil__now_ns(CLOCK_MONOTONIC);
	bool any = false;

	for (unsigned i = 0; i < MAX_TASKS; i++) {
		struct ntask *t = &np->tasks[i];

		if (!t->used || now_ms < t->next_ms)
			continue;
		any = true;
		report(np, t, false);
		/* On the grid of the task's start: a late tick does not shift later reports. */
		while (t->next_ms <= now_ms)
			t->next_ms += t->report_ms;
	}
	if (!any && now_ms - np->last_age_ms < 1000)
		return;
	np->last_age_ms = now_ms;
	refresh_clock(np);
	refresh_local_addrs(np);
	/* Ageing: connections idle for longer than the timeout (their close was never seen:
	 * the process exited, or the close was lost). */
	for (struct net_conn *c = conntrack__oldest(np->ct), *n; c; c = n) {
		n = c->newer;
		if (c->last_ns + np->o.idle_timeout_ns > now_mono)
			break;
		np->st[NPS_AGED]++;
		conn_end(np, c->user, c->last_ns, true);
	}
}

void netprof__close(struct netprof *np, const char *task_id, uint64_t *exchanges, uint64_t *connections)
{
	for (unsigned i = 0; i < MAX_TASKS; i++) {
		struct ntask *t = &np->tasks[i];

		if (!t->used || strcmp(t->id, task_id))
			continue;
		report(np, t, true);
		if (exchanges)
			*exchanges = t->total_exchanges;
		if (connections)
			*connections = t->total_conns;
		t->sampler = sampler__free(t->sampler);
		t->used = false;
		t->def = NULL;
		return;
	}
}

void netprof__discard(struct netprof *np, const char *task_id)
{
	for (unsigned i = 0; i < MAX_TASKS; i++) {
		struct ntask *t = &np->tasks[i];

		if (!t->used || strcmp(t->id, task_id))
			continue;
		for (struct net_conn *c = conntrack__oldest(np->ct), *n; c; c = n) {
			n = c->newer;
			if (((struct cstate *)c->user)->task == t)
				cstate_drop(np, c->user);
		}
		task_reset_report(t);
		t->sampler = sampler__free(t->sampler);
		t->used = false;
		t->def = NULL;
		return;
	}
}

/* ---- events --------------------------------------------------------------------------- */

static void endpoint_of(struct net_endpoint *ep, uint16_t family, const uint8_t *addr, uint16_t port)
{
	memset(ep, 0, sizeof(*ep));
	ep->family = family;
	ep->port = port;
	memcpy(ep->addr, addr, family == AF_INET ? 4 : 16);
}

/* The role a connection that predates the task most likely has. */
static uint8_t guess_side(const struct net_event *e, bool udp)
{
	bool le = e->lport >= EPHEMERAL_MIN, re = e->rport >= EPHEMERAL_MIN;

	if (udp)
		return e->op == NET_OP_WRITE ? SIDE_CLIENT : SIDE_SERVER;
	if (le != re)
		return le ? SIDE_CLIENT : SIDE_SERVER;
	return e->lport < e->rport ? SIDE_SERVER : SIDE_CLIENT;
}

static struct cstate *conn_new(struct netprof *np, const struct net_event *e, bool udp,
			       const struct net_endpoint *peer)
{
	struct net_endpoint local;
	struct ntask *t = task_of_pid(np, e->tgid);
	struct cstate *cs;
	struct net_conn *nc;

	if (!t) {
		np->st[NPS_NO_TASK]++;
		return NULL;
	}
	endpoint_of(&local, e->family, e->laddr, e->lport);
	nc = conntrack__add(np->ct, e->tgid, e->ino, udp, peer, &local);
	cs = nc ? calloc(1, sizeof(*cs)) : NULL;
	if (!cs) {
		if (nc)
			conntrack__remove(np->ct, nc);
		np->st[NPS_TABLE_FULL]++;
		return NULL;
	}
	nc->user = cs;
	cs->np = np;
	cs->nc = nc;
	cs->task = t;
	memcpy(cs->comm, e->comm, sizeof(cs->comm));
	cs->comm[sizeof(cs->comm) - 1] = 0;
	if (e->op == NET_OP_CONNECT || e->op == NET_OP_ACCEPT) {
		cs->feed_side = e->op == NET_OP_CONNECT ? SIDE_CLIENT : SIDE_SERVER;
	} else {
		cs->feed_side = guess_side(e, udp);
		cs->side_guessed = true;
	}
	cs->peer_local = is_local(np, peer);
	cs->opened_unix_ns = to_unix(np, e->ts_ns);
	np->st[NPS_CONNECTIONS]++;
	t->total_conns++;
	return cs;
}

static int ensure_l7(struct netprof *np, struct cstate *cs)
{
	bool client = cs->feed_side == SIDE_CLIENT;
	struct l7_conn_opts o = {
		.cfg = cs->nc->udp ? &cs->task->cfg_udp : &cs->task->cfg_tcp,
		.client_port = client ? cs->nc->local.port : cs->nc->peer.port,
		.server_port = client ? cs->nc->peer.port : cs->nc->local.port,
		.dir_certain = !cs->side_guessed,
		.emit = on_exchange,
		.emit_ctx = cs,
		.stats = &np->l7st,
	};

	if (!cs->l7)
		cs->l7 = l7_conn__new(&o);
	return cs->l7 ? 0 : -ENOMEM;
}

static enum l7_dir dir_of(const struct cstate *cs, bool write)
{
	return (cs->feed_side == SIDE_CLIENT) == write ? L7_DIR_REQ : L7_DIR_RESP;
}

static void give_gap(struct netprof *np, struct cstate *cs, bool write, uint64_t bytes, uint64_t ts)
{
	if (!bytes || cs->nc->udp || ensure_l7(np, cs))
		return;
	cs->gaps++;
	cs->gap_bytes += bytes;
	np->st[NPS_GAPS]++;
	np->st[NPS_GAP_BYTES] += bytes;
	(void)l7_conn__gap(cs->l7, dir_of(cs, write), (size_t)bytes, ts);
}

static void count_call(struct cstate *cs, unsigned kind, uint64_t bytes, uint64_t time)
{
	struct wcalls *w = &cs->w[kind];
	uint64_t v = kind == NC_RTT ? time * 1000 : time; /* RTT buckets: the same bounds, in us */

	w->count++;
	w->bytes += bytes;
	w->time += time;
	w->hist[net_hist__index(net_hist__l4_bounds, NET_L4_BUCKETS, v)]++;
	cs->w_active = true;
}

/* The latest turn: events of one socket from two CPUs may arrive a little out of order. */
static void note_turn(struct cstate *cs, uint32_t turn)
{
	if ((turn & NET_TURN_MASK) >= (cs->turn & NET_TURN_MASK))
		cs->turn = turn;
}

/* A TLS record header (change_cipher_spec, alert, handshake, application data; version 3.x). */
static bool looks_tls(const uint8_t *p, uint32_t n)
{
	return n >= 5 && p[0] >= 20 && p[0] <= 23 && p[1] == 3 && p[2] <= 4;
}

static void mark_tls(struct netprof *np, struct cstate *cs)
{
	if (cs->tls)
		return;
	cs->tls = true;
	np->st[NPS_TLS_CONNECTIONS]++;
}

/*
 * A TLS connection that moved data before its process's TLS probes were in
 * place (a process started or followed mid-task, or a connection open before
 * the task): what it carried then is ciphertext only, and the exchanges in
 * it are missing.  Which of those calls were the handshake and which were
 * requests the bytes do not tell (a record header and its body are read
 * apart, and TLS 1.3 sends its handshake as application data), so the
 * connection is counted, not its calls.  A call under a probed TLS call
 * (NET_F_TLS_WIRE) is covered.  The analyzer asks for a process's probes in
 * line with its records (at its task's start, fork and exec), so a call read
 * while the process has none yet came before them: the connection waits in
 * tls_pending until the process has probes or has ended without (counted
 * then), or is listed while the process has none (a process ember has no TLS
 * probes for: its connections are TLS at L4, not a loss of this kind).
 */
static void note_tls_unprobed(struct netprof *np, struct cstate *cs, const struct net_event *e)
{
	uint64_t ready;

	if (!cs->tls || cs->tls_unprobed || (e->flags & NET_F_TLS_WIRE) || !np->o.tls_ready_ns || e->ret <= 0)
		return;
	ready = np->o.tls_ready_ns(np->o.ctx, cs->nc->tgid);
	if (!ready) {
		cs->tls_pending = true;
	} else if (e->ts_ns < ready) {
		cs->tls_unprobed = true;
		np->st[NPS_TLS_UNPROBED]++;
	}
}

/* A read or a write: counted, and its data (or the gap where it was lost) to the parser. */
static void data_call(struct netprof *np, struct cstate *cs, const struct net_event *e, const uint8_t *payload)
{
	bool write = e->op == NET_OP_WRITE;
	uint64_t moved = (uint64_t)e->ret, ts = write ? e->ts_ns : e->ts_ns + e->dur_ns;
	uint32_t have = e->payload < moved ? e->payload : (uint32_t)moved;

	note_turn(cs, e->turn);
	/* Ciphertext: under a TLS call, or records from the stream's first bytes on. */
	if ((e->flags & NET_F_TLS_WIRE) || (!cs->writes && !cs->reads && !cs->l7 && looks_tls(payload, have)))
		mark_tls(np, cs);
	note_tls_unprobed(np, cs, e);

	count_call(cs, write ? NC_WRITE : NC_READ, moved, e->dur_ns);
	record_call(np, cs, e);
	if (write) {
		cs->writes++;
		cs->bytes_written += moved;
		if (e->srtt_us) {
			cs->srtt_us = e->srtt_us;
			count_call(cs, NC_RTT, 0, e->srtt_us);
		}
	} else {
		cs->reads++;
		cs->bytes_read += moved;
	}
	if (cs->tls)
		return;    /* the parsers get the plaintext (tls_call) */
	if (ensure_l7(np, cs))
		return;
	if (have)
		(void)l7_conn__feed(cs->l7, dir_of(cs, write), payload, have, ts);
	/* A datagram's uncopied rest is not a stream gap: the next datagram stands alone. */
	if (moved > have && !cs->nc->udp)
		give_gap(np, cs, write, moved - have, ts);
}

static void tls_remember_obj(struct netprof *np, uint32_t tgid, uint64_t obj, uint64_t ino)
{
	size_t i = (size_t)(((obj >> 4) ^ tgid) * 0x9e3779b97f4a7c15ull >> 52) & (TLS_OBJ_SLOTS - 1);

	np->tls_objs[i].tgid = tgid;
	np->tls_objs[i].obj = obj;
	np->tls_objs[i].ino = ino;
}

static uint64_t tls_obj_ino(const struct netprof *np, uint32_t tgid, uint64_t obj)
{
	size_t i = (size_t)(((obj >> 4) ^ tgid) * 0x9e3779b97f4a7c15ull >> 52) & (TLS_OBJ_SLOTS - 1);

	return np->tls_objs[i].tgid == tgid && np->tls_objs[i].obj == obj ? np->tls_objs[i].ino : 0;
}

/* The socket a thread last moved data on (every read and write of a followed socket). */
static void tls_remember_tid(struct netprof *np, const struct net_event *e)
{
	size_t i = e->tid & (TLS_TID_SLOTS - 1);

	np->tls_tids[i].tid = e->tid;
	np->tls_tids[i].tgid = e->tgid;
	np->tls_tids[i].ino = e->ino;
}

/* Plaintext of a TLS library call: to its socket's parser, in place of the socket's ciphertext. */
static void tls_call(struct netprof *np, const struct net_event *e, const uint8_t *payload)
{
	bool write = e->op == NET_OP_TLS_WRITE;
	struct net_conn *nc = NULL;
	struct cstate *cs;
	uint64_t ino = e->ino, moved, ts;
	uint32_t have;

	np->st[NPS_TLS_EVENTS]++;
	if (e->family) {
		struct net_endpoint peer;

		endpoint_of(&peer, e->family, e->raddr, e->rport);
		nc = conntrack__find(np->ct, e->tgid, e->ino, &peer);
		cs = nc ? nc->user : conn_new(np, e, e->type == SOCK_DGRAM, &peer);
		if (!cs)
			return;
		nc = cs->nc;
	} else {
		size_t t = e->tid & (TLS_TID_SLOTS - 1);

		ino = tls_obj_ino(np, e->tgid, e->tls);
		if (!ino && np->tls_tids[t].tid == e->tid && np->tls_tids[t].tgid == e->tgid)
			ino = np->tls_tids[t].ino;
		nc = ino ? conntrack__socket_first(np->ct, e->tgid, ino) : NULL;
		if (!nc) {
			struct ntask *tk = task_of_pid(np, e->tgid);

			np->st[NPS_TLS_UNBOUND]++;
			if (tk)
				tk->tls_unbound += 1 + e->lost_events;
			return;
		}
		cs = nc->user;
	}
	tls_remember_obj(np, e->tgid, e->tls, nc->ino);
	conntrack__touch(np->ct, nc, e->ts_ns + e->dur_ns);
	mark_tls(np, cs);
	if (!cs->tls_plain) {
		/* Whatever the parser saw before was not plaintext (a handshake taken for data). */
		cs->l7 = l7_conn__free(cs->l7);
		cs->tls_plain = true;
	}
	*(write ? &cs->tls_writes : &cs->tls_reads) += 1;
	cs->calls_lost += e->lost_events;
	if (e->lost_events) {
		give_gap(np, cs, false, e->lost_read_bytes, e->ts_ns);
		give_gap(np, cs, true, e->lost_write_bytes, e->ts_ns);
	}
	if (e->ret <= 0 || ensure_l7(np, cs))
		return;
	record_call(np, cs, e);
	moved = (uint64_t)e->ret;
	ts = write ? e->ts_ns : e->ts_ns + e->dur_ns;
	have = e->payload < moved ? e->payload : (uint32_t)moved;
	if (have)
		(void)l7_conn__feed(cs->l7, dir_of(cs, write), payload, have, ts);
	if (moved > have && !cs->nc->udp)
		give_gap(np, cs, write, moved - have, ts);
}

/* A followed process exec'ed or mapped a file executable: its TLS libraries are looked for now. */
static void on_maps_event(struct netprof *np, const struct net_event *e)
{
	struct ntask *t = task_of_pid(np, e->tgid);

	if (t && np->o.maps_changed)
		np->o.maps_changed(np->o.ctx, t->def->num_id, e->tgid);
}

/* A child of a target forked (its records are the task's from now on) or exited. */
static void on_fork_event(struct netprof *np, const struct net_event *e)
{
	int c = child_index(np, e->tgid);

	if (e->op == NET_OP_EXIT) {
		if (c >= 0)
			np->children[c] = np->children[--np->nchildren];
		return;
	}
	if (e->ret <= 0 || e->ret > UINT32_MAX) {
		np->st[NPS_BAD_RECORDS]++;
		return;
	}
	if (c < 0 && np->nchildren == MAX_CHILDREN) {
		np->st[NPS_CHILDREN_FULL]++;
		return;
	}
	if (c < 0)
		c = (int)np->nchildren++;   /* a pid reused after a lost exit event is booked again */
	np->children[c].child = e->tgid;
	np->children[c].root = (uint32_t)e->ret;
	np->st[NPS_CHILDREN]++;
	on_maps_event(np, e);   /* the child's TLS probes: per process */
}

static int check_event(const struct net_event *e, uint32_t len)
{
	if (len - sizeof(*e) != e->payload || e->payload > NET_MAX_PAYLOAD)
		return -1;
	if (e->op == NET_OP_FORK || e->op == NET_OP_EXIT || e->op == NET_OP_MMAP_EXEC)
		return e->payload ? -1 : 0;
	if ((e->op == NET_OP_TLS_WRITE || e->op == NET_OP_TLS_READ) && !e->family)
		return 0;   /* bound to a socket here (tls_call) */
	if (e->family != AF_INET && e->family != AF_INET6)
		return -1;
	if (e->op < NET_OP_CONNECT || (e->op > NET_OP_DROP && e->op != NET_OP_TLS_WRITE && e->op != NET_OP_TLS_READ))
		return -1;
	return 0;
}

void netprof__record(struct netprof *np, const void *data, uint32_t len)
{
	struct net_event e;
	struct net_endpoint peer;
	struct cstate *cs;
	struct net_conn *nc;
	bool udp;

	np->st[NPS_RECORDS]++;
	if (len < sizeof(e)) {
		np->st[NPS_BAD_RECORDS]++;
		return;
	}
	memcpy(&e, data, sizeof(e)); /* ring records are only 8-byte aligned; the payload follows */
	if (check_event(&e, len)) {
		np->st[NPS_BAD_RECORDS]++;
		return;
	}
	if (e.op == NET_OP_FORK || e.op == NET_OP_EXIT) {
		on_fork_event(np, &e);
		return;
	}
	if (e.op == NET_OP_MMAP_EXEC) {
		on_maps_event(np, &e);
		return;
	}
	if (e.op == NET_OP_TLS_WRITE || e.op == NET_OP_TLS_READ) {
		np->st[NPS_LOST_EVENTS] += e.lost_events;
		tls_call(np, &e, (const uint8_t *)data + sizeof(e));
		return;
	}
	udp = e.type == SOCK_DGRAM;
	endpoint_of(&peer, e.family, e.raddr, e.rport);
	np->st[NPS_LOST_EVENTS] += e.lost_events;
	if (e.op == NET_OP_CLOSE) {
		nc = conntrack__socket_first(np->ct, e.tgid, e.ino);
		if (!nc)
			np->st[NPS_UNKNOWN_CLOSES]++;
		for (struct net_conn *n; nc; nc = n) {
			n = conntrack__socket_next(np->ct, nc);
			cs = nc->user;
			cs->calls_lost += e.lost_events;
			e.lost_events = 0;     /* the socket's, booked to its first connection */
			note_turn(cs, e.turn);
			count_call(cs, NC_CLOSE, 0, e.dur_ns);
			conn_end(np, cs, e.ts_ns + e.dur_ns, true);
		}
		return;
	}
	nc = conntrack__find(np->ct, e.tgid, e.ino, &peer);
	if (e.op == NET_OP_RETRANSMIT || e.op == NET_OP_DROP) {
		if (nc) {
			cs = nc->user;
			cs->w_active = true;
			*(e.op == NET_OP_RETRANSMIT ? &cs->w_retrans : &cs->w_drops) += 1;
			*(e.op == NET_OP_RETRANSMIT ? &cs->retrans : &cs->drops) += 1;
		}
		return;
	}
	if (e.op != NET_OP_CONNECT && e.op != NET_OP_ACCEPT && e.ret <= 0 && !nc)
		return;  /* EAGAIN or EOF on a socket never seen moving data: nothing to follow */
	cs = nc ? nc->user : conn_new(np, &e, udp, &peer);
	if (!cs)
		return;
	conntrack__touch(np->ct, cs->nc, e.ts_ns + e.dur_ns);
	if (e.peer_tgid && !cs->nc->udp)
		cs->peer_across = e.peer_tgid;
	cs->calls_lost += e.lost_events;
	if (e.lost_events) {
		give_gap(np, cs, false, e.lost_read_bytes, e.ts_ns);
		give_gap(np, cs, true, e.lost_write_bytes, e.ts_ns);
	}
	switch (e.op) {
	case NET_OP_CONNECT:
	case NET_OP_ACCEPT:
		count_call(cs, NC_CONNECT, 0, e.dur_ns);
		break;
	default:
		if (e.ret > 0) {
			tls_remember_tid(np, &e);
			data_call(np, cs, &e, (const uint8_t *)data + sizeof(e));
		}
		break;
	}
}
