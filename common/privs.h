/* Capability handling for the collector (the only privileged process). */
#ifndef EMBER_COMMON_PRIVS_H
#define EMBER_COMMON_PRIVS_H

/*
 * Capabilities the collector keeps after start-up, and why:
 *  CAP_BPF               create maps / load programs for tasks attached later
 *  CAP_PERFMON           perf_event_open on every CPU (cpu-clock, page faults),
 *                        attach tracing programs, read kernel stacks
 *  CAP_SYS_PTRACE        fd broker: /proc/<pid>/maps and /proc/<pid>/map_files of
 *                        processes of any user (ptrace read access check)
 *  CAP_CHECKPOINT_RESTORE fd broker: opening /proc/<pid>/map_files/<range>
 *                        (the kernel opens exactly the mapped file; no path from
 *                        the analyzer is ever used)
 *  CAP_SYSLOG            fd broker: /proc/kallsyms shows real addresses only to
 *                        an opener with CAP_SYSLOG when kernel.perf_event_paranoid
 *                        > 1 (the kernel checks the opener's credentials)
 * Everything else, including CAP_SYS_ADMIN, is dropped from the effective,
 * permitted and bounding sets, and no_new_privs is set.
 */
#define PRIVS_KEPT_DESC "cap_bpf,cap_perfmon,cap_sys_ptrace,cap_checkpoint_restore,cap_syslog"

int privs__drop_collector(void);
/*
 * The Java agent's attacher (collector/jattach.h), forked by the collector
 * before it drops, keeps only:
 *  CAP_SETUID, CAP_SETGID  its workers become each target's user
 *  CAP_SYS_PTRACE          ... and keep this one, alone, for a target that
 *                          runs as root: /proc/<pid>/root of a process with
 *                          capabilities is reachable only with it (a non-root
 *                          target's worker has none)
 * Bounding set, no_new_privs and not dumpable as for the collector.
 */
int privs__drop_attacher(void);
/* A worker for a root target: uid 0, gid, no supplementary groups, CAP_SYS_PTRACE alone. */
int privs__become_root_ptracer(unsigned gid);
/* Permanently become uid/gid with no capabilities and no_new_privs. */
int privs__become_user(unsigned uid, unsigned gid);

#endif
