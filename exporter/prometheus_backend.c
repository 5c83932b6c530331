/*
 * The `prometheus` backend: an HTTP endpoint (libmicrohttpd) serving every
 * meter the exporter receives in the text exposition format (exporter/
 * prom_text.h) at GET /metrics, the flows of NETWORK tasks added up into
 * cumulative series (exporter/net_prom.h), and the continuous-profiling
 * monitors' latest values (gauges named like Rover's rover_con_p_* meters).
 *
 * Two threads meet here: the exporter's ZeroMQ loop calls on_meters(),
 * libmicrohttpd's single internal polling thread answers scrapes.  One mutex
 * guards the table and the counters; the render buffer belongs to the HTTP
 * thread alone (one polling thread, no thread per connection), and
 * libmicrohttpd copies it into the response after the lock is released, so a
 * slow client never holds up the ZeroMQ loop.  The listening socket is bound
 * here, not by libmicrohttpd, so a failure can say which address and port and
 * why.
 */
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "exporter/backend.h"
#include "exporter/gala_tables.h"
#include "exporter/net_prom.h"
#include "exporter/prom_text.h"

#define PROM_CONN_LIMIT     32
#define PROM_PER_IP_LIMIT   8
#define PROM_CONN_TIMEOUT_S 15
#define PROM_CONN_MEMORY    (64u << 10)
/* A series nobody updates (its analyzer or process is gone) disappears after
 * max(PROM_MIN_AGE_MS, PROM_AGE_FLUSHES flush intervals). */
#define PROM_MIN_AGE_MS     60000
#define PROM_AGE_FLUSHES    5

#define CT_METRICS "text/plain; version=0.0.4; charset=utf-8"

static const char index_html[] =
	"<!DOCTYPE html>\n<html><head><title>ember exporter</title></head>\n"
	"<body><h1>ember exporter</h1><p><a href=\"/metrics\">Metrics</a></p></body></html>\n";

struct prom_backend {
	pthread_mutex_t lock;
	struct prom_table *table;	/* under lock */
	struct net_prom *net;		/* under lock */
	struct prom_buf buf;		/* HTTP thread only */
	struct MHD_Daemon *mhd;
	uint64_t max_age_ms;
	char con_prefix[64];		/* profiling.continuous.meter_prefix */
	char con_prefix_[65];		/* ... and the '_' its meters' names go on with */
	char machine_id[64], hostname[256];	/* gala-gopher's common labels */
	/* under lock */
	uint64_t scrapes, not_found, bad_method, http_errors, drops_invalid;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void bump(struct prom_backend *pb, uint64_t *c)
{
	pthread_mutex_lock(&pb->lock);
	(*c)++;
	pthread_mutex_unlock(&pb->lock);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, const char *body,
			     size_t len, const char *allow)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) == MHD_NO ||
	    (allow && MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow) == MHD_NO)) {
		MHD_destroy_response(r);
		return MHD_NO;
	}
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result serve_metrics(struct prom_backend *pb, struct MHD_Connection *c)
{
	struct prom_table_stats st;
	struct prom_meter self = { .name = "ember_prometheus_series",
				   .help = "Series the prometheus backend holds" };
	enum MHD_Result ret;
	int r;

	pthread_mutex_lock(&pb->lock);
	pb->scrapes++;
	prom_table__stats(pb->table, &st);
	self.value = (double)st.series;
	(void)prom_table__update(pb->table, &self, mono_ms());	/* refusals are counted by the table */
	r = prom_table__render(pb->table, &pb->buf);
	if (r)
		pb->http_errors++;
	pthread_mutex_unlock(&pb->lock);
	if (r) {
		static const char msg[] = "out of memory while rendering metrics\n";
		return reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain; charset=utf-8", msg, sizeof(msg) - 1,
			     NULL);
	}
	ret = reply(c, MHD_HTTP_OK, CT_METRICS, pb->buf.p, pb->buf.len, NULL);
	if (ret == MHD_NO)
		bump(pb, &pb->http_errors);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct prom_backend *pb = cls;
	static const char not_found[] = "not found: try /metrics\n";
	static const char bad_method[] = "method not allowed\n";

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)con_cls;
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD)) {
		bump(pb, &pb->bad_method);
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", bad_method,
			     sizeof(bad_method) - 1, "GET, HEAD");
	}
	if (!strcmp(url, "/metrics"))
		return serve_metrics(pb, c);
	if (!strcmp(url, "/"))
		return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", index_html, sizeof(index_html) - 1, NULL);
	bump(pb, &pb->not_found);
	return reply(c, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", not_found, sizeof(not_found) - 1, NULL);
}

/* A bound, listening socket for address:port, or -1 with err filled. */
static int listen_on(const char *address, int64_t port, int *family, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL;
	char portstr[16];
	const char *l = strchr(address, ':') ? "[" : "", *r = *l ? "]" : "";
	int fd = -1, one = 1, e;

	snprintf(portstr, sizeof(portstr), "%lld", (long long)port);
	e = getaddrinfo(address, portstr, &hints, &ai);
	if (e) {
		snprintf(err, errlen, "cannot listen on %s%s%s:%s (exporter.prometheus.address/port): %s", l, address, r,
			 portstr, gai_strerror(e));
		errno = EINVAL;
		return -1;
	}
	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64)) {
		e = errno;
		snprintf(err, errlen, "cannot listen on %s%s%s:%s (exporter.prometheus.address/port): %s", l, address, r,
			 portstr, strerror(e));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		errno = e;
		return -1;
	}
	*family = ai->ai_family;
	freeaddrinfo(ai);
	return fd;
}

static void prom_free(void *st);

static void *prom_init(const struct ember_config *cfg, char *err, size_t errlen)
{
	struct prom_backend *pb = calloc(1, sizeof(*pb));
	uint64_t flush_ms = cfg->profiling.flush_interval_ns / 1000000;
	int fd, family = AF_INET, e;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;

	if (!pb) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&pb->lock, NULL);
	pb->max_age_ms = flush_ms * PROM_AGE_FLUSHES > PROM_MIN_AGE_MS ? flush_ms * PROM_AGE_FLUSHES : PROM_MIN_AGE_MS;
	snprintf(pb->con_prefix, sizeof(pb->con_prefix), "%s", cfg->profiling.continuous.meter_prefix);
	snprintf(pb->con_prefix_, sizeof(pb->con_prefix_), "%s_", pb->con_prefix);
	gala_tables__machine_id(pb->machine_id, sizeof(pb->machine_id));
	if (gethostname(pb->hostname, sizeof(pb->hostname) - 1))
		snprintf(pb->hostname, sizeof(pb->hostname), "unknown");
	pb->table = prom_table__new(PROM_DEFAULT_MAX_SERIES);
	pb->net = net_prom__new(NET_PROM_DEFAULT_MAX_SERIES);
	if (!pb->table || !pb->net) {
		e = errno;
		snprintf(err, errlen, "out of memory for the series table");
		goto fail;
	}
	fd = listen_on(cfg->exporter.prometheus.address, cfg->exporter.prometheus.port, &family, err, errlen);
	if (fd < 0) {
		e = errno;
		goto fail;
	}
	if (family == AF_INET6)
		flags |= MHD_USE_IPv6;
	pb->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, pb,
				   MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
				   MHD_OPTION_CONNECTION_LIMIT, (unsigned)PROM_CONN_LIMIT,
				   MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)PROM_PER_IP_LIMIT,
				   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)PROM_CONN_TIMEOUT_S,
				   MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)PROM_CONN_MEMORY,
				   MHD_OPTION_END);
	if (!pb->mhd) {
		e = errno ? errno : EIO;
		/* libmicrohttpd leaves a socket it refused to the caller */
		close(fd);
		snprintf(err, errlen, "cannot start the HTTP server on %s port %lld",
			 cfg->exporter.prometheus.address, (long long)cfg->exporter.prometheus.port);
		goto fail;
	}
	return pb;
fail:
	prom_free(pb);
	errno = e;
	return NULL;
}

static void prom_on_meters(void *st, const Ember__MeterBatch *b, uint32_t analyzer)
{
	struct prom_backend *pb = st;
	uint64_t now = mono_ms();

	(void)analyzer;	/* analyzers label their own meters (analyzer="N") */
	if (!b)
		return;
	pthread_mutex_lock(&pb->lock);
	/* first: a process that ended and one that took its pid may come in one batch */
	for (size_t i = 0; i < b->n_drops; i++) {
		const Ember__SeriesDrop *d = b->drops[i];

		if (d && d->prefix && d->label && d->value &&
		    prom_table__drop(pb->table, d->prefix, d->label, d->value) < 0)
			pb->drops_invalid++;
	}
	for (size_t i = 0; i < b->n_meters; i++) {
		const Ember__Meter *m = b->meters[i];
		struct prom_label labels[PROM_MAX_LABELS];
		struct prom_bucket buckets[PROM_MAX_BUCKETS];
		struct prom_meter pm;

		if (!m)
			continue;
		pm = (struct prom_meter){
			.name = m->name, .help = m->help, .value = m->value, .is_counter = m->is_counter,
			.hist_count = m->hist_count,
			/* oversized lists reach the table only as counts, which it refuses */
			.n_labels = m->n_labels, .labels = labels,
			.n_buckets = m->n_buckets, .buckets = buckets,
		};
		for (size_t j = 0; j < m->n_labels && j < PROM_MAX_LABELS; j++) {
			labels[j].name = m->labels[j] ? m->labels[j]->name : NULL;
			labels[j].value = m->labels[j] ? m->labels[j]->value : NULL;
		}
		for (size_t j = 0; j < m->n_buckets && j < PROM_MAX_BUCKETS; j++) {
			buckets[j].upper_bound = m->buckets[j] ? m->buckets[j]->upper_bound : 0;
			buckets[j].count = m->buckets[j] ? m->buckets[j]->count : 0;
		}
		(void)prom_table__update(pb->table, &pm, now);	/* refusals are counted by the table */
	}
	pthread_mutex_unlock(&pb->lock);
}

/* The descriptions of gala-gopher's tables' metrics, as ember measures them (exporter/gala_tables.h). */
static const char *gala_help(const char *metric)
{
	static const struct { const char *m, *h; } help[] = {
		{ "bytes_sent", "Bytes the process sent on the L7 session in the report period" },
		{ "bytes_recv", "Bytes the process received on the L7 session in the report period" },
		{ "segs_sent", "Write calls of the L7 session in the report period (gala-gopher: TCP segments)" },
		{ "segs_recv", "Read calls of the L7 session in the report period (gala-gopher: TCP segments)" },
		{ "throughput_req", "Requests per second of the L7 session over the report period" },
		{ "throughput_resp", "Responses per second of the L7 session over the report period" },
		{ "req_count", "Requests of the L7 session completed in the report period" },
		{ "resp_count", "Requests of the L7 session answered in the report period" },
		{ "latency_avg", "Mean latency (ns, request end to response) of the L7 session in the report period" },
		{ "latency_sum", "Summed latency (ns) of the L7 session in the report period" },
		{ "err_ratio", "Percent of the L7 session's requests that were errors in the report period" },
		{ "err_count", "Errors of the L7 session (by its protocol's rule) in the report period" },
		{ "rx_bytes", "Bytes the process received on the link in the report period" },
		{ "tx_bytes", "Bytes the process sent on the link in the report period" },
		{ "segs_in", "Read calls on the link in the report period (gala-gopher: segments received)" },
		{ "segs_out", "Write calls on the link in the report period (gala-gopher: segments sent)" },
		{ "srtt", "Mean smoothed RTT (us) the link's writes saw in the report period" },
		{ "retran_packets", "Retransmitted segments of the link in the report period" },
		{ "sk_drops", "Packets of the link the kernel dropped in the report period" },
	};

	for (unsigned i = 0; i < sizeof(help) / sizeof(help[0]); i++)
		if (!strcmp(help[i].m, metric))
			return help[i].h;
	return NULL;
}

static void gala_record_gauges(struct prom_backend *pb, const struct gala_record *r, uint64_t now)
{
	struct prom_label labels[GALA_MAX_KEYS + GALA_MAX_LABELS + 2];
	char name[128];
	size_t n = 0;

	for (unsigned i = 0; i < r->nk; i++)
		labels[n++] = (struct prom_label){ r->keys[i].name, r->keys[i].value };
	for (unsigned i = 0; i < r->nl; i++)
		labels[n++] = (struct prom_label){ r->labels[i].name, r->labels[i].value };
	labels[n++] = (struct prom_label){ "machine_id", pb->machine_id };
	labels[n++] = (struct prom_label){ "hostname", pb->hostname };
	for (unsigned i = 0; i < r->nm; i++) {
		snprintf(name, sizeof(name), "gala_gopher_%s_%s", r->t->entity, r->metrics[i].name);
		(void)prom_table__update(pb->table, &(struct prom_meter){ .name = name, .help = gala_help(r->metrics[i].name),
									  .value = r->metrics[i].value, .labels = labels,
									  .n_labels = n }, now);
	}
}

/* A REST task's flows as gala-gopher's tables (Task.gala): gauges of the report period, per table asked for. */
static void gala_gauges(struct prom_backend *pb, const Ember__NetworkBatch *b, uint64_t now)
{
	const Ember__GalaTables *g = b->task->gala;
	uint64_t interval = b->window_end_unix_ns > b->window_start_unix_ns
				    ? (b->window_end_unix_ns - b->window_start_unix_ns) / 1000000 : 0;

	for (size_t i = 0; i < b->n_flows; i++) {
		const Ember__NetFlow *f = b->flows[i];
		struct gala_record r[GALA_TABLES];
		unsigned n;
		bool proto_ok = !g->n_l7_protocols;

		for (size_t p = 0; p < g->n_l7_protocols && !proto_ok; p++)
			proto_ok = !strcmp(g->l7_protocols[p], gala_tables__protocol(f->protocol));
		n = proto_ok && (g->l7_link || g->l7_rpc) ? gala_tables__l7(f, interval, r) : 0;
		for (unsigned k = 0; k < n; k++)
			if ((r[k].t == &gala_tables[GALA_L7_LINK] && g->l7_link) ||
			    (r[k].t == &gala_tables[GALA_L7_RPC] && g->l7_rpc))
				gala_record_gauges(pb, &r[k], now);
		n = g->tcp_tx_rx || g->tcp_rtt || g->tcp_abn ? gala_tables__tcp(f, r) : 0;
		for (unsigned k = 0; k < n; k++)
			if ((r[k].t == &gala_tables[GALA_TCP_TX_RX] && g->tcp_tx_rx) ||
			    (r[k].t == &gala_tables[GALA_TCP_RTT] && g->tcp_rtt) ||
			    (r[k].t == &gala_tables[GALA_TCP_ABN] && g->tcp_abn))
				gala_record_gauges(pb, &r[k], now);
	}
}

static void prom_on_network(void *st, const Ember__NetworkBatch *b)
{
	struct prom_backend *pb = st;
	uint64_t now = mono_ms();

	pthread_mutex_lock(&pb->lock);
	if (b->task && b->task->gala)
		gala_gauges(pb, b, now);
	else
		net_prom__add_batch(pb->net, b, pb->table, now);
	pthread_mutex_unlock(&pb->lock);
}

/* A REST task's processes are no longer followed: their gala-gopher gauges go at once. */
static void prom_on_task_event(void *st, const Ember__TaskEvent *ev)
{
	static const char *const entities[] = { "gala_gopher_l7_", "gala_gopher_tcp_link_" };
	struct prom_backend *pb = st;
	char pid[16];

	if (!ev || !ev->task || !ev->task->gala || ev->state == EMBER__TASK_EVENT__STATE__STARTED)
		return;
	pthread_mutex_lock(&pb->lock);
	for (size_t i = 0; i < ev->task->n_pids; i++) {
		snprintf(pid, sizeof(pid), "%u", ev->task->pids[i]);
		for (unsigned e = 0; e < sizeof(entities) / sizeof(entities[0]); e++)
			(void)prom_table__drop(pb->table, entities[e], "tgid", pid);
	}
	pthread_mutex_unlock(&pb->lock);
}

/* The continuous-profiling monitors' values, with what each means in ember (where Rover differs). */
static const struct { const char *monitor, *suffix, *help; } monitor_meters[] = {
	{ "PROCESS_CPU", "process_cpu",
	  "CPU time of the process over the last fetch interval, percent of one core (Rover: lifetime average, CPU "
	  "time since start / age)" },
	/* Rover's rover_con_p_process_thread_count: Prometheus reserves the _count suffix for histograms
	 * and summaries */
	{ "PROCESS_THREAD_COUNT", "process_threads", "Threads of the process" },
	{ "SYSTEM_LOAD", "system_load", "1-minute load average" },
#define L7(M, m, PROTO, RULE)                                                                                     \
	{ #M "_ERROR_RATE", m "_error_rate",                                                                      \
	  "Percent of the process's server-side " PROTO " exchanges in a 1-s slot that were errors (" RULE ")" },    \
	{ #M "_AVG_RESPONSE_TIME", m "_avg_response_time",                                                        \
	  "Mean response time (ms) of the process's server-side " PROTO " exchanges in a 1-s slot, from the "        \
	  "request's last byte to the response's" }
	L7(HTTP, "http", "HTTP/1.x", "status 5xx"),
	L7(HTTP2, "http2", "HTTP/2", "status 5xx or a gRPC status other than 0"),
	L7(MYSQL, "mysql", "MySQL", "an ERR packet"),
	L7(PGSQL, "pgsql", "PostgreSQL", "an ErrorResponse"),
	L7(REDIS, "redis", "Redis", "an error reply"),
	L7(MONGO, "mongo", "MongoDB", "ok 0 or a query failure"),
	L7(KAFKA, "kafka", "Kafka", "an error code other than 0"),
	L7(DNS, "dns", "DNS", "an rcode other than NOERROR"),
	L7(CQL, "cql", "CQL", "an ERROR message"),
#undef L7
};

static void prom_on_monitors(void *st, const Ember__MonitorBatch *b, uint32_t analyzer)
{
	struct prom_backend *pb = st;
	uint64_t now = mono_ms();

	(void)analyzer;
	if (!b)
		return;
	pthread_mutex_lock(&pb->lock);
	/* first: a pid that ended may be monitored again, for a new process, in the same batch */
	for (size_t i = 0; i < b->n_ended_pids; i++) {
		char pid[16];

		snprintf(pid, sizeof(pid), "%u", b->ended_pids[i]);
		(void)prom_table__drop(pb->table, pb->con_prefix_, "pid", pid);
	}
	for (size_t i = 0; i < b->n_values; i++) {
		const Ember__MonitorValue *v = b->values[i];
		struct prom_label labels[5];
		char name[128], pid[16];
		unsigned k, n = 0;

		for (k = 0; v && v->monitor && k < sizeof(monitor_meters) / sizeof(monitor_meters[0]); k++)
			if (!strcmp(v->monitor, monitor_meters[k].monitor))
				break;
		if (!v || k == sizeof(monitor_meters) / sizeof(monitor_meters[0]))
			continue;
		snprintf(name, sizeof(name), "%s_%s", pb->con_prefix, monitor_meters[k].suffix);
		snprintf(pid, sizeof(pid), "%u", v->pid);
		labels[n++] = (struct prom_label){ "pid", pid };
		/* the process's name, as gala-gopher labels what it reports per process */
		labels[n++] = (struct prom_label){ "comm", v->comm ? v->comm : "" };
		labels[n++] = (struct prom_label){ "target", v->target ? v->target : "" };
		if (v->service && v->service[0])
			labels[n++] = (struct prom_label){ "service", v->service };
		if (v->uri && v->uri[0])
			labels[n++] = (struct prom_label){ "uri", v->uri };
		(void)prom_table__update(pb->table, &(struct prom_meter){ .name = name, .help = monitor_meters[k].help,
									  .value = v->value, .n_labels = n,
									  .labels = labels }, now);
	}
	pthread_mutex_unlock(&pb->lock);
}

static void prom_tick(void *st, uint64_t now_ms, int final)
{
	struct prom_backend *pb = st;

	(void)now_ms;	/* wall clock; ages are measured on the monotonic one */
	if (final)
		return;
	pthread_mutex_lock(&pb->lock);
	/* together, so a network series the table forgot starts again from zero */
	prom_table__expire(pb->table, mono_ms(), pb->max_age_ms);
	net_prom__expire(pb->net, mono_ms(), pb->max_age_ms);
	pthread_mutex_unlock(&pb->lock);
}

static unsigned prom_counters(void *st, struct backend_counter *ret, unsigned max)
{
	struct prom_backend *pb = st;
	struct prom_table_stats ts;
	struct net_prom_stats ns;
	unsigned n = 0;

	pthread_mutex_lock(&pb->lock);
	prom_table__stats(pb->table, &ts);
	net_prom__stats(pb->net, &ns);
	struct backend_counter c[] = {
		{ "prometheus_scrapes", pb->scrapes, 0 },
		{ "prometheus_series_added", ts.series_added, 0 },
		{ "prometheus_series_expired", ts.series_expired, 0 },
		{ "prometheus_series_of_ended_processes", ts.series_dropped_by_label, 0 },
		{ "prometheus_series_drops_invalid", pb->drops_invalid, 0 },
		{ "prometheus_series_dropped", ts.series_dropped, 0 },
		{ "prometheus_meters_invalid", ts.invalid, 0 },
		{ "prometheus_meters_conflicting", ts.conflicts, 0 },
		{ "prometheus_render_bytes", ts.render_bytes, 0 },
		{ "prometheus_render_truncated", ts.render_truncated, 0 },
		{ "prometheus_http_not_found", pb->not_found, 0 },
		{ "prometheus_http_bad_method", pb->bad_method, 0 },
		{ "prometheus_http_errors", pb->http_errors, 0 },
		{ "prometheus_nomem", ts.nomem + ns.nomem, 0 },
		{ "prometheus_net_flows", ns.flows, 0 },
		{ "prometheus_net_flows_invalid", ns.flows_invalid, 0 },
		{ "prometheus_net_series", ns.series, 1 },
		{ "prometheus_net_series_dropped", ns.series_dropped, 0 },
		{ "prometheus_net_series_expired", ns.series_expired, 0 },
		{ "prometheus_net_meters_left_out", ns.meters_left_out, 0 },
	};
	pthread_mutex_unlock(&pb->lock);
	for (; n < max && n < sizeof(c) / sizeof(c[0]); n++)
		ret[n] = c[n];
	return n;
}

static void prom_free(void *st)
{
	struct prom_backend *pb = st;

	if (!pb)
		return;
	if (pb->mhd)
		MHD_stop_daemon(pb->mhd);	/* joins the HTTP thread, closes the socket */
	prom_table__free(pb->table);
	net_prom__free(pb->net);
	prom_buf__release(&pb->buf);
	pthread_mutex_destroy(&pb->lock);
	free(pb);
}

const struct exporter_backend_ops prometheus_backend_ops = {
	.name = "prometheus",
	.init = prom_init,
	.on_task_event = prom_on_task_event,
	.on_meters = prom_on_meters,
	.on_network = prom_on_network,
	.on_monitors = prom_on_monitors,
	.tick = prom_tick,
	.counters = prom_counters,
	.free = prom_free,
};
