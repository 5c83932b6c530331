/*
 * The Java agent's loader: the attacher process and its workers (the
 * contract and the threat model are in collector/jattach.h).
 */
#include "collector/jattach.h"
#include "common/cleanup.h"
#include "common/privs.h"
#include "common/proc_status.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define JATTACH_ANSWER_MAX 512
#define JATTACH_POLL_MS 20
#define JATTACH_AGENT_NAME "libember-jvmti.so"

struct jattach_req { uint32_t pid; uint32_t pad; uint64_t start; };
struct jattach_ans { uint32_t pid; int32_t err; uint64_t start; };

enum { E_FREE, E_ASKED, E_LOADED, E_FAILED };

struct jattach_proc { uint32_t pid; uint8_t state; uint64_t start; };

struct jattach {
	int fd;                  /* the collector's end of the socket pair */
	pid_t attacher;
	char agent[PATH_MAX];
	uint64_t agent_dev, agent_ino;
	struct jattach_proc procs[JATTACH_MAX_PROCS];
	uint64_t st[JATTACH_STAT_MAX];
};

/* ---- reading a process's files ---------------------------------------------------- */

static long read_proc(uint32_t pid, const char *name, char *buf, size_t len)
{
	char path[64];
	int dfd;
	long n;

	snprintf(path, sizeof(path), "/proc/%u", pid);
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = proc_status__read_at(dfd, name, buf, len);
	close(dfd);
	return n;
}

static int start_time(uint32_t pid, uint64_t *ret)
{
	char buf[1024];
	long n = read_proc(pid, "stat", buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	return proc_status__stat_start(buf, (size_t)n, ret) ? -ESRCH : 0;
}

/* ---- the worker: one attach, as the target's user ------------------------------------ */

static int pidfd_of(uint32_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

static int send_quit(int pidfd, uint32_t pid)
{
#ifdef SYS_pidfd_send_signal
	if (pidfd >= 0)
		return syscall(SYS_pidfd_send_signal, pidfd, SIGQUIT, NULL, 0) ? -errno : 0;
#else
	(void)pidfd;
#endif
	return kill((pid_t)pid, SIGQUIT) ? -errno : 0;
}

/*
 * What pid maps: 0 (a libjvm.so: HotSpot, whose attach protocol this
 * speaks), -EALREADY (and an agent of ember's, by its file's name, copied or
 * not: loaded before, by this collector or another), or -ENOEXEC.
 */
static int maps_jvm(uint32_t pid)
{
	char path[64], line[4096];
	bool jvm = false, agent = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);

		if (n && line[n - 1] == '\n')
			line[--n] = 0;
		jvm |= n >= 10 && !strcmp(line + n - 10, "/libjvm.so");
		agent |= strstr(line, "/" JATTACH_AGENT_NAME) != NULL;
	}
	fclose(f);
	return !jvm ? -ENOEXEC : agent ? -EALREADY : 0;
}

/*
 * The agent where the JVM can load it: agent itself when the JVM's root has
 * that very file at that path; else a copy the worker (the JVM's user) makes
 * in the JVM's /tmp, in a directory of its own, whose path in the JVM's root
 * goes to jvm_path and the directory's name to made (removed after the load:
 * the mapping keeps the file).  0 or -errno.
 */
static int place_agent(uint32_t pid, const char *agent, uint64_t dev, uint64_t ino, char *jvm_path, size_t cap,
		       char *made, size_t made_cap)
{
	char root[64], buf[65536];
	_cleanup_close_ int rfd = -1, tfd = -1, dfd = -1, in = -1, out = -1;
	struct stat sb;
	ssize_t n;

	made[0] = 0;
	snprintf(root, sizeof(root), "/proc/%u/root", pid);
	rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return errno == ENOENT ? -ESRCH : -EACCES;
	if (!fstatat(rfd, agent + 1, &sb, 0) && (uint64_t)sb.st_dev == dev && (uint64_t)sb.st_ino == ino) {
		snprintf(jvm_path, cap, "%s", agent);
		return 0;
	}
	/* The JVM's /tmp, not through a link (a target's link could lead out of its root). */
	tfd = openat(rfd, "tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	in = open(agent, O_RDONLY | O_CLOEXEC);
	if (tfd < 0 || in < 0 || fstat(in, &sb) || (uint64_t)sb.st_dev != dev || (uint64_t)sb.st_ino != ino)
		return -ENOENT;
	for (unsigned tries = 0; !made[0]; tries++) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		snprintf(made, made_cap, ".ember-jvmti.%ld.%u", (long)(ts.tv_nsec ^ getpid()), tries);
		if (mkdirat(tfd, made, 0700)) {
			made[0] = 0;
			if (errno != EEXIST || tries > 16)
				return -EACCES;
		}
	}
	dfd = openat(tfd, made, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd >= 0)
		out = openat(dfd, JATTACH_AGENT_NAME, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0500);
	if (out < 0)
		return -EACCES;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			return -EACCES;
	if (n < 0)
		return -EIO;
	snprintf(jvm_path, cap, "/tmp/%s/%s", made, JATTACH_AGENT_NAME);
	return 0;
}

static void remove_copy(uint32_t pid, const char *made)
{
	char path[PATH_MAX];
	int tfd;

	if (!made[0])
		return;
	snprintf(path, sizeof(path), "/proc/%u/root/tmp", pid);
	tfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd < 0)
		return;
	snprintf(path, sizeof(path), "%s/%s", made, JATTACH_AGENT_NAME);
	unlinkat(tfd, path, 0);
	unlinkat(tfd, made, AT_REMOVEDIR);
	close(tfd);
}

static int connect_to(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

/*
 * HotSpot's answer to load: "0\n" (the command ran) then the agent's
 * "return code: N\n" (17 and later), or a nonzero first line and a message.
 */
static int read_answer(int fd)
{
	char buf[JATTACH_ANSWER_MAX];
	size_t n = 0;
	ssize_t r;
	char *nl;

	while (n < sizeof(buf) - 1 && (r = read(fd, buf + n, sizeof(buf) - 1 - n)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -EPROTO;
		}
		n += (size_t)r;
	}
	buf[n] = 0;
	nl = strchr(buf, '\n');
	if (!nl || nl == buf)
		return -EPROTO;
	if (strncmp(buf, "0\n", 2))
		return -EIO;    /* the JVM refused the load: not found, not an agent, ... */
	nl++;
	if (!strncmp(nl, "return code: ", 13))
		nl += 13;
	if (nl[0] == '0' && (nl[1] == '\n' || nl[1] == 0))
		return 0;
	return *nl ? -EIO : 0;  /* older JVMs write nothing after "0" */
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int attach_socket(uint32_t pid, uint32_t nspid, int pidfd, const char *status, size_t slen)
{
	char sock[PATH_MAX], trig[PATH_MAX];
	uint64_t caught = 0;
	bool made = false;
	int fd, r;

	snprintf(sock, sizeof(sock), "/proc/%u/root/tmp/.java_pid%u", pid, nspid);
	fd = connect_to(sock);
	if (fd >= 0)
		return fd;
	/* Without a handler, SIGQUIT would end the process (-Xrs, or not a JVM after all). */
	if (proc_status__mask(status, slen, "SigCgt:", &caught) || !(caught & (1ull << (SIGQUIT - 1))))
		return -EOPNOTSUPP;
	snprintf(trig, sizeof(trig), "/proc/%u/root/tmp/.attach_pid%u", pid, nspid);
	r = open(trig, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (r >= 0) {
		close(r);
		made = true;
	} else if (errno != EEXIST) {
		return -EACCES;
	}
	r = send_quit(pidfd, pid);
	for (unsigned waited = 0; !r && fd < 0 && waited < JATTACH_TIMEOUT_S * 1000u; waited += JATTACH_POLL_MS) {
		sleep_ms(JATTACH_POLL_MS);
		fd = connect_to(sock);
	}
	if (made)
		unlink(trig);
	if (r)
		return r;
	return fd >= 0 ? fd : -ETIMEDOUT;
}

int jattach__attach(uint32_t pid, uint64_t start, const char *agent, uint64_t agent_dev, uint64_t agent_ino)
{
	char status[4096], jvm_path[PATH_MAX], made[64], req[PATH_MAX + 32];
	uint32_t nspid[8];
	uint64_t st = 0;
	_cleanup_close_ int pidfd = -1, fd = -1;
	long n;
	int r, k;

	pidfd = pidfd_of(pid);
	if (pidfd < 0 && errno == ESRCH)
		return -ESRCH;
	/* After the pidfd: the process it pins is the one asked for, or it is gone. */
	if (start_time(pid, &st) || st != start)
		return -ESRCH;
	n = read_proc(pid, "status", status, sizeof(status));
	if (n < 0)
		return (int)n;
	k = proc_status__ids(status, (size_t)n, "NSpid:", nspid, 8);
	if (k < 1)
		return -ESRCH;
	r = maps_jvm(pid);
	if (r)
		return r == -EALREADY ? 0 : r;
	r = place_agent(pid, agent, agent_dev, agent_ino, jvm_path, sizeof(jvm_path), made, sizeof(made));
	if (r)
		return r;
	fd = attach_socket(pid, nspid[k - 1], pidfd, status, (size_t)n);
	if (fd < 0) {
		remove_copy(pid, made);
		return fd;
	}
	/* Protocol 1: version, command and three arguments, each NUL-terminated. */
	n = snprintf(req, sizeof(req), "1%cload%c%s%ctrue%c%c", 0, 0, jvm_path, 0, 0, 0);
	if (n <= 0 || (size_t)n >= sizeof(req) || write(fd, req, (size_t)n) != n)
		r = -EPROTO;
	else
		r = read_answer(fd);
	remove_copy(pid, made);
	return r;
}

/* ---- the attacher ------------------------------------------------------------------- */

static int worker(const struct jattach *j, const struct jattach_req *q)
{
	uint32_t uid[4], gid[4];
	char status[4096];
	long n = read_proc(q->pid, "status", status, sizeof(status));

	if (n < 0)
		return (int)n;
	if (proc_status__ids(status, (size_t)n, "Uid:", uid, 4) < 2 || proc_status__ids(status, (size_t)n, "Gid:", gid, 4) < 2)
		return -ESRCH;
	/* The target's effective ids: the JVM answers only its own user (or root). */
	if ((uid[1] ? privs__become_user(uid[1], gid[1]) : privs__become_root_ptracer(gid[1])) ||
	    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		return -EPERM;
	alarm(JATTACH_TIMEOUT_S + 2);
	return jattach__attach(q->pid, q->start, j->agent, j->agent_dev, j->agent_ino);
}

static void attacher_loop(const struct jattach *j, int fd)
{
	struct jattach_req q;

	for (;;) {
		struct jattach_ans a;
		ssize_t r = recv(fd, &q, sizeof(q), 0);
		int status = 0;
		pid_t w;

		if (r == 0)
			_exit(0);   /* the collector is gone */
		if (r < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if (r != sizeof(q))
			continue;
		a = (struct jattach_ans){ .pid = q.pid, .start = q.start };
		w = fork();
		if (w == 0) {
			int e = worker(j, &q);
			_exit(e < 0 && -e < 256 ? -e : e ? EIO : 0);
		}
		if (w < 0)
			a.err = -errno;
		else if (waitpid(w, &status, 0) != w)
			a.err = -ECHILD;
		else if (WIFEXITED(status))
			a.err = -WEXITSTATUS(status);
		else
			a.err = WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM ? -ETIMEDOUT : -EINTR;
		if (send(fd, &a, sizeof(a), MSG_NOSIGNAL) < 0 && errno == EPIPE)
			_exit(0);
	}
}

struct jattach *jattach__new(const char *agent_path)
{
	struct jattach *j;
	struct stat sb;
	int sv[2];

	if (!agent_path || agent_path[0] != '/' || strlen(agent_path) >= sizeof(j->agent) - 1) {
		errno = EINVAL;
		return NULL;
	}
	/* The file a JVM loads as its own code: root's, and nobody else may change it. */
	if (stat(agent_path, &sb) || !S_ISREG(sb.st_mode) || sb.st_uid != 0 || (sb.st_mode & 022)) {
		errno = EINVAL;
		return NULL;
	}
	j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	strcpy(j->agent, agent_path);
	j->agent_dev = (uint64_t)sb.st_dev;
	j->agent_ino = (uint64_t)sb.st_ino;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		free(j);
		return NULL;
	}
	j->attacher = fork();
	if (j->attacher < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		free(j);
		errno = e;
		return NULL;
	}
	if (j->attacher == 0) {
		close(sv[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, "ember-jattach");
		/* Only the socket: nothing of the collector's passes to a process that becomes another user. */
		for (int fd = 3; fd < 1024; fd++)
			if (fd != sv[1])
				close(fd);
		signal(SIGCHLD, SIG_DFL);
		signal(SIGPIPE, SIG_IGN);
		if (privs__drop_attacher())
			_exit(1);
		attacher_loop(j, sv[1]);
		_exit(0);
	}
	close(sv[1]);
	j->fd = sv[0];
	if (fcntl(j->fd, F_SETFL, O_NONBLOCK)) {
		jattach__free(j);
		return NULL;
	}
	return j;
}

int jattach__fd(const struct jattach *j)
{
	return j->fd;
}

int jattach__request(struct jattach *j, uint32_t pid)
{
	struct jattach_proc *slot = NULL;
	struct jattach_req q = { .pid = pid };
	int r = start_time(pid, &q.start);

	if (r)
		return r;
	for (unsigned i = 0; i < JATTACH_MAX_PROCS; i++) {
		struct jattach_proc *p = &j->procs[i];

		if (p->state != E_FREE && p->pid == pid && p->start == q.start)
			return -EALREADY;
		if (!slot && p->state == E_FREE)
			slot = p;
	}
	/* Full: the entries of processes that exited (or whose pid was taken again) go. */
	for (unsigned i = 0; !slot && i < JATTACH_MAX_PROCS; i++) {
		uint64_t s;
		if (j->procs[i].state != E_ASKED && (start_time(j->procs[i].pid, &s) || s != j->procs[i].start)) {
			j->procs[i].state = E_FREE;
			slot = &j->procs[i];
		}
	}
	if (!slot) {
		j->st[JATTACH_DROPPED]++;
		return -ENOSPC;
	}
	if (send(j->fd, &q, sizeof(q), MSG_DONTWAIT | MSG_NOSIGNAL) != sizeof(q)) {
		j->st[JATTACH_DROPPED]++;
		return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -EPIPE;
	}
	*slot = (struct jattach_proc){ .pid = pid, .start = q.start, .state = E_ASKED };
	j->st[JATTACH_REQUESTED]++;
	return 0;
}

void jattach__poll(struct jattach *j, jattach_result_fn cb, void *ctx)
{
	struct jattach_ans a;

	while (recv(j->fd, &a, sizeof(a), MSG_DONTWAIT) == sizeof(a)) {
		for (unsigned i = 0; i < JATTACH_MAX_PROCS; i++) {
			struct jattach_proc *p = &j->procs[i];
			if (p->state == E_ASKED && p->pid == a.pid && p->start == a.start)
				p->state = a.err ? E_FAILED : E_LOADED;
		}
		j->st[a.err ? JATTACH_FAILED : JATTACH_LOADED]++;
		if (cb)
			cb(ctx, a.pid, a.err);
	}
}

void jattach__stats(const struct jattach *j, uint64_t ret[JATTACH_STAT_MAX])
{
	memcpy(ret, j->st, sizeof(j->st));
}

const char *jattach__strerror(int err)
{
	switch (-err) {
	case 0: return "loaded";
	case ESRCH: return "the process exited";
	case ENOEXEC: return "not a HotSpot JVM (no libjvm.so mapped)";
	case ENOENT: return "the agent cannot be put where the JVM sees it (its /tmp is missing or a link)";
	case EOPNOTSUPP: return "the JVM does not catch SIGQUIT (-Xrs): it cannot be attached to";
	case EACCES: return "the JVM's /tmp does not take the agent's copy or the attach trigger file";
	case ETIMEDOUT: return "the JVM did not answer (attaching disabled: -XX:+DisableAttachMechanism?)";
	case EPROTO: return "the JVM's answer was malformed";
	case EIO: return "the JVM refused to load the agent";
	case EPERM: return "cannot become the process's user";
	default: return strerror(-err);
	}
}

struct jattach *jattach__free(struct jattach *j)
{
	if (!j)
		return NULL;
	if (j->fd >= 0)
		close(j->fd);
	/* Not waiting for an attach under way: its worker ends by its own alarm. */
	if (j->attacher > 0 && !kill(j->attacher, SIGKILL))
		waitpid(j->attacher, NULL, 0);
	free(j);
	return NULL;
}
