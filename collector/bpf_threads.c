#include "collector/bpf_threads.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/threads.skel.h"
#include "collector/bpf_stacks.h"
#include "common/ctl_proto.h"


struct bpf_threads {
	struct threads_bpf *skel;
	struct bpf_link *links[3];
	unsigned users;
	int ap;
	uint32_t active;
};

/* The calls each sub-probe records (gala-gopher's tprofiling, with the variants glibc calls). */
static const struct { long nr; uint8_t cls; } syscalls[] = {
	{ SYS_read, THREAD_EV_RW | THREAD_CLS_FD }, { SYS_write, THREAD_EV_RW | THREAD_CLS_FD },
	{ SYS_readv, THREAD_EV_RW | THREAD_CLS_FD }, { SYS_writev, THREAD_EV_RW | THREAD_CLS_FD },
	{ SYS_pread64, THREAD_EV_RW | THREAD_CLS_FD }, { SYS_pwrite64, THREAD_EV_RW | THREAD_CLS_FD },
	{ SYS_preadv, THREAD_EV_RW | THREAD_CLS_FD }, { SYS_pwritev, THREAD_EV_RW | THREAD_CLS_FD },
	{ SYS_preadv2, THREAD_EV_RW | THREAD_CLS_FD }, { SYS_pwritev2, THREAD_EV_RW | THREAD_CLS_FD },
	{ SYS_sync, THREAD_EV_FILE }, { SYS_syncfs, THREAD_EV_FILE | THREAD_CLS_FD },
	{ SYS_fsync, THREAD_EV_FILE | THREAD_CLS_FD }, { SYS_fdatasync, THREAD_EV_FILE | THREAD_CLS_FD },
	{ SYS_sync_file_range, THREAD_EV_FILE | THREAD_CLS_FD },
	{ SYS_sendto, THREAD_EV_NET | THREAD_CLS_FD }, { SYS_recvfrom, THREAD_EV_NET | THREAD_CLS_FD },
	{ SYS_sendmsg, THREAD_EV_NET | THREAD_CLS_FD }, { SYS_recvmsg, THREAD_EV_NET | THREAD_CLS_FD },
	{ SYS_sendmmsg, THREAD_EV_NET | THREAD_CLS_FD }, { SYS_recvmmsg, THREAD_EV_NET | THREAD_CLS_FD },
	{ SYS_futex, THREAD_EV_LOCK },
#ifdef SYS_futex_waitv
	{ SYS_futex_waitv, THREAD_EV_LOCK },
#endif
	{ SYS_sched_yield, THREAD_EV_SCHED }, { SYS_nanosleep, THREAD_EV_SCHED },
	{ SYS_clock_nanosleep, THREAD_EV_SCHED }, { SYS_wait4, THREAD_EV_SCHED }, { SYS_waitid, THREAD_EV_SCHED },
	{ SYS_select, THREAD_EV_SCHED }, { SYS_pselect6, THREAD_EV_SCHED }, { SYS_poll, THREAD_EV_SCHED },
	{ SYS_ppoll, THREAD_EV_SCHED }, { SYS_epoll_wait, THREAD_EV_SCHED }, { SYS_epoll_pwait, THREAD_EV_SCHED },
#ifdef SYS_epoll_pwait2
	{ SYS_epoll_pwait2, THREAD_EV_SCHED },
#endif
};

struct bpf_threads *bpf_threads__load(struct bpf_stacks *stacks, uint32_t max_agg)
{
	static const char *const shared[] = { "targets", "counters", "hstacks", "unwind_rows", "unwind_slot",
					      "unwind_procs", "unwind_maps", "py_procs", "py_tstates", "py_codes" };
	struct bpf_threads *t = calloc(1, sizeof(*t));
	int err = -ENOMEM, fd;

	if (!t)
		goto fail;
	t->skel = threads_bpf__open();
	if (!t->skel) {
		err = -errno;
		goto fail;
	}
	for (unsigned i = 0; i < sizeof(shared) / sizeof(shared[0]); i++) {
		struct bpf_map *from = bpf_stacks__shared_map(stacks, shared[i]);
		struct bpf_map *to = bpf_object__find_map_by_name(t->skel->obj, shared[i]);

		/* The sizes must agree before the fd is taken: reuse checks them. */
		if (!from || !to || bpf_map__set_max_entries(to, bpf_map__max_entries(from)) ||
		    bpf_map__reuse_fd(to, bpf_map__fd(from))) {
			err = -EINVAL;
			goto fail;
		}
	}
	bpf_map__set_max_entries(t->skel->maps.threads_agg0, max_agg);
	bpf_map__set_max_entries(t->skel->maps.threads_agg1, max_agg);
	bpf_map__set_max_entries(t->skel->maps.threads_paths0, max_agg);
	bpf_map__set_max_entries(t->skel->maps.threads_paths1, max_agg);
	err = threads_bpf__load(t->skel);
	if (err)
		goto fail;
	fd = bpf_map__fd(t->skel->maps.threads_sys);
	for (unsigned i = 0; i < sizeof(syscalls) / sizeof(syscalls[0]); i++) {
		uint32_t k = (uint32_t)syscalls[i].nr;
		uint8_t v = syscalls[i].cls;

		if (k < THREAD_SYSCALLS && bpf_map_update_elem(fd, &k, &v, BPF_ANY)) {
			err = -errno;
			goto fail;
		}
	}
	return t;
fail:
	bpf_threads__free(t);
	errno = -err;
	return NULL;
}

struct bpf_threads *bpf_threads__free(struct bpf_threads *t)
{
	if (!t)
		return NULL;
	for (unsigned i = 0; i < 3; i++)
		bpf_link__destroy(t->links[i]);
	threads_bpf__destroy(t->skel);
	free(t);
	return NULL;
}

void bpf_threads__targets_changed(struct bpf_threads *t)
{
	/* After the map update: a program reading the old number re-reads the map at its next call. */
	__atomic_add_fetch(&t->skel->bss->threads_gen, 1, __ATOMIC_SEQ_CST);
}

int bpf_threads__attach(struct bpf_threads *t)
{
	/* Decided by attaching: tp_btf, else raw_tp, all three programs alike. */
	struct bpf_program *chain[2][3] = {
		{ t->skel->progs.threads_enter_btf, t->skel->progs.threads_exit_btf, t->skel->progs.threads_switch_btf },
		{ t->skel->progs.threads_enter_raw, t->skel->progs.threads_exit_raw, t->skel->progs.threads_switch_raw },
	};
	int err = -ENOENT;

	if (t->users++)
		return t->ap;
	for (unsigned c = 0; c < 2; c++) {
		unsigned i;

		for (i = 0; i < 3; i++) {
			t->links[i] = bpf_program__attach(chain[c][i]);
			if (!t->links[i]) {
				err = -errno;
				break;
			}
		}
		if (i == 3) {
			t->ap = c ? CTL_AP_RAW_TP : CTL_AP_TP_BTF;
			return t->ap;
		}
		while (i-- > 0) {
			bpf_link__destroy(t->links[i]);
			t->links[i] = NULL;
		}
	}
	t->users = 0;
	return err;
}

void bpf_threads__detach(struct bpf_threads *t)
{
	if (!t->users || --t->users)
		return;
	for (unsigned i = 0; i < 3; i++) {
		bpf_link__destroy(t->links[i]);
		t->links[i] = NULL;
	}
}

int bpf_threads__seed_call(struct bpf_threads *t, uint32_t tid, uint32_t tgid, int32_t nr, uint64_t arg0,
			   uint64_t arg1, uint32_t probes, uint64_t ts)
{
	int fd = bpf_map__fd(t->skel->maps.threads_state);
	struct thread_state st;
	uint8_t cls = 0;
	bool had;

	for (unsigned i = 0; i < sizeof(syscalls) / sizeof(syscalls[0]); i++)
		if (syscalls[i].nr == nr)
			cls = syscalls[i].cls;
	if (!(probes & thread_probes_of(cls & ~THREAD_CLS_FD)))
		return 0;
	had = !bpf_map_lookup_elem(fd, &tid, &st) && st.tgid == tgid;
	if (had && st.ts)
		return 0;
	if (!had)
		memset(&st, 0, sizeof(st));
	st.ts = ts;
	st.nr = nr;
	st.cls = cls;
	st.arg0 = arg0;
	st.arg1 = arg1;
	st.uhash = 0;
	st.tgid = tgid;
	/*
	 * A call the thread begins between the lookup and the update is
	 * overwritten (the programs write their entry in place); the caller's
	 * check after the update (the thread's /proc file again) then takes the
	 * seed back, and that call goes untimed.
	 */
	if (bpf_map_update_elem(fd, &tid, &st, had ? BPF_EXIST : BPF_NOEXIST))
		return errno == EEXIST || errno == ENOENT ? 0 : -errno;
	return 1;
}

void bpf_threads__unseed_call(struct bpf_threads *t, uint32_t tid, uint64_t ts)
{
	int fd = bpf_map__fd(t->skel->maps.threads_state);
	struct thread_state st;

	if (!bpf_map_lookup_elem(fd, &tid, &st) && st.ts == ts) {
		st.ts = 0;
		bpf_map_update_elem(fd, &tid, &st, BPF_EXIST);
	}
}

static bool in(const uint32_t *pids, unsigned n, uint32_t pid)
{
	for (unsigned i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

/* Every entry of set to cb (those of pids only, when npids), then gone; n. */
static int drain_set(struct bpf_threads *t, uint32_t set, const uint32_t *pids, unsigned npids, bpf_threads_fn cb,
		     void *ctx)
{
	int fd = bpf_map__fd(set ? t->skel->maps.threads_agg1 : t->skel->maps.threads_agg0);
	int kfd = bpf_map__fd(set ? t->skel->maps.threads_keys1 : t->skel->maps.threads_keys0);
	int pfd = bpf_map__fd(set ? t->skel->maps.threads_paths1 : t->skel->maps.threads_paths0);
	struct thread_path path;
	uint32_t max = bpf_map__max_entries(set ? t->skel->maps.threads_agg1 : t->skel->maps.threads_agg0);
	struct thread_agg_key key, next, *gone = NULL;
	struct thread_agg_val val;
	void *prev = NULL;
	uint32_t ngone = 0;
	int n = 0;

	/* A task's end deletes after the walk: deleting the key in hand would send the walk back to the start. */
	if (npids && !(gone = calloc(max, sizeof(*gone))))
		return -ENOMEM;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (npids && !in(pids, npids, key.tgid))
			continue;
		if (bpf_map_lookup_elem(fd, &key, &val))
			continue;
		if (!(val.flags & THREAD_AGG_F_OFF)) {
			bool has = (val.flags & THREAD_AGG_F_PATH) && !bpf_map_lookup_elem(pfd, &key, &path);

			path.p[sizeof(path.p) - 1] = 0;
			cb(ctx, &key, &val, 0, has ? path.p : NULL);
			n++;
		}
		if (npids && ngone < max)
			gone[ngone++] = key;
	}
	if (npids) {
		for (uint32_t i = 0; i < ngone; i++) {
			bpf_map_delete_elem(fd, &gone[i]);
			bpf_map_delete_elem(pfd, &gone[i]);
			bpf_map_delete_elem(kfd, &gone[i].tid);
		}
		free(gone);
		return n;
	}
	{
		uint32_t tid;

		while (!bpf_map_get_next_key(fd, NULL, &next))
			if (bpf_map_delete_elem(fd, &next))
				break;
		while (!bpf_map_get_next_key(pfd, NULL, &next))
			if (bpf_map_delete_elem(pfd, &next))
				break;
		while (!bpf_map_get_next_key(kfd, NULL, &tid))
			if (bpf_map_delete_elem(kfd, &tid))
				break;
	}
	return n;
}

int bpf_threads__window(struct bpf_threads *t, bpf_threads_fn cb, void *ctx)
{
	int n = drain_set(t, !t->active, NULL, 0, cb, ctx);

	t->active = !t->active;
	t->skel->bss->threads_active = t->active;
	return n;
}

/* One thread's state, to cb: its call and on-CPU period in progress; n. */
static int flush_state(const struct thread_state_rec *r, uint64_t now_ktime_ns, bpf_threads_fn cb, void *ctx)
{
	const struct thread_state *c = &r->st;
	int n = 0;

	if (c->ts && c->ts < now_ktime_ns) {
		uint8_t cls = c->cls;
		struct thread_agg_key key = { .tid = r->tid, .tgid = c->tgid, .nr = c->nr, .arg = -1 };
		struct thread_agg_val v = { .first_start = c->ts, .last_end = now_ktime_ns,
					    .total_ns = now_ktime_ns - c->ts, .count = 1,
					    .max_ns = now_ktime_ns - c->ts, .uhash = c->uhash };

		if (cls & THREAD_CLS_FD)
			key.arg = (int32_t)c->arg0;
		cls &= ~THREAD_CLS_FD;
		if (cls == THREAD_EV_LOCK)
			key.arg = ((c->arg1 & 0x7f) == 1 || (c->arg1 & 0x7f) == 10) ? THREAD_FUTEX_WAKE
										      : THREAD_FUTEX_WAIT;
		v.type = cls == THREAD_EV_RW ? THREAD_EV_FILE : cls;
		cb(ctx, &key, &v, THREAD_REC_F_ONGOING, NULL);
		n++;
	}
	if (c->oncpu_ts && c->oncpu_ts < now_ktime_ns) {
		struct thread_agg_key key = { .tid = r->tid, .tgid = c->tgid, .nr = THREAD_NR_ONCPU, .arg = -1 };
		struct thread_agg_val v = { .first_start = c->oncpu_ts, .last_end = now_ktime_ns,
					    .total_ns = now_ktime_ns - c->oncpu_ts, .count = 1,
					    .max_ns = now_ktime_ns - c->oncpu_ts, .type = THREAD_EV_ONCPU };

		cb(ctx, &key, &v, THREAD_REC_F_ONGOING, NULL);
		n++;
	}
	return n;
}

int bpf_threads__flush_pids(struct bpf_threads *t, const uint32_t *pids, unsigned npids, uint64_t now_ktime_ns,
			    bpf_threads_fn cb, void *ctx)
{
	int fd = bpf_map__fd(t->skel->maps.threads_state);
	int n = drain_set(t, !t->active, pids, npids, cb, ctx) + drain_set(t, t->active, pids, npids, cb, ctx);
	uint32_t max = bpf_map__max_entries(t->skel->maps.threads_state), ngone = 0, next, *prev = NULL;
	struct thread_state_rec r;
	uint32_t *gone = calloc(max, sizeof(*gone));

	if (!gone)
		return -ENOMEM;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		r.tid = next;
		prev = &r.tid;
		if (bpf_map_lookup_elem(fd, &r.tid, &r.st) || !in(pids, npids, r.st.tgid))
			continue;
		if (ngone < max)
			gone[ngone++] = r.tid;
		n += flush_state(&r, now_ktime_ns, cb, ctx);
	}
	for (uint32_t i = 0; i < ngone; i++)
		bpf_map_delete_elem(fd, &gone[i]);
	free(gone);
	return n;
}
