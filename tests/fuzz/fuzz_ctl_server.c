/*
 * The collector's request handlers (collector/ctl_server.c) on hostile
 * frames, not only the decoder: a connection from a uid the input picks
 * sends a sequence of frames; each is served with the real task table, fd
 * broker, target policy and unwind store, behind kinds that touch no BPF.
 * The frames' pids are mapped onto live processes (this one, its parent,
 * init, kthreadd) so the broker and the policy run on real /proc files;
 * every answer is read back and every fd it carries is closed.
 *
 * Input: [uid selector][frames...], each frame [u16 length][flags][bytes];
 * flags bit 0 writes a valid header (magic, version, length) over the first
 * bytes, so most frames reach a handler.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bpf/ember_abi.h"
#include "collector/broker.h"
#include "collector/collector.h"
#include "collector/ctl_server.h"
#include "collector/target_policy.h"
#include "collector/tasks.h"
#include "collector/unwind_store.h"
#include "common/ctl_proto.h"
#include "common/log.h"
#include "common/profile_kind.h"
#include "common/shm_ring.h"

#define NSHARDS 2
#define EXPORTER_UID 12345u

static struct collector_shard shards[NSHARDS];
static uint32_t live[4];

/* Kinds that keep their own count of programs on, and check the table uses them in pairs. */
static int on_count[EMBER_TASK_NETWORK + 1];

static int k_attach(void *impl, struct task *t)
{
	(void)impl;
	if ((t->id & 0xff) == 0x7f)
		return -EBUSY;	/* an attach that fails, sometimes */
	on_count[t->kind]++;
	t->attach_point = CTL_AP_TP_BTF;
	return 0;
}

static void k_detach(void *impl, struct task *t)
{
	(void)impl;
	if (--on_count[t->kind] < 0)
		abort();	/* detached more often than attached */
}

static int k_target(void *impl, const struct task *t, uint32_t pid, bool on)
{
	(void)impl;
	(void)t;
	return pid == live[1] && on ? -ENOSPC : 0;
}

static uint32_t k_follows(void *impl, uint32_t pid)
{
	(void)impl;
	return pid == live[2] ? live[0] : 0;
}

static struct collector_kind kinds[EMBER_TASK_NETWORK + 1];

static int store_rows(void *ctx, uint32_t first, const struct unwind_row *rows, uint32_t n)
{
	(void)ctx;
	(void)first;
	(void)rows;
	(void)n;
	return 0;
}

static int store_proc(void *ctx, uint32_t tgid, uint32_t slot, const struct unwind_proc *p)
{
	(void)ctx;
	(void)tgid;
	(void)slot;
	(void)p;
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log__init("fuzz", LOG_LVL_ERROR);
	for (unsigned s = 0; s < NSHARDS; s++)
		if (!(shards[s].ring = shm_ring__create(65536, "fuzz-ctl")))
			abort();
	for (uint32_t k = EMBER_TASK_ONCPU; k <= EMBER_TASK_NETWORK; k++)
		kinds[k] = (struct collector_kind){ .kind = k, .name = "fake",
						    .flags = k == EMBER_TASK_NETWORK ? CTL_ATTACH_F_PREFIX | CTL_ATTACH_F_L2
										     : CTL_ATTACH_F_HOLD,
						    .attach = k_attach, .detach = k_detach, .target = k_target,
						    .follows = k == EMBER_TASK_NETWORK ? k_follows : NULL };
	live[0] = (uint32_t)getpid();
	live[1] = (uint32_t)getppid();
	live[2] = 1;
	live[3] = 2;
	return 0;
}

/* A connection cap reaches the program only checked: a network task's target, within NET_MAX_PAYLOAD. */
static int hook_net_cap(void *ctx, uint64_t ino, const struct net_cap *cap)
{
	struct collector *c = ctx;
	bool target = false;

	for (unsigned s = 0; s < NSHARDS && !target; s++)
		target = tasks__targets(c->tasks, s, 1u << EMBER_TASK_NETWORK, cap->tgid, false);
	if (!ino || cap->read > NET_MAX_PAYLOAD || cap->write > NET_MAX_PAYLOAD || !target)
		abort();
	return cap->read == 7 ? -ENOMEM : 0;   /* a map update that fails, sometimes */
}

/* pid is a stack task's target, in some shard. */
static bool stack_target(const struct collector *c, uint32_t pid)
{
	bool target = false;

	for (unsigned s = 0; s < NSHARDS && !target; s++)
		target = tasks__targets(c->tasks, s, profile_kind__mask(PROFILE_KIND_UNWINDS), pid, false);
	return target;
}

/* A Python runtime reaches the walk only checked: a stack task's target, a user address, every offset in bounds. */
static int hook_py_proc(void *ctx, uint32_t pid, const struct py_proc *p)
{
	if (!stack_target(ctx, pid))
		abort();
	if (!p)
		return 0;
	if (!p->runtime || p->runtime >= (1ull << 47) || p->l.entry_kind != PY_ENTRY_IS_ENTRY ||
	    p->l.fr_code > PY_FRAME_READ - 8 || p->l.fr_previous > PY_FRAME_READ - 8 || p->l.fr_entry >= PY_FRAME_READ ||
	    p->l.co_filename > PY_CODE_READ - 8 || p->l.co_qualname > PY_CODE_READ - 8 ||
	    p->l.co_firstlineno > PY_CODE_READ - 4 || p->l.rt_interp_head >= PY_MAX_OFF ||
	    p->l.is_threads_head >= PY_MAX_OFF || p->l.ts_next >= PY_MAX_OFF || p->l.ts_native_tid >= PY_MAX_OFF ||
	    p->l.ts_cframe >= PY_MAX_OFF || p->l.cf_current >= PY_MAX_OFF || p->l.str_state >= PY_MAX_OFF ||
	    p->l.str_ascii_data >= PY_MAX_OFF || p->l.str_compact_data >= PY_MAX_OFF)
		abort();
	return 0;
}

/* The Java agent goes only into a stack task's target. */
static int hook_java_attach(void *ctx, uint32_t pid)
{
	if (!stack_target(ctx, pid))
		abort();
	return 0;
}

static const struct collector_hooks hooks = { .net_cap = hook_net_cap, .py_proc = hook_py_proc,
					      .java_attach = hook_java_attach };

static uint32_t map_pid(uint32_t v)
{
	return v < 0x1000 ? v : live[v % 4];
}

/* Points the frame's pids at live processes. */
static void fix_pids(uint8_t *frame, size_t n)
{
	struct ctl_hdr h;
	uint8_t *p = frame + sizeof(h);
	size_t plen;

	if (n < sizeof(h))
		return;
	memcpy(&h, frame, sizeof(h));
	plen = n - sizeof(h);
	if (h.type == CTL_REQ_ATTACH && plen >= sizeof(struct ctl_attach)) {
		for (size_t off = sizeof(struct ctl_attach); off + 4 <= plen; off += 4) {
			uint32_t v;

			memcpy(&v, p + off, 4);
			v = map_pid(v);
			memcpy(p + off, &v, 4);
		}
	} else if ((h.type == CTL_REQ_OPEN_MAPS || h.type == CTL_REQ_OPEN_FILE || h.type == CTL_REQ_OPEN_PERF_MAP ||
		    h.type == CTL_REQ_OPEN_DEBUG_BUILD_ID || h.type == CTL_REQ_OPEN_DEBUGLINK ||
		    h.type == CTL_REQ_UNWIND_PROC || h.type == CTL_REQ_PY_PROC || h.type == CTL_REQ_JAVA_ATTACH) &&
		   plen >= 4) {
		uint32_t v;

		memcpy(&v, p, 4);
		v = map_pid(v);
		memcpy(p, &v, 4);
	} else if (h.type == CTL_REQ_NET_CAPS) {
		for (size_t off = sizeof(struct ctl_net_caps); off + sizeof(struct ctl_net_cap) <= plen;
		     off += sizeof(struct ctl_net_cap)) {
			uint32_t v;

			memcpy(&v, p + off + 8, 4);
			v = map_pid(v);
			memcpy(p + off + 8, &v, 4);
		}
	} else if (h.type == CTL_REQ_TLS_ATTACH && plen >= 12) {
		uint32_t v;

		memcpy(&v, p + 8, 4);
		v = map_pid(v);
		memcpy(p + 8, &v, 4);
	}
}

/* Reads every answer waiting on fd and closes the descriptors they carry. */
static void drain_answers(int fd)
{
	_Alignas(8) char buf[CTL_MAX_FRAME];
	int fds[CTL_MAX_FDS];
	unsigned nfds;

	while (ctl__recv(fd, buf, sizeof(buf), fds, CTL_MAX_FDS, &nfds) > 0)
		for (unsigned i = 0; i < nfds; i++)
			close(fds[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uid_t uids[] = { 0, EXPORTER_UID, 999 };
	struct collector_kind *kp[EMBER_TASK_NETWORK + 1];
	struct unwind_store_ops uops = { .write_rows = store_rows, .set_proc = store_proc };
	_Alignas(8) uint8_t frame[CTL_MAX_FRAME];
	struct collector c = { .nshards = NSHARDS, .ring_size = 65536, .analyzer_uid = 0,
			       .exporter_uid = EXPORTER_UID, .shards = shards, .hooks = &hooks };
	struct ctl_conn *cc;
	size_t pos = 1;
	int sv[2];

	if (size < 1)
		return 0;
	for (unsigned k = 0; k <= EMBER_TASK_NETWORK; k++)
		kp[k] = k >= EMBER_TASK_ONCPU ? &kinds[k] : NULL;
	c.hooks_ctx = &c;
	c.policy = target_policy__new(1, 1);
	c.broker = broker__new();
	c.unwind = unwind_store__new(4096, 8, 0, &uops);
	c.tasks = tasks__new(kp, EMBER_TASK_NETWORK + 1, c.policy, NSHARDS);
	if (!c.policy || !c.broker || !c.unwind || !c.tasks || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		abort();
	target_policy__set_ember_uids(c.policy, 4242, EXPORTER_UID);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	for (unsigned s = 0; s < NSHARDS; s++)
		shards[s].connected = 0;
	cc = ctl_server__conn(&c, sv[0], uids[data[0] % 3], (pid_t)getpid());
	while (cc && pos + 3 <= size) {
		size_t len = (size_t)(data[pos] | data[pos + 1] << 8) % (CTL_MAX_FRAME + 1);
		uint8_t flags = data[pos + 2];

		pos += 3;
		if (len > size - pos)
			len = size - pos;
		memcpy(frame, data + pos, len);
		pos += len;
		if ((flags & 1) && len >= sizeof(struct ctl_hdr)) {
			struct ctl_hdr h;

			memcpy(&h, frame, sizeof(h));
			h.magic = CTL_MAGIC;
			h.version = CTL_VERSION;
			h.len = (uint32_t)(len - sizeof(h));
			memcpy(frame, &h, sizeof(h));
		}
		fix_pids(frame, len);
		if (ctl_server__handle_frame(&c, cc, frame, len, 0) < 0)
			break;
		drain_answers(sv[1]);
	}
	drain_answers(sv[1]);
	ctl_server__close(&c, cc);
	close(sv[1]);
	c.tasks = tasks__free(c.tasks);
	for (unsigned k = EMBER_TASK_ONCPU; k <= EMBER_TASK_NETWORK; k++)
		if (on_count[k] != 0)
			abort();	/* a task's programs left on after the table went */
	c.unwind = unwind_store__free(c.unwind);
	c.broker = broker__free(c.broker);
	c.policy = target_policy__free(c.policy);
	return 0;
}
