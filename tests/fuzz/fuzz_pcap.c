/*
 * libFuzzer target: arbitrary bytes as a capture file (pcap or pcapng),
 * through libpcap, the flow table, TCP reassembly and every registered
 * parser (pcap_flow__read_fp via fmemopen).  Small bounds so that flow
 * eviction and out-of-order overflow paths are reached.
 */
#include "l7/pcap_flow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void on_rec(void *ctx, const struct pcap_flow_conn *conn, const struct l7_record *rec)
{
	char buf[160];

	(void)ctx;
	pcap_flow__conn_str(conn, buf, sizeof(buf));
	if (rec->nfields > L7_MAX_FIELDS)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct pcap_flow_opts o = { 0 };
	char errbuf[PCAP_ERRBUF_SIZE];
	struct pcap_flow *pf;
	FILE *fp;

	if (!size)
		return 0;
	cfg.max_conn_mem = 16 * 1024;
	cfg.max_body_len = 32;
	o.cfg = &cfg;
	o.emit = on_rec;
	o.max_flows = 8;
	o.max_ooo_segs = 4;
	o.idle_timeout_ns = 1000000000ULL;
	pf = pcap_flow__new(&o);
	if (!pf)
		return 0;
	fp = fmemopen((void *)data, size, "rb");
	if (fp)
		(void)pcap_flow__read_fp(pf, fp, errbuf); /* closes fp */
	pcap_flow__finish(pf);
	pcap_flow__free(pf);
	return 0;
}
