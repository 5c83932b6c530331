/*
 * The analyzer's half of Python frames: for each target process of a stack
 * task, its executable file mappings (through the collector's fd broker,
 * never a path) -> the CPython interpreter among them (a file defining
 * _PyRuntime and Py_Version: python3.X or libpython3.X.so) -> its version's
 * layout (analyzer/python/py_layout.h) -> a PY_PROC request, with which the
 * collector walks the Python frames of the process's stacks
 * (bpf/py_abi.h).  A version without a known layout is counted and its
 * process keeps native frames only.
 *
 * A handler of the mapping manager (analyzer/mappings.h), following the
 * same processes as the unwinder (tag 0): each file is examined once (its
 * symbol tables and Py_Version's value, read from the file, never from the
 * target), and the request goes out at each change of the process's
 * executable mappings (idempotent in the collector).
 */
#ifndef EMBER_ANALYZER_PYTHON_PY_FINDER_H
#define EMBER_ANALYZER_PYTHON_PY_FINDER_H

#include <stdint.h>

#include "analyzer/mappings.h"
#include "common/counters.h"
#include "common/ctl_client.h"

struct py_finder_opts {
	struct ctl_client *cc;   /* borrowed */
};

/* Its counters (common/counters.h), by enum py_finder_stat. */
enum py_finder_stat {
	PYF_FILES_EXAMINED,      /* ELF files looked into */
	PYF_FILES_PYTHON,        /* ... CPython interpreters (_PyRuntime and Py_Version) */
	PYF_UNKNOWN_VERSION,     /* processes running a CPython whose layout ember does not know: native frames only */
	PYF_PROCS,               /* PY_PROC requests the collector took */
	PYF_REFUSED,             /* ... it refused */
	PYF_ERRORS,              /* files unreadable or malformed */
	PYF_UNSUPPORTED,         /* processes whose Python frames this kernel cannot walk (before 5.17: no bpf_loop) */
	PYF_MAX
};
extern const struct counter_def py_finder_counters[PYF_MAX];

struct py_finder;

/* NULL + errno. */
struct py_finder *py_finder__new(const struct py_finder_opts *o);
/*
 * The manager's handler (ctx = f; no report): follow the targets of stack
 * tasks with it, tag 0.  A look's result is 0, or -EOPNOTSUPP once the
 * collector said this kernel cannot walk Python frames: from then on nothing
 * is asked, and each process is counted in unsupported.
 */
void py_finder__handler(struct py_finder *f, struct mappings_handler *ret);
void py_finder__stats(const struct py_finder *f, uint64_t ret[PYF_MAX]);
/* Accepts NULL.  Returns NULL. */
struct py_finder *py_finder__free(struct py_finder *f);

/* What a file holds (for tests): 0 and *ret filled, -ENOENT when it is no CPython, or -errno. */
struct py_file {
	uint64_t runtime_vaddr;  /* _PyRuntime */
	uint32_t version;        /* Py_Version's value */
	uint32_t nsegs;
	struct { uint64_t vaddr, off, filesz; } segs[16];
};
int py_finder__examine_fd(int fd, struct py_file *ret);

#endif
