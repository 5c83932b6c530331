/*
 * Unwinding user stacks without frame pointers: the tables shared by the
 * analyzer (which builds them from .eh_frame/.debug_frame, see
 * analyzer/unwind/eh_frame.h), the collector (which validates them and writes
 * them into BPF maps) and bpf/stacks.bpf.c (which walks stacks with them).
 * Fixed-width types, sizes checked on both sides.
 *
 * A table is the sorted rows of one ELF file, keyed by build id: a library
 * mapped by a hundred processes is one table.  A process ("unwind_slot" map,
 * tgid -> slot) has up to UNWIND_MAX_MAPS executable mappings, each with the
 * table rows that cover it (or none: frame pointers there, e.g. JIT code).
 *
 * x86-64 only: the rules describe rsp, rbp and the return address, which
 * every x86-64 ABI frame saves at CFA-8.
 */
#ifndef EMBER_BPF_UNWIND_ABI_H
#define EMBER_BPF_UNWIND_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define UNWIND_MAX_MAPS 64          /* executable mappings per process with a place in the walk */
#define UNWIND_NO_TABLE 0xffffffffu /* ctl_unwind_map.table: frame pointers in this mapping */
#define UNWIND_SEARCH_STEPS 23      /* binary search steps in BPF: tables of up to 2^23 - 1 rows */
#define UNWIND_MAX_ADDR (1ull << 62)  /* mappings end below: the BPF search compares by the sign of differences */
#define UNWIND_MAX_TABLE_ROWS ((1u << UNWIND_SEARCH_STEPS) - 1)

/* How one row finds the caller's frame. */
enum unwind_row_type {
	UNW_NONE = 0,    /* no rule here (between functions, unsupported rule): frame pointers */
	UNW_CFA_RSP = 1, /* CFA = rsp + cfa_off */
	UNW_CFA_RBP = 2, /* CFA = rbp + cfa_off */
	UNW_PLT = 3,     /* CFA = rsp + 8 + (((rip & 15) >= cfa_off) ? 8 : 0): a PLT stub's expression */
	UNW_SIGNAL = 4,  /* a signal trampoline (__restore_rt): the registers are in the ucontext at rsp */
	UNW_END = 5,     /* the return address is undefined: the outermost frame (_start, thread start) */
	UNW_TYPE_MAX,
};

/*
 * One row: from pc (an ELF virtual address of the file, < 4 GiB) to the next
 * row's pc.  The return address is at CFA-8; rbp was saved at CFA + 8*fp_off8
 * when fp_off8 != 0, and is unchanged otherwise.
 */
struct unwind_row {
	__u32 pc;
	__u16 cfa_off;
	__s8 fp_off8;
	__u8 type;     /* enum unwind_row_type */
};

/* One executable mapping: ips in [start, end) look up pc = ip - bias in rows [first, first + nrows). */
struct unwind_map {
	__u64 start;
	__u64 end;
	__u64 bias;
	__u32 first;   /* index in the "unwind_rows" array map */
	__u32 nrows;   /* 0 with table = UNWIND_NO_TABLE */
};

/*
 * A process's mappings, sorted by start, not overlapping.  In the BPF maps:
 * "unwind_procs"[slot] = { nmaps, tgid } and "unwind_maps"[slot *
 * UNWIND_MAX_MAPS + i] = maps[i] (looked up by key: an index into a map
 * value would make the verifier track every search step exactly).
 */
struct unwind_proc_head {
	__u32 nmaps;
	__u32 tgid;    /* the owner: a slot reused by another process is not read as this one's */
	__u64 gen;     /* changes with every update: stacks cached before it (off-CPU) are walked again */
};
struct unwind_proc {
	__u32 nmaps;
	__u32 tgid;
	struct unwind_map maps[UNWIND_MAX_MAPS];
};

#define UNWIND_ASSERT_SIZE(t, n) _Static_assert(sizeof(t) == (n), #t " changed size: bump EMBER_ABI_VERSION")
UNWIND_ASSERT_SIZE(struct unwind_row, 8);
UNWIND_ASSERT_SIZE(struct unwind_map, 32);
UNWIND_ASSERT_SIZE(struct unwind_proc_head, 16);
UNWIND_ASSERT_SIZE(struct unwind_proc, 8 + 32 * UNWIND_MAX_MAPS);

#endif
