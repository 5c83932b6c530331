/*
 * ctl__decode runs in the collector on bytes from the less-privileged
 * analyzer.  Any accepted frame must be exactly what ctl__encode produces for
 * the decoded message (no bytes ignored, none invented), and everything a
 * consumer may then read from it (the whole ATTACH pid list, every row of
 * UNWIND_ROWS) must lie inside
 * the input.  libFuzzer's input is a heap copy of exactly `size` bytes, so
 * ASan reports any read past it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/ctl_proto.h"

static volatile uint32_t sink;

/* Payload size of each fixed-size type, from the struct definitions: an
 * accepted frame of any other size means the decoder ignored extra bytes. */
static long expected_len(uint16_t type)
{
	switch (type) {
	case CTL_REQ_HELLO: return sizeof(struct ctl_hello);
	case CTL_ANS_HELLO: return sizeof(struct ctl_hello_ans);
	case CTL_ANS_ATTACH: return sizeof(struct ctl_attach_ans);
	case CTL_REQ_DETACH: return sizeof(struct ctl_detach);
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
	case CTL_REQ_UNWIND_PROC: return sizeof(struct ctl_unwind_proc);
	case CTL_REQ_START: return sizeof(struct ctl_detach);
	case CTL_REQ_TLS_ATTACH: return sizeof(struct ctl_tls_attach);
	case CTL_REQ_PY_PROC: return sizeof(struct ctl_py_proc);
	case CTL_REQ_JAVA_ATTACH: return sizeof(struct ctl_java_attach);
	case CTL_ANS_NET_CAPS: return sizeof(struct ctl_net_caps_ans);
	case CTL_ANS_TLS_ATTACH:
	case CTL_ANS_PY_PROC:
	case CTL_ANS_JAVA_ATTACH:
	case CTL_ANS_OPEN_PERF_MAP:
	case CTL_ANS_OPEN_DEBUG_BUILD_ID:
	case CTL_ANS_OPEN_DEBUGLINK:
	case CTL_ANS_DETACH:
	case CTL_ANS_OPEN_MAPS:
	case CTL_ANS_OPEN_FILE:
	case CTL_ANS_UNWIND_ROWS:
	case CTL_ANS_UNWIND_PROC:
	case CTL_ANS_START:
	case CTL_ANS_OPEN_KALLSYMS: return sizeof(struct ctl_err_ans);
	default: return -1; /* ATTACH, UNWIND_ROWS and NET_CAPS, checked below */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const size_t hdr = sizeof(struct ctl_hdr);
	struct ctl_msg m;
	uint8_t *out;
	int r, n;

	memset(&m, 0, sizeof(m));
	r = ctl__decode(data, size, &m);
	if (r != 0) {
		if (r != -EBADMSG && r != -EPROTONOSUPPORT && r != -EOPNOTSUPP)
			abort();
		return 0;
	}

	if (size < hdr || size > CTL_MAX_FRAME || m.len != size - hdr)
		abort();
	if (m.len ? m.payload != data + hdr : m.payload != NULL)
		abort();
	if (strcmp(ctl__type_name(m.type), "unknown") == 0)
		abort();

	if (m.type != CTL_REQ_ATTACH && m.type != CTL_REQ_UNWIND_ROWS && m.type != CTL_REQ_NET_CAPS &&
	    (long)m.len != expected_len(m.type))
		abort();
	if (m.type == CTL_REQ_NET_CAPS) {
		struct ctl_net_caps h;
		struct ctl_net_cap last;

		if (m.len < sizeof(h))
			abort();
		memcpy(&h, m.payload, sizeof(h));
		if (h.n == 0 || h.n > CTL_NET_CAPS_MAX || m.len != sizeof(h) + (size_t)h.n * sizeof(struct ctl_net_cap))
			abort();
		/* The collector reads every entry: the last lies inside the input. */
		memcpy(&last, (const uint8_t *)m.payload + sizeof(h) + (size_t)(h.n - 1) * sizeof(last), sizeof(last));
		sink = (uint32_t)last.ino;
	}
	if (m.type == CTL_REQ_UNWIND_ROWS) {
		struct ctl_unwind_rows h;
		struct unwind_row last;

		if (m.len < sizeof(h))
			abort();
		memcpy(&h, m.payload, sizeof(h));
		if (h.n == 0 || h.n > CTL_UNWIND_ROWS_MAX || m.len != sizeof(h) + (size_t)h.n * sizeof(struct unwind_row))
			abort();
		/* The collector reads every row: the last lies inside the input. */
		memcpy(&last, (const uint8_t *)m.payload + sizeof(h) + (size_t)(h.n - 1) * sizeof(last), sizeof(last));
		sink = last.pc;
	}
	if (m.type == CTL_REQ_ATTACH) {
		struct ctl_attach a;
		uint32_t acc = 0;

		if (m.len < sizeof(a))
			abort();
		memcpy(&a, m.payload, sizeof(a));
		if (a.npids == 0 || a.npids > CTL_MAX_PIDS || m.len != sizeof(a) + (size_t)a.npids * 4)
			abort();
		for (uint32_t i = 0; i < a.npids; i++) {
			uint32_t pid;
			memcpy(&pid, (const uint8_t *)m.payload + sizeof(a) + (size_t)i * sizeof(pid), sizeof(pid));
			acc ^= pid;
		}
		sink = acc;
	}

	/* Exactly `size` bytes, so an encoder overrun is an ASan report too. */
	out = malloc(size);
	if (!out)
		return 0;
	n = ctl__encode(out, size, m.type, m.seq, m.payload, m.len);
	if (n < 0 || (size_t)n != size || memcmp(out, data, size) != 0)
		abort();
	free(out);
	return 0;
}
