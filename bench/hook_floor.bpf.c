/*
 * The floors under thread profiling's cost (bench/threads.sh): programs that
 * do nothing, on the hooks of each design that could record a thread's calls,
 * so a workload run beside them pays only for the hooks being live.
 *   - raw: sys_enter, sys_exit and sched_switch (ember's design: every
 *     syscall of the host runs the two syscall programs);
 *   - persys: one tracepoint per recorded syscall's entry and exit
 *     (syscalls:sys_enter_futex, ..., gala-gopher's design) and sched_switch;
 *   - switch: sched_switch alone (a design that sees calls only where they
 *     block, from the task's saved registers).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/sys_enter")
int BPF_PROG(floor_enter, struct pt_regs *regs, long id)
{
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(floor_exit, struct pt_regs *regs, long ret)
{
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(floor_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return 0;
}

#define PERSYS(name)                                                       \
	SEC("tracepoint/syscalls/sys_enter_" #name)                        \
	int persys_enter_##name(void *ctx) { return 0; }                   \
	SEC("tracepoint/syscalls/sys_exit_" #name)                         \
	int persys_exit_##name(void *ctx) { return 0; }

PERSYS(read) PERSYS(write) PERSYS(readv) PERSYS(writev) PERSYS(pread64) PERSYS(pwrite64)
PERSYS(preadv) PERSYS(pwritev) PERSYS(preadv2) PERSYS(pwritev2)
PERSYS(sync) PERSYS(syncfs) PERSYS(fsync) PERSYS(fdatasync) PERSYS(sync_file_range)
PERSYS(sendto) PERSYS(recvfrom) PERSYS(sendmsg) PERSYS(recvmsg) PERSYS(sendmmsg) PERSYS(recvmmsg)
PERSYS(futex) PERSYS(sched_yield) PERSYS(nanosleep) PERSYS(clock_nanosleep) PERSYS(wait4) PERSYS(waitid)
PERSYS(select) PERSYS(pselect6) PERSYS(poll) PERSYS(ppoll) PERSYS(epoll_wait) PERSYS(epoll_pwait)
