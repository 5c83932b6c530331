/*
 * Part of net.bpf.c: what every network concern writes through.  The target
 * table and the collector's settings, the event ring buffer with its per-CPU
 * scratch and the counters, the copy of user data into an event, and the
 * losses a full ring leaves, handed to the socket's next event.
 */

/* Set by the collector before load. */
const volatile __u32 max_targets = 1024;
/*
 * The collector is woken only once this much waits in the ring buffer; it
 * also drains on a short timer.  Waking it per event would cost a context
 * switch per socket call at the rates network profiling sees.
 */
const volatile __u64 wake_bytes = 1 << 18;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);                 /* tgid */
	__type(value, struct net_target);
	__uint(max_entries, 1024);
} net_targets SEC(".maps");

/*
 * A filter in front of net_targets, by tgid & 0xffff: non-zero for every
 * target (and for processes that were one, until the programs detach).
 * Every socket call of every process (the socket layer), every syscall (the
 * syscall layer) asks it first: a plain load, where the hash lookup was
 * most of a bystander's cost.  Bytes, not bits: a store needs no atomic
 * (kernels before 5.12 have no atomic or).  The collector sets a target's
 * byte before its entry goes in, BPF a followed child's after its entry, so
 * no entry is ever behind a zero byte; a stale byte costs one lookup.
 */
#define NET_TARGET_BYTES 65536
__u8 net_target_bytes[NET_TARGET_BYTES];

/*
 * Moves whenever an entry of net_targets changes or goes (the collector's
 * changes, a followed child's exit): a copy of an entry taken at another
 * number is stale (sock_owner.tgt_gen).  Bumped after the change.
 */
__u32 targets_gen = 1;

static __always_inline struct net_target *target_of(__u32 tgid)
{
	if (!net_target_bytes[tgid & (NET_TARGET_BYTES - 1)])
		return NULL;
	return bpf_map_lookup_elem(&net_targets, &tgid);
}

/* Losses of a socket, handed to its next event (see struct net_event). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);                 /* socket inode */
	__type(value, struct net_lost);
	__uint(max_entries, 16384);
} net_lost SEC(".maps");
/*
 * Entries of net_lost per slot of socket inodes (ino & (LOST_SLOTS - 1)):
 * an event looks its socket's losses up only while its slot is not 0.  A
 * slot counts one up before an entry may go in and one down when one is
 * deleted (or did not go in); an entry the LRU evicts is never counted
 * down, so a slot is never below its entries.  A socket that closed with
 * its losses still kept holds its slot up: the sockets sharing that slot
 * pay the lookup, not every event after the first loss.  The adds' results
 * go unused (a plain atomic add: 5.10 has no fetch).
 */
#define LOST_SLOTS 16384
__u32 lost_slots[LOST_SLOTS];

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);       /* set by the collector from the per-CPU budget */
} net_events SEC(".maps");

struct scratch {
	struct net_event e;
	__u8 data[3 * NET_MAX_PAYLOAD];     /* room for the verifier's view of offset + length */
	__u64 unlooked;                     /* bytes this CPU wrote since wake_flag() last looked */
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct scratch);
	__uint(max_entries, 1);
} net_scratch SEC(".maps");

/*
 * The counters, one per-CPU entry of all of them (struct net_counts): a
 * call's two or three counts touch one entry and a line or two, where an
 * entry per counter cost a lookup and its own lines each.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct net_counts);
	__uint(max_entries, 1);
} net_counters SEC(".maps");

static __always_inline void count(__u32 id)
{
	__u32 zero = 0;
	struct net_counts *c = bpf_map_lookup_elem(&net_counters, &zero);

	if (c && id < NET_CNT_MAX)
		c->n[id] += 1;
}

/* Copies up to cap - off bytes of user memory to s->data + off (cap <= NET_MAX_PAYLOAD); returns what it copied. */
static __always_inline __u32 copy_in(struct scratch *s, __u32 off, __u64 src, __u64 n, __u32 cap)
{
	if (cap > NET_MAX_PAYLOAD)
		cap = NET_MAX_PAYLOAD;
	if (off >= cap || !src)
		return 0;
	if (n > cap - off)
		n = cap - off;
	/* Masks the verifier can follow (the compiler would drop plain checks): off < 4 KiB, n < 8 KiB. */
	barrier_var(n);
	n &= 2 * NET_MAX_PAYLOAD - 1;
	barrier_var(off);
	off &= NET_MAX_PAYLOAD - 1;
	if (bpf_probe_read_user(s->data + off, n, (void *)src)) {
		count(NET_CNT_COPY_FAILED);
		return 0;
	}
	return (__u32)n;
}

#define IOV_BATCH 4
/*
 * The data of an iovec array, up to `total` bytes and NET_MAX_IOV entries.
 * The entries are read IOV_BATCH at a time: a user read's fixed cost is
 * most of the copy of a head, and a write's array (head, body) is read once.
 */
static __always_inline __u32 copy_iov(struct scratch *s, __u64 iov, __u64 cnt, __u64 total, __u32 cap)
{
	__u32 off = 0;

	if (cnt > NET_MAX_IOV)
		cnt = NET_MAX_IOV;
	for (int b = 0; b < NET_MAX_IOV; b += IOV_BATCH) {
		struct iovec v[IOV_BATCH];
		__u64 n = cnt - b;

		if (b >= cnt || off >= total || off >= cap || off >= NET_MAX_PAYLOAD)
			break;
		if (n > IOV_BATCH)
			n = IOV_BATCH;
		barrier_var(n);             /* the check below stays, for the verifier */
		if (!n || n > IOV_BATCH || bpf_probe_read_user(v, n * sizeof(v[0]), (void *)(iov + b * sizeof(v[0]))))
			break;
		for (int i = 0; i < IOV_BATCH; i++) {
			if (i >= n || off >= total || off >= cap || off >= NET_MAX_PAYLOAD)
				break;
			if (v[i].iov_len > total - off)
				v[i].iov_len = total - off;
			off += copy_in(s, off, (__u64)v[i].iov_base, v[i].iov_len, cap);
		}
	}
	return off;
}

/* The losses the socket's earlier events left behind ride on this event. */
static __always_inline void take_losses(struct net_event *e)
{
	__u64 key = e->ino;
	__u32 *n = &lost_slots[key & (LOST_SLOTS - 1)];
	struct net_lost *l;

	if (!*n)
		return;
	l = bpf_map_lookup_elem(&net_lost, &key);
	if (!l)
		return;
	e->lost_events += l->events;
	e->lost_read_bytes += l->read_bytes;
	e->lost_write_bytes += l->write_bytes;
	if (!bpf_map_delete_elem(&net_lost, &key))
		__sync_fetch_and_add(n, -1);
}

/* The event could not be sent: what it carried (and its own losses) waits for the next one. */
static __always_inline void keep_losses(const struct net_event *e)
{
	__u64 key = e->ino, moved = e->ret > 0 ? (__u64)e->ret : 0;
	struct net_lost l = { .events = e->lost_events + 1, .read_bytes = e->lost_read_bytes,
			      .write_bytes = e->lost_write_bytes };
	__u32 *n = &lost_slots[key & (LOST_SLOTS - 1)];
	struct net_lost *old;

	if (e->op == NET_OP_READ || e->op == NET_OP_TLS_READ)
		l.read_bytes += moved;
	else if (e->op == NET_OP_WRITE || e->op == NET_OP_TLS_WRITE)
		l.write_bytes += moved;
	__sync_fetch_and_add(n, 1);
	if (!bpf_map_update_elem(&net_lost, &key, &l, BPF_NOEXIST))
		return;
	__sync_fetch_and_add(n, -1);
	/* Losses of the socket wait already (its call on another CPU lost too): these add to them. */
	old = bpf_map_lookup_elem(&net_lost, &key);
	if (old) {
		__sync_fetch_and_add(&old->events, l.events);
		__sync_fetch_and_add(&old->read_bytes, l.read_bytes);
		__sync_fetch_and_add(&old->write_bytes, l.write_bytes);
		return;
	}
	count(NET_CNT_LOST_FULL);
}

/*
 * The consumer position of the last wake-up asked for.  While the collector
 * has not yet run after one, every event above wake_bytes would ask again,
 * and each ask is an interrupt the CPU sends itself (a VM exit under
 * virtualisation): one wake-up per consumer position is enough, as the
 * ring's poll reports data whenever the collector next waits.
 */
__u64 woken_at = ~0ULL;

/*
 * A CPU looks at the ring's fill only after writing a sixteenth of
 * wake_bytes since its last look: the look is two helper calls reading
 * positions the collector's CPU writes, a cost per event otherwise.  The
 * collector is then woken at most that much per CPU later than the
 * threshold; its timer drains the ring meanwhile.
 */
static __always_inline __u64 wake_flag(struct scratch *s, __u64 size)
{
	__u64 cons;

	s->unlooked += size;
	if (s->unlooked < wake_bytes / 16)
		return BPF_RB_NO_WAKEUP;
	s->unlooked = 0;
	if (bpf_ringbuf_query(&net_events, BPF_RB_AVAIL_DATA) < wake_bytes)
		return BPF_RB_NO_WAKEUP;
	cons = bpf_ringbuf_query(&net_events, BPF_RB_CONS_POS);
	if (cons == woken_at)
		return BPF_RB_NO_WAKEUP;
	woken_at = cons;
	return BPF_RB_FORCE_WAKEUP;
}

static __always_inline void emit_now(struct scratch *s, __u32 payload, const bool now)
{
	if (payload > NET_MAX_PAYLOAD)
		payload = NET_MAX_PAYLOAD;
	s->e.payload = payload;
	if ((s->e.op == NET_OP_READ || s->e.op == NET_OP_WRITE) && s->e.ret > 0 && (__u64)s->e.ret > payload) {
		s->e.flags |= NET_F_TRUNCATED;
		count(s->e.flags & NET_F_CAPPED ? NET_CNT_CAPPED : NET_CNT_TRUNCATED);
	} else {
		s->e.flags &= ~(NET_F_CAPPED | NET_F_CUT_FIRST);
	}
	take_losses(&s->e);
	barrier_var(payload);
	payload &= 2 * NET_MAX_PAYLOAD - 1;
	if (!bpf_ringbuf_output(&net_events, s, sizeof(s->e) + payload,
				now || (s->e.flags & NET_F_CUT_FIRST) ? BPF_RB_FORCE_WAKEUP :
				wake_flag(s, sizeof(s->e) + payload))) {
		count(NET_CNT_EVENTS);
		return;
	}
	/* No room for the data: sizes and timing still go, the data becomes a gap. */
	if (payload) {
		s->e.payload = 0;
		s->e.flags |= NET_F_NO_BUDGET | NET_F_TRUNCATED;
		if (!bpf_ringbuf_output(&net_events, s, sizeof(s->e), BPF_RB_FORCE_WAKEUP)) {
			count(NET_CNT_NO_BUDGET);
			count(NET_CNT_EVENTS);
			return;
		}
	}
	count(NET_CNT_RINGBUF_FULL);
	keep_losses(&s->e);
}

static __always_inline void emit(struct scratch *s, __u32 payload)
{
	emit_now(s, payload, false);
}
