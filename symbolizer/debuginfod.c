#include "symbolizer/debuginfod.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The few entry points used (elfutils/debuginfod.h), resolved at run time. */
typedef struct debuginfod_client debuginfod_client;
typedef debuginfod_client *(*begin_fn)(void);
typedef int (*find_fn)(debuginfod_client *, const unsigned char *, int, char **);
typedef void (*end_fn)(debuginfod_client *);

struct debuginfod {
	void *lib;
	debuginfod_client *client;
	find_fn find_debuginfo;
	end_fn end;
};

static int mkdir_p(const char *dir)
{
	char buf[4096];
	size_t n = strlen(dir);

	if (n == 0 || n >= sizeof(buf) || dir[0] != '/')
		return -EINVAL;
	memcpy(buf, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0700) && errno != EEXIST)
			return -errno;
		buf[i] = i == n ? '\0' : '/';
	}
	return 0;
}

struct debuginfod *debuginfod__new(const char *urls, const char *cache_dir)
{
	struct debuginfod *d;
	begin_fn begin;
	int r;

	if (!urls || !urls[0] || !cache_dir || cache_dir[0] != '/') {
		errno = EINVAL;
		return NULL;
	}
	r = mkdir_p(cache_dir);
	if (r) {
		errno = -r;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!d->lib) {
		free(d);
		errno = ENOENT;
		return NULL;
	}
	begin = (begin_fn)dlsym(d->lib, "debuginfod_begin");
	d->find_debuginfo = (find_fn)dlsym(d->lib, "debuginfod_find_debuginfo");
	d->end = (end_fn)dlsym(d->lib, "debuginfod_end");
	if (!begin || !d->find_debuginfo || !d->end || setenv("DEBUGINFOD_URLS", urls, 1) ||
	    setenv("DEBUGINFOD_CACHE_PATH", cache_dir, 1) || setenv("DEBUGINFOD_TIMEOUT", "10", 0) ||
	    !(d->client = begin())) {
		dlclose(d->lib);
		free(d);
		errno = ENOENT;
		return NULL;
	}
	return d;
}

int debuginfod__fetch(struct debuginfod *d, const uint8_t *build_id, size_t len)
{
	char *path = NULL;
	int fd;

	if (!d || !build_id || len < 2 || len > 64)
		return -EINVAL;
	fd = d->find_debuginfo(d->client, build_id, (int)len, &path);
	free(path);
	return fd; /* an fd, or -errno from libdebuginfod */
}

int debuginfod__open_cb(void *ctx, const uint8_t *build_id, size_t len)
{
	return debuginfod__fetch(ctx, build_id, len);
}

struct debuginfod *debuginfod__free(struct debuginfod *d)
{
	if (!d)
		return NULL;
	if (d->client)
		d->end(d->client);
	if (d->lib)
		dlclose(d->lib);
	free(d);
	return NULL;
}
