/*
 * TLS probes on the collector's side: the uprobe.multi links of the TLS
 * program (bpf/net_tls.bpf.h net_tls) on library files, one set per file
 * (device, inode) and target process, each owned by the network tasks that
 * asked for it and removed with the last of them.
 *
 * A library's links are per process: a probe's breakpoint traps in every
 * process whose memory has it, at 6 to 25 us a hit on this kernel, and a
 * library such as libssl is mapped by many processes no task follows
 * (measured with a host-wide link: 12 us more per SSL_read of a process
 * nobody profiles, and wrk driving a profiled nginx slowed down with it).
 * A target's own program (the file that is its /proc/PID/exe: a Go binary,
 * node with its OpenSSL inside) is probed in every process running it
 * (TLS_LINK_PROGRAM): a per-process link covers only the memory of the
 * process it names, so a followed child that forks or execs the program
 * would run unprobed until its own link is made, milliseconds in which a
 * client can finish its requests; with the program's link it is probed from
 * its first instruction, the BPF program keeping only targets' calls.  Only
 * processes of that same program pay the trap.  The analyzer examines each
 * file once however many processes map it, and the collector checks a
 * file's points once (again if the file changes: size, mtime, ctime).
 *
 * The points come from the analyzer (CTL_REQ_TLS_ATTACH), which parsed the
 * ELF file to find them; the collector does not take its word for any of
 * them.  The file is a regular file the broker opened from the target's own
 * executable mapping (the fd, never a path), the counts are bounded, and
 * every point is checked against that file by collector/tls_verify before
 * anything is attached: inside an executable segment, inside the function
 * its cookie names (found by name in the file's own tables), at an
 * instruction start, and on the instruction its probe kind goes on, the rule
 * the analyzer places points by (common/tls_code).  One point refused and
 * the request is; each refusal is counted by its reason.  A file already
 * probed in that process only gains an owner: nothing new is attached.
 */
#ifndef EMBER_COLLECTOR_TLS_LINKS_H
#define EMBER_COLLECTOR_TLS_LINKS_H

#include <stdint.h>

#include "collector/bpf_net.h"
#include "collector/tls_verify.h"
#include "common/ctl_proto.h"

struct tls_links;

enum tls_link_scope {
	TLS_LINK_PROCESS,   /* a library: the named process only */
	TLS_LINK_PROGRAM,   /* the target's own executable: every process running it */
};

struct tls_links_stats {
	uint64_t files;     /* (file, process) pairs probed now, and files probed in every process */
	uint64_t programs;  /* ... of which the latter (TLS_LINK_PROGRAM) */
	uint64_t verify_skipped; /* requests whose points were checked in that file before */
	uint64_t merged;    /* process links replaced by their program's */
	uint64_t points;    /* probe points attached now */
	uint64_t gone;      /* requests whose process exited before its link was made (-ESRCH, not refused) */
	uint64_t refused;   /* requests refused: all reasons (the ones below, counts, room, attach errors) */
	/* ... of which by the first point tls_verify refused (enum tls_verify_why) */
	uint64_t refused_cookie;     /* a function or side the TLS program does not have */
	uint64_t refused_file;       /* not an x86-64 ELF file the verifier reads */
	uint64_t refused_segment;    /* not in an executable segment's file bytes (or past the end of the file) */
	uint64_t refused_function;   /* the cookie's function not found by name (or too large) */
	uint64_t refused_outside;    /* not inside that function */
	uint64_t refused_boundary;   /* not at an instruction start */
	uint64_t refused_insn;       /* not the instruction its probe kind goes on */
};

/* Up to max probed (file, process) pairs at once.  NULL + errno. */
struct tls_links *tls_links__new(struct bpf_net *net, unsigned max);
/*
 * Probes the file open at fd (not taken) at pts in process pid (scope
 * TLS_LINK_PROCESS) or in every process running it (TLS_LINK_PROGRAM: pid
 * runs it) for owner (a task id); a file already probed there gains owner.  0, or -EINVAL (a point
 * or the file does not check: *ret_verdict, if not NULL, says which point
 * and why), -ENOSPC (table or owners full), -ENOMEM, -EOPNOTSUPP (no
 * uprobe.multi), or the kernel's error from the attach.
 */
int tls_links__add(struct tls_links *l, uint64_t owner, int fd, uint32_t pid, enum tls_link_scope scope,
		   const struct ctl_tls_point *pts, uint32_t n, struct tls_verify_verdict *ret_verdict);
/* owner's interest ends everywhere: files without owners lose their probes. */
void tls_links__drop_owner(struct tls_links *l, uint64_t owner);
void tls_links__stats(const struct tls_links *l, struct tls_links_stats *ret);
/* Accepts NULL (probes removed).  Returns NULL. */
struct tls_links *tls_links__free(struct tls_links *l);

#endif
