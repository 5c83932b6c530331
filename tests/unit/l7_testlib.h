/*
 * Test helpers for the L7 parser unit tests (MySQL, PostgreSQL, Redis, Kafka,
 * CQL, MongoDB): record collection, chunked feeding, and a minimal pcap
 * driver that replays the TCP payloads of a capture into one parser per
 * connection.  The driver is deliberately simple (in-order segments,
 * retransmissions dropped by sequence number, holes reported as gaps): the
 * real reassembly lives in l7/pcap_flow.c; this one only has to be
 * good enough for the shared test captures.
 */
#ifndef EMBER_TESTS_L7_TESTLIB_H
#define EMBER_TESTS_L7_TESTLIB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <arpa/inet.h>
#include <pcap/pcap.h>

#include "l7/l7.h"

struct trec {
	struct l7_record r;
};

struct tcollect {
	struct trec *v;
	size_t n, cap;
	char conn[128];   /* label stamped on records (pcap driver) */
	char (*conns)[128];
};

static inline void tcollect_emit(void *ctx, const struct l7_record *rec)
{
	struct tcollect *c = ctx;

	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 16;
		c->v = realloc(c->v, c->cap * sizeof(*c->v));
		c->conns = realloc(c->conns, c->cap * sizeof(*c->conns));
		if (!c->v || !c->conns)
			abort();
	}
	c->v[c->n].r = *rec;
	/* Body pointers are only valid during the call. */
	c->v[c->n].r.req_body = c->v[c->n].r.resp_body = NULL;
	memcpy(c->conns[c->n], c->conn, sizeof(c->conn));
	c->n++;
}

static inline void tcollect_free(struct tcollect *c)
{
	free(c->v);
	free(c->conns);
	memset(c, 0, sizeof(*c));
}

static inline const char *tfield(const struct l7_record *r, const char *key)
{
	for (unsigned i = 0; i < r->nfields; i++)
		if (!strcmp(r->fields[i].key, key))
			return r->fields[i].val;
	return NULL;
}

/* "-" for a missing field, like oracle.sh. */
static inline const char *tfield_or(const struct l7_record *r, const char *key)
{
	const char *v = tfield(r, key);
	return v && *v ? v : "-";
}

/* Feed buf in chunks of `step` bytes (0 = whole). Returns the first error. */
static inline int tfeed(const struct l7_parser_ops *ops, void *st, enum l7_dir dir,
		 const void *buf, size_t len, size_t step, uint64_t ts)
{
	const uint8_t *p = buf;
	int err;

	if (!step)
		step = len ? len : 1;
	while (len) {
		size_t n = len < step ? len : step;
		if ((err = ops->feed(st, dir, p, n, ts)) < 0)
			return err;
		p += n;
		len -= n;
	}
	return 0;
}

/*
 * One call as live capture copies it once the parser has answered head():
 * the bytes it asked for, then the rest as a gap.  Returns the bytes fed
 * (len when it wants them all) or a negative error.
 */
static inline long tcapped(const struct l7_parser_ops *ops, void *st, enum l7_dir dir, const void *buf, size_t len,
			   uint64_t ts)
{
	size_t head = ops->head ? ops->head(st, dir) : L7_HEAD_ALL;
	size_t n = head < len ? head : len;
	int err;

	if (n && (err = ops->feed(st, dir, buf, n, ts)) < 0)
		return err;
	if (n < len && (err = ops->gap(st, dir, len - n, ts)) < 0)
		return err;
	return (long)n;
}

/* ---- byte builders ------------------------------------------------------ */

struct tbuf {
	uint8_t d[1 << 16];
	size_t n;
};

static inline void tb_u8(struct tbuf *b, unsigned v) { if (b->n < sizeof(b->d)) b->d[b->n++] = (uint8_t)v; }
static inline void tb_be16(struct tbuf *b, unsigned v) { tb_u8(b, v >> 8); tb_u8(b, v); }
static inline void tb_be32(struct tbuf *b, uint32_t v) { tb_be16(b, v >> 16); tb_be16(b, v & 0xffff); }
static inline void tb_le16(struct tbuf *b, unsigned v) { tb_u8(b, v); tb_u8(b, v >> 8); }
static inline void tb_le24(struct tbuf *b, uint32_t v) { tb_u8(b, v); tb_u8(b, v >> 8); tb_u8(b, v >> 16); }
static inline void tb_le32(struct tbuf *b, uint32_t v) { tb_le16(b, v & 0xffff); tb_le16(b, v >> 16); }
static inline void tb_mem(struct tbuf *b, const void *p, size_t n)
{
	if (!n)
		return;
	if (n > sizeof(b->d) - b->n)
		n = sizeof(b->d) - b->n;
	memcpy(b->d + b->n, p, n);
	b->n += n;
}
static inline void tb_str(struct tbuf *b, const char *s) { tb_mem(b, s, strlen(s)); }
static inline void tb_cstr(struct tbuf *b, const char *s) { tb_mem(b, s, strlen(s) + 1); }
static inline void tb_fill(struct tbuf *b, int c, size_t n) { while (n--) tb_u8(b, (unsigned)c); }

/*
 * A client that pipelines without bound: on a fresh connection capped at
 * `cap` bytes (other settings default), requests msg(b, 0), msg(b, 1), ...
 * up to msg(b, max - 1) are fed one per feed() until one fails.  Returns that
 * error, 0 when all were taken, -ENOMEM when the setup failed.
 */
static inline int tflood(const struct l7_parser_ops *ops, size_t cap, void (*msg)(struct tbuf *b, int i), int max)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct tcollect c = { 0 };
	struct tbuf *b = calloc(1, sizeof(*b));
	void *st = NULL;
	int rc = 0;

	cfg.max_conn_mem = cap;
	if (!b || !(st = ops->create(&cfg, tcollect_emit, &c))) {
		free(b);
		return -ENOMEM;
	}
	for (int i = 0; i < max && !rc; i++) {
		b->n = 0;
		msg(b, i);
		rc = ops->feed(st, L7_DIR_REQ, b->d, b->n, 1);
	}
	ops->free(st);
	tcollect_free(&c);
	free(b);
	return rc;
}

/* ---- scripted conversations ------------------------------------------ */

struct tstep {
	enum l7_dir dir;
	const uint8_t *p;
	size_t n;
};

/*
 * Play the steps in order, each split into `step`-byte chunks (0 = whole),
 * then finish.  Returns the first feed error (0 if none); records go to out.
 */
static inline int tplay(const struct l7_parser_ops *ops, const struct l7_config *cfg, const struct tstep *s,
		 size_t ns, size_t step, struct tcollect *out)
{
	void *st = ops->create(cfg, tcollect_emit, out);
	int err = 0;

	if (!st)
		return -ENOMEM;
	for (size_t i = 0; i < ns && !err; i++)
		err = tfeed(ops, st, s[i].dir, s[i].p, s[i].n, step, 1000 * (uint64_t)(i + 1));
	ops->finish(st, 1000 * (uint64_t)(ns + 1));
	ops->free(st);
	return err;
}

/* Path of a shared test capture, NULL when the shared tree is absent. */
static inline const char *tshared(const char *rel, char *buf, size_t sz)
{
	const char *root = getenv("SHARED");
	FILE *f;

	snprintf(buf, sz, "%s/testdata/pcap/%s", root && *root ? root : "../shared", rel);
	if (!(f = fopen(buf, "rb")))
		return NULL;
	fclose(f);
	return buf;
}

/* ---- pcap driver ---------------------------------------------------- */

struct tflow {
	uint8_t a_ip[16], b_ip[16];     /* a = client */
	uint16_t a_port, b_port;
	int v6;
	uint32_t next_seq[2];           /* 0: client->server, 1: server->client */
	int have_seq[2];
	void *st;
	int dead;
	char label[128];
};

struct tpcap {
	struct tflow flows[64];
	unsigned nflows;
	int errors;                     /* parser errors (-EPROTO/-ENOBUFS) */
	int gaps;
};

static inline void tpcap_label(struct tflow *f)
{
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];

	inet_ntop(f->v6 ? AF_INET6 : AF_INET, f->a_ip, a, sizeof(a));
	inet_ntop(f->v6 ? AF_INET6 : AF_INET, f->b_ip, b, sizeof(b));
	if (f->v6)
		snprintf(f->label, sizeof(f->label), "[%s]:%u>[%s]:%u", a, f->a_port, b, f->b_port);
	else
		snprintf(f->label, sizeof(f->label), "%s:%u>%s:%u", a, f->a_port, b, f->b_port);
}

/*
 * Replay `path` into `ops`, one parser instance per TCP connection whose
 * server port is server_port (0: the SYN's target, else the lower port).
 * Returns the number of connections, or -errno.
 */
static inline int tpcap_run(const char *path, const struct l7_parser_ops *ops, const struct l7_config *cfg,
		     uint16_t server_port, struct tcollect *out, struct tpcap *tp)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *pkt;
	pcap_t *pc;
	int dlt, rc;

	memset(tp, 0, sizeof(*tp));
	pc = pcap_open_offline(path, errbuf);
	if (!pc)
		return -ENOENT;
	dlt = pcap_datalink(pc);
	while ((rc = pcap_next_ex(pc, &h, &pkt)) == 1) {
		const uint8_t *p = pkt;
		size_t len = h->caplen, off = 0;
		int v6 = 0;
		uint8_t src[16] = {0}, dst[16] = {0};
		uint16_t ethertype = 0;

		if (dlt == DLT_EN10MB) {
			if (len < 14) continue;
			ethertype = (uint16_t)(p[12] << 8 | p[13]);
			off = 14;
			while (ethertype == 0x8100 && len >= off + 4) {
				ethertype = (uint16_t)(p[off + 2] << 8 | p[off + 3]);
				off += 4;
			}
		} else if (dlt == DLT_NULL || dlt == DLT_LOOP) {
			if (len < 4) continue;
			uint32_t fam = p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
			if (dlt == DLT_LOOP || fam > 0xffff)
				fam = (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
			ethertype = fam == 2 ? 0x0800 : 0x86dd;
			off = 4;
		} else if (dlt == DLT_LINUX_SLL) {
			if (len < 16) continue;
			ethertype = (uint16_t)(p[14] << 8 | p[15]);
			off = 16;
		} else if (dlt == DLT_RAW || dlt == 12 /* DLT_RAW on some systems */) {
			ethertype = (p[0] >> 4) == 6 ? 0x86dd : 0x0800;
		} else {
			continue;
		}
		if (ethertype == 0x0800) {
			if (len < off + 20) continue;
			size_t ihl = (size_t)(p[off] & 0xf) * 4;
			if (p[off + 9] != 6 || len < off + ihl) continue;
			size_t tot = (size_t)(p[off + 2] << 8 | p[off + 3]);
			if (tot >= ihl && off + tot < len)
				len = off + tot;   /* drop Ethernet padding */
			memcpy(src, p + off + 12, 4);
			memcpy(dst, p + off + 16, 4);
			off += ihl;
		} else if (ethertype == 0x86dd) {
			if (len < off + 40 || p[off + 6] != 6) continue;
			size_t plen = (size_t)(p[off + 4] << 8 | p[off + 5]);
			if (off + 40 + plen < len)
				len = off + 40 + plen;
			memcpy(src, p + off + 8, 16);
			memcpy(dst, p + off + 24, 16);
			v6 = 1;
			off += 40;
		} else {
			continue;
		}
		if (len < off + 20) continue;
		uint16_t sport = (uint16_t)(p[off] << 8 | p[off + 1]);
		uint16_t dport = (uint16_t)(p[off + 2] << 8 | p[off + 3]);
		uint32_t seq = (uint32_t)p[off + 4] << 24 | p[off + 5] << 16 | p[off + 6] << 8 | p[off + 7];
		size_t doff = (size_t)(p[off + 12] >> 4) * 4;
		uint8_t flags = p[off + 13];
		if (len < off + doff) continue;
		const uint8_t *pl = p + off + doff;
		size_t plen = len - off - doff;
		uint64_t ts = (uint64_t)h->ts.tv_sec * 1000000000ull + (uint64_t)h->ts.tv_usec * 1000ull;
		size_t alen = v6 ? 16 : 4;

		struct tflow *f = NULL;
		int dir = 0;
		for (unsigned i = 0; i < tp->nflows; i++) {
			struct tflow *g = &tp->flows[i];
			if (g->v6 != v6) continue;
			if (!memcmp(g->a_ip, src, alen) && !memcmp(g->b_ip, dst, alen) && g->a_port == sport && g->b_port == dport) { f = g; dir = 0; break; }
			if (!memcmp(g->a_ip, dst, alen) && !memcmp(g->b_ip, src, alen) && g->a_port == dport && g->b_port == sport) { f = g; dir = 1; break; }
		}
		if (!f) {
			int client_is_src;
			if (server_port)
				client_is_src = dport == server_port || (sport != server_port && dport < sport);
			else if ((flags & 0x12) == 0x02)
				client_is_src = 1;
			else
				client_is_src = dport < sport;
			if (server_port && sport != server_port && dport != server_port)
				continue;
			if (tp->nflows == 64) continue;
			f = &tp->flows[tp->nflows++];
			memset(f, 0, sizeof(*f));
			f->v6 = v6;
			if (client_is_src) {
				memcpy(f->a_ip, src, alen); memcpy(f->b_ip, dst, alen);
				f->a_port = sport; f->b_port = dport; dir = 0;
			} else {
				memcpy(f->a_ip, dst, alen); memcpy(f->b_ip, src, alen);
				f->a_port = dport; f->b_port = sport; dir = 1;
			}
			tpcap_label(f);
			f->st = ops->create(cfg, tcollect_emit, out);
			if (!f->st) { pcap_close(pc); return -ENOMEM; }
		}
		if (flags & 0x02) {   /* SYN consumes one sequence number */
			f->next_seq[dir] = seq + 1;
			f->have_seq[dir] = 1;
			continue;
		}
		if (!plen || f->dead)
			continue;
		if (!f->have_seq[dir]) {
			f->next_seq[dir] = seq;
			f->have_seq[dir] = 1;
		}
		int32_t delta = (int32_t)(seq - f->next_seq[dir]);
		if (delta < 0) {
			if ((size_t)-delta >= plen) continue;   /* retransmission */
			pl += -delta;
			plen -= (size_t)-delta;
			seq = f->next_seq[dir];
		} else if (delta > 0) {
			tp->gaps++;
			memcpy(out->conn, f->label, sizeof(out->conn));
			if (ops->gap(f->st, dir ? L7_DIR_RESP : L7_DIR_REQ, (size_t)delta, ts) < 0) {
				f->dead = 1;
				tp->errors++;
				continue;
			}
		}
		f->next_seq[dir] = seq + (uint32_t)plen;
		memcpy(out->conn, f->label, sizeof(out->conn));
		if (ops->feed(f->st, dir ? L7_DIR_RESP : L7_DIR_REQ, pl, plen, ts) < 0) {
			f->dead = 1;
			tp->errors++;
		}
	}
	for (unsigned i = 0; i < tp->nflows; i++) {
		memcpy(out->conn, tp->flows[i].label, sizeof(out->conn));
		ops->finish(tp->flows[i].st, 0);
		ops->free(tp->flows[i].st);
	}
	pcap_close(pc);
	return (int)tp->nflows;
}

/*
 * tpcap_run() on the shared capture `rel` (under testdata/pcap/); skips the
 * calling cmocka test when the shared tree is absent.  For files that
 * include cmocka.h.
 */
#define TCAPTURE(rel, ops, cfg, server_port, out, tp) __extension__ ({ \
	char tcap_path_[512]; \
	if (!tshared((rel), tcap_path_, sizeof(tcap_path_))) { \
		fprintf(stderr, "SKIP: shared capture %s not found (../shared/testdata/pcap)\n", (rel)); \
		skip(); \
	} \
	tpcap_run(tcap_path_, (ops), (cfg), (server_port), (out), (tp)); })

/* Print records as "conn<TAB>field...": handy to diff against oracle.sh. */
static inline void tprint(FILE *fp, const struct tcollect *c, const char *const *keys)
{
	for (size_t i = 0; i < c->n; i++) {
		fprintf(fp, "%s", c->conns[i]);
		for (const char *const *k = keys; *k; k++)
			fprintf(fp, "\t%s", tfield_or(&c->v[i].r, *k));
		fprintf(fp, "\n");
	}
}

#endif
