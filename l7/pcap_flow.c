/*
 * Capture files -> flows -> L7 parsers: link layers, IPv4/IPv6, TCP
 * reassembly (bounded out-of-order buffering, holes reported as gaps) and UDP
 * datagrams, each flow feeding an l7_conn.
 *
 * One file of ~1000 lines on purpose: the flow table, the reassembly and the
 * packet decoding share the flow and its two halves in every step.
 */
#include "l7/pcap_flow.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define DEFAULT_MAX_FLOWS  65536
#define DEFAULT_OOO_SEGS   64
#define DEFAULT_IDLE_NS    (300ULL * 1000000000ULL)
/* A sequence jump this large is not a hole but garbage or a new connection. */
#define MAX_SEQ_JUMP       (64u << 20)

#ifndef DLT_LINUX_SLL2
#define DLT_LINUX_SLL2 276
#endif
#ifndef DLT_IPV4
#define DLT_IPV4 228
#endif
#ifndef DLT_IPV6
#define DLT_IPV6 229
#endif
#define LINKTYPE_RAW 101

struct ooo_seg {
	struct ooo_seg *next;
	uint32_t seq, len;
	uint64_t ts_ns;
	bool fin;
	uint8_t data[];
};

struct tcp_half {
	bool seq_known;
	bool closed;         /* FIN delivered in order */
	uint32_t next_seq;
	struct ooo_seg *ooo; /* sorted by seq */
	unsigned nooo;
	size_t ooo_bytes;
};

struct flow_key {
	uint8_t proto;       /* IPPROTO_TCP / IPPROTO_UDP */
	uint8_t family;
	uint8_t pad[2];
	uint16_t port[2];
	uint8_t addr[2][16]; /* endpoint 0 < endpoint 1 (memcmp of addr+port) */
};

struct flow {
	struct flow_key key;
	struct flow *hnext;              /* hash chain */
	struct flow *lru_prev, *lru_next;
	int client;                      /* key endpoint index of the client */
	uint64_t last_ns;
	struct l7_conn *conn;
	struct tcp_half half[2];         /* by l7 direction */
	struct pcap_flow_conn info;
	struct pcap_flow *pf;
};

struct pcap_flow {
	struct l7_config cfg;
	const struct l7_parser_ops *force;
	pcap_flow_emit_fn emit;
	void *emit_ctx;
	size_t max_flows, max_ooo_bytes;
	unsigned max_ooo_segs;
	uint64_t idle_ns;
	struct flow **buckets;
	size_t nbuckets, nflows;
	struct flow *lru_head, *lru_tail;  /* head = most recent */
	uint64_t next_id;
	struct pcap_flow_stats st;
	struct l7_stats l7;
};

/* Server ports we know; a side on one of them is the server. */
static const uint16_t server_ports[] = {
	20, 21, 22, 25, 53, 80, 110, 143, 443, 1433, 1521, 2181, 2379, 3000, 3128, 3306,
	4222, 5000, 5432, 5672, 6379, 7000, 7001, 7070, 8000, 8008, 8080, 8081, 8088, 8443,
	8888, 9000, 9042, 9090, 9092, 9200, 9300, 11211, 15672, 26379, 27017, 27018, 27019,
};

static int port_rank(uint16_t p)
{
	for (size_t i = 0; i < sizeof(server_ports) / sizeof(server_ports[0]); i++)
		if (server_ports[i] == p)
			return 2;
	return p < 1024 ? 1 : 0;
}

/* ---- conn naming ---------------------------------------------------------- */

static size_t ep_str(const struct pcap_flow_endpoint *e, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	int n;

	if (!inet_ntop(e->family, e->addr, a, sizeof(a)))
		strcpy(a, "?");
	n = e->family == AF_INET6 ? snprintf(buf, len, "[%s]:%u", a, e->port) :
				    snprintf(buf, len, "%s:%u", a, e->port);
	return n < 0 ? 0 : (size_t)n;
}

char *pcap_flow__conn_str(const struct pcap_flow_conn *c, char *buf, size_t len)
{
	size_t n;

	if (!len)
		return buf;
	n = ep_str(&c->client, buf, len);
	if (n + 1 < len) {
		buf[n++] = '>';
		ep_str(&c->server, buf + n, len - n);
	}
	return buf;
}

/* ---- flow table ------------------------------------------------------------ */

static uint64_t key_hash(const struct flow_key *k)
{
	const uint8_t *p = (const uint8_t *)k;
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < sizeof(*k); i++) {
		h ^= p[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static void lru_unlink(struct pcap_flow *pf, struct flow *f)
{
	if (f->lru_prev)
		f->lru_prev->lru_next = f->lru_next;
	else
		pf->lru_head = f->lru_next;
	if (f->lru_next)
		f->lru_next->lru_prev = f->lru_prev;
	else
		pf->lru_tail = f->lru_prev;
	f->lru_prev = f->lru_next = NULL;
}

static void lru_push(struct pcap_flow *pf, struct flow *f)
{
	f->lru_prev = NULL;
	f->lru_next = pf->lru_head;
	if (pf->lru_head)
		pf->lru_head->lru_prev = f;
	pf->lru_head = f;
	if (!pf->lru_tail)
		pf->lru_tail = f;
}

static void conn_emit(void *ctx, const struct l7_record *rec)
{
	struct flow *f = ctx;
	struct pcap_flow_conn info = f->info;

	if (f->conn && l7_conn__swapped(f->conn)) {
		info.client = f->info.server;
		info.server = f->info.client;
	}
	f->pf->emit(f->pf->emit_ctx, &info, rec);
}

static void free_ooo(struct tcp_half *h)
{
	while (h->ooo) {
		struct ooo_seg *s = h->ooo;

		h->ooo = s->next;
		free(s);
	}
	h->nooo = 0;
	h->ooo_bytes = 0;
}

static void flush_half(struct pcap_flow *pf, struct flow *f, enum l7_dir dir);

/* Finishes and frees a flow. */
static void flow_end(struct pcap_flow *pf, struct flow *f, uint64_t ts)
{
	struct flow **pp = &pf->buckets[key_hash(&f->key) & (pf->nbuckets - 1)];

	if (!f->key.proto || f->key.proto == IPPROTO_TCP) {
		flush_half(pf, f, L7_DIR_REQ);
		flush_half(pf, f, L7_DIR_RESP);
	}
	if (f->conn)
		l7_conn__finish(f->conn, ts);
	while (*pp && *pp != f)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = f->hnext;
	lru_unlink(pf, f);
	pf->nflows--;
	free_ooo(&f->half[0]);
	free_ooo(&f->half[1]);
	l7_conn__free(f->conn);
	free(f);
}

static struct flow *flow_find(struct pcap_flow *pf, const struct flow_key *k)
{
	struct flow *f = pf->buckets[key_hash(k) & (pf->nbuckets - 1)];

	while (f && memcmp(&f->key, k, sizeof(*k)))
		f = f->hnext;
	return f;
}

static struct flow *flow_new(struct pcap_flow *pf, const struct flow_key *k, int client,
			     bool certain, uint64_t ts)
{
	struct l7_conn_opts co = { 0 };
	struct l7_config cfg = pf->cfg;
	struct flow *f;
	size_t b;

	while (pf->nflows >= pf->max_flows && pf->lru_tail) {
		pf->st.flows_evicted++;
		flow_end(pf, pf->lru_tail, ts);
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		pf->st.flow_errors++;
		return NULL;
	}
	f->key = *k;
	f->client = client;
	f->pf = pf;
	f->last_ns = ts;
	f->info.udp = k->proto == IPPROTO_UDP;
	f->info.id = ++pf->next_id;
	f->info.client.family = f->info.server.family = k->family;
	memcpy(f->info.client.addr, k->addr[client], 16);
	f->info.client.port = k->port[client];
	memcpy(f->info.server.addr, k->addr[!client], 16);
	f->info.server.port = k->port[!client];

	cfg.transport = f->info.udp ? L7_TRANSPORT_UDP : L7_TRANSPORT_TCP;
	co.cfg = &cfg;
	co.force = pf->force;
	co.client_port = f->info.client.port;
	co.server_port = f->info.server.port;
	co.dir_certain = certain;
	co.emit = conn_emit;
	co.emit_ctx = f;
	co.stats = &pf->l7;
	if (pf->force && f->info.udp && !pf->force->udp) {
		f->conn = NULL; /* forced protocol does not do UDP: flow ignored */
	} else {
		f->conn = l7_conn__new(&co);
		if (!f->conn) {
			pf->st.flow_errors++;
			free(f);
			return NULL;
		}
	}
	b = key_hash(k) & (pf->nbuckets - 1);
	f->hnext = pf->buckets[b];
	pf->buckets[b] = f;
	lru_push(pf, f);
	pf->nflows++;
	pf->st.flows++;
	return f;
}

/* ---- TCP reassembly ------------------------------------------------------------ */

static void deliver(struct pcap_flow *pf, struct flow *f, enum l7_dir dir, const uint8_t *p,
		    size_t n, uint64_t ts)
{
	(void)pf;
	if (f->conn && n)
		l7_conn__feed(f->conn, dir, p, n, ts);
}

static void report_gap(struct pcap_flow *pf, struct flow *f, enum l7_dir dir, size_t n, uint64_t ts)
{
	if (!n)
		return;
	pf->st.gaps++;
	pf->st.gap_bytes += n;
	if (f->conn)
		l7_conn__gap(f->conn, dir, n, ts);
}

/* Delivers held segments that now continue the stream. */
static void drain(struct pcap_flow *pf, struct flow *f, enum l7_dir dir)
{
	struct tcp_half *h = &f->half[dir];

	while (h->ooo) {
		struct ooo_seg *s = h->ooo;
		int32_t rel = (int32_t)(s->seq - h->next_seq);
		uint32_t skip;

		if (rel > 0)
			break;
		h->ooo = s->next;
		h->nooo--;
		h->ooo_bytes -= s->len;
		skip = (0u - (uint32_t)rel);
		if (skip < s->len) {
			deliver(pf, f, dir, s->data + skip, s->len - skip, s->ts_ns);
			pf->st.retrans_bytes += skip;
			h->next_seq += s->len - skip;
		} else {
			pf->st.retrans_bytes += s->len;
		}
		if (s->fin && !h->closed && (int32_t)(s->seq + s->len - h->next_seq) >= 0) {
			h->closed = true;
			h->next_seq++;
		}
		free(s);
	}
}

/* Declares the hole before the first held segment lost, and continues. */
static void skip_hole(struct pcap_flow *pf, struct flow *f, enum l7_dir dir, uint64_t ts)
{
	struct tcp_half *h = &f->half[dir];
	uint32_t n;

	if (!h->ooo)
		return;
	n = h->ooo->seq - h->next_seq;
	report_gap(pf, f, dir, n, ts);
	h->next_seq = h->ooo->seq;
	drain(pf, f, dir);
}

/* End of the flow: whatever is held is delivered after declaring its holes. */
static void flush_half(struct pcap_flow *pf, struct flow *f, enum l7_dir dir)
{
	while (f->half[dir].ooo)
		skip_hole(pf, f, dir, f->half[dir].ooo->ts_ns);
}

static void hold(struct pcap_flow *pf, struct flow *f, enum l7_dir dir, uint32_t seq,
		 const uint8_t *p, uint32_t n, bool fin, uint64_t ts)
{
	struct tcp_half *h = &f->half[dir];
	struct ooo_seg **pp, *s;

	/* Over the bound: the hole in front will not be filled in time. */
	while (h->ooo && (h->nooo >= pf->max_ooo_segs || h->ooo_bytes + n > pf->max_ooo_bytes)) {
		pf->st.ooo_overflow++;
		skip_hole(pf, f, dir, ts);
	}
	if ((int32_t)(seq - h->next_seq) <= 0) {
		/* skip_hole() caught up with this segment. */
		uint32_t skip = h->next_seq - seq;

		if (skip < n) {
			deliver(pf, f, dir, p + skip, n - skip, ts);
			h->next_seq += n - skip;
		}
		if (fin && !h->closed) {
			h->closed = true;
			h->next_seq++;
		}
		drain(pf, f, dir);
		return;
	}
	if (n > pf->max_ooo_bytes) {
		/* Cannot be held at all: the hole becomes a gap right away. */
		pf->st.ooo_overflow++;
		report_gap(pf, f, dir, seq - h->next_seq, ts);
		h->next_seq = seq;
		deliver(pf, f, dir, p, n, ts);
		h->next_seq += n;
		drain(pf, f, dir);
		return;
	}
	s = malloc(sizeof(*s) + n);
	if (!s) {
		pf->st.flow_errors++;
		return;
	}
	s->seq = seq;
	s->len = n;
	s->ts_ns = ts;
	s->fin = fin;
	memcpy(s->data, p, n);
	for (pp = &h->ooo; *pp && (int32_t)((*pp)->seq - seq) <= 0; pp = &(*pp)->next)
		;
	s->next = *pp;
	*pp = s;
	h->nooo++;
	h->ooo_bytes += n;
	pf->st.ooo_segments++;
}

/*
 * The peer acknowledged up to `ack`: bytes of dir before it that we never saw
 * were lost by the capture, not the network.  Declare them now, so the parser
 * does not wait for them while the other direction moves on.
 */
static void acked(struct pcap_flow *pf, struct flow *f, enum l7_dir dir, uint32_t ack, uint64_t ts)
{
	struct tcp_half *h = &f->half[dir];

	while (h->seq_known && !h->closed) {
		int32_t ahead = (int32_t)(ack - h->next_seq);
		uint32_t n;

		if (ahead <= 0 || (uint32_t)ahead > MAX_SEQ_JUMP)
			return;
		/*
		 * One byte with nothing held is most likely a FIN the capture
		 * missed, not data: a real hole shows up again once later bytes
		 * are held.
		 */
		if (ahead == 1 && !h->ooo)
			return;
		n = (uint32_t)ahead;
		if (h->ooo && (int32_t)(h->ooo->seq - h->next_seq) < ahead)
			n = h->ooo->seq - h->next_seq;
		report_gap(pf, f, dir, n, ts);
		h->next_seq += n;
		drain(pf, f, dir);
	}
}

static void tcp_segment(struct pcap_flow *pf, struct flow *f, enum l7_dir dir, uint32_t seq,
			uint32_t ack, uint8_t flags, const uint8_t *p, uint32_t n, uint32_t lost,
			uint64_t ts)
{
	struct tcp_half *h = &f->half[dir];
	bool syn = flags & 0x02, fin = flags & 0x01, rst = flags & 0x04;
	int32_t rel;

	if (syn) {
		h->seq_known = true;
		h->next_seq = seq + 1;
		h->closed = false;
		seq++;
	}
	if (!h->seq_known && (n || fin)) {
		h->seq_known = true;
		h->next_seq = seq;
	}
	if ((flags & 0x10) && !rst)
		acked(pf, f, (enum l7_dir)!dir, ack, ts);
	if (!h->seq_known || h->closed)
		return;
	/* Bytes cut by the snap length: deliver what we have, then a gap. */
	if (lost) {
		uint32_t total = n + lost;

		rel = (int32_t)(seq - h->next_seq);
		if (rel <= 0 && (0u - (uint32_t)rel) >= total)
			return; /* old data anyway */
		if (rel == 0 || (rel < 0 && (0u - (uint32_t)rel) < n)) {
			uint32_t skip = (uint32_t)(rel < 0 ? 0u - (uint32_t)rel : 0u);

			deliver(pf, f, dir, p + skip, n - skip, ts);
			report_gap(pf, f, dir, lost, ts);
			h->next_seq = seq + total;
			drain(pf, f, dir);
			return;
		}
		/* Out of order and truncated: hold only what we have. */
		fin = false;
	}
	rel = (int32_t)(seq - h->next_seq);
	if (rel < 0) {
		uint32_t dup = (0u - (uint32_t)rel);

		if (dup >= n) {
			pf->st.retrans_bytes += n;
			if (fin && dup == n && !h->closed) {
				h->closed = true;
				h->next_seq++;
			}
			return;
		}
		pf->st.retrans_bytes += dup;
		p += dup;
		n -= dup;
		seq += dup;
		rel = 0;
	}
	if (rel > 0) {
		if ((uint32_t)rel > MAX_SEQ_JUMP) {
			pf->st.malformed++;
			return;
		}
		if (n || fin)
			hold(pf, f, dir, seq, p, n, fin, ts);
		return;
	}
	deliver(pf, f, dir, p, n, ts);
	h->next_seq += n;
	if (fin && !h->closed) {
		h->closed = true;
		h->next_seq++;
	}
	drain(pf, f, dir);
}

/* ---- packet decoding -------------------------------------------------------------- */

static void touch(struct pcap_flow *pf, struct flow *f, uint64_t ts)
{
	f->last_ns = ts;
	if (pf->lru_head != f) {
		lru_unlink(pf, f);
		lru_push(pf, f);
	}
}

static void expire(struct pcap_flow *pf, uint64_t now)
{
	while (pf->lru_tail && now > pf->lru_tail->last_ns && now - pf->lru_tail->last_ns > pf->idle_ns) {
		pf->st.flows_timed_out++;
		flow_end(pf, pf->lru_tail, now);
	}
}

static void make_key(struct flow_key *k, uint8_t proto, int family, const uint8_t *src,
		     const uint8_t *dst, size_t alen, uint16_t sport, uint16_t dport, int *ret_src_idx)
{
	uint8_t a[16] = { 0 }, b[16] = { 0 };
	int c;

	memset(k, 0, sizeof(*k));
	memcpy(a, src, alen);
	memcpy(b, dst, alen);
	c = memcmp(a, b, 16);
	if (!c)
		c = sport < dport ? -1 : sport > dport;
	k->proto = proto;
	k->family = (uint8_t)family;
	if (c <= 0) {
		memcpy(k->addr[0], a, 16);
		memcpy(k->addr[1], b, 16);
		k->port[0] = sport;
		k->port[1] = dport;
		*ret_src_idx = 0;
	} else {
		memcpy(k->addr[0], b, 16);
		memcpy(k->addr[1], a, 16);
		k->port[0] = dport;
		k->port[1] = sport;
		*ret_src_idx = 1;
	}
}

/* The endpoints of one L4 packet: address family and bytes, length of each address. */
struct l4_addr {
	int family;
	const uint8_t *src, *dst;
	size_t alen;
};

/* Which side of a new TCP flow is the client: the SYN says, else the likelier server port. */
static int tcp_client(uint8_t flags, uint16_t sport, uint16_t dport, int srcidx, bool *certain)
{
	int rs, rd;

	*certain = true;
	if ((flags & 0x12) == 0x02)
		return srcidx;
	if ((flags & 0x12) == 0x12)
		return !srcidx;
	*certain = false;
	rs = port_rank(sport);
	rd = port_rank(dport);
	if (rs != rd)
		return rs > rd ? !srcidx : srcidx;
	return sport > dport ? srcidx : sport < dport ? !srcidx : srcidx;
}

static void tcp(struct pcap_flow *pf, const struct l4_addr *a, const uint8_t *p, size_t have, size_t len,
		uint64_t ts)
{
	struct flow_key k;
	struct flow *f;
	size_t doff;
	uint16_t sport, dport;
	uint32_t seq, ack, n, lost;
	uint8_t flags;
	int srcidx;

	if (len < 20 || have < 20) {
		pf->st.malformed += len < 20;
		pf->st.truncated += len >= 20;
		return;
	}
	doff = (size_t)(p[12] >> 4) * 4;
	if (doff < 20 || doff > len) {
		pf->st.malformed++;
		return;
	}
	if (doff > have) {
		pf->st.truncated++;
		return;
	}
	pf->st.tcp_segments++;
	sport = (uint16_t)(p[0] << 8 | p[1]);
	dport = (uint16_t)(p[2] << 8 | p[3]);
	seq = (uint32_t)p[4] << 24 | (uint32_t)p[5] << 16 | (uint32_t)p[6] << 8 | p[7];
	ack = (uint32_t)p[8] << 24 | (uint32_t)p[9] << 16 | (uint32_t)p[10] << 8 | p[11];
	flags = p[13];
	n = (uint32_t)(have - doff);
	lost = (uint32_t)(len - have);
	make_key(&k, IPPROTO_TCP, a->family, a->src, a->dst, a->alen, sport, dport, &srcidx);
	f = flow_find(pf, &k);
	if (f && (flags & 0x12) == 0x02 && f->half[f->client == srcidx ? 0 : 1].seq_known &&
	    seq + 1 != f->half[f->client == srcidx ? 0 : 1].next_seq) {
		/* A new SYN on a known 4-tuple: the old connection is over. */
		flow_end(pf, f, ts);
		f = NULL;
	}
	if (!f) {
		bool certain;
		int client;

		if ((!(flags & 0x02) && !n && !lost) || (flags & 0x04)) {
			pf->st.ignored_no_flow++;
			return;
		}
		client = tcp_client(flags, sport, dport, srcidx, &certain);
		f = flow_new(pf, &k, client, certain, ts);
		if (!f)
			return;
	}
	touch(pf, f, ts);
	tcp_segment(pf, f, f->client == srcidx ? L7_DIR_REQ : L7_DIR_RESP, seq, ack, flags, p + doff, n, lost, ts);
	if ((flags & 0x04) || (f->half[0].closed && f->half[1].closed))
		flow_end(pf, f, ts);
}

static void udp(struct pcap_flow *pf, const struct l4_addr *a, const uint8_t *p, size_t have, size_t len,
		uint64_t ts)
{
	struct flow_key k;
	struct flow *f;
	uint16_t sport, dport, ulen;
	int srcidx;

	if (len < 8 || have < 8) {
		pf->st.malformed += len < 8;
		pf->st.truncated += len >= 8;
		return;
	}
	sport = (uint16_t)(p[0] << 8 | p[1]);
	dport = (uint16_t)(p[2] << 8 | p[3]);
	ulen = (uint16_t)(p[4] << 8 | p[5]);
	if (ulen < 8 || ulen > len) {
		pf->st.malformed++;
		return;
	}
	if (ulen > have) {
		/* A datagram is useless in part. */
		pf->st.truncated++;
		return;
	}
	pf->st.udp_datagrams++;
	make_key(&k, IPPROTO_UDP, a->family, a->src, a->dst, a->alen, sport, dport, &srcidx);
	f = flow_find(pf, &k);
	if (!f) {
		int rs = port_rank(sport), rd = port_rank(dport);
		int client = rs != rd ? (rs > rd ? !srcidx : srcidx) : srcidx;

		f = flow_new(pf, &k, client, rs != rd, ts);
		if (!f)
			return;
	}
	touch(pf, f, ts);
	if (f->conn)
		l7_conn__feed(f->conn, f->client == srcidx ? L7_DIR_REQ : L7_DIR_RESP, p + 8, ulen - 8u, ts);
}

static void l4(struct pcap_flow *pf, int family, const uint8_t *src, const uint8_t *dst,
	       size_t alen, uint8_t proto, const uint8_t *p, size_t have, size_t len, uint64_t ts)
{
	const struct l4_addr a = { family, src, dst, alen };

	if (proto == IPPROTO_TCP)
		tcp(pf, &a, p, have, len, ts);
	else if (proto == IPPROTO_UDP)
		udp(pf, &a, p, have, len, ts);
	else
		pf->st.non_tcp_udp++;
}

static void ipv4(struct pcap_flow *pf, const uint8_t *p, size_t have, uint64_t ts)
{
	size_t ihl, tot;

	if (have < 20) {
		pf->st.truncated++;
		return;
	}
	ihl = (size_t)(p[0] & 0xf) * 4;
	tot = (size_t)(p[2] << 8 | p[3]);
	if ((p[0] >> 4) != 4 || ihl < 20 || tot < ihl) {
		pf->st.malformed++;
		return;
	}
	if (have < ihl) {
		pf->st.truncated++;
		return;
	}
	if ((p[6] & 0x3f) || p[7]) { /* MF or fragment offset */
		pf->st.ip_fragments++;
		return;
	}
	if (have > tot)
		have = tot; /* Ethernet padding */
	else if (have < tot)
		pf->st.truncated++;
	l4(pf, AF_INET, p + 12, p + 16, 4, p[9], p + ihl, have - ihl, tot - ihl, ts);
}

static void ipv6(struct pcap_flow *pf, const uint8_t *p, size_t have, uint64_t ts)
{
	size_t off = 40, len;
	uint8_t nh;

	if (have < 40) {
		pf->st.truncated++;
		return;
	}
	if ((p[0] >> 4) != 6) {
		pf->st.malformed++;
		return;
	}
	len = 40 + (size_t)(p[4] << 8 | p[5]);
	nh = p[6];
	if (have > len)
		have = len;
	else if (have < len)
		pf->st.truncated++;
	for (int hops = 0; hops < 8; hops++) {
		size_t el;

		switch (nh) {
		case 0: case 43: case 60: /* hop-by-hop, routing, destination options */
			if (off + 8 > have) {
				pf->st.truncated++;
				return;
			}
			el = ((size_t)p[off + 1] + 1) * 8;
			break;
		case 51: /* AH */
			if (off + 8 > have) {
				pf->st.truncated++;
				return;
			}
			el = ((size_t)p[off + 1] + 2) * 4;
			break;
		case 44:
			pf->st.ip_fragments++;
			return;
		default:
			if (off > len) {
				pf->st.malformed++;
				return;
			}
			l4(pf, AF_INET6, p + 8, p + 24, 16, nh, p + off, have - off, len - off, ts);
			return;
		}
		nh = p[off];
		off += el;
		if (off > have) {
			pf->st.truncated++;
			return;
		}
	}
	pf->st.malformed++;
}

static void ip_any(struct pcap_flow *pf, const uint8_t *p, size_t have, uint64_t ts)
{
	if (!have) {
		pf->st.truncated++;
		return;
	}
	switch (p[0] >> 4) {
	case 4: ipv4(pf, p, have, ts); return;
	case 6: ipv6(pf, p, have, ts); return;
	default: pf->st.non_ip++; return;
	}
}

static void ethertype(struct pcap_flow *pf, uint16_t et, const uint8_t *p, size_t have, uint64_t ts)
{
	/* Stacked VLAN tags (802.1Q, 802.1ad, legacy QinQ). */
	for (int i = 0; i < 4 && (et == 0x8100 || et == 0x88a8 || et == 0x9100); i++) {
		if (have < 4) {
			pf->st.truncated++;
			return;
		}
		et = (uint16_t)(p[2] << 8 | p[3]);
		p += 4;
		have -= 4;
	}
	if (et == 0x0800)
		ipv4(pf, p, have, ts);
	else if (et == 0x86dd)
		ipv6(pf, p, have, ts);
	else
		pf->st.non_ip++;
}

int pcap_flow__packet(struct pcap_flow *pf, int linktype, const uint8_t *pkt, size_t caplen,
		      size_t wirelen, uint64_t ts_ns)
{
	(void)wirelen; /* the IP length fields tell what was cut */
	pf->st.packets++;
	pf->st.bytes += caplen;
	expire(pf, ts_ns);
	switch (linktype) {
	case DLT_EN10MB:
		if (caplen < 14) {
			pf->st.truncated++;
			return 0;
		}
		ethertype(pf, (uint16_t)(pkt[12] << 8 | pkt[13]), pkt + 14, caplen - 14, ts_ns);
		return 0;
	case DLT_LINUX_SLL:
		if (caplen < 16) {
			pf->st.truncated++;
			return 0;
		}
		ethertype(pf, (uint16_t)(pkt[14] << 8 | pkt[15]), pkt + 16, caplen - 16, ts_ns);
		return 0;
	case DLT_LINUX_SLL2:
		if (caplen < 20) {
			pf->st.truncated++;
			return 0;
		}
		ethertype(pf, (uint16_t)(pkt[0] << 8 | pkt[1]), pkt + 20, caplen - 20, ts_ns);
		return 0;
	case DLT_RAW:
	case LINKTYPE_RAW:
	case DLT_IPV4:
	case DLT_IPV6:
#if DLT_RAW != 14
	case 14: /* DLT_RAW on OpenBSD */
#endif
		ip_any(pf, pkt, caplen, ts_ns);
		return 0;
	case DLT_NULL:
	case DLT_LOOP: {
		uint32_t fam;

		if (caplen < 4) {
			pf->st.truncated++;
			return 0;
		}
		/* The family is in the capturing host's byte order: accept both. */
		fam = (uint32_t)pkt[0] << 24 | (uint32_t)pkt[1] << 16 | (uint32_t)pkt[2] << 8 | pkt[3];
		if (fam > 0xffff)
			fam = __builtin_bswap32(fam);
		if (fam == 2)
			ipv4(pf, pkt + 4, caplen - 4, ts_ns);
		else if (fam == 10 || fam == 24 || fam == 28 || fam == 30)
			ipv6(pf, pkt + 4, caplen - 4, ts_ns);
		else
			pf->st.non_ip++;
		return 0;
	}
	default:
		pf->st.unsupported_link++;
		return 0;
	}
}

/* ---- capture files ------------------------------------------------------------------- */

int pcap_flow__read(struct pcap_flow *pf, pcap_t *p, char *errbuf)
{
	int linktype = pcap_datalink(p);
	struct pcap_pkthdr *h;
	const u_char *data;
	int r;
	/* Nanosecond precision was requested when opening; else microseconds. */
	uint64_t mult = pcap_get_tstamp_precision(p) == PCAP_TSTAMP_PRECISION_NANO ? 1 : 1000;

	while ((r = pcap_next_ex(p, &h, &data)) == 1) {
		uint64_t ts = (uint64_t)h->ts.tv_sec * 1000000000ULL + (uint64_t)h->ts.tv_usec * mult;

		pcap_flow__packet(pf, linktype, data, h->caplen, h->len, ts);
	}
	if (r == PCAP_ERROR) {
		/* A truncated last record is common in real captures: report, keep what we read. */
		if (errbuf)
			snprintf(errbuf, PCAP_ERRBUF_SIZE, "%s", pcap_geterr(p));
		return -EIO;
	}
	return 0;
}

int pcap_flow__read_file(struct pcap_flow *pf, const char *path, char *errbuf)
{
	char eb[PCAP_ERRBUF_SIZE] = "";
	pcap_t *p;
	int err;

	p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, eb);
	if (!p) {
		if (errbuf)
			snprintf(errbuf, PCAP_ERRBUF_SIZE, "%s", eb);
		return -EINVAL;
	}
	err = pcap_flow__read(pf, p, errbuf);
	pcap_close(p);
	return err;
}

int pcap_flow__read_fp(struct pcap_flow *pf, FILE *fp, char *errbuf)
{
	char eb[PCAP_ERRBUF_SIZE] = "";
	pcap_t *p;
	int err;

	/* pcap_close() closes fp as well. */
	p = pcap_fopen_offline_with_tstamp_precision(fp, PCAP_TSTAMP_PRECISION_NANO, eb);
	if (!p) {
		if (errbuf)
			snprintf(errbuf, PCAP_ERRBUF_SIZE, "%s", eb);
		return -EINVAL;
	}
	err = pcap_flow__read(pf, p, errbuf);
	pcap_close(p);
	return err;
}

/* ---- lifetime -------------------------------------------------------------------------- */

struct pcap_flow *pcap_flow__new(const struct pcap_flow_opts *opts)
{
	struct pcap_flow *pf;
	size_t nb = 1;

	if (!opts || !opts->cfg || !opts->emit) {
		errno = EINVAL;
		return NULL;
	}
	pf = calloc(1, sizeof(*pf));
	if (!pf)
		return NULL;
	pf->cfg = *opts->cfg;
	pf->force = opts->force;
	pf->emit = opts->emit;
	pf->emit_ctx = opts->emit_ctx;
	pf->max_flows = opts->max_flows ? opts->max_flows : DEFAULT_MAX_FLOWS;
	pf->max_ooo_bytes = opts->max_ooo_bytes ? opts->max_ooo_bytes :
			    (opts->cfg->max_conn_mem ? opts->cfg->max_conn_mem : 256 * 1024);
	pf->max_ooo_segs = opts->max_ooo_segs ? opts->max_ooo_segs : DEFAULT_OOO_SEGS;
	pf->idle_ns = opts->idle_timeout_ns ? opts->idle_timeout_ns : DEFAULT_IDLE_NS;
	while (nb < pf->max_flows && nb < (1u << 20))
		nb <<= 1;
	pf->nbuckets = nb;
	pf->buckets = calloc(nb, sizeof(*pf->buckets));
	if (!pf->buckets) {
		free(pf);
		errno = ENOMEM;
		return NULL;
	}
	return pf;
}

void pcap_flow__finish(struct pcap_flow *pf)
{
	/* Oldest first, so records of earlier connections come out first. */
	while (pf->lru_tail)
		flow_end(pf, pf->lru_tail, pf->lru_tail->last_ns);
}

struct pcap_flow *pcap_flow__free(struct pcap_flow *pf)
{
	if (!pf)
		return NULL;
	while (pf->lru_tail) {
		struct flow *f = pf->lru_tail;

		lru_unlink(pf, f);
		free_ooo(&f->half[0]);
		free_ooo(&f->half[1]);
		l7_conn__free(f->conn);
		free(f);
	}
	free(pf->buckets);
	free(pf);
	return NULL;
}

const struct pcap_flow_stats *pcap_flow__stats(const struct pcap_flow *pf) { return &pf->st; }
const struct l7_stats *pcap_flow__l7_stats(const struct pcap_flow *pf) { return &pf->l7; }
