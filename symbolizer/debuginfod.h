/*
 * Optional debuginfod client (off by default): fetches a separate debug file
 * by build id from the configured servers into a local cache, in the
 * unprivileged analyzer.  libdebuginfod (elfutils) is loaded with dlopen() at
 * first use, so it is a runtime option, not a link dependency; without it
 * debuginfod__new() fails with ENOENT.
 *
 * libdebuginfod takes its servers and cache from the environment only:
 * debuginfod__new() sets DEBUGINFOD_URLS and DEBUGINFOD_CACHE_PATH for this
 * process (and DEBUGINFOD_TIMEOUT if unset).  One client per process.
 * Library code: no logging.  Not thread-safe.
 */
#ifndef EMBER_SYMBOLIZER_DEBUGINFOD_H
#define EMBER_SYMBOLIZER_DEBUGINFOD_H

#include <stddef.h>
#include <stdint.h>

struct debuginfod;

/*
 * urls: space-separated server URLs (DEBUGINFOD_URLS syntax), non-empty.
 * cache_dir: absolute directory for downloads (created if missing).
 * NULL+errno: ENOENT (libdebuginfod not installed), EINVAL, ENOMEM, mkdir's errno.
 */
struct debuginfod *debuginfod__new(const char *urls, const char *cache_dir);

/* fd of the debug file (cached or downloaded) for build_id (2..64 bytes), or -errno. */
int debuginfod__fetch(struct debuginfod *d, const uint8_t *build_id, size_t len);

/* Matches symbolizer_opts.open_debuginfod with ctx = the struct debuginfod. */
int debuginfod__open_cb(void *ctx, const uint8_t *build_id, size_t len);

/* Accepts NULL.  Returns NULL. */
struct debuginfod *debuginfod__free(struct debuginfod *d);

#endif
