#include "collector/kinds.h"

#include <stdlib.h>
#include <string.h>

#include "bpf/ember_abi.h"

/* One line per family of kinds: what loads its programs, what unloads them. */
static const struct {
	kind_loader_fn load;
	void (*unload)(struct kinds_env *env);
} families[] = {
	{ kind_stacks__load, kind_stacks__unload },
	{ kind_net__load, kind_net__unload },
	{ kind_threads__load, kind_threads__unload },
};

int kinds__load(struct kinds_env *env, struct kinds_load_opts *o)
{
	for (unsigned f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
		int err = families[f].load(env, o);

		if (err)
			return err;
	}
	return 0;
}

void kinds__unload(struct kinds_env *env)
{
	for (unsigned f = sizeof(families) / sizeof(families[0]); f-- > 0;)
		families[f].unload(env);
}

/* One line per kind. */
static const kind_builder_fn builders[] = {
	[EMBER_TASK_ONCPU] = kind_stacks__new,
	[EMBER_TASK_OFFCPU] = kind_stacks__new,
	[EMBER_TASK_MEM] = kind_stacks__new,
	[EMBER_TASK_NETWORK] = kind_net__new,
	[EMBER_TASK_THREADS] = kind_threads__new,
};

unsigned kinds__build(struct kinds_env *env, struct collector_kind **ret, unsigned max)
{
	unsigned n = sizeof(builders) / sizeof(builders[0]);

	if (n > max)
		n = max;
	memset(ret, 0, max * sizeof(*ret));
	for (unsigned k = 0; k < n; k++)
		if (builders[k])
			ret[k] = builders[k](env, k);
	return n;
}

void kinds__free(struct collector_kind **kinds, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (kinds[i])
			free(kinds[i]->impl);
		free(kinds[i]);
		kinds[i] = NULL;
	}
}
