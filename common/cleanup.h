/* Scope-bound cleanup helpers (systemd style): _cleanup_free_ char *p = NULL; */
#ifndef EMBER_CLEANUP_H
#define EMBER_CLEANUP_H

#include <stdlib.h>
#include <unistd.h>
#include <errno.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void freep(void *p) { free(*(void **)p); }
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}
#define _cleanup_close_ _cleanup_(closep)

/* Hand ownership out of a _cleanup_ scope. */
#define TAKE_PTR(p) ({ __typeof__(p) _t = (p); (p) = NULL; _t; })
#define TAKE_FD(fd) ({ int _t = (fd); (fd) = -1; _t; })

static inline int zclose(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	return -1;
}

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
