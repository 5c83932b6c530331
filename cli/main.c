/*
 * ember: the command line.
 *   ember run        start the agent (collector + analyzers + exporter)
 *   ember profile    profile a process now (through the running agent, or a private one)
 *   ember stats      every counter of a running agent
 *   ember analyze-pcap  L7 exchanges in a capture file
 */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "analyzer/collector_client.h"
#include "bpf/ember_abi.h"
#include "cli/commands.h"
#include "cli/supervisor.h"
#include "common/bus.h"
#include "common/cleanup.h"
#include "common/config.h"
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
		"  --set KEY=VALUE   override one key (e.g. --set profiling.flush_interval=2s)\n"
		"  --dump-config     print the effective configuration and exit\n"
		"  --help-config     list every configuration key, default and environment variable\n"
		"Environment variables (ROVER_*, EMBER_*) override the file; --set overrides both.\n");
}

static void usage_profile(FILE *f)
{
	fprintf(f,
		"usage: ember profile --pid PID[,PID...] [--type oncpu] [--duration 10s] [--out DIR]\n"
		"  --pid PID        process(es) to profile (repeat or comma-separate)\n"
		"  --type TYPE      oncpu (default: on-CPU samples), offcpu (where threads block, weighted\n"
		"                   by blocked time; also a count-weighted variant), mem (user page faults)\n"
		"  --duration D     how long, e.g. 10s, 500ms, 2m (default 10s)\n"
		"  --out DIR        where to write <type>.folded and <type>.svg (default .)\n"
		"  --period D       on-CPU sampling period (default profiling.task.on_cpu.dump_period, 9ms)\n"
		"  --min-block D    off-CPU: ignore blocks shorter than D (default\n"
		"                   profiling.task.off_cpu.min_block_time, 0)\n"
		"  --config FILE, --set KEY=VALUE   as for `ember run`\n"
		"Submits the task to the running agent if there is one, otherwise runs a private one.\n"
		"A target that exits early is not an error: what was collected is written.\n");
}

static int die_usage(const char *cmd, const char *msg, const char *arg)
{
	fprintf(stderr, "ember %s: %s%s%s%s\n", cmd, msg, arg ? " '" : "", arg ? arg : "", arg ? "'" : "");
	fprintf(stderr, "Try 'ember %s --help'.\n", cmd);
	return 2;
}

static int bin_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n <= 0)
		return -errno;
	buf[n] = 0;
	slash = strrchr(buf, '/');
	if (slash)
		*slash = 0;
	return 0;
}

/* --config / --set / environment, in that order of precedence (lowest first). */
struct cfg_args {
	const char *path;
	const char *sets[64];
	unsigned nsets;
};

static struct ember_config *load_config(const char *cmd, const struct cfg_args *a)
{
	struct ember_config *cfg = config__new();
	char err[512];

	if (!cfg)
		return NULL;
	if (a->path && config__load_file(cfg, a->path, err, sizeof(err)))
		goto bad;
	if (config__load_env(cfg, err, sizeof(err)))
		goto bad;
	for (unsigned i = 0; i < a->nsets; i++) {
		char key[256];
		const char *eq = strchr(a->sets[i], '=');
		if (!eq || eq == a->sets[i] || (size_t)(eq - a->sets[i]) >= sizeof(key)) {
			snprintf(err, sizeof(err), "--set needs KEY=VALUE, got '%s'", a->sets[i]);
			goto bad;
		}
		memcpy(key, a->sets[i], eq - a->sets[i]);
		key[eq - a->sets[i]] = 0;
		if (config__set(cfg, key, eq + 1, err, sizeof(err)))
			goto bad;
	}
	return cfg;
bad:
	fprintf(stderr, "ember %s: %s\n", cmd, err);
	config__free(cfg);
	return NULL;
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

static int preflight(const char *cmd)
{
	if (geteuid() != 0) {
		fprintf(stderr, "ember %s: must run as root (it loads BPF programs; the analyzer and exporter then "
				"run as an unprivileged user)\n", cmd);
		return 1;
	}
	/* EMBER_BTF_PATH lets tests play a kernel without BTF. */
	const char *btf = getenv("EMBER_BTF_PATH") ? getenv("EMBER_BTF_PATH") : "/sys/kernel/btf/vmlinux";
	if (access(btf, R_OK)) {
		fprintf(stderr, "ember %s: this kernel has no BTF (%s missing); ember needs a "
				"kernel built with CONFIG_DEBUG_INFO_BTF=y\n", cmd, btf);
		return 1;
	}
	return 0;
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
		default: return die_usage("run", "unknown option", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return die_usage("run", "unexpected argument", argv[optind]);
	cfg = load_config("run", &ca);
	if (!cfg)
		return 2;
	if (enable_oap_if_addressed(cfg)) {
		config__free(cfg);
		return 1;
	}
	if (dump) {
		r = config__dump(cfg, stdout);
		config__free(cfg);
		return r ? 1 : 0;
	}
	if ((r = preflight("run"))) {
		config__free(cfg);
		return r;
	}
	log__init("ember", (enum log_level)cfg->ember.log_level);
	if (bin_dir(dir, sizeof(dir)))
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

/* ---- ember profile --------------------------------------------------------------- */

static int rm_cb(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

static int copy_file(const char *from, const char *to)
{
	_cleanup_close_ int in = open(from, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	_cleanup_close_ int out = -1;
	char buf[65536];
	ssize_t n;

	if (in < 0)
		return -errno;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (out < 0)
		return -errno;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			return -EIO;
	return n < 0 ? -errno : 0;
}

static const char *kind_file(uint32_t kind)
{
	return kind == EMBER_TASK_ONCPU ? "oncpu" : kind == EMBER_TASK_OFFCPU ? "offcpu" : "mem";
}

static int parse_pids(const char *s, uint32_t *pids, uint32_t *n)
{
	char buf[4096], *save = NULL;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v;
		errno = 0;
		v = strtoul(tok, &end, 10);
		if (errno || end == tok || *end || v == 0 || v > 0x3fffffff || *n >= CTL_MAX_PIDS)
			return -EINVAL;
		pids[(*n)++] = (uint32_t)v;
	}
	return 0;
}

static int cmd_profile(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, 0, 'p' }, { "type", required_argument, 0, 't' },
		{ "duration", required_argument, 0, 'd' }, { "out", required_argument, 0, 'o' },
		{ "period", required_argument, 0, 'P' }, { "config", required_argument, 0, 'c' },
		{ "min-block", required_argument, 0, 'm' },
		{ "set", required_argument, 0, 's' }, { "help", no_argument, 0, 'h' }, { 0 },
	};
	static uint32_t pids[CTL_MAX_PIDS];
	uint32_t npids = 0, kind = EMBER_TASK_ONCPU;
	uint64_t duration_ns = 10000000000ull, period_ns = 0, min_block_ns = 0;
	const char *out = ".";
	struct cfg_args ca = { 0 };
	struct ember_config *cfg = NULL;
	struct agent_info ai;
	char dir[PATH_MAX], priv_run[256] = "", ep[600], task_id[64], done[1200];
	pid_t priv = 0;
	int opt, rc = 1, r;
	void *zctx = NULL;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+hp:t:d:o:", opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (parse_pids(optarg, pids, &npids))
				return die_usage("profile", "bad --pid (a process id, or a comma-separated list)", optarg);
			break;
		case 't':
			if (!strcmp(optarg, "oncpu") || !strcmp(optarg, "on_cpu") || !strcmp(optarg, "ON_CPU"))
				kind = EMBER_TASK_ONCPU;
			else if (!strcmp(optarg, "offcpu") || !strcmp(optarg, "off_cpu") || !strcmp(optarg, "OFF_CPU"))
				kind = EMBER_TASK_OFFCPU;
			else if (!strcmp(optarg, "mem"))
				kind = EMBER_TASK_MEM;
			else
				return die_usage("profile", "bad --type (oncpu, offcpu or mem)", optarg);
			break;
		case 'd':
			if (config__parse_duration(optarg, &duration_ns) || duration_ns < 100000000ull ||
			    duration_ns > 86400000000000ull)
				return die_usage("profile", "bad --duration (e.g. 10s, 500ms, 2m; 100ms..24h)", optarg);
			break;
		case 'P':
			if (config__parse_duration(optarg, &period_ns) || period_ns < 100000 || period_ns > 10000000000ull)
				return die_usage("profile", "bad --period (e.g. 9ms; 100us..10s)", optarg);
			break;
		case 'm':
			if (config__parse_duration(optarg, &min_block_ns) || min_block_ns > 3600000000000ull)
				return die_usage("profile", "bad --min-block (e.g. 1ms; 0..1h)", optarg);
			break;
		case 'o': out = optarg; break;
		case 'c': ca.path = optarg; break;
		case 's': if (ca.nsets < 64) ca.sets[ca.nsets++] = optarg; break;
		case 'h': usage_profile(stdout); return 0;
		case ':': return die_usage("profile", "missing value for", argv[optind - 1]);
		default: return die_usage("profile", "unknown option", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return die_usage("profile", "unexpected argument", argv[optind]);
	if (!npids)
		return die_usage("profile", "--pid is required", NULL);
	for (uint32_t i = 0; i < npids; i++) {
		char p[32];
		snprintf(p, sizeof(p), "/proc/%u", pids[i]);
		if (access(p, F_OK)) {
			fprintf(stderr, "ember profile: pid %u does not exist\n", pids[i]);
			return 1;
		}
	}
	if ((r = preflight("profile")))
		return r;
	cfg = load_config("profile", &ca);
	if (!cfg)
		return 2;
	if (mkdir(out, 0755) && errno != EEXIST) {
		fprintf(stderr, "ember profile: cannot create output directory '%s': %m\n", out);
		goto out;
	}
	log__init("ember", (enum log_level)cfg->ember.log_level);
	if (supervisor__find_agent(cfg->ember.run_dir, &ai)) {
		/* No agent: run a private one, same code path, in its own run directory. */
		char od[300];
		snprintf(priv_run, sizeof(priv_run), "/run/ember-profile.%d", (int)getpid());
		snprintf(od, sizeof(od), "%s/output", priv_run);
		if (config__set(cfg, "ember.run_dir", priv_run, NULL, 0) ||
		    config__set(cfg, "ember.output_dir", od, NULL, 0) ||
		    config__set(cfg, "ember.analyzers", "1", NULL, 0)) {
			fprintf(stderr, "ember profile: internal error setting up the private agent\n");
			goto out;
		}
		if (bin_dir(dir, sizeof(dir)))
			goto out;
		if (cfg->ember.log_level > LOG_LVL_WARN && !getenv("EMBER_VERBOSE"))
			cfg->ember.log_level = LOG_LVL_WARN; /* a one-shot command stays quiet */
		priv = fork();
		if (priv < 0)
			goto out;
		if (priv == 0) {
			setpgid(0, 0); /* Ctrl-C on the CLI must not hit the pipeline before the CLI flushes it */
			_exit(supervisor__run(cfg, dir) ? 1 : 0);
		}
		ai.analyzers = 1;
		snprintf(ai.output_dir, sizeof(ai.output_dir), "%s", od);
		snprintf(ai.run_dir, sizeof(ai.run_dir), "%s", priv_run);
	}
	zctx = zmq_ctx_new();
	/* Every pid goes to the analyzer that owns its shard. */
	for (unsigned shard = 0; shard < ai.analyzers; shard++) {
		Ember__Request req = EMBER__REQUEST__INIT;
		Ember__Task t = EMBER__TASK__INIT;
		Ember__Reply *rep = NULL;
		uint32_t mine[CTL_MAX_PIDS], n = 0;
		uint64_t deadline = timeutil__mono_ms() + 20000;

		for (uint32_t i = 0; i < npids; i++)
			if (pids[i] % ai.analyzers == shard)
				mine[n++] = pids[i];
		if (!n)
			continue;
		snprintf(task_id, sizeof(task_id), "cli-%d-%llu-s%u", (int)getpid(), (unsigned long long)time(NULL), shard);
		t.id = task_id;
		t.kind = (Ember__TaskKind)kind;
		t.n_pids = n;
		t.pids = mine;
		t.duration_ms = duration_ns / 1000000;
		t.period_ns = period_ns;
		t.min_block_ns = min_block_ns;
		t.origin = "cli";
		req.body_case = EMBER__REQUEST__BODY_SUBMIT;
		req.submit = &t;
		bus__analyzer_endpoint(ai.run_dir, shard, ep, sizeof(ep));
		/* A private agent needs a moment to come up. */
		for (;;) {
			int st;
			if (priv && waitpid(priv, &st, WNOHANG) == priv) {
				priv = 0;
				fprintf(stderr, "ember profile: the private agent failed to start (see messages above)\n");
				goto out;
			}
			if (access(ep + 6, F_OK) == 0) {
				r = bus__call(zctx, ep, &req, &rep, 5000);
				if (r != -ETIMEDOUT && r != -ECONNREFUSED)
					break;
			}
			if (timeutil__mono_ms() > deadline) {
				fprintf(stderr, "ember profile: the agent's analyzer (%s) does not answer\n", ep);
				goto out;
			}
			usleep(50000);
		}
		if (r) {
			fprintf(stderr, "ember profile: cannot submit the task: %s\n", strerror(-r));
			goto out;
		}
		if (rep->err) {
			fprintf(stderr, "ember profile: %s\n", rep->error && *rep->error ? rep->error : strerror(-rep->err));
			ember__reply__free_unpacked(rep, NULL);
			goto out;
		}
		ember__reply__free_unpacked(rep, NULL);
		fprintf(stderr, "ember: profiling %u process(es) for %.1fs (task %s)...\n", n, duration_ns / 1e9, task_id);

		/* task.json is written last by the exporter: then the files are final. */
		snprintf(done, sizeof(done), "%s/%s/task.json", ai.output_dir, task_id);
		deadline = timeutil__mono_ms() + duration_ns / 1000000 + 2 * cfg->profiling.flush_interval_ns / 1000000 + 30000;
		while (access(done, F_OK)) {
			if (timeutil__mono_ms() > deadline) {
				fprintf(stderr, "ember profile: timed out waiting for %s\n", done);
				goto out;
			}
			if (priv) {
				int st;
				if (waitpid(priv, &st, WNOHANG) == priv) {
					priv = 0;
					fprintf(stderr, "ember profile: the private agent exited unexpectedly\n");
					goto out;
				}
			}
			usleep(100000);
		}
		{
			const char *suffix[] = { ".folded", ".svg", ".count.folded", ".count.svg" };
			char from[1400], to[PATH_MAX + 64], dst_dir[PATH_MAX];
			char line[512] = "";
			FILE *f;

			if (ai.analyzers > 1 && npids > 1) {
				snprintf(dst_dir, sizeof(dst_dir), "%s/shard-%u", out, shard);
				mkdir(dst_dir, 0755);
			} else {
				snprintf(dst_dir, sizeof(dst_dir), "%s", out);
			}
			for (unsigned i = 0; i < ARRAY_SIZE(suffix); i++) {
				snprintf(from, sizeof(from), "%s/%s/%s%s", ai.output_dir, task_id, kind_file(kind), suffix[i]);
				if (access(from, F_OK))
					continue;
				snprintf(to, sizeof(to), "%s/%s%s", dst_dir, kind_file(kind), suffix[i]);
				if ((r = copy_file(from, to))) {
					fprintf(stderr, "ember profile: cannot write %s: %s\n", to, strerror(-r));
					goto out;
				}
				printf("%s\n", to);
			}
			f = fopen(done, "re");
			if (f) {
				if (fgets(line, sizeof(line), f))
					fprintf(stderr, "ember: %s", line);
				fclose(f);
			}
		}
	}
	rc = 0;
out:
	if (priv > 0) {
		int st;
		kill(priv, SIGTERM);
		waitpid(priv, &st, 0);
	}
	if (priv_run[0])
		nftw(priv_run, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	if (zctx)
		zmq_ctx_term(zctx);
	config__free(cfg);
	return rc;
}

/* ---- ember stats --------------------------------------------------------------- */

static void print_meters(const char *who, Ember__Reply *rep)
{
	for (size_t i = 0; i < rep->n_stats; i++)
		printf("%-10s %-44s %.0f\n", who, rep->stats[i]->name, rep->stats[i]->value);
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
	int opt, rc = 0;
	FILE *f;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+hc:", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': ca.path = optarg; break;
		case 's': if (ca.nsets < 64) ca.sets[ca.nsets++] = optarg; break;
		case 'h': printf("usage: ember stats [--config FILE]\nPrints every counter of the running agent.\n"); return 0;
		default: return die_usage("stats", "unknown option", argv[optind - 1]);
		}
	}
	cfg = load_config("stats", &ca);
	if (!cfg)
		return 2;
	if (supervisor__find_agent(cfg->ember.run_dir, &ai)) {
		fprintf(stderr, "ember stats: no agent is running (run dir %s)\n", cfg->ember.run_dir);
		config__free(cfg);
		return 1;
	}
	snprintf(path, sizeof(path), "%s/collector.sock", ai.run_dir);
	if (!collector_client__query_stats(path, &cs)) {
		for (unsigned i = 0; i < CTL_STAT_MAX && i < cs.n; i++)
			printf("%-10s %-44s %llu\n", "collector", ctl__stat_name(i), (unsigned long long)cs.v[i]);
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
