/*
 * ember-analyzer: unprivileged.  Consumes one ring shard and turns its
 * records into profiles (analyzer/profile.c), runs the tasks
 * (analyzer/runner.c) that the CLI, the exporter's OAP poller and others
 * submit through its request server (analyzer/requests.c), and publishes
 * everything to the exporter (analyzer/publisher.c).  This file wires them
 * together: set-up, the ring callback, the agent's own meters, the loop.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zmq.h>

#include "analyzer/continuous/monitors.h"
#include "analyzer/rest/rest_api.h"
#include "analyzer/net/netprof.h"
#include "analyzer/profile.h"
#include "analyzer/publisher.h"
#include "analyzer/requests.h"
#include "analyzer/runner.h"
#include "analyzer/tasks.h"
#include "bpf/ember_abi.h"
#include "common/bus.h"
#include "common/cleanup.h"
#include "common/config.h"
#include "common/cp_policy.h"
#include "common/ctl_client.h"
#include "common/log.h"
#include "common/shm_ring.h"
#include "common/timeutil.h"
#include "symbolizer/debuginfod.h"
#include "symbolizer/symbolizer.h"

#define MAX_TASKS 64

static struct {
	struct ember_config *cfg;
	unsigned shard, nshards;
	void *zctx;
	struct ctl_client *cc;
	struct shm_ring *ring;
	struct symbolizer *sym;
	struct unwinder *uw;
	struct tls_finder *tls;
	struct debuginfod *dinfod;   /* NULL unless symbolizer.debuginfod.enabled */
	struct task_mgr *tm;
	struct publisher *pub;
	struct profile_builder *pb;
	struct netprof *np;
	struct task_runner *runner;
	struct request_server *req;
	struct monitors *mon;        /* continuous profiling */
	struct rest_api *rest;       /* the REST control API (the first analyzer, when enabled) */
	uint64_t oap_policy_problems;
	uint64_t oap_policy_print;   /* fingerprint of the OAP policies last logged (0: none yet) */
	uint64_t triggered;          /* ids of triggered tasks */
	uint64_t records, bad_records, ring_window_drops;
	struct bus_meter_set meters;  /* the periodic batch: big, so not on the stack */
	volatile sig_atomic_t stop;
} A;

/* SIGTERM, SIGINT: stop, finishing the tasks.  SIGUSR1 (the collector restarted): leave them to the successor. */
static volatile sig_atomic_t keep_tasks;
static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		keep_tasks = 1;
	A.stop = 1;
}

/* ---- the ring ------------------------------------------------------------------------ */

static int on_record(void *ctx, uint32_t type, const void *data, uint32_t len)
{
	struct ember_rec_window w;

	(void)ctx;
	A.records++;
	if (type == EMBER_REC_STACK) {
		profile__stack_record(A.pb, data, len);
	} else if (type == EMBER_REC_NET) {
		netprof__record(A.np, data, len);
	} else if (type == EMBER_REC_WINDOW && len == sizeof(w)) {
		memcpy(&w, data, sizeof(w));
		A.ring_window_drops += w.ring_drops;
		profile__window_end(A.pb, w.kind, w.end_ns);
	} else {
		A.bad_records++;
	}
	return 0;
}

static void drain_ring(void *ctx)
{
	int r = shm_ring__consume(A.ring, on_record, ctx, 0);

	if (r == -EBADMSG) {
		log_error("ring shard %u is corrupt; restarting", A.shard);
		exit(1);
	}
}

/* ---- the analyzer's own meters --------------------------------------------------------- */

_Static_assert(PS_MAX + NPS_MAX + MS_MAX + CTL_STAT_MAX + 24 <= BUS_METER_SET_MAX, "analyzer meters fit a meter set");

static void collect_meters(struct bus_meter_set *ms, int with_collector)
{
	static Ember__Label shard_label = EMBER__LABEL__INIT, *labels[1] = { &shard_label };
	static char shard_buf[16];
	uint64_t ts = timeutil__unix_ms(), ps[PS_MAX], nps[NPS_MAX];
	struct publisher_stats pub;
	struct requests_stats rq;
	struct runner_stats rs;
	struct symbolizer_stats ss;
	struct shm_ring_stats ring;
	struct ctl_stats_ans cs;

	snprintf(shard_buf, sizeof(shard_buf), "%u", A.shard);
	shard_label.name = "analyzer";
	shard_label.value = shard_buf;
	bus__meter_set_reset(ms, labels, 1);
	bus__meter_set_add(ms, "analyzer_ring_records", A.records, 1, ts);
	profile__stats(A.pb, ps);
	ps[PS_BAD_RECORDS] += A.bad_records;
	for (unsigned i = 0; i < PS_MAX; i++)
		bus__meter_set_add(ms, profile__stat_name(i), ps[i], 1, ts);
	netprof__stats(A.np, nps);
	for (unsigned i = 0; i < NPS_MAX; i++)
		bus__meter_set_add(ms, netprof__stat_name(i), nps[i], 1, ts);
	bus__meter_set_add(ms, "ring_window_drops", A.ring_window_drops, 1, ts);
	{
		uint64_t mv[MS_MAX];

		monitors__stats(A.mon, mv);
		for (unsigned i = 0; i < MS_MAX; i++)
			bus__meter_set_add(ms, monitors__stat_name(i), mv[i], i != MS_POLICIES && i != MS_PROCESSES, ts);
		bus__meter_set_add(ms, "continuous_oap_policy_problems", A.oap_policy_problems, 1, ts);
	}
	if (A.rest) {
		struct rest_api_stats r;

		rest_api__stats(A.rest, &r);
		bus__meter_set_add(ms, "rest_requests", r.requests, 1, ts);
		bus__meter_set_add(ms, "rest_puts_applied", r.puts_applied, 1, ts);
		bus__meter_set_add(ms, "rest_puts_refused", r.puts_refused, 1, ts);
		bus__meter_set_add(ms, "rest_gets", r.gets, 1, ts);
		bus__meter_set_add(ms, "rest_not_found", r.not_found, 1, ts);
		bus__meter_set_add(ms, "rest_not_allowed", r.not_allowed, 1, ts);
		bus__meter_set_add(ms, "rest_unauthorized", r.unauthorized, 1, ts);
		bus__meter_set_add(ms, "rest_too_large", r.too_large, 1, ts);
		bus__meter_set_add(ms, "rest_tasks_started", r.tasks_started, 1, ts);
		bus__meter_set_add(ms, "rest_task_failures", r.task_failures, 1, ts);
		bus__meter_set_add(ms, "rest_net_processes_followed", r.net_followed, 0, ts);
		bus__meter_set_add(ms, "rest_flame_processes_selected", r.flame_selected, 0, ts);
	}
	publisher__stats(A.pub, &pub);
	bus__meter_set_add(ms, "zmq_hwm_drops", pub.hwm_drops, 1, ts);
	bus__meter_set_add(ms, "zmq_send_errors", pub.errors, 1, ts);
	runner__stats(A.runner, &rs);
	bus__meter_set_add(ms, "tasks_started", rs.started, 1, ts);
	bus__meter_set_add(ms, "tasks_finished", rs.finished, 1, ts);
	bus__meter_set_add(ms, "tasks_running", task_mgr__count(A.tm), 0, ts);
	requests__stats(A.req, &rq);
	bus__meter_set_add(ms, "requests", rq.requests, 1, ts);
	bus__meter_set_add(ms, "bad_requests", rq.bad_requests, 1, ts);
	bus__meter_set_add(ms, "request_reply_errors", rq.reply_errors, 1, ts);
	symbolizer__stats(A.sym, &ss);
	bus__meter_set_add(ms, "symbolizer_resolved", ss.resolved, 1, ts);
	bus__meter_set_add(ms, "symbolizer_unknown", ss.unknown, 1, ts);
	if (A.tls) {
		struct tls_finder_stats tf;

		tls_finder__stats(A.tls, &tf);
		bus__meter_set_add(ms, "tls_files_examined", tf.files_examined, 1, ts);
		bus__meter_set_add(ms, "tls_files_openssl", tf.files_openssl, 1, ts);
		bus__meter_set_add(ms, "tls_files_go", tf.files_go, 1, ts);
		bus__meter_set_add(ms, "tls_go_unsupported", tf.go_unsupported, 1, ts);
		bus__meter_set_add(ms, "tls_attach_requests", tf.attached, 1, ts);
		bus__meter_set_add(ms, "tls_attach_refused", tf.refused, 1, ts);
		bus__meter_set_add(ms, "tls_file_errors", tf.errors, 1, ts);
		bus__meter_set_add(ms, "tls_unsupported_processes", tf.unsupported, 1, ts);
	}
	if (A.uw) {
		struct unwinder_stats us;

		unwinder__stats(A.uw, &us);
		bus__meter_set_add(ms, "unwind_processes_sent", us.procs, 1, ts);
		bus__meter_set_add(ms, "unwind_processes_frame_pointers", us.procs_refused, 1, ts);
		bus__meter_set_add(ms, "unwind_tables_built", us.tables_built, 1, ts);
		bus__meter_set_add(ms, "unwind_tables_shared", us.tables_shared, 1, ts);
		bus__meter_set_add(ms, "unwind_rows_sent", us.rows_sent, 1, ts);
		/* Prometheus names units in base units: seconds, not microseconds */
		bus__meter_set_add(ms, "unwind_build_seconds", (double)us.build_us / 1e6, 1, ts);
		bus__meter_set_add(ms, "unwind_mappings_frame_pointers", us.maps_without_table, 1, ts);
		bus__meter_set_add(ms, "unwind_errors", us.errors, 1, ts);
	}
	shm_ring__stats(A.ring, &ring);
	bus__meter_set_add(ms, "ring_consumed", ring.consumed, 1, ts);
	bus__meter_set_add_memory(ms, "analyzer", ts);
	if (with_collector && !ctl_client__stats(A.cc, &cs))
		for (unsigned i = 0; i < CTL_STAT_MAX && i < cs.n; i++)
			bus__meter_set_add(ms, ctl__stat_name(i), cs.v[i], !ctl__stat_is_level(i), ts);
}

static void stats_meters(void *ctx, struct bus_meter_set *ms)
{
	(void)ctx;
	collect_meters(ms, 1);
}

static void publish_meters(void)
{
	/* Shard 0 reports the collector's counters once for everyone. */
	collect_meters(&A.meters, A.shard == 0);
	publisher__meters(A.pub, A.meters.ptrs, A.meters.n);
}

/* ---- symbolizer callbacks: every file comes from the collector's broker ------------ */

static int cb_open_maps(void *ctx, uint32_t pid) { (void)ctx; return ctl_client__open_maps(A.cc, pid); }
static int cb_open_file(void *ctx, uint32_t pid, uint64_t start, uint64_t end, const char *path)
{
	(void)ctx;
	(void)path; /* the collector opens the mapping itself, never a path we name */
	return ctl_client__open_file(A.cc, pid, start, end);
}
static int cb_open_kallsyms(void *ctx) { (void)ctx; return ctl_client__open_kallsyms(A.cc); }
static int cb_open_debuginfod(void *ctx, const uint8_t *build_id, size_t len)
{
	(void)ctx;
	return debuginfod__fetch(A.dinfod, build_id, len);
}
static int cb_open_perf_map(void *ctx, uint32_t pid) { (void)ctx; return ctl_client__open_perf_map(A.cc, pid); }
static int cb_open_debug_build_id(void *ctx, uint32_t pid, const uint8_t *build_id, size_t len)
{
	(void)ctx;
	return ctl_client__open_debug_build_id(A.cc, pid, build_id, len);
}
static int cb_open_debuglink(void *ctx, uint32_t pid, uint64_t start, uint64_t end, const char *path,
			     const char *name)
{
	(void)ctx;
	(void)path; /* the collector finds the binary's directory from the mapping itself */
	return ctl_client__open_debuglink(A.cc, pid, start, end, name);
}

static int setup_symbolizer(void)
{
	struct symbolizer_opts so = { .sz = sizeof(so), .open_maps = cb_open_maps, .open_mapped_file = cb_open_file,
				      .open_kallsyms = cb_open_kallsyms, .open_perf_map = cb_open_perf_map,
				      .open_debug_build_id = cb_open_debug_build_id,
				      .open_debuglink = cb_open_debuglink };

	if (A.cfg->symbolizer.debuginfod.enabled) {
		char cache[4096];
		const char *dir = A.cfg->symbolizer.debuginfod.cache_dir;

		if (!dir || !dir[0]) {
			snprintf(cache, sizeof(cache), "%s/" BUS_ANALYZER_DIR "/debuginfod", A.cfg->ember.run_dir);
			dir = cache;
		}
		A.dinfod = debuginfod__new(A.cfg->symbolizer.debuginfod.urls, dir);
		if (A.dinfod) {
			so.open_debuginfod = cb_open_debuginfod;
			char shown[1024];

			config__redact_urls(A.cfg->symbolizer.debuginfod.urls, shown, sizeof(shown));
			log_info("debuginfod: %s (cache %s)", shown, dir);
		} else {
			log_warn("debuginfod disabled: %s", errno == ENOENT ? "libdebuginfod.so.1 not available" :
				 errno == EINVAL ? "symbolizer.debuginfod.urls is empty" : strerror(errno));
		}
	}
	A.sym = symbolizer__new(&so);
	return A.sym ? 0 : -errno;
}

/* ---- continuous profiling: a policy item held, start its task ---------------------------- */

static uint32_t kind_of(enum cp_target t)
{
	return t == CP_TARGET_ON_CPU ? EMBER_TASK_ONCPU : t == CP_TARGET_OFF_CPU ? EMBER_TASK_OFFCPU : EMBER_TASK_NETWORK;
}

static bool cb_running(void *ctx, uint32_t pid, enum cp_target t)
{
	const struct task_def *d = task_mgr__find_pid(A.tm, pid, kind_of(t));

	(void)ctx;
	return d && !task_def__is_monitor(d); /* a monitor's capture gives way */
}

/* The L7 monitors' capture of pid: any NETWORK task on it feeds them; else one of their own. */
static int cb_capture(void *ctx, uint32_t pid, bool on)
{
	struct task_def *d = task_mgr__find_pid(A.tm, pid, EMBER_TASK_NETWORK);
	struct task_def def = { 0 };
	char err[320] = "";
	int r;

	(void)ctx;
	if (!on) {
		if (d && task_def__is_monitor(d))
			runner__end(A.runner, d, "no L7 monitor left on the process");
		return 0;
	}
	if (d)
		return 0;
	snprintf(def.id, sizeof(def.id), "monitor-%u-%llu", pid, (unsigned long long)timeutil__unix_ms());
	def.kind = EMBER_TASK_NETWORK;
	def.npids = 1;
	def.pids[0] = pid;
	def.start_unix_ms = timeutil__unix_ms();
	def.duration_ms = 7ull * 24 * 3600 * 1000; /* until no L7 item wants it (asked again each check) */
	snprintf(def.origin, sizeof(def.origin), "monitor");
	r = runner__start(A.runner, &def, err, sizeof(err));
	if (r)
		log_warn("continuous profiling: cannot capture the exchanges of pid %u for its L7 monitors: %s", pid, err);
	return r;
}

/* A followed process exec'ed or mapped a file executable (its ring record): its TLS libraries now. */
static void cb_maps_changed(void *ctx, uint64_t task_num_id, uint32_t pid)
{
	(void)ctx;
	if (A.runner)
		runner__maps_changed(A.runner, task_num_id, pid);
}

static uint64_t cb_tls_ready_ns(void *ctx, uint32_t pid)
{
	(void)ctx;
	return tls_finder__ready_ns(A.tls, pid);
}

static void cb_exchange(void *ctx, uint32_t pid, const struct l7_record *r)
{
	const char *uri = NULL;

	(void)ctx;
	if (!A.mon || !r->has_request || !r->has_response)
		return;
	for (unsigned i = 0; i < r->nfields; i++)
		if (!strcmp(r->fields[i].key, "uri") || !strcmp(r->fields[i].key, "path")) /* HTTP/1, HTTP/2 */
			uri = r->fields[i].val;
	monitors__exchange(A.mon, pid, r->protocol, uri, r->is_error, (double)l7_record__latency_ns(r) / 1e6, timeutil__mono_ms());
}

static void task_cause_of(struct task_cause *d, const struct mon_cause *c, const struct mon_trigger *t)
{
	snprintf(d->monitor, sizeof(d->monitor), "%s", cp_monitor__name(c->monitor));
	d->threshold = c->threshold;
	d->current = c->current;
	d->pid = t->pid;
	d->period_s = c->period;
	d->count = c->count;
	d->matched = c->matched;
	snprintf(d->uri, sizeof(d->uri), "%s", c->uri);
	d->uri_is_regex = c->uri_is_regex;
	snprintf(d->policy, sizeof(d->policy), "%s", c->policy);
	snprintf(d->comm, sizeof(d->comm), "%s", t->comm);
}

static int cb_trigger(void *ctx, const struct mon_trigger *t)
{
	static const char *const tag[CP_TARGET_MAX] = { "oncpu", "offcpu", "network" };
	struct task_def def = { 0 };
	char err[320] = "";
	int r;

	(void)ctx;
	snprintf(def.id, sizeof(def.id), "auto-%s-%u-%llu-%llu", tag[t->target], t->pid,
		 (unsigned long long)timeutil__unix_ms(), (unsigned long long)++A.triggered);
	def.kind = kind_of(t->target);
	def.npids = 1;
	def.pids[0] = t->pid;
	def.start_unix_ms = timeutil__unix_ms();
	def.duration_ms = A.cfg->profiling.continuous.trigger.execute_duration_ns / 1000000;
	def.period_ns = A.cfg->profiling.task.on_cpu.dump_period_ns;
	def.min_block_ns = A.cfg->profiling.task.off_cpu.min_block_time_ns;
	snprintf(def.origin, sizeof(def.origin), "trigger");
	if (t->target == CP_TARGET_NETWORK) {
		/* Rover's triggered network task: every URI, slow (>= 0 ms), 4xx and 5xx, whole messages. */
		struct task_sampling *s = &def.samplings[def.nsamplings++];

		s->has_min_duration = true;
		s->when_4xx = s->when_5xx = true;
		s->complete_request = s->complete_response = true;
		s->max_request_size = s->max_response_size = 64 * 1024;
	}
	for (unsigned i = 0; i < t->n_causes && def.ncauses < TASK_MAX_CAUSES; i++)
		task_cause_of(&def.causes[def.ncauses++], &t->causes[i], t);
	if (t->causes[0].oap) {
		/* The OAP names the task (reportProfilingTask): the exporter asks, then submits it here. */
		def.id[0] = 0;
		def.ncauses = 0;
		for (unsigned i = 0; i < t->n_causes && def.ncauses < TASK_MAX_CAUSES; i++)
			if (t->causes[i].oap && !strcmp(t->causes[i].service, t->causes[0].service))
				task_cause_of(&def.causes[def.ncauses++], &t->causes[i], t);
		publisher__trigger(A.pub, &def, t->causes[0].service);
		log_info("continuous profiling: OAP policy of service '%s' held for %s (pid %u): %s %.4g >= %.4g in %u of "
			 "the last %u s; asking the OAP for the %s task", t->causes[0].service, t->comm, t->pid,
			 cp_monitor__name(t->causes[0].monitor), t->causes[0].current, t->causes[0].threshold,
			 t->causes[0].matched, t->causes[0].period, cp_target__name(t->target));
		return 0;
	}
	r = runner__start(A.runner, &def, err, sizeof(err));
	if (r) {
		log_warn("continuous profiling: policy '%s' held for %s (pid %u) but its %s task did not start: %s",
			 t->causes[0].policy, t->comm, t->pid, cp_target__name(t->target), err);
		return r;
	}
	log_info("continuous profiling: task %s (%s) for %s (pid %u): policy '%s' %s %.4g >= %.4g in %u of the last %u s",
		 def.id, cp_target__name(t->target), t->comm, t->pid, t->causes[0].policy,
		 cp_monitor__name(t->causes[0].monitor), t->causes[0].current, t->causes[0].threshold,
		 t->causes[0].matched, t->causes[0].period);
	return 0;
}

static void cb_values(void *ctx, const struct mon_value *v, unsigned n, const uint32_t *ended, unsigned n_ended)
{
	Ember__MonitorBatch b = EMBER__MONITOR_BATCH__INIT;
	Ember__MonitorValue *vals = calloc(n ? n : 1, sizeof(*vals));
	Ember__MonitorValue **ptrs = calloc(n ? n : 1, sizeof(*ptrs));

	(void)ctx;
	if (vals && ptrs) {
		for (unsigned i = 0; i < n; i++) {
			ember__monitor_value__init(&vals[i]);
			vals[i].pid = v[i].pid;
			vals[i].monitor = (char *)cp_monitor__name(v[i].monitor);
			vals[i].target = (char *)cp_target__name(v[i].target);
			vals[i].value = v[i].value;
			vals[i].service = (char *)v[i].service;
			vals[i].uri = (char *)(v[i].uri ? v[i].uri : "");
			vals[i].comm = (char *)(v[i].comm ? v[i].comm : "");
			ptrs[i] = &vals[i];
		}
		b.timestamp_ms = timeutil__unix_ms();
		b.n_values = n;
		b.values = ptrs;
		b.n_ended_pids = n_ended;
		b.ended_pids = (uint32_t *)ended;
		publisher__monitors(A.pub, &b);
	}
	free(vals);
	free(ptrs);
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ull;
	return h;
}

/* A fingerprint of a PolicySet: its JSON and each service's pids; never 0. */
static uint64_t policy_set_print(const Ember__PolicySet *ps)
{
	uint64_t h = 0xcbf29ce484222325ull;

	if (ps->json)
		h = fnv1a(h, ps->json, strlen(ps->json) + 1);
	for (size_t i = 0; i < ps->n_processes; i++) {
		const Ember__PolicyProcesses *pp = ps->processes[i];

		if (!pp)
			continue;
		if (pp->service)
			h = fnv1a(h, pp->service, strlen(pp->service) + 1);
		h = fnv1a(h, pp->pids, pp->n_pids * sizeof(pp->pids[0]));
		h = fnv1a(h, "\n", 1);
	}
	return h ? h : 1;
}

/* The OAP's policies, from the exporter, with the processes of each policy's service. */
static int cb_policies(void *ctx, const Ember__PolicySet *ps, char *err, size_t errlen)
{
	struct cp_policies *set;
	struct mon_service_pids svc[CP_MAX_POLICIES];
	unsigned n = 0;
	uint64_t print;
	bool changed;
	int r;

	(void)ctx;
	set = cp_policies__parse(ps->json, CP_SOURCE_OAP, err, errlen);
	if (!set) {
		log_warn("continuous profiling: the OAP's policies do not decode: %s", err);
		return -EINVAL;
	}
	/* The exporter resends an unchanged set now and then: only a change is news for the log. */
	print = policy_set_print(ps);
	changed = print != A.oap_policy_print;
	for (unsigned i = 0; changed && i < set->n_problems && i < CP_MAX_PROBLEMS; i++)
		log_warn("continuous profiling: OAP %s: ignored", set->problems[i]);
	A.oap_policy_problems += set->n_problems;
	for (size_t i = 0; i < ps->n_processes && n < CP_MAX_POLICIES; i++)
		if (ps->processes[i]->service)
			svc[n++] = (struct mon_service_pids){ ps->processes[i]->service, ps->processes[i]->pids,
							      (unsigned)ps->processes[i]->n_pids };
	r = monitors__set_oap_policies(A.mon, set, svc, n);
	if (r) {
		snprintf(err, errlen, "cannot set the policies: %s", strerror(-r));
	} else if (changed) {
		log_info("continuous profiling: %u OAP polic%s", set->n, set->n == 1 ? "y" : "ies");
		A.oap_policy_print = print;
	} else {
		log_debug("continuous profiling: %u OAP polic%s, unchanged", set->n, set->n == 1 ? "y" : "ies");
	}
	cp_policies__free(set);
	return r;
}

static int setup_monitors(void)
{
	char err[320] = "";
	struct cp_policies *set;
	int r;

	A.mon = monitors__new(&(struct monitors_opts){
		.shard = A.shard, .nshards = A.nshards,
		.fetch_interval_ms = A.cfg->profiling.continuous.fetch_interval_ns / 1000000,
		.check_interval_ms = A.cfg->profiling.continuous.check_interval_ns / 1000000,
		.silence_ms = A.cfg->profiling.continuous.trigger.silence_duration_ns / 1000000,
		.max_processes = (unsigned)A.cfg->profiling.continuous.max_processes,
		.start = cb_trigger, .running = cb_running, .values = cb_values, .capture = cb_capture,
	});
	if (!A.mon)
		return -errno;
	/* `ember run` refused invalid local policies already; what parses here is what it accepted. */
	set = cp_policies__parse(A.cfg->profiling.continuous.policies, CP_SOURCE_LOCAL, err, sizeof(err));
	if (!set) {
		log_error("profiling.continuous.policies: %s", err);
		return -EINVAL;
	}
	for (unsigned i = 0; i < set->n_problems && i < CP_MAX_PROBLEMS; i++)
		log_warn("profiling.continuous.policies: %s", set->problems[i]);
	r = monitors__set_policies(A.mon, set);
	if (!r && set->n)
		log_info("continuous profiling: %u local polic%s", set->n, set->n == 1 ? "y" : "ies");
	cp_policies__free(set);
	return r;
}

/* The collector's ring, the symbolizer, and the modules around the task manager. */
static int setup(void)
{
	char sock[512], ep[512];
	int fds[3];

	snprintf(sock, sizeof(sock), "%s/collector.sock", A.cfg->ember.run_dir);
	A.cc = ctl_client__connect(sock, A.shard, fds, &A.nshards);
	if (!A.cc) {
		log_error("cannot attach to the collector at %s: %m", sock);
		return -1;
	}
	A.ring = shm_ring__attach(fds[0], fds[1], fds[2]);
	if (!A.ring) {
		log_error("cannot map ring shard %u: %m", A.shard);
		return -1;
	}
	A.tm = task_mgr__new(MAX_TASKS);
	A.zctx = zmq_ctx_new();
	if (setup_symbolizer() || !A.tm || !A.zctx) {
		log_error("cannot create the symbolizer / task manager: %m");
		return -1;
	}
	bus__exporter_endpoint(A.cfg->ember.run_dir, ep, sizeof(ep));
	A.pub = publisher__new(A.zctx, ep, (int)A.cfg->exporter.zmq_hwm, A.shard);
	if (!A.pub) {
		log_error("cannot connect to the exporter at %s: %s", ep, zmq_strerror(errno));
		return -1;
	}
	A.pb = profile__new(A.sym, A.pub, A.tm, MAX_TASKS);
	A.np = netprof__new(&(struct netprof_opts){
		.pub = A.pub, .tm = A.tm,
		.max_connections = (size_t)A.cfg->profiling.task.network.max_connections,
		.idle_timeout_ns = A.cfg->profiling.task.network.connection_idle_timeout_ns,
		.max_exchanges = (size_t)A.cfg->profiling.task.network.max_exchanges_per_report,
		.default_report_ms = A.cfg->profiling.task.network.report_interval_ns / 1000000,
		.l7 = { .max_conn_mem = A.cfg->profiling.task.network.protocol_analyze.max_connection_buffer,
			.max_query_len = 256,
			.req_encoding = A.cfg->profiling.task.network.protocol_analyze.sampling.http.default_request_encoding,
			.resp_encoding = A.cfg->profiling.task.network.protocol_analyze.sampling.http.default_response_encoding },
		.exchange = cb_exchange,
		.maps_changed = cb_maps_changed,
		.tls_ready_ns = cb_tls_ready_ns,
		.drain = drain_ring,    /* between the parts of a big report */
	});
	if (!A.np) {
		log_error("cannot create the network profiler: %m");
		return -1;
	}
	if (A.cfg->profiling.unwind.tables) {
		/* The collector, which holds the rows, refuses what does not fit, and counts it. */
		struct unwinder_opts uo = { .cc = A.cc };
		A.uw = unwinder__new(&uo);
		if (!A.uw)
			log_warn("no unwind tables (%m): user stacks are walked with frame pointers only");
	}
	if (A.cfg->profiling.task.network.tls) {
		struct tls_finder_opts to = { .cc = A.cc };
		A.tls = tls_finder__new(&to);
		if (!A.tls)
			log_warn("no TLS plaintext (%m): TLS connections show L4 metrics only");
	}
	struct runner_opts ro = { .tm = A.tm, .cc = A.cc, .pb = A.pb, .np = A.np, .pub = A.pub, .sym = A.sym, .uw = A.uw,
				  .tls = A.tls,
				  .run_dir = A.cfg->ember.run_dir, .shard = A.shard, .nshards = A.nshards,
				  .drain = drain_ring };
	A.runner = A.pb ? runner__new(&ro) : NULL;
	if (!A.runner) {
		log_error("cannot create the task runner: %m");
		return -1;
	}
	bus__analyzer_endpoint(A.cfg->ember.run_dir, A.shard, ep, sizeof(ep));
	struct requests_opts qo = { .runner = A.runner, .tm = A.tm, .cfg = A.cfg, .shard = A.shard,
				    .meters = stats_meters, .policies = cb_policies };
	A.req = requests__new(A.zctx, ep, &qo);
	if (!A.req) {
		log_error("cannot listen on %s: %s", ep, zmq_strerror(errno));
		return -1;
	}
	if (setup_monitors()) {
		log_error("cannot set up continuous profiling: %m");
		return -1;
	}
	return 0;
}

/* 0 when asked to stop, 1 on a failure that ends the tasks, -1 when the
 * collector is gone (the tasks are left for the restarted analyzer). */
static int run(void)
{
	uint64_t last_meters = timeutil__unix_ms();

	while (!A.stop) {
		zmq_pollitem_t items[2] = {
			{ .socket = requests__socket(A.req), .events = ZMQ_POLLIN },
			{ .fd = shm_ring__event_fd(A.ring), .events = ZMQ_POLLIN },
		};
		uint64_t now = timeutil__unix_ms(), next = task_mgr__next_deadline(A.tm), due = netprof__next_due(A.np);
		uint64_t mono = timeutil__mono_ms(), mdue = monitors__next_due(A.mon);
		long timeout = 1000;
		int n;

		if (due < next)
			next = due;
		if (mdue != UINT64_MAX && now + (mdue > mono ? mdue - mono : 0) < next)
			next = now + (mdue > mono ? mdue - mono : 0);
		if (next != UINT64_MAX)
			timeout = next <= now ? 0 : (next - now < 1000 ? (long)(next - now) : 1000);
		if (shm_ring__prepare_wait(A.ring) != 0)
			timeout = 0;
		n = zmq_poll(items, 2, timeout);
		if (n < 0 && errno != EINTR) {
			log_error("zmq_poll: %s", zmq_strerror(errno));
			return 1;
		}
		drain_ring(NULL);
		if (n > 0 && (items[0].revents & ZMQ_POLLIN))
			requests__handle(A.req);
		netprof__tick(A.np, timeutil__unix_ms());
		runner__check(A.runner, timeutil__unix_ms());
		monitors__tick(A.mon, timeutil__mono_ms());
		if (ctl_client__broken(A.cc)) {
			/* Its tasks stay in the state file: the restarted analyzer resumes them. */
			log_error("lost the collector connection; exiting to be restarted");
			return -1;
		}
		now = timeutil__unix_ms();
		if (now - last_meters >= A.cfg->profiling.flush_interval_ns / 1000000) {
			last_meters = now;
			publish_meters();
		}
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ember-analyzer --config FILE [--shard N]\n"
		   "Started by `ember run` as the unprivileged user; not meant to be run by hand.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, 0, 'c' }, { "shard", required_argument, 0, 's' },
		{ "help", no_argument, 0, 'h' }, { 0 },
	};
	const char *config_path = NULL;
	struct sigaction sa = { .sa_handler = on_signal };
	char err[512];
	int opt, rc = 1;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': config_path = optarg; break;
		case 's': A.shard = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	A.cfg = config__new();
	if (!A.cfg)
		return 1;
	if (config_path && config__load_file(A.cfg, config_path, err, sizeof(err))) {
		fprintf(stderr, "ember-analyzer: %s\n", err);
		return 2;
	}
	log__init("analyzer", (enum log_level)A.cfg->ember.log_level);
	if (geteuid() == 0)
		log_warn("running as root: ember-analyzer is meant to run unprivileged");
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	{
		/* The monitors keep /proc descriptors open (up to half the limit): raise the soft limit to the hard. */
		struct rlimit rl;

		if (!getrlimit(RLIMIT_NOFILE, &rl)) {
			rlim_t want = rl.rlim_max > 65536 ? 65536 : rl.rlim_max;

			if (want > rl.rlim_cur) {
				rl.rlim_cur = want;
				(void)setrlimit(RLIMIT_NOFILE, &rl);
			}
		}
	}
	if (setup())
		goto cleanup;
	runner__restore(A.runner);
	if (A.shard == 0 && A.cfg->ember.rest_api.enabled) {
		const struct ember_config *c = A.cfg;
		char err[512];

		A.rest = rest_api__start(&(struct rest_api_opts){
			.address = c->ember.rest_api.address, .port = (uint16_t)c->ember.rest_api.port,
			.max_body = (size_t)c->ember.rest_api.max_body, .ssl_auth = c->ember.rest_api.ssl_auth,
			.private_key = c->ember.rest_api.private_key, .cert_file = c->ember.rest_api.cert_file,
			.ca_file = c->ember.rest_api.ca_file, .run_dir = c->ember.run_dir, .analyzers = A.nshards,
			.max_pids = (unsigned)c->ember.max_task_pids, .self_uid = (uint32_t)geteuid(),
		}, err, sizeof(err));
		if (A.rest)
			log_info("REST control API on %s://%s:%lld (features: %s)", c->ember.rest_api.ssl_auth ? "https" : "http",
				 c->ember.rest_api.address, (long long)c->ember.rest_api.port, "flamegraph, l7, tcp");
		else
			log_error("the REST control API did not start: %s", err);
	}
	log_info("ready: shard %u of %u, uid %u", A.shard, A.nshards, (unsigned)geteuid());
	rc = run();
	A.rest = rest_api__stop(A.rest); /* before the tasks finish: it submits through this analyzer too */
	if (rc >= 0 && keep_tasks) {
		/* Their state files stay: the analyzer started on the new collector resumes them. */
		log_info("the collector restarted: leaving %u task(s) to be resumed", task_mgr__count(A.tm));
		rc = 1;
	} else if (rc >= 0) {
		log_info("stopping: finishing %u task(s)", task_mgr__count(A.tm));
		runner__finish_all(A.runner, "agent stopping");
		publish_meters();
	} else {
		rc = 1;
	}
cleanup:
	A.rest = rest_api__stop(A.rest);
	A.mon = monitors__free(A.mon);
	A.req = requests__free(A.req);
	A.runner = runner__free(A.runner);
	A.pb = profile__free(A.pb);
	A.np = netprof__free(A.np);
	A.pub = publisher__free(A.pub);
	if (A.zctx)
		zmq_ctx_term(A.zctx);
	A.sym = symbolizer__free(A.sym);
	A.uw = unwinder__free(A.uw);
	A.tls = tls_finder__free(A.tls);
	A.dinfod = debuginfod__free(A.dinfod);
	A.tm = task_mgr__free(A.tm);
	A.ring = shm_ring__free(A.ring);
	A.cc = ctl_client__free(A.cc);
	config__free(A.cfg);
	return rc;
}
