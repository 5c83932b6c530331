#include "collector/broker.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>

#include "common/cleanup.h"
#include "common/debugpath.h"
#include "common/proc_status.h"

struct broker {
	struct broker_stats st;
};

/* What the broker knows of one target, for one request. */
struct target {
	int procfd;         /* /proc/<pid>: later opens cannot reach a process that reused the pid */
	uint32_t uids[4];   /* real, effective, saved, filesystem */
	unsigned nuids;
	uint32_t nspid;     /* 0: unknown */
};

/* Rules for a file found by a pattern (not the kernel's own mapping). */
enum { RULE_OWNER = 1, RULE_ONE_LINK = 2 };

struct broker *broker__new(void)
{
	return calloc(1, sizeof(struct broker));
}

struct broker *broker__free(struct broker *b)
{
	free(b);
	return NULL;
}

void broker__stats(const struct broker *b, struct broker_stats *ret)
{
	*ret = b->st;
}

/* Every answer is counted once, here: the fd, or why not. */
static int count(struct broker *b, int r)
{
	if (r >= 0)
		b->st.opens++;
	else if (r == -ENOENT || r == -ESRCH || r == -ENOTDIR)
		b->st.missing++;
	else if (r == -ELOOP)
		b->st.symlink++;
	else if (r == -BROKER_ENOTREG)
		b->st.not_regular++;
	else if (r == -EPERM)
		b->st.owner++;
	else if (r == -ESTALE)
		b->st.stale++;
	else
		b->st.other++;
	return r;
}

static void target_close(struct target *t)
{
	if (t->procfd >= 0)
		close(t->procfd);
	t->procfd = -1;
}

/* /proc/<pid> and, with ids, the target's uids and innermost pid.  0 or -errno. */
static int target_open(uint32_t pid, struct target *t, int ids)
{
	char path[32], status[16384];
	long n;
	int r;

	memset(t, 0, sizeof(*t));
	t->procfd = -1;
	if (!pid)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%u", pid);
	t->procfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (t->procfd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	if (!ids)
		return 0;
	n = proc_status__read_at(t->procfd, "status", status, sizeof(status));
	if (n == -EFBIG)
		n = sizeof(status) - 1;	/* a long Groups: line; Uid: comes before it */
	if (n < 0) {
		target_close(t);
		return (int)n;
	}
	r = proc_status__ids(status, (size_t)n, "Uid:", t->uids, 4);
	if (r < 1) {
		target_close(t);
		return -ESRCH;
	}
	t->nuids = (unsigned)r;
	if (debugpath__parse_nspid(status, (size_t)n, &t->nspid))
		t->nspid = 0;
	return 0;
}

static int target_has_uid(const struct target *t, uint32_t uid)
{
	for (unsigned i = 0; i < t->nuids; i++)
		if (t->uids[i] == uid)
			return 1;
	return 0;
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
 * The maps line of the mapping [start, end) into line (NUL-terminated, cut
 * at len - 1) when it is executable: 0, -ENOENT (no such mapping) or -EACCES
 * (not executable).
 */
static int exec_mapping_line(int procfd, uint64_t start, uint64_t end, char *line, size_t len)
{
	_cleanup_close_ int fd = openat(procfd, "maps", O_RDONLY | O_CLOEXEC);
	char buf[8192];
	size_t have = 0;
	int at_line_start = 1;

	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	if (start >= end)
		return -ENOENT;
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

/* The mapping's device, inode and path from its maps line.  0 or -errno. */
struct mapping {
	dev_t dev;
	ino_t ino;
	const char *path;   /* absolute, inside the target's root; points into line */
	char line[4096 + 128];
};

static int mapping_of(int procfd, uint64_t start, uint64_t end, struct mapping *m)
{
	unsigned maj, min;
	unsigned long long ino;
	int n = 0, r;
	size_t len;

	r = exec_mapping_line(procfd, start, end, m->line, sizeof(m->line));
	if (r)
		return r;
	/* "start-end perms offset maj:min inode   path" */
	if (sscanf(m->line, "%*s %*s %*s %x:%x %llu %n", &maj, &min, &ino, &n) != 3 || !n || !ino)
		return -ENOENT;
	m->path = m->line + n;
	while (*m->path == ' ')
		m->path++;
	len = strlen(m->path);
	/* A deleted file's name may be reused: nothing is opened by it. */
	if (m->path[0] != '/' || (len > 10 && !strcmp(m->path + len - 10, " (deleted)")))
		return -ENOENT;
	m->dev = makedev(maj, min);
	m->ino = (ino_t)ino;
	return 0;
}

static int sys_openat2(int dirfd, const char *path, uint64_t flags, uint64_t resolve)
{
	struct open_how how = { .flags = flags, .resolve = resolve };
	int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

	return fd < 0 ? -errno : fd;
}

/*
 * path under dirfd, O_PATH: no symlink followed anywhere (a trailing one
 * comes back as itself and is refused here), in_root: absolute paths and
 * ".." stay inside dirfd.  Returns the O_PATH fd, or -errno (-ELOOP: a
 * symlink).
 */
static int open_path(int dirfd, const char *path, int in_root, int dir)
{
	uint64_t resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | (in_root ? RESOLVE_IN_ROOT : RESOLVE_BENEATH);
	uint64_t flags = O_PATH | O_CLOEXEC | (dir ? O_DIRECTORY : O_NOFOLLOW);
	struct stat st;
	int fd = sys_openat2(dirfd, path, flags, resolve);

	if (fd < 0)
		return fd;
	if (fstat(fd, &st)) {
		int err = -errno;
		close(fd);
		return err;
	}
	if (S_ISLNK(st.st_mode)) {
		close(fd);
		return -ELOOP;
	}
	return fd;
}

/* The O_PATH fd pfd (checked by the caller) opened for reading: the same inode, or -errno. */
static int reopen(int pfd, const struct stat *want)
{
	char self[48];
	struct stat st;
	int fd;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_dev != want->st_dev || st.st_ino != want->st_ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* A regular file, owned as rules ask.  0, -BROKER_ENOTREG or -EPERM. */
static int check_file(const struct target *t, const struct stat *st, unsigned rules)
{
	if (!S_ISREG(st->st_mode))
		return -BROKER_ENOTREG;
	if (rules & RULE_OWNER) {
		/* Root's own files only if anyone may read them: a link cannot lend root's secrets. */
		if (st->st_uid == 0 ? !target_has_uid(t, 0) && !(st->st_mode & S_IROTH) : !target_has_uid(t, st->st_uid))
			return -EPERM;
	}
	if ((rules & RULE_ONE_LINK) && st->st_nlink != 1)
		return -EPERM;
	return 0;
}

/* path (a pattern's) under dirfd checked by rules and reopened for reading.  fd or -errno. */
static int open_checked(const struct target *t, int dirfd, const char *path, int in_root, unsigned rules)
{
	_cleanup_close_ int pfd = open_path(dirfd, path, in_root, 0);
	struct stat st;
	int r;

	if (pfd < 0)
		return pfd;
	if (fstat(pfd, &st))
		return -errno;
	if ((r = check_file(t, &st, rules)))
		return r;
	return reopen(pfd, &st);
}

static int open_root(const struct target *t)
{
	int fd = openat(t->procfd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int broker__open_maps(struct broker *b, uint32_t pid)
{
	struct target t;
	int fd, r = target_open(pid, &t, 0);

	if (r)
		return count(b, r);
	fd = openat(t.procfd, "maps", O_RDONLY | O_CLOEXEC);
	r = fd < 0 ? -errno : fd;
	target_close(&t);
	return count(b, r);
}

/*
 * Overlay filesystems (containers): before Linux 6.8 a mapping of a file on
 * overlayfs names, in its maps line, the device and inode of the file in the
 * layer underneath, while a path through the overlay gives the overlay's.
 * The layers are in the target's mountinfo (upperdir, lowerdir); the file at
 * the same relative path in one of them is the mapped one exactly when its
 * device and inode are the maps line's, which is the only file ever served.
 * Layer paths are as the mounter saw them: the host's (the collector's root)
 * or, for a container that mounted its own overlay, the target's root.
 */
#define OVERLAYFS_MAGIC 0x794c7630
#define MOUNTINFO_MAX (512u << 10)
#define LAYERS_MAX 128

static int on_overlay(int fd)
{
	struct statfs sf;

	return !fstatfs(fd, &sf) && (unsigned long)sf.f_type == OVERLAYFS_MAGIC;
}

/* mountinfo's octal escapes (\040) undone in place; overlay's own backslash escapes kept. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else
			*o++ = *s;
	}
	*o = '\0';
}

/* Is the file at layer/rel, under dirfd, the mapping's (device and inode)?  An O_PATH fd or -errno. */
static int layer_file(int dirfd, const char *layer, const char *rel, const struct mapping *m)
{
	char path[8192];
	struct stat st;
	int fd;

	if (layer[0] != '/' || (size_t)snprintf(path, sizeof(path), "%s/%s", layer, rel) >= sizeof(path))
		return -ENAMETOOLONG;
	/* Links may be followed here: nothing but the mapped inode itself passes the check below. */
	fd = sys_openat2(dirfd, path, O_PATH | O_CLOEXEC, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_ino != m->ino || st.st_dev != m->dev) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* Splits an overlay option's value (a:b:c, with \: and \, escaped) into layers, in place. */
static unsigned split_layers(char *v, char **out, unsigned max, unsigned n)
{
	char *o = v, *start = v;

	for (char *s = v;; s++) {
		if (*s == '\\' && s[1]) {
			*o++ = *++s;
			continue;
		}
		if (*s == ':' || *s == '\0') {
			int end = *s == '\0';

			*o++ = '\0';
			if (*start && n < max)
				out[n++] = start;
			start = o;
			if (end)
				break;
			continue;
		}
		*o++ = *s;
	}
	return n;
}

/* The mapped file found in the layers of the overlay mount that holds m->path: an O_PATH fd or -ESTALE. */
static int open_in_layers(const struct target *t, const struct mapping *m)
{
	char *buf = malloc(MOUNTINFO_MAX), *line, *save = NULL, *layers[LAYERS_MAX], *opts = NULL;
	_cleanup_close_ int host = -1, root = -1;
	size_t best_len = 0;
	const char *rel;
	unsigned nl = 0;
	int r = -ESTALE;
	long n;

	if (!buf)
		return -ENOMEM;
	n = proc_status__read_at(t->procfd, "mountinfo", buf, MOUNTINFO_MAX);
	if (n < 0) {
		free(buf);
		return (int)n;
	}
	/*
	 * "id parent maj:min root mountpoint options [optional...] - fstype source superoptions":
	 * the overlay mount with the longest mount point that holds the path.
	 */
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sep = strstr(line, " - "), *mp, *end, *o;
		size_t ml;

		if (!sep || strncmp(sep + 3, "overlay ", 8))
			continue;
		*sep = '\0';
		mp = line;
		for (int f = 0; f < 4 && mp; f++)
			mp = (mp = strchr(mp, ' ')) ? mp + 1 : NULL;
		if (!mp || !(end = strchr(mp, ' ')))
			continue;
		*end = '\0';
		unescape(mp);
		ml = strlen(mp);
		if (strncmp(m->path, mp, ml) || (ml > 1 && m->path[ml] != '/') || (opts && ml <= best_len))
			continue;
		o = strrchr(sep + 3, ' ');	/* the super options are the last field */
		if (!o)
			continue;
		opts = o + 1;
		best_len = ml;
	}
	if (!opts)
		goto out;
	rel = m->path + (best_len > 1 ? best_len : 0);
	while (*rel == '/')
		rel++;
	save = NULL;
	for (char *o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		unescape(o);
		if (!strncmp(o, "upperdir=", 9))
			nl = split_layers(o + 9, layers, LAYERS_MAX, nl);
		else if (!strncmp(o, "lowerdir=", 9) || !strncmp(o, "lowerdir+=", 10))
			nl = split_layers(strchr(o, '=') + 1, layers, LAYERS_MAX, nl);
	}
	host = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	root = open_root(t);
	for (unsigned i = 0; i < nl && r < 0; i++) {
		r = host >= 0 ? layer_file(host, layers[i], rel, m) : -ESTALE;
		if (r < 0 && root >= 0)
			r = layer_file(root, layers[i], rel, m);
	}
out:
	free(buf);
	return r < 0 ? -ESTALE : r;
}

/*
 * The device of the superblock fd's file is on, from its mount (statx's
 * mount id, then that mount's maj:min in the target's mountinfo: mount ids
 * are global).  On overlayfs with layers on several filesystems a file's
 * st_dev is a per-layer device, while a mapping's maps line (6.8+) names
 * the overlay's own.  0 or -errno.
 */
static int mount_dev(const struct target *t, int fd, dev_t *ret)
{
	struct statx sx;
	char *buf, *line, *save = NULL;
	long n;
	int r = -ENOENT;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &sx) || !(sx.stx_mask & STATX_MNT_ID))
		return -EOPNOTSUPP;
	buf = malloc(MOUNTINFO_MAX);
	if (!buf)
		return -ENOMEM;
	n = proc_status__read_at(t->procfd, "mountinfo", buf, MOUNTINFO_MAX);
	for (line = n > 0 ? strtok_r(buf, "\n", &save) : NULL; line && r; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long id;
		unsigned maj, min;

		if (sscanf(line, "%llu %*u %u:%u", &id, &maj, &min) == 3 && id == sx.stx_mnt_id) {
			*ret = makedev(maj, min);
			r = 0;
		}
	}
	free(buf);
	return r;
}

/* Is pfd (an O_PATH fd of a file found by the mapping's path) the mapped file? */
static int is_mapped_file(const struct target *t, const struct mapping *m, int pfd, const struct stat *st)
{
	dev_t sb;
	int lfd;

	if (st->st_ino == m->ino && st->st_dev == m->dev)
		return 1;
	if (!on_overlay(pfd))
		return 0;
	/* 6.8+: the maps line names the overlay and the inode's number. */
	if (st->st_ino == m->ino && !mount_dev(t, pfd, &sb) && sb == m->dev)
		return 1;
	/* Before 6.8: the layer's file itself. */
	lfd = open_in_layers(t, m);
	if (lfd < 0)
		return 0;
	close(lfd);
	return 1;
}

/*
 * The mapped file by its maps line's path when map_files is closed: O_PATH
 * inside the target's root, no symlinks, and the mapping's device and inode
 * before anything is opened for reading.
 */
static int open_mapped_by_path(const struct target *t, const struct mapping *m)
{
	_cleanup_close_ int root = open_root(t), pfd = -1;
	struct stat st;

	if (root < 0)
		return root;
	pfd = open_path(root, m->path, 1, 0);
	if (pfd < 0)
		return pfd;
	if (fstat(pfd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -BROKER_ENOTREG;
	if (st.st_ino != m->ino || st.st_dev != m->dev) {
		/* On overlayfs: the overlay's file (6.8+), or the layer's file itself (before). */
		int lfd;
		struct stat lst;
		dev_t sb;

		if (!on_overlay(pfd))
			return -ESTALE;
		if (st.st_ino == m->ino && !mount_dev(t, pfd, &sb) && sb == m->dev)
			return reopen(pfd, &st);
		if ((lfd = open_in_layers(t, m)) < 0)
			return -ESTALE;
		close(pfd);
		pfd = lfd;
		if (fstat(pfd, &lst))
			return -errno;
		return reopen(pfd, &lst);
	}
	return reopen(pfd, &st);
}

static int open_file(struct target *t, uint64_t start, uint64_t end)
{
	_cleanup_close_ int pfd = -1;
	struct mapping *m = NULL;
	char mf[64];
	struct stat st;
	int r;

	m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	r = mapping_of(t->procfd, start, end, m);
	if (r)
		goto cleanup;
	snprintf(mf, sizeof(mf), "map_files/%llx-%llx", (unsigned long long)start, (unsigned long long)end);
	/* O_PATH follows the magic link to the mapped file: nothing is opened for reading yet. */
	pfd = openat(t->procfd, mf, O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		r = errno == EACCES || errno == EPERM ? open_mapped_by_path(t, m) : -errno;
		goto cleanup;
	}
	if (fstat(pfd, &st)) {
		r = -errno;
		goto cleanup;
	}
	r = !S_ISREG(st.st_mode) ? -BROKER_ENOTREG : reopen(pfd, &st);
cleanup:
	free(m);
	return r;
}

int broker__open_file(struct broker *b, uint32_t pid, uint64_t start, uint64_t end)
{
	struct target t;
	int r = target_open(pid, &t, 0);

	if (!r)
		r = open_file(&t, start, end);
	target_close(&t);
	return count(b, r);
}

int broker__open_kallsyms(struct broker *b)
{
	int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);

	return count(b, fd < 0 ? -errno : fd);
}

int broker__open_perf_map(struct broker *b, uint32_t pid)
{
	_cleanup_close_ int root = -1;
	char path[64];
	struct target t;
	int r = target_open(pid, &t, 1);

	if (r)
		return count(b, r);
	r = t.nspid ? debugpath__perf_map(path, sizeof(path), "", t.nspid) : -ENOENT;
	if (r >= 0 && (r = root = open_root(&t)) >= 0)
		r = open_checked(&t, root, path, 1, RULE_OWNER | RULE_ONE_LINK);
	target_close(&t);
	return count(b, r);
}

int broker__open_debug_build_id(struct broker *b, uint32_t pid, const uint8_t *build_id, size_t len)
{
	_cleanup_close_ int root = -1;
	char path[256];
	struct target t;
	int r = debugpath__build_id(path, sizeof(path), "", build_id, len);

	if (r < 0)
		return count(b, r);
	if ((r = target_open(pid, &t, 1)))
		return count(b, r);
	if ((r = root = open_root(&t)) >= 0)
		r = open_checked(&t, root, path, 1, RULE_OWNER);
	target_close(&t);
	return count(b, r);
}

/*
 * The directory of the mapping's file, O_PATH: the directory named by the
 * maps line, accepted only if its entry of that name is the mapped file.
 */
static int binary_dir(const struct target *t, int root, const struct mapping *m, const char **ret_dir_end)
{
	const char *slash = strrchr(m->path, '/');
	char dir[4096];
	_cleanup_close_ int dfd = -1, pfd = -1;
	struct stat st;
	size_t dl = (size_t)(slash - m->path);
	int r;

	if (dl >= sizeof(dir) || !slash[1])
		return -ENOENT;
	memcpy(dir, m->path, dl);
	dir[dl] = '\0';
	dfd = open_path(root, dl ? dir : "/", 1, 1);
	if (dfd < 0)
		return dfd;
	pfd = open_path(dfd, slash + 1, 0, 0);
	if (pfd < 0)
		return pfd;
	if (fstat(pfd, &st))
		return -errno;
	if (!is_mapped_file(t, m, pfd, &st))
		return -ESTALE;
	*ret_dir_end = slash;
	r = dfd;
	dfd = -1;
	return r;
}

static int open_debuglink(struct target *t, uint64_t start, uint64_t end, const char *name)
{
	_cleanup_close_ int root = -1, dir = -1;
	struct mapping *m = malloc(sizeof(struct mapping));
	char path[4096 + 600];
	const char *dir_end = NULL;
	int r;

	if (!m)
		return -ENOMEM;
	if ((r = mapping_of(t->procfd, start, end, m)) || (r = root = open_root(t)) < 0 ||
	    (r = dir = binary_dir(t, root, m, &dir_end)) < 0)
		goto cleanup;
	/* Beside the binary, in its .debug/, then under /usr/lib/debug<dir>/: the first that exists. */
	r = open_checked(t, dir, name, 0, RULE_OWNER);
	if (r == -ENOENT) {
		snprintf(path, sizeof(path), ".debug/%s", name);
		r = open_checked(t, dir, path, 0, RULE_OWNER);
	}
	if (r == -ENOENT) {
		if (snprintf(path, sizeof(path), "/usr/lib/debug%.*s/%s", (int)(dir_end - m->path), m->path, name) >=
		    (int)sizeof(path))
			r = -ENAMETOOLONG;
		else
			r = open_checked(t, root, path, 1, RULE_OWNER);
	}
cleanup:
	free(m);
	return r;
}

int broker__open_debuglink(struct broker *b, uint32_t pid, uint64_t start, uint64_t end, const char *name)
{
	struct target t;
	int r;

	if (!debugpath__valid_link_name(name))
		return count(b, -EINVAL);
	if ((r = target_open(pid, &t, 1)))
		return count(b, r);
	r = open_debuglink(&t, start, end, name);
	target_close(&t);
	return count(b, r);
}
