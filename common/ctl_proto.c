#include "common/ctl_proto.h"
#include "bpf/ember_abi.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

const struct counter_def ctl_stat_counters[CTL_STAT_MAX] = {
	[CTL_STAT_BPF_SAMPLES] = { .name = "bpf_samples" },
	[CTL_STAT_BPF_KSTACK_ERR] = { .name = "bpf_kstack_errors" },
	[CTL_STAT_BPF_USTACK_ERR] = { .name = "bpf_ustack_errors" },
	[CTL_STAT_BPF_STACKMAP_FULL] = { .name = "bpf_stackmap_full_drops" },
	[CTL_STAT_BPF_AGG_FULL] = { .name = "bpf_aggmap_full_drops" },
	[CTL_STAT_RING_RECORDS] = { .name = "ring_records" },
	[CTL_STAT_RING_DROPS] = { .name = "ring_full_drops" },
	[CTL_STAT_RING_DROP_BYTES] = { .name = "ring_full_drop_bytes" },
	[CTL_STAT_RING_HOSTILE_CONS] = { .name = "ring_hostile_consumer_index" },
	[CTL_STAT_CTL_REQUESTS] = { .name = "ctl_requests" },
	[CTL_STAT_CTL_MALFORMED] = { .name = "ctl_malformed_requests" },
	[CTL_STAT_CTL_DENIED] = { .name = "ctl_denied_requests" },
	[CTL_STAT_FD_BROKER_OPENS] = { .name = "fd_broker_opens" },
	[CTL_STAT_FD_BROKER_REFUSED] = { .name = "fd_broker_refused" },
	[CTL_STAT_TASKS_ACTIVE] = { .name = "tasks_active", .level = true },
	[CTL_STAT_DRAINS] = { .name = "bpf_map_drains" },
	[CTL_STAT_STACKS_DRAINED] = { .name = "stacks_drained" },
	[CTL_STAT_STACK_LOST] = { .name = "stack_id_lost" },
	[CTL_STAT_ANALYZER_CONNECTS] = { .name = "analyzer_connects" },
	[CTL_STAT_BPF_OFFCPU_SWITCHES] = { .name = "bpf_offcpu_switch_outs" },
	[CTL_STAT_BPF_OFFCPU_START_FULL] = { .name = "bpf_offcpu_start_map_full_drops" },
	[CTL_STAT_BPF_OFFCPU_BELOW_MIN] = { .name = "bpf_offcpu_below_min_block_time" },
	[CTL_STAT_BPF_HSTACK_FULL] = { .name = "bpf_offcpu_stack_map_full_drops" },
	[CTL_STAT_BPF_FAULTS] = { .name = "bpf_page_faults" },
	[CTL_STAT_BPF_OFFCPU_FP_HITS] = { .name = "bpf_offcpu_stack_cache_hits" },
	[CTL_STAT_NET_CALLS] = { .name = "bpf_net_socket_calls" },
	[CTL_STAT_NET_EVENTS] = { .name = "bpf_net_events" },
	[CTL_STAT_NET_RINGBUF_FULL] = { .name = "bpf_net_ringbuf_full_drops" },
	[CTL_STAT_NET_INFLIGHT_FULL] = { .name = "bpf_net_inflight_full_drops" },
	[CTL_STAT_NET_TRUNCATED] = { .name = "bpf_net_payload_truncated" },
	[CTL_STAT_NET_COPY_FAILED] = { .name = "bpf_net_payload_copy_failed" },
	[CTL_STAT_NET_NOT_SOCKET] = { .name = "bpf_net_not_socket_calls" },
	[CTL_STAT_NET_SOCKS_FULL] = { .name = "bpf_net_sock_map_full" },
	[CTL_STAT_NET_NO_BUDGET] = { .name = "bpf_net_payload_no_budget" },
	[CTL_STAT_NET_LOST_FULL] = { .name = "bpf_net_lost_map_full" },
	[CTL_STAT_NET_FORKS] = { .name = "bpf_net_children_followed" },
	[CTL_STAT_NET_FORKS_FULL] = { .name = "bpf_net_children_not_followed" },
	[CTL_STAT_NET_FORWARDED] = { .name = "net_events_forwarded" },
	[CTL_STAT_NET_RING_DROPS] = { .name = "net_events_ring_full_drops" },
	[CTL_STAT_NET_RING_UNTRACKED] = { .name = "net_events_ring_drops_untracked" },
	[CTL_STAT_BPF_UNWIND_STACKS] = { .name = "bpf_unwind_stacks" },
	[CTL_STAT_BPF_UNWIND_COMPLETE] = { .name = "bpf_unwind_complete_stacks" },
	[CTL_STAT_BPF_UNWIND_FP_FRAMES] = { .name = "bpf_unwind_frame_pointer_frames" },
	[CTL_STAT_BPF_UNWIND_READ_ERR] = { .name = "bpf_unwind_read_errors" },
	[CTL_STAT_BPF_UNWIND_TRUNCATED] = { .name = "bpf_unwind_truncated_stacks" },
	[CTL_STAT_BPF_OFFCPU_TIMED] = { .name = "bpf_offcpu_blocks_timed" },
	[CTL_STAT_UNWIND_TABLES] = { .name = "unwind_tables", .level = true },
	[CTL_STAT_UNWIND_ROWS] = { .name = "unwind_rows", .level = true },
	[CTL_STAT_UNWIND_ROWS_MAX] = { .name = "unwind_rows_max", .level = true },
	[CTL_STAT_UNWIND_PROCS] = { .name = "unwind_processes", .level = true },
	[CTL_STAT_NET_TLS_CALLS] = { .name = "bpf_net_tls_calls" },
	[CTL_STAT_NET_TLS_NO_ENTRY] = { .name = "bpf_net_tls_returns_without_entry" },
	[CTL_STAT_NET_TLS_INFLIGHT_FULL] = { .name = "bpf_net_tls_inflight_full_drops" },
	[CTL_STAT_NET_TLS_UNBOUND] = { .name = "bpf_net_tls_events_without_socket" },
	[CTL_STAT_NET_TLS_WIRE] = { .name = "bpf_net_tls_wire_calls" },
	[CTL_STAT_NET_L2_PKTS] = { .name = "bpf_net_l2_packets" },
	[CTL_STAT_NET_PEEKS] = { .name = "bpf_net_peeks_skipped" },
	[CTL_STAT_TLS_FILES] = { .name = "tls_files_probed" },
	[CTL_STAT_TLS_POINTS] = { .name = "tls_probe_points" },
	[CTL_STAT_TLS_REFUSED] = { .name = "tls_attach_refused" },
	[CTL_STAT_NET_PEERS_ACROSS] = { .name = "net_events_peer_across_shards" },
	[CTL_STAT_NET_ENDPOINTS_FULL] = { .name = "net_endpoints_full" },
	[CTL_STAT_FD_BROKER_MISSING] = { .name = "fd_broker_missing" },
	[CTL_STAT_FD_BROKER_SYMLINK] = { .name = "fd_broker_refused_symlink" },
	[CTL_STAT_FD_BROKER_NOT_REGULAR] = { .name = "fd_broker_refused_not_regular" },
	[CTL_STAT_FD_BROKER_OWNER] = { .name = "fd_broker_refused_owner" },
	[CTL_STAT_FD_BROKER_STALE] = { .name = "fd_broker_refused_stale" },
	[CTL_STAT_FD_BROKER_NOT_TARGET] = { .name = "fd_broker_refused_not_target" },
	[CTL_STAT_FD_BROKER_KALLSYMS] = { .name = "fd_broker_refused_kallsyms" },
	[CTL_STAT_ATTACH_REFUSED_OWN] = { .name = "attach_refused_ember_process" },
	[CTL_STAT_ATTACH_REFUSED_KTHREAD] = { .name = "attach_refused_kernel_thread" },
	[CTL_STAT_ATTACH_REFUSED_USER] = { .name = "attach_refused_user" },
	[CTL_STAT_ATTACH_REFUSED_CGROUP] = { .name = "attach_refused_cgroup" },
	[CTL_STAT_UNWIND_REFUSED] = { .name = "unwind_refused_for_room" },
	[CTL_STAT_PERF_CPUS_UNSAMPLED] = { .name = "perf_cpus_unsampled" },
	[CTL_STAT_TLS_UNSUPPORTED] = { .name = "tls_unsupported" },
	[CTL_STAT_TLS_PROGRAMS] = { .name = "tls_programs" },
	[CTL_STAT_TLS_VERIFY_SKIPPED] = { .name = "tls_attach_checked_before" },
	[CTL_STAT_TLS_GONE] = { .name = "tls_attach_process_gone" },
	[CTL_STAT_TLS_MERGED] = { .name = "tls_process_probes_merged" },
	[CTL_STAT_BPF_OFFCPU_EXITS] = { .name = "bpf_offcpu_thread_exits" },
	[CTL_STAT_BPF_OFFCPU_TID_REUSED] = { .name = "bpf_offcpu_tid_reused_drops" },
	[CTL_STAT_BPF_OFFCPU_STACK_ERR] = { .name = "bpf_offcpu_stack_errors" },
	[CTL_STAT_BPF_OFFCPU_STALE] = { .name = "bpf_offcpu_cached_stacks_gone" },
	[CTL_STAT_BPF_OFFCPU_UNTIMED] = { .name = "bpf_offcpu_blocks_end_unseen" },
	[CTL_STAT_BPF_OFFCPU_LOST] = { .name = "bpf_offcpu_blocks_lost" },
	[CTL_STAT_TLS_REFUSED_COOKIE] = { .name = "tls_attach_refused_bad_cookie" },
	[CTL_STAT_TLS_REFUSED_FILE] = { .name = "tls_attach_refused_unparseable_file" },
	[CTL_STAT_TLS_REFUSED_SEGMENT] = { .name = "tls_attach_refused_not_executable" },
	[CTL_STAT_TLS_REFUSED_FUNCTION] = { .name = "tls_attach_refused_function_not_found" },
	[CTL_STAT_TLS_REFUSED_OUTSIDE] = { .name = "tls_attach_refused_outside_function" },
	[CTL_STAT_TLS_REFUSED_BOUNDARY] = { .name = "tls_attach_refused_not_instruction_start" },
	[CTL_STAT_TLS_REFUSED_INSN] = { .name = "tls_attach_refused_wrong_instruction" },
	[CTL_STAT_NET_SL_NO_SYSCALL] = { .name = "bpf_net_calls_without_syscall" },
	[CTL_STAT_NET_SOCKET_LAYER] = { .name = "bpf_net_socket_layer", .level = true },
	[CTL_STAT_NET_CAPPED] = { .name = "bpf_net_capped_events" },
	[CTL_STAT_NET_CAPS_WRITTEN] = { .name = "net_caps_written" },
	[CTL_STAT_NET_CAPS_REFUSED] = { .name = "net_caps_refused" },
	[CTL_STAT_NET_CAPS_FAILED] = { .name = "net_caps_failed" },
	[CTL_STAT_BPF_THREAD_CALLS] = { .name = "bpf_thread_calls" },
	[CTL_STAT_BPF_THREAD_ONCPU] = { .name = "bpf_thread_oncpu_periods" },
	[CTL_STAT_BPF_THREAD_AGG_FULL] = { .name = "bpf_thread_agg_full_drops" },
	[CTL_STAT_BPF_THREAD_KEYS_CAP] = { .name = "bpf_thread_per_thread_cap_drops" },
	[CTL_STAT_BPF_THREAD_CALL_FULL] = { .name = "bpf_thread_calls_untimed" },
	[CTL_STAT_BPF_THREAD_UNTIMED] = { .name = "bpf_thread_oncpu_untimed" },
	[CTL_STAT_BPF_THREAD_STACKS] = { .name = "bpf_thread_stacks_walked" },
	[CTL_STAT_BPF_THREAD_STACK_HITS] = { .name = "bpf_thread_stacks_reused" },
	[CTL_STAT_THREAD_EVENTS] = { .name = "thread_events" },
	[CTL_STAT_THREAD_RING_DROPS] = { .name = "thread_events_ring_full_drops" },
	[CTL_STAT_THREAD_STACKS_LOST] = { .name = "thread_stacks_lost" },
	[CTL_STAT_THREAD_PATHS_STALE] = { .name = "thread_paths_stale" },
	[CTL_STAT_THREAD_CALLS_BEFORE] = { .name = "thread_calls_in_progress_at_start" },
	[CTL_STAT_BPF_PY_STACKS] = { .name = "bpf_python_stacks" },
	[CTL_STAT_BPF_PY_FRAMES] = { .name = "bpf_python_frames" },
	[CTL_STAT_BPF_PY_NO_THREAD] = { .name = "bpf_python_threads_without_state" },
	[CTL_STAT_BPF_PY_READ_ERR] = { .name = "bpf_python_read_errors" },
	[CTL_STAT_BPF_PY_TRUNCATED] = { .name = "bpf_python_truncated_stacks" },
	[CTL_STAT_BPF_PY_CODES_FULL] = { .name = "bpf_python_code_names_full" },
	[CTL_STAT_PY_NAMES_LOST] = { .name = "python_names_lost" },
	/* Prometheus names units in base units: counted in ns, published in seconds */
	[CTL_STAT_BPF_PY_NS] = { .name = "bpf_python_walk_seconds", .per_unit = 1000000000 },
	[CTL_STAT_JAVA_REQUESTED] = { .name = "java_agent_requests" },
	[CTL_STAT_JAVA_LOADED] = { .name = "java_agent_loaded" },
	[CTL_STAT_JAVA_FAILED] = { .name = "java_agent_failures" },
	[CTL_STAT_JAVA_DROPPED] = { .name = "java_agent_requests_dropped" },
};

const char *ctl__attach_point_name(uint32_t ap)
{
	switch (ap) {
	case CTL_AP_PERF_CPU_CLOCK: return "perf_event:cpu-clock";
	case CTL_AP_TP_BTF: return "tp_btf";
	case CTL_AP_RAW_TP: return "raw_tp";
	case CTL_AP_SOCKET: return "tp_btf:socket";
	case CTL_AP_TRACEPOINT: return "tracepoint";
	case CTL_AP_PERF_PAGE_FAULTS: return "perf_event:page-faults";
	default: return "none";
	}
}

const char *ctl__stat_name(unsigned idx)
{
	return idx < CTL_STAT_MAX && ctl_stat_counters[idx].name ? ctl_stat_counters[idx].name : "unknown";
}

const char *ctl__type_name(unsigned type)
{
	static const char *const names[CTL_TYPE_MAX] = {
		[CTL_REQ_HELLO] = "HELLO", [CTL_ANS_HELLO] = "HELLO_ANS",
		[CTL_REQ_ATTACH] = "ATTACH", [CTL_ANS_ATTACH] = "ATTACH_ANS",
		[CTL_REQ_DETACH] = "DETACH", [CTL_ANS_DETACH] = "DETACH_ANS",
		[CTL_REQ_OPEN_MAPS] = "OPEN_MAPS", [CTL_ANS_OPEN_MAPS] = "OPEN_MAPS_ANS",
		[CTL_REQ_OPEN_FILE] = "OPEN_FILE", [CTL_ANS_OPEN_FILE] = "OPEN_FILE_ANS",
		[CTL_REQ_OPEN_KALLSYMS] = "OPEN_KALLSYMS", [CTL_ANS_OPEN_KALLSYMS] = "OPEN_KALLSYMS_ANS",
		[CTL_REQ_STATS] = "STATS", [CTL_ANS_STATS] = "STATS_ANS",
		[CTL_REQ_OPEN_PERF_MAP] = "OPEN_PERF_MAP", [CTL_ANS_OPEN_PERF_MAP] = "OPEN_PERF_MAP_ANS",
		[CTL_REQ_OPEN_DEBUG_BUILD_ID] = "OPEN_DEBUG_BUILD_ID",
		[CTL_ANS_OPEN_DEBUG_BUILD_ID] = "OPEN_DEBUG_BUILD_ID_ANS",
		[CTL_REQ_OPEN_DEBUGLINK] = "OPEN_DEBUGLINK", [CTL_ANS_OPEN_DEBUGLINK] = "OPEN_DEBUGLINK_ANS",
		[CTL_REQ_UNWIND_TABLE] = "UNWIND_TABLE", [CTL_ANS_UNWIND_TABLE] = "UNWIND_TABLE_ANS",
		[CTL_REQ_UNWIND_ROWS] = "UNWIND_ROWS", [CTL_ANS_UNWIND_ROWS] = "UNWIND_ROWS_ANS",
		[CTL_REQ_UNWIND_PROC] = "UNWIND_PROC", [CTL_ANS_UNWIND_PROC] = "UNWIND_PROC_ANS",
		[CTL_REQ_START] = "START", [CTL_ANS_START] = "START_ANS",
		[CTL_REQ_TLS_ATTACH] = "TLS_ATTACH", [CTL_ANS_TLS_ATTACH] = "TLS_ATTACH_ANS",
		[CTL_REQ_NET_CAPS] = "NET_CAPS", [CTL_ANS_NET_CAPS] = "NET_CAPS_ANS",
		[CTL_REQ_PY_PROC] = "PY_PROC", [CTL_ANS_PY_PROC] = "PY_PROC_ANS",
		[CTL_REQ_JAVA_ATTACH] = "JAVA_ATTACH", [CTL_ANS_JAVA_ATTACH] = "JAVA_ATTACH_ANS",
	};
	return type < CTL_TYPE_MAX && names[type] ? names[type] : "unknown";
}

/* Fixed payload size per type; -1 = variable (checked separately), 0 = empty. */
static long payload_size(uint16_t type)
{
	switch (type) {
	case CTL_REQ_HELLO: return sizeof(struct ctl_hello);
	case CTL_ANS_HELLO: return sizeof(struct ctl_hello_ans);
	case CTL_REQ_ATTACH: return -1;
	case CTL_ANS_ATTACH: return sizeof(struct ctl_attach_ans);
	case CTL_REQ_DETACH:
	case CTL_REQ_START: return sizeof(struct ctl_detach);
	case CTL_REQ_OPEN_MAPS: return sizeof(struct ctl_open_maps);
	case CTL_REQ_OPEN_FILE: return sizeof(struct ctl_open_file);
	case CTL_REQ_OPEN_KALLSYMS: return 0;
	case CTL_REQ_STATS: return 0;
	case CTL_ANS_STATS: return sizeof(struct ctl_stats_ans);
	case CTL_REQ_OPEN_PERF_MAP: return sizeof(struct ctl_open_perf_map);
	case CTL_REQ_OPEN_DEBUG_BUILD_ID: return sizeof(struct ctl_open_debug_build_id);
	case CTL_REQ_OPEN_DEBUGLINK: return sizeof(struct ctl_open_debuglink);
	case CTL_REQ_UNWIND_TABLE: return sizeof(struct ctl_unwind_table);
	case CTL_ANS_UNWIND_TABLE: return sizeof(struct ctl_unwind_table_ans);
	case CTL_REQ_UNWIND_ROWS: return -3;
	case CTL_REQ_UNWIND_PROC: return sizeof(struct ctl_unwind_proc);
	case CTL_REQ_TLS_ATTACH: return sizeof(struct ctl_tls_attach);
	case CTL_REQ_PY_PROC: return sizeof(struct ctl_py_proc);
	case CTL_REQ_JAVA_ATTACH: return sizeof(struct ctl_java_attach);
	case CTL_REQ_NET_CAPS: return -4;
	case CTL_ANS_NET_CAPS: return sizeof(struct ctl_net_caps_ans);
	case CTL_ANS_TLS_ATTACH:
	case CTL_ANS_PY_PROC:
	case CTL_ANS_JAVA_ATTACH:
	case CTL_ANS_UNWIND_ROWS:
	case CTL_ANS_UNWIND_PROC:
	case CTL_ANS_START:
	case CTL_ANS_OPEN_PERF_MAP:
	case CTL_ANS_OPEN_DEBUG_BUILD_ID:
	case CTL_ANS_OPEN_DEBUGLINK:
	case CTL_ANS_DETACH:
	case CTL_ANS_OPEN_MAPS:
	case CTL_ANS_OPEN_FILE:
	case CTL_ANS_OPEN_KALLSYMS: return sizeof(struct ctl_err_ans);
	default: return -2;
	}
}

/*
 * A payload of a fixed part (head bytes) and a count (a uint32_t at n_off)
 * of elem-sized entries after it: true unless the count is 1..max and the length exact.
 */
static bool bad_count(const void *frame, uint32_t len, size_t head, size_t n_off, uint32_t max, size_t elem)
{
	uint32_t n;

	if (len < head)
		return true;
	memcpy(&n, (const char *)frame + sizeof(struct ctl_hdr) + n_off, sizeof(n));
	return n == 0 || n > max || len != head + (uint64_t)n * elem;
}

int ctl__decode(const void *buf, size_t n, struct ctl_msg *ret)
{
	struct ctl_hdr h;
	long want;

	if (n < sizeof(h) || n > CTL_MAX_FRAME)
		return -EBADMSG;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != CTL_MAGIC)
		return -EBADMSG;
	if (h.version != CTL_VERSION)
		return -EPROTONOSUPPORT;
	if (h.len != n - sizeof(h))
		return -EBADMSG;
	want = payload_size(h.type);
	if (want == -2)
		return -EOPNOTSUPP;
	if (want >= 0 && h.len != (uint32_t)want)
		return -EBADMSG;
	if ((want == -1 && bad_count(buf, h.len, sizeof(struct ctl_attach), offsetof(struct ctl_attach, npids),
				   CTL_MAX_PIDS, sizeof(uint32_t))) ||
	    (want == -3 && bad_count(buf, h.len, sizeof(struct ctl_unwind_rows), offsetof(struct ctl_unwind_rows, n),
				   CTL_UNWIND_ROWS_MAX, sizeof(struct unwind_row))) ||
	    (want == -4 && bad_count(buf, h.len, sizeof(struct ctl_net_caps), offsetof(struct ctl_net_caps, n),
				   CTL_NET_CAPS_MAX, sizeof(struct ctl_net_cap))))
		return -EBADMSG;
	ret->type = h.type;
	ret->seq = h.seq;
	ret->len = h.len;
	ret->payload = h.len ? (const char *)buf + sizeof(h) : NULL;
	return 0;
}

int ctl__encode(void *buf, size_t size, uint16_t type, uint32_t seq, const void *payload, uint32_t len)
{
	struct ctl_hdr h = { .magic = CTL_MAGIC, .version = CTL_VERSION, .type = type, .len = len, .seq = seq };

	if (size < sizeof(h) + (size_t)len || sizeof(h) + (size_t)len > CTL_MAX_FRAME)
		return -EMSGSIZE;
	memcpy(buf, &h, sizeof(h));
	if (len)
		memcpy((char *)buf + sizeof(h), payload, len);
	return (int)(sizeof(h) + len);
}

int ctl__send(int sock, uint16_t type, uint32_t seq, const void *payload, uint32_t len,
	      const int *fds, unsigned nfds)
{
	char frame[CTL_MAX_FRAME];
	union { char buf[CMSG_SPACE(sizeof(int) * CTL_MAX_FDS)]; struct cmsghdr align; } u;
	struct iovec iov;
	struct msghdr msg = { 0 };
	int n;

	if (nfds > CTL_MAX_FDS)
		return -EINVAL;
	n = ctl__encode(frame, sizeof(frame), type, seq, payload, len);
	if (n < 0)
		return n;
	iov.iov_base = frame;
	iov.iov_len = n;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (nfds) {
		struct cmsghdr *c;
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	for (;;) {
		ssize_t r = sendmsg(sock, &msg, MSG_NOSIGNAL);
		if (r == n)
			return 0;
		if (r >= 0)
			return -EMSGSIZE;
		if (errno != EINTR)
			return -errno;
	}
}

int ctl__recv(int sock, void *buf, size_t size, int *fds, unsigned max_fds, unsigned *ret_nfds)
{
	union { char buf[CMSG_SPACE(sizeof(int) * (CTL_MAX_FDS + 4))]; struct cmsghdr align; } u;
	struct iovec iov = { .iov_base = buf, .iov_len = size };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	unsigned got = 0;
	ssize_t r;

	if (ret_nfds)
		*ret_nfds = 0;
	do
		r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		unsigned n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (unsigned i = 0; i < n; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (fds && got < max_fds)
				fds[got++] = fd;
			else
				close(fd); /* never leak fds a peer pushed on us */
		}
	}
	if (ret_nfds)
		*ret_nfds = got;
	if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
		for (unsigned i = 0; i < got; i++)
			close(fds[i]);
		if (ret_nfds)
			*ret_nfds = 0;
		return -EMSGSIZE;
	}
	return (int)r;
}

int ctl__call(int sock, uint16_t type, const void *req, uint32_t req_len,
	      uint16_t ans_type, void *ans, uint32_t ans_len, int *fds, unsigned max_fds, unsigned *ret_nfds)
{
	static uint32_t seq;
	char buf[CTL_MAX_FRAME];
	struct ctl_msg m;
	unsigned nfds = 0;
	int r;

	r = ctl__send(sock, type, ++seq, req, req_len, NULL, 0);
	if (r < 0)
		return r;
	r = ctl__recv(sock, buf, sizeof(buf), fds, max_fds, &nfds);
	if (r <= 0)
		return r == 0 ? -ECONNRESET : r;
	r = ctl__decode(buf, r, &m);
	if (r == 0 && (m.type != ans_type || m.seq != seq || m.len != ans_len))
		r = -EBADMSG;
	if (r < 0) {
		for (unsigned i = 0; i < nfds; i++)
			close(fds[i]);
		return r;
	}
	memcpy(ans, m.payload, ans_len);
	if (ret_nfds)
		*ret_nfds = nfds;
	return 0;
}

static const unsigned stack_losses[] = {
	CTL_STAT_BPF_STACKMAP_FULL, CTL_STAT_BPF_AGG_FULL, CTL_STAT_RING_DROPS, CTL_STAT_STACK_LOST,
};
static const unsigned offcpu_losses[] = {
	CTL_STAT_BPF_OFFCPU_START_FULL, CTL_STAT_BPF_HSTACK_FULL, CTL_STAT_BPF_OFFCPU_TID_REUSED, CTL_STAT_BPF_OFFCPU_LOST,
};
static const unsigned net_losses[] = {
	CTL_STAT_NET_RINGBUF_FULL, CTL_STAT_NET_INFLIGHT_FULL, CTL_STAT_NET_LOST_FULL, CTL_STAT_NET_RING_DROPS,
	CTL_STAT_NET_RING_UNTRACKED, CTL_STAT_NET_TLS_INFLIGHT_FULL, CTL_STAT_NET_FORKS_FULL, CTL_STAT_NET_COPY_FAILED,
};
static const unsigned stack_partial[] = {
	CTL_STAT_BPF_KSTACK_ERR, CTL_STAT_BPF_USTACK_ERR, CTL_STAT_BPF_UNWIND_READ_ERR, CTL_STAT_BPF_UNWIND_TRUNCATED,
	CTL_STAT_BPF_OFFCPU_STACK_ERR,
};

static const unsigned thread_losses[] = {
	CTL_STAT_BPF_THREAD_AGG_FULL, CTL_STAT_BPF_THREAD_KEYS_CAP, CTL_STAT_BPF_THREAD_CALL_FULL,
	CTL_STAT_THREAD_RING_DROPS,
};
static const unsigned thread_partial[] = { CTL_STAT_THREAD_STACKS_LOST, CTL_STAT_THREAD_PATHS_STALE };

void ctl__kind_losses(uint32_t kind, struct ctl_kind_losses *ret)
{
	memset(ret, 0, sizeof(*ret));
	switch (kind) {
	case EMBER_TASK_OFFCPU:
		ret->lost[1] = offcpu_losses;
		ret->nlost[1] = sizeof(offcpu_losses) / sizeof(offcpu_losses[0]);
		/* and the stack kinds' */
		__attribute__((fallthrough));
	case EMBER_TASK_ONCPU:
	case EMBER_TASK_MEM:
		ret->lost[0] = stack_losses;
		ret->nlost[0] = sizeof(stack_losses) / sizeof(stack_losses[0]);
		ret->partial = stack_partial;
		ret->npartial = sizeof(stack_partial) / sizeof(stack_partial[0]);
		break;
	case EMBER_TASK_NETWORK:
		ret->lost[0] = net_losses;
		ret->nlost[0] = sizeof(net_losses) / sizeof(net_losses[0]);
		break;
	case EMBER_TASK_THREADS:
		ret->lost[0] = thread_losses;
		ret->nlost[0] = sizeof(thread_losses) / sizeof(thread_losses[0]);
		ret->partial = thread_partial;
		ret->npartial = sizeof(thread_partial) / sizeof(thread_partial[0]);
		break;
	}
}
