/*
 * The SkyWalking backend's state, shared by its files:
 *   backend.c    the backend ops, gRPC results, the connection state
 *   outbox.c     profiling data and meters waiting for the OAP (bounded FIFO, uploads)
 *   processes.c  reportProcesses / keepAlive of the host's processes
 *   tasks.c      queryTasks, and the OAP's tasks run by the analyzers
 *   network.c    NETWORK tasks' batches -> Rover's meters (exporter/net_meters.h)
 *   sampled.c    their sampled HTTP traces -> LogData and SpanAttachedEvents
 *   policies.c   continuous profiling: queryPolicies, reportProfilingTask, rover_con_p_* meters
 * Internal to exporter/skywalking/; the exporter sees only backend.h's ops.
 */
#ifndef EMBER_EXPORTER_SKYWALKING_SW_H
#define EMBER_EXPORTER_SKYWALKING_SW_H

#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"
#include "common/process_finder.h"
#include "common/task_cause.h"
#include "exporter/backend.h"
#include "exporter/net_meters.h"
#include "exporter/skywalking/codec.h"
#include "exporter/skywalking/grpc_client.h"
#include "proto/sw_meter.pb-c.h"
#include "proto/sw_process.pb-c.h"
#include "proto/sw_profile.pb-c.h"

#define M_REPORT    "/skywalking.v3.EBPFProcessService/reportProcesses"
#define M_KEEPALIVE "/skywalking.v3.EBPFProcessService/keepAlive"
#define M_QUERY     "/skywalking.v3.EBPFProfilingService/queryTasks"
#define M_PROFILE   "/skywalking.v3.EBPFProfilingService/collectProfilingData"
#define M_METERS    "/skywalking.v3.MeterReportService/collectBatch"
#define M_LOGS      "/skywalking.v3.LogReportService/collect"
#define M_EVENTS    "/skywalking.v3.SpanAttachedEventReportService/collect"
#define M_POLICIES  "/skywalking.v3.ContinuousProfilingService/queryPolicies"
#define M_REPORT_TASK "/skywalking.v3.ContinuousProfilingService/reportProfilingTask"

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
#define SW_MAX_POLICIES   64	/* services with a continuous-profiling policy (= CP_MAX_POLICIES) */
#define SW_MAX_TRIGGERS   16	/* reportProfilingTask calls in flight */

enum cookie_kind { C_REPORT = 1, C_KEEPALIVE, C_QUERY, C_UPLOAD, C_POLICIES, C_REPORT_TASK };

/* I_METERS: the agent's own meters, cumulative (a newer batch supersedes an
 * older one); I_NET_METERS: network meters, increments (each one counts);
 * I_NET_LOGS: sampled traces' LogData, one stream per service (key);
 * I_NET_EVENTS: their SpanAttachedEvents. */
enum item_kind { I_PROFILE, I_METERS, I_NET_METERS, I_NET_LOGS, I_NET_EVENTS, I_MAX };
struct item {
	struct item *next;
	enum item_kind kind;
	char key[SW_NAME_MAX + 1];	/* items of a kind share a stream only with the same key */
	bool dropped;		/* in flight, but given up to make room: not put back on failure */
	struct sw_msgs m;
};

enum task_state { T_SCHEDULED, T_SUBMITTING, T_RUNNING, T_DONE, T_FAILED };

/* Why a continuous-profiling policy started a task (Ember TriggerCause). */

/* A service's policy as the OAP sent it: its ServiceWithPolicyJSON entry. */
struct sw_policy {
	char service[SW_NAME_MAX + 1];
	char uuid[80];
	char *json;
};

/* The PolicySet's push to one analyzer (policies.c). */
struct sw_policy_push {
	void *sock;		/* REQ socket of the push in flight; NULL: none */
	uint64_t deadline;	/* monotonic ms: no answer by then is a timeout */
	bool answered;		/* it answered the latest set pushed */
};

/* A reportProfilingTask in flight: the task to start under the id the OAP answers. */
struct sw_pending_trigger {
	bool busy;			/* reportProfilingTask in flight */
	bool gathering;			/* NETWORK: the instance's other triggers awaited until gather_until_ms */
	int64_t gather_until_ms;	/* monotonic */
	int rank;			/* 2 mesh-application, 1 k8s-service, 0 other (Rover's main process) */
	char instance_key[2 * PF_NAME_MAX + 2];	/* service/instance */
	uint32_t pid;
	Ember__TaskKind kind;
	uint64_t duration_ms;
	char process_id[SW_MAX_ID];
	struct task_cause causes[8];
	unsigned n_causes;
	char uris[8][SW_MAX_URI_REGEX];	/* NETWORK: the sampling regexes reported */
	unsigned n_uris;
};
/*
 * One analyzer's part of an OAP task.  ON_CPU and OFF_CPU tasks name one
 * process: one part.  A NETWORK task covers its instance's processes: one
 * part per analyzer owning some of them, all under one ember id (the
 * exporter joins their ends).
 */
struct sw_task {
	char ember_id[64];
	char oap_task[SW_MAX_ID];
	char process_id[SW_MAX_ID];	/* the first process of the task */
	uint32_t pid;			/* = pids[0] */
	uint32_t pids[SW_MAX_PROCESS_IDS];
	unsigned n_pids;
	unsigned shard, shards;		/* this part's analyzer; how many run the task */
	unsigned gen;			/* NETWORK: runs so far (the OAP extends a task by issuing it again) */
	enum sw_target target;
	struct sw_sampling *samplings;	/* NETWORK: the OAP's NetworkSamplings (owned; NULL: none) */
	unsigned n_samplings;
	int64_t update_ms, start_ms, end_ms, profiling_start_ms;
	enum task_state state;
	void *sock;		/* REQ socket of a submission in progress */
	uint64_t sock_deadline, next_try;
	unsigned tries;
	struct task_cause *causes;	/* a continuous-profiling trigger's (owned); NULL: an OAP task */
	unsigned n_causes;
};

struct report_ref { uint32_t pid; uint64_t start_ticks; };

enum sc {
	SC_RPC_OK, SC_RPC_FAILED, SC_DISCONNECTS, SC_PROC_REPORTED, SC_PROC_IGNORED, SC_TASKS_RECEIVED,
	SC_TASKS_STARTED, SC_TASKS_UNSUPPORTED, SC_TASKS_FAILED, SC_COMMANDS_INVALID, SC_PROFILE_MESSAGES,
	SC_PROFILE_UNKNOWN_TASK, SC_DROPPED_BATCHES, SC_DROPPED_BYTES, SC_METERS_SENT, SC_FINDER_UNREADABLE,
	SC_NET_FLOWS, SC_NET_FLOWS_UNKNOWN, SC_NET_METERS, SC_NET_LEFT_OUT, SC_NET_PIDS_LEFT_OUT,
	SC_TASKS_BAD_SAMPLINGS, SC_NET_SAMPLED, SC_NET_SAMPLED_UNKNOWN, SC_NET_SAMPLED_BAD, SC_NET_SAMPLED_NOT_KEPT,
	SC_NET_SPAN_EVENTS, SC_NET_CONTENT_CUT, SC_POLICIES_RECEIVED, SC_POLICIES_INVALID, SC_TRIGGERS_REPORTED,
	SC_TRIGGERS_DROPPED, SC_CON_METERS, SC_TRIGGERS_SILENCED, SC_NET_SAMPLED_NO_TRACE, SC_NET_SAMPLED_BAD_TRACE,
	SC_POLICY_PUSH_TIMEOUTS, SC_MAX
};
extern const char *const sw_counter_names[SC_MAX];

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

	/* continuous profiling (policies.c) */
	struct sw_policy policies[SW_MAX_POLICIES];
	unsigned n_policies;
	bool policy_busy, pushed_once;
	uint64_t pushed_hash, policy_queries;
	struct sw_policy_push *push;	/* one per analyzer, from the first push on */
	uint64_t push_hash;		/* the set of the latest push */
	struct sw_pending_trigger triggers[SW_MAX_TRIGGERS];
	/* NETWORK triggers' silence per service instance (Rover's dimension) */
	struct { char key[2 * SW_NAME_MAX + 2]; int64_t start_ms; } net_silence[SW_MAX_POLICIES];
	unsigned n_net_silence;

	int conn;			/* -1 unknown, 0 down, 1 up */
	bool kicked;			/* down, and the channel came back: the backlog was retried at once */
	char last_err[200];
	bool warned_network, warned_offcpu, warned_bad, warned_untraced;
	uint64_t c[SC_MAX];
	struct net_meter_set *net_set;	/* one flow's meters, reused */
};

/* outbox.c */
void sw_enqueue(struct sw_backend *b, enum item_kind kind, struct sw_msgs *m);
/* The same, for a stream of its own per key (a service's logs). */
void sw_enqueue_keyed(struct sw_backend *b, enum item_kind kind, const char *key, struct sw_msgs *m);
void sw_item_free(struct item *it);
void sw_start_upload(struct sw_backend *b, uint64_t now);
void sw_upload_done(struct sw_backend *b, const struct grpc_result *res, uint64_t now);
/* processes.c */
int sw_pack_into(const ProtobufCMessage *msg, struct grpc_msg **ret);
void sw_report_done(struct sw_backend *b, const struct grpc_result *res);
void sw_report_processes(struct sw_backend *b, bool all);
/* tasks.c */
void sw_close_sock(struct sw_task *k);
/* Closes its socket and frees its rules: the slot may be forgotten. */
void sw_task_release(struct sw_task *k);
void sw_query_done(struct sw_backend *b, const struct grpc_result *res);
void sw_query_tasks(struct sw_backend *b);
void sw_run_tasks(struct sw_backend *b, uint64_t mono);
struct sw_task *sw_task_by_ember_id(struct sw_backend *b, const char *id);
/* The joined event of one of our tasks: every part of it follows. */
void sw_task_event(struct sw_backend *b, const Ember__TaskEvent *ev);
/* A NETWORK task whose parts are done while the OAP's window is open: its next run. */
void sw_task_restart(struct sw_backend *b, const char *oap_task, int64_t now);
/* A triggered NETWORK task under the OAP's task id: every reported process of p's instance. */
void sw_network_trigger_task(struct sw_backend *b, const char *task_id, struct pf_process *p, int64_t now,
			     int64_t duration_ms, const struct sw_sampling *rules, unsigned n_rules,
			     const struct task_cause *causes, unsigned n_causes);
/* A free task slot (zeroed by the caller), NULL when every one is taken by a live task. */
struct sw_task *sw_new_task(struct sw_backend *b);
/* policies.c */
void sw_query_policies(struct sw_backend *b);
void sw_policies_done(struct sw_backend *b, const struct grpc_result *res);
void sw_push_policies(struct sw_backend *b, bool force);
/* Takes the analyzers' answers to the push, counts those past their time; never waits. */
void sw_policies_tick(struct sw_backend *b, uint64_t mono);
/* Closes the pushes in flight (before the ZeroMQ context is terminated). */
void sw_policies_free(struct sw_backend *b);
void sw_on_trigger(void *st, const Ember__TriggerRequest *tr, uint32_t analyzer);
/* How long a NETWORK trigger waits for the other processes of its instance (analyzers check apart). */
#define SW_TRIGGER_GATHER_MS 1500
void sw_triggers_tick(struct sw_backend *b, uint64_t mono);
void sw_report_task_done(struct sw_backend *b, const struct grpc_result *res);
void sw_on_monitors(void *st, const Ember__MonitorBatch *mb, uint32_t analyzer);
/* network.c */
void sw_network_batch(struct sw_backend *b, const Ember__NetworkBatch *nb);
/* sampled.c: the batch's sampled traces -> LogData per service, SpanAttachedEvents */
void sw_network_sampled(struct sw_backend *b, const Ember__NetworkBatch *nb);
/* backend.c: logs each change of the OAP's reachability once */
void sw_set_conn(struct sw_backend *b, int up, const char *why);

#endif
