/*
 * Where to put uprobes on a TLS library's read/write functions: the file
 * offsets in one x86-64 ELF file at which the privileged collector attaches
 * uprobe.multi / uretprobe.multi links to capture TLS plaintext.
 *
 *   OpenSSL, BoringSSL (libssl.so.3, or linked into an executable such as
 *   node): SSL_write, SSL_read, SSL_write_ex, SSL_read_ex from .symtab or
 *   .dynsym (defined STT_FUNC, size > 0).  Functions missing are fine (old
 *   libraries lack the _ex ones).
 *
 *   Go (a .go.buildinfo, .gopclntab or .note.go.buildid section):
 *   crypto/tls.(*Conn).Write and .Read from .symtab, or from .gopclntab when
 *   the binary is stripped.
 *
 * Which points a function found gets is common/tls_code's rule (ENTRY and
 * RETURN, CALL and AFTER_CALL, or ENTRY and RET_INSN), the same one the
 * collector checks every point against before it attaches
 * (collector/tls_verify): a point this module emits and the collector
 * refuses is a bug on one side.
 *
 * Threat model: the file is attacker-controlled (any binary a profiled
 * process maps).  Every header, segment, section, symbol, string, varint and
 * pointer of .go.buildinfo is checked against the file before use; a point
 * is emitted only inside an executable PT_LOAD segment's file bytes, with
 * the whole function inside that segment.  The analyzer gets the file as an
 * fd from the collector, never as a path.  Library code: no logging, no
 * global state; thread-safe (distinct calls share nothing).
 */
#ifndef EMBER_ANALYZER_TLS_TLS_PROBE_H
#define EMBER_ANALYZER_TLS_TLS_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "common/x86_insn.h"

/* The numbers are ABI: bpf/net_abi.h uses the same ones. */
enum tls_fn { TLS_FN_SSL_WRITE = 1, TLS_FN_SSL_READ = 2, TLS_FN_SSL_WRITE_EX = 3, TLS_FN_SSL_READ_EX = 4,
	      TLS_FN_GO_WRITE = 5, TLS_FN_GO_READ = 6 };
enum tls_probe_kind { TLS_PROBE_ENTRY = 0,    /* uprobe: arguments */
		      TLS_PROBE_RETURN = 1,   /* uretprobe at the function's entry (OpenSSL only) */
		      TLS_PROBE_RET_INSN = 2, /* uprobe on one RET instruction of the function (Go: never uretprobes) */
		      TLS_PROBE_CALL = 3,     /* OpenSSL wrapper: uprobe on its call of the internal function */
		      TLS_PROBE_AFTER_CALL = 4 /* ... and on the conditional jump after it (bpf/net_abi.h) */ };
enum tls_lib_kind { TLS_LIB_NONE = 0, TLS_LIB_OPENSSL = 1, TLS_LIB_GO = 2 };

#define TLS_MAX_POINTS 64

struct tls_point {
	uint64_t off;      /* file offset */
	uint8_t fn;        /* enum tls_fn */
	uint8_t kind;      /* enum tls_probe_kind */
	uint8_t insn;      /* enum x86_insn_class (common/x86_insn.h) of the instruction at off */
	uint8_t pad[5];
};

struct tls_probe_set {
	int lib;                 /* enum tls_lib_kind */
	unsigned go_version;     /* e.g. 119 for go1.19; 0 if not Go or unknown */
	size_t n;
	struct tls_point pts[TLS_MAX_POINTS];
};

/*
 * The points of the ELF file open at fd (not taken; its file offset is not
 * used).  *ret is always filled: lib is the kind whose functions the file
 * defines inside an executable segment (TLS_LIB_NONE with n = 0 when it
 * defines none, which is not an error); n may be 0 with lib set when every
 * function found was refused (an instruction not decodable, one the kernel
 * would not probe, or a function larger than TLS_CODE_MAX_FN).  A Go binary whose crypto/tls functions are not
 * found (not linked, or stripped and older than Go 1.18's .gopclntab) is
 * looked at as an OpenSSL one.  Points are in function order (TLS_FN_*),
 * each function's ENTRY first, its RETs by address.  Returns 0 or -errno:
 * ENOEXEC (not an x86-64 ELF file), ENOTSUP (a Go binary older than go1.17,
 * which passes arguments on the stack: lib = TLS_LIB_GO, go_version set; or
 * with no version string and a .gopclntab of Go 1.2-1.17: go_version 0),
 * E2BIG (more than TLS_MAX_POINTS points), ENOMEM.
 */
int tls_probe__find_fd(int fd, struct tls_probe_set *ret);
/* The same over an ELF image in memory (tests; fuzzing). */
int tls_probe__find_mem(const void *image, size_t len, struct tls_probe_set *ret);

#endif
