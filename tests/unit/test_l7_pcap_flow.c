/*
 * TCP reassembly and flow handling (l7/pcap_flow.c) with synthetic
 * raw-IP packets, plus l7_conn detection through it: retransmissions,
 * out-of-order segments, holes declared by the peer's ACK, direction without
 * SYN, UDP, malformed packets.
 */
#include "tests/unit/l7_test.h"
#include "l7/pcap_flow.h"
#include "l7/l7_conn.h"

#include <arpa/inet.h>

struct got {
	struct rec_log log;
	char conn[REC_MAX][128];
};

static void on_rec(void *ctx, const struct pcap_flow_conn *c, const struct l7_record *r)
{
	struct got *g = ctx;

	pcap_flow__conn_str(c, g->conn[g->log.n], sizeof(g->conn[0]));
	rec_log_emit(&g->log, r);
}

static struct pcap_flow *new_pf(struct got *g, struct l7_config *cfg)
{
	struct l7_config def = L7_CONFIG_DEFAULTS;
	struct pcap_flow_opts o = { 0 };
	struct pcap_flow *pf;

	*cfg = def;
	memset(g, 0, sizeof(*g));
	o.cfg = cfg;
	o.emit = on_rec;
	o.emit_ctx = g;
	o.max_ooo_segs = 4;
	pf = pcap_flow__new(&o);
	assert_non_null(pf);
	return pf;
}

#define CLI 0x0a000001u
#define SRV 0x0a000002u

/* One IPv4/TCP packet, DLT_RAW. */
static void tcp4(struct pcap_flow *pf, uint32_t saddr, uint16_t sp, uint32_t daddr, uint16_t dp,
		 uint32_t seq, uint32_t ack, uint8_t flags, const char *payload, uint64_t ts)
{
	uint8_t p[1600];
	size_t n = payload ? strlen(payload) : 0;
	uint32_t src = htonl(saddr), dst = htonl(daddr);
	uint16_t sport = htons(sp), dport = htons(dp);
	uint16_t tot = htons((uint16_t)(40 + n));
	uint32_t s = htonl(seq), a = htonl(ack);

	memset(p, 0, 40);
	p[0] = 0x45;
	memcpy(p + 2, &tot, 2);
	p[8] = 64;
	p[9] = 6;
	memcpy(p + 12, &src, 4);
	memcpy(p + 16, &dst, 4);
	memcpy(p + 20, &sport, 2);
	memcpy(p + 22, &dport, 2);
	memcpy(p + 24, &s, 4);
	memcpy(p + 28, &a, 4);
	p[32] = 5 << 4;
	p[33] = flags;
	if (n)
		memcpy(p + 40, payload, n);
	assert_int_equal(pcap_flow__packet(pf, DLT_RAW, p, 40 + n, 40 + n, ts), 0);
}

static void tcp(struct pcap_flow *pf, bool from_client, uint32_t seq, uint32_t ack, uint8_t flags,
		const char *payload, uint64_t ts)
{
	if (from_client)
		tcp4(pf, CLI, 40000, SRV, 8080, seq, ack, flags, payload, ts);
	else
		tcp4(pf, SRV, 8080, CLI, 40000, seq, ack, flags, payload, ts);
}

#define SYN 0x02
#define ACK 0x10
#define PSH 0x08
#define FIN 0x01

static void test_reassembly(void **s)
{
	struct l7_config cfg;
	struct got g;
	struct pcap_flow *pf = new_pf(&g, &cfg);
	const struct pcap_flow_stats *st = pcap_flow__stats(pf);
	uint32_t c = 1000, v = 5000;

	(void)s;
	tcp(pf, true, c, 0, SYN, NULL, 1);
	tcp(pf, false, v, c + 1, SYN | ACK, NULL, 2);
	tcp(pf, true, c + 1, v + 1, ACK, NULL, 3);
	/* Request in three segments: 3rd first, then 1st, a retransmitted 1st, then 2nd. */
	tcp(pf, true, c + 1 + 17, v + 1, ACK | PSH, "Host: h\r\n\r\n", 4);
	tcp(pf, true, c + 1, v + 1, ACK, "GET /x HTTP/1.1\r", 5);
	tcp(pf, true, c + 1, v + 1, ACK, "GET /x HTTP/1.1\r", 6);
	assert_int_equal(g.log.n, 0);
	tcp(pf, true, c + 1 + 15, v + 1, ACK, "\r\n", 7); /* overlaps the delivered '\r' */
	/* Response, then close from both sides. */
	tcp(pf, false, v + 1, c + 29, ACK | PSH, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 8);
	assert_int_equal(g.log.n, 1);
	assert_field(&g.log.r[0], "uri", "/x");
	assert_field(&g.log.r[0], "status", "200");
	assert_string_equal(g.conn[0], "10.0.0.1:40000>10.0.0.2:8080");
	assert_int_equal(g.log.r[0].req_ts_ns, 5); /* first byte of the request */
	assert_int_equal(st->retrans_bytes, 16 + 1);
	assert_int_equal(st->ooo_segments, 1);
	assert_int_equal(st->gaps, 0);
	tcp(pf, true, c + 29, v + 41, ACK | FIN, NULL, 9);
	tcp(pf, false, v + 41, c + 30, ACK | FIN, NULL, 10);
	assert_int_equal(st->flows, 1);
	/* Both FINs: the flow is gone; a late ACK creates nothing. */
	tcp(pf, true, c + 30, v + 42, ACK, NULL, 11);
	assert_int_equal(st->flows, 1);
	assert_int_equal(st->ignored_no_flow, 1);
	pcap_flow__finish(pf);
	assert_int_equal(g.log.n, 1);
	pcap_flow__free(pf);
}

static void test_hole_acked_by_peer(void **s)
{
	struct l7_config cfg;
	struct got g;
	struct pcap_flow *pf = new_pf(&g, &cfg);
	const struct pcap_flow_stats *st = pcap_flow__stats(pf);
	const char *r1 = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789";
	uint32_t c = 77, v = 99;

	(void)s;
	/* No SYN: the side on 8080 is the server. */
	tcp(pf, true, c, v, ACK | PSH, "GET /a HTTP/1.1\r\n\r\n", 1);
	/* Response: body bytes 38..43 never captured, but the client ACKs them. */
	tcp(pf, false, v, c + 19, ACK, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123", 2);
	tcp(pf, false, v + 47, c + 19, ACK, "89", 3);
	assert_int_equal(st->ooo_segments, 1);
	tcp(pf, true, c + 19, v + (uint32_t)strlen(r1), ACK | PSH, "GET /b HTTP/1.1\r\n\r\n", 4);
	assert_int_equal(st->gaps, 1);
	assert_int_equal(st->gap_bytes, 4);
	assert_int_equal(g.log.n, 1);
	assert_field(&g.log.r[0], "uri", "/a");
	assert_int_equal(g.log.r[0].resp_bytes, strlen(r1));
	tcp(pf, false, v + (uint32_t)strlen(r1), c + 38, ACK, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", 5);
	assert_int_equal(g.log.n, 2);
	assert_field(&g.log.r[1], "uri", "/b");
	assert_field(&g.log.r[1], "status", "404");
	pcap_flow__finish(pf);
	assert_int_equal(pcap_flow__l7_stats(pf)->gaps, 1);
	pcap_flow__free(pf);
}

static void test_ooo_overflow_and_swap(void **s)
{
	struct l7_config cfg;
	struct got g;
	struct pcap_flow *pf = new_pf(&g, &cfg);
	const struct pcap_flow_stats *st = pcap_flow__stats(pf);
	uint32_t c = 1;

	(void)s;
	/* Server sends first (capture began mid-way): both on unknown ports. */
	{
		uint8_t p[200];
		const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
		size_t n = strlen(resp);
		uint16_t tot = htons((uint16_t)(40 + n)), sp = htons(5000), dp = htons(6000);
		uint32_t src = htonl(SRV), dst = htonl(CLI), seq = htonl(1);

		memset(p, 0, 40);
		p[0] = 0x45;
		memcpy(p + 2, &tot, 2);
		p[9] = 6;
		memcpy(p + 12, &src, 4);
		memcpy(p + 16, &dst, 4);
		memcpy(p + 20, &sp, 2);
		memcpy(p + 22, &dp, 2);
		memcpy(p + 24, &seq, 4);
		p[32] = 0x50;
		p[33] = ACK;
		memcpy(p + 40, resp, n);
		pcap_flow__packet(pf, DLT_RAW, p, 40 + n, 40 + n, 1);
	}
	pcap_flow__finish(pf);
	/* Port 5000 < 6000 made 10.0.0.2:5000 the server; the response agreed. */
	assert_int_equal(g.log.n, 1);
	assert_false(g.log.r[0].has_request);
	assert_string_equal(g.conn[0], "10.0.0.1:6000>10.0.0.2:5000");
	pcap_flow__free(pf);

	/* More held segments than allowed: the hole becomes a gap. */
	pf = new_pf(&g, &cfg);
	st = pcap_flow__stats(pf);
	tcp(pf, true, c, 0, SYN, NULL, 1);
	for (int i = 0; i < 6; i++)
		tcp(pf, true, c + 100 + (uint32_t)i * 10, 0, ACK, "0123456789", 2 + (uint64_t)i);
	assert_true(st->ooo_overflow >= 1);
	assert_int_equal(st->gaps, 1);
	assert_int_equal(st->gap_bytes, 99);
	pcap_flow__finish(pf);
	pcap_flow__free(pf);
}

/* No SYN and the client has the lower port: detection turns the flow around. */
static void test_swap_by_detection(void **s)
{
	struct l7_config cfg;
	struct got g;
	struct pcap_flow *pf = new_pf(&g, &cfg);
	const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

	(void)s;
	const char *q1 = "GET /swap HTTP/1.1\r\n\r\n", *q2 = "GET /swap2 HTTP/1.1\r\n\r\n";
	uint32_t c = 10, v = 20, l1 = (uint32_t)strlen(q1), l2 = (uint32_t)strlen(q2), lr = (uint32_t)strlen(resp);

	tcp4(pf, CLI, 5000, SRV, 6000, c, v, ACK | PSH, q1, 1);
	tcp4(pf, SRV, 6000, CLI, 5000, v, c + l1, ACK | PSH, resp, 2);
	tcp4(pf, CLI, 5000, SRV, 6000, c + l1, v + lr, ACK | PSH, q2, 3);
	tcp4(pf, SRV, 6000, CLI, 5000, v + lr, c + l1 + l2, ACK | PSH, resp, 4);
	pcap_flow__finish(pf);
	assert_int_equal(g.log.n, 2);
	assert_field(&g.log.r[0], "uri", "/swap");
	assert_field(&g.log.r[1], "uri", "/swap2");
	assert_field(&g.log.r[1], "status", "200");
	assert_string_equal(g.conn[0], "10.0.0.1:5000>10.0.0.2:6000");
	assert_int_equal(pcap_flow__l7_stats(pf)->swapped, 1);
	assert_int_equal(pcap_flow__l7_stats(pf)->detected[l7_conn__parser_index(l7__find("http1"))], 1);
	pcap_flow__free(pf);
}

static void count_rec(void *ctx, const struct l7_record *r)
{
	(void)r;
	(*(int *)ctx)++;
}

/*
 * A connection whose first bytes were lost (followed from its middle, or its
 * first events dropped): the gap comes before any evidence, and detection
 * begins again on the next message instead of giving the connection up.
 * Only after L7_DETECT_RESTARTS such gaps without a recognisable message is
 * it undetected.
 */
static void test_gap_before_detection(void **s)
{
	static const char req[] = "GET /after HTTP/1.1\r\nHost: x\r\n\r\n";
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	static const char junk[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"; /* the tail of a body */
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct l7_stats st = { 0 };
	struct l7_conn_opts o = { .cfg = &cfg, .client_port = 40000, .server_port = 8080, .dir_certain = true,
				  .emit = count_rec, .stats = &st };
	struct l7_conn *c;
	int n = 0;

	(void)s;
	o.emit_ctx = &n;
	c = l7_conn__new(&o);
	assert_non_null(c);
	assert_int_equal(l7_conn__gap(c, L7_DIR_RESP, 20000, 1), 0);
	assert_int_equal(l7_conn__feed(c, L7_DIR_RESP, (const uint8_t *)junk, sizeof(junk) - 1, 2), 0);
	assert_int_equal(l7_conn__gap(c, L7_DIR_RESP, 20000, 3), 0);
	assert_int_equal(l7_conn__state(c), L7_CONN_DETECTING);
	assert_int_equal(l7_conn__feed(c, L7_DIR_REQ, (const uint8_t *)req, sizeof(req) - 1, 4), 0);
	assert_int_equal(l7_conn__feed(c, L7_DIR_RESP, (const uint8_t *)resp, sizeof(resp) - 1, 5), 0);
	l7_conn__finish(c, 6);
	assert_int_equal(n, 1);
	assert_int_equal(st.undetected, 0);
	c = l7_conn__free(c);

	/* Junk and gaps only: undetected after the bounded restarts, not before. */
	c = l7_conn__new(&o);
	assert_non_null(c);
	for (int i = 0; i < L7_DETECT_RESTARTS; i++) {
		assert_int_equal(l7_conn__feed(c, L7_DIR_RESP, (const uint8_t *)junk, sizeof(junk) - 1, 10 + i), 0);
		assert_int_equal(l7_conn__gap(c, L7_DIR_RESP, 100, 10 + i), 0);
		assert_int_equal(l7_conn__state(c), L7_CONN_DETECTING);
	}
	assert_int_equal(l7_conn__gap(c, L7_DIR_RESP, 100, 100), 0);
	assert_int_not_equal(l7_conn__state(c), L7_CONN_DETECTING);
	assert_int_equal(st.undetected, 1);
	c = l7_conn__free(c);
}

static void test_malformed_and_udp(void **s)
{
	struct l7_config cfg;
	struct got g;
	struct pcap_flow *pf = new_pf(&g, &cfg);
	const struct pcap_flow_stats *st = pcap_flow__stats(pf);
	uint8_t p[128] = { 0x45, 0, 0, 20 };
	static const uint8_t dnsq[] = {
		0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
		3, 'f', 'o', 'o', 0, 0, 1, 0, 1,
	};
	uint16_t tot = htons(28 + sizeof(dnsq)), ul = htons(8 + sizeof(dnsq));
	uint32_t src = htonl(CLI), dst = htonl(SRV);
	uint16_t sp = htons(33333), dp = htons(53);

	(void)s;
	pcap_flow__packet(pf, DLT_RAW, p, 4, 4, 1);              /* truncated IP */
	pcap_flow__packet(pf, DLT_RAW, p, 20, 20, 1);            /* IP, proto 0 */
	p[0] = 0x4f;
	pcap_flow__packet(pf, DLT_RAW, p, 20, 20, 1);            /* IHL past the data */
	pcap_flow__packet(pf, DLT_EN10MB, p, 10, 10, 1);         /* short Ethernet */
	pcap_flow__packet(pf, 9999, p, 20, 20, 1);               /* unknown link */
	assert_int_equal(st->packets, 5);
	assert_int_equal(st->truncated, 2);
	assert_int_equal(st->malformed, 1);
	assert_int_equal(st->non_tcp_udp, 1);
	assert_int_equal(st->unsupported_link, 1);
	/* A DNS query over UDP, with a loopback (NULL) header. */
	memset(p, 0, sizeof(p));
	p[0] = 2; /* AF_INET, little-endian host */
	p[4] = 0x45;
	memcpy(p + 6, &tot, 2);
	p[13] = 17;
	memcpy(p + 16, &src, 4);
	memcpy(p + 20, &dst, 4);
	memcpy(p + 24, &sp, 2);
	memcpy(p + 26, &dp, 2);
	memcpy(p + 28, &ul, 2);
	memcpy(p + 32, dnsq, sizeof(dnsq));
	pcap_flow__packet(pf, DLT_NULL, p, 32 + sizeof(dnsq), 32 + sizeof(dnsq), 2);
	pcap_flow__finish(pf);
	assert_int_equal(st->udp_datagrams, 1);
	assert_int_equal(g.log.n, 1);
	assert_field(&g.log.r[0], "qname", "foo");
	assert_string_equal(g.conn[0], "10.0.0.1:33333>10.0.0.2:53");
	pcap_flow__free(pf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reassembly),
		cmocka_unit_test(test_hole_acked_by_peer),
		cmocka_unit_test(test_ooo_overflow_and_swap),
		cmocka_unit_test(test_swap_by_detection),
		cmocka_unit_test(test_malformed_and_udp),
		cmocka_unit_test(test_gap_before_detection),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
