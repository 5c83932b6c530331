/*
 * Part of net.bpf.c: packets under a socket call (tp_btf only: the call is in the thread's
 * storage, found without hashing).  These run on every packet the host
 * queues to a device or a socket reads, so the collector attaches them only
 * while a task asks (CTL_ATTACH_F_L2); a thread with no call in flight costs
 * one storage lookup.
 */
static __always_inline struct call *call_now(void)
{
	struct call *cp = bpf_task_storage_get(&inflight_ts, bpf_get_current_task_btf(), 0, 0);

	return cp && cp->op ? cp : NULL;
}

/*
 * One packet of socket sk under call c.  The call's first packet names its
 * socket: on loopback the receiving socket's ACK can be queued in the
 * sender's context, and is not the call's.
 */
static __always_inline void l2_add(struct call *c, struct sock *sk, const struct sk_buff *skb, __u32 bytes,
				   __u32 ifindex)
{
	if (!sk)
		return;
	if (!c->l2_sk)
		c->l2_sk = (__u64)sk;
	else if (c->l2_sk != (__u64)sk)
		return;
	if (c->l2_skb != (__u64)skb) {
		/* (a read can copy one packet in parts: it is one packet) */
		c->l2_pkts++;
		c->l2_skb = (__u64)skb;
		count(NET_CNT_L2_PKTS);
	}
	c->l2_bytes += bytes;
	c->l2_ifindex = ifindex;
}

SEC("tp_btf/net_dev_queue")
int BPF_PROG(net_l2_xmit, struct sk_buff *skb)
{
	struct call *c = call_now();
	struct net_device *dev;

	if (!c || c->op != NET_OP_WRITE)
		return 0;
	dev = skb->dev;
	l2_add(c, skb->sk, skb, skb->len, dev ? (__u32)dev->ifindex : 0);
	return 0;
}

SEC("tp_btf/skb_copy_datagram_iovec")
int BPF_PROG(net_l2_copy, const struct sk_buff *skb, int len)
{
	struct call *c = call_now();

	if (!c || c->op != NET_OP_READ || len <= 0)
		return 0;
	l2_add(c, skb->sk, skb, (__u32)len, (__u32)skb->skb_iif);
	return 0;
}
