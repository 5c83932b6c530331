/*
 * The `file` backend: per task, folded stacks and an SVG flame graph under
 * <ember.output_dir>/<task id>/, rewritten atomically after each flush window
 * (so a long task can be looked at while it runs) and finally when the task
 * finishes, followed by task.json: its presence means the files are final.
 * A network task gets network.json instead (each batch's JSON lines appended
 * as it comes) and network.txt (the summary, rewritten like a flame graph),
 * both from exporter/net_report.  A thread task gets threads.json (each
 * batch's events appended as gala-gopher's JSON objects, exporter/thread_events.h)
 * and, at its end, threads.html: the timeline (exporter/thread_timeline.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "common/fileutil.h"
#include "common/profile_files.h"
#include "common/profile_kind.h"
#include "common/task_cause.h"
#include "exporter/backend.h"
#include "exporter/flamegraph.h"
#include "exporter/stack_sample.h"
#include "exporter/net_report.h"
#include "exporter/thread_events.h"
#include "exporter/thread_timeline.h"
#include "common/timeutil.h"

#define MAX_FILE_TASKS 64
/* Frames kept per side (kernel, user) of a stack; deeper stacks are cut and counted. */

struct ftask {
	char id[64];
	bool used;
	const struct profile_kind *kind;  /* its row: names, titles, units, files */
	struct flamegraph *fg;        /* weighted by count (samples, faults) */
	struct flamegraph *fg_time;   /* a weighted kind (off-CPU): weighted by blocked µs */
	struct net_report *net;       /* network: the summary */
	struct thread_timeline *tl;   /* threads: every event so far, for the timeline */
	uint64_t thread_events, thread_lost, thread_unwritten;
	uint64_t samples, windows;
	uint64_t start_ms, duration_ms;
	char attach_point[32];
	int dirty;
	/* Its end came ("finished", "failed") but its files could not all be written (a full disk): retried each tick. */
	char final[12];
	/* A continuous-profiling trigger's causes: task.json lists them, the SVG title says the first. */
	unsigned ncauses;
	struct task_cause causes[8];
	/* A REST flamegraph task's files (gala-gopher's names, Task.flame): written there, once, at its end. */
	struct {
		bool set, per_process;
		char svg_dir[256], flame_dir[256];
		uint64_t period_start_ms;
		uint32_t part, pid;
	} flame;
};

struct file_backend {
	char *dir;
	size_t max_nodes;
	int want_folded, want_svg;
	struct ftask tasks[MAX_FILE_TASKS];
	uint64_t files_written, write_errors, tasks_dropped, frames_truncated, tasks_resumed, resume_errors;
	uint64_t finals_retried;      /* ends written again after a write failed */
	uint64_t network_batches, thread_batches;
	struct thread_host host;
	/*
	 * Readable while a flame graph holds a window its files do not: the
	 * exporter then ticks us at once instead of at the next 250-ms tick.
	 * What this process holds unwritten dies with it (a crash, kill -9),
	 * and the windows that reached it are gone from the analyzers too.
	 */
	int pending_fd;
	bool pending;
};

/* <dir>/<task id>/<the task's file f>; -ENOENT when this kind has no such file. */
static int task_path(const struct file_backend *fb, const struct ftask *t, enum profile_file f, char *buf,
		     size_t len)
{
	char name[64];
	int n = profile_files__name((Ember__TaskKind)t->kind->wire, f, name, sizeof(name));

	if (n < 0)
		return n;
	n = snprintf(buf, len, "%s/%s/%s", fb->dir, t->id, name);
	return n >= 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

static int valid_id(const char *id)
{
	if (!id || !*id || strlen(id) >= 64 || id[0] == '.')
		return 0;
	for (const char *c = id; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
		      *c == '.' || *c == '_' || *c == '-' || *c == ':'))
			return 0;
	return 1;
}

/*
 * A flame graph's files hold its stacks and weights, not how many windows
 * made them: that count goes beside them, for a restarted exporter.
 */
#define WINDOWS_FILE ".windows"

static int write_windows_cb(FILE *out, void *ctx)
{
	return fprintf(out, "%llu\n", (unsigned long long)((const struct ftask *)ctx)->windows) < 0 ? -EIO : 0;
}

/* 0 unless .windows is a regular file holding a count (not a FIFO or a link planted there). */
static uint64_t read_windows(const struct file_backend *fb, const struct ftask *t)
{
	char path[1200], buf[32];
	struct stat st;
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "%s/%s/" WINDOWS_FILE, fb->dir, t->id);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (!fstat(fd, &st) && S_ISREG(st.st_mode))
		n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	return strtoull(buf, NULL, 10);
}

/*
 * A restarted exporter picks up what it wrote before for a task still running,
 * so the final files cover the whole task, not just the windows after the restart.
 */
static void resume(struct file_backend *fb, struct ftask *t)
{
	char path[1200];
	FILE *f;

	if (t->net) {
		struct net_report_stats st;

		if (task_path(fb, t, PF_NETWORK_JSON, path, sizeof(path)) || !(f = fopen(path, "re")))
			return;
		net_report__load_json(t->net, f);
		fclose(f);
		net_report__stats(t->net, &st);
		fb->resume_errors += st.bad_lines;
		t->windows = st.batches;
		fb->tasks_resumed++;
		return;
	}
	if (task_path(fb, t, PF_FOLDED, path, sizeof(path)) || !(f = fopen(path, "re")))
		return;
	if (flamegraph__load_folded(t->fg_time ? t->fg_time : t->fg, f) < 0)
		fb->resume_errors++;
	fclose(f);
	if (t->fg_time && !task_path(fb, t, PF_COUNT_FOLDED, path, sizeof(path))) {
		f = fopen(path, "re");
		if (f) {
			if (flamegraph__load_folded(t->fg, f) < 0)
				fb->resume_errors++;
			fclose(f);
		}
	}
	t->samples = flamegraph__total(t->fg);
	t->windows = read_windows(fb, t);
	fb->tasks_resumed++;
}

static struct ftask *task_get(struct file_backend *fb, const Ember__Task *t, int create)
{
	struct ftask *free_slot = NULL;
	const struct profile_kind *k;

	if (!t || !valid_id(t->id))
		return NULL;
	for (unsigned i = 0; i < MAX_FILE_TASKS; i++) {
		if (fb->tasks[i].used && !strcmp(fb->tasks[i].id, t->id))
			return &fb->tasks[i];
		if (!fb->tasks[i].used && !free_slot)
			free_slot = &fb->tasks[i];
	}
	/* the analyzers send only the kinds of the table (analyzer/tasks.c refuses others) */
	if (!create || !(k = profile_kind__by_wire(t->kind)))
		return NULL;
	if (!free_slot) {
		fb->tasks_dropped++;
		return NULL;
	}
	memset(free_slot, 0, sizeof(*free_slot));
	if (k->flags & PROFILE_KIND_NETWORK) {
		if (!(free_slot->net = net_report__new()))
			return NULL;
	} else if (k->flags & PROFILE_KIND_THREADS) {
		if (!(free_slot->tl = thread_timeline__new(0)))
			return NULL;
	} else if (!(free_slot->fg = flamegraph__new(fb->max_nodes))) {
		return NULL;
	}
	if (k->flags & PROFILE_KIND_WEIGHTED) {
		free_slot->fg_time = flamegraph__new(fb->max_nodes);
		if (!free_slot->fg_time) {
			free_slot->fg = flamegraph__free(free_slot->fg);
			return NULL;
		}
	}
	snprintf(free_slot->id, sizeof(free_slot->id), "%s", t->id);
	free_slot->kind = k;
	free_slot->start_ms = t->start_unix_ms;
	free_slot->duration_ms = t->duration_ms;
	if (t->flame && !fileutil__safe_dir(t->flame->svg_dir, NULL, 0) && !fileutil__safe_dir(t->flame->flame_dir, NULL, 0)) {
		free_slot->flame.set = true;
		free_slot->flame.per_process = t->flame->per_process;
		snprintf(free_slot->flame.svg_dir, sizeof(free_slot->flame.svg_dir), "%s", t->flame->svg_dir);
		snprintf(free_slot->flame.flame_dir, sizeof(free_slot->flame.flame_dir), "%s", t->flame->flame_dir);
		free_slot->flame.period_start_ms = t->flame->period_start_unix_ms;
		free_slot->flame.part = t->flame->part;
		free_slot->flame.pid = t->n_pids ? t->pids[0] : 0;
	}
	for (size_t i = 0; i < t->n_causes && free_slot->ncauses < 8; i++) {
		task_cause__from_pb(&free_slot->causes[free_slot->ncauses++], t->causes[i]);
	}
	free_slot->used = true;
	resume(fb, free_slot);
	return free_slot;
}

static void *file_init(const struct ember_config *cfg, char *err, size_t errlen)
{
	struct file_backend *fb = calloc(1, sizeof(*fb));

	if (!fb)
		return NULL;
	fb->pending_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (fb->pending_fd < 0) {
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		free(fb);
		return NULL;
	}
	fb->dir = strdup(cfg->ember.output_dir);
	fb->max_nodes = (size_t)cfg->exporter.flamegraph.max_nodes;
	thread_events__host(&fb->host);
	for (size_t i = 0; i < cfg->exporter.file.formats.n; i++) {
		fb->want_folded |= !strcmp(cfg->exporter.file.formats.v[i], "folded");
		fb->want_svg |= !strcmp(cfg->exporter.file.formats.v[i], "svg");
	}
	if (!fb->dir || (mkdir(fb->dir, 0777) && errno != EEXIST)) {
		snprintf(err, errlen, "cannot create output directory '%s': %s", cfg->ember.output_dir,
			 strerror(errno));
		close(fb->pending_fd);
		free(fb->dir);
		free(fb);
		return NULL;
	}
	return fb;
}

static void file_on_profile(void *st, const Ember__ProfileBatch *b)
{
	struct file_backend *fb = st;
	struct ftask *t = task_get(fb, b->task, 1);
	struct stack_frames f;

	if (!t || !t->fg)
		return;
	t->windows++;
	for (size_t i = 0; i < b->n_samples; i++) {
		const Ember__StackSample *s = b->samples[i];

		stack_sample__frames(s, t->flame.set, &f);
		fb->frames_truncated += f.truncated;
		(void)flamegraph__add(t->fg, f.v, f.n, s->count);
		if (t->fg_time)
			(void)flamegraph__add(t->fg_time, f.v, f.n, s->weight / 1000);
		stack_sample__release(&f);
		t->samples += s->count;
	}
	t->dirty = 1;
	if (!fb->pending) {
		uint64_t one = 1;

		fb->pending = write(fb->pending_fd, &one, sizeof(one)) == sizeof(one);
	}
}

struct svg_ctx { const struct flamegraph *fg; const char *title; const char *subtitle; const char *unit; };

static int write_folded_cb(FILE *out, void *ctx) { return flamegraph__write_folded(ctx, out); }
static int write_svg_cb(FILE *out, void *ctx)
{
	struct svg_ctx *c = ctx;
	/* The renderer counts the stacks: it knows what it draws (one stack sent in 26 windows is one). */
	struct flamegraph_svg_opts o = { .sz = sizeof(o), .title = c->title, .subtitle = c->subtitle, .unit = c->unit,
					 .count_stacks = true };
	return flamegraph__write_svg(c->fg, out, &o);
}

/*
 * A graph's title: what it shows and how it is weighed.  An off-CPU task's two
 * graphs differ in weight only, so their titles say which is which.
 */
static void graph_title(char *buf, size_t len, const struct ftask *t, bool by_count)
{
	snprintf(buf, len, "%s", by_count && t->kind->count_title ? t->kind->count_title : t->kind->title);
}

/*
 * "ember task <id>: <N> samples" -- in the kind's unit (switches for off-CPU,
 * faults for memory), with a weighted kind's total weight: the time blocked
 * in seconds (the time graph's weight, in µs).  The stacks drawn are counted
 * by the renderer.
 */
static void graph_subtitle(char *buf, size_t len, const struct ftask *t)
{
	int n = snprintf(buf, len, "ember task %s: %llu %s", t->id, (unsigned long long)t->samples,
			 t->kind->unit);

	if (t->fg_time && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - n, ", %.3f s blocked", (double)flamegraph__total(t->fg_time) / 1e6);
}

/* ,"trigger":[{...}] for a triggered task: which policy item held, by how much, for which process. */
static void put_trigger(FILE *out, const struct ftask *t)
{
	struct json_object *a;

	if (!t->ncauses || !(a = json_object_new_array()))
		return;
	for (unsigned i = 0; i < t->ncauses; i++) {
		const struct task_cause *c = &t->causes[i];
		struct json_object *o = json_object_new_object();

		if (!o)
			break;
		json_object_object_add(o, "policy", json_object_new_string(c->policy));
		json_object_object_add(o, "monitor", json_object_new_string(c->monitor));
		json_object_object_add(o, "threshold", json_object_new_double(c->threshold));
		json_object_object_add(o, "current", json_object_new_double(c->current));
		json_object_object_add(o, "period_s", json_object_new_int64(c->period_s));
		json_object_object_add(o, "count", json_object_new_int64(c->count));
		json_object_object_add(o, "matched", json_object_new_int64(c->matched));
		json_object_object_add(o, "pid", json_object_new_int64(c->pid));
		json_object_object_add(o, "comm", json_object_new_string(c->comm));
		if (c->uri[0])
			json_object_object_add(o, "uri", json_object_new_string(c->uri));
		json_object_array_add(a, o);
	}
	fprintf(out, ",\"trigger\":%s", json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN));
	json_object_put(a);
}

struct json_ctx { const struct ftask *t; const char *state; };
static int write_json_cb(FILE *out, void *ctx)
{
	const struct json_ctx *c = ctx;
	struct flamegraph_stats fs;

	if (c->t->tl) {
		struct thread_timeline_stats ts;

		thread_timeline__stats(c->t->tl, &ts);
		fprintf(out,
			"{\"task_id\":\"%s\",\"kind\":\"%s\",\"state\":\"%s\",\"start_unix_ms\":%llu,"
			"\"duration_ms\":%llu,\"windows\":%llu,\"events\":%llu,\"events_lost\":%llu,"
			"\"events_unwritten\":%llu,\"timeline_events\":%llu,\"timeline_dropped\":%llu,\"attach_point\":\"%s\"",
			c->t->id, c->t->kind->name, c->state, (unsigned long long)c->t->start_ms,
			(unsigned long long)c->t->duration_ms, (unsigned long long)c->t->windows,
			(unsigned long long)c->t->thread_events, (unsigned long long)c->t->thread_lost,
			(unsigned long long)c->t->thread_unwritten, (unsigned long long)ts.events,
			(unsigned long long)ts.dropped, c->t->attach_point);
		put_trigger(out, c->t);
		fputs("}\n", out);
		return 0;
	}
	if (c->t->net) {
		struct net_report_stats st;
		struct net_loss l;

		net_report__stats(c->t->net, &st);
		net_report__loss(c->t->net, &l);
		fprintf(out,
			"{\"task_id\":\"%s\",\"kind\":\"%s\",\"state\":\"%s\",\"start_unix_ms\":%llu,"
			"\"duration_ms\":%llu,\"batches\":%llu,\"flows\":%llu,\"connections\":%llu,\"exchanges\":%llu,"
			"\"exchanges_lost\":%llu,\"calls_lost\":%llu,\"gap_bytes\":%llu,\"connections_with_loss\":%llu,"
			"\"tls_connections_unprobed\":%llu,\"tls_calls_unbound\":%llu,\"attach_point\":\"%s\"",
			c->t->id, c->t->kind->name, c->state, (unsigned long long)c->t->start_ms,
			(unsigned long long)c->t->duration_ms, (unsigned long long)st.batches,
			(unsigned long long)st.flows, (unsigned long long)st.connections,
			(unsigned long long)st.exchanges, (unsigned long long)l.exchanges, (unsigned long long)l.calls,
			(unsigned long long)l.gap_bytes, (unsigned long long)l.connections,
			(unsigned long long)l.tls_unprobed, (unsigned long long)l.tls_unbound, c->t->attach_point);
		put_trigger(out, c->t);
		fputs("}\n", out);
		return 0;
	}
	/* stacks: the folded file's lines, which a restarted exporter reads back (the records
	 * received would count a stack once per window, and only since the restart). */
	flamegraph__stats(c->t->fg, &fs);
	fprintf(out,
		"{\"task_id\":\"%s\",\"kind\":\"%s\",\"state\":\"%s\",\"start_unix_ms\":%llu,\"duration_ms\":%llu,"
		"\"samples\":%llu,\"stacks\":%llu,\"windows\":%llu,\"attach_point\":\"%s\"",
		c->t->id, c->t->kind->name, c->state, (unsigned long long)c->t->start_ms,
		(unsigned long long)c->t->duration_ms, (unsigned long long)c->t->samples,
		(unsigned long long)fs.unique_stacks, (unsigned long long)c->t->windows, c->t->attach_point);
	put_trigger(out, c->t);
	fputs("}\n", out);
	return 0;
}

static void write_one(struct file_backend *fb, const char *dir, const char *name, fileutil_writer_fn fn, void *ctx)
{
	if (fileutil__write_atomic(dir, name, fn, ctx))
		fb->write_errors++;
	else
		fb->files_written++;
}

/* Writes the task's file f (if this kind has one and the format is wanted) with fn. */
static void write_file(struct file_backend *fb, const char *dir, const struct ftask *t, enum profile_file f,
		       fileutil_writer_fn fn, void *ctx)
{
	char name[64];

	if (profile_files__name((Ember__TaskKind)t->kind->wire, f, name, sizeof(name)) < 0)
		return;
	if ((f == PF_FOLDED || f == PF_COUNT_FOLDED) && !fb->want_folded)
		return;
	if ((f == PF_SVG || f == PF_COUNT_SVG) && !fb->want_svg)
		return;
	write_one(fb, dir, name, fn, ctx);
}

static int write_timeline_cb(FILE *out, void *ctx)
{
	struct ftask *t = ctx;
	char title[160];

	snprintf(title, sizeof(title), "ember thread profile %s", t->id);
	return thread_timeline__write_html(t->tl, title, out);
}

static int write_net_txt_cb(FILE *out, void *ctx)
{
	struct ftask *t = ctx;

	return net_report__write_text(t->net, t->id, out);
}

/*
 * A REST flamegraph task's files, at its end: <svg_dir>/<type>/<start>_<type>[_<pid>|_<part>].svg
 * and the folded stacks in <flame_dir>/<type>/<same>.txt (proto FlameOutput).
 */
static void write_flame_files(struct file_backend *fb, struct ftask *t)
{
	const char *type = t->kind->rest ? t->kind->rest : t->kind->name;	/* gala-gopher's sub-item */
	const struct flamegraph *g = t->fg_time ? t->fg_time : t->fg;
	char base[96], suffix[24] = "", name[160], sdir[300], fdir[300], title[200], sub[160];
	time_t start = (time_t)(t->flame.period_start_ms / 1000);
	struct tm tm;
	struct svg_ctx sc = { g, title, sub, t->fg_time ? t->kind->weight_unit : t->kind->unit };

	localtime_r(&start, &tm);
	strftime(base, sizeof(base), "%Y%m%d%H%M%S", &tm);
	if (t->flame.per_process)
		snprintf(suffix, sizeof(suffix), "_%u", t->flame.pid);
	else if (t->flame.part)
		snprintf(suffix, sizeof(suffix), "_%u", t->flame.part);
	snprintf(sdir, sizeof(sdir), "%s/%s", t->flame.svg_dir, type);
	snprintf(fdir, sizeof(fdir), "%s/%s", t->flame.flame_dir, type);
	if (fileutil__mkdirs(sdir, 0777) || fileutil__mkdirs(fdir, 0777)) {
		fb->write_errors++;
		return;
	}
	graph_title(title, sizeof(title), t, false);
	graph_subtitle(sub, sizeof(sub), t);
	snprintf(name, sizeof(name), "%s_%s%s.svg", base, type, suffix);
	write_one(fb, sdir, name, write_svg_cb, &sc);
	snprintf(name, sizeof(name), "%s_%s%s.txt", base, type, suffix);
	write_one(fb, fdir, name, write_folded_cb, (void *)g);
	t->dirty = 0;
}

/*
 * The task's files; with final_state, task.json last, and only when the
 * others were written: it tells `ember profile` that they are final.
 * -EIO when a file could not be written (counted): the task stays dirty.
 */
static int write_task(struct file_backend *fb, struct ftask *t, const char *final_state)
{
	char dir[1024], title[512], count_title[512], sub[200];
	uint64_t errors = fb->write_errors;

	if (t->flame.set) {
		if (final_state)
			write_flame_files(fb, t);
		return 0;
	}

	snprintf(dir, sizeof(dir), "%s/%s", fb->dir, t->id);
	if (mkdir(dir, 0777) && errno != EEXIST) {
		fb->write_errors++;
		return -EIO;
	}
	if (t->net) {
		write_file(fb, dir, t, PF_NETWORK_TXT, write_net_txt_cb, t);
		goto done;
	}
	if (t->tl) {
		/* The timeline is drawn once, at the end: the events go to threads.json as they come. */
		if (final_state)
			write_file(fb, dir, t, PF_TIMELINE_HTML, write_timeline_cb, t);
		goto done;
	}
	graph_title(title, sizeof(title), t, false);
	graph_title(count_title, sizeof(count_title), t, true);
	if (t->ncauses) { /* the reason a policy started it, in the title: the graph says why it exists */
		const struct task_cause *c = &t->causes[0];
		char why[512];

		snprintf(why, sizeof(why), " of %s (pid %u), started by policy '%s': %s %.4g >= %.4g in %u of %u s%s%s",
			 c->comm, c->pid, c->policy, c->monitor, c->current, c->threshold, c->matched, c->period_s,
			 c->uri[0] ? " for " : "", c->uri);
		strncat(title, why, sizeof(title) - strlen(title) - 1);
		strncat(count_title, why, sizeof(count_title) - strlen(count_title) - 1);
	}
	graph_subtitle(sub, sizeof(sub), t);
	if (t->fg_time) { /* a weighted kind (off-CPU): the weight graph is the main one, the count graph the variant */
		struct svg_ctx sc = { t->fg_time, title, sub, t->kind->weight_unit },
			       sc2 = { t->fg, count_title, sub, t->kind->unit };

		write_file(fb, dir, t, PF_FOLDED, write_folded_cb, t->fg_time);
		write_file(fb, dir, t, PF_SVG, write_svg_cb, &sc);
		write_file(fb, dir, t, PF_COUNT_FOLDED, write_folded_cb, t->fg);
		write_file(fb, dir, t, PF_COUNT_SVG, write_svg_cb, &sc2);
	} else {
		struct svg_ctx sc = { t->fg, title, sub, t->kind->unit };

		write_file(fb, dir, t, PF_FOLDED, write_folded_cb, t->fg);
		write_file(fb, dir, t, PF_SVG, write_svg_cb, &sc);
	}
	write_one(fb, dir, WINDOWS_FILE, write_windows_cb, t);
done:
	if (final_state && fb->write_errors == errors) {
		struct json_ctx jc = { t, final_state };

		write_file(fb, dir, t, PF_TASK_JSON, write_json_cb, &jc);
	}
	t->dirty = fb->write_errors != errors;
	return t->dirty ? -EIO : 0;
}

static void task_drop(struct ftask *t)
{
	t->fg = flamegraph__free(t->fg);
	t->fg_time = flamegraph__free(t->fg_time);
	t->net = net_report__free(t->net);
	t->tl = thread_timeline__free(t->tl);
	t->used = false;
}

/* The batch's JSON lines, appended to network.json: what came before stays, whatever happens next. */
/*
 * What write(f, arg) writes, appended to the task's file pf whole or not at
 * all: a full disk leaves no torn line for readers to trip on.
 */
static int append_whole(struct file_backend *fb, struct ftask *t, enum profile_file pf,
			int (*write)(FILE *f, const void *arg), const void *arg)
{
	char path[1200];
	struct stat st;
	int fd, r;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fb->dir, t->id);
	if (mkdir(path, 0777) && errno != EEXIST)
		return -errno;
	if ((r = task_path(fb, t, pf, path, sizeof(path))))
		return r;
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !(f = fdopen(fd, "a"))) {
		r = -errno;
		close(fd);
		return r;
	}
	r = write(f, arg);
	if (!r && fflush(f))
		r = -EIO;
	if (r && ftruncate(fileno(f), st.st_size))
		r = -EIO;
	if (fclose(f) && !r)
		r = -EIO;
	return r;
}

static int write_network(FILE *f, const void *b)
{
	return net_report__write_json(b, f);
}

static int append_json(struct file_backend *fb, struct ftask *t, const Ember__NetworkBatch *b)
{
	return append_whole(fb, t, PF_NETWORK_JSON, write_network, b);
}

static void file_on_network(void *st, const Ember__NetworkBatch *b)
{
	struct file_backend *fb = st;
	struct ftask *t = b ? task_get(fb, b->task, 1) : NULL;

	if (!t || !t->net)
		return;
	int unwritten = append_json(fb, t, b) != 0;

	if (unwritten)
		fb->write_errors++;
	else
		fb->files_written++;
	net_report__add(t->net, b);
	if (unwritten)
		net_report__unwritten(t->net, b);
	fb->network_batches++;
	t->windows += b->part == 0;
	t->dirty = 1;
}

static int put_line(void *ctx, const char *json, size_t len)
{
	FILE *f = ctx;

	return fwrite(json, 1, len, f) == len && fputc('\n', f) != EOF ? 0 : -EIO;
}

struct threads_write {
	const Ember__ThreadBatch *b;
	const struct thread_host *host;
};

static int write_threads(FILE *f, const void *arg)
{
	const struct threads_write *w = arg;

	return thread_events__each(w->b, w->host, timeutil__unix_ms(), put_line, f);
}

/* The batch's objects, appended to threads.json. */
static int append_threads(struct file_backend *fb, struct ftask *t, const Ember__ThreadBatch *b)
{
	struct threads_write w = { .b = b, .host = &fb->host };

	return append_whole(fb, t, PF_THREADS_JSON, write_threads, &w);
}

static void file_on_threads(void *st, const Ember__ThreadBatch *b)
{
	struct file_backend *fb = st;
	struct ftask *t = b ? task_get(fb, b->task, 1) : NULL;

	if (!t || !t->tl)
		return;
	if (b->n_events && append_threads(fb, t, b)) {
		fb->write_errors++;
		t->thread_unwritten += b->n_events;
	} else if (b->n_events) {
		fb->files_written++;
	}
	for (size_t i = 0; i < b->n_events; i++) {
		const Ember__ThreadEvent *e = b->events[i];
		char stack[8192];
		size_t n = 0;
		struct tl_event te = { .tid = e->tid, .tgid = e->tgid, .thread_comm = e->thread_comm,
				       .proc_name = e->proc_name, .name = e->name, .type = e->type,
				       .start_ns = e->start_unix_ns, .end_ns = e->end_unix_ns,
				       .duration_ns = e->duration_ns, .count = e->count, .stack = stack,
				       .file_path = e->file_path, .sock_conn = e->sock_conn, .futex_op = e->futex_op,
				       .ongoing = e->ongoing };

		stack[0] = 0;
		for (size_t j = 0; j < e->n_stack && n < sizeof(stack); j++) {
			int w = snprintf(stack + n, sizeof(stack) - n, "%s%s", j ? ";" : "", e->stack[j]);

			if (w < 0)
				break;
			n += (size_t)w;
		}
		(void)thread_timeline__add(t->tl, &te);
	}
	t->thread_events += b->n_events;
	t->thread_lost += b->events_lost;
	fb->thread_batches++;
	t->windows++;
	t->dirty = 1;
}

static void file_on_task_event(void *st, const Ember__TaskEvent *ev)
{
	struct file_backend *fb = st;
	struct ftask *t = task_get(fb, ev->task, ev->state == EMBER__TASK_EVENT__STATE__STARTED ||
						     ev->state == EMBER__TASK_EVENT__STATE__FINISHED);

	if (!t)
		return;
	if (ev->attach_point_name)
		snprintf(t->attach_point, sizeof(t->attach_point), "%s", ev->attach_point_name);
	if (ev->state == EMBER__TASK_EVENT__STATE__FINISHED || ev->state == EMBER__TASK_EVENT__STATE__FAILED) {
		const char *state = ev->state == EMBER__TASK_EVENT__STATE__FINISHED ? "finished" : "failed";

		if (write_task(fb, t, state))
			snprintf(t->final, sizeof(t->final), "%s", state);  /* again at the next tick */
		else
			task_drop(t);
	}
}

static void file_tick(void *st, uint64_t now_ms, int final)
{
	struct file_backend *fb = st;
	uint64_t n;

	(void)now_ms;
	if (fb->pending) {
		(void)!read(fb->pending_fd, &n, sizeof(n));
		fb->pending = false;
	}
	for (unsigned i = 0; i < MAX_FILE_TASKS; i++) {
		struct ftask *t = &fb->tasks[i];
		if (!t->used || !(t->dirty || final))
			continue;
		if (t->final[0]) {
			fb->finals_retried++;
			if (!write_task(fb, t, t->final) || final)
				task_drop(t);
			continue;
		}
		/* At shutdown a task without FINISHED is written as what it is: partial. */
		write_task(fb, t, final ? "interrupted" : NULL);
		if (final)
			task_drop(t);
	}
}

static unsigned file_counters(void *st, struct backend_counter *ret, unsigned max)
{
	struct file_backend *fb = st;
	struct backend_counter c[] = {
		{ "file_files_written", fb->files_written, 0 }, { "file_write_errors", fb->write_errors, 0 },
		{ "file_task_ends_retried", fb->finals_retried, 0 },
		{ "file_tasks_dropped", fb->tasks_dropped, 0 }, { "file_frames_truncated", fb->frames_truncated, 0 },
		{ "file_tasks_resumed", fb->tasks_resumed, 0 }, { "file_resume_errors", fb->resume_errors, 0 },
		{ "file_network_batches", fb->network_batches, 0 },
	};
	unsigned n = 0;
	for (; n < max && n < sizeof(c) / sizeof(c[0]); n++)
		ret[n] = c[n];
	return n;
}

static void file_free(void *st)
{
	struct file_backend *fb = st;
	if (!fb)
		return;
	for (unsigned i = 0; i < MAX_FILE_TASKS; i++)
		task_drop(&fb->tasks[i]);
	close(fb->pending_fd);
	free(fb->dir);
	free(fb);
}

static int file_event_fd(void *st)
{
	return ((struct file_backend *)st)->pending_fd;
}

const struct exporter_backend_ops file_backend_ops = {
	.name = "file",
	.init = file_init,
	.on_profile = file_on_profile,
	.on_task_event = file_on_task_event,
	.on_network = file_on_network,
	.on_threads = file_on_threads,
	.tick = file_tick,
	.event_fd = file_event_fd,
	.counters = file_counters,
	.free = file_free,
};
