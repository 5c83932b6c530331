#include "collector/broker.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>

#include "common/cleanup.h"
#include "common/debugpath.h"

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

/*
 * The maps line of pid's mapping [start, end) into line (NUL-terminated, cut
 * at len - 1) when it is executable: 0, -ENOENT (no such mapping) or -EACCES
 * (not executable).
 */
static int exec_mapping_line(uint32_t pid, uint64_t start, uint64_t end, char *line, size_t len)
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
				size_t n = (size_t)(nl - (buf + pos));
				if (!parse_prefix(buf + pos, n, &lo, &hi, perms) && lo == start && hi == end) {
					if (perms[2] != 'x')
						return -EACCES;
					if (line) {
						n = n < len - 1 ? n : len - 1;
						memcpy(line, buf + pos, n);
						line[n] = '\0';
					}
					return 0;
				}
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

int broker__is_exec_mapping(uint32_t pid, uint64_t start, uint64_t end)
{
	return exec_mapping_line(pid, start, end, NULL, 0);
}

/* /proc/<pid>/map_files/<start>-<end> of an executable mapping of pid, checked first.  0 or -errno. */
static int map_file_path(uint32_t pid, uint64_t start, uint64_t end, char *buf, size_t len)
{
	int r;

	if (start >= end)
		return -EINVAL;
	r = broker__is_exec_mapping(pid, start, end);
	if (r < 0)
		return r;
	snprintf(buf, len, "/proc/%u/map_files/%llx-%llx", pid, (unsigned long long)start, (unsigned long long)end);
	return 0;
}

static int open_in_root(uint32_t pid, const char *path);

/*
 * The file of a mapping through the target's root when its map_files are
 * closed to the collector: a process running as another user owns its
 * /proc/<pid>/map_files (mode 0500), and the collector keeps no
 * CAP_DAC_READ_SEARCH.  The kernel-formatted maps line gives the device,
 * inode and path; the path resolves inside the target's root only, and the
 * file opened must be that device and inode, or nothing is returned.
 */
static int open_mapped_by_path(uint32_t pid, uint64_t start, uint64_t end)
{
	char line[4096 + 128];
	unsigned maj, min;
	unsigned long long ino;
	const char *path;
	struct stat st;
	int n = 0, fd, r;

	r = exec_mapping_line(pid, start, end, line, sizeof(line));
	if (r)
		return r;
	/* "start-end perms offset maj:min inode   path" */
	if (sscanf(line, "%*s %*s %*s %x:%x %llu %n", &maj, &min, &ino, &n) != 3 || !n || !ino)
		return -ENOENT;
	path = line + n;
	while (*path == ' ')
		path++;
	n = (int)strlen(path);
	if (path[0] != '/' || (n > 10 && !strcmp(path + n - 10, " (deleted)")))
		return -ENOENT;
	fd = open_in_root(pid, path);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) || st.st_ino != ino || major(st.st_dev) != maj || minor(st.st_dev) != min) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int broker__open_file(uint32_t pid, uint64_t start, uint64_t end)
{
	char path[96];
	int fd, r;

	if ((r = map_file_path(pid, start, end, path, sizeof(path))))
		return r;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 && errno == EACCES)
		return open_mapped_by_path(pid, start, end);
	return fd < 0 ? -errno : fd;
}

int broker__open_kallsyms(void)
{
	int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/*
 * Opens path (absolute, inside the target's root) as a regular file.  With
 * openat2(RESOLVE_IN_ROOT) every symlink, absolute ones included, resolves
 * inside /proc/<pid>/root -- a container cannot point the collector at the
 * host's files.  Kernels without openat2 (< 5.6): the last component must not
 * be a symlink (O_NOFOLLOW), the best plain open() offers.
 */
static int open_in_root(uint32_t pid, const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	char root[64], full[4096 + 600];
	_cleanup_close_ int dfd = -1;
	struct stat st;
	int fd;

	snprintf(root, sizeof(root), "/proc/%u/root", pid);
	dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS) {
		if ((size_t)snprintf(full, sizeof(full), "%s%s", root, path) >= sizeof(full))
			return -ENAMETOOLONG;
		fd = open(full, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EACCES;
	}
	return fd;
}

int broker__open_perf_map(uint32_t pid)
{
	char path[128], status[4096];
	_cleanup_close_ int sfd = -1;
	uint32_t nspid;
	ssize_t n;
	int r;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	sfd = open(path, O_RDONLY | O_CLOEXEC);
	if (sfd < 0)
		return -errno;
	n = read(sfd, status, sizeof(status));
	if (n <= 0)
		return n < 0 ? -errno : -ENOENT;
	if (debugpath__parse_nspid(status, (size_t)n, &nspid))
		return -ENOENT;
	r = debugpath__perf_map(path, sizeof(path), "", nspid);
	return r < 0 ? r : open_in_root(pid, path);
}

int broker__open_debug_build_id(uint32_t pid, const uint8_t *build_id, size_t len)
{
	char path[256];
	int r;

	r = debugpath__build_id(path, sizeof(path), "", build_id, len);
	return r < 0 ? r : open_in_root(pid, path);
}

int broker__open_debuglink(uint32_t pid, uint64_t start, uint64_t end, const char *name)
{
	char mf[96], bin[4096], path[4096 + 512];
	ssize_t n;
	int r = -ENOENT;

	if (!debugpath__valid_link_name(name))
		return -EINVAL;
	if ((r = map_file_path(pid, start, end, mf, sizeof(mf))))
		return r;
	n = readlink(mf, bin, sizeof(bin) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -ENOENT;
	bin[n] = '\0';
	/* A deleted binary's directory may be gone or reused: do not guess. */
	if (n > 10 && !strcmp(bin + n - 10, " (deleted)"))
		return -ENOENT;
	for (unsigned i = 0; i < DEBUGPATH_LINK_DIRS; i++) {
		if (debugpath__link(path, sizeof(path), "", bin, name, i) < 0)
			return -EINVAL;
		r = open_in_root(pid, path);
		if (r >= 0)
			return r;
	}
	return r;
}
