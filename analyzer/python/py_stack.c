#include "analyzer/python/py_stack.h"

#include <stdio.h>
#include <string.h>

#include "bpf/py_abi.h"

/* Python frames from *next on, through the first that entered its activation (all of them: whole). */
static unsigned put_python(const struct py_names *pn, uint32_t tgid, const uint64_t *py, unsigned npy,
			   unsigned *next, bool whole, struct py_stack_frame *out, unsigned nout, uint64_t st[PYS_MAX])
{
	while (*next < npy && nout < EMBER_MAX_STACK_DEPTH) {
		uint64_t f = py[(*next)++];
		struct py_stack_frame *o = &out[nout++];

		o->python = true;
		o->jit = false;
		o->resolved = !py_names__frame(pn, tgid, f & PY_FRAME_ADDR, o->text, sizeof(o->text));
		if (!o->resolved) {
			snprintf(o->text, sizeof(o->text), "[python]");
			st[PYS_UNNAMED]++;
		}
		st[PYS_FRAMES]++;
		if ((f & PY_FRAME_ENTRY) && !whole)
			break;
	}
	return nout;
}

/*
 * A perf map name holding ';' is a scope of inlined methods, outermost first
 * (jvm/ember_jvmti.c): each becomes a frame, innermost first.  Each part's
 * text is cleaned as a symbol's is (sym_frame__format).
 */
static unsigned put_scope(const struct sym_frame *f, struct py_stack_frame *out, unsigned nout)
{
	const char *name = f->name, *end = name + strlen(name);
	unsigned first = nout;

	while (end > name && nout < EMBER_MAX_STACK_DEPTH) {
		const char *p = end;
		struct sym_frame part = *f;
		char buf[PY_STACK_TEXT];
		size_t n;

		while (p > name && p[-1] != ';')
			p--;
		n = (size_t)(end - p) < sizeof(buf) ? (size_t)(end - p) : sizeof(buf) - 1;
		memcpy(buf, p, n);
		buf[n] = 0;
		end = p > name ? p - 1 : p;
		if (!n)
			continue;
		part.name = buf;
		out[nout].python = false;
		out[nout].jit = true;
		out[nout].resolved = true;
		if (sym_frame__format(&part, out[nout].text, sizeof(out[nout].text)) < 0)
			snprintf(out[nout].text, sizeof(out[nout].text), "[unknown]");
		nout++;
	}
	return nout > first ? nout : first;
}

int py_stack__resolve(struct symbolizer *sym, const struct py_names *pn, uint32_t tgid, const uint64_t *ips,
		      unsigned n, struct py_stack_frame *out, uint64_t st[PYS_MAX])
{
	struct sym_frame frames[EMBER_MAX_STACK_DEPTH];
	uint64_t at[EMBER_MAX_STACK_DEPTH], py[EMBER_MAX_STACK_DEPTH];
	unsigned nn = 0, npy = 0, next = 0, nout = 0;
	int r;

	if (n > EMBER_MAX_STACK_DEPTH)
		n = EMBER_MAX_STACK_DEPTH;
	for (unsigned i = 0; i < n; i++) {
		if (PY_IS_FRAME(ips[i])) {
			py[npy++] = ips[i];
		} else {
			/* Every address but the innermost is a return address: looked up inside its call. */
			at[nn] = nn && ips[i] ? ips[i] - 1 : ips[i];
			nn++;
		}
	}
	if (nn && (r = symbolizer__resolve_user(sym, tgid, at, nn, frames)) < 0)
		return r;
	for (unsigned i = 0; i < nn && nout < EMBER_MAX_STACK_DEPTH; i++) {
		struct py_stack_frame *o;

		if (next < npy && frames[i].resolved && !strcmp(frames[i].name, "_PyEval_EvalFrameDefault")) {
			nout = put_python(pn, tgid, py, npy, &next, false, out, nout, st);
			continue;
		}
		if (frames[i].jit && frames[i].resolved && strchr(frames[i].name, ';')) {
			unsigned was = nout;
			nout = put_scope(&frames[i], out, nout);
			if (nout > was)
				continue;
		}
		o = &out[nout++];
		o->python = false;
		o->jit = frames[i].jit;
		o->resolved = frames[i].resolved;
		if (sym_frame__format(&frames[i], o->text, sizeof(o->text)) < 0)
			snprintf(o->text, sizeof(o->text), "[unknown]");
	}
	if (next < npy) {
		st[PYS_UNPLACED] += npy - next;
		nout = put_python(pn, tgid, py, npy, &next, true, out, nout, st);
	}
	return (int)nout;
}
