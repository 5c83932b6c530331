/*
 * Where separate debug files and perf maps live, built from fixed patterns
 * only -- shared by the collector's fd broker (which must never open a path
 * the analyzer chose) and the symbolizer's direct callbacks.  `root` is the
 * target's root, normally "/proc/<pid>/root".
 *
 *   build id:   <root>/usr/lib/debug/.build-id/<xx>/<rest>.debug
 *   debuglink:  <root><dir>/<name>, <root><dir>/.debug/<name>,
 *               <root>/usr/lib/debug<dir>/<name>   (dir: the binary's directory)
 *   perf map:   <root>/tmp/perf-<nspid>.map       (nspid: pid in the target's pid namespace)
 */
#ifndef EMBER_COMMON_DEBUGPATH_H
#define EMBER_COMMON_DEBUGPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DEBUGPATH_MAX_LINK_NAME 255
#define DEBUGPATH_LINK_DIRS 3

/* 2..64 bytes (the hex name has at least "xx/" plus one more byte). */
bool debugpath__valid_build_id(const uint8_t *id, size_t len);
/* A plain file name: 1..255 printable bytes, no '/', not "." or "..". */
bool debugpath__valid_link_name(const char *name);

/* All return the length written, -EINVAL on invalid input, -ENAMETOOLONG if buf is short. */
int debugpath__build_id(char *buf, size_t len, const char *root, const uint8_t *id, size_t n);
/* which: 0..DEBUGPATH_LINK_DIRS-1.  binpath: absolute path of the binary (inside root). */
int debugpath__link(char *buf, size_t len, const char *root, const char *binpath, const char *name,
		    unsigned which);
int debugpath__perf_map(char *buf, size_t len, const char *root, uint32_t nspid);

/* Innermost pid from the "NSpid:" line of /proc/<pid>/status text; 0 or -ENOENT. */
int debugpath__parse_nspid(const char *status, size_t len, uint32_t *ret);

#endif
