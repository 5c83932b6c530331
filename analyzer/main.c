/*
 * ember-analyzer: unprivileged.  Consumes one ring shard, symbolizes stacks,
 * aggregates them per task and flush window, and pushes the results to the
 * exporter.  Holds the task manager; takes requests from the CLI (and later
 * the REST API, the OAP poller and triggers) on a REP socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "analyzer/collector_client.h"
#include "analyzer/tasks.h"
#include "bpf/ember_abi.h"
#include "common/bus.h"
#include "common/cleanup.h"
#include "common/config.h"
#include "common/log.h"
#include "common/memstats.h"
#include "common/shm_ring.h"
#include "common/timeutil.h"
#include "symbolizer/debuginfod.h"
#include "symbolizer/symbolizer.h"

#define MAX_TASKS 64
#define MAX_SAMPLES_PER_WINDOW 65536

struct pending {
	char task_id[TASK_ID_LEN];
	uint32_t kind;
	Ember__StackSample **v;
	size_t n, cap;
	uint64_t samples_total, stacks_total;
	uint64_t window_start_ns;
};

enum astat {
	AS_RECORDS, AS_STACKS, AS_STACKS_NO_TASK, AS_BAD_RECORDS, AS_WINDOW_CAP_DROPS, AS_RING_WINDOW_DROPS,
	AS_ZMQ_HWM_DROPS, AS_ZMQ_ERRORS, AS_FRAMES, AS_FRAMES_UNKNOWN, AS_TASKS_STARTED, AS_TASKS_FINISHED,
	AS_REQUESTS, AS_BAD_REQUESTS, AS_TRACING_FRAMES, AS_MAX
};
static const char *const astat_names[AS_MAX] = {
	"analyzer_ring_records", "analyzer_stacks", "analyzer_stacks_without_task", "analyzer_bad_records",
	"analyzer_window_cap_drops", "ring_window_drops", "zmq_hwm_drops", "zmq_send_errors",
	"frames_symbolized", "frames_unknown", "tasks_started", "tasks_finished", "requests", "bad_requests",
	"tracing_frames_removed",
};

static struct {
	struct ember_config *cfg;
	unsigned shard, nshards;
	void *zctx, *push, *rep;
	struct collector_client *cc;
	struct shm_ring *ring;
	struct symbolizer *sym;
	struct debuginfod *dinfod;   /* NULL unless symbolizer.debuginfod.enabled */
	struct task_mgr *tm;
	struct pending pend[MAX_TASKS];
	uint64_t stats[AS_MAX];
	uint64_t seq, next_task_num;
	uint64_t last_meters_ms;
	char state_path[512];
	volatile sig_atomic_t stop;
} A;

static void on_signal(int sig) { (void)sig; A.stop = 1; }

/* ---- publishing ---------------------------------------------------------------- */

static void publish(Ember__Envelope *env)
{
	int r;

	env->version = 1;
	env->analyzer = A.shard;
	env->seq = ++A.seq;
	r = bus__send_envelope(A.push, env);
	if (r == -EAGAIN)
		A.stats[AS_ZMQ_HWM_DROPS]++;
	else if (r)
		A.stats[AS_ZMQ_ERRORS]++;
}

static void task_to_proto(const struct task_def *t, Ember__Task *p)
{
	ember__task__init(p);
	p->id = (char *)t->id;
	p->kind = (Ember__TaskKind)t->kind;
	p->n_pids = t->npids;
	p->pids = (uint32_t *)t->pids;
	p->start_unix_ms = t->start_unix_ms;
	p->duration_ms = t->duration_ms;
	p->origin = (char *)t->origin;
	p->period_ns = t->period_ns;
	p->min_block_ns = t->min_block_ns;
}

static const char *ap_name(uint32_t ap)
{
	switch (ap) {
	case CTL_AP_PERF_CPU_CLOCK: return "perf_event:cpu-clock";
	case CTL_AP_TP_BTF: return "tp_btf";
	case CTL_AP_RAW_TP: return "raw_tp";
	case CTL_AP_TRACEPOINT: return "tracepoint";
	case CTL_AP_PERF_PAGE_FAULTS: return "perf_event:page-faults";
	default: return "none";
	}
}

static void publish_task_event(const struct task_def *t, Ember__TaskEvent__State state, const char *error)
{
	Ember__Envelope env = EMBER__ENVELOPE__INIT;
	Ember__TaskEvent ev = EMBER__TASK_EVENT__INIT;
	Ember__Task task;

	task_to_proto(t, &task);
	ev.task = &task;
	ev.state = state;
	ev.error = (char *)(error ? error : "");
	ev.attach_point = t->attach_point;
	ev.attach_point_name = (char *)ap_name(t->attach_point);
	env.body_case = EMBER__ENVELOPE__BODY_TASK_EVENT;
	env.task_event = &ev;
	publish(&env);
}

static struct pending *pending_of(const char *id)
{
	for (unsigned i = 0; i < MAX_TASKS; i++)
		if (A.pend[i].task_id[0] && !strcmp(A.pend[i].task_id, id))
			return &A.pend[i];
	return NULL;
}

static void free_sample(Ember__StackSample *s)
{
	for (size_t i = 0; i < s->n_kernel_frames; i++)
		free(s->kernel_frames[i]);
	for (size_t i = 0; i < s->n_user_frames; i++)
		free(s->user_frames[i]);
	free(s->kernel_frames);
	free(s->user_frames);
	free(s->kernel_resolved);
	free(s->user_resolved);
	free(s->process_name);
	free(s);
}

static void flush_pending(struct pending *p, uint64_t window_end_ns)
{
	struct task_def *t = task_mgr__find(A.tm, p->task_id);
	Ember__Envelope env = EMBER__ENVELOPE__INIT;
	Ember__ProfileBatch b = EMBER__PROFILE_BATCH__INIT;
	Ember__Task task;

	if (t && p->n) {
		task_to_proto(t, &task);
		b.task = &task;
		b.window_start_unix_ns = p->window_start_ns;
		b.window_end_unix_ns = window_end_ns;
		b.n_samples = p->n;
		b.samples = p->v;
		env.body_case = EMBER__ENVELOPE__BODY_PROFILE;
		env.profile = &b;
		publish(&env);
	}
	for (size_t i = 0; i < p->n; i++)
		free_sample(p->v[i]);
	p->n = 0;
	p->window_start_ns = window_end_ns;
}

/* ---- records from the ring ------------------------------------------------------ */

static char *frame_text(const struct sym_frame *f)
{
	char buf[512];

	if (sym_frame__format(f, buf, sizeof(buf)) < 0)
		snprintf(buf, sizeof(buf), "[unknown]");
	if (!f->resolved)
		A.stats[AS_FRAMES_UNKNOWN]++;
	A.stats[AS_FRAMES]++;
	return strdup(buf);
}

static char *comm_text(const char *comm)
{
	char buf[EMBER_COMM_LEN + 1];
	size_t i;

	/* comm is set by the target process: keep it printable. */
	for (i = 0; i < EMBER_COMM_LEN && comm[i]; i++)
		buf[i] = (comm[i] >= 0x20 && comm[i] < 0x7f && comm[i] != ';') ? comm[i] : '_';
	buf[i] = 0;
	return strdup(i ? buf : "[unknown]");
}

/*
 * Stacks walked from inside a BPF program start with the program and the
 * tracing glue that ran it; they are ours, not the target's.
 */
static int is_tracing_frame(const struct sym_frame *f)
{
	static const char *const prefixes[] = { "bpf_prog_", "bpf_trace_run", "__bpf_trace_", "perf_trace_",
						"trace_call_bpf", "__traceiter_", "bpf_overflow_handler",
						"__perf_event_overflow", "perf_swevent_" };
	if (!f->resolved || !f->name)
		return 0;
	for (unsigned i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (!strncmp(f->name, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

static int on_stack_rec(const void *data, uint32_t len)
{
	struct ember_rec_stack h;
	struct sym_frame frames[EMBER_MAX_STACK_DEPTH];
	uint64_t ips[EMBER_MAX_STACK_DEPTH];
	struct task_def *t;
	struct pending *p;
	Ember__StackSample *s;

	if (len < sizeof(h))
		goto bad;
	memcpy(&h, data, sizeof(h));
	if (h.nkern > EMBER_MAX_STACK_DEPTH || h.nuser > EMBER_MAX_STACK_DEPTH ||
	    len != sizeof(h) + (uint32_t)(h.nkern + h.nuser) * sizeof(uint64_t))
		goto bad;
	A.stats[AS_STACKS]++;
	t = task_mgr__find_pid(A.tm, h.tgid, h.kind);
	p = t ? pending_of(t->id) : NULL;
	if (!p) {
		A.stats[AS_STACKS_NO_TASK]++;
		return 0;
	}
	if (p->n >= MAX_SAMPLES_PER_WINDOW) {
		A.stats[AS_WINDOW_CAP_DROPS]++;
		return 0;
	}
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		void *v = realloc(p->v, cap * sizeof(*p->v));
		if (!v)
			return 0;
		p->v = v;
		p->cap = cap;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return 0;
	ember__stack_sample__init(s);
	s->pid = h.tgid;
	s->process_name = comm_text(h.comm);
	s->count = h.count;
	s->weight = h.weight;
	s->kernel_frames = calloc(h.nkern ? h.nkern : 1, sizeof(char *));
	s->user_frames = calloc(h.nuser ? h.nuser : 1, sizeof(char *));
	s->kernel_resolved = calloc(h.nkern ? h.nkern : 1, sizeof(protobuf_c_boolean));
	s->user_resolved = calloc(h.nuser ? h.nuser : 1, sizeof(protobuf_c_boolean));
	if (!s->kernel_frames || !s->user_frames || !s->kernel_resolved || !s->user_resolved) {
		free_sample(s);
		return 0;
	}
	if (h.nkern) {
		memcpy(ips, (const char *)data + sizeof(h), h.nkern * sizeof(uint64_t));
		unsigned skip = 0;
		if (symbolizer__resolve_kernel(A.sym, ips, h.nkern, frames) >= 0) {
			while (skip < h.nkern && is_tracing_frame(&frames[skip]))
				skip++;
			A.stats[AS_TRACING_FRAMES] += skip;
			for (unsigned i = skip; i < h.nkern; i++) {
				s->kernel_resolved[s->n_kernel_resolved++] = frames[i].resolved;
				s->kernel_frames[s->n_kernel_frames++] = frame_text(&frames[i]);
				s->unresolved += !frames[i].resolved;
			}
		}
	}
	if (h.nuser) {
		memcpy(ips, (const char *)data + sizeof(h) + h.nkern * sizeof(uint64_t), h.nuser * sizeof(uint64_t));
		if (symbolizer__resolve_user(A.sym, h.tgid, ips, h.nuser, frames) >= 0)
			for (unsigned i = 0; i < h.nuser; i++) {
				s->user_resolved[s->n_user_resolved++] = frames[i].resolved;
				s->user_frames[s->n_user_frames++] = frame_text(&frames[i]);
				s->unresolved += !frames[i].resolved;
			}
	}
	p->v[p->n++] = s;
	p->samples_total += h.count;
	p->stacks_total++;
	return 0;
bad:
	A.stats[AS_BAD_RECORDS]++;
	return 0;
}

static int on_record(void *ctx, uint32_t type, const void *data, uint32_t len)
{
	(void)ctx;
	A.stats[AS_RECORDS]++;
	if (type == EMBER_REC_STACK)
		return on_stack_rec(data, len);
	if (type == EMBER_REC_WINDOW && len == sizeof(struct ember_rec_window)) {
		struct ember_rec_window w;
		memcpy(&w, data, sizeof(w));
		A.stats[AS_RING_WINDOW_DROPS] += w.ring_drops;
		for (unsigned i = 0; i < MAX_TASKS; i++)
			if (A.pend[i].task_id[0] && A.pend[i].kind == w.kind)
				flush_pending(&A.pend[i], w.end_ns);
		return 0;
	}
	A.stats[AS_BAD_RECORDS]++;
	return 0;
}

static void consume_all(void)
{
	int r = shm_ring__consume(A.ring, on_record, NULL, 0);
	if (r == -EBADMSG) {
		log_error("ring shard %u is corrupt; restarting", A.shard);
		exit(1);
	}
}

/* ---- tasks ---------------------------------------------------------------------- */

static void save_state(void)
{
	Ember__Reply rep = EMBER__REPLY__INIT;
	Ember__Task tasks[MAX_TASKS], *ptrs[MAX_TASKS];
	char tmp[600];
	unsigned n = task_mgr__count(A.tm);
	uint8_t *buf;
	size_t len;
	FILE *f;

	for (unsigned i = 0; i < n; i++) {
		struct task_def *t = task_mgr__at(A.tm, i);
		task_to_proto(t, &tasks[i]);
		ptrs[i] = &tasks[i];
	}
	rep.n_tasks = n;
	rep.tasks = ptrs;
	len = ember__reply__get_packed_size(&rep);
	buf = malloc(len ? len : 1);
	if (!buf)
		return;
	ember__reply__pack(&rep, buf);
	snprintf(tmp, sizeof(tmp), "%s.tmp", A.state_path);
	f = fopen(tmp, "we");
	if (f) {
		int ok = fwrite(buf, 1, len, f) == len;
		ok &= fclose(f) == 0;
		if (ok)
			rename(tmp, A.state_path);
	}
	free(buf);
}

static uint64_t task_num(const char *id)
{
	/* Stable across analyzer restarts: the collector recognises a re-attach. */
	uint64_t h = 1469598103934665603ull;
	for (const char *c = id; *c; c++)
		h = (h ^ (uint8_t)*c) * 1099511628211ull;
	return h;
}

static int start_task(struct task_def *def, char *err, size_t errlen)
{
	struct ctl_attach_ans ans;
	struct task_def *t;
	struct pending *p = NULL;
	int r;

	for (uint32_t i = 0; i < def->npids; i++) {
		char path[32];
		struct stat st;
		snprintf(path, sizeof(path), "/proc/%u", def->pids[i]);
		if (stat(path, &st)) {
			snprintf(err, errlen, "pid %u does not exist", def->pids[i]);
			return -ESRCH;
		}
		if (def->pids[i] % A.nshards != A.shard) {
			snprintf(err, errlen, "pid %u belongs to analyzer shard %u, not %u", def->pids[i],
				 def->pids[i] % A.nshards, A.shard);
			return -EINVAL;
		}
	}
	if (def->kind < EMBER_TASK_ONCPU || def->kind > EMBER_TASK_MEM) {
		snprintf(err, errlen, "task kind %u is not supported (on-CPU, off-CPU and memory are)", def->kind);
		return -EOPNOTSUPP;
	}
	for (unsigned i = 0; i < MAX_TASKS && !p; i++)
		if (!A.pend[i].task_id[0])
			p = &A.pend[i];
	if (!p) {
		snprintf(err, errlen, "too many tasks (%d)", MAX_TASKS);
		return -ENOSPC;
	}
	def->num_id = task_num(def->id);
	r = task_mgr__add(A.tm, def, &t);
	if (r) {
		snprintf(err, errlen, r == -EEXIST ? "a task with this id, or for one of these pids and kind, already exists"
						  : "invalid task: %s", strerror(-r));
		return r;
	}
	r = collector_client__attach(A.cc, t->num_id, t->kind, t->pids, t->npids, t->period_ns, t->min_block_ns, &ans);
	if (r) {
		snprintf(err, errlen, "the collector refused the task: %s", strerror(-r));
		task_mgr__remove(A.tm, def->id);
		return r;
	}
	t->attach_point = ans.attach_point;
	memset(p, 0, sizeof(*p));
	snprintf(p->task_id, sizeof(p->task_id), "%s", t->id);
	p->kind = t->kind;
	p->window_start_ns = (uint64_t)t->start_unix_ms * 1000000ull;
	for (uint32_t i = 0; i < t->npids; i++)
		(void)symbolizer__preload(A.sym, t->pids[i]);
	A.stats[AS_TASKS_STARTED]++;
	log_info("task %s started: kind %u, %u pid(s), %llu ms, attach point %s", t->id, t->kind, t->npids,
		 (unsigned long long)t->duration_ms, ap_name(t->attach_point));
	publish_task_event(t, EMBER__TASK_EVENT__STATE__STARTED, NULL);
	save_state();
	return 0;
}

static void end_task(struct task_def *t, const char *why)
{
	struct pending *p = pending_of(t->id);
	char id[TASK_ID_LEN];
	int r;

	r = collector_client__detach(A.cc, t->num_id);
	if (r && r != -ENOENT)
		log_warn("detaching task %s: %s", t->id, strerror(-r));
	/* The collector drained before answering: everything is in the ring now. */
	consume_all();
	if (p) {
		flush_pending(p, timeutil__unix_ms() * 1000000ull);
		log_info("task %s finished (%s): %llu samples in %llu stacks", t->id, why,
			 (unsigned long long)p->samples_total, (unsigned long long)p->stacks_total);
		free(p->v);
		memset(p, 0, sizeof(*p));
	}
	publish_task_event(t, EMBER__TASK_EVENT__STATE__FINISHED, NULL);
	A.stats[AS_TASKS_FINISHED]++;
	for (uint32_t i = 0; i < t->npids; i++)
		symbolizer__forget_pid(A.sym, t->pids[i]);
	snprintf(id, sizeof(id), "%s", t->id);
	task_mgr__remove(A.tm, id);
	save_state();
}

static int all_pids_gone(const struct task_def *t)
{
	for (uint32_t i = 0; i < t->npids; i++)
		if (!kill((pid_t)t->pids[i], 0) || errno != ESRCH)
			return 0;
	return 1;
}

static void check_tasks(void)
{
	uint64_t now = timeutil__unix_ms();

	for (unsigned i = 0; i < task_mgr__count(A.tm);) {
		struct task_def *t = task_mgr__at(A.tm, i);
		if (now >= t->start_unix_ms + t->duration_ms)
			end_task(t, "duration reached");
		else if (all_pids_gone(t))
			end_task(t, "target process exited");
		else
			i++;
	}
}

static void restore_state(void)
{
	const size_t cap = 1 << 20; /* MAX_TASKS tasks of CTL_MAX_PIDS pids fit easily */
	_cleanup_free_ uint8_t *buf = malloc(cap);
	size_t len;
	Ember__Reply *rep;
	FILE *f = fopen(A.state_path, "re");

	if (!f || !buf) {
		if (f)
			fclose(f);
		return;
	}
	len = fread(buf, 1, cap, f);
	fclose(f);
	rep = ember__reply__unpack(NULL, len, buf);
	if (!rep) {
		log_warn("ignoring unreadable task state %s", A.state_path);
		return;
	}
	for (size_t i = 0; i < rep->n_tasks; i++) {
		Ember__Task *p = rep->tasks[i];
		struct task_def def = { 0 };
		char err[256];
		if (!p->id || !task_def__valid_id(p->id) || p->n_pids == 0 || p->n_pids > CTL_MAX_PIDS)
			continue;
		snprintf(def.id, sizeof(def.id), "%s", p->id);
		def.kind = p->kind;
		def.npids = p->n_pids;
		memcpy(def.pids, p->pids, p->n_pids * sizeof(uint32_t));
		def.start_unix_ms = p->start_unix_ms;
		def.duration_ms = p->duration_ms;
		def.period_ns = p->period_ns;
		def.min_block_ns = p->min_block_ns;
		snprintf(def.origin, sizeof(def.origin), "%s", p->origin ? p->origin : "");
		if (timeutil__unix_ms() >= def.start_unix_ms + def.duration_ms)
			continue;
		if (start_task(&def, err, sizeof(err)))
			log_warn("could not resume task %s: %s", def.id, err);
		else
			log_info("resumed task %s after restart", def.id);
	}
	ember__reply__free_unpacked(rep, NULL);
}

/* ---- meters and requests ----------------------------------------------------------- */

_Static_assert(AS_MAX + CTL_STAT_MAX + 16 <= BUS_METER_SET_MAX, "analyzer meters fit a meter set");

struct meter_set {
	struct bus_meter_set set;
	Ember__Label shard_label;
	Ember__Label *labels[1];
	char shard_buf[16];
};

static void meter_add(struct meter_set *ms, const char *name, double v, int counter, uint64_t ts)
{
	bus__meter_set_add(&ms->set, name, v, counter, ts);
}

static void collect_meters(struct meter_set *ms, int with_collector)
{
	uint64_t ts = timeutil__unix_ms();
	struct symbolizer_stats ss;
	struct shm_ring_stats rs;
	struct memstats mem;
	struct ctl_stats_ans cs;

	ember__label__init(&ms->shard_label);
	snprintf(ms->shard_buf, sizeof(ms->shard_buf), "%u", A.shard);
	ms->shard_label.name = "analyzer";
	ms->shard_label.value = ms->shard_buf;
	ms->labels[0] = &ms->shard_label;
	bus__meter_set_reset(&ms->set, ms->labels, 1);
	for (unsigned i = 0; i < AS_MAX; i++)
		meter_add(ms, astat_names[i], A.stats[i], 1, ts);
	meter_add(ms, "tasks_running", task_mgr__count(A.tm), 0, ts);
	symbolizer__stats(A.sym, &ss);
	meter_add(ms, "symbolizer_resolved", ss.resolved, 1, ts);
	meter_add(ms, "symbolizer_unknown", ss.unknown, 1, ts);
	shm_ring__stats(A.ring, &rs);
	meter_add(ms, "ring_consumed", rs.consumed, 1, ts);
	if (!memstats__read(&mem)) {
		meter_add(ms, "analyzer_rss_bytes", mem.rss, 0, ts);
		meter_add(ms, "analyzer_rss_peak_bytes", mem.rss_peak, 0, ts);
		if (mem.jemalloc) {
			meter_add(ms, "analyzer_jemalloc_allocated_bytes", mem.allocated, 0, ts);
			meter_add(ms, "analyzer_jemalloc_resident_bytes", mem.resident, 0, ts);
		}
	}
	if (with_collector && !collector_client__stats(A.cc, &cs))
		for (unsigned i = 0; i < CTL_STAT_MAX && i < cs.n; i++)
			meter_add(ms, ctl__stat_name(i), cs.v[i], i != CTL_STAT_TASKS_ACTIVE, ts);
}

static void publish_meters(void)
{
	static struct meter_set ms;
	Ember__Envelope env = EMBER__ENVELOPE__INIT;
	Ember__MeterBatch b = EMBER__METER_BATCH__INIT;

	/* Shard 0 reports the collector's counters once for everyone. */
	collect_meters(&ms, A.shard == 0);
	b.n_meters = ms.set.n;
	b.meters = ms.set.ptrs;
	env.body_case = EMBER__ENVELOPE__BODY_METERS;
	env.meters = &b;
	publish(&env);
}

static void handle_request(void)
{
	Ember__Request *req = bus__recv_request(A.rep, ZMQ_DONTWAIT);
	Ember__Reply rep = EMBER__REPLY__INIT;
	static struct meter_set ms;
	Ember__Task task, tasks[MAX_TASKS], *ptrs[MAX_TASKS];
	char err[256] = "";

	if (!req) {
		if (errno == EAGAIN)
			return;
		A.stats[AS_BAD_REQUESTS]++;
		rep.err = -EBADMSG;
		rep.error = "malformed request";
		bus__send_reply(A.rep, &rep);
		return;
	}
	A.stats[AS_REQUESTS]++;
	switch (req->body_case) {
	case EMBER__REQUEST__BODY_SUBMIT: {
		Ember__Task *s = req->submit;
		struct task_def def = { 0 };
		if (!s->n_pids || s->n_pids > CTL_MAX_PIDS) {
			rep.err = -EINVAL;
			snprintf(err, sizeof(err), "a task needs 1..%d pids", CTL_MAX_PIDS);
			break;
		}
		if (s->id && s->id[0])
			snprintf(def.id, sizeof(def.id), "%s", s->id);
		else
			snprintf(def.id, sizeof(def.id), "task-%llu-%u-%llu", (unsigned long long)timeutil__unix_ms(),
				 A.shard, (unsigned long long)++A.next_task_num);
		def.kind = s->kind;
		def.npids = s->n_pids;
		memcpy(def.pids, s->pids, s->n_pids * sizeof(uint32_t));
		def.start_unix_ms = timeutil__unix_ms();
		def.duration_ms = s->duration_ms;
		def.period_ns = s->period_ns ? s->period_ns : A.cfg->profiling.task.on_cpu.dump_period_ns;
		def.min_block_ns = s->min_block_ns ? s->min_block_ns : A.cfg->profiling.task.off_cpu.min_block_time_ns;
		snprintf(def.origin, sizeof(def.origin), "%s", s->origin && s->origin[0] ? s->origin : "cli");
		rep.err = start_task(&def, err, sizeof(err));
		if (!rep.err) {
			task_to_proto(task_mgr__find(A.tm, def.id), &task);
			rep.task = &task;
		}
		break;
	}
	case EMBER__REQUEST__BODY_CANCEL: {
		struct task_def *t = req->cancel ? task_mgr__find(A.tm, req->cancel) : NULL;
		if (!t) {
			rep.err = -ENOENT;
			snprintf(err, sizeof(err), "no task '%s'", req->cancel ? req->cancel : "");
		} else {
			end_task(t, "cancelled");
		}
		break;
	}
	case EMBER__REQUEST__BODY_STATS:
		collect_meters(&ms, 1);
		rep.n_stats = ms.set.n;
		rep.stats = ms.set.ptrs;
		break;
	case EMBER__REQUEST__BODY_LIST:
		for (unsigned i = 0; i < task_mgr__count(A.tm); i++) {
			task_to_proto(task_mgr__at(A.tm, i), &tasks[i]);
			ptrs[i] = &tasks[i];
		}
		rep.n_tasks = task_mgr__count(A.tm);
		rep.tasks = ptrs;
		break;
	default:
		A.stats[AS_BAD_REQUESTS]++;
		rep.err = -EINVAL;
		snprintf(err, sizeof(err), "unknown request");
	}
	rep.error = err;
	if (bus__send_reply(A.rep, &rep))
		A.stats[AS_ZMQ_ERRORS]++;
	ember__request__free_unpacked(req, NULL);
}

/* ---- symbolizer callbacks: every file comes from the collector's broker ------------ */

static int cb_open_maps(void *ctx, uint32_t pid) { (void)ctx; return collector_client__open_maps(A.cc, pid); }
static int cb_open_file(void *ctx, uint32_t pid, uint64_t start, uint64_t end, const char *path)
{
	(void)ctx;
	(void)path;
	return collector_client__open_file(A.cc, pid, start, end);
}
static int cb_open_kallsyms(void *ctx) { (void)ctx; return collector_client__open_kallsyms(A.cc); }
static int cb_open_debuginfod(void *ctx, const uint8_t *build_id, size_t len)
{
	(void)ctx;
	return debuginfod__fetch(A.dinfod, build_id, len);
}
static int cb_open_perf_map(void *ctx, uint32_t pid) { (void)ctx; return collector_client__open_perf_map(A.cc, pid); }
static int cb_open_debug_build_id(void *ctx, uint32_t pid, const uint8_t *build_id, size_t len)
{
	(void)ctx;
	return collector_client__open_debug_build_id(A.cc, pid, build_id, len);
}
static int cb_open_debuglink(void *ctx, uint32_t pid, uint64_t start, uint64_t end, const char *path,
			     const char *name)
{
	(void)ctx;
	(void)path; /* the collector finds the binary's directory from the mapping itself */
	return collector_client__open_debuglink(A.cc, pid, start, end, name);
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
	char err[512], sock[512], ep[512];
	int opt, fds[3], hwm, zero = 0;
	int64_t maxmsg = BUS_MAX_MSG;
	struct sigaction sa = { .sa_handler = on_signal };

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
	signal(SIGPIPE, SIG_IGN);

	snprintf(sock, sizeof(sock), "%s/collector.sock", A.cfg->ember.run_dir);
	A.cc = collector_client__connect(sock, A.shard, fds, &A.nshards);
	if (!A.cc) {
		log_error("cannot attach to the collector at %s: %m", sock);
		return 1;
	}
	A.ring = shm_ring__attach(fds[0], fds[1], fds[2]);
	if (!A.ring) {
		log_error("cannot map ring shard %u: %m", A.shard);
		return 1;
	}
	struct symbolizer_opts so = { .sz = sizeof(so), .open_maps = cb_open_maps, .open_mapped_file = cb_open_file,
				      .open_kallsyms = cb_open_kallsyms, .open_perf_map = cb_open_perf_map,
				      .open_debug_build_id = cb_open_debug_build_id,
				      .open_debuglink = cb_open_debuglink };
	if (A.cfg->symbolizer.debuginfod.enabled) {
		char cache[4096];
		const char *dir = A.cfg->symbolizer.debuginfod.cache_dir;

		if (!dir || !dir[0]) {
			snprintf(cache, sizeof(cache), "%s/debuginfod", A.cfg->ember.run_dir);
			dir = cache;
		}
		A.dinfod = debuginfod__new(A.cfg->symbolizer.debuginfod.urls, dir);
		if (A.dinfod) {
			so.ctx = NULL;
			so.open_debuginfod = cb_open_debuginfod;
			log_info("debuginfod: %s (cache %s)", A.cfg->symbolizer.debuginfod.urls, dir);
		} else {
			log_warn("debuginfod disabled: %s", errno == ENOENT ? "libdebuginfod.so.1 not available" :
				 errno == EINVAL ? "symbolizer.debuginfod.urls is empty" : strerror(errno));
		}
	}
	A.sym = symbolizer__new(&so);
	A.tm = task_mgr__new(MAX_TASKS);
	if (!A.sym || !A.tm) {
		log_error("cannot create the symbolizer / task manager: %m");
		return 1;
	}
	A.zctx = zmq_ctx_new();
	A.push = zmq_socket(A.zctx, ZMQ_PUSH);
	A.rep = zmq_socket(A.zctx, ZMQ_REP);
	hwm = (int)A.cfg->exporter.zmq_hwm;
	zmq_setsockopt(A.push, ZMQ_SNDHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(A.rep, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg));
	zmq_setsockopt(A.rep, ZMQ_LINGER, &zero, sizeof(zero));
	{
		int linger = 3000; /* flush what is queued for the exporter on exit, within reason */
		zmq_setsockopt(A.push, ZMQ_LINGER, &linger, sizeof(linger));
	}
	bus__exporter_endpoint(A.cfg->ember.run_dir, ep, sizeof(ep));
	if (zmq_connect(A.push, ep)) {
		log_error("cannot connect to the exporter at %s: %s", ep, zmq_strerror(errno));
		return 1;
	}
	bus__analyzer_endpoint(A.cfg->ember.run_dir, A.shard, ep, sizeof(ep));
	unlink(ep + strlen("ipc://"));
	{
		mode_t old = umask(0077); /* only our uid and root may submit tasks */
		int r = zmq_bind(A.rep, ep);
		umask(old);
		if (r) {
			log_error("cannot listen on %s: %s", ep, zmq_strerror(errno));
			return 1;
		}
	}
	snprintf(A.state_path, sizeof(A.state_path), "%s/analyzer-%u.tasks", A.cfg->ember.run_dir, A.shard);
	restore_state();
	log_info("ready: shard %u of %u, uid %u", A.shard, A.nshards, (unsigned)geteuid());

	A.last_meters_ms = timeutil__unix_ms();
	while (!A.stop) {
		zmq_pollitem_t items[2] = {
			{ .socket = A.rep, .events = ZMQ_POLLIN },
			{ .fd = shm_ring__event_fd(A.ring), .events = ZMQ_POLLIN },
		};
		uint64_t now = timeutil__unix_ms(), next = task_mgr__next_deadline(A.tm);
		long timeout = 1000;
		int n;

		if (next != UINT64_MAX)
			timeout = next <= now ? 0 : (next - now < 1000 ? (long)(next - now) : 1000);
		if (shm_ring__prepare_wait(A.ring) != 0)
			timeout = 0;
		n = zmq_poll(items, 2, timeout);
		if (n < 0 && errno != EINTR) {
			log_error("zmq_poll: %s", zmq_strerror(errno));
			break;
		}
		consume_all();
		if (n > 0 && (items[0].revents & ZMQ_POLLIN))
			handle_request();
		check_tasks();
		if (collector_client__broken(A.cc)) {
			log_error("lost the collector connection; exiting to be restarted");
			return 1;
		}
		now = timeutil__unix_ms();
		if (now - A.last_meters_ms >= A.cfg->profiling.flush_interval_ns / 1000000) {
			A.last_meters_ms = now;
			publish_meters();
		}
	}
	log_info("stopping: finishing %u task(s)", task_mgr__count(A.tm));
	while (task_mgr__count(A.tm))
		end_task(task_mgr__at(A.tm, 0), "agent stopping");
	publish_meters();
	zmq_close(A.rep);
	zmq_close(A.push);
	zmq_ctx_term(A.zctx);
	unlink(A.state_path);
	symbolizer__free(A.sym);
	debuginfod__free(A.dinfod);
	task_mgr__free(A.tm);
	shm_ring__free(A.ring);
	collector_client__free(A.cc);
	config__free(A.cfg);
	return 0;
}
