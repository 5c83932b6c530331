/*
 * `ember run`: starts and supervises ember-collector (root), the analyzers and
 * ember-exporter (the unprivileged user), restarts a dead analyzer or
 * exporter (counted), and stops them in order on SIGTERM/SIGINT so that
 * everything collected is flushed: analyzers first (they finish their tasks),
 * then the exporter (it writes what they sent), then the collector.
 */
#ifndef EMBER_SUPERVISOR_H
#define EMBER_SUPERVISOR_H

#include "common/config.h"

/* Runs until SIGTERM/SIGINT.  bin_dir holds the ember-* executables.  Logs. */
int supervisor__run(const struct ember_config *cfg, const char *bin_dir);

/* What a running agent published in <run_dir>/agent.info. */
struct agent_info {
	int pid;            /* supervisor pid */
	unsigned analyzers;
	char output_dir[1024];
	char run_dir[512];
};
/*
 * 0 if an agent is running with this run_dir: its supervisor holds the lock
 * on <run_dir>/agent.lock, which the kernel drops when it dies however it
 * dies (a pid alone proves nothing once reused).  -ENOENT when there is no
 * agent.info, -ESTALE when there is one but no agent holds the lock
 * (ret->pid then names the agent it was left by).  Without agent.lock (an
 * agent from before it), the pid decides.
 */
int supervisor__find_agent(const char *run_dir, struct agent_info *ret);
/* Creates the unprivileged system user if missing (in group gid when >= 0,
 * else in a group of its own name); returns its uid and primary gid. */
int supervisor__ensure_user(const char *name, long gid, unsigned *ret_uid, unsigned *ret_gid);

#endif
