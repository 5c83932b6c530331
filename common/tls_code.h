/*
 * Where the TLS program's probes (bpf/net_tls.bpf.h net_tls, bpf/net_abi.h
 * NET_TLS_*) go inside one function's code.  The one rule for both sides of
 * the privilege split: the analyzer (analyzer/tls/tls_probe) emits exactly
 * these points, and the collector (collector/tls_verify) attaches a point
 * only if it is one of them, recomputed from the file it opened itself.
 *
 *   OpenSSL, BoringSSL (NET_TLS_SSL_WRITE .. NET_TLS_SSL_READ_EX): an ENTRY
 *   and a RETURN point on the function's entry instruction (its first, or
 *   the one after a leading endbr64: a uretprobe must sit where [rsp] is
 *   still the return address).  SSL_read and SSL_write compiled as OpenSSL
 *   3's thin wrappers (an exact list of instructions, then `call internal;
 *   test %eax,%eax; jcc`) get a CALL point on that call and an AFTER_CALL
 *   point on that jcc instead (both emulated by the kernel, where a first
 *   instruction such as `sub $0x18,%rsp` is single-stepped: 24 us a hit
 *   against 6-7 us, measured here).
 *
 *   Go (NET_TLS_GO_WRITE, NET_TLS_GO_READ): an ENTRY point on the entry
 *   instruction, or on the jbe of the stack-guard check that opens the
 *   function (`cmp d8(%r14),%rsp; jbe` and its R12 form: emulated, where the
 *   cmp is stepped, and the argument registers are untouched there), and a
 *   RET_INSN point on every RET a linear sweep of the whole function finds
 *   (never uretprobes on Go: its runtime walks and moves goroutine stacks).
 *   One instruction the decoder does not know, and the function gets none:
 *   a uprobe placed inside an instruction corrupts the process.
 *
 * A function's entry instruction must be one the kernel probes
 * (x86_insn__class() >= 0), or the function gets no points.
 *
 * Threat model: the code is attacker-controlled (any binary a profiled
 * process maps).  Only code[0..n) is read, n at most TLS_CODE_MAX_FN (larger
 * functions get no points, so the sweep is bounded); no allocation, no
 * global state, no logging: thread-safe.
 */
#ifndef EMBER_COMMON_TLS_CODE_H
#define EMBER_COMMON_TLS_CODE_H

#include <stddef.h>
#include <stdint.h>

/* A function larger than this gets no points (TLS read/write functions are a few KiB at most). */
#define TLS_CODE_MAX_FN (64u * 1024)

struct tls_code_point {
	uint32_t off;    /* from the function's first byte */
	uint8_t kind;    /* enum net_tls_probe (bpf/net_abi.h) */
	uint8_t insn;    /* enum x86_insn_class of the instruction at off */
	uint8_t pad[2];
};

/*
 * The points of function fn (enum net_tls_fn) whose code is code[0..n), into
 * ret[0..max): the function's ENTRY first (then its RETURN, or its RET_INSN
 * points by address), or its CALL then its AFTER_CALL.  Returns how many (0
 * when the function gets none: n is 0 or above TLS_CODE_MAX_FN, an
 * instruction is not decoded, or one the kernel would not probe), -E2BIG
 * (more than max), -EINVAL (fn unknown).
 */
int tls_code__points(const uint8_t *code, size_t n, unsigned fn, struct tls_code_point *ret, size_t max);

#endif
