#include "analyzer/java/jvm_finder.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const struct counter_def jvm_finder_counters[JVMF_MAX] = {
	[JVMF_PROCS] = { .name = "java_agent_processes" },
	[JVMF_ALREADY] = { .name = "java_agent_asked_again" },
	[JVMF_REFUSED] = { .name = "java_agent_refused" },
};

struct jvm_finder {
	struct ctl_client *cc;
	int look_err;       /* the collector's answer for this look */
	bool look_asked;    /* one request per look, whatever the number of libjvm.so mappings */
	uint64_t st[JVMF_MAX];
};

struct jvm_finder *jvm_finder__new(const struct jvm_finder_opts *o)
{
	struct jvm_finder *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->cc = o->cc;
	return f;
}

static bool h_wants(void *ctx, const struct mappings_look *l, const struct maps_entry *e)
{
	(void)ctx;
	(void)l;
	return e->kind == MAPS_FILE && (e->perms & MAPS_PERM_X) && !strcmp(e->name, "libjvm.so");
}

static int h_begin(void *ctx, struct mappings_look *l)
{
	struct jvm_finder *f = ctx;

	(void)l;
	f->look_err = 0;
	f->look_asked = false;
	return 0;
}

static int h_attach(void *ctx, struct mappings_look *l, const struct maps_entry *e, void *data, int open_err)
{
	struct jvm_finder *f = ctx;
	int err;

	(void)e;
	(void)data;
	(void)open_err;
	if (f->look_asked)
		return 0;
	f->look_asked = true;
	err = ctl_client__java_attach(f->cc, l->pid);
	if (err == -EALREADY) {
		f->st[JVMF_ALREADY]++;
		return 0;
	}
	if (err == -ESRCH || err == -EPERM)
		return 0;   /* the process exited first, or no stack task follows it any more */
	f->st[err ? JVMF_REFUSED : JVMF_PROCS]++;
	f->look_err = err;
	return 0;
}

static int h_end(void *ctx, struct mappings_look *l)
{
	struct jvm_finder *f = ctx;

	return l->err ? l->err : f->look_err;
}

void jvm_finder__handler(struct jvm_finder *f, struct mappings_handler *ret)
{
	*ret = (struct mappings_handler){
		.name = "java", .ctx = f, .begin = h_begin, .wants = h_wants, .attach = h_attach, .end = h_end,
	};
}

void jvm_finder__stats(const struct jvm_finder *f, uint64_t ret[JVMF_MAX])
{
	memcpy(ret, f->st, sizeof(f->st));
}

struct jvm_finder *jvm_finder__free(struct jvm_finder *f)
{
	free(f);
	return NULL;
}
