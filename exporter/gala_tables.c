/* gala-gopher's tables from a network flow: see gala_tables.h. */
#include "exporter/gala_tables.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const char *const l7_keys[] = { "tgid", "client_ip", "server_ip", "server_port", "l4_role", "l7_role",
				       "protocol", NULL };
static const char *const l7_labels[] = { "ssl", NULL };
static const char *const link_metrics[] = { "bytes_sent", "bytes_recv", "segs_sent", "segs_recv", NULL };
static const char *const rpc_metrics[] = { "throughput_req", "throughput_resp", "req_count", "resp_count",
					   "latency_avg", "latency_sum", "err_ratio", "err_count", NULL };

static const char *const tcp_keys[] = { "tgid", "role", "client_ip", "server_ip", "client_port", "server_port",
					"protocol", NULL };
static const char *const no_labels[] = { NULL };
static const char *const txrx_metrics[] = { "rx_bytes", "tx_bytes", "segs_in", "segs_out", NULL };
static const char *const rtt_metrics[] = { "srtt", NULL };
static const char *const abn_metrics[] = { "retran_packets", "sk_drops", NULL };

const struct gala_table gala_tables[GALA_TABLES] = {
	[GALA_L7_LINK] = { "l7_link", "l7", l7_keys, l7_labels, link_metrics },
	[GALA_L7_RPC] = { "l7_rpc", "l7", l7_keys, l7_labels, rpc_metrics },
	[GALA_TCP_TX_RX] = { "tcp_tx_rx", "tcp_link", tcp_keys, no_labels, txrx_metrics },
	[GALA_TCP_RTT] = { "tcp_rtt", "tcp_link", tcp_keys, no_labels, rtt_metrics },
	[GALA_TCP_ABN] = { "tcp_abn", "tcp_link", tcp_keys, no_labels, abn_metrics },
};

const char *gala_tables__protocol(const char *parser)
{
	if (!parser || !*parser)
		return "unknown";
	if (!strcmp(parser, "http1"))
		return "http";
	return parser; /* http2 mysql pgsql redis kafka mongo dns cql: gala-gopher's spelling already */
}

/* "ip:port" / "[v6]:port" into ip and port; the whole text as ip when it has no port. */
static void split_addr(const char *a, char *ip, size_t iplen, char *port, size_t portlen)
{
	const char *colon = a ? strrchr(a, ':') : NULL;

	if (!a)
		a = "";
	if (!colon || (a[0] != '[' && strchr(a, ':') != colon)) {
		snprintf(ip, iplen, "%s", a);
		snprintf(port, portlen, "0");
		return;
	}
	if (a[0] == '[' && colon > a + 1 && colon[-1] == ']')
		snprintf(ip, iplen, "%.*s", (int)(colon - a - 2), a + 1);
	else
		snprintf(ip, iplen, "%.*s", (int)(colon - a), a);
	snprintf(port, portlen, "%s", colon + 1);
}

/* A flow's two ends as client and server. */
struct ends {
	bool server, udp;
	char cip[GALA_VALUE_MAX], cport[16], sip[GALA_VALUE_MAX], sport[16];
};

static void ends_of(const Ember__NetFlow *f, struct ends *e)
{
	char lip[GALA_VALUE_MAX], lport[16], pip[GALA_VALUE_MAX], pport[16];

	e->server = f->side && !strcmp(f->side, "server");
	e->udp = f->transport && !strcmp(f->transport, "udp");
	split_addr(f->local_address, lip, sizeof(lip), lport, sizeof(lport));
	split_addr(f->peer_address, pip, sizeof(pip), pport, sizeof(pport));
	memcpy(e->cip, e->server ? pip : lip, sizeof(e->cip));
	memcpy(e->cport, e->server ? pport : lport, sizeof(e->cport));
	memcpy(e->sip, e->server ? lip : pip, sizeof(e->sip));
	memcpy(e->sport, e->server ? lport : pport, sizeof(e->sport));
}

#define KEY(n, ...) do { r->keys[r->nk].name = n; snprintf(r->keys[r->nk++].value, GALA_VALUE_MAX, __VA_ARGS__); } while (0)

static void keys_of(struct gala_record *r, const Ember__NetFlow *f)
{
	struct ends e;

	ends_of(f, &e);
	r->nk = 0;
	KEY("tgid", "%u", f->pid);
	KEY("client_ip", "%s", e.cip);
	KEY("server_ip", "%s", e.sip);
	KEY("server_port", "%s", e.sport);
	KEY("l4_role", "%s", e.udp ? "udp" : e.server ? "tcp_server" : "tcp_client");
	KEY("l7_role", "%s", e.server ? "server" : "client");
	KEY("protocol", "%s", gala_tables__protocol(f->protocol));
	r->nl = 1;
	r->labels[0].name = "ssl";
	snprintf(r->labels[0].value, GALA_VALUE_MAX, "%d", f->ssl ? 1 : 0);
}

unsigned gala_tables__l7(const Ember__NetFlow *f, uint64_t interval_ms, struct gala_record ret[GALA_L7_TABLES])
{
	uint64_t wb = f->write ? f->write->bytes : 0, rb = f->read ? f->read->bytes : 0;
	uint64_t wc = f->write ? f->write->count : 0, rc = f->read ? f->read->count : 0;
	double secs = interval_ms ? (double)interval_ms / 1000.0 : 1.0;
	unsigned n = 0;

	if (wb || rb || wc || rc) {
		struct gala_record *r = &ret[n++];

		memset(r, 0, sizeof(*r));
		r->t = &gala_tables[GALA_L7_LINK];
		keys_of(r, f);
		r->metrics[r->nm].name = "bytes_sent", r->metrics[r->nm++].value = (double)wb;
		r->metrics[r->nm].name = "bytes_recv", r->metrics[r->nm++].value = (double)rb;
		r->metrics[r->nm].name = "segs_sent", r->metrics[r->nm++].value = (double)wc;
		r->metrics[r->nm].name = "segs_recv", r->metrics[r->nm++].value = (double)rc;
	}
	if (f->requests && f->protocol && *f->protocol) {
		struct gala_record *r = &ret[n++];
		uint64_t resp = f->requests > f->unanswered ? f->requests - f->unanswered : 0;

		memset(r, 0, sizeof(*r));
		r->t = &gala_tables[GALA_L7_RPC];
		keys_of(r, f);
		r->metrics[r->nm].name = "throughput_req", r->metrics[r->nm++].value = (double)f->requests / secs;
		r->metrics[r->nm].name = "throughput_resp", r->metrics[r->nm++].value = (double)resp / secs;
		r->metrics[r->nm].name = "req_count", r->metrics[r->nm++].value = (double)f->requests;
		r->metrics[r->nm].name = "resp_count", r->metrics[r->nm++].value = (double)resp;
		r->metrics[r->nm].name = "latency_avg",
		r->metrics[r->nm++].value = resp ? (double)f->latency_sum_ns / (double)resp : 0;
		r->metrics[r->nm].name = "latency_sum", r->metrics[r->nm++].value = (double)f->latency_sum_ns;
		r->metrics[r->nm].name = "err_ratio",
		r->metrics[r->nm++].value = 100.0 * (double)f->errors / (double)f->requests;
		r->metrics[r->nm].name = "err_count", r->metrics[r->nm++].value = (double)f->errors;
	}
	return n;
}

static void tcp_keys_of(struct gala_record *r, const Ember__NetFlow *f)
{
	struct ends e;

	ends_of(f, &e);
	r->nk = 0;
	KEY("tgid", "%u", f->pid);
	KEY("role", "%d", e.server ? 0 : 1);
	KEY("client_ip", "%s", e.cip);
	KEY("server_ip", "%s", e.sip);
	KEY("client_port", "%s", e.cport);
	KEY("server_port", "%s", e.sport);
	KEY("protocol", "%d", strchr(e.sip, ':') ? 10 : 2);
}

#undef KEY

unsigned gala_tables__tcp(const Ember__NetFlow *f, struct gala_record ret[GALA_TCP_TABLES])
{
	uint64_t wb = f->write ? f->write->bytes : 0, rb = f->read ? f->read->bytes : 0;
	uint64_t wc = f->write ? f->write->count : 0, rc = f->read ? f->read->count : 0;
	uint64_t rtt_n = f->write_rtt ? f->write_rtt->count : 0;
	unsigned n = 0;
	struct gala_record *r;

	if (f->transport && !strcmp(f->transport, "udp"))
		return 0;
	if (wb || rb || wc || rc) {
		r = &ret[n++];
		memset(r, 0, sizeof(*r));
		r->t = &gala_tables[GALA_TCP_TX_RX];
		tcp_keys_of(r, f);
		r->metrics[r->nm].name = "rx_bytes", r->metrics[r->nm++].value = (double)rb;
		r->metrics[r->nm].name = "tx_bytes", r->metrics[r->nm++].value = (double)wb;
		r->metrics[r->nm].name = "segs_in", r->metrics[r->nm++].value = (double)rc;
		r->metrics[r->nm].name = "segs_out", r->metrics[r->nm++].value = (double)wc;
	}
	if (rtt_n) {
		r = &ret[n++];
		memset(r, 0, sizeof(*r));
		r->t = &gala_tables[GALA_TCP_RTT];
		tcp_keys_of(r, f);
		/* write_rtt.time_ns holds the sum of the RTTs in us (proto NetCalls) */
		r->metrics[r->nm].name = "srtt", r->metrics[r->nm++].value = (double)f->write_rtt->time_ns / (double)rtt_n;
	}
	if (f->retransmits || f->drops) {
		r = &ret[n++];
		memset(r, 0, sizeof(*r));
		r->t = &gala_tables[GALA_TCP_ABN];
		tcp_keys_of(r, f);
		r->metrics[r->nm].name = "retran_packets", r->metrics[r->nm++].value = (double)f->retransmits;
		r->metrics[r->nm].name = "sk_drops", r->metrics[r->nm++].value = (double)f->drops;
	}
	return n;
}

void gala_tables__machine_id(char *buf, size_t len)
{
	/* systemd's, D-Bus's, else this boot's id (a bare root without either: it changes at each boot) */
	static const char *const files[] = { "/etc/machine-id", "/var/lib/dbus/machine-id",
					     "/proc/sys/kernel/random/boot_id" };
	char line[128];

	buf[0] = 0;
	for (unsigned i = 0; i < 3 && !buf[0]; i++) {
		FILE *f = fopen(files[i], "re");
		size_t n = 0;

		if (!f)
			continue;
		if (fgets(line, sizeof(line), f))
			for (const char *c = line; *c && n + 1 < len; c++) {
				if ((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f'))
					buf[n++] = *c;
				else if (*c != '-')
					break;
			}
		buf[n] = 0;
		if (n < 16)
			buf[0] = 0;
		fclose(f);
	}
}
