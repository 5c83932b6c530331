/* The processes a REST feature's snoopers select: see rest_select.h. */
#include "analyzer/rest/rest_select.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cgroup_id.h"

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* A small /proc file, NUL-terminated (NULs inside turned into spaces); its length or -1. */
static ssize_t read_small(const char *root, uint32_t pid, const char *name, char *buf, size_t len)
{
	char path[320];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%u/%s", root, pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	for (ssize_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	return n;
}

static bool matches(const struct rest_doc *d, const char *root, uint32_t self_uid, uint32_t pid)
{
	char comm[64], cmd[4096], cg[4096];
	bool have_cmd = false, have_cg = false;
	struct stat sb;
	char path[320];

	snprintf(path, sizeof(path), "%s/%u", root, pid);
	if (stat(path, &sb) || (self_uid && sb.st_uid == self_uid))
		return false;
	for (unsigned i = 0; i < d->npids; i++)
		if (d->pids[i] == pid)
			return true;
	if (d->nnames) {
		ssize_t n = read_small(root, pid, "comm", comm, sizeof(comm));

		if (n > 0 && comm[n - 1] == '\n')
			comm[n - 1] = 0;
		for (unsigned i = 0; n > 0 && i < d->nnames; i++) {
			if (d->names[i].comm[0] && strcmp(comm, d->names[i].comm))
				continue;
			if (d->names[i].cmdline[0]) {
				if (!have_cmd && read_small(root, pid, "cmdline", cmd, sizeof(cmd)) <= 0)
					continue; /* a kernel thread: no command line */
				have_cmd = true;
				if (!strstr(cmd, d->names[i].cmdline))
					continue;
			}
			return true;
		}
	}
	if (d->ncontainers || d->npods) {
		char con[CGROUP_CONTAINER_ID_LEN + 1], pod[CGROUP_POD_ID_MAX];
		ssize_t n = read_small(root, pid, "cgroup", cg, sizeof(cg));

		have_cg = n > 0 && (cgroup_id__parse(cg, (size_t)n, con, pod) || pod[0]);
		/* a container id as given or its prefix (docker's 12-digit short id); a pod uid either way of writing it */
		for (unsigned i = 0; have_cg && con[0] && i < d->ncontainers; i++)
			if (!strncmp(con, d->containers[i], strlen(d->containers[i])))
				return true;
		for (unsigned i = 0; have_cg && pod[0] && i < d->npods; i++) {
			size_t k = 0;

			while (d->pods[i][k] && pod[k] && (d->pods[i][k] == '_' ? '-' : d->pods[i][k]) == pod[k])
				k++;
			if (!d->pods[i][k] && !pod[k])
				return true;
		}
	}
	return false;
}

/*
 * A match with a command line: a kernel thread (or a zombie) has none, and
 * the collector refuses a task that names one, with every process of the
 * task (the manual's example pids, 101 and 102, are often kernel threads).
 */
static bool selected(const struct rest_doc *d, const char *root, uint32_t self_uid, uint32_t pid)
{
	char one[2];

	return matches(d, root, self_uid, pid) && read_small(root, pid, "cmdline", one, sizeof(one)) > 0;
}

unsigned rest_select__scan(const struct rest_doc *d, const char *proc_root, uint32_t self_uid, uint32_t *sel,
			   unsigned max, uint64_t *over)
{
	const char *root = proc_root ? proc_root : "/proc";
	DIR *dir = opendir(root);
	struct dirent *e;
	unsigned n = 0;

	*over = 0;
	if (!dir)
		return 0;
	while ((e = readdir(dir))) {
		char *end;
		unsigned long pid = strtoul(e->d_name, &end, 10);

		if (*end || !pid || pid > UINT32_MAX || !selected(d, root, self_uid, (uint32_t)pid))
			continue;
		if (n == max) {
			(*over)++;
			continue;
		}
		sel[n++] = (uint32_t)pid;
	}
	closedir(dir);
	qsort(sel, n, sizeof(*sel), cmp_u32);
	return n;
}

bool rest_select__has(const uint32_t *sel, unsigned n, uint32_t pid)
{
	unsigned lo = 0, hi = n;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (sel[mid] == pid)
			return true;
		if (sel[mid] < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}
