#include "collector/target_policy.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/proc_status.h"

#define MAX_ALLOWED 64

struct target_policy {
	uid_t analyzer_uid, exporter_uid;
	pid_t self, parent;
	uint32_t uids[MAX_ALLOWED];
	unsigned nuids;
	char *cgroups[MAX_ALLOWED];
	unsigned ncgroups;
	struct target_policy_stats st;
};

struct target_policy *target_policy__new(pid_t self, pid_t parent)
{
	struct target_policy *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->analyzer_uid = p->exporter_uid = (uid_t)-1;
	p->self = self;
	p->parent = parent;
	return p;
}

void target_policy__set_ember_uids(struct target_policy *p, uid_t analyzer_uid, uid_t exporter_uid)
{
	p->analyzer_uid = analyzer_uid;
	p->exporter_uid = exporter_uid;
}

struct target_policy *target_policy__free(struct target_policy *p)
{
	if (!p)
		return NULL;
	for (unsigned i = 0; i < p->ncgroups; i++)
		free(p->cgroups[i]);
	free(p);
	return NULL;
}

int target_policy__allow_uid(struct target_policy *p, uint32_t uid)
{
	if (p->nuids == MAX_ALLOWED)
		return -EINVAL;
	p->uids[p->nuids++] = uid;
	return 0;
}

int target_policy__allow_cgroup(struct target_policy *p, const char *path)
{
	size_t n = path ? strlen(path) : 0;

	if (!n || path[0] != '/' || n > 1024 || p->ncgroups == MAX_ALLOWED)
		return -EINVAL;
	if (!(p->cgroups[p->ncgroups] = strdup(path)))
		return -ENOMEM;
	/* "/a/" and "/a" are the same cgroup; "/" covers everything. */
	while (n > 1 && p->cgroups[p->ncgroups][n - 1] == '/')
		p->cgroups[p->ncgroups][--n] = '\0';
	p->ncgroups++;
	return 0;
}

static int uid_listed(const struct target_policy *p, uint32_t uid)
{
	for (unsigned i = 0; i < p->nuids; i++)
		if (p->uids[i] == uid)
			return 1;
	return 0;
}

static int cgroup_covered(const struct target_policy *p, const char *cg)
{
	for (unsigned i = 0; i < p->ncgroups; i++) {
		const char *a = p->cgroups[i];
		size_t n = strlen(a);

		if (!strcmp(a, "/") || (!strncmp(cg, a, n) && (cg[n] == '\0' || cg[n] == '/')))
			return 1;
	}
	return 0;
}

static int refuse(uint64_t *counter)
{
	(*counter)++;
	return -EPERM;
}

int target_policy__check(struct target_policy *p, uint32_t pid)
{
	_cleanup_close_ int dir = -1;
	char path[32], buf[16384];
	uint32_t uids[4];
	uint64_t flags;
	long n;
	int nu;

	if (!pid)
		return -ESRCH;
	if ((pid_t)pid == p->self || (pid_t)pid == p->parent)
		return refuse(&p->st.refused_own);
	snprintf(path, sizeof(path), "/proc/%u", pid);
	dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = proc_status__read_at(dir, "stat", buf, sizeof(buf));
	if (n < 0)
		return n == -ENOENT ? -ESRCH : (int)n;
	if (proc_status__stat_flags(buf, (size_t)n, &flags))
		return -EBADMSG;
	if (flags & PROC_PF_KTHREAD)
		return refuse(&p->st.refused_kthread);
	n = proc_status__read_at(dir, "status", buf, sizeof(buf));
	if (n == -EFBIG)
		n = sizeof(buf) - 1;	/* a long Groups: line; Uid: comes before it */
	if (n < 0)
		return n == -ENOENT ? -ESRCH : (int)n;
	nu = proc_status__ids(buf, (size_t)n, "Uid:", uids, 4);
	if (nu < 2)
		return -EBADMSG;
	for (int i = 0; i < nu; i++)
		if (uids[i] == p->analyzer_uid || uids[i] == p->exporter_uid)
			return refuse(&p->st.refused_own);
	if (p->nuids && (!uid_listed(p, uids[0]) || !uid_listed(p, uids[1])))
		return refuse(&p->st.refused_user);
	if (p->ncgroups) {
		char cg[1100];

		n = proc_status__read_at(dir, "cgroup", buf, sizeof(buf));
		if (n < 0)
			return n == -ENOENT ? -ESRCH : (int)n;
		if (proc_status__cgroup2(buf, (size_t)n, cg, sizeof(cg)) || !cgroup_covered(p, cg))
			return refuse(&p->st.refused_cgroup);
	}
	return 0;
}

void target_policy__stats(const struct target_policy *p, struct target_policy_stats *ret)
{
	*ret = p->st;
}

void target_policy__describe(const struct target_policy *p, char *buf, size_t len)
{
	size_t o = 0;

	o += (size_t)snprintf(buf + o, len - o, "%s", p->nuids ? "uids" : "every user but ember's own");
	for (unsigned i = 0; i < p->nuids && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, " %u", p->uids[i]);
	if (o < len)
		o += (size_t)snprintf(buf + o, len - o, ", %s", p->ncgroups ? "cgroups" : "every cgroup");
	for (unsigned i = 0; i < p->ncgroups && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, " %s", p->cgroups[i]);
}
