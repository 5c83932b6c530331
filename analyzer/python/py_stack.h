/*
 * A user stack with Python frames (bpf/py_abi.h: after the native ips,
 * tagged) into text frames, innermost first: the native frames symbolized,
 * and each _PyEval_EvalFrameDefault activation giving way to the Python
 * frames it ran, innermost first, up to the one that entered it (C frames in
 * between, such as a C extension calling back into Python, keep their
 * place).  Python frames the native stack has no activation left for (a
 * native walk cut short) go at its outer end, counted.  Names come from
 * analyzer/python/py_names.h; one whose record was lost reads "[python]".
 * A JIT frame named by a scope of inlined methods in the process's perf map
 * ("outer;middle;leaf", jvm/ember_jvmti.c) becomes one frame per method.
 */
#ifndef EMBER_ANALYZER_PYTHON_PY_STACK_H
#define EMBER_ANALYZER_PYTHON_PY_STACK_H

#include <stdbool.h>
#include <stdint.h>

#include "analyzer/python/py_names.h"
#include "bpf/ember_abi.h"
#include "symbolizer/symbolizer.h"

#define PY_STACK_TEXT 256

struct py_stack_frame {
	char text[PY_STACK_TEXT];
	bool resolved;      /* a symbol or a named Python frame */
	bool python;
	bool jit;           /* named by the process's perf map (a JIT's code: Java methods, the JVM's stubs) */
};

enum py_stack_stat {
	PYS_FRAMES,         /* Python frames placed */
	PYS_UNNAMED,        /* ... without a name */
	PYS_UNPLACED,       /* ... past the native stack's interpreter frames */
	PYS_MAX
};

/*
 * The n ips of tgid (innermost first, as the BPF walk leaves them) into out
 * (room for EMBER_MAX_STACK_DEPTH), counting into st.  The number of frames
 * (more than n when inlined JIT methods are split out, at most
 * EMBER_MAX_STACK_DEPTH), or -errno (the symbolizer's).
 */
int py_stack__resolve(struct symbolizer *sym, const struct py_names *pn, uint32_t tgid, const uint64_t *ips,
		      unsigned n, struct py_stack_frame *out, uint64_t st[PYS_MAX]);

#endif
