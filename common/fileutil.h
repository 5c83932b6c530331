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
 * Replaces dirfd/name atomically: writes through fn into dirfd/.name.tmp
 * (mode 0644, O_CLOEXEC|O_NOFOLLOW), fsyncs it, renames it over name and
 * fsyncs the directory, so a reader sees either the old or the new file,
 * whole.  dirfd may be AT_FDCWD.  name is one path component (no '/', not
 * "." or "..", at most NAME_MAX - 5 bytes).  On failure the temporary file
 * is removed and name is untouched.  Two writers of the same name at once
 * are the caller's bug (they share the temporary name).
 * Returns 0, fn's error, -EINVAL (bad name), -EIO or another -errno.
 */
int fileutil__write_atomic_at(int dirfd, const char *name, fileutil_writer_fn fn, void *ctx);

/* Same, with the directory given by path (opened O_DIRECTORY|O_CLOEXEC). */
int fileutil__write_atomic(const char *dir, const char *name, fileutil_writer_fn fn, void *ctx);

/*
 * A directory a caller outside ember may name: absolute, at most 255 bytes
 * of [A-Za-z0-9._/-], no empty, "." or ".." component, not "/" and not
 * under /proc, /sys or /dev.  0, or -EINVAL with why in why (may be NULL).
 */
int fileutil__safe_dir(const char *path, char *why, size_t whylen);
/* mkdir -p path: mode for path itself, 0755 for the parents it creates.  0 or -errno. */
int fileutil__mkdirs(const char *path, mode_t mode);

#endif
