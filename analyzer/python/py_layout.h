/*
 * The CPython structure layouts ember knows, by minor version: the offsets
 * the BPF walk reads (bpf/py_abi.h).  Each entry was read from the debug
 * information of the interpreter Debian ships for that version
 * (python3.X-dbg) and is checked against it by tests/integration/
 * test_python_layout.sh; a version not here gets native frames only, and the
 * finder counts it.
 */
#ifndef EMBER_ANALYZER_PYTHON_PY_LAYOUT_H
#define EMBER_ANALYZER_PYTHON_PY_LAYOUT_H

#include <stdint.h>

#include "bpf/py_abi.h"

/* The layout for version (PY_VERSION_HEX, as Py_Version holds it), or NULL when unknown. */
const struct py_layout *py_layout__of(uint32_t version);

#endif
