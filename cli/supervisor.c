#include "cli/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/bus.h"
#include "common/privs.h"
#include "common/cleanup.h"
#include "common/fileutil.h"
#include "common/log.h"
#include "common/timeutil.h"

/* Held (a POSIX write lock) by the supervisor for its whole life: the proof that the agent is there. */
#define AGENT_LOCK "agent.lock"
#define EMBER_JVMTI_AGENT "libember-jvmti.so"   /* jvm/ember_jvmti.c, beside the binaries */

enum role { ROLE_COLLECTOR, ROLE_EXPORTER, ROLE_ANALYZER };

struct child {
	enum role role;
	unsigned shard;
	pid_t pid;
	uint64_t started_ms;
	uint64_t restart_at_ms; /* 0 = running or not scheduled */
	unsigned backoff_ms;
	uint64_t restarts;
};

static volatile sig_atomic_t stop_requested;
static void on_stop(int sig) { (void)sig; stop_requested = 1; }

static const char *role_name(enum role r)
{
	return r == ROLE_COLLECTOR ? "collector" : r == ROLE_EXPORTER ? "exporter" : "analyzer";
}

int supervisor__ensure_user(const char *name, long group, unsigned *ret_uid, unsigned *ret_gid)
{
	struct passwd *pw = getpwnam(name);

	if (!pw) {
		char cmd[512], grp[48] = "--user-group";
		int r;
		for (const char *c = name; *c; c++)
			if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '-'))
				return -EINVAL;
		if (group >= 0)
			snprintf(grp, sizeof(grp), "--gid %ld", group);
		log_info("creating system user '%s' for the unprivileged processes", name);
		snprintf(cmd, sizeof(cmd),
			 "useradd --system %s --no-create-home --home-dir /nonexistent "
			 "--shell /usr/sbin/nologin '%s'", grp, name);
		r = system(cmd);
		if (r != 0)
			return -EPERM;
		pw = getpwnam(name);
		if (!pw)
			return -ENOENT;
	}
	if (pw->pw_uid == 0)
		return -EINVAL; /* the whole point is not to be root */
	*ret_uid = pw->pw_uid;
	*ret_gid = pw->pw_gid;
	return 0;
}

struct sup {
	const struct ember_config *cfg;
	const char *bin_dir;
	unsigned uid, gid;      /* ember.user: the analyzers; gid is the group both users share */
	unsigned xuid;          /* ember.exporter_user: the exporter (with gid) */
	mode_t umask;           /* the unprivileged processes': ember.output_access */
	int runfd;              /* the run directory, root's alone */
	int lockfd;             /* its agent.lock, locked while we run */
	char **allow;           /* the collector's --allow-uid / --allow-cgroup arguments */
	unsigned nallow;
	char effective[600];
	struct child *kids;
	unsigned nkids;
	uint64_t collector_restarts;
};

/* The collector's command line: fixed options, then the target policy. */
static void exec_collector(struct sup *s, const char *exe)
{
	char shards[16], ring[32], uid[16], xuid[16], flush[32], stacks[16], pids[16], netbuf[32], urows[24], uprocs[16];
	const char *lvl[] = { "error", "warn", "info", "debug" };
	const struct ember_config *cfg = s->cfg;
	int ll = cfg->ember.log_level;
	const char *argv[64];
	unsigned n = 0;

	snprintf(shards, sizeof(shards), "%lld", (long long)cfg->ember.analyzers);
	snprintf(ring, sizeof(ring), "%llu", (unsigned long long)cfg->ember.ring_size);
	snprintf(uid, sizeof(uid), "%u", s->uid);
	snprintf(xuid, sizeof(xuid), "%u", s->xuid);
	snprintf(flush, sizeof(flush), "%llu", (unsigned long long)(cfg->profiling.flush_interval_ns / 1000000));
	snprintf(stacks, sizeof(stacks), "%lld", (long long)cfg->ember.max_stack_entries);
	snprintf(pids, sizeof(pids), "%lld", (long long)cfg->ember.max_task_pids);
	snprintf(netbuf, sizeof(netbuf), "%llu",
		 (unsigned long long)cfg->profiling.task.network.protocol_analyze.per_cpu_buffer);
	snprintf(urows, sizeof(urows), "%lld", cfg->profiling.unwind.tables ? (long long)cfg->profiling.unwind.max_rows : 0ll);
	snprintf(uprocs, sizeof(uprocs), "%lld", (long long)cfg->profiling.unwind.max_processes);
	const char *fixed[] = { exe, "--run-dir", cfg->ember.run_dir, "--shards", shards, "--ring-size", ring,
				"--analyzer-uid", uid, "--exporter-uid", xuid, "--flush-ms", flush, "--max-stacks", stacks,
				"--max-pids", pids, "--net-buffer", netbuf, "--unwind-rows", urows, "--unwind-procs", uprocs,
				"--log-level", lvl[ll >= 0 && ll < 4 ? ll : 2] };
	char agent[640];
	for (unsigned i = 0; i < ARRAY_SIZE(fixed); i++)
		argv[n++] = fixed[i];
	if (cfg->profiling.java.agent) {
		snprintf(agent, sizeof(agent), "%s/" EMBER_JVMTI_AGENT, s->bin_dir);
		argv[n++] = "--java-agent";
		argv[n++] = agent;
	}
	for (unsigned i = 0; i < s->nallow && n + 1 < ARRAY_SIZE(argv); i++)
		argv[n++] = s->allow[i];
	argv[n] = NULL;
	execv(exe, (char *const *)argv);
}

static pid_t spawn(struct sup *s, struct child *c)
{
	char exe[600], shard[16];
	pid_t pid;

	snprintf(exe, sizeof(exe), "%s/ember-%s", s->bin_dir, role_name(c->role));
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		c->pid = pid;
		c->started_ms = timeutil__mono_ms();
		c->restart_at_ms = 0;
		if (c->role == ROLE_ANALYZER)
			log_info("started analyzer of shard %u (pid %d)", c->shard, (int)pid);
		else
			log_info("started %s (pid %d)", role_name(c->role), (int)pid);
		return pid;
	}
	/* Child: fixed fd layout (0,1,2 inherited), nothing else leaks through exec. */
	closefrom(3);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_IGN); /* Ctrl-C reaches the whole group: only the supervisor decides the order */
	if (c->role == ROLE_COLLECTOR) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		exec_collector(s, exe);
	} else {
		/* The exporter has a user of its own: it cannot signal an analyzer nor pass the collector's check. */
		int r = privs__become_user(c->role == ROLE_EXPORTER ? s->xuid : s->uid, s->gid);
		if (r) {
			fprintf(stderr, "ember: cannot drop privileges for %s: %s\n", role_name(c->role), strerror(-r));
			_exit(126);
		}
		umask(s->umask);
		/* After the uid change, which clears it. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (c->role == ROLE_EXPORTER) {
			execl(exe, exe, "--config", s->effective, (char *)NULL);
		} else {
			snprintf(shard, sizeof(shard), "%u", c->shard);
			execl(exe, exe, "--config", s->effective, "--shard", shard, (char *)NULL);
		}
	}
	fprintf(stderr, "ember: cannot execute %s: %s\n", exe, strerror(errno));
	_exit(127);
}

static int put_stats(FILE *f, void *ctx)
{
	struct sup *s = ctx;
	uint64_t a = 0, e = 0;

	for (unsigned i = 0; i < s->nkids; i++) {
		if (s->kids[i].role == ROLE_ANALYZER)
			a += s->kids[i].restarts;
		else if (s->kids[i].role == ROLE_EXPORTER)
			e += s->kids[i].restarts;
	}
	fprintf(f, "supervisor_analyzer_restarts %llu\nsupervisor_exporter_restarts %llu\n"
		   "supervisor_collector_restarts %llu\n",
		(unsigned long long)a, (unsigned long long)e, (unsigned long long)s->collector_restarts);
	return 0;
}

/* Root's files go into root's directory only, each a new file renamed into place. */
static void write_stats(struct sup *s)
{
	(void)fileutil__write_atomic_mode_at(s->runfd, "supervisor.stats", 0644, 0, 0, put_stats, s);
}

static int wait_for_file(const char *path, pid_t pid, unsigned timeout_ms)
{
	uint64_t end = timeutil__mono_ms() + timeout_ms;
	while (timeutil__mono_ms() < end) {
		int st;
		if (access(path, F_OK) == 0)
			return 0;
		if (pid > 0 && waitpid(pid, &st, WNOHANG) == pid)
			return -ECHILD;
		usleep(20000);
	}
	return -ETIMEDOUT;
}

/* sig: SIGTERM (stop, ending its tasks) or, for an analyzer, SIGUSR1 (leave them to its successor). */
static void stop_child(struct child *c, int sig, unsigned timeout_ms)
{
	uint64_t end;
	int st;

	if (c->pid <= 0)
		return;
	kill(c->pid, sig);
	end = timeutil__mono_ms() + timeout_ms;
	while (timeutil__mono_ms() < end) {
		if (waitpid(c->pid, &st, WNOHANG) == c->pid) {
			c->pid = 0;
			return;
		}
		usleep(10000);
	}
	log_warn("%s (pid %d) did not stop in %u ms: killing it", role_name(c->role), (int)c->pid, timeout_ms);
	kill(c->pid, SIGKILL);
	waitpid(c->pid, &st, 0);
	c->pid = 0;
}

static int start_collector(struct sup *s)
{
	char sock[600];
	int r;

	snprintf(sock, sizeof(sock), "%s/collector.sock", s->cfg->ember.run_dir);
	unlinkat(s->runfd, "collector.sock", 0);
	if (spawn(s, &s->kids[0]) < 0)
		return -errno;
	r = wait_for_file(sock, s->kids[0].pid, 20000);
	if (r) {
		log_error("the collector did not come up (%s); see its messages above",
			  r == -ECHILD ? "it exited" : "timeout");
		s->kids[0].pid = 0;
	}
	return r;
}

/*
 * The pid holding run_dir's agent lock, 0 if nobody does, or -errno when it
 * cannot be told (-ENOENT: no agent.lock, which a supervisor never removes:
 * no agent ran there since ember had it, or one from before still runs).
 */
static int lock_holder(const char *run_dir)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	_cleanup_close_ int fd = -1;
	char path[600];

	snprintf(path, sizeof(path), "%s/" AGENT_LOCK, run_dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fcntl(fd, F_GETLK, &fl))
		return -errno;
	return fl.l_type == F_UNLCK ? 0 : fl.l_pid > 0 ? fl.l_pid : 1;
}

int supervisor__find_agent(const char *run_dir, struct agent_info *ret)
{
	char path[600], line[700];
	int holder;
	FILE *f;

	memset(ret, 0, sizeof(*ret));
	snprintf(path, sizeof(path), "%s/agent.info", run_dir);
	f = fopen(path, "re");
	if (!f)
		return -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "pid=", 4))
			ret->pid = atoi(line + 4);
		else if (!strncmp(line, "analyzers=", 10))
			ret->analyzers = (unsigned)atoi(line + 10);
		else if (!strncmp(line, "output_dir=", 11))
			snprintf(ret->output_dir, sizeof(ret->output_dir), "%s", line + 11);
	}
	fclose(f);
	snprintf(ret->run_dir, sizeof(ret->run_dir), "%s", run_dir);
	if (ret->pid <= 0 || ret->analyzers == 0)
		return -ENOENT;
	/* agent.info outlives a supervisor killed with SIGKILL, and its pid may be anyone's by now. */
	holder = lock_holder(run_dir);
	if (holder == 0)
		return -ESTALE;
	if (holder > 0)
		return 0;
	return kill(ret->pid, 0) && errno == ESRCH ? -ESTALE : 0; /* no lock to ask: the pid is all we have */
}

/*
 * Takes the run directory's agent lock: one agent per run directory, and
 * the CLI's proof that it is alive.  0, -EBUSY (another agent holds it,
 * logged) or -errno.
 */
static int take_lock(struct sup *s)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct stat st;

	for (int tries = 0; tries < 2 && s->lockfd < 0; tries++) {
		int fd = openat(s->runfd, AGENT_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);

		if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_uid == 0) {
			s->lockfd = fd;
			break;
		}
		if (fd >= 0)
			close(fd);
		else if (errno != ELOOP)
			return -errno;
		/* Not root's file (left when the run dir was writable by others): root's dir, root's call. */
		if (unlinkat(s->runfd, AGENT_LOCK, 0))
			return -errno;
	}
	if (s->lockfd < 0)
		return -EEXIST;
	if (fcntl(s->lockfd, F_SETLK, &fl)) {
		int err = errno;

		if (err != EAGAIN && err != EACCES)
			return -err;
		fl.l_type = F_WRLCK;
		if (fcntl(s->lockfd, F_GETLK, &fl) || fl.l_type == F_UNLCK)
			fl.l_pid = 0;
		log_error("an agent is already running with run directory %s (pid %d)", s->cfg->ember.run_dir,
			  (int)fl.l_pid);
		return -EBUSY;
	}
	return 0;
}

/* What the child of reachable_as() found, through a pipe. */
struct reach_ans {
	int err;
	int write;              /* 1: dir itself is not writable; 0: bad cannot be searched */
	char bad[1024];
};

/* In the child, as the user: each directory down to dir searched, then a file created in dir and removed. */
static void reach_probe(const char *dir, struct reach_ans *a)
{
	char probe[1100];
	size_t len = strlen(dir);
	int fd;

	if (len >= sizeof(a->bad)) {
		a->err = -ENAMETOOLONG;
		return;
	}
	for (size_t i = 1; i <= len; i++) {
		if (i < len && dir[i] != '/')
			continue;
		memcpy(a->bad, dir, i);
		a->bad[i] = '\0';
		if (access(a->bad, X_OK)) {
			a->err = -errno;
			return;
		}
	}
	a->write = 1;
	snprintf(probe, sizeof(probe), "%s/.ember-probe-%d", dir, (int)getpid());
	fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		a->err = -errno;
		return;
	}
	close(fd);
	(void)unlink(probe);
}

/*
 * Whether uid:gid can search every directory down to dir and create a file
 * in it, tried as that user in a child (root's own view says nothing about
 * it): the exporter writes ember.output_dir as its own user, and a parent it
 * may not search (root's 0700) would otherwise only show as an exporter
 * restarting forever.  0, or -errno with the directory that stopped it in
 * a->bad.
 */
static int reachable_as(unsigned uid, unsigned gid, const char *dir, struct reach_ans *a)
{
	int pfd[2], st;
	ssize_t n;
	pid_t pid;

	memset(a, 0, sizeof(*a));
	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (pid == 0) {
		close(pfd[0]);
		if ((a->err = privs__become_user(uid, gid)) == 0)
			reach_probe(dir, a);
		_exit(write(pfd[1], a, sizeof(*a)) == (ssize_t)sizeof(*a) ? 0 : 1);
	}
	close(pfd[1]);
	do
		n = read(pfd[0], a, sizeof(*a));
	while (n < 0 && errno == EINTR);
	close(pfd[0]);
	waitpid(pid, &st, 0);
	if (n != (ssize_t)sizeof(*a))
		return -EIO;
	a->bad[sizeof(a->bad) - 1] = '\0';
	return a->err;
}

/* "owner:group 0700" of path, as root sees it. */
static void describe(const char *path, char *buf, size_t len)
{
	struct stat st;
	struct passwd *pw;
	struct group *gr;
	char u[16], g[16];

	if (stat(path, &st)) {
		snprintf(buf, len, "%s", strerror(errno));
		return;
	}
	snprintf(u, sizeof(u), "%u", (unsigned)st.st_uid);
	snprintf(g, sizeof(g), "%u", (unsigned)st.st_gid);
	pw = getpwuid(st.st_uid);
	gr = getgrgid(st.st_gid);
	snprintf(buf, len, "%s:%s %04o", pw ? pw->pw_name : u, gr ? gr->gr_name : g, (unsigned)(st.st_mode & 07777));
}

static int put_config(FILE *f, void *ctx)
{
	return config__dump(ctx, f, 0);
}

static int put_agent_info(FILE *f, void *ctx)
{
	const struct ember_config *cfg = ctx;

	fprintf(f, "pid=%d\nanalyzers=%lld\noutput_dir=%s\n", (int)getpid(), (long long)cfg->ember.analyzers,
		cfg->ember.output_dir);
	return 0;
}

/* ember.targets.* as the collector's --allow-uid / --allow-cgroup arguments.  0 or -EINVAL (logged). */
static int target_policy(struct sup *s)
{
	const struct ember_config *cfg = s->cfg;
	size_t n = 2 * (cfg->ember.targets.users.n + cfg->ember.targets.cgroups.n);

	s->allow = calloc(n ? n : 1, sizeof(*s->allow));
	if (!s->allow)
		return -ENOMEM;
	for (size_t i = 0; i < cfg->ember.targets.users.n; i++) {
		const char *u = cfg->ember.targets.users.v[i];
		struct passwd *pw = getpwnam(u);
		char *end, buf[24];
		unsigned long v;

		errno = 0;
		v = strtoul(u, &end, 10);
		if (!pw && (errno || end == u || *end || v >= 0xffffffffUL)) {
			log_error("ember.targets.users: no user '%s'", u);
			return -EINVAL;
		}
		snprintf(buf, sizeof(buf), "%lu", pw ? (unsigned long)pw->pw_uid : v);
		s->allow[s->nallow++] = strdup("--allow-uid");
		s->allow[s->nallow++] = strdup(buf);
	}
	for (size_t i = 0; i < cfg->ember.targets.cgroups.n; i++) {
		const char *c = cfg->ember.targets.cgroups.v[i];

		if (c[0] != '/' || strlen(c) > 1024) {
			log_error("ember.targets.cgroups: '%s' is not a cgroup v2 path (as /proc/PID/cgroup shows it)", c);
			return -EINVAL;
		}
		s->allow[s->nallow++] = strdup("--allow-cgroup");
		s->allow[s->nallow++] = strdup(c);
	}
	for (unsigned i = 0; i < s->nallow; i++)
		if (!s->allow[i])
			return -ENOMEM;
	return 0;
}

/*
 * The users, the directories, the effective configuration.  Root keeps its
 * files in the run directory, which only root can write; each unprivileged
 * user gets a directory of its own under it (common/bus.h); the output
 * directories are made theirs through descriptors.  0 or -errno (logged).
 */
static int prepare(struct sup *s)
{
	const struct ember_config *cfg = s->cfg;
	mode_t dmode = cfg->ember.output_access == CONFIG_OUTPUT_ALL ? 0775 : 0770;
	char why[512];
	unsigned xgid;
	int r, fd;

	s->runfd = s->lockfd = -1;
	s->umask = cfg->ember.output_access == CONFIG_OUTPUT_ALL ? 0002 : 0007;
	r = supervisor__ensure_user(cfg->ember.user, -1, &s->uid, &s->gid);
	if (r) {
		log_error("cannot find or create the unprivileged user '%s': %s", cfg->ember.user, strerror(-r));
		return r;
	}
	r = supervisor__ensure_user(cfg->ember.exporter_user, (long)s->gid, &s->xuid, &xgid);
	if (!r && s->xuid == s->uid)
		r = -EINVAL;
	if (r) {
		log_error("cannot find or create the exporter's user '%s' (a user of its own, not ember.user): %s",
			  cfg->ember.exporter_user, strerror(-r));
		return r;
	}
	if ((r = target_policy(s)))
		return r;
	s->runfd = fileutil__open_root_dir(cfg->ember.run_dir, 0755, 1, why, sizeof(why));
	if (s->runfd < 0) {
		log_error("run directory: %s (%s)", why, strerror(-s->runfd));
		return s->runfd;
	}
	if ((r = take_lock(s))) {
		if (r != -EBUSY)
			log_error("cannot lock %s/" AGENT_LOCK ": %s", cfg->ember.run_dir, strerror(-r));
		return r;
	}
	for (unsigned i = 0; i < 2; i++) {
		const char *name = i ? BUS_EXPORTER_DIR : BUS_ANALYZER_DIR;

		fd = fileutil__open_owned_dir_at(s->runfd, name, 0750, i ? s->xuid : s->uid, s->gid);
		/* Not a directory (a link left when the run dir was writable by others): root's dir, root's call. */
		if (fd == -ELOOP && !unlinkat(s->runfd, name, 0)) {
			log_warn("replaced %s/%s, which was not a directory", cfg->ember.run_dir, name);
			fd = fileutil__open_owned_dir_at(s->runfd, name, 0750, i ? s->xuid : s->uid, s->gid);
		}
		if (fd < 0) {
			log_error("cannot prepare %s/%s: %s", cfg->ember.run_dir, i ? BUS_EXPORTER_DIR : BUS_ANALYZER_DIR,
				  strerror(-fd));
			return fd;
		}
		close(fd);
	}
	fd = fileutil__open_owned_dir(cfg->ember.output_dir, dmode, s->xuid, s->gid, why, sizeof(why));
	if (fd < 0) {
		log_error("output directory: %s (%s)", why, strerror(-fd));
		return fd;
	}
	close(fd);
	{
		struct reach_ans a;
		char desc[128];

		if ((r = reachable_as(s->xuid, s->gid, cfg->ember.output_dir, &a))) {
			describe(a.bad, desc, sizeof(desc));
			log_error("output directory %s: the exporter's user '%s' cannot %s '%s' (%s: %s); make it %s "
				  "for that user, or set ember.output_dir elsewhere", cfg->ember.output_dir,
				  cfg->ember.exporter_user, a.write ? "write into" : "traverse", a.bad, desc, strerror(-r),
				  a.write ? "writable" : "searchable (x)");
			return r;
		}
	}
	/* The REST flamegraph feature's default directories (gala-gopher's), for its unprivileged writers. */
	if (cfg->ember.rest_api.enabled) {
		fd = fileutil__open_owned_dir("/var/log/gala-gopher", dmode, s->xuid, s->gid, why, sizeof(why));
		for (unsigned i = 0; fd >= 0 && i < 2; i++) {
			int sub = fileutil__open_owned_dir_at(fd, i ? "flamegraph" : "stacktrace", dmode, s->xuid, s->gid);

			if (sub < 0)
				log_warn("cannot prepare /var/log/gala-gopher/%s for the REST API's flame graphs: %s",
					 i ? "flamegraph" : "stacktrace", strerror(-sub));
			else
				close(sub);
		}
		if (fd < 0)
			log_warn("cannot prepare /var/log/gala-gopher for the REST API's flame graphs: %s", why);
		else
			close(fd);
	}
	/* The token is in it: root and the ember group only. */
	snprintf(s->effective, sizeof(s->effective), "%s/effective.yaml", cfg->ember.run_dir);
	r = fileutil__write_atomic_mode_at(s->runfd, "effective.yaml", 0640, 0, s->gid, put_config, (void *)cfg);
	if (r) {
		log_error("cannot write %s: %s", s->effective, strerror(-r));
		return r;
	}
	s->nkids = 2 + (unsigned)cfg->ember.analyzers;
	s->kids = calloc(s->nkids, sizeof(*s->kids));
	if (!s->kids)
		return -ENOMEM;
	s->kids[0].role = ROLE_COLLECTOR;
	s->kids[1].role = ROLE_EXPORTER;
	for (unsigned i = 2; i < s->nkids; i++) {
		s->kids[i].role = ROLE_ANALYZER;
		s->kids[i].shard = i - 2;
	}
	return 0;
}

static void sup_free(struct sup *s)
{
	for (unsigned i = 0; i < s->nallow; i++)
		free(s->allow[i]);
	free(s->allow);
	free(s->kids);
	if (s->lockfd >= 0)
		close(s->lockfd);
	if (s->runfd >= 0)
		close(s->runfd);
}

/* A child died: the collector takes everyone with it; the others come back with backoff.  0 or -EIO. */
static int on_exit_of(struct sup *s, struct child *c, pid_t pid, int st, uint64_t now)
{
	c->pid = 0;
	if (WIFSIGNALED(st))
		log_warn("%s (pid %d) was killed by signal %d", role_name(c->role), (int)pid, WTERMSIG(st));
	else
		log_warn("%s (pid %d) exited with status %d", role_name(c->role), (int)pid, WEXITSTATUS(st));
	if (c->role == ROLE_COLLECTOR) {
		/*
		 * The analyzers lost their rings and attachments: each exits leaving
		 * its tasks in its state file, and its successor resumes them on the
		 * new collector.  The exporter, which holds the tasks' outputs so
		 * far, carries on.
		 */
		s->collector_restarts++;
		for (unsigned j = 1; j < s->nkids; j++)
			if (s->kids[j].role == ROLE_ANALYZER)
				stop_child(&s->kids[j], SIGUSR1, 5000);
		if (start_collector(s))
			return -EIO;
		for (unsigned j = 1; j < s->nkids; j++)
			if (s->kids[j].role == ROLE_ANALYZER)
				spawn(s, &s->kids[j]);
	} else {
		/* Crash loops back off: 0.5 s doubling to 30 s, reset after a minute up. */
		if (now - c->started_ms > 60000)
			c->backoff_ms = 0;
		c->backoff_ms = c->backoff_ms ? (c->backoff_ms * 2 > 30000 ? 30000 : c->backoff_ms * 2) : 500;
		c->restart_at_ms = now + c->backoff_ms;
		c->restarts++;
	}
	write_stats(s);
	return 0;
}

int supervisor__run(const struct ember_config *cfg, const char *bin_dir)
{
	struct sup s = { .cfg = cfg, .bin_dir = bin_dir, .runfd = -1, .lockfd = -1 };
	struct sigaction sa = { .sa_handler = on_stop };
	char agent[640];
	int r, err = 0;

	snprintf(agent, sizeof(agent), "%s/" EMBER_JVMTI_AGENT, bin_dir);
	if (cfg->profiling.java.agent && access(agent, R_OK)) {
		log_error("profiling.java.agent is on, but %s is missing: ember was built without the JDK's headers "
			  "(openjdk-17-jdk-headless; deploy/install-deps.sh installs it)", agent);
		return -ENOENT;
	}
	if ((r = prepare(&s))) {
		sup_free(&s);
		return r;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	if (start_collector(&s)) {
		sup_free(&s);
		return -EIO;
	}
	for (unsigned i = 1; i < s.nkids; i++)
		spawn(&s, &s.kids[i]);
	(void)fileutil__write_atomic_mode_at(s.runfd, "agent.info", 0644, 0, 0, put_agent_info, (void *)cfg);
	write_stats(&s);
	log_info("agent running: output in %s; stop with Ctrl-C or SIGTERM", cfg->ember.output_dir);
	while (!stop_requested) {
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		uint64_t now = timeutil__mono_ms();

		if (pid > 0) {
			for (unsigned i = 0; i < s.nkids && !err; i++)
				if (s.kids[i].pid == pid && (err = on_exit_of(&s, &s.kids[i], pid, st, now)))
					stop_requested = 1;
			continue;
		}
		for (unsigned i = 1; i < s.nkids; i++) {
			struct child *c = &s.kids[i];
			if (!c->pid && c->restart_at_ms && now >= c->restart_at_ms) {
				log_info("restarting %s (restart #%llu)", role_name(c->role), (unsigned long long)c->restarts);
				spawn(&s, c);
			}
		}
		usleep(50000);
	}
	log_info("stopping: analyzers, then exporter, then collector");
	for (unsigned i = 2; i < s.nkids; i++)
		stop_child(&s.kids[i], SIGTERM, 20000);
	stop_child(&s.kids[1], SIGTERM, 20000);
	stop_child(&s.kids[0], SIGTERM, 10000);
	unlinkat(s.runfd, "agent.info", 0);
	write_stats(&s);
	sup_free(&s);
	return err;
}
