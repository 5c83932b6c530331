#include "common/fileutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "common/cleanup.h"

static bool name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (!n || n > NAME_MAX - 5 || strchr(name, '/'))
		return false;
	return strcmp(name, ".") && strcmp(name, "..");
}

/* mode (int) < 0: 0666 less the umask, no owner change. */
static int write_atomic(int dirfd, const char *name, int mode, uid_t uid, gid_t gid, fileutil_writer_fn fn,
			void *ctx)
{
	char tmp[NAME_MAX + 1];
	FILE *f = NULL;
	int fd = -1, err;

	if (!name_ok(name) || !fn)
		return -EINVAL;
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	/* A leftover (or a planted link) goes: the new file is always a new inode. */
	if (unlinkat(dirfd, tmp, 0) && errno != ENOENT)
		return -errno;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode < 0 ? 0666 : 0600);
	if (fd < 0)
		return -errno;
	if (mode >= 0 && ((uid != (uid_t)-1 && fchown(fd, uid, gid)) || fchmod(fd, (mode_t)mode))) {
		err = -errno;
		close(fd);
		goto cleanup;
	}
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

int fileutil__write_atomic_at(int dirfd, const char *name, fileutil_writer_fn fn, void *ctx)
{
	return write_atomic(dirfd, name, -1, (uid_t)-1, (gid_t)-1, fn, ctx);
}

int fileutil__write_atomic_mode_at(int dirfd, const char *name, mode_t mode, uid_t uid, gid_t gid,
				   fileutil_writer_fn fn, void *ctx)
{
	return write_atomic(dirfd, name, (int)(mode & 07777), uid, gid, fn, ctx);
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
		if (mkdir(p, mode | 0700) && errno != EEXIST)
			return -errno;
		*c = '/';
	}
	if (mkdir(p, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

/* The next component of *p (skipping slashes) into comp; 0 at the end, 1, or -ENAMETOOLONG. */
static int next_comp(const char **p, char comp[NAME_MAX + 1])
{
	const char *s = *p, *e;

	while (*s == '/')
		s++;
	if (!*s)
		return 0;
	e = strchrnul(s, '/');
	if ((size_t)(e - s) > NAME_MAX)
		return -ENAMETOOLONG;
	memcpy(comp, s, (size_t)(e - s));
	comp[e - s] = '\0';
	*p = e;
	return 1;
}

static int say(char *why, size_t whylen, int err, const char *fmt, const char *a)
{
	if (why && whylen)
		snprintf(why, whylen, fmt, a);
	return err;
}

enum walk_mode { WALK_ROOT, WALK_OWNED };

/*
 * Walks path from "/" with O_NOFOLLOW, following only symlinks root owns (at
 * most 16), creating missing directories when create (the last with mode,
 * the others 0755).  WALK_ROOT: each directory must be root's and not
 * writable by others (sticky ones allowed above the last).  Returns an
 * O_DIRECTORY fd of the last, or -errno.
 */
static int walk(const char *path, mode_t mode, int create, enum walk_mode wm, char *why, size_t whylen)
{
	char comp[NAME_MAX + 1], rest[PATH_MAX], link[PATH_MAX];
	int cur, hops = 0, r;
	const char *p;

	if (!path || path[0] != '/' || strlen(path) >= sizeof(rest))
		return say(why, whylen, -EINVAL, "'%s' is not an absolute path", path ? path : "");
	snprintf(rest, sizeof(rest), "%s", path);
	p = rest;
	cur = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return -errno;
	while ((r = next_comp(&p, comp)) > 0) {
		struct stat st;
		int last, next;

		{
			const char *q = p;
			char tmp[NAME_MAX + 1];

			last = next_comp(&q, tmp) == 0;
		}
		if (!strcmp(comp, ".") || !strcmp(comp, "..")) {
			close(cur);
			return say(why, whylen, -EINVAL, "'%s' has a '.' or '..' component", path);
		}
		if (fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW)) {
			if (errno != ENOENT || !create) {
				r = -errno;
				close(cur);
				return say(why, whylen, r, "'%s' cannot be reached", path);
			}
			if (mkdirat(cur, comp, last ? mode : 0755) && errno != EEXIST) {
				r = -errno;
				close(cur);
				return say(why, whylen, r, "cannot create a directory of '%s'", path);
			}
			if (fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW)) {
				r = -errno;
				close(cur);
				return r;
			}
		}
		if (S_ISLNK(st.st_mode)) {
			ssize_t n;

			/* Only root's links: cur is trusted (WALK_ROOT) or at least not redirected by others. */
			if (st.st_uid != 0 || ++hops > 16) {
				close(cur);
				return say(why, whylen, -ELOOP, "'%s' goes through a symlink another user owns", path);
			}
			n = readlinkat(cur, comp, link, sizeof(link) - 1);
			if (n <= 0) {
				close(cur);
				return n < 0 ? -errno : -ENOENT;
			}
			link[n] = '\0';
			if (strlen(link) + strlen(p) + 2 >= sizeof(rest)) {
				close(cur);
				return -ENAMETOOLONG;
			}
			{
				char joined[PATH_MAX];
				size_t ll = strlen(link), pl = strlen(p);

				memcpy(joined, link, ll);
				memcpy(joined + ll, p, pl + 1);
				memcpy(rest, joined, ll + pl + 1);
			}
			p = rest;
			if (rest[0] == '/') {
				close(cur);
				cur = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
				if (cur < 0)
					return -errno;
			}
			continue;
		}
		next = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(cur);
		if (next < 0)
			return say(why, whylen, -errno, "'%s' is not a directory path", path);
		cur = next;
		if (fstat(cur, &st)) {
			r = -errno;
			close(cur);
			return r;
		}
		if (wm == WALK_ROOT && (st.st_uid != 0 || ((st.st_mode & 022) && (last || !(st.st_mode & S_ISVTX))))) {
			if (last && st.st_uid == 0 && !fchmod(cur, mode))
				continue;	/* ours, with an older mode: made private again */
			close(cur);
			return say(why, whylen, -EPERM,
				   "'%s': a directory on the way is another user's or writable by others", path);
		}
	}
	if (r < 0) {
		close(cur);
		return r;
	}
	return cur;
}

int fileutil__open_root_dir(const char *path, mode_t mode, int create, char *why, size_t whylen)
{
	int fd = walk(path, mode, create, WALK_ROOT, why, whylen);
	struct stat st;

	if (fd >= 0 && !fstat(fd, &st) &&
	    ((st.st_gid != 0 && fchown(fd, 0, 0)) || ((st.st_mode & 07777) != mode && fchmod(fd, mode)))) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static int own_fd(int fd, mode_t mode, uid_t uid, gid_t gid)
{
	if (fchown(fd, uid, gid) || fchmod(fd, mode))
		return -errno;
	return 0;
}

int fileutil__open_owned_dir(const char *path, mode_t mode, uid_t uid, gid_t gid, char *why, size_t whylen)
{
	int fd = walk(path, mode, 1, WALK_OWNED, why, whylen), r;

	if (fd >= 0 && (r = own_fd(fd, mode, uid, gid))) {
		close(fd);
		return say(why, whylen, r, "cannot set the owner of '%s'", path);
	}
	return fd;
}

int fileutil__open_owned_dir_at(int dirfd, const char *name, mode_t mode, uid_t uid, gid_t gid)
{
	int fd, r;

	if (!name_ok(name))
		return -EINVAL;
	if (mkdirat(dirfd, name, mode) && errno != EEXIST)
		return -errno;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOTDIR ? -ELOOP : -errno;
	if ((r = own_fd(fd, mode, uid, gid))) {
		close(fd);
		return r;
	}
	return fd;
}

/* Depth-bounded: a tree deeper than this is left (and reported) rather than recursed into. */
#define REMOVE_MAX_DEPTH 64

static int remove_tree(int parent, const char *name, unsigned depth)
{
	_cleanup_close_ int fd = -1;
	DIR *d;
	struct dirent *de;
	int err = 0;

	if (!unlinkat(parent, name, 0))
		return 0;
	if (errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	if (depth >= REMOVE_MAX_DEPTH)
		return -ELOOP;
	/* A directory: through its descriptor only, never a path. */
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	d = fdopendir(fd);
	if (!d)
		return -errno;
	fd = -1;	/* the DIR owns it */
	while ((de = readdir(d))) {
		int r;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		r = remove_tree(dirfd(d), de->d_name, depth + 1);
		if (r && !err)
			err = r;
	}
	closedir(d);
	if (unlinkat(parent, name, AT_REMOVEDIR) && errno != ENOENT && !err)
		err = -errno;
	return err;
}

int fileutil__remove_tree_at(int dirfd, const char *name)
{
	if (!name_ok(name))
		return -EINVAL;
	return remove_tree(dirfd, name, 0);
}
