#include "common/ctl_client.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "bpf/ember_abi.h"
#include "common/cleanup.h"

struct ctl_client {
	int fd;
	int broken;
};

static int dial(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 10 };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A collector that stops answering must not hang the analyzer forever. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

struct ctl_client *ctl_client__connect(const char *sock_path, uint32_t shard, int ret_fds[3],
						   uint32_t *ret_nshards)
{
	struct ctl_hello h = { .shard = shard, .abi_version = EMBER_ABI_VERSION };
	struct ctl_hello_ans a;
	struct ctl_client *cc;
	unsigned nfds = 0;
	int fds[3], r;

	cc = calloc(1, sizeof(*cc));
	if (!cc)
		return NULL;
	cc->fd = dial(sock_path);
	if (cc->fd < 0) {
		r = cc->fd;
		goto fail;
	}
	r = ctl__call(cc->fd, CTL_REQ_HELLO, &h, sizeof(h), CTL_ANS_HELLO, &a, sizeof(a), fds, 3, &nfds);
	if (!r && a.err)
		r = a.err;
	if (!r && nfds != 3)
		r = -EBADMSG;
	if (r) {
		for (unsigned i = 0; i < nfds; i++)
			close(fds[i]);
		goto fail;
	}
	memcpy(ret_fds, fds, sizeof(fds));
	if (ret_nshards)
		*ret_nshards = a.nshards;
	return cc;
fail:
	ctl_client__free(cc);
	errno = -r;
	return NULL;
}

static int call(struct ctl_client *cc, uint16_t type, const void *req, uint32_t len, uint16_t ans_type,
		void *ans, uint32_t ans_len, int *fd)
{
	unsigned nfds = 0;
	int r;

	if (cc->broken)
		return -ENOTCONN;
	r = ctl__call(cc->fd, type, req, len, ans_type, ans, ans_len, fd, fd ? 1 : 0, &nfds);
	if (r == -ECONNRESET || r == -EPIPE || r == -EAGAIN || r == -EBADMSG)
		cc->broken = 1;
	if (!r && fd && !nfds)
		*fd = -1;
	return r;
}

int ctl_client__attach(struct ctl_client *cc, uint64_t task_id, uint32_t kind, const uint32_t *pids,
			     uint32_t npids, uint64_t period_ns, uint64_t min_block_ns, uint32_t flags,
			     uint32_t probes, struct ctl_attach_ans *ret)
{
	size_t len = sizeof(struct ctl_attach) + npids * sizeof(uint32_t);
	_cleanup_free_ struct ctl_attach *a = NULL;
	int r;

	if (!npids || npids > CTL_MAX_PIDS)
		return -EINVAL;
	a = calloc(1, len);
	if (!a)
		return -ENOMEM;
	a->task_id = task_id;
	a->kind = kind;
	a->npids = npids;
	a->period_ns = period_ns;
	a->min_block_ns = min_block_ns;
	a->flags = flags;
	a->probes = probes;
	memcpy(a->pids, pids, npids * sizeof(uint32_t));
	r = call(cc, CTL_REQ_ATTACH, a, len, CTL_ANS_ATTACH, ret, sizeof(*ret), NULL);
	return r ? r : ret->err;
}

int ctl_client__detach(struct ctl_client *cc, uint64_t task_id)
{
	struct ctl_detach d = { .task_id = task_id };
	struct ctl_err_ans a;
	int r = call(cc, CTL_REQ_DETACH, &d, sizeof(d), CTL_ANS_DETACH, &a, sizeof(a), NULL);
	return r ? r : a.err;
}

int ctl_client__unwind_table(struct ctl_client *cc, uint64_t key, uint32_t nrows, struct ctl_unwind_table_ans *ret)
{
	struct ctl_unwind_table t = { .key = key, .nrows = nrows };
	int r = call(cc, CTL_REQ_UNWIND_TABLE, &t, sizeof(t), CTL_ANS_UNWIND_TABLE, ret, sizeof(*ret), NULL);
	return r ? r : ret->err;
}

int ctl_client__unwind_rows(struct ctl_client *cc, uint32_t id, uint32_t first, const struct unwind_row *rows,
			    uint32_t n)
{
	_Alignas(8) char buf[sizeof(struct ctl_unwind_rows) + CTL_UNWIND_ROWS_MAX * sizeof(struct unwind_row)];
	struct ctl_unwind_rows *req = (struct ctl_unwind_rows *)buf;
	struct ctl_err_ans a;
	uint32_t len = sizeof(*req) + n * sizeof(struct unwind_row);
	int r;

	if (!n || n > CTL_UNWIND_ROWS_MAX)
		return -EINVAL;
	*req = (struct ctl_unwind_rows){ .id = id, .first = first, .n = n };
	memcpy(req->rows, rows, n * sizeof(struct unwind_row));
	r = call(cc, CTL_REQ_UNWIND_ROWS, req, len, CTL_ANS_UNWIND_ROWS, &a, sizeof(a), NULL);
	return r ? r : a.err;
}

int ctl_client__unwind_proc(struct ctl_client *cc, const struct ctl_unwind_proc *p)
{
	struct ctl_err_ans a;
	int r = call(cc, CTL_REQ_UNWIND_PROC, p, sizeof(*p), CTL_ANS_UNWIND_PROC, &a, sizeof(a), NULL);
	return r ? r : a.err;
}

int ctl_client__py_proc(struct ctl_client *cc, const struct ctl_py_proc *r)
{
	struct ctl_err_ans a;
	int e = call(cc, CTL_REQ_PY_PROC, r, sizeof(*r), CTL_ANS_PY_PROC, &a, sizeof(a), NULL);
	return e ? e : a.err;
}

int ctl_client__java_attach(struct ctl_client *cc, uint32_t pid)
{
	struct ctl_java_attach r = { .pid = pid };
	struct ctl_err_ans a;
	int e = call(cc, CTL_REQ_JAVA_ATTACH, &r, sizeof(r), CTL_ANS_JAVA_ATTACH, &a, sizeof(a), NULL);
	return e ? e : a.err;
}

int ctl_client__tls_attach(struct ctl_client *cc, const struct ctl_tls_attach *r)
{
	struct ctl_err_ans a;
	int e = call(cc, CTL_REQ_TLS_ATTACH, r, sizeof(*r), CTL_ANS_TLS_ATTACH, &a, sizeof(a), NULL);
	return e ? e : a.err;
}

int ctl_client__net_caps(struct ctl_client *cc, const struct ctl_net_cap *caps, uint32_t n, uint32_t *written)
{
	_Alignas(8) char buf[sizeof(struct ctl_net_caps) + CTL_NET_CAPS_MAX * sizeof(struct ctl_net_cap)];
	struct ctl_net_caps *req = (struct ctl_net_caps *)buf;
	struct ctl_net_caps_ans a;
	int r;

	if (!n || n > CTL_NET_CAPS_MAX)
		return -EINVAL;
	*req = (struct ctl_net_caps){ .n = n };
	memcpy(req->caps, caps, n * sizeof(*caps));
	r = call(cc, CTL_REQ_NET_CAPS, req, (uint32_t)(sizeof(*req) + n * sizeof(*caps)), CTL_ANS_NET_CAPS, &a, sizeof(a), NULL);
	if (r)
		return r;
	if (written)
		*written = a.written;
	return a.err;
}

int ctl_client__start(struct ctl_client *cc, uint64_t task_id)
{
	struct ctl_detach d = { .task_id = task_id };
	struct ctl_err_ans a;
	int r = call(cc, CTL_REQ_START, &d, sizeof(d), CTL_ANS_START, &a, sizeof(a), NULL);
	return r ? r : a.err;
}

static int open_call(struct ctl_client *cc, uint16_t type, const void *req, uint32_t len)
{
	struct ctl_err_ans a;
	int fd = -1;
	int r = call(cc, type, req, len, type + 1, &a, sizeof(a), &fd);

	if (r)
		return r;
	if (a.err) {
		if (fd >= 0)
			close(fd);
		return a.err;
	}
	return fd >= 0 ? fd : -EBADMSG;
}

int ctl_client__open_maps(struct ctl_client *cc, uint32_t pid)
{
	struct ctl_open_maps r = { .pid = pid };
	return open_call(cc, CTL_REQ_OPEN_MAPS, &r, sizeof(r));
}

int ctl_client__open_file(struct ctl_client *cc, uint32_t pid, uint64_t start, uint64_t end)
{
	struct ctl_open_file r = { .pid = pid, .start = start, .end = end };
	return open_call(cc, CTL_REQ_OPEN_FILE, &r, sizeof(r));
}

int ctl_client__open_kallsyms(struct ctl_client *cc)
{
	return open_call(cc, CTL_REQ_OPEN_KALLSYMS, NULL, 0);
}

int ctl_client__open_perf_map(struct ctl_client *cc, uint32_t pid)
{
	struct ctl_open_perf_map r = { .pid = pid };
	return open_call(cc, CTL_REQ_OPEN_PERF_MAP, &r, sizeof(r));
}

int ctl_client__open_debug_build_id(struct ctl_client *cc, uint32_t pid, const uint8_t *build_id,
					  size_t len)
{
	struct ctl_open_debug_build_id r = { .pid = pid, .len = (uint32_t)len };

	if (!build_id || len < 2 || len > CTL_MAX_BUILD_ID)
		return -EINVAL;
	memcpy(r.build_id, build_id, len);
	return open_call(cc, CTL_REQ_OPEN_DEBUG_BUILD_ID, &r, sizeof(r));
}

int ctl_client__open_debuglink(struct ctl_client *cc, uint32_t pid, uint64_t start, uint64_t end,
				     const char *name)
{
	struct ctl_open_debuglink r = { .pid = pid, .start = start, .end = end };

	if (!name || strnlen(name, sizeof(r.name)) >= sizeof(r.name))
		return -EINVAL;
	memcpy(r.name, name, strlen(name) + 1);
	return open_call(cc, CTL_REQ_OPEN_DEBUGLINK, &r, sizeof(r));
}

int ctl_client__stats(struct ctl_client *cc, struct ctl_stats_ans *ret)
{
	int r = call(cc, CTL_REQ_STATS, NULL, 0, CTL_ANS_STATS, ret, sizeof(*ret), NULL);
	return r ? r : ret->err;
}

int ctl_client__broken(const struct ctl_client *cc) { return cc->broken; }

struct ctl_client *ctl_client__free(struct ctl_client *cc)
{
	if (!cc)
		return NULL;
	if (cc->fd >= 0)
		close(cc->fd);
	free(cc);
	return NULL;
}

int ctl_client__query_stats(const char *sock_path, struct ctl_stats_ans *ret)
{
	_cleanup_close_ int fd = dial(sock_path);
	int r;

	if (fd < 0)
		return fd;
	r = ctl__call(fd, CTL_REQ_STATS, NULL, 0, CTL_ANS_STATS, ret, sizeof(*ret), NULL, 0, NULL);
	return r ? r : ret->err;
}
