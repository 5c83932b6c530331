#include "analyzer/net/netreport.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"

#define FLOW_BUCKETS 256
#define MAX_STATUSES 32      /* distinct statuses per flow and report; the rest count as -1 */
#define ARENA_CHUNK (64 * 1024)

/* One kind of call over a report: flows keep 64-bit buckets, connections 32-bit. */
struct calls {
	uint64_t count, bytes, time, untimed;
	uint64_t hist[NET_L4_BUCKETS];
};

struct status_count { int32_t status; uint64_t count; };

struct netreport_flow {
	struct netreport_flow *next;
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

/*
 * Bump allocator for one report's messages: let go all at once after
 * publishing.  Its chunks are kept for the next report (as many as the
 * last one used): a busy window lists thousands of exchanges, and fresh
 * pages for each window cost a page fault per 4 KiB (the allocator hands
 * freed memory back to the system), more than the copies themselves.
 */
struct arena_chunk { struct arena_chunk *next; size_t used, size; _Alignas(16) uint8_t data[]; };

/* A listed exchange: in the even sample, among the window's slowest (t->slowest says), or both. */
struct listed {
	Ember__NetExchange *m;
	bool in_sample;
};

struct netreport {
	size_t max_exchanges;
	uint64_t win_start_ns;       /* unix */
	uint64_t gen;                /* report number: cached flow pointers of older reports are stale */
	struct netreport_flow *flows[FLOW_BUCKETS];
	size_t nflows;
	struct listed **sample;      /* an even sample of the window's exchanges, up to max_exchanges */
	size_t nsample, cap_sample;
	struct listed *slowest[NETREPORT_SLOWEST]; /* the window's slowest answered ones, by latency, descending */
	unsigned nslowest;
	uint64_t offered;            /* exchanges offered to the list in the window */
	uint64_t rng;                /* xorshift64* state: which exchanges the sample keeps */
	uint64_t ex_not_listed;
	Ember__NetConnection **cl;
	size_t ncl, cap_cl;
	uint64_t cl_not_listed;
	uint64_t calls_lost, exchanges_lost, gap_bytes, conns_lossy; /* of the connections ended in the window */
	uint64_t tls_unprobed;
	uint64_t tls_unbound;        /* TLS plaintext events of its processes tied to no connection */
	struct arena_chunk *arena;
	struct arena_chunk *spare;   /* chunks of ARENA_CHUNK bytes, kept from the last report's arena */
	size_t nspare;
};

/*
 * A report taken from its task, its lists and the arena that holds their
 * messages: it is published part by part while records drained between the
 * parts fill the task's next report.
 */
struct nreport {
	Ember__NetExchange **ex;
	size_t nex;
	size_t ex_unlisted;          /* chosen, but no memory for the list that sends them */
	Ember__NetConnection **cl;
	size_t ncl;
	struct arena_chunk *arena;
};

/* ---- arena ---------------------------------------------------------------------------- */

/* size bytes, not cleared (the caller writes them all) */
static void *arena_raw(struct netreport *t, size_t size)
{
	struct arena_chunk *c = t->arena;

	size = (size + 15) & ~(size_t)15;
	if (!c || c->used + size > c->size) {
		size_t cap = size > ARENA_CHUNK ? size : ARENA_CHUNK;

		if (cap == ARENA_CHUNK && t->spare) {
			c = t->spare;
			t->spare = c->next;
			t->nspare--;
		} else if (!(c = malloc(sizeof(*c) + cap))) {
			return NULL;
		}
		c->size = cap;
		c->used = 0;
		c->next = t->arena;
		t->arena = c;
	}
	c->used += size;
	return c->data + c->used - size;
}

static void *arena_alloc(struct netreport *t, size_t size)
{
	void *p = arena_raw(t, size);

	return p ? memset(p, 0, size) : NULL;
}

static char *arena_str(struct netreport *t, const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = arena_raw(t, n);

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

/* A published report's chunks become t's spares, as many as it used; the spares beyond that go. */
static void arena_recycle(struct netreport *t, struct arena_chunk **a)
{
	struct arena_chunk *keep = NULL, *c;
	size_t n = 0;

	while ((c = *a)) {
		*a = c->next;
		if (c->size == ARENA_CHUNK) {
			c->next = keep;
			keep = c;
			n++;
		} else {
			free(c);
		}
	}
	while (t->nspare > n) {
		c = t->spare;
		t->spare = c->next;
		free(c);
		t->nspare--;
	}
	while (keep) {
		c = keep;
		keep = c->next;
		if (t->nspare < n) {
			c->next = t->spare;
			t->spare = c;
			t->nspare++;
		} else {
			free(c);
		}
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

/* ---- life cycle ----------------------------------------------------------------------- */

struct netreport *netreport__new(size_t max_exchanges)
{
	struct netreport *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->max_exchanges = max_exchanges;
	t->win_start_ns = timeutil__now_ns(CLOCK_REALTIME);
	t->rng = t->win_start_ns | 1;
	return t;
}

static void flows_free(struct netreport *t)
{
	for (unsigned b = 0; b < FLOW_BUCKETS; b++)
		while (t->flows[b]) {
			struct netreport_flow *n = t->flows[b]->next;
			free(t->flows[b]->sketch);
			free(t->flows[b]);
			t->flows[b] = n;
		}
	t->nflows = 0;
}

static int by_time(const void *a, const void *b)
{
	const Ember__NetExchange *x = *(Ember__NetExchange *const *)a, *y = *(Ember__NetExchange *const *)b;

	if (x->req_unix_ns != y->req_unix_ns)
		return x->req_unix_ns < y->req_unix_ns ? -1 : 1;
	return x->req_seq < y->req_seq ? -1 : x->req_seq > y->req_seq;
}

/* Takes t's lists, their arena and its counters of the window: the task starts its next report. */
static void report_take(struct netreport *t, struct nreport *r)
{
	size_t n = 0;

	*r = (struct nreport){ .cl = t->cl, .ncl = t->ncl, .arena = t->arena };
	/* The sample and the slowest, each once, in time order. */
	r->ex = malloc((t->nsample + t->nslowest + 1) * sizeof(*r->ex));
	if (r->ex) {
		for (size_t i = 0; i < t->nsample; i++)
			r->ex[n++] = t->sample[i]->m;
		for (unsigned i = 0; i < t->nslowest; i++)
			if (!t->slowest[i]->in_sample)
				r->ex[n++] = t->slowest[i]->m;
		qsort(r->ex, n, sizeof(*r->ex), by_time);
	} else {
		r->ex_unlisted = t->nsample + t->nslowest;   /* an upper bound: an exchange in both counts twice */
	}
	r->nex = n;
	free(t->sample);
	t->sample = NULL;
	t->cl = NULL;
	t->arena = NULL;
	t->nsample = t->cap_sample = t->nslowest = t->ncl = t->cap_cl = 0;
	t->offered = 0;
	t->ex_not_listed = t->cl_not_listed = 0;
	t->calls_lost = t->exchanges_lost = t->gap_bytes = t->conns_lossy = t->tls_unprobed = 0;
	t->tls_unbound = 0;
}

static void report_release(struct netreport *t, struct nreport *r)
{
	arena_recycle(t, &r->arena);
	free(r->ex);
	free(r->cl);
	*r = (struct nreport){ 0 };
}

/* The flows and sampled traces of the report are published: the next report starts its own. */
static void reset_flows(struct netreport *t, struct sampler *s)
{
	flows_free(t);
	if (s)
		sampler__reset(s);
	t->gen++;
}

struct netreport *netreport__free(struct netreport *t)
{
	struct nreport r;

	if (!t)
		return NULL;
	report_take(t, &r);
	report_release(t, &r);
	arena_free(&t->spare);
	flows_free(t);
	free(t);
	return NULL;
}

/* ---- flows ---------------------------------------------------------------------------- */

/* The peer of a flow: a server peer by address and port, a client peer by address alone
 * (its port is ephemeral: one series per connection would grow without bound). */
static void peer_label(const struct netreport_conn *c, char *buf, size_t len)
{
	struct net_endpoint p = c->nc->peer;

	if (c->side == NETREPORT_SERVER)
		p.port = 0;
	net_endpoint__str(&p, buf, len);
}

static struct netreport_flow *flow_of(struct netreport *t, const struct netreport_conn *c)
{
	uint8_t side = c->side;
	const char *proto = c->protocol;
	char peer[64];
	uint64_t h = 1469598103934665603ull;
	struct netreport_flow *f = c->cache->flow;

	if (f && c->cache->gen == t->gen && f->side == side && f->protocol == proto && f->peer_pid == c->peer_pid &&
	    f->ssl == c->tls)
		return f;
	peer_label(c, peer, sizeof(peer));
	for (const char *p = peer; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	h = (h ^ c->nc->tgid ^ ((uint64_t)side << 40) ^ ((uint64_t)c->peer_pid << 20) ^ ((uint64_t)c->tls << 60)) *
	    1099511628211ull;
	for (const char *p = proto; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	h &= FLOW_BUCKETS - 1;
	for (f = t->flows[h]; f; f = f->next)
		if (f->pid == c->nc->tgid && f->side == side && f->peer_pid == c->peer_pid && f->ssl == c->tls &&
		    !strcmp(f->protocol, proto) && !strcmp(f->peer, peer))
			break;
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f)
			return NULL;
		f->pid = c->nc->tgid;
		memcpy(f->comm, c->comm, sizeof(f->comm));
		f->side = side;
		f->side_guessed = c->side_guessed;
		snprintf(f->peer, sizeof(f->peer), "%s", peer);
		{
			struct net_endpoint l = c->nc->local;

			if (side != NETREPORT_SERVER)
				l.port = 0;
			net_endpoint__str(&l, f->local, sizeof(f->local));
		}
		f->udp = c->nc->udp;
		f->ssl = c->tls;
		f->peer_local = c->peer_local;
		f->peer_pid = c->peer_pid;
		f->protocol = proto;
		f->next = t->flows[h];
		t->flows[h] = f;
		t->nflows++;
	}
	c->cache->flow = f;
	c->cache->gen = t->gen;
	return f;
}

void netreport__fold(struct netreport *t, const struct netreport_conn *c, struct netreport_window *w)
{
	struct netreport_flow *f = flow_of(t, c);

	if (f) {
		for (unsigned k = 0; k < NC_MAX; k++) {
			f->l4[k].count += w->w[k].count;
			f->l4[k].bytes += w->w[k].bytes;
			f->l4[k].time += w->w[k].time;
			f->l4[k].untimed += w->w[k].untimed;
			for (unsigned b = 0; b < NET_L4_BUCKETS; b++)
				f->l4[k].hist[b] += w->w[k].hist[b];
		}
		f->retrans += w->retrans;
		f->drops += w->drops;
		f->conns++;
	}
	memset(w, 0, sizeof(*w));
}

static void flow_status(struct netreport_flow *f, int32_t status)
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

void netreport__flow_exchange(struct netreport *t, const struct netreport_conn *c, const struct l7_record *r)
{
	struct netreport_flow *f = flow_of(t, c);
	uint64_t lat = l7_record__latency_ns(r), dur = l7_record__duration_ns(r);

	if (!f)
		return;
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

const char *netreport__side_name(uint8_t side)
{
	return side == NETREPORT_SERVER ? "server" : "client";
}

static Ember__NetExchange *exchange_copy(struct netreport *t, const Ember__NetExchange *from,
					 const struct l7_record *r)
{
	Ember__NetExchange *x = arena_raw(t, sizeof(*x));

	if (!x)
		return NULL;
	*x = *from;
	x->peer_address = arena_str(t, from->peer_address);
	x->n_fields = 0;
	x->fields = arena_alloc(t, r->nfields * sizeof(*x->fields) + 1);
	for (unsigned i = 0; x->fields && i < r->nfields; i++) {
		Ember__Label *lb = arena_alloc(t, sizeof(*lb));

		if (!lb)
			break;
		ember__label__init(lb);
		lb->name = (char *)r->fields[i].key;
		lb->value = arena_str(t, r->fields[i].val);
		x->fields[x->n_fields++] = lb;
	}
	return x;
}

static uint64_t next_random(struct netreport *t)
{
	t->rng ^= t->rng >> 12;
	t->rng ^= t->rng << 25;
	t->rng ^= t->rng >> 27;
	return t->rng * 0x2545F4914F6CDD1Dull;
}

static bool is_slowest(const struct netreport *t, const struct listed *l)
{
	for (unsigned i = 0; i < t->nslowest; i++)
		if (t->slowest[i] == l)
			return true;
	return false;
}

unsigned netreport__list_exchange(struct netreport *t, const Ember__NetExchange *from, const struct l7_record *r)
{
	size_t slot = SIZE_MAX;
	unsigned k = 0, dropped = 0;
	bool slow = false;
	struct listed *l, *out;

	if (!t->max_exchanges) {
		t->ex_not_listed++;
		return 1;
	}
	t->offered++;
	/* The sample: the first max_exchanges, then the n-th replaces one at random with chance max/n (each stays with chance max/n). */
	if (t->nsample < t->max_exchanges) {
		struct listed **room = list_room(t->sample, t->nsample, &t->cap_sample, t->max_exchanges);

		if (room) {
			t->sample = room;
			slot = t->nsample;
		}
	} else {
		/* A uniform index below offered, by multiplication (a division costs more than the rest). */
		uint64_t j = (uint64_t)(((unsigned __int128)next_random(t) * t->offered) >> 64);

		if (j < t->nsample)
			slot = (size_t)j;
	}
	if (from->answered && (t->nslowest < NETREPORT_SLOWEST ||
			       from->latency_ns > t->slowest[t->nslowest - 1]->m->latency_ns)) {
		slow = true;
		for (k = t->nslowest; k > 0 && t->slowest[k - 1]->m->latency_ns < from->latency_ns; k--)
			;
	}
	if (slot == SIZE_MAX && !slow) {
		t->ex_not_listed++;
		return 1;
	}
	if (!(l = arena_alloc(t, sizeof(*l))) || !(l->m = exchange_copy(t, from, r))) {
		t->ex_not_listed++;
		return 1;
	}
	if (slot != SIZE_MAX) {
		if (slot < t->nsample) {
			/*
			 * The one it displaces is cold (a random slot): it is touched only
			 * when it is among the slowest, which the list of those says.
			 */
			out = t->sample[slot];
			if (is_slowest(t, out))
				out->in_sample = false;
			else
				dropped++;
		} else {
			t->nsample++;
		}
		t->sample[slot] = l;
		l->in_sample = true;
	}
	if (slow) {
		if (t->nslowest == NETREPORT_SLOWEST) {
			out = t->slowest[NETREPORT_SLOWEST - 1];
			dropped += !out->in_sample;
		} else {
			t->nslowest++;
		}
		memmove(&t->slowest[k + 1], &t->slowest[k], (t->nslowest - 1 - k) * sizeof(t->slowest[0]));
		t->slowest[k] = l;
	}
	t->ex_not_listed += dropped;
	return dropped;
}

bool netreport__list_connection(struct netreport *t, const Ember__NetConnection *from)
{
	Ember__NetConnection *m, **l;

	t->calls_lost += from->calls_lost;
	t->exchanges_lost += from->exchanges_lost;
	t->gap_bytes += from->gap_bytes;
	t->tls_unprobed += from->tls_unprobed;
	t->conns_lossy += from->calls_lost || from->exchanges_lost || from->tls_unprobed;
	/* Connections closed in a report: bounded like its exchanges, and at least 1000. */
	l = list_room(t->cl, t->ncl, &t->cap_cl, t->max_exchanges > 1000 ? t->max_exchanges : 1000);
	if (l)
		t->cl = l;
	if (!l || !(m = arena_alloc(t, sizeof(*m)))) {
		t->cl_not_listed++;
		return false;
	}
	*m = *from;
	m->process_name = arena_str(t, from->process_name);
	m->local_address = arena_str(t, from->local_address);
	m->remote_address = arena_str(t, from->remote_address);
	t->cl[t->ncl++] = m;
	return true;
}

void netreport__tls_unbound(struct netreport *t, uint64_t n)
{
	t->tls_unbound += n;
}

/* ---- the report's parts --------------------------------------------------------------- */

static Ember__NetCalls *calls_msg(struct netreport *t, struct calls *c)
{
	Ember__NetCalls *m = arena_alloc(t, sizeof(*m));

	if (!m)
		return NULL;
	ember__net_calls__init(m);
	m->count = c->count;
	m->bytes = c->bytes;
	m->time_ns = c->time;
	m->untimed = c->untimed;
	if (c->count > c->untimed) {
		m->n_hist = NET_L4_BUCKETS;
		m->hist = c->hist;
	}
	return m;
}

static Ember__NetFlow *flow_msg(struct netreport *t, struct netreport_flow *f)
{
	Ember__NetFlow *m = arena_alloc(t, sizeof(*m));

	if (!m)
		return NULL;
	ember__net_flow__init(m);
	m->pid = f->pid;
	m->process_name = arena_str(t, f->comm);
	m->side = (char *)netreport__side_name(f->side);
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

/*
 * The report is taken from the task and goes out in parts, the ring drained
 * between them: the first part carries the flows, the sampled traces and the
 * window's counters, which are then let go; the records drained meanwhile
 * fill the task's next report, never this one.
 */
unsigned netreport__publish(struct netreport *t, const struct netreport_publish *p)
{
	Ember__NetworkBatch b = EMBER__NETWORK_BATCH__INIT;
	struct sampler_counts sc;
	size_t nf = 0, per = p->part_items;
	struct nreport r;
	uint32_t parts;
	unsigned published = 0;

	b.flows = arena_alloc(t, t->nflows * sizeof(*b.flows) + 1);
	for (unsigned h = 0; b.flows && h < FLOW_BUCKETS; h++)
		for (struct netreport_flow *f = t->flows[h]; f; f = f->next) {
			Ember__NetFlow *m = flow_msg(t, f);
			if (m)
				b.flows[nf++] = m;
		}
	b.n_flows = nf;
	b.window_start_unix_ns = t->win_start_ns;
	b.window_end_unix_ns = p->now_unix_ns;
	b.exchanges_not_listed = t->ex_not_listed;
	b.connections_not_listed = t->cl_not_listed;
	b.calls_lost = t->calls_lost;
	b.exchanges_lost = t->exchanges_lost;
	b.gap_bytes = t->gap_bytes;
	b.connections_with_loss = t->conns_lossy;
	b.tls_connections_unprobed = t->tls_unprobed;
	b.tls_calls_unbound = t->tls_unbound;
	b.n_sampled = sampler__take(p->sampler, &b.sampled, &sc);
	b.sampled_not_kept = sc.not_kept;
	b.sampled_no_trace_context = sc.no_trace;
	b.sampled_bad_trace_context = sc.bad_trace;
	report_take(t, &r);
	b.exchanges_not_listed += r.ex_unlisted;
	t->win_start_ns = p->now_unix_ns;
	/* Items are bounded by twice max_exchanges plus the slowest (10^7): the count of parts fits. */
	parts = r.ncl + r.nex ? (uint32_t)((r.ncl + r.nex + per - 1) / per) : 1;
	b.parts = parts;
	for (uint32_t k = 0; k < parts && !p->monitor; k++) {
		if (k && p->drain)
			p->drain(p->ctx);
		report_part(&b, &r, k, per);
		b.last = p->last && k == parts - 1;
		publisher__network(p->pub, p->def, &b);
		published++;
		if (k)
			continue;
		/* The flows and the sampled traces went in the first part, with the window's counters. */
		reset_flows(t, p->sampler);
		b.flows = NULL;
		b.n_flows = 0;
		b.sampled = NULL;
		b.n_sampled = 0;
		b.sampled_not_kept = b.sampled_no_trace_context = b.sampled_bad_trace_context = 0;
		b.exchanges_not_listed = b.connections_not_listed = 0;
		b.calls_lost = b.exchanges_lost = b.gap_bytes = b.connections_with_loss = 0;
		b.tls_connections_unprobed = b.tls_calls_unbound = 0;
	}
	if (p->monitor)
		reset_flows(t, p->sampler);
	report_release(t, &r);
	return published;
}
