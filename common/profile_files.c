#include "common/profile_files.h"

#include <errno.h>
#include <stdio.h>

#include "common/profile_kind.h"

const char *profile_files__kind(Ember__TaskKind kind)
{
	const struct profile_kind *k = profile_kind__by_wire(kind);

	return k ? k->name : "profile";
}

int profile_files__name(Ember__TaskKind kind, enum profile_file f, char *buf, size_t len)
{
	static const char *const suffix[PF_MAX] = {
		[PF_FOLDED] = ".folded", [PF_SVG] = ".svg", [PF_COUNT_FOLDED] = ".count.folded",
		[PF_COUNT_SVG] = ".count.svg", [PF_NETWORK_JSON] = ".json", [PF_NETWORK_TXT] = ".txt",
		[PF_THREADS_JSON] = ".json", [PF_TIMELINE_HTML] = ".html",
	};
	const struct profile_kind *k = profile_kind__by_wire(kind);
	int n;

	if ((unsigned)f >= PF_MAX || !k)
		return -EINVAL;
	if (f != PF_TASK_JSON && !(k->files >> f & 1))
		return -ENOENT;
	n = f == PF_TASK_JSON ? snprintf(buf, len, "%s", PROFILE_FILES_DONE)
			      : snprintf(buf, len, "%s%s", k->name, suffix[f]);
	return n >= 0 && (size_t)n < len ? n : -ENAMETOOLONG;
}
