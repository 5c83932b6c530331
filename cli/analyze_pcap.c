/*
 * ember analyze-pcap FILE [--protocol NAME] [--json] [options]
 *
 * Reads a pcap/pcapng file, reassembles TCP / follows UDP flows
 * (l7/pcap_flow.c), runs the L7 parsers on them and prints one line
 * per request/response exchange, ordered by request time.  With --json every
 * line is a JSON object whose keys include the columns of
 * shared/testdata/pcap/oracle.sh for the protocol (conn, method, uri, status,
 * stream_id, qname, ...), plus protocol, latency_us (request's last byte to
 * response completed, as tshark's response time), duration_us (request's
 * first byte to response completed), is_error and sizes.
 * A summary of the counters goes to stderr.
 */
#include "cli/commands.h"

#include "l7/l7.h"
#include "l7/l7_conn.h"
#include "l7/pcap_flow.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct out_line {
	uint64_t ts;   /* request time, or response time for a response alone */
	uint64_t conn, req_seq;
	uint64_t seq;
	char *text;
};

struct out {
	bool json;
	struct out_line *v;
	size_t n, cap;
	bool oom;
};

/*
 * Copies s as valid UTF-8: bytes that are not part of a valid sequence become
 * the text "\xHH", so any JSON consumer can read the line.
 */
static void utf8_clean(const uint8_t *s, size_t n, char *out, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 5 < cap;) {
		uint8_t c = s[i];
		size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 :
			     (c & 0xf8) == 0xf0 ? 4 : 0;
		bool ok = len > 0 && i + len <= n && !(len == 2 && c < 0xc2);

		for (size_t j = 1; ok && j < len; j++)
			ok = (s[i + j] & 0xc0) == 0x80;
		if (ok && o + len < cap) {
			memcpy(out + o, s + i, len);
			o += len;
			i += len;
		} else {
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
			i++;
		}
	}
	out[o < cap ? o : cap - 1] = 0;
}

static const char *field(const struct l7_record *rec, const char *key)
{
	for (unsigned i = 0; i < rec->nfields; i++)
		if (!strcmp(rec->fields[i].key, key))
			return rec->fields[i].val;
	return NULL;
}

static char *render_json(const struct pcap_flow_conn *conn, const struct l7_record *rec)
{
	struct json_object *o = json_object_new_object();
	char buf[4 * L7_FIELD_MAX + 8], cs[160];
	char *s;

	if (!o)
		return NULL;
	json_object_object_add(o, "protocol", json_object_new_string(rec->protocol));
	json_object_object_add(o, "conn", json_object_new_string(pcap_flow__conn_str(conn, cs, sizeof(cs))));
	for (unsigned i = 0; i < rec->nfields; i++) {
		utf8_clean((const uint8_t *)rec->fields[i].val, strlen(rec->fields[i].val), buf, sizeof(buf));
		json_object_object_add(o, rec->fields[i].key, json_object_new_string(buf));
	}
	if (rec->has_request && rec->has_response) {
		json_object_object_add(o, "latency_us",
				       json_object_new_int64((int64_t)((l7_record__latency_ns(rec) + 500) / 1000)));
		json_object_object_add(o, "duration_us",
				       json_object_new_int64((int64_t)((l7_record__duration_ns(rec) + 500) / 1000)));
	} else {
		json_object_object_add(o, "latency_us", NULL);
		json_object_object_add(o, "duration_us", NULL);
	}
	json_object_object_add(o, "has_request", json_object_new_boolean(rec->has_request));
	json_object_object_add(o, "has_response", json_object_new_boolean(rec->has_response));
	json_object_object_add(o, "is_error", json_object_new_boolean(rec->is_error));
	json_object_object_add(o, "is_client_error", json_object_new_boolean(rec->is_client_error));
	json_object_object_add(o, "req_bytes", json_object_new_int64((int64_t)rec->req_bytes));
	json_object_object_add(o, "resp_bytes", json_object_new_int64((int64_t)rec->resp_bytes));
	if (rec->has_request) {
		json_object_object_add(o, "req_ts_ns", json_object_new_int64((int64_t)rec->req_ts_ns));
		json_object_object_add(o, "req_end_ts_ns", json_object_new_int64((int64_t)rec->req_end_ts_ns));
	}
	if (rec->has_response)
		json_object_object_add(o, "resp_ts_ns", json_object_new_int64((int64_t)rec->resp_ts_ns));
	if (rec->req_body) {
		char *b = malloc(rec->req_body_len * 4 + 8);

		if (b) {
			utf8_clean(rec->req_body, rec->req_body_len, b, rec->req_body_len * 4 + 8);
			json_object_object_add(o, "req_body", json_object_new_string(b));
			free(b);
		}
	}
	if (rec->resp_body) {
		char *b = malloc(rec->resp_body_len * 4 + 8);

		if (b) {
			utf8_clean(rec->resp_body, rec->resp_body_len, b, rec->resp_body_len * 4 + 8);
			json_object_object_add(o, "resp_body", json_object_new_string(b));
			free(b);
		}
	}
	s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return s;
}

static char *render_text(const struct pcap_flow_conn *conn, const struct l7_record *rec)
{
	char cs[160], buf[4 * L7_FIELD_MAX + 8];
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);

	if (!f)
		return NULL;
	fprintf(f, "%-6s %s", rec->protocol, pcap_flow__conn_str(conn, cs, sizeof(cs)));
	for (unsigned i = 0; i < rec->nfields; i++) {
		utf8_clean((const uint8_t *)rec->fields[i].val, strlen(rec->fields[i].val), buf, sizeof(buf));
		fprintf(f, " %s=%s", rec->fields[i].key, buf);
	}
	if (rec->has_request && rec->has_response)
		fprintf(f, " latency=%" PRIu64 "us", (l7_record__latency_ns(rec) + 500) / 1000);
	else
		fprintf(f, " latency=-");
	fprintf(f, " req=%" PRIu64 "B resp=%" PRIu64 "B%s", rec->req_bytes, rec->resp_bytes,
		rec->is_error ? " ERROR" : rec->is_client_error ? " CLIENT-ERROR" : "");
	if (fclose(f))
		return NULL;
	(void)field;
	return s;
}

static void on_record(void *ctx, const struct pcap_flow_conn *conn, const struct l7_record *rec)
{
	struct out *o = ctx;
	char *text;

	if (o->n == o->cap) {
		size_t nc = o->cap ? o->cap * 2 : 256;
		struct out_line *nv = realloc(o->v, nc * sizeof(*nv));

		if (!nv) {
			o->oom = true;
			return;
		}
		o->v = nv;
		o->cap = nc;
	}
	text = o->json ? render_json(conn, rec) : render_text(conn, rec);
	if (!text) {
		o->oom = true;
		return;
	}
	o->v[o->n] = (struct out_line){ .ts = rec->has_request ? rec->req_ts_ns : rec->resp_ts_ns,
					.conn = conn->id, .req_seq = rec->req_seq, .seq = o->n, .text = text };
	o->n++;
}

static int by_time(const void *a, const void *b)
{
	const struct out_line *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	/* Same instant: per connection, the parser's request order if it knows it. */
	if (x->conn != y->conn)
		return x->conn < y->conn ? -1 : 1;
	if (x->req_seq != y->req_seq)
		return x->req_seq < y->req_seq ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ember analyze-pcap FILE [--protocol NAME] [--json] [options]\n"
		"\n"
		"Print the L7 request/response exchanges found in a pcap or pcapng file, one\n"
		"line per exchange in request order; counters go to stderr.\n"
		"\n"
		"  -p, --protocol NAME     parse every connection as NAME (no detection)\n"
		"  -j, --json              one JSON object per line\n"
		"      --max-query-len N   truncate URIs / query text to N bytes (default 256)\n"
		"      --max-body N        sample up to N bytes of HTTP bodies (default 0)\n"
		"      --max-conn-mem N    per-connection buffering cap in bytes (default 262144)\n"
		"      --list-protocols    print the registered parsers and exit\n"
		"  -q, --quiet             no counter summary on stderr\n"
		"  -h, --help              this help\n");
}

static void protocols(FILE *f, const char *sep)
{
	const struct l7_parser_ops *p;

	for (unsigned i = 0; (p = l7__at(i)); i++)
		fprintf(f, "%s%s", i ? sep : "", p->name);
}

static void summary(const struct pcap_flow *pf, size_t lines)
{
	const struct pcap_flow_stats *s = pcap_flow__stats(pf);
	const struct l7_stats *l = pcap_flow__l7_stats(pf);
	const struct l7_parser_ops *p;

	fprintf(stderr, "analyze-pcap: %zu exchanges; packets %" PRIu64 " (%" PRIu64 " bytes), tcp segments %"
		PRIu64 ", udp datagrams %" PRIu64 ", flows %" PRIu64 "\n",
		lines, s->packets, s->bytes, s->tcp_segments, s->udp_datagrams, s->flows);
	fprintf(stderr, "  detected:");
	for (unsigned i = 0; (p = l7__at(i)) && i < L7_STATS_MAX_PARSERS; i++)
		fprintf(stderr, " %s=%" PRIu64, p->name, l->detected[i]);
	fprintf(stderr, " | undetected=%" PRIu64 " unparseable=%" PRIu64 " over_memory=%" PRIu64
		" swapped=%" PRIu64 " ignored_bytes=%" PRIu64 " parser_dropped=%" PRIu64 "\n",
		l->undetected, l->unparseable, l->over_memory, l->swapped, l->ignored_bytes,
		l->parser_dropped);
	fprintf(stderr, "  reassembly: retrans_bytes=%" PRIu64 " ooo_segments=%" PRIu64 " ooo_overflow=%"
		PRIu64 " gaps=%" PRIu64 " gap_bytes=%" PRIu64 "\n",
		s->retrans_bytes, s->ooo_segments, s->ooo_overflow, s->gaps, s->gap_bytes);
	fprintf(stderr, "  dropped: malformed=%" PRIu64 " truncated=%" PRIu64 " ip_fragments=%" PRIu64
		" non_ip=%" PRIu64 " non_tcp_udp=%" PRIu64 " unsupported_link=%" PRIu64
		" flows_evicted=%" PRIu64 " flows_timed_out=%" PRIu64 " flow_errors=%" PRIu64 "\n",
		s->malformed, s->truncated, s->ip_fragments, s->non_ip, s->non_tcp_udp,
		s->unsupported_link, s->flows_evicted, s->flows_timed_out, s->flow_errors);
}

static int parse_size(const char *s, size_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return -EINVAL;
	*ret = (size_t)v;
	return 0;
}

int cmd_analyze_pcap(int argc, char **argv)
{
	enum { OPT_QLEN = 256, OPT_BODY, OPT_MEM, OPT_LIST };
	static const struct option longopts[] = {
		{ "protocol", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "max-query-len", required_argument, NULL, OPT_QLEN },
		{ "max-body", required_argument, NULL, OPT_BODY },
		{ "max-conn-mem", required_argument, NULL, OPT_MEM },
		{ "list-protocols", no_argument, NULL, OPT_LIST },
		{ NULL, 0, NULL, 0 },
	};
	struct l7_config cfg = L7_CONFIG_DEFAULTS;
	struct pcap_flow_opts po = { 0 };
	struct out out = { 0 };
	struct pcap_flow *pf;
	const char *proto = NULL, *file;
	char errbuf[PCAP_ERRBUF_SIZE] = "";
	bool quiet = false;
	int c, err, rc = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "p:jqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': proto = optarg; break;
		case 'j': out.json = true; break;
		case 'q': quiet = true; break;
		case 'h': usage(stdout); return 0;
		case OPT_QLEN:
			if (parse_size(optarg, &cfg.max_query_len) < 0)
				goto bad_num;
			break;
		case OPT_BODY:
			if (parse_size(optarg, &cfg.max_body_len) < 0)
				goto bad_num;
			break;
		case OPT_MEM:
			if (parse_size(optarg, &cfg.max_conn_mem) < 0 || cfg.max_conn_mem < 4096)
				goto bad_num;
			break;
		case OPT_LIST:
			protocols(stdout, "\n");
			printf("\n");
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	file = argv[optind];
	if (proto) {
		po.force = l7__find(proto);
		if (!po.force) {
			fprintf(stderr, "ember analyze-pcap: unknown protocol '%s' (known: ", proto);
			protocols(stderr, ", ");
			fprintf(stderr, ")\n");
			return 2;
		}
	}
	po.cfg = &cfg;
	po.emit = on_record;
	po.emit_ctx = &out;
	pf = pcap_flow__new(&po);
	if (!pf) {
		fprintf(stderr, "ember analyze-pcap: %s\n", strerror(errno));
		return 1;
	}
	err = pcap_flow__read_file(pf, file, errbuf);
	if (err == -EINVAL) {
		fprintf(stderr, "ember analyze-pcap: cannot read %s: %s\n", file, errbuf);
		pcap_flow__free(pf);
		return 1;
	}
	if (err < 0) {
		/* Read what we could: report, still print the exchanges found. */
		fprintf(stderr, "ember analyze-pcap: %s: %s (exchanges before it are shown)\n", file, errbuf);
		rc = 1;
	}
	pcap_flow__finish(pf);
	qsort(out.v, out.n, sizeof(*out.v), by_time);
	for (size_t i = 0; i < out.n; i++) {
		puts(out.v[i].text);
		free(out.v[i].text);
	}
	free(out.v);
	fflush(stdout);
	if (!quiet)
		summary(pf, out.n);
	if (out.oom) {
		fprintf(stderr, "ember analyze-pcap: out of memory, some exchanges are missing\n");
		rc = 1;
	}
	pcap_flow__free(pf);
	return rc;
bad_num:
	fprintf(stderr, "ember analyze-pcap: invalid number '%s'\n", optarg);
	return 2;
}
