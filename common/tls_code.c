#include "common/tls_code.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "bpf/net_abi.h"
#include "common/x86_insn.h"

static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };

/* Bytes before the entry instruction: an endbr64 is not where arguments are read (nor a uretprobe placed). */
static size_t endbr_skip(const uint8_t *code, size_t n)
{
	return n >= sizeof(endbr64) && !memcmp(code, endbr64, sizeof(endbr64)) ? sizeof(endbr64) : 0;
}

/*
 * OpenSSL 3's SSL_read and SSL_write as GCC builds them: a wrapper that sets
 * RCX to a size_t on its stack, calls the internal function (the arguments
 * untouched), then tests EAX and branches.  Only the instructions listed
 * below may come before the call (none writes RDI or RSI, RDX is only
 * sign-extended), so that the call sees the function's arguments; anything
 * else, and the function gets ENTRY + RETURN.  Sets *call and *after to the
 * offsets (from code) of the call and of the conditional jump after it.
 */
static bool wrapper_shape(const uint8_t *code, size_t n, size_t *call, size_t *after)
{
	bool rcx_stack = false;
	size_t i = 0;

	for (int k = 0; k < 16 && i < n; k++) {
		const uint8_t *p = code + i;
		size_t left = n - i;
		int len = x86_insn__len(p, left);

		if (len <= 0)
			return false;
		if (p[0] == 0xe8 && len == 5) {
			size_t j = i + 5;
			int tl, jl;

			if (!rcx_stack || x86_insn__class(p, left) != X86_INSN_EMULATED)
				return false;
			/* test %eax,%eax; jcc */
			tl = j < n ? x86_insn__len(code + j, n - j) : -1;
			if (tl != 2 || code[j] != 0x85 || code[j + 1] != 0xc0)
				return false;
			j += 2;
			jl = j < n ? x86_insn__len(code + j, n - j) : -1;
			if (jl <= 0 || !((code[j] >= 0x70 && code[j] <= 0x7f) ||
					 (jl == 6 && code[j] == 0x0f && code[j + 1] >= 0x80 && code[j + 1] <= 0x8f)) ||
			    x86_insn__class(code + j, n - j) != X86_INSN_EMULATED)
				return false;
			*call = i;
			*after = j;
			return true;
		}
		if (len == 4 && !memcmp(p, "\x48\x83\xec", 3)) {                 /* sub $imm8,%rsp */
		} else if (len == 7 && !memcmp(p, "\x48\x81\xec", 3)) {          /* sub $imm32,%rsp */
		} else if (len == 9 && !memcmp(p, "\x64\x48\x8b\x04\x25\x28\x00\x00\x00", 9)) { /* mov %fs:0x28,%rax */
		} else if (len == 5 && !memcmp(p, "\x48\x89\x44\x24", 4)) {     /* mov %rax,d8(%rsp) */
		} else if (len == 2 && (!memcmp(p, "\x31\xc0", 2) || !memcmp(p, "\x85\xd2", 2))) { /* xor eax; test edx */
		} else if (len == 2 && p[0] >= 0x70 && p[0] <= 0x7f) {              /* jcc rel8: leaves the path */
		} else if (len == 3 && !memcmp(p, "\x48\x63\xd2", 3)) {          /* movslq %edx,%rdx */
		} else if (len == 3 && !memcmp(p, "\x48\x89\xe1", 3)) {          /* mov %rsp,%rcx */
			rcx_stack = true;
		} else if (len == 5 && !memcmp(p, "\x48\x8d\x4c\x24", 4)) {     /* lea d8(%rsp),%rcx */
			rcx_stack = true;
		} else {
			return false;
		}
		i += (size_t)len;
	}
	return false;
}

static int openssl_points(const uint8_t *code, size_t n, unsigned fn, struct tls_code_point *ret, size_t max)
{
	size_t skip = endbr_skip(code, n), call, after;
	int cls;

	if ((fn == NET_TLS_SSL_READ || fn == NET_TLS_SSL_WRITE) && wrapper_shape(code + skip, n - skip, &call, &after)) {
		if (max < 2)
			return -E2BIG;
		ret[0] = (struct tls_code_point){ .off = (uint32_t)(skip + call), .kind = NET_TLS_P_CALL,
						  .insn = X86_INSN_EMULATED };
		ret[1] = (struct tls_code_point){ .off = (uint32_t)(skip + after), .kind = NET_TLS_P_AFTER_CALL,
						  .insn = X86_INSN_EMULATED };
		return 2;
	}
	cls = x86_insn__class(code + skip, n - skip);
	if (cls < 0)
		return 0;
	if (max < 2)
		return -E2BIG;
	ret[0] = (struct tls_code_point){ .off = (uint32_t)skip, .kind = NET_TLS_P_ENTRY, .insn = (uint8_t)cls };
	ret[1] = (struct tls_code_point){ .off = (uint32_t)skip, .kind = NET_TLS_P_RETURN, .insn = (uint8_t)cls };
	return 2;
}

/*
 * Go's prologue compares the stack pointer (or RSP minus the frame, in R12)
 * with the goroutine's stack guard and jumps to morestack: `cmp d8(%r14),%rsp`
 * or `lea d(%rsp),%r12; cmp d8(%r14),%r12`, then jbe.  None of these touches
 * the argument registers, and the jbe is emulated where the cmp would be
 * single-stepped: the entry point goes on the jbe (after morestack the
 * function starts over, and the entry is recorded again, the same).  Returns
 * the offset of that jump, or 0 when the prologue is not this.
 */
static size_t go_stack_check(const uint8_t *code, size_t n)
{
	size_t i = 0;

	for (int k = 0; k < 3 && i < n; k++) {
		const uint8_t *p = code + i;
		int len = x86_insn__len(p, n - i);

		if (len <= 0)
			return 0;
		if (k > 0 && x86_insn__class(p, n - i) == X86_INSN_EMULATED &&
		    ((len == 2 && p[0] >= 0x70 && p[0] <= 0x7f) || (len == 6 && p[0] == 0x0f && p[1] >= 0x80 && p[1] <= 0x8f)))
			return i;
		if (!(len == 4 && !memcmp(p, "\x49\x3b\x66", 3)) &&       /* cmp d8(%r14),%rsp */
		    !(len == 4 && !memcmp(p, "\x4d\x3b\x66", 3)) &&       /* cmp d8(%r14),%r12 */
		    !(len == 5 && !memcmp(p, "\x4c\x8d\x64\x24", 4)) &&  /* lea d8(%rsp),%r12 */
		    !(len == 8 && !memcmp(p, "\x4c\x8d\xa4\x24", 4)))    /* lea d32(%rsp),%r12 */
			return 0;
		i += (size_t)len;
	}
	return 0;
}

/* Entry + every RET, from a strict linear sweep: any instruction not decoded drops the function. */
static int go_points(const uint8_t *code, size_t n, struct tls_code_point *ret, size_t max)
{
	size_t nrets = 0, entry;
	int cls;

	/* At most n steps of at least one byte each: n is bounded by TLS_CODE_MAX_FN. */
	for (size_t pos = 0; pos < n;) {
		int len = x86_insn__len(code + pos, n - pos);

		if (len <= 0)
			return 0;
		if (x86_insn__op(code + pos, n - pos) == X86_OP_RET) {
			cls = x86_insn__class(code + pos, n - pos);
			if (cls < 0)
				return 0;   /* a ret the kernel would not probe (cs ret, ...) */
			if (1 + nrets < max)
				ret[1 + nrets] = (struct tls_code_point){ .off = (uint32_t)pos, .kind = NET_TLS_P_RET_INSN,
									  .insn = (uint8_t)cls };
			nrets++;
		}
		pos += (size_t)len;
	}
	entry = endbr_skip(code, n);
	entry += go_stack_check(code + entry, n - entry);
	cls = x86_insn__class(code + entry, n - entry);
	if (cls < 0)
		return 0;
	if (1 + nrets > max)
		return -E2BIG;
	ret[0] = (struct tls_code_point){ .off = (uint32_t)entry, .kind = NET_TLS_P_ENTRY, .insn = (uint8_t)cls };
	return (int)(1 + nrets);
}

int tls_code__points(const uint8_t *code, size_t n, unsigned fn, struct tls_code_point *ret, size_t max)
{
	if (!fn || fn > NET_TLS_FN_MAX)
		return -EINVAL;
	if (!code || !n || n > TLS_CODE_MAX_FN)
		return 0;
	if (fn == NET_TLS_GO_WRITE || fn == NET_TLS_GO_READ)
		return go_points(code, n, ret, max);
	return openssl_points(code, n, fn, ret, max);
}
