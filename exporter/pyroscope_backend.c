/*
 * The `pyroscope` backend: every push_period (30 s, gala-gopher's upload
 * period) each process's profile of that period goes to Pyroscope's HTTP
 * ingest API as folded stacks:
 *
 *   POST <server>/ingest?name=<app>.<type>{pid=P,process=COMM,hostname=H}
 *        &from=<unix s>&until=<unix s>&format=folded&sampleRate=R
 *        &spyName=ebpfspy&units=U&aggregationType=sum
 *
 *   type      what a stack's value is                  units    sampleRate
 *   cpu       on-CPU samples                           samples  the task's frequency (1e9 / period_ns)
 *   off_cpu   blocked time in microseconds             samples  1000000
 *   mem       page faults                              objects  (100, unused)
 *
 * Off-CPU time goes as microsecond "samples" at a rate of 1 MHz: Pyroscope
 * accepts only its own units (samples, objects, bytes, goroutines,
 * lock_*), and shows samples / sampleRate as seconds, which is then the
 * blocked time.  Stacks are named as in every flame graph of ember
 * (exporter/stack_sample.h).
 *
 * A REST flamegraph task with params.pyroscope_server (Task.flame) pushes its
 * profiles to that server instead.  With the REST API on and this backend
 * not in exporter.backends, the exporter loads it for those tasks only.
 *
 * Bounded: at most max_profiles (process, type, server) profiles between pushes of
 * at most max_nodes nodes each (more stacks go under [truncated]), at most
 * MAX_INFLIGHT pushes in flight; what does not fit is dropped and counted.
 * Pushes go through libcurl's multi interface, driven from tick(): the
 * exporter's loop never waits on the network, except at shutdown, where the
 * last pushes get their timeout.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "common/profile_kind.h"
#include "common/timeutil.h"
#include "exporter/backend.h"
#include "exporter/flamegraph.h"
#include "exporter/stack_sample.h"

#define MAX_INFLIGHT 64
#define LABEL_MAX 64

struct profile {
	bool used;
	uint32_t pid;
	const struct profile_kind *kind;	/* its row: the name's suffix, units= */
	char url[300];			/* <server>/ingest */
	char process[LABEL_MAX];
	uint64_t sample_rate;
	uint64_t from_ms;		/* the first window's start (unix ms) */
	struct flamegraph *fg;
};

struct push {
	CURL *easy;
	char *body;
	size_t len;
	struct curl_slist *hdrs;
	uint64_t bytes;
	char err[CURL_ERROR_SIZE];
};

enum pc {
	PC_PUSHES_OK, PC_PUSHES_FAILED, PC_PUSHES_DROPPED, PC_BYTES_SENT, PC_SAMPLES_DROPPED, PC_STACKS_TRUNCATED,
	PC_FRAMES_TRUNCATED, PC_MAX
};
_Static_assert(PC_MAX <= MAX_BACKEND_COUNTERS, "every Pyroscope counter fits what counters() may fill");
static const char *const pc_names[PC_MAX] = {
	"pyroscope_pushes_ok", "pyroscope_pushes_failed", "pyroscope_pushes_dropped", "pyroscope_bytes_sent",
	"pyroscope_samples_dropped", "pyroscope_stacks_truncated", "pyroscope_frames_truncated",
};

struct pyroscope_backend {
	const struct ember_config *cfg;
	char url[300];			/* <server>/ingest */
	char hostname[LABEL_MAX];
	uint64_t push_ms, timeout_ms, next_push;
	bool rest_only;			/* loaded for the REST API's pyroscope_server: other profiles are not pushed */
	struct profile *p;
	unsigned np;
	CURLM *multi;
	struct push inflight[MAX_INFLIGHT];
	bool failing;			/* the last push failed: logged once until one succeeds */
	uint64_t c[PC_MAX];
};

/* A label value Pyroscope's name syntax keeps intact: [A-Za-z0-9_.-], the rest '_'. */
static void label_value(char *dst, size_t cap, const char *src)
{
	size_t i = 0;

	for (; src && *src && i + 1 < cap; src++)
		dst[i++] = (char)((*src >= 'a' && *src <= 'z') || (*src >= 'A' && *src <= 'Z') ||
					  (*src >= '0' && *src <= '9') || *src == '_' || *src == '.' || *src == '-'
				  ? *src
				  : '_');
	if (!i && cap > 1)
		dst[i++] = '_';
	dst[i] = 0;
}

static void *pyro_init(const struct ember_config *cfg, char *err, size_t errlen)
{
	struct pyroscope_backend *pb;
	const char *s = cfg->exporter.pyroscope.server;
	char host[256] = "";
	size_t n = strlen(s);

	if (!n || n > 250 || strchr(s, '?') || strchr(s, '#') || strpbrk(s, " \t\r\n")) {
		snprintf(err, errlen, "exporter.pyroscope.server '%s' is not host:port or an http(s):// URL", s);
		errno = EINVAL;
		return NULL;
	}
	if (strstr(s, "://") && strncmp(s, "http://", 7) && strncmp(s, "https://", 8)) {
		snprintf(err, errlen, "exporter.pyroscope.server '%s': only http:// and https:// are supported", s);
		errno = EINVAL;
		return NULL;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(err, errlen, "libcurl did not initialise");
		errno = ENOMEM;
		return NULL;
	}
	pb = calloc(1, sizeof(*pb));
	if (!pb || !(pb->p = calloc((size_t)cfg->exporter.pyroscope.max_profiles, sizeof(*pb->p))) ||
	    !(pb->multi = curl_multi_init())) {
		if (pb)
			free(pb->p);
		free(pb);
		curl_global_cleanup();
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	pb->cfg = cfg;
	while (n && s[n - 1] == '/')
		n--;
	snprintf(pb->url, sizeof(pb->url), "%s%.*s/ingest", strstr(s, "://") ? "" : "http://", (int)n, s);
	(void)gethostname(host, sizeof(host) - 1);
	label_value(pb->hostname, sizeof(pb->hostname), host);
	pb->push_ms = cfg->exporter.pyroscope.push_period_ns / 1000000;
	pb->timeout_ms = cfg->exporter.pyroscope.timeout_ns / 1000000;
	pb->next_push = timeutil__mono_ms() + pb->push_ms;
	pb->rest_only = true;
	for (size_t i = 0; i < cfg->exporter.backends.n; i++)
		pb->rest_only &= strcmp(cfg->exporter.backends.v[i], "pyroscope") != 0;
	if (pb->rest_only)
		log_info("pyroscope: pushing the REST API's flame graph profiles to their pyroscope_server every %llu s",
			 (unsigned long long)(pb->push_ms / 1000));
	else
		log_info("pyroscope: pushing each process's profile every %llu s to %s",
			 (unsigned long long)(pb->push_ms / 1000), pb->url);
	return pb;
}

static struct profile *profile_of(struct pyroscope_backend *pb, uint32_t pid, const struct profile_kind *kind,
				  const char *url)
{
	struct profile *free_slot = NULL;

	for (unsigned i = 0; i < pb->np; i++) {
		if (pb->p[i].used && pb->p[i].pid == pid && pb->p[i].kind == kind && !strcmp(pb->p[i].url, url))
			return &pb->p[i];
		if (!pb->p[i].used && !free_slot)
			free_slot = &pb->p[i];
	}
	if (!free_slot) {
		if (pb->np == (unsigned)pb->cfg->exporter.pyroscope.max_profiles)
			return NULL;
		free_slot = &pb->p[pb->np++];
	}
	if (!free_slot->fg && !(free_slot->fg = flamegraph__new((size_t)pb->cfg->exporter.pyroscope.max_nodes)))
		return NULL;
	free_slot->used = true;
	snprintf(free_slot->url, sizeof(free_slot->url), "%s", url);
	free_slot->pid = pid;
	free_slot->kind = kind;
	free_slot->from_ms = 0;
	return free_slot;
}

static void pyro_on_profile(void *st, const Ember__ProfileBatch *b)
{
	struct pyroscope_backend *pb = st;
	struct stack_frames fr;
	const struct profile_kind *kind;
	const char *srv;
	char url[300];

	if (!b || !b->task)
		return;
	srv = b->task->flame && b->task->flame->pyroscope_server ? b->task->flame->pyroscope_server : "";
	if (pb->rest_only && !*srv)
		return;
	if (*srv)
		snprintf(url, sizeof(url), "http://%s/ingest", srv);
	else
		snprintf(url, sizeof(url), "%s", pb->url);
	kind = profile_kind__by_wire(b->task->kind);
	if (!kind || !kind->pyroscope)
		return;
	for (size_t i = 0; i < b->n_samples; i++) {
		const Ember__StackSample *s = b->samples[i];
		struct profile *p = profile_of(pb, s->pid, kind, url);
		/* a weighted kind's weight is in ns: µs, as pyroscope_rate says */
		uint64_t w = kind->flags & PROFILE_KIND_WEIGHTED ? s->weight / 1000 : s->count;

		if (!p) {
			pb->c[PC_SAMPLES_DROPPED] += s->count;
			continue;
		}
		if (!p->from_ms || b->window_start_unix_ns / 1000000 < p->from_ms)
			p->from_ms = b->window_start_unix_ns / 1000000;
		label_value(p->process, sizeof(p->process), s->process_name);
		p->sample_rate = kind->flags & PROFILE_KIND_PERIOD && b->task->period_ns
					 ? 1000000000ull / b->task->period_ns
					 : kind->pyroscope_rate;
		stack_sample__frames(s, false, &fr);
		pb->c[PC_FRAMES_TRUNCATED] += fr.truncated;
		(void)flamegraph__add(p->fg, fr.v, fr.n, w);
		stack_sample__release(&fr);
	}
}

static int write_folded(FILE *out, const struct flamegraph *fg) { return flamegraph__write_folded(fg, out); }

/* One profile's push, started (or dropped and counted); the profile is emptied either way. */
static void push_one(struct pyroscope_backend *pb, struct profile *p, uint64_t until_ms)
{
	struct push *q = NULL;
	char name[4 * LABEL_MAX + 128], *ename = NULL, url[sizeof(p->url) + 1024];
	struct flamegraph_stats fs;
	FILE *mem;

	for (unsigned i = 0; i < MAX_INFLIGHT && !q; i++)
		if (!pb->inflight[i].easy)
			q = &pb->inflight[i];
	flamegraph__stats(p->fg, &fs);
	pb->c[PC_STACKS_TRUNCATED] += fs.truncated_stacks;
	if (!q) {
		pb->c[PC_PUSHES_DROPPED]++;
		goto done;
	}
	memset(q, 0, sizeof(*q));
	mem = open_memstream(&q->body, &q->len);
	if (!mem || write_folded(mem, p->fg) || fclose(mem)) {
		pb->c[PC_PUSHES_DROPPED]++;
		free(q->body);
		q->body = NULL;
		goto done;
	}
	snprintf(name, sizeof(name), "%s.%s{pid=%u,process=%s,hostname=%s}", pb->cfg->exporter.pyroscope.app_name,
		 p->kind->pyroscope, p->pid, p->process, pb->hostname);
	q->easy = curl_easy_init();
	if (!q->easy || !(ename = curl_easy_escape(q->easy, name, 0))) {
		pb->c[PC_PUSHES_DROPPED]++;
		goto fail;
	}
	/* from < until, whole seconds: the period's own span, at least one second */
	snprintf(url, sizeof(url),
		 "%s?name=%s&from=%llu&until=%llu&format=folded&sampleRate=%llu&spyName=ebpfspy&units=%s"
		 "&aggregationType=sum",
		 p->url, ename, (unsigned long long)(p->from_ms / 1000),
		 (unsigned long long)(until_ms / 1000 > p->from_ms / 1000 ? until_ms / 1000 : p->from_ms / 1000 + 1),
		 (unsigned long long)p->sample_rate, p->kind->pyroscope_units);
	curl_free(ename);
	q->hdrs = curl_slist_append(NULL, "Content-Type: text/plain");
	q->bytes = q->len;
	curl_easy_setopt(q->easy, CURLOPT_URL, url);
	curl_easy_setopt(q->easy, CURLOPT_POST, 1L);
	curl_easy_setopt(q->easy, CURLOPT_POSTFIELDS, q->body);
	curl_easy_setopt(q->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)q->len);
	curl_easy_setopt(q->easy, CURLOPT_HTTPHEADER, q->hdrs);
	curl_easy_setopt(q->easy, CURLOPT_TIMEOUT_MS, (long)pb->timeout_ms);
	curl_easy_setopt(q->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(q->easy, CURLOPT_ERRORBUFFER, q->err);
	curl_easy_setopt(q->easy, CURLOPT_PRIVATE, q);
	if (curl_multi_add_handle(pb->multi, q->easy) == CURLM_OK)
		goto done;
	pb->c[PC_PUSHES_DROPPED]++;
fail:
	if (q->easy)
		curl_easy_cleanup(q->easy);
	curl_slist_free_all(q->hdrs);
	free(q->body);
	memset(q, 0, sizeof(*q));
done:
	flamegraph__clear(p->fg);
	p->used = false;
}

/* Finished pushes: counted, their failures logged once until one succeeds. */
static void reap(struct pyroscope_backend *pb)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(pb->multi, &left))) {
		struct push *q = NULL;
		long code = 0;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&q);
		curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &code);
		if (m->data.result == CURLE_OK && code >= 200 && code < 300) {
			pb->c[PC_PUSHES_OK]++;
			pb->c[PC_BYTES_SENT] += q ? q->bytes : 0;
			if (pb->failing) {
				char shown[sizeof(pb->url)];

				config__redact_urls(pb->url, shown, sizeof(shown));
				log_info("pyroscope: pushes to %s succeed again", shown);
			}
			pb->failing = false;
		} else {
			char why[CURL_ERROR_SIZE + 32];

			pb->c[PC_PUSHES_FAILED]++;
			if (m->data.result != CURLE_OK)
				snprintf(why, sizeof(why), "%s",
					 q && q->err[0] ? q->err : curl_easy_strerror(m->data.result));
			else
				snprintf(why, sizeof(why), "HTTP status %ld", code);
			if (!pb->failing) {
				char shown[sizeof(pb->url)];

				config__redact_urls(pb->url, shown, sizeof(shown));
				log_warn("pyroscope: a push to %s failed: %s (further failures are counted in "
					 "pyroscope_pushes_failed)", shown, why);
			}
			pb->failing = true;
		}
		curl_multi_remove_handle(pb->multi, m->easy_handle);
		curl_easy_cleanup(m->easy_handle);
		if (q) {
			curl_slist_free_all(q->hdrs);
			free(q->body);
			memset(q, 0, sizeof(*q));
		}
	}
}

static unsigned inflight(const struct pyroscope_backend *pb)
{
	unsigned n = 0;

	for (unsigned i = 0; i < MAX_INFLIGHT; i++)
		n += pb->inflight[i].easy != NULL;
	return n;
}

static void pyro_tick(void *st, uint64_t now_ms, int final)
{
	struct pyroscope_backend *pb = st;
	uint64_t mono = timeutil__mono_ms();
	int running;

	if (final || mono >= pb->next_push) {
		pb->next_push = pb->next_push + pb->push_ms > mono ? pb->next_push + pb->push_ms : mono + pb->push_ms;
		for (unsigned i = 0; i < pb->np; i++)
			if (pb->p[i].used && flamegraph__total(pb->p[i].fg))
				push_one(pb, &pb->p[i], now_ms);
	}
	(void)curl_multi_perform(pb->multi, &running);
	reap(pb);
	/* At shutdown the last pushes get their timeout: profiles are not lost to a quick exit. */
	for (uint64_t end = mono + pb->timeout_ms; final && inflight(pb) && timeutil__mono_ms() < end;) {
		(void)curl_multi_poll(pb->multi, NULL, 0, 100, NULL);
		(void)curl_multi_perform(pb->multi, &running);
		reap(pb);
	}
}

static unsigned pyro_counters(void *st, struct backend_counter *ret, unsigned max)
{
	struct pyroscope_backend *pb = st;
	unsigned n = 0;

	for (unsigned i = 0; i < PC_MAX && n < max; i++)
		ret[n++] = (struct backend_counter){ pc_names[i], pb->c[i], 0 };
	return n;
}

static void pyro_free(void *st)
{
	struct pyroscope_backend *pb = st;

	if (!pb)
		return;
	for (unsigned i = 0; i < MAX_INFLIGHT; i++) {
		struct push *q = &pb->inflight[i];

		if (!q->easy)
			continue;
		curl_multi_remove_handle(pb->multi, q->easy);
		curl_easy_cleanup(q->easy);
		curl_slist_free_all(q->hdrs);
		free(q->body);
		pb->c[PC_PUSHES_FAILED]++;
	}
	curl_multi_cleanup(pb->multi);
	for (unsigned i = 0; i < pb->np; i++)
		flamegraph__free(pb->p[i].fg);
	free(pb->p);
	free(pb);
	curl_global_cleanup();
}

const struct exporter_backend_ops pyroscope_backend_ops = {
	.name = "pyroscope",
	.init = pyro_init,
	.on_profile = pyro_on_profile,
	.tick = pyro_tick,
	.counters = pyro_counters,
	.free = pyro_free,
};
