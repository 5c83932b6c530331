#include "collector/bpf_net.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <bpf/btf.h>

#include "bpf/net.skel.h"
#include "common/ctl_proto.h"

/* enter, exit, retransmit, drop, fork, process exit, exec */
#define NET_PROGS 7
/* BPF_TRACE_UPROBE_MULTI and its return flag: Debian's libbpf 1.1 and 6.1 headers predate them. */
#define TRACE_UPROBE_MULTI 48
#define F_UPROBE_MULTI_RETURN 1u

struct bpf_net {
	struct net_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link *links[NET_PROGS];
	unsigned users;
	struct bpf_link *l2_links[2];   /* net_l2_xmit, net_l2_copy */
	unsigned l2_users;
	int ap;                     /* CTL_AP_TP_BTF or CTL_AP_RAW_TP: the variant loaded */
	int tls;                    /* the TLS program loaded (the kernel has uprobe.multi) */
	int ncpus;
	bpf_net_event_fn cb;
	void *ctx;
};

static uint64_t pow2_at_least(uint64_t v)
{
	uint64_t p = 4096;

	while (p < v && p < (1ull << 30))
		p <<= 1;
	return p;
}

/*
 * kfree_skb's arguments in this kernel's BTF (its btf_trace_kfree_skb
 * typedef, whose prototype has the context first): 5.17 added the drop
 * reason, and a program that reads an argument the tracepoint lacks is
 * refused at load (tp_btf) or at attach (raw_tp).  1, 0, or 1 when unknown.
 */
static int kfree_skb_has_reason(void)
{
	struct btf *vmlinux = btf__load_vmlinux_btf();
	const struct btf_type *t;
	int id, r = 1;

	if (!vmlinux)
		return 1;
	id = btf__find_by_name_kind(vmlinux, "btf_trace_kfree_skb", BTF_KIND_TYPEDEF);
	t = id > 0 ? btf__type_by_id(vmlinux, id) : NULL;
	if (t)
		t = btf__type_by_id(vmlinux, t->type);   /* pointer */
	if (t && btf_is_ptr(t))
		t = btf__type_by_id(vmlinux, t->type);   /* function prototype */
	if (t && btf_is_func_proto(t))
		r = btf_vlen(t) >= 4;                 /* ctx, skb, location, reason */
	btf__free(vmlinux);
	return r;
}

/* The programs of one variant, in attach order. */
static void variant_progs(struct net_bpf *skel, int btf, struct bpf_program *p[NET_PROGS])
{
	static int reason = -1;
	struct bpf_program *b[NET_PROGS], *r[NET_PROGS];

	if (reason < 0)
		reason = kfree_skb_has_reason();
	memcpy(b, (struct bpf_program *[NET_PROGS]){ skel->progs.net_enter_btf, skel->progs.net_exit_btf,
		skel->progs.net_retransmit_btf, reason ? skel->progs.net_drop_btf : skel->progs.net_drop_btf_noreason,
		skel->progs.net_fork_btf, skel->progs.net_pexit_btf, skel->progs.net_exec_btf }, sizeof(b));
	memcpy(r, (struct bpf_program *[NET_PROGS]){ skel->progs.net_enter_raw, skel->progs.net_exit_raw,
		skel->progs.net_retransmit_raw, reason ? skel->progs.net_drop_raw : skel->progs.net_drop_raw_noreason,
		skel->progs.net_fork_raw, skel->progs.net_pexit_raw, skel->progs.net_exec_raw }, sizeof(r));
	memcpy(p, btf ? b : r, sizeof(b));
}

/* One variant: the tp_btf programs or the raw_tp ones, loaded; NULL + errno.  tls: with the TLS uprobe program. */
static struct net_bpf *open_variant(const struct bpf_net_opts *o, int btf, int tls)
{
	struct net_bpf *skel = net_bpf__open();
	struct bpf_program *mine[NET_PROGS], *other[NET_PROGS];
	int err;

	if (!skel)
		return NULL;
	variant_progs(skel, btf, mine);
	variant_progs(skel, !btf, other);
	/* Both drop programs of each variant off, then the chosen ones on. */
	bpf_program__set_autoload(skel->progs.net_drop_btf, false);
	bpf_program__set_autoload(skel->progs.net_drop_btf_noreason, false);
	bpf_program__set_autoload(skel->progs.net_drop_raw, false);
	bpf_program__set_autoload(skel->progs.net_drop_raw_noreason, false);
	for (unsigned i = 0; i < NET_PROGS; i++) {
		bpf_program__set_autoload(other[i], false);
		bpf_program__set_autoload(mine[i], true);
	}
	/* Task storage is the tp_btf variant's (bpf/net_syscalls.bpf.h call_keep); the raw_tp one keeps calls by hash. */
	bpf_map__set_autocreate(skel->maps.inflight_ts, btf);
	bpf_map__set_autocreate(skel->maps.inflight, !btf);
	/* The packets under a call: the tp_btf variant's (its calls are in task storage). */
	bpf_program__set_autoload(skel->progs.net_l2_xmit, btf);
	bpf_program__set_autoload(skel->progs.net_l2_copy, btf);
	/* uprobe.multi (6.6+): needs only CAP_BPF + CAP_PERFMON, one link for many offsets. */
	bpf_program__set_autoload(skel->progs.net_tls, tls);
	if (tls)
		bpf_program__set_expected_attach_type(skel->progs.net_tls, (enum bpf_attach_type)TRACE_UPROBE_MULTI);
	bpf_map__set_max_entries(skel->maps.net_targets, o->max_targets ? o->max_targets : 1024);
	bpf_map__set_max_entries(skel->maps.net_events, (uint32_t)pow2_at_least(o->ringbuf_bytes));
	/* A quarter full wakes the collector; its timer takes what comes slower than that. */
	skel->rodata->wake_bytes = pow2_at_least(o->ringbuf_bytes) / 4;
	err = net_bpf__load(skel);
	if (err) {
		net_bpf__destroy(skel);
		errno = -err;
		return NULL;
	}
	return skel;
}

static int on_sample(void *ctx, void *data, size_t len)
{
	struct bpf_net *n = ctx;

	if (len < sizeof(struct net_event))
		return 0;
	return n->cb(n->ctx, data, (uint32_t)len);
}

struct bpf_net *bpf_net__load(const struct bpf_net_opts *o)
{
	struct bpf_net *n = calloc(1, sizeof(*n));
	int err;

	if (!n)
		return NULL;
	n->ncpus = libbpf_num_possible_cpus();
	/* Decided by loading, not by feature probes: tp_btf first, raw_tp if it will not load. */
	/* Without uprobe.multi the TLS program does not load: the rest still does. */
	for (int tls = 1; tls >= 0 && !n->skel; tls--) {
		n->tls = tls;
		n->skel = o->force_raw_tp ? NULL : open_variant(o, 1, tls);
		n->ap = CTL_AP_TP_BTF;
		if (!n->skel) {
			n->skel = open_variant(o, 0, tls);
			n->ap = CTL_AP_RAW_TP;
		}
	}
	if (!n->skel || n->ncpus <= 0) {
		err = n->skel ? -EINVAL : -errno;
		goto fail;
	}
	/* Kernels before 6.6 load the TLS program but have no uprobe.multi link: decided by attaching one
	 * (this process, its own executable's first byte, which no executable mapping holds). */
	if (n->tls) {
		uint64_t off = 0, cookie = 0;
		int fd = bpf_net__tls_link(n, "/proc/self/exe", &off, &cookie, 1, false, (uint32_t)getpid());

		if (fd < 0)
			n->tls = false;
		else
			close(fd);
	}
	n->rb = ring_buffer__new(bpf_map__fd(n->skel->maps.net_events), on_sample, n, NULL);
	if (!n->rb) {
		err = -errno;
		goto fail;
	}
	return n;
fail:
	bpf_net__free(n);
	errno = -err;
	return NULL;
}

int bpf_net__attach(struct bpf_net *n)
{
	struct bpf_program *progs[NET_PROGS];

	if (n->users++)
		return n->ap;
	variant_progs(n->skel, n->ap == CTL_AP_TP_BTF, progs);
	for (unsigned i = 0; i < NET_PROGS; i++) {
		n->links[i] = bpf_program__attach(progs[i]);
		if (!n->links[i]) {
			int err = -errno;

			n->users = 1;
			bpf_net__detach(n);
			return err;
		}
	}
	return n->ap;
}

void bpf_net__detach(struct bpf_net *n)
{
	if (!n->users || --n->users)
		return;
	for (unsigned i = 0; i < NET_PROGS; i++) {
		bpf_link__destroy(n->links[i]);
		n->links[i] = NULL;
	}
}

int bpf_net__l2(struct bpf_net *n, bool on)
{
	struct bpf_program *p[2] = { n->skel->progs.net_l2_xmit, n->skel->progs.net_l2_copy };

	if (!on) {
		if (!n->l2_users || --n->l2_users)
			return 0;
		for (unsigned i = 0; i < 2; i++) {
			bpf_link__destroy(n->l2_links[i]);
			n->l2_links[i] = NULL;
		}
		return 0;
	}
	if (n->ap != CTL_AP_TP_BTF)
		return -EOPNOTSUPP;
	if (n->l2_users++)
		return 0;
	for (unsigned i = 0; i < 2; i++) {
		n->l2_links[i] = bpf_program__attach(p[i]);
		if (!n->l2_links[i]) {
			int err = -errno;

			n->l2_users = 1;
			bpf_net__l2(n, false);
			return err;
		}
	}
	return 0;
}

/* The children BPF followed from root (bpf/net_proc.bpf.h on_fork) go with it: one walk, then the deletes. */
static void unfollow_children(struct bpf_net *n, int fd, uint32_t root)
{
	uint32_t max = bpf_map__max_entries(n->skel->maps.net_targets), cnt = 0, key, *prev = NULL;
	uint32_t *gone = calloc(max, sizeof(*gone));
	struct net_target v;

	if (!gone)
		return;  /* they leave with their processes (sched_process_exit) */
	while (cnt < max && !bpf_map_get_next_key(fd, prev, &key)) {
		if (!bpf_map_lookup_elem(fd, &key, &v) && v.root == root)
			gone[cnt++] = key;
		prev = &key;
	}
	for (uint32_t i = 0; i < cnt; i++)
		(void)bpf_map_delete_elem(fd, &gone[i]);
	free(gone);
}

int bpf_net__target(struct bpf_net *n, uint32_t tgid, int on, bool prefix)
{
	int fd = bpf_map__fd(n->skel->maps.net_targets);
	struct net_target t = { 0 };

	(void)bpf_map_lookup_elem(fd, &tgid, &t);
	if (on) {
		t.tasks++;
		t.prefix_tasks += prefix;
		t.root = 0;     /* named by a task: the collector's to remove, not its parent's */
	} else if (t.tasks) {
		t.tasks--;
		if (prefix && t.prefix_tasks)
			t.prefix_tasks--;
	}
	if (t.tasks)
		return bpf_map_update_elem(fd, &tgid, &t, BPF_ANY) ? -errno : 0;
	if (bpf_map_delete_elem(fd, &tgid) && errno != ENOENT)
		return -errno;
	unfollow_children(n, fd, tgid);
	return 0;
}

int bpf_net__tls_link(struct bpf_net *n, const char *path, const uint64_t *offs, const uint64_t *cookies,
		      uint32_t cnt, bool ret, uint32_t pid)
{
	/* union bpf_attr's link_create with its uprobe_multi member, as the kernel lays it out. */
	struct {
		uint32_t prog_fd, target_fd, attach_type, flags;
		uint64_t path, offsets, ref_ctr_offsets, cookies;
		uint32_t cnt, uflags, pid;
	} __attribute__((aligned(8))) a;
	int fd;

	if (!n->tls)
		return -EOPNOTSUPP;
	if (!cnt)
		return -EINVAL;
	memset(&a, 0, sizeof(a));
	a.prog_fd = (uint32_t)bpf_program__fd(n->skel->progs.net_tls);
	a.attach_type = TRACE_UPROBE_MULTI;
	a.path = (uint64_t)(uintptr_t)path;
	a.offsets = (uint64_t)(uintptr_t)offs;
	a.cookies = (uint64_t)(uintptr_t)cookies;
	a.cnt = cnt;
	a.uflags = ret ? F_UPROBE_MULTI_RETURN : 0;
	a.pid = pid;
	fd = (int)syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
	return fd < 0 ? -errno : fd;
}

bool bpf_net__has_tls(const struct bpf_net *n)
{
	return n->tls;
}

uint32_t bpf_net__root(struct bpf_net *n, uint32_t tgid)
{
	struct net_target t;

	if (bpf_map_lookup_elem(bpf_map__fd(n->skel->maps.net_targets), &tgid, &t))
		return 0;
	return t.root;
}

void bpf_net__tls_on(struct bpf_net *n, bool on)
{
	n->skel->bss->tls_on = on;
}

int bpf_net__fd(const struct bpf_net *n)
{
	return ring_buffer__epoll_fd(n->rb);
}

int bpf_net__consume(struct bpf_net *n, bpf_net_event_fn cb, void *ctx)
{
	n->cb = cb;
	n->ctx = ctx;
	return ring_buffer__consume(n->rb);
}

int bpf_net__counters(struct bpf_net *n, uint64_t *ret)
{
	int fd = bpf_map__fd(n->skel->maps.net_counters);
	uint64_t *v = calloc((size_t)n->ncpus, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (uint32_t k = 0; k < NET_CNT_MAX; k++) {
		ret[k] = 0;
		if (bpf_map_lookup_elem(fd, &k, v))
			continue;
		for (int c = 0; c < n->ncpus; c++)
			ret[k] += v[c];
	}
	free(v);
	return 0;
}

struct bpf_net *bpf_net__free(struct bpf_net *n)
{
	if (!n)
		return NULL;
	for (unsigned i = 0; i < NET_PROGS; i++)
		bpf_link__destroy(n->links[i]);
	for (unsigned i = 0; i < 2; i++)
		bpf_link__destroy(n->l2_links[i]);
	ring_buffer__free(n->rb);
	net_bpf__destroy(n->skel);
	free(n);
	return NULL;
}
