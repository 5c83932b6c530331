/*
 * The names of Python code objects, as the collector sends them
 * (EMBER_REC_PYCODE, once per window before the first stack holding them),
 * keyed by process and code object address, for the profile builder to name
 * the Python frames of the stacks that follow.
 *
 * The bytes come from the target's memory: a name is kept only as printable
 * ASCII without ';' (the folded format's separator) or spaces, anything else
 * replaced by '_', and cut at its array's end.  Bounded: at most max entries
 * (open addressing); a full table is emptied and filled again (counted).
 * Not thread-safe.  Library code: no logging.
 */
#ifndef EMBER_ANALYZER_PYTHON_PY_NAMES_H
#define EMBER_ANALYZER_PYTHON_PY_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/ember_abi.h"

struct py_names;

/* max: entries kept (0: 65536).  NULL + errno. */
struct py_names *py_names__new(uint32_t max);
/* One record (untrusted, len checked): 0, or -EBADMSG. */
int py_names__put(struct py_names *pn, const void *data, uint32_t len);
/* The frame's text ("file.py:qualname") into buf (NUL-terminated); -ENOENT when unknown. */
int py_names__frame(const struct py_names *pn, uint32_t tgid, uint64_t addr, char *buf, size_t len);
/* Forgets everything tgid's (it exited or exec'd). */
void py_names__forget(struct py_names *pn, uint32_t tgid);
/* Times a full table was emptied. */
uint64_t py_names__cleared(const struct py_names *pn);
/* Accepts NULL.  Returns NULL. */
struct py_names *py_names__free(struct py_names *pn);

#endif
