#include "common/fileutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

static bool name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (!n || n > NAME_MAX - 5 || strchr(name, '/'))
		return false;
	return strcmp(name, ".") && strcmp(name, "..");
}

int fileutil__write_atomic_at(int dirfd, const char *name, fileutil_writer_fn fn, void *ctx)
{
	char tmp[NAME_MAX + 1];
	FILE *f = NULL;
	int fd = -1, err;

	if (!name_ok(name) || !fn)
		return -EINVAL;
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		goto cleanup;
	}
	err = fn(f, ctx);
	if (err < 0)
		goto cleanup;
	if (fflush(f)) {
		err = -errno;
		goto cleanup;
	}
	if (ferror(f)) {	/* an earlier write failed; its errno is gone */
		err = -EIO;
		goto cleanup;
	}
	/* The data must be on disk before the rename makes it the file. */
	if (fsync(fileno(f))) {
		err = -errno;
		goto cleanup;
	}
	err = fclose(f) ? -errno : 0;
	f = NULL;
	if (err < 0)
		goto cleanup;
	if (renameat(dirfd, tmp, dirfd, name)) {
		err = -errno;
		goto cleanup;
	}
	/* Durability of the rename itself; failure here leaves a valid file. */
	if (dirfd != AT_FDCWD)
		(void)fsync(dirfd);
	else {
		_cleanup_close_ int d = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (d >= 0)
			(void)fsync(d);
	}
	return 0;
cleanup:
	if (f)
		fclose(f);
	unlinkat(dirfd, tmp, 0);
	return err;
}

int fileutil__write_atomic(const char *dir, const char *name, fileutil_writer_fn fn, void *ctx)
{
	_cleanup_close_ int d = -1;

	if (!dir)
		return -EINVAL;
	d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		return -errno;
	return fileutil__write_atomic_at(d, name, fn, ctx);
}

int fileutil__safe_dir(const char *p, char *why, size_t whylen)
{
	static const char *const under[] = { "/proc", "/sys", "/dev" };
	const char *reason = NULL;

	if (!p || p[0] != '/' || !p[1])
		reason = "is not an absolute directory path";
	else if (strlen(p) > 255)
		reason = "is longer than 255 characters";
	for (const char *c = p; !reason && *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' ||
		      *c == '_' || *c == '-' || *c == '/'))
			reason = "holds a character other than letters, digits and . _ - /";
	for (const char *c = p; !reason && (c = strchr(c, '/')); c++)
		if (!strncmp(c, "/./", 3) || !strcmp(c, "/.") || !strncmp(c, "/../", 4) || !strcmp(c, "/..") ||
		    !strncmp(c, "//", 2))
			reason = "has an empty, '.' or '..' component";
	for (unsigned i = 0; !reason && i < 3; i++) {
		size_t l = strlen(under[i]);

		if (!strncmp(p, under[i], l) && (!p[l] || p[l] == '/'))
			reason = "is under /proc, /sys or /dev";
	}
	if (!reason)
		return 0;
	if (why)
		snprintf(why, whylen, "%s", reason);
	return -EINVAL;
}

int fileutil__mkdirs(const char *path, mode_t mode)
{
	char p[4096];
	size_t n = strlen(path);

	if (!n || n >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, path, n + 1);
	for (char *c = p + 1; *c; c++) {
		if (*c != '/')
			continue;
		*c = 0;
		if (mkdir(p, 0755) && errno != EEXIST)
			return -errno;
		*c = '/';
	}
	if (mkdir(p, mode) && errno != EEXIST)
		return -errno;
	return 0;
}
