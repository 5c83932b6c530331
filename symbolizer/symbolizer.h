/*
 * Stack address -> function name, for the unprivileged analyzer.
 *
 * The analyzer cannot open /proc/<pid>/maps, the target's binaries or (with
 * kptr_restrict) /proc/kallsyms itself: every file comes as an fd from the
 * privileged collector's fd broker, through the callbacks in
 * struct symbolizer_opts.  symbolizer__direct_opts() supplies callbacks that
 * open the files directly, for tests and root tooling.
 *
 * User frames:  addr --/proc/<pid>/maps--> (file, file offset)
 *                    --PT_LOAD--> ELF vaddr --.symtab/.dynsym--> name + offset.
 * Kernel frames: /proc/kallsyms, parsed once and sorted.
 *
 * Caches: ELF modules are keyed by build id (else dev+inode) and shared by
 * every process that maps them; they are evicted LRU beyond max_modules.
 * Each pid's maps are cached, re-read when an address falls outside every
 * known mapping (at most once per maps_refresh_ms), and dropped by
 * symbolizer__forget_pid() -- call it when a process exits or execs.
 *
 * Frames are never dropped: an address that cannot be named gets the name
 * "[unknown]" plus a module label and an offset (see struct sym_frame).
 *
 * Addresses are used as given.  For return addresses (every user frame but
 * the first), callers wanting the call site should pass addr - 1.
 *
 * Lifetimes: every string and build id pointer in a struct sym_frame is owned
 * by the symbolizer and stays valid until the next call of
 * symbolizer__resolve_user(), symbolizer__resolve_kernel(),
 * symbolizer__refresh_perf_map(), symbolizer__forget_pid() or
 * symbolizer__free() on the same object (a later call may evict the module
 * or re-read the maps they point into).  Copy what you keep.
 *
 * Not thread-safe: use one symbolizer per thread.  Library code: it never
 * logs or prints; it returns -errno and counts (symbolizer__stats()).
 *
 * Depth:
 *  - Separate debug files for binaries without .symtab: by build id
 *    (open_debug_build_id), then .gnu_debuglink (open_debuglink; the debug
 *    file's CRC32 must match the link's), then debuginfod (open_debuginfod).
 *    Symbols come from the debug file, addresses through the binary's own
 *    PT_LOAD segments; a debug file whose build id differs is rejected.
 *  - Stripped Go binaries: names from .gopclntab (see gopclntab.h).
 *  - Perf maps (open_perf_map: /tmp/perf-<pid>.map in the target's mount
 *    namespace) name addresses in anonymous / JIT mappings; read by
 *    symbolizer__preload(), re-read when an address in such a mapping misses
 *    and by symbolizer__refresh_perf_map() (each at most once per
 *    perf_map_refresh_ms).
 *  - C++ and Rust names are demangled lazily with libiberty, cached per
 *    module (bounded by max_demangle_bytes), unless no_demangle.
 */
#ifndef EMBER_SYMBOLIZER_H
#define EMBER_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/counters.h"

struct symbolizer_opts {
	size_t sz;     /* sizeof(struct symbolizer_opts); larger sizes need zeroed tails */
	void *ctx;     /* passed to every callback */
	/*
	 * Returns an O_RDONLY fd of /proc/<pid>/maps, or -errno.  The
	 * symbolizer closes it.
	 */
	int (*open_maps)(void *ctx, uint32_t pid);
	/*
	 * Returns an O_RDONLY fd of the file that pid maps at [start, end), or
	 * -errno.  path is the file's path as seen in the process's maps, or
	 * NULL if it was deleted (only the mapping itself can name it then).
	 * The fd must be the mapped file (e.g. /proc/<pid>/map_files/<start>-<end>),
	 * not whatever is now at path.  The symbolizer closes it.
	 */
	int (*open_mapped_file)(void *ctx, uint32_t pid, uint64_t start, uint64_t end, const char *path);
	/* Returns an fd of /proc/kallsyms or -errno.  The symbolizer closes it. */
	int (*open_kallsyms)(void *ctx);
	size_t max_modules;            /* ELF modules cached, 0 = 256 */
	size_t max_pids;               /* pids whose maps are cached, 0 = 1024 */
	size_t max_symbols_per_module; /* 0 = 4M; beyond, symbols are dropped and counted */
	/*
	 * Minimum interval between two re-reads of one pid's maps caused by
	 * addresses outside every known mapping: 0 = 250 ms, < 0 = no limit.
	 */
	int64_t maps_refresh_ms;
	/* Same for /proc/kallsyms on a kernel address no symbol covers: 0 = 60 s, < 0 = no limit. */
	int64_t kallsyms_refresh_ms;
	/* Heap budget for cached modules (LRU eviction beyond it, like max_modules): 0 = 512 MiB. */
	size_t max_cache_bytes;
	/*
	 * [vdso] frames are named from this process's own vDSO (same kernel,
	 * same image) unless this is set.
	 */
	bool no_vdso;
	/* ---- NULL / 0 = off or default ---- */
	/* fd of the process's perf map, or -errno.  The symbolizer closes it. */
	int (*open_perf_map)(void *ctx, uint32_t pid);
	/* fd of <root>/usr/lib/debug/.build-id/xx/rest.debug for build_id (2..64 bytes), or -errno. */
	int (*open_debug_build_id)(void *ctx, uint32_t pid, const uint8_t *build_id, size_t len);
	/*
	 * fd of the .gnu_debuglink file `name` (a validated basename) for the
	 * binary pid maps at [start, end): next to it, in .debug/ beside it, or
	 * under /usr/lib/debug/<its dir>.  path: as in open_mapped_file.
	 */
	int (*open_debuglink)(void *ctx, uint32_t pid, uint64_t start, uint64_t end, const char *path,
			      const char *name);
	/* fd of a debug file fetched by build id (debuginfod), or -errno.  Tried last. */
	int (*open_debuginfod)(void *ctx, const uint8_t *build_id, size_t len);
	int64_t perf_map_refresh_ms;   /* 0 = 1000 ms, < 0 = no limit */
	size_t max_perf_map_entries;   /* per pid, 0 = 1M */
	size_t max_demangle_bytes;     /* per module cache, 0 = 16 MiB */
	bool no_demangle;
};

enum sym_reason {
	SYM_OK = 0,
	SYM_NO_MAPPING,         /* address in no mapping of the process; module "[unmapped]" */
	SYM_NO_MAPS,            /* the pid's maps could not be read; module "[unmapped]" */
	SYM_ANON,               /* anonymous memory (JIT code, ...); module "[anon]" */
	SYM_SPECIAL,            /* [heap], [stack], [vsyscall], [anon:x], ...; module is that label */
	SYM_OPEN_FAILED,        /* the file could not be obtained; module is its basename */
	SYM_BAD_ELF,            /* not an ELF executable/library, or malformed */
	SYM_NO_SYMBOL,          /* no function symbol covers the address (stripped, gap) */
	SYM_KERNEL_UNAVAILABLE, /* kallsyms could not be read or was hidden (kptr_restrict) */
	SYM_REASON_MAX
};

struct sym_frame {
	const char *name;          /* symbol name, or "[unknown]" */
	/*
	 * User: basename of the mapped file ("libc.so.6"), "[vdso]", "[anon]",
	 * "[unmapped]", "[heap]"...  Kernel: "[kernel]" or the kallsyms module
	 * label ("[ext4]").
	 */
	const char *module;
	/*
	 * resolved: addr - symbol start.  Otherwise: the file offset in a file
	 * mapping (so "libfoo.so+0x1234" can be symbolized elsewhere), addr -
	 * mapping start for [anon]/[heap]/..., the address itself for
	 * [unmapped] and kernel frames.
	 */
	uint64_t offset;
	/* Canonical frame key for remote symbolization: (build id, file offset); 0/NULL when none. */
	uint64_t file_offset;
	const uint8_t *build_id;
	size_t build_id_len;
	enum sym_reason reason;
	bool resolved;
	bool kernel;
	bool jit;                  /* named by the process's perf map */
};

struct symbolizer_stats {
	uint64_t resolved, unknown;       /* frames, user + kernel */
	uint64_t by_reason[SYM_REASON_MAX]; /* unknown frames per enum sym_reason (SYM_OK unused) */
	uint64_t no_mapping;              /* = by_reason[SYM_NO_MAPPING] + by_reason[SYM_NO_MAPS] */
	uint64_t open_failed;             /* broker/open failures (files, maps, kallsyms) */
	uint64_t kernel_resolved, kernel_unknown;
	uint64_t modules_loaded;          /* ELF symbol tables parsed */
	uint64_t modules_cached;          /* currently cached (including bad-ELF markers) */
	uint64_t modules_shared;          /* files matched to a cached module by build id */
	uint64_t modules_evicted;
	uint64_t module_bytes;            /* heap held by cached modules */
	uint64_t bad_elf;                 /* files rejected as ELF */
	uint64_t symbols_dropped;         /* over max_symbols_per_module, or malformed */
	uint64_t maps_reads, maps_refresh_limited, maps_bad_lines, pids_cached, pids_evicted;
	uint64_t kallsyms_loads, kallsyms_symbols;
	/* separate debug files */
	uint64_t debug_files_loaded;      /* separate debug files used for a module */
	uint64_t debug_files_rejected;    /* wrong build id / CRC, not ELF */
	uint64_t debuginfod_fetches;      /* debug files obtained through open_debuginfod */
	uint64_t go_modules;              /* modules named from .gopclntab */
	uint64_t perf_map_reads, perf_map_refresh_limited, perf_map_bad_lines, perf_map_dropped;
	uint64_t perf_map_resolved;       /* frames named from a perf map */
	uint64_t perf_map_bytes;          /* heap held by cached perf maps */
	uint64_t demangled, demangle_failed, demangle_uncached;
};

/* NULL+errno: EINVAL (bad sz or non-zero unknown tail), ENOMEM. */
struct symbolizer *symbolizer__new(const struct symbolizer_opts *opts);

/*
 * Fills ret[0..n) for user addresses of process pid.  Returns the number of
 * frames resolved to a symbol, or -EINVAL (NULL arguments).  Never fails
 * per frame: unresolved frames are labelled (see struct sym_frame).
 */
int symbolizer__resolve_user(struct symbolizer *s, uint32_t pid, const uint64_t *addrs, size_t n,
			     struct sym_frame *ret);

/* Same for kernel addresses. */
int symbolizer__resolve_kernel(struct symbolizer *s, const uint64_t *addrs, size_t n,
			       struct sym_frame *ret);

/*
 * Reads pid's maps and perf map and loads every executable file it maps, so
 * that its stacks can still be symbolized after it exits (the broker can no
 * longer open its files then).  Returns the number of modules available, or
 * -errno.
 */
int symbolizer__preload(struct symbolizer *s, uint32_t pid);
/*
 * Re-reads pid's perf map if perf_map_refresh_ms has passed since the last
 * read, and pid had one or maps anonymous executable code (a JIT whose map
 * may come later): code a JIT names while pid runs stays nameable after it
 * exits.  The file is parsed again only if its size or mtime changed.
 * Returns 1 if it looked, 0 if not.
 */
int symbolizer__refresh_perf_map(struct symbolizer *s, uint32_t pid);
/* Drops pid's cached maps (modules stay cached for other processes). */
void symbolizer__forget_pid(struct symbolizer *s, uint32_t pid);

/*
 * Flame-graph text of a frame, one rule: resolved -> "name"; unresolved ->
 * "module+0xoffset" (e.g. "libfoo.so+0x1234", "[anon]+0x40",
 * "[unmapped]+0x7f00dead", "[kernel]+0xffffffff81234567").  Bytes that
 * would break folded stacks (';', control characters) become '_'.
 * Returns the length written (excluding NUL), -ENOSPC if truncated (buf is
 * still NUL-terminated), -EINVAL on NULL arguments or len 0.
 */
int sym_frame__format(const struct sym_frame *f, char *buf, size_t len);

const char *sym_reason__str(enum sym_reason r);

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *ret);

/*
 * The counters its owner publishes (common/counters.h), by enum
 * symbolizer_counter: a few of struct symbolizer_stats, which stays the
 * library's full account for its tests and benchmark.
 */
enum symbolizer_counter {
	SYMC_RESOLVED,          /* frames named, user + kernel */
	SYMC_UNKNOWN,           /* frames left "[unknown]" */
	SYMC_MAX
};
extern const struct counter_def symbolizer_counters[SYMC_MAX];
void symbolizer__counters(const struct symbolizer *s, uint64_t ret[SYMC_MAX]);
/* Accepts NULL.  Returns NULL. */
struct symbolizer *symbolizer__free(struct symbolizer *s);

/*
 * Direct callbacks for root tools and tests: /proc/<pid>/maps,
 * /proc/<pid>/map_files/<start>-<end> (then /proc/<pid>/root/<path>),
 * /proc/kallsyms, and (debugpath.h patterns) the perf map, build-id and
 * debuglink files under the target's root.  For those last three, ctx may
 * point to a NUL-terminated directory used as the root instead of
 * /proc/<pid>/root (tests); NULL = the target's root.  The perf map direct
 * callback uses the pid's NSpid.  symbolizer__direct_opts() zeroes *ret and
 * sets sz and all the direct callbacks.
 */
int symbolizer__direct_open_maps(void *ctx, uint32_t pid);
int symbolizer__direct_open_mapped_file(void *ctx, uint32_t pid, uint64_t start, uint64_t end,
					const char *path);
int symbolizer__direct_open_kallsyms(void *ctx);
int symbolizer__direct_open_perf_map(void *ctx, uint32_t pid);
int symbolizer__direct_open_debug_build_id(void *ctx, uint32_t pid, const uint8_t *build_id, size_t len);
int symbolizer__direct_open_debuglink(void *ctx, uint32_t pid, uint64_t start, uint64_t end, const char *path,
				      const char *name);
void symbolizer__direct_opts(struct symbolizer_opts *ret);

#endif
