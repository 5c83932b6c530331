/*
 * The collector's side of the control protocol (common/ctl_proto.h): who
 * may connect, what each may ask and when (OpenSSH's monitor keeps such a
 * table), and the handlers.  Every request comes from a less-privileged
 * process: its frame is decoded by ctl__decode() only, every field is
 * checked here or by the module it reaches, and a violation ends the
 * connection and is counted.  Fuzzed as a whole (tests/fuzz/fuzz_ctl_server.c).
 */
#ifndef EMBER_COLLECTOR_CTL_SERVER_H
#define EMBER_COLLECTOR_CTL_SERVER_H

#include <sys/types.h>

#include "collector/collector.h"

struct ctl_conn;

/*
 * A connection on fd from a peer with uid and pid (SO_PEERCRED): the
 * analyzer's uid gets the protocol (HELLO first), root gets STATS only,
 * anyone else nothing (NULL, counted, fd closed).  Takes fd.
 */
struct ctl_conn *ctl_server__conn(struct collector *c, int fd, uid_t uid, pid_t pid);
/* ctl_server__conn with the credentials of the peer of fd. */
struct ctl_conn *ctl_server__accept(struct collector *c, int fd);
int ctl_server__fd(const struct ctl_conn *cc);
/* Reads and serves one request: 0 to keep the connection, < 0 to close it. */
int ctl_server__handle(struct collector *c, struct ctl_conn *cc);
/* Serves one received frame buf[0, n) that came with nfds descriptors (already closed). */
int ctl_server__handle_frame(struct collector *c, struct ctl_conn *cc, const void *buf, size_t n, unsigned nfds);
/* Closes it; the shard it held is orphaned from now. */
void ctl_server__close(struct collector *c, struct ctl_conn *cc);
/* Refreshes c->stats from every module (and the hooks). */
void ctl_server__collect_stats(struct collector *c);

#endif
