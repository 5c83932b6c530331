/*
 * Continuous profiling with the OAP (spec sections 4.6 and 5.2):
 *
 *   queryPolicies every check interval, after the task query, for the
 *   services of the processes this agent reported, each with the UUID of the
 *   policy held ("" for none); an entry whose UUID differs replaces the one
 *   held, an entry with UUID "" and no Profiling removes it.  The policies
 *   held and each service's reported processes go to every analyzer
 *   (PolicySet) when either changed, and every sixth check regardless (an
 *   analyzer restarted since has none).  The analyzers parse and validate
 *   the policies (common/cp_policy.h) and log what they ignore.
 *
 *   A TriggerRequest from an analyzer (an OAP policy's item held) becomes a
 *   reportProfilingTask for the process's entity, with its causes, the
 *   trigger's duration and the target; the TaskId of the OAP's
 *   ContinuousProfilingReportTask command names the task, which then runs as
 *   an OAP task does (tasks.c: submitted to the analyzer, its data uploaded
 *   under that id), with origin "trigger" and the causes.
 *
 *   The monitors' values (MonitorBatch) of processes under an OAP policy are
 *   sent as rover_con_p_* meters, one MeterDataCollection per (service,
 *   instance), every MeterData with the check's timestamp, labels
 *   process_name and layer (and uri first for HTTP monitors).
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "common/bus.h"
#include "common/log.h"
#include "common/shard.h"
#include "common/timeutil.h"
#include "exporter/skywalking/sw.h"
#include "proto/sw_continuous.pb-c.h"

static struct sw_policy *policy_of(struct sw_backend *b, const char *service)
{
	for (unsigned i = 0; i < b->n_policies; i++)
		if (!strcmp(b->policies[i].service, service))
			return &b->policies[i];
	return NULL;
}

static void policy_drop(struct sw_backend *b, struct sw_policy *p)
{
	unsigned i = (unsigned)(p - b->policies);

	free(p->json);
	memmove(p, p + 1, (b->n_policies - i - 1) * sizeof(*p));
	b->n_policies--;
}

/* Distinct services of the reported processes, at most max. */
static unsigned reported_services(struct sw_backend *b, const char **ret, unsigned max)
{
	unsigned n = 0, count = process_finder__count(b->pf);

	for (unsigned i = 0; i < count; i++) {
		const struct pf_process *p = process_finder__at(b->pf, i);
		bool seen = false;

		if (p->status != PF_REPORTED)
			continue;
		for (unsigned k = 0; k < n && !seen; k++)
			seen = !strcmp(ret[k], p->e.service);
		if (!seen && n < max)
			ret[n++] = p->e.service;
	}
	return n;
}

void sw_query_policies(struct sw_backend *b)
{
	Skywalking__V3__ContinuousProfilingPolicyQuery q = SKYWALKING__V3__CONTINUOUS_PROFILING_POLICY_QUERY__INIT;
	Skywalking__V3__ContinuousProfilingServicePolicyQuery e[SW_MAX_POLICIES], *ep[SW_MAX_POLICIES];
	const char *svc[SW_MAX_POLICIES];
	unsigned n = reported_services(b, svc, SW_MAX_POLICIES);
	struct grpc_msg *m;

	if (b->policy_busy)
		return;
	if (!n) {
		/* nothing reported: nothing monitored (Rover clears its cache) */
		while (b->n_policies)
			policy_drop(b, &b->policies[b->n_policies - 1]);
		sw_push_policies(b, false);
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		const struct sw_policy *p = policy_of(b, svc[i]);

		skywalking__v3__continuous_profiling_service_policy_query__init(&e[i]);
		e[i].servicename = (char *)svc[i];
		e[i].uuid = p ? (char *)p->uuid : "";
		ep[i] = &e[i];
	}
	q.n_policies = n;
	q.policies = ep;
	if (!sw_pack_into(&q.base, &m) &&
	    !grpc_client__call(b->gc, M_POLICIES, m, 1, RPC_TIMEOUT_MS, (uint64_t)C_POLICIES << 56))
		b->policy_busy = true;
}

/* One entry of ServiceWithPolicyJSON. */
static void apply_entry(struct sw_backend *b, struct json_object *o)
{
	struct json_object *name = NULL, *uuid = NULL, *prof = NULL;
	const char *svc, *id;
	struct sw_policy *p;

	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, "ServiceName", &name) ||
	    !json_object_is_type(name, json_type_string)) {
		b->c[SC_POLICIES_INVALID]++;
		return;
	}
	svc = json_object_get_string(name);
	id = json_object_object_get_ex(o, "UUID", &uuid) && json_object_is_type(uuid, json_type_string) ?
		     json_object_get_string(uuid) : "";
	json_object_object_get_ex(o, "Profiling", &prof);
	p = policy_of(b, svc);
	if (!id[0] && (!prof || json_object_is_type(prof, json_type_null))) {
		if (p) {
			log_info("continuous profiling: the OAP removed the policy of service '%s'", svc);
			policy_drop(b, p);
		}
		return;
	}
	if (p && !strcmp(p->uuid, id))
		return;
	if (strlen(svc) > SW_NAME_MAX || strlen(id) >= sizeof(p->uuid)) {
		b->c[SC_POLICIES_INVALID]++;
		return;
	}
	if (!p) {
		if (b->n_policies >= SW_MAX_POLICIES) {
			b->c[SC_POLICIES_INVALID]++;
			return;
		}
		p = &b->policies[b->n_policies++];
		memset(p, 0, sizeof(*p));
		snprintf(p->service, sizeof(p->service), "%s", svc);
	}
	free(p->json);
	p->json = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	snprintf(p->uuid, sizeof(p->uuid), "%s", id);
	b->c[SC_POLICIES_RECEIVED]++;
	log_info("continuous profiling: policy %s of service '%s' from the OAP", id, svc);
}

void sw_policies_done(struct sw_backend *b, const struct grpc_result *res)
{
	Skywalking__V3__Commands *cs;

	b->policy_busy = false;
	if (res->status)
		return;
	cs = skywalking__v3__commands__unpack(NULL, res->resp_len, res->resp);
	if (!cs) {
		b->c[SC_COMMANDS_INVALID]++;
		return;
	}
	for (size_t i = 0; i < cs->n_commands; i++) {
		const Skywalking__V3__Command *c = cs->commands[i];
		struct json_object *arr = NULL;

		if (!c->command || strcmp(c->command, "ContinuousProfilingPolicyQuery"))
			continue;
		for (size_t k = 0; k < c->n_args; k++) {
			const Skywalking__V3__KeyStringValuePair *a = c->args[k];

			if (!a->key || strcmp(a->key, "ServiceWithPolicyJSON") || !a->value)
				continue;
			if (sw_codec__json_parse(a->value, &arr) || !json_object_is_type(arr, json_type_array)) {
				b->c[SC_POLICIES_INVALID]++;
				if (arr)
					json_object_put(arr);
				arr = NULL;
				continue;
			}
			for (size_t j = 0; j < json_object_array_length(arr); j++)
				apply_entry(b, json_object_array_get_idx(arr, j));
			json_object_put(arr);
		}
	}
	skywalking__v3__commands__free_unpacked(cs, NULL);
	sw_push_policies(b, false);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const uint8_t *)p)[i]) * 1099511628211ull;
	return h;
}

/*
 * The push to the analyzers never waits on one: the PolicySet goes out on a
 * REQ socket per analyzer (bus__call_start) and sw_policies_tick, from the
 * backend's tick, takes the answers as they come.  An analyzer that has not
 * answered within POLICY_PUSH_TIMEOUT_MS is counted
 * (skywalking_policy_push_timeouts) and, like one that refused or could not
 * be reached, gets the set at the next push (the next check): the set counts
 * as delivered (pushed_hash) once every analyzer answered it.  A changed set
 * replaces a push still in flight; an unchanged one waits for it.
 */
#define POLICY_PUSH_TIMEOUT_MS 500	/* an analyzer answers at once */

static void push_close(struct sw_policy_push *p)
{
	if (p->sock)
		zmq_close(p->sock);
	p->sock = NULL;
}

/* Every analyzer answered the set of the latest push: it need not go again until it changes. */
static void push_settle(struct sw_backend *b)
{
	for (unsigned s = 0; s < b->analyzers; s++)
		if (b->push[s].sock || !b->push[s].answered)
			return;
	b->pushed_hash = b->push_hash;
	b->pushed_once = true;
}

static void push_send(struct sw_backend *b, const Ember__Request *req, uint64_t h, uint64_t mono)
{
	if (h != b->push_hash)
		for (unsigned s = 0; s < b->analyzers; s++)
			push_close(&b->push[s]);
	b->push_hash = h;
	for (unsigned s = 0; s < b->analyzers; s++) {
		struct sw_policy_push *p = &b->push[s];
		char ep[512];

		if (p->sock)
			continue;	/* the same set, on its way */
		p->answered = false;
		bus__analyzer_endpoint(b->cfg->ember.run_dir, s, ep, sizeof(ep));
		p->sock = bus__call_start(b->zctx, ep, req);
		p->deadline = mono + POLICY_PUSH_TIMEOUT_MS;
	}
}

void sw_policies_tick(struct sw_backend *b, uint64_t mono)
{
	bool answers = false;

	if (!b->push)
		return;
	for (unsigned s = 0; s < b->analyzers; s++) {
		struct sw_policy_push *p = &b->push[s];
		zmq_pollitem_t it = { .socket = p->sock, .events = ZMQ_POLLIN };
		Ember__Reply *rep;

		if (!p->sock)
			continue;
		if (zmq_poll(&it, 1, 0) <= 0 || !(it.revents & ZMQ_POLLIN)) {
			if (mono < p->deadline)
				continue;
			b->c[SC_POLICY_PUSH_TIMEOUTS]++;
			push_close(p);
			continue;
		}
		rep = bus__recv_reply(p->sock, ZMQ_DONTWAIT);
		if (!rep && errno == EAGAIN)
			continue;
		push_close(p);
		if (!rep)
			continue;	/* does not decode: sent again at the next push */
		p->answered = answers = true;
		if (rep->err)
			log_warn("continuous profiling: analyzer %u refused the OAP's policies: %s", s,
				 rep->error ? rep->error : "");
		ember__reply__free_unpacked(rep, NULL);
	}
	/* on an answer only: backend.c clears pushed_once to have an unchanged set pushed again */
	if (answers)
		push_settle(b);
}

void sw_policies_free(struct sw_backend *b)
{
	if (!b->push)
		return;
	for (unsigned s = 0; s < b->analyzers; s++)
		push_close(&b->push[s]);
	free(b->push);
	b->push = NULL;
}

/* The policies held and their services' processes, to every analyzer, when changed (or forced). */
void sw_push_policies(struct sw_backend *b, bool force)
{
	Ember__PolicySet ps = EMBER__POLICY_SET__INIT;
	Ember__PolicyProcesses pp[SW_MAX_POLICIES], *ppp[SW_MAX_POLICIES];
	uint32_t *pids[SW_MAX_POLICIES] = { 0 };
	unsigned count = process_finder__count(b->pf);
	size_t len = 3;
	char *json;
	uint64_t h = 1469598103934665603ull;

	if (!b->push && !(b->push = calloc(b->analyzers, sizeof(*b->push))))
		return;
	for (unsigned i = 0; i < b->n_policies; i++)
		len += strlen(b->policies[i].json ? b->policies[i].json : "") + 1;
	json = malloc(len);
	if (!json)
		return;
	strcpy(json, "[");
	for (unsigned i = 0; i < b->n_policies; i++) {
		if (!b->policies[i].json)
			continue;
		if (json[1])
			strcat(json, ",");
		strcat(json, b->policies[i].json);
	}
	strcat(json, "]");
	h = fnv(h, json, strlen(json));
	for (unsigned i = 0; i < b->n_policies; i++) {
		ember__policy_processes__init(&pp[i]);
		pp[i].service = b->policies[i].service;
		pids[i] = calloc(count ? count : 1, sizeof(uint32_t));
		if (!pids[i])
			goto done;
		for (unsigned k = 0; k < count; k++) {
			const struct pf_process *p = process_finder__at(b->pf, k);

			if (p->status == PF_REPORTED && !strcmp(p->e.service, b->policies[i].service))
				pids[i][pp[i].n_pids++] = p->pid;
		}
		pp[i].pids = pids[i];
		ppp[i] = &pp[i];
		h = fnv(h, pp[i].service, strlen(pp[i].service) + 1);
		h = fnv(h, pids[i], pp[i].n_pids * sizeof(uint32_t));
	}
	if (!force && h == b->pushed_hash && b->pushed_once)
		goto done;
	ps.json = json;
	ps.n_processes = b->n_policies;
	ps.processes = ppp;
	{
		Ember__Request req = EMBER__REQUEST__INIT;

		req.body_case = EMBER__REQUEST__BODY_POLICIES;
		req.policies = &ps;
		push_send(b, &req, h, timeutil__mono_ms());
	}
done:
	for (unsigned i = 0; i < b->n_policies; i++)
		free(pids[i]);
	free(json);
}

/* ---- triggers ------------------------------------------------------------------------------- */

static Skywalking__V3__ContinuousProfilingTriggeredMonitorType monitor_type(const char *m)
{
	static const char *const names[] = { "PROCESS_CPU", "PROCESS_THREAD_COUNT", "SYSTEM_LOAD", "HTTP_ERROR_RATE",
					     "HTTP_AVG_RESPONSE_TIME" };

	for (unsigned i = 0; i < 5; i++)
		if (m && !strcmp(m, names[i]))
			return (Skywalking__V3__ContinuousProfilingTriggeredMonitorType)i;
	return SKYWALKING__V3__CONTINUOUS_PROFILING_TRIGGERED_MONITOR_TYPE__ProcessCPU;
}

/*
 * A NETWORK trigger's dimension is the service instance: one task for all its
 * processes, silenced for silence_duration from its start, whichever of its
 * processes held first (each analyzer silences per process).  True when
 * silenced; otherwise the silence starts now.
 */
static bool net_silenced(struct sw_backend *b, const struct pf_process *p)
{
	int64_t now = (int64_t)timeutil__unix_ms();
	int64_t silence = (int64_t)(b->cfg->profiling.continuous.trigger.silence_duration_ns / 1000000);
	char key[sizeof(b->net_silence[0].key)];
	unsigned i, oldest = 0;

	snprintf(key, sizeof(key), "%s/%s", p->e.service, p->e.instance);
	for (i = 0; i < b->n_net_silence; i++) {
		if (!strcmp(b->net_silence[i].key, key)) {
			if (now - b->net_silence[i].start_ms < silence)
				return true;
			b->net_silence[i].start_ms = now;
			return false;
		}
		if (b->net_silence[i].start_ms < b->net_silence[oldest].start_ms)
			oldest = i;
	}
	i = b->n_net_silence < SW_MAX_POLICIES ? b->n_net_silence++ : oldest;
	snprintf(b->net_silence[i].key, sizeof(b->net_silence[i].key), "%s", key);
	b->net_silence[i].start_ms = now;
	return false;
}

/*
 * Rover's main process of a NETWORK trigger: the one labelled
 * mesh-application, else k8s-service, else the first that held.
 */
static int main_rank(const struct pf_process *p)
{
	int r = 0;

	for (unsigned i = 0; i < p->e.n_labels; i++)
		if (!strcmp(p->e.labels[i], "mesh-application"))
			r = 2;
		else if (!strcmp(p->e.labels[i], "k8s-service") && r < 1)
			r = 1;
	return r;
}

/* The trigger's task and causes into g (the process p reported). */
static void trigger_fill(struct sw_pending_trigger *g, const Ember__Task *t, const struct pf_process *p)
{
	memset(g, 0, sizeof(*g));
	g->pid = t->pids[0];
	g->kind = t->kind;
	g->duration_ms = t->duration_ms;
	g->rank = main_rank(p);
	snprintf(g->process_id, sizeof(g->process_id), "%s", p->oap_id);
	snprintf(g->instance_key, sizeof(g->instance_key), "%s/%s", p->e.service, p->e.instance);
	for (size_t i = 0; i < t->n_causes && g->n_causes < 8; i++)
		task_cause__from_pb(&g->causes[g->n_causes++], t->causes[i]);
}

/* reportProfilingTask for g: its process's names, its causes, the target. */
static void trigger_report(struct sw_backend *b, struct sw_pending_trigger *g)
{
	Skywalking__V3__ContinuousProfilingReport r = SKYWALKING__V3__CONTINUOUS_PROFILING_REPORT__INIT;
	Skywalking__V3__ContinuousProfilingCause causes[8], *cp[8];
	Skywalking__V3__ContinuousProfilingSingleValueCause sv[8];
	Skywalking__V3__ContinuousProfilingURICause uc[8];
	char *uris[8];
	unsigned n_uris = 0;
	Skywalking__V3__ContinuousOnCPUProfilingTask on = SKYWALKING__V3__CONTINUOUS_ON_CPUPROFILING_TASK__INIT;
	Skywalking__V3__ContinuousOffCPUProfilingTask off = SKYWALKING__V3__CONTINUOUS_OFF_CPUPROFILING_TASK__INIT;
	Skywalking__V3__ContinuousNetworkProfilingTask net = SKYWALKING__V3__CONTINUOUS_NETWORK_PROFILING_TASK__INIT;
	struct pf_process *p = process_finder__by_pid(b->pf, g->pid);
	struct grpc_msg *m;

	g->gathering = false;
	if (!p || p->status != PF_REPORTED || strcmp(p->oap_id, g->process_id)) {
		b->c[SC_TRIGGERS_DROPPED]++; /* gone while the instance's triggers were gathered */
		return;
	}
	for (unsigned n = 0; n < g->n_causes; n++) {
		struct task_cause *c = &g->causes[n];

		skywalking__v3__continuous_profiling_cause__init(&causes[n]);
		causes[n].type = monitor_type(c->monitor);
		if (causes[n].type >= SKYWALKING__V3__CONTINUOUS_PROFILING_TRIGGERED_MONITOR_TYPE__HTTPErrorRate) {
			/* HTTP: the item's URI (path) or regex; path "" for an item without a URI filter */
			skywalking__v3__continuous_profiling_uricause__init(&uc[n]);
			if (c->uri_is_regex) {
				uc[n].uri_case = SKYWALKING__V3__CONTINUOUS_PROFILING_URICAUSE__URI_REGEX;
				uc[n].regex = c->uri;
			} else {
				uc[n].uri_case = SKYWALKING__V3__CONTINUOUS_PROFILING_URICAUSE__URI_PATH;
				uc[n].path = c->uri;
			}
			uc[n].threshold = c->threshold;
			uc[n].current = c->current;
			causes[n].cause_case = SKYWALKING__V3__CONTINUOUS_PROFILING_CAUSE__CAUSE_URI;
			causes[n].uri = &uc[n];
			uris[n_uris++] = c->uri;
		} else {
			skywalking__v3__continuous_profiling_single_value_cause__init(&sv[n]);
			sv[n].threshold = c->threshold;
			sv[n].current = c->current;
			causes[n].cause_case = SKYWALKING__V3__CONTINUOUS_PROFILING_CAUSE__CAUSE_SINGLE_VALUE;
			causes[n].singlevalue = &sv[n];
		}
		cp[n] = &causes[n];
	}
	r.layer = p->e.layer;
	r.servicename = p->e.service;
	r.instancename = p->e.instance;
	r.processname = p->e.process;
	r.n_causes = g->n_causes;
	r.causes = cp;
	r.duration = (int32_t)(g->duration_ms / 1000);
	if (sw_target__of_kind(g->kind) == SW_TARGET_OFF_CPU) {
		r.target_task_case = SKYWALKING__V3__CONTINUOUS_PROFILING_REPORT__TARGET_TASK_OFF_CPU;
		r.offcpu = &off;
	} else if (sw_target__of_kind(g->kind) == SW_TARGET_NETWORK) {
		r.target_task_case = SKYWALKING__V3__CONTINUOUS_PROFILING_REPORT__TARGET_TASK_NETWORK;
		/* the URI causes' URIs as sampling regexes; one without a URI means every URI: [""] */
		for (unsigned i = 0; i < n_uris; i++)
			if (!uris[i][0]) {
				uris[0] = "";
				n_uris = 1;
			}
		net.n_samplinguriregexes = n_uris;
		net.samplinguriregexes = uris;
		for (unsigned i = 0; i < n_uris; i++)
			snprintf(g->uris[i], sizeof(g->uris[i]), "%s", uris[i]);
		g->n_uris = n_uris ? n_uris : 1; /* no URI cause: every URI */
		if (!n_uris)
			g->uris[0][0] = 0;
		r.network = &net;
	} else {
		r.target_task_case = SKYWALKING__V3__CONTINUOUS_PROFILING_REPORT__TARGET_TASK_ON_CPU;
		r.oncpu = &on;
	}
	if (sw_pack_into(&r.base, &m) ||
	    grpc_client__call(b->gc, M_REPORT_TASK, m, 1, RPC_TIMEOUT_MS,
			      ((uint64_t)C_REPORT_TASK << 56) | (uint64_t)(g - b->triggers))) {
		b->c[SC_TRIGGERS_DROPPED]++;
		return;
	}
	g->busy = true;
	b->c[SC_TRIGGERS_REPORTED]++;
}

void sw_on_trigger(void *st, const Ember__TriggerRequest *tr, uint32_t analyzer)
{
	struct sw_backend *b = st;
	const Ember__Task *t = tr ? tr->task : NULL;
	struct pf_process *p;
	struct sw_pending_trigger *g = NULL;

	(void)analyzer;
	if (!t || !t->n_pids) {
		b->c[SC_TRIGGERS_DROPPED]++;
		return;
	}
	p = process_finder__by_pid(b->pf, t->pids[0]);
	if (!p || p->status != PF_REPORTED || !p->oap_id[0]) {
		b->c[SC_TRIGGERS_DROPPED]++;
		log_warn("continuous profiling: pid %u held a policy but is not a process reported to the OAP; dropped",
			 t->pids[0]);
		return;
	}
	if (sw_target__of_kind(t->kind) == SW_TARGET_NETWORK) {
		char key[sizeof(g->instance_key)];

		/* Another process of the instance held within the gathering: the main process reports. */
		snprintf(key, sizeof(key), "%s/%s", p->e.service, p->e.instance);
		for (unsigned i = 0; i < SW_MAX_TRIGGERS; i++)
			if (b->triggers[i].gathering && !strcmp(b->triggers[i].instance_key, key)) {
				g = &b->triggers[i];
				b->c[SC_TRIGGERS_SILENCED]++;
				if (main_rank(p) > g->rank) {
					int64_t until = g->gather_until_ms;

					trigger_fill(g, t, p);
					g->gathering = true;
					g->gather_until_ms = until;
				}
				return;
			}
		if (net_silenced(b, p)) {
			b->c[SC_TRIGGERS_SILENCED]++;
			return; /* another process of the instance started its network task */
		}
	}
	for (unsigned i = 0; i < SW_MAX_TRIGGERS && !g; i++)
		if (!b->triggers[i].busy && !b->triggers[i].gathering)
			g = &b->triggers[i];
	if (!g) {
		b->c[SC_TRIGGERS_DROPPED]++;
		return;
	}
	trigger_fill(g, t, p);
	if (sw_target__of_kind(t->kind) != SW_TARGET_NETWORK) {
		trigger_report(b, g);
		return;
	}
	/*
	 * Rover judges all processes of an instance in one check; here each
	 * analyzer checks its own, so the instance's other triggers are waited
	 * for a moment to pick the main process among them.
	 */
	g->gathering = true;
	g->gather_until_ms = (int64_t)timeutil__mono_ms() + SW_TRIGGER_GATHER_MS;
}

/* The gathered NETWORK triggers whose moment has passed go to the OAP. */
void sw_triggers_tick(struct sw_backend *b, uint64_t mono)
{
	for (unsigned i = 0; i < SW_MAX_TRIGGERS; i++)
		if (b->triggers[i].gathering && (int64_t)mono >= b->triggers[i].gather_until_ms)
			trigger_report(b, &b->triggers[i]);
}

void sw_report_task_done(struct sw_backend *b, const struct grpc_result *res)
{
	unsigned idx = (unsigned)(res->cookie & 0xffff);
	struct sw_pending_trigger *g = idx < SW_MAX_TRIGGERS ? &b->triggers[idx] : NULL;
	Skywalking__V3__Commands *cs = NULL;
	const char *task_id = NULL;
	int64_t now = (int64_t)timeutil__unix_ms();
	struct sw_task *k;

	if (!g || !g->busy)
		return;
	g->busy = false;
	if (!res->status)
		cs = skywalking__v3__commands__unpack(NULL, res->resp_len, res->resp);
	for (size_t i = 0; cs && i < cs->n_commands && !task_id; i++) {
		const Skywalking__V3__Command *c = cs->commands[i];

		if (!c->command || strcmp(c->command, "ContinuousProfilingReportTask"))
			continue;
		for (size_t a = 0; a < c->n_args; a++)
			if (c->args[a]->key && !strcmp(c->args[a]->key, "TaskId") && c->args[a]->value &&
			    c->args[a]->value[0] && strlen(c->args[a]->value) < SW_MAX_ID)
				task_id = c->args[a]->value;
	}
	if (!task_id) {
		b->c[SC_TRIGGERS_DROPPED]++;
		log_warn("continuous profiling: the OAP gave no task id for pid %u's trigger (status %d); not started",
			 g->pid, res->status);
		goto done;
	}
	if (sw_target__of_kind(g->kind) == SW_TARGET_NETWORK) {
		struct pf_process *p = process_finder__by_pid(b->pf, g->pid);
		struct sw_sampling rules[8];

		if (!p || p->status != PF_REPORTED) {
			b->c[SC_TRIGGERS_DROPPED]++;
			goto done;
		}
		/* Rover's triggered network task: slow (>= 0 ms), 4xx and 5xx, whole messages (64 KiB here) */
		memset(rules, 0, sizeof(rules));
		for (unsigned i = 0; i < g->n_uris && i < 8; i++) {
			snprintf(rules[i].uri_regex, sizeof(rules[i].uri_regex), "%s", g->uris[i]);
			rules[i].has_min_duration = true;
			rules[i].when_4xx = rules[i].when_5xx = true;
			rules[i].complete_request = rules[i].complete_response = true;
			rules[i].max_request_size = rules[i].max_response_size = 64 * 1024;
		}
		sw_network_trigger_task(b, task_id, p, now, (int64_t)g->duration_ms, rules, g->n_uris, g->causes,
					g->n_causes);
		goto done;
	}
	k = sw_new_task(b);
	if (!k) {
		b->c[SC_TASKS_FAILED]++;
		goto done;
	}
	memset(k, 0, sizeof(*k));
	snprintf(k->ember_id, sizeof(k->ember_id), "sw-trigger-%u-%lld", g->pid, (long long)now);
	snprintf(k->oap_task, sizeof(k->oap_task), "%s", task_id);
	snprintf(k->process_id, sizeof(k->process_id), "%s", g->process_id);
	k->pid = k->pids[0] = g->pid;
	k->n_pids = 1;
	k->shard = shard__of(k->pid, b->analyzers);
	k->shards = 1;
	k->target = sw_target__of_kind(g->kind);
	k->update_ms = k->start_ms = now;
	k->end_ms = now + (int64_t)g->duration_ms;
	k->causes = malloc(g->n_causes * sizeof(*k->causes));
	if (k->causes) {
		memcpy(k->causes, g->causes, g->n_causes * sizeof(*k->causes));
		k->n_causes = g->n_causes;
	}
	k->state = T_SCHEDULED;
	log_info("continuous profiling: OAP task %s for pid %u (%s, %llu s)", task_id, g->pid,
		 g->n_causes ? g->causes[0].monitor : "", (unsigned long long)g->duration_ms / 1000);
done:
	if (cs)
		skywalking__v3__commands__free_unpacked(cs, NULL);
}

/* ---- rover_con_p_* meters -------------------------------------------------------------------- */

static const char *meter_suffix(const char *monitor)
{
	if (!monitor)
		return NULL;
	if (!strcmp(monitor, "PROCESS_CPU"))
		return "process_cpu";
	if (!strcmp(monitor, "PROCESS_THREAD_COUNT"))
		return "process_thread_count";
	if (!strcmp(monitor, "SYSTEM_LOAD"))
		return "system_load";
	if (!strcmp(monitor, "HTTP_ERROR_RATE"))
		return "http_error_rate";
	if (!strcmp(monitor, "HTTP_AVG_RESPONSE_TIME"))
		return "http_avg_response_time";
	return NULL;
}

/* One MeterDataCollection per (service, instance) of the values of processes under OAP policies. */
void sw_on_monitors(void *st, const Ember__MonitorBatch *mb, uint32_t analyzer)
{
	struct sw_backend *b = st;
	struct pf_process **procs;
	struct sw_msgs out = { 0 };
	const char *prefix = b->cfg->profiling.continuous.meter_prefix;
	int64_t ts;

	(void)analyzer;
	if (!mb || !mb->n_values)
		return;
	ts = mb->timestamp_ms ? (int64_t)mb->timestamp_ms : (int64_t)timeutil__unix_ms();
	procs = calloc(mb->n_values, sizeof(*procs));
	if (!procs)
		return;
	for (size_t i = 0; i < mb->n_values; i++) {
		const Ember__MonitorValue *v = mb->values[i];
		struct pf_process *p = v->service && v->service[0] && meter_suffix(v->monitor) ?
					       process_finder__by_pid(b->pf, v->pid) : NULL;

		if (p && p->status == PF_REPORTED)
			procs[i] = p;
	}
	for (size_t lead = 0; lead < mb->n_values; lead++) {
		Skywalking__V3__MeterDataCollection c = SKYWALKING__V3__METER_DATA_COLLECTION__INIT;
		Skywalking__V3__MeterData *d, **dp;
		Skywalking__V3__MeterSingleValue *sv;
		Skywalking__V3__Label *lb;
		char (*names)[96];
		size_t n = 0, cap = mb->n_values - lead;
		const struct pf_process *me = procs[lead];

		if (!me)
			continue;
		d = calloc(cap, sizeof(*d));
		dp = calloc(cap, sizeof(*dp));
		sv = calloc(cap, sizeof(*sv));
		lb = calloc(3 * cap, sizeof(*lb));
		names = calloc(cap, sizeof(*names));
		if (d && dp && sv && lb && names) {
			Skywalking__V3__Label **lp = calloc(3 * cap, sizeof(*lp));

			for (size_t i = lead; lp && i < mb->n_values; i++) {
				const Ember__MonitorValue *v = mb->values[i];

				if (!procs[i] || strcmp(procs[i]->e.service, me->e.service) ||
				    strcmp(procs[i]->e.instance, me->e.instance))
					continue;
				skywalking__v3__meter_data__init(&d[n]);
				skywalking__v3__meter_single_value__init(&sv[n]);
				bool http = v->uri && v->uri[0];
				Skywalking__V3__Label *l = &lb[3 * n];

				skywalking__v3__label__init(&l[0]);
				skywalking__v3__label__init(&l[1]);
				skywalking__v3__label__init(&l[2]);
				snprintf(names[n], sizeof(names[n]), "%s_%s", prefix, meter_suffix(v->monitor));
				sv[n].name = names[n];
				sv[n].value = v->value;
				/* Rover's label order: uri first for the HTTP meters */
				if (http) {
					l[0].name = "uri";
					l[0].value = v->uri;
				}
				l[http].name = "process_name";
				l[http].value = procs[i]->e.process;
				l[http + 1].name = "layer";
				l[http + 1].value = procs[i]->e.layer;
				for (unsigned q = 0; q < 2u + http; q++)
					lp[3 * n + q] = &l[q];
				sv[n].n_labels = 2 + http;
				sv[n].labels = &lp[3 * n];
				d[n].metric_case = SKYWALKING__V3__METER_DATA__METRIC_SINGLE_VALUE;
				d[n].singlevalue = &sv[n];
				d[n].service = procs[i]->e.service;
				d[n].serviceinstance = procs[i]->e.instance;
				d[n].timestamp = ts;
				dp[n] = &d[n];
				n++;
				procs[i] = NULL;
			}
			c.n_meterdata = n;
			c.meterdata = dp;
			if (n && !sw_msgs__push(&out, &c.base))
				b->c[SC_CON_METERS] += n;
			free(lp);
		}
		free(d);
		free(dp);
		free(sv);
		free(lb);
		free(names);
	}
	free(procs);
	if (out.n)
		sw_enqueue(b, I_NET_METERS, &out);
	else
		sw_msgs__release(&out);
}
