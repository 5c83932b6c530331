/*
 * On-CPU, off-CPU and memory profiling: the stack-sampling programs
 * (collector/bpf_stacks.h), each kind switched on while a task of it runs.
 * Their data is aggregated in the stack maps and drained by the loop.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "bpf/ember_abi.h"
#include "collector/bpf_stacks.h"
#include "collector/kinds.h"
#include "collector/unwind_store.h"
#include "common/log.h"
#include "common/profile_kind.h"

static int store_rows(void *ctx, uint32_t first, const struct unwind_row *rows, uint32_t n)
{
	return bpf_stacks__unwind_rows(((struct kinds_env *)ctx)->bpf, first, rows, n);
}

static int store_proc(void *ctx, uint32_t tgid, uint32_t slot, const struct unwind_proc *p)
{
	return bpf_stacks__unwind_proc(((struct kinds_env *)ctx)->bpf, tgid, slot, p);
}

/* The stack program, which every kind of this family runs on, and the unwind tables' store it reads. */
int kind_stacks__load(struct kinds_env *env, struct kinds_load_opts *o)
{
	env->bpf = bpf_stacks__load(&o->stacks);
	if (!env->bpf) {
		int err = -errno;

		log_error("cannot load the stack-sampling BPF program: %s (log_level debug shows the verifier's logs)",
			  strerror(-err));
		return err;
	}
	if (bpf_stacks__legacy(env->bpf)) {
		struct utsname u;

		uname(&u);
		log_warn("this kernel (%s) lacks bpf_loop, task BTF or bpf_task_pt_regs (Linux 5.17+): user stacks "
			 "are walked by frame pointers only (binaries built without them show their leaf frames)", u.release);
		o->stacks.unwind_rows = 0;
	}
	if (o->stacks.unwind_rows) {
		struct unwind_store_ops ops = { .write_rows = store_rows, .set_proc = store_proc, .ctx = env };
		/* 30 s: an analyzer sends a process's tables within that, even for a large binary. */
		env->unwind = unwind_store__new(o->stacks.unwind_rows, o->stacks.unwind_procs, 30000000000ull, &ops);
		if (!env->unwind) {
			int err = -errno;

			log_error("cannot allocate the unwind table store: %s", strerror(-err));
			return err;
		}
	}
	return 0;
}

void kind_stacks__unload(struct kinds_env *env)
{
	env->bpf = bpf_stacks__free(env->bpf);
	env->unwind = unwind_store__free(env->unwind);
}

struct stacks_kind {
	struct kinds_env *env;
	uint32_t kind;
};

static int check(void *impl, const struct ctl_attach *a)
{
	struct stacks_kind *s = impl;

	if (s->kind == EMBER_TASK_ONCPU && (a->period_ns < CTL_PERIOD_MIN_NS || a->period_ns > CTL_PERIOD_MAX_NS))
		return -ERANGE;
	return 0;
}

static int attach(void *impl, struct task *t)
{
	struct stacks_kind *s = impl;
	int r;

	s->env->stacks_dirty = true;
	switch (s->kind) {
	case EMBER_TASK_ONCPU:
		t->attach_point = CTL_AP_PERF_CPU_CLOCK;
		return bpf_stacks__attach_oncpu(s->env->bpf, t->period_ns);
	case EMBER_TASK_OFFCPU:
		r = bpf_stacks__attach_offcpu(s->env->bpf);
		t->attach_point = r > 0 ? (uint32_t)r : CTL_AP_NONE;
		return r > 0 ? 0 : r;
	default:
		t->attach_point = CTL_AP_PERF_PAGE_FAULTS;
		return bpf_stacks__attach_mem(s->env->bpf);
	}
}

static void detach(void *impl, struct task *t)
{
	struct stacks_kind *s = impl;

	(void)t;
	if (s->kind == EMBER_TASK_ONCPU)
		bpf_stacks__detach_oncpu(s->env->bpf);
	else if (s->kind == EMBER_TASK_OFFCPU)
		bpf_stacks__detach_offcpu(s->env->bpf);
	else
		bpf_stacks__detach_mem(s->env->bpf);
}

/* The stack program's counters, whichever stack kind is asked (they share it). */
static void counters(void *impl, uint64_t *stats)
{
	struct stacks_kind *s = impl;
	uint64_t bc[BPF_CNT_MAX];

	if (!bpf_stacks__counters(s->env->bpf, bc)) {
		stats[CTL_STAT_BPF_SAMPLES] = bc[BPF_CNT_SAMPLES];
		stats[CTL_STAT_BPF_KSTACK_ERR] = bc[BPF_CNT_KSTACK_ERR];
		stats[CTL_STAT_BPF_USTACK_ERR] = bc[BPF_CNT_USTACK_ERR];
		stats[CTL_STAT_BPF_STACKMAP_FULL] = bc[BPF_CNT_STACKMAP_FULL];
		stats[CTL_STAT_BPF_AGG_FULL] = bc[BPF_CNT_AGG_FULL];
		stats[CTL_STAT_BPF_OFFCPU_SWITCHES] = bc[BPF_CNT_OFFCPU_SWITCHES];
		stats[CTL_STAT_BPF_OFFCPU_START_FULL] = bc[BPF_CNT_OFFCPU_START_FULL];
		stats[CTL_STAT_BPF_OFFCPU_BELOW_MIN] = bc[BPF_CNT_OFFCPU_BELOW_MIN];
		stats[CTL_STAT_BPF_HSTACK_FULL] = bc[BPF_CNT_HSTACK_FULL];
		stats[CTL_STAT_BPF_FAULTS] = bc[BPF_CNT_FAULTS];
		stats[CTL_STAT_BPF_OFFCPU_FP_HITS] = bc[BPF_CNT_OFFCPU_FP_HITS];
		stats[CTL_STAT_BPF_UNWIND_STACKS] = bc[BPF_CNT_UNWIND_STACKS];
		stats[CTL_STAT_BPF_UNWIND_COMPLETE] = bc[BPF_CNT_UNWIND_COMPLETE];
		stats[CTL_STAT_BPF_UNWIND_FP_FRAMES] = bc[BPF_CNT_UNWIND_FP_FRAMES];
		stats[CTL_STAT_BPF_UNWIND_READ_ERR] = bc[BPF_CNT_UNWIND_READ_ERR];
		stats[CTL_STAT_BPF_UNWIND_TRUNCATED] = bc[BPF_CNT_UNWIND_TRUNCATED];
		stats[CTL_STAT_BPF_OFFCPU_TIMED] = bc[BPF_CNT_OFFCPU_TIMED];
		stats[CTL_STAT_BPF_OFFCPU_EXITS] = bc[BPF_CNT_OFFCPU_EXITS];
		stats[CTL_STAT_BPF_OFFCPU_TID_REUSED] = bc[BPF_CNT_OFFCPU_TID_REUSED];
		stats[CTL_STAT_BPF_OFFCPU_STACK_ERR] = bc[BPF_CNT_OFFCPU_STACK_ERR];
		stats[CTL_STAT_BPF_OFFCPU_STALE] = bc[BPF_CNT_OFFCPU_STALE];
		stats[CTL_STAT_BPF_OFFCPU_UNTIMED] = bc[BPF_CNT_OFFCPU_UNTIMED];
		stats[CTL_STAT_BPF_OFFCPU_LOST] = bc[BPF_CNT_OFFCPU_LOST];
		stats[CTL_STAT_BPF_PY_STACKS] = bc[BPF_CNT_PY_STACKS];
		stats[CTL_STAT_BPF_PY_FRAMES] = bc[BPF_CNT_PY_FRAMES];
		stats[CTL_STAT_BPF_PY_NO_THREAD] = bc[BPF_CNT_PY_NO_THREAD];
		stats[CTL_STAT_BPF_PY_READ_ERR] = bc[BPF_CNT_PY_READ_ERR];
		stats[CTL_STAT_BPF_PY_TRUNCATED] = bc[BPF_CNT_PY_TRUNCATED];
		stats[CTL_STAT_BPF_PY_CODES_FULL] = bc[BPF_CNT_PY_CODES_FULL];
		stats[CTL_STAT_BPF_PY_NS] = bc[BPF_CNT_PY_NS];
	}
	stats[CTL_STAT_PERF_CPUS_UNSAMPLED] = bpf_stacks__cpus_unsampled(s->env->bpf);
}


static int target(void *impl, const struct task *t, uint32_t pid, bool on)
{
	struct stacks_kind *s = impl;
	int r = bpf_stacks__target(s->env->bpf, pid, s->kind, on, t->min_block_ns);

	if (on)
		s->env->stacks_dirty = true;
	/* A process no stack task watches any more walks without its tables. */
	else if (!tasks__pid_elsewhere(s->env->tasks, t, profile_kind__mask(PROFILE_KIND_UNWINDS), pid)) {
		if (s->env->unwind)
			unwind_store__forget(s->env->unwind, pid);
		(void)bpf_stacks__py_proc(s->env->bpf, pid, NULL);
	}
	return r;
}

struct collector_kind *kind_stacks__new(struct kinds_env *env, uint32_t kind)
{
	const struct profile_kind *row = profile_kind__by_id(kind);
	struct collector_kind *k = calloc(1, sizeof(*k));
	struct stacks_kind *s = calloc(1, sizeof(*s));

	if (!env->bpf || !k || !s || !row || !(row->flags & PROFILE_KIND_STACKS)) {
		free(k);
		free(s);
		errno = ENODEV;
		return NULL;
	}
	s->env = env;
	s->kind = kind;
	*k = (struct collector_kind){ .kind = kind, .name = row->name, .flags = CTL_ATTACH_F_HOLD, .stacks = true,
				      .check = check, .attach = attach, .detach = detach, .target = target,
				      .counters = counters, .impl = s };
	return k;
}
