/*
 * Fuzzes the analyzer's network profiler (analyzer/net/netprof) with ring
 * records as a misbehaving collector could write them: the input is a
 * sequence of records, each a 2-byte length then that many bytes, handed to
 * netprof__record.  A flag byte per record points most of them at the one
 * task's process and a handful of sockets and ports, so that connections are
 * created, fed to the L7 parsers (payloads, gaps from lost and truncated
 * data, closes, retransmits, TLS plaintext with and without its socket,
 * ciphertext, sampled traces with the calls behind them) and published;
 * anything the header claims
 * beyond the record must be refused.  The task ends with each input, so its
 * last report (every connection ended, every message built) is exercised too.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <zmq.h>

#include "analyzer/net/netprof.h"
#include "bpf/ember_abi.h"
#include "bpf/net_abi.h"

#define PID 4242

static void *zctx, *pull;
static struct publisher *pub;
static struct task_mgr *tm;
static struct task_def *task;

static void init(void)
{
	struct task_def def = { .id = "fz", .kind = EMBER_TASK_NETWORK, .npids = 1, .pids = { PID },
				.start_unix_ms = 1, .duration_ms = 3600000, .report_interval_ms = 3600000,
				.nsamplings = 1 };

	/* A rule that keeps whole messages: sampled traces carry their calls (and bodies). */
	def.samplings[0].has_min_duration = true;
	def.samplings[0].when_4xx = def.samplings[0].when_5xx = true;
	def.samplings[0].complete_request = def.samplings[0].complete_response = true;
	def.samplings[0].max_request_size = def.samplings[0].max_response_size = 512;

	zctx = zmq_ctx_new();
	pull = zmq_socket(zctx, ZMQ_PULL);
	zmq_bind(pull, "inproc://fuzz-netprof");
	pub = publisher__new(zctx, "inproc://fuzz-netprof", 100000, 0);
	tm = task_mgr__new(4);
	task_mgr__add(tm, &def, &task);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct netprof_opts o = { .max_connections = 16, .idle_timeout_ns = 1ull << 62,
				  .max_exchanges = 64, .default_report_ms = 1000, .l7 = L7_CONFIG_DEFAULTS };
	static uint8_t rec[sizeof(struct net_event) + NET_MAX_PAYLOAD + 64];
	struct netprof *np;
	char drain[1];

	if (!zctx)
		init();
	o.pub = pub;
	o.tm = tm;
	o.l7.max_conn_mem = 16384;
	np = netprof__new(&o);
	if (!np || netprof__open(np, task))
		return 0;
	while (size >= 3) {
		size_t len = (size_t)data[0] | (size_t)data[1] << 8;
		uint8_t flag = data[2];

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		if (len > sizeof(rec))
			len = sizeof(rec);
		memcpy(rec, data, len);
		if (len >= sizeof(struct net_event) && (flag & 1)) {
			struct net_event *e = (struct net_event *)rec;

			/* Steer toward the task and a few sockets; keep the rest as given. */
			e->tgid = PID;
			e->ino = 1 + (flag >> 1 & 3);
			e->family = (flag & 0x20) ? AF_INET6 : AF_INET;
			e->type = (flag & 0x40) ? SOCK_DGRAM : SOCK_STREAM;
			e->op = 1 + e->op % NET_OP_MMAP_EXEC;
			e->tid = PID + (flag >> 3 & 1);
			/* TLS plaintext without a socket: bound by its object or its thread */
			if ((e->op == NET_OP_TLS_WRITE || e->op == NET_OP_TLS_READ) && (flag & 0x10))
				e->family = 0;
			if (flag & 0x80)
				e->payload = (uint32_t)(len - sizeof(*e));
		}
		netprof__record(np, rec, (uint32_t)len);
		data += len;
		size -= len;
	}
	netprof__close(np, "fz", NULL, NULL);
	netprof__free(np);
	while (zmq_recv(pull, drain, sizeof(drain), ZMQ_DONTWAIT) >= 0)
		;
	return 0;
}
