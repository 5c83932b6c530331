/*
 * The ELF reader runs in the analyzer on files an attacker may control
 * (any binary a profiled process maps).  The input is presented as a file
 * through a memfd, exactly as the broker's fds are read (ELF_C_READ_MMAP),
 * and every accessor is exercised on whatever loads.  Invariants checked:
 * names are non-empty NUL-terminated strings, the table is sorted, a lookup
 * of a symbol's own address finds a symbol at that address.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbolizer/elf_syms.h"

static int memfd = -1;
static volatile size_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elf_syms *es;
	const uint8_t *bid;
	const char *name, *link;
	uint64_t prev = 0, vaddr, off;
	size_t bid_len, n;
	uint32_t crc;

	if (memfd < 0) {
		memfd = memfd_create("fuzz_elf", MFD_CLOEXEC);
		if (memfd < 0)
			abort();
	}
	if (ftruncate(memfd, 0) || (size && pwrite(memfd, data, size, 0) != (ssize_t)size))
		abort();

	es = elf_syms__open(memfd);
	if (!es)
		return 0;
	bid = elf_syms__build_id(es, &bid_len);
	if (bid) {
		if (bid_len == 0 || bid_len > ELF_SYMS_MAX_BUILD_ID)
			abort();
		sink += bid[bid_len - 1];
	}
	link = elf_syms__debuglink(es, &crc);
	if (link)
		sink += strlen(link) + crc;
	/* Small caps sometimes, so the drop path runs too. */
	if (elf_syms__load_symbols(es, size & 1 ? 3 : 0) < 0)
		goto out;
	n = elf_syms__count(es);
	for (size_t i = 0; i < n; i++) {
		uint64_t addr, sz;

		if (elf_syms__symbol(es, i, &addr, &sz, &name))
			abort();
		if (!name[0] || (i && addr <= prev))
			abort();
		prev = addr;
		if (sz && (elf_syms__lookup(es, addr, &name, &off) || off != 0))
			abort();
		sink += strlen(name);
	}
	for (size_t i = 0; i + 8 <= size && i < 256; i += 8) {
		uint64_t a;

		memcpy(&a, data + i, 8);
		if (elf_syms__offset_to_vaddr(es, a, &vaddr) == 0)
			sink += vaddr;
		if (elf_syms__lookup(es, a, &name, &off) == 0)
			sink += strlen(name) + off;
	}
	sink += elf_syms__memory(es);
out:
	elf_syms__free(es);
	return 0;
}
