/*
 * Packet captures -> L7 exchanges: reads pcap / pcapng with libpcap (Ethernet
 * with VLAN tags, Linux cooked SLL / SLL2, raw IP, BSD loopback), follows TCP
 * connections (sequence-number reassembly: retransmissions dropped,
 * out-of-order segments held in a bounded buffer, holes reported as gaps) and
 * UDP flows (one datagram per feed), and feeds each through an l7_conn.
 *
 * Client/server: the sender of a SYN is the client (certain); without a SYN,
 * the side on a known server port (hint table, then ports < 1024), else the
 * lower port, is the server and detection may still swap them.  For UDP
 * without a port hint, the first sender is the client.
 *
 * Memory is bounded by max_flows and, per direction, max_ooo_bytes /
 * max_ooo_segs; every packet that cannot be used is counted, never fatal.
 * Not thread-safe.
 */
#ifndef EMBER_PCAP_FLOW_H
#define EMBER_PCAP_FLOW_H

#include <stdio.h>
#include <stdint.h>
#include <stdbool.h>
#include <pcap/pcap.h>

#include "l7/l7.h"
#include "l7/l7_conn.h"

struct pcap_flow_endpoint {
	int family;          /* AF_INET or AF_INET6 */
	uint8_t addr[16];    /* IPv4 in the first 4 bytes */
	uint16_t port;
};

struct pcap_flow_conn {
	struct pcap_flow_endpoint client, server;
	bool udp;
	uint64_t id;         /* 1, 2, ... in order of first packet */
};

/* Prints "CLIENT>SERVER" ("1.2.3.4:5>[::1]:80") into buf; returns buf. */
char *pcap_flow__conn_str(const struct pcap_flow_conn *c, char *buf, size_t len);

/* rec and conn are valid only during the call. */
typedef void (*pcap_flow_emit_fn)(void *ctx, const struct pcap_flow_conn *conn,
				  const struct l7_record *rec);

struct pcap_flow_opts {
	const struct l7_config *cfg;        /* required */
	const struct l7_parser_ops *force;  /* NULL = detect per connection */
	pcap_flow_emit_fn emit;             /* required */
	void *emit_ctx;
	size_t max_flows;                   /* 0 = 65536; least recently used is finished first */
	size_t max_ooo_bytes;               /* per direction; 0 = cfg->max_conn_mem */
	unsigned max_ooo_segs;              /* per direction; 0 = 64 */
	uint64_t idle_timeout_ns;           /* capture time; 0 = 300 s */
};

struct pcap_flow_stats {
	uint64_t packets, bytes;
	uint64_t unsupported_link;   /* link type we cannot decode */
	uint64_t non_ip;             /* not IPv4/IPv6 (ARP, ...) */
	uint64_t non_tcp_udp;
	uint64_t malformed;          /* inconsistent headers */
	uint64_t truncated;          /* captured shorter than on the wire (payload cut: gap) */
	uint64_t ip_fragments;       /* not reassembled: dropped */
	uint64_t tcp_segments, udp_datagrams;
	uint64_t retrans_bytes;      /* duplicate TCP bytes dropped */
	uint64_t ooo_segments;       /* held for later */
	uint64_t ooo_overflow;       /* buffer full: hole declared a gap */
	uint64_t gaps, gap_bytes;    /* holes reported to parsers */
	uint64_t flows;
	uint64_t flows_evicted;      /* finished early: flow table full */
	uint64_t flows_timed_out;
	uint64_t flow_errors;        /* could not allocate a flow / connection */
	uint64_t ignored_no_flow;    /* packets without payload for an unknown flow */
};

struct pcap_flow;

/* NULL with errno set. */
struct pcap_flow *pcap_flow__new(const struct pcap_flow_opts *opts);
/* Finishes nothing (call pcap_flow__finish first).  Accepts NULL, returns NULL. */
struct pcap_flow *pcap_flow__free(struct pcap_flow *pf);

/*
 * One captured packet of link type `linktype` (DLT_*): caplen bytes present,
 * wirelen on the wire.  Returns 0 (unusable packets are counted, not errors).
 */
int pcap_flow__packet(struct pcap_flow *pf, int linktype, const uint8_t *pkt, size_t caplen,
		      size_t wirelen, uint64_t ts_ns);
/*
 * Every packet of an open capture / of a file / of a stream (pcap or pcapng).
 * Return 0, or -errno with a message in errbuf (PCAP_ERRBUF_SIZE) when the
 * capture cannot be opened or read; packets read so far are processed.
 */
int pcap_flow__read(struct pcap_flow *pf, pcap_t *p, char *errbuf);
int pcap_flow__read_file(struct pcap_flow *pf, const char *path, char *errbuf);
int pcap_flow__read_fp(struct pcap_flow *pf, FILE *fp, char *errbuf);
/* End of capture: flushes held segments (as gaps) and finishes every flow. */
void pcap_flow__finish(struct pcap_flow *pf);

const struct pcap_flow_stats *pcap_flow__stats(const struct pcap_flow *pf);
const struct l7_stats *pcap_flow__l7_stats(const struct pcap_flow *pf);

#endif
