/*
 * Part of net.bpf.c: L4.  TCP retransmits and drops, from their tracepoints,
 * for the sockets a target call has touched (net_sock.bpf.h's socks).
 */

/* An L4 event of a followed socket: retransmit or drop. */
static __always_inline void sock_event(struct sock *sk, __u16 op, long ret, const bool btf)
{
	__u64 key = (__u64)sk;
	struct sock_owner *o = bpf_map_lookup_elem(&socks, &key);
	struct scratch *s;
	__u32 zero = 0;

	if (!o)
		return;
	/* its own zero key: percpu_scratch() here costs the drop programs an instruction */
	s = bpf_map_lookup_elem(&net_scratch, &zero);
	if (!s)
		return;
	__builtin_memset(&s->e, 0, sizeof(s->e));
	if (fill_sock(&s->e, sk, btf))
		return;
	s->e.ts_ns = bpf_ktime_get_ns();
	s->e.tgid = o->tgid;
	s->e.root = o->root;
	s->e.fd = o->fd;
	s->e.ino = o->ino;
	s->e.op = op;
	s->e.ret = ret;
	emit(s, 0);
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(net_retransmit_btf, const struct sock *sk, const struct sk_buff *skb)
{
	sock_event((struct sock *)sk, NET_OP_RETRANSMIT, 0, true);
	return 0;
}

SEC("raw_tp/tcp_retransmit_skb")
int BPF_PROG(net_retransmit_raw, const struct sock *sk, const struct sk_buff *skb)
{
	sock_event((struct sock *)sk, NET_OP_RETRANSMIT, 0, false);
	return 0;
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(net_drop_btf, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	struct sock *sk = skb->sk;

	if (sk)
		sock_event(sk, NET_OP_DROP, (long)reason, true);
	return 0;
}

SEC("raw_tp/kfree_skb")
int BPF_PROG(net_drop_raw, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	struct sock *sk = BPF_CORE_READ(skb, sk);

	if (sk)
		sock_event(sk, NET_OP_DROP, (long)reason, false);
	return 0;
}

/* Kernels before 5.17: kfree_skb has no reason (the collector loads these there, by the tracepoint's BTF). */
SEC("tp_btf/kfree_skb")
int BPF_PROG(net_drop_btf_noreason, struct sk_buff *skb, void *location)
{
	struct sock *sk = skb->sk;

	if (sk)
		sock_event(sk, NET_OP_DROP, 0, true);
	return 0;
}

SEC("raw_tp/kfree_skb")
int BPF_PROG(net_drop_raw_noreason, struct sk_buff *skb, void *location)
{
	struct sock *sk = BPF_CORE_READ(skb, sk);

	if (sk)
		sock_event(sk, NET_OP_DROP, 0, false);
	return 0;
}
