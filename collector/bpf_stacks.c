#include "collector/bpf_stacks.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <linux/membarrier.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/stacks.skel.h"
#include "common/cleanup.h"
#include "common/ctl_proto.h"

#define EMBER_MAX_CPUS 8192

/*
 * One software perf event per CPU, opened when the object loads (the
 * collector is still root: a kernel with perf_event_paranoid 3, Debian's
 * default, refuses CAP_PERFMON alone), disabled, with its program attached
 * for good; a task enables them, with its period, and the last one disables
 * them.  A CPU offline at load has no event (-1) until one can be opened.
 */
struct perf_set {
	int *fds;
	struct bpf_link **links;
	struct bpf_program *prog;
	uint64_t config;
	unsigned users;
	uint64_t period;      /* of the events while users > 0 */
	int open_err;         /* why the last open failed (0: none failed) */
};

struct bpf_stacks {
	struct stacks_bpf *skel;
	bool legacy;          /* the frame-pointer programs: no bpf_loop, task BTF, bpf_task_pt_regs (before 5.17) */
	int ncpus;
	struct perf_set oncpu, mem;
	struct bpf_link *offcpu_link;
	unsigned offcpu_users;
	int offcpu_ap;
	uint32_t active;
	uint64_t *ips; /* EMBER_MAX_STACK_DEPTH scratch for lookups */
	struct hstack *hs; /* scratch for hashed stacks */
	uint64_t unwind_gen;
};

static void perf_set_init(struct bpf_stacks *b, struct perf_set *ps, struct bpf_program *prog, uint64_t config);

/* The object with one set of programs: the table walker's, or the legacy ones.  0 or -errno. */
static int open_and_load(struct bpf_stacks *b, const struct bpf_stacks_opts *opts, bool legacy)
{
	struct stacks_bpf *k = stacks_bpf__open();
	struct bpf_program *modern[] = { k ? k->progs.oncpu_sample : NULL, k ? k->progs.mem_fault : NULL,
					 k ? k->progs.offcpu_tp_btf : NULL, k ? k->progs.offcpu_raw_tp : NULL,
					 k ? k->progs.offcpu_tracepoint : NULL };
	struct bpf_program *old[] = { k ? k->progs.oncpu_sample_legacy : NULL, k ? k->progs.mem_fault_legacy : NULL,
				      k ? k->progs.offcpu_tp_btf_legacy : NULL, k ? k->progs.offcpu_raw_tp_legacy : NULL,
				      k ? k->progs.offcpu_tracepoint_legacy : NULL };
	int err;

	if (!k)
		return -errno;
	for (unsigned i = 0; i < ARRAY_SIZE(modern); i++) {
		bpf_program__set_autoload(modern[i], !legacy);
		bpf_program__set_autoload(old[i], legacy);
	}
	/* Map sizes are set between open and load (the libbpf lifecycle). */
	bpf_map__set_max_entries(k->maps.stacks0, opts->max_stacks);
	bpf_map__set_max_entries(k->maps.stacks1, opts->max_stacks);
	bpf_map__set_max_entries(k->maps.agg0, opts->max_agg);
	bpf_map__set_max_entries(k->maps.agg1, opts->max_agg);
	bpf_map__set_max_entries(k->maps.targets, opts->max_pids);
	bpf_map__set_max_entries(k->maps.hstacks, opts->max_stacks);
	bpf_map__set_max_entries(k->maps.unwind_rows, opts->unwind_rows && !legacy ? opts->unwind_rows : 1);
	bpf_map__set_max_entries(k->maps.unwind_slot, opts->unwind_procs ? opts->unwind_procs : 1);
	bpf_map__set_max_entries(k->maps.unwind_procs, opts->unwind_procs ? opts->unwind_procs : 1);
	bpf_map__set_max_entries(k->maps.unwind_maps, (opts->unwind_procs ? opts->unwind_procs : 1) * UNWIND_MAX_MAPS);
	bpf_map__set_max_entries(k->maps.offagg0, opts->max_agg);
	bpf_map__set_max_entries(k->maps.offagg1, opts->max_agg);
	err = stacks_bpf__load(k);
	if (err) {
		stacks_bpf__destroy(k);
		return err;
	}
	b->skel = k;
	b->legacy = legacy;
	return 0;
}

static void perf_set_init(struct bpf_stacks *b, struct perf_set *ps, struct bpf_program *prog, uint64_t config);

struct bpf_stacks *bpf_stacks__load(const struct bpf_stacks_opts *opts)
{
	struct bpf_stacks *b = calloc(1, sizeof(*b));
	int err;

	if (!b)
		return NULL;
	b->ips = calloc(EMBER_MAX_STACK_DEPTH, sizeof(uint64_t));
	b->hs = calloc(1, sizeof(*b->hs));
	b->ncpus = libbpf_num_possible_cpus();
	if (!b->ips || !b->hs || b->ncpus <= 0) {
		err = b->ncpus <= 0 ? b->ncpus : -ENOMEM;
		goto fail;
	}
	/* Decided by loading: the table walker's programs, else those older kernels take. */
	err = open_and_load(b, opts, false);
	if (err)
		err = open_and_load(b, opts, true);
	if (err)
		goto fail;
	for (int s = 0; s < 2; s++) {
		struct perf_set *ps = s ? &b->mem : &b->oncpu;
		ps->fds = calloc(b->ncpus, sizeof(int));
		ps->links = calloc(b->ncpus, sizeof(*ps->links));
		if (!ps->fds || !ps->links) {
			err = -ENOMEM;
			goto fail;
		}
		for (int i = 0; i < b->ncpus; i++)
			ps->fds[i] = -1;
	}
	perf_set_init(b, &b->oncpu, b->legacy ? b->skel->progs.oncpu_sample_legacy : b->skel->progs.oncpu_sample,
		      PERF_COUNT_SW_CPU_CLOCK);
	perf_set_init(b, &b->mem, b->legacy ? b->skel->progs.mem_fault_legacy : b->skel->progs.mem_fault,
		      PERF_COUNT_SW_PAGE_FAULTS);
	return b;
fail:
	bpf_stacks__free(b);
	errno = -err;
	return NULL;
}

bool bpf_stacks__legacy(const struct bpf_stacks *b)
{
	return b->legacy;
}

/* The event of one CPU, disabled, running the set's program.  0, or -errno (-ENODEV: the CPU is offline). */
static int perf_set_open_cpu(struct perf_set *ps, int cpu)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.config = ps->config,
		.size = sizeof(attr),
		.sample_period = ps->config == PERF_COUNT_SW_CPU_CLOCK ? 10000000 : 1, /* set again at enable */
		.disabled = 1,
	};
	int fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC), dup_fd;

	if (fd < 0)
		return -errno;
	/* libbpf's link owns (and closes) the descriptor it is given: the event lives on ours. */
	dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (dup_fd < 0) {
		close(fd);
		return -errno;
	}
	ps->links[cpu] = bpf_program__attach_perf_event(ps->prog, dup_fd);
	if (!ps->links[cpu]) {
		int err = -errno;
		close(dup_fd);
		close(fd);
		return err;
	}
	/* The attach enabled it: off until a task asks. */
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	ps->fds[cpu] = fd;
	return 0;
}

static void perf_set_init(struct bpf_stacks *b, struct perf_set *ps, struct bpf_program *prog, uint64_t config)
{
	ps->prog = prog;
	ps->config = config;
	for (int cpu = 0; cpu < b->ncpus; cpu++) {
		int r = perf_set_open_cpu(ps, cpu);

		if (r && r != -ENODEV)
			ps->open_err = r;
	}
}

/* Online CPUs (/sys/devices/system/cpu/online, "0-3,5") into a mask of ncpus bits.  0 or -errno. */
static int online_cpus(int ncpus, uint8_t *mask)
{
	char buf[4096];
	int fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);
	ssize_t n;
	char *p, *end;

	memset(mask, 0, (size_t)(ncpus + 7) / 8);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	for (p = buf; *p && *p != '\n';) {
		long lo = strtol(p, &end, 10), hi = lo;

		if (end == p)
			return -EBADMSG;
		p = end;
		if (*p == '-') {
			hi = strtol(p + 1, &end, 10);
			if (end == p + 1)
				return -EBADMSG;
			p = end;
		}
		for (long c = lo; c <= hi && c < ncpus; c++)
			if (c >= 0)
				mask[c / 8] |= (uint8_t)(1u << (c % 8));
		if (*p == ',')
			p++;
	}
	return 0;
}

/* Opens the events of CPUs that came online since; returns how many online CPUs still have none. */
static unsigned perf_set_catch_up(struct bpf_stacks *b, struct perf_set *ps)
{
	uint8_t mask[(EMBER_MAX_CPUS + 7) / 8];
	unsigned missing = 0;

	if (b->ncpus > EMBER_MAX_CPUS || online_cpus(b->ncpus, mask))
		return 0;
	for (int cpu = 0; cpu < b->ncpus; cpu++) {
		if (!(mask[cpu / 8] & (1u << (cpu % 8))) || ps->fds[cpu] >= 0)
			continue;
		if (perf_set_open_cpu(ps, cpu)) {
			missing++;
			continue;
		}
		if (ps->users) {
			ioctl(ps->fds[cpu], PERF_EVENT_IOC_PERIOD, &ps->period);
			ioctl(ps->fds[cpu], PERF_EVENT_IOC_ENABLE, 0);
		}
	}
	return missing;
}

static void perf_set_detach(struct bpf_stacks *b, struct perf_set *ps, int force)
{
	if (!ps->users || (--ps->users && !force))
		return;
	ps->users = 0;
	for (int cpu = 0; cpu < b->ncpus; cpu++)
		if (ps->fds[cpu] >= 0)
			ioctl(ps->fds[cpu], PERF_EVENT_IOC_DISABLE, 0);
}

static void perf_set_close(struct bpf_stacks *b, struct perf_set *ps)
{
	for (int cpu = 0; ps->fds && cpu < b->ncpus; cpu++) {
		bpf_link__destroy(ps->links[cpu]);
		ps->links[cpu] = NULL;
		zclose(&ps->fds[cpu]);
	}
}

/* The set's events on, at period (cpu-clock: ns; page faults: faults). */
static int perf_set_attach(struct bpf_stacks *b, struct perf_set *ps, uint64_t period)
{
	int enabled = 0, err = 0;

	if (ps->users) {
		if (period != ps->period)
			return -EBUSY;
		ps->users++;
		return 0;
	}
	ps->users = 1;
	ps->period = period;
	(void)perf_set_catch_up(b, ps);
	for (int cpu = 0; cpu < b->ncpus && !err; cpu++) {
		if (ps->fds[cpu] < 0)
			continue;
		if (ioctl(ps->fds[cpu], PERF_EVENT_IOC_PERIOD, &period) ||
		    ioctl(ps->fds[cpu], PERF_EVENT_IOC_ENABLE, 0))
			err = -errno;
		else
			enabled++;
	}
	if (!err && !enabled)
		err = ps->open_err ? ps->open_err : -ENODEV;
	if (err)
		perf_set_detach(b, ps, 1);
	return err;
}

unsigned bpf_stacks__cpus_unsampled(struct bpf_stacks *b)
{
	return perf_set_catch_up(b, &b->oncpu) + perf_set_catch_up(b, &b->mem);
}

int bpf_stacks__attach_oncpu(struct bpf_stacks *b, uint64_t period_ns)
{
	return perf_set_attach(b, &b->oncpu, period_ns);
}

void bpf_stacks__detach_oncpu(struct bpf_stacks *b) { perf_set_detach(b, &b->oncpu, 0); }

int bpf_stacks__attach_mem(struct bpf_stacks *b)
{
	return perf_set_attach(b, &b->mem, 1);
}

void bpf_stacks__detach_mem(struct bpf_stacks *b) { perf_set_detach(b, &b->mem, 0); }

int bpf_stacks__attach_offcpu(struct bpf_stacks *b)
{
	/* Decided by attaching, not by probing features: the first that works wins. */
	struct { struct bpf_program *prog; int ap; } chain[] = {
		{ b->legacy ? b->skel->progs.offcpu_tp_btf_legacy : b->skel->progs.offcpu_tp_btf, CTL_AP_TP_BTF },
		{ b->legacy ? b->skel->progs.offcpu_raw_tp_legacy : b->skel->progs.offcpu_raw_tp, CTL_AP_RAW_TP },
		{ b->legacy ? b->skel->progs.offcpu_tracepoint_legacy : b->skel->progs.offcpu_tracepoint, CTL_AP_TRACEPOINT },
	};
	int err = -ENOENT;

	if (b->offcpu_users++)
		return b->offcpu_ap;
	for (unsigned i = 0; i < ARRAY_SIZE(chain); i++) {
		b->offcpu_link = bpf_program__attach(chain[i].prog);
		if (b->offcpu_link) {
			b->offcpu_ap = chain[i].ap;
			return b->offcpu_ap;
		}
		err = -errno;
	}
	b->offcpu_users = 0;
	return err;
}

void bpf_stacks__detach_offcpu(struct bpf_stacks *b)
{
	if (!b->offcpu_users || --b->offcpu_users)
		return;
	bpf_link__destroy(b->offcpu_link);
	b->offcpu_link = NULL;
	/* Threads still asleep keep start entries: drop them, nobody will time them. */
	{
		int fd = bpf_map__fd(b->skel->maps.offcpu_starts);
		uint32_t tid;
		while (!bpf_map_get_next_key(fd, NULL, &tid))
			if (bpf_map_delete_elem(fd, &tid))
				break;
	}
}

int bpf_stacks__target(struct bpf_stacks *b, uint32_t tgid, uint32_t kind, int on, uint64_t offcpu_min_ns)
{
	int fd = bpf_map__fd(b->skel->maps.targets);
	struct target_val tv = { 0 };

	(void)bpf_map_lookup_elem(fd, &tgid, &tv);
	if (on)
		tv.mask |= 1u << kind;
	else
		tv.mask &= ~(1u << kind);
	if (on && kind == EMBER_TASK_OFFCPU)
		tv.offcpu_min_ns = offcpu_min_ns;
	if (tv.mask)
		return bpf_map_update_elem(fd, &tgid, &tv, BPF_ANY) ? -errno : 0;
	if (bpf_map_delete_elem(fd, &tgid) && errno != ENOENT)
		return -errno;
	return 0;
}

int bpf_stacks__target_threads(struct bpf_stacks *b, uint32_t tgid, int on, uint32_t probes, uint64_t stack_ns)
{
	int fd = bpf_map__fd(b->skel->maps.targets);
	struct target_val tv = { 0 };

	(void)bpf_map_lookup_elem(fd, &tgid, &tv);
	if (on) {
		tv.mask |= 1u << EMBER_TASK_THREADS;
		tv.threads_probes = probes;
		tv.threads_stack_ns = stack_ns;
	} else {
		tv.mask &= ~(1u << EMBER_TASK_THREADS);
		tv.threads_probes = 0;
	}
	if (tv.mask)
		return bpf_map_update_elem(fd, &tgid, &tv, BPF_ANY) ? -errno : 0;
	if (bpf_map_delete_elem(fd, &tgid) && errno != ENOENT)
		return -errno;
	return 0;
}

struct bpf_map *bpf_stacks__shared_map(struct bpf_stacks *b, const char *name)
{
	struct bpf_map *maps[] = { b->skel->maps.targets, b->skel->maps.counters, b->skel->maps.hstacks,
				   b->skel->maps.unwind_rows, b->skel->maps.unwind_slot, b->skel->maps.unwind_procs,
				   b->skel->maps.unwind_maps, b->skel->maps.py_procs, b->skel->maps.py_tstates,
				   b->skel->maps.py_codes };

	for (unsigned i = 0; i < ARRAY_SIZE(maps); i++)
		if (!strcmp(bpf_map__name(maps[i]), name))
			return maps[i];
	return NULL;
}

/* Waits until every BPF program that may have read the old `active` is done. */
static void wait_for_programs(void)
{
	/*
	 * MEMBARRIER_CMD_GLOBAL waits for an RCU grace period (synchronize_rcu),
	 * and BPF tracing programs run inside RCU read-side sections (or with
	 * preemption off, which RCU also waits for).  Without membarrier, a short
	 * sleep is far longer than any program run.
	 */
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) < 0)
		usleep(5000);
}

static int stack_ips(int stack_fd, int32_t id, uint64_t *ips, unsigned *ret_n)
{
	unsigned n = 0;

	if (id < 0) {
		*ret_n = 0;
		return 0;
	}
	if (bpf_map_lookup_elem(stack_fd, &id, ips))
		return -errno;
	while (n < EMBER_MAX_STACK_DEPTH && ips[n])
		n++;
	*ret_n = n;
	return 0;
}

static void clear_map(int fd, void *key)
{
	/* Always restart from the first key: the previous one is gone. */
	while (!bpf_map_get_next_key(fd, NULL, key))
		if (bpf_map_delete_elem(fd, key))
			break;
}

static int hstack_ips(struct bpf_stacks *b, uint64_t hash, struct hstack *ret)
{
	if (!hash) {
		ret->n = 0;
		return 0;
	}
	if (bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.hstacks), &hash, ret))
		return -errno; /* evicted from the LRU: counted by the caller */
	if (ret->n > EMBER_MAX_STACK_DEPTH)
		ret->n = EMBER_MAX_STACK_DEPTH;
	return 0;
}

int bpf_stacks__hstack(struct bpf_stacks *b, uint64_t hash, struct hstack *ret)
{
	return hstack_ips(b, hash, ret);
}

int bpf_stacks__py_proc(struct bpf_stacks *b, uint32_t pid, const struct py_proc *p)
{
	int fd = bpf_map__fd(b->skel->maps.py_procs);

	if (!p)
		return bpf_map_delete_elem(fd, &pid) && errno != ENOENT ? -errno : 0;
	return bpf_map_update_elem(fd, &pid, p, BPF_ANY) ? -errno : 0;
}

int bpf_stacks__py_code(struct bpf_stacks *b, uint32_t tgid, uint64_t addr, struct py_code *ret)
{
	struct py_code_key k = { .addr = addr, .tgid = tgid };

	return bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.py_codes), &k, ret) ? -errno : 0;
}

static int drain_offcpu(struct bpf_stacks *b, uint32_t set, bpf_stacks_drain_fn cb, void *ctx)
{
	int fd = bpf_map__fd(set ? b->skel->maps.offagg1 : b->skel->maps.offagg0), n = 0;
	struct offcpu_key key, next;
	struct stack_val val;
	void *prev = NULL;
	_cleanup_free_ struct hstack *ks = malloc(sizeof(*ks));
	_cleanup_free_ struct hstack *us = malloc(sizeof(*us));

	if (!ks || !us)
		return 0;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		struct stack_key sk = { .tgid = next.tgid, .kind = next.kind, .kstack_id = -1, .ustack_id = -1 };
		uint32_t flags = 0;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, &val))
			continue;
		if (hstack_ips(b, key.khash, ks)) {
			flags |= EMBER_STACK_F_KSTACK_LOST;
			ks->n = 0;
		}
		if (hstack_ips(b, key.uhash, us)) {
			flags |= EMBER_STACK_F_USTACK_LOST;
			us->n = 0;
		}
		memcpy(sk.comm, key.comm, sizeof(sk.comm));
		cb(ctx, &sk, &val, (const uint64_t *)ks->ips, ks->n, (const uint64_t *)us->ips, us->n, flags);
		n++;
	}
	clear_map(fd, &next);
	return n;
}

void bpf_stacks__flip(struct bpf_stacks *b)
{
	b->active = !b->active;
	b->skel->bss->active = b->active;
}

void bpf_stacks__wait_programs(void)
{
	wait_for_programs();
}

int bpf_stacks__collect(struct bpf_stacks *b, bpf_stacks_drain_fn cb, void *ctx)
{
	uint32_t old = !b->active;
	int agg_fd, stk_fd, n = 0;
	struct stack_key key, next;
	struct stack_val val;
	uint64_t *kips;
	void *prev = NULL;

	agg_fd = bpf_map__fd(old ? b->skel->maps.agg1 : b->skel->maps.agg0);
	stk_fd = bpf_map__fd(old ? b->skel->maps.stacks1 : b->skel->maps.stacks0);
	kips = calloc(EMBER_MAX_STACK_DEPTH, sizeof(uint64_t));
	if (!kips)
		return -ENOMEM;
	while (!bpf_map_get_next_key(agg_fd, prev, &next)) {
		unsigned nk = 0, nu = 0;
		uint32_t flags = 0;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(agg_fd, &key, &val))
			continue;
		if (stack_ips(stk_fd, key.kstack_id, kips, &nk))
			flags |= EMBER_STACK_F_KSTACK_LOST;
		if (key.uhash) {
			struct hstack *us = (struct hstack *)b->hs;
			if (hstack_ips(b, key.uhash, us)) {
				flags |= EMBER_STACK_F_USTACK_LOST;
				us->n = 0;
			}
			nu = us->n;
			memcpy(b->ips, us->ips, nu * sizeof(uint64_t));
		} else if (stack_ips(stk_fd, key.ustack_id, b->ips, &nu)) {
			flags |= EMBER_STACK_F_USTACK_LOST;
		}
		cb(ctx, &key, &val, kips, nk, b->ips, nu, flags);
		n++;
	}
	free(kips);
	clear_map(agg_fd, &next);
	{
		uint32_t sid;
		clear_map(stk_fd, &sid);
	}
	n += drain_offcpu(b, old, cb, ctx);
	return n;
}

int bpf_stacks__unwind_rows(struct bpf_stacks *b, uint32_t first, const struct unwind_row *rows, uint32_t n)
{
	int fd = bpf_map__fd(b->skel->maps.unwind_rows);
	uint32_t keys[CTL_UNWIND_ROWS_MAX], count = n;
	LIBBPF_OPTS(bpf_map_batch_opts, o);

	if (n > CTL_UNWIND_ROWS_MAX || first + (uint64_t)n > bpf_map__max_entries(b->skel->maps.unwind_rows))
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++)
		keys[i] = first + i;
	if (!bpf_map_update_batch(fd, keys, rows, &count, &o))
		return 0;
	/* Kernels without batch updates of arrays: one by one. */
	for (uint32_t i = 0; i < n; i++)
		if (bpf_map_update_elem(fd, &keys[i], &rows[i], BPF_ANY))
			return -errno;
	return 0;
}

int bpf_stacks__unwind_proc(struct bpf_stacks *b, uint32_t tgid, uint32_t slot, const struct unwind_proc *p)
{
	int slot_fd = bpf_map__fd(b->skel->maps.unwind_slot), proc_fd = bpf_map__fd(b->skel->maps.unwind_procs);
	int maps_fd = bpf_map__fd(b->skel->maps.unwind_maps);
	struct unwind_proc_head head;

	if (!p)
		return bpf_map_delete_elem(slot_fd, &tgid) && errno != ENOENT ? -errno : 0;
	if (p->nmaps > UNWIND_MAX_MAPS || slot >= bpf_map__max_entries(b->skel->maps.unwind_procs))
		return -EINVAL;
	/* The mappings first: a reader that finds the slot finds them complete (unless they were being replaced). */
	for (uint32_t i = 0; i < p->nmaps; i++) {
		uint32_t key = slot * UNWIND_MAX_MAPS + i;
		if (bpf_map_update_elem(maps_fd, &key, &p->maps[i], BPF_ANY))
			return -errno;
	}
	head = (struct unwind_proc_head){ .nmaps = p->nmaps, .tgid = p->tgid, .gen = ++b->unwind_gen };
	if (bpf_map_update_elem(proc_fd, &slot, &head, BPF_ANY) || bpf_map_update_elem(slot_fd, &tgid, &slot, BPF_ANY))
		return -errno;
	return 0;
}

int bpf_stacks__counters(struct bpf_stacks *b, uint64_t *ret)
{
	int fd = bpf_map__fd(b->skel->maps.counters);
	_cleanup_free_ uint64_t *vals = calloc(b->ncpus, sizeof(uint64_t));

	if (!vals)
		return -ENOMEM;
	for (uint32_t i = 0; i < BPF_CNT_MAX; i++) {
		ret[i] = 0;
		if (bpf_map_lookup_elem(fd, &i, vals))
			return -errno;
		for (int c = 0; c < b->ncpus; c++)
			ret[i] += vals[c];
	}
	return 0;
}

struct bpf_stacks *bpf_stacks__free(struct bpf_stacks *b)
{
	if (!b)
		return NULL;
	if (b->skel) {
		perf_set_detach(b, &b->oncpu, 1);
		perf_set_detach(b, &b->mem, 1);
		perf_set_close(b, &b->oncpu);
		perf_set_close(b, &b->mem);
		if (b->offcpu_users) {
			b->offcpu_users = 1;
			bpf_stacks__detach_offcpu(b);
		}
	}
	stacks_bpf__destroy(b->skel);
	for (int s = 0; s < 2; s++) {
		struct perf_set *ps = s ? &b->mem : &b->oncpu;
		free(ps->fds);
		free(ps->links);
	}
	free(b->ips);
	free(b->hs);
	free(b);
	return NULL;
}
