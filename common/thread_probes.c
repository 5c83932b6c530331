#include "common/thread_probes.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct { const char *name; uint32_t bit; } probes[] = {
	{ "oncpu", 1u << 0 }, { "syscall_file", 1u << 1 }, { "syscall_net", 1u << 2 },
	{ "syscall_lock", 1u << 3 }, { "syscall_sched", 1u << 4 },
	/* gala-gopher's, not recorded by ember */
	{ "python_gc", 0 }, { "pthread_sync", 0 }, { "oncpu_sample", 0 }, { "mem_usage", 0 }, { "mem_glibc", 0 },
	{ "offcpu", 0 },
};

uint32_t thread_probes__bit(const char *name, int *known)
{
	*known = 0;
	for (size_t i = 0; name && i < sizeof(probes) / sizeof(probes[0]); i++)
		if (!strcasecmp(name, probes[i].name)) {
			*known = 1;
			return probes[i].bit;
		}
	return 0;
}

int thread_probes__parse(const char *list, uint32_t *ret, char *bad, size_t badlen)
{
	const char *p = list;

	*ret = 0;
	if (bad && badlen)
		bad[0] = 0;
	if (!list || !*list)
		return -EINVAL;
	while (*p) {
		size_t n = strcspn(p, ",");
		char name[32];
		uint32_t bit = 0;
		int known;

		if (n && n < sizeof(name)) {
			memcpy(name, p, n);
			name[n] = 0;
			bit = thread_probes__bit(name, &known);
		}
		if (!bit) {
			if (bad && badlen)
				snprintf(bad, badlen, "%.*s", (int)(n < 64 ? n : 64), p);
			return -EINVAL;
		}
		*ret |= bit;
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

void thread_probes__names(uint32_t mask, char *buf, size_t len)
{
	size_t n = 0;

	if (len)
		buf[0] = 0;
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)
		if (probes[i].bit && (mask & probes[i].bit) && n < len) {
			int w = snprintf(buf + n, len - n, "%s%s", n ? "," : "", probes[i].name);

			if (w < 0)
				break;
			n += (size_t)w;
		}
}
