#include "collector/stack_drain.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "bpf/ember_abi.h"
#include "collector/bpf_stacks.h"
#include "collector/collector.h"
#include "collector/kinds.h"
#include "collector/py_fwd.h"
#include "collector/tasks.h"
#include "common/log.h"
#include "common/profile_kind.h"
#include "common/shard.h"
#include "common/shm_ring.h"
#include "common/timeutil.h"

struct stack_drain {
	struct py_fwd py;           /* Python frames' names sent this window */
	struct collector *col;
	struct kinds_env *env;
	int req_fd;                 /* to the waiter: one grace period per write; -1: no waiter */
	int done_fd;                /* from the waiter: that grace period is over */
	bool pending;               /* flipped, the grace period not over yet */
	uint64_t end_real_ns;       /* the pending window's end: the flip */
	uint64_t last_real_ns;      /* the last window's end */
};

/* What the waiter thread owns: its fds, by value, so that it never touches a freed handle. */
struct waiter_fds {
	int req, done;
};

struct stack_drain *stack_drain__new(struct collector *col, struct kinds_env *env)
{
	struct stack_drain *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->col = col;
	d->env = env;
	d->req_fd = d->done_fd = -1;
	d->last_real_ns = timeutil__now_ns(CLOCK_REALTIME);
	return d;
}

void stack_drain__free(struct stack_drain *d)
{
	free(d);
}

static void on_stack(void *ctx, const struct stack_key *key, const struct stack_val *val,
		     const uint64_t *kips, unsigned nk, const uint64_t *uips, unsigned nu, uint32_t flags)
{
	struct stack_drain *d = ctx;
	struct collector *col = d->col;
	struct collector_shard *sh = &col->shards[shard__of(key->tgid, col->nshards)];
	uint32_t len = sizeof(struct ember_rec_stack) + (nk + nu) * sizeof(uint64_t);
	struct ember_rec_stack *rec;

	if (flags)
		col->stats[CTL_STAT_STACK_LOST]++;
	col->stats[CTL_STAT_STACKS_DRAINED]++;
	py_fwd__send(&d->py, d->env->bpf, col, sh, key->tgid, uips, nu);
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

static void send_markers(struct stack_drain *d, uint64_t start, uint64_t end)
{
	for (unsigned s = 0; s < d->col->nshards; s++) {
		struct collector_shard *sh = &d->col->shards[s];
		const struct profile_kind *k, *last = NULL;
		bool first = true;

		/* One marker per stack kind: the analyzer closes that kind's window; ring drops ride on the
		 * first, and the last ends the drain (the analyzer holds its stacks in the ring till then). */
		for (unsigned i = 0; (k = profile_kind__at(i)); i++)
			if (k->flags & PROFILE_KIND_STACKS)
				last = k;
		for (unsigned i = 0; (k = profile_kind__at(i)); i++) {
			if (!(k->flags & PROFILE_KIND_STACKS))
				continue;
			struct ember_rec_window w = { .kind = k->id, .flags = k == last ? EMBER_WINDOW_F_LAST : 0,
						      .start_ns = start, .end_ns = end,
						      .stacks = first ? sh->window_stacks : 0,
						      .ring_drops = first ? sh->window_drops : 0 };
			(void)shm_ring__write(sh->ring, EMBER_REC_WINDOW, &w, sizeof(w));
			first = false;
		}
		(void)shm_ring__notify(sh->ring);
	}
	d->last_real_ns = end;
	py_fwd__window(&d->py);
}

/* The flipped-out set into the shards, then the window's markers. */
static void finish(struct stack_drain *d)
{
	int n = bpf_stacks__collect(d->env->bpf, on_stack, d);

	if (n < 0)
		log_warn("draining the stack maps failed: %s", strerror(-n));
	d->pending = false;
	send_markers(d, d->last_real_ns, d->end_real_ns);
}

/*
 * Ends the window now.  With a stack task since the last window, the maps
 * flip and are read after the grace period: sync waits for it here,
 * otherwise the waiter does and the loop carries on.  With none, the maps
 * are empty: markers only.
 */
static void drain(struct stack_drain *d, bool sync)
{
	uint64_t one = 1;

	if (d->pending) {
		if (!sync)
			return;
		struct pollfd p = { .fd = d->done_fd, .events = POLLIN };
		while (poll(&p, 1, -1) < 0 && errno == EINTR)
			;
		(void)!read(d->done_fd, &one, sizeof(one));
		finish(d);
	}
	for (unsigned s = 0; s < d->col->nshards; s++)
		d->col->shards[s].window_stacks = d->col->shards[s].window_drops = 0;
	d->col->stats[CTL_STAT_DRAINS]++;
	d->end_real_ns = timeutil__now_ns(CLOCK_REALTIME);
	if (!d->env->stacks_dirty) {
		d->env->stacks_dirty = tasks__count(d->col->tasks, profile_kind__mask(PROFILE_KIND_STACKS)) > 0;
		send_markers(d, d->last_real_ns, d->end_real_ns);
		return;
	}
	d->env->stacks_dirty = tasks__count(d->col->tasks, profile_kind__mask(PROFILE_KIND_STACKS)) > 0;
	bpf_stacks__flip(d->env->bpf);
	d->pending = true;
	if (sync || d->req_fd < 0 || write(d->req_fd, &one, sizeof(one)) != sizeof(one)) {
		bpf_stacks__wait_programs();
		finish(d);
	}
}

void stack_drain__tick(struct stack_drain *d)
{
	drain(d, false);
}

void stack_drain__sync(struct stack_drain *d)
{
	drain(d, true);
}

void stack_drain__done(struct stack_drain *d)
{
	uint64_t v;

	if (read(d->done_fd, &v, sizeof(v)) == sizeof(v) && d->pending)
		finish(d);
}

static void *waiter_main(void *arg)
{
	struct waiter_fds *w = arg;
	uint64_t v;

	for (;;) {
		if (read(w->req, &v, sizeof(v)) != sizeof(v)) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		bpf_stacks__wait_programs();
		v = 1;
		(void)!write(w->done, &v, sizeof(v));
	}
}

int stack_drain__start_waiter(struct stack_drain *d)
{
	struct waiter_fds *w = malloc(sizeof(*w));
	pthread_t th;
	int err;

	d->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	d->req_fd = eventfd(0, EFD_CLOEXEC);
	if (!w || d->done_fd < 0 || d->req_fd < 0) {
		err = -errno;
		goto fail;
	}
	*w = (struct waiter_fds){ .req = d->req_fd, .done = d->done_fd };
	err = -pthread_create(&th, NULL, waiter_main, w);
	if (err)
		goto fail;
	pthread_detach(th);
	return d->done_fd;
fail:
	free(w);
	if (d->req_fd >= 0)
		close(d->req_fd);
	d->req_fd = -1;
	/* done_fd stays: a sync drain polls it only while a flip is pending, which never happens without a waiter. */
	return err;
}
