#include "collector/tls_links.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <sys/stat.h>

#define MAX_OWNERS 64

struct tls_file {
	int used;
	dev_t dev;
	ino_t ino;
	uint32_t pid;           /* 0: every process running the file (TLS_LINK_PROGRAM) */
	int links[2];           /* entries and RET instructions; returns (uretprobe) */
	uint32_t npoints;
	struct ctl_tls_point *pts;     /* the points as verified, with the file's size and times: */
	struct timespec mtime, ctime;  /* the same points in the same file need no second check */
	off_t size;
	uint64_t owners[MAX_OWNERS];
	unsigned nowners;
};

struct tls_links {
	struct bpf_net *net;
	unsigned max;
	struct tls_file *files;
	uint64_t refused;
	uint64_t refused_why[TLS_VERIFY_WHY_MAX];
	uint64_t verify_skipped, merged, gone;
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
	free(f->pts);
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

static void merge_process_links(struct tls_links *l, struct tls_file *prog);

static bool same_file(const struct tls_file *f, const struct stat *st)
{
	return f->used && f->dev == st->st_dev && f->ino == st->st_ino && f->size == st->st_size &&
	       f->mtime.tv_sec == st->st_mtim.tv_sec && f->mtime.tv_nsec == st->st_mtim.tv_nsec &&
	       f->ctime.tv_sec == st->st_ctim.tv_sec && f->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

/* These points in this file passed tls_verify already (for another process): a check costs
 * milliseconds in a large executable (node: 35 ms), and a process that just started is
 * unprobed until it ends. */
static bool verified_before(const struct tls_links *l, const struct stat *st, const struct ctl_tls_point *pts,
			    uint32_t n)
{
	for (unsigned i = 0; i < l->max; i++)
		if (same_file(&l->files[i], st) && l->files[i].npoints == n && !memcmp(l->files[i].pts, pts, n * sizeof(*pts)))
			return true;
	return false;
}

int tls_links__add(struct tls_links *l, uint64_t owner, int fd, uint32_t pid, enum tls_link_scope scope,
		   const struct ctl_tls_point *pts, uint32_t n, struct tls_verify_verdict *ret_verdict)
{
	uint32_t link_pid = scope == TLS_LINK_PROGRAM ? 0 : pid;
	struct ctl_tls_point *copy;
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
	/* Probed in this process already, by its own link or by its program's (every process
	 * running the file): one more owner, nothing attached twice. */
	for (unsigned i = 0; i < l->max; i++) {
		struct tls_file *g = &l->files[i];

		if (g->used && g->dev == st.st_dev && g->ino == st.st_ino && (g->pid == link_pid || !g->pid)) {
			err = add_owner(g, owner);
			l->refused += err != 0;
			return err;
		}
		if (!g->used && !f)
			f = g;
	}
	/* Every point where its cookie says, in the file as the broker opened it (collector/tls_verify.h). */
	if (!verified_before(l, &st, pts, n)) {
		err = tls_verify__points(fd, pts, n, &v);
		if (ret_verdict)
			*ret_verdict = v;
		if (err) {
			l->refused++;
			if (err == -EINVAL && v.why < TLS_VERIFY_WHY_MAX)
				l->refused_why[v.why]++;
			return err;
		}
	} else {
		l->verify_skipped++;
	}
	/* Full: the probes of processes that exited go first (a forking server's short-lived children). */
	for (unsigned i = 0; !f && i < l->max; i++)
		if (l->files[i].pid && kill((pid_t)l->files[i].pid, 0) && errno == ESRCH) {
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
	copy = malloc(n * sizeof(*pts));
	if (!copy)
		return -ENOMEM;
	memcpy(copy, pts, n * sizeof(*pts));
	/* The file as the broker opened it, not a path the analyzer named. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	f->links[0] = f->links[1] = -1;
	for (int k = 0; k < 2; k++) {
		if (!cnt[k])
			continue;
		f->links[k] = bpf_net__tls_link(l->net, path, offs[k], cookies[k], cnt[k], k == 1, link_pid);
		if (f->links[k] < 0) {
			err = f->links[k];
			f->links[k] = -1;
			if (k == 1 && f->links[0] >= 0)
				close(f->links[0]);
			memset(f, 0, sizeof(*f));
			free(copy);
			if (err == -ESRCH)
				l->gone++;
			else
				l->refused++;
			return err;
		}
	}
	f->used = 1;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->size = st.st_size;
	f->mtime = st.st_mtim;
	f->ctime = st.st_ctim;
	f->pid = link_pid;
	f->npoints = n;
	f->pts = copy;
	f->owners[0] = owner;
	f->nowners = 1;
	if (!link_pid)
		merge_process_links(l, f);
	bpf_net__tls_on(l->net, true);
	return 0;
}

/* The program's link covers every process running the file: the processes' own links on it
 * would report each call twice, so they go, their owners with the program's. */
static void merge_process_links(struct tls_links *l, struct tls_file *prog)
{
	for (unsigned i = 0; i < l->max; i++) {
		struct tls_file *g = &l->files[i];

		if (g == prog || !g->used || !g->pid || g->dev != prog->dev || g->ino != prog->ino)
			continue;
		for (unsigned j = 0; j < g->nowners; j++)
			if (add_owner(prog, g->owners[j]))
				l->refused++;   /* that task's interest is not kept: the probe may go before it ends */
		l->merged++;
		for (int k = 0; k < 2; k++)
			if (g->links[k] >= 0)
				close(g->links[k]);
		free(g->pts);
		memset(g, 0, sizeof(*g));
	}
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
	ret->verify_skipped = l->verify_skipped;
	ret->merged = l->merged;
	ret->gone = l->gone;
	for (unsigned i = 0; i < l->max; i++)
		if (l->files[i].used) {
			ret->files++;
			ret->programs += !l->files[i].pid;
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
