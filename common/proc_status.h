/*
 * Reading the kernel's per-process text files the privileged collector
 * needs: /proc/<pid>/status lines of numbers ("Uid:", "Gid:", "NSpid:"),
 * /proc/<pid>/stat's flags word, /proc/<pid>/cgroup's unified path.  The
 * kernel formats them, but a process names itself (comm) and its cgroups
 * are named by whoever created them: every parser takes a length, stops at
 * it, and refuses what does not have the exact form.  Library module: no
 * logging, no state.
 */
#ifndef EMBER_COMMON_PROC_STATUS_H
#define EMBER_COMMON_PROC_STATUS_H

#include <stddef.h>
#include <stdint.h>

/* PF_KTHREAD in include/linux/sched.h: a kernel thread. */
#define PROC_PF_KTHREAD 0x00200000u

/*
 * The numbers of the line "<key>\t<n>\t<n>..." of status text (key with its
 * colon, e.g. "Uid:"): up to max of them into out.  Returns how many (>= 1),
 * or -ENOENT (no such line, or not only decimal numbers below 2^32 on it).
 */
int proc_status__ids(const char *text, size_t len, const char *key, uint32_t *out, unsigned max);
/* The flags field (the 9th) of /proc/<pid>/stat text, read after the last ')'.  0 or -EBADMSG. */
int proc_status__stat_flags(const char *text, size_t len, uint64_t *ret);
/* The start time (the 22nd field, clock ticks after boot) of /proc/<pid>/stat text.  0 or -EBADMSG. */
int proc_status__stat_start(const char *text, size_t len, uint64_t *ret);
/* The hexadecimal mask of the status line "<key>\t<hex>" (e.g. "SigCgt:").  0 or -ENOENT. */
int proc_status__mask(const char *text, size_t len, const char *key, uint64_t *ret);
/*
 * The cgroup v2 path of /proc/<pid>/cgroup text (its "0::<path>" line) into
 * buf, NUL-terminated.  0, -ENOENT (no unified hierarchy line), -ENAMETOOLONG.
 */
int proc_status__cgroup2(const char *text, size_t len, char *buf, size_t buflen);
/*
 * Reads the whole file name under the directory fd dirfd (a /proc/<pid>
 * directory) into buf, at most len - 1 bytes, NUL-terminated.  Returns the
 * bytes read or -errno (-EFBIG when it does not fit).
 */
long proc_status__read_at(int dirfd, const char *name, char *buf, size_t len);

#endif
