#include "analyzer/continuous/mon_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STAT_BUF 1024

/* "pid (comm) S ppid ..." where comm may hold spaces and parentheses: split at the last ')'. */
static int parse_stat(char *buf, struct mon_proc_stat *ret)
{
	char *open = strchr(buf, '('), *close = strrchr(buf, ')'), *tok, *save = NULL;
	unsigned long long v[20] = { 0 };
	unsigned f = 0;

	if (!open || !close || close < open || close[1] != ' ')
		return -EINVAL;
	snprintf(ret->comm, sizeof(ret->comm), "%.*s", (int)(close - open - 1), open + 1);
	ret->state = close[2];
	/* Fields from the state on: index 0 = field 3 (state), 11 utime, 12 stime, 17 num_threads, 19 starttime. */
	for (tok = strtok_r(close + 2, " ", &save); tok && f < 20; tok = strtok_r(NULL, " ", &save), f++)
		if (f)
			v[f] = strtoull(tok, NULL, 10);
	if (f < 20)
		return -EINVAL;
	ret->ticks = v[11] + v[12];
	ret->threads = v[17];
	ret->start_ticks = v[19];
	return 0;
}

int mon_proc__stat(const char *proc_root, uint32_t pid, int fd, struct mon_proc_stat *ret)
{
	char buf[STAT_BUF], path[320];
	ssize_t n;
	int own = 0;

	if (fd < 0) {
		snprintf(path, sizeof(path), "%s/%u/stat", proc_root, pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		own = 1;
	}
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n < 0)
		n = -errno;
	if (own)
		close(fd);
	if (n <= 0)
		return n < 0 ? (int)n : -ESRCH;
	buf[n] = 0;
	return parse_stat(buf, ret);
}

int mon_proc__cmdline(const char *proc_root, uint32_t pid, char *out, size_t outlen)
{
	char path[320];
	ssize_t n, total = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/%u/cmdline", proc_root, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((size_t)total < outlen - 1 && (n = read(fd, out + total, outlen - 1 - (size_t)total)) > 0)
		total += n;
	close(fd);
	while (total > 0 && out[total - 1] == 0)
		total--;
	for (ssize_t i = 0; i < total; i++)
		if (!out[i])
			out[i] = ' ';
	out[total] = 0;
	return 0;
}

int mon_proc__loadavg(const char *proc_root, double *ret)
{
	char path[320], buf[128];
	ssize_t n;
	char *end;
	int fd;

	snprintf(path, sizeof(path), "%s/loadavg", proc_root);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = 0;
	*ret = strtod(buf, &end);
	return end == buf ? -EINVAL : 0;
}
