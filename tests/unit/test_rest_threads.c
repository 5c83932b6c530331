/*
 * Unit tests for the REST API's tprofiling feature: its documents
 * (analyzer/rest/rest_doc: every refusal, each leaving the configuration as
 * it was; GET) and its tasks (analyzer/rest/rest_threads: one THREADS task
 * per selected process, followed as processes come and go, renewed,
 * cancelled by a stop), over a /proc made in a temporary directory and a
 * recorder in place of the analyzers: no agent, no BPF.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "analyzer/rest/rest_doc.h"
#include "analyzer/rest/rest_threads.h"
#include "common/thread_probes.h"

/* The manual's start command, with the comm of the integration test's workload. */
static const char manual_put[] = "json={\"cmd\": {\"probe\": [\"oncpu\", \"syscall_file\", \"syscall_net\", "
				 "\"syscall_sched\", \"syscall_lock\"]}, \"snoopers\": {\"proc_name\": [{\"comm\": "
				 "\"thread_lab\"}]}, \"state\": \"running\"}";

static char err[512];

static int apply(struct rest_doc *d, const char *body)
{
	err[0] = 0;
	return rest_doc__apply(body, strlen(body), d, err, sizeof(err));
}

static void assert_contains(const char *text, const char *want)
{
	if (!strstr(text, want))
		fail_msg("'%s' does not say '%s'", text, want);
}

/* text without its blanks: json-c's pretty layout aside (the strings compared hold none) */
static char *squeeze(char *text)
{
	size_t n = 0;

	for (size_t i = 0; text[i]; i++)
		if (text[i] != ' ' && text[i] != '\n')
			text[n++] = text[i];
	text[n] = 0;
	return text;
}

static struct rest_doc *new_doc(void)
{
	struct rest_doc *d = malloc(sizeof(*d));

	assert_non_null(d);
	rest_doc__defaults(d, REST_TPROFILING);
	return d;
}

/* Whether a and b are the same configuration, the answers' notes aside. */
static bool same_config(const struct rest_doc *a, const struct rest_doc *b)
{
	struct rest_doc *x = malloc(sizeof(*x)), *y = malloc(sizeof(*y));
	bool same;

	assert_non_null(x);
	assert_non_null(y);
	memcpy(x, a, sizeof(*x));
	memcpy(y, b, sizeof(*y));
	memset(x->notes, 0, sizeof(x->notes));
	memset(y->notes, 0, sizeof(y->notes));
	same = !memcmp(x, y, sizeof(*x));
	free(x);
	free(y);
	return same;
}

/* /tprofiling is a feature now (no 501), and its sub-items are thread_probes' names, bit i the i-th. */
static void test_feature_and_names(void **state)
{
	unsigned i;

	(void)state;
	assert_int_equal(rest_doc__feature("/tprofiling"), REST_TPROFILING);
	assert_false(rest_doc__known_unsupported("/tprofiling"));
	assert_string_equal(rest_feature__name(REST_TPROFILING), "tprofiling");
	assert_contains(rest_doc__supported(), "tprofiling");
	for (i = 0; rest_doc__probe_name(REST_TPROFILING, i); i++) {
		int known;

		assert_int_equal(thread_probes__bit(rest_doc__probe_name(REST_TPROFILING, i), &known), 1u << i);
	}
	assert_int_equal(i, 5);
	assert_int_equal((1u << i) - 1, THREAD_PROBES_ALL);
}

/* The manual's command is taken; GET before any PUT and after it. */
static void test_manual_put_and_get(void **state)
{
	struct rest_doc *d = new_doc(), *d2 = new_doc();
	char *get, *body;

	(void)state;
	get = rest_doc__render(d);
	assert_non_null(get);
	squeeze(get);
	assert_contains(get, "\"state\":\"stopped\"");
	assert_contains(get, "\"probe\":[]");
	free(get);

	assert_int_equal(apply(d, manual_put), 0);
	assert_true(d->running);
	assert_int_equal(rest_threads__probes(d), THREAD_PROBES_ALL);
	assert_int_equal(d->nnames, 1);
	assert_string_equal(d->names[0].comm, "thread_lab");
	assert_int_equal(d->stack_threshold_ms, -1);
	assert_contains(d->notes, "unchanged: params");
	get = rest_doc__render(d);
	assert_non_null(get);
	squeeze(get);
	assert_contains(get, "\"probe\":[\"oncpu\",\"syscall_file\",\"syscall_net\",\"syscall_lock\",\"syscall_sched\"]");
	assert_contains(get, "\"comm\":\"thread_lab\"");
	assert_contains(get, "\"state\":\"running\"");
	assert_null(strstr(get, "stack_threshold")); /* unset: the agent's */
	/* what GET says, PUT takes */
	assert_true(asprintf(&body, "json=%s", get) > 0);
	assert_int_equal(apply(d2, body), 0);
	assert_true(same_config(d, d2));
	free(body);
	free(get);

	/* names and state without case, as gala-gopher matches them; the threshold param */
	assert_int_equal(apply(d, "json={\"cmd\": {\"probe\": [\"OnCpu\", \"SYSCALL_LOCK\"]}, \"params\": "
				  "{\"stack_threshold\": 25}, \"state\": \"RUNNING\"}"), 0);
	assert_int_equal(rest_threads__probes(d), 1u << 0 | 1u << 3);
	assert_int_equal(d->stack_threshold_ms, 25);
	get = rest_doc__render(d);
	assert_non_null(get);
	squeeze(get);
	assert_contains(get, "\"stack_threshold\":25");
	free(get);
	/* gala-gopher's other parameters are taken and said to be ignored */
	assert_int_equal(apply(d, "json={\"params\": {\"min_exec_dur\": 5, \"report_period\": 30}}"), 0);
	assert_contains(d->notes, "ignored by tprofiling: params.min_exec_dur, params.report_period");
	assert_int_equal(apply(d, "json={\"state\": \"Stopped\"}"), 0);
	assert_false(d->running);
	free(d);
	free(d2);
}

/* Every refusal, with its answer, each leaving the configuration exactly as it was. */
static void test_refusals(void **state)
{
	static const struct { const char *body, *says; } bad[] = {
		{ "{\"state\": \"running\"}", "put data must start with json=: the body is not json=<document>" },
		{ "xjson={\"state\": \"running\"}", "the body is not json=<document>" },
		{ "json={\"state\": \"running\"", "the document is not JSON" },
		{ "json={\"state\": running}", "invalid json format: the document is not JSON" },
		{ "json={\"state\": \"running\"}}", "the document is not JSON" },
		{ "json=[1]", "the document is not a JSON object" },
		{ "json={\"cmd\": {\"probe\": [\"oncpux\"]}}", "unsupported probe range: oncpux. cmd.probe: 'oncpux' is not a sub-item of tprofiling "
			"(oncpu, syscall_file, syscall_net, syscall_lock, syscall_sched)" },
		{ "json={\"cmd\": {\"probe\": [7]}}", "Invalid probe range: must be string. cmd.probe: '(not a string)' is not a sub-item of tprofiling" },
		{ "json={\"cmd\": {\"probe\": \"oncpu\"}}", "cmd.probe must be a list of sub-items" },
		{ "json={\"cmd\": {}}", "cmd.probe is missing" },
		{ "json={\"cmd\": {\"probe\": []}, \"state\": \"running\"}", "state running needs a sub-item" },
		{ "json={\"snoopers\": {\"proc_name\": [\"thread_lab\"]}}",
		  "Error occurs when parsing snooper proc_name: snoopers.proc_name[0] must be an object {comm, cmdline, debugging_dir}" },
		{ "json={\"snoopers\": {\"proc_name\": [{\"comm\": 5}]}}", "snoopers.proc_name[0].comm must be a string" },
		{ "json={\"snoopers\": {\"proc_name\": [{\"cmdline\": \"\"}]}}", "snoopers.proc_name[0] names no process" },
		{ "json={\"snoopers\": {\"proc_id\": [\"12\"]}}", "Error occurs when parsing snooper proc_id: snoopers.proc_id[0] must be an integer" },
		{ "json={\"snoopers\": {\"proc_id\": 12}}", "snoopers.proc_id must be a list" },
		{ "json={\"snoopers\": {\"pid\": [12]}}", "snoopers: unknown key 'pid'" },
		{ "json={\"snoopers\": {\"container_id\": [\"a/b\"]}}", "snoopers.container_id[0] is empty or holds a '/'" },
		{ "json={\"snoopers\": {}, \"state\": \"running\"}", "the snooper for tprofiling cannot be empty" },
		{ "json={\"state\": 1}", "invalid state: must be string" },
		{ "json={\"state\": \"run\"}", "invalid state run: must be running or stopped" },
		{ "json={\"params\": {\"stack_threshold\": -1}}", "params.stack_threshold invalid value -1, must be in [0, 3600000]" },
		{ "json={\"params\": {\"stack_threshold\": \"10ms\"}}", "params.stack_threshold must be an integer" },
		{ "json={\"params\": {\"stack_treshold\": 10}}", "params: 'stack_treshold' is not a parameter" },
		{ "json={\"cmd\": {\"probe\": [\"oncpu\"]}, \"blacklist\": {}}", "blacklist is not supported by ember" },
		{ "json={\"cmd\": {\"probe\": [\"oncpu\"]}, \"stat\": \"running\"}", "unknown key 'stat'" },
	};
	static const char *const unrecorded[] = { "python_gc", "pthread_sync", "oncpu_sample", "mem_usage", "mem_glibc",
						  "offcpu" };
	struct rest_doc *d = new_doc(), *was = new_doc(), *fresh = new_doc();
	char body[256];

	(void)state;
	/* a running configuration: a refusal must leave it running as it is */
	assert_int_equal(apply(d, manual_put), 0);
	memcpy(was, d, sizeof(*d));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (apply(d, bad[i].body) != -EINVAL)
			fail_msg("taken: %s", bad[i].body);
		assert_contains(err, bad[i].says);
		assert_true(same_config(d, was));
	}
	/* gala-gopher's sub-items that ember does not record: refused by name, the good ones before them too */
	for (size_t i = 0; i < sizeof(unrecorded) / sizeof(unrecorded[0]); i++) {
		snprintf(body, sizeof(body), "json={\"cmd\": {\"probe\": [\"syscall_net\", \"%s\"]}}", unrecorded[i]);
		assert_int_equal(apply(d, body), -EINVAL);
		assert_contains(err, unrecorded[i]);
		assert_contains(err, "is a sub-item of gala-gopher's tprofiling that ember does not record (ember "
				     "records oncpu, syscall_file, syscall_net, syscall_lock, syscall_sched)");
		assert_true(same_config(d, was));
	}
	assert_int_equal(apply(d, "json={\"cmd\": {\"probe\": [\"OFFCPU\"]}}"), -EINVAL);
	assert_contains(err, "OFFCPU is a sub-item");
	/* running without snoopers, the scope never given: refused, the earlier PUT's snoopers count */
	assert_int_equal(apply(fresh, "json={\"cmd\": {\"probe\": [\"oncpu\"]}, \"state\": \"running\"}"), -EINVAL);
	assert_contains(err, "the snooper for tprofiling cannot be empty");
	assert_false(fresh->running);
	assert_int_equal(apply(fresh, "json={\"snoopers\": {\"proc_id\": [42]}}"), 0);
	assert_int_equal(apply(fresh, "json={\"cmd\": {\"probe\": [\"oncpu\"]}, \"state\": \"running\"}"), 0);
	/* an empty selection is taken while stopped, then refused on start */
	assert_int_equal(apply(fresh, "json={\"snoopers\": {}, \"state\": \"stopped\"}"), 0);
	assert_int_equal(apply(fresh, "json={\"state\": \"running\"}"), -EINVAL);
	assert_contains(err, "the snooper for tprofiling cannot be empty");
	free(d);
	free(was);
	free(fresh);
}

/* ---- the tasks ---- */

#define MAX_REC 64

struct rec {
	unsigned nsub, ncancel;
	struct {
		char id[64], origin[16];
		uint32_t pid, probes;
		uint64_t stack_min_ns, duration_ms;
		int kind;
		size_t npids;
	} sub[MAX_REC];
	char cancelled[MAX_REC][64];
	int refuse;		/* submit answers this (-EEXIST: another thread task follows the process) */
};

static int rec_submit(void *ctx, const Ember__Task *t, char *e, size_t elen)
{
	struct rec *r = ctx;

	if (r->refuse) {
		snprintf(e, elen, "pid %u already has a threads task", t->pids[0]);
		return r->refuse;
	}
	assert_true(r->nsub < MAX_REC);
	snprintf(r->sub[r->nsub].id, sizeof(r->sub[0].id), "%s", t->id);
	r->sub[r->nsub].pid = t->n_pids ? t->pids[0] : 0;
	r->sub[r->nsub].npids = t->n_pids;
	r->sub[r->nsub].probes = t->thread_probes;
	r->sub[r->nsub].stack_min_ns = t->stack_min_ns;
	r->sub[r->nsub].duration_ms = t->duration_ms;
	r->sub[r->nsub].kind = t->kind;
	snprintf(r->sub[r->nsub].origin, sizeof(r->sub[0].origin), "%s", t->origin ? t->origin : "");
	r->nsub++;
	return 1;
}

static int rec_cancel(void *ctx, const char *id, char *e, size_t elen)
{
	struct rec *r = ctx;

	(void)e, (void)elen;
	assert_true(r->ncancel < MAX_REC);
	snprintf(r->cancelled[r->ncancel++], sizeof(r->cancelled[0]), "%s", id);
	return 0;
}

static char proc_dir[64];

static void put_file(unsigned pid, const char *name, const char *text, size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u", proc_dir, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%u/%s", proc_dir, pid, name);
	assert_non_null(f = fopen(path, "w"));
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
}

static void add_proc(unsigned pid, const char *comm)
{
	char c[64];
	int n = snprintf(c, sizeof(c), "%s\n", comm);

	put_file(pid, "comm", c, (size_t)n);
	put_file(pid, "cmdline", comm, strlen(comm) + 1);
}

static void del_proc(unsigned pid)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s/%u'", proc_dir, pid);
	assert_int_equal(system(cmd), 0);
}

static bool was_cancelled(const struct rec *r, const char *id)
{
	for (unsigned i = 0; i < r->ncancel; i++)
		if (!strcmp(r->cancelled[i], id))
			return true;
	return false;
}

/* The last task submitted for pid, or NULL. */
static const char *task_of(const struct rec *r, uint32_t pid)
{
	for (unsigned i = r->nsub; i-- > 0;)
		if (r->sub[i].pid == pid)
			return r->sub[i].id;
	return NULL;
}

static void test_tasks(void **state)
{
	struct rec *r = calloc(1, sizeof(*r));
	struct rest_threads_opts o = { .scan_ms = 2000, .max_pids = 16, .submit = rec_submit, .cancel = rec_cancel };
	struct rest_doc *d = new_doc();
	struct rest_threads *t;
	struct rest_threads_stats st;
	char id100[64], id200[64], cmd[96];
	uint64_t now = 1000000;

	(void)state;
	assert_non_null(r);
	snprintf(proc_dir, sizeof(proc_dir), "/tmp/ember-rest-threads-XXXXXX");
	assert_non_null(mkdtemp(proc_dir));
	o.proc_root = proc_dir;
	o.ctx = r;
	add_proc(100, "thread_lab");
	add_proc(200, "thread_lab");
	add_proc(300, "other");
	put_file(400, "comm", "thread_lab\n", 11); /* a kernel thread by that name: no command line */
	put_file(400, "cmdline", "", 0);
	assert_non_null(t = rest_threads__new(&o, NULL));

	/* nothing before a configuration, nor while it is stopped */
	rest_threads__tick(t, now);
	assert_int_equal(apply(d, "json={\"cmd\": {\"probe\": [\"oncpu\"]}, \"snoopers\": {\"proc_name\": "
				  "[{\"comm\": \"thread_lab\"}]}}"), 0);
	rest_threads__set(t, d);
	rest_threads__tick(t, now);
	assert_int_equal(r->nsub, 0);

	/* running: one task per selected process, THREADS, origin rest, the sub-items' bits, the agent's threshold */
	assert_int_equal(apply(d, manual_put), 0);
	rest_threads__set(t, d);
	rest_threads__tick(t, now);
	assert_int_equal(r->nsub, 2);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(r->sub[i].pid, 100 + 100 * i);
		assert_int_equal(r->sub[i].npids, 1);
		assert_int_equal(r->sub[i].kind, EMBER__TASK_KIND__THREADS);
		assert_string_equal(r->sub[i].origin, "rest");
		assert_int_equal(r->sub[i].probes, THREAD_PROBES_ALL);
		assert_int_equal(r->sub[i].stack_min_ns, 0);
		assert_int_equal(r->sub[i].duration_ms, 3600000);
	}
	assert_string_not_equal(r->sub[0].id, r->sub[1].id);
	snprintf(id100, sizeof(id100), "%s", task_of(r, 100));
	snprintf(id200, sizeof(id200), "%s", task_of(r, 200));
	rest_threads__stats(t, &st);
	assert_int_equal(st.followed, 2);
	assert_int_equal(st.tasks_started, 2);

	/* within the scan interval nothing is looked at; at the next scan a new process is followed */
	add_proc(500, "thread_lab");
	rest_threads__tick(t, now + 1000);
	assert_int_equal(r->nsub, 2);
	now += 2000;
	rest_threads__tick(t, now);
	assert_int_equal(r->nsub, 3);
	assert_int_equal(r->sub[2].pid, 500);
	assert_int_equal(r->ncancel, 0);

	/* a process that exits loses its task (cancelled: its analyzer may have ended it already) */
	del_proc(200);
	now += 2000;
	rest_threads__tick(t, now);
	assert_int_equal(r->nsub, 3);
	assert_int_equal(r->ncancel, 1);
	assert_true(was_cancelled(r, id200));
	rest_threads__stats(t, &st);
	assert_int_equal(st.followed, 2);

	/* a PUT that keeps the sub-items and threshold keeps the tasks of processes still selected */
	assert_int_equal(apply(d, "json={\"snoopers\": {\"proc_id\": [100, 300]}}"), 0);
	rest_threads__set(t, d);
	now += 10;
	rest_threads__tick(t, now);
	assert_false(was_cancelled(r, id100));
	assert_true(was_cancelled(r, task_of(r, 500)));
	assert_int_equal(r->nsub, 4);
	assert_int_equal(r->sub[3].pid, 300);

	/* one that changes them ends every task and starts new ones with the new sub-items and threshold */
	assert_int_equal(apply(d, "json={\"cmd\": {\"probe\": [\"syscall_file\", \"syscall_lock\"]}, \"params\": "
				  "{\"stack_threshold\": 0}}"), 0);
	rest_threads__set(t, d);
	assert_true(was_cancelled(r, id100));
	assert_true(was_cancelled(r, task_of(r, 300)));
	now += 10;
	rest_threads__tick(t, now);
	assert_int_equal(r->nsub, 6);
	assert_int_equal(r->sub[4].probes, 1u << 1 | 1u << 3);
	assert_int_equal(r->sub[4].stack_min_ns, 1); /* 0 ms: every call's stack */
	assert_string_not_equal(task_of(r, 100), id100);
	assert_int_equal(apply(d, "json={\"params\": {\"stack_threshold\": 25}}"), 0);
	rest_threads__set(t, d);
	now += 10;
	rest_threads__tick(t, now);
	assert_int_equal(r->nsub, 8);
	assert_int_equal(r->sub[7].stack_min_ns, 25000000);

	/* renewed before the hour ends: the old task cancelled, then a new one */
	snprintf(id100, sizeof(id100), "%s", task_of(r, 100));
	now += 3600000 - 4000;
	rest_threads__tick(t, now);
	assert_true(was_cancelled(r, id100));
	assert_int_equal(r->nsub, 10);
	assert_string_not_equal(task_of(r, 100), id100);

	/* a process another thread task follows: refused, counted, retried at each scan */
	add_proc(600, "x");
	assert_int_equal(apply(d, "json={\"snoopers\": {\"proc_id\": [100, 300, 600]}}"), 0);
	rest_threads__set(t, d);
	r->refuse = -EEXIST;
	now += 10;
	rest_threads__tick(t, now);
	rest_threads__stats(t, &st);
	assert_int_equal(st.task_failures, 1);
	assert_contains(st.last_error, "pid 600");
	assert_int_equal(st.followed, 2);
	r->refuse = 0;
	now += 2000;
	rest_threads__tick(t, now);
	assert_non_null(task_of(r, 600));
	rest_threads__stats(t, &st);
	assert_int_equal(st.followed, 3);

	/* stopped: every task cancelled, none started again */
	{
		unsigned nsub = r->nsub, ncancel = r->ncancel;

		assert_int_equal(apply(d, "json={\"state\": \"stopped\"}"), 0);
		rest_threads__set(t, d);
		assert_int_equal(r->ncancel, ncancel + 3);
		now += 5000;
		rest_threads__tick(t, now);
		assert_int_equal(r->nsub, nsub);
		rest_threads__stats(t, &st);
		assert_int_equal(st.followed, 0);
		/* a refused PUT is not set (rest_api applies only what rest_doc took): still nothing */
		assert_int_equal(apply(d, "json={\"cmd\": {\"probe\": [\"python_gc\"]}, \"state\": \"running\"}"), -EINVAL);
		assert_false(d->running);
		/* and running again starts afresh */
		assert_int_equal(apply(d, "json={\"state\": \"running\"}"), 0);
		rest_threads__set(t, d);
		now += 10;
		rest_threads__tick(t, now);
		assert_int_equal(r->nsub, nsub + 3);
	}

	rest_threads__free(t);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", proc_dir);
	assert_int_equal(system(cmd), 0);
	free(d);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_feature_and_names),
		cmocka_unit_test(test_manual_put_and_get),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_tasks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
