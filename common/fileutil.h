/*
 * File helpers.  Library module: never logs; returns 0 or -errno.
 */
#ifndef EMBER_COMMON_FILEUTIL_H
#define EMBER_COMMON_FILEUTIL_H

#include <stdio.h>
#include <sys/types.h>

/* Writes the whole content to out; returns 0 or -errno.  Write errors on out
 * need not be reported: fileutil checks the stream after the call. */
typedef int (*fileutil_writer_fn)(FILE *out, void *ctx);

/*
 * Replaces dirfd/name atomically: writes through fn into a new dirfd/.name.tmp
 * (created O_EXCL, mode 0666 less the umask; a leftover of that name, link or
 * not, is removed first, so nothing planted there is written through),
 * fsyncs it, renames it over name and fsyncs the directory, so a reader sees
 * either the old or the new file, whole.  The rename replaces whatever name
 * was (a symlink is replaced, not followed).  dirfd may be AT_FDCWD.  name is one path component (no '/', not
 * "." or "..", at most NAME_MAX - 5 bytes).  On failure the temporary file
 * is removed and name is untouched.  Two writers of the same name at once
 * are the caller's bug (they share the temporary name).
 * Returns 0, fn's error, -EINVAL (bad name), -EIO or another -errno.
 */
int fileutil__write_atomic_at(int dirfd, const char *name, fileutil_writer_fn fn, void *ctx);

/* Same, with the directory given by path (opened O_DIRECTORY|O_CLOEXEC). */
int fileutil__write_atomic(const char *dir, const char *name, fileutil_writer_fn fn, void *ctx);

/*
 * Same as fileutil__write_atomic_at, and the file gets exactly mode (no
 * umask) and, unless uid is (uid_t)-1, that owner and gid, set on the
 * descriptor before the rename: a reader never sees it with other rights.
 */
int fileutil__write_atomic_mode_at(int dirfd, const char *name, mode_t mode, uid_t uid, gid_t gid,
				   fileutil_writer_fn fn, void *ctx);

/*
 * The directory at path, for a privileged process to keep its own files in:
 * an O_DIRECTORY fd, or -errno.  Every component is opened O_NOFOLLOW from
 * "/" (a symlink is followed only when root owns it), and must be a
 * directory owned by root that no other user can write, except a sticky
 * one (/tmp) above the last; the last is created with mode when missing and
 * create is set, and it is made root:root with mode when it differs (an older
 * group-writable directory, or one created under another umask).  -EPERM
 * names a component another user owns or can write (why says which, may be
 * NULL), -ELOOP too many symlinks.
 */
int fileutil__open_root_dir(const char *path, mode_t mode, int create, char *why, size_t whylen);

/*
 * The directory at path for less-privileged writers, opened without
 * following any symlink that root does not own: the parents are created
 * (0755) when missing, the last with mode, and the last is then given
 * uid:gid and mode through its descriptor, so a name replaced by a link
 * between the steps changes nothing it points at.  An O_DIRECTORY fd, or
 * -errno (-ELOOP: a symlink another user owns on the way).  why as above.
 */
int fileutil__open_owned_dir(const char *path, mode_t mode, uid_t uid, gid_t gid, char *why, size_t whylen);

/* The same for name directly under the directory dirfd. */
int fileutil__open_owned_dir_at(int dirfd, const char *name, mode_t mode, uid_t uid, gid_t gid);

/*
 * Removes name under dirfd and, if it is a directory, everything below it,
 * through descriptors only: a symlink is removed, never followed, and a
 * directory swapped for a link while this runs is not descended into.
 * 0 or the first -errno (what it could, it removed).
 */
int fileutil__remove_tree_at(int dirfd, const char *name);

/*
 * A directory a caller outside ember may name: absolute, at most 255 bytes
 * of [A-Za-z0-9._/-], no empty, "." or ".." component, not "/" and not
 * under /proc, /sys or /dev.  0, or -EINVAL with why in why (may be NULL).
 */
int fileutil__safe_dir(const char *path, char *why, size_t whylen);
/* mkdir -p path: mode (less the umask) for path and the parents it creates.  0 or -errno. */
int fileutil__mkdirs(const char *path, mode_t mode);

#endif
