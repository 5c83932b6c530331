/*
 * The fd broker: opens, on the analyzer's behalf, only files the analyzer
 * needs for symbolization and unwinding.  It never takes a path from the
 * analyzer: every path is the kernel's (a mapping's) or built from fixed
 * patterns (common/debugpath.h).
 *
 * Threat model.  The analyzer that asks is less privileged and may be
 * compromised; the target process, and any local user, may have planted
 * symlinks, hard links, FIFOs and device nodes wherever they can write:
 * /tmp, the target's own directories, a container's whole root.  The
 * collector runs as uid 0 (without the file-permission capabilities), so an
 * open that followed such a link could hand out any root-owned file.  So:
 *  - every open is relative to the target's /proc/<pid> directory, opened
 *    once per request (a reused pid cannot swap the process underneath);
 *  - paths resolve inside the target's root (openat2 RESOLVE_IN_ROOT) and
 *    follow no symlink at all (RESOLVE_NO_SYMLINKS): a symlink anywhere on
 *    the path is refused, a trailing one included;
 *  - the file is first opened O_PATH (which opens no device and blocks on no
 *    FIFO), checked, and only then reopened for reading through
 *    /proc/self/fd: it must be a regular file; a file found by a pattern
 *    (perf map, debug files) must be owned by one of the target's uids, or
 *    by root and world-readable (a root-only file is never served for a
 *    non-root target, whatever link leads to it); a perf map must have one
 *    link; a mapping's file found by path must be the mapping's device and
 *    inode before it is reopened;
 *  - every answer is counted, refusals by reason (struct broker_stats).
 * Kernels without openat2 (< 5.6) get -ENOSYS for the pattern paths.
 */
#ifndef EMBER_BROKER_H
#define EMBER_BROKER_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

struct broker;

/* The error for a file that is not a regular one (a FIFO, device, socket, directory). */
#define BROKER_ENOTREG EMEDIUMTYPE

struct broker_stats {
	uint64_t opens;        /* fds handed out */
	uint64_t missing;      /* no such file, mapping or process: not a refusal */
	uint64_t symlink;      /* a symlink on the path */
	uint64_t not_regular;  /* a FIFO, device, socket or directory */
	uint64_t owner;        /* owned by another user, root-only, or a perf map with several links */
	uint64_t stale;        /* the file at the mapping's path is not the mapped one */
	uint64_t other;        /* anything else (the kernel's EACCES, a bad request ...) */
};

/* NULL + errno. */
struct broker *broker__new(void);
/* Accepts NULL.  Returns NULL. */
struct broker *broker__free(struct broker *b);
void broker__stats(const struct broker *b, struct broker_stats *ret);

/* All return an fd (O_RDONLY, O_CLOEXEC) or -errno, and count the answer. */

/* /proc/<pid>/maps. */
int broker__open_maps(struct broker *b, uint32_t pid);
/*
 * The file pid maps at exactly [start,end) with execute permission: through
 * /proc/<pid>/map_files (the kernel resolves the mapping), or, when the
 * target's map_files are closed to the collector (another user's process:
 * mode 0500, and no CAP_DAC_READ_SEARCH here), the path of the kernel's maps
 * line inside the target's root, opened O_PATH and accepted only if it is
 * the mapping's device and inode (-ESTALE otherwise).  -ENOENT if there is
 * no such mapping, -EACCES if it is not executable.
 */
int broker__open_file(struct broker *b, uint32_t pid, uint64_t start, uint64_t end);
int broker__open_kallsyms(struct broker *b);
/*
 * Symbolizer depth, under the target's root:
 *  perf map   /tmp/perf-<nspid>.map, nspid from NSpid in /proc/<pid>/status;
 *  build id   /usr/lib/debug/.build-id/<xx>/<rest>.debug (2..64 bytes);
 *  debuglink  name (debugpath__valid_link_name()) beside the binary of the
 *             executable mapping [start, end), in its .debug/, or under
 *             /usr/lib/debug<dir>/.  The binary's directory is the one whose
 *             entry is the mapped file (device and inode checked), so it
 *             works for targets of any user.
 */
int broker__open_perf_map(struct broker *b, uint32_t pid);
int broker__open_debug_build_id(struct broker *b, uint32_t pid, const uint8_t *build_id, size_t len);
int broker__open_debuglink(struct broker *b, uint32_t pid, uint64_t start, uint64_t end, const char *name);

#endif
