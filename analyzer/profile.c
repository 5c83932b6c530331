#include "analyzer/profile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/python/py_stack.h"
#include "bpf/ember_abi.h"
#include "bpf/py_abi.h"
#include "common/cgroup_id.h"
#include "common/cleanup.h"
#include "common/timeutil.h"

/* A window's stacks are held until its end: this caps one task's memory. */
#define MAX_SAMPLES_PER_WINDOW 65536

struct window {
	char task_id[TASK_ID_LEN];
	uint32_t kind;
	Ember__StackSample **v;
	size_t n, cap;
	uint64_t samples_total, stacks_total;
	uint64_t start_ns;
};

/* A process's container and pod (REST flame tasks' [Con]/[Pod] frames), read again after CG_TTL_MS. */
#define CG_CACHE 64
#define CG_TTL_MS 30000
struct cg_entry {
	uint32_t pid;
	uint64_t read_ms;
	char container[CGROUP_CONTAINER_ID_LEN + 1], pod[CGROUP_POD_ID_MAX];
};

struct profile_builder {
	struct symbolizer *sym;
	struct publisher *pub;
	struct task_mgr *tm;
	unsigned max;
	struct window *w;
	uint64_t st[PS_MAX];
	struct cg_entry cg[CG_CACHE];
	const struct py_names *py;                           /* borrowed */
	struct py_stack_frame frames[EMBER_MAX_STACK_DEPTH]; /* one stack's, while it is added */
};

static const struct cg_entry *cgroup_of(struct profile_builder *pb, uint32_t pid)
{
	struct cg_entry *e = &pb->cg[pid % CG_CACHE];
	uint64_t now = timeutil__mono_ms();
	char path[64], text[4096];
	ssize_t n = -1;
	int fd;

	if (e->pid == pid && now - e->read_ms < CG_TTL_MS)
		return e;
	e->pid = pid;
	e->read_ms = now;
	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, text, sizeof(text));
		close(fd);
	}
	(void)cgroup_id__parse(text, n > 0 ? (size_t)n : 0, e->container, e->pod);
	return e;
}

const struct counter_def profile_counters[PS_MAX] = {
	[PS_STACKS] = { .name = "analyzer_stacks" },
	[PS_STACKS_NO_TASK] = { .name = "analyzer_stacks_without_task" },
	[PS_WINDOW_CAP_DROPS] = { .name = "analyzer_window_cap_drops" },
	[PS_FRAMES] = { .name = "frames_symbolized" },
	[PS_FRAMES_UNKNOWN] = { .name = "frames_unknown" },
	[PS_TRACING_FRAMES] = { .name = "tracing_frames_removed" },
	[PS_PY_FRAMES] = { .name = "python_frames" },
	[PS_PY_UNNAMED] = { .name = "python_frames_unnamed" },
	[PS_PY_UNPLACED] = { .name = "python_frames_unplaced" },
	[PS_PY_NAMES_BAD] = { .name = "python_name_records_bad" },
};

struct profile_builder *profile__new(struct symbolizer *sym, struct publisher *pub, struct task_mgr *tm,
				     unsigned max_tasks, const struct py_names *py)
{
	struct profile_builder *pb = calloc(1, sizeof(*pb));

	if (!pb)
		return NULL;
	pb->w = calloc(max_tasks, sizeof(*pb->w));
	if (!pb->w) {
		free(pb);
		errno = ENOMEM;
		return NULL;
	}
	pb->py = py;
	pb->sym = sym;
	pb->pub = pub;
	pb->tm = tm;
	pb->max = max_tasks;
	return pb;
}

static struct window *window_of(struct profile_builder *pb, const char *id)
{
	for (unsigned i = 0; i < pb->max; i++)
		if (pb->w[i].task_id[0] && !strcmp(pb->w[i].task_id, id))
			return &pb->w[i];
	return NULL;
}

int profile__open(struct profile_builder *pb, const struct task_def *t)
{
	struct window *w = window_of(pb, t->id);

	for (unsigned i = 0; i < pb->max && !w; i++)
		if (!pb->w[i].task_id[0])
			w = &pb->w[i];
	if (!w)
		return -ENOSPC;
	free(w->v);
	memset(w, 0, sizeof(*w));
	snprintf(w->task_id, sizeof(w->task_id), "%s", t->id);
	w->kind = t->kind;
	w->start_ns = t->start_unix_ms * 1000000ull;
	return 0;
}

static void free_sample(Ember__StackSample *s)
{
	for (size_t i = 0; i < s->n_kernel_frames; i++)
		free(s->kernel_frames[i]);
	for (size_t i = 0; i < s->n_user_frames; i++)
		free(s->user_frames[i]);
	free(s->kernel_frames);
	free(s->user_frames);
	free(s->kernel_resolved);
	free(s->user_resolved);
	free(s->process_name);
	if (s->container_id != protobuf_c_empty_string)
		free(s->container_id);
	if (s->pod_id != protobuf_c_empty_string)
		free(s->pod_id);
	free(s);
}

static void publish_window(struct profile_builder *pb, struct window *w, uint64_t end_ns)
{
	const struct task_def *t = task_mgr__find(pb->tm, w->task_id);

	if (t && w->n)
		publisher__profile(pb->pub, t, w->start_ns, end_ns, w->v, w->n);
	for (size_t i = 0; i < w->n; i++)
		free_sample(w->v[i]);
	w->n = 0;
	w->start_ns = end_ns;
}

void profile__window_end(struct profile_builder *pb, uint32_t kind, uint64_t end_ns)
{
	for (unsigned i = 0; i < pb->max; i++)
		if (pb->w[i].task_id[0] && pb->w[i].kind == kind)
			publish_window(pb, &pb->w[i], end_ns);
}

void profile__close(struct profile_builder *pb, const char *task_id, uint64_t end_ns, uint64_t *samples,
		    uint64_t *stacks)
{
	struct window *w = window_of(pb, task_id);

	*samples = *stacks = 0;
	if (!w)
		return;
	publish_window(pb, w, end_ns);
	*samples = w->samples_total;
	*stacks = w->stacks_total;
	free(w->v);
	memset(w, 0, sizeof(*w));
}

static char *frame_text(struct profile_builder *pb, const struct sym_frame *f)
{
	char buf[512];

	if (sym_frame__format(f, buf, sizeof(buf)) < 0)
		snprintf(buf, sizeof(buf), "[unknown]");
	if (!f->resolved)
		pb->st[PS_FRAMES_UNKNOWN]++;
	pb->st[PS_FRAMES]++;
	return strdup(buf);
}

static char *comm_text(const char *comm)
{
	char buf[EMBER_COMM_LEN + 1];
	size_t i;

	/* comm is set by the target process: keep it printable. */
	for (i = 0; i < EMBER_COMM_LEN && comm[i]; i++)
		buf[i] = (comm[i] >= 0x20 && comm[i] < 0x7f && comm[i] != ';') ? comm[i] : '_';
	buf[i] = 0;
	return strdup(i ? buf : "[unknown]");
}

/*
 * Stacks walked from inside a BPF program start with the program and the
 * tracing glue that ran it; they are ours, not the target's.
 */
static int is_tracing_frame(const struct sym_frame *f)
{
	static const char *const prefixes[] = { "bpf_prog_", "bpf_trace_run", "__bpf_trace_", "perf_trace_",
						"trace_call_bpf", "__traceiter_", "bpf_overflow_handler",
						"__perf_event_overflow", "perf_swevent_" };
	if (!f->resolved || !f->name)
		return 0;
	for (unsigned i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (!strncmp(f->name, prefixes[i], strlen(prefixes[i])))
			return 1;
	return 0;
}

static Ember__StackSample *sample_new(const struct ember_rec_stack *h)
{
	Ember__StackSample *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	ember__stack_sample__init(s);
	s->pid = h->tgid;
	s->process_name = comm_text(h->comm);
	s->count = h->count;
	s->weight = h->weight;
	s->kernel_frames = calloc(h->nkern ? h->nkern : 1, sizeof(char *));
	s->user_frames = calloc(h->nuser ? h->nuser : 1, sizeof(char *));
	s->kernel_resolved = calloc(h->nkern ? h->nkern : 1, sizeof(protobuf_c_boolean));
	s->user_resolved = calloc(h->nuser ? h->nuser : 1, sizeof(protobuf_c_boolean));
	if (!s->process_name || !s->kernel_frames || !s->user_frames || !s->kernel_resolved || !s->user_resolved) {
		free_sample(s);
		return NULL;
	}
	return s;
}

/*
 * Symbolizes n addresses into s's kernel or user frames; kernel: tracing
 * frames first are dropped.  Every address but the first is a return
 * address: it is looked up at ip - 1, inside the call, since the byte after
 * a call to a noreturn function that ends its caller is the next function.
 */
/*
 * User ips, Python frames in their place (analyzer/python/py_stack.h).
 * java_only: a stack holding JIT frames named by the perf map (a JVM with
 * ember's agent) keeps those alone, as gala-gopher's JFR stacks hold Java
 * methods only; true is returned then, and the kernel frames go too.
 */
static bool add_user_frames(struct profile_builder *pb, Ember__StackSample *s, uint32_t tgid, const uint64_t *ips,
			    unsigned n, bool java_only)
{
	uint64_t st[PYS_MAX] = { 0 };
	int nf = py_stack__resolve(pb->sym, pb->py, tgid, ips, n, pb->frames, st);
	bool jit = false;

	for (int i = 0; java_only && i < nf && !jit; i++)
		jit = pb->frames[i].jit;
	if (jit) {
		int k = 0;
		for (int i = 0; i < nf; i++)
			if (pb->frames[i].jit)
				pb->frames[k++] = pb->frames[i];
		nf = k;
	}

	/* The arrays hold n frames; a stack with inlined JIT methods has more. */
	if (nf > (int)n) {
		char **fr = realloc(s->user_frames, (size_t)nf * sizeof(*fr));
		protobuf_c_boolean *rs;

		if (fr)
			s->user_frames = fr;
		rs = fr ? realloc(s->user_resolved, (size_t)nf * sizeof(*rs)) : NULL;
		if (rs)
			s->user_resolved = rs;
		else
			nf = (int)n;   /* the innermost n, as many as there is room for */
	}
	pb->st[PS_PY_FRAMES] += st[PYS_FRAMES];
	pb->st[PS_PY_UNNAMED] += st[PYS_UNNAMED];
	pb->st[PS_PY_UNPLACED] += st[PYS_UNPLACED];
	for (int i = 0; i < nf; i++) {
		const struct py_stack_frame *f = &pb->frames[i];

		s->user_resolved[s->n_user_resolved++] = f->resolved;
		s->user_frames[s->n_user_frames++] = strdup(f->text);
		if (f->python)
			continue;
		s->unresolved += !f->resolved;
		pb->st[PS_FRAMES_UNKNOWN] += !f->resolved;
		pb->st[PS_FRAMES]++;
	}
	return jit;
}

int profile__py_code_record(struct profile_builder *pb, struct py_names *names, const void *data, uint32_t len)
{
	int r = py_names__put(names, data, len);

	if (r)
		pb->st[PS_PY_NAMES_BAD]++;
	return r;
}

static void add_frames(struct profile_builder *pb, Ember__StackSample *s, uint32_t tgid, const uint64_t *ips,
		       unsigned n, int kernel)
{
	if (!kernel) {
		add_user_frames(pb, s, tgid, ips, n, false);
		return;
	}
	struct sym_frame frames[EMBER_MAX_STACK_DEPTH];
	uint64_t at[EMBER_MAX_STACK_DEPTH];
	unsigned skip = 0;

	for (unsigned i = 0; i < n; i++)
		at[i] = i && ips[i] ? ips[i] - 1 : ips[i];
	if (kernel ? symbolizer__resolve_kernel(pb->sym, at, n, frames) < 0
		   : symbolizer__resolve_user(pb->sym, tgid, at, n, frames) < 0)
		return;
	while (kernel && skip < n && is_tracing_frame(&frames[skip]))
		skip++;
	pb->st[PS_TRACING_FRAMES] += skip;
	for (unsigned i = skip; i < n; i++) {
		if (kernel) {
			s->kernel_resolved[s->n_kernel_resolved++] = frames[i].resolved;
			s->kernel_frames[s->n_kernel_frames++] = frame_text(pb, &frames[i]);
		} else {
			s->user_resolved[s->n_user_resolved++] = frames[i].resolved;
			s->user_frames[s->n_user_frames++] = frame_text(pb, &frames[i]);
		}
		s->unresolved += !frames[i].resolved;
	}
}

int profile__stack_record(struct profile_builder *pb, const void *data, uint32_t len)
{
	uint64_t ips[EMBER_MAX_STACK_DEPTH];
	struct ember_rec_stack h;
	struct task_def *t;
	struct window *w;
	Ember__StackSample *s;

	if (len < sizeof(h))
		return -EBADMSG;
	memcpy(&h, data, sizeof(h));
	if (h.nkern > EMBER_MAX_STACK_DEPTH || h.nuser > EMBER_MAX_STACK_DEPTH ||
	    len != sizeof(h) + (uint32_t)(h.nkern + h.nuser) * sizeof(uint64_t))
		return -EBADMSG;
	pb->st[PS_STACKS]++;
	t = task_mgr__find_pid(pb->tm, h.tgid, h.kind);
	w = t ? window_of(pb, t->id) : NULL;
	if (!w) {
		pb->st[PS_STACKS_NO_TASK]++;
		return 0;
	}
	if (w->n >= MAX_SAMPLES_PER_WINDOW) {
		pb->st[PS_WINDOW_CAP_DROPS]++;
		return 0;
	}
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 256;
		void *v = realloc(w->v, cap * sizeof(*w->v));
		if (!v) {
			pb->st[PS_WINDOW_CAP_DROPS]++;
			return 0;
		}
		w->v = v;
		w->cap = cap;
	}
	s = sample_new(&h);
	if (!s) {
		pb->st[PS_WINDOW_CAP_DROPS]++;
		return 0;
	}
	if (t->flame.set) {
		const struct cg_entry *e = cgroup_of(pb, h.tgid);

		if (e->container[0])
			s->container_id = strdup(e->container);
		if (e->pod[0])
			s->pod_id = strdup(e->pod);
	}
	if (h.nkern) {
		memcpy(ips, (const char *)data + sizeof(h), h.nkern * sizeof(uint64_t));
		add_frames(pb, s, h.tgid, ips, h.nkern, 1);
	}
	if (h.nuser) {
		memcpy(ips, (const char *)data + sizeof(h) + h.nkern * sizeof(uint64_t), h.nuser * sizeof(uint64_t));
		if (add_user_frames(pb, s, h.tgid, ips, h.nuser, t->flame.set && t->flame.java_only)) {
			/* Java frames only: the JVM's kernel frames go with its native ones. */
			for (size_t i = 0; i < s->n_kernel_frames; i++)
				free(s->kernel_frames[i]);
			s->n_kernel_frames = s->n_kernel_resolved = 0;
		}
	}
	w->v[w->n++] = s;
	w->samples_total += h.count;
	w->stacks_total++;
	return 0;
}

void profile__stats(const struct profile_builder *pb, uint64_t ret[PS_MAX])
{
	memcpy(ret, pb->st, sizeof(pb->st));
}

struct profile_builder *profile__free(struct profile_builder *pb)
{
	if (!pb)
		return NULL;
	for (unsigned i = 0; i < pb->max; i++) {
		for (size_t j = 0; j < pb->w[i].n; j++)
			free_sample(pb->w[i].v[j]);
		free(pb->w[i].v);
	}
	free(pb->w);
	free(pb);
	return NULL;
}
