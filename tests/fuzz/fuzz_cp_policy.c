/*
 * Arbitrary bytes as continuous-profiling policies, from the OAP (JSON) and
 * from the local configuration (YAML): never a crash, a leak or a hang;
 * everything accepted is within the documented bounds; a rejection comes
 * with a message; and what is accepted can be handed to the monitors.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/continuous/monitors.h"
#include "common/cp_policy.h"

static void check(const struct cp_policies *p)
{
	if (p->n > CP_MAX_POLICIES)
		abort();
	for (unsigned i = 0; i < p->n; i++) {
		const struct cp_policy *pol = &p->v[i];

		if (pol->n_items > CP_MAX_ITEMS || strlen(pol->name) >= sizeof(pol->name))
			abort();
		if (!pol->removed && !pol->n_items)
			abort();
		for (unsigned k = 0; k < pol->n_items; k++) {
			const struct cp_item *it = &pol->items[k];

			if (it->target >= CP_TARGET_MAX || it->monitor >= CP_MON_MAX || !isfinite(it->threshold) ||
			    it->threshold < 0 || !it->period || it->period > CP_PERIOD_MAX || !it->count ||
			    it->count > it->period || it->n_uris > CP_MAX_URIS || (it->n_uris && it->uri_regex[0]))
				abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), err[256];

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	for (int src = CP_SOURCE_LOCAL; src <= CP_SOURCE_OAP; src++) {
		struct cp_policies *p;

		err[0] = 0;
		p = cp_policies__parse(text, (enum cp_source)src, err, sizeof(err));
		if (!p) {
			if (!err[0])
				abort();
			continue;
		}
		check(p);
		if (src == CP_SOURCE_LOCAL) {
			struct monitors_opts o = { .proc_root = "/nonexistent", .nshards = 1 };
			struct monitors *m = monitors__new(&o);

			if (m && monitors__set_policies(m, p))
				abort(); /* the parser compiled every MatchCmd already */
			monitors__tick(m, 1000);
			monitors__free(m);
		}
		cp_policies__free(p);
	}
	(void)cp_policies__check_local(text, err, sizeof(err));
	free(text);
	return 0;
}
