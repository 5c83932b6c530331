#include "analyzer/kinds.h"
#include "analyzer/python/py_names.h"

#include <errno.h>
#include <stdlib.h>

#include "bpf/ember_abi.h"

/* One line per kind: the plugin that serves it. */
static const struct analyzer_kind_ops *const registered[] = {
	[EMBER_TASK_ONCPU] = &analyzer_kind_stacks,
	[EMBER_TASK_OFFCPU] = &analyzer_kind_stacks,
	[EMBER_TASK_MEM] = &analyzer_kind_stacks,
	[EMBER_TASK_NETWORK] = &analyzer_kind_net,
	[EMBER_TASK_THREADS] = &analyzer_kind_threads,
};

#define NKINDS (sizeof(registered) / sizeof(registered[0]))
#define NRECORDS 32   /* bits of analyzer_kind_ops.records */

struct plugin {
	const struct analyzer_kind_ops *ops;
	void *impl;
};

struct analyzer_kinds {
	struct plugin plugins[NKINDS];
	unsigned nplugins;
	struct plugin *of_kind[NKINDS];
	struct plugin *of_record[NRECORDS];  /* the first plugin, in kind order, that reads the type */
	struct py_names *py;                 /* the env's, when it gave none: the kinds' shared Python names */
};

struct analyzer_kinds *analyzer_kinds__new(const struct analyzer_kind_env *given)
{
	struct analyzer_kinds *k = calloc(1, sizeof(*k));
	struct analyzer_kind_env copy, *env = &copy;

	if (!k)
		return NULL;
	copy = *given;
	if (!copy.py) {
		k->py = copy.py = py_names__new(0);
		if (!k->py) {
			free(k);
			return NULL;
		}
	}
	for (unsigned kind = 0; kind < NKINDS; kind++) {
		const struct analyzer_kind_ops *ops = registered[kind];
		struct plugin *p = NULL;

		if (!ops)
			continue;
		for (unsigned i = 0; i < k->nplugins && !p; i++)
			if (k->plugins[i].ops == ops)
				p = &k->plugins[i];
		if (!p) {
			p = &k->plugins[k->nplugins];
			p->ops = ops;
			p->impl = ops->new(env);
			if (!p->impl) {
				int e = errno;

				analyzer_kinds__free(k);
				errno = e;
				return NULL;
			}
			k->nplugins++;
			for (unsigned r = 0; r < NRECORDS; r++)
				if ((ops->records & (1u << r)) && !k->of_record[r])
					k->of_record[r] = p;
		}
		k->of_kind[kind] = p;
	}
	return k;
}

struct analyzer_kinds *analyzer_kinds__free(struct analyzer_kinds *k)
{
	if (!k)
		return NULL;
	for (unsigned i = 0; i < k->nplugins; i++)
		k->plugins[i].ops->free(k->plugins[i].impl);
	py_names__free(k->py);
	free(k);
	return NULL;
}

bool analyzer_kinds__get(const struct analyzer_kinds *k, uint32_t kind, const struct analyzer_kind_ops **ret_ops,
			 void **ret_impl)
{
	if (kind >= NKINDS || !k->of_kind[kind])
		return false;
	*ret_ops = k->of_kind[kind]->ops;
	*ret_impl = k->of_kind[kind]->impl;
	return true;
}

uint32_t analyzer_kinds__flags(const struct analyzer_kinds *k, uint32_t kind)
{
	return kind < NKINDS && k->of_kind[kind] ? k->of_kind[kind]->ops->flags : 0;
}

int analyzer_kinds__record(struct analyzer_kinds *k, uint32_t type, const void *data, uint32_t len)
{
	struct plugin *p = type < NRECORDS ? k->of_record[type] : NULL;

	return p ? p->ops->record(p->impl, type, data, len) : -ENOENT;
}

void analyzer_kinds__tick(struct analyzer_kinds *k, uint64_t now_unix_ms)
{
	for (unsigned i = 0; i < k->nplugins; i++)
		if (k->plugins[i].ops->tick)
			k->plugins[i].ops->tick(k->plugins[i].impl, now_unix_ms);
}

uint64_t analyzer_kinds__next_due(const struct analyzer_kinds *k)
{
	uint64_t due = UINT64_MAX;

	for (unsigned i = 0; i < k->nplugins; i++) {
		uint64_t d = k->plugins[i].ops->next_due ? k->plugins[i].ops->next_due(k->plugins[i].impl) : UINT64_MAX;

		if (d < due)
			due = d;
	}
	return due;
}

bool analyzer_kinds__plugin(const struct analyzer_kinds *k, unsigned idx, const struct analyzer_kind_ops **ret_ops,
			    void **ret_impl)
{
	if (idx >= k->nplugins)
		return false;
	*ret_ops = k->plugins[idx].ops;
	*ret_impl = k->plugins[idx].impl;
	return true;
}
