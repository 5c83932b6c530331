/*
 * TLS probes on the collector's side: the uprobe.multi links of the TLS
 * program (bpf/net.bpf.c net_tls) on library files, one set per file
 * (device, inode) and target process, each owned by the network tasks that
 * asked for it and removed with the last of them.  Per process, not per
 * file: a probe's breakpoint traps in every process whose memory has it, at
 * 6 to 25 us a hit on this kernel, and a library such as libssl is mapped by
 * many processes no task follows (measured with a host-wide link: 12 us more
 * per SSL_read of a process nobody profiles, and wrk driving a profiled
 * nginx slowed down with it).  The analyzer examines each file once however
 * many processes map it.
 *
 * The points come from the analyzer (CTL_REQ_TLS_ATTACH), which parsed the
 * ELF file; the collector parses nothing.  It checks what it can without
 * parsing: the file is a regular file the broker opened from the target's
 * own executable mapping, every offset lies inside it, every cookie names a
 * known function and a side that function has (returns for OpenSSL's int
 * functions, RET instructions for Go's), and the counts are bounded.  The
 * kernel checks the rest (an offset must decode as an instruction it can
 * probe).  A wrong offset inside a valid file can only misplace a probe in a
 * process the analyzer's task already profiles.
 */
#ifndef EMBER_COLLECTOR_TLS_LINKS_H
#define EMBER_COLLECTOR_TLS_LINKS_H

#include <stdint.h>

#include "collector/bpf_net.h"
#include "common/ctl_proto.h"

struct tls_links;

struct tls_links_stats {
	uint64_t files;     /* (file, process) pairs probed now */
	uint64_t points;    /* probe points attached now */
	uint64_t refused;   /* requests refused (points, room, attach errors) */
};

/* Up to max probed (file, process) pairs at once.  NULL + errno. */
struct tls_links *tls_links__new(struct bpf_net *net, unsigned max);
/*
 * Probes the file open at fd (not taken) at pts in process pid for owner (a
 * task id); a file already probed there gains owner.  0, or -EINVAL (a point
 * or the file does not check), -ENOSPC (table or owners full), -EOPNOTSUPP
 * (no uprobe.multi), or the kernel's error from the attach.
 */
int tls_links__add(struct tls_links *l, uint64_t owner, int fd, uint32_t pid, const struct ctl_tls_point *pts,
		   uint32_t n);
/* owner's interest ends everywhere: files without owners lose their probes. */
void tls_links__drop_owner(struct tls_links *l, uint64_t owner);
void tls_links__stats(const struct tls_links *l, struct tls_links_stats *ret);
/* Accepts NULL (probes removed).  Returns NULL. */
struct tls_links *tls_links__free(struct tls_links *l);

#endif
