/*
 * DNS (RFC 1035) over UDP (one message per datagram) and TCP (2-byte length
 * prefix, RFC 7766).  Queries wait in a small table and pair with responses
 * by message id and question name; the QR bit, not the direction, says which
 * is which, so a flow whose client/server guess was wrong still pairs.
 * Names are decoded with compression pointers under a hop limit, so pointer
 * loops end as malformed messages.
 */
#include "l7/l7.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DNS_HDR        12
#define DNS_PENDING    64
#define DNS_NAME_MAX   256   /* presentation form, truncated */
#define DNS_MAX_HOPS   64    /* compression pointers followed per name */

struct dns_query {
	uint64_t seq;       /* 0 = free slot */
	uint64_t ts_ns, bytes;
	uint16_t id, qtype;
	bool has_q;
	char qname[DNS_NAME_MAX];
};

struct dns_dir {
	uint8_t lenbuf[2];
	size_t lenhave;
	uint8_t *buf;       /* TCP message being assembled */
	size_t cap, need, have;
	size_t skip;        /* rest of a message cut by a gap */
	uint64_t ts_ns;
};

struct dns {
	struct l7_config cfg;
	l7_emit_fn emit;
	void *emit_ctx;
	bool udp;
	struct dns_dir d[2];
	struct dns_query q[DNS_PENDING];
	uint64_t seq;
	uint64_t malformed;
};

struct dns_msg {
	uint16_t id, flags, qd, an;
	bool has_q;
	uint16_t qtype;
	char qname[DNS_NAME_MAX];
	char answers[L7_FIELD_MAX];
};

static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static const char *type_name(uint16_t t, char *buf, size_t n)
{
	static const struct { uint16_t t; const char *n; } names[] = {
		{ 1, "A" }, { 2, "NS" }, { 3, "MD" }, { 4, "MF" }, { 5, "CNAME" }, { 6, "SOA" },
		{ 7, "MB" }, { 8, "MG" }, { 9, "MR" }, { 10, "NULL" }, { 11, "WKS" }, { 12, "PTR" },
		{ 13, "HINFO" }, { 14, "MINFO" }, { 15, "MX" }, { 16, "TXT" }, { 17, "RP" },
		{ 18, "AFSDB" }, { 24, "SIG" }, { 25, "KEY" }, { 28, "AAAA" }, { 29, "LOC" },
		{ 30, "NXT" }, { 33, "SRV" }, { 35, "NAPTR" }, { 36, "KX" }, { 37, "CERT" },
		{ 38, "A6" }, { 39, "DNAME" }, { 41, "OPT" }, { 42, "APL" }, { 43, "DS" },
		{ 44, "SSHFP" }, { 45, "IPSECKEY" }, { 46, "RRSIG" }, { 47, "NSEC" },
		{ 48, "DNSKEY" }, { 49, "DHCID" }, { 50, "NSEC3" }, { 51, "NSEC3PARAM" },
		{ 52, "TLSA" }, { 53, "SMIMEA" }, { 55, "HIP" }, { 59, "CDS" }, { 60, "CDNSKEY" },
		{ 61, "OPENPGPKEY" }, { 62, "CSYNC" }, { 63, "ZONEMD" }, { 64, "SVCB" },
		{ 65, "HTTPS" }, { 99, "SPF" }, { 249, "TKEY" }, { 250, "TSIG" }, { 251, "IXFR" },
		{ 252, "AXFR" }, { 253, "MAILB" }, { 254, "MAILA" }, { 255, "ANY" }, { 256, "URI" },
		{ 257, "CAA" }, { 32769, "DLV" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].t == t)
			return names[i].n;
	snprintf(buf, n, "TYPE%u", t);
	return buf;
}

static const char *rcode_name(unsigned rc, char *buf, size_t n)
{
	static const char *const names[] = {
		"NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP", "REFUSED",
		"YXDOMAIN", "YXRRSET", "NXRRSET", "NOTAUTH", "NOTZONE",
	};

	if (rc < sizeof(names) / sizeof(names[0]))
		return names[rc];
	snprintf(buf, n, "%u", rc);
	return buf;
}

/*
 * Reads the name at *off into out (presentation form, "<Root>" for the root)
 * and advances *off past it in the message.  -EPROTO when malformed.
 */
static int read_name(const uint8_t *m, size_t n, size_t *off, char *out, size_t outcap)
{
	size_t pos = *off, o = 0, total = 0;
	bool jumped = false;
	unsigned hops = 0;

	for (;;) {
		uint8_t l;

		if (pos >= n)
			return -EPROTO;
		l = m[pos];
		if ((l & 0xc0) == 0xc0) {
			if (pos + 1 >= n || ++hops > DNS_MAX_HOPS)
				return -EPROTO;
			if (!jumped)
				*off = pos + 2;
			jumped = true;
			pos = (size_t)(l & 0x3f) << 8 | m[pos + 1];
			continue;
		}
		if (l & 0xc0)
			return -EPROTO; /* extended label types: obsolete */
		if (!l) {
			if (!jumped)
				*off = pos + 1;
			break;
		}
		if (pos + 1 + l > n)
			return -EPROTO;
		total += l + 1;
		if (total > 255)
			return -EPROTO;
		for (size_t i = 0; i < l; i++) {
			uint8_t c = m[pos + 1 + i];
			char esc[5];
			size_t el;

			if (c > 0x20 && c < 0x7f && c != '.' && c != '\\') {
				esc[0] = (char)c;
				el = 1;
			} else if (c == '.' || c == '\\') {
				esc[0] = '\\';
				esc[1] = (char)c;
				el = 2;
			} else {
				esc[0] = '\\';
				esc[1] = (char)('0' + c / 100);
				esc[2] = (char)('0' + c / 10 % 10);
				esc[3] = (char)('0' + c % 10);
				el = 4;
			}
			if (o + el + 1 < outcap) {
				memcpy(out + o, esc, el);
				o += el;
			}
		}
		if (o + 2 < outcap)
			out[o++] = '.';
		pos += 1 + l;
	}
	if (o)
		o--; /* trailing dot */
	else
		o = (size_t)snprintf(out, outcap, "<Root>");
	if (o >= outcap)
		o = outcap - 1;
	out[o] = 0;
	return 0;
}

/* Parses header, first question and answer types.  -EPROTO when malformed. */
static int parse_msg(const uint8_t *m, size_t n, struct dns_msg *out)
{
	size_t off = DNS_HDR, ao = 0;
	char nbuf[DNS_NAME_MAX], tbuf[16];

	if (n < DNS_HDR)
		return -EPROTO;
	out->id = be16(m);
	out->flags = be16(m + 2);
	out->qd = be16(m + 4);
	out->an = be16(m + 6);
	out->has_q = false;
	out->qname[0] = 0;
	out->answers[0] = 0;
	for (unsigned i = 0; i < out->qd; i++) {
		if (read_name(m, n, &off, i ? nbuf : out->qname, DNS_NAME_MAX) < 0 || off + 4 > n)
			return -EPROTO;
		if (!i) {
			out->qtype = be16(m + off);
			out->has_q = true;
		}
		off += 4;
	}
	for (unsigned i = 0; i < out->an; i++) {
		uint16_t type, rdlen;
		const char *tn;
		size_t tl;

		if (read_name(m, n, &off, nbuf, sizeof(nbuf)) < 0 || off + 10 > n)
			return -EPROTO;
		type = be16(m + off);
		rdlen = be16(m + off + 8);
		off += 10;
		if (off + rdlen > n)
			return -EPROTO;
		off += rdlen;
		tn = type_name(type, tbuf, sizeof(tbuf));
		tl = strlen(tn);
		if (ao + tl + 2 < sizeof(out->answers)) {
			if (ao)
				out->answers[ao++] = ',';
			memcpy(out->answers + ao, tn, tl);
			ao += tl;
			out->answers[ao] = 0;
		}
	}
	return 0;
}

static void add_cstr(struct l7_record *rec, const char *key, const char *s)
{
	l7_record__add_str(rec, key, s, strlen(s));
}

static void emit_rec(struct dns *s, const struct dns_query *q, const struct dns_msg *r,
		     uint64_t resp_ts, uint64_t resp_bytes)
{
	struct l7_record rec;
	char tbuf[16], rbuf[16];

	l7_record__init(&rec, "dns");
	l7_record__add_str(&rec, "transport", s->udp ? "udp" : "tcp", 3);
	if (q) {
		rec.has_request = true;
		rec.req_ts_ns = q->ts_ns;
		rec.req_bytes = q->bytes;
		add_cstr(&rec, "qname", q->has_q ? q->qname : "-");
		add_cstr(&rec, "qtype", q->has_q ? type_name(q->qtype, tbuf, sizeof(tbuf)) : "-");
		l7_record__add_u64(&rec, "id", q->id);
	} else {
		add_cstr(&rec, "qname", r->has_q ? r->qname : "-");
		add_cstr(&rec, "qtype", r->has_q ? type_name(r->qtype, tbuf, sizeof(tbuf)) : "-");
		l7_record__add_u64(&rec, "id", r->id);
	}
	if (r) {
		unsigned rc = r->flags & 0xf;

		rec.has_response = true;
		rec.resp_ts_ns = resp_ts;
		rec.resp_bytes = resp_bytes;
		rec.status = (int32_t)rc;
		rec.is_error = rc != 0;
		add_cstr(&rec, "rcode", rcode_name(rc, rbuf, sizeof(rbuf)));
		add_cstr(&rec, "answer_types", r->answers[0] ? r->answers : "-");
	}
	s->emit(s->emit_ctx, &rec);
}

static struct dns_query *oldest(struct dns *s)
{
	struct dns_query *o = NULL;

	for (unsigned i = 0; i < DNS_PENDING; i++)
		if (s->q[i].seq && (!o || s->q[i].seq < o->seq))
			o = &s->q[i];
	return o;
}

static void message(struct dns *s, const uint8_t *m, size_t n, uint64_t first_ts, uint64_t ts)
{
	struct dns_msg msg;
	struct dns_query *slot = NULL, *match = NULL;

	if (parse_msg(m, n, &msg) < 0) {
		s->malformed++;
		return;
	}
	if (!(msg.flags & 0x8000)) {
		for (unsigned i = 0; i < DNS_PENDING && !slot; i++)
			if (!s->q[i].seq)
				slot = &s->q[i];
		if (!slot) {
			/* Table full: the oldest query will not be answered any more. */
			slot = oldest(s);
			emit_rec(s, slot, NULL, 0, 0);
		}
		slot->seq = ++s->seq;
		slot->ts_ns = first_ts;
		slot->bytes = n;
		slot->id = msg.id;
		slot->qtype = msg.qtype;
		slot->has_q = msg.has_q;
		memcpy(slot->qname, msg.qname, sizeof(slot->qname));
		return;
	}
	for (unsigned i = 0; i < DNS_PENDING; i++) {
		struct dns_query *q = &s->q[i];

		if (!q->seq || q->id != msg.id)
			continue;
		if (msg.has_q && q->has_q && strcmp(q->qname, msg.qname))
			continue;
		if (!match || q->seq < match->seq)
			match = q;
	}
	emit_rec(s, match, &msg, ts, n);
	if (match)
		match->seq = 0;
}

static int dns_feed(void *st, enum l7_dir dir, const uint8_t *data, size_t len, uint64_t ts_ns)
{
	struct dns *s = st;
	struct dns_dir *d;

	if (dir != L7_DIR_REQ && dir != L7_DIR_RESP)
		return -EINVAL;
	if (s->udp) {
		message(s, data, len, ts_ns, ts_ns);
		return 0;
	}
	d = &s->d[dir];
	while (len) {
		size_t take;

		if (d->skip) {
			take = d->skip < len ? d->skip : len;
			d->skip -= take;
			data += take;
			len -= take;
			continue;
		}
		if (d->lenhave < 2) {
			if (!d->lenhave)
				d->ts_ns = ts_ns;
			d->lenbuf[d->lenhave++] = *data++;
			len--;
			if (d->lenhave == 2) {
				d->need = be16(d->lenbuf);
				d->have = 0;
				if (d->need < DNS_HDR)
					return -EPROTO;
				/* Whole message in this chunk: parse in place. */
				if (len >= d->need) {
					message(s, data, d->need, d->ts_ns, ts_ns);
					data += d->need;
					len -= d->need;
					d->lenhave = 0;
					continue;
				}
				if (d->need > d->cap) {
					uint8_t *nb;

					if (s->cfg.max_conn_mem && (d->need + s->d[!dir].cap) > s->cfg.max_conn_mem)
						return -ENOBUFS;
					nb = realloc(d->buf, d->need);
					if (!nb)
						return -ENOBUFS;
					d->buf = nb;
					d->cap = d->need;
				}
			}
			continue;
		}
		take = d->need - d->have;
		if (take > len)
			take = len;
		memcpy(d->buf + d->have, data, take);
		d->have += take;
		data += take;
		len -= take;
		if (d->have == d->need) {
			message(s, d->buf, d->need, d->ts_ns, ts_ns);
			d->lenhave = 0;
		}
	}
	return 0;
}

static int dns_gap(void *st, enum l7_dir dir, size_t len, uint64_t ts_ns)
{
	struct dns *s = st;
	struct dns_dir *d;

	(void)ts_ns;
	if (dir != L7_DIR_REQ && dir != L7_DIR_RESP)
		return -EINVAL;
	if (s->udp)
		return 0; /* datagrams are independent */
	d = &s->d[dir];
	/*
	 * Inside a message of known length: that message is lost, but the next
	 * length prefix is still where we expect it.
	 */
	if (d->lenhave == 2 && d->need - d->have >= len) {
		d->skip = d->need - d->have - len;
		d->lenhave = 0;
		s->malformed++;
		return 0;
	}
	if (d->lenhave == 0 && d->skip >= len) {
		d->skip -= len;
		return 0;
	}
	return -EPROTO; /* framing lost */
}

static void dns_finish(void *st, uint64_t ts_ns)
{
	struct dns *s = st;
	struct dns_query *q;

	(void)ts_ns;
	while ((q = oldest(s))) {
		emit_rec(s, q, NULL, 0, 0);
		q->seq = 0;
	}
}

static uint64_t dns_dropped(const void *st)
{
	return ((const struct dns *)st)->malformed;
}

static void *dns_create(const struct l7_config *cfg, l7_emit_fn emit, void *emit_ctx)
{
	struct dns *s;

	if (!cfg || !emit) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cfg = *cfg;
	s->udp = cfg->transport == L7_TRANSPORT_UDP;
	s->emit = emit;
	s->emit_ctx = emit_ctx;
	return s;
}

static void dns_free(void *st)
{
	struct dns *s = st;

	if (!s)
		return;
	free(s->d[0].buf);
	free(s->d[1].buf);
	free(s);
}

/* Plausible header + a well-formed first question at m[0..n) (n may be a prefix). */
static int plausible(const uint8_t *m, size_t n, enum l7_dir dir, size_t msglen)
{
	uint16_t flags, qd, an, ns, ar;
	size_t off = DNS_HDR;
	char name[DNS_NAME_MAX];
	bool qr;

	if (n < DNS_HDR + 5)
		return 0;
	flags = be16(m + 2);
	qd = be16(m + 4);
	an = be16(m + 6);
	ns = be16(m + 8);
	ar = be16(m + 10);
	qr = flags & 0x8000;
	if (((flags >> 11) & 0xf) > 6 || qd != 1)
		return 0;
	if (!qr && (an > 1 || ns > 1 || ar > 2 || (flags & 0xf)))
		return 0;
	if (an > 256 || ns > 256 || ar > 256)
		return 0;
	if (read_name(m, n < msglen ? n : msglen, &off, name, sizeof(name)) < 0 || off + 4 > msglen)
		return 0;
	if (off + 4 <= n) {
		uint16_t qtype = be16(m + off), qclass = be16(m + off + 2) & 0x7fff;

		if (qclass != 1 && qclass != 3 && qclass != 4 && qclass != 254 && qclass != 255)
			return 0;
		/*
		 * NetBIOS name service shares the format: its NB / NBSTAT questions
		 * carry a 32-letter first-level-encoded name ("ECFCFHED...").
		 */
		if ((qtype == 32 || qtype == 33) && m[DNS_HDR] == 32)
			return 0;
	}
	/* The QR bit on the expected side is the strongest hint we have. */
	return qr == (dir == L7_DIR_RESP) ? 85 : 70;
}

static int dns_detect(const uint8_t *data, size_t len, enum l7_dir dir, uint16_t server_port)
{
	int s = 0, t = 0;

	/* UDP form: the message itself (a datagram is whole). */
	s = plausible(data, len, dir, len);
	/* TCP form: 2-byte length prefix. */
	if (len >= 2) {
		size_t ml = be16(data);

		if (ml >= DNS_HDR + 5)
			t = plausible(data + 2, len - 2, dir, ml);
	}
	if (t > s)
		s = t;
	if (s && server_port == 53)
		s += 10;
	return s;
}

const struct l7_parser_ops l7_dns_ops = {
	.name = "dns",
	.detect = dns_detect,
	.create = dns_create,
	.feed = dns_feed,
	.gap = dns_gap,
	.finish = dns_finish,
	.free = dns_free,
	.udp = true,
	.dropped = dns_dropped,
};
