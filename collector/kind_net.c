/*
 * Network profiling: the socket-call programs (collector/bpf_net.h), their
 * packet programs while a task asks for them (CTL_ATTACH_F_L2), and the TLS
 * probes tasks gained (collector/tls_links.h), dropped with the task.  A
 * network task follows the children its processes fork.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bpf/ember_abi.h"
#include "collector/bpf_net.h"
#include "collector/kinds.h"
#include "collector/net_fwd.h"
#include "collector/tls_links.h"
#include "common/log.h"

/*
 * The network program is optional: a kernel where it does not load still
 * profiles stacks, and network tasks are refused with the reason logged here.
 */
int kind_net__load(struct kinds_env *env, struct kinds_load_opts *o)
{
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	struct bpf_net_opts no = { .max_targets = o->stacks.max_pids,
				   .ringbuf_bytes = o->net_buffer * (uint64_t)(ncpus > 0 ? ncpus : 1),
				   .attach = (enum bpf_net_attach)o->net_attach };

	env->net = bpf_net__load(&no);
	if (!env->net) {
		log_warn("cannot load the network BPF program (%m): network profiling tasks will be refused "
			 "(log_level debug shows the verifier's logs)");
		return 0;
	}
	if (bpf_net__socket_error(env->net) == -ENOENT)
		log_info("network capture: no cgroup v2 hierarchy is mounted (it gives a datagram's source at the "
			 "socket layer): the syscall layer is used");
	else if (bpf_net__socket_error(env->net))
		log_info("network capture: the socket layer did not load (%s; Linux 6.3+ has its tracepoints): "
			 "the syscall layer is used", strerror(-bpf_net__socket_error(env->net)));
	log_info("network capture: %s", bpf_net__attach_point(env->net) == CTL_AP_SOCKET
		 ? "socket layer (sock_send_length / sock_recv_length; no syscall tracepoint)"
		 : bpf_net__attach_point(env->net) == CTL_AP_TP_BTF ? "syscall layer (tp_btf sys_enter / sys_exit)"
								       : "syscall layer (raw_tp sys_enter / sys_exit)");
	if (!bpf_net__has_tls(env->net)) {
		struct utsname u;

		uname(&u);
		log_warn("this kernel (%s) has no uprobe.multi links (Linux 6.6+): TLS plaintext is not captured; "
			 "TLS connections are profiled at L4 (is_ssl from their records; tls_unsupported in ember stats)",
			 u.release);
	}
	else if (!(env->tls = tls_links__new(env->net, 1024)))
		log_warn("TLS probes unavailable: %m");
	return 0;
}

void kind_net__unload(struct kinds_env *env)
{
	env->tls = tls_links__free(env->tls);
	env->net = bpf_net__free(env->net);
}

/* The kind's own allocation (kinds__free frees it), pointing at the shared environment. */
struct net_kind {
	struct kinds_env *env;
};

static int attach(void *impl, struct task *t)
{
	struct kinds_env *env = ((struct net_kind *)impl)->env;
	int r = bpf_net__attach(env->net);

	t->attach_point = r > 0 ? (uint32_t)r : CTL_AP_NONE;
	if (r <= 0)
		return r;
	/* Without the packets (raw_tp variant) the task still runs: its events carry none. */
	if (t->flags & CTL_ATTACH_F_L2)
		t->l2 = !bpf_net__l2(env->net, true);
	return 0;
}

static void detach(void *impl, struct task *t)
{
	struct kinds_env *env = ((struct net_kind *)impl)->env;

	if (env->tls)
		tls_links__drop_owner(env->tls, t->id);
	if (t->l2)
		(void)bpf_net__l2(env->net, false);
	t->l2 = false;
	bpf_net__detach(env->net);
}

static int target(void *impl, const struct task *t, uint32_t pid, bool on)
{
	struct kinds_env *env = ((struct net_kind *)impl)->env;

	return bpf_net__target(env->net, pid, on, t->flags & CTL_ATTACH_F_PREFIX);
}

static uint32_t follows(void *impl, uint32_t pid)
{
	struct kinds_env *env = ((struct net_kind *)impl)->env;

	return bpf_net__root(env->net, pid);
}

_Static_assert(CTL_STAT_NET_FORKS_FULL - CTL_STAT_NET_CALLS + 1 == NET_CNT_TLS_CALLS &&
	       CTL_STAT_NET_PEEKS - CTL_STAT_NET_TLS_CALLS + 1 == NET_CNT_PEEKS + 1 - NET_CNT_TLS_CALLS &&
	       NET_CNT_CAPPED + 1 == NET_CNT_MAX,
	       "the collector's network stats mirror the BPF program's counters one to one");

/* The program's counters, one to one, and the forwarder's. */
static void counters(void *impl, uint64_t *stats)
{
	struct kinds_env *env = ((struct net_kind *)impl)->env;
	uint64_t nc[NET_CNT_MAX];

	stats[CTL_STAT_TLS_UNSUPPORTED] = !bpf_net__has_tls(env->net);
	if (!bpf_net__counters(env->net, nc)) {
		for (unsigned i = 0; i < NET_CNT_TLS_CALLS; i++)
			stats[CTL_STAT_NET_CALLS + i] = nc[i];
		for (unsigned i = NET_CNT_TLS_CALLS; i <= NET_CNT_PEEKS; i++)
			stats[CTL_STAT_NET_TLS_CALLS + i - NET_CNT_TLS_CALLS] = nc[i];
		stats[CTL_STAT_NET_SL_NO_SYSCALL] = nc[NET_CNT_SL_NO_SYSCALL];
		stats[CTL_STAT_NET_CAPPED] = nc[NET_CNT_CAPPED];
	}
	stats[CTL_STAT_NET_SOCKET_LAYER] = bpf_net__attach_point(env->net) == CTL_AP_SOCKET;
	if (env->fwd) {
		struct net_fwd_stats fs;

		net_fwd__stats(env->fwd, &fs);
		stats[CTL_STAT_NET_FORWARDED] = fs.events;
		stats[CTL_STAT_NET_RING_DROPS] = fs.ring_drops;
		stats[CTL_STAT_NET_RING_UNTRACKED] = fs.untracked;
		stats[CTL_STAT_NET_PEERS_ACROSS] = fs.peers_across;
		stats[CTL_STAT_NET_ENDPOINTS_FULL] = fs.endpoints_full;
	}
}

struct collector_kind *kind_net__new(struct kinds_env *env, uint32_t kind)
{
	struct collector_kind *k;
	struct net_kind *n;

	if (!env->net) {
		errno = ENODEV;
		return NULL;
	}
	k = calloc(1, sizeof(*k));
	n = calloc(1, sizeof(*n));
	if (!k || !n) {
		free(k);
		free(n);
		return NULL;
	}
	n->env = env;
	*k = (struct collector_kind){ .kind = kind, .name = "network", .flags = CTL_ATTACH_F_PREFIX | CTL_ATTACH_F_L2,
				      .attach = attach, .detach = detach, .target = target, .follows = follows,
				      .counters = counters, .impl = n };
	return k;
}
