/*
 * Where to put uprobes on a TLS library's read/write functions: the file
 * offsets in one x86-64 ELF file at which the privileged collector attaches
 * uprobe.multi / uretprobe.multi links to capture TLS plaintext.
 *
 *   OpenSSL, BoringSSL (libssl.so.3, or linked into an executable such as
 *   node): SSL_write, SSL_read, SSL_write_ex, SSL_read_ex from .symtab or
 *   .dynsym (defined STT_FUNC, size > 0).  Per function, an ENTRY and a
 *   RETURN point at the same offset: the function's start, or start + 4 past
 *   an endbr64 (a uretprobe must sit where [rsp] is still the return
 *   address).  Functions missing are fine (old libraries lack the _ex ones).
 *   SSL_read and SSL_write compiled as OpenSSL 3's thin wrappers (an exact
 *   list of instructions, then `call internal; test %eax,%eax; jcc`) get a
 *   CALL and an AFTER_CALL point instead: both instructions are emulated by
 *   the kernel, where a function's first one (`sub $0x18,%rsp` in Debian
 *   12) is single-stepped, and a uretprobe needs its breakpoint there too;
 *   measured here, 24 us per hit stepped, 6-7 us emulated.
 *
 *   Go (a .go.buildinfo, .gopclntab or .note.go.buildid section):
 *   crypto/tls.(*Conn).Write and .Read from .symtab, or from .gopclntab when
 *   the binary is stripped.  Per function, an ENTRY point at its start and a
 *   RET_INSN point at every RET found by a linear sweep of its bytes (Go's
 *   runtime walks and moves goroutine stacks: a return address a uretprobe
 *   replaced with its trampoline's makes it throw).  A function with one
 *   instruction this decoder does not know gets no points at all: a uprobe
 *   placed inside an instruction corrupts the process, so strictness beats
 *   coverage.
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

/* The numbers are ABI: bpf/net_abi.h uses the same ones. */
enum tls_fn { TLS_FN_SSL_WRITE = 1, TLS_FN_SSL_READ = 2, TLS_FN_SSL_WRITE_EX = 3, TLS_FN_SSL_READ_EX = 4,
	      TLS_FN_GO_WRITE = 5, TLS_FN_GO_READ = 6 };
enum tls_probe_kind { TLS_PROBE_ENTRY = 0,    /* uprobe: arguments */
		      TLS_PROBE_RETURN = 1,   /* uretprobe at the function's entry (OpenSSL only) */
		      TLS_PROBE_RET_INSN = 2, /* uprobe on one RET instruction of the function (Go: never uretprobes) */
		      TLS_PROBE_CALL = 3,     /* OpenSSL wrapper: uprobe on its call of the internal function */
		      TLS_PROBE_AFTER_CALL = 4 /* ... and on the conditional jump after it (bpf/net_abi.h) */ };
/* How the kernel handles the probed instruction (arch/x86/kernel/uprobes.c). */
enum tls_insn_class { TLS_INSN_NOP = 0, TLS_INSN_EMULATED = 1, TLS_INSN_STEPPED = 2 };
enum tls_lib_kind { TLS_LIB_NONE = 0, TLS_LIB_OPENSSL = 1, TLS_LIB_GO = 2 };

#define TLS_MAX_POINTS 64

struct tls_point {
	uint64_t off;      /* file offset */
	uint8_t fn;        /* enum tls_fn */
	uint8_t kind;      /* enum tls_probe_kind */
	uint8_t insn;      /* enum tls_insn_class of the instruction at off */
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
 * function found was refused (an instruction not decodable, or one the
 * kernel would not probe).  A Go binary whose crypto/tls functions are not
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

/*
 * x86-64 (64-bit mode) instruction length at p, reading at most n bytes:
 * 1..15, or -1 if the bytes are not one whole instruction this decoder knows
 * (truncated, invalid in 64-bit mode, an undefined opcode, a REX prefix not
 * right before the opcode, a 66-prefixed near branch whose length differs
 * between Intel and AMD, APX encodings).  Legacy, 0f, 0f 38, 0f 3a, 3DNow!,
 * x87, VEX, XOP and EVEX encodings.
 */
int tls_probe__insn_len(const uint8_t *p, size_t n);

/*
 * How the kernel's x86 uprobe code handles the instruction at p (at most n
 * bytes): TLS_INSN_NOP (emulated as a jump to the next instruction: 90
 * without REX.B or f3, 0f 1f /0), TLS_INSN_EMULATED (call rel32, jmp
 * rel8/rel32, jcc, push of a register), TLS_INSN_STEPPED (copied and
 * single-stepped out of line).  -1 if tls_probe__insn_len() cannot decode it
 * or the kernel would refuse to probe it: a prefix 26/2e/36/3e/f0, a first
 * opcode byte off its table of good one-byte opcodes (int3, int n, in/out,
 * hlt, cli/sti, ...; every 0f xx passes), a 66-prefixed branch, a mov to ss.
 * Also -1 where a probe would break the program on some kernels: any XOP
 * instruction (the kernel's decoder may not know them), a VEX/EVEX one whose
 * opcode byte the kernel would take for a jcc, call, jmp or nop (its
 * emulation looks at that byte alone), and 41 90 (xchg %eax,%r8d, which
 * older kernels emulate as a nop).
 */
int tls_probe__insn_class(const uint8_t *p, size_t n);

#endif
