/* A process's container and pod from its cgroup paths: see cgroup_id.h. */
#include "common/cgroup_id.h"

#include <stdbool.h>
#include <string.h>

static bool hex64(const char *s, size_t n)
{
	if (n < CGROUP_CONTAINER_ID_LEN)
		return false;
	for (size_t i = 0; i < CGROUP_CONTAINER_ID_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return n == CGROUP_CONTAINER_ID_LEN || s[CGROUP_CONTAINER_ID_LEN] == '.';
}

/* One path component [c, c + n): a container id and/or a pod uid. */
static void component(const char *c, size_t n, char *container, char *pod)
{
	static const char *const prefixes[] = { "", "docker-", "cri-containerd-", "crio-", "libpod-" };

	for (unsigned i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t l = strlen(prefixes[i]);

		if (n >= l && !memcmp(c, prefixes[i], l) && hex64(c + l, n - l)) {
			memcpy(container, c + l, CGROUP_CONTAINER_ID_LEN);
			container[CGROUP_CONTAINER_ID_LEN] = 0;
			return;
		}
	}
	/* kubepods-burstable-pod<uid>.slice (systemd) or pod<uid> (cgroupfs) */
	for (size_t i = 0; i + 3 < n; i++) {
		char uid[CGROUP_POD_ID_MAX];
		size_t k = 0, j;

		if (memcmp(c + i, "pod", 3) || (i && c[i - 1] != '-' && c[i - 1] != '/'))
			continue;
		if (i && !memmem(c, i, "kubepods", 8))
			continue;
		for (j = i + 3; j < n && c[j] != '.' && k + 1 < sizeof(uid); j++) {
			char ch = c[j] == '_' ? '-' : c[j];

			if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || ch == '-'))
				return; /* not a uid: what an earlier component gave stays */
			uid[k++] = ch;
		}
		if (k >= 32 && (j == n || c[j] == '.')) {
			memcpy(pod, uid, k);
			pod[k] = 0;
		}
		return;
	}
}

int cgroup_id__parse(const char *text, size_t len, char *container, char *pod)
{
	const char *end = text + len;

	container[0] = 0;
	pod[0] = 0;
	for (const char *line = text; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line)), *le = nl ? nl : end;
		const char *path = line;

		/* hierarchy-id:controllers:path */
		for (int colons = 0; path < le && colons < 2; path++)
			colons += *path == ':';
		for (const char *c = path; c < le;) {
			const char *slash = memchr(c, '/', (size_t)(le - c)), *ce = slash ? slash : le;

			if (ce > c)
				component(c, (size_t)(ce - c), container, pod);
			c = ce + 1;
		}
		line = le + 1;
	}
	return container[0] != 0;
}
