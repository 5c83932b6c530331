#include "analyzer/python/py_layout.h"

#include <stddef.h>

struct known {
	uint8_t major, minor;
	struct py_layout l;
};

static const struct known layouts[] = {
	{ 3, 11, {
		.rt_interp_head = 0x28,    /* _PyRuntimeState.interpreters.head */
		.is_threads_head = 0x10,   /* PyInterpreterState.threads.head */
		.ts_next = 0x08,           /* PyThreadState.next */
		.ts_native_tid = 0xa0,     /* PyThreadState.native_thread_id */
		.ts_cframe = 0x38,         /* PyThreadState.cframe */
		.cf_current = 0x08,        /* _PyCFrame.current_frame */
		.fr_code = 0x20,           /* _PyInterpreterFrame.f_code */
		.fr_previous = 0x30,       /* _PyInterpreterFrame.previous */
		.fr_entry = 0x44,          /* _PyInterpreterFrame.is_entry */
		.entry_kind = PY_ENTRY_IS_ENTRY,
		.co_filename = 0x70,       /* PyCodeObject.co_filename */
		.co_qualname = 0x80,       /* PyCodeObject.co_qualname */
		.co_firstlineno = 0x48,    /* PyCodeObject.co_firstlineno */
		.str_state = 0x20,         /* PyASCIIObject.state */
		.str_ascii_data = 48,      /* sizeof(PyASCIIObject) */
		.str_compact_data = 72,    /* sizeof(PyCompactUnicodeObject) */
	} },
};

const struct py_layout *py_layout__of(uint32_t version)
{
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].major == version >> 24 && layouts[i].minor == ((version >> 16) & 0xff))
			return &layouts[i].l;
	return NULL;
}
