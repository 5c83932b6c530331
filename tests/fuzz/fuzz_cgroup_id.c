/*
 * Arbitrary bytes as /proc/<pid>/cgroup: never a crash or a read out of
 * bounds; a container id found is 64 hex digits, a pod uid at most
 * CGROUP_POD_ID_MAX - 1 of [0-9a-f-].
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cgroup_id.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char con[CGROUP_CONTAINER_ID_LEN + 1], pod[CGROUP_POD_ID_MAX];
	char *copy = malloc(size ? size : 1);
	int r;

	if (!copy)
		return 0;
	memcpy(copy, data, size); /* exactly size bytes: ASan sees any read past them */
	r = cgroup_id__parse(copy, size, con, pod);
	if (r != (con[0] != 0) || (con[0] && strlen(con) != CGROUP_CONTAINER_ID_LEN) || strlen(pod) >= CGROUP_POD_ID_MAX)
		abort();
	for (const char *c = con; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
			abort();
	for (const char *c = pod; *c; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') || *c == '-'))
			abort();
	free(copy);
	return 0;
}
