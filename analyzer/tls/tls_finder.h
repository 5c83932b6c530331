/*
 * The analyzer's half of TLS capture: for each process a network task
 * follows, its executable file mappings (through the collector's fd broker,
 * never a path) -> the TLS functions each file holds (analyzer/tls/
 * tls_probe.h: OpenSSL or BoringSSL as libssl or linked in, Go's
 * crypto/tls) -> a TLS_ATTACH request per file and process, which the
 * collector checks and attaches for that process (collector/tls_links.h).
 *
 * The finder is a handler of the mapping manager (analyzer/mappings.h),
 * which reads a followed process's maps, opens its files and examines each
 * once, keyed by device and inode, whatever the number of processes mapping
 * them; a task asks for a file in a process once.  The manager looks when a
 * task starts, when a followed process exec's or maps a file executable
 * (NET_OP_MMAP_EXEC), and (for the task's own targets) every few seconds for
 * what those missed.  A followed child of a target (fork) is looked at from
 * its fork event on: its memory is a copy of its parent's, but the kernel's
 * per-process probes are not.
 */
#ifndef EMBER_ANALYZER_TLS_TLS_FINDER_H
#define EMBER_ANALYZER_TLS_TLS_FINDER_H

#include <stdint.h>

#include "analyzer/mappings.h"
#include "common/counters.h"
#include "common/ctl_client.h"

struct tls_finder_opts {
	struct ctl_client *cc;   /* borrowed */
};

/* Its counters (common/counters.h), by enum tls_finder_stat. */
enum tls_finder_stat {
	TLSF_FILES_EXAMINED,       /* ELF files looked into */
	TLSF_FILES_OPENSSL,        /* ... with OpenSSL/BoringSSL functions */
	TLSF_FILES_GO,             /* ... Go programs with crypto/tls */
	TLSF_GO_UNSUPPORTED,       /* Go older than 1.17 (stack ABI): not probed */
	TLSF_ATTACHED,             /* TLS_ATTACH requests the collector took */
	TLSF_REFUSED,              /* ... it refused */
	TLSF_ERRORS,               /* files unreadable or malformed */
	TLSF_UNSUPPORTED,          /* processes not probed: the collector cannot attach TLS probes on this kernel */
	TLSF_MAX
};
extern const struct counter_def tls_finder_counters[TLSF_MAX];

struct tls_finder;

/* NULL + errno. */
struct tls_finder *tls_finder__new(const struct tls_finder_opts *o);
/*
 * The manager's handler (ctx = f; no report): follow a network task's
 * processes with it, tagged with the task's id (the collector's).  A look's
 * result is 0 or -errno; -EOPNOTSUPP once the collector said it cannot
 * attach TLS probes here (no uprobe.multi): from then on nothing is asked
 * (nor read), and each look is counted in unsupported.  Unfollowing forgets
 * what the task asked for in the process (the collector drops its probes
 * itself).
 */
void tls_finder__handler(struct tls_finder *f, struct mappings_handler *ret);
/*
 * When pid's TLS probes were first in place (CLOCK_MONOTONIC ns, the clock of
 * the network events), TLS_FINDER_NEVER if it ended before it was looked at,
 * 0 if none was (no TLS library, refused, not looked at yet).  A data call on
 * a TLS socket before then, outside a probed call, is ciphertext whose
 * plaintext the probes never saw.
 */
#define TLS_FINDER_NEVER UINT64_MAX
uint64_t tls_finder__ready_ns(const struct tls_finder *f, uint32_t pid);
void tls_finder__stats(const struct tls_finder *f, uint64_t ret[TLSF_MAX]);
/* Accepts NULL.  Returns NULL. */
struct tls_finder *tls_finder__free(struct tls_finder *f);

#endif
