/*
 * x86-64 instructions as a uprobe sees them: the length of one instruction
 * (64-bit mode) and how the kernel's x86 uprobe code would handle a probe on
 * it.  Used where a uprobe is placed (analyzer/tls: the TLS probe points of a
 * library) and where a placement is checked before it is attached
 * (collector/tls_verify: the privileged collector does not take the
 * analyzer's word for where an instruction starts).
 *
 * Threat model: the bytes are attacker-controlled (code of any binary a
 * profiled process maps).  At most min(n, 15) bytes at p are read; every
 * table lookup is bounded.  No allocation, no global state, no logging:
 * thread-safe.
 */
#ifndef EMBER_COMMON_X86_INSN_H
#define EMBER_COMMON_X86_INSN_H

#include <stddef.h>
#include <stdint.h>

/* How the kernel handles the probed instruction (arch/x86/kernel/uprobes.c). */
enum x86_insn_class { X86_INSN_NOP = 0, X86_INSN_EMULATED = 1, X86_INSN_STEPPED = 2 };
/* What x86_insn__op() tells apart. */
enum x86_insn_op { X86_OP_OTHER = 0, X86_OP_RET = 1, X86_OP_CALL_REL32 = 2, X86_OP_JCC = 3 };

/*
 * Instruction length at p, reading at most n bytes: 1..15, or -1 if the
 * bytes are not one whole instruction this decoder knows (truncated, invalid
 * in 64-bit mode, an undefined opcode, a REX prefix not right before the
 * opcode, a 66-prefixed near branch whose length differs between Intel and
 * AMD, APX encodings).  Legacy, 0f, 0f 38, 0f 3a, 3DNow!, x87, VEX, XOP and
 * EVEX encodings.
 */
int x86_insn__len(const uint8_t *p, size_t n);

/*
 * How the kernel's x86 uprobe code handles the instruction at p (at most n
 * bytes): X86_INSN_NOP (emulated as a jump to the next instruction: 90
 * without REX.B or f3, 0f 1f /0), X86_INSN_EMULATED (call rel32, jmp
 * rel8/rel32, jcc, push of a register), X86_INSN_STEPPED (copied and
 * single-stepped out of line).  -1 if x86_insn__len() cannot decode it or
 * the kernel would refuse to probe it: a prefix 26/2e/36/3e/f0, a first
 * opcode byte off its table of good one-byte opcodes (int3, int n, in/out,
 * hlt, cli/sti, ...; every 0f xx passes), a 66-prefixed branch, a mov to ss.
 * Also -1 where a probe would break the program on some kernels: any XOP
 * instruction (the kernel's decoder may not know them), a VEX/EVEX one whose
 * opcode byte the kernel would take for a jcc, call, jmp or nop (its
 * emulation looks at that byte alone), and 41 90 (xchg %eax,%r8d, which
 * older kernels emulate as a nop).
 */
int x86_insn__class(const uint8_t *p, size_t n);

/*
 * The instruction at p (at most n bytes) as enum x86_insn_op: a near ret (c3,
 * c2 iw), a call rel32 (e8), a jcc (70-7f rel8, 0f 80-8f rel32), or another
 * one; -1 if x86_insn__len() cannot decode it.  Prefixes are allowed (they
 * show in the length).
 */
int x86_insn__op(const uint8_t *p, size_t n);

#endif
