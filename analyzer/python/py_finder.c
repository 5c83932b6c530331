#include "analyzer/python/py_finder.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/python/py_layout.h"

const struct counter_def py_finder_counters[PYF_MAX] = {
	[PYF_FILES_EXAMINED] = { .name = "python_files_examined" },
	[PYF_FILES_PYTHON] = { .name = "python_interpreters_found" },
	[PYF_UNKNOWN_VERSION] = { .name = "python_unknown_versions" },
	[PYF_PROCS] = { .name = "python_processes" },
	[PYF_REFUSED] = { .name = "python_processes_refused" },
	[PYF_ERRORS] = { .name = "python_file_errors" },
	[PYF_UNSUPPORTED] = { .name = "python_unsupported_processes" },
};

struct py_finder {
	struct ctl_client *cc;
	bool unsupported;   /* the collector said this kernel cannot walk Python frames */
	bool look_unsupported;
	uint64_t st[PYF_MAX];
};

struct py_finder *py_finder__new(const struct py_finder_opts *o)
{
	struct py_finder *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->cc = o->cc;
	return f;
}

/* The 4 bytes at vaddr through the allocated section that holds them (Py_Version: an unsigned long, little-endian: its low half). */
static bool read_u32_at(Elf *elf, uint64_t vaddr, uint32_t *ret)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !(sh.sh_flags & SHF_ALLOC))
			continue;
		if (vaddr < sh.sh_addr || vaddr - sh.sh_addr >= sh.sh_size || sh.sh_size - (vaddr - sh.sh_addr) < 4)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || vaddr - sh.sh_addr + 4 > d->d_size)
			return false;
		memcpy(ret, (const char *)d->d_buf + (vaddr - sh.sh_addr), 4);
		return true;
	}
	return false;
}

static int examine_elf(Elf *elf, struct py_file *ret)
{
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t nph;
	uint64_t version_at = 0;
	bool runtime = false, version = false;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) || eh.e_machine != EM_X86_64 ||
	    gelf_getclass(elf) != ELFCLASS64 || elf_getphdrnum(elf, &nph))
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn)) && !(runtime && version)) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t n;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		n = d->d_size / sh.sh_entsize;
		for (size_t i = 0; i < n && !(runtime && version); i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_OBJECT || !s.st_value ||
			    s.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(elf, sh.sh_link, s.st_name);
			if (!name)
				continue;
			if (!runtime && !strcmp(name, "_PyRuntime")) {
				ret->runtime_vaddr = s.st_value;
				runtime = true;
			} else if (!version && !strcmp(name, "Py_Version") && (s.st_size == 4 || s.st_size == 8)) {
				version_at = s.st_value;
				version = true;
			}
		}
	}
	if (!runtime || !version)
		return -ENOENT;
	if (!read_u32_at(elf, version_at, &ret->version))
		return -ENOEXEC;
	for (size_t i = 0; i < nph && ret->nsegs < sizeof(ret->segs) / sizeof(ret->segs[0]); i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		ret->segs[ret->nsegs].vaddr = ph.p_vaddr;
		ret->segs[ret->nsegs].off = ph.p_offset;
		ret->segs[ret->nsegs].filesz = ph.p_filesz;
		ret->nsegs++;
	}
	return 0;
}

int py_finder__examine_fd(int fd, struct py_file *ret)
{
	Elf *elf;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -ENOEXEC;
	r = examine_elf(elf, ret);
	elf_end(elf);
	return r;
}

/* The file's interpreters and libraries: python3.X, libpython3.X.so (names only choose what to open). */
static bool h_wants(void *ctx, const struct mappings_look *l, const struct maps_entry *e)
{
	(void)ctx;
	(void)l;
	return e->kind == MAPS_FILE && (e->perms & MAPS_PERM_X) && !e->deleted &&
	       (!strncmp(e->name, "python3", 7) || !strncmp(e->name, "libpython3", 10));
}

static int h_examine(void *ctx, int fd, const struct maps_entry *e, void **ret_data)
{
	struct py_finder *f = ctx;
	struct py_file *pf = malloc(sizeof(*pf));
	int r;

	(void)e;
	*ret_data = NULL;
	if (!pf)
		return -ENOMEM;
	f->st[PYF_FILES_EXAMINED]++;
	r = py_finder__examine_fd(fd, pf);
	if (r) {
		free(pf);
		if (r != -ENOENT)
			f->st[PYF_ERRORS]++;
		return r == -ENOENT ? 0 : r;
	}
	f->st[PYF_FILES_PYTHON]++;
	*ret_data = pf;
	return 0;
}

static int h_attach(void *ctx, struct mappings_look *l, const struct maps_entry *e, void *data, int open_err)
{
	struct py_finder *f = ctx;
	const struct py_file *pf = data;
	const struct py_layout *lay;
	struct ctl_py_proc r = { .pid = l->pid };
	bool placed = false;
	int err;

	if (open_err) {
		l->again = true;
		return 0;
	}
	if (!pf)
		return 0;
	if (f->unsupported) {
		f->look_unsupported = true;
		return 0;
	}
	lay = py_layout__of(pf->version);
	if (!lay) {
		f->st[PYF_UNKNOWN_VERSION]++;
		return 0;
	}
	/* The load bias: where the segment holding the mapping's file offset landed. */
	for (uint32_t i = 0; i < pf->nsegs && !placed; i++)
		if (e->offset >= pf->segs[i].off && e->offset - pf->segs[i].off < pf->segs[i].filesz) {
			r.proc.runtime = e->start - (pf->segs[i].vaddr + (e->offset - pf->segs[i].off)) + pf->runtime_vaddr;
			placed = true;
		}
	if (!placed)
		return 0;
	r.proc.version = pf->version;
	r.proc.l = *lay;
	err = ctl_client__py_proc(f->cc, &r);
	if (err == -ESRCH || err == -EPERM)
		return 0;   /* the process exited first, or no stack task follows it any more */
	if (err == -EOPNOTSUPP) {
		f->unsupported = f->look_unsupported = true;
		return 0;
	}
	f->st[err ? PYF_REFUSED : PYF_PROCS]++;
	return err;
}

static int h_begin(void *ctx, struct mappings_look *l)
{
	struct py_finder *f = ctx;

	(void)l;
	f->look_unsupported = false;
	return 0;
}

static int h_end(void *ctx, struct mappings_look *l)
{
	struct py_finder *f = ctx;

	if (!f->look_unsupported)
		return l->err;
	f->st[PYF_UNSUPPORTED]++;
	return -EOPNOTSUPP;
}

static void h_release(void *ctx, void *data)
{
	(void)ctx;
	free(data);
}

void py_finder__handler(struct py_finder *f, struct mappings_handler *ret)
{
	*ret = (struct mappings_handler){
		.name = "python", .ctx = f, .begin = h_begin, .wants = h_wants, .examine = h_examine,
		.attach = h_attach, .end = h_end, .release = h_release,
	};
}

void py_finder__stats(const struct py_finder *f, uint64_t ret[PYF_MAX])
{
	memcpy(ret, f->st, sizeof(f->st));
}

struct py_finder *py_finder__free(struct py_finder *f)
{
	free(f);
	return NULL;
}
