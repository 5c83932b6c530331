/*
 * The continuous-profiling monitors' reads of /proc (monitors.h): a
 * process's stat line (CPU ticks, threads, start time), its command line,
 * the load average.  /proc is untrusted input (a process names itself):
 * every read is bounded, every parse refuses what does not have the exact
 * form.  proc_root is "/proc" or a test's directory.  No state, no logging.
 */
#ifndef EMBER_ANALYZER_CONTINUOUS_MON_PROC_H
#define EMBER_ANALYZER_CONTINUOUS_MON_PROC_H

#include <stddef.h>
#include <stdint.h>

struct mon_proc_stat {
	char comm[16];
	char state;                     /* 'R', 'S', ... 'Z' */
	uint64_t ticks;                 /* utime + stime, clock ticks */
	uint64_t threads, start_ticks;
};

/*
 * pid's /proc/<pid>/stat, read through fd when it is >= 0 (kept open on
 * that file by the caller: one pread), else opened and closed here.
 * 0, -errno, -ESRCH (empty), -EINVAL (not a stat line).
 */
int mon_proc__stat(const char *proc_root, uint32_t pid, int fd, struct mon_proc_stat *ret);
/* pid's command line with NULs as spaces into out (outlen > 0); "" for kernel threads and zombies.  0 or -errno. */
int mon_proc__cmdline(const char *proc_root, uint32_t pid, char *out, size_t outlen);
/* The 1-minute load average.  0, -errno, -EIO, -EINVAL. */
int mon_proc__loadavg(const char *proc_root, double *ret);

#endif
