/*
 * Which processes a task may target: decided by the privileged collector at
 * ATTACH (and again for a followed child before the fd broker or a TLS probe
 * serves it), from what root configured on its command line, so a
 * compromised analyzer cannot widen it.
 *
 * Never a target: the collector itself and the supervisor that started it,
 * any process running as one of ember's unprivileged users (the analyzers,
 * the exporter: a task on them would hand one ember process another's
 * memory and sockets), and kernel threads (no user memory to profile, and
 * nothing a user asked for).  Then, when root listed any, only processes of
 * the allowed users (real and effective uid both) and in the allowed
 * cgroups (cgroup v2 path equal to one, or below it).
 */
#ifndef EMBER_COLLECTOR_TARGET_POLICY_H
#define EMBER_COLLECTOR_TARGET_POLICY_H

#include <stdint.h>
#include <sys/types.h>

struct target_policy;

struct target_policy_stats {
	uint64_t refused_own;       /* ember's own processes */
	uint64_t refused_kthread;   /* kernel threads */
	uint64_t refused_user;      /* a user ember.targets.users does not list */
	uint64_t refused_cgroup;    /* a cgroup ember.targets.cgroups does not cover */
};

/* self and parent: the collector's pid and its supervisor's.  NULL + errno. */
struct target_policy *target_policy__new(pid_t self, pid_t parent);
/* ember's unprivileged users: their processes are never targets. */
void target_policy__set_ember_uids(struct target_policy *p, uid_t analyzer_uid, uid_t exporter_uid);
/* Accepts NULL.  Returns NULL. */
struct target_policy *target_policy__free(struct target_policy *p);
/* Adds to the allowed users / cgroups (an empty list allows all).  0, -ENOMEM or -EINVAL. */
int target_policy__allow_uid(struct target_policy *p, uint32_t uid);
int target_policy__allow_cgroup(struct target_policy *p, const char *path);
/*
 * 0 if pid may be a target; -EPERM if the policy refuses it (counted by
 * reason), -ESRCH if there is no such process, another -errno if /proc
 * could not be read (refused, not counted as policy).
 */
int target_policy__check(struct target_policy *p, uint32_t pid);
void target_policy__stats(const struct target_policy *p, struct target_policy_stats *ret);
/* A one-line description of the policy for the log ("all users but ember's, every cgroup"). */
void target_policy__describe(const struct target_policy *p, char *buf, size_t len);

#endif
