/*
 * The `skywalking` backend: talks to a SkyWalking OAP the way Apache
 * SkyWalking Rover does (../shared/spec/skywalking-protocol.md).
 *
 *   every heartbeat_period   rescan host processes (common/process_finder),
 *                            reportProcesses the new ones (all of them every
 *                            properties_report_period-th time), keepAlive the rest
 *   every check_interval     queryTasks(agent id, latest update time seen); ON_CPU
 *                            and OFF_CPU tasks are submitted to the analyzer that
 *                            owns each pid, a NETWORK task to every analyzer owning
 *                            some of its instance's processes (Request.submit over
 *                            ZeroMQ, without waiting: the reply is polled on later
 *                            ticks)
 *   on_profile               a batch of an OAP task -> one collectProfilingData
 *                            stream's worth of EBPFProfilingData (skywalking/codec)
 *   on_network               a NETWORK task's batch -> Rover's network meters, one
 *                            MeterDataCollection per local instance (skywalking/network.c);
 *                            its sampled HTTP traces -> LogData, one stream per service,
 *                            and SpanAttachedEvents (skywalking/sampled.c)
 *   on_meters                -> one MeterDataCollection for collectBatch
 *
 * Transport (skywalking/grpc_client): gRPC lives on its own thread; these files
 * run on the exporter's loop and only queues calls and polls results, so an
 * OAP that is down, slow or restarting never blocks the loop.  Profiling data,
 * meters, logs and span events wait in one FIFO bounded by exporter.queue_size
 * bytes (the oldest entries are dropped and counted when it is full), and are
 * sent one call at a time with exponential backoff after a failure.  Process reports, keep-alives
 * and task queries are periodic: a failed one is simply done again next period,
 * as Rover does.  The connection state is logged once per change.
 *
 * This file holds the backend's ops; sw.h lists what the others hold.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "exporter/skywalking/sw.h"

_Static_assert(SC_MAX <= MAX_BACKEND_COUNTERS, "every SkyWalking counter fits what counters() may fill");
const char *const sw_counter_names[SC_MAX] = {
	"skywalking_rpc_ok", "skywalking_rpc_failed", "skywalking_disconnects", "skywalking_processes_reported",
	"skywalking_processes_ignored", "skywalking_tasks_received", "skywalking_tasks_started",
	"skywalking_tasks_not_supported", "skywalking_tasks_failed", "skywalking_commands_invalid",
	"skywalking_profile_messages", "skywalking_profile_unknown_task", "skywalking_queue_dropped_batches",
	"skywalking_queue_dropped_bytes", "skywalking_meters_sent", "skywalking_finder_unreadable",
	"skywalking_network_flows", "skywalking_network_flows_unknown_process", "skywalking_network_meters",
	"skywalking_network_meters_left_out", "skywalking_network_pids_left_out", "skywalking_tasks_bad_samplings",
	"skywalking_network_sampled_traces", "skywalking_network_sampled_unknown_process",
	"skywalking_network_sampled_bad", "skywalking_network_sampled_not_kept", "skywalking_network_span_events",
	"skywalking_network_span_event_content_cut", "skywalking_policies_received", "skywalking_policies_invalid",
	"skywalking_triggers_reported", "skywalking_triggers_dropped", "skywalking_continuous_meters",
	"skywalking_triggers_instance_silenced", "skywalking_network_sampled_no_trace_context",
	"skywalking_network_sampled_bad_trace_context", "skywalking_policy_push_timeouts",
};

void sw_set_conn(struct sw_backend *b, int up, const char *why)
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
		b->kicked = false;
	}
	b->conn = up;
}

/* ---- backend ops ------------------------------------------------------------------------- */

static void sw_free(void *st);

static void *sw_init(const struct ember_config *cfg, char *err, size_t errlen)
{
	struct sw_backend *b = calloc(1, sizeof(*b));
	char host[128] = "localhost";
	struct grpc_client_opts go = { 0 };
	struct pf_opts po = { 0 };
	const struct passwd *pw;
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
	b->net_set = malloc(sizeof(*b->net_set));
	if (!b->net_set) {
		snprintf(err, errlen, "out of memory");
		free(b);
		return NULL;
	}
	snprintf(b->addr, sizeof(b->addr), "%s", cfg->core.backend.addr);
	/* as Rover: a random UUID per start, sent as ebpfAgentID and roverInstanceId */
	f = fopen("/proc/sys/kernel/random/uuid", "re");
	if (!f || !fgets(b->agent_id, sizeof(b->agent_id), f)) {
		snprintf(b->agent_id, sizeof(b->agent_id), "ember-%d-%lld", (int)getpid(), (long long)(int64_t)timeutil__unix_ms());
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
	/* ember's own processes (this one's user, the analyzers') are never targets: not offered to the OAP */
	po.never_uids[0] = (uint32_t)getuid();
	if (cfg->ember.user && (pw = getpwnam(cfg->ember.user)))
		po.never_uids[1] = (uint32_t)pw->pw_uid;
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
	/* An OAP back after an outage is connected to within a second (an attempt a second costs nothing). */
	go.max_reconnect_backoff_ms = 1000;
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
	k = sw_task_by_ember_id(b, pb->task->id);
	if (!k) {
		if (pb->task->origin && !strcmp(pb->task->origin, "oap"))
			b->c[SC_PROFILE_UNKNOWN_TASK]++;
		return;	/* not an OAP task (cli, rest...) */
	}
	if (!k->profiling_start_ms)
		k->profiling_start_ms = pb->task->start_unix_ms ? (int64_t)pb->task->start_unix_ms : (int64_t)timeutil__unix_ms();
	meta = (struct sw_profile_meta){
		.task_id = k->oap_task, .process_id = k->process_id,
		.profiling_start_ms = k->profiling_start_ms,
		.current_ms = (int64_t)timeutil__unix_ms(), .off_cpu = k->target == SW_TARGET_OFF_CPU, .with_task = true,
	};
	if (sw_codec__build_profile(pb, &meta, &m, &ps)) {
		b->c[SC_DROPPED_BATCHES]++;
		sw_msgs__release(&m);
		return;
	}
	sw_enqueue(b, I_PROFILE, &m);
}

static void sw_on_task_event(void *st, const Ember__TaskEvent *ev)
{
	struct sw_backend *b = st;

	if (ev && ev->task && ev->task->id)
		sw_task_event(b, ev);
}

static void sw_on_network(void *st, const Ember__NetworkBatch *nb)
{
	struct sw_backend *b = st;

	if (!nb || !nb->task || !nb->task->id)
		return;
	if (!sw_task_by_ember_id(b, nb->task->id)) {
		if (nb->task->origin && !strcmp(nb->task->origin, "oap"))
			b->c[SC_PROFILE_UNKNOWN_TASK]++;
		return;	/* not an OAP task (cli, rest...) */
	}
	sw_network_batch(b, nb);
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
	r = sw_codec__build_meters(mb, &o, (int64_t)timeutil__unix_ms(), &m, &ms);
	if (r < 0) {
		b->c[SC_DROPPED_BATCHES]++;
		sw_msgs__release(&m);
		return;
	}
	b->c[SC_METERS_SENT] += ms.meters;
	sw_enqueue(b, I_METERS, &m);
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
			sw_set_conn(b, 1, NULL);
		} else {
			b->c[SC_RPC_FAILED]++;
			if (transport) {
				sw_set_conn(b, 0, res.details);
			} else if (strcmp(b->last_err, res.details)) {
				/* the OAP answered but refused: say so once per distinct reason */
				log_warn("SkyWalking OAP refused a call (status %d): %s", res.status, res.details);
				snprintf(b->last_err, sizeof(b->last_err), "%s", res.details);
			}
		}
		switch (kind) {
		case C_REPORT: sw_report_done(b, &res); break;
		case C_KEEPALIVE: b->keepalive_busy = false; break;
		case C_QUERY: sw_query_done(b, &res); break;
		case C_UPLOAD: sw_upload_done(b, &res, mono); break;
		case C_POLICIES: sw_policies_done(b, &res); break;
		case C_REPORT_TASK: sw_report_task_done(b, &res); break;
		}
		grpc_client__result_release(&res);
	}
	switch (grpc_client__connectivity(b->gc)) {
	case GRPC_CONN_DOWN:
		sw_set_conn(b, 0, "connection failed");
		break;
	case GRPC_CONN_UP:
		/* The channel is back: the backlog goes now, not after its backoff (once: a success says "connected"). */
		if (b->conn == 0 && !b->kicked) {
			b->kicked = true;
			b->backoff_ms = 0;
			b->retry_at = 0;
		}
		break;
	default:
		break;
	}
}

static void sw_tick(void *st, uint64_t now_ms, int final)
{
	struct sw_backend *b = st;
	uint64_t mono = timeutil__mono_ms();
	uint64_t hb = b->cfg->process_discovery.heartbeat_period_ns / 1000000;
	uint64_t ci = b->cfg->profiling.check_interval_ns / 1000000;

	(void)now_ms;
	handle_results(b, mono);
	sw_policies_tick(b, mono);
	sw_triggers_tick(b, mono);
	if (!final && mono >= b->next_heartbeat) {
		struct pf_stats ps;
		bool all;
		/* on the period's grid, not tick time plus period, so ticks do not add up */
		b->next_heartbeat = b->next_heartbeat && b->next_heartbeat + hb > mono ? b->next_heartbeat + hb : mono + hb;
		if (process_finder__scan(b->pf) >= 0) {
			all = ++b->heartbeats % (uint64_t)b->cfg->process_discovery.properties_report_period == 0;
			sw_report_processes(b, all);
		}
		process_finder__stats(b->pf, &ps);
		b->c[SC_FINDER_UNREADABLE] = ps.unreadable;
	}
	if (!final && b->cfg->profiling.active && mono >= b->next_query) {
		b->next_query = b->next_query && b->next_query + ci > mono ? b->next_query + ci : mono + ci;
		sw_query_tasks(b);
		/* after the task query, as Rover does; every sixth push goes out even unchanged */
		if (++b->policy_queries % 6 == 0)
			b->pushed_once = false;
		sw_query_policies(b);
	}
	sw_run_tasks(b, mono);
	sw_start_upload(b, mono);
	if (final) {
		/* give what is buffered a few seconds to leave, without retry backoff */
		uint64_t until = mono + 3000;
		b->retry_at = 0;
		while (timeutil__mono_ms() < until && (b->head || b->upload_busy)) {
			struct timespec ts = { 0, 50 * 1000000 };
			handle_results(b, timeutil__mono_ms());
			if (!b->upload_busy && b->retry_at > timeutil__mono_ms())
				break;	/* the OAP is not there: what is left is dropped */
			sw_start_upload(b, timeutil__mono_ms());
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
		ret[n++] = (struct backend_counter){ sw_counter_names[i], b->c[i], 0 };
	return n;
}

static void sw_free(void *st)
{
	struct sw_backend *b = st;

	if (!b)
		return;
	for (unsigned i = 0; i < b->n_tasks; i++)
		sw_task_release(&b->tasks[i]);
	sw_policies_free(b);
	grpc_client__free(b->gc);
	while (b->head) {
		struct item *it = b->head;
		b->head = it->next;
		sw_item_free(it);
	}
	while (b->inflight) {
		struct item *it = b->inflight;
		b->inflight = it->next;
		sw_item_free(it);
	}
	process_finder__free(b->pf);
	free(b->net_set);
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
	.on_network = sw_on_network,
	.on_trigger = sw_on_trigger,
	.on_monitors = sw_on_monitors,
	.tick = sw_tick,
	.event_fd = sw_event_fd,
	.counters = sw_counters,
	.free = sw_free,
};
