/*
 * The `skywalking` backend: talks to a SkyWalking OAP the way Apache
 * SkyWalking Rover does (../shared/spec/skywalking-protocol.md).
 *
 *   every heartbeat_period   rescan host processes (exporter/process_finder),
 *                            reportProcesses the new ones (all of them every
 *                            properties_report_period-th time), keepAlive the rest
 *   every check_interval     queryTasks(agent id, latest update time seen); ON_CPU
 *                            and OFF_CPU tasks are submitted to the analyzer that
 *                            owns each pid (Request.submit over ZeroMQ, without
 *                            waiting: the reply is polled on later ticks);
 *                            NETWORK tasks are accepted and reported unsupported
 *   on_profile               a batch of an OAP task -> one collectProfilingData
 *                            stream's worth of EBPFProfilingData (exporter/sw_codec)
 *   on_meters                -> one MeterDataCollection for collectBatch
 *
 * Transport (exporter/grpc_client): gRPC lives on its own thread; this file
 * runs on the exporter's loop and only queues calls and polls results, so an
 * OAP that is down, slow or restarting never blocks the loop.  Profiling data
 * and meters wait in one FIFO bounded by exporter.queue_size bytes (the oldest
 * entries are dropped and counted when it is full), and are sent one call at a
 * time with exponential backoff after a failure.  Process reports, keep-alives
 * and task queries are periodic: a failed one is simply done again next period,
 * as Rover does.  The connection state is logged once per change.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "common/bus.h"
#include "common/log.h"
#include "common/shard.h"
#include "exporter/backend.h"
#include "exporter/skywalking/grpc_client.h"
#include "common/process_finder.h"
#include "exporter/skywalking/codec.h"
#include "proto/sw_meter.pb-c.h"
#include "proto/sw_process.pb-c.h"
#include "proto/sw_profile.pb-c.h"

#define M_REPORT    "/skywalking.v3.EBPFProcessService/reportProcesses"
#define M_KEEPALIVE "/skywalking.v3.EBPFProcessService/keepAlive"
#define M_QUERY     "/skywalking.v3.EBPFProfilingService/queryTasks"
#define M_PROFILE   "/skywalking.v3.EBPFProfilingService/collectProfilingData"
#define M_METERS    "/skywalking.v3.MeterReportService/collectBatch"

#define RPC_TIMEOUT_MS    5000
#define UPLOAD_TIMEOUT_MS 10000
#define UPLOAD_MAX_BYTES  (4u << 20)	/* per stream; gRPC's default receive limit is per message */
#define UPLOAD_MAX_ITEMS  256
#define BACKOFF_MIN_MS    500
#define BACKOFF_MAX_MS    30000
#define SUBMIT_TIMEOUT_MS 3000
#define SUBMIT_TRIES      3
#define MAX_TASKS         1024
#define MAX_REPORT        512

enum cookie_kind { C_REPORT = 1, C_KEEPALIVE, C_QUERY, C_UPLOAD };

enum item_kind { I_PROFILE, I_METERS };
struct item {
	struct item *next;
	enum item_kind kind;
	bool dropped;		/* in flight, but given up to make room: not put back on failure */
	struct sw_msgs m;
};

enum task_state { T_SCHEDULED, T_SUBMITTING, T_RUNNING, T_DONE, T_FAILED };
struct sw_task {
	char ember_id[64];
	char oap_task[SW_MAX_ID];
	char process_id[SW_MAX_ID];
	uint32_t pid;
	enum sw_target target;
	int64_t update_ms, start_ms, end_ms, profiling_start_ms;
	enum task_state state;
	void *sock;		/* REQ socket of a submission in progress */
	uint64_t sock_deadline, next_try;
	unsigned tries;
};

struct report_ref { uint32_t pid; uint64_t start_ticks; };

enum sc {
	SC_RPC_OK, SC_RPC_FAILED, SC_DISCONNECTS, SC_PROC_REPORTED, SC_PROC_IGNORED, SC_TASKS_RECEIVED,
	SC_TASKS_STARTED, SC_TASKS_UNSUPPORTED, SC_TASKS_FAILED, SC_COMMANDS_INVALID, SC_PROFILE_MESSAGES,
	SC_PROFILE_UNKNOWN_TASK, SC_DROPPED_BATCHES, SC_DROPPED_BYTES, SC_METERS_SENT, SC_FINDER_UNREADABLE, SC_MAX
};
static const char *const sc_names[SC_MAX] = {
	"skywalking_rpc_ok", "skywalking_rpc_failed", "skywalking_disconnects", "skywalking_processes_reported",
	"skywalking_processes_ignored", "skywalking_tasks_received", "skywalking_tasks_started",
	"skywalking_tasks_not_supported", "skywalking_tasks_failed", "skywalking_commands_invalid",
	"skywalking_profile_messages", "skywalking_profile_unknown_task", "skywalking_queue_dropped_batches",
	"skywalking_queue_dropped_bytes", "skywalking_meters_sent", "skywalking_finder_unreadable",
};

struct sw_backend {
	const struct ember_config *cfg;
	struct grpc_client *gc;
	struct process_finder *pf;
	void *zctx;
	char agent_id[64];
	char addr[256];
	char service[SW_NAME_MAX + 1], instance[SW_NAME_MAX + 1];
	unsigned analyzers;

	/* outbox */
	struct item *head, **tail;
	size_t queued_bytes, cap_bytes;
	struct item *inflight;		/* the items of the upload in flight */
	size_t inflight_bytes;
	bool upload_busy;
	uint64_t backoff_ms, retry_at;

	/* periodic calls */
	bool report_busy, keepalive_busy, query_busy;
	uint64_t next_heartbeat, next_query;
	uint64_t heartbeats;
	struct report_ref reported[MAX_REPORT];
	unsigned n_reported;
	int64_t latest_update;

	struct sw_task tasks[MAX_TASKS];
	unsigned n_tasks;

	int conn;			/* -1 unknown, 0 down, 1 up */
	char last_err[200];
	bool warned_network, warned_offcpu, warned_bad;
	uint64_t c[SC_MAX];
};

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int64_t unix_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void set_conn(struct sw_backend *b, int up, const char *why)
{
	if (b->conn == up)
		return;
	if (up) {
		log_info("connected to SkyWalking OAP at %s (agent id %s)", b->addr, b->agent_id);
		/* the OAP is back: send the backlog now, not after the backoff */
		b->backoff_ms = 0;
		b->retry_at = 0;
	} else {
		char q[32];
		config__format_size(b->cap_bytes, q, sizeof(q));
		log_warn("SkyWalking OAP at %s unreachable: %s; buffering up to %s, retrying with backoff", b->addr,
			 why && why[0] ? why : "no answer", q);
		if (b->conn == 1)
			b->c[SC_DISCONNECTS]++;
	}
	b->conn = up;
}

/* ---- outbox ---------------------------------------------------------------------------- */

static void item_free(struct item *it)
{
	if (!it)
		return;
	sw_msgs__release(&it->m);
	free(it);
}

static void drop_head(struct sw_backend *b)
{
	struct item *it = b->head;
	b->head = it->next;
	if (!b->head)
		b->tail = &b->head;
	b->queued_bytes -= it->m.bytes;
	b->c[SC_DROPPED_BATCHES]++;
	b->c[SC_DROPPED_BYTES] += it->m.bytes;
	item_free(it);
}

static void drop_item(struct sw_backend *b, struct item **pp)
{
	struct item *it = *pp;

	*pp = it->next;
	if (b->tail == &it->next)
		b->tail = pp;
	b->queued_bytes -= it->m.bytes;
	b->c[SC_DROPPED_BATCHES]++;
	b->c[SC_DROPPED_BYTES] += it->m.bytes;
	item_free(it);
}

/* Gives up an in-flight item of that kind (its call goes on); 0 if there is none. */
static int drop_inflight(struct sw_backend *b, int kind)
{
	for (struct item *it = b->inflight; it; it = it->next)
		if (!it->dropped && (kind < 0 || it->kind == (enum item_kind)kind)) {
			it->dropped = true;
			b->inflight_bytes -= it->m.bytes;
			b->c[SC_DROPPED_BATCHES]++;
			b->c[SC_DROPPED_BYTES] += it->m.bytes;
			return 1;
		}
	return 0;
}

/*
 * When the buffer is full, meter batches go first (meters are cumulative: a
 * later batch supersedes an earlier one), queued before in flight; then the
 * oldest profile batch (what is newest matters most).
 */
static void make_room(struct sw_backend *b, size_t need)
{
	while (b->queued_bytes + b->inflight_bytes + need > b->cap_bytes) {
		struct item **pp = &b->head;
		while (*pp && (*pp)->kind != I_METERS)
			pp = &(*pp)->next;
		if (*pp)
			drop_item(b, pp);
		else if (!drop_inflight(b, I_METERS)) {
			if (b->head)
				drop_head(b);
			else if (!drop_inflight(b, -1))
				break;
		}
	}
}

static void enqueue(struct sw_backend *b, enum item_kind kind, struct sw_msgs *m)
{
	struct item *it;

	if (!m->n)
		return;
	if (m->bytes > b->cap_bytes || !(it = calloc(1, sizeof(*it)))) {
		b->c[SC_DROPPED_BATCHES]++;
		b->c[SC_DROPPED_BYTES] += m->bytes;
		sw_msgs__release(m);
		return;
	}
	make_room(b, m->bytes);
	it->kind = kind;
	it->m = *m;
	memset(m, 0, sizeof(*m));
	*b->tail = it;
	b->tail = &it->next;
	b->queued_bytes += it->m.bytes;
}

static void start_upload(struct sw_backend *b, uint64_t now)
{
	struct item **pp, **lastp = &b->inflight, *it;
	enum item_kind kind;
	size_t n = 0, bytes = 0, items = 0, k = 0;
	struct grpc_msg *msgs;
	int r;

	if (!b->head || b->upload_busy || now < b->retry_at)
		return;
	kind = b->head->kind;
	/* One stream carries every queued batch of the oldest batch's kind (up to
	 * a size limit): each profile batch starts with its task, so the OAP
	 * attributes every message right, and a backlog leaves in a few calls. */
	b->inflight = NULL;
	for (pp = &b->head; *pp && items < UPLOAD_MAX_ITEMS;) {
		it = *pp;
		if (it->kind != kind || (items && bytes + it->m.bytes > UPLOAD_MAX_BYTES)) {
			pp = &it->next;
			continue;
		}
		*pp = it->next;
		if (b->tail == &it->next)
			b->tail = pp;
		it->next = NULL;
		*lastp = it;
		lastp = &it->next;
		n += it->m.n;
		bytes += it->m.bytes;
		items++;
	}
	b->queued_bytes -= bytes;
	b->inflight_bytes = bytes;
	msgs = calloc(n ? n : 1, sizeof(*msgs));
	if (!msgs)
		goto nomem;
	for (it = b->inflight; it; it = it->next)
		for (size_t j = 0; j < it->m.n; j++) {
			msgs[k].len = it->m.v[j].len;
			msgs[k].data = malloc(msgs[k].len ? msgs[k].len : 1);
			if (!msgs[k].data)
				goto nomem;
			memcpy(msgs[k].data, it->m.v[j].data, msgs[k].len);
			k++;
		}
	r = grpc_client__call(b->gc, kind == I_PROFILE ? M_PROFILE : M_METERS, msgs, k, UPLOAD_TIMEOUT_MS,
			      ((uint64_t)C_UPLOAD << 56) | kind);
	msgs = NULL;	/* the client owns them now */
	if (!r) {
		b->upload_busy = true;
		return;
	}
nomem:
	for (size_t j = 0; msgs && j < k; j++)
		free(msgs[j].data);
	free(msgs);
	/* put them back in front; try again later */
	for (it = b->inflight; it && it->next; it = it->next)
		;
	if (it) {
		it->next = b->head;
		if (!b->head)
			b->tail = &it->next;
		b->head = b->inflight;
	}
	b->queued_bytes += bytes;
	b->inflight = NULL;
	b->inflight_bytes = 0;
	b->retry_at = now + BACKOFF_MIN_MS;
}

static void upload_done(struct sw_backend *b, const struct grpc_result *res, uint64_t now)
{
	struct item *it = b->inflight, *keep = NULL, **kt = &keep;

	b->upload_busy = false;
	b->inflight = NULL;
	b->inflight_bytes = 0;
	while (it) {
		struct item *next = it->next;
		if (res->status == 0) {
			if (it->kind == I_PROFILE)
				b->c[SC_PROFILE_MESSAGES] += it->m.n;
			if (it->dropped) {	/* it made it after all */
				b->c[SC_DROPPED_BATCHES]--;
				b->c[SC_DROPPED_BYTES] -= it->m.bytes;
			}
			item_free(it);
		} else if (it->dropped) {
			item_free(it);
		} else {
			it->next = NULL;
			*kt = it;
			kt = &it->next;
			b->queued_bytes += it->m.bytes;
		}
		it = next;
	}
	if (res->status == 0) {
		b->backoff_ms = 0;
		b->retry_at = 0;
		return;
	}
	/* back to the front of the queue, oldest first; the buffer cap still holds */
	if (keep) {
		*kt = b->head;
		if (!b->head)
			b->tail = kt;
		b->head = keep;
	}
	make_room(b, 0);
	b->backoff_ms = b->backoff_ms ? b->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (b->backoff_ms > BACKOFF_MAX_MS)
		b->backoff_ms = BACKOFF_MAX_MS;
	b->retry_at = now + b->backoff_ms;
}

/* ---- processes --------------------------------------------------------------------------- */

static void entity_to_pb(const struct pf_entity *e, Skywalking__V3__EBPFProcessEntityMetadata *m, char **labels)
{
	skywalking__v3__ebpfprocess_entity_metadata__init(m);
	m->layer = (char *)e->layer;
	m->servicename = (char *)e->service;
	m->instancename = (char *)e->instance;
	m->processname = (char *)e->process;
	for (unsigned i = 0; i < e->n_labels; i++)
		labels[i] = (char *)e->labels[i];
	m->n_labels = e->n_labels;
	m->labels = labels;
}

static int pack_into(const ProtobufCMessage *msg, struct grpc_msg **ret)
{
	struct grpc_msg *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->len = protobuf_c_message_get_packed_size(msg);
	m->data = malloc(m->len ? m->len : 1);
	if (!m->data) {
		free(m);
		return -ENOMEM;
	}
	protobuf_c_message_pack(msg, m->data);
	*ret = m;
	return 0;
}

struct proc_pb {
	Skywalking__V3__EBPFProcessProperties props;
	Skywalking__V3__EBPFHostProcessMetadata host;
	Skywalking__V3__EBPFProcessEntityMetadata ent;
	Skywalking__V3__EBPFProcessPingPkg ping;
	char *labels[PF_MAX_LABELS];
	Skywalking__V3__KeyStringValuePair kv[6];
	Skywalking__V3__KeyStringValuePair *kvp[6];
	char pid[16];
};

static void report_processes(struct sw_backend *b, bool all)
{
	unsigned n = process_finder__count(b->pf), nr = 0, nk = 0;
	struct proc_pb *pb = calloc(n ? n : 1, sizeof(*pb));
	Skywalking__V3__EBPFProcessProperties **rp = calloc(n ? n : 1, sizeof(*rp));
	Skywalking__V3__EBPFProcessPingPkg **kp = calloc(n ? n : 1, sizeof(*kp));
	char host_ip[64] = "";
	struct grpc_msg *m;

	if (!pb || !rp || !kp)
		goto out;
	{
		char tmp[PF_PATH_MAX];
		struct pf_process dummy = { 0 };
		if (!process_finder__render(b->pf, "{{.Rover.HostIPV4 \"lo\"}}", &dummy, NULL, 0, tmp, sizeof(tmp)))
			snprintf(host_ip, sizeof(host_ip), "%.63s", tmp);
	}
	if (!b->report_busy)
		b->n_reported = 0;
	for (unsigned i = 0; i < n; i++) {
		struct pf_process *p = process_finder__at(b->pf, i);
		struct proc_pb *q = &pb[i];
		const char *support = p->support_ebpf ? "true" : "false";

		if (p->status == PF_IGNORED)
			continue;
		entity_to_pb(&p->e, &q->ent, q->labels);
		if (p->status == PF_NEW || all) {
			if (b->report_busy || nr >= MAX_REPORT)
				continue;
			static const char *const keys[] = { "host_ip", "pid", "command_line", "support_ebpf_profiling",
							    "container_id" };
			const char *vals[5] = { host_ip, q->pid, p->cmdline, support, p->container_id };
			unsigned nkv = p->container_id[0] ? 5 : 4;
			snprintf(q->pid, sizeof(q->pid), "%u", p->pid);
			for (unsigned k = 0; k < nkv; k++) {
				skywalking__v3__key_string_value_pair__init(&q->kv[k]);
				q->kv[k].key = (char *)keys[k];
				q->kv[k].value = (char *)vals[k];
				q->kvp[k] = &q->kv[k];
			}
			skywalking__v3__ebpfhost_process_metadata__init(&q->host);
			q->host.entity = &q->ent;
			q->host.pid = (int32_t)p->pid;
			q->host.n_properties = nkv;
			q->host.properties = q->kvp;
			skywalking__v3__ebpfprocess_properties__init(&q->props);
			q->props.metadata_case = SKYWALKING__V3__EBPFPROCESS_PROPERTIES__METADATA_HOST_PROCESS;
			q->props.hostprocess = &q->host;
			rp[nr++] = &q->props;
			b->reported[b->n_reported++] = (struct report_ref){ p->pid, p->start_ticks };
		} else if (p->status == PF_REPORTED && !b->keepalive_busy) {
			skywalking__v3__key_string_value_pair__init(&q->kv[0]);
			q->kv[0].key = "support_ebpf_profiling";
			q->kv[0].value = (char *)support;
			q->kvp[0] = &q->kv[0];
			skywalking__v3__ebpfprocess_ping_pkg__init(&q->ping);
			q->ping.entitymetadata = &q->ent;
			q->ping.n_properties = 1;
			q->ping.properties = q->kvp;
			kp[nk++] = &q->ping;
		}
	}
	if (nr) {
		Skywalking__V3__EBPFProcessReportList l = SKYWALKING__V3__EBPFPROCESS_REPORT_LIST__INIT;
		l.n_processes = nr;
		l.processes = rp;
		l.ebpfagentid = b->agent_id;
		if (!pack_into(&l.base, &m) &&
		    !grpc_client__call(b->gc, M_REPORT, m, 1, RPC_TIMEOUT_MS, (uint64_t)C_REPORT << 56))
			b->report_busy = true;
	}
	if (nk) {
		Skywalking__V3__EBPFProcessPingPkgList l = SKYWALKING__V3__EBPFPROCESS_PING_PKG_LIST__INIT;
		l.n_processes = nk;
		l.processes = kp;
		l.ebpfagentid = b->agent_id;
		if (!pack_into(&l.base, &m) &&
		    !grpc_client__call(b->gc, M_KEEPALIVE, m, 1, RPC_TIMEOUT_MS, (uint64_t)C_KEEPALIVE << 56))
			b->keepalive_busy = true;
	}
out:
	free(pb);
	free(rp);
	free(kp);
}

static bool entity_eq(const struct pf_entity *e, const Skywalking__V3__EBPFProcessEntityMetadata *m)
{
	if (!m || strcmp(e->layer, m->layer) || strcmp(e->service, m->servicename) ||
	    strcmp(e->instance, m->instancename) || strcmp(e->process, m->processname) || m->n_labels != e->n_labels)
		return false;
	for (unsigned i = 0; i < e->n_labels; i++) {
		bool found = false;
		for (size_t j = 0; j < m->n_labels && !found; j++)
			found = m->labels[j] && !strcmp(e->labels[i], m->labels[j]);
		if (!found)
			return false;
	}
	return true;
}

static void report_done(struct sw_backend *b, const struct grpc_result *res)
{
	Skywalking__V3__EBPFReportProcessDownstream *d;

	b->report_busy = false;
	if (res->status)
		return;	/* statuses stay NEW: reported again next heartbeat */
	d = skywalking__v3__ebpfreport_process_downstream__unpack(NULL, res->resp_len, res->resp);
	if (!d) {
		b->c[SC_RPC_FAILED]++;
		return;
	}
	for (unsigned r = 0; r < b->n_reported; r++) {
		struct pf_process *p = process_finder__by_pid(b->pf, b->reported[r].pid);
		const char *id = NULL;
		if (!p || p->start_ticks != b->reported[r].start_ticks)
			continue;
		for (size_t i = 0; i < d->n_processes && !id; i++) {
			const Skywalking__V3__EBPFProcessDownstream *ds = d->processes[i];
			if (ds && ds->process_case == SKYWALKING__V3__EBPFPROCESS_DOWNSTREAM__PROCESS_HOST_PROCESS &&
			    ds->hostprocess && ds->hostprocess->pid == (int32_t)p->pid &&
			    entity_eq(&p->e, ds->hostprocess->entitymetadata) && ds->processid &&
			    ds->processid[0] && strlen(ds->processid) < sizeof(p->oap_id))
				id = ds->processid;
		}
		if (id) {
			if (p->status != PF_REPORTED) {
				b->c[SC_PROC_REPORTED]++;
				log_info("process %u (%s/%s/%s) reported to the OAP as %s", p->pid, p->e.service,
					 p->e.instance, p->e.process, id);
			}
			p->status = PF_REPORTED;
			snprintf(p->oap_id, sizeof(p->oap_id), "%s", id);
		} else if (p->status == PF_NEW) {
			/* as Rover: not accepted -> not sent again until it is found anew */
			p->status = PF_IGNORED;
			b->c[SC_PROC_IGNORED]++;
		}
	}
	skywalking__v3__ebpfreport_process_downstream__free_unpacked(d, NULL);
}

/* ---- tasks ------------------------------------------------------------------------------- */

static uint64_t fnv64(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

static struct sw_task *task_by_ember_id(struct sw_backend *b, const char *id)
{
	for (unsigned i = 0; i < b->n_tasks; i++)
		if (!strcmp(b->tasks[i].ember_id, id))
			return &b->tasks[i];
	return NULL;
}

static struct sw_task *task_slot(struct sw_backend *b)
{
	if (b->n_tasks < MAX_TASKS)
		return &b->tasks[b->n_tasks++];
	/* forget the oldest finished one */
	for (unsigned i = 0; i < b->n_tasks; i++)
		if (b->tasks[i].state == T_DONE || b->tasks[i].state == T_FAILED) {
			memmove(&b->tasks[i], &b->tasks[i + 1], (b->n_tasks - i - 1) * sizeof(b->tasks[0]));
			return &b->tasks[b->n_tasks - 1];
		}
	return NULL;
}

static void handle_command(struct sw_backend *b, const Skywalking__V3__Command *cmd, int64_t now)
{
	struct sw_task_cmd t;
	struct pf_process *procs[SW_MAX_PROCESS_IDS];
	char why[160];
	int r = sw_codec__decode_task(cmd, &t, why, sizeof(why));

	if (r == -ENOENT)
		return;
	if (r) {
		b->c[SC_COMMANDS_INVALID]++;
		if (!b->warned_bad) {
			log_warn("OAP sent an invalid profiling task command (%s); skipping such commands", why);
			b->warned_bad = true;
		}
		return;
	}
	for (unsigned i = 0; i < t.n_process_ids; i++) {
		procs[i] = process_finder__by_oap_id(b->pf, t.process_ids[i]);
		if (!procs[i]) {
			/* not ours (yet): the OAP sends it again while latestUpdateTime stays below it */
			log_debug("task %s names process %s that this agent did not report", t.task_id, t.process_ids[i]);
			return;
		}
	}
	if (t.update_time_ms > b->latest_update)
		b->latest_update = t.update_time_ms;
	b->c[SC_TASKS_RECEIVED]++;
	if (t.target == SW_TARGET_NETWORK) {
		b->c[SC_TASKS_UNSUPPORTED]++;
		log_warn("OAP task %s: network profiling is not supported yet; task accepted and ignored", t.task_id);
		return;
	}
	if (now > t.start_time_ms + t.duration_s * 1000) {
		log_info("OAP task %s already ended; not started", t.task_id);
		return;
	}
	for (unsigned i = 0; i < t.n_process_ids; i++) {
		char id[64];
		struct sw_task *k;

		snprintf(id, sizeof(id), "sw-%016llx-%u", (unsigned long long)fnv64(t.task_id), procs[i]->pid);
		if ((k = task_by_ember_id(b, id))) {
			/* the same task again (an update): a running one keeps running */
			k->end_ms = t.start_time_ms + t.duration_s * 1000;
			continue;
		}
		k = task_slot(b);
		if (!k) {
			b->c[SC_TASKS_FAILED]++;
			continue;
		}
		memset(k, 0, sizeof(*k));
		snprintf(k->ember_id, sizeof(k->ember_id), "%s", id);
		snprintf(k->oap_task, sizeof(k->oap_task), "%s", t.task_id);
		snprintf(k->process_id, sizeof(k->process_id), "%s", t.process_ids[i]);
		k->pid = procs[i]->pid;
		k->target = t.target;
		k->update_ms = t.update_time_ms;
		k->start_ms = t.start_time_ms;
		k->end_ms = t.start_time_ms + t.duration_s * 1000;
		k->state = T_SCHEDULED;
		log_info("OAP task %s: %s profiling of process %u for %llds%s", t.task_id,
			 t.target == SW_TARGET_ON_CPU ? "on-CPU" : "off-CPU", k->pid, (long long)t.duration_s,
			 t.start_time_ms > now ? " (scheduled)" : "");
	}
}

static void query_done(struct sw_backend *b, const struct grpc_result *res)
{
	Skywalking__V3__Commands *cs;
	int64_t now = unix_ms();

	b->query_busy = false;
	if (res->status)
		return;
	cs = skywalking__v3__commands__unpack(NULL, res->resp_len, res->resp);
	if (!cs) {
		b->c[SC_COMMANDS_INVALID]++;
		return;
	}
	for (size_t i = 0; i < cs->n_commands; i++)
		handle_command(b, cs->commands[i], now);
	skywalking__v3__commands__free_unpacked(cs, NULL);
}

static void query_tasks(struct sw_backend *b)
{
	Skywalking__V3__EBPFProfilingTaskQuery q = SKYWALKING__V3__EBPFPROFILING_TASK_QUERY__INIT;
	struct grpc_msg *m;

	if (b->query_busy)
		return;
	q.roverinstanceid = b->agent_id;
	q.latestupdatetime = b->latest_update;
	if (!pack_into(&q.base, &m) && !grpc_client__call(b->gc, M_QUERY, m, 1, RPC_TIMEOUT_MS, (uint64_t)C_QUERY << 56))
		b->query_busy = true;
}

static void close_sock(struct sw_task *k)
{
	if (k->sock)
		zmq_close(k->sock);
	k->sock = NULL;
}

/* Sends the Request without waiting; the reply is read by poll_submission(). */
static void submit_task(struct sw_backend *b, struct sw_task *k, uint64_t mono, int64_t now)
{
	Ember__Request req = EMBER__REQUEST__INIT;
	Ember__Task t = EMBER__TASK__INIT;
	uint32_t pid = k->pid;
	char ep[512];
	int zero = 0;
	size_t len;
	uint8_t *buf;

	t.id = k->ember_id;
	t.kind = k->target == SW_TARGET_OFF_CPU ? EMBER__TASK_KIND__OFF_CPU : EMBER__TASK_KIND__ON_CPU;
	t.n_pids = 1;
	t.pids = &pid;
	/* the task ends when the OAP's window does: start + duration */
	t.duration_ms = (uint64_t)(k->end_ms - now > 1000 ? k->end_ms - now : 1000);
	t.origin = "oap";
	req.body_case = EMBER__REQUEST__BODY_SUBMIT;
	req.submit = &t;
	bus__analyzer_endpoint(b->cfg->ember.run_dir, shard__of(pid, b->analyzers), ep, sizeof(ep));
	k->sock = zmq_socket(b->zctx, ZMQ_REQ);
	if (!k->sock)
		goto retry;
	zmq_setsockopt(k->sock, ZMQ_LINGER, &zero, sizeof(zero));
	if (zmq_connect(k->sock, ep))
		goto retry;
	len = ember__request__get_packed_size(&req);
	buf = malloc(len ? len : 1);
	if (!buf)
		goto retry;
	ember__request__pack(&req, buf);
	if (zmq_send(k->sock, buf, len, ZMQ_DONTWAIT) < 0) {
		free(buf);
		goto retry;
	}
	free(buf);
	k->state = T_SUBMITTING;
	k->sock_deadline = mono + SUBMIT_TIMEOUT_MS;
	return;
retry:
	close_sock(k);
	k->next_try = mono + 1000;
	if (++k->tries >= SUBMIT_TRIES) {
		k->state = T_FAILED;
		b->c[SC_TASKS_FAILED]++;
		log_warn("OAP task %s: cannot reach analyzer %u", k->oap_task, shard__of(pid, b->analyzers));
	}
}

static void poll_submission(struct sw_backend *b, struct sw_task *k, uint64_t mono)
{
	zmq_pollitem_t it = { .socket = k->sock, .events = ZMQ_POLLIN };
	zmq_msg_t m;
	Ember__Reply *rep;

	if (zmq_poll(&it, 1, 0) <= 0 || !(it.revents & ZMQ_POLLIN)) {
		if (mono < k->sock_deadline)
			return;
		close_sock(k);
		k->state = T_SCHEDULED;
		k->next_try = mono + 1000;
		if (++k->tries >= SUBMIT_TRIES) {
			k->state = T_FAILED;
			b->c[SC_TASKS_FAILED]++;
			log_warn("OAP task %s: analyzer %u did not answer", k->oap_task, shard__of(k->pid, b->analyzers));
		}
		return;
	}
	zmq_msg_init(&m);
	if (zmq_msg_recv(&m, k->sock, ZMQ_DONTWAIT) < 0) {
		zmq_msg_close(&m);
		return;
	}
	rep = ember__reply__unpack(NULL, zmq_msg_size(&m), zmq_msg_data(&m));
	zmq_msg_close(&m);
	close_sock(k);
	if (!rep) {
		k->state = T_FAILED;
		b->c[SC_TASKS_FAILED]++;
		return;
	}
	if (rep->err == 0 || rep->err == -EEXIST) {
		/* EEXIST: started before this exporter restarted; adopt it */
		k->state = T_RUNNING;
		/* an adopted task's start comes with its next batch */
		k->profiling_start_ms = rep->task && rep->task->start_unix_ms ? (int64_t)rep->task->start_unix_ms : 0;
		b->c[SC_TASKS_STARTED]++;
		log_info("OAP task %s started on process %u as %s", k->oap_task, k->pid, k->ember_id);
	} else if (rep->err == -EOPNOTSUPP) {
		k->state = T_FAILED;
		b->c[SC_TASKS_UNSUPPORTED]++;
		if (!b->warned_offcpu) {
			log_warn("OAP task %s: %s", k->oap_task, rep->error && rep->error[0] ? rep->error : "not supported");
			b->warned_offcpu = true;
		}
	} else {
		k->state = T_FAILED;
		b->c[SC_TASKS_FAILED]++;
		log_warn("OAP task %s on process %u: %s", k->oap_task, k->pid,
			 rep->error && rep->error[0] ? rep->error : strerror(-rep->err));
	}
	ember__reply__free_unpacked(rep, NULL);
}

static void run_tasks(struct sw_backend *b, uint64_t mono)
{
	int64_t now = unix_ms();

	for (unsigned i = 0; i < b->n_tasks; i++) {
		struct sw_task *k = &b->tasks[i];
		if (k->state == T_SCHEDULED && now >= k->start_ms && mono >= k->next_try) {
			if (now >= k->end_ms) {
				k->state = T_DONE;
				continue;
			}
			submit_task(b, k, mono, now);
		} else if (k->state == T_SUBMITTING) {
			poll_submission(b, k, mono);
		}
	}
}

/* ---- backend ops ------------------------------------------------------------------------- */

static void sw_free(void *st);

static void *sw_init(const struct ember_config *cfg, char *err, size_t errlen)
{
	struct sw_backend *b = calloc(1, sizeof(*b));
	char host[128] = "localhost";
	struct grpc_client_opts go = { 0 };
	struct pf_opts po = { 0 };
	FILE *f;

	if (!b) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	b->cfg = cfg;
	b->tail = &b->head;
	b->conn = -1;
	b->cap_bytes = cfg->exporter.queue_size;
	b->analyzers = cfg->ember.analyzers > 0 ? (unsigned)cfg->ember.analyzers : 1;
	snprintf(b->addr, sizeof(b->addr), "%s", cfg->core.backend.addr);
	/* as Rover: a random UUID per start, sent as ebpfAgentID and roverInstanceId */
	f = fopen("/proc/sys/kernel/random/uuid", "re");
	if (!f || !fgets(b->agent_id, sizeof(b->agent_id), f)) {
		snprintf(b->agent_id, sizeof(b->agent_id), "ember-%d-%lld", (int)getpid(), (long long)unix_ms());
	}
	if (f)
		fclose(f);
	b->agent_id[strcspn(b->agent_id, "\n")] = 0;
	gethostname(host, sizeof(host) - 1);
	/* the agent's own meters: one service for the agents, one instance per host */
	if (cfg->core.cluster_name && cfg->core.cluster_name[0])
		snprintf(b->service, sizeof(b->service), "%.40s::ember-agent", cfg->core.cluster_name);
	else
		snprintf(b->service, sizeof(b->service), "ember-agent");
	snprintf(b->instance, sizeof(b->instance), "%.70s", host);

	po.proc_root = getenv("ROVER_HOST_PROC_MAPPING");
	po.mode = cfg->process_discovery.scanner.mode == CONFIG_SCANNER_REGEX ? PF_MODE_REGEX : PF_MODE_AGENT_SENSOR;
	po.rules_yaml = cfg->process_discovery.scanner.regex;
	po.agent_refresh_ms = cfg->process_discovery.scanner.agent.process_status_refresh_period_ns / 1000000;
	po.instance_id = b->agent_id;
	b->pf = process_finder__new(&po, err, errlen);
	if (!b->pf)
		goto fail;

	go.target = cfg->core.backend.addr;
	go.tls = cfg->core.backend.enable_tls;
	go.ca_pem_path = cfg->core.backend.ca_pem_path;
	go.client_pem_path = cfg->core.backend.client_pem_path;
	go.client_key_path = cfg->core.backend.client_key_path;
	go.insecure_skip_verify = cfg->core.backend.insecure_skip_verify;
	go.authentication = cfg->core.backend.authentication;
	go.check_period_ms = (unsigned)cfg->core.backend.check_period * 1000;
	go.max_reconnect_backoff_ms = (unsigned)cfg->core.backend.check_period * 1000;
	go.max_pending = 16;
	b->gc = grpc_client__new(&go, err, errlen);
	if (!b->gc)
		goto fail;
	b->zctx = zmq_ctx_new();
	if (!b->zctx) {
		snprintf(err, errlen, "cannot create a ZeroMQ context");
		goto fail;
	}
	log_info("SkyWalking OAP %s (%s%s), agent id %s, process discovery %s", b->addr,
		 go.tls ? "TLS" : "plaintext", go.authentication && go.authentication[0] ? ", authentication" : "",
		 b->agent_id, po.mode == PF_MODE_REGEX ? "REGEX" : "AGENT_SENSOR");
	return b;
fail:
	sw_free(b);
	return NULL;
}

static void sw_on_profile(void *st, const Ember__ProfileBatch *pb)
{
	struct sw_backend *b = st;
	struct sw_task *k;
	struct sw_msgs m = { 0 };
	struct sw_profile_stats ps = { 0 };
	struct sw_profile_meta meta;

	if (!pb || !pb->task || !pb->task->id)
		return;
	k = task_by_ember_id(b, pb->task->id);
	if (!k) {
		if (pb->task->origin && !strcmp(pb->task->origin, "oap"))
			b->c[SC_PROFILE_UNKNOWN_TASK]++;
		return;	/* not an OAP task (cli, rest...) */
	}
	if (!k->profiling_start_ms)
		k->profiling_start_ms = pb->task->start_unix_ms ? (int64_t)pb->task->start_unix_ms : unix_ms();
	meta = (struct sw_profile_meta){
		.task_id = k->oap_task, .process_id = k->process_id,
		.profiling_start_ms = k->profiling_start_ms,
		.current_ms = unix_ms(), .off_cpu = k->target == SW_TARGET_OFF_CPU, .with_task = true,
	};
	if (sw_codec__build_profile(pb, &meta, &m, &ps)) {
		b->c[SC_DROPPED_BATCHES]++;
		sw_msgs__release(&m);
		return;
	}
	enqueue(b, I_PROFILE, &m);
}

static void sw_on_task_event(void *st, const Ember__TaskEvent *ev)
{
	struct sw_backend *b = st;
	struct sw_task *k;

	if (!ev || !ev->task || !ev->task->id || !(k = task_by_ember_id(b, ev->task->id)))
		return;
	if (ev->state == EMBER__TASK_EVENT__STATE__FINISHED) {
		k->state = T_DONE;
		log_info("OAP task %s on process %u finished", k->oap_task, k->pid);
	} else if (ev->state == EMBER__TASK_EVENT__STATE__FAILED) {
		k->state = T_FAILED;
		b->c[SC_TASKS_FAILED]++;
		log_warn("OAP task %s on process %u failed: %s", k->oap_task, k->pid, ev->error ? ev->error : "");
	} else if (ev->state == EMBER__TASK_EVENT__STATE__STARTED && ev->task->start_unix_ms) {
		/* the submission's reply moves the state; this may come first */
		k->profiling_start_ms = (int64_t)ev->task->start_unix_ms;
	}
	if (k->state == T_DONE || k->state == T_FAILED)
		close_sock(k);
}

static void sw_on_meters(void *st, const Ember__MeterBatch *mb, uint32_t analyzer)
{
	struct sw_backend *b = st;
	struct sw_meter_opts o = {
		.service = b->service, .instance = b->instance,
		.net_prefix = b->cfg->profiling.task.network.meter_prefix,
		.con_prefix = b->cfg->profiling.continuous.meter_prefix,
	};
	struct sw_meter_stats ms = { 0 };
	struct sw_msgs m = { 0 };
	int r;

	(void)analyzer;	/* analyzers label their meters themselves */
	r = sw_codec__build_meters(mb, &o, unix_ms(), &m, &ms);
	if (r < 0) {
		b->c[SC_DROPPED_BATCHES]++;
		sw_msgs__release(&m);
		return;
	}
	b->c[SC_METERS_SENT] += ms.meters;
	enqueue(b, I_METERS, &m);
}

static void handle_results(struct sw_backend *b, uint64_t mono)
{
	struct grpc_result res;

	while (grpc_client__poll(b->gc, &res) == 1) {
		enum cookie_kind kind = (enum cookie_kind)(res.cookie >> 56);
		bool transport = res.status == 14 /* UNAVAILABLE */ || res.status == 4 /* DEADLINE_EXCEEDED */ ||
				 res.status == GRPC_CLIENT_LOCAL_ERROR;

		if (res.status == 0) {
			b->c[SC_RPC_OK]++;
			set_conn(b, 1, NULL);
		} else {
			b->c[SC_RPC_FAILED]++;
			if (transport) {
				set_conn(b, 0, res.details);
			} else if (strcmp(b->last_err, res.details)) {
				/* the OAP answered but refused: say so once per distinct reason */
				log_warn("SkyWalking OAP refused a call (status %d): %s", res.status, res.details);
				snprintf(b->last_err, sizeof(b->last_err), "%s", res.details);
			}
		}
		switch (kind) {
		case C_REPORT: report_done(b, &res); break;
		case C_KEEPALIVE: b->keepalive_busy = false; break;
		case C_QUERY: query_done(b, &res); break;
		case C_UPLOAD: upload_done(b, &res, mono); break;
		}
		grpc_client__result_release(&res);
	}
	if (grpc_client__connectivity(b->gc) == GRPC_CONN_DOWN)
		set_conn(b, 0, "connection failed");
}

static void sw_tick(void *st, uint64_t now_ms, int final)
{
	struct sw_backend *b = st;
	uint64_t mono = mono_ms();
	uint64_t hb = b->cfg->process_discovery.heartbeat_period_ns / 1000000;
	uint64_t ci = b->cfg->profiling.check_interval_ns / 1000000;

	(void)now_ms;
	handle_results(b, mono);
	if (!final && mono >= b->next_heartbeat) {
		struct pf_stats ps;
		bool all;
		/* on the period's grid, not tick time plus period, so ticks do not add up */
		b->next_heartbeat = b->next_heartbeat && b->next_heartbeat + hb > mono ? b->next_heartbeat + hb : mono + hb;
		if (process_finder__scan(b->pf) >= 0) {
			all = ++b->heartbeats % (uint64_t)b->cfg->process_discovery.properties_report_period == 0;
			report_processes(b, all);
		}
		process_finder__stats(b->pf, &ps);
		b->c[SC_FINDER_UNREADABLE] = ps.unreadable;
	}
	if (!final && b->cfg->profiling.active && mono >= b->next_query) {
		b->next_query = b->next_query && b->next_query + ci > mono ? b->next_query + ci : mono + ci;
		query_tasks(b);
	}
	run_tasks(b, mono);
	start_upload(b, mono);
	if (final) {
		/* give what is buffered a few seconds to leave, without retry backoff */
		uint64_t until = mono + 3000;
		b->retry_at = 0;
		while (mono_ms() < until && (b->head || b->upload_busy)) {
			struct timespec ts = { 0, 50 * 1000000 };
			handle_results(b, mono_ms());
			if (!b->upload_busy && b->retry_at > mono_ms())
				break;	/* the OAP is not there: what is left is dropped */
			start_upload(b, mono_ms());
			nanosleep(&ts, NULL);
		}
	}
}

static int sw_event_fd(void *st)
{
	struct sw_backend *b = st;

	return b->gc ? grpc_client__event_fd(b->gc) : -1;
}

static unsigned sw_counters(void *st, struct backend_counter *ret, unsigned max)
{
	struct sw_backend *b = st;
	unsigned n = 0;

	for (unsigned i = 0; i < SC_MAX && n < max; i++)
		ret[n++] = (struct backend_counter){ sc_names[i], b->c[i] };
	return n;
}

static void sw_free(void *st)
{
	struct sw_backend *b = st;

	if (!b)
		return;
	for (unsigned i = 0; i < b->n_tasks; i++)
		close_sock(&b->tasks[i]);
	grpc_client__free(b->gc);
	while (b->head) {
		struct item *it = b->head;
		b->head = it->next;
		item_free(it);
	}
	while (b->inflight) {
		struct item *it = b->inflight;
		b->inflight = it->next;
		item_free(it);
	}
	process_finder__free(b->pf);
	if (b->zctx)
		zmq_ctx_term(b->zctx);
	free(b);
}

const struct exporter_backend_ops skywalking_backend_ops = {
	.name = "skywalking",
	.init = sw_init,
	.on_profile = sw_on_profile,
	.on_task_event = sw_on_task_event,
	.on_meters = sw_on_meters,
	.tick = sw_tick,
	.event_fd = sw_event_fd,
	.counters = sw_counters,
	.free = sw_free,
};
