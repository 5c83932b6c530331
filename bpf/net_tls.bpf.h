/*
 * Part of net.bpf.c: TLS.  A library call (SSL_read, Go's (*Conn).Read, ...) is kept from its
 * entry to its return by thread (OpenSSL) or by goroutine (Go: R14 holds the
 * g; a goroutine moves between threads while it waits), with the socket a
 * syscall under the call used: that is how plaintext is tied to its socket
 * without reading the library's structures (whose layout changes between
 * versions).  The library object (SSL *, *tls.Conn) remembers its socket
 * for calls that find their data already decrypted and make no syscall.
 */
struct tls_key {
	__u64 id;       /* pid_tgid (OpenSSL) or the goroutine's g (Go) */
	__u32 tgid;
	__u32 go;
};
struct tls_call {
	__u64 ts;
	__u64 buf;
	__u64 len;
	__u64 outlen;   /* _ex functions: where the library writes the length */
	__u64 obj;      /* SSL * or *tls.Conn */
	__u64 ino;
	__u64 sk;       /* set by a syscall under the call, 0 until then */
	__s32 fd;
	__u16 fn;
	__u16 emitted;  /* Go's Write: sent at its first syscall */
	__u32 cap;
	__u32 root;     /* net_target.root */
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct tls_key);
	__type(value, struct tls_call);
	__uint(max_entries, 8192);
} tls_calls SEC(".maps");

struct tls_obj_key {
	__u64 obj;
	__u32 tgid;
	__u32 pad;
};
struct tls_sock {
	__u64 ino;
	__u64 sk;
	__s32 fd;
	__u32 pad;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct tls_obj_key);
	__type(value, struct tls_sock);
	__uint(max_entries, 16384);
} tls_objs SEC(".maps");

/* Set by the collector while any TLS probe is attached: until then no socket call looks for a TLS call. */
__u32 tls_on = 0;

/*
 * TLS calls open per process, hashed by tgid: a socket call looks for the
 * TLS call it is under only while its slot is not 0.  A process that links
 * a TLS library but moves plain bytes (nginx on a plain port) then pays no
 * lookup per call (two misses: its thread's key and its goroutine's).  An
 * entry that goes in adds one, one that is deleted takes one away; one
 * written over or evicted is never taken away, so a slot is never below
 * its open calls: a stale count costs lookups, never a missed TLS call.
 * The adds' results go unused (a plain atomic add: 5.10 has no fetch).
 */
#define TLS_OPEN_SLOTS 4096
__u32 tls_open[TLS_OPEN_SLOTS];

/* The TLS call the current thread (or its goroutine) is in, if any. */
static __always_inline struct tls_call *tls_current(struct pt_regs *regs, const bool btf)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct tls_key k = { .id = id, .tgid = id >> 32 };
	struct tls_call *tc = bpf_map_lookup_elem(&tls_calls, &k);

	if (tc)
		return tc;
#if defined(__TARGET_ARCH_x86)
	k.id = btf ? regs->r14 : BPF_CORE_READ(regs, r14);
	k.go = 1;
	return bpf_map_lookup_elem(&tls_calls, &k);
#else
	return NULL;
#endif
}

/* The plaintext of a TLS call, tied to the socket the call (or its object) used. */
static __always_inline void tls_emit(struct tls_call *tc, __u32 tgid, long ret)
{
	struct tls_obj_key ok = { .obj = tc->obj, .tgid = tgid };
	struct tls_sock *ts;
	struct scratch *s;
	__u32 got = 0;

	s = percpu_scratch(&net_scratch);
	if (!s)
		return;
	__builtin_memset(&s->e, 0, sizeof(s->e));
	if (!tc->sk && (ts = bpf_map_lookup_elem(&tls_objs, &ok)) != NULL) {
		tc->sk = ts->sk;
		tc->ino = ts->ino;
		tc->fd = ts->fd;
	}
	if (!tc->sk || fill_sock(&s->e, (struct sock *)tc->sk, false)) {
		__builtin_memset(&s->e, 0, sizeof(s->e));
		tc->fd = -1;
		tc->ino = 0;
		count(NET_CNT_TLS_UNBOUND);
	}
	s->e.ts_ns = tc->ts;
	s->e.dur_ns = bpf_ktime_get_ns() - tc->ts;
	s->e.tgid = tgid;
	s->e.tid = (__u32)bpf_get_current_pid_tgid();
	s->e.fd = tc->fd;
	s->e.ino = tc->ino;
	s->e.op = tc->fn == NET_TLS_SSL_WRITE || tc->fn == NET_TLS_SSL_WRITE_EX || tc->fn == NET_TLS_GO_WRITE
			  ? NET_OP_TLS_WRITE : NET_OP_TLS_READ;
	s->e.syscall = tc->fn;
	s->e.ret = ret;
	s->e.tls = tc->obj;
	s->e.root = tc->root;
	bpf_get_current_comm(s->e.comm, sizeof(s->e.comm));
	if (ret > 0)
		got = copy_in(s, 0, tc->buf, (__u64)ret, tc->cap);
	emit(s, got);
}

/*
 * Whether a socket call of process tgid may be under a TLS call, asked
 * before tls_wire(): at the call site, so that its "no" joins the path
 * where no TLS probe is attached (the verifier checks that path once).
 */
static __always_inline bool tls_may_wrap(__u32 tgid)
{
	return tls_on && tls_open[tgid & (TLS_OPEN_SLOTS - 1)];
}

/* A socket call under a TLS call: its socket is the TLS call's (and its object's). */
static __always_inline bool tls_wire(struct pt_regs *regs, int fd, __u64 ino, struct sock *sk, const bool btf)
{
	struct tls_call *tc = tls_current(regs, btf);
	struct tls_obj_key ok;
	struct tls_sock ts;

	if (!tc)
		return false;
	if (tc->sk != (__u64)sk) {
		tc->fd = fd;
		tc->ino = ino;
		tc->sk = (__u64)sk;
		ok.obj = tc->obj;
		ok.tgid = bpf_get_current_pid_tgid() >> 32;
		ok.pad = 0;
		ts.ino = ino;
		ts.sk = (__u64)sk;
		ts.fd = fd;
		ts.pad = 0;
		bpf_map_update_elem(&tls_objs, &ok, &ts, BPF_ANY);
	}
	/*
	 * Go's Write is sent here, before its data leaves: the answer may come back
	 * (and a reader goroutine's Read return, on another thread) before this
	 * goroutine reaches Write's RET.  Go's Write writes all of b or fails.
	 */
	if (tc->fn == NET_TLS_GO_WRITE && !tc->emitted) {
		tc->emitted = 1;
		tls_emit(tc, bpf_get_current_pid_tgid() >> 32, (long)tc->len);
	}
	count(NET_CNT_TLS_WIRE);
	return true;
}

/*
 * Every TLS probe point: the cookie (NET_TLS_COOKIE) says which function and
 * which side.  Attached by the collector as uprobe.multi (entries, Go's RET
 * instructions) and uretprobe.multi (OpenSSL's returns) links, host-wide per
 * library file: a library shared by many processes is probed once, and the
 * target table decides, as for syscalls, whose calls are kept.
 */
SEC("uprobe")
int net_tls(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx), id = bpf_get_current_pid_tgid();
	__u32 fn = cookie & 0xff, kind = (cookie >> 8) & 0xff, tgid = id >> 32;
	bool go = fn == NET_TLS_GO_WRITE || fn == NET_TLS_GO_READ;
	struct tls_key k = { .id = id, .tgid = tgid };
	struct net_target *t;
	struct tls_call *tc;
	long ret;

	if (!fn || fn > NET_TLS_FN_MAX)
		return 0;
	t = target_of(tgid);
	if (!t)
		return 0;
#if defined(__TARGET_ARCH_x86)
	if (go) {
		k.id = ctx->r14;
		k.go = 1;
	}
#else
	if (go)
		return 0;
#endif
	if (kind == NET_TLS_P_ENTRY || kind == NET_TLS_P_CALL) {
		struct tls_call c = {};

		c.ts = bpf_ktime_get_ns();
		c.fn = fn;
		c.cap = t->tasks > t->prefix_tasks ? NET_MAX_PAYLOAD : NET_PREFIX_PAYLOAD;
		c.fd = -1;
		c.root = t->root;
#if defined(__TARGET_ARCH_x86)
		if (go) {
			/* Go's register ABI: receiver in RAX, the slice b in RBX (ptr), RCX (len), RDI (cap). */
			c.obj = ctx->ax;
			c.buf = ctx->bx;
			c.len = ctx->cx;
		} else
#endif
		{
			c.obj = PT_REGS_PARM1(ctx);
			c.buf = PT_REGS_PARM2(ctx);
			c.len = PT_REGS_PARM3(ctx);
			if (fn == NET_TLS_SSL_WRITE_EX || fn == NET_TLS_SSL_READ_EX || kind == NET_TLS_P_CALL)
				c.outlen = PT_REGS_PARM4(ctx);
		}
		count(NET_CNT_TLS_CALLS);
		if (bpf_map_update_elem(&tls_calls, &k, &c, BPF_ANY))
			count(NET_CNT_TLS_INFLIGHT_FULL);
		else
			__sync_fetch_and_add(&tls_open[tgid & (TLS_OPEN_SLOTS - 1)], 1);
		return 0;
	}
	tc = bpf_map_lookup_elem(&tls_calls, &k);
	if (!tc) {
		count(NET_CNT_TLS_NO_ENTRY);
		return 0;
	}
#if defined(__TARGET_ARCH_x86)
	if (go) {
		/* Results: n in RAX, the error interface in RBX (type) and RCX (data). */
		ret = (long)ctx->ax;
		if (ret <= 0 && ctx->bx)
			ret = -1;
	} else
#endif
	{
		/* int functions: only the low 32 bits of the return register are defined. */
		ret = (int)PT_REGS_RC(ctx);
		if (fn == NET_TLS_SSL_WRITE_EX || fn == NET_TLS_SSL_READ_EX || kind == NET_TLS_P_AFTER_CALL) {
			__u64 n = 0;

			if (ret == 1 && tc->outlen && !bpf_probe_read_user(&n, sizeof(n), (void *)tc->outlen))
				ret = (long)n;
			else
				ret = -1;
		}
	}
	if (ret > 0 && (__u64)ret > tc->len)
		ret = (long)tc->len;  /* never more than the buffer the caller gave */
	/* A call that moved nothing (WANT_READ of a non-blocking socket, an error) has nothing to parse. */
	if (ret > 0 && !tc->emitted)
		tls_emit(tc, tgid, ret);
	if (!bpf_map_delete_elem(&tls_calls, &k))
		__sync_fetch_and_add(&tls_open[tgid & (TLS_OPEN_SLOTS - 1)], -1);
	return 0;
}
