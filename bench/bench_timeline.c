/*
 * Thread timeline: time to add events, time to write the HTML, its size.
 * Prints "name: value unit" lines.  Options:
 *   --threads N     threads of the synthetic timeline (default 50, 10 per process)
 *   --events M      events spread over them (default 200000)
 *   --seconds S     the time range they cover (default 60)
 *   --max-events K  the module's bound (default: M, or the module's default with --load)
 *   --html PATH     where the page goes (default: a memory buffer, only its size is kept)
 *   --title T       the page's title
 *   --load FILE     no benchmark: read events from JSON lines (one object per line,
 *                   the tl_event field names) and write --html (a converter for
 *                   manual checks and tests/integration/test_timeline_html_js.sh)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "exporter/thread_timeline.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
		return NULL;
	return json_object_get_string(v);
}

static uint64_t jnum(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v))
		return 0;
	return json_object_get_uint64(v);
}

static int write_html(const struct thread_timeline *tl, const char *title, const char *path,
		      double *ret_s, long *ret_bytes)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = path ? fopen(path, "w") : open_memstream(&buf, &len);
	double t;
	int err;

	if (!f)
		return -errno;
	t = now();
	err = thread_timeline__write_html(tl, title, f);
	if (!err && fflush(f))
		err = -EIO;
	*ret_s = now() - t;
	*ret_bytes = path ? ftell(f) : (long)len;
	if (fclose(f) && !err)
		err = -EIO;
	free(buf);
	return err;
}

static int load(const char *in, const char *html, const char *title, size_t max_events)
{
	struct thread_timeline *tl = thread_timeline__new(max_events);
	struct thread_timeline_stats st;
	FILE *f = fopen(in, "r");
	char *line = NULL;
	size_t cap = 0, lineno = 0, bad = 0;
	double secs;
	long bytes;
	int err = -ENOMEM;

	if (!f || !tl) {
		fprintf(stderr, "cannot open %s\n", in);
		goto out;
	}
	while (getline(&line, &cap, f) > 0) {
		struct json_object *o;
		struct tl_event e;

		lineno++;
		if (strspn(line, " \t\r\n") == strlen(line))
			continue;
		o = json_tokener_parse(line);
		if (!o || !json_object_is_type(o, json_type_object)) {
			fprintf(stderr, "%s:%zu: not a JSON object\n", in, lineno);
			json_object_put(o);
			bad++;
			continue;
		}
		e = (struct tl_event){
			.tid = jnum(o, "tid"), .tgid = jnum(o, "tgid"),
			.thread_comm = jstr(o, "thread_comm"), .proc_name = jstr(o, "proc_name"),
			.name = jstr(o, "name"), .type = jstr(o, "type"),
			.start_ns = jnum(o, "start_ns"), .end_ns = jnum(o, "end_ns"),
			.duration_ns = jnum(o, "duration_ns"), .count = jnum(o, "count"),
			.stack = jstr(o, "stack"), .file_path = jstr(o, "file_path"),
			.sock_conn = jstr(o, "sock_conn"), .futex_op = jstr(o, "futex_op"),
		};
		{
			struct json_object *v;

			e.ongoing = json_object_object_get_ex(o, "ongoing", &v) && json_object_get_boolean(v);
		}
		err = thread_timeline__add(tl, &e);
		if (err && err != -ENOSPC)
			fprintf(stderr, "%s:%zu: event refused: %s\n", in, lineno, strerror(-err));
		json_object_put(o);
	}
	err = html ? write_html(tl, title, html, &secs, &bytes) : 0;
	thread_timeline__stats(tl, &st);
	printf("events: %" PRIu64 " dropped: %" PRIu64 " invalid: %" PRIu64 " threads: %" PRIu64
	       " bad_lines: %zu\n", st.events, st.dropped, st.invalid, st.threads, bad);
	if (err)
		fprintf(stderr, "writing %s failed: %s\n", html, strerror(-err));
out:
	free(line);
	if (f)
		fclose(f);
	thread_timeline__free(tl);
	return err ? 1 : 0;
}

static const char *const FRAMES[] = {
	"main", "run_loop", "handle_request", "parse_header", "read_body", "json_decode", "db_query",
	"pthread_mutex_lock", "__lll_lock_wait", "futex_wait", "do_syscall_64_[k]", "vfs_read_[k]",
	"tcp_sendmsg_[k]", "malloc", "memcpy", "compress_block", "encode_utf8", "hash_lookup",
	"sched_yield", "epoll_wait", "write_log", "flush_buffers", "ssl_write", "render_page",
};
static const struct {
	const char *type, *names[3];
} KINDS[] = {
	{ "oncpu", { "oncpu", "oncpu", "oncpu" } },
	{ "file", { "read", "write", "fsync" } },
	{ "net", { "send", "recv", "connect" } },
	{ "lock", { "futex", "futex", "pthread_mutex_lock" } },
	{ "sched", { "sched_switch", "sched_yield", "nanosleep" } },
};

int main(int argc, char **argv)
{
	size_t nthreads = 50, nevents = 200000, seconds = 60, max_events = 0;
	const char *html = NULL, *title = NULL, *load_path = NULL;
	static char stacks[256][512], comms[4096][16], procs[512][16], paths[64][32], conns[64][48];
	struct thread_timeline *tl;
	struct thread_timeline_stats st;
	uint64_t t0 = 1714564800000000000ull;
	double t, secs;
	long bytes;
	int err;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--events") && i + 1 < argc)
			nevents = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--max-events") && i + 1 < argc)
			max_events = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--html") && i + 1 < argc)
			html = argv[++i];
		else if (!strcmp(argv[i], "--title") && i + 1 < argc)
			title = argv[++i];
		else if (!strcmp(argv[i], "--load") && i + 1 < argc)
			load_path = argv[++i];
		else {
			fprintf(stderr, "usage: %s [--threads N] [--events M] [--seconds S] [--max-events K] "
				"[--html PATH] [--title T] | --load FILE.jsonl --html PATH\n", argv[0]);
			return 2;
		}
	}
	if (load_path)
		return load(load_path, html, title, max_events);
	if (!nthreads || nthreads > 4096 || !seconds) {
		fprintf(stderr, "--threads: 1..4096, --seconds: > 0\n");
		return 2;
	}

	for (size_t i = 0; i < 256; i++) {
		size_t depth = 4 + rnd() % 20, o = 0;

		for (size_t d = 0; d < depth && o < sizeof(stacks[i]) - 32; d++)
			o += snprintf(stacks[i] + o, sizeof(stacks[i]) - o, "%s%s", d ? ";" : "",
				      FRAMES[rnd() % (sizeof(FRAMES) / sizeof(FRAMES[0]))]);
	}
	for (size_t i = 0; i < 4096; i++)
		snprintf(comms[i], sizeof(comms[i]), "worker-%zu", i);
	for (size_t i = 0; i < 512; i++)
		snprintf(procs[i], sizeof(procs[i]), "app%zu", i);
	for (size_t i = 0; i < 64; i++) {
		snprintf(paths[i], sizeof(paths[i]), "/var/lib/app/data-%zu.db", i);
		snprintf(conns[i], sizeof(conns[i]), "10.0.0.%zu:%zu -> 10.0.1.2:5432", i, 40000 + i);
	}

	tl = thread_timeline__new(max_events ? max_events : nevents);
	if (!tl) {
		perror("thread_timeline__new");
		return 1;
	}
	/*
	 * Each thread's events follow one another in time (as one thread's
	 * aggregates do), a few still running at the end.
	 */
	uint64_t span = seconds * 1000000000ull, per = nevents / nthreads + 1;
	t = now();
	for (size_t i = 0; i < nevents; i++) {
		size_t th = i % nthreads, k = i / nthreads, kind = rnd() % 5;
		uint64_t slot = span / per, start = t0 + k * slot + rnd() % (slot / 4 + 1);
		uint64_t len = 1 + rnd() % (slot / 2 + 1);
		struct tl_event e = {
			.tid = 1000 + th, .tgid = 1000 + th / 10 * 10,
			.thread_comm = comms[th], .proc_name = procs[th / 10],
			.name = KINDS[kind].names[rnd() % 3], .type = KINDS[kind].type,
			.start_ns = start, .end_ns = start + len, .duration_ns = len - len / 4,
			.count = 1 + rnd() % 50, .stack = stacks[rnd() % 256],
			.file_path = kind == 1 ? paths[rnd() % 64] : NULL,
			.sock_conn = kind == 2 ? conns[rnd() % 64] : NULL,
			.futex_op = kind == 3 ? (rnd() % 2 ? "wait" : "wake") : NULL,
			.ongoing = k + 1 >= per && rnd() % 4 == 0,
		};

		err = thread_timeline__add(tl, &e);
		if (err && err != -ENOSPC) {
			fprintf(stderr, "add: %s\n", strerror(-err));
			return 1;
		}
	}
	t = now() - t;
	err = write_html(tl, title ? title : "ember bench thread timeline", html, &secs, &bytes);
	if (err) {
		fprintf(stderr, "write_html: %s\n", strerror(-err));
		return 1;
	}
	thread_timeline__stats(tl, &st);
	printf("timeline_threads: %zu threads\n", nthreads);
	printf("timeline_events: %" PRIu64 " events\n", st.events);
	printf("timeline_dropped: %" PRIu64 " events\n", st.dropped);
	printf("timeline_add: %.1f ns/event\n", nevents ? t * 1e9 / nevents : 0);
	printf("timeline_arena: %" PRIu64 " bytes\n", st.arena_bytes);
	printf("timeline_html_write: %.1f ms\n", secs * 1e3);
	printf("timeline_html_size: %ld bytes\n", bytes);
	printf("timeline_html_per_event: %.1f bytes\n", st.events ? (double)bytes / st.events : 0);
	thread_timeline__free(tl);
	return 0;
}
