/*
 * What the analyzer reads of a file a profiled process maps, looking for a
 * CPython interpreter (analyzer/python/py_finder: its symbol tables through
 * libelf, Py_Version's bytes through the section holding them, the PT_LOAD
 * segments), and the names records of Python frames (analyzer/python/
 * py_names), both hostile.  The first input byte picks: even, the rest is
 * the file (in a memfd); odd, the rest is records of the ring, each as long
 * as struct ember_rec_pycode or cut short.
 *
 * Invariants: the finder answers 0, -ENOENT or -ENOEXEC; on 0 its segments
 * fit their array; a frame's text is printable ASCII without ';' or spaces,
 * "file:qualname".
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analyzer/python/py_finder.h"
#include "analyzer/python/py_names.h"

static void file(const uint8_t *data, size_t size)
{
	struct py_file pf;
	int fd = memfd_create("fuzz_py_finder", MFD_CLOEXEC), r;

	if (fd < 0)
		return;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return;
	}
	r = py_finder__examine_fd(fd, &pf);
	close(fd);
	if (r != 0 && r != -ENOENT && r != -ENOEXEC)
		abort();
	if (!r && pf.nsegs > sizeof(pf.segs) / sizeof(pf.segs[0]))
		abort();
}

static void records(const uint8_t *data, size_t size)
{
	struct py_names *pn = py_names__new(16);
	size_t rl = sizeof(struct ember_rec_pycode);
	char buf[256];

	if (!pn)
		return;
	while (size) {
		size_t n = size < rl ? size : rl;
		struct ember_rec_pycode r;
		int e = py_names__put(pn, data, (uint32_t)n);

		if ((n == rl) != (e == 0))
			abort();
		if (!e) {
			memcpy(&r, data, sizeof(r));
			if (py_names__frame(pn, r.tgid, r.addr, buf, sizeof(buf)) || !strchr(buf, ':'))
				abort();
			for (const char *p = buf; *p; p++)
				if (*p <= 0x20 || *p >= 0x7f || *p == ';')
					abort();
		}
		data += n;
		size -= n;
	}
	py_names__free(pn);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	if (data[0] & 1)
		records(data + 1, size - 1);
	else
		file(data + 1, size - 1);
	return 0;
}
