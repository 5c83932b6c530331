/*
 * py_layout_dump FILE: what the analyzer's Python finder makes of an
 * interpreter file (analyzer/python/py_finder.h) and the layout it would
 * send for its version (analyzer/python/py_layout.h), one "name value" line
 * each, for tests/integration/test_python_layout.sh to hold against the
 * file's debug information.  Exit 3: no layout for its version; 4: not a
 * CPython interpreter.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "analyzer/python/py_finder.h"
#include "analyzer/python/py_layout.h"

int main(int argc, char **argv)
{
	const struct py_layout *l;
	struct py_file pf;
	int fd, r;

	if (argc != 2) {
		fprintf(stderr, "usage: py_layout_dump FILE\n");
		return 2;
	}
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	r = py_finder__examine_fd(fd, &pf);
	close(fd);
	if (r) {
		fprintf(stderr, "%s: not a CPython interpreter (%s)\n", argv[1], strerror(-r));
		return 4;
	}
	printf("version 0x%08x\nruntime_vaddr 0x%llx\n", pf.version, (unsigned long long)pf.runtime_vaddr);
	l = py_layout__of(pf.version);
	if (!l) {
		fprintf(stderr, "%s: no layout for version 0x%08x\n", argv[1], pf.version);
		return 3;
	}
#define F(x) printf(#x " %u\n", (unsigned)l->x)
	F(rt_interp_head); F(is_threads_head); F(ts_next); F(ts_native_tid); F(ts_cframe); F(cf_current);
	F(fr_code); F(fr_previous); F(fr_entry); F(co_filename); F(co_qualname); F(co_firstlineno);
	F(str_state); F(str_ascii_data); F(str_compact_data);
#undef F
	return 0;
}
