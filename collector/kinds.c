#include "collector/kinds.h"

#include <stdlib.h>
#include <string.h>

#include "bpf/ember_abi.h"

/* One line per kind. */
static const kind_builder_fn builders[] = {
	[EMBER_TASK_ONCPU] = kind_stacks__new,
	[EMBER_TASK_OFFCPU] = kind_stacks__new,
	[EMBER_TASK_MEM] = kind_stacks__new,
	[EMBER_TASK_NETWORK] = kind_net__new,
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
