#include "collector/bpf_stacks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/membarrier.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/stacks.skel.h"
#include "common/cleanup.h"

struct bpf_stacks {
	struct stacks_bpf *skel;
	int ncpus;
	int *perf_fds;
	struct bpf_link **links;
	unsigned oncpu_users;
	uint32_t active;
	uint64_t *ips; /* EMBER_MAX_STACK_DEPTH scratch for lookups */
};

struct bpf_stacks *bpf_stacks__load(const struct bpf_stacks_opts *opts)
{
	struct bpf_stacks *b = calloc(1, sizeof(*b));
	int err;

	if (!b)
		return NULL;
	b->ips = calloc(EMBER_MAX_STACK_DEPTH, sizeof(uint64_t));
	b->ncpus = libbpf_num_possible_cpus();
	if (!b->ips || b->ncpus <= 0) {
		err = b->ncpus <= 0 ? b->ncpus : -ENOMEM;
		goto fail;
	}
	b->skel = stacks_bpf__open();
	if (!b->skel) {
		err = -errno;
		goto fail;
	}
	/* Map sizes are set between open and load (the libbpf lifecycle). */
	bpf_map__set_max_entries(b->skel->maps.stacks0, opts->max_stacks);
	bpf_map__set_max_entries(b->skel->maps.stacks1, opts->max_stacks);
	bpf_map__set_max_entries(b->skel->maps.agg0, opts->max_agg);
	bpf_map__set_max_entries(b->skel->maps.agg1, opts->max_agg);
	bpf_map__set_max_entries(b->skel->maps.targets, opts->max_pids);
	err = stacks_bpf__load(b->skel);
	if (err)
		goto fail;
	b->perf_fds = calloc(b->ncpus, sizeof(int));
	b->links = calloc(b->ncpus, sizeof(*b->links));
	if (!b->perf_fds || !b->links) {
		err = -ENOMEM;
		goto fail;
	}
	for (int i = 0; i < b->ncpus; i++)
		b->perf_fds[i] = -1;
	return b;
fail:
	bpf_stacks__free(b);
	errno = -err;
	return NULL;
}

int bpf_stacks__attach_oncpu(struct bpf_stacks *b, uint64_t period_ns)
{
	int attached = 0, err = 0;

	if (b->oncpu_users++)
		return 0;
	for (int cpu = 0; cpu < b->ncpus; cpu++) {
		struct perf_event_attr attr = {
			.type = PERF_TYPE_SOFTWARE,
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.size = sizeof(attr),
			.sample_period = period_ns, /* cpu-clock counts ns */
			.freq = 0,
		};
		int fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			/* An offline CPU has no event: skip it, fail only if none works. */
			if (errno == ENODEV)
				continue;
			err = -errno;
			break;
		}
		b->perf_fds[cpu] = fd;
		b->links[cpu] = bpf_program__attach_perf_event(b->skel->progs.oncpu_sample, fd);
		if (!b->links[cpu]) {
			err = -errno;
			break;
		}
		attached++;
	}
	if (!err && !attached)
		err = -ENODEV;
	if (err) {
		b->oncpu_users = 1;
		bpf_stacks__detach_oncpu(b);
	}
	return err;
}

void bpf_stacks__detach_oncpu(struct bpf_stacks *b)
{
	if (!b->oncpu_users || --b->oncpu_users)
		return;
	for (int cpu = 0; cpu < b->ncpus; cpu++) {
		bpf_link__destroy(b->links[cpu]);
		b->links[cpu] = NULL;
		zclose(&b->perf_fds[cpu]);
	}
}

int bpf_stacks__target(struct bpf_stacks *b, uint32_t tgid, uint32_t kind, int on)
{
	int fd = bpf_map__fd(b->skel->maps.targets);
	uint32_t mask = 0;

	(void)bpf_map_lookup_elem(fd, &tgid, &mask);
	if (on)
		mask |= 1u << kind;
	else
		mask &= ~(1u << kind);
	if (mask)
		return bpf_map_update_elem(fd, &tgid, &mask, BPF_ANY) ? -errno : 0;
	if (bpf_map_delete_elem(fd, &tgid) && errno != ENOENT)
		return -errno;
	return 0;
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

int bpf_stacks__drain(struct bpf_stacks *b, bpf_stacks_drain_fn cb, void *ctx)
{
	uint32_t old = b->active;
	int agg_fd, stk_fd, n = 0;
	struct stack_key key, next;
	struct stack_val val;
	uint64_t *kips;
	void *prev = NULL;

	b->active = !old;
	b->skel->bss->active = b->active;
	wait_for_programs();

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
		if (stack_ips(stk_fd, key.ustack_id, b->ips, &nu))
			flags |= EMBER_STACK_F_USTACK_LOST;
		cb(ctx, &key, &val, kips, nk, b->ips, nu, flags);
		n++;
	}
	free(kips);
	clear_map(agg_fd, &next);
	{
		uint32_t sid;
		clear_map(stk_fd, &sid);
	}
	return n;
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

void bpf_stacks__free(struct bpf_stacks *b)
{
	if (!b)
		return;
	if (b->oncpu_users) {
		b->oncpu_users = 1;
		bpf_stacks__detach_oncpu(b);
	}
	stacks_bpf__destroy(b->skel);
	free(b->perf_fds);
	free(b->links);
	free(b->ips);
	free(b);
}
