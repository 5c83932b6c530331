/*
 * exporter/skywalking, network profiling: the MeterDataCollection of
 * network meters (service, instance and timestamp on the first MeterData
 * only, all buckets by lower bound), an OAP NETWORK task submitted with its
 * sampling rules to both analyzers owning its instance's processes (fake
 * analyzers answer over ZeroMQ), a task whose rules do not decode, a batch
 * turned into one collection per local instance, the OAP's extension of a
 * running task, and sampled traces turned into LogData (one stream per
 * service, the body's exact JSON) and SpanAttachedEvents (their tags).  The
 * backend runs without gRPC: the test calls the parts the OAP's answers and
 * the exporter's loop would.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "common/bus.h"
#include "common/timeutil.h"
#include "exporter/skywalking/sw.h"
#include "proto/sw_common.pb-c.h"
#include "proto/sw_logging.pb-c.h"
#include "proto/sw_tracing.pb-c.h"
#include "tests/unit/net_testlib.h"

static char root[64];

static int resolve(void *ctx, uint32_t pid, char *buf, size_t len)
{
	(void)ctx;
	snprintf(buf, len, "oap-%u", pid);
	return 0;
}

/* ---- the collection ---- */

static void test_collection(void **state)
{
	static struct tflow a, s2;
	static struct net_meter_set set;
	const struct net_meters_opts o = { .prefix = "my_net", .protocol = NET_PROTOCOL_ROVER, .resolve = resolve };
	struct sw_net_collection c = { .service = "shop", .instance = "inst-1", .timestamp_ms = 1700000000123 };
	struct sw_msgs out = { 0 };
	Skywalking__V3__MeterDataCollection *col;
	Skywalking__V3__MeterHistogram *h;
	(void)state;

	assert_int_equal(sw_codec__net_collection_finish(&c, &out), 0);	/* empty: nothing */
	assert_int_equal(out.n, 0);
	tflow_init(&a, 100, "client", "http1");
	a.f.peer_pid = 101;
	tflow_call(&a.write, 20000, 100, 0);
	tflow_init(&s2, 101, "server", "http1");
	tflow_call(&s2.read, 1000, 100, 0);
	assert_int_equal(net_meters__from_flow(&a.f, &o, &set), 0);
	assert_int_equal(set.n, 4);
	assert_int_equal(sw_codec__net_collection_add(&c, &set), 0);
	assert_int_equal(net_meters__from_flow(&s2.f, &o, &set), 0);
	assert_int_equal(sw_codec__net_collection_add(&c, &set), 0);
	assert_int_equal(sw_codec__net_collection_finish(&c, &out), 8);
	assert_int_equal(c.len, 0);
	assert_int_equal(out.n, 1);
	col = skywalking__v3__meter_data_collection__unpack(NULL, out.v[0].len, out.v[0].data);
	assert_non_null(col);
	assert_int_equal(col->n_meterdata, 8);
	assert_string_equal(col->meterdata[0]->service, "shop");
	assert_string_equal(col->meterdata[0]->serviceinstance, "inst-1");
	assert_int_equal(col->meterdata[0]->timestamp, 1700000000123LL);
	for (size_t i = 1; i < col->n_meterdata; i++) {
		assert_string_equal(col->meterdata[i]->service, "");
		assert_string_equal(col->meterdata[i]->serviceinstance, "");
		assert_int_equal(col->meterdata[i]->timestamp, 0);
	}
	assert_int_equal(col->meterdata[0]->metric_case, SKYWALKING__V3__METER_DATA__METRIC_SINGLE_VALUE);
	assert_string_equal(col->meterdata[0]->singlevalue->name, "my_net_client_write_counts_counter");
	assert_true(col->meterdata[0]->singlevalue->value == 1);
	assert_int_equal(col->meterdata[0]->singlevalue->n_labels, 5);
	assert_string_equal(col->meterdata[0]->singlevalue->labels[0]->name, "client_process_id");
	assert_string_equal(col->meterdata[0]->singlevalue->labels[0]->value, "oap-100");
	assert_string_equal(col->meterdata[0]->singlevalue->labels[1]->name, "server_process_id");
	assert_string_equal(col->meterdata[0]->singlevalue->labels[1]->value, "oap-101");
	assert_string_equal(col->meterdata[0]->singlevalue->labels[3]->value, "http");
	assert_int_equal(col->meterdata[3]->metric_case, SKYWALKING__V3__METER_DATA__METRIC_HISTOGRAM);
	h = col->meterdata[3]->histogram;
	assert_string_equal(h->name, "my_net_client_write_exe_time_histogram");
	assert_int_equal(h->n_values, NET_L4_BUCKETS);
	for (size_t i = 0; i < h->n_values; i++) {
		assert_false(h->values[i]->isnegativeinfinity);
		assert_true(h->values[i]->bucket == (double)net_hist__l4_bounds[i]);
		assert_int_equal(h->values[i]->count, i == 1);
	}
	assert_string_equal(col->meterdata[4]->singlevalue->name, "my_net_server_read_counts_counter");
	assert_string_equal(col->meterdata[4]->singlevalue->labels[0]->name, "server_process_id");
	skywalking__v3__meter_data_collection__free_unpacked(col, NULL);
	sw_msgs__release(&out);
	sw_codec__net_collection_release(&c);
}

/* ---- the backend, without gRPC ---- */

static void put_file(const char *rel, const char *data, size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/proc/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void fake_proc(unsigned pid, const char *argv, size_t argv_len)
{
	char rel[64], stat[256], path[256];

	snprintf(path, sizeof(path), "%s/proc/%u", root, pid);
	mkdir(path, 0755);
	snprintf(stat, sizeof(stat), "%u (app) S 1 %u %u 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 %u 1000 10\n", pid, pid,
		 pid, pid * 10);
	snprintf(rel, sizeof(rel), "%u/stat", pid);
	put_file(rel, stat, strlen(stat));
	snprintf(rel, sizeof(rel), "%u/cmdline", pid);
	put_file(rel, argv, argv_len);
}

#define ARGV(s) s, sizeof(s)

static const char rules[] =
	"- match_cmd: \"/opt/shop/bin/server\"\n"
	"  service_name: shop\n"
	"  instance_name: inst-1\n"
	"  process_name: \"p-{{.Process.Pid}}\"\n"
	"- match_cmd: \"/opt/other/bin/server\"\n"
	"  service_name: other\n"
	"  instance_name: inst-2\n"
	"  process_name: \"p-{{.Process.Pid}}\"\n";

struct env {
	struct ember_config *cfg;
	struct sw_backend *b;
	void *rep[2];		/* the fake analyzers */
};

static struct sw_backend *backend(struct env *e)
{
	struct pf_opts po = { .mode = PF_MODE_REGEX, .rules_yaml = rules, .instance_id = "agent-1" };
	char proc[128], err[256], ep[256];
	struct sw_backend *b = calloc(1, sizeof(*b));

	assert_non_null(b);
	snprintf(proc, sizeof(proc), "%s/proc", root);
	mkdir(proc, 0755);
	snprintf(ep, sizeof(ep), "%s/" BUS_ANALYZER_DIR, root);
	mkdir(ep, 0755);
	fake_proc(100, ARGV("/opt/shop/bin/server"));
	fake_proc(101, ARGV("/opt/shop/bin/server"));
	fake_proc(102, ARGV("/opt/shop/bin/server"));
	fake_proc(201, ARGV("/opt/other/bin/server"));
	po.proc_root = proc;
	e->cfg = config__new();
	assert_int_equal(config__set(e->cfg, "ember.run_dir", root, err, sizeof(err)), 0);
	assert_int_equal(config__set(e->cfg, "profiling.task.network.meter_prefix", "net_p", err, sizeof(err)), 0);
	b->cfg = e->cfg;
	b->tail = &b->head;
	b->cap_bytes = 1 << 20;
	b->analyzers = 2;
	b->pf = process_finder__new(&po, err, sizeof(err));
	assert_non_null(b->pf);
	assert_int_equal(process_finder__scan(b->pf), 4);
	/* what reportProcesses' answer would do: every process known to the OAP */
	for (unsigned i = 0; i < process_finder__count(b->pf); i++) {
		struct pf_process *p = process_finder__at(b->pf, i);

		p->status = PF_REPORTED;
		snprintf(p->oap_id, sizeof(p->oap_id), "oap-%u", p->pid);
	}
	b->net_set = malloc(sizeof(*b->net_set));
	b->zctx = zmq_ctx_new();
	assert_non_null(b->zctx);
	for (unsigned s = 0; s < 2; s++) {
		int zero = 0;

		bus__analyzer_endpoint(root, s, ep, sizeof(ep));
		e->rep[s] = zmq_socket(b->zctx, ZMQ_REP);
		zmq_setsockopt(e->rep[s], ZMQ_LINGER, &zero, sizeof(zero));
		assert_int_equal(zmq_bind(e->rep[s], ep), 0);
	}
	e->b = b;
	return b;
}

static void backend_free(struct env *e)
{
	struct sw_backend *b = e->b;

	for (unsigned i = 0; i < b->n_tasks; i++)
		sw_task_release(&b->tasks[i]);
	while (b->head) {
		struct item *it = b->head;
		b->head = it->next;
		sw_item_free(it);
	}
	for (unsigned s = 0; s < 2; s++)
		zmq_close(e->rep[s]);
	zmq_ctx_term(b->zctx);
	process_finder__free(b->pf);
	free(b->net_set);
	free(b);
	config__free(e->cfg);
}

/* The OAP's answer to queryTasks: one NETWORK command naming pids 100 and 101. */
static void oap_network_task(struct sw_backend *b, int64_t start_ms, const char *duration_s, const char *update,
			     const char *ext)
{
	Skywalking__V3__Commands cs = SKYWALKING__V3__COMMANDS__INIT;
	Skywalking__V3__Command c = SKYWALKING__V3__COMMAND__INIT, *cp = &c;
	Skywalking__V3__KeyStringValuePair kv[9], *kvp[9];
	char start[32];
	const char *args[9][2] = {
		{ "SerialNumber", "5b9d1a3e-0000-4000-8000-000000000001" }, { "TaskId", "net-task-1" },
		{ "ProcessId", "oap-100,oap-101" }, { "TaskUpdateTime", update }, { "TriggerType", "FIXED_TIME" },
		{ "TargetType", "NETWORK" }, { "TaskStartTime", start }, { "ExtensionConfigJSON", ext },
		{ "FixedTriggerDuration", duration_s },
	};
	struct grpc_result res = { .status = 0 };

	snprintf(start, sizeof(start), "%lld", (long long)start_ms);
	for (unsigned i = 0; i < 9; i++) {
		skywalking__v3__key_string_value_pair__init(&kv[i]);
		kv[i].key = (char *)args[i][0];
		kv[i].value = (char *)args[i][1];
		kvp[i] = &kv[i];
	}
	c.command = "EBPFProfilingTaskQuery";
	c.args = kvp;
	c.n_args = 9;
	cs.commands = &cp;
	cs.n_commands = 1;
	res.resp_len = skywalking__v3__commands__get_packed_size(&cs);
	res.resp = malloc(res.resp_len);
	skywalking__v3__commands__pack(&cs, res.resp);
	sw_query_done(b, &res);
	free(res.resp);
}

/* A fake analyzer takes the submission, checks it, and says yes. */
static void analyzer_answers(struct env *e, unsigned shard, const char *id, const uint32_t *pids, size_t npids)
{
	zmq_pollitem_t it = { .socket = e->rep[shard], .events = ZMQ_POLLIN };
	Ember__Reply rep = EMBER__REPLY__INIT;
	Ember__Task t = EMBER__TASK__INIT;
	Ember__Request *req;

	assert_int_equal(zmq_poll(&it, 1, 3000), 1);
	req = bus__recv_request(e->rep[shard], 0);
	assert_non_null(req);
	assert_int_equal(req->body_case, EMBER__REQUEST__BODY_SUBMIT);
	assert_string_equal(req->submit->id, id);
	assert_int_equal(req->submit->kind, EMBER__TASK_KIND__NETWORK);
	assert_int_equal(req->submit->shards, 2);
	assert_int_equal(req->submit->report_interval_ms, 2000);
	assert_string_equal(req->submit->origin, "oap");
	assert_true(req->submit->duration_ms > 50000 && req->submit->duration_ms <= 60000);
	assert_int_equal(req->submit->n_pids, npids);
	for (size_t i = 0; i < npids; i++)
		assert_int_equal(req->submit->pids[i], pids[i]);
	/* the task's sampling rules (RULES) go with every part */
	assert_int_equal(req->submit->n_samplings, 2);
	assert_string_equal(req->submit->samplings[0]->uri_regex, "^/api/");
	assert_true(req->submit->samplings[0]->has_min_duration);
	assert_int_equal(req->submit->samplings[0]->min_duration_ms, 100);
	assert_true(req->submit->samplings[0]->when_5xx);
	assert_false(req->submit->samplings[0]->when_4xx);
	assert_true(req->submit->samplings[0]->complete_request);
	assert_int_equal(req->submit->samplings[0]->max_request_size, 512);
	assert_false(req->submit->samplings[0]->complete_response);
	assert_string_equal(req->submit->samplings[1]->uri_regex, "");
	assert_false(req->submit->samplings[1]->has_min_duration);
	assert_true(req->submit->samplings[1]->when_4xx);
	t.id = req->submit->id;
	t.start_unix_ms = timeutil__unix_ms();
	rep.task = &t;
	rep.error = "";
	assert_int_equal(bus__send_reply(e->rep[shard], &rep), 0);
	ember__request__free_unpacked(req, NULL);
}

#define RULES                                                                                              \
	"{\"NetworkSamplings\":[{\"URIRegex\":\"^/api/\",\"MinDuration\":100,\"When4xx\":false,"                 \
	"\"When5xx\":true,\"Settings\":{\"RequireCompleteRequest\":true,\"MaxRequestSize\":512}},"             \
	"{\"When4xx\":true}]}"

static void run_until_running(struct sw_backend *b, unsigned want)
{
	uint64_t until = timeutil__mono_ms() + 3000;
	unsigned n;

	do {
		sw_run_tasks(b, timeutil__mono_ms());
		n = 0;
		for (unsigned i = 0; i < b->n_tasks; i++)
			n += b->tasks[i].state == T_RUNNING;
	} while (n < want && timeutil__mono_ms() < until && !usleep(10000));
	assert_int_equal(n, want);
}

static void test_network_task(void **state)
{
	static const uint32_t shard0[] = { 100, 102 }, shard1[] = { 101 };
	int64_t now = (int64_t)timeutil__unix_ms();
	struct env e;
	struct sw_backend *b = backend(&e);
	char id[64];
	(void)state;

	oap_network_task(b, now - 1000, "60", "1700000000001", RULES);
	assert_int_equal(b->latest_update, 1700000000001LL);
	/* the instance's three processes (102 was not listed), split by analyzer */
	assert_int_equal(b->n_tasks, 2);
	snprintf(id, sizeof(id), "%s", b->tasks[0].ember_id);
	assert_int_equal(strncmp(id, "sw-", 3), 0);
	assert_string_equal(id + strlen(id) - 4, "-net");
	assert_string_equal(b->tasks[1].ember_id, id);
	assert_int_equal(b->tasks[0].shard, 0);
	assert_int_equal(b->tasks[1].shard, 1);
	sw_run_tasks(b, timeutil__mono_ms());
	analyzer_answers(&e, 0, id, shard0, 2);
	analyzer_answers(&e, 1, id, shard1, 1);
	run_until_running(b, 2);
	assert_int_equal(b->c[SC_TASKS_STARTED], 1);
	assert_ptr_equal(sw_task_by_ember_id(b, id), &b->tasks[0]);

	/* a batch: one collection per local instance; an unknown process is counted, not sent */
	{
		static struct tflow f100, f101, f201, f999;
		Ember__NetFlow *fp[4] = { &f100.f, &f201.f, &f101.f, &f999.f };
		Ember__NetworkBatch nb = EMBER__NETWORK_BATCH__INIT;
		Skywalking__V3__MeterDataCollection *c0, *c1;

		tflow_init(&f100, 100, "client", "http1");
		f100.f.peer_pid = 101;
		tflow_call(&f100.write, 1000, 10, 0);
		tflow_init(&f201, 201, "client", "");
		tflow_call(&f201.write, 1000, 10, 0);
		tflow_init(&f101, 101, "server", "http1");
		tflow_call(&f101.read, 1000, 10, 0);
		tflow_init(&f999, 999, "client", "");
		tflow_call(&f999.write, 1000, 10, 0);
		nb.flows = fp;
		nb.n_flows = 4;
		nb.window_end_unix_ns = 1700000002000000000ull;
		sw_network_batch(b, &nb);
		assert_int_equal(b->c[SC_NET_FLOWS], 3);
		assert_int_equal(b->c[SC_NET_FLOWS_UNKNOWN], 1);
		assert_non_null(b->head);
		assert_null(b->head->next);
		assert_int_equal(b->head->kind, I_NET_METERS);
		assert_int_equal(b->head->m.n, 2);
		c0 = skywalking__v3__meter_data_collection__unpack(NULL, b->head->m.v[0].len, b->head->m.v[0].data);
		c1 = skywalking__v3__meter_data_collection__unpack(NULL, b->head->m.v[1].len, b->head->m.v[1].data);
		assert_non_null(c0);
		assert_non_null(c1);
		assert_string_equal(c0->meterdata[0]->service, "shop");
		assert_string_equal(c0->meterdata[0]->serviceinstance, "inst-1");
		assert_int_equal(c0->meterdata[0]->timestamp, 1700000002000LL);
		/* pid 100's 4 meters, then pid 101's */
		assert_int_equal(c0->n_meterdata, 8);
		assert_string_equal(c0->meterdata[0]->singlevalue->name, "net_p_client_write_counts_counter");
		assert_string_equal(c0->meterdata[0]->singlevalue->labels[1]->value, "oap-101");
		assert_string_equal(c0->meterdata[4]->singlevalue->name, "net_p_server_read_counts_counter");
		assert_string_equal(c0->meterdata[4]->service, "");
		assert_string_equal(c1->meterdata[0]->service, "other");
		assert_string_equal(c1->meterdata[0]->singlevalue->labels[0]->value, "oap-201");
		assert_string_equal(c1->meterdata[0]->singlevalue->labels[3]->value, "unknown");
		skywalking__v3__meter_data_collection__free_unpacked(c0, NULL);
		skywalking__v3__meter_data_collection__free_unpacked(c1, NULL);
	}

	/* the OAP extends the task (same id, later update, longer): the parts run on ... */
	oap_network_task(b, now - 1000, "660", "1700000000002", RULES);
	assert_int_equal(b->n_tasks, 2);
	assert_int_equal(b->tasks[0].state, T_RUNNING);
	assert_int_equal(b->tasks[0].end_ms, now - 1000 + 660000);
	/* ... and when they end before the new end, the task starts again under the next id */
	{
		Ember__TaskEvent ev = EMBER__TASK_EVENT__INIT;
		Ember__Task t = EMBER__TASK__INIT;
		char next[64];

		t.id = id;
		ev.task = &t;
		ev.state = EMBER__TASK_EVENT__STATE__FINISHED;
		sw_task_event(b, &ev);
		snprintf(next, sizeof(next), "%s1", id);
		assert_string_equal(b->tasks[0].ember_id, next);
		assert_string_equal(b->tasks[1].ember_id, next);
		assert_int_equal(b->tasks[0].state, T_SCHEDULED);
		assert_null(sw_task_by_ember_id(b, id));
	}
	backend_free(&e);
}

/* A task whose rules do not decode is not started, counted, and not asked for again. */
static void test_network_task_bad_rules(void **state)
{
	int64_t now = (int64_t)timeutil__unix_ms();
	struct env e;
	struct sw_backend *b = backend(&e);
	(void)state;

	oap_network_task(b, now - 1000, "60", "1700000000001",
			 "{\"NetworkSamplings\":[{\"URIRegex\":\"[a-\",\"When5xx\":true}]}");
	assert_int_equal(b->n_tasks, 0);
	assert_int_equal(b->c[SC_TASKS_RECEIVED], 1);
	assert_int_equal(b->c[SC_TASKS_FAILED], 1);
	assert_int_equal(b->c[SC_TASKS_BAD_SAMPLINGS], 1);
	assert_int_equal(b->latest_update, 1700000000001LL);
	oap_network_task(b, now - 1000, "60", "1700000000002", "{\"NetworkSamplings\":[");
	assert_int_equal(b->n_tasks, 0);
	assert_int_equal(b->c[SC_TASKS_FAILED], 2);
	assert_int_equal(b->c[SC_TASKS_BAD_SAMPLINGS], 2);
	assert_int_equal(b->c[SC_COMMANDS_INVALID], 0);
	backend_free(&e);
}

/* ---- sampled traces ---- */

#define T0 1700000001000000000ull
#define MS 1000000ull

struct ttrace {
	Ember__NetSampledTrace t;
	Ember__NetExchange x;
	Ember__Label l[2], *lp[2];
};

static void ttrace_init(struct ttrace *k, uint32_t pid, const char *side, const char *peer, uint64_t conn,
			uint64_t duration_ms, int status, const char *reason, const char *provider, const char *trace_id,
			const char *segment_id, const char *span_id, const char *uri)
{
	memset(k, 0, sizeof(*k));
	ember__net_sampled_trace__init(&k->t);
	ember__net_exchange__init(&k->x);
	k->x.pid = pid;
	k->x.connection_id = conn;
	k->x.protocol = "http1";
	k->x.side = (char *)side;
	k->x.peer_address = (char *)peer;
	k->x.req_unix_ns = T0;
	k->x.duration_ns = duration_ms * MS;
	k->x.latency_ns = duration_ms * MS - 10 * MS;
	k->x.req_bytes = 120;
	k->x.resp_bytes = 2048;
	k->x.status = status;
	k->x.answered = 1;
	ember__label__init(&k->l[0]);
	ember__label__init(&k->l[1]);
	k->l[0].name = "method";
	k->l[0].value = "GET";
	k->l[1].name = "uri";
	k->l[1].value = "/slow?x=1";
	k->lp[0] = &k->l[0];
	k->lp[1] = &k->l[1];
	k->x.fields = k->lp;
	k->x.n_fields = 2;
	k->t.exchange = &k->x;
	k->t.uri = (char *)uri;
	k->t.reason = (char *)reason;
	k->t.trace_provider = (char *)provider;
	k->t.trace_id = (char *)trace_id;
	k->t.segment_id = (char *)segment_id;
	k->t.span_id = (char *)span_id;
	k->t.local_address = "127.0.0.1:8080";
	k->t.process_name = "app";
}

static struct item *nth_item(struct sw_backend *b, enum item_kind kind, unsigned n)
{
	for (struct item *it = b->head; it; it = it->next)
		if (it->kind == kind && !n--)
			return it;
	return NULL;
}

static void check_tag(const Skywalking__V3__SpanAttachedEvent *e, size_t i, const char *key, const char *value)
{
	assert_true(i < e->n_tags);
	assert_string_equal(e->tags[i]->key, key);
	assert_string_equal(e->tags[i]->value, value);
}

static void test_sampled_traces(void **state)
{
	static const char req[] = "POST /api/pay HTTP/1.1\r\nHost: shop\r\nContent-Type: application/json\r\n"
				  "\r\n{\"id\":\"\xff\"}";
	static const char resp[] = "HTTP/1.1 503 Service Unavailable\r\ncontent-type:  application/octet-stream \r\n"
				   "\r\n\x00\x01\x02";
	static char big[70000];
	static struct tflow fs, fc;
	static struct ttrace a, bt, c, d, e;
	Ember__NetFlow *fp[2] = { &fs.f, &fc.f };
	Ember__NetConnection conn = EMBER__NET_CONNECTION__INIT, *cp = &conn;
	Ember__NetSampledTrace *sp[5] = { &a.t, &bt.t, &c.t, &d.t, &e.t };
	Ember__NetworkBatch nb = EMBER__NETWORK_BATCH__INIT;
	Skywalking__V3__LogData *ld;
	Skywalking__V3__SpanAttachedEvent *ev;
	struct item *it;
	struct env env;
	struct sw_backend *b = backend(&env);
	(void)state;

	/* nginx-like server 101 answers client 100 on this host; 100 also calls a remote server */
	tflow_init(&fs, 101, "server", "http1");
	fs.f.peer_address = "127.0.0.1:0";
	fs.f.peer_local = 1;
	fs.f.peer_pid = 100;
	tflow_init(&fc, 100, "client", "http1");
	fc.f.peer_address = "10.1.2.3:8080";
	/* 201's connection closed in the window: its client is on this host, not followed */
	conn.pid = 201;
	conn.id = 7;
	conn.remote_local = 1;
	conn.remote_address = "192.168.1.5:51000";
	ttrace_init(&a, 101, "server", "127.0.0.1:45000", 1, 250, 503, "status_5xx", "skywalking", "a1b2c3.trace",
		    "seg-1", "3", "/api/pay");
	a.t.request.data = (uint8_t *)req;
	a.t.request.len = sizeof(req) - 1;
	a.t.response.data = (uint8_t *)resp;
	a.t.response.len = sizeof(resp) - 1;
	/* the calls that carried it: a read of the request, a write of the response */
	static Ember__NetSyscall sc[2], *scp[2] = { &sc[0], &sc[1] };
	ember__net_syscall__init(&sc[0]);
	ember__net_syscall__init(&sc[1]);
	sc[0].start_unix_ns = 1700000000999000000ull;
	sc[0].end_unix_ns = 1700000001000000000ull;
	sc[0].name = "Read";
	sc[0].package_count = 1;
	sc[0].package_size = 120;
	sc[0].ifindex = 1;
	sc[0].ifname = "lo";
	sc[1].start_unix_ns = 1700000001250000000ull;
	sc[1].end_unix_ns = 1700000001250040000ull;
	sc[1].name = "Writev";
	sc[1].package_count = 2;
	sc[1].package_size = 2200;
	sc[1].ifindex = 1;
	sc[1].ifname = "lo\xff";   /* sent as valid UTF-8 */
	sc[1].rtt_us = 42;
	a.t.syscalls = scp;
	a.t.n_syscalls = 2;
	ttrace_init(&bt, 100, "client", "10.1.2.3:8080", 2, 1500, 200, "slow", "zipkin",
		    "463ac35c9f6413ad48485a3953bb6124", "", "a2fb4a1d1a96d312", "");
	ttrace_init(&c, 201, "server", "192.168.1.5:51000", 7, 15, 404, "status_4xx", "skywalking", "t-201", "s-201",
		    "0", "/x");
	/* the analyzers keep bodies only: a binary one is noted, not sent */
	c.t.request.data = (uint8_t *)"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
	c.t.request.len = 16;
	memset(big, 'x', sizeof(big));
	c.t.response.data = (uint8_t *)big;
	c.t.response.len = sizeof(big);
	c.t.response_truncated = 1;
	c.x.resp_bytes = 70000;
	ttrace_init(&d, 999, "server", "10.0.0.1:1", 1, 300, 200, "slow", "skywalking", "t-999", "s", "1", "/");
	ttrace_init(&e, 100, "client", "10.1.2.3:8080", 2, 300, 200, "slow", "skywalking", "", "", "", "/");
	nb.flows = fp;
	nb.n_flows = 2;
	nb.connections = &cp;
	nb.n_connections = 1;
	nb.sampled = sp;
	nb.n_sampled = 5;
	nb.sampled_not_kept = 3;
	nb.sampled_no_trace_context = 264;	/* matched the rules without sw8/b3: counted by why */
	nb.sampled_bad_trace_context = 2;
	nb.window_end_unix_ns = 1700000002000000000ull;
	sw_network_batch(b, &nb);
	assert_int_equal(b->c[SC_NET_SAMPLED_NO_TRACE], 264);
	assert_int_equal(b->c[SC_NET_SAMPLED_BAD_TRACE], 2);
	assert_true(b->warned_untraced);
	assert_string_equal(sw_counter_names[SC_NET_SAMPLED_NO_TRACE], "skywalking_network_sampled_no_trace_context");
	assert_string_equal(sw_counter_names[SC_NET_SAMPLED_BAD_TRACE], "skywalking_network_sampled_bad_trace_context");
	assert_int_equal(b->c[SC_NET_SAMPLED], 3);
	assert_int_equal(b->c[SC_NET_SAMPLED_UNKNOWN], 1);
	assert_int_equal(b->c[SC_NET_SAMPLED_BAD], 1);
	assert_int_equal(b->c[SC_NET_SAMPLED_NOT_KEPT], 3);
	assert_int_equal(b->c[SC_NET_SPAN_EVENTS], 6);
	assert_int_equal(b->c[SC_NET_CONTENT_CUT], 1);

	/* shop's stream: 101's trace, then 100's */
	it = nth_item(b, I_NET_LOGS, 0);
	assert_non_null(it);
	assert_string_equal(it->key, "shop");
	assert_int_equal(it->m.n, 2);
	ld = skywalking__v3__log_data__unpack(NULL, it->m.v[0].len, it->m.v[0].data);
	assert_non_null(ld);
	assert_int_equal(ld->timestamp, 1700000002000LL);
	assert_string_equal(ld->service, "shop");
	assert_string_equal(ld->serviceinstance, "inst-1");
	assert_string_equal(ld->layer, "OS_LINUX");
	assert_string_equal(ld->endpoint, "");
	assert_non_null(ld->tags);
	assert_int_equal(ld->tags->n_data, 1);
	assert_string_equal(ld->tags->data[0]->key, "LOG_KIND");
	assert_string_equal(ld->tags->data[0]->value, "NET_PROFILING_SAMPLED_TRACE");
	assert_string_equal(ld->tracecontext->traceid, "a1b2c3.trace");
	assert_string_equal(ld->tracecontext->tracesegmentid, "seg-1");
	assert_int_equal(ld->tracecontext->spanid, 3);
	assert_string_equal(ld->body->type, "json");
	assert_int_equal(ld->body->content_case, SKYWALKING__V3__LOG_DATA_BODY__CONTENT_JSON);
	assert_string_equal(ld->body->json->json,
			    "{\"uri\":\"/api/pay\",\"reason\":\"status_5xx\",\"latency\":250,\"trace_provider\":\"skywalking\","
			    "\"client_process\":{\"process_id\":\"oap-100\",\"local\":false,\"address\":\"\"},"
			    "\"server_process\":{\"process_id\":\"oap-101\",\"local\":false,\"address\":\"\"},"
			    "\"detect_point\":\"server\",\"component\":\"http\",\"ssl\":false,\"status\":503}");
	skywalking__v3__log_data__free_unpacked(ld, NULL);
	ld = skywalking__v3__log_data__unpack(NULL, it->m.v[1].len, it->m.v[1].data);
	assert_non_null(ld);
	assert_string_equal(ld->service, "shop");
	assert_string_equal(ld->tracecontext->traceid, "463ac35c9f6413ad48485a3953bb6124");
	assert_string_equal(ld->tracecontext->tracesegmentid, "");	/* zipkin: the trace id only */
	assert_int_equal(ld->tracecontext->spanid, 0);
	assert_string_equal(ld->body->json->json,
			    "{\"uri\":\"/slow?x=1\",\"reason\":\"slow\",\"latency\":1500,\"trace_provider\":\"zipkin\","
			    "\"client_process\":{\"process_id\":\"oap-100\",\"local\":false,\"address\":\"\"},"
			    "\"server_process\":{\"process_id\":\"\",\"local\":false,\"address\":\"10.1.2.3:8080\"},"
			    "\"detect_point\":\"client\",\"component\":\"http\",\"ssl\":false,\"status\":200}");
	skywalking__v3__log_data__free_unpacked(ld, NULL);
	/* other's stream: the peer is only known to be on this host */
	it = nth_item(b, I_NET_LOGS, 1);
	assert_non_null(it);
	assert_string_equal(it->key, "other");
	assert_int_equal(it->m.n, 1);
	ld = skywalking__v3__log_data__unpack(NULL, it->m.v[0].len, it->m.v[0].data);
	assert_non_null(ld);
	assert_string_equal(ld->service, "other");
	assert_string_equal(ld->serviceinstance, "inst-2");
	assert_string_equal(ld->body->json->json,
			    "{\"uri\":\"/x\",\"reason\":\"status_4xx\",\"latency\":15,\"trace_provider\":\"skywalking\","
			    "\"client_process\":{\"process_id\":\"\",\"local\":true,\"address\":\"\"},"
			    "\"server_process\":{\"process_id\":\"oap-201\",\"local\":false,\"address\":\"\"},"
			    "\"detect_point\":\"server\",\"component\":\"http\",\"ssl\":false,\"status\":404}");
	skywalking__v3__log_data__free_unpacked(ld, NULL);
	assert_null(nth_item(b, I_NET_LOGS, 2));

	/* the span events: 101's request, response and calls, 201's request and response */
	it = nth_item(b, I_NET_EVENTS, 0);
	assert_non_null(it);
	assert_null(nth_item(b, I_NET_EVENTS, 1));
	assert_int_equal(it->m.n, 6);
	ev = skywalking__v3__span_attached_event__unpack(NULL, it->m.v[0].len, it->m.v[0].data);
	assert_non_null(ev);
	assert_string_equal(ev->event, "HTTP Request Sampling");
	assert_int_equal(ev->starttime->seconds, 1700000001);
	assert_int_equal(ev->starttime->nanos, 0);
	assert_int_equal(ev->endtime->seconds, 1700000001);
	assert_int_equal(ev->endtime->nanos, 10000000);	/* the request's end: duration - latency */
	assert_int_equal(ev->n_tags, 8);
	check_tag(ev, 0, "data_size", "120B");
	check_tag(ev, 1, "data_content", "POST /api/pay HTTP/1.1\r\nHost: shop\r\nContent-Type: application/json\r\n"
					 "\r\n{\"id\":\"\xef\xbf\xbd\"}");
	check_tag(ev, 2, "data_direction", "inbound");
	check_tag(ev, 3, "data_type", "request");
	check_tag(ev, 4, "connection_role", "server");
	check_tag(ev, 5, "service_name", "shop");
	check_tag(ev, 6, "service_instance_name", "inst-1");
	check_tag(ev, 7, "process_name", "p-101");
	assert_int_equal(ev->n_summary, 0);
	assert_int_equal(ev->tracecontext->type, SKYWALKING__V3__SPAN_ATTACHED_EVENT__SPAN_REFERENCE_TYPE__SKYWALKING);
	assert_string_equal(ev->tracecontext->traceid, "a1b2c3.trace");
	assert_string_equal(ev->tracecontext->tracesegmentid, "seg-1");
	assert_string_equal(ev->tracecontext->spanid, "3");
	skywalking__v3__span_attached_event__free_unpacked(ev, NULL);
	ev = skywalking__v3__span_attached_event__unpack(NULL, it->m.v[1].len, it->m.v[1].data);
	assert_non_null(ev);
	assert_string_equal(ev->event, "HTTP Response Sampling");
	assert_int_equal(ev->starttime->nanos, 250000000);	/* the response's first byte */
	assert_int_equal(ev->endtime->nanos, 250000000);
	check_tag(ev, 0, "data_size", "2KiB");
	check_tag(ev, 1, "data_content", "HTTP/1.1 503 Service Unavailable\r\ncontent-type:  application/octet-stream \r\n"
					 "\r\n[not plain, current content type: application/octet-stream]");
	check_tag(ev, 2, "data_direction", "outbound");
	check_tag(ev, 3, "data_type", "response");
	skywalking__v3__span_attached_event__free_unpacked(ev, NULL);
	ev = skywalking__v3__span_attached_event__unpack(NULL, it->m.v[2].len, it->m.v[2].data);
	assert_non_null(ev);
	assert_string_equal(ev->event, "Syscall Read");
	assert_int_equal(ev->starttime->seconds, 1700000000);
	assert_int_equal(ev->starttime->nanos, 999000000);
	assert_int_equal(ev->endtime->seconds, 1700000001);
	assert_int_equal(ev->endtime->nanos, 0);
	assert_int_equal(ev->n_tags, 7);   /* no RTT: no avg_rtt_time */
	check_tag(ev, 0, "package_size", "120B");
	check_tag(ev, 1, "package_count", "1");
	check_tag(ev, 2, "network_name", "lo");
	check_tag(ev, 3, "network_index", "1");
	check_tag(ev, 4, "service_name", "shop");
	check_tag(ev, 5, "service_instance_name", "inst-1");
	check_tag(ev, 6, "process_name", "p-101");
	assert_string_equal(ev->tracecontext->traceid, "a1b2c3.trace");
	assert_string_equal(ev->tracecontext->tracesegmentid, "seg-1");
	assert_string_equal(ev->tracecontext->spanid, "3");
	skywalking__v3__span_attached_event__free_unpacked(ev, NULL);
	ev = skywalking__v3__span_attached_event__unpack(NULL, it->m.v[3].len, it->m.v[3].data);
	assert_non_null(ev);
	assert_string_equal(ev->event, "Syscall Writev");
	assert_int_equal(ev->endtime->nanos, 250040000);
	assert_int_equal(ev->n_tags, 8);
	check_tag(ev, 0, "package_size", "2.148KiB");
	check_tag(ev, 1, "package_count", "2");
	check_tag(ev, 2, "network_name", "lo\xef\xbf\xbd");
	check_tag(ev, 7, "avg_rtt_time", "42000ns");
	skywalking__v3__span_attached_event__free_unpacked(ev, NULL);
	ev = skywalking__v3__span_attached_event__unpack(NULL, it->m.v[4].len, it->m.v[4].data);
	assert_non_null(ev);
	assert_string_equal(ev->event, "HTTP Request Sampling");
	check_tag(ev, 1, "data_content", "[not plain, 16 bytes that are not UTF-8 text]");
	skywalking__v3__span_attached_event__free_unpacked(ev, NULL);
	ev = skywalking__v3__span_attached_event__unpack(NULL, it->m.v[5].len, it->m.v[5].data);
	assert_non_null(ev);
	assert_string_equal(ev->event, "HTTP Response Sampling");
	check_tag(ev, 0, "data_size", "68.36KiB");
	assert_int_equal(strlen(ev->tags[1]->value), 64 << 10);	/* cut to the bound */
	check_tag(ev, 7, "process_name", "p-201");
	assert_string_equal(ev->tracecontext->spanid, "0");
	skywalking__v3__span_attached_event__free_unpacked(ev, NULL);
	backend_free(&env);
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/sw-net-test.XXXXXX");
	assert_non_null(mkdtemp(root));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_collection),
		cmocka_unit_test_setup_teardown(test_network_task, setup, teardown),
		cmocka_unit_test_setup_teardown(test_network_task_bad_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sampled_traces, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
