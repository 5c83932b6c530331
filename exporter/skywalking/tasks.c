/*
 * OAP tasks: queryTasks every check interval; ON_CPU and OFF_CPU tasks are
 * submitted to the analyzer that owns each pid, a NETWORK task to every
 * analyzer owning some of its processes (without waiting: the replies are
 * polled on later ticks).
 *
 * A NETWORK task, as Rover runs it (spec sections 4.3 and 4.5), covers the
 * processes of one service instance: the OAP lists them, every one must be
 * a process this agent reported, and the task takes every process this
 * agent reported for that instance (the list may predate a process).  Its
 * pids are split by analyzer (common/shard.h) into parts under one ember
 * id with Task.shards set, so the exporter joins their ends; batches come
 * every profiling.task.network.report_interval.  The OAP extends a running
 * network task by issuing it again with a later end: the parts keep running
 * and, when they end before the new end, the task starts again under the
 * next id for what is left.  Its ExtensionConfigJSON's sampling rules
 * (NetworkSamplings) go with every part: a task whose rules do not decode
 * (bad JSON, a URI regex regcomp refuses) is not started, and says why.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/bus.h"
#include "common/log.h"
#include "common/profile_kind.h"
#include "common/shard.h"
#include "common/timeutil.h"
#include "exporter/skywalking/sw.h"

static uint64_t fnv64(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

struct sw_task *sw_task_by_ember_id(struct sw_backend *b, const char *id)
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
			sw_task_release(&b->tasks[i]);
			memmove(&b->tasks[i], &b->tasks[i + 1], (b->n_tasks - i - 1) * sizeof(b->tasks[0]));
			return &b->tasks[b->n_tasks - 1];
		}
	return NULL;
}

struct sw_task *sw_new_task(struct sw_backend *b)
{
	return task_slot(b);
}

static void net_ember_id(char *buf, size_t len, const char *oap_task, unsigned gen)
{
	if (gen)
		snprintf(buf, len, "sw-%016llx-net%u", (unsigned long long)fnv64(oap_task), gen);
	else
		snprintf(buf, len, "sw-%016llx-net", (unsigned long long)fnv64(oap_task));
}

static bool has_pid(const uint32_t *pids, unsigned n, uint32_t pid)
{
	for (unsigned i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

/* The task's processes: those listed, then every other one reported for the same instance. */
static unsigned network_pids(struct sw_backend *b, const struct sw_task_cmd *t, struct pf_process *const *procs,
			     uint32_t *pids)
{
	unsigned n = 0, left_out = 0, count = process_finder__count(b->pf);

	for (unsigned i = 0; i < t->n_process_ids; i++)
		if (!has_pid(pids, n, procs[i]->pid))
			pids[n++] = procs[i]->pid;
	for (unsigned i = 0; i < count; i++) {
		const struct pf_process *p = process_finder__at(b->pf, i);
		bool same = false;

		if (p->status != PF_REPORTED || has_pid(pids, n, p->pid))
			continue;
		for (unsigned k = 0; k < t->n_process_ids && !same; k++)
			same = !strcmp(p->e.service, procs[k]->e.service) && !strcmp(p->e.instance, procs[k]->e.instance);
		if (!same)
			continue;
		if (n < SW_MAX_PROCESS_IDS)
			pids[n++] = p->pid;
		else
			left_out++;
	}
	if (left_out) {
		b->c[SC_NET_PIDS_LEFT_OUT] += left_out;
		if (!b->warned_network) {
			log_warn("OAP task %s: %u more processes of the instance than a network task takes (%d); left out",
				 t->task_id, left_out, SW_MAX_PROCESS_IDS);
			b->warned_network = true;
		}
	}
	return n;
}

/* One part per analyzer owning some of the pids, all under the task's ember id, each with the rules. */
static void network_parts(struct sw_backend *b, const struct sw_task_cmd *t, const uint32_t *pids, unsigned n,
			  const char *process_id, const struct sw_sampling *rules, unsigned n_rules)
{
	unsigned shards = 0;

	for (unsigned s = 0; s < b->analyzers; s++)
		for (unsigned i = 0; i < n; i++)
			if (shard__of(pids[i], b->analyzers) == s) {
				shards++;
				break;
			}
	for (unsigned s = 0; s < b->analyzers; s++) {
		struct sw_task *k;
		uint32_t mine[SW_MAX_PROCESS_IDS];
		unsigned m = 0;

		for (unsigned i = 0; i < n; i++)
			if (shard__of(pids[i], b->analyzers) == s)
				mine[m++] = pids[i];
		if (!m)
			continue;
		if (!(k = task_slot(b))) {
			b->c[SC_TASKS_FAILED]++;
			continue;
		}
		memset(k, 0, sizeof(*k));
		if (n_rules && !(k->samplings = malloc(n_rules * sizeof(*rules)))) {
			k->state = T_FAILED;	/* an empty slot, reused first */
			b->c[SC_TASKS_FAILED]++;
			continue;
		}
		if (n_rules)
			memcpy(k->samplings, rules, n_rules * sizeof(*rules));
		k->n_samplings = n_rules;
		net_ember_id(k->ember_id, sizeof(k->ember_id), t->task_id, 0);
		snprintf(k->oap_task, sizeof(k->oap_task), "%s", t->task_id);
		snprintf(k->process_id, sizeof(k->process_id), "%s", process_id);
		memcpy(k->pids, mine, m * sizeof(mine[0]));
		k->n_pids = m;
		k->pid = mine[0];
		k->shard = s;
		k->shards = shards;
		k->target = SW_TARGET_NETWORK;
		k->update_ms = t->update_time_ms;
		k->start_ms = t->start_time_ms;
		k->end_ms = t->start_time_ms + t->duration_s * 1000;
		k->state = T_SCHEDULED;
	}
}

static void network_task(struct sw_backend *b, const struct sw_task_cmd *t, struct pf_process *const *procs,
			 int64_t now, const char *ext_json)
{
	int64_t end = t->start_time_ms + t->duration_s * 1000;
	uint32_t pids[SW_MAX_PROCESS_IDS];
	struct sw_sampling rules[SW_MAX_SAMPLINGS];
	bool known = false, running = false;
	char why[160];
	int n_rules;
	unsigned n;

	for (unsigned i = 0; i < b->n_tasks; i++) {
		struct sw_task *k = &b->tasks[i];

		if (k->target != SW_TARGET_NETWORK || strcmp(k->oap_task, t->task_id))
			continue;
		known = true;
		running |= k->state == T_SCHEDULED || k->state == T_SUBMITTING || k->state == T_RUNNING;
		if (end > k->end_ms)
			k->end_ms = end;
	}
	if (known) {
		/* the OAP's keep-alive: the parts run on; ended ones start again if there is time left */
		if (!running && end > now + 1000)
			sw_task_restart(b, t->task_id, now);
		return;
	}
	if (now > end) {
		log_info("OAP task %s already ended; not started", t->task_id);
		return;
	}
	n_rules = sw_codec__decode_samplings(ext_json, rules, SW_MAX_SAMPLINGS, why, sizeof(why));
	if (n_rules < 0) {
		b->c[SC_TASKS_FAILED]++;
		b->c[SC_TASKS_BAD_SAMPLINGS]++;
		log_warn("OAP task %s: its sampling rules do not decode (%s); not started", t->task_id, why);
		return;
	}
	n = network_pids(b, t, procs, pids);
	network_parts(b, t, pids, n, t->process_ids[0], rules, (unsigned)n_rules);
	log_info("OAP task %s: network profiling of %u process(es) of %s/%s for %llds, %d sampling rule(s)%s",
		 t->task_id, n, procs[0]->e.service, procs[0]->e.instance, (long long)t->duration_s, n_rules,
		 t->start_time_ms > now ? " (scheduled)" : "");
}

void sw_network_trigger_task(struct sw_backend *b, const char *task_id, struct pf_process *p, int64_t now,
			     int64_t duration_ms, const struct sw_sampling *rules, unsigned n_rules,
			     const struct task_cause *causes, unsigned n_causes)
{
	struct sw_task_cmd t = { .n_process_ids = 1, .start_time_ms = now, .update_time_ms = now,
				 .duration_s = duration_ms / 1000, .target = SW_TARGET_NETWORK };
	struct pf_process *procs[1] = { p };
	uint32_t pids[SW_MAX_PROCESS_IDS];
	unsigned n;

	snprintf(t.task_id, sizeof(t.task_id), "%s", task_id);
	snprintf(t.process_ids[0], sizeof(t.process_ids[0]), "%s", p->oap_id);
	/* Rover's dimension: every process of the instance, in one task */
	n = network_pids(b, &t, procs, pids);
	network_parts(b, &t, pids, n, p->oap_id, rules, n_rules);
	for (unsigned i = 0; i < b->n_tasks; i++) {
		struct sw_task *k = &b->tasks[i];

		if (k->state != T_SCHEDULED || strcmp(k->oap_task, task_id) || k->causes || !n_causes)
			continue;
		if ((k->causes = malloc(n_causes * sizeof(*causes)))) {
			memcpy(k->causes, causes, n_causes * sizeof(*causes));
			k->n_causes = n_causes;
		}
	}
	log_info("continuous profiling: OAP task %s: network profiling of %u process(es) of %s/%s for %llds", task_id, n,
		 p->e.service, p->e.instance, (long long)(duration_ms / 1000));
}

/* The command's ExtensionConfigJSON (decode_task checked that there is one). */
static const char *ext_json_of(const Skywalking__V3__Command *cmd)
{
	for (size_t i = 0; i < cmd->n_args; i++)
		if (!strcmp(cmd->args[i]->key, "ExtensionConfigJSON"))
			return cmd->args[i]->value;
	return "null";
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
		network_task(b, &t, procs, now, ext_json_of(cmd));
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
		if ((k = sw_task_by_ember_id(b, id))) {
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
		k->pid = k->pids[0] = procs[i]->pid;
		k->n_pids = 1;
		k->shard = shard__of(k->pid, b->analyzers);
		k->shards = 1;
		k->target = t.target;
		k->update_ms = t.update_time_ms;
		k->start_ms = t.start_time_ms;
		k->end_ms = t.start_time_ms + t.duration_s * 1000;
		k->state = T_SCHEDULED;
		log_info("OAP task %s: %s profiling of process %u for %llds%s", t.task_id,
			 profile_kind__by_wire(sw_target__kind(t.target))->adjective, k->pid, (long long)t.duration_s,
			 t.start_time_ms > now ? " (scheduled)" : "");
	}
}

void sw_query_done(struct sw_backend *b, const struct grpc_result *res)
{
	Skywalking__V3__Commands *cs;
	int64_t now = (int64_t)timeutil__unix_ms();

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

void sw_query_tasks(struct sw_backend *b)
{
	Skywalking__V3__EBPFProfilingTaskQuery q = SKYWALKING__V3__EBPFPROFILING_TASK_QUERY__INIT;
	struct grpc_msg *m;

	if (b->query_busy)
		return;
	q.roverinstanceid = b->agent_id;
	q.latestupdatetime = b->latest_update;
	if (!sw_pack_into(&q.base, &m) && !grpc_client__call(b->gc, M_QUERY, m, 1, RPC_TIMEOUT_MS, (uint64_t)C_QUERY << 56))
		b->query_busy = true;
}

void sw_close_sock(struct sw_task *k)
{
	if (k->sock)
		zmq_close(k->sock);
	k->sock = NULL;
}

void sw_task_release(struct sw_task *k)
{
	sw_close_sock(k);
	free(k->samplings);
	k->samplings = NULL;
	k->n_samplings = 0;
	free(k->causes);
	k->causes = NULL;
	k->n_causes = 0;
}

/* Sends the Request without waiting; the reply is read by poll_submission(). */
static void submit_task(struct sw_backend *b, struct sw_task *k, uint64_t mono, int64_t now)
{
	Ember__Request req = EMBER__REQUEST__INIT;
	Ember__Task t = EMBER__TASK__INIT;
	Ember__NetSampling rules[SW_MAX_SAMPLINGS], *rulep[SW_MAX_SAMPLINGS];
	Ember__TriggerCause causes[8], *causep[8];
	char ep[512];
	int zero = 0;
	size_t len;
	uint8_t *buf;

	t.id = k->ember_id;
	t.kind = sw_target__kind(k->target);
	t.n_pids = k->n_pids;
	t.pids = k->pids;
	t.shards = k->shards;
	if (k->target == SW_TARGET_NETWORK)
		t.report_interval_ms = b->cfg->profiling.task.network.report_interval_ns / 1000000;
	for (unsigned i = 0; i < k->n_samplings && i < SW_MAX_SAMPLINGS; i++) {
		const struct sw_sampling *s = &k->samplings[i];

		ember__net_sampling__init(&rules[i]);
		rules[i].uri_regex = (char *)s->uri_regex;
		rules[i].has_min_duration = s->has_min_duration;
		rules[i].min_duration_ms = s->min_duration_ms;
		rules[i].when_4xx = s->when_4xx;
		rules[i].when_5xx = s->when_5xx;
		rules[i].complete_request = s->complete_request;
		rules[i].max_request_size = s->max_request_size;
		rules[i].complete_response = s->complete_response;
		rules[i].max_response_size = s->max_response_size;
		rulep[i] = &rules[i];
		t.n_samplings = i + 1;
	}
	t.samplings = rulep;
	/* the task ends when the OAP's window does: start + duration */
	t.duration_ms = (uint64_t)(k->end_ms - now > 1000 ? k->end_ms - now : 1000);
	t.origin = k->n_causes ? "trigger" : "oap";
	for (unsigned i = 0; i < k->n_causes && i < 8; i++) {
		task_cause__to_pb(&causes[i], &k->causes[i]);
		causep[i] = &causes[i];
		t.n_causes = i + 1;
	}
	t.causes = causep;
	req.body_case = EMBER__REQUEST__BODY_SUBMIT;
	req.submit = &t;
	bus__analyzer_endpoint(b->cfg->ember.run_dir, k->shard, ep, sizeof(ep));
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
	sw_close_sock(k);
	k->next_try = mono + 1000;
	if (++k->tries >= SUBMIT_TRIES) {
		k->state = T_FAILED;
		b->c[SC_TASKS_FAILED]++;
		log_warn("OAP task %s: cannot reach analyzer %u", k->oap_task, k->shard);
	}
}

static bool part_running(const struct sw_backend *b, const char *ember_id)
{
	for (unsigned i = 0; i < b->n_tasks; i++)
		if (b->tasks[i].state == T_RUNNING && !strcmp(b->tasks[i].ember_id, ember_id))
			return true;
	return false;
}

static void poll_submission(struct sw_backend *b, struct sw_task *k, uint64_t mono)
{
	zmq_pollitem_t it = { .socket = k->sock, .events = ZMQ_POLLIN };
	zmq_msg_t m;
	Ember__Reply *rep;

	if (zmq_poll(&it, 1, 0) <= 0 || !(it.revents & ZMQ_POLLIN)) {
		if (mono < k->sock_deadline)
			return;
		sw_close_sock(k);
		k->state = T_SCHEDULED;
		k->next_try = mono + 1000;
		if (++k->tries >= SUBMIT_TRIES) {
			k->state = T_FAILED;
			b->c[SC_TASKS_FAILED]++;
			log_warn("OAP task %s: analyzer %u did not answer", k->oap_task, k->shard);
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
	sw_close_sock(k);
	if (!rep) {
		k->state = T_FAILED;
		b->c[SC_TASKS_FAILED]++;
		return;
	}
	if (rep->err == 0 || rep->err == -EEXIST) {
		/* EEXIST: started before this exporter restarted; adopt it */
		/* a task on several analyzers counts once, when its first part starts */
		if (!part_running(b, k->ember_id))
			b->c[SC_TASKS_STARTED]++;
		k->state = T_RUNNING;
		/* an adopted task's start comes with its next batch */
		k->profiling_start_ms = rep->task && rep->task->start_unix_ms ? (int64_t)rep->task->start_unix_ms : 0;
		if (k->target == SW_TARGET_NETWORK)
			log_info("OAP task %s started on analyzer %u (%u process(es)) as %s", k->oap_task, k->shard,
				 k->n_pids, k->ember_id);
		else
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

void sw_run_tasks(struct sw_backend *b, uint64_t mono)
{
	int64_t now = (int64_t)timeutil__unix_ms();

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

void sw_task_restart(struct sw_backend *b, const char *oap_task, int64_t now)
{
	unsigned gen = 0, parts = 0;
	int64_t end = now;

	for (unsigned i = 0; i < b->n_tasks; i++)
		if (b->tasks[i].target == SW_TARGET_NETWORK && !strcmp(b->tasks[i].oap_task, oap_task) &&
		    b->tasks[i].gen + 1 > gen)
			gen = b->tasks[i].gen + 1;
	for (unsigned i = 0; i < b->n_tasks; i++) {
		struct sw_task *k = &b->tasks[i];

		if (k->target != SW_TARGET_NETWORK || strcmp(k->oap_task, oap_task) || k->gen + 1 != gen ||
		    k->state != T_DONE)
			continue;
		sw_close_sock(k);
		net_ember_id(k->ember_id, sizeof(k->ember_id), oap_task, gen);
		k->gen = gen;
		k->state = T_SCHEDULED;
		k->tries = 0;
		k->next_try = 0;
		k->profiling_start_ms = 0;
		end = k->end_ms;
		parts++;
	}
	if (parts) {
		char id[64];

		net_ember_id(id, sizeof(id), oap_task, gen);
		log_info("OAP task %s extended: network profiling goes on for %llds as %s", oap_task,
			 (long long)((end - now) / 1000), id);
	}
}

void sw_task_event(struct sw_backend *b, const Ember__TaskEvent *ev)
{
	int64_t now = (int64_t)timeutil__unix_ms();
	struct sw_task *k = sw_task_by_ember_id(b, ev->task->id);
	char oap_task[SW_MAX_ID];
	bool again = false;

	if (!k)
		return;
	snprintf(oap_task, sizeof(oap_task), "%s", k->oap_task);
	if (ev->state == EMBER__TASK_EVENT__STATE__FINISHED) {
		log_info("OAP task %s (%s) finished", k->oap_task, k->ember_id);
		/* the OAP moved the end while it ran: go on for what is left */
		again = k->target == SW_TARGET_NETWORK && k->end_ms > now + 1000;
	} else if (ev->state == EMBER__TASK_EVENT__STATE__FAILED) {
		b->c[SC_TASKS_FAILED]++;
		log_warn("OAP task %s (%s) failed: %s", k->oap_task, k->ember_id, ev->error ? ev->error : "");
	}
	/* the event is joined: it stands for every part of the task */
	for (unsigned i = 0; i < b->n_tasks; i++) {
		k = &b->tasks[i];
		if (strcmp(k->ember_id, ev->task->id))
			continue;
		if (ev->state == EMBER__TASK_EVENT__STATE__FINISHED)
			k->state = T_DONE;
		else if (ev->state == EMBER__TASK_EVENT__STATE__FAILED)
			k->state = T_FAILED;
		else if (ev->state == EMBER__TASK_EVENT__STATE__STARTED && ev->task->start_unix_ms)
			k->profiling_start_ms = (int64_t)ev->task->start_unix_ms; /* the reply may come later */
		if (k->state == T_DONE || k->state == T_FAILED)
			sw_close_sock(k);
	}
	if (again)
		sw_task_restart(b, oap_task, now);
}
