/*
 * gala-gopher's tables, from a network flow.
 *
 * L7: what gala-gopher's l7probe
 * reports as entity "l7", tables l7_link (bytes and segments) and l7_rpc
 * (requests, responses, throughput, latency, errors), keyed by tgid,
 * client_ip, server_ip, server_port, l4_role, l7_role and protocol, with
 * label ssl (the manual's "l7" table).  The Kafka backend sends them as
 * gala-gopher's entity records, and their metadata; gala-gopher's metric
 * names are gala_gopher_<entity>_<metric> (gala_gopher_l7_req_count).
 *
 * From a NetFlow of one report interval (ember's units, gala-gopher's
 * meaning):
 *   bytes_sent, bytes_recv    bytes written / read by the process
 *   segs_sent, segs_recv      write / read calls (gala-gopher counts TCP
 *                             segments; ember sees socket calls)
 *   req_count, resp_count     L7 requests completed in the interval, and
 *                             those answered
 *   throughput_req/_resp      the same per second of the interval
 *   latency_sum, latency_avg  ns, request end to response, over answered ones
 *   err_count, err_ratio      errors by the protocol's rule; % of requests
 * l4_role: tcp_client, tcp_server or udp; l7_role: client or server; the
 * server's address: the peer's for a client, the flow's local (listening)
 * address for a server; protocol: gala-gopher's names (http for HTTP/1).
 *
 * TCP: what gala-gopher's tcpprobe reports as entity "tcp_link", tables
 * tcp_tx_rx (rx_bytes, tx_bytes, segs_in, segs_out: bytes and read/write
 * calls), tcp_rtt (srtt, us: the mean smoothed RTT the flow's writes saw)
 * and tcp_abn (retran_packets, sk_drops), keyed by tgid, role (1 client,
 * 0 server), client_ip, server_ip, client_port, server_port and protocol
 * (the address family: 2 or 10).  gala-gopher keys a link by its client
 * port; ember's flows gather a process's connections to one peer, so a
 * server's client_port is 0 (and a client's own port too).  rcv_rtt and the
 * other tables (windows, rate, sockbuf, delay) are not measured.
 *
 * Plain structs, no allocation; no I/O but gala_tables__machine_id's.
 */
#ifndef EMBER_EXPORTER_GALA_TABLES_H
#define EMBER_EXPORTER_GALA_TABLES_H

#include <stddef.h>
#include <stdint.h>

#include "proto/ember.pb-c.h"

#define GALA_MAX_KEYS    8	/* tgid + 6 (l7) or 7 (tcp_link) */
#define GALA_MAX_LABELS  2
#define GALA_MAX_METRICS 10
#define GALA_VALUE_MAX   72

struct gala_table {
	const char *table, *entity;
	const char *const *keys, *const *labels, *const *metrics;	/* NULL-terminated */
};

struct gala_record {
	const struct gala_table *t;
	unsigned nk, nl, nm;
	struct { const char *name; char value[GALA_VALUE_MAX]; } keys[GALA_MAX_KEYS], labels[GALA_MAX_LABELS];
	struct { const char *name; double value; } metrics[GALA_MAX_METRICS];
};

enum { GALA_L7_LINK, GALA_L7_RPC, GALA_TCP_TX_RX, GALA_TCP_RTT, GALA_TCP_ABN, GALA_TABLES };
#define GALA_L7_TABLES 2
#define GALA_TCP_TABLES 3
extern const struct gala_table gala_tables[GALA_TABLES];

/*
 * The flow's records into ret: l7_link when it moved bytes, l7_rpc when it
 * carried L7 requests (a flow no parser claimed has none).  interval_ms > 0
 * (the report interval, for the throughputs).  Returns how many (0..2).
 */
unsigned gala_tables__l7(const Ember__NetFlow *f, uint64_t interval_ms, struct gala_record ret[GALA_L7_TABLES]);

/*
 * The flow's tcp_link records into ret: tcp_tx_rx when it moved bytes,
 * tcp_rtt when its writes saw RTT samples, tcp_abn when it retransmitted or
 * dropped (UDP flows have none).  Returns how many (0..3).
 */
unsigned gala_tables__tcp(const Ember__NetFlow *f, struct gala_record ret[GALA_TCP_TABLES]);

/*
 * This host's machine id (gala-gopher's machine_id key): /etc/machine-id,
 * else /var/lib/dbus/machine-id, else the boot id; "" when none is readable.
 */
void gala_tables__machine_id(char *buf, size_t len);

/* gala-gopher's name of an ember parser's protocol ("http1" -> "http"). */
const char *gala_tables__protocol(const char *parser);

#endif
