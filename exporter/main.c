/*
 * ember-exporter: unprivileged; the only process that talks to backends.
 * Pulls Envelopes from every analyzer (ZeroMQ PULL), hands them to the
 * configured backend plugins, and answers stats requests.  It has no channel
 * to the collector.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "common/bus.h"
#include "common/config.h"
#include "common/counters.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "exporter/backend.h"
#include "exporter/task_join.h"

#define MAX_BACKENDS 8
#define TICK_MS 250

enum xstat {
	XS_ENVELOPES, XS_DECODE_ERRORS, XS_PROFILES, XS_TASK_EVENTS, XS_METER_BATCHES, XS_SEQ_GAPS, XS_NETWORK_BATCHES,
	XS_THREAD_BATCHES, XS_OTHER_BODIES, XS_MAX
};
static const struct counter_def xstat_counters[XS_MAX] = {
	[XS_ENVELOPES] = { .name = "exporter_envelopes" },
	[XS_DECODE_ERRORS] = { .name = "exporter_decode_errors" },
	[XS_PROFILES] = { .name = "exporter_profile_batches" },
	[XS_TASK_EVENTS] = { .name = "exporter_task_events" },
	[XS_METER_BATCHES] = { .name = "exporter_meter_batches" },
	[XS_SEQ_GAPS] = { .name = "exporter_sequence_gaps" },
	[XS_NETWORK_BATCHES] = { .name = "exporter_network_batches" },
	[XS_THREAD_BATCHES] = { .name = "exporter_thread_batches" },
	[XS_OTHER_BODIES] = { .name = "exporter_unknown_bodies" },
};

/* The exporter: what its loop and handlers work on, built by main(). */
struct exporter {
	struct ember_config *cfg;
	void *zctx, *pull, *rep;
	const struct exporter_backend_ops *ops[MAX_BACKENDS];
	void *st[MAX_BACKENDS];
	unsigned nb;
	uint64_t stats[XS_MAX];
	struct task_join *join;
	uint64_t last_seq[64];
	struct bus_meter_set meters;  /* the own meters' batch: big, so not on the stack */
};

/* SIGTERM, SIGINT: the signal handler's only state. */
static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static void dispatch(struct exporter *x, Ember__Envelope *env)
{
	int pass_event = 1;

	x->stats[XS_ENVELOPES]++;
	if (env->analyzer < 64) {
		/* Sequence numbers reveal envelopes lost between analyzer and exporter. */
		uint64_t last = x->last_seq[env->analyzer];
		if (last && env->seq > last + 1)
			x->stats[XS_SEQ_GAPS] += env->seq - last - 1;
		x->last_seq[env->analyzer] = env->seq;
	}
	/* A task spread over several analyzers reaches the backends as one. */
	if (env->body_case == EMBER__ENVELOPE__BODY_TASK_EVENT && env->task_event) {
		Ember__TaskEvent__State st;

		pass_event = task_join__event(x->join, env->task_event, env->analyzer, &st);
		env->task_event->state = st;
	}
	for (unsigned i = 0; i < x->nb; i++) {
		switch (env->body_case) {
		case EMBER__ENVELOPE__BODY_PROFILE:
			if (x->ops[i]->on_profile) x->ops[i]->on_profile(x->st[i], env->profile);
			break;
		case EMBER__ENVELOPE__BODY_TASK_EVENT:
			if (pass_event && x->ops[i]->on_task_event) x->ops[i]->on_task_event(x->st[i], env->task_event);
			break;
		case EMBER__ENVELOPE__BODY_METERS:
			if (x->ops[i]->on_meters) x->ops[i]->on_meters(x->st[i], env->meters, env->analyzer);
			break;
		case EMBER__ENVELOPE__BODY_NETWORK:
			/* every shard's batch as it comes: their flows add up, no join needed */
			if (x->ops[i]->on_network) x->ops[i]->on_network(x->st[i], env->network);
			break;
		case EMBER__ENVELOPE__BODY_THREADS:
			/* every shard's batch as it comes: their threads differ */
			if (x->ops[i]->on_threads) x->ops[i]->on_threads(x->st[i], env->threads);
			break;
		case EMBER__ENVELOPE__BODY_TRIGGER:
			if (x->ops[i]->on_trigger) x->ops[i]->on_trigger(x->st[i], env->trigger, env->analyzer);
			break;
		case EMBER__ENVELOPE__BODY_MONITORS:
			if (x->ops[i]->on_monitors) x->ops[i]->on_monitors(x->st[i], env->monitors, env->analyzer);
			break;
		default:
			break;
		}
	}
	switch (env->body_case) {
	case EMBER__ENVELOPE__BODY_PROFILE: x->stats[XS_PROFILES]++; break;
	case EMBER__ENVELOPE__BODY_TASK_EVENT: x->stats[XS_TASK_EVENTS]++; break;
	case EMBER__ENVELOPE__BODY_METERS: x->stats[XS_METER_BATCHES]++; break;
	case EMBER__ENVELOPE__BODY_NETWORK: x->stats[XS_NETWORK_BATCHES]++; break;
	case EMBER__ENVELOPE__BODY_THREADS: x->stats[XS_THREAD_BATCHES]++; break;
	default: x->stats[XS_OTHER_BODIES]++; break;
	}
}

static int drain_pull(struct exporter *x, int max)
{
	int n = 0;
	while (n < max) {
		Ember__Envelope *env = bus__recv_envelope(x->pull, ZMQ_DONTWAIT);
		if (!env) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			x->stats[XS_DECODE_ERRORS]++;
			continue;
		}
		dispatch(x, env);
		ember__envelope__free_unpacked(env, NULL);
		n++;
	}
	return n;
}

_Static_assert(XS_MAX + MAX_BACKENDS * MAX_BACKEND_COUNTERS + 10 <= BUS_METER_SET_MAX,
	       "the exporter's and its backends' meters fit a meter set");

static void own_meters(struct exporter *x, struct bus_meter_set *o)
{
	uint64_t ts = timeutil__unix_ms();
	struct backend_counter bc[MAX_BACKEND_COUNTERS];
	struct task_join_stats js;

	bus__meter_set_reset(o, NULL, 0);
	task_join__stats(x->join, &js);
	bus__meter_set_add(o, "exporter_tasks_joined", js.joined, 1, ts);
	bus__meter_set_add(o, "exporter_tasks_join_evicted", js.evicted, 1, ts);
	bus__meter_set_add_counters(o, xstat_counters, x->stats, XS_MAX, ts);
	for (unsigned b = 0; b < x->nb; b++) {
		unsigned n = x->ops[b]->counters ? x->ops[b]->counters(x->st[b], bc, MAX_BACKEND_COUNTERS) : 0;
		for (unsigned i = 0; i < n; i++)
			bus__meter_set_add(o, bc[i].name, bc[i].value, !bc[i].level, ts);
	}
	bus__meter_set_add_memory(o, "exporter", ts);
}

static void publish_own_meters(struct exporter *x)
{
	Ember__MeterBatch b = EMBER__METER_BATCH__INIT;

	own_meters(x, &x->meters);
	b.n_meters = x->meters.n;
	b.meters = x->meters.ptrs;
	for (unsigned i = 0; i < x->nb; i++)
		if (x->ops[i]->on_meters)
			x->ops[i]->on_meters(x->st[i], &b, UINT32_MAX);
}

static void handle_request(struct exporter *x)
{
	Ember__Request *req = bus__recv_request(x->rep, ZMQ_DONTWAIT);
	Ember__Reply rep = EMBER__REPLY__INIT;

	if (!req && errno == EAGAIN)
		return;
	if (!req) {
		rep.err = -EBADMSG;
		rep.error = "malformed request";
	} else if (req->body_case == EMBER__REQUEST__BODY_STATS) {
		own_meters(x, &x->meters);
		rep.n_stats = x->meters.n;
		rep.stats = x->meters.ptrs;
	} else {
		rep.err = -EOPNOTSUPP;
		rep.error = "the exporter answers stats requests only";
	}
	bus__send_reply(x->rep, &rep);
	if (req)
		ember__request__free_unpacked(req, NULL);
}

/* The configured backends, in order.  0 or -1 (logged). */
extern const struct exporter_backend_ops pyroscope_backend_ops;

static int setup_backends(struct exporter *x)
{
	char err[512];

	for (size_t i = 0; i < x->cfg->exporter.backends.n && x->nb < MAX_BACKENDS; i++) {
		const char *name = x->cfg->exporter.backends.v[i];
		const struct exporter_backend_ops *ops = exporter_backend__find(name);

		if (!ops) {
			log_warn("exporter backend '%s' is not available in this build; skipping it", name);
			continue;
		}
		x->st[x->nb] = ops->init(x->cfg, err, sizeof(err));
		if (!x->st[x->nb]) {
			log_error("backend '%s': %s", name, err);
			return -1;
		}
		x->ops[x->nb++] = ops;
		log_info("backend '%s' ready", name);
	}
	/* The REST API's params.pyroscope_server works without the backend in the list (gala-gopher's way). */
	if (x->cfg->ember.rest_api.enabled && x->nb < MAX_BACKENDS) {
		bool listed = false;

		for (size_t i = 0; i < x->cfg->exporter.backends.n; i++)
			listed |= !strcmp(x->cfg->exporter.backends.v[i], "pyroscope");
		if (!listed && (x->st[x->nb] = pyroscope_backend_ops.init(x->cfg, err, sizeof(err))))
			x->ops[x->nb++] = &pyroscope_backend_ops;
		else if (!listed)
			log_warn("the REST API's pyroscope_server is not available: %s", err);
	}
	return 0;
}

/* PULL from every analyzer, REP for stats requests; both 0600 under the run directory. */
static int setup_sockets(struct exporter *x)
{
	int hwm = (int)x->cfg->exporter.zmq_hwm, zero = 0, r;
	int64_t maxmsg = BUS_MAX_MSG;
	char ep[512];
	mode_t old;

	x->zctx = zmq_ctx_new();
	x->pull = zmq_socket(x->zctx, ZMQ_PULL);
	x->rep = zmq_socket(x->zctx, ZMQ_REP);
	if (!x->pull || !x->rep)
		return -1;
	zmq_setsockopt(x->pull, ZMQ_RCVHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(x->pull, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg));
	zmq_setsockopt(x->rep, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg));
	zmq_setsockopt(x->rep, ZMQ_LINGER, &zero, sizeof(zero));
	/* The analyzers (our group) push here; the stats socket is for root alone. */
	old = umask(0007);
	bus__exporter_endpoint(x->cfg->ember.run_dir, ep, sizeof(ep));
	unlink(ep + strlen("ipc://"));
	r = zmq_bind(x->pull, ep);
	umask(0077);
	if (!r) {
		bus__exporter_ctl_endpoint(x->cfg->ember.run_dir, ep, sizeof(ep));
		unlink(ep + strlen("ipc://"));
		r = zmq_bind(x->rep, ep);
	}
	umask(old);
	if (r)
		log_error("cannot listen on %s: %s", ep, zmq_strerror(errno));
	return r ? -1 : 0;
}

static void run(struct exporter *x)
{
	uint64_t next_tick = timeutil__mono_ms() + TICK_MS, last_meters = 0;

	while (!stop) {
		zmq_pollitem_t items[2 + MAX_BACKENDS] = { { .socket = x->pull, .events = ZMQ_POLLIN },
							   { .socket = x->rep, .events = ZMQ_POLLIN } };
		unsigned owner[MAX_BACKENDS], ni = 2;
		uint64_t now, mono = timeutil__mono_ms();
		int n;

		for (unsigned i = 0; i < x->nb; i++) {
			int fd = x->ops[i]->event_fd ? x->ops[i]->event_fd(x->st[i]) : -1;

			if (fd >= 0) {
				owner[ni - 2] = i;
				items[ni++] = (zmq_pollitem_t){ .fd = fd, .events = ZMQ_POLLIN };
			}
		}
		/* Ticks on a fixed 250 ms grid, whatever else wakes the loop; a
		 * backend with news (an OAP answer) is ticked at once, so a task
		 * the OAP hands out is handled within one check interval plus one
		 * tick. */
		n = zmq_poll(items, (int)ni, next_tick > mono ? (long)(next_tick - mono) : 0);
		if (n < 0 && errno != EINTR)
			break;
		if (n > 0 && (items[0].revents & ZMQ_POLLIN))
			drain_pull(x, 1000);
		if (n > 0 && (items[1].revents & ZMQ_POLLIN))
			handle_request(x);
		now = timeutil__unix_ms();
		for (unsigned k = 2; n > 0 && k < ni; k++)
			if (items[k].revents & ZMQ_POLLIN)
				x->ops[owner[k - 2]]->tick(x->st[owner[k - 2]], now, 0);
		if (now - last_meters >= x->cfg->profiling.flush_interval_ns / 1000000) {
			last_meters = now;
			publish_own_meters(x);
		}
		mono = timeutil__mono_ms();
		if (mono >= next_tick) {
			next_tick = next_tick + TICK_MS > mono ? next_tick + TICK_MS : mono + TICK_MS;
			for (unsigned i = 0; i < x->nb; i++)
				if (x->ops[i]->tick)
					x->ops[i]->tick(x->st[i], now, 0);
		}
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, 0, 'c' }, { "help", no_argument, 0, 'h' }, { 0 },
	};
	static struct exporter ex;   /* static: its meter set is big */
	struct exporter *x = &ex;
	const char *config_path = NULL;
	struct sigaction sa = { .sa_handler = on_signal };
	char err[512];
	int opt;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': config_path = optarg; break;
		case 'h': printf("usage: ember-exporter --config FILE\nStarted by `ember run`.\n"); return 0;
		default: fprintf(stderr, "usage: ember-exporter --config FILE\n"); return 2;
		}
	}
	x->cfg = config__new();
	x->join = task_join__new(256);
	if (!x->cfg || !x->join)
		return 1;
	if (config_path && config__load_file(x->cfg, config_path, err, sizeof(err))) {
		fprintf(stderr, "ember-exporter: %s\n", err);
		return 2;
	}
	log__init("exporter", (enum log_level)x->cfg->ember.log_level);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (setup_backends(x) || setup_sockets(x))
		return 1;
	log_info("ready: %u backend(s)", x->nb);
	run(x);
	/* The supervisor stops the analyzers first: take what they sent, then flush. */
	while (drain_pull(x, 100000) > 0)
		;
	for (unsigned i = 0; i < x->nb; i++) {
		if (x->ops[i]->tick)
			x->ops[i]->tick(x->st[i], timeutil__unix_ms(), 1);
		x->ops[i]->free(x->st[i]);
	}
	log_info("stopped after %llu envelopes", (unsigned long long)x->stats[XS_ENVELOPES]);
	zmq_close(x->pull);
	zmq_close(x->rep);
	zmq_ctx_term(x->zctx);
	x->join = task_join__free(x->join);
	config__free(x->cfg);
	return 0;
}
