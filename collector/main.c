/*
 * ember-collector: the only privileged process.  It creates the ring shards,
 * loads the BPF programs, then drops to the capabilities listed in privs.h and
 * serves the control protocol (common/ctl_proto.h) to the analyzers.  It
 * parses no payload, no protocol, no config: its inputs are fixed-layout
 * control frames and BPF maps.  It never waits on an analyzer: a full ring
 * drops and counts.
 *
 * One liburing loop drives everything: the listening socket, the analyzer
 * connections, the flush timer and the signals.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <liburing.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/eventfd.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "bpf/ember_abi.h"
#include "collector/bpf_net.h"
#include "collector/bpf_stacks.h"
#include "collector/broker.h"
#include "collector/net_fwd.h"
#include "collector/tls_links.h"
#include "collector/unwind_store.h"
#include "common/privs.h"
#include "common/cleanup.h"
#include "common/ctl_proto.h"
#include "common/log.h"
#include "common/shard.h"
#include "common/shm_ring.h"
#include "common/timeutil.h"

#define MAX_CONNS 64
#define MAX_TASKS 64
#define COLLECTOR_NICE (-10)
#define ORPHAN_GRACE_NS (60ull * 1000000000ull)

enum src_kind { SRC_LISTEN, SRC_CONN, SRC_TIMER, SRC_SIGNAL, SRC_NET, SRC_NET_TIMER, SRC_DRAIN_DONE };

struct conn {
	enum src_kind kind;
	int fd;
	uid_t uid;
	pid_t pid;
	int is_analyzer;
	int hello;
	uint32_t shard;
};

struct task {
	uint64_t id;
	uint32_t kind;
	uint32_t shard;
	uint32_t npids;
	uint32_t flags;       /* CTL_ATTACH_F_* */
	uint32_t pids[CTL_MAX_PIDS];
	int used;
	int held;             /* CTL_ATTACH_F_HOLD: not sampling until START */
	int l2;               /* CTL_ATTACH_F_L2 granted: holds the packet programs */
	uint64_t min_block_ns;
	/* Detached tasks keep their pids open to the fd broker for a while: the
	 * analyzer symbolizes the final drain after the detach answer. */
	uint64_t detached_at; /* monotonic ns, 0 = attached */
	uint32_t attach_point;
};
#define DETACHED_GRACE_NS (60ull * 1000000000ull)

struct shard {
	struct shm_ring *ring;
	int connected;
	uint64_t orphaned_since; /* monotonic ns when its analyzer went away, 0 = never or connected */
	uint64_t window_stacks, window_drops;
};

static struct {
	const char *run_dir;
	unsigned nshards;
	uint64_t ring_size;
	uid_t analyzer_uid;
	uint64_t flush_ns;
	struct bpf_stacks_opts bpf_opts;
	uint64_t net_buffer;        /* BPF ring buffer bytes per CPU for socket events */

	struct io_uring ring;
	struct shard *shards;
	struct bpf_stacks *bpf;
	struct bpf_net *net;        /* NULL when the network program does not load here */
	struct tls_links *tls;      /* TLS probes of network tasks (with net) */
	struct unwind_store *unwind;
	struct net_fwd *fwd;
	struct conn listen_src, timer_src, signal_src, net_src, net_timer_src, drain_src;
	/* The stack drain's RCU grace period is waited for by a thread, so this loop keeps
	 * forwarding network events meanwhile: requests and completions through eventfds. */
	int wait_req_fd;
	int drain_pending;          /* flipped, the grace period not over yet */
	uint64_t drain_end_real_ns; /* the pending window's end: the flip */
	struct task tasks[MAX_TASKS];
	uint64_t stats[CTL_STAT_MAX];
	uint64_t last_drain_real_ns;
	int stacks_dirty;           /* a stack task ran since the last drain */
	int stop;
	char sock_path[108];
} C;

/* libbpf's messages go to our log: warnings as warnings, the rest as debug. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	log__vmsg(level == LIBBPF_WARN ? LOG_LVL_WARN : LOG_LVL_DEBUG, NULL, fmt, ap);
	return 0;
}

static void arm(struct conn *src)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&C.ring);
	if (!sqe) {
		io_uring_submit(&C.ring);
		sqe = io_uring_get_sqe(&C.ring);
	}
	io_uring_prep_poll_add(sqe, src->fd, POLLIN);
	io_uring_sqe_set_data(sqe, src);
}

/* ---- draining the in-kernel aggregation into the shards ------------------ */

static void on_stack(void *ctx, const struct stack_key *key, const struct stack_val *val,
		     const uint64_t *kips, unsigned nk, const uint64_t *uips, unsigned nu, uint32_t flags)
{
	struct shard *sh = &C.shards[shard__of(key->tgid, C.nshards)];
	uint32_t len = sizeof(struct ember_rec_stack) + (nk + nu) * sizeof(uint64_t);
	struct ember_rec_stack *rec;

	(void)ctx;
	if (flags)
		C.stats[CTL_STAT_STACK_LOST]++;
	C.stats[CTL_STAT_STACKS_DRAINED]++;
	rec = shm_ring__reserve(sh->ring, EMBER_REC_STACK, len);
	if (!rec) {
		sh->window_drops++;
		return;
	}
	rec->kind = key->kind;
	rec->tgid = key->tgid;
	rec->count = val->count;
	rec->weight = val->weight;
	rec->nkern = nk;
	rec->nuser = nu;
	rec->flags = flags;
	memcpy(rec->comm, key->comm, sizeof(rec->comm));
	memcpy(rec->ips, kips, nk * sizeof(uint64_t));
	memcpy(rec->ips + nk, uips, nu * sizeof(uint64_t));
	shm_ring__commit(sh->ring, rec);
	sh->window_stacks++;
}

static unsigned stack_tasks_attached(void)
{
	unsigned n = 0;

	for (unsigned i = 0; i < MAX_TASKS; i++)
		n += C.tasks[i].used && !C.tasks[i].detached_at && C.tasks[i].kind != EMBER_TASK_NETWORK;
	return n;
}

static void send_markers(uint64_t start, uint64_t end)
{
	for (unsigned s = 0; s < C.nshards; s++) {
		struct shard *sh = &C.shards[s];
		/* One marker per kind: the analyzer closes that kind's window; ring drops ride on the first. */
		for (uint32_t kind = EMBER_TASK_ONCPU; kind <= EMBER_TASK_MEM; kind++) {
			struct ember_rec_window w = { .kind = kind, .start_ns = start, .end_ns = end,
						      .stacks = kind == EMBER_TASK_ONCPU ? sh->window_stacks : 0,
						      .ring_drops = kind == EMBER_TASK_ONCPU ? sh->window_drops : 0 };
			(void)shm_ring__write(sh->ring, EMBER_REC_WINDOW, &w, sizeof(w));
		}
		(void)shm_ring__notify(sh->ring);
	}
	C.last_drain_real_ns = end;
}

/* The flipped-out set into the shards, then the window's markers. */
static void drain_finish(void)
{
	int n = bpf_stacks__collect(C.bpf, on_stack, NULL);

	if (n < 0)
		log_warn("draining the stack maps failed: %s", strerror(-n));
	C.drain_pending = 0;
	send_markers(C.last_drain_real_ns, C.drain_end_real_ns);
}

/*
 * Ends the window now.  With a stack task since the last drain, the maps
 * flip and are read once every program still writing the old set is done
 * (an RCU grace period); sync waits for it here (detach and stop need it
 * all in the rings before they go on), otherwise the waiter thread does and
 * the loop carries on.  With none, the maps are empty: markers only.
 */
static void drain_now(int sync)
{
	uint64_t one = 1;

	if (C.drain_pending) {
		if (!sync)
			return; /* the last grace period is not over: this tick joins that window */
		struct pollfd p = { .fd = C.drain_src.fd, .events = POLLIN };
		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
		(void)!read(C.drain_src.fd, &one, sizeof(one));
		drain_finish();
	}
	for (unsigned s = 0; s < C.nshards; s++)
		C.shards[s].window_stacks = C.shards[s].window_drops = 0;
	C.stats[CTL_STAT_DRAINS]++;
	C.drain_end_real_ns = timeutil__now_ns(CLOCK_REALTIME);
	if (!C.stacks_dirty) {
		C.stacks_dirty = stack_tasks_attached() > 0;
		send_markers(C.last_drain_real_ns, C.drain_end_real_ns);
		return;
	}
	C.stacks_dirty = stack_tasks_attached() > 0;
	bpf_stacks__flip(C.bpf);
	C.drain_pending = 1;
	if (sync || C.wait_req_fd < 0 || write(C.wait_req_fd, &one, sizeof(one)) != sizeof(one)) {
		bpf_stacks__wait_programs();
		drain_finish();
	}
}

static void drain(void) { drain_now(1); }

static void on_drain_done(void)
{
	uint64_t v;

	if (read(C.drain_src.fd, &v, sizeof(v)) == sizeof(v) && C.drain_pending)
		drain_finish();
}

/* The waiter thread: one grace period per request. */
static void *waiter_main(void *arg)
{
	uint64_t v;

	(void)arg;
	for (;;) {
		if (read(C.wait_req_fd, &v, sizeof(v)) != sizeof(v)) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		bpf_stacks__wait_programs();
		v = 1;
		(void)!write(C.drain_src.fd, &v, sizeof(v));
	}
}

/* After the privilege drop: capabilities are per thread, and this one must hold none. */
static void start_waiter(void)
{
	pthread_t th;

	C.drain_src = (struct conn){ .kind = SRC_DRAIN_DONE, .fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
	C.wait_req_fd = eventfd(0, EFD_CLOEXEC);
	if (C.drain_src.fd < 0 || C.wait_req_fd < 0 || pthread_create(&th, NULL, waiter_main, NULL)) {
		log_warn("no waiter thread (%m): stack drains wait in the loop, pausing network events");
		if (C.wait_req_fd >= 0)
			close(C.wait_req_fd);
		C.wait_req_fd = -1;
		return;
	}
	pthread_detach(th);
}

/* ---- network events: forwarded as they come ---------------------------------- */

static int on_net_event(void *ctx, const struct net_event *e, uint32_t len)
{
	(void)ctx;
	return net_fwd__event(C.fwd, e, len);
}

static void forward_net(void)
{
	int n;

	if (!C.net)
		return;
	n = bpf_net__consume(C.net, on_net_event, NULL);
	if (n < 0)
		log_warn("reading the network events failed: %s", strerror(-n));
	net_fwd__notify(C.fwd);
}

/* The network events' timer runs while a network task is attached, and only then. */
static void net_timer_update(void)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	unsigned n = 0;

	for (unsigned i = 0; i < MAX_TASKS; i++)
		n += C.tasks[i].used && !C.tasks[i].detached_at && C.tasks[i].kind == EMBER_TASK_NETWORK;
	if (n) {
		its.it_interval.tv_nsec = (long)NET_POLL_NS;
		its.it_value.tv_nsec = (long)NET_POLL_NS;
	}
	if (C.net)
		timerfd_settime(C.net_timer_src.fd, 0, &its, NULL);
}

/* ---- tasks ------------------------------------------------------------------ */

static struct task *task_find(uint64_t id)
{
	for (unsigned i = 0; i < MAX_TASKS; i++)
		if (C.tasks[i].used && !C.tasks[i].detached_at && C.tasks[i].id == id)
			return &C.tasks[i];
	return NULL;
}

/* Is pid a target of an attached stack task other than t? */
static int stack_target_elsewhere(const struct task *t, uint32_t pid)
{
	for (unsigned i = 0; i < MAX_TASKS; i++) {
		const struct task *o = &C.tasks[i];
		if (o == t || !o->used || o->detached_at || o->kind == EMBER_TASK_NETWORK)
			continue;
		for (uint32_t j = 0; j < o->npids; j++)
			if (o->pids[j] == pid)
				return 1;
	}
	return 0;
}

static void task_remove(struct task *t)
{
	if (t->detached_at)
		return;
	if (t->kind == EMBER_TASK_NETWORK) {
		for (uint32_t i = 0; i < t->npids; i++)
			(void)bpf_net__target(C.net, t->pids[i], 0, t->flags & CTL_ATTACH_F_PREFIX);
		if (C.tls)
			tls_links__drop_owner(C.tls, t->id);
		if (t->l2)
			(void)bpf_net__l2(C.net, false);
		t->l2 = 0;
		bpf_net__detach(C.net);
	}
	for (uint32_t i = 0; t->kind != EMBER_TASK_NETWORK && i < t->npids; i++) {
		(void)bpf_stacks__target(C.bpf, t->pids[i], t->kind, 0, 0);
		if (C.unwind && !stack_target_elsewhere(t, t->pids[i]))
			unwind_store__forget(C.unwind, t->pids[i]);
	}
	if (t->kind == EMBER_TASK_ONCPU)
		bpf_stacks__detach_oncpu(C.bpf);
	else if (t->kind == EMBER_TASK_OFFCPU)
		bpf_stacks__detach_offcpu(C.bpf);
	else if (t->kind == EMBER_TASK_MEM)
		bpf_stacks__detach_mem(C.bpf);
	t->detached_at = timeutil__now_ns(CLOCK_MONOTONIC);
	C.stats[CTL_STAT_TASKS_ACTIVE]--;
	if (t->kind == EMBER_TASK_NETWORK)
		net_timer_update();
}

/* A slot is free when unused, or detached for longer than the grace period. */
static int task_slot_free(const struct task *t, uint64_t now)
{
	return !t->used || (t->detached_at && now - t->detached_at > DETACHED_GRACE_NS);
}

static int task_attach(struct conn *c, const struct ctl_attach *a, struct ctl_attach_ans *ans)
{
	struct task *t = task_find(a->task_id);
	uint32_t ok = 0;
	int err;

	if (t) { /* a restarted analyzer re-attaching its task: idempotent */
		if (t->shard != c->shard || t->kind != a->kind || t->flags != a->flags)
			return -EEXIST;
		ans->npids_ok = t->npids;
		ans->attach_point = t->attach_point;
		return 0;
	}
	if (a->kind < EMBER_TASK_ONCPU || a->kind > EMBER_TASK_NETWORK || (a->kind == EMBER_TASK_NETWORK && !C.net))
		return -EOPNOTSUPP;
	if (a->kind != EMBER_TASK_NETWORK)
		C.stacks_dirty = 1;
	if (a->kind == EMBER_TASK_ONCPU && (a->period_ns < CTL_PERIOD_MIN_NS || a->period_ns > CTL_PERIOD_MAX_NS))
		return -ERANGE;
	if (a->min_block_ns > CTL_MIN_BLOCK_MAX_NS)
		return -ERANGE;
	if (a->flags & ~CTL_ATTACH_F_ALL ||
	    ((a->flags & (CTL_ATTACH_F_PREFIX | CTL_ATTACH_F_L2)) && a->kind != EMBER_TASK_NETWORK) ||
	    ((a->flags & CTL_ATTACH_F_HOLD) && a->kind == EMBER_TASK_NETWORK))
		return -EINVAL;
	uint64_t now = timeutil__now_ns(CLOCK_MONOTONIC);
	for (unsigned i = 0; i < MAX_TASKS && !t; i++)
		if (task_slot_free(&C.tasks[i], now))
			t = &C.tasks[i];
	if (!t)
		return -ENOSPC;
	memset(t, 0, offsetof(struct task, pids));
	t->detached_at = 0;
	t->l2 = 0;
	t->id = a->task_id;
	t->kind = a->kind;
	t->flags = a->flags;
	t->shard = c->shard;
	t->held = !!(a->flags & CTL_ATTACH_F_HOLD);
	t->min_block_ns = a->min_block_ns;
	for (uint32_t i = 0; i < a->npids; i++) {
		uint32_t pid = a->pids[i];
		if (pid == 0 || shard__of(pid, C.nshards) != c->shard)
			return -EINVAL;
		if (kill((pid_t)pid, 0) && errno == ESRCH)
			continue; /* gone already: not an error for a multi-pid task */
		t->pids[t->npids++] = pid;
	}
	if (!t->npids)
		return -ESRCH;
	switch (a->kind) {
	case EMBER_TASK_ONCPU:
		err = bpf_stacks__attach_oncpu(C.bpf, a->period_ns);
		t->attach_point = CTL_AP_PERF_CPU_CLOCK;
		break;
	case EMBER_TASK_OFFCPU:
		err = bpf_stacks__attach_offcpu(C.bpf);
		t->attach_point = err > 0 ? (uint32_t)err : CTL_AP_NONE;
		err = err > 0 ? 0 : err;
		break;
	case EMBER_TASK_MEM:
		err = bpf_stacks__attach_mem(C.bpf);
		t->attach_point = CTL_AP_PERF_PAGE_FAULTS;
		break;
	default:
		err = bpf_net__attach(C.net);
		t->attach_point = err > 0 ? (uint32_t)err : CTL_AP_NONE;
		err = err > 0 ? 0 : err;
		/* Without the packets (raw_tp variant) the task still runs: its events carry none. */
		if (!err && (a->flags & CTL_ATTACH_F_L2))
			t->l2 = !bpf_net__l2(C.net, true);
		break;
	}
	if (err)
		return err;
	ans->attach_point = t->attach_point;
	for (uint32_t i = 0; i < t->npids; i++) {
		if (t->held) {
			ok++;
			continue;
		}
		err = t->kind == EMBER_TASK_NETWORK ? bpf_net__target(C.net, t->pids[i], 1, t->flags & CTL_ATTACH_F_PREFIX)
						     : bpf_stacks__target(C.bpf, t->pids[i], t->kind, 1, a->min_block_ns);
		if (err) {
			t->npids = i;
			t->used = 1;
			C.stats[CTL_STAT_TASKS_ACTIVE]++;
			task_remove(t);
			t->used = 0;
			return err;
		}
		ok++;
	}
	t->used = 1;
	C.stats[CTL_STAT_TASKS_ACTIVE]++;
	ans->npids_ok = ok;
	if (t->kind == EMBER_TASK_NETWORK)
		net_timer_update();
	return 0;
}

/*
 * Is pid a target of a task owned by this analyzer's shard?  A child a network
 * task follows (bpf/net.bpf.c on_fork) is its named process's target: its
 * events go to that shard (net_fwd), whose analyzer reads its mappings.
 */
static int pid_allowed(const struct conn *c, uint32_t pid)
{
	uint32_t root = 0;
	int looked = 0;

	for (unsigned i = 0; i < MAX_TASKS; i++) {
		const struct task *t = &C.tasks[i];
		if (!t->used || t->shard != c->shard ||
		    (t->detached_at && timeutil__now_ns(CLOCK_MONOTONIC) - t->detached_at > DETACHED_GRACE_NS))
			continue;
		if (t->kind == EMBER_TASK_NETWORK && !looked && C.net) {
			root = bpf_net__root(C.net, pid);
			looked = 1;
		}
		for (uint32_t j = 0; j < t->npids; j++)
			if (t->pids[j] == pid || (root && t->kind == EMBER_TASK_NETWORK && t->pids[j] == root))
				return 1;
	}
	return 0;
}

/* ---- control protocol ------------------------------------------------------- */

enum { F_HELLO_FIRST = 1, F_NEEDS_HELLO = 2, F_ADMIN_OK = 4 };

typedef int (*handler_fn)(struct conn *c, const struct ctl_msg *m);

static int reply_err(struct conn *c, const struct ctl_msg *m, int err, int fd)
{
	struct ctl_err_ans a = { .err = err };
	int r = ctl__send(c->fd, m->type + 1, m->seq, &a, sizeof(a), fd >= 0 ? &fd : NULL, fd >= 0);
	if (fd >= 0)
		close(fd);
	return r;
}

static int h_hello(struct conn *c, const struct ctl_msg *m)
{
	struct ctl_hello h;
	struct ctl_hello_ans a = { .nshards = C.nshards, .ring_size = C.ring_size };
	int fds[3];

	memcpy(&h, m->payload, sizeof(h));
	if (h.abi_version != EMBER_ABI_VERSION)
		a.err = -EPROTONOSUPPORT;
	else if (h.shard >= C.nshards)
		a.err = -EINVAL;
	else if (C.shards[h.shard].connected)
		a.err = -EBUSY;
	if (a.err)
		return ctl__send(c->fd, CTL_ANS_HELLO, m->seq, &a, sizeof(a), NULL, 0);
	c->hello = 1;
	c->shard = h.shard;
	C.shards[h.shard].connected = 1;
	C.shards[h.shard].orphaned_since = 0;
	C.stats[CTL_STAT_ANALYZER_CONNECTS]++;
	fds[0] = shm_ring__data_fd(C.shards[h.shard].ring);
	fds[1] = shm_ring__cons_fd(C.shards[h.shard].ring);
	fds[2] = shm_ring__event_fd(C.shards[h.shard].ring);
	log_info("analyzer pid %d attached to shard %u", (int)c->pid, h.shard);
	return ctl__send(c->fd, CTL_ANS_HELLO, m->seq, &a, sizeof(a), fds, 3);
}

static int h_attach(struct conn *c, const struct ctl_msg *m)
{
	struct ctl_attach_ans ans = { 0 };

	ans.err = task_attach(c, (const struct ctl_attach *)m->payload, &ans);
	if (ans.err)
		log_warn("attach of task %llu refused: %s",
			 (unsigned long long)((const struct ctl_attach *)m->payload)->task_id, strerror(-ans.err));
	return ctl__send(c->fd, CTL_ANS_ATTACH, m->seq, &ans, sizeof(ans), NULL, 0);
}

/* A held task's processes are sampled from now on. */
static int h_start(struct conn *c, const struct ctl_msg *m)
{
	struct ctl_detach d;
	struct task *t;
	int err = 0;

	memcpy(&d, m->payload, sizeof(d));
	t = task_find(d.task_id);
	if (!t || t->shard != c->shard)
		return reply_err(c, m, -ENOENT, -1);
	for (uint32_t i = 0; t->held && i < t->npids && !err; i++)
		err = bpf_stacks__target(C.bpf, t->pids[i], t->kind, 1, t->min_block_ns);
	t->held = 0;
	C.stacks_dirty = 1;
	return reply_err(c, m, err, -1);
}

static int h_detach(struct conn *c, const struct ctl_msg *m)
{
	struct ctl_detach d;
	struct task *t;

	memcpy(&d, m->payload, sizeof(d));
	t = task_find(d.task_id);
	if (!t || t->shard != c->shard)
		return reply_err(c, m, -ENOENT, -1);
	/* Drain first so everything the task collected is in the ring before we answer. */
	drain();
	task_remove(t);
	forward_net();
	return reply_err(c, m, 0, -1);
}

static int h_open_maps(struct conn *c, const struct ctl_msg *m)
{
	struct ctl_open_maps r;
	int fd;

	memcpy(&r, m->payload, sizeof(r));
	if (!pid_allowed(c, r.pid)) {
		C.stats[CTL_STAT_FD_BROKER_REFUSED]++;
		return reply_err(c, m, -EPERM, -1);
	}
	fd = broker__open_maps(r.pid);
	C.stats[fd < 0 ? CTL_STAT_FD_BROKER_REFUSED : CTL_STAT_FD_BROKER_OPENS]++;
	return reply_err(c, m, fd < 0 ? fd : 0, fd);
}

static int h_open_file(struct conn *c, const struct ctl_msg *m)
{
	struct ctl_open_file r;
	int fd;

	memcpy(&r, m->payload, sizeof(r));
	if (!pid_allowed(c, r.pid)) {
		C.stats[CTL_STAT_FD_BROKER_REFUSED]++;
		return reply_err(c, m, -EPERM, -1);
	}
	fd = broker__open_file(r.pid, r.start, r.end);
	C.stats[fd < 0 ? CTL_STAT_FD_BROKER_REFUSED : CTL_STAT_FD_BROKER_OPENS]++;
	return reply_err(c, m, fd < 0 ? fd : 0, fd);
}

static int h_open_perf_map(struct conn *c, const struct ctl_msg *m)
{
	struct ctl_open_perf_map r;
	int fd;

	memcpy(&r, m->payload, sizeof(r));
	if (!pid_allowed(c, r.pid)) {
		C.stats[CTL_STAT_FD_BROKER_REFUSED]++;
		return reply_err(c, m, -EPERM, -1);
	}
	fd = broker__open_perf_map(r.pid);
	C.stats[fd < 0 ? CTL_STAT_FD_BROKER_REFUSED : CTL_STAT_FD_BROKER_OPENS]++;
	return reply_err(c, m, fd < 0 ? fd : 0, fd);
}

static int h_open_debug_build_id(struct conn *c, const struct ctl_msg *m)
{
	struct ctl_open_debug_build_id r;
	int fd;

	memcpy(&r, m->payload, sizeof(r));
	if (!pid_allowed(c, r.pid) || r.len < 2 || r.len > CTL_MAX_BUILD_ID) {
		C.stats[CTL_STAT_FD_BROKER_REFUSED]++;
		return reply_err(c, m, r.len < 2 || r.len > CTL_MAX_BUILD_ID ? -EINVAL : -EPERM, -1);
	}
	fd = broker__open_debug_build_id(r.pid, r.build_id, r.len);
	C.stats[fd < 0 ? CTL_STAT_FD_BROKER_REFUSED : CTL_STAT_FD_BROKER_OPENS]++;
	return reply_err(c, m, fd < 0 ? fd : 0, fd);
}

static int h_open_debuglink(struct conn *c, const struct ctl_msg *m)
{
	struct ctl_open_debuglink r;
	int fd;

	memcpy(&r, m->payload, sizeof(r));
	if (!pid_allowed(c, r.pid)) {
		C.stats[CTL_STAT_FD_BROKER_REFUSED]++;
		return reply_err(c, m, -EPERM, -1);
	}
	/* Untrusted bytes: terminated inside the field, then a plain file name (the broker checks). */
	if (!memchr(r.name, '\0', sizeof(r.name))) {
		C.stats[CTL_STAT_FD_BROKER_REFUSED]++;
		return reply_err(c, m, -EINVAL, -1);
	}
	fd = broker__open_debuglink(r.pid, r.start, r.end, r.name);
	C.stats[fd < 0 ? CTL_STAT_FD_BROKER_REFUSED : CTL_STAT_FD_BROKER_OPENS]++;
	return reply_err(c, m, fd < 0 ? fd : 0, fd);
}

static int h_open_kallsyms(struct conn *c, const struct ctl_msg *m)
{
	int fd = broker__open_kallsyms();
	C.stats[fd < 0 ? CTL_STAT_FD_BROKER_REFUSED : CTL_STAT_FD_BROKER_OPENS]++;
	return reply_err(c, m, fd < 0 ? fd : 0, fd);
}

/* ---- unwind tables: the analyzer builds, this checks and stores --------------- */

static int h_unwind_table(struct conn *c, const struct ctl_msg *m)
{
	struct ctl_unwind_table r;
	struct ctl_unwind_table_ans a;

	memcpy(&r, m->payload, sizeof(r));
	memset(&a, 0, sizeof(a));
	a.err = C.unwind ? unwind_store__table(C.unwind, c->shard, &r, &a) : -EOPNOTSUPP;
	return ctl__send(c->fd, CTL_ANS_UNWIND_TABLE, m->seq, &a, sizeof(a), NULL, 0);
}

static int h_unwind_rows(struct conn *c, const struct ctl_msg *m)
{
	if (!C.unwind)
		return reply_err(c, m, -EOPNOTSUPP, -1);
	return reply_err(c, m, unwind_store__rows(C.unwind, c->shard, (const struct ctl_unwind_rows *)m->payload), -1);
}

/* Only for a process this analyzer's stack task targets: nobody else's stacks are walked its way. */
static int h_unwind_proc(struct conn *c, const struct ctl_msg *m)
{
	const struct ctl_unwind_proc *r = m->payload;
	int ok = 0;

	if (!C.unwind)
		return reply_err(c, m, -EOPNOTSUPP, -1);
	for (unsigned i = 0; i < MAX_TASKS && !ok; i++) {
		const struct task *t = &C.tasks[i];
		if (!t->used || t->detached_at || t->shard != c->shard || t->kind == EMBER_TASK_NETWORK)
			continue;
		for (uint32_t j = 0; j < t->npids && !ok; j++)
			ok = t->pids[j] == r->pid;
	}
	if (!ok) {
		C.stats[CTL_STAT_CTL_DENIED]++;
		return reply_err(c, m, -EPERM, -1);
	}
	return reply_err(c, m, unwind_store__proc(C.unwind, r), -1);
}

/* ---- TLS probes: the analyzer finds the offsets, this checks and attaches ----------- */

/* The network task task_id of this analyzer, if it follows pid (named, or a child it followed). */
static int tls_task_follows(const struct conn *c, uint64_t task_id, uint32_t pid)
{
	const struct task *t = task_find(task_id);
	uint32_t root = C.net ? bpf_net__root(C.net, pid) : 0;

	if (!t || t->detached_at || t->shard != c->shard || t->kind != EMBER_TASK_NETWORK)
		return 0;
	for (uint32_t j = 0; j < t->npids; j++)
		if (t->pids[j] == pid || (root && t->pids[j] == root))
			return 1;
	return 0;
}

static int h_tls_attach(struct conn *c, const struct ctl_msg *m)
{
	const struct ctl_tls_attach *r = m->payload;
	struct tls_verify_verdict v;
	int fd, err;

	if (!C.tls)
		return reply_err(c, m, -EOPNOTSUPP, -1);
	if (!tls_task_follows(c, r->task_id, r->pid)) {
		C.stats[CTL_STAT_CTL_DENIED]++;
		return reply_err(c, m, -EPERM, -1);
	}
	if (!r->npoints || r->npoints > CTL_TLS_MAX_POINTS)
		return reply_err(c, m, -EINVAL, -1);
	fd = broker__open_file(r->pid, r->start, r->end);
	if (fd < 0)
		return reply_err(c, m, fd, -1);
	err = tls_links__add(C.tls, r->task_id, fd, r->pid, r->pts, r->npoints, &v);
	close(fd);
	if (err && v.why != TLS_VERIFY_OK)
		log_warn("TLS probes for task %llu in pid %u refused: point %u (offset 0x%llx, cookie 0x%llx): %s",
			 (unsigned long long)r->task_id, r->pid, v.index, (unsigned long long)r->pts[v.index].off,
			 (unsigned long long)r->pts[v.index].cookie, tls_verify__why_name(v.why));
	else if (err)
		log_warn("TLS probes for task %llu in pid %u refused: %s", (unsigned long long)r->task_id, r->pid,
			 strerror(-err));
	return reply_err(c, m, err, -1);
}

static int store_rows(void *ctx, uint32_t first, const struct unwind_row *rows, uint32_t n)
{
	(void)ctx;
	return bpf_stacks__unwind_rows(C.bpf, first, rows, n);
}

static int store_proc(void *ctx, uint32_t tgid, uint32_t slot, const struct unwind_proc *p)
{
	(void)ctx;
	return bpf_stacks__unwind_proc(C.bpf, tgid, slot, p);
}

_Static_assert(CTL_STAT_NET_FORKS_FULL - CTL_STAT_NET_CALLS + 1 == NET_CNT_TLS_CALLS &&
	       CTL_STAT_NET_L2_PKTS - CTL_STAT_NET_TLS_CALLS + 1 == NET_CNT_MAX - NET_CNT_TLS_CALLS,
	       "the collector's network stats mirror the BPF program's counters one to one");

_Static_assert(CTL_STAT_TLS_REFUSED_INSN - CTL_STAT_TLS_REFUSED_COOKIE + 1 == TLS_VERIFY_WHY_MAX - 1,
	       "one collector counter per reason collector/tls_verify refuses a point for");

static void collect_stats(void)
{
	uint64_t bc[BPF_CNT_MAX], nc[NET_CNT_MAX];
	struct shm_ring_stats rs;

	if (!bpf_stacks__counters(C.bpf, bc)) {
		C.stats[CTL_STAT_BPF_SAMPLES] = bc[BPF_CNT_SAMPLES];
		C.stats[CTL_STAT_BPF_KSTACK_ERR] = bc[BPF_CNT_KSTACK_ERR];
		C.stats[CTL_STAT_BPF_USTACK_ERR] = bc[BPF_CNT_USTACK_ERR];
		C.stats[CTL_STAT_BPF_STACKMAP_FULL] = bc[BPF_CNT_STACKMAP_FULL];
		C.stats[CTL_STAT_BPF_AGG_FULL] = bc[BPF_CNT_AGG_FULL];
		C.stats[CTL_STAT_BPF_OFFCPU_SWITCHES] = bc[BPF_CNT_OFFCPU_SWITCHES];
		C.stats[CTL_STAT_BPF_OFFCPU_START_FULL] = bc[BPF_CNT_OFFCPU_START_FULL];
		C.stats[CTL_STAT_BPF_OFFCPU_BELOW_MIN] = bc[BPF_CNT_OFFCPU_BELOW_MIN];
		C.stats[CTL_STAT_BPF_HSTACK_FULL] = bc[BPF_CNT_HSTACK_FULL];
		C.stats[CTL_STAT_BPF_FAULTS] = bc[BPF_CNT_FAULTS];
		C.stats[CTL_STAT_BPF_OFFCPU_FP_HITS] = bc[BPF_CNT_OFFCPU_FP_HITS];
		C.stats[CTL_STAT_BPF_UNWIND_STACKS] = bc[BPF_CNT_UNWIND_STACKS];
		C.stats[CTL_STAT_BPF_UNWIND_COMPLETE] = bc[BPF_CNT_UNWIND_COMPLETE];
		C.stats[CTL_STAT_BPF_UNWIND_FP_FRAMES] = bc[BPF_CNT_UNWIND_FP_FRAMES];
		C.stats[CTL_STAT_BPF_UNWIND_READ_ERR] = bc[BPF_CNT_UNWIND_READ_ERR];
		C.stats[CTL_STAT_BPF_UNWIND_TRUNCATED] = bc[BPF_CNT_UNWIND_TRUNCATED];
		C.stats[CTL_STAT_BPF_OFFCPU_TIMED] = bc[BPF_CNT_OFFCPU_TIMED];
	}
	if (C.unwind) {
		struct unwind_store_stats us;

		unwind_store__stats(C.unwind, &us);
		C.stats[CTL_STAT_UNWIND_TABLES] = us.tables;
		C.stats[CTL_STAT_UNWIND_ROWS] = us.rows;
		C.stats[CTL_STAT_UNWIND_ROWS_MAX] = us.rows_max;
		C.stats[CTL_STAT_UNWIND_PROCS] = us.procs;
		C.stats[CTL_STAT_UNWIND_REFUSED] = us.refused;
	}
	if (C.net && !bpf_net__counters(C.net, nc)) {
		for (unsigned i = 0; i < NET_CNT_TLS_CALLS; i++)
			C.stats[CTL_STAT_NET_CALLS + i] = nc[i];
		for (unsigned i = NET_CNT_TLS_CALLS; i < NET_CNT_MAX; i++)
			C.stats[CTL_STAT_NET_TLS_CALLS + i - NET_CNT_TLS_CALLS] = nc[i];
	}
	if (C.tls) {
		struct tls_links_stats ts;

		tls_links__stats(C.tls, &ts);
		C.stats[CTL_STAT_TLS_FILES] = ts.files;
		C.stats[CTL_STAT_TLS_POINTS] = ts.points;
		C.stats[CTL_STAT_TLS_REFUSED] = ts.refused;
		C.stats[CTL_STAT_TLS_REFUSED_COOKIE] = ts.refused_cookie;
		C.stats[CTL_STAT_TLS_REFUSED_FILE] = ts.refused_file;
		C.stats[CTL_STAT_TLS_REFUSED_SEGMENT] = ts.refused_segment;
		C.stats[CTL_STAT_TLS_REFUSED_FUNCTION] = ts.refused_function;
		C.stats[CTL_STAT_TLS_REFUSED_OUTSIDE] = ts.refused_outside;
		C.stats[CTL_STAT_TLS_REFUSED_BOUNDARY] = ts.refused_boundary;
		C.stats[CTL_STAT_TLS_REFUSED_INSN] = ts.refused_insn;
	}
	if (C.fwd) {
		struct net_fwd_stats fs;

		net_fwd__stats(C.fwd, &fs);
		C.stats[CTL_STAT_NET_FORWARDED] = fs.events;
		C.stats[CTL_STAT_NET_RING_DROPS] = fs.ring_drops;
		C.stats[CTL_STAT_NET_RING_UNTRACKED] = fs.untracked;
		C.stats[CTL_STAT_NET_PEERS_ACROSS] = fs.peers_across;
		C.stats[CTL_STAT_NET_ENDPOINTS_FULL] = fs.endpoints_full;
	}
	C.stats[CTL_STAT_RING_RECORDS] = C.stats[CTL_STAT_RING_DROPS] = 0;
	C.stats[CTL_STAT_RING_DROP_BYTES] = C.stats[CTL_STAT_RING_HOSTILE_CONS] = 0;
	for (unsigned s = 0; s < C.nshards; s++) {
		shm_ring__stats(C.shards[s].ring, &rs);
		C.stats[CTL_STAT_RING_RECORDS] += rs.produced;
		C.stats[CTL_STAT_RING_DROPS] += rs.drops;
		C.stats[CTL_STAT_RING_DROP_BYTES] += rs.drop_bytes;
		C.stats[CTL_STAT_RING_HOSTILE_CONS] += rs.hostile_cons;
	}
}

static int h_stats(struct conn *c, const struct ctl_msg *m)
{
	struct ctl_stats_ans a = { .n = CTL_STAT_MAX };

	collect_stats();
	memcpy(a.v, C.stats, sizeof(a.v));
	return ctl__send(c->fd, CTL_ANS_STATS, m->seq, &a, sizeof(a), NULL, 0);
}

/* What may be asked, by whom, when (OpenSSH monitor style). */
static const struct { uint16_t type; unsigned flags; handler_fn fn; } handlers[] = {
	{ CTL_REQ_HELLO, F_HELLO_FIRST, h_hello },
	{ CTL_REQ_ATTACH, F_NEEDS_HELLO, h_attach },
	{ CTL_REQ_DETACH, F_NEEDS_HELLO, h_detach },
	{ CTL_REQ_START, F_NEEDS_HELLO, h_start },
	{ CTL_REQ_OPEN_MAPS, F_NEEDS_HELLO, h_open_maps },
	{ CTL_REQ_OPEN_FILE, F_NEEDS_HELLO, h_open_file },
	{ CTL_REQ_OPEN_KALLSYMS, F_NEEDS_HELLO, h_open_kallsyms },
	{ CTL_REQ_OPEN_PERF_MAP, F_NEEDS_HELLO, h_open_perf_map },
	{ CTL_REQ_OPEN_DEBUG_BUILD_ID, F_NEEDS_HELLO, h_open_debug_build_id },
	{ CTL_REQ_OPEN_DEBUGLINK, F_NEEDS_HELLO, h_open_debuglink },
	{ CTL_REQ_UNWIND_TABLE, F_NEEDS_HELLO, h_unwind_table },
	{ CTL_REQ_UNWIND_ROWS, F_NEEDS_HELLO, h_unwind_rows },
	{ CTL_REQ_UNWIND_PROC, F_NEEDS_HELLO, h_unwind_proc },
	{ CTL_REQ_TLS_ATTACH, F_NEEDS_HELLO, h_tls_attach },
	{ CTL_REQ_STATS, F_ADMIN_OK, h_stats },
};

static void conn_close(struct conn *c)
{
	if (c->hello) {
		C.shards[c->shard].connected = 0;
		C.shards[c->shard].orphaned_since = timeutil__now_ns(CLOCK_MONOTONIC);
		log_info("analyzer of shard %u disconnected", c->shard);
	}
	close(c->fd);
	free(c);
}

/* Returns 0 to keep the connection, <0 to close it. */
static int conn_handle(struct conn *c)
{
	/* Payloads are read in place as their structs: keep them aligned. */
	_Alignas(8) char buf[CTL_MAX_FRAME];
	int fds[CTL_MAX_FDS];
	unsigned nfds = 0;
	struct ctl_msg m;
	int n, r;

	n = ctl__recv(c->fd, buf, sizeof(buf), fds, CTL_MAX_FDS, &nfds);
	for (unsigned i = 0; i < nfds; i++) /* nobody may send us fds */
		close(fds[i]);
	if (n == -EAGAIN)
		return 0;
	if (n <= 0)
		return -1;
	C.stats[CTL_STAT_CTL_REQUESTS]++;
	r = ctl__decode(buf, n, &m);
	if (r < 0 || nfds || (m.type & 1)) {
		C.stats[CTL_STAT_CTL_MALFORMED]++;
		log_warn("malformed control request from pid %d (%s): closing the connection", (int)c->pid,
			 r < 0 ? strerror(-r) : "unexpected type or fds");
		return -1;
	}
	for (unsigned i = 0; i < ARRAY_SIZE(handlers); i++) {
		if (handlers[i].type != m.type)
			continue;
		unsigned f = handlers[i].flags;
		int allowed = c->is_analyzer ? ((f & F_HELLO_FIRST) ? !c->hello : (f & F_ADMIN_OK) || c->hello)
					     : !!(f & F_ADMIN_OK);
		if (!allowed) {
			C.stats[CTL_STAT_CTL_DENIED]++;
			log_warn("control request %s not permitted now from pid %d: closing the connection",
				 ctl__type_name(m.type), (int)c->pid);
			return -1;
		}
		r = handlers[i].fn(c, &m);
		return r < 0 ? -1 : 0;
	}
	C.stats[CTL_STAT_CTL_MALFORMED]++;
	return -1;
}

static void on_accept(void)
{
	for (;;) {
		struct ucred cred;
		socklen_t len = sizeof(cred);
		int fd = accept4(C.listen_src.fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct conn *c;

		if (fd < 0)
			return;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
		    (cred.uid != C.analyzer_uid && cred.uid != 0)) {
			C.stats[CTL_STAT_CTL_DENIED]++;
			log_warn("refused control connection from uid %u", (unsigned)cred.uid);
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->kind = SRC_CONN;
		c->fd = fd;
		c->uid = cred.uid;
		c->pid = cred.pid;
		/* Root (the CLI) may only ask for stats, unless root is the analyzer uid (tests). */
		c->is_analyzer = cred.uid == C.analyzer_uid;
		arm(c);
	}
}

static void on_timer(void)
{
	uint64_t ticks, now = timeutil__now_ns(CLOCK_MONOTONIC);

	(void)!read(C.timer_src.fd, &ticks, sizeof(ticks));
	drain_now(0);
	/* Tasks whose analyzer stayed away too long are detached: nobody reads them. */
	for (unsigned s = 0; s < C.nshards; s++) {
		if (C.shards[s].connected || !C.shards[s].orphaned_since ||
		    now - C.shards[s].orphaned_since < ORPHAN_GRACE_NS)
			continue;
		for (unsigned i = 0; i < MAX_TASKS; i++)
			if (C.tasks[i].used && !C.tasks[i].detached_at && C.tasks[i].shard == s) {
				log_warn("detaching task %llu: no analyzer for shard %u", (unsigned long long)C.tasks[i].id, s);
				task_remove(&C.tasks[i]);
			}
		C.shards[s].orphaned_since = 0;
	}
}

static int setup_socket(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (snprintf(C.sock_path, sizeof(C.sock_path), "%s/collector.sock", C.run_dir) >= (int)sizeof(C.sock_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, C.sock_path, sizeof(C.sock_path));
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	unlink(C.sock_path);
	/* Anyone may connect; SO_PEERCRED decides who is served. */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(C.sock_path, 0666) || listen(fd, 16)) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ember-collector --analyzer-uid UID [options]\n"
		"Started by `ember run`; not meant to be run by hand.\n"
		"  --run-dir DIR          sockets (default /run/ember)\n"
		"  --shards N             ring shards = analyzers (default 1)\n"
		"  --ring-size BYTES      per shard, power of two (default 8388608)\n"
		"  --analyzer-uid UID     the only uid served the full control protocol\n"
		"  --flush-ms MS          drain period (default 5000)\n"
		"  --max-stacks N         stack map entries (default 8192)\n"
		"  --max-pids N           target pids (default 1024)\n"
		"  --net-buffer BYTES     network events' ring buffer per CPU (default 409600)\n"
		"  --unwind-rows N        unwind table rows, 8 bytes each (default 1048576; 0: frame pointers only)\n"
		"  --unwind-procs N       processes walked with unwind tables (default 64)\n"
		"  --log-level LEVEL      error|warn|info|debug\n");
}

static int parse_u64(const char *name, const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "ember-collector: bad value '%s' for --%s (expected %llu..%llu)\n", s, name,
			(unsigned long long)min, (unsigned long long)max);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

/* Command line into C; 0 to go on, or the exit status. */
static int parse_args(int argc, char **argv, enum log_level *lvl, int *done)
{
	static const struct option opts[] = {
		{ "run-dir", required_argument, 0, 'r' }, { "shards", required_argument, 0, 's' },
		{ "ring-size", required_argument, 0, 'z' }, { "analyzer-uid", required_argument, 0, 'u' },
		{ "flush-ms", required_argument, 0, 'f' }, { "max-stacks", required_argument, 0, 'k' },
		{ "max-pids", required_argument, 0, 'p' }, { "log-level", required_argument, 0, 'l' },
		{ "net-buffer", required_argument, 0, 'n' },
		{ "unwind-rows", required_argument, 0, 'U' }, { "unwind-procs", required_argument, 0, 'P' },
		{ "help", no_argument, 0, 'h' }, { 0 },
	};
	uint64_t v, uid = (uint64_t)-1;
	int opt;

	*done = 1;
	C.run_dir = "/run/ember";
	C.nshards = 1;
	C.ring_size = 8u << 20;
	C.flush_ns = 5000000000ull;
	C.bpf_opts = (struct bpf_stacks_opts){ .max_stacks = 8192, .max_agg = 16384, .max_pids = 1024,
					       .unwind_rows = 1u << 20, .unwind_procs = 64 };
	C.net_buffer = 400 * 1024;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'r': C.run_dir = optarg; break;
		case 's': if (parse_u64("shards", optarg, 1, 64, &v)) return 2; C.nshards = v; break;
		case 'z': if (parse_u64("ring-size", optarg, 65536, 1ull << 30, &v) || (v & (v - 1))) {
				fprintf(stderr, "ember-collector: --ring-size must be a power of two\n"); return 2; }
			C.ring_size = v; break;
		case 'u': if (parse_u64("analyzer-uid", optarg, 0, 0xfffffffe, &uid)) return 2; break;
		case 'f': if (parse_u64("flush-ms", optarg, 10, 3600000, &v)) return 2; C.flush_ns = v * 1000000; break;
		case 'k': if (parse_u64("max-stacks", optarg, 64, 1 << 20, &v)) return 2;
			C.bpf_opts.max_stacks = v; C.bpf_opts.max_agg = 2 * v; break;
		case 'p': if (parse_u64("max-pids", optarg, 1, 1 << 20, &v)) return 2; C.bpf_opts.max_pids = v; break;
		case 'U': if (parse_u64("unwind-rows", optarg, 0, 1u << 26, &v)) return 2; C.bpf_opts.unwind_rows = v; break;
		case 'P': if (parse_u64("unwind-procs", optarg, 1, 65536, &v)) return 2; C.bpf_opts.unwind_procs = v; break;
		case 'n': if (parse_u64("net-buffer", optarg, 4096, 1ull << 30, &v)) return 2; C.net_buffer = v; break;
		case 'l': if (log__parse_level(optarg, lvl)) { fprintf(stderr, "ember-collector: bad --log-level '%s'\n", optarg); return 2; } break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc || uid == (uint64_t)-1) {
		usage(stderr);
		return 2;
	}
	C.analyzer_uid = uid;
	*done = 0;
	return 0;
}

/*
 * The network program is optional: a kernel where it does not load still
 * profiles stacks, and network tasks are refused with the reason logged here.
 */
static void load_net(void)
{
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	struct bpf_net_opts o = { .max_targets = C.bpf_opts.max_pids,
				  .ringbuf_bytes = C.net_buffer * (uint64_t)(ncpus > 0 ? ncpus : 1) };
	const char *ap = getenv("EMBER_NET_ATTACH");

	/* The raw_tp fallback is what kernels without BTF trampolines get: tests load it here on purpose. */
	o.force_raw_tp = ap && !strcmp(ap, "raw_tp");
	C.net = bpf_net__load(&o);
	if (!C.net) {
		log_warn("cannot load the network BPF program (%m): network profiling tasks will be refused");
		return;
	}
	if (!bpf_net__has_tls(C.net))
		log_warn("this kernel has no uprobe.multi links: TLS plaintext will not be captured");
	else if (!(C.tls = tls_links__new(C.net, 1024)))
		log_warn("TLS probes unavailable: %m");
}

static struct shm_ring **shard_rings(void)
{
	static struct shm_ring **rings;

	if (!rings)
		rings = calloc(C.nshards, sizeof(*rings));
	for (unsigned s = 0; rings && s < C.nshards; s++)
		rings[s] = C.shards[s].ring;
	return rings;
}

/* Everything that needs root: BPF, tracefs, the rings, the socket.  Then the privileges go. */
static int setup(void)
{
	struct itimerspec its = { .it_interval = { C.flush_ns / 1000000000ull, C.flush_ns % 1000000000ull } };
	sigset_t mask;
	int err;

	if (geteuid() != 0) {
		log_error("must run as root (it loads BPF programs, then drops to %s)", PRIVS_KEPT_DESC);
		return -1;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		log_error("this kernel has no BTF (/sys/kernel/btf/vmlinux): ember needs CONFIG_DEBUG_INFO_BTF=y");
		return -1;
	}
	/* The classic-tracepoint fallback needs tracefs; this is the last chance to
	 * mount it (CAP_SYS_ADMIN is dropped below).  Failure only loses that fallback. */
	if (access("/sys/kernel/tracing/events", F_OK) &&
	    mount("nodev", "/sys/kernel/tracing", "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		log_info("tracefs is not mounted and could not be (%m): the tracepoint fallback is unavailable");
	if (mkdir(C.run_dir, 0755) && errno != EEXIST) {
		log_error("cannot create run directory %s: %m", C.run_dir);
		return -1;
	}
	C.bpf = bpf_stacks__load(&C.bpf_opts);
	if (!C.bpf) {
		log_error("cannot load the stack-sampling BPF program: %m");
		return -1;
	}
	if (C.bpf_opts.unwind_rows) {
		struct unwind_store_ops ops = { .write_rows = store_rows, .set_proc = store_proc };
		/* 30 s: an analyzer sends a process's tables within that, even for a large binary. */
		C.unwind = unwind_store__new(C.bpf_opts.unwind_rows, C.bpf_opts.unwind_procs, 30000000000ull, &ops);
		if (!C.unwind) {
			log_error("cannot allocate the unwind table store: %m");
			return -1;
		}
	}
	load_net();
	/* libbpf's copy of the kernel BTF is freed after load: give it back to the
	 * kernel before the rings are mapped, so the two never add up. */
	malloc_trim(0);
	C.shards = calloc(C.nshards, sizeof(*C.shards));
	if (!C.shards)
		return -1;
	for (unsigned s = 0; s < C.nshards; s++) {
		char name[32];
		snprintf(name, sizeof(name), "ember-shard-%u", s);
		C.shards[s].ring = shm_ring__create(C.ring_size, name);
		if (!C.shards[s].ring) {
			log_error("cannot create ring shard %u (%llu bytes): %m", s, (unsigned long long)C.ring_size);
			return -1;
		}
	}
	if (C.net) {
		C.fwd = net_fwd__new(shard_rings(), C.nshards);
		if (!C.fwd)
			return -1;
		C.net_src = (struct conn){ .kind = SRC_NET, .fd = bpf_net__fd(C.net) };
		C.net_timer_src = (struct conn){ .kind = SRC_NET_TIMER,
						 .fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK) };
		if (C.net_timer_src.fd < 0) {
			log_error("cannot create the network events' timer: %m");
			return -1;
		}
	}
	err = setup_socket();
	if (err < 0) {
		log_error("cannot listen on %s: %s", C.sock_path, strerror(-err));
		return -1;
	}
	C.listen_src = (struct conn){ .kind = SRC_LISTEN, .fd = err };
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	C.signal_src = (struct conn){ .kind = SRC_SIGNAL, .fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK) };
	C.timer_src = (struct conn){ .kind = SRC_TIMER, .fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK) };
	if (C.signal_src.fd < 0 || C.timer_src.fd < 0) {
		log_error("cannot create signalfd/timerfd: %m");
		return -1;
	}
	its.it_value = its.it_interval;
	timerfd_settime(C.timer_src.fd, 0, &its, NULL);
	err = io_uring_queue_init(64, &C.ring, 0);
	if (err) {
		log_error("io_uring_queue_init: %s", strerror(-err));
		return -1;
	}
	/* The collector only copies events from the BPF ring buffer to the analyzers': if it
	 * waits for a CPU behind the very workload it observes, the ring buffer fills and
	 * events are lost.  Its own work is small, so it goes first. */
	if (setpriority(PRIO_PROCESS, 0, COLLECTOR_NICE))
		log_info("cannot raise the collector's priority (%m): events may be lost under CPU contention");
	err = privs__drop_collector();
	if (err) {
		log_error("cannot drop privileges: %s", strerror(-err));
		return -1;
	}
	start_waiter();
	return 0;
}

/* The io_uring loop: the control socket, its connections, the drain timer, signals. */
static void run(void)
{
	int err;

	arm(&C.listen_src);
	arm(&C.signal_src);
	arm(&C.timer_src);
	if (C.drain_src.fd > 0)
		arm(&C.drain_src);
	if (C.net) {
		arm(&C.net_src);
		arm(&C.net_timer_src);
	}
	while (!C.stop) {
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;

		err = io_uring_submit_and_wait(&C.ring, 1);
		if (err < 0 && err != -EINTR) {
			log_error("io_uring: %s", strerror(-err));
			break;
		}
		io_uring_for_each_cqe(&C.ring, head, cqe) {
			struct conn *src = io_uring_cqe_get_data(cqe);
			seen++;
			switch (src->kind) {
			case SRC_LISTEN: on_accept(); arm(src); break;
			case SRC_TIMER: on_timer(); arm(src); break;
			case SRC_NET: forward_net(); arm(src); break;
			case SRC_DRAIN_DONE: on_drain_done(); arm(src); break;
			case SRC_NET_TIMER: {
				uint64_t ticks;
				(void)!read(src->fd, &ticks, sizeof(ticks));
				forward_net();
				arm(src);
				break;
			}
			case SRC_SIGNAL: {
				struct signalfd_siginfo si;
				while (read(src->fd, &si, sizeof(si)) == sizeof(si))
					if (si.ssi_signo != SIGHUP)
						C.stop = 1;
				arm(src);
				break;
			}
			case SRC_CONN:
				if (cqe->res < 0 || conn_handle(src) < 0)
					conn_close(src);
				else
					arm(src);
				break;
			}
		}
		io_uring_cq_advance(&C.ring, seen);
	}
}

int main(int argc, char **argv)
{
	enum log_level lvl = LOG_LVL_INFO;
	int rc, done;

	rc = parse_args(argc, argv, &lvl, &done);
	if (done)
		return rc;
	log__init("collector", lvl);
	libbpf_set_print(libbpf_print);
	if (setup())
		return 1;
	C.last_drain_real_ns = timeutil__now_ns(CLOCK_REALTIME);
	log_info("ready: %u shard(s) of %llu bytes, control socket %s, kept capabilities %s", C.nshards,
		 (unsigned long long)C.ring_size, C.sock_path, PRIVS_KEPT_DESC);
	run();
	log_info("stopping: final drain");
	drain();
	forward_net();
	for (unsigned i = 0; i < MAX_TASKS; i++)
		if (C.tasks[i].used)
			task_remove(&C.tasks[i]);
	unlink(C.sock_path);
	io_uring_queue_exit(&C.ring);
	C.bpf = bpf_stacks__free(C.bpf);
	C.unwind = unwind_store__free(C.unwind);
	C.tls = tls_links__free(C.tls);
	C.fwd = net_fwd__free(C.fwd);
	C.net = bpf_net__free(C.net);
	free(shard_rings());
	for (unsigned s = 0; s < C.nshards; s++)
		shm_ring__free(C.shards[s].ring);
	free(C.shards);
	return 0;
}
