/*
 * /proc/kallsyms text from the broker: the parser must skip anything
 * malformed.  Invariants: a lookup result lies at or below the address and
 * names a non-empty symbol; module labels keep their brackets.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbolizer/kallsyms.h"

static int memfd = -1;
static volatile size_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kallsyms *ks;

	if (memfd < 0) {
		memfd = memfd_create("fuzz_kallsyms", MFD_CLOEXEC);
		if (memfd < 0)
			abort();
	}
	if (ftruncate(memfd, 0) || (size && pwrite(memfd, data, size, 0) != (ssize_t)size) ||
	    lseek(memfd, 0, SEEK_SET))
		abort();
	ks = kallsyms__read(memfd, size & 1 ? 5 : 0);
	if (!ks)
		return 0;
	for (size_t i = 0; i + 8 <= size && i < 256; i += 8) {
		const char *name, *mod;
		uint64_t a, off;

		memcpy(&a, data + i, 8);
		if (kallsyms__lookup(ks, a, &name, &off, &mod) == 0) {
			if (off > a || !name[0] || (mod && (mod[0] != '[' || mod[strlen(mod) - 1] != ']')))
				abort();
			sink += strlen(name) + (kallsyms__find_name(ks, name) != 0);
		}
	}
	sink += kallsyms__memory(ks);
	kallsyms__free(ks);
	return 0;
}
