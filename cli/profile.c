/*
 * ember profile --pid PID[,PID...] [--type oncpu|offcpu|mem] [--duration D] [--out DIR]
 *
 * One task, whatever the number of analyzers: the pids are split by shard
 * (common/shard.h), every analyzer owning some of them is given its part of
 * the task under one id at once, and the exporter joins them (Task.shards):
 * one set of files, written when the last shard has finished, copied to
 * --out.  Without a running agent a private one runs for the duration.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/supervisor.h"
#include "common/bus.h"
#include "common/cleanup.h"
#include "common/config.h"
#include "common/ctl_client.h"
#include "common/fileutil.h"
#include "common/ctl_proto.h"
#include "common/log.h"
#include "common/proc_status.h"
#include "common/profile_files.h"
#include "common/profile_kind.h"
#include "common/shard.h"
#include "common/task_submit.h"
#include "common/thread_probes.h"
#include "common/timeutil.h"

#define SUBMIT_WAIT_MS 20000   /* a private agent's start-up included */

struct profile_req {
	uint32_t pids[CTL_MAX_PIDS];
	uint32_t npids;
	Ember__TaskKind kind;
	uint64_t duration_ns, period_ns, min_block_ns;
	uint32_t thread_probes;      /* threads: THREAD_P_* (0: all) */
	uint64_t stack_min_ns;       /* threads: the stack threshold (0: the config's) */
	bool stack_min_set;
	const char *out;
	struct cfg_args ca;
	int pidfd[CTL_MAX_PIDS];     /* the targets themselves (a pid may be reused), -1 if none */
	uint64_t gone_ms[CTL_MAX_PIDS]; /* when a target exited, ms into the task; 0 while it lives */
};

/* The agent the task goes to: a running one, or a private one started here. */
struct agent {
	struct agent_info ai;
	pid_t priv;                 /* the private agent's supervisor, 0 if none */
	char priv_run[256];
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ember profile --pid PID[,PID...] [--type oncpu] [--duration 10s] [--out DIR]\n"
		"  --pid PID        process(es) to profile (repeat or comma-separate)\n"
		"  --type TYPE      oncpu (default: on-CPU samples), offcpu (where threads block, weighted\n"
		"                   by blocked time; also a count-weighted variant), mem (user page faults),\n"
		"                   network (every connection's L4 metrics and L7 exchanges: network.json,\n"
		"                   network.txt), threads (what every thread did, second by second:\n"
		"                   threads.json, and the timeline threads.html; alias tprofiling)\n"
		"  --duration D     how long, e.g. 10s, 500ms, 2m (default 10s)\n"
		"  --out DIR        where to write the results (<type>.folded and <type>.svg, or\n"
		"                   network.json and network.txt; default .)\n"
		"  --period D       on-CPU sampling period, %llu ms..%llu ms\n"
		"                   (default profiling.task.on_cpu.dump_period, 9ms)\n"
		"  --min-block D    off-CPU: ignore blocks shorter than D, 0..%llu s (default\n"
		"                   profiling.task.off_cpu.min_block_time, 0)\n"
		"  --probes LIST    threads: the events to record, comma-separated, among oncpu,\n"
		"                   syscall_file, syscall_net, syscall_lock, syscall_sched (default all)\n"
		"  --stack-threshold D  threads: calls at least D long carry their stack (default\n"
		"                   profiling.task.threads.stack_threshold, 10ms; 0: every call's)\n"
		"  --config FILE, --set KEY=VALUE   as for `ember run`\n"
		"Submits the task to the running agent if there is one (its supervisor holds\n"
		"<run_dir>/agent.lock; a stale agent.info is said so), otherwise runs a private one\n"
		"for the duration: it opens no listener (no Prometheus, no REST API) unless --set\n"
		"exporter.backends=... or --set ember.rest_api.enabled=true asks, and shows warnings\n"
		"and errors only (EMBER_VERBOSE=1 shows the rest).\n"
		"--out is checked before the profile runs; files it cannot take are kept where the\n"
		"agent wrote them, and the message says where.\n"
		"A target that exits early is not an error: what was collected is written, and a line\n"
		"says when it exited.  Kernel threads are not profiled.\n",
		CTL_PERIOD_MIN_NS / 1000000, CTL_PERIOD_MAX_NS / 1000000, CTL_MIN_BLOCK_MAX_NS / 1000000000);
}

static int parse_pids(const char *s, uint32_t *pids, uint32_t *n)
{
	char buf[4096], *save = NULL;

	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v = strtoul(tok, &end, 10);

		if (*end || !v || v > 0x7fffffff || *n >= CTL_MAX_PIDS)
			return -EINVAL;
		pids[(*n)++] = (uint32_t)v;
	}
	return 0;
}

/* --type: the kind's name, its alias or the OAP's spelling (common/profile_kind.h). */
static int parse_kind(const char *s, Ember__TaskKind *ret)
{
	const struct profile_kind *k = profile_kind__by_cli(s);

	if (!k)
		return -EINVAL;
	*ret = (Ember__TaskKind)k->wire;
	return 0;
}

/* 1 if pid is a kernel thread (PF_KTHREAD), its name then in comm (printable characters only). */
static int is_kernel_thread(uint32_t pid, char *comm, size_t len)
{
	char path[32], buf[2048], name[80]; /* a kworker's comm names its workqueue too */
	_cleanup_close_ int dfd = -1;
	uint64_t flags;
	long n;

	snprintf(path, sizeof(path), "/proc/%u", pid);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || (n = proc_status__read_at(dfd, "stat", buf, sizeof(buf))) <= 0 ||
	    proc_status__stat_flags(buf, (size_t)n, &flags) || !(flags & PROC_PF_KTHREAD))
		return 0;
	n = proc_status__read_at(dfd, "comm", name, sizeof(name));
	snprintf(comm, len, "%s", n > 0 ? name : "?");
	for (char *c = comm; *c; c++)
		if (*c == '\n')
			*c = '\0';
		else if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
			*c = '?';
	return 1;
}

/* 0 to go on, or the exit status (help printed, or a usage error). */
static int parse_args(int argc, char **argv, struct profile_req *q, int *done)
{
	static const struct option opts[] = {
		{ "pid", required_argument, 0, 'p' }, { "type", required_argument, 0, 't' },
		{ "duration", required_argument, 0, 'd' }, { "out", required_argument, 0, 'o' },
		{ "period", required_argument, 0, 'P' }, { "config", required_argument, 0, 'c' },
		{ "min-block", required_argument, 0, 'm' }, { "probes", required_argument, 0, 'R' },
		{ "stack-threshold", required_argument, 0, 'S' },
		{ "set", required_argument, 0, 's' }, { "help", no_argument, 0, 'h' }, { 0 },
	};
	int opt;

	*done = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+hp:t:d:o:", opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (parse_pids(optarg, q->pids, &q->npids))
				return cli__die_usage("profile", "bad --pid (a process id, or a comma-separated list)", optarg);
			break;
		case 't':
			if (parse_kind(optarg, &q->kind))
				return cli__die_usage("profile", "bad --type (oncpu, offcpu, mem, network or threads)", optarg);
			break;
		case 'd':
			if (config__parse_duration(optarg, &q->duration_ns) || q->duration_ns < 100000000ull ||
			    q->duration_ns > 86400000000000ull)
				return cli__die_usage("profile", "bad --duration (e.g. 10s, 500ms, 2m; 100ms..24h)", optarg);
			break;
		case 'P':
			if (config__parse_duration(optarg, &q->period_ns) || q->period_ns < CTL_PERIOD_MIN_NS ||
			    q->period_ns > CTL_PERIOD_MAX_NS)
				return cli__die_usage("profile", "bad --period (e.g. 9ms; 1ms..1s)", optarg);
			break;
		case 'm':
			if (config__parse_duration(optarg, &q->min_block_ns) || q->min_block_ns > CTL_MIN_BLOCK_MAX_NS)
				return cli__die_usage("profile", "bad --min-block (e.g. 1ms; 0..1h)", optarg);
			break;
		case 'R': {
			char bad[80];

			if (thread_probes__parse(optarg, &q->thread_probes, bad, sizeof(bad)))
				return cli__die_usage("profile", "bad --probes (oncpu, syscall_file, syscall_net, "
							"syscall_lock, syscall_sched, comma-separated): not one", bad);
			break;
		}
		case 'S':
			if (config__parse_duration(optarg, &q->stack_min_ns) || q->stack_min_ns > CTL_MIN_BLOCK_MAX_NS)
				return cli__die_usage("profile", "bad --stack-threshold (e.g. 10ms; 0..1h)", optarg);
			q->stack_min_set = true;
			break;
		case 'o': q->out = optarg; break;
		case 'c': q->ca.path = optarg; break;
		case 's': if (q->ca.nsets < 64) q->ca.sets[q->ca.nsets++] = optarg; break;
		case 'h': usage(stdout); return 0;
		case ':': return cli__die_usage("profile", "missing value for", argv[optind - 1]);
		default: return cli__die_usage("profile", "unknown option", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli__die_usage("profile", "unexpected argument", argv[optind]);
	if (!q->npids)
		return cli__die_usage("profile", "--pid is required", NULL);
	for (uint32_t i = 0; i < q->npids; i++) {
		char p[32], comm[80];

		snprintf(p, sizeof(p), "/proc/%u", q->pids[i]);
		if (access(p, F_OK)) {
			fprintf(stderr, "ember profile: pid %u does not exist\n", q->pids[i]);
			return 1;
		}
		if (is_kernel_thread(q->pids[i], comm, sizeof(comm))) {
			/* The collector refuses it anyway: say why here, before any agent starts. */
			fprintf(stderr, "ember profile: pid %u is a kernel thread (%s): ember profiles user processes\n",
				q->pids[i], comm);
			return 1;
		}
	}
	*done = 0;
	return 0;
}

/* Whether the command line's --set gave key. */
static bool set_on_command_line(const struct cfg_args *ca, const char *key)
{
	size_t n = strlen(key);

	for (unsigned i = 0; i < ca->nsets; i++)
		if (!strncmp(ca->sets[i], key, n) && ca->sets[i][n] == '=')
			return true;
	return false;
}

/*
 * A private agent lives for one task, read from its files: it opens no
 * listener the task does not need.  The configuration it is given is
 * usually `ember run`'s, whose /metrics port (gala-gopher's own 8888 by
 * default) and REST API belong to that agent: Prometheus and the REST API
 * stay off unless this command's --set asks for them, and the file backend
 * is always on.  0 or -EINVAL.
 */
static int private_listeners(struct ember_config *cfg, const struct cfg_args *ca)
{
	bool keep_prom = set_on_command_line(ca, "exporter.backends");
	char list[512] = "file";

	for (size_t i = 0; i < cfg->exporter.backends.n; i++) {
		const char *b = cfg->exporter.backends.v[i];

		if (strcmp(b, "file") && (keep_prom || strcmp(b, "prometheus")))
			snprintf(list + strlen(list), sizeof(list) - strlen(list), ",%s", b);
	}
	if (config__set(cfg, "exporter.backends", list, NULL, 0))
		return -EINVAL;
	if (!set_on_command_line(ca, "ember.rest_api.enabled") && config__set(cfg, "ember.rest_api.enabled", "false", NULL, 0))
		return -EINVAL;
	return 0;
}

/* The running agent, or a private one in its own run directory (same code path). */
static int find_or_start_agent(struct ember_config *cfg, const struct cfg_args *ca, struct agent *ag)
{
	char od[300], dir[PATH_MAX];
	int r = supervisor__find_agent(cfg->ember.run_dir, &ag->ai);

	if (!r)
		return 0;
	if (r == -ESTALE)
		fprintf(stderr, "ember profile: warning: %s/agent.info is stale (left by an agent, pid %d, that no "
				"longer runs); running a private agent\n", cfg->ember.run_dir, ag->ai.pid);
	memset(&ag->ai, 0, sizeof(ag->ai));
	snprintf(ag->priv_run, sizeof(ag->priv_run), "/run/ember-profile.%d", (int)getpid());
	snprintf(od, sizeof(od), "%s/output", ag->priv_run);
	/* A private agent runs the one task asked for: no continuous-profiling policy starts others. */
	if (config__set(cfg, "ember.run_dir", ag->priv_run, NULL, 0) ||
	    config__set(cfg, "ember.output_dir", od, NULL, 0) ||
	    config__set(cfg, "profiling.continuous.policies", "[]", NULL, 0) || private_listeners(cfg, ca)) {
		fprintf(stderr, "ember profile: internal error setting up the private agent\n");
		return -EINVAL;
	}
	if (cli__bin_dir(dir, sizeof(dir)))
		return -ENOENT;
	ag->priv = fork();
	if (ag->priv < 0)
		return -errno;
	if (ag->priv == 0) {
		setpgid(0, 0); /* Ctrl-C on the CLI must not hit the pipeline before the CLI flushes it */
		_exit(supervisor__run(cfg, dir) ? 1 : 0);
	}
	ag->ai.analyzers = (unsigned)cfg->ember.analyzers;
	snprintf(ag->ai.output_dir, sizeof(ag->ai.output_dir), "%s", od);
	snprintf(ag->ai.run_dir, sizeof(ag->ai.run_dir), "%s", ag->priv_run);
	return 0;
}

/* A private agent that died is reported once; 1 if it did. */
static int agent_died(struct agent *ag, const char *what)
{
	int st;

	if (ag->priv && waitpid(ag->priv, &st, WNOHANG) == ag->priv) {
		ag->priv = 0;
		fprintf(stderr, "ember profile: the private agent %s\n", what);
		return 1;
	}
	return 0;
}

static bool agent_gone(void *ctx) { return agent_died(ctx, "failed to start (see messages above)"); }

/* Every shard that owns some of the pids gets its part, under one id (retried while the agent comes up). */
static int submit_all(void *zctx, struct agent *ag, const struct profile_req *q, const char *task_id)
{
	struct task_submit_opts o = { .run_dir = ag->ai.run_dir, .analyzers = ag->ai.analyzers, .call_timeout_ms = 5000,
				      .retry_until_ms = timeutil__mono_ms() + SUBMIT_WAIT_MS, .give_up = agent_gone,
				      .ctx = ag };
	Ember__Task t = EMBER__TASK__INIT;
	char err[512];
	int shards;

	t.id = (char *)task_id;
	t.kind = q->kind;
	t.n_pids = q->npids;
	t.pids = (uint32_t *)q->pids;
	t.duration_ms = q->duration_ns / 1000000;
	t.period_ns = q->period_ns;
	t.min_block_ns = q->min_block_ns;
	if (q->kind == EMBER__TASK_KIND__THREADS) {
		t.thread_probes = q->thread_probes ? q->thread_probes : THREAD_PROBES_ALL;
		/* 0 asks for every call's stack: the smallest non-zero threshold says so (0 is "the config's"). */
		t.stack_min_ns = q->stack_min_set ? (q->stack_min_ns ? q->stack_min_ns : 1) : 0;
	}
	t.origin = "cli";
	if ((shards = task_submit__all(zctx, &o, &t, err, sizeof(err))) < 0) {
		fprintf(stderr, "ember profile: %s\n", err);
		return shards;
	}
	fprintf(stderr, "ember: profiling %u process(es) for %.1fs (task %s, %u analyzer%s)...\n", q->npids,
		q->duration_ns / 1e9, task_id, shards, shards == 1 ? "" : "s");
	return 0;
}

/* pidfds of the targets, so that a target's exit is seen even if its pid is reused at once. */
static void watch_targets(struct profile_req *q)
{
	for (uint32_t i = 0; i < q->npids; i++)
		q->pidfd[i] = (int)syscall(SYS_pidfd_open, (pid_t)q->pids[i], 0);
}

/* Notes, ms after start_ms, the targets that have exited since the last look. */
static void poll_targets(struct profile_req *q, uint64_t start_ms)
{
	uint64_t now = timeutil__mono_ms();

	for (uint32_t i = 0; i < q->npids; i++) {
		struct pollfd p = { .fd = q->pidfd[i], .events = POLLIN };

		if (q->pidfd[i] >= 0 && !q->gone_ms[i] && poll(&p, 1, 0) == 1)
			q->gone_ms[i] = now > start_ms ? now - start_ms : 1;
	}
}

/* The targets that exited before the task's end: their profile stops there (not an error). */
static void report_exited(const struct profile_req *q)
{
	unsigned n = 0;

	for (uint32_t i = 0; i < q->npids; i++) {
		if (!q->gone_ms[i] || ++n > 8)
			continue;
		fprintf(stderr, "ember: pid %u exited %.1fs into the %.1fs task: its profile covers it until then\n",
			q->pids[i], q->gone_ms[i] / 1e3, q->duration_ns / 1e9);
	}
	if (n > 8)
		fprintf(stderr, "ember: ... and %u more of the %u targets exited before the task's end\n", n - 8,
			q->npids);
}

/* task.json is written last by the exporter, once every shard has finished: then the files are final. */
static int wait_done(struct agent *ag, struct profile_req *q, const char *task_id, uint64_t flush_ms)
{
	uint64_t start = timeutil__mono_ms(), deadline = start + q->duration_ns / 1000000 + 2 * flush_ms + 30000;
	char done[1200];

	snprintf(done, sizeof(done), "%s/%s/%s", ag->ai.output_dir, task_id, PROFILE_FILES_DONE);
	for (;; poll_targets(q, start)) {
		if (!access(done, F_OK)) {
			poll_targets(q, start);
			break;
		}
		if (timeutil__mono_ms() > deadline) {
			struct statvfs vf;

			fprintf(stderr, "ember profile: timed out waiting for %s\n", done);
			/* The exporter writes task.json last and retries a task's files each tick until they fit. */
			if (!statvfs(ag->ai.output_dir, &vf) && (uint64_t)vf.f_bavail * vf.f_frsize < (1u << 20))
				fprintf(stderr, "ember profile: the output directory %s is full (%llu KiB free): the agent "
					"writes the task's files when there is room\n", ag->ai.output_dir,
					(unsigned long long)vf.f_bavail * vf.f_frsize / 1024);
			return -ETIMEDOUT;
		}
		if (agent_died(ag, "exited unexpectedly"))
			return -ECHILD;
		usleep(100000);
	}
	report_exited(q);
	return 0;
}

static int copy_fd(FILE *out, void *ctx)
{
	int in = *(int *)ctx;
	char buf[65536];
	ssize_t n;

	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (fwrite(buf, 1, (size_t)n, out) != (size_t)n)
			return -EIO;
	return n < 0 ? -errno : 0;
}

/*
 * name from the task's directory (the exporter's: opened without following
 * links, a regular file only) into --out, as a new file renamed into place
 * (root writes nothing through a link planted there).  0, -ENOENT or -errno.
 */
static int copy_file(int taskfd, int outfd, const char *name)
{
	_cleanup_close_ int in = openat(taskfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	struct stat st;

	if (in < 0)
		return -errno;
	if (fstat(in, &st) || !S_ISREG(st.st_mode))
		return -EINVAL;
	return fileutil__write_atomic_at(outfd, name, copy_fd, &in);
}

/* The task's files, named as the exporter names them, into --out; task.json's line to stderr. */
static int copy_outputs(const struct agent *ag, const struct profile_req *q, const char *task_id)
{
	_cleanup_close_ int outdir = -1, taskfd = -1, outfd = -1, done = -1;
	char name[64], line[512] = "";
	FILE *f;
	int r;

	outdir = open(ag->ai.output_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	taskfd = outdir < 0 ? -1 : openat(outdir, task_id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	outfd = open(q->out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (taskfd < 0 || outfd < 0) {
		fprintf(stderr, "ember profile: cannot open %s/%s or %s: %m\n", ag->ai.output_dir, task_id, q->out);
		return -EIO;
	}
	for (int pf = 0; pf < PF_TASK_JSON; pf++) {
		if (profile_files__name(q->kind, (enum profile_file)pf, name, sizeof(name)) < 0)
			continue;
		r = copy_file(taskfd, outfd, name);
		if (r == -ENOENT)
			continue;
		if (r) {
			fprintf(stderr, "ember profile: cannot write %s/%s: %s\n", q->out, name, strerror(-r));
			return r;
		}
		printf("%s/%s\n", q->out, name);
	}
	done = openat(taskfd, PROFILE_FILES_DONE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (done >= 0 && (f = fdopen(done, "r"))) {
		done = -1;
		if (fgets(line, sizeof(line), f))
			fprintf(stderr, "ember: %s", line);
		fclose(f);
	}
	return 0;
}

/* The private agent's run directory, root's, removed through descriptors. */
static void remove_private_run(const char *dir)
{
	const char *slash = strrchr(dir, '/');
	char parent[256];
	_cleanup_close_ int pfd = -1;

	if (!slash || slash == dir || (size_t)(slash - dir) >= sizeof(parent))
		return;
	memcpy(parent, dir, (size_t)(slash - dir));
	parent[slash - dir] = '\0';
	pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd >= 0)
		(void)fileutil__remove_tree_at(pfd, slash + 1);
}

/*
 * --out must take the files before the profile runs, not after: a file can
 * be created in it, and no name the kind writes is taken by something a
 * file cannot be renamed over (a directory).  0, or -errno with the path
 * that fails in bad.
 */
static int check_out_dir(const struct profile_req *q, char *bad, size_t badlen)
{
	_cleanup_close_ int dfd = open(q->out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char probe[64], name[64];
	struct stat st;
	int fd;

	snprintf(bad, badlen, "%s", q->out);
	if (dfd < 0)
		return -errno;
	snprintf(probe, sizeof(probe), ".ember-probe-%d", (int)getpid());
	fd = openat(dfd, probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	close(fd);
	unlinkat(dfd, probe, 0);
	for (int pf = 0; pf < PF_TASK_JSON; pf++) {
		if (profile_files__name(q->kind, (enum profile_file)pf, name, sizeof(name)) < 0)
			continue;
		/* A link is replaced, never followed; a file is replaced. */
		if (!fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
			snprintf(bad, badlen, "%s/%s", q->out, name);
			return S_ISDIR(st.st_mode) ? -EISDIR : -EEXIST;
		}
	}
	return 0;
}

static int loss_list(const unsigned *idx, size_t n, const struct ctl_stats_ans *a,
		     const struct ctl_stats_ans *b, char *buf, size_t len, size_t *off)
{
	int found = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned k = idx[i];
		uint64_t d = k < a->n && k < b->n && b->v[k] > a->v[k] ? b->v[k] - a->v[k] : 0;

		if (!d)
			continue;
		found = 1;
		if (*off < len)
			*off += (size_t)snprintf(buf + *off, len - *off, "%s%s %llu", *off ? ", " : "", ctl__stat_name(k),
						 (unsigned long long)d);
	}
	return found;
}

/* The supervisor's restart counts (supervisor.stats in the run dir, root's, 0644); 0s when unreadable. */
struct restarts { uint64_t analyzer, exporter, collector; };

static struct restarts read_restarts(const char *run_dir)
{
	static const char *const names[] = { "supervisor_analyzer_restarts", "supervisor_exporter_restarts",
					     "supervisor_collector_restarts" };
	uint64_t v3[3] = { 0 };
	char path[600], line[256], name[128];
	unsigned long long v;
	FILE *f;

	snprintf(path, sizeof(path), "%s/supervisor.stats", run_dir);
	if ((f = fopen(path, "re"))) {
		while (fgets(line, sizeof(line), f))
			for (unsigned i = 0; i < 3; i++)
				if (sscanf(line, "%127s %llu", name, &v) == 2 && !strcmp(name, names[i]))
					v3[i] = v;
		fclose(f);
	}
	return (struct restarts){ v3[0], v3[1], v3[2] };
}

/*
 * What the collector counted lost while the task ran, beside its files: the
 * counters are the host's (a concurrent task's losses show too), so a line
 * saying nothing moved is a proof, a line naming counters a warning.
 */
static void print_losses(const struct profile_req *q, const struct ctl_stats_ans *a, const struct ctl_stats_ans *b,
			 struct restarts r0, struct restarts r1)
{
	const struct profile_kind *k = profile_kind__by_wire(q->kind);
	struct ctl_kind_losses kl;
	char buf[1024] = "", part[512] = "", tail[600] = "";
	size_t off = 0, poff = 0;
	int any;

	if (r1.analyzer != r0.analyzer || r1.exporter != r0.exporter)
		/* A new analyzer reads its predecessor's open window again (the ring holds a window's
		 * stacks till it is published; one over half the ring is let go, ring_hold_overflows), and
		 * a new exporter goes on from the files, which take each window as it arrives: a window
		 * on its way from one to the other is in neither, and no counter sees it. */
		fprintf(stderr, "ember: RESTARTED while the task ran: the analyzer %llu time(s), the exporter %llu "
			"time(s); the task resumed where they stopped, but a window on its way from the analyzer "
			"to the exporter at that moment is not in the profile and not counted\n",
			(unsigned long long)(r1.analyzer - r0.analyzer), (unsigned long long)(r1.exporter - r0.exporter));
	if (r1.collector != r0.collector) {
		/* A new collector counts from 0, and what the old one held when it died is not in any counter. */
		fprintf(stderr, "ember: LOST: the collector restarted %llu time(s) while the task ran; the task resumed, "
			"what the collector held then (its open window, until the task was attached again) is not in "
			"the profile and not counted\n", (unsigned long long)(r1.collector - r0.collector));
		return;
	}

	/* The collector's counters (host-wide: every task's) of what the kind's path can lose. */
	ctl__kind_losses(k ? k->id : 0, &kl);
	any = loss_list(kl.lost[0], kl.nlost[0], a, b, buf, sizeof(buf), &off) |
	      loss_list(kl.lost[1], kl.nlost[1], a, b, buf, sizeof(buf), &off);
	if (loss_list(kl.partial, kl.npartial, a, b, part, sizeof(part), &poff))
		snprintf(tail, sizeof(tail), "; stacks walked in part (kept, shorter): %s", part);
	if (any)
		fprintf(stderr, "ember: LOST while the task ran (the collector's counters, all tasks): %s%s\n", buf, tail);
	else
		fprintf(stderr, "ember: nothing lost while the task ran (the collector's loss counters did not move)%s\n",
			tail);
}

int cmd_profile(int argc, char **argv)
{
	struct profile_req q = { .kind = EMBER__TASK_KIND__ON_CPU, .duration_ns = 10000000000ull, .out = "." };
	struct agent ag = { .priv = 0 };
	struct ember_config *cfg = NULL;
	char task_id[64];
	void *zctx = NULL;
	struct ctl_stats_ans st0 = { 0 }, st1 = { 0 };
	char sock[600];
	struct restarts restarts0 = { 0 };
	char bad[PATH_MAX + 64];
	int rc, done, have_st0, keep = 0;

	rc = parse_args(argc, argv, &q, &done);
	if (done)
		return rc;
	if ((rc = cli__preflight("profile")))
		return rc;
	cfg = cli__load_config("profile", &q.ca);
	if (!cfg)
		return 2;
	watch_targets(&q);
	rc = 1;
	if (mkdir(q.out, 0755) && errno != EEXIST) {
		fprintf(stderr, "ember profile: cannot create output directory '%s': %m\n", q.out);
		goto cleanup;
	}
	if ((rc = check_out_dir(&q, bad, sizeof(bad)))) {
		if (strcmp(bad, q.out))
			fprintf(stderr, "ember profile: cannot write %s in the output directory: %s is there\n", bad,
				rc == -EISDIR ? "a directory" : "something other than a file");
		else
			fprintf(stderr, "ember profile: cannot write into the output directory '%s': %s\n", q.out,
				strerror(-rc));
		rc = 1;
		goto cleanup;
	}
	rc = 1;
	/* A one-shot command stays quiet: a private agent's supervisor (this process's child) and its
	 * processes say warnings and errors only, unless EMBER_VERBOSE is set. */
	if (cfg->ember.log_level > LOG_LVL_WARN && !getenv("EMBER_VERBOSE"))
		cfg->ember.log_level = LOG_LVL_WARN;
	log__init("ember", (enum log_level)cfg->ember.log_level);
	if (find_or_start_agent(cfg, &q.ca, &ag))
		goto cleanup;
	zctx = zmq_ctx_new();
	snprintf(task_id, sizeof(task_id), "cli-%d-%llu", (int)getpid(), (unsigned long long)time(NULL));
	snprintf(sock, sizeof(sock), "%s/collector.sock", ag.ai.run_dir);
	/* Before the task: a private agent's collector answers once it is up. */
	for (uint64_t until = timeutil__mono_ms() + SUBMIT_WAIT_MS;
	     !(have_st0 = !ctl_client__query_stats(sock, &st0)) && timeutil__mono_ms() < until && !agent_died(&ag, "exited unexpectedly");)
		usleep(50000);
	restarts0 = read_restarts(ag.ai.run_dir);
	if (!zctx || submit_all(zctx, &ag, &q, task_id) ||
	    wait_done(&ag, &q, task_id, cfg->profiling.flush_interval_ns / 1000000))
		goto cleanup;
	if (copy_outputs(&ag, &q, task_id)) {
		/* What --out could not take is still the agent's: kept, a private agent's too, and said where. */
		keep = 1;
		fprintf(stderr, "ember profile: the profile's files are kept in %s/%s\n", ag.ai.output_dir, task_id);
		goto cleanup;
	}
	if (have_st0 && !ctl_client__query_stats(sock, &st1))
		print_losses(&q, &st0, &st1, restarts0, read_restarts(ag.ai.run_dir));
	rc = 0;
cleanup:
	if (ag.priv > 0) {
		int st;

		kill(ag.priv, SIGTERM);
		waitpid(ag.priv, &st, 0);
	}
	if (ag.priv_run[0] && !keep)
		remove_private_run(ag.priv_run);
	for (uint32_t i = 0; i < q.npids; i++)
		if (q.pidfd[i] >= 0)
			close(q.pidfd[i]);
	if (zctx)
		zmq_ctx_term(zctx);
	config__free(cfg);
	return rc;
}
