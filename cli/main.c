/*
 * ember: the command line.
 *   ember run        start the agent (collector + analyzers + exporter)
 *   ember profile    profile a process now (through the running agent, or a private one)
 *   ember stats      every counter of a running agent
 *   ember analyze-pcap  L7 exchanges in a capture file
 */

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/supervisor.h"
#include "common/bus.h"
#include "common/cleanup.h"
#include "common/config.h"
#include "common/ctl_client.h"
#include "common/ctl_proto.h"
#include "common/log.h"
#include "common/timeutil.h"

#define EMBER_VERSION "0.1.0"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ember <command> [options]\n\n"
		"commands:\n"
		"  run            start the agent: ember-collector (root), ember-analyzer and\n"
		"                 ember-exporter (unprivileged user); Ctrl-C stops and flushes\n"
		"  profile        profile running processes and write flame graphs\n"
		"  stats          print every counter of the running agent\n"
		"  analyze-pcap   print the L7 exchanges found in a pcap/pcapng file\n"
		"  version        print the version\n\n"
		"`ember <command> --help` describes a command's options.\n");
}

static void usage_run(FILE *f)
{
	fprintf(f,
		"usage: ember run [--config FILE] [--set KEY=VALUE]... [--dump-config] [--help-config]\n"
		"  --config FILE     YAML configuration (default: built-in defaults; see deploy/ember.yaml)\n"
		"  --set KEY=VALUE   override one key (e.g. --set profiling.flush_interval=2s);\n"
		"                    a list as a,b or as --dump-config prints it: [a, b]\n"
		"  --dump-config     print the effective configuration and exit\n"
		"  --help-config     list every configuration key, default and environment variable\n"
		"Environment variables (ROVER_*, EMBER_*) override the file; --set overrides both.\n");
}

/*
 * A Rover user changes only core.backend.addr (or ROVER_BACKEND_ADDR) to reach
 * their OAP: when it is given, the skywalking backend is switched on even if
 * exporter.backends does not list it.  The default (Rover's localhost:11800)
 * does not switch it on, so the embedded default needs no OAP.
 */
static int enable_oap_if_addressed(struct ember_config *cfg)
{
	struct ember_config *def = config__new();
	char list[512] = "";
	int given, r = 0;

	if (!def)
		return -ENOMEM;
	given = getenv("ROVER_BACKEND_ADDR") || strcmp(cfg->core.backend.addr, def->core.backend.addr);
	config__free(def);
	if (!given)
		return 0;
	for (size_t i = 0; i < cfg->exporter.backends.n; i++) {
		if (!strcmp(cfg->exporter.backends.v[i], "skywalking"))
			return 0;
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s,", cfg->exporter.backends.v[i]);
	}
	strncat(list, "skywalking", sizeof(list) - strlen(list) - 1);
	r = config__set(cfg, "exporter.backends", list, NULL, 0);
	if (!r)
		fprintf(stderr, "ember: core.backend.addr is %s: reporting to the SkyWalking OAP there "
				"(exporter.backends = %s)\n", cfg->core.backend.addr, list);
	return r;
}

/* ---- ember run ---------------------------------------------------------------- */

static int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, 0, 'c' }, { "set", required_argument, 0, 's' },
		{ "dump-config", no_argument, 0, 'd' }, { "help-config", no_argument, 0, 'H' },
		{ "help", no_argument, 0, 'h' }, { 0 },
	};
	struct cfg_args ca = { 0 };
	int opt, dump = 0, r;
	char dir[PATH_MAX];
	struct ember_config *cfg;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+hc:", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': ca.path = optarg; break;
		case 's': if (ca.nsets < 64) ca.sets[ca.nsets++] = optarg; break;
		case 'd': dump = 1; break;
		case 'H': return config__help(stdout) ? 1 : 0;
		case 'h': usage_run(stdout); return 0;
		default: return cli__die_usage("run", "unknown option", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli__die_usage("run", "unexpected argument", argv[optind]);
	cfg = cli__load_config("run", &ca);
	if (!cfg)
		return 2;
	if (enable_oap_if_addressed(cfg)) {
		config__free(cfg);
		return 1;
	}
	if (dump) {
		r = config__dump(cfg, stdout, CONFIG_DUMP_REDACT);
		config__free(cfg);
		return r ? 1 : 0;
	}
	if ((r = cli__preflight("run"))) {
		config__free(cfg);
		return r;
	}
	log__init("ember", (enum log_level)cfg->ember.log_level);
	if (cli__bin_dir(dir, sizeof(dir)))
		return 1;
	{
		struct agent_info ai;
		if (!supervisor__find_agent(cfg->ember.run_dir, &ai)) {
			fprintf(stderr, "ember run: an agent is already running (pid %d, run dir %s)\n", ai.pid,
				cfg->ember.run_dir);
			config__free(cfg);
			return 1;
		}
	}
	r = supervisor__run(cfg, dir);
	config__free(cfg);
	return r ? 1 : 0;
}

static void print_meters(const char *who, Ember__Reply *rep)
{
	for (size_t i = 0; i < rep->n_stats; i++) {
		double v = rep->stats[i]->value;

		/* counts print whole; a time in seconds (unwind_build_seconds) keeps its fraction */
		if (fabs(v) < 1e15 && v != floor(v))
			printf("%-10s %-44s %.6f\n", who, rep->stats[i]->name, v);
		else
			printf("%-10s %-44s %.0f\n", who, rep->stats[i]->name, v);
	}
}

/* The running tasks a continuous-profiling policy started, each with its causes. */
static void print_triggered(void *zctx, const char *ep, const char *who)
{
	Ember__Request req = EMBER__REQUEST__INIT;
	Ember__Reply *rep = NULL;

	req.body_case = EMBER__REQUEST__BODY_LIST;
	req.list = 1;
	if (bus__call(zctx, ep, &req, &rep, 3000))
		return;
	for (size_t i = 0; i < rep->n_tasks; i++) {
		const Ember__Task *t = rep->tasks[i];

		for (size_t k = 0; k < t->n_causes; k++) {
			const Ember__TriggerCause *c = t->causes[k];

			printf("%-10s %-44s %s (pid %u): policy '%s' %s %.4g >= %.4g in %u of %u s%s%s\n", who,
			       k ? "" : t->id, c->comm, c->pid, c->policy, c->monitor, c->current, c->threshold, c->matched,
			       c->period_s, c->uri && c->uri[0] ? " for " : "", c->uri ? c->uri : "");
		}
	}
	ember__reply__free_unpacked(rep, NULL);
}

static int cmd_stats(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, 0, 'c' }, { "set", required_argument, 0, 's' },
		{ "help", no_argument, 0, 'h' }, { 0 },
	};
	struct cfg_args ca = { 0 };
	struct ember_config *cfg;
	struct agent_info ai;
	struct ctl_stats_ans cs;
	char path[600], ep[600], line[256];
	void *zctx;
	int opt, r, rc = 0;
	FILE *f;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+hc:", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': ca.path = optarg; break;
		case 's': if (ca.nsets < 64) ca.sets[ca.nsets++] = optarg; break;
		case 'h': printf("usage: ember stats [--config FILE]\nPrints every counter of the running agent, and the running tasks that\ncontinuous-profiling policies started, with why.  No agent running (none holds\n<run_dir>/agent.lock, even if an agent.info is left): says so and exits 1.\n"); return 0;
		default: return cli__die_usage("stats", "unknown option", argv[optind - 1]);
		}
	}
	cfg = cli__load_config("stats", &ca);
	if (!cfg)
		return 2;
	if ((r = supervisor__find_agent(cfg->ember.run_dir, &ai))) {
		if (r == -ESTALE)
			fprintf(stderr, "ember stats: no agent is running (run dir %s: agent.info is stale, left by an "
					"agent, pid %d, that no longer runs)\n", cfg->ember.run_dir, ai.pid);
		else
			fprintf(stderr, "ember stats: no agent is running (run dir %s)\n", cfg->ember.run_dir);
		config__free(cfg);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/collector.sock", ai.run_dir);
	if (!ctl_client__query_stats(path, &cs)) {
		for (unsigned i = 0; i < CTL_STAT_MAX && i < cs.n; i++) {
			/* Counted in a fraction of the named unit (ns for _seconds): printed in the unit, whole
			 * when it is (as print_meters does). */
			if (ctl_stat_counters[i].per_unit > 1 && cs.v[i] % ctl_stat_counters[i].per_unit)
				printf("%-10s %-44s %.9f\n", "collector", ctl__stat_name(i),
				       (double)cs.v[i] / ctl_stat_counters[i].per_unit);
			else if (ctl_stat_counters[i].per_unit > 1)
				printf("%-10s %-44s %llu\n", "collector", ctl__stat_name(i),
				       (unsigned long long)(cs.v[i] / ctl_stat_counters[i].per_unit));
			else
				printf("%-10s %-44s %llu\n", "collector", ctl__stat_name(i), (unsigned long long)cs.v[i]);
		}
	} else {
		fprintf(stderr, "ember stats: the collector does not answer\n");
		rc = 1;
	}
	zctx = zmq_ctx_new();
	for (unsigned s = 0; s < ai.analyzers; s++) {
		Ember__Request req = EMBER__REQUEST__INIT;
		Ember__Reply *rep = NULL;
		char who[24];
		req.body_case = EMBER__REQUEST__BODY_STATS;
		req.stats = 1;
		bus__analyzer_endpoint(ai.run_dir, s, ep, sizeof(ep));
		snprintf(who, sizeof(who), "analyzer%u", s);
		if (!bus__call(zctx, ep, &req, &rep, 3000)) {
			print_meters(who, rep);
			ember__reply__free_unpacked(rep, NULL);
		} else {
			fprintf(stderr, "ember stats: analyzer %u does not answer\n", s);
			rc = 1;
		}
		print_triggered(zctx, ep, who);
	}
	{
		Ember__Request req = EMBER__REQUEST__INIT;
		Ember__Reply *rep = NULL;
		req.body_case = EMBER__REQUEST__BODY_STATS;
		req.stats = 1;
		bus__exporter_ctl_endpoint(ai.run_dir, ep, sizeof(ep));
		if (!bus__call(zctx, ep, &req, &rep, 3000)) {
			print_meters("exporter", rep);
			ember__reply__free_unpacked(rep, NULL);
		} else {
			fprintf(stderr, "ember stats: the exporter does not answer\n");
			rc = 1;
		}
	}
	zmq_ctx_term(zctx);
	snprintf(path, sizeof(path), "%s/supervisor.stats", ai.run_dir);
	f = fopen(path, "re");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			char name[128];
			unsigned long long v;
			if (sscanf(line, "%127s %llu", name, &v) == 2)
				printf("%-10s %-44s %llu\n", "supervisor", name, v);
		}
		fclose(f);
	}
	config__free(cfg);
	return rc;
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("ember %s\n", EMBER_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "profile"))
		return cmd_profile(argc - 1, argv + 1);
	if (!strcmp(cmd, "stats"))
		return cmd_stats(argc - 1, argv + 1);
	if (!strcmp(cmd, "analyze-pcap"))
		return cmd_analyze_pcap(argc - 1, argv + 1);
	fprintf(stderr, "ember: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
