/*
 * bench_ringbuf's program: one BPF ring buffer record per run, of the size
 * user space sets, written from a per-CPU scratch as the network programs
 * write their events (bpf_ringbuf_output).  Run by BPF_PROG_TEST_RUN (an
 * XDP program: its test runs repeat in the kernel), so the time is the
 * record's alone, with no hook around it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

#define RB_MAX_RECORD 4096

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);       /* the network ring's default size (400 KB a CPU, 2 CPUs) */
} rb SEC(".maps");

struct rec { __u8 data[RB_MAX_RECORD]; };
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct rec);
	__uint(max_entries, 1);
} scratch SEC(".maps");

__u32 record_size = 256;
__u64 written = 0, failed = 0;

SEC("xdp")
int rb_record(struct xdp_md *ctx)
{
	__u32 zero = 0, n = record_size;
	struct rec *s = bpf_map_lookup_elem(&scratch, &zero);

	if (!s)
		return XDP_PASS;
	if (n > RB_MAX_RECORD)
		n = RB_MAX_RECORD;
	s->data[0] = 1;
	if (bpf_ringbuf_output(&rb, s, n, BPF_RB_NO_WAKEUP))
		failed++;
	else
		written++;
	return XDP_PASS;
}
