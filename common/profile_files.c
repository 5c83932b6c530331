#include "common/profile_files.h"

#include <errno.h>
#include <stdio.h>

const char *profile_files__kind(Ember__TaskKind kind)
{
	switch (kind) {
	case EMBER__TASK_KIND__ON_CPU: return "oncpu";
	case EMBER__TASK_KIND__OFF_CPU: return "offcpu";
	case EMBER__TASK_KIND__MEM: return "mem";
	case EMBER__TASK_KIND__NETWORK: return "network";
	default: return "profile";
	}
}

int profile_files__name(Ember__TaskKind kind, enum profile_file f, char *buf, size_t len)
{
	static const char *const suffix[PF_MAX] = {
		[PF_FOLDED] = ".folded", [PF_SVG] = ".svg", [PF_COUNT_FOLDED] = ".count.folded",
		[PF_COUNT_SVG] = ".count.svg", [PF_NETWORK_JSON] = ".json", [PF_NETWORK_TXT] = ".txt",
	};
	int network = kind == EMBER__TASK_KIND__NETWORK, n;

	if ((unsigned)f >= PF_MAX)
		return -EINVAL;
	if ((f == PF_COUNT_FOLDED || f == PF_COUNT_SVG) && kind != EMBER__TASK_KIND__OFF_CPU)
		return -ENOENT;
	/* a network task has its JSON lines and summary, no flame graph */
	if (f != PF_TASK_JSON && network != (f == PF_NETWORK_JSON || f == PF_NETWORK_TXT))
		return -ENOENT;
	n = f == PF_TASK_JSON ? snprintf(buf, len, "%s", PROFILE_FILES_DONE)
			      : snprintf(buf, len, "%s%s", profile_files__kind(kind), suffix[f]);
	return n >= 0 && (size_t)n < len ? n : -ENAMETOOLONG;
}
