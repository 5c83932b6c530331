/*
 * Network profiling's intake (netprof.h says what it does): the task table,
 * records -> events -> connections and their parsers, and when reports go
 * out.  What a report holds and how it is published is netreport.c; a
 * connection's latest calls netcalls.c; the host's addresses and clocks
 * nethost.c; where socketless TLS plaintext goes tlsbind.c.
 *
 * Why this file is ~1,000 lines: what is left is one state machine, the
 * connection (struct cstate) that every event handler below reads and
 * moves (its side, parser, TLS state, turns, losses), with the task table
 * those handlers find a connection's task in.  Cutting it again would put
 * struct cstate in a header for two files to share, a seam in name only.
 */
#include "analyzer/net/netprof.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "l7/l7_conn.h"
#include "analyzer/net/conntrack.h"
#include "analyzer/net/netcalls.h"
#include "analyzer/net/nethost.h"
#include "analyzer/net/netreport.h"
#include "analyzer/net/sampler.h"
#include "analyzer/net/tlsbind.h"
#include "bpf/ember_abi.h"
#include "bpf/net_abi.h"
#include "common/net_hist.h"
#include "common/timeutil.h"

#define MAX_TASKS 64
/* Followed children: bounded like the BPF side's target table (max_targets, 1024 by default). */
#define MAX_CHILDREN 4096
#define EPHEMERAL_MIN 32768  /* Linux's default ip_local_port_range starts here */

enum side { SIDE_CLIENT = NETREPORT_CLIENT, SIDE_SERVER = NETREPORT_SERVER };

struct ntask {
	bool used;
	char id[TASK_ID_LEN];
	const struct task_def *def;  /* the task manager's, valid until netprof__close */
	uint64_t report_ms, next_ms;
	struct netreport *rep;       /* its report while it builds */
	uint64_t total_exchanges, total_conns;
	struct sampler *sampler;     /* HTTP sampling rules, NULL when the task has none */
	struct l7_config cfg_tcp, cfg_udp; /* the parsers' limits, bodies kept for its sampling rules */
	bool monitor;                /* a monitor's capture: exchanges go to opts.exchange only */
	bool calls;                  /* its sampled traces carry their calls (task_def__wants_calls) */
	bool closing;                /* its last report is going out: records drained meanwhile are past its end */
};

/* Connection caps (want_caps()): none asked yet; the least asked for a head. */
#define CAP_NONE 0xffffu
#define CAP_MIN 256u

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
	uint64_t peer_missed;     /* conntrack__added() when its other end was last looked for in vain */
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
	struct netreport_window win;       /* its calls of the report's window */
	struct netreport_flow_cache flow;  /* the report's flow it went to */
	struct netcalls *dc;      /* task->calls: its latest data calls, allocated at the first */
	char peer_str[64], local_str[64]; /* its endpoints as text, "" until first needed (peer_str()) */
	uint16_t cap[2];          /* the caps asked for its reads and writes (struct net_cap), CAP_NONE: none */
	uint32_t cap_batch;       /* the batch (netprof.caps_batch) its last change waits in, at cap_slot */
	uint32_t cap_slot;
};

struct netprof {
	struct netprof_opts o;
	struct l7_config cfg_tcp, cfg_udp;
	struct conntrack *ct;
	struct ntask tasks[MAX_TASKS];
	struct l7_stats l7st;
	uint64_t st[NPS_MAX];
	struct nethost host;      /* its addresses and clocks, refreshed about once a second */
	uint64_t last_age_ms;
	/* Children of target processes (NET_OP_FORK) and the process their task named. */
	struct { uint32_t child, root; } children[MAX_CHILDREN];
	unsigned nchildren;
	struct tlsbind *tls;      /* TLS plaintext without a socket: the socket it goes to */
	/* Connection caps waiting to go to the collector (netprof__tick, or when full). */
	struct ctl_net_cap caps[CTL_NET_CAPS_MAX];
	uint32_t ncaps;
	uint32_t caps_batch;      /* numbers the batches (from 1): a connection changed twice in one is sent once */
	bool caps_off;            /* the collector cannot take them */
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
	[NPS_CAPS] = { .name = "net_caps_asked" },
	[NPS_CAPS_FAILED] = { .name = "net_caps_failed" },
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

/* Unsigned: a timestamp from a hostile record may be anything, and wrapping is defined there. */
static uint64_t to_unix(const struct netprof *np, uint64_t mono)
{
	return nethost__to_unix(&np->host, mono);
}

/* ---- life cycle ----------------------------------------------------------------------- */

struct netprof *netprof__new(const struct netprof_opts *o)
{
	struct netprof *np = calloc(1, sizeof(*np));

	if (!np)
		return NULL;
	np->o = *o;
	np->cfg_tcp = o->l7;
	np->caps_batch = 1;
	np->cfg_tcp.transport = L7_TRANSPORT_TCP;
	np->cfg_udp = o->l7;
	np->cfg_udp.transport = L7_TRANSPORT_UDP;
	np->ct = conntrack__new(o->max_connections);
	if (!np->ct || !(np->tls = tlsbind__new())) {
		int e = errno;

		conntrack__free(np->ct);
		free(np);
		errno = e;
		return NULL;
	}
	nethost__refresh(&np->host);
	return np;
}

/* The task's slot is free again: its report (what is left of it) and its sampler go. */
static void task_release(struct ntask *t)
{
	t->rep = netreport__free(t->rep);
	t->sampler = sampler__free(t->sampler);
	t->used = false;
	t->def = NULL;
}

static void cstate_drop(struct netprof *np, struct cstate *cs)
{
	l7_conn__free(cs->l7);
	conntrack__remove(np->ct, cs->nc);
	netcalls__free(cs->dc);
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
	for (unsigned i = 0; i < MAX_TASKS; i++)
		task_release(&np->tasks[i]);
	conntrack__free(np->ct);
	tlsbind__free(np->tls);
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
	/* A free slot's report and sampler went with its task (task_release): nothing to free. */
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
	if (!(t->rep = netreport__new(np->o.max_exchanges))) {
		task_release(t);
		return -ENOMEM;
	}
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

/* ---- connections into their report --------------------------------------------------- */

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

/*
 * The connection's endpoints as text, formatted once: every exchange lists
 * its peer, and inet_ntop + snprintf per exchange was an eighth of the
 * analyzer's time under wrk.  A connection's endpoints never change.
 */
static const char *peer_str(struct cstate *cs)
{
	if (!cs->peer_str[0])
		net_endpoint__str(&cs->nc->peer, cs->peer_str, sizeof(cs->peer_str));
	return cs->peer_str;
}

static const char *local_str(struct cstate *cs)
{
	if (!cs->local_str[0])
		net_endpoint__str(&cs->nc->local, cs->local_str, sizeof(cs->local_str));
	return cs->local_str;
}

/* The other end, when it is a process this analyzer follows too. */
static void link_peer(struct netprof *np, struct cstate *cs)
{
	struct net_conn *o;

	if (cs->peer_pid || !cs->peer_local || cs->nc->udp)
		return;
	/* (an unfollowed peer is looked for at each exchange: only when a connection was added since) */
	if (!cs->peer_across && cs->peer_missed == conntrack__added(np->ct))
		return;
	/* Its local endpoint is our peer and its peer is us: the same connection, seen from there. */
	o = conntrack__by_local(np->ct, &cs->nc->peer);
	if (o && !memcmp(&o->peer, &cs->nc->local, sizeof(o->peer)))
		cs->peer_pid = o->tgid;
	else if (cs->peer_across)
		cs->peer_pid = cs->peer_across;  /* its analyzer is another: the collector saw both ends */
	else
		cs->peer_missed = conntrack__added(np->ct);
}

/*
 * The connection as its report sees it.  Its peer is linked first where the
 * report is to find its flow (link_peer), not when it is only listed.
 */
static struct netreport_conn conn_view(struct cstate *cs)
{
	return (struct netreport_conn){
		.nc = cs->nc,
		.comm = cs->comm,
		.side = side_of(cs),
		.side_guessed = cs->side_guessed,
		.tls = cs->tls,
		.peer_local = cs->peer_local,
		.peer_pid = cs->peer_pid,
		.protocol = protocol_of(cs),
		.cache = &cs->flow,
	};
}

/* A connection's calls of the report into its flow. */
static void fold(struct netprof *np, struct cstate *cs)
{
	struct netreport_conn v;

	if (!cs->win.active)
		return;
	link_peer(np, cs);
	v = conn_view(cs);
	netreport__fold(cs->task->rep, &v, &cs->win);
}

static void list_exchange(struct netprof *np, struct cstate *cs, const struct l7_record *r)
{
	Ember__NetExchange x = EMBER__NET_EXCHANGE__INIT;

	x.pid = cs->nc->tgid;
	x.connection_id = cs->nc->id;
	x.protocol = (char *)r->protocol;
	x.side = (char *)netreport__side_name(side_of(cs));
	x.peer_address = (char *)peer_str(cs);
	x.req_unix_ns = r->req_ts_ns ? to_unix(np, r->req_ts_ns) : 0;
	x.latency_ns = l7_record__latency_ns(r);
	x.duration_ns = l7_record__duration_ns(r);
	x.req_bytes = r->req_bytes;
	x.resp_bytes = r->resp_bytes;
	x.status = r->status;
	x.is_error = r->is_error;
	x.is_client_error = r->is_client_error;
	x.answered = r->has_request && r->has_response;
	x.req_seq = r->req_seq;
	x.ssl = cs->tls;
	np->st[NPS_EXCHANGES_NOT_LISTED] += netreport__list_exchange(cs->task->rep, &x, r);
}

/* A data call of the connection, for the calls behind its sampled exchanges. */
static void record_call(struct netprof *np, struct cstate *cs, const struct net_event *e)
{
	if (cs->task && cs->task->calls && netcalls__add(&cs->dc, e))
		np->st[NPS_CALLS_NOMEM]++;
}

static void offer_sample(struct netprof *np, struct cstate *cs, const struct l7_record *r)
{
	struct sampler_call calls[SAMPLER_MAX_CALLS];
	struct sampler_ctx c = {
		.pid = cs->nc->tgid,
		.process_name = cs->comm,
		.connection_id = cs->nc->id,
		.side = netreport__side_name(side_of(cs)),
		.peer = peer_str(cs),
		.local = local_str(cs),
		.req_unix_ns = r->req_ts_ns ? to_unix(np, r->req_ts_ns) : 0,
		.peer_local = cs->peer_local,
		.ssl = cs->tls,
	};

	link_peer(np, cs);
	c.peer_pid = cs->peer_pid;
	c.ncalls = netcalls__between(cs->dc, r->req_ts_ns, r->resp_ts_ns, cs->tls, np->host.mono_to_unix, calls);
	c.calls = calls;
	sampler__offer(cs->task->sampler, r, &c);
}

static void on_exchange(void *ctx, const struct l7_record *r)
{
	struct cstate *cs = ctx;
	struct netprof *np = cs->np;
	struct netreport_conn v;

	np->st[NPS_EXCHANGES]++;
	cs->exchanges++;
	cs->task->total_exchanges++;
	if (np->o.exchange && side_of(cs) == SIDE_SERVER)
		np->o.exchange(np->o.ctx, cs->nc->tgid, r);
	if (cs->task->monitor)
		return;
	link_peer(np, cs);
	v = conn_view(cs);
	netreport__flow_exchange(cs->task->rep, &v, r);
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
	Ember__NetConnection m = EMBER__NET_CONNECTION__INIT;
	uint64_t req_turns = request_turns(cs);

	settle_tls_pending(np, cs);
	m.pid = cs->nc->tgid;
	m.process_name = cs->comm;
	m.id = cs->nc->id;
	m.side = (char *)netreport__side_name(side_of(cs));
	m.side_guessed = cs->side_guessed;
	m.local_address = (char *)local_str(cs);
	m.remote_address = (char *)peer_str(cs);
	m.remote_local = cs->peer_local;
	m.remote_pid = cs->peer_pid;
	m.transport = (char *)(cs->nc->udp ? "udp" : "tcp");
	m.protocol = (char *)protocol_of(cs);
	m.l7_state = (char *)l7_state;
	m.opened_unix_ns = cs->opened_unix_ns;
	m.closed_unix_ns = closed_unix_ns;
	m.writes = cs->writes;
	m.reads = cs->reads;
	m.bytes_written = cs->bytes_written;
	m.bytes_read = cs->bytes_read;
	m.exchanges = cs->exchanges;
	m.gaps = cs->gaps;
	m.gap_bytes = cs->gap_bytes;
	m.retransmits = cs->retrans;
	m.drops = cs->drops;
	m.srtt_us = cs->srtt_us;
	m.ssl = cs->tls;
	m.tls_reads = cs->tls_reads;
	m.tls_writes = cs->tls_writes;
	m.calls_lost = cs->calls_lost;
	m.request_turns = req_turns;
	m.exchanges_lost = exchanges_lost(cs, req_turns);
	m.tls_unprobed = cs->tls_unprobed;
	if (!netreport__list_connection(cs->task->rep, &m))
		np->st[NPS_CONNS_NOT_LISTED]++;
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

/*
 * Publishes t's report up to now (netreport__publish); last: every
 * connection ends first (listed still open).
 */
static void report(struct netprof *np, struct ntask *t, bool last)
{
	uint64_t now_mono = timeutil__now_ns(CLOCK_MONOTONIC), now_unix = timeutil__now_ns(CLOCK_REALTIME);

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
	np->st[NPS_BATCHES] += netreport__publish(t->rep, &(struct netreport_publish){
		.pub = np->o.pub,
		.def = t->def,
		.sampler = t->sampler,
		.now_unix_ns = now_unix,
		.last = last,
		.monitor = t->monitor,
		.part_items = np->o.part_items ? np->o.part_items : NETPROF_PART_ITEMS,
		.drain = np->o.drain,
		.ctx = np->o.ctx,
	});
}

uint64_t netprof__next_due(const struct netprof *np)
{
	uint64_t best = UINT64_MAX;

	for (unsigned i = 0; i < MAX_TASKS; i++)
		if (np->tasks[i].used && np->tasks[i].next_ms < best)
			best = np->tasks[i].next_ms;
	return best;
}

static void caps_flush(struct netprof *np);

void netprof__tick(struct netprof *np, uint64_t now_ms)
{
	uint64_t now_mono = timeutil__now_ns(CLOCK_MONOTONIC);
	bool any = false;

	caps_flush(np);
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
	nethost__refresh(&np->host);
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
		task_release(t);
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
		task_release(t);
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
	cs->cap[0] = cs->cap[1] = CAP_NONE;
	memcpy(cs->comm, e->comm, sizeof(cs->comm));
	cs->comm[sizeof(cs->comm) - 1] = 0;
	if (e->op == NET_OP_CONNECT || e->op == NET_OP_ACCEPT) {
		cs->feed_side = e->op == NET_OP_CONNECT ? SIDE_CLIENT : SIDE_SERVER;
	} else {
		cs->feed_side = guess_side(e, udp);
		cs->side_guessed = true;
	}
	cs->peer_local = nethost__is_local(&np->host, peer);
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

/* A call's time, or NO_TIME when its event was seen where the call ended (NET_F_UNTIMED). */
#define NO_TIME UINT64_MAX
static uint64_t time_of(const struct net_event *e)
{
	return e->flags & NET_F_UNTIMED ? NO_TIME : e->dur_ns;
}

static void count_call(struct cstate *cs, unsigned kind, uint64_t bytes, uint64_t time)
{
	struct netreport_calls *w = &cs->win.w[kind];
	uint64_t v = kind == NC_RTT ? time * 1000 : time; /* RTT buckets: the same bounds, in us */

	w->count++;
	w->bytes += bytes;
	cs->win.active = true;
	if (time == NO_TIME) {
		w->untimed++;
		return;
	}
	w->time += time;
	w->hist[net_hist__index(net_hist__l4_bounds, NET_L4_BUCKETS, v)]++;
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

/*
 * Connection caps (bpf/net_abi.h struct net_cap): how much of each call
 * the kernel side copies for a connection, from what its parser needs
 * (l7_conn__head).  A head gets room to grow (half again and 64 bytes, at
 * least CAP_MIN): a head cut short costs its message, and the parser then
 * asks for every byte.
 */
static uint16_t cap_of(size_t head)
{
	size_t c;

	if (head == L7_HEAD_ALL)
		return NET_MAX_PAYLOAD;
	if (!head)
		return 0;
	c = (head + head / 2 + 64 + 63) & ~(size_t)63;
	if (c < CAP_MIN)
		c = CAP_MIN;
	return c > NET_MAX_PAYLOAD ? NET_MAX_PAYLOAD : (uint16_t)c;
}

static void caps_flush(struct netprof *np)
{
	uint32_t written = 0;
	int r;

	if (!np->ncaps)
		return;
	r = np->o.caps(np->o.ctx, np->caps, np->ncaps, &written);
	if (r) {
		written = 0;
		np->caps_off = r == -EOPNOTSUPP;
	}
	np->st[NPS_CAPS] += written;
	np->st[NPS_CAPS_FAILED] += np->ncaps - (written < np->ncaps ? written : np->ncaps);
	np->ncaps = 0;
	np->caps_batch++;
}

static void want_caps(struct netprof *np, struct cstate *cs)
{
	uint16_t rd, wr;

	if (!np->o.caps || np->caps_off || cs->nc->udp || cs->tls || !cs->l7)
		return;
	rd = cap_of(l7_conn__head(cs->l7, dir_of(cs, false)));
	wr = cap_of(l7_conn__head(cs->l7, dir_of(cs, true)));
	if (rd == cs->cap[0] && wr == cs->cap[1])
		return;
	if (cs->cap[0] == CAP_NONE && rd == NET_MAX_PAYLOAD && wr == NET_MAX_PAYLOAD)
		return;   /* nothing to lower (yet) */
	cs->cap[0] = rd;
	cs->cap[1] = wr;
	if (cs->cap_batch == np->caps_batch && cs->cap_slot < np->ncaps) {
		np->caps[cs->cap_slot].cap.read = rd;    /* still waiting: changed in place */
		np->caps[cs->cap_slot].cap.write = wr;
		return;
	}
	if (np->ncaps == CTL_NET_CAPS_MAX)
		caps_flush(np);
	cs->cap_batch = np->caps_batch;
	cs->cap_slot = np->ncaps;
	np->caps[np->ncaps++] = (struct ctl_net_cap){ .ino = cs->nc->ino,
		.cap = { .tgid = cs->nc->tgid, .read = rd, .write = wr } };
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

	count_call(cs, write ? NC_WRITE : NC_READ, moved, time_of(e));
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
	want_caps(np, cs);
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
		ino = tlsbind__socket(np->tls, e->tgid, e->tid, e->tls);
		nc = ino ? conntrack__socket_first(np->ct, e->tgid, ino) : NULL;
		if (!nc) {
			struct ntask *tk = task_of_pid(np, e->tgid);

			np->st[NPS_TLS_UNBOUND]++;
			if (tk)
				netreport__tls_unbound(tk->rep, 1 + e->lost_events);
			return;
		}
		cs = nc->user;
	}
	tlsbind__object(np->tls, e->tgid, e->tls, nc->ino);
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
		np->o.maps_changed(np->o.ctx, t->def->num_id, e->tgid, e->flags & NET_F_MAPS_SOON);
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
			count_call(cs, NC_CLOSE, 0, time_of(&e));
			conn_end(np, cs, e.ts_ns + e.dur_ns, true);
		}
		return;
	}
	nc = conntrack__find(np->ct, e.tgid, e.ino, &peer);
	if (e.op == NET_OP_RETRANSMIT || e.op == NET_OP_DROP) {
		if (nc) {
			cs = nc->user;
			cs->win.active = true;
			*(e.op == NET_OP_RETRANSMIT ? &cs->win.retrans : &cs->win.drops) += 1;
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
		count_call(cs, NC_CONNECT, 0, time_of(&e));
		break;
	default:
		if (e.ret > 0) {
			tlsbind__thread(np->tls, e.tgid, e.tid, e.ino);  /* the socket a thread last moved data on */
			data_call(np, cs, &e, (const uint8_t *)data + sizeof(e));
		}
		break;
	}
}
