#include "collector/tls_links.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <sys/stat.h>

#define MAX_OWNERS 16

struct tls_file {
	int used;
	dev_t dev;
	ino_t ino;
	uint32_t pid;
	int links[2];           /* entries and RET instructions; returns (uretprobe) */
	uint32_t npoints;
	uint64_t owners[MAX_OWNERS];
	unsigned nowners;
};

struct tls_links {
	struct bpf_net *net;
	unsigned max;
	struct tls_file *files;
	uint64_t refused;
	uint64_t refused_why[TLS_VERIFY_WHY_MAX];
};

struct tls_links *tls_links__new(struct bpf_net *net, unsigned max)
{
	struct tls_links *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->net = net;
	l->max = max ? max : 1024;
	l->files = calloc(l->max, sizeof(*l->files));
	if (!l->files) {
		free(l);
		errno = ENOMEM;
		return NULL;
	}
	return l;
}

static void file_unprobe(struct tls_links *l, struct tls_file *f)
{
	for (int i = 0; i < 2; i++)
		if (f->links[i] >= 0)
			close(f->links[i]);
	memset(f, 0, sizeof(*f));
	for (unsigned i = 0; i < l->max; i++)
		if (l->files[i].used)
			return;
	bpf_net__tls_on(l->net, false);
}

static int add_owner(struct tls_file *f, uint64_t owner)
{
	for (unsigned i = 0; i < f->nowners; i++)
		if (f->owners[i] == owner)
			return 0;
	if (f->nowners == MAX_OWNERS)
		return -ENOSPC;
	f->owners[f->nowners++] = owner;
	return 0;
}

int tls_links__add(struct tls_links *l, uint64_t owner, int fd, uint32_t pid, const struct ctl_tls_point *pts,
		   uint32_t n, struct tls_verify_verdict *ret_verdict)
{
	uint64_t offs[2][CTL_TLS_MAX_POINTS], cookies[2][CTL_TLS_MAX_POINTS];
	uint32_t cnt[2] = { 0, 0 };
	struct tls_verify_verdict v = { TLS_VERIFY_OK, 0 };
	struct tls_file *f = NULL;
	char path[64];
	struct stat st;
	int err;

	if (ret_verdict)
		*ret_verdict = v;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !n || n > CTL_TLS_MAX_POINTS) {
		l->refused++;
		return -EINVAL;
	}
	for (unsigned i = 0; i < l->max; i++) {
		struct tls_file *g = &l->files[i];

		if (g->used && g->dev == st.st_dev && g->ino == st.st_ino && g->pid == pid) {
			err = add_owner(g, owner);
			l->refused += err != 0;
			return err;
		}
		if (!g->used && !f)
			f = g;
	}
	/* Every point where its cookie says, in the file as the broker opened it (collector/tls_verify.h). */
	err = tls_verify__points(fd, pts, n, &v);
	if (ret_verdict)
		*ret_verdict = v;
	if (err) {
		l->refused++;
		if (err == -EINVAL && v.why < TLS_VERIFY_WHY_MAX)
			l->refused_why[v.why]++;
		return err;
	}
	/* Full: the probes of processes that exited go first (a forking server's short-lived children). */
	for (unsigned i = 0; !f && i < l->max; i++)
		if (kill((pid_t)l->files[i].pid, 0) && errno == ESRCH) {
			file_unprobe(l, &l->files[i]);
			f = &l->files[i];
		}
	if (!f) {
		l->refused++;
		return -ENOSPC;
	}
	for (uint32_t i = 0; i < n; i++) {
		int ret = ((pts[i].cookie >> 8) & 0xff) == NET_TLS_P_RETURN;

		offs[ret][cnt[ret]] = pts[i].off;
		cookies[ret][cnt[ret]++] = pts[i].cookie;
	}
	if (!cnt[0]) {
		l->refused++;
		return -EINVAL;  /* returns without entries would never find a call */
	}
	/* The file as the broker opened it, not a path the analyzer named. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	f->links[0] = f->links[1] = -1;
	for (int k = 0; k < 2; k++) {
		if (!cnt[k])
			continue;
		f->links[k] = bpf_net__tls_link(l->net, path, offs[k], cookies[k], cnt[k], k == 1, pid);
		if (f->links[k] < 0) {
			err = f->links[k];
			f->links[k] = -1;
			if (k == 1 && f->links[0] >= 0)
				close(f->links[0]);
			memset(f, 0, sizeof(*f));
			l->refused++;
			return err;
		}
	}
	f->used = 1;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->pid = pid;
	f->npoints = n;
	f->owners[0] = owner;
	f->nowners = 1;
	bpf_net__tls_on(l->net, true);
	return 0;
}

void tls_links__drop_owner(struct tls_links *l, uint64_t owner)
{
	for (unsigned i = 0; i < l->max; i++) {
		struct tls_file *f = &l->files[i];

		if (!f->used)
			continue;
		for (unsigned j = 0; j < f->nowners; j++)
			if (f->owners[j] == owner) {
				f->owners[j] = f->owners[--f->nowners];
				break;
			}
		if (!f->nowners)
			file_unprobe(l, f);
	}
}

void tls_links__stats(const struct tls_links *l, struct tls_links_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->refused = l->refused;
	ret->refused_cookie = l->refused_why[TLS_VERIFY_COOKIE];
	ret->refused_file = l->refused_why[TLS_VERIFY_FILE];
	ret->refused_segment = l->refused_why[TLS_VERIFY_SEGMENT];
	ret->refused_function = l->refused_why[TLS_VERIFY_FUNCTION];
	ret->refused_outside = l->refused_why[TLS_VERIFY_OUTSIDE];
	ret->refused_boundary = l->refused_why[TLS_VERIFY_BOUNDARY];
	ret->refused_insn = l->refused_why[TLS_VERIFY_INSN];
	for (unsigned i = 0; i < l->max; i++)
		if (l->files[i].used) {
			ret->files++;
			ret->points += l->files[i].npoints;
		}
}

struct tls_links *tls_links__free(struct tls_links *l)
{
	if (!l)
		return NULL;
	for (unsigned i = 0; i < l->max; i++)
		if (l->files[i].used)
			file_unprobe(l, &l->files[i]);
	free(l->files);
	free(l);
	return NULL;
}
