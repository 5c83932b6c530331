/*
 * exporter/skywalking, the continuous-profiling policies' push to the
 * analyzers: it never waits on an analyzer.  Two fake analyzers (ZeroMQ REP
 * sockets): the first does not answer, the second does.  The push returns at
 * once, the second's answer is taken at a later tick, the first's silence is
 * counted as a timeout (skywalking_policy_push_timeouts) and it gets the set
 * again at the next push; once every analyzer answered, an unchanged set is
 * not sent again.  The backend runs without gRPC: the test calls the parts
 * the exporter's loop would.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "common/bus.h"
#include "common/timeutil.h"
#include "exporter/skywalking/sw.h"

static char root[64];

static const char rules[] =
	"- match_cmd: \"/opt/shop/bin/server\"\n"
	"  service_name: shop\n"
	"  instance_name: inst-1\n"
	"  process_name: \"p-{{.Process.Pid}}\"\n";

struct env {
	struct ember_config *cfg;
	struct sw_backend *b;
	void *rep[2];		/* the fake analyzers: 0 stuck, 1 answers */
};

static void put_file(const char *rel, const char *data)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/proc/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, strlen(data) + 1, f), strlen(data) + 1);
	fclose(f);
}

static void fake_proc(unsigned pid)
{
	char rel[64], stat[256], path[256];

	snprintf(path, sizeof(path), "%s/proc/%u", root, pid);
	mkdir(path, 0755);
	snprintf(stat, sizeof(stat), "%u (app) S 1 %u %u 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 %u 1000 10\n", pid, pid,
		 pid, pid * 10);
	snprintf(rel, sizeof(rel), "%u/stat", pid);
	put_file(rel, stat);
	snprintf(rel, sizeof(rel), "%u/cmdline", pid);
	put_file(rel, "/opt/shop/bin/server");
}

static int setup(void **state)
{
	static struct env e;
	struct pf_opts po = { .mode = PF_MODE_REGEX, .rules_yaml = rules, .instance_id = "agent-1" };
	char proc[128], err[256], ep[256];
	struct sw_backend *b = calloc(1, sizeof(*b));

	memset(&e, 0, sizeof(e));
	snprintf(root, sizeof(root), "/tmp/ember-sw-pol-XXXXXX");
	assert_non_null(mkdtemp(root));
	assert_non_null(b);
	snprintf(proc, sizeof(proc), "%s/proc", root);
	mkdir(proc, 0755);
	snprintf(ep, sizeof(ep), "%s/" BUS_ANALYZER_DIR, root);
	mkdir(ep, 0755);
	fake_proc(100);
	fake_proc(101);
	po.proc_root = proc;
	e.cfg = config__new();
	assert_int_equal(config__set(e.cfg, "ember.run_dir", root, err, sizeof(err)), 0);
	b->cfg = e.cfg;
	b->tail = &b->head;
	b->analyzers = 2;
	b->pf = process_finder__new(&po, err, sizeof(err));
	assert_non_null(b->pf);
	assert_int_equal(process_finder__scan(b->pf), 2);
	for (unsigned i = 0; i < process_finder__count(b->pf); i++)
		process_finder__at(b->pf, i)->status = PF_REPORTED;
	/* the OAP's policy for service shop, as sw_policies_done keeps it */
	b->n_policies = 1;
	snprintf(b->policies[0].service, sizeof(b->policies[0].service), "shop");
	snprintf(b->policies[0].uuid, sizeof(b->policies[0].uuid), "u-1");
	b->policies[0].json = strdup("{\"ServiceName\":\"shop\",\"UUID\":\"u-1\"}");
	b->zctx = zmq_ctx_new();
	assert_non_null(b->zctx);
	for (unsigned s = 0; s < 2; s++) {
		int zero = 0;

		bus__analyzer_endpoint(root, s, ep, sizeof(ep));
		e.rep[s] = zmq_socket(b->zctx, ZMQ_REP);
		zmq_setsockopt(e.rep[s], ZMQ_LINGER, &zero, sizeof(zero));
		assert_int_equal(zmq_bind(e.rep[s], ep), 0);
	}
	e.b = b;
	*state = &e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	struct sw_backend *b = e->b;
	char cmd[128];

	sw_policies_free(b);
	free(b->policies[0].json);
	for (unsigned s = 0; s < 2; s++)
		zmq_close(e->rep[s]);
	zmq_ctx_term(b->zctx);
	process_finder__free(b->pf);
	free(b);
	config__free(e->cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
	return 0;
}

/* One request at the fake analyzer within timeout_ms: the PolicySet, checked; NULL when none came. */
static Ember__Request *analyzer_recv(void *rep, int timeout_ms)
{
	zmq_pollitem_t it = { .socket = rep, .events = ZMQ_POLLIN };
	Ember__Request *req;

	if (zmq_poll(&it, 1, timeout_ms) <= 0)
		return NULL;
	req = bus__recv_request(rep, ZMQ_DONTWAIT);
	assert_non_null(req);
	assert_int_equal(req->body_case, EMBER__REQUEST__BODY_POLICIES);
	assert_string_equal(req->policies->json, "[{\"ServiceName\":\"shop\",\"UUID\":\"u-1\"}]");
	assert_int_equal(req->policies->n_processes, 1);
	assert_string_equal(req->policies->processes[0]->service, "shop");
	return req;
}

static void analyzer_answer(void *rep)
{
	Ember__Reply r = EMBER__REPLY__INIT;

	assert_int_equal(bus__send_reply(rep, &r), 0);
}

/* The exporter's loop for ms: a tick every 10 ms, none of which may wait. */
static void loop_for(struct sw_backend *b, uint64_t ms)
{
	uint64_t until = timeutil__mono_ms() + ms;

	while (timeutil__mono_ms() < until) {
		struct timespec ts = { 0, 10 * 1000000 };
		uint64_t t0 = timeutil__mono_ms();

		sw_policies_tick(b, t0);
		assert_true(timeutil__mono_ms() - t0 < 250);
		nanosleep(&ts, NULL);
	}
}

/* Both analyzers answer every request, the exporter's loop runs, until the set is delivered or
 * ms passed; got[s]: the requests analyzer s received, pids[s]: the pids in its last one. */
static void serve(struct env *e, uint64_t ms, unsigned got[2], size_t pids[2])
{
	uint64_t until = timeutil__mono_ms() + ms;

	while (!e->b->pushed_once && timeutil__mono_ms() < until) {
		struct timespec ts = { 0, 10 * 1000000 };
		Ember__Request *req;

		for (unsigned s = 0; s < 2; s++)
			while ((req = analyzer_recv(e->rep[s], 0))) {
				got[s]++;
				pids[s] = req->policies->processes[0]->n_pids;
				ember__request__free_unpacked(req, NULL);
				analyzer_answer(e->rep[s]);
			}
		sw_policies_tick(e->b, timeutil__mono_ms());
		nanosleep(&ts, NULL);
	}
}

static void test_stuck_analyzer(void **state)
{
	struct env *e = *state;
	struct sw_backend *b = e->b;
	Ember__Request *req;
	unsigned got[2] = { 0 };
	size_t pids[2] = { 0 };
	uint64_t t0 = timeutil__mono_ms();

	/* the push only sends: a blocking one waits 500 ms for each silent analyzer (limits leave
	 * room for a loaded machine) */
	sw_push_policies(b, false);
	assert_true(timeutil__mono_ms() - t0 < 250);
	req = analyzer_recv(e->rep[1], 1000);
	assert_non_null(req);
	ember__request__free_unpacked(req, NULL);
	analyzer_answer(e->rep[1]);
	loop_for(b, 100);
	assert_true(b->push[1].answered);
	if (timeutil__mono_ms() - t0 < 450)
		assert_int_equal(b->c[SC_POLICY_PUSH_TIMEOUTS], 0);	/* the stuck one's 500 ms are not over */
	assert_false(b->pushed_once);
	loop_for(b, 600);
	assert_int_equal(b->c[SC_POLICY_PUSH_TIMEOUTS], 1);
	assert_false(b->pushed_once);	/* not every analyzer has the set */

	/* the next push (the next check) sends it again to both; the first is back and answers
	 * (the first push too, if ZeroMQ kept it: to a socket the exporter closed, lost) */
	t0 = timeutil__mono_ms();
	sw_push_policies(b, false);
	assert_true(timeutil__mono_ms() - t0 < 250);
	serve(e, 2000, got, pids);
	assert_true(b->pushed_once);
	assert_int_equal(got[1], 1);
	assert_int_equal(pids[1], 2);
	assert_in_range(got[0], 1, 2);
	assert_int_equal(b->c[SC_POLICY_PUSH_TIMEOUTS], 1);

	/* delivered everywhere and unchanged: not sent again */
	sw_push_policies(b, false);
	assert_null(analyzer_recv(e->rep[0], 100));
	assert_null(analyzer_recv(e->rep[1], 0));
}

/* A changed set while a push is in flight replaces it: the analyzers get the newer one. */
static void test_newer_set_replaces(void **state)
{
	struct env *e = *state;
	struct sw_backend *b = e->b;
	Ember__Request *req;
	unsigned got[2] = { 0 };
	size_t pids[2] = { 0 };

	sw_push_policies(b, false);
	for (unsigned s = 0; s < 2; s++) {
		req = analyzer_recv(e->rep[s], 1000);
		assert_non_null(req);
		ember__request__free_unpacked(req, NULL);
	}
	/* neither answered yet; pid 102 joins the service */
	fake_proc(102);
	assert_int_equal(process_finder__scan(b->pf), 3);
	for (unsigned i = 0; i < process_finder__count(b->pf); i++)
		process_finder__at(b->pf, i)->status = PF_REPORTED;
	sw_push_policies(b, false);
	for (unsigned s = 0; s < 2; s++)
		analyzer_answer(e->rep[s]);	/* the first set's answer: its socket is gone */
	serve(e, 2000, got, pids);
	assert_true(b->pushed_once);
	for (unsigned s = 0; s < 2; s++) {
		assert_int_equal(got[s], 1);
		assert_int_equal(pids[s], 3);
	}
	assert_int_equal(b->c[SC_POLICY_PUSH_TIMEOUTS], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stuck_analyzer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_newer_set_replaces, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
