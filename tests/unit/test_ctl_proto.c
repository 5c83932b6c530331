/*
 * Control protocol codec and transport: ctl__decode is the collector's only
 * parser of bytes coming from the less-privileged analyzer, so every rejection
 * rule is exercised here, and the fd-passing paths are checked for leaks
 * (a peer can push fds on us) and for close-on-exec.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/ctl_proto.h"

#define HDR sizeof(struct ctl_hdr)

/*
 * Payload size of every fixed-size type, written from the struct definitions
 * rather than taken from the codec, so the test is an independent statement of
 * the wire format.  ATTACH (variable) is tested separately.
 */
static const struct {
	uint16_t type;
	uint32_t size;
} fixed_types[] = {
	{ CTL_REQ_HELLO, sizeof(struct ctl_hello) },
	{ CTL_ANS_HELLO, sizeof(struct ctl_hello_ans) },
	{ CTL_ANS_ATTACH, sizeof(struct ctl_attach_ans) },
	{ CTL_REQ_DETACH, sizeof(struct ctl_detach) },
	{ CTL_ANS_DETACH, sizeof(struct ctl_err_ans) },
	{ CTL_REQ_OPEN_MAPS, sizeof(struct ctl_open_maps) },
	{ CTL_ANS_OPEN_MAPS, sizeof(struct ctl_err_ans) },
	{ CTL_REQ_OPEN_FILE, sizeof(struct ctl_open_file) },
	{ CTL_ANS_OPEN_FILE, sizeof(struct ctl_err_ans) },
	{ CTL_REQ_OPEN_KALLSYMS, 0 },
	{ CTL_ANS_OPEN_KALLSYMS, sizeof(struct ctl_err_ans) },
	{ CTL_REQ_STATS, 0 },
	{ CTL_ANS_STATS, sizeof(struct ctl_stats_ans) },
	{ CTL_REQ_OPEN_PERF_MAP, sizeof(struct ctl_open_perf_map) },
	{ CTL_ANS_OPEN_PERF_MAP, sizeof(struct ctl_err_ans) },
	{ CTL_REQ_OPEN_DEBUG_BUILD_ID, sizeof(struct ctl_open_debug_build_id) },
	{ CTL_ANS_OPEN_DEBUG_BUILD_ID, sizeof(struct ctl_err_ans) },
	{ CTL_REQ_OPEN_DEBUGLINK, sizeof(struct ctl_open_debuglink) },
	{ CTL_ANS_OPEN_DEBUGLINK, sizeof(struct ctl_err_ans) },
};

/* ---- helpers ------------------------------------------------------------- */

static void fill_pattern(void *p, size_t n, unsigned salt)
{
	for (size_t i = 0; i < n; i++)
		((uint8_t *)p)[i] = (uint8_t)(i * 7 + salt * 31 + 1);
}

static void put_hdr(void *buf, uint32_t magic, uint16_t version, uint16_t type, uint32_t len, uint32_t seq)
{
	struct ctl_hdr h = { .magic = magic, .version = version, .type = type, .len = len, .seq = seq };
	memcpy(buf, &h, sizeof(h));
}

/* An ATTACH frame with npids_field in the fixed part and nreal pids after it. */
static size_t make_attach(void *buf, size_t size, uint32_t npids_field, uint32_t nreal, uint32_t seq)
{
	struct ctl_attach a = { .task_id = 0x1122334455667788ull, .kind = 2, .npids = npids_field,
				.period_ns = 10000000, .min_block_ns = 1000 };
	size_t len = sizeof(a) + (size_t)nreal * sizeof(uint32_t);

	assert_true(HDR + len <= size);
	put_hdr(buf, CTL_MAGIC, CTL_VERSION, CTL_REQ_ATTACH, (uint32_t)len, seq);
	memcpy((char *)buf + HDR, &a, sizeof(a));
	for (uint32_t i = 0; i < nreal; i++) {
		uint32_t pid = 1000 + i * 3;
		memcpy((char *)buf + HDR + sizeof(a) + i * sizeof(pid), &pid, sizeof(pid));
	}
	return HDR + len;
}

static int count_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the DIR's own fd */
}

static void assert_same_file(int a, int b)
{
	struct stat sa, sb;

	assert_int_equal(fstat(a, &sa), 0);
	assert_int_equal(fstat(b, &sb), 0);
	assert_true(sa.st_ino == sb.st_ino);
	assert_true(sa.st_dev == sb.st_dev);
}

static void assert_cloexec(int fd)
{
	int fl = fcntl(fd, F_GETFD);

	assert_true(fl >= 0);
	assert_true(fl & FD_CLOEXEC);
}

static void seqpacket_pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

/* Three distinct files: a memfd, an eventfd and /dev/null. */
static void open_three(int fds[3])
{
	fds[0] = memfd_create("ctl-test", MFD_CLOEXEC);
	fds[1] = eventfd(0, EFD_CLOEXEC);
	fds[2] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	for (int i = 0; i < 3; i++)
		assert_true(fds[i] >= 0);
}

static void close_all(int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* sendmsg with an arbitrary number of fds, bypassing ctl__send's limit. */
static void send_raw(int sock, const void *data, size_t len, const int *fds, unsigned n)
{
	union { char buf[CMSG_SPACE(sizeof(int) * 64)]; struct cmsghdr align; } u;
	struct iovec iov = { .iov_base = (void *)data, .iov_len = len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	assert_true(n <= 64);
	if (n) {
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	}
	assert_int_equal(sendmsg(sock, &msg, MSG_NOSIGNAL), (ssize_t)len);
}

/* ---- layout ------------------------------------------------------------- */

/* The wire format is the in-memory layout: no implicit padding anywhere. */
static void test_layout(void **state)
{
	assert_int_equal(sizeof(struct ctl_hdr), 16);
	assert_int_equal(sizeof(struct ctl_hello), 8);
	assert_int_equal(sizeof(struct ctl_hello_ans), 16);
	assert_int_equal(sizeof(struct ctl_attach), 40);
	assert_int_equal(offsetof(struct ctl_attach, pids), 40);
	assert_int_equal(sizeof(struct ctl_attach_ans), 16);
	assert_int_equal(sizeof(struct ctl_detach), 8);
	assert_int_equal(sizeof(struct ctl_err_ans), 8);
	assert_int_equal(sizeof(struct ctl_open_maps), 8);
	assert_int_equal(sizeof(struct ctl_open_file), 24);
	assert_int_equal(sizeof(struct ctl_open_perf_map), 8);
	assert_int_equal(sizeof(struct ctl_open_debug_build_id), 8 + 64);
	assert_int_equal(sizeof(struct ctl_open_debuglink), 24 + 256);
	assert_int_equal(sizeof(struct ctl_stats_ans), 8 + 8 * CTL_STAT_MAX);
	/* The largest legal frame must fit the frame limit. */
	assert_true(HDR + sizeof(struct ctl_attach) + CTL_MAX_PIDS * sizeof(uint32_t) <= CTL_MAX_FRAME);
	assert_true(HDR + sizeof(struct ctl_stats_ans) <= CTL_MAX_FRAME);
}

/* ---- encode / decode round trips ----------------------------------------- */

static void test_roundtrip_fixed(void **state)
{
	_Alignas(8) uint8_t payload[CTL_MAX_FRAME], frame[CTL_MAX_FRAME];
	struct ctl_msg m;

	for (size_t i = 0; i < ARRAY_SIZE(fixed_types); i++) {
		uint16_t type = fixed_types[i].type;
		uint32_t len = fixed_types[i].size, seq = 0xabc00000u + (uint32_t)i;
		int n;

		assert_true(len <= sizeof(payload));
		fill_pattern(payload, len, type);
		n = ctl__encode(frame, sizeof(frame), type, seq, len ? payload : NULL, len);
		assert_int_equal(n, HDR + len);

		/* Header fields are where the spec puts them. */
		struct ctl_hdr h;
		memcpy(&h, frame, sizeof(h));
		assert_int_equal(h.magic, CTL_MAGIC);
		assert_int_equal(h.version, CTL_VERSION);
		assert_int_equal(h.type, type);
		assert_int_equal(h.len, len);
		assert_int_equal(h.seq, seq);

		memset(&m, 0xee, sizeof(m));
		assert_int_equal(ctl__decode(frame, n, &m), 0);
		assert_int_equal(m.type, type);
		assert_int_equal(m.seq, seq);
		assert_int_equal(m.len, len);
		if (len) {
			assert_ptr_equal(m.payload, frame + HDR);
			assert_memory_equal(m.payload, payload, len);
		} else {
			assert_null(m.payload);
		}
		assert_string_not_equal(ctl__type_name(type), "unknown");
	}
}

static void test_roundtrip_typed(void **state)
{
	_Alignas(8) uint8_t frame[CTL_MAX_FRAME];
	struct ctl_msg m;
	int n;

	struct ctl_open_file of = { .pid = 4242, .start = 0x7f0000001000ull, .end = 0x7f0000002000ull };
	n = ctl__encode(frame, sizeof(frame), CTL_REQ_OPEN_FILE, 9, &of, sizeof(of));
	assert_int_equal(n, HDR + sizeof(of));
	assert_int_equal(ctl__decode(frame, n, &m), 0);
	struct ctl_open_file of2;
	memcpy(&of2, m.payload, sizeof(of2));
	assert_int_equal(of2.pid, 4242);
	assert_true(of2.start == of.start && of2.end == of.end);

	struct ctl_stats_ans st = { .err = 0, .n = CTL_STAT_MAX };
	for (unsigned i = 0; i < CTL_STAT_MAX; i++)
		st.v[i] = ((uint64_t)i << 40) | (i * 3 + 1);
	n = ctl__encode(frame, sizeof(frame), CTL_ANS_STATS, 10, &st, sizeof(st));
	assert_int_equal(ctl__decode(frame, n, &m), 0);
	struct ctl_stats_ans st2;
	memcpy(&st2, m.payload, sizeof(st2));
	assert_int_equal(st2.n, CTL_STAT_MAX);
	for (unsigned i = 0; i < CTL_STAT_MAX; i++)
		assert_true(st2.v[i] == st.v[i]);

	struct ctl_hello_ans ha = { .err = -EPERM, .nshards = 4, .ring_size = 1ull << 33 };
	n = ctl__encode(frame, sizeof(frame), CTL_ANS_HELLO, 11, &ha, sizeof(ha));
	assert_int_equal(ctl__decode(frame, n, &m), 0);
	struct ctl_hello_ans ha2;
	memcpy(&ha2, m.payload, sizeof(ha2));
	assert_int_equal(ha2.err, -EPERM);
	assert_int_equal(ha2.nshards, 4);
	assert_true(ha2.ring_size == 1ull << 33);
}

static void test_roundtrip_attach(void **state)
{
	const uint32_t counts[] = { 1, 2, 7, CTL_MAX_PIDS - 1, CTL_MAX_PIDS };
	_Alignas(8) uint8_t frame[CTL_MAX_FRAME], reenc[CTL_MAX_FRAME];
	struct ctl_msg m;

	for (size_t k = 0; k < ARRAY_SIZE(counts); k++) {
		size_t n = make_attach(frame, sizeof(frame), counts[k], counts[k], 77 + (uint32_t)k);

		assert_int_equal(ctl__decode(frame, n, &m), 0);
		assert_int_equal(m.type, CTL_REQ_ATTACH);
		assert_int_equal(m.seq, 77 + k);
		assert_int_equal(m.len, n - HDR);
		assert_ptr_equal(m.payload, frame + HDR);

		struct ctl_attach a;
		memcpy(&a, m.payload, sizeof(a));
		assert_int_equal(a.npids, counts[k]);
		assert_true(a.task_id == 0x1122334455667788ull);
		assert_true(a.period_ns == 10000000 && a.min_block_ns == 1000);
		for (uint32_t i = 0; i < a.npids; i++) {
			uint32_t pid;
			memcpy(&pid, (const char *)m.payload + sizeof(a) + i * sizeof(pid), sizeof(pid));
			assert_int_equal(pid, 1000 + i * 3);
		}

		/* Encoding the decoded message gives back the same bytes. */
		int r = ctl__encode(reenc, sizeof(reenc), m.type, m.seq, m.payload, m.len);
		assert_int_equal(r, n);
		assert_memory_equal(reenc, frame, n);
	}
}

static void test_encode_limits(void **state)
{
	_Alignas(8) uint8_t frame[CTL_MAX_FRAME + 64], payload[CTL_MAX_FRAME];
	struct ctl_hello h = { .shard = 1, .abi_version = 1 };

	memset(payload, 0, sizeof(payload));
	/* Buffer one byte too small. */
	assert_int_equal(ctl__encode(frame, HDR + sizeof(h) - 1, CTL_REQ_HELLO, 1, &h, sizeof(h)), -EMSGSIZE);
	assert_int_equal(ctl__encode(frame, HDR - 1, CTL_REQ_STATS, 1, NULL, 0), -EMSGSIZE);
	/* Exactly big enough. */
	assert_int_equal(ctl__encode(frame, HDR + sizeof(h), CTL_REQ_HELLO, 1, &h, sizeof(h)), HDR + sizeof(h));
	/* A frame may not exceed CTL_MAX_FRAME even with a large buffer. */
	assert_int_equal(ctl__encode(frame, sizeof(frame), CTL_ANS_HELLO, 1, payload, CTL_MAX_FRAME - HDR), CTL_MAX_FRAME);
	assert_int_equal(ctl__encode(frame, sizeof(frame), CTL_ANS_HELLO, 1, payload, CTL_MAX_FRAME - HDR + 1), -EMSGSIZE);
	/* len near UINT32_MAX must not wrap the size check. */
	assert_int_equal(ctl__encode(frame, sizeof(frame), CTL_ANS_HELLO, 1, payload, UINT32_MAX), -EMSGSIZE);
	assert_int_equal(ctl__encode(frame, sizeof(frame), CTL_ANS_HELLO, 1, payload, UINT32_MAX - HDR + 1), -EMSGSIZE);
}

/* ---- rejection rules ----------------------------------------------------- */

static void test_reject_short(void **state)
{
	_Alignas(8) uint8_t frame[64];
	struct ctl_msg m;

	assert_int_equal(ctl__encode(frame, sizeof(frame), CTL_REQ_STATS, 1, NULL, 0), HDR);
	assert_int_equal(ctl__decode(frame, HDR, &m), 0);
	for (size_t n = 0; n < HDR; n++)
		assert_int_equal(ctl__decode(frame, n, &m), -EBADMSG);
}

static void test_reject_magic(void **state)
{
	_Alignas(8) uint8_t frame[64];
	const uint32_t bad[] = { 0, CTL_MAGIC ^ 1, CTL_MAGIC ^ 0x80000000u, __builtin_bswap32(CTL_MAGIC), UINT32_MAX };
	struct ctl_msg m;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		put_hdr(frame, bad[i], CTL_VERSION, CTL_REQ_STATS, 0, 1);
		assert_int_equal(ctl__decode(frame, HDR, &m), -EBADMSG);
	}
}

static void test_reject_version(void **state)
{
	_Alignas(8) uint8_t frame[64];
	const uint16_t bad[] = { 0, CTL_VERSION + 1, 0x0100, UINT16_MAX };
	struct ctl_msg m;

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		put_hdr(frame, CTL_MAGIC, bad[i], CTL_REQ_STATS, 0, 1);
		assert_int_equal(ctl__decode(frame, HDR, &m), -EPROTONOSUPPORT);
	}
}

static void test_reject_unknown_type(void **state)
{
	_Alignas(8) uint8_t frame[CTL_MAX_FRAME + 8];
	const uint16_t bad[] = { 0, 1, CTL_TYPE_MAX, CTL_TYPE_MAX + 1, 0x100 | CTL_REQ_HELLO, UINT16_MAX };
	struct ctl_msg m;

	memset(frame, 0, sizeof(frame));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		const uint32_t lens[] = { 0, 8, 16 };
		for (size_t j = 0; j < ARRAY_SIZE(lens); j++) {
			put_hdr(frame, CTL_MAGIC, CTL_VERSION, bad[i], lens[j], 1);
			assert_int_equal(ctl__decode(frame, HDR + lens[j], &m), -EOPNOTSUPP);
		}
		assert_string_equal(ctl__type_name(bad[i]), "unknown");
	}
	/* Unknown type at exactly the frame limit is still "unknown type"... */
	put_hdr(frame, CTL_MAGIC, CTL_VERSION, CTL_TYPE_MAX, CTL_MAX_FRAME - HDR, 1);
	assert_int_equal(ctl__decode(frame, CTL_MAX_FRAME, &m), -EOPNOTSUPP);
}

static void test_reject_oversize(void **state)
{
	static _Alignas(8) uint8_t frame[CTL_MAX_FRAME + 4096];
	struct ctl_msg m;

	memset(frame, 0, sizeof(frame));
	/* ...but one byte more is a malformed frame, whatever its contents. */
	put_hdr(frame, CTL_MAGIC, CTL_VERSION, CTL_TYPE_MAX, CTL_MAX_FRAME + 1 - HDR, 1);
	assert_int_equal(ctl__decode(frame, CTL_MAX_FRAME + 1, &m), -EBADMSG);
	put_hdr(frame, CTL_MAGIC, CTL_VERSION, CTL_REQ_HELLO, sizeof(frame) - HDR, 1);
	assert_int_equal(ctl__decode(frame, sizeof(frame), &m), -EBADMSG);
	/* An ATTACH whose pid count matches an oversized frame. */
	uint32_t npids = (uint32_t)((CTL_MAX_FRAME + 4 - HDR - sizeof(struct ctl_attach)) / 4);
	size_t n = make_attach(frame, sizeof(frame), npids, npids, 1);
	assert_true(n > CTL_MAX_FRAME);
	assert_int_equal(ctl__decode(frame, n, &m), -EBADMSG);
	/* Even the header is not trusted (type/len) once the size is wrong. */
	put_hdr(frame, 0, 0, 0, 0, 0);
	assert_int_equal(ctl__decode(frame, CTL_MAX_FRAME + 1, &m), -EBADMSG);
}

static void test_reject_len_mismatch(void **state)
{
	_Alignas(8) uint8_t frame[CTL_MAX_FRAME + 8];
	struct ctl_msg m;

	memset(frame, 0, sizeof(frame));
	for (size_t i = 0; i < ARRAY_SIZE(fixed_types); i++) {
		uint16_t type = fixed_types[i].type;
		uint32_t len = fixed_types[i].size;

		/* Header says len but one more / one fewer byte arrived. */
		put_hdr(frame, CTL_MAGIC, CTL_VERSION, type, len, 5);
		assert_int_equal(ctl__decode(frame, HDR + len, &m), 0);
		assert_int_equal(ctl__decode(frame, HDR + len + 1, &m), -EBADMSG);
		if (len)
			assert_int_equal(ctl__decode(frame, HDR + len - 1, &m), -EBADMSG);
		/* Header len pointing far beyond the buffer. */
		put_hdr(frame, CTL_MAGIC, CTL_VERSION, type, UINT32_MAX, 5);
		assert_int_equal(ctl__decode(frame, HDR + len, &m), -EBADMSG);
		put_hdr(frame, CTL_MAGIC, CTL_VERSION, type, len + 1, 5);
		assert_int_equal(ctl__decode(frame, HDR + len, &m), -EBADMSG);
	}
	size_t n = make_attach(frame, sizeof(frame), 3, 3, 1);
	assert_int_equal(ctl__decode(frame, n, &m), 0);
	assert_int_equal(ctl__decode(frame, n - 1, &m), -EBADMSG);
	assert_int_equal(ctl__decode(frame, n + 4, &m), -EBADMSG);
}

/* Header and buffer agree, but the payload size is wrong for the type. */
static void test_reject_wrong_fixed_size(void **state)
{
	_Alignas(8) uint8_t frame[CTL_MAX_FRAME], payload[512];
	struct ctl_msg m;

	memset(payload, 0x5a, sizeof(payload));
	for (size_t i = 0; i < ARRAY_SIZE(fixed_types); i++) {
		uint16_t type = fixed_types[i].type;
		uint32_t good = fixed_types[i].size;
		uint32_t bad[] = { good + 1, good + 4, good + 8, good * 2 + 8, good ? good - 1 : 300,
				   good ? good - 4 : 4, good ? 0 : 8 };

		for (size_t j = 0; j < ARRAY_SIZE(bad); j++) {
			if (bad[j] == good || bad[j] > sizeof(payload))
				continue;
			int n = ctl__encode(frame, sizeof(frame), type, 3, payload, bad[j]);
			assert_int_equal(n, HDR + bad[j]);
			assert_int_equal(ctl__decode(frame, n, &m), -EBADMSG);
		}
	}
}

static void test_reject_attach(void **state)
{
	static _Alignas(8) uint8_t frame[CTL_MAX_FRAME];
	struct ctl_msg m;
	size_t n;

	/* npids 0, with and without a consistent length. */
	n = make_attach(frame, sizeof(frame), 0, 0, 1);
	assert_int_equal(ctl__decode(frame, n, &m), -EBADMSG);
	n = make_attach(frame, sizeof(frame), 0, 1, 1);
	assert_int_equal(ctl__decode(frame, n, &m), -EBADMSG);

	/* npids > CTL_MAX_PIDS although the length matches (still < CTL_MAX_FRAME). */
	n = make_attach(frame, sizeof(frame), CTL_MAX_PIDS + 1, CTL_MAX_PIDS + 1, 1);
	assert_true(n <= CTL_MAX_FRAME);
	assert_int_equal(ctl__decode(frame, n, &m), -EBADMSG);
	n = make_attach(frame, sizeof(frame), CTL_MAX_PIDS + 1, CTL_MAX_PIDS, 1);
	assert_int_equal(ctl__decode(frame, n, &m), -EBADMSG);

	/* npids whose byte count would wrap 32-bit arithmetic. */
	const uint32_t huge[] = { 0x40000000u, 0x40000001u, 0x3ffffff8u, UINT32_MAX };
	for (size_t i = 0; i < ARRAY_SIZE(huge); i++) {
		n = make_attach(frame, sizeof(frame), huge[i], 4, 1);
		assert_int_equal(ctl__decode(frame, n, &m), -EBADMSG);
	}

	/* npids inconsistent with the length, both directions. */
	const uint32_t pairs[][2] = { { 3, 2 }, { 3, 4 }, { 1, 0 }, { 1, 2 }, { 2, 1 },
				      { CTL_MAX_PIDS, CTL_MAX_PIDS - 1 }, { CTL_MAX_PIDS - 1, CTL_MAX_PIDS } };
	for (size_t i = 0; i < ARRAY_SIZE(pairs); i++) {
		n = make_attach(frame, sizeof(frame), pairs[i][0], pairs[i][1], 1);
		assert_int_equal(ctl__decode(frame, n, &m), -EBADMSG);
	}

	/* A pid list that is not a whole number of pids. */
	n = make_attach(frame, sizeof(frame), 2, 2, 1);
	put_hdr(frame, CTL_MAGIC, CTL_VERSION, CTL_REQ_ATTACH, (uint32_t)(n - HDR + 2), 1);
	assert_int_equal(ctl__decode(frame, n + 2, &m), -EBADMSG);

	/* Payload shorter than the fixed part of ATTACH. */
	for (uint32_t len = 0; len < sizeof(struct ctl_attach); len++) {
		memset(frame + HDR, 0, sizeof(struct ctl_attach));
		frame[HDR + offsetof(struct ctl_attach, npids)] = 1;
		put_hdr(frame, CTL_MAGIC, CTL_VERSION, CTL_REQ_ATTACH, len, 1);
		assert_int_equal(ctl__decode(frame, HDR + len, &m), -EBADMSG);
	}
}

/* ---- names ---------------------------------------------------------------- */

static void test_stat_names(void **state)
{
	for (unsigned i = 0; i < CTL_STAT_MAX; i++) {
		const char *s = ctl__stat_name(i);

		assert_non_null(s);
		assert_string_not_equal(s, "unknown");
		assert_true(s[0] != '\0');
		/* Names become metric names: lower-case, digits, underscores. */
		for (const char *p = s; *p; p++)
			assert_true((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_');
		for (unsigned j = 0; j < i; j++)
			assert_string_not_equal(s, ctl__stat_name(j));
	}
	assert_string_equal(ctl__stat_name(CTL_STAT_MAX), "unknown");
	assert_string_equal(ctl__stat_name(UINT32_MAX), "unknown");
	/* Published as gauges: the levels (how many now), and only they; in another unit only the Python walk's ns. */
	for (unsigned i = 0; i < CTL_STAT_MAX; i++) {
		assert_string_equal(ctl_stat_counters[i].name, ctl__stat_name(i));
		assert_int_equal(ctl_stat_counters[i].level,
				 i == CTL_STAT_TASKS_ACTIVE || i == CTL_STAT_UNWIND_TABLES || i == CTL_STAT_UNWIND_ROWS ||
				 i == CTL_STAT_UNWIND_ROWS_MAX || i == CTL_STAT_UNWIND_PROCS || i == CTL_STAT_NET_SOCKET_LAYER);
		assert_int_equal(ctl_stat_counters[i].per_unit, i == CTL_STAT_BPF_PY_NS ? 1000000000 : 0);
	}
}

static void test_type_names(void **state)
{
	for (unsigned t = CTL_REQ_HELLO; t < CTL_TYPE_MAX; t++) {
		assert_string_not_equal(ctl__type_name(t), "unknown");
		for (unsigned u = CTL_REQ_HELLO; u < t; u++)
			assert_string_not_equal(ctl__type_name(t), ctl__type_name(u));
	}
	assert_string_equal(ctl__type_name(CTL_TYPE_MAX), "unknown");
	assert_string_equal(ctl__type_name(UINT32_MAX), "unknown");
}

/* ---- send / recv over SOCK_SEQPACKET --------------------------------------- */

static void test_sendrecv_fds(void **state)
{
	_Alignas(8) uint8_t buf[CTL_MAX_FRAME];
	int sv[2], files[3];
	struct ctl_msg m;

	seqpacket_pair(sv);
	open_three(files);
	for (unsigned nfds = 0; nfds <= CTL_MAX_FDS; nfds++) {
		struct ctl_hello_ans ha = { .err = 0, .nshards = nfds, .ring_size = 4096u << nfds };
		int got[CTL_MAX_FDS] = { -1, -1, -1 };
		unsigned ngot = 99;
		int base = count_open_fds();

		assert_int_equal(ctl__send(sv[0], CTL_ANS_HELLO, 100 + nfds, &ha, sizeof(ha), nfds ? files : NULL, nfds), 0);
		int r = ctl__recv(sv[1], buf, sizeof(buf), got, CTL_MAX_FDS, &ngot);
		assert_int_equal(r, HDR + sizeof(ha));
		assert_int_equal(ngot, nfds);
		assert_int_equal(count_open_fds(), base + (int)nfds);

		assert_int_equal(ctl__decode(buf, r, &m), 0);
		assert_int_equal(m.type, CTL_ANS_HELLO);
		assert_int_equal(m.seq, 100 + nfds);
		assert_memory_equal(m.payload, &ha, sizeof(ha));

		for (unsigned i = 0; i < nfds; i++) {
			assert_true(got[i] >= 0);
			assert_int_not_equal(got[i], files[i]);
			assert_same_file(got[i], files[i]);
			assert_cloexec(got[i]);
		}
		for (unsigned i = nfds; i < CTL_MAX_FDS; i++)
			assert_int_equal(got[i], -1);
		/* The received memfd is the same open file: data written through it is visible. */
		if (nfds >= 1) {
			char rd[8] = { 0 };
			assert_int_equal(pwrite(got[0], "ember", 5, 0), 5);
			assert_int_equal(pread(files[0], rd, 5, 0), 5);
			assert_string_equal(rd, "ember");
		}
		close_all(got, nfds);
		assert_int_equal(count_open_fds(), base);
	}
	/* More than CTL_MAX_FDS is refused before anything is sent. */
	int four[4] = { files[0], files[1], files[2], files[0] };
	assert_int_equal(ctl__send(sv[0], CTL_REQ_STATS, 1, NULL, 0, four, 4), -EINVAL);
	/* Too large a payload. */
	static uint8_t big[CTL_MAX_FRAME];
	assert_int_equal(ctl__send(sv[0], CTL_ANS_HELLO, 1, big, CTL_MAX_FRAME - HDR + 1, NULL, 0), -EMSGSIZE);

	/* Nothing else was queued by the failed sends: EOF comes next. */
	close(sv[0]);
	unsigned ngot = 99;
	assert_int_equal(ctl__recv(sv[1], buf, sizeof(buf), NULL, 0, &ngot), 0);
	assert_int_equal(ngot, 0);
	close(sv[1]);
	close_all(files, 3);
}

/* The caller asks for fewer fds than the peer sends: the rest must not leak. */
static void test_recv_extra_fds_closed(void **state)
{
	_Alignas(8) uint8_t buf[CTL_MAX_FRAME], frame[64];
	int sv[2], files[3], push[8];
	int n;

	seqpacket_pair(sv);
	open_three(files);
	for (unsigned i = 0; i < ARRAY_SIZE(push); i++)
		push[i] = files[i % 3];
	n = ctl__encode(frame, sizeof(frame), CTL_REQ_STATS, 7, NULL, 0);
	assert_int_equal(n, HDR);

	const struct { unsigned pushed, max; } cases[] = {
		{ 4, 3 }, { 5, 3 }, { 3, 1 }, { 2, 0 }, { 1, 0 }, { 6, 2 },
	};
	for (size_t k = 0; k < ARRAY_SIZE(cases); k++) {
		int got[CTL_MAX_FDS] = { -1, -1, -1 };
		unsigned ngot = 99;
		int base = count_open_fds();

		send_raw(sv[0], frame, n, push, cases[k].pushed);
		int r = ctl__recv(sv[1], buf, sizeof(buf), cases[k].max ? got : NULL, cases[k].max, &ngot);
		assert_int_equal(r, HDR);
		assert_int_equal(ngot, cases[k].max);
		assert_int_equal(count_open_fds(), base + (int)cases[k].max);
		for (unsigned i = 0; i < ngot; i++) {
			assert_same_file(got[i], push[i]);
			assert_cloexec(got[i]);
		}
		close_all(got, ngot);
		assert_int_equal(count_open_fds(), base);
	}

	/* ret_nfds may be NULL: fds are still stored / closed as asked. */
	{
		int got[1] = { -1 };
		int base = count_open_fds();
		send_raw(sv[0], frame, n, push, 2);
		assert_int_equal(ctl__recv(sv[1], buf, sizeof(buf), got, 1, NULL), HDR);
		assert_true(got[0] >= 0);
		assert_same_file(got[0], push[0]);
		close(got[0]);
		assert_int_equal(count_open_fds(), base);
	}
	close(sv[0]);
	close(sv[1]);
	close_all(files, 3);
}

/* A peer flooding fds beyond the control buffer: truncated, reported, no leak. */
static void test_recv_fd_flood(void **state)
{
	_Alignas(8) uint8_t buf[CTL_MAX_FRAME], frame[64];
	int sv[2], files[3], push[64];
	int n;

	seqpacket_pair(sv);
	open_three(files);
	for (unsigned i = 0; i < ARRAY_SIZE(push); i++)
		push[i] = files[i % 3];
	n = ctl__encode(frame, sizeof(frame), CTL_REQ_STATS, 8, NULL, 0);

	const unsigned pushed[] = { 16, 64 };
	for (size_t k = 0; k < ARRAY_SIZE(pushed); k++) {
		int got[CTL_MAX_FDS] = { -1, -1, -1 };
		unsigned ngot = 99;
		int base = count_open_fds();

		send_raw(sv[0], frame, n, push, pushed[k]);
		assert_int_equal(ctl__recv(sv[1], buf, sizeof(buf), got, CTL_MAX_FDS, &ngot), -EMSGSIZE);
		assert_int_equal(ngot, 0);
		assert_int_equal(count_open_fds(), base);
	}
	/* The stream is still usable afterwards. */
	unsigned ngot = 99;
	assert_int_equal(ctl__send(sv[0], CTL_REQ_STATS, 9, NULL, 0, NULL, 0), 0);
	assert_int_equal(ctl__recv(sv[1], buf, sizeof(buf), NULL, 0, &ngot), HDR);
	close(sv[0]);
	close(sv[1]);
	close_all(files, 3);
}

/* A packet larger than the receive buffer: -EMSGSIZE, its fds closed, next packet intact. */
static void test_recv_truncated(void **state)
{
	_Alignas(8) uint8_t buf[CTL_MAX_FRAME];
	int sv[2], files[3];
	struct ctl_stats_ans st = { .err = 0, .n = CTL_STAT_MAX };
	struct ctl_msg m;

	seqpacket_pair(sv);
	open_three(files);
	for (unsigned nfds = 0; nfds <= CTL_MAX_FDS; nfds++) {
		int got[CTL_MAX_FDS] = { -1, -1, -1 };
		unsigned ngot = 99;
		int base = count_open_fds();

		assert_int_equal(ctl__send(sv[0], CTL_ANS_STATS, 20 + nfds, &st, sizeof(st), nfds ? files : NULL, nfds), 0);
		assert_int_equal(ctl__recv(sv[1], buf, 64, got, CTL_MAX_FDS, &ngot), -EMSGSIZE);
		assert_int_equal(ngot, 0);
		assert_int_equal(count_open_fds(), base);

		/* Off by one: the frame is exactly one byte larger than the buffer. */
		assert_int_equal(ctl__send(sv[0], CTL_ANS_STATS, 30 + nfds, &st, sizeof(st), nfds ? files : NULL, nfds), 0);
		assert_int_equal(ctl__recv(sv[1], buf, HDR + sizeof(st) - 1, got, CTL_MAX_FDS, &ngot), -EMSGSIZE);
		assert_int_equal(ngot, 0);
		assert_int_equal(count_open_fds(), base);

		/* Framing is not desynchronised: the next packet arrives whole. */
		struct ctl_detach d = { .task_id = 40 + nfds };
		assert_int_equal(ctl__send(sv[0], CTL_REQ_DETACH, 40 + nfds, &d, sizeof(d), NULL, 0), 0);
		int r = ctl__recv(sv[1], buf, sizeof(buf), got, CTL_MAX_FDS, &ngot);
		assert_int_equal(r, HDR + sizeof(d));
		assert_int_equal(ngot, 0);
		assert_int_equal(ctl__decode(buf, r, &m), 0);
		assert_int_equal(m.type, CTL_REQ_DETACH);
		assert_int_equal(m.seq, 40 + nfds);
	}
	close(sv[0]);
	close(sv[1]);
	close_all(files, 3);
}

/* ---- ctl__call --------------------------------------------------------------- */

enum srv_mode {
	SRV_OK,
	SRV_BAD_SEQ,
	SRV_BAD_TYPE,     /* a well-formed answer of another type (same size) */
	SRV_BAD_SIZE,     /* the right answer type with a wrong payload size */
	SRV_BAD_MAGIC,
	SRV_HANGUP,       /* close without answering */
};

struct srv {
	int sock;
	enum srv_mode mode;
	const int *fds;
	unsigned nfds;
	/* What the server saw, checked by the test thread (no cmocka asserts in threads). */
	int err;
	uint16_t req_type;
	uint32_t req_seq;
	uint32_t req_len;
	uint8_t req[CTL_MAX_FRAME];
};

/* Answer payload for a request, derived from it so the client can check it. */
static uint32_t answer_for(const struct ctl_msg *m, void *ans)
{
	switch (m->type) {
	case CTL_REQ_HELLO: {
		struct ctl_hello h;
		memcpy(&h, m->payload, sizeof(h));
		struct ctl_hello_ans a = { .err = 0, .nshards = h.shard + 1, .ring_size = (uint64_t)h.abi_version << 20 };
		memcpy(ans, &a, sizeof(a));
		return sizeof(a);
	}
	case CTL_REQ_STATS: {
		struct ctl_stats_ans a = { .err = 0, .n = CTL_STAT_MAX };
		for (unsigned i = 0; i < CTL_STAT_MAX; i++)
			a.v[i] = (uint64_t)m->seq * 1000 + i;
		memcpy(ans, &a, sizeof(a));
		return sizeof(a);
	}
	case CTL_REQ_ATTACH: {
		struct ctl_attach at;
		memcpy(&at, m->payload, sizeof(at));
		struct ctl_attach_ans a = { .err = 0, .attach_point = CTL_AP_PERF_CPU_CLOCK, .npids_ok = at.npids };
		memcpy(ans, &a, sizeof(a));
		return sizeof(a);
	}
	default: {
		struct ctl_err_ans a = { .err = -(int32_t)m->seq };
		memcpy(ans, &a, sizeof(a));
		return sizeof(a);
	}
	}
}

static void *srv_main(void *arg)
{
	struct srv *s = arg;
	_Alignas(8) uint8_t buf[CTL_MAX_FRAME], ans[CTL_MAX_FRAME];
	struct ctl_msg m;
	int r;

	r = ctl__recv(s->sock, buf, sizeof(buf), NULL, 0, NULL);
	if (r <= 0) {
		s->err = r ? r : -ECONNRESET;
		return NULL;
	}
	r = ctl__decode(buf, r, &m);
	if (r < 0) {
		s->err = r;
		return NULL;
	}
	s->req_type = m.type;
	s->req_seq = m.seq;
	s->req_len = m.len;
	if (m.len)
		memcpy(s->req, m.payload, m.len);

	uint32_t len = answer_for(&m, ans);
	uint16_t type = m.type + 1;
	uint32_t seq = m.seq;
	switch (s->mode) {
	case SRV_OK:
		break;
	case SRV_BAD_SEQ:
		seq++;
		break;
	case SRV_BAD_TYPE:
		type = type == CTL_ANS_DETACH ? CTL_ANS_OPEN_MAPS : CTL_ANS_DETACH;
		break;
	case SRV_BAD_SIZE:
		len += 8;
		break;
	case SRV_BAD_MAGIC: {
		uint8_t frame[CTL_MAX_FRAME];
		int n = ctl__encode(frame, sizeof(frame), type, seq, ans, len);
		frame[0] ^= 0xff;
		send_raw(s->sock, frame, n, s->fds, s->nfds);
		return NULL;
	}
	case SRV_HANGUP:
		shutdown(s->sock, SHUT_RDWR);
		return NULL;
	}
	s->err = ctl__send(s->sock, type, seq, ans, len, s->fds, s->nfds);
	return NULL;
}

/* Runs one ctl__call against a server thread; returns ctl__call's result. */
static int call_with_server(enum srv_mode mode, const int *fds, unsigned nfds, struct srv **ret_srv,
			    uint16_t type, const void *req, uint32_t req_len, uint16_t ans_type,
			    void *ans, uint32_t ans_len, int *got, unsigned max_fds, unsigned *ngot)
{
	struct srv *s = calloc(1, sizeof(*s));
	pthread_t th;
	int sv[2], r;

	assert_non_null(s);
	seqpacket_pair(sv);
	s->sock = sv[1];
	s->mode = mode;
	s->fds = fds;
	s->nfds = nfds;
	assert_int_equal(pthread_create(&th, NULL, srv_main, s), 0);
	r = ctl__call(sv[0], type, req, req_len, ans_type, ans, ans_len, got, max_fds, ngot);
	assert_int_equal(pthread_join(th, NULL), 0);
	close(sv[0]);
	close(sv[1]);
	*ret_srv = s;
	return r;
}

static void test_call_ok(void **state)
{
	int files[3];
	struct srv *s;

	open_three(files);

	/* HELLO: fixed request, answer carrying three fds. */
	{
		struct ctl_hello req = { .shard = 2, .abi_version = 5 };
		struct ctl_hello_ans ans;
		int got[CTL_MAX_FDS] = { -1, -1, -1 };
		unsigned ngot = 99;
		int base = count_open_fds();

		int r = call_with_server(SRV_OK, files, 3, &s, CTL_REQ_HELLO, &req, sizeof(req),
					 CTL_ANS_HELLO, &ans, sizeof(ans), got, CTL_MAX_FDS, &ngot);
		assert_int_equal(r, 0);
		assert_int_equal(s->err, 0);
		assert_int_equal(s->req_type, CTL_REQ_HELLO);
		assert_int_equal(s->req_len, sizeof(req));
		assert_memory_equal(s->req, &req, sizeof(req));
		assert_int_equal(ans.err, 0);
		assert_int_equal(ans.nshards, 3);
		assert_true(ans.ring_size == 5u << 20);
		assert_int_equal(ngot, 3);
		for (int i = 0; i < 3; i++) {
			assert_same_file(got[i], files[i]);
			assert_cloexec(got[i]);
		}
		close_all(got, 3);
		assert_int_equal(count_open_fds(), base);
		uint32_t seq1 = s->req_seq;
		free(s);

		/* A second call uses a new sequence number. */
		struct ctl_err_ans ea;
		r = call_with_server(SRV_OK, NULL, 0, &s, CTL_REQ_OPEN_KALLSYMS, NULL, 0,
				     CTL_ANS_OPEN_KALLSYMS, &ea, sizeof(ea), NULL, 0, NULL);
		assert_int_equal(r, 0);
		assert_int_equal(s->err, 0);
		assert_int_equal(s->req_type, CTL_REQ_OPEN_KALLSYMS);
		assert_int_equal(s->req_len, 0);
		assert_int_not_equal(s->req_seq, seq1);
		assert_int_equal(ea.err, -(int32_t)s->req_seq);
		free(s);
	}

	/* ATTACH: variable-length request goes through intact. */
	{
		_Alignas(8) uint8_t req[sizeof(struct ctl_attach) + 5 * sizeof(uint32_t)];
		struct ctl_attach a = { .task_id = 99, .kind = 1, .npids = 5, .period_ns = 1, .min_block_ns = 2 };
		uint32_t pids[5] = { 1, 22, 333, 4444, 55555 };
		struct ctl_attach_ans aa;

		memcpy(req, &a, sizeof(a));
		memcpy(req + sizeof(a), pids, sizeof(pids));
		int r = call_with_server(SRV_OK, NULL, 0, &s, CTL_REQ_ATTACH, req, sizeof(req),
					 CTL_ANS_ATTACH, &aa, sizeof(aa), NULL, 0, NULL);
		assert_int_equal(r, 0);
		assert_int_equal(s->err, 0);
		assert_int_equal(s->req_type, CTL_REQ_ATTACH);
		assert_int_equal(s->req_len, sizeof(req));
		assert_memory_equal(s->req, req, sizeof(req));
		assert_int_equal(aa.err, 0);
		assert_int_equal(aa.attach_point, CTL_AP_PERF_CPU_CLOCK);
		assert_int_equal(aa.npids_ok, 5);
		free(s);
	}

	/* Bad request arguments are refused locally. */
	{
		int sv[2];
		static uint8_t big[CTL_MAX_FRAME];
		struct ctl_err_ans ea;
		seqpacket_pair(sv);
		assert_int_equal(ctl__call(sv[0], CTL_ANS_HELLO, big, sizeof(big), CTL_ANS_HELLO, &ea, sizeof(ea),
					   NULL, 0, NULL), -EMSGSIZE);
		/* Peer gone before the call. */
		close(sv[1]);
		assert_true(ctl__call(sv[0], CTL_REQ_STATS, NULL, 0, CTL_ANS_STATS, &ea, sizeof(ea), NULL, 0, NULL) < 0);
		close(sv[0]);
	}
	close_all(files, 3);
}

/* A forked child answering over the socket, passing an fd it created itself. */
static void test_call_forked(void **state)
{
	int sv[2], status;
	pid_t pid;

	seqpacket_pair(sv);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		_Alignas(8) uint8_t buf[CTL_MAX_FRAME], ans[CTL_MAX_FRAME];
		struct ctl_msg m;
		int r;

		close(sv[0]);
		/* Serve requests until EOF. */
		while ((r = ctl__recv(sv[1], buf, sizeof(buf), NULL, 0, NULL)) > 0) {
			if (ctl__decode(buf, r, &m) < 0)
				_exit(2);
			if (m.type == CTL_REQ_OPEN_FILE) {
				struct ctl_open_file of;
				char text[64];
				int fd = memfd_create("child", MFD_CLOEXEC);
				memcpy(&of, m.payload, sizeof(of));
				int tl = snprintf(text, sizeof(text), "child %d pid %u", (int)getpid(), of.pid);
				if (fd < 0 || write(fd, text, tl) != tl)
					_exit(3);
				struct ctl_err_ans ea = { .err = 0 };
				r = ctl__send(sv[1], CTL_ANS_OPEN_FILE, m.seq, &ea, sizeof(ea), &fd, 1);
				close(fd);
			} else {
				uint32_t len = answer_for(&m, ans);
				r = ctl__send(sv[1], m.type + 1, m.seq, ans, len, NULL, 0);
			}
			if (r < 0)
				_exit(4);
		}
		_exit(r == 0 ? 0 : 5);
	}
	close(sv[1]);

	struct ctl_stats_ans st;
	assert_int_equal(ctl__call(sv[0], CTL_REQ_STATS, NULL, 0, CTL_ANS_STATS, &st, sizeof(st), NULL, 0, NULL), 0);
	assert_int_equal(st.n, CTL_STAT_MAX);
	uint64_t seq = st.v[0] / 1000;
	for (unsigned i = 0; i < CTL_STAT_MAX; i++)
		assert_true(st.v[i] == seq * 1000 + i);

	struct ctl_open_file of = { .pid = 31337, .start = 0, .end = 4096 };
	struct ctl_err_ans ea;
	int fd = -1;
	unsigned nfd = 0;
	int base = count_open_fds();
	assert_int_equal(ctl__call(sv[0], CTL_REQ_OPEN_FILE, &of, sizeof(of), CTL_ANS_OPEN_FILE, &ea, sizeof(ea),
				   &fd, 1, &nfd), 0);
	assert_int_equal(ea.err, 0);
	assert_int_equal(nfd, 1);
	assert_cloexec(fd);
	char text[64] = { 0 }, want[64];
	snprintf(want, sizeof(want), "child %d pid 31337", (int)pid);
	assert_true(pread(fd, text, sizeof(text) - 1, 0) > 0);
	assert_string_equal(text, want);
	close(fd);
	assert_int_equal(count_open_fds(), base);

	close(sv[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_call_rejects(void **state)
{
	const enum srv_mode modes[] = { SRV_BAD_SEQ, SRV_BAD_TYPE, SRV_BAD_SIZE, SRV_BAD_MAGIC };
	int files[3];

	open_three(files);
	for (size_t k = 0; k < ARRAY_SIZE(modes); k++) {
		for (unsigned nfds = 0; nfds <= CTL_MAX_FDS; nfds++) {
			struct ctl_open_maps req = { .pid = 1234 };
			struct ctl_err_ans ans = { .err = 0x5555, .pad = 0x6666 };
			int got[CTL_MAX_FDS] = { -1, -1, -1 };
			unsigned ngot = 99;
			struct srv *s;
			int base = count_open_fds();

			int r = call_with_server(modes[k], files, nfds, &s, CTL_REQ_OPEN_MAPS, &req, sizeof(req),
						 CTL_ANS_OPEN_MAPS, &ans, sizeof(ans), got, CTL_MAX_FDS, &ngot);
			assert_int_equal(s->err, 0);
			assert_int_equal(s->req_type, CTL_REQ_OPEN_MAPS);
			assert_int_equal(r, -EBADMSG);
			/* Nothing handed out, nothing written, nothing leaked. */
			assert_int_equal(ans.err, 0x5555);
			assert_int_equal(ans.pad, 0x6666);
			assert_int_equal(count_open_fds(), base);
			free(s);
		}
	}

	/* The caller's expected size disagrees with the (valid) answer. */
	{
		struct ctl_hello req = { .shard = 0, .abi_version = 1 };
		uint8_t ans[64];
		int got[CTL_MAX_FDS] = { -1, -1, -1 };
		unsigned ngot = 99;
		struct srv *s;
		int base = count_open_fds();

		int r = call_with_server(SRV_OK, files, 3, &s, CTL_REQ_HELLO, &req, sizeof(req), CTL_ANS_HELLO,
					 ans, sizeof(struct ctl_hello_ans) - 8, got, CTL_MAX_FDS, &ngot);
		assert_int_equal(s->err, 0);
		assert_int_equal(r, -EBADMSG);
		assert_int_equal(count_open_fds(), base);
		free(s);
	}

	/* The peer hangs up instead of answering. */
	{
		struct ctl_err_ans ans;
		struct srv *s;
		int r = call_with_server(SRV_HANGUP, NULL, 0, &s, CTL_REQ_DETACH, &(struct ctl_detach){ .task_id = 1 },
					 sizeof(struct ctl_detach), CTL_ANS_DETACH, &ans, sizeof(ans), NULL, 0, NULL);
		assert_int_equal(s->err, 0);
		assert_int_equal(r, -ECONNRESET);
		free(s);
	}
	close_all(files, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_roundtrip_fixed),
		cmocka_unit_test(test_roundtrip_typed),
		cmocka_unit_test(test_roundtrip_attach),
		cmocka_unit_test(test_encode_limits),
		cmocka_unit_test(test_reject_short),
		cmocka_unit_test(test_reject_magic),
		cmocka_unit_test(test_reject_version),
		cmocka_unit_test(test_reject_unknown_type),
		cmocka_unit_test(test_reject_oversize),
		cmocka_unit_test(test_reject_len_mismatch),
		cmocka_unit_test(test_reject_wrong_fixed_size),
		cmocka_unit_test(test_reject_attach),
		cmocka_unit_test(test_stat_names),
		cmocka_unit_test(test_type_names),
		cmocka_unit_test(test_sendrecv_fds),
		cmocka_unit_test(test_recv_extra_fds_closed),
		cmocka_unit_test(test_recv_fd_flood),
		cmocka_unit_test(test_recv_truncated),
		cmocka_unit_test(test_call_ok),
		cmocka_unit_test(test_call_forked),
		cmocka_unit_test(test_call_rejects),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
