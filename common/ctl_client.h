/* The analyzer's side of the collector's control protocol (common/ctl_proto.h). */
#ifndef EMBER_COMMON_CTL_CLIENT_H
#define EMBER_COMMON_CTL_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include "common/ctl_proto.h"

struct ctl_client;

/*
 * Connects to the collector's socket and says HELLO for shard.  On success
 * the ring's three fds are stored in ret_fds (caller owns them).  NULL+errno.
 */
struct ctl_client *ctl_client__connect(const char *sock_path, uint32_t shard, int ret_fds[3],
						   uint32_t *ret_nshards);
/* flags: CTL_ATTACH_F_*. */
int ctl_client__attach(struct ctl_client *cc, uint64_t task_id, uint32_t kind, const uint32_t *pids,
			     uint32_t npids, uint64_t period_ns, uint64_t min_block_ns, uint32_t flags,
			     uint32_t probes, struct ctl_attach_ans *ret);
int ctl_client__detach(struct ctl_client *cc, uint64_t task_id);
/* A task attached with CTL_ATTACH_F_HOLD starts sampling. */
int ctl_client__start(struct ctl_client *cc, uint64_t task_id);
/* Return an fd or -errno. */
int ctl_client__open_maps(struct ctl_client *cc, uint32_t pid);
int ctl_client__open_file(struct ctl_client *cc, uint32_t pid, uint64_t start, uint64_t end);
int ctl_client__open_kallsyms(struct ctl_client *cc);
int ctl_client__open_perf_map(struct ctl_client *cc, uint32_t pid);
/* len 2..CTL_MAX_BUILD_ID; -EINVAL otherwise. */
int ctl_client__open_debug_build_id(struct ctl_client *cc, uint32_t pid, const uint8_t *build_id,
					  size_t len);
/* name: a plain file name shorter than CTL_MAX_LINK_NAME; -EINVAL otherwise. */
int ctl_client__open_debuglink(struct ctl_client *cc, uint32_t pid, uint64_t start, uint64_t end,
				     const char *name);
/* Unwind tables (common/ctl_proto.h): 0 or -errno (the collector's answer). */
int ctl_client__unwind_table(struct ctl_client *cc, uint64_t key, uint32_t nrows, struct ctl_unwind_table_ans *ret);
int ctl_client__unwind_rows(struct ctl_client *cc, uint32_t id, uint32_t first, const struct unwind_row *rows,
			    uint32_t n);
int ctl_client__unwind_proc(struct ctl_client *cc, const struct ctl_unwind_proc *p);
/* CTL_REQ_PY_PROC: 0 or -errno (the collector's refusal). */
int ctl_client__py_proc(struct ctl_client *cc, const struct ctl_py_proc *r);
/* CTL_REQ_JAVA_ATTACH: 0 (asked), -EALREADY, or -errno (the collector's refusal). */
int ctl_client__java_attach(struct ctl_client *cc, uint32_t pid);
/* TLS probes for a network task (common/ctl_proto.h): 0 or -errno (the collector's answer). */
int ctl_client__tls_attach(struct ctl_client *cc, const struct ctl_tls_attach *r);
/* n (1..CTL_NET_CAPS_MAX) connection caps; 0 (*written: those the collector wrote) or -errno. */
int ctl_client__net_caps(struct ctl_client *cc, const struct ctl_net_cap *caps, uint32_t n, uint32_t *written);
int ctl_client__stats(struct ctl_client *cc, struct ctl_stats_ans *ret);
/* Connection lost (the collector restarted or closed us). */
int ctl_client__broken(const struct ctl_client *cc);
/* Accepts NULL.  Returns NULL. */
struct ctl_client *ctl_client__free(struct ctl_client *cc);

/* Stats only, for `ember stats` (root). */
int ctl_client__query_stats(const char *sock_path, struct ctl_stats_ans *ret);

#endif
