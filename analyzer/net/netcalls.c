#include "analyzer/net/netcalls.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/syscall.h>

#define CALL_RING SAMPLER_MAX_CALLS

struct dcall {
	uint64_t ts, end;            /* monotonic: entry, exit */
	uint32_t pkts, pkt_bytes, ifindex, srtt_us;
	uint16_t nr;                 /* syscall number; TLS calls: enum net_tls_fn */
	uint16_t op;                 /* NET_OP_READ, _WRITE, _TLS_READ, _TLS_WRITE */
};

struct netcalls {
	unsigned head, n;
	struct dcall c[CALL_RING];
};

int netcalls__add(struct netcalls **dc, const struct net_event *e)
{
	struct dcall *d;

	if (!*dc && !(*dc = calloc(1, sizeof(**dc))))
		return -ENOMEM;
	d = &(*dc)->c[(*dc)->head];
	(*dc)->head = ((*dc)->head + 1) % CALL_RING;
	if ((*dc)->n < CALL_RING)
		(*dc)->n++;
	d->ts = e->ts_ns;
	d->end = e->ts_ns + e->dur_ns;
	d->pkts = e->l2_pkts;
	d->pkt_bytes = e->l2_bytes;
	d->ifindex = e->l2_ifindex;
	d->srtt_us = e->srtt_us;
	d->nr = e->syscall;
	d->op = e->op;
	return 0;
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

unsigned netcalls__between(const struct netcalls *dc, uint64_t from, uint64_t to, bool tls, int64_t mono_to_unix,
			   struct sampler_call *out)
{
	unsigned n = 0;

	if (!dc || !from || to < from)
		return 0;
	for (unsigned i = 0; i < dc->n; i++) {
		const struct dcall *d = &dc->c[(dc->head + CALL_RING - dc->n + i) % CALL_RING];
		uint64_t at = is_write_op(d->op) ? d->ts : d->end;
		struct sampler_call *o;

		if (at < from || at > to || is_tls_op(d->op) != tls)
			continue;
		o = &out[n++];
		/* Unsigned: a timestamp from a hostile record may be anything, and wrapping is defined there. */
		o->start_unix_ns = d->ts + (uint64_t)mono_to_unix;
		o->end_unix_ns = d->end + (uint64_t)mono_to_unix;
		o->name = call_name(d);
		o->pkts = d->pkts;
		o->pkt_bytes = d->pkt_bytes;
		o->ifindex = d->ifindex;
		o->rtt_us = d->srtt_us;
		for (unsigned j = 0; tls && j < dc->n; j++) {
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

struct netcalls *netcalls__free(struct netcalls *dc)
{
	free(dc);
	return NULL;
}
