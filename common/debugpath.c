#include "common/debugpath.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

bool debugpath__valid_build_id(const uint8_t *id, size_t len)
{
	return id && len >= 2 && len <= 64;
}

bool debugpath__valid_link_name(const char *name)
{
	size_t n;

	if (!name)
		return false;
	n = strnlen(name, DEBUGPATH_MAX_LINK_NAME + 1);
	if (n == 0 || n > DEBUGPATH_MAX_LINK_NAME || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c == '/' || c < 0x21 || c > 0x7e)
			return false;
	}
	return true;
}

static int done(int r, size_t len)
{
	if (r < 0)
		return -EINVAL;
	return (size_t)r >= len ? -ENAMETOOLONG : r;
}

int debugpath__build_id(char *buf, size_t len, const char *root, const uint8_t *id, size_t n)
{
	char hex[2 * 64 + 1];

	if (!buf || !len || !root || !debugpath__valid_build_id(id, n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	return done(snprintf(buf, len, "%s/usr/lib/debug/.build-id/%.2s/%s.debug", root, hex, hex + 2), len);
}

int debugpath__link(char *buf, size_t len, const char *root, const char *binpath, const char *name,
		    unsigned which)
{
	const char *slash;
	int dlen;

	if (!buf || !len || !root || !binpath || binpath[0] != '/' || !debugpath__valid_link_name(name) ||
	    which >= DEBUGPATH_LINK_DIRS)
		return -EINVAL;
	/* The directory is the kernel's name of the mapped file: refuse ".." components anyway. */
	if (strstr(binpath, "/../") || strstr(binpath, "/./"))
		return -EINVAL;
	slash = strrchr(binpath, '/');
	if ((size_t)(slash - binpath) > 4096)
		return -ENAMETOOLONG;
	dlen = (int)(slash - binpath);
	switch (which) {
	case 0:
		return done(snprintf(buf, len, "%s%.*s/%s", root, dlen, binpath, name), len);
	case 1:
		return done(snprintf(buf, len, "%s%.*s/.debug/%s", root, dlen, binpath, name), len);
	default:
		return done(snprintf(buf, len, "%s/usr/lib/debug%.*s/%s", root, dlen, binpath, name), len);
	}
}

int debugpath__perf_map(char *buf, size_t len, const char *root, uint32_t nspid)
{
	if (!buf || !len || !root || !nspid)
		return -EINVAL;
	return done(snprintf(buf, len, "%s/tmp/perf-%" PRIu32 ".map", root, nspid), len);
}

int debugpath__parse_nspid(const char *status, size_t len, uint32_t *ret)
{
	const char *p = status, *end = status + len;

	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		if (le - p > 6 && !memcmp(p, "NSpid:", 6)) {
			uint64_t v = 0;
			bool have = false, in = false;

			/* Last number on the line: the innermost namespace. */
			for (const char *q = p + 6; q < le; q++) {
				if (*q >= '0' && *q <= '9') {
					if (!in)
						v = 0;
					in = true;
					v = v * 10 + (uint64_t)(*q - '0');
					if (v > UINT32_MAX)
						return -ENOENT;
					have = true;
				} else if (*q == ' ' || *q == '\t') {
					in = false;
				} else {
					return -ENOENT;
				}
			}
			if (!have || !v)
				return -ENOENT;
			*ret = (uint32_t)v;
			return 0;
		}
		p = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}
