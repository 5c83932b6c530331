#include "collector/broker.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"

int broker__open_maps(uint32_t pid)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Parses "hex-hex perm" at the start of a line; the kernel formats this part. */
static int parse_prefix(const char *s, size_t n, uint64_t *lo, uint64_t *hi, char perms[4])
{
	size_t i = 0;
	uint64_t *cur = lo;

	*lo = *hi = 0;
	for (int part = 0; part < 2; part++) {
		int digits = 0;
		while (i < n && hexval(s[i]) >= 0 && digits < 16) {
			*cur = (*cur << 4) | (uint64_t)hexval(s[i++]);
			digits++;
		}
		if (!digits || i >= n || s[i] != (part ? ' ' : '-'))
			return -EBADMSG;
		i++;
		cur = hi;
	}
	if (i + 4 > n)
		return -EBADMSG;
	memcpy(perms, s + i, 4);
	return 0;
}

int broker__is_exec_mapping(uint32_t pid, uint64_t start, uint64_t end)
{
	_cleanup_close_ int fd = broker__open_maps(pid);
	char buf[8192];
	size_t have = 0;
	int at_line_start = 1;

	if (fd < 0)
		return fd;
	for (;;) {
		ssize_t r = read(fd, buf + have, sizeof(buf) - have);
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ENOENT;
		have += r;
		/* Look at the start of every complete line in the buffer. */
		size_t pos = 0;
		while (pos < have) {
			char *nl = memchr(buf + pos, '\n', have - pos);
			if (!nl)
				break;
			if (at_line_start) {
				uint64_t lo, hi;
				char perms[4];
				if (!parse_prefix(buf + pos, nl - (buf + pos), &lo, &hi, perms) &&
				    lo == start && hi == end)
					return perms[2] == 'x' ? 0 : -EACCES;
			}
			at_line_start = 1;
			pos = nl - buf + 1;
		}
		if (pos == 0 && have == sizeof(buf)) {
			/* A line longer than the buffer: its prefix was seen, skip the rest. */
			at_line_start = 0;
			have = 0;
			continue;
		}
		memmove(buf, buf + pos, have - pos);
		have -= pos;
	}
}

int broker__open_file(uint32_t pid, uint64_t start, uint64_t end)
{
	char path[96];
	int fd, r;

	if (start >= end)
		return -EINVAL;
	r = broker__is_exec_mapping(pid, start, end);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "/proc/%u/map_files/%llx-%llx", pid, (unsigned long long)start,
		 (unsigned long long)end);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

int broker__open_kallsyms(void)
{
	int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}
