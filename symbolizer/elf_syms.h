/*
 * Function symbols of one ELF file (executable or shared library), for
 * address -> name lookups.  The file is attacker-controlled: every header,
 * table, string index and note length is checked against the file size
 * before use; a bad table is skipped and counted, never trusted.
 *
 * Two phases, so a cache can share modules by build id without paying for a
 * symbol table it already has:
 *   es = elf_syms__open(fd);        headers, PT_LOAD segments, build id, debuglink
 *   elf_syms__build_id(es, &len);   ...cache lookup...
 *   elf_syms__load_symbols(es, n);  .symtab + .dynsym -> sorted table; drops the mapping
 *
 * Symbols: STT_FUNC and STT_GNU_IFUNC with a section, from .symtab and
 * .dynsym (and, without .symtab, Go functions from .gopclntab), merged, one per address (global over weak over local, sized over
 * unsized), sorted once; a size-0 symbol extends to the next symbol or the end
 * of its section.  A .symtab name's symbol version is dropped
 * ("memcpy@@GLIBC_2.14" -> "memcpy").  Names live in one arena.  All returned strings live until
 * elf_syms__free().  Not thread-safe; distinct objects may be used from
 * distinct threads.
 */
#ifndef EMBER_SYMBOLIZER_ELF_SYMS_H
#define EMBER_SYMBOLIZER_ELF_SYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ELF_SYMS_MAX_BUILD_ID 64
#define ELF_SYMS_MAX_SEGMENTS 64
#define ELF_SYMS_DEFAULT_MAX_SYMBOLS (4u << 20)

struct elf_syms;

struct elf_syms_info {
	bool is_dyn;              /* ET_DYN (PIE or shared library) vs ET_EXEC */
	bool has_symtab, has_dynsym;
	uint32_t nsegments;       /* PT_LOAD segments kept */
	uint64_t symbols;         /* in the table after merging */
	uint64_t dropped;         /* function symbols over the cap */
	uint64_t bad_symbols;     /* name index outside its string table, unterminated name, ... */
	uint64_t bad_tables;      /* symbol/string/note tables outside the file or malformed */
	uint64_t ignored_segments;/* PT_LOAD beyond ELF_SYMS_MAX_SEGMENTS or outside the file */
	uint64_t go_funcs;        /* symbols from .gopclntab (only read without .symtab) */
};

/*
 * Reads headers of the ELF file open at fd.  fd is not taken and must stay
 * open until elf_syms__load_symbols() or elf_syms__free(); fd's file offset is
 * not used.  NULL+errno: ENOEXEC (not an ELF executable/shared object, or
 * malformed headers), ENOMEM, or fstat's errno.
 */
struct elf_syms *elf_syms__open(int fd);

/*
 * Same for a separate debug file (objcopy --only-keep-debug, .build-id/xx/
 * rest.debug): its PT_LOAD segments may all lie outside the file, so none are
 * required.  Use it for symbols only; addresses go through the segments of
 * the binary it belongs to.
 */
struct elf_syms *elf_syms__open_debug(int fd);

/* Same over a memory image (copied; e.g. the vDSO). */
struct elf_syms *elf_syms__open_mem(const void *image, size_t len);

/*
 * Loads at most max_symbols (0 = ELF_SYMS_DEFAULT_MAX_SYMBOLS) function
 * symbols, then releases the file.  Returns the number of symbols (0 for a
 * fully stripped file is not an error), or -errno (ENOMEM; -EALREADY if
 * called twice).
 */
int elf_syms__load_symbols(struct elf_syms *es, size_t max_symbols);

/* Build id from a NT_GNU_BUILD_ID note, or NULL (then *ret_len = 0). */
const uint8_t *elf_syms__build_id(const struct elf_syms *es, size_t *ret_len);

/* File name in .gnu_debuglink and its CRC32, or NULL.  (Used by separate-debug-file lookup.) */
const char *elf_syms__debuglink(const struct elf_syms *es, uint32_t *ret_crc);

/*
 * File offset -> ELF virtual address through the PT_LOAD segment that holds
 * it (executable segments first).  This is what makes PIE, non-PIE and shared
 * libraries the same: runtime addr -> file offset comes from the process's
 * mapping, file offset -> vaddr from here.  Returns 0 or -ENOENT.
 */
int elf_syms__offset_to_vaddr(const struct elf_syms *es, uint64_t file_offset, uint64_t *ret_vaddr);

/*
 * The PT_LOAD segments kept, for a caller that translates offsets after
 * elf_syms__free() (analyzer/unwind keeps them per file, not the file):
 * their number, at most max of them copied to ret (ret may be NULL).
 */
struct elf_syms_seg {
	uint64_t off, vaddr, filesz, memsz;
	uint32_t flags;
};
size_t elf_syms__segments(const struct elf_syms *es, struct elf_syms_seg *ret, size_t max);
/* elf_syms__offset_to_vaddr() over such a copy: 0 or -ENOENT. */
int elf_syms__segs_offset_to_vaddr(const struct elf_syms_seg *segs, size_t n, uint64_t file_offset,
				   uint64_t *ret_vaddr);

/*
 * The inverse: ELF virtual address -> file offset (e.g. for uprobe attach
 * points or "module+offset" keys of a symbol).  Returns 0 or -ENOENT.
 */
int elf_syms__vaddr_to_offset(const struct elf_syms *es, uint64_t vaddr, uint64_t *ret_offset);

/* Symbol containing vaddr: 0 with name and vaddr - symbol start, or -ENOENT. */
int elf_syms__lookup(const struct elf_syms *es, uint64_t vaddr, const char **ret_name,
		     uint64_t *ret_offset);

/* Same, also giving the symbol's index (for per-symbol caches such as demangled names). */
int elf_syms__lookup_index(const struct elf_syms *es, uint64_t vaddr, size_t *ret_idx,
			   const char **ret_name, uint64_t *ret_offset);

size_t elf_syms__count(const struct elf_syms *es);
/* idx-th symbol in address order; 0 or -ENOENT. */
int elf_syms__symbol(const struct elf_syms *es, size_t idx, uint64_t *ret_addr, uint64_t *ret_size,
		     const char **ret_name);

void elf_syms__info(const struct elf_syms *es, struct elf_syms_info *ret);
/* Heap bytes held (symbol table, arena, segments), after load_symbols. */
size_t elf_syms__memory(const struct elf_syms *es);
/* Accepts NULL.  Returns NULL. */
struct elf_syms *elf_syms__free(struct elf_syms *es);

#endif
