/*
 * Python frames in user stacks: what the analyzer tells the collector about
 * a CPython process (CTL_REQ_PY_PROC: where its runtime state lives and the
 * layout of the structures the walk reads), what the BPF walk leaves in a
 * stack, and what it reads of each code object.
 *
 * The walk (bpf/user_stack.bpf.h) runs after the native walk of a process in
 * "py_procs": the thread's PyThreadState (found by its native thread id in
 * the main interpreter's list, then cached per thread and checked at each
 * use), its current frame, and each frame's previous, at most PY_MAX_FRAMES.
 * Each Python frame is appended after the native frames as PY_FRAME_TAG |
 * the code object's address (| PY_FRAME_ENTRY when the frame is the first
 * of its _PyEval_EvalFrameDefault activation), innermost first; the stack's
 * n counts both.  The names of each code object seen go into "py_codes".
 * Every address is the target's and read with bpf_probe_read_user: a wrong
 * layout yields unreadable or garbage names, never a kernel fault; the
 * analyzer only sends layouts it knows (analyzer/python/py_layout.c).
 */
#ifndef EMBER_BPF_PY_ABI_H
#define EMBER_BPF_PY_ABI_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define PY_MAX_FRAMES 64
#define PY_MAX_THREADS 256          /* threads of the main interpreter looked through for the current one */
#define PY_NAME_LEN 96

/* A user "ip" that is a Python frame: tag in the top byte, never a user address (those are below 2^47). */
#define PY_FRAME_TAG   0xeb00000000000000ull
#define PY_FRAME_MASK  0xff00000000000000ull
#define PY_FRAME_ENTRY 0x0080000000000000ull
#define PY_FRAME_ADDR  0x0000ffffffffffffull
#define PY_IS_FRAME(ip) (((ip) & PY_FRAME_MASK) == PY_FRAME_TAG)

/*
 * Offsets (bytes) of the fields the walk reads, for one CPython version.
 * The entry test: PY_ENTRY_IS_ENTRY reads a bool at fr_entry (3.11's
 * is_entry).  Values are checked by the collector: each below PY_MAX_OFF, the
 * frame's fields within PY_FRAME_READ, the code object's within PY_CODE_READ.
 */
#define PY_MAX_OFF 4096
/*
 * The walk reads a frame's first PY_FRAME_READ bytes and a code object's
 * first PY_CODE_READ bytes at once: the fields it takes from them must lie
 * within (the collector checks).
 */
#define PY_FRAME_READ 80
#define PY_CODE_READ 160
enum { PY_ENTRY_IS_ENTRY = 1 };
struct py_layout {
	__u16 rt_interp_head;   /* _PyRuntimeState.interpreters.head */
	__u16 is_threads_head;  /* PyInterpreterState.threads.head */
	__u16 ts_next;          /* PyThreadState.next */
	__u16 ts_native_tid;    /* PyThreadState.native_thread_id */
	__u16 ts_cframe;        /* PyThreadState.cframe */
	__u16 cf_current;       /* _PyCFrame.current_frame */
	__u16 fr_code;          /* _PyInterpreterFrame.f_code */
	__u16 fr_previous;      /* _PyInterpreterFrame.previous */
	__u16 fr_entry;         /* _PyInterpreterFrame.is_entry */
	__u16 entry_kind;       /* PY_ENTRY_* */
	__u16 co_filename;      /* PyCodeObject.co_filename */
	__u16 co_qualname;      /* PyCodeObject.co_qualname */
	__u16 co_firstlineno;   /* PyCodeObject.co_firstlineno (int) */
	__u16 str_state;        /* PyASCIIObject.state */
	__u16 str_ascii_data;   /* sizeof(PyASCIIObject): a compact ASCII string's bytes */
	__u16 str_compact_data; /* sizeof(PyCompactUnicodeObject): a compact Latin-1 string's bytes */
};

/* Value of "py_procs" (key: tgid). */
struct py_proc {
	__u64 runtime;          /* _PyRuntime's address in the process */
	__u32 version;          /* PY_VERSION_HEX (Py_Version) */
	__u32 pad;
	struct py_layout l;
};

/* Key of "py_codes": a code object of a process. */
struct py_code_key {
	__u64 addr;
	__u32 tgid;
	__u32 pad;
};

/*
 * Value of "py_codes": what the walk read of a code object when it first saw
 * it.  qualname_obj and firstlineno tell a code object freed and another
 * allocated at its address apart (the walk reads them again each time).
 */
struct py_code {
	__u64 qualname_obj;
	__s32 firstlineno;
	__u32 pad;
	char filename[PY_NAME_LEN];
	char qualname[PY_NAME_LEN];
};

#ifdef EMBER_ASSERT_SIZE
EMBER_ASSERT_SIZE(struct py_layout, 32);
EMBER_ASSERT_SIZE(struct py_proc, 48);
EMBER_ASSERT_SIZE(struct py_code_key, 16);
EMBER_ASSERT_SIZE(struct py_code, 16 + 2 * PY_NAME_LEN);
#endif

#endif
