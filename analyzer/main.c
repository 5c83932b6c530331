/*
 * ember-analyzer: unprivileged.  Consumes one ring shard and turns its
 * records into profiles (analyzer/profile.c), runs the tasks
 * (analyzer/runner.c) that the CLI, the exporter's OAP poller and others
 * submit through its request server (analyzer/requests.c), and publishes
 * everything to the exporter (analyzer/publisher.c).  This file wires them
 * together over the analyzer object (analyzer/analyzer.h): set-up, the ring
 * callback, the modules' callbacks, the loop.  What each profiler kind does
 * is in its plugin (analyzer/kinds.h); the meters are analyzer/meters.c.
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

#include "analyzer/analyzer.h"
#include "analyzer/continuous/monitors.h"
#include "analyzer/kinds.h"
#include "analyzer/mappings.h"
#include "l7/l7.h"
#include "analyzer/rest/rest_api.h"
#include "analyzer/rest/rest_doc.h"
#include "analyzer/publisher.h"
#include "analyzer/requests.h"
#include "analyzer/runner.h"
#include "analyzer/tasks.h"
#include "bpf/ember_abi.h"
#include "common/bus.h"
#include "common/cleanup.h"
#include "common/config.h"
#include "common/thread_probes.h"
#include "common/cp_policy.h"
#include "common/ctl_client.h"
#include "common/log.h"
#include "common/profile_kind.h"
#include "common/shm_ring.h"
#include "common/timeutil.h"
#include "symbolizer/debuginfod.h"
#include "symbolizer/symbolizer.h"

#define MAX_TASKS 64

/* SIGTERM, SIGINT: stop, finishing the tasks.  SIGUSR1 (the collector restarted): leave them to the successor. */
static volatile sig_atomic_t stop, keep_tasks;
static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		keep_tasks = 1;
	stop = 1;
}

/* ---- the ring ------------------------------------------------------------------------ */

const struct counter_def analyzer_ring_counters[ARS_MAX] = {
	[ARS_RECORDS] = { .name = "analyzer_ring_records" },
	[ARS_BAD_RECORDS] = { .name = "analyzer_bad_records" },
	[ARS_WINDOW_DROPS] = { .name = "ring_window_drops" },
};

/* A record to the kind that reads its type; one that does not add up, or of no kind, is counted. */
static int on_record(void *ctx, uint32_t type, const void *data, uint32_t len)
{
	struct analyzer *a = ctx;
	struct ember_rec_window w;

	a->ring_st[ARS_RECORDS]++;
	/* A drain's stacks stay in the ring till its last marker, after which every kind's window is
	 * published: a successor of an analyzer killed in between reads them again, and no window is
	 * part-read by a dead analyzer and lost. */
	if (type == EMBER_REC_STACK && !a->ring_held) {
		shm_ring__hold(a->ring);
		a->ring_held = true;
	} else if (a->ring_held && type != EMBER_REC_STACK && type != EMBER_REC_PYCODE && type != EMBER_REC_WINDOW) {
		shm_ring__release(a->ring);	/* past the drain (its last marker was dropped) */
		a->ring_held = false;
	}
	if (analyzer_kinds__record(a->kinds, type, data, len))
		a->ring_st[ARS_BAD_RECORDS]++;
	/* The window closes a drain of the collector's: the ring's drops up to it are the ring's. */
	if (type == EMBER_REC_WINDOW && len == sizeof(w)) {
		memcpy(&w, data, sizeof(w));
		a->ring_st[ARS_WINDOW_DROPS] += w.ring_drops;
		if ((w.flags & EMBER_WINDOW_F_LAST) && a->ring_held) {
			shm_ring__release(a->ring);
			a->ring_held = false;
		}
	}
	return 0;
}

static void drain_ring(void *ctx)
{
	struct analyzer *a = ctx;
	int r = shm_ring__consume(a->ring, on_record, a, 0);

	if (r == -EBADMSG) {
		log_error("ring shard %u is corrupt; restarting", a->shard);
		exit(1);
	}
}

/* ---- the analyzer's own meters (analyzer/meters.c) --------------------------------------- */

static void stats_meters(void *ctx, struct bus_meter_set *ms)
{
	analyzer__meters(ctx, ms, 1);
}

static void publish_meters(struct analyzer *a)
{
	/* Shard 0 reports the collector's counters once for everyone. */
	analyzer__meters(a, &a->meters, a->shard == 0);
	publisher__meters(a->pub, a->meters.ptrs, a->meters.n);
}

/* ---- symbolizer callbacks: every file comes from the collector's broker ------------ */

static int cb_open_maps(void *ctx, uint32_t pid) { struct analyzer *a = ctx; return ctl_client__open_maps(a->cc, pid); }
static int cb_open_file(void *ctx, uint32_t pid, uint64_t start, uint64_t end, const char *path)
{
	struct analyzer *a = ctx;
	(void)path; /* the collector opens the mapping itself, never a path we name */
	return ctl_client__open_file(a->cc, pid, start, end);
}
static int cb_open_kallsyms(void *ctx) { struct analyzer *a = ctx; return ctl_client__open_kallsyms(a->cc); }
static int cb_open_debuginfod(void *ctx, const uint8_t *build_id, size_t len)
{
	struct analyzer *a = ctx;
	return debuginfod__fetch(a->dinfod, build_id, len);
}
static int cb_open_perf_map(void *ctx, uint32_t pid) { struct analyzer *a = ctx; return ctl_client__open_perf_map(a->cc, pid); }
static int cb_open_debug_build_id(void *ctx, uint32_t pid, const uint8_t *build_id, size_t len)
{
	struct analyzer *a = ctx;
	return ctl_client__open_debug_build_id(a->cc, pid, build_id, len);
}
static int cb_open_debuglink(void *ctx, uint32_t pid, uint64_t start, uint64_t end, const char *path,
			     const char *name)
{
	struct analyzer *a = ctx;
	(void)path; /* the collector finds the binary's directory from the mapping itself */
	return ctl_client__open_debuglink(a->cc, pid, start, end, name);
}

static int setup_symbolizer(struct analyzer *a)
{
	struct symbolizer_opts so = { .sz = sizeof(so), .open_maps = cb_open_maps, .open_mapped_file = cb_open_file,
				      .open_kallsyms = cb_open_kallsyms, .open_perf_map = cb_open_perf_map,
				      .open_debug_build_id = cb_open_debug_build_id,
				      .open_debuglink = cb_open_debuglink, .ctx = a };

	if (a->cfg->symbolizer.debuginfod.enabled) {
		char cache[4096];
		const char *dir = a->cfg->symbolizer.debuginfod.cache_dir;

		if (!dir || !dir[0]) {
			snprintf(cache, sizeof(cache), "%s/" BUS_ANALYZER_DIR "/debuginfod", a->cfg->ember.run_dir);
			dir = cache;
		}
		a->dinfod = debuginfod__new(a->cfg->symbolizer.debuginfod.urls, dir);
		if (a->dinfod) {
			so.open_debuginfod = cb_open_debuginfod;
			char shown[1024];

			config__redact_urls(a->cfg->symbolizer.debuginfod.urls, shown, sizeof(shown));
			log_info("debuginfod: %s (cache %s)", shown, dir);
		} else {
			log_warn("debuginfod disabled: %s", errno == ENOENT ? "libdebuginfod.so.1 not available" :
				 errno == EINVAL ? "symbolizer.debuginfod.urls is empty" : strerror(errno));
		}
	}
	a->sym = symbolizer__new(&so);
	return a->sym ? 0 : -errno;
}

/* ---- continuous profiling: a policy item held, start its task ---------------------------- */

/* A policy target's kind: Rover's target names are the OAP's (tests/unit/test_profile_kind: each has a row). */
static const struct profile_kind *kind_of(enum cp_target t)
{
	/* ember's own target: the OAP has no spelling for it */
	if (t == CP_TARGET_THREADS)
		return profile_kind__by_id(EMBER_TASK_THREADS);
	return profile_kind__by_oap(cp_target__name(t));
}

static bool cb_running(void *ctx, uint32_t pid, enum cp_target t)
{
	struct analyzer *a = ctx;
	const struct profile_kind *k = kind_of(t);
	const struct task_def *d = k ? task_mgr__find_pid(a->tm, pid, k->id) : NULL;

	return d && !task_def__is_monitor(d); /* a monitor's capture gives way */
}

/* The L7 monitors' capture of pid: any NETWORK task on it feeds them; else one of their own. */
static int cb_capture(void *ctx, uint32_t pid, bool on)
{
	struct analyzer *a = ctx;
	struct task_def *d = task_mgr__find_pid(a->tm, pid, EMBER_TASK_NETWORK);
	struct task_def def = { 0 };
	char err[320] = "";
	int r;

	if (!on) {
		if (d && task_def__is_monitor(d))
			runner__end(a->runner, d, "no L7 monitor left on the process");
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
	r = runner__start(a->runner, &def, err, sizeof(err));
	if (r)
		log_warn("continuous profiling: cannot capture the exchanges of pid %u for its L7 monitors: %s", pid, err);
	return r;
}

/* A followed process exec'ed or mapped a file executable (its ring record): its TLS libraries now. */
static void cb_maps_changed(void *ctx, uint64_t task_num_id, uint32_t pid, bool soon)
{
	struct analyzer *a = ctx;
	if (a->runner)
		runner__maps_changed(a->runner, task_num_id, pid, soon);
}

static void cb_exchange(void *ctx, uint32_t pid, const struct l7_record *r)
{
	const char *uri = NULL;

	struct analyzer *a = ctx;
	/* Every server-side exchange comes here: most are of processes no monitor watches. */
	if (!a->mon || !r->has_request || !r->has_response || !monitors__wants_exchanges(a->mon, pid))
		return;
	for (unsigned i = 0; i < r->nfields; i++)
		if (!strcmp(r->fields[i].key, "uri") || !strcmp(r->fields[i].key, "path")) /* HTTP/1, HTTP/2 */
			uri = r->fields[i].val;
	monitors__exchange(a->mon, pid, r->protocol, uri, r->is_error, (double)l7_record__latency_ns(r) / 1e6, timeutil__mono_ms());
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
	struct analyzer *a = ctx;
	const struct profile_kind *k = kind_of(t->target);
	struct task_def def = { 0 };
	char err[320] = "";
	int r;

	if (!k)
		return -EINVAL;
	snprintf(def.id, sizeof(def.id), "auto-%s-%u-%llu-%llu", k->name, t->pid,
		 (unsigned long long)timeutil__unix_ms(), (unsigned long long)++a->triggered);
	def.kind = k->id;
	def.npids = 1;
	def.pids[0] = t->pid;
	def.start_unix_ms = timeutil__unix_ms();
	def.duration_ms = a->cfg->profiling.continuous.trigger.execute_duration_ns / 1000000;
	def.period_ns = a->cfg->profiling.task.on_cpu.dump_period_ns;
	def.min_block_ns = a->cfg->profiling.task.off_cpu.min_block_time_ns;
	snprintf(def.origin, sizeof(def.origin), "trigger");
	if (k->flags & PROFILE_KIND_THREADS) {
		/* Every event: what every thread was doing while the policy held. */
		def.thread_probes = THREAD_PROBES_ALL;
		def.min_block_ns = a->cfg->profiling.task.threads.stack_threshold_ns;
	}
	if (k->flags & PROFILE_KIND_NETWORK) {
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
		publisher__trigger(a->pub, &def, t->causes[0].service);
		log_info("continuous profiling: OAP policy of service '%s' held for %s (pid %u): %s %.4g >= %.4g in %u of "
			 "the last %u s; asking the OAP for the %s task", t->causes[0].service, t->comm, t->pid,
			 cp_monitor__name(t->causes[0].monitor), t->causes[0].current, t->causes[0].threshold,
			 t->causes[0].matched, t->causes[0].period, cp_target__name(t->target));
		return 0;
	}
	r = runner__start(a->runner, &def, err, sizeof(err));
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

	struct analyzer *a = ctx;
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
		publisher__monitors(a->pub, &b);
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

const struct counter_def analyzer_oap_counters[AOS_MAX] = {
	[AOS_POLICY_PROBLEMS] = { .name = "continuous_oap_policy_problems" },
};

/* The OAP's policies, from the exporter, with the processes of each policy's service. */
static int cb_policies(void *ctx, const Ember__PolicySet *ps, char *err, size_t errlen)
{
	struct cp_policies *set;
	struct mon_service_pids svc[CP_MAX_POLICIES];
	unsigned n = 0;
	uint64_t print;
	bool changed;
	int r;

	struct analyzer *a = ctx;
	set = cp_policies__parse(ps->json, CP_SOURCE_OAP, err, errlen);
	if (!set) {
		log_warn("continuous profiling: the OAP's policies do not decode: %s", err);
		return -EINVAL;
	}
	/* The exporter resends an unchanged set now and then: only a change is news for the log. */
	print = policy_set_print(ps);
	changed = print != a->oap_policy_print;
	for (unsigned i = 0; changed && i < set->n_problems && i < CP_MAX_PROBLEMS; i++)
		log_warn("continuous profiling: OAP %s: ignored", set->problems[i]);
	a->oap_st[AOS_POLICY_PROBLEMS] += set->n_problems;
	for (size_t i = 0; i < ps->n_processes && n < CP_MAX_POLICIES; i++)
		if (ps->processes[i]->service)
			svc[n++] = (struct mon_service_pids){ ps->processes[i]->service, ps->processes[i]->pids,
							      (unsigned)ps->processes[i]->n_pids };
	r = monitors__set_oap_policies(a->mon, set, svc, n);
	if (r) {
		snprintf(err, errlen, "cannot set the policies: %s", strerror(-r));
	} else if (changed) {
		log_info("continuous profiling: %u OAP polic%s", set->n, set->n == 1 ? "y" : "ies");
		a->oap_policy_print = print;
	} else {
		log_debug("continuous profiling: %u OAP polic%s, unchanged", set->n, set->n == 1 ? "y" : "ies");
	}
	cp_policies__free(set);
	return r;
}

static int setup_monitors(struct analyzer *a)
{
	char err[320] = "";
	struct cp_policies *set;
	int r;

	a->mon = monitors__new(&(struct monitors_opts){
		.shard = a->shard, .nshards = a->nshards,
		.fetch_interval_ms = a->cfg->profiling.continuous.fetch_interval_ns / 1000000,
		.check_interval_ms = a->cfg->profiling.continuous.check_interval_ns / 1000000,
		.silence_ms = a->cfg->profiling.continuous.trigger.silence_duration_ns / 1000000,
		.max_processes = (unsigned)a->cfg->profiling.continuous.max_processes,
		.start = cb_trigger, .running = cb_running, .values = cb_values, .capture = cb_capture, .ctx = a,
	});
	if (!a->mon)
		return -errno;
	/* `ember run` refused invalid local policies already; what parses here is what it accepted. */
	set = cp_policies__parse(a->cfg->profiling.continuous.policies, CP_SOURCE_LOCAL, err, sizeof(err));
	if (!set) {
		log_error("profiling.continuous.policies: %s", err);
		return -EINVAL;
	}
	for (unsigned i = 0; i < set->n_problems && i < CP_MAX_PROBLEMS; i++)
		log_warn("profiling.continuous.policies: %s", set->problems[i]);
	r = monitors__set_policies(a->mon, set);
	if (!r && set->n)
		log_info("continuous profiling: %u local polic%s", set->n, set->n == 1 ? "y" : "ies");
	cp_policies__free(set);
	return r;
}

/* The collector's ring, the symbolizer, and the modules around the task manager. */
static int setup(struct analyzer *a)
{
	char sock[512], ep[512];
	int fds[3];

	snprintf(sock, sizeof(sock), "%s/collector.sock", a->cfg->ember.run_dir);
	a->cc = ctl_client__connect(sock, a->shard, fds, &a->nshards);
	if (!a->cc) {
		log_error("cannot attach to the collector at %s: %m", sock);
		return -1;
	}
	a->ring = shm_ring__attach(fds[0], fds[1], fds[2]);
	if (!a->ring) {
		log_error("cannot map ring shard %u: %m", a->shard);
		return -1;
	}
	a->tm = task_mgr__new(MAX_TASKS);
	a->zctx = zmq_ctx_new();
	if (setup_symbolizer(a) || !a->tm || !a->zctx) {
		log_error("cannot create the symbolizer / task manager: %m");
		return -1;
	}
	bus__exporter_endpoint(a->cfg->ember.run_dir, ep, sizeof(ep));
	a->pub = publisher__new(a->zctx, ep, (int)a->cfg->exporter.zmq_hwm, a->shard);
	if (!a->pub) {
		log_error("cannot connect to the exporter at %s: %s", ep, zmq_strerror(errno));
		return -1;
	}
	if (a->cfg->profiling.unwind.tables || a->cfg->profiling.task.network.tls) {
		struct mappings_opts mo;

		mappings__broker_opts(a->cc, &mo);
		a->maps = mappings__new(&mo);
		if (!a->maps)
			log_warn("no mapping manager (%m): no unwind tables, no TLS plaintext");
	}
	if (a->cfg->profiling.unwind.tables && a->maps) {
		/* The collector, which holds the rows, refuses what does not fit, and counts it. */
		struct unwinder_opts uo = { .cc = a->cc };
		a->uw = unwinder__new(&uo);
		if (!a->uw)
			log_warn("no unwind tables (%m): user stacks are walked with frame pointers only");
	}
	if (a->uw) {
		struct py_finder_opts po = { .cc = a->cc };
		a->py = py_finder__new(&po);
		if (!a->py)
			log_warn("no Python frames (%m): Python processes show their interpreter's native frames");
	}
	if (a->cfg->profiling.java.agent && !a->uw)
		log_warn("profiling.java.agent: no JVM gets the agent without unwind tables (profiling.unwind.tables)");
	if (a->cfg->profiling.java.agent && a->uw) {
		struct jvm_finder_opts jo = { .cc = a->cc };
		a->jvm = jvm_finder__new(&jo);
		if (!a->jvm)
			log_warn("no Java agent (%m): JIT-compiled Java methods stay unnamed");
	}
	if (a->cfg->profiling.task.network.tls && a->maps) {
		struct tls_finder_opts to = { .cc = a->cc };
		a->tls = tls_finder__new(&to);
		if (!a->tls)
			log_warn("no TLS plaintext (%m): TLS connections show L4 metrics only");
	}
	a->kinds = analyzer_kinds__new(&(struct analyzer_kind_env){
		.cfg = a->cfg, .tm = a->tm, .pub = a->pub, .sym = a->sym, .tls = a->tls, .cc = a->cc, .max_tasks = MAX_TASKS,
		.drain = drain_ring, .exchange = cb_exchange, .maps_changed = cb_maps_changed, .ctx = a,
	});
	if (!a->kinds) {
		log_error("cannot create the profiler kinds: %m");
		return -1;
	}
	struct runner_opts ro = { .tm = a->tm, .cc = a->cc, .kinds = a->kinds, .pub = a->pub, .sym = a->sym, .uw = a->uw, .py = a->py, .jvm = a->jvm,
				  .tls = a->tls, .maps = a->maps,
				  .run_dir = a->cfg->ember.run_dir, .shard = a->shard, .nshards = a->nshards,
				  .drain = drain_ring, .ctx = a };
	a->runner = runner__new(&ro);
	if (!a->runner) {
		log_error("cannot create the task runner: %m");
		return -1;
	}
	bus__analyzer_endpoint(a->cfg->ember.run_dir, a->shard, ep, sizeof(ep));
	struct requests_opts qo = { .runner = a->runner, .tm = a->tm, .cfg = a->cfg, .shard = a->shard,
				    .meters = stats_meters, .policies = cb_policies, .ctx = a };
	a->req = requests__new(a->zctx, ep, &qo);
	if (!a->req) {
		log_error("cannot listen on %s: %s", ep, zmq_strerror(errno));
		return -1;
	}
	if (setup_monitors(a)) {
		log_error("cannot set up continuous profiling: %m");
		return -1;
	}
	return 0;
}

/* 0 when asked to stop, 1 on a failure that ends the tasks, -1 when the
 * collector is gone (the tasks are left for the restarted analyzer). */
static int run(struct analyzer *a)
{
	uint64_t last_meters = timeutil__unix_ms();

	while (!stop) {
		zmq_pollitem_t items[2] = {
			{ .socket = requests__socket(a->req), .events = ZMQ_POLLIN },
			{ .fd = shm_ring__event_fd(a->ring), .events = ZMQ_POLLIN },
		};
		uint64_t now = timeutil__unix_ms(), next = task_mgr__next_deadline(a->tm), due = analyzer_kinds__next_due(a->kinds);
		uint64_t mono = timeutil__mono_ms(), mdue = monitors__next_due(a->mon);
		long timeout = 1000;
		int n;

		if (due < next)
			next = due;
		if (mappings__next_due(a->maps) < next)
			next = mappings__next_due(a->maps);
		if (mdue != UINT64_MAX && now + (mdue > mono ? mdue - mono : 0) < next)
			next = now + (mdue > mono ? mdue - mono : 0);
		if (next != UINT64_MAX)
			timeout = next <= now ? 0 : (next - now < 1000 ? (long)(next - now) : 1000);
		if (shm_ring__prepare_wait(a->ring) != 0)
			timeout = 0;
		n = zmq_poll(items, 2, timeout);
		if (n < 0 && errno != EINTR) {
			log_error("zmq_poll: %s", zmq_strerror(errno));
			return 1;
		}
		drain_ring(a);
		if (n > 0 && (items[0].revents & ZMQ_POLLIN))
			requests__handle(a->req);
		analyzer_kinds__tick(a->kinds, timeutil__unix_ms());
		runner__check(a->runner, timeutil__unix_ms());
		monitors__tick(a->mon, timeutil__mono_ms());
		if (ctl_client__broken(a->cc)) {
			/* Its tasks stay in the state file: the restarted analyzer resumes them. */
			log_error("lost the collector connection; exiting to be restarted");
			return -1;
		}
		now = timeutil__unix_ms();
		if (now - last_meters >= a->cfg->profiling.flush_interval_ns / 1000000) {
			last_meters = now;
			publish_meters(a);
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
	static struct analyzer analyzer; /* big (its meter set): not on the stack */
	struct analyzer *a = &analyzer;
	const char *config_path = NULL;
	struct sigaction sa = { .sa_handler = on_signal };
	char err[512];
	int opt, rc = 1;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': config_path = optarg; break;
		case 's': a->shard = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	a->cfg = config__new();
	if (!a->cfg)
		return 1;
	if (config_path && config__load_file(a->cfg, config_path, err, sizeof(err))) {
		fprintf(stderr, "ember-analyzer: %s\n", err);
		return 2;
	}
	log__init("analyzer", (enum log_level)a->cfg->ember.log_level);
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
	if (setup(a))
		goto cleanup;
	runner__restore(a->runner);
	if (a->shard == 0 && a->cfg->ember.rest_api.enabled) {
		const struct ember_config *c = a->cfg;
		char err[512];

		a->rest = rest_api__start(&(struct rest_api_opts){
			.address = c->ember.rest_api.address, .port = (uint16_t)c->ember.rest_api.port,
			.max_body = (size_t)c->ember.rest_api.max_body, .ssl_auth = c->ember.rest_api.ssl_auth,
			.private_key = c->ember.rest_api.private_key, .cert_file = c->ember.rest_api.cert_file,
			.ca_file = c->ember.rest_api.ca_file, .run_dir = c->ember.run_dir, .analyzers = a->nshards,
			.max_pids = (unsigned)c->ember.max_task_pids, .self_uid = (uint32_t)geteuid(),
		}, err, sizeof(err));
		if (a->rest)
			log_info("REST control API on %s://%s:%lld (features: %s)", c->ember.rest_api.ssl_auth ? "https" : "http",
				 c->ember.rest_api.address, (long long)c->ember.rest_api.port, rest_doc__supported());
		else
			log_error("the REST control API did not start: %s", err);
	}
	log_info("ready: shard %u of %u, uid %u", a->shard, a->nshards, (unsigned)geteuid());
	rc = run(a);
	a->rest = rest_api__stop(a->rest); /* before the tasks finish: it submits through this analyzer too */
	if (rc >= 0 && keep_tasks) {
		/* Their state files stay: the analyzer started on the new collector resumes them. */
		log_info("the collector restarted: leaving %u task(s) to be resumed", task_mgr__count(a->tm));
		rc = 1;
	} else if (rc >= 0) {
		log_info("stopping: finishing %u task(s)", task_mgr__count(a->tm));
		runner__finish_all(a->runner, "agent stopping");
		publish_meters(a);
	} else {
		rc = 1;
	}
cleanup:
	a->rest = rest_api__stop(a->rest);
	a->mon = monitors__free(a->mon);
	a->req = requests__free(a->req);
	a->runner = runner__free(a->runner);
	a->kinds = analyzer_kinds__free(a->kinds);
	a->pub = publisher__free(a->pub);
	if (a->zctx)
		zmq_ctx_term(a->zctx);
	a->sym = symbolizer__free(a->sym);
	a->maps = mappings__free(a->maps);   /* releases what uw and tls made of files */
	a->uw = unwinder__free(a->uw);
	a->py = py_finder__free(a->py);
	a->jvm = jvm_finder__free(a->jvm);
	a->tls = tls_finder__free(a->tls);
	a->dinfod = debuginfod__free(a->dinfod);
	a->tm = task_mgr__free(a->tm);
	a->ring = shm_ring__free(a->ring);
	a->cc = ctl_client__free(a->cc);
	config__free(a->cfg);
	return rc;
}
