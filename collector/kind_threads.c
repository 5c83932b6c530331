/*
 * Thread profiling (collector/bpf_threads.h): the threads object, on while a
 * thread task runs; its aggregates go into the shards' rings once a window
 * (kind_threads__window, the loop's thread timer) and, at a task's end, its
 * processes' last aggregates and the calls still in progress.
 *
 * Each aggregate becomes one struct ember_rec_thread with its stack's
 * addresses (from the shared stack map) and, for a file, the path its fd
 * names now: the kernel's own text for /proc/PID/fd/N, read only (no file is
 * opened), and kept only if the file it names is the one the call used
 * (inode and device, from the kernel at the call): a closed and reused fd
 * gives no path rather than a wrong one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "bpf/ember_abi.h"
#include "bpf/threads_abi.h"
#include "collector/bpf_stacks.h"
#include "collector/bpf_threads.h"
#include "collector/collector.h"
#include "collector/kinds.h"
#include "collector/py_fwd.h"
#include "collector/tasks.h"
#include "collector/unwind_store.h"
#include "common/log.h"
#include "common/profile_kind.h"
#include "common/shard.h"
#include "common/shm_ring.h"
#include "common/timeutil.h"

#define THREAD_PATH_MAX 1024

int kind_threads__load(struct kinds_env *env, struct kinds_load_opts *o)
{
	if (!env->bpf)
		return 0;
	env->threads = bpf_threads__load(env->bpf, o->threads_agg ? o->threads_agg : 16384);
	if (!env->threads)
		log_warn("thread profiling is off: its BPF program did not load (%s; it needs Linux 5.17+: "
			 "bpf_loop, task BTF, bpf_task_pt_regs; log_level debug shows the verifier's log)",
			 strerror(errno));
	return 0;
}

void kind_threads__unload(struct kinds_env *env)
{
	env->threads = bpf_threads__free(env->threads);
}

/* One allocation (kinds__free frees impl alone). */
struct threads_kind {
	struct kinds_env *env;
	uint64_t window_start_ns;   /* unix */
	uint64_t *window_events;    /* per shard, in the current window: into win */
	uint64_t *window_drops;
	struct hstack hs[1];
	struct py_fwd py;           /* Python frames' names sent this window */
	uint64_t win[];             /* 2 * nshards */
};

/* ktime (CLOCK_MONOTONIC, bpf_ktime_get_ns) to unix ns, at the moment of the call. */
static uint64_t to_unix(uint64_t ktime, uint64_t off)
{
	return ktime + off;
}

/* The path fd names in pid now, if it is the file (ino, dev) the call used; 0 or -errno. */
static int fd_path(uint32_t pid, int32_t fd, uint64_t ino, uint32_t kdev, char *buf, size_t len, size_t *ret_n)
{
	char proc[64];
	struct stat st;
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/%u/fd/%d", pid, fd);
	n = readlink(proc, buf, len);
	if (n < 0)
		return -errno;
	if ((size_t)n >= len)
		n = (ssize_t)len;
	/* stat, not open: the magic link leads to the file object itself, whatever its name says. */
	if (stat(proc, &st))
		return -errno;
	/* The kernel's s_dev is MAJOR << 20 | MINOR. */
	if (st.st_ino != ino || major(st.st_dev) != kdev >> 20 || minor(st.st_dev) != (kdev & 0xfffff))
		return -ESTALE;
	*ret_n = (size_t)n;
	return 0;
}

/* A comm as the kernel keeps it (/proc/PID[/task/TID]/comm, read only, at most 16 bytes); tid 0: the process's. */
static void proc_comm(uint32_t pid, uint32_t tid, char out[EMBER_COMM_LEN])
{
	char path[64];
	FILE *f;

	memset(out, 0, EMBER_COMM_LEN);
	if (tid)
		snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(out, EMBER_COMM_LEN, f))
		out[strcspn(out, "\n")] = 0;
	fclose(f);
}

struct emit_ctx {
	struct threads_kind *k;
	uint64_t off;
	char path[THREAD_PATH_MAX];
};

static void emit(void *ctx, const struct thread_agg_key *key, const struct thread_agg_val *v, uint32_t flags,
		 const char *kpath)
{
	struct emit_ctx *e = ctx;
	struct threads_kind *k = e->k;
	struct collector *col = k->env->col;
	unsigned s = shard__of(key->tgid, col->nshards);
	struct collector_shard *sh = &col->shards[s];
	struct ember_rec_thread *r;
	size_t npath = 0, nuser = 0, pathroom;
	uint32_t len;

	if (v->uhash) {
		if (bpf_stacks__hstack(k->env->bpf, v->uhash, k->hs)) {
			col->stats[CTL_STAT_THREAD_STACKS_LOST]++;
			flags |= THREAD_AGG_F_STACK_LOST;
		} else {
			nuser = k->hs->n;
			py_fwd__send(&k->py, k->env->bpf, col, sh, key->tgid, (const uint64_t *)k->hs->ips, (unsigned)nuser);
		}
	}
	if (kpath) {
		npath = strnlen(kpath, sizeof(e->path) - 1);
		memcpy(e->path, kpath, npath);
	} else if (key->arg >= 0 && (v->type == THREAD_EV_FILE || (flags & THREAD_REC_F_ONGOING)) &&
	    key->nr != THREAD_NR_ONCPU && !(v->flags & THREAD_AGG_F_SOCK) && v->type != THREAD_EV_LOCK) {
		int err = fd_path(key->tgid, key->arg, v->ino, v->dev, e->path, sizeof(e->path), &npath);

		/* An ongoing call's aggregate was made up from the call: its file's identity is not known. */
		if (err == -ESTALE && (flags & THREAD_REC_F_ONGOING)) {
			struct stat st;
			char proc[64];

			snprintf(proc, sizeof(proc), "/proc/%u/fd/%d", key->tgid, key->arg);
			npath = 0;
			if (!stat(proc, &st)) {
				ssize_t n = readlink(proc, e->path, sizeof(e->path));

				npath = n > 0 ? (size_t)n : 0;
			}
			err = 0;
		}
		if (err) {
			npath = 0;
			if (err == -ESTALE) {
				flags |= THREAD_REC_F_PATH_STALE;
				col->stats[CTL_STAT_THREAD_PATHS_STALE]++;
			}
		}
	}
	pathroom = (npath + 7) & ~(size_t)7;
	len = (uint32_t)(sizeof(*r) + pathroom + nuser * sizeof(uint64_t));
	r = shm_ring__reserve(sh->ring, EMBER_REC_THREAD, len);
	if (!r) {
		k->window_drops[s]++;
		col->stats[CTL_STAT_THREAD_RING_DROPS]++;
		return;
	}
	memset(r, 0, sizeof(*r));
	r->tid = key->tid;
	r->tgid = key->tgid;
	r->nr = key->nr;
	r->arg = key->arg;
	r->start_ns = to_unix(v->first_start, e->off);
	r->end_ns = to_unix(v->last_end, e->off);
	r->total_ns = v->total_ns;
	r->count = v->count;
	r->max_ns = v->max_ns;
	r->flags = (v->flags & ~THREAD_AGG_F_OFF) | flags;
	r->type = v->type;
	r->sock_family = v->sock_family;
	r->sock_proto = v->sock_proto;
	r->sport = v->sport;
	r->dport = v->dport;
	memcpy(r->saddr, v->saddr, sizeof(r->saddr));
	memcpy(r->daddr, v->daddr, sizeof(r->daddr));
	memcpy(r->comm, v->comm, sizeof(r->comm));
	/* A call in progress was never booked: its thread's name is read now. */
	if (!r->comm[0])
		proc_comm(key->tgid, key->tid, r->comm);
	memcpy(r->pcomm, v->pcomm, sizeof(r->pcomm));
	if (!r->pcomm[0])
		proc_comm(key->tgid, 0, r->pcomm);
	r->npath = (uint16_t)npath;
	r->nuser = (uint16_t)nuser;
	memcpy((char *)r->ips, e->path, npath);
	memset((char *)r->ips + npath, 0, pathroom - npath);
	memcpy((char *)r->ips + pathroom, k->hs->ips, nuser * sizeof(uint64_t));
	shm_ring__commit(sh->ring, r);
	k->window_events[s]++;
	col->stats[CTL_STAT_THREAD_EVENTS]++;
}

/* Each shard's window marker: what it was sent and lost since the last one. */
static void markers(struct threads_kind *k, uint64_t end)
{
	struct collector *col = k->env->col;

	for (unsigned s = 0; s < col->nshards; s++) {
		struct ember_rec_thread w = { .flags = THREAD_REC_F_WINDOW, .start_ns = k->window_start_ns,
					      .end_ns = end, .count = k->window_events[s],
					      .total_ns = k->window_drops[s], .nr = THREAD_NR_ONCPU, .arg = -1 };

		(void)shm_ring__write(col->shards[s].ring, EMBER_REC_THREAD, &w, sizeof(w));
		(void)shm_ring__notify(col->shards[s].ring);
		k->window_events[s] = k->window_drops[s] = 0;
	}
	k->window_start_ns = end;
	py_fwd__window(&k->py);
}

static uint64_t clock_offset(void)
{
	return timeutil__now_ns(CLOCK_REALTIME) - timeutil__now_ns(CLOCK_MONOTONIC);
}

void kind_threads__window(struct collector_kind *ck)
{
	struct threads_kind *k = ck ? ck->impl : NULL;
	struct emit_ctx *e;
	int n;

	if (!k || !(e = calloc(1, sizeof(*e))))
		return;
	e->k = k;
	e->off = clock_offset();
	n = bpf_threads__window(k->env->threads, emit, e);
	if (n < 0)
		log_warn("reading the thread aggregates failed: %s", strerror(-n));
	markers(k, timeutil__now_ns(CLOCK_REALTIME));
	free(e);
}

static int check(void *impl, const struct ctl_attach *a)
{
	(void)impl;
	if (!a->probes || a->probes & ~(uint32_t)(THREAD_P_ONCPU | THREAD_P_FILE | THREAD_P_NET | THREAD_P_LOCK |
						    THREAD_P_SCHED))
		return -EINVAL;
	return 0;
}

static int attach(void *impl, struct task *t)
{
	struct threads_kind *k = impl;
	int r = bpf_threads__attach(k->env->threads);

	t->attach_point = r > 0 ? (uint32_t)r : CTL_AP_NONE;
	return r > 0 ? 0 : r;
}

/* The task's pids are out of the target map: after a grace period, what they left goes out. */
static void detach(void *impl, struct task *t)
{
	struct threads_kind *k = impl;
	struct emit_ctx *e = calloc(1, sizeof(*e));
	int n;

	bpf_stacks__wait_programs();
	if (e) {
		e->k = k;
		e->off = clock_offset();
		n = bpf_threads__flush_pids(k->env->threads, t->pids, t->npids, timeutil__now_ns(CLOCK_MONOTONIC), emit,
					    e);
		if (n < 0)
			log_warn("reading task %llu's thread aggregates failed: %s", (unsigned long long)t->id,
				 strerror(-n));
		markers(k, timeutil__now_ns(CLOCK_REALTIME));
		free(e);
	}
	bpf_threads__detach(k->env->threads);
}

/* The call tid is in, from the kernel's /proc/PID/task/TID/syscall: 0, or -1 (running, not in a call, gone). */
static int call_in(uint32_t pid, uint32_t tid, int32_t *nr, uint64_t *arg0, uint64_t *arg1)
{
	char path[64], buf[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/syscall", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	/* "NR 0xARG1 0xARG2 ... SP PC"; "-1 SP PC" (blocked outside a call); "running" */
	if (sscanf(buf, "%" SCNd32 " %" SCNx64 " %" SCNx64, nr, arg0, arg1) != 3 || *nr < 0)
		return -1;
	return 0;
}

/*
 * Each thread of pid that is in a call as the task starts (a thread already
 * deadlocked, waiting, sleeping) has it timed from now: the programs see
 * only the calls that begin after.  Counted (thread_calls_in_progress_at_start).
 */
static void seed_calls(struct threads_kind *k, const struct task *t, uint32_t pid)
{
	uint64_t now = timeutil__now_ns(CLOCK_MONOTONIC), a0, a1, b0, b1;
	char path[48];
	struct dirent *de;
	int32_t nr, nr2;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	if (!(d = opendir(path)))
		return;
	while ((de = readdir(d))) {
		char *end;
		unsigned long tid = strtoul(de->d_name, &end, 10);

		if (*end || !tid || tid > UINT32_MAX || call_in(pid, (uint32_t)tid, &nr, &a0, &a1))
			continue;
		if (bpf_threads__seed_call(k->env->threads, (uint32_t)tid, pid, nr, a0, a1, t->probes, now) != 1)
			continue;
		/* Still in it: the programs time its end.  Out of it meanwhile: taken back. */
		if (call_in(pid, (uint32_t)tid, &nr2, &b0, &b1) || nr2 != nr || b0 != a0 || b1 != a1) {
			bpf_threads__unseed_call(k->env->threads, (uint32_t)tid, now);
			continue;
		}
		k->env->col->stats[CTL_STAT_THREAD_CALLS_BEFORE]++;
	}
	closedir(d);
}

static int target(void *impl, const struct task *t, uint32_t pid, bool on)
{
	struct threads_kind *k = impl;
	int r = bpf_stacks__target_threads(k->env->bpf, pid, on, t->probes, t->min_block_ns);

	bpf_threads__targets_changed(k->env->threads);
	if (on && !r)
		seed_calls(k, t, pid);
	/* A process no stack-walking task watches any more walks without its tables. */
	if (!on && !tasks__pid_elsewhere(k->env->tasks, t, profile_kind__mask(PROFILE_KIND_UNWINDS), pid)) {
		if (k->env->unwind)
			unwind_store__forget(k->env->unwind, pid);
		(void)bpf_stacks__py_proc(k->env->bpf, pid, NULL);
	}
	return r;
}

static void counters(void *impl, uint64_t *stats)
{
	struct threads_kind *k = impl;
	uint64_t bc[BPF_CNT_MAX];

	if (bpf_stacks__counters(k->env->bpf, bc))
		return;
	stats[CTL_STAT_BPF_THREAD_CALLS] = bc[BPF_CNT_THREAD_CALLS];
	stats[CTL_STAT_BPF_THREAD_ONCPU] = bc[BPF_CNT_THREAD_ONCPU];
	stats[CTL_STAT_BPF_THREAD_AGG_FULL] = bc[BPF_CNT_THREAD_AGG_FULL];
	stats[CTL_STAT_BPF_THREAD_KEYS_CAP] = bc[BPF_CNT_THREAD_KEYS_CAP];
	stats[CTL_STAT_BPF_THREAD_CALL_FULL] = bc[BPF_CNT_THREAD_CALL_FULL];
	stats[CTL_STAT_BPF_THREAD_UNTIMED] = bc[BPF_CNT_THREAD_UNTIMED];
	stats[CTL_STAT_BPF_THREAD_STACKS] = bc[BPF_CNT_THREAD_STACKS];
	stats[CTL_STAT_BPF_THREAD_STACK_HITS] = bc[BPF_CNT_THREAD_STACK_HITS];
}

struct collector_kind *kind_threads__new(struct kinds_env *env, uint32_t kind)
{
	const struct profile_kind *row = profile_kind__by_id(kind);
	struct collector_kind *k = calloc(1, sizeof(*k));
	struct threads_kind *s = env->col ? calloc(1, sizeof(*s) + 2 * env->col->nshards * sizeof(uint64_t)) : NULL;

	if (!env->threads || !env->col || !k || !s || !row) {
		free(k);
		free(s);
		errno = ENODEV;
		return NULL;
	}
	s->window_events = s->win;
	s->window_drops = s->win + env->col->nshards;
	s->env = env;
	s->window_start_ns = timeutil__now_ns(CLOCK_REALTIME);
	*k = (struct collector_kind){ .kind = kind, .name = row->name, .flags = CTL_ATTACH_F_HOLD, .check = check, .attach = attach,
				      .detach = detach, .target = target, .counters = counters, .impl = s };
	return k;
}
