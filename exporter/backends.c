#include "exporter/backend.h"

#include <string.h>

/* The registry: one extern and one line per backend. */
extern const struct exporter_backend_ops file_backend_ops;
extern const struct exporter_backend_ops prometheus_backend_ops;
extern const struct exporter_backend_ops skywalking_backend_ops;
extern const struct exporter_backend_ops pyroscope_backend_ops;
extern const struct exporter_backend_ops kafka_backend_ops;

static const struct exporter_backend_ops *const backends[] = {
	&file_backend_ops,
	&prometheus_backend_ops,
	&skywalking_backend_ops,
	&pyroscope_backend_ops,
	&kafka_backend_ops,
	NULL,
};

const struct exporter_backend_ops *exporter_backend__find(const char *name)
{
	for (unsigned i = 0; backends[i]; i++)
		if (!strcmp(backends[i]->name, name))
			return backends[i];
	return NULL;
}
