#include "collector/bpf_net.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/shard.h"
#include <bpf/btf.h>

#include "bpf/net.skel.h"
#include "common/ctl_proto.h"

/* The most tracepoint programs a variant attaches (the socket layer's: send, receive, state, destroy, mmap, and five shared). */
#define NET_PROGS 10
/* BPF_TRACE_UPROBE_MULTI and its return flag: Debian's libbpf 1.1 and 6.1 headers predate them. */
#define TRACE_UPROBE_MULTI 48
#define F_UPROBE_MULTI_RETURN 1u

struct bpf_net {
	struct net_bpf *skel;
	struct ring_buffer *rb;
	struct bpf_link *links[NET_PROGS];
	unsigned users;
	struct bpf_link *l2_links[2];   /* net_l2_xmit, net_l2_copy; net_sl_l2_xmit, net_sl_copy */
	struct bpf_link *cg_links[2];   /* the socket layer's recvmsg4, recvmsg6 on the cgroup v2 root */
	int cgroup_fd;              /* that root, opened at load (as root), -1 for none */
	int sock_err;               /* why the socket layer was not loaded (-errno), 0 if it was or was not tried */
	unsigned l2_users;
	uint32_t l2_gen;           /* the last l2_on given the program */
	int ap;                     /* CTL_AP_SOCKET, CTL_AP_TP_BTF or CTL_AP_RAW_TP: the variant loaded */
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

/*
 * The root of the cgroup v2 hierarchy, opened: where the socket layer's
 * recvmsg hooks go (every process's sockets run them).  Found in this
 * process's mount table (root's, before the privilege drop), not at a fixed
 * path: hybrid hosts mount it at /sys/fs/cgroup/unified.  -1 if none.
 */
static int cgroup2_root(void)
{
	char line[4096], mnt[4096];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int fd = -1;

	if (!f)
		return -1;
	while (fd < 0 && fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - ");

		/* "id parent major:minor root mountpoint options ... - fstype source superoptions" */
		if (!sep || strncmp(sep + 3, "cgroup2 ", 8) || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		/* a mount point with a space is escaped (\040): not ours to guess */
		if (!strchr(mnt, '\\'))
			fd = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	}
	fclose(f);
	return fd;
}

/* kfree_skb_has_reason(), asked once. */
static int reason_cache = -1;

/* The programs of variant ap (CTL_AP_*), in attach order, NULL after the last. */
static void variant_progs(struct net_bpf *skel, int ap, struct bpf_program *p[NET_PROGS])
{
	struct bpf_program *btf_drop, *raw_drop;

	if (reason_cache < 0)
		reason_cache = kfree_skb_has_reason();
	btf_drop = reason_cache ? skel->progs.net_drop_btf : skel->progs.net_drop_btf_noreason;
	raw_drop = reason_cache ? skel->progs.net_drop_raw : skel->progs.net_drop_raw_noreason;

	memset(p, 0, NET_PROGS * sizeof(*p));
	if (ap == CTL_AP_SOCKET)
		memcpy(p, (struct bpf_program *[]){ skel->progs.net_sl_send, skel->progs.net_sl_recv,
			skel->progs.net_sl_state, skel->progs.net_sl_destroy, skel->progs.net_sl_mmap,
			skel->progs.net_retransmit_btf, btf_drop, skel->progs.net_fork_btf, skel->progs.net_pexit_btf,
			skel->progs.net_exec_btf }, 10 * sizeof(*p));
	else if (ap == CTL_AP_TP_BTF)
		memcpy(p, (struct bpf_program *[]){ skel->progs.net_enter_btf, skel->progs.net_exit_btf,
			skel->progs.net_retransmit_btf, btf_drop, skel->progs.net_fork_btf, skel->progs.net_pexit_btf,
			skel->progs.net_exec_btf }, 7 * sizeof(*p));
	else
		memcpy(p, (struct bpf_program *[]){ skel->progs.net_enter_raw, skel->progs.net_exit_raw,
			skel->progs.net_retransmit_raw, raw_drop, skel->progs.net_fork_raw, skel->progs.net_pexit_raw,
			skel->progs.net_exec_raw }, 7 * sizeof(*p));
}

/* The packet programs of variant ap (attached while a task asks), NULL after the last. */
static void variant_l2(struct net_bpf *skel, int ap, struct bpf_program *p[2])
{
	p[0] = ap == CTL_AP_SOCKET ? skel->progs.net_sl_l2_xmit : ap == CTL_AP_TP_BTF ? skel->progs.net_l2_xmit : NULL;
	p[1] = ap == CTL_AP_SOCKET ? skel->progs.net_sl_copy : ap == CTL_AP_TP_BTF ? skel->progs.net_l2_copy : NULL;
}

/* One variant (CTL_AP_*) loaded; NULL + errno.  tls: with the TLS uprobe program. */
static struct net_bpf *open_variant(const struct bpf_net_opts *o, int ap, int tls)
{
	static const int aps[] = { CTL_AP_SOCKET, CTL_AP_TP_BTF, CTL_AP_RAW_TP };
	struct net_bpf *skel = net_bpf__open();
	struct bpf_program *p[NET_PROGS], *l2[2];
	struct bpf_program *prog;
	int err;

	if (!skel)
		return NULL;
	/* Every program off, then the variant's on. */
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, false);
	for (unsigned v = 0; v < sizeof(aps) / sizeof(aps[0]); v++) {
		if (aps[v] != ap)
			continue;
		variant_progs(skel, ap, p);
		for (unsigned i = 0; i < NET_PROGS && p[i]; i++)
			bpf_program__set_autoload(p[i], true);
		variant_l2(skel, ap, l2);
		for (unsigned i = 0; i < 2 && l2[i]; i++)
			bpf_program__set_autoload(l2[i], true);
	}
	bpf_program__set_autoload(skel->progs.net_sl_recvmsg4, ap == CTL_AP_SOCKET);
	bpf_program__set_autoload(skel->progs.net_sl_recvmsg6, ap == CTL_AP_SOCKET);
	/*
	 * Each variant's own maps: calls in flight by thread (tp_btf: task
	 * storage; raw_tp: a hash), closes between entry and exit (both syscall
	 * variants), the socket layer's threads, passive opens and connects.
	 */
	bpf_map__set_autocreate(skel->maps.inflight_ts, ap == CTL_AP_TP_BTF);
	bpf_map__set_autocreate(skel->maps.inflight, ap == CTL_AP_RAW_TP);
	bpf_map__set_autocreate(skel->maps.closing, ap != CTL_AP_SOCKET);
	bpf_map__set_autocreate(skel->maps.sl_threads, ap == CTL_AP_SOCKET);
	bpf_map__set_autocreate(skel->maps.sl_passive, ap == CTL_AP_SOCKET);
	bpf_map__set_autocreate(skel->maps.sl_connects, ap == CTL_AP_SOCKET);
	bpf_map__set_autocreate(skel->maps.sl_peers, ap == CTL_AP_SOCKET);
	bpf_map__set_autocreate(skel->maps.sl_socks, ap == CTL_AP_SOCKET);
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
	n->cgroup_fd = o->attach == BPF_NET_SOCKET ? cgroup2_root() : -1;
	/*
	 * Decided by loading, not by feature probes: the socket layer, else the
	 * syscall layer's tp_btf variant, else its raw_tp one, from the first
	 * the options allow.  Without uprobe.multi the TLS program does not
	 * load: the rest still does.
	 */
	for (int tls = 1; tls >= 0 && !n->skel; tls--) {
		static const int chain[] = { CTL_AP_SOCKET, CTL_AP_TP_BTF, CTL_AP_RAW_TP };
		unsigned first = o->attach == BPF_NET_SYSCALL ? 1 : o->attach == BPF_NET_RAW_TP ? 2 : 0;

		n->tls = tls;
		for (unsigned i = first; i < 3 && !n->skel; i++) {
			/* Without the cgroup v2 root, a datagram's source would be lost: the syscall layer has it. */
			if (chain[i] == CTL_AP_SOCKET && n->cgroup_fd < 0) {
				n->sock_err = -ENOENT;
				continue;
			}
			n->ap = chain[i];
			n->skel = open_variant(o, chain[i], tls);
			if (chain[i] == CTL_AP_SOCKET)
				n->sock_err = n->skel ? 0 : -errno;
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
	variant_progs(n->skel, n->ap, progs);
	for (unsigned i = 0; i < NET_PROGS && progs[i]; i++) {
		n->links[i] = bpf_program__attach(progs[i]);
		if (!n->links[i]) {
			int err = -errno;

			n->users = 1;
			bpf_net__detach(n);
			return err;
		}
	}
	if (n->ap == CTL_AP_SOCKET) {
		struct bpf_program *cg[2] = { n->skel->progs.net_sl_recvmsg4, n->skel->progs.net_sl_recvmsg6 };

		for (unsigned i = 0; i < 2; i++) {
			n->cg_links[i] = bpf_program__attach_cgroup(cg[i], n->cgroup_fd);
			if (!n->cg_links[i]) {
				int err = -errno;

				n->users = 1;
				bpf_net__detach(n);
				return err;
			}
		}
	}
	return n->ap;
}

/*
 * The target filter (bpf/net_event.bpf.h net_target_bytes) again from the
 * table: the bytes of processes that left go.  Only while no program runs:
 * a byte cleared under a live target would hide its calls.
 */
static void target_bytes_reset(struct bpf_net *n)
{
	int fd = bpf_map__fd(n->skel->maps.net_targets);
	uint32_t key, *prev = NULL;

	memset(n->skel->bss->net_target_bytes, 0, sizeof(n->skel->bss->net_target_bytes));
	while (!bpf_map_get_next_key(fd, prev, &key)) {
		n->skel->bss->net_target_bytes[key % sizeof(n->skel->bss->net_target_bytes)] = 1;
		prev = &key;
	}
}

void bpf_net__detach(struct bpf_net *n)
{
	if (!n->users || --n->users)
		return;
	for (unsigned i = 0; i < NET_PROGS; i++) {
		bpf_link__destroy(n->links[i]);
		n->links[i] = NULL;
	}
	for (unsigned i = 0; i < 2; i++) {
		bpf_link__destroy(n->cg_links[i]);
		n->cg_links[i] = NULL;
	}
	target_bytes_reset(n);
}

int bpf_net__l2(struct bpf_net *n, bool on)
{
	struct bpf_program *p[2];

	variant_l2(n->skel, n->ap, p);
	if (!on) {
		if (!n->l2_users || --n->l2_users)
			return 0;
		for (unsigned i = 0; i < 2; i++) {
			bpf_link__destroy(n->l2_links[i]);
			n->l2_links[i] = NULL;
		}
		n->skel->bss->l2_on = 0;
		return 0;
	}
	if (!p[0])
		return -EOPNOTSUPP;
	if (n->l2_users++)
		return 0;
	for (unsigned i = 0; i < 2 && p[i]; i++) {
		n->l2_links[i] = bpf_program__attach(p[i]);
		if (!n->l2_links[i]) {
			int err = -errno;

			n->l2_users = 1;
			bpf_net__l2(n, false);
			return err;
		}
	}
	/* a number of its own each time: packets counted in an earlier time are stale (bpf/net_socklayer.bpf.h) */
	n->skel->bss->l2_on = ++n->l2_gen ? n->l2_gen : ++n->l2_gen;
	return 0;
}

int bpf_net__attach_point(const struct bpf_net *n)
{
	return n->ap;
}

int bpf_net__socket_error(const struct bpf_net *n)
{
	return n->sock_err;
}

/*
 * Deletes the connection caps that `drop` says go (one walk, then the
 * deletes): the caps a task's analyzer asked for must not outlive what it
 * knows of them, or a later task (one that keeps bodies) would inherit a
 * cap its analyzer never asked for.
 */
static void drop_caps(struct bpf_net *n, bool (*drop)(struct bpf_net *n, uint32_t tgid, const void *arg), const void *arg)
{
	int fd = bpf_map__fd(n->skel->maps.net_caps);
	uint32_t max = bpf_map__max_entries(n->skel->maps.net_caps), cnt = 0;
	uint64_t key, *prev = NULL, *gone = calloc(max, sizeof(*gone));
	struct net_cap v;

	if (!gone)
		return;  /* they stay until the LRU evicts them */
	while (cnt < max && !bpf_map_get_next_key(fd, prev, &key)) {
		if (!bpf_map_lookup_elem(fd, &key, &v) && drop(n, v.tgid, arg))
			gone[cnt++] = key;
		prev = &key;
	}
	for (uint32_t i = 0; i < cnt; i++)
		(void)bpf_map_delete_elem(fd, &gone[i]);
	if (cnt)
		__atomic_add_fetch(&n->skel->bss->caps_gen, 1, __ATOMIC_SEQ_CST);
	free(gone);
}

struct tgid_set { const uint32_t *v; uint32_t n; };

static bool in_set(struct bpf_net *n, uint32_t tgid, const void *arg)
{
	const struct tgid_set *s = arg;

	(void)n;
	for (uint32_t i = 0; i < s->n; i++)
		if (s->v[i] == tgid)
			return true;
	return false;
}

/* The children BPF followed from root (bpf/net_proc.bpf.h on_fork) go with it: one walk, then the deletes. */
static void unfollow_children(struct bpf_net *n, int fd, uint32_t root)
{
	uint32_t max = bpf_map__max_entries(n->skel->maps.net_targets), cnt = 0, key, *prev = NULL;
	uint32_t *gone = calloc(max + 1, sizeof(*gone));
	struct net_target v;

	if (!gone) {
		drop_caps(n, in_set, &(struct tgid_set){ &root, 1 });
		return;  /* they leave with their processes (sched_process_exit) */
	}
	while (cnt < max && !bpf_map_get_next_key(fd, prev, &key)) {
		if (!bpf_map_lookup_elem(fd, &key, &v) && v.root == root)
			gone[cnt++] = key;
		prev = &key;
	}
	for (uint32_t i = 0; i < cnt; i++)
		(void)bpf_map_delete_elem(fd, &gone[i]);
	gone[cnt++] = root;
	drop_caps(n, in_set, &(struct tgid_set){ gone, cnt });
	free(gone);
}

struct shard_arg { unsigned shard, nshards; };

static bool of_shard(struct bpf_net *n, uint32_t tgid, const void *arg)
{
	const struct shard_arg *s = arg;
	uint32_t root = bpf_net__root(n, tgid);

	return shard__of(root ? root : tgid, s->nshards) == s->shard;
}

void bpf_net__caps_clear(struct bpf_net *n, unsigned shard, unsigned nshards)
{
	drop_caps(n, of_shard, &(struct shard_arg){ shard, nshards });
}

/* After net_targets changed: the sockets' copies of entries are stale (bpf/net_event.bpf.h targets_gen). */
static void targets_changed(struct bpf_net *n)
{
	if (!__atomic_add_fetch(&n->skel->data->targets_gen, 1, __ATOMIC_SEQ_CST))
		__atomic_add_fetch(&n->skel->data->targets_gen, 1, __ATOMIC_SEQ_CST);   /* 0 is no socket's copy */
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
	if (t.tasks) {
		/* before the entry: see net_target_bytes */
		__atomic_store_n(&n->skel->bss->net_target_bytes[tgid % sizeof(n->skel->bss->net_target_bytes)], 1,
				 __ATOMIC_SEQ_CST);
		if (bpf_map_update_elem(fd, &tgid, &t, BPF_ANY))
			return -errno;
		targets_changed(n);
		return 0;
	}
	if (bpf_map_delete_elem(fd, &tgid) && errno != ENOENT)
		return -errno;
	unfollow_children(n, fd, tgid);
	targets_changed(n);
	return 0;
}

int bpf_net__cap(struct bpf_net *n, uint64_t ino, const struct net_cap *cap)
{
	if (bpf_map_update_elem(bpf_map__fd(n->skel->maps.net_caps), &ino, cap, BPF_ANY))
		return -errno;
	/* after the entry is in: a socket that sees the new generation finds it */
	__atomic_add_fetch(&n->skel->bss->caps_gen, 1, __ATOMIC_SEQ_CST);
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
	struct net_counts *v = calloc((size_t)n->ncpus, sizeof(*v));
	uint32_t zero = 0;
	int err = 0;

	if (!v)
		return -ENOMEM;
	memset(ret, 0, sizeof(uint64_t) * NET_CNT_MAX);
	if (bpf_map_lookup_elem(fd, &zero, v))
		err = -errno;
	for (int c = 0; !err && c < n->ncpus; c++)
		for (unsigned k = 0; k < NET_CNT_MAX; k++)
			ret[k] += v[c].n[k];
	free(v);
	return err;
}

struct bpf_net *bpf_net__free(struct bpf_net *n)
{
	if (!n)
		return NULL;
	for (unsigned i = 0; i < NET_PROGS; i++)
		bpf_link__destroy(n->links[i]);
	for (unsigned i = 0; i < 2; i++) {
		bpf_link__destroy(n->l2_links[i]);
		bpf_link__destroy(n->cg_links[i]);
	}
	if (n->cgroup_fd >= 0)
		close(n->cgroup_fd);
	ring_buffer__free(n->rb);
	net_bpf__destroy(n->skel);
	free(n);
	return NULL;
}
