/*
 * analyzer/tls/tls_probe from the command line, for tests/integration/
 * test_tls_offsets.sh (a cross-check against objdump):
 *
 *   tls_probe_dump FILE           the probe points of FILE:
 *                                   lib L go V n N rc R
 *                                   point OFF FN KIND INSN     (OFF in hex, file offset)
 *   tls_probe_dump --insns FILE   every instruction boundary of a linear sweep
 *                                 of each executable section, started again at
 *                                 each symbol as objdump does:
 *                                   # NAME OFF ADDR SIZE       (hex)
 *                                   OFF LEN                    (hex offset, decimal length;
 *                                                               -1: not decoded, one byte skipped)
 *   tls_probe_dump --at FILE      reads hex file offsets on stdin, prints "OFF LEN BYTE" for
 *                                 each (the decoder alone, at boundaries another tool chose;
 *                                 BYTE: the first byte there, in hex)
 *   tls_probe_dump --verify FILE  the points, then the collector's check of them on the same
 *                                 file (collector/tls_verify), as it checks a TLS_ATTACH:
 *                                   verify ok N
 *                                   verify refused INDEX OFF COOKIE WHY   (exit 1)
 *
 * Exit 0, or 1 with a message on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer/tls/tls_probe.h"
#include "bpf/net_abi.h"
#include "collector/tls_verify.h"
#include "common/x86_insn.h"

static int points(int fd)
{
	struct tls_probe_set set;
	int rc = tls_probe__find_fd(fd, &set);

	printf("lib %d go %u n %zu rc %d\n", set.lib, set.go_version, set.n, rc);
	for (size_t i = 0; i < set.n; i++)
		printf("point %" PRIx64 " %u %u %u\n", set.pts[i].off, set.pts[i].fn, set.pts[i].kind, set.pts[i].insn);
	return rc && rc != -ENOTSUP ? 1 : 0;
}

static int verify(int fd)
{
	struct ctl_tls_point pts[TLS_MAX_POINTS];
	struct tls_verify_verdict v;
	struct tls_probe_set set;
	int rc = points(fd), err;

	if (tls_probe__find_fd(fd, &set))
		set.n = 0;
	for (size_t i = 0; i < set.n; i++)
		pts[i] = (struct ctl_tls_point){ set.pts[i].off, NET_TLS_COOKIE(set.pts[i].fn, set.pts[i].kind) };
	err = tls_verify__points(fd, pts, (uint32_t)set.n, &v);
	if (!err) {
		printf("verify ok %zu\n", set.n);
		return rc;
	}
	if (err == -EINVAL)
		printf("verify refused %u %" PRIx64 " %" PRIx64 " %s\n", v.index, pts[v.index].off, pts[v.index].cookie,
		       tls_verify__why_name(v.why));
	else
		printf("verify error %s\n", strerror(-err));
	return 1;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Addresses of the symbols defined in section ndx (from .symtab and .dynsym), sorted. */
static uint64_t *symbols_in(Elf *elf, size_t ndx, size_t *ret_n)
{
	Elf_Scn *scn = NULL;
	uint64_t *v = NULL;
	size_t n = 0, cap = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;

			if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx != ndx || GELF_ST_TYPE(sym.st_info) == STT_SECTION)
				continue;
			if (n == cap) {
				uint64_t *nv = realloc(v, (cap = cap ? 2 * cap : 1024) * sizeof(*v));

				if (!nv) {
					free(v);
					*ret_n = 0;
					return NULL;
				}
				v = nv;
			}
			v[n++] = sym.st_value;
		}
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_u64);
	*ret_n = n;
	return v;
}

/*
 * A linear sweep of each executable section, started again at every symbol
 * (as objdump does: a symbol is where code begins again after data).
 */
static int insns(int fd, const uint8_t *img, size_t size)
{
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (!elf || elf_getshdrstrndx(elf, &shstrndx)) {
		fprintf(stderr, "tls_probe_dump: not an ELF file with sections\n");
		return 1;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		uint64_t *syms;
		size_t nsyms, k = 0;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR) ||
		    sh.sh_offset > size || sh.sh_size > size - sh.sh_offset)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		printf("# %s %" PRIx64 " %" PRIx64 " %" PRIx64 "\n", name ? name : "?", sh.sh_offset, sh.sh_addr,
		       sh.sh_size);
		syms = symbols_in(elf, elf_ndxscn(scn), &nsyms);
		for (uint64_t pos = 0; pos < sh.sh_size;) {
			int len = x86_insn__len(img + sh.sh_offset + pos, sh.sh_size - pos);
			uint64_t next = pos + (len > 0 ? (uint64_t)len : 1);

			printf("%" PRIx64 " %d\n", sh.sh_offset + pos, len);
			while (k < nsyms && syms[k] <= sh.sh_addr + pos)
				k++;
			if (k < nsyms && syms[k] < sh.sh_addr + next)
				next = syms[k] - sh.sh_addr;   /* a symbol inside: start again there */
			pos = next;
		}
		free(syms);
	}
	elf_end(elf);
	return 0;
}

static int at(const uint8_t *img, size_t size)
{
	char line[64];

	while (fgets(line, sizeof(line), stdin)) {
		char *end;
		uint64_t off = strtoull(line, &end, 16);

		if (end == line)
			continue;
		if (off < size)
			printf("%" PRIx64 " %d %02x\n", off, x86_insn__len(img + off, size - off), img[off]);
		else
			printf("%" PRIx64 " -1 -1\n", off);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc == 3 ? argv[1] : NULL, *path = argv[argc - 1];
	struct stat st;
	uint8_t *img;
	int fd, rc;

	if ((argc != 2 && argc != 3) ||
	    (mode && strcmp(mode, "--insns") && strcmp(mode, "--at") && strcmp(mode, "--verify"))) {
		fprintf(stderr, "usage: tls_probe_dump [--insns|--at|--verify] FILE\n");
		return 2;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "tls_probe_dump: %s: %s\n", path, strerror(errno));
		return 1;
	}
	elf_version(EV_CURRENT);
	if (!mode || !strcmp(mode, "--verify")) {
		rc = mode ? verify(fd) : points(fd);
		close(fd);
		return rc;
	}
	img = mmap(NULL, st.st_size ? (size_t)st.st_size : 1, PROT_READ, MAP_PRIVATE, fd, 0);
	if (img == MAP_FAILED) {
		fprintf(stderr, "tls_probe_dump: %s: %s\n", path, strerror(errno));
		return 1;
	}
	rc = !strcmp(mode, "--insns") ? insns(fd, img, (size_t)st.st_size) : at(img, (size_t)st.st_size);
	munmap(img, st.st_size ? (size_t)st.st_size : 1);
	close(fd);
	return rc;
}
