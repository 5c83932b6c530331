/*
 * analyzer/net/netprof: socket events (as bpf/net.bpf.c writes them) in, one
 * NetworkBatch per report out, received here from a real publisher on an
 * inproc ZeroMQ socket.  Connections from connect / accept / first call,
 * sides, L4 counts, HTTP/1 exchanges fed from live data with a truncated body
 * as a gap, UDP peers as connections of one socket, the table's bound,
 * records that do not add up, and a report in parts with the ring drained
 * between them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <zmq.h>

#include "analyzer/net/conntrack.h"
#include "analyzer/net/netprof.h"
#include "bpf/ember_abi.h"
#include "bpf/net_abi.h"
#include "common/timeutil.h"

#define PID 4242

struct fixture {
	void *zctx, *pull;
	struct publisher *pub;
	struct task_mgr *tm;
	struct netprof *np;
	struct task_def *t;
};

static struct fixture F;
static uint64_t now_ns = 1000000000ull;
static uint32_t cur_tgid = PID;   /* the process ev() speaks for */
static uint32_t cur_turn;         /* the net_event.turn ev() writes */
static uint64_t tls_ready;        /* when PID's TLS probes were in place (0: never) */

static uint64_t fake_tls_ready(void *ctx, uint32_t pid)
{
	(void)ctx;
	return pid == PID ? tls_ready : 0;
}

static void drain_hook(void *ctx);

/* The collector's side of the connection caps: what netprof asked, and what it answers. */
static struct ctl_net_cap caps_got[64];
static unsigned ncaps_got, caps_calls;
static int caps_answer;           /* 0: all written; else the error returned */

static int fake_caps(void *ctx, const struct ctl_net_cap *caps, uint32_t n, uint32_t *written)
{
	(void)ctx;
	caps_calls++;
	for (uint32_t i = 0; i < n && ncaps_got < 64; i++)
		caps_got[ncaps_got++] = caps[i];
	*written = caps_answer ? 0 : n;
	return caps_answer;
}

static int setup_np_parts(size_t max_conns, size_t part_items)
{
	struct task_def def = { .id = "t1", .kind = EMBER_TASK_NETWORK, .npids = 1, .pids = { PID },
				.start_unix_ms = 1, .duration_ms = 3600000, .report_interval_ms = 3600000 };
	struct netprof_opts o = { .max_connections = max_conns, .idle_timeout_ns = 60000000000ull,
				  .max_exchanges = 100, .default_report_ms = 2000, .l7 = L7_CONFIG_DEFAULTS,
				  .drain = drain_hook, .part_items = part_items };
	int hwm = 1000;

	F.zctx = zmq_ctx_new();
	F.pull = zmq_socket(F.zctx, ZMQ_PULL);
	zmq_setsockopt(F.pull, ZMQ_RCVHWM, &hwm, sizeof(hwm));
	assert_int_equal(zmq_bind(F.pull, "inproc://netprof"), 0);
	F.pub = publisher__new(F.zctx, "inproc://netprof", 1000, 0);
	F.tm = task_mgr__new(8);
	assert_non_null(F.pub);
	assert_int_equal(task_mgr__add(F.tm, &def, &F.t), 0);
	o.pub = F.pub;
	o.tm = F.tm;
	o.tls_ready_ns = fake_tls_ready;
	o.caps = fake_caps;
	ncaps_got = caps_calls = 0;
	caps_answer = 0;
	tls_ready = 0;
	F.np = netprof__new(&o);
	assert_non_null(F.np);
	assert_int_equal(netprof__open(F.np, F.t), 0);
	return 0;
}

static int teardown_np(void **state)
{
	(void)state;
	F.np = netprof__free(F.np);
	F.tm = task_mgr__free(F.tm);
	F.pub = publisher__free(F.pub);
	zmq_close(F.pull);
	zmq_ctx_term(F.zctx);
	return 0;
}

static int setup_np(size_t max_conns) { return setup_np_parts(max_conns, 0); }
static int setup(void **state) { (void)state; return setup_np(64); }
static int setup_small(void **state) { (void)state; return setup_np(2); }
static int setup_parts(void **state) { (void)state; return setup_np_parts(64, 4); }

/* One event with its payload, sent through netprof__record. */
static void ev(uint16_t op, uint64_t ino, int type, const char *raddr, uint16_t rport, uint16_t lport,
	       int64_t ret, const char *data, uint32_t flags)
{
	uint8_t buf[sizeof(struct net_event) + NET_MAX_PAYLOAD];
	struct net_event *e = (struct net_event *)buf;
	uint32_t n = data ? (uint32_t)strlen(data) : 0;

	memset(e, 0, sizeof(*e));
	e->ts_ns = now_ns;
	e->dur_ns = 1000;
	now_ns += 100000;
	e->tgid = cur_tgid;
	e->tid = cur_tgid;
	e->fd = 7;
	e->op = op;
	e->ret = ret;
	e->ino = ino;
	e->sk = 0xffff888000000000ull + ino;
	e->family = AF_INET;
	e->type = (uint16_t)type;
	e->lport = lport;
	e->rport = rport;
	inet_pton(AF_INET, "127.0.0.1", e->laddr);
	inet_pton(AF_INET, raddr, e->raddr);
	e->payload = n;
	e->flags = flags;
	e->turn = cur_turn;
	memcpy(e->comm, "app", 4);
	if (n)
		memcpy(buf + sizeof(*e), data, n);
	netprof__record(F.np, buf, (uint32_t)(sizeof(*e) + n));
}

/* Ends the task and returns its one (last) batch. */
static Ember__Envelope *last_batch(void)
{
	zmq_msg_t m;
	Ember__Envelope *env = NULL;

	netprof__close(F.np, "t1", NULL, NULL);
	for (;;) {
		zmq_msg_init(&m);
		assert_true(zmq_msg_recv(&m, F.pull, 0) >= 0);
		if (env)
			ember__envelope__free_unpacked(env, NULL);
		env = ember__envelope__unpack(NULL, zmq_msg_size(&m), zmq_msg_data(&m));
		zmq_msg_close(&m);
		assert_non_null(env);
		assert_int_equal(env->body_case, EMBER__ENVELOPE__BODY_NETWORK);
		if (env->network->last)
			return env;
	}
}

static const char *field(const Ember__NetExchange *x, const char *k)
{
	for (size_t i = 0; i < x->n_fields; i++)
		if (!strcmp(x->fields[i]->name, k))
			return x->fields[i]->value;
	return "";
}

static void test_client_http(void **state)
{
	static const char req[] = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
	static const char post[] = "POST /b HTTP/1.1\r\nContent-Length: 10000\r\n\r\n0123456789";
	static const char nf[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
	Ember__Envelope *env;
	Ember__NetworkBatch *b;
	Ember__NetFlow *f;
	uint64_t st[NPS_MAX];

	(void)state;
	ev(NET_OP_CONNECT, 10, SOCK_STREAM, "10.0.0.2", 80, 40000, 0, NULL, 0);
	ev(NET_OP_WRITE, 10, SOCK_STREAM, "10.0.0.2", 80, 40000, sizeof(req) - 1, req, 0);
	ev(NET_OP_READ, 10, SOCK_STREAM, "10.0.0.2", 80, 40000, sizeof(resp) - 1, resp, 0);
	/* A 10 KB body of which the first 10 bytes were copied: the rest is a gap inside the body. */
	ev(NET_OP_WRITE, 10, SOCK_STREAM, "10.0.0.2", 80, 40000, (int64_t)(sizeof(post) - 1 - 10 + 10000), post,
	   NET_F_TRUNCATED);
	ev(NET_OP_READ, 10, SOCK_STREAM, "10.0.0.2", 80, 40000, sizeof(nf) - 1, nf, 0);
	ev(NET_OP_READ, 10, SOCK_STREAM, "10.0.0.2", 80, 40000, -11 /* EAGAIN: not a read */, NULL, 0);
	ev(NET_OP_CLOSE, 10, SOCK_STREAM, "10.0.0.2", 80, 40000, 0, NULL, 0);
	env = last_batch();
	b = env->network;
	assert_int_equal(b->n_flows, 1);
	f = b->flows[0];
	assert_string_equal(f->side, "client");
	assert_false(f->side_guessed);
	assert_string_equal(f->peer_address, "10.0.0.2:80");
	assert_false(f->peer_local);
	assert_string_equal(f->protocol, "http1");
	assert_int_equal(f->write->count, 2);
	assert_int_equal(f->write->bytes, sizeof(req) - 1 + sizeof(post) - 1 - 10 + 10000);
	assert_int_equal(f->read->count, 2);
	assert_int_equal(f->connect->count, 1);
	assert_int_equal(f->close->count, 1);
	assert_int_equal(f->requests, 2);
	assert_int_equal(f->client_errors, 1);
	assert_int_equal(f->n_statuses, 2);
	assert_int_equal(f->connections, 1);
	assert_int_equal(b->n_exchanges, 2);
	assert_string_equal(field(b->exchanges[0], "uri"), "/a");
	assert_int_equal(b->exchanges[0]->status, 200);
	assert_string_equal(field(b->exchanges[1], "method"), "POST");
	assert_int_equal(b->exchanges[1]->status, 404);
	assert_int_equal(b->exchanges[1]->req_bytes, sizeof(post) - 1 - 10 + 10000);
	/* The endpoints as text, every exchange's and the connection's (formatted once per connection). */
	assert_string_equal(b->exchanges[0]->peer_address, "10.0.0.2:80");
	assert_string_equal(b->exchanges[1]->peer_address, "10.0.0.2:80");
	assert_string_equal(b->connections[0]->remote_address, "10.0.0.2:80");
	assert_string_equal(b->connections[0]->local_address, "127.0.0.1:40000");
	assert_int_equal(b->n_connections, 1);
	assert_true(b->connections[0]->closed_unix_ns > 0);
	assert_int_equal(b->connections[0]->gaps, 1);
	assert_int_equal(b->connections[0]->gap_bytes, 10000 - 10);
	assert_string_equal(b->connections[0]->l7_state, "parsed");
	netprof__stats(F.np, st);
	assert_int_equal(st[NPS_EXCHANGES], 2);
	assert_int_equal(st[NPS_BAD_RECORDS], 0);
	ember__envelope__free_unpacked(env, NULL);
}

/*
 * Calls seen where they end (the socket layer: NET_F_UNTIMED) are counted,
 * with their bytes, apart from the timed calls' time and histogram.
 */
static void test_untimed_calls(void **state)
{
	static const char req[] = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
	Ember__Envelope *env;
	Ember__NetFlow *f;
	uint64_t hist = 0;

	(void)state;
	ev(NET_OP_CONNECT, 11, SOCK_STREAM, "10.0.0.2", 80, 40001, 0, NULL, 0);     /* timed: its handshake */
	ev(NET_OP_WRITE, 11, SOCK_STREAM, "10.0.0.2", 80, 40001, sizeof(req) - 1, req, NET_F_UNTIMED);
	ev(NET_OP_READ, 11, SOCK_STREAM, "10.0.0.2", 80, 40001, sizeof(resp) - 1, resp, NET_F_UNTIMED);
	ev(NET_OP_WRITE, 11, SOCK_STREAM, "10.0.0.2", 80, 40001, sizeof(req) - 1, req, 0);
	ev(NET_OP_READ, 11, SOCK_STREAM, "10.0.0.2", 80, 40001, sizeof(resp) - 1, resp, NET_F_UNTIMED);
	ev(NET_OP_CLOSE, 11, SOCK_STREAM, "10.0.0.2", 80, 40001, 0, NULL, NET_F_UNTIMED);
	env = last_batch();
	assert_int_equal(env->network->n_flows, 1);
	f = env->network->flows[0];
	assert_int_equal(f->write->count, 2);
	assert_int_equal(f->write->untimed, 1);
	assert_int_equal(f->write->bytes, 2 * (sizeof(req) - 1));
	assert_int_equal(f->write->time_ns, 1000);              /* the timed write's (ev: 1000 ns each) */
	for (size_t i = 0; i < f->write->n_hist; i++)
		hist += f->write->hist[i];
	assert_int_equal(hist, 1);
	assert_int_equal(f->read->count, 2);
	assert_int_equal(f->read->untimed, 2);
	assert_int_equal(f->read->time_ns, 0);
	assert_int_equal(f->read->n_hist, 0);                   /* no timed read: no histogram */
	assert_int_equal(f->connect->untimed, 0);
	assert_int_equal(f->connect->time_ns, 1000);
	assert_int_equal(f->close->count, 1);
	assert_int_equal(f->close->untimed, 1);
	assert_int_equal(env->network->n_exchanges, 2);
	ember__envelope__free_unpacked(env, NULL);
}

/* A server socket met mid-life (no accept seen): side from the ports, then from the protocol. */
static void test_guessed_server_and_lost_events(void **state)
{
	static const char req[] = "GET / HTTP/1.1\r\n\r\n";
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
	uint8_t buf[sizeof(struct net_event) + sizeof(req)];
	struct net_event *e = (struct net_event *)buf;
	Ember__Envelope *env;
	Ember__NetworkBatch *b;

	(void)state;
	/* The kernel's turns: read 1, write 2, (lost: read 3, write 4), read 5, write 6. */
	cur_turn = 1;
	ev(NET_OP_READ, 20, SOCK_STREAM, "10.0.0.9", 51000, 8080, sizeof(req) - 1, req, 0);
	cur_turn = 2 | NET_TURN_WRITE;
	ev(NET_OP_WRITE, 20, SOCK_STREAM, "10.0.0.9", 51000, 8080, sizeof(resp) - 1, resp, 0);
	/* The next request's event was lost upstream: its bytes arrive as a gap on the next event. */
	memset(buf, 0, sizeof(buf));
	e->ts_ns = now_ns += 100000;
	e->tgid = PID;
	e->op = NET_OP_READ;
	e->ino = 20;
	e->family = AF_INET;
	e->type = SOCK_STREAM;
	e->lport = 8080;
	e->rport = 51000;
	inet_pton(AF_INET, "127.0.0.1", e->laddr);
	inet_pton(AF_INET, "10.0.0.9", e->raddr);
	e->ret = sizeof(req) - 1;
	e->payload = sizeof(req) - 1;
	e->lost_events = 2;
	e->lost_read_bytes = sizeof(req) - 1;
	e->lost_write_bytes = sizeof(resp) - 1;
	e->turn = 5;
	memcpy(buf + sizeof(*e), req, sizeof(req) - 1);
	netprof__record(F.np, buf, (uint32_t)(sizeof(*e) + sizeof(req) - 1));
	cur_turn = 6 | NET_TURN_WRITE;
	ev(NET_OP_WRITE, 20, SOCK_STREAM, "10.0.0.9", 51000, 8080, sizeof(resp) - 1, resp, 0);
	cur_turn = 0;
	env = last_batch();
	b = env->network;
	assert_int_equal(b->n_flows, 1);
	assert_string_equal(b->flows[0]->side, "server");
	assert_true(b->flows[0]->side_guessed);
	assert_string_equal(b->flows[0]->peer_address, "10.0.0.9:0"); /* a client peer: its port is ephemeral */
	/* Both exchanges around the lost one are counted. */
	assert_int_equal(b->flows[0]->requests, 2);
	assert_int_equal(b->n_connections, 1);
	assert_int_equal(b->connections[0]->closed_unix_ns, 0); /* still open at the task's end */
	assert_int_equal(b->connections[0]->gaps, 2);
	/* The lost request is counted: the kernel's three request turns, two exchanges and one lost. */
	assert_int_equal(b->connections[0]->calls_lost, 2);
	assert_int_equal(b->connections[0]->request_turns, 3);
	assert_int_equal(b->connections[0]->exchanges, 2);
	assert_int_equal(b->connections[0]->exchanges_lost, 1);
	assert_int_equal(b->calls_lost, 2);
	assert_int_equal(b->exchanges_lost, 1);
	assert_int_equal(b->connections_with_loss, 1);
	ember__envelope__free_unpacked(env, NULL);
}

/*
 * TLS connections that moved data before their process's probes were in
 * place are counted (once each, whatever the calls were); one that moved data
 * only under probed TLS calls or after the probes is not, nor a plaintext one.
 * Calls read while the process had no probes yet wait for its probes.
 */
static void test_tls_unprobed(void **state)
{
	static const char hello[] = "\x16\x03\x01\x01\x02hello", appdata[] = "\x17\x03\x03\x01\x02" "data";
	static const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	Ember__Envelope *env;
	Ember__NetworkBatch *b;
	uint64_t st[NPS_MAX];
	(void)state;

	/* Before the process was looked at: the handshake and a request. */
	ev(NET_OP_WRITE, 30, SOCK_STREAM, "10.0.0.5", 443, 40000, 10, hello, 0);
	ev(NET_OP_READ, 30, SOCK_STREAM, "10.0.0.5", 443, 40000, 10, hello, 0);
	ev(NET_OP_WRITE, 30, SOCK_STREAM, "10.0.0.5", 443, 40000, 9, appdata, 0);
	ev(NET_OP_WRITE, 31, SOCK_STREAM, "10.0.0.6", 80, 40001, sizeof(req) - 1, req, 0); /* plaintext socket */
	/* Probes in place from here: a call before them, read late, still counts once. */
	tls_ready = now_ns;
	now_ns -= 1000000;
	ev(NET_OP_WRITE, 32, SOCK_STREAM, "10.0.0.7", 443, 40002, 10, hello, 0);
	now_ns += 2000000;
	ev(NET_OP_READ, 32, SOCK_STREAM, "10.0.0.7", 443, 40002, 9, appdata, 0);
	ev(NET_OP_WRITE, 30, SOCK_STREAM, "10.0.0.5", 443, 40000, 9, appdata, NET_F_TLS_WIRE);
	/* A connection of the probed process: its handshake outside TLS calls, its data under them. */
	ev(NET_OP_WRITE, 33, SOCK_STREAM, "10.0.0.8", 443, 40003, 10, hello, 0);
	ev(NET_OP_READ, 33, SOCK_STREAM, "10.0.0.8", 443, 40003, 10, hello, 0);
	ev(NET_OP_WRITE, 33, SOCK_STREAM, "10.0.0.8", 443, 40003, 9, appdata, NET_F_TLS_WIRE);
	env = last_batch();
	b = env->network;
	assert_int_equal(b->n_connections, 4);
	for (size_t i = 0; i < b->n_connections; i++) {
		const Ember__NetConnection *c = b->connections[i];
		bool before = !strcmp(c->remote_address, "10.0.0.5:443") || !strcmp(c->remote_address, "10.0.0.7:443");

		assert_int_equal(c->ssl, strcmp(c->remote_address, "10.0.0.6:80") != 0);
		assert_int_equal(c->tls_unprobed, before);
	}
	assert_int_equal(b->tls_connections_unprobed, 2);
	assert_int_equal(b->connections_with_loss, 2);
	netprof__stats(F.np, st);
	assert_int_equal(st[NPS_TLS_UNPROBED], 2);
	ember__envelope__free_unpacked(env, NULL);
}

/* A NET_OP_FORK / NET_OP_EXIT record as bpf/net.bpf.c writes it (no socket); extra: payload bytes. */
static void fork_ev(uint16_t op, uint32_t child, int64_t root, uint32_t extra)
{
	uint8_t buf[sizeof(struct net_event) + 8] = { 0 };
	struct net_event *e = (struct net_event *)buf;

	e->ts_ns = now_ns;
	e->tgid = e->tid = child;
	e->op = op;
	e->ret = root;
	e->payload = extra;
	netprof__record(F.np, buf, (uint32_t)(sizeof(*e) + extra));
}

/* Children of a target: booked to its task from their fork until their exit. */
static void test_children(void **state)
{
	static const char req[] = "GET /child HTTP/1.1\r\n\r\n";
	static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
	uint64_t st[NPS_MAX];
	Ember__Envelope *env;
	Ember__NetworkBatch *b;

	(void)state;
	cur_tgid = 5001;
	/* Before its fork event, 5001 is nobody's. */
	ev(NET_OP_READ, 30, SOCK_STREAM, "10.0.0.7", 40000, 5432, sizeof(req) - 1, req, 0);
	netprof__stats(F.np, st);
	assert_int_equal(st[NPS_NO_TASK], 1);
	fork_ev(NET_OP_FORK, 5001, PID, 0);
	fork_ev(NET_OP_FORK, 5002, 777, 0);          /* a child of a process no task wants */
	fork_ev(NET_OP_FORK, 5003, 0, 0);            /* no root: malformed */
	fork_ev(NET_OP_FORK, 5004, PID, 8);          /* a payload: malformed */
	netprof__stats(F.np, st);
	assert_int_equal(st[NPS_CHILDREN], 2);
	assert_int_equal(st[NPS_BAD_RECORDS], 2);
	ev(NET_OP_ACCEPT, 31, SOCK_STREAM, "10.0.0.7", 40001, 5432, 9, NULL, 0);
	ev(NET_OP_READ, 31, SOCK_STREAM, "10.0.0.7", 40001, 5432, sizeof(req) - 1, req, 0);
	ev(NET_OP_WRITE, 31, SOCK_STREAM, "10.0.0.7", 40001, 5432, sizeof(resp) - 1, resp, 0);
	cur_tgid = 5002;
	ev(NET_OP_READ, 32, SOCK_STREAM, "10.0.0.7", 40002, 5432, sizeof(req) - 1, req, 0);
	fork_ev(NET_OP_EXIT, 5001, PID, 0);
	cur_tgid = 5001;                              /* a reused pid after the exit: nobody's again */
	ev(NET_OP_READ, 33, SOCK_STREAM, "10.0.0.7", 40003, 5432, sizeof(req) - 1, req, 0);
	cur_tgid = PID;
	netprof__stats(F.np, st);
	assert_int_equal(st[NPS_NO_TASK], 3);
	env = last_batch();
	b = env->network;
	assert_int_equal(b->n_exchanges, 1);
	assert_int_equal(b->exchanges[0]->pid, 5001);
	assert_string_equal(b->exchanges[0]->side, "server");
	assert_string_equal(field(b->exchanges[0], "uri"), "/child");
	assert_int_equal(b->n_connections, 1);
	assert_int_equal(b->connections[0]->pid, 5001);
	ember__envelope__free_unpacked(env, NULL);
}

/* One UDP socket, two peers: two connections; the socket's close ends both. */
static void test_udp_peers(void **state)
{
	static const uint8_t q[] = { 0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
				     1, 'a', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1 };
	uint8_t r[sizeof(q)];
	char qs[sizeof(q) + 1], rs[sizeof(q) + 1];
	Ember__Envelope *env;
	Ember__NetworkBatch *b;

	(void)state;
	memcpy(r, q, sizeof(q));
	r[2] = 0x81;
	r[3] = 0x83; /* response, NXDOMAIN */
	/* ev() takes C strings: the DNS messages hold zeros, so send them by hand. */
	(void)qs; (void)rs;
	for (int peer = 0; peer < 2; peer++) {
		uint8_t buf[sizeof(struct net_event) + sizeof(q)];
		struct net_event *e = (struct net_event *)buf;

		for (int dir = 0; dir < 2; dir++) {
			memset(e, 0, sizeof(*e));
			e->ts_ns = now_ns += 100000;
			e->tgid = PID;
			e->op = dir ? NET_OP_WRITE : NET_OP_READ;
			e->ino = 30;
			e->family = AF_INET;
			e->type = SOCK_DGRAM;
			e->lport = 53;
			e->rport = (uint16_t)(40000 + peer);
			e->flags = NET_F_PEER_ARG;
			inet_pton(AF_INET, "127.0.0.1", e->laddr);
			inet_pton(AF_INET, peer ? "10.0.0.5" : "10.0.0.4", e->raddr);
			e->ret = sizeof(q);
			e->payload = sizeof(q);
			memcpy(buf + sizeof(*e), dir ? r : q, sizeof(q));
			netprof__record(F.np, buf, sizeof(buf));
		}
	}
	ev(NET_OP_CLOSE, 30, SOCK_DGRAM, "0.0.0.0", 0, 53, 0, NULL, 0);
	env = last_batch();
	b = env->network;
	assert_int_equal(b->n_connections, 2);
	for (size_t i = 0; i < 2; i++) {
		assert_string_equal(b->connections[i]->transport, "udp");
		assert_string_equal(b->connections[i]->side, "server");
		assert_true(b->connections[i]->closed_unix_ns > 0);
	}
	assert_int_equal(b->n_exchanges, 2);
	for (size_t i = 0; i < 2; i++) {
		assert_string_equal(b->exchanges[i]->protocol, "dns");
		assert_int_equal(b->exchanges[i]->status, 3);
	}
	ember__envelope__free_unpacked(env, NULL);
}

/* Over the bound, new connections are counted and skipped; bad records are counted. */
static void test_bounds_and_bad_records(void **state)
{
	uint8_t buf[sizeof(struct net_event) + 8] = { 0 };
	struct net_event *e = (struct net_event *)buf;
	uint64_t st[NPS_MAX];
	Ember__Envelope *env;

	(void)state;
	for (uint64_t i = 0; i < 4; i++)
		ev(NET_OP_CONNECT, 100 + i, SOCK_STREAM, "10.0.0.2", 80, (uint16_t)(40000 + i), 0, NULL, 0);
	e->op = NET_OP_READ;
	e->family = AF_INET;
	e->payload = 100; /* says 100 bytes follow, 8 do */
	netprof__record(F.np, buf, sizeof(buf));
	e->payload = 8;
	e->family = 99;   /* not a traced family */
	netprof__record(F.np, buf, sizeof(buf));
	netprof__record(F.np, buf, 10); /* shorter than an event */
	netprof__stats(F.np, st);
	assert_int_equal(st[NPS_CONNECTIONS], 2);
	assert_int_equal(st[NPS_TABLE_FULL], 2);
	assert_int_equal(st[NPS_BAD_RECORDS], 3);
	env = last_batch();
	assert_int_equal(env->network->n_connections, 2);
	ember__envelope__free_unpacked(env, NULL);
}

/* ---- a report in parts ------------------------------------------------------------------ */

static unsigned drains;
static void (*on_drain)(void);

/* netprof's drain hook: what the analyzer's ring would deliver between two parts of a report. */
static void drain_hook(void *ctx)
{
	(void)ctx;
	drains++;
	if (on_drain)
		on_drain();
}

/* One report, added up over its parts: what it lists, in order, and its counters. */
struct totals {
	uint32_t parts;
	uint64_t window_start, window_end;
	uint64_t flows, requests, not_listed;
	bool last;
	char seq[4096];   /* "c<id>" per connection, "x<connection id>:<uri>:<status>" per exchange, in order */
};

static void seq_add(struct totals *r, const char *fmt, ...)
{
	size_t n = strlen(r->seq);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->seq + n, sizeof(r->seq) - n, fmt, ap);
	va_end(ap);
}

/* Receives one report's messages: parts 0 .. parts-1 in order, of one window, the first with the counters. */
static void recv_report(struct totals *r)
{
	memset(r, 0, sizeof(*r));
	for (uint32_t k = 0;; k++) {
		zmq_msg_t m;
		Ember__Envelope *env;
		Ember__NetworkBatch *b;

		zmq_msg_init(&m);
		assert_true(zmq_msg_recv(&m, F.pull, 0) >= 0);
		env = ember__envelope__unpack(NULL, zmq_msg_size(&m), zmq_msg_data(&m));
		zmq_msg_close(&m);
		assert_non_null(env);
		assert_int_equal(env->body_case, EMBER__ENVELOPE__BODY_NETWORK);
		b = env->network;
		assert_int_equal(b->part, k);
		if (!k) {
			r->parts = b->parts;
			r->window_start = b->window_start_unix_ns;
			r->window_end = b->window_end_unix_ns;
		} else {
			/* the flows and the counters are the first part's only: the parts add up */
			assert_int_equal(b->parts, r->parts);
			assert_int_equal(b->window_start_unix_ns, r->window_start);
			assert_int_equal(b->window_end_unix_ns, r->window_end);
			assert_int_equal(b->n_flows, 0);
			assert_int_equal(b->n_sampled, 0);
		}
		assert_true(b->n_connections + b->n_exchanges > 0 || b->parts == 1);
		r->flows += b->n_flows;
		for (size_t i = 0; i < b->n_flows; i++)
			r->requests += b->flows[i]->requests;
		r->not_listed += b->exchanges_not_listed;
		for (size_t i = 0; i < b->n_connections; i++)
			seq_add(r, "c%llu ", (unsigned long long)b->connections[i]->id);
		for (size_t i = 0; i < b->n_exchanges; i++)
			seq_add(r, "x%llu:%s:%d ", (unsigned long long)b->exchanges[i]->connection_id,
				field(b->exchanges[i], "uri"), b->exchanges[i]->status);
		/* the task's last batch is its last report's last part */
		if (k + 1 < r->parts)
			assert_false(b->last);
		r->last = b->last;
		ember__envelope__free_unpacked(env, NULL);
		if (k + 1 >= r->parts)
			return;
	}
}

static const char get_a[] = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
static const char get_b[] = "GET /b HTTP/1.1\r\nHost: x\r\n\r\n";
static const char get_late[] = "GET /late HTTP/1.1\r\nHost: x\r\n\r\n";
static const char ok200[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
static const char nf404[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";

static void exchange(uint64_t ino, uint16_t lport, const char *req, const char *resp)
{
	ev(NET_OP_WRITE, ino, SOCK_STREAM, "10.0.0.2", 80, lport, (int64_t)strlen(req), req, 0);
	ev(NET_OP_READ, ino, SOCK_STREAM, "10.0.0.2", 80, lport, (int64_t)strlen(resp), resp, 0);
}

/* Two connections of two exchanges each, closed; a third of three, left open: 2 + 7 items. */
static void feed_report(void)
{
	for (uint64_t ino = 10; ino < 13; ino++) {
		uint16_t lport = (uint16_t)(40000 + ino);

		ev(NET_OP_CONNECT, ino, SOCK_STREAM, "10.0.0.2", 80, lport, 0, NULL, 0);
		exchange(ino, lport, get_a, ok200);
		exchange(ino, lport, get_b, nf404);
		if (ino == 12)
			exchange(ino, lport, get_a, ok200);
		else
			ev(NET_OP_CLOSE, ino, SOCK_STREAM, "10.0.0.2", 80, lport, 0, NULL, 0);
	}
}

/* Records that arrive while the report goes out: an exchange on the open connection, a new connection. */
static void late_records(void)
{
	if (drains != 1)
		return;
	exchange(12, 40012, get_late, ok200);
	ev(NET_OP_CONNECT, 13, SOCK_STREAM, "10.0.0.2", 80, 40013, 0, NULL, 0);
	exchange(13, 40013, get_late, nf404);
	ev(NET_OP_CLOSE, 13, SOCK_STREAM, "10.0.0.2", 80, 40013, 0, NULL, 0);
}

/* The report that is due, now. */
/* Each call an hour past the last: every call is a report's time. */
static void report_now(void)
{
	static uint64_t later;

	later += 3600000 + 1;
	netprof__tick(F.np, timeutil__unix_ms() + later);
}

/*
 * A report over part_items goes out in parts that add up to the one batch
 * it would be otherwise (the same connections and exchanges in the same
 * order, the flows and counters once), draining the ring between parts;
 * what the drains deliver is the next report's, whole, and in no part of
 * this one.
 */
static void test_report_parts(void **state)
{
	struct totals one, split, next;
	uint64_t st[NPS_MAX];

	(void)state;
	/* the reference: the same records as one batch (the default part size) */
	drains = 0;
	on_drain = NULL;
	feed_report();
	report_now();
	recv_report(&one);
	assert_int_equal(one.parts, 1);
	assert_int_equal(drains, 0);
	assert_string_equal(one.seq, "c1 c2 x1:/a:200 x1:/b:404 x2:/a:200 x2:/b:404 x3:/a:200 x3:/b:404 x3:/a:200 ");
	assert_int_equal(one.requests, 7);
	teardown_np(NULL);

	/* 4 items a part: 9 items in 3 parts, a drain before each but the first */
	setup_parts(NULL);
	on_drain = late_records;
	feed_report();
	report_now();
	recv_report(&split);
	assert_int_equal(split.parts, 3);
	assert_int_equal(drains, 2);
	assert_string_equal(split.seq, one.seq);
	assert_int_equal(split.flows, one.flows);
	assert_int_equal(split.requests, one.requests);
	assert_int_equal(split.not_listed, one.not_listed);
	assert_false(split.last);
	netprof__stats(F.np, st);
	assert_int_equal(st[NPS_BATCHES], 3);

	/* the task's end: the records drained during the report, and the open connection */
	on_drain = NULL;
	netprof__close(F.np, "t1", NULL, NULL);
	recv_report(&next);
	assert_int_equal(next.parts, 1);
	assert_true(next.last);
	assert_int_equal(next.window_start, split.window_end);
	assert_string_equal(next.seq, "c4 c3 x3:/late:200 x4:/late:404 ");
	assert_int_equal(next.requests, 2);
	netprof__stats(F.np, st);
	assert_int_equal(st[NPS_EXCHANGES], 9);
	assert_int_equal(st[NPS_BATCHES], 4);
}

/*
 * A busy window lists an even sample of its exchanges (max_exchanges: 100
 * here), not its first ones, and its slowest besides; listed + not listed
 * = offered, and the list is in time order.  Three windows in a row: each
 * lists its own exchanges only, in memory the one before used (the report's
 * arena keeps its chunks).
 */
static void test_listing_sample(void **state)
{
	static const unsigned slow[] = { 3, 150, 333, 480, 512, 640, 777, 888, 901, 999 };
	static const char *const resp[] = { ok200, "HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno",
					    "HTTP/1.1 503 Busy\r\nContent-Length: 2\r\n\r\nno" };
	static const int status[] = { 200, 404, 503 };
	uint64_t st[NPS_MAX], not_listed = 0;

	(void)state;
	ev(NET_OP_CONNECT, 20, SOCK_STREAM, "10.0.0.2", 80, 40020, 0, NULL, 0);
	for (unsigned w = 0; w < 3; w++) {
		unsigned listed = 0, late = 0, slow_seen = 0, last_i = 0, strays = 0;
		bool ordered = true;
		struct totals r;
		char req[64], want[32];

		for (unsigned i = 0; i < 1000; i++) {
			bool is_slow = false;

			for (unsigned k = 0; k < sizeof(slow) / sizeof(slow[0]); k++)
				is_slow |= slow[k] == i;
			snprintf(req, sizeof(req), "GET /w%u/%u HTTP/1.1\r\nHost: x\r\n\r\n", w, i);
			ev(NET_OP_WRITE, 20, SOCK_STREAM, "10.0.0.2", 80, 40020, (int64_t)strlen(req), req, 0);
			/* latency: 100 us + up to 96 us; the slow ones 10 ms and more */
			now_ns += is_slow ? 10000000ull + i * 1000ull : (i % 97) * 1000ull;
			ev(NET_OP_READ, 20, SOCK_STREAM, "10.0.0.2", 80, 40020, (int64_t)strlen(resp[w]), resp[w], 0);
		}
		report_now();
		recv_report(&r);
		snprintf(want, sizeof(want), ":/w%u/", w);
		for (const char *p = r.seq; (p = strstr(p, ":/")); p++) {
			unsigned i;
			const char *colon;

			if (strncmp(p, want, strlen(want))) {
				strays++;
				continue;
			}
			i = (unsigned)strtoul(p + strlen(want), NULL, 10);
			colon = strchr(p + 1, ':');
			assert_non_null(colon);
			assert_int_equal(atoi(colon + 1), status[w]);
			listed++;
			late += i >= 500;
			ordered &= !last_i || i > last_i;
			last_i = i;
			for (unsigned k = 0; k < sizeof(slow) / sizeof(slow[0]); k++)
				slow_seen += slow[k] == i;
		}
		assert_int_equal(strays, 0);
		assert_int_equal(listed + r.not_listed, 1000);
		assert_true(listed >= 100 && listed <= 110);
		assert_int_equal(slow_seen, 10);
		/* about half the sample from the window's second half (binomial: 50 +- 5) */
		assert_true(late >= 25 && late <= 85);
		assert_true(ordered);
		not_listed += r.not_listed;
	}
	netprof__stats(F.np, st);
	assert_int_equal(st[NPS_EXCHANGES_NOT_LISTED], not_listed);
}

/* The last report in parts: records drained while it goes out are past the task's end, not in a report. */
static void test_last_report_parts(void **state)
{
	struct totals last;
	uint64_t st[NPS_MAX];

	(void)state;
	drains = 0;
	on_drain = late_records;
	feed_report();
	netprof__close(F.np, "t1", NULL, NULL);
	on_drain = NULL;
	recv_report(&last);
	/* 3 connections (the open one ended) and 7 exchanges: 10 items, 3 parts */
	assert_int_equal(last.parts, 3);
	assert_int_equal(drains, 2);
	assert_true(last.last);
	assert_string_equal(last.seq, "c1 c2 c3 x1:/a:200 x1:/b:404 x2:/a:200 x2:/b:404 x3:/a:200 x3:/b:404 "
				      "x3:/a:200 ");
	netprof__stats(F.np, st);
	assert_true(st[NPS_NO_TASK] > 0);
	assert_int_equal(st[NPS_EXCHANGES], 7);
}

/* The conntrack's own contract: keys with peers, socket chains, local index, LRU order. */
static void test_conntrack(void **state)
{
	struct conntrack *ct = conntrack__new(3);
	struct net_endpoint a = { .family = AF_INET, .port = 80, .addr = { 10, 0, 0, 1 } };
	struct net_endpoint b = { .family = AF_INET, .port = 81, .addr = { 10, 0, 0, 1 } };
	struct net_endpoint l = { .family = AF_INET, .port = 5000, .addr = { 127, 0, 0, 1 } };
	struct net_conn *c1, *c2, *c3;
	char s[64];

	(void)state;
	c1 = conntrack__add(ct, 1, 7, true, &a, &l);
	c2 = conntrack__add(ct, 1, 7, true, &b, &l);
	c3 = conntrack__add(ct, 2, 8, false, &a, &l);
	assert_non_null(c1);
	assert_non_null(c2);
	assert_non_null(c3);
	assert_null(conntrack__add(ct, 3, 9, false, &a, &l));
	assert_ptr_equal(conntrack__find(ct, 1, 7, &b), c2);
	assert_null(conntrack__find(ct, 1, 8, &b));
	assert_ptr_equal(conntrack__by_local(ct, &l), c3); /* TCP only */
	int n = 0;
	for (struct net_conn *c = conntrack__socket_first(ct, 1, 7); c; c = conntrack__socket_next(ct, c))
		n++;
	assert_int_equal(n, 2);
	assert_ptr_equal(conntrack__oldest(ct), c1);
	conntrack__touch(ct, c1, 5);
	assert_ptr_equal(conntrack__oldest(ct), c2);
	conntrack__remove(ct, c2);
	assert_null(conntrack__find(ct, 1, 7, &b));
	assert_int_equal(conntrack__count(ct), 2);
	assert_string_equal(net_endpoint__str(&a, s, sizeof(s)), "10.0.0.1:80");
	assert_true(net_endpoint__is_loopback(&l));
	conntrack__free(ct);
}

/*
 * Connection caps: after each call a connection asks the collector to copy
 * no more than its parser needs, once per change, batched until the tick:
 * an HTTP/1 connection its heads (half again and 64 bytes, at least 256),
 * a chunked response's direction every byte, a connection no parser
 * claimed nothing, a TLS connection no cap at all.  Failures are counted.
 */
static void test_caps(void **state)
{
	static char big_resp[600], junk[2100];
	static const char chunked[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n";
	static const char hello[] = "\x16\x03\x01\x00\x05hello";
	uint64_t st[NPS_MAX];
	size_t bh;

	(void)state;
	ev(NET_OP_CONNECT, 21, SOCK_STREAM, "10.0.0.2", 80, 40021, 0, NULL, 0);
	exchange(21, 40021, get_a, ok200);
	assert_int_equal(caps_calls, 0);                 /* batched: nothing before the tick */
	netprof__tick(F.np, 2);
	assert_int_equal(caps_calls, 1);
	assert_int_equal(ncaps_got, 1);
	assert_int_equal(caps_got[0].ino, 21);
	assert_int_equal(caps_got[0].cap.tgid, PID);
	assert_int_equal(caps_got[0].cap.write, 256);   /* the request's head, 28 bytes: the floor */
	assert_int_equal(caps_got[0].cap.read, 256);
	exchange(21, 40021, get_b, nf404);               /* the same needs: nothing asked */
	netprof__tick(F.np, 3);
	assert_int_equal(ncaps_got, 1);
	/* A longer response head: the read cap grows with it. */
	bh = (size_t)snprintf(big_resp, sizeof(big_resp), "HTTP/1.1 200 OK\r\nX-Pad: %0400d\r\nContent-Length: 2\r\n\r\nok", 0) - 2;
	exchange(21, 40021, get_a, big_resp);
	netprof__tick(F.np, 4);
	assert_int_equal(ncaps_got, 2);
	assert_int_equal(caps_got[1].cap.read, (bh + bh / 2 + 64 + 63) / 64 * 64);
	assert_int_equal(caps_got[1].cap.write, 256);
	/* Chunked answers: every byte of reads (4096), the writes still at their heads. */
	ev(NET_OP_CONNECT, 22, SOCK_STREAM, "10.0.0.2", 80, 40022, 0, NULL, 0);
	exchange(22, 40022, get_a, chunked);
	/* No parser claims this one: nothing of either direction. */
	memset(junk, 1, sizeof(junk) - 1);
	ev(NET_OP_CONNECT, 23, SOCK_STREAM, "10.0.0.2", 9999, 40023, 0, NULL, 0);
	ev(NET_OP_WRITE, 23, SOCK_STREAM, "10.0.0.2", 9999, 40023, (int64_t)strlen(junk), junk, 0);
	ev(NET_OP_READ, 23, SOCK_STREAM, "10.0.0.2", 9999, 40023, (int64_t)strlen(junk), junk, 0);
	/* TLS on the wire: the plaintext's parser is not this one; no cap. */
	ev(NET_OP_CONNECT, 24, SOCK_STREAM, "10.0.0.2", 443, 40024, 0, NULL, 0);
	ev(NET_OP_WRITE, 24, SOCK_STREAM, "10.0.0.2", 443, 40024, sizeof(hello) - 1, hello, 0);
	netprof__tick(F.np, 5);
	assert_int_equal(ncaps_got, 4);
	assert_int_equal(caps_got[2].ino, 22);
	assert_int_equal(caps_got[2].cap.read, NET_MAX_PAYLOAD);
	assert_int_equal(caps_got[2].cap.write, 256);
	assert_int_equal(caps_got[3].ino, 23);
	assert_int_equal(caps_got[3].cap.read, 0);
	assert_int_equal(caps_got[3].cap.write, 0);
	netprof__stats(F.np, st);
	assert_int_equal(st[NPS_CAPS], 4);
	assert_int_equal(st[NPS_CAPS_FAILED], 0);
	/* The collector refuses: counted, and no more asked while it cannot take them. */
	caps_answer = -EOPNOTSUPP;
	exchange(21, 40021, get_a, chunked);
	netprof__tick(F.np, 6);
	netprof__stats(F.np, st);
	assert_int_equal(st[NPS_CAPS_FAILED], 1);
	ev(NET_OP_CONNECT, 25, SOCK_STREAM, "10.0.0.2", 80, 40025, 0, NULL, 0);
	exchange(25, 40025, get_a, ok200);
	netprof__tick(F.np, 7);
	assert_int_equal(caps_calls, 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_client_http, setup, teardown_np),
		cmocka_unit_test_setup_teardown(test_untimed_calls, setup, teardown_np),
		cmocka_unit_test_setup_teardown(test_guessed_server_and_lost_events, setup, teardown_np),
		cmocka_unit_test_setup_teardown(test_udp_peers, setup, teardown_np),
		cmocka_unit_test_setup_teardown(test_children, setup, teardown_np),
		cmocka_unit_test_setup_teardown(test_tls_unprobed, setup, teardown_np),
		cmocka_unit_test_setup_teardown(test_bounds_and_bad_records, setup_small, teardown_np),
		cmocka_unit_test_setup_teardown(test_report_parts, setup, teardown_np),
		cmocka_unit_test_setup_teardown(test_listing_sample, setup, teardown_np),
		cmocka_unit_test_setup_teardown(test_last_report_parts, setup_parts, teardown_np),
		cmocka_unit_test(test_conntrack),
		cmocka_unit_test_setup_teardown(test_caps, setup, teardown_np),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
