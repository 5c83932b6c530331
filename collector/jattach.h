/*
 * Loading ember's JVMTI agent (jvm/ember_jvmti.c) into the JVMs stack tasks
 * follow, through HotSpot's dynamic attach mechanism, when the agent is
 * configured (profiling.java.agent; the collector's --java-agent PATH).
 *
 * Who does what:
 *  - The collector keeps no capability to act as another user.  Before it
 *    drops its privileges it forks the attacher, a process that keeps only
 *    CAP_SETUID, CAP_SETGID and CAP_SYS_PTRACE (common/privs.h) and reads
 *    fixed 16-byte requests from a socket pair.
 *  - For each request the attacher forks a worker that becomes the target's
 *    effective user and group (no supplementary groups, no capabilities,
 *    not dumpable) before it touches anything of the target's: whatever
 *    the worker does, the target's own user could do.  A root target's
 *    worker stays root with CAP_SYS_PTRACE alone, which reaches
 *    /proc/<pid>/root of a process with capabilities and writes nothing a
 *    root process could not.
 *  - The worker, as that user: checks the process still is the one asked
 *    for (its start time, through a pidfd that pins it); that it maps a
 *    libjvm.so, and no agent of ember's yet (a file of the agent's name:
 *    then it is done); uses the agent's path when the target's root has the
 *    very same file there (device and inode), else copies the agent, as
 *    the target's user, into a new directory of the target's own /tmp (not
 *    through a link), as gala-gopher does for containers, and removes the
 *    copy after the load (the mapping keeps it); finds the attach socket
 *    /proc/<pid>/root/tmp/.java_pid<nspid>, or triggers the JVM to open it
 *    (/tmp/.attach_pid<nspid>, created O_EXCL|O_NOFOLLOW, and SIGQUIT, sent
 *    only when the process catches SIGQUIT: a process that does not would
 *    die of it); sends "load <agent>" and reads the bounded answer.  An
 *    alarm ends a worker that waits too long (a JVM that never answers).
 *
 * The answer's bytes come from the target: they are read into a fixed
 * buffer and only compared with the two forms HotSpot writes.
 *
 * Each process (pid and start time) is asked once: a JVM keeps the agent
 * until it exits; a second collector's worker finds it in the JVM's maps,
 * and the agent itself answers a second load at once.  The
 * table of processes asked is bounded; the entries of processes that exited
 * go first when it is full.
 *
 * Not thread-safe.  Library module: no logging; jattach__poll() hands each
 * result to a callback.
 */
#ifndef EMBER_COLLECTOR_JATTACH_H
#define EMBER_COLLECTOR_JATTACH_H

#include <stdint.h>

#define JATTACH_MAX_PROCS 1024
#define JATTACH_TIMEOUT_S 10

enum jattach_stat {
	JATTACH_REQUESTED,   /* JVMs asked to load the agent */
	JATTACH_LOADED,      /* ... that loaded it (or had it) */
	JATTACH_FAILED,      /* ... that did not: the reason is in the collector's log */
	JATTACH_DROPPED,     /* requests not sent: the table or the attacher's queue was full */
	JATTACH_STAT_MAX
};

struct jattach;

/*
 * Forks the attacher (call it while the collector still has all its
 * privileges, before loading anything).  agent_path is absolute and names
 * a regular file owned by root and not writable by others.  NULL + errno
 * (EINVAL: a bad agent path).
 */
struct jattach *jattach__new(const char *agent_path);
/* The socket the results arrive on (readable: call jattach__poll()). */
int jattach__fd(const struct jattach *j);
/*
 * Asks for the agent in pid: 0 (asked now), -EALREADY (asked before: this
 * process has it, or it failed and is not asked again), -ESRCH, -ENOSPC /
 * -EAGAIN (counted in dropped).
 */
int jattach__request(struct jattach *j, uint32_t pid);
/* Reads the results that arrived: cb(ctx, pid, 0 or -errno) for each. */
typedef void (*jattach_result_fn)(void *ctx, uint32_t pid, int err);
void jattach__poll(struct jattach *j, jattach_result_fn cb, void *ctx);
void jattach__stats(const struct jattach *j, uint64_t ret[JATTACH_STAT_MAX]);
/* What a worker's -errno means, for the log. */
const char *jattach__strerror(int err);
/* Accepts NULL; ends the attacher.  Returns NULL. */
struct jattach *jattach__free(struct jattach *j);

/*
 * One attach, as the worker does it (after it became the target's user):
 * 0 or -errno.  agent_dev/agent_ino: the agent file as the collector sees it.
 * For tests.
 */
int jattach__attach(uint32_t pid, uint64_t start_time, const char *agent_path, uint64_t agent_dev,
		    uint64_t agent_ino);

#endif
