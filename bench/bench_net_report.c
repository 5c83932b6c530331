/*
 * bench_net_report: how long publishing one network report of N listed
 * exchanges keeps the analyzer away from its ring.
 *
 * A network task's report is built and sent on the analyzer's only thread;
 * meanwhile nobody consumes the shared-memory ring the collector writes
 * into, and at the collector's rate (~200 MB/s of calls under wrk on
 * loopback) the default 8 MiB ring holds ~40 ms.  This feeds N HTTP/1
 * server exchanges (keep-alive, 64 per connection, as nginx under wrk)
 * through netprof__record, then times the report (netprof__tick) with the
 * batch going to a real ZeroMQ PUSH socket over ipc, a thread reading it
 * as the exporter would.
 *
 * Figures per N: the report's wall and CPU time, the batches (parts) it
 * sent and their bytes, and the hold: the longest stretch without a ring
 * drain (netprof's drain hook, called between the parts of a report), in
 * wall time and in this thread's CPU time (the same on a busy machine).
 * First, net_record_ns_per_event: the analyzer's CPU per socket event
 * (run_record).
 * Usage: bench_net_report [N...] (default 20000 100000 400000).
 * Output: one "name: value unit" line per figure.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "analyzer/net/netprof.h"
#include "analyzer/publisher.h"
#include "analyzer/tasks.h"
#include "bpf/ember_abi.h"
#include "bpf/net_abi.h"
#include "common/timeutil.h"

#define PID 4242
#define PER_CONN 64

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
/* This thread's CPU time: the same figure on a busy machine, where wall time also counts the waits for a CPU. */
static uint64_t cpu_ns(void) { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

/* ---- the exporter's end --------------------------------------------------------------- */

struct sink {
	void *sock;
	uint64_t msgs, bytes;
};

static void *sink_run(void *arg)
{
	struct sink *s = arg;
	zmq_msg_t m;

	for (;;) {
		zmq_msg_init(&m);
		if (zmq_msg_recv(&m, s->sock, 0) < 0) {
			zmq_msg_close(&m);
			return NULL;  /* the context is ending */
		}
		if (zmq_msg_size(&m) == 0) {
			zmq_msg_close(&m);
			return NULL;  /* the bench's end marker */
		}
		__atomic_add_fetch(&s->msgs, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&s->bytes, zmq_msg_size(&m), __ATOMIC_RELAXED);
		zmq_msg_close(&m);
	}
}

/* ---- the ring's side: drains during a report ------------------------------------------ */

static struct {
	uint64_t last_ns, max_gap_ns, last_cpu, max_gap_cpu, drains;
} H;

static void hold_start(void)
{
	H.last_ns = now_ns();
	H.last_cpu = cpu_ns();
	H.max_gap_ns = H.max_gap_cpu = 0;
	H.drains = 0;
}

static void hold_mark(void)
{
	uint64_t t = now_ns(), c = cpu_ns();

	if (t - H.last_ns > H.max_gap_ns)
		H.max_gap_ns = t - H.last_ns;
	if (c - H.last_cpu > H.max_gap_cpu)
		H.max_gap_cpu = c - H.last_cpu;
	H.last_ns = t;
	H.last_cpu = c;
}

/* netprof's drain hook: the analyzer would consume its ring here. */
static void drain(void *ctx)
{
	(void)ctx;
	H.drains++;
	hold_mark();
}

/* ---- records -------------------------------------------------------------------------- */

static uint64_t ev_ts = 1000000000ull;

/* An event of connection ino into buf (sizeof(struct net_event) + NET_MAX_PAYLOAD bytes); returns its length. */
static uint32_t ev_build(uint8_t *buf, uint16_t op, uint64_t ino, uint16_t rport, int64_t ret, const char *data)
{
	struct net_event *e = (struct net_event *)buf;
	uint32_t n = data ? (uint32_t)strlen(data) : 0;

	memset(e, 0, sizeof(*e));
	e->ts_ns = ev_ts;
	e->dur_ns = 2000;
	ev_ts += 10000;
	e->tgid = PID;
	e->tid = PID;
	e->fd = 7;
	e->op = op;
	e->ret = ret;
	e->ino = ino;
	e->sk = 0xffff888000000000ull + ino;
	e->family = AF_INET;
	e->type = SOCK_STREAM;
	e->lport = 8080;
	e->rport = rport;
	memcpy(e->laddr, (const uint8_t[4]){ 127, 0, 0, 1 }, 4);
	memcpy(e->raddr, (const uint8_t[4]){ 127, 0, 0, 1 }, 4);
	e->payload = n;
	memcpy(e->comm, "nginx", 6);
	if (n)
		memcpy(buf + sizeof(*e), data, n);
	return (uint32_t)(sizeof(*e) + n);
}

static void ev(struct netprof *np, uint16_t op, uint64_t ino, uint16_t rport, int64_t ret, const char *data)
{
	static uint8_t buf[sizeof(struct net_event) + NET_MAX_PAYLOAD];

	netprof__record(np, buf, ev_build(buf, op, ino, rport, ret, data));
}

static void feed(struct netprof *np, uint64_t n, uint64_t *ino)
{
	static const char req[] = "GET /small.txt HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";
	static const char resp[] = "HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/plain\r\n"
				   "Content-Length: 6\r\nConnection: keep-alive\r\n\r\nhello\n";

	for (uint64_t i = 0; i < n; i++) {
		uint16_t port = (uint16_t)(40000 + *ino % 20000);

		if (i % PER_CONN == 0) {
			if (i)
				ev(np, NET_OP_CLOSE, *ino, port, 0, NULL);
			++*ino;
			port = (uint16_t)(40000 + *ino % 20000);
			ev(np, NET_OP_ACCEPT, *ino, port, 7, NULL);
		}
		ev(np, NET_OP_READ, *ino, port, sizeof(req) - 1, req);
		ev(np, NET_OP_WRITE, *ino, port, sizeof(resp) - 1, resp);
	}
	ev(np, NET_OP_CLOSE, *ino, (uint16_t)(40000 + *ino % 20000), 0, NULL);
}

/* ---- one run's profiler and sink ---------------------------------------------------------- */

/* A network task's profiler publishing to a sink thread over ipc (name: the socket's), as the analyzer's. */
struct bench {
	struct sink s;
	struct publisher *pub;
	struct task_mgr *tm;
	struct netprof *np;
	pthread_t th;
	bool sinking;
	char ep[160];
};

static int bench_start(struct bench *b, void *zctx, const char *dir, const char *name, struct netprof_opts *o)
{
	struct task_def def = { .id = "bench", .kind = EMBER_TASK_NETWORK, .npids = 1, .pids = { PID },
				.start_unix_ms = 1, .duration_ms = 3600000, .report_interval_ms = 1000 };
	struct task_def *t;

	memset(b, 0, sizeof(*b));
	snprintf(b->ep, sizeof(b->ep), "ipc://%s/exporter-%s.sock", dir, name);
	b->tm = task_mgr__new(4);
	b->s.sock = zmq_socket(zctx, ZMQ_PULL);
	if (!b->tm || !b->s.sock || zmq_bind(b->s.sock, b->ep))
		return -1;
	b->pub = publisher__new(zctx, b->ep, 1000, 0);
	if (!b->pub || task_mgr__add(b->tm, &def, &t))
		return -1;
	o->pub = b->pub;
	o->tm = b->tm;
	b->np = netprof__new(o);
	if (!b->np || netprof__open(b->np, t))
		return -1;
	b->sinking = !pthread_create(&b->th, NULL, sink_run, &b->s);
	return b->sinking ? 0 : -1;
}

/* Stops the sink (an empty message ends it) and frees what bench_start made. */
static void bench_end(struct bench *b, void *zctx)
{
	if (b->sinking) {
		void *end = zmq_socket(zctx, ZMQ_PUSH);
		zmq_msg_t m;

		zmq_connect(end, b->ep);
		zmq_msg_init_size(&m, 0);
		zmq_msg_send(&m, end, 0);
		pthread_join(b->th, NULL);
		zmq_close(end);
	}
	netprof__free(b->np);
	publisher__free(b->pub);
	task_mgr__free(b->tm);
	if (b->s.sock)
		zmq_close(b->s.sock);
	if (b->ep[0])
		unlink(b->ep + strlen("ipc://"));
}

/* ---- the per-event cost -------------------------------------------------------------- */

#define REC_CONNS 16            /* wrk -c16, as bench/net.sh */
#define REC_EXCHANGES 200000    /* per round */
#define REC_ROUNDS 5
#define REC_PER_S 36000         /* exchanges per simulated second: a report each */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The analyzer's own work per event, as bench/net.sh's load gives it: 16
 * keep-alive connections taking turns (a request read, its response
 * written), the default listing bound, a report per simulated second going
 * out to the sink.  Only this thread's CPU time is counted, so the figure
 * does not move with the host's other load as the live benches' do.
 */
static int run_record(void *zctx, const char *dir)
{
	struct netprof_opts o = { .max_connections = 65536, .idle_timeout_ns = 3600000000000ull,
				  .max_exchanges = 2000, .default_report_ms = 1000, .l7 = L7_CONFIG_DEFAULTS };
	static const char req[] = "GET /small.txt HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";
	static const char resp[] = "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sat, 28 Nov 2026 23:00:00 GMT\r\n"
				   "Content-Type: text/plain\r\nContent-Length: 6\r\nLast-Modified: Sat, 28 Nov 2026 "
				   "22:00:00 GMT\r\nConnection: keep-alive\r\nETag: \"6a1f0c2b-6\"\r\n"
				   "Accept-Ranges: bytes\r\n\r\nhello\n";
	static uint8_t evs[REC_CONNS][2][sizeof(struct net_event) + NET_MAX_PAYLOAD];
	uint32_t evlen[REC_CONNS][2];
	uint64_t ns[REC_ROUNDS], ino = 1000000, st[NPS_MAX], events = 0, ms = timeutil__unix_ms();
	struct bench b;
	struct netprof *np;
	int rc = 1;

	if (bench_start(&b, zctx, dir, "record", &o))
		goto out;
	np = b.np;
	/* the events are built once: only their times move, so the figure is the analyzer's work alone */
	for (int c = 0; c < REC_CONNS; c++) {
		ev(np, NET_OP_ACCEPT, ino + (uint64_t)c, (uint16_t)(40000 + c), 7, NULL);
		events++;
		evlen[c][0] = ev_build(evs[c][0], NET_OP_READ, ino + (uint64_t)c, (uint16_t)(40000 + c), sizeof(req) - 1, req);
		evlen[c][1] = ev_build(evs[c][1], NET_OP_WRITE, ino + (uint64_t)c, (uint16_t)(40000 + c), sizeof(resp) - 1,
				       resp);
	}
	for (int r = 0; r < REC_ROUNDS; r++) {
		uint64_t c0 = cpu_ns();

		for (uint64_t i = 0; i < REC_EXCHANGES; i++) {
			uint64_t c = i % REC_CONNS;

			for (int d = 0; d < 2; d++) {
				((struct net_event *)evs[c][d])->ts_ns = ev_ts;
				ev_ts += 10000;
				netprof__record(np, evs[c][d], evlen[c][d]);
			}
			if ((r * REC_EXCHANGES + i + 1) % REC_PER_S == 0) {
				ms += 1000;
				netprof__tick(np, ms);
			}
		}
		ns[r] = (cpu_ns() - c0) / (2 * REC_EXCHANGES);
		events += 2 * REC_EXCHANGES;
	}
	netprof__stats(np, st);
	/* every event recorded, every exchange parsed: else the figure is not the work it names */
	if (st[NPS_RECORDS] != events || st[NPS_EXCHANGES] != (uint64_t)REC_ROUNDS * REC_EXCHANGES ||
	    st[NPS_BAD_RECORDS] || st[NPS_PARSER_DROPPED]) {
		fprintf(stderr, "bench_net_report: %llu records, %llu exchanges, %llu bad, %llu dropped; fed %llu "
			"events, %llu exchanges\n", (unsigned long long)st[NPS_RECORDS],
			(unsigned long long)st[NPS_EXCHANGES], (unsigned long long)st[NPS_BAD_RECORDS],
			(unsigned long long)st[NPS_PARSER_DROPPED], (unsigned long long)events,
			(unsigned long long)REC_ROUNDS * REC_EXCHANGES);
		goto out;
	}
	qsort(ns, REC_ROUNDS, sizeof(ns[0]), cmp_u64);
	printf("net_record_ns_per_event: %llu ns (range %llu-%llu over %d rounds of %d exchanges on %d connections; "
	       "the analyzer's CPU for a socket event: parse, books, reports)\n",
	       (unsigned long long)ns[REC_ROUNDS / 2], (unsigned long long)ns[0],
	       (unsigned long long)ns[REC_ROUNDS - 1], REC_ROUNDS, REC_EXCHANGES, REC_CONNS);
	rc = 0;
out:
	bench_end(&b, zctx);
	return rc;
}

/* ---- one N ---------------------------------------------------------------------------- */

static int run_one(void *zctx, const char *dir, uint64_t n)
{
	struct netprof_opts o = { .max_connections = 65536, .idle_timeout_ns = 3600000000000ull,
				  .max_exchanges = n, .default_report_ms = 1000, .l7 = L7_CONFIG_DEFAULTS,
				  .drain = drain };
	uint64_t ino = 0, t0, t1, c0, c1, st[NPS_MAX], batches0;
	struct bench b;
	struct netprof *np;
	int rc = 1;
	char name[32];

	snprintf(name, sizeof(name), "%llu", (unsigned long long)n);
	if (bench_start(&b, zctx, dir, name, &o))
		goto out;
	np = b.np;

	feed(np, n, &ino);
	netprof__stats(np, st);
	if (st[NPS_EXCHANGES] != n) {
		fprintf(stderr, "bench_net_report: fed %llu exchanges, netprof counted %llu\n",
			(unsigned long long)n, (unsigned long long)st[NPS_EXCHANGES]);
		goto out;
	}
	batches0 = st[NPS_BATCHES];
	hold_start();
	t0 = now_ns();
	c0 = cpu_ns();
	netprof__tick(np, timeutil__unix_ms() + 1000);
	t1 = now_ns();
	c1 = cpu_ns();
	hold_mark();
	netprof__stats(np, st);

	/* Everything sent has arrived before the sink is stopped. */
	while (__atomic_load_n(&b.s.msgs, __ATOMIC_RELAXED) < st[NPS_BATCHES] - batches0)
		usleep(1000);
	printf("net_report_%llu_exchanges_ms: %.1f ms\n", (unsigned long long)n, (double)(t1 - t0) / 1e6);
	printf("net_report_%llu_exchanges_cpu_ms: %.1f ms\n", (unsigned long long)n, (double)(c1 - c0) / 1e6);
	printf("net_report_%llu_exchanges_hold_ms: %.1f ms\n", (unsigned long long)n, (double)H.max_gap_ns / 1e6);
	printf("net_report_%llu_exchanges_hold_cpu_ms: %.1f ms\n", (unsigned long long)n, (double)H.max_gap_cpu / 1e6);
	printf("net_report_%llu_exchanges_batches: %llu batches\n", (unsigned long long)n,
	       (unsigned long long)(st[NPS_BATCHES] - batches0));
	printf("net_report_%llu_exchanges_bytes: %.1f MB\n", (unsigned long long)n, (double)b.s.bytes / 1e6);
	rc = 0;
out:
	bench_end(&b, zctx);
	return rc;
}

int main(int argc, char **argv)
{
	static const uint64_t def_n[] = { 20000, 100000, 400000 };
	char dir[] = "/tmp/bench_net_report.XXXXXX";
	void *zctx = zmq_ctx_new();
	int rc = 0;

	if (!mkdtemp(dir)) {
		perror("bench_net_report: mkdtemp");
		return 1;
	}
	rc = run_record(zctx, dir);
	if (!rc && argc > 1) {
		for (int i = 1; i < argc && !rc; i++) {
			char *end;
			unsigned long long n = strtoull(argv[i], &end, 10);

			if (*end || !n) {
				fprintf(stderr, "bench_net_report: '%s' is not a number of exchanges\n", argv[i]);
				rc = 2;
				break;
			}
			rc = run_one(zctx, dir, n);
		}
	} else if (!rc) {
		for (size_t i = 0; i < sizeof(def_n) / sizeof(def_n[0]) && !rc; i++)
			rc = run_one(zctx, dir, def_n[i]);
	}
	zmq_ctx_term(zctx);
	rmdir(dir);
	return rc;
}
