/*
 * Symbolizer throughput on a large ELF, beside `addr2line -f -C` and
 * `llvm-symbolizer` on the same addresses in the same run.
 *
 *   bench_symbolizer [-n ADDRS] [-l LABEL] FILE...
 *
 * For each FILE: N random addresses inside random function symbols are
 * chosen (fixed seed).  The file is mapped read-only into this process
 * (one mapping at offset 0, like any file mapping), so the full path runs:
 * /proc/self/maps -> file offset -> PT_LOAD -> symbol.  Figures:
 *   module_load    open + parse + sort of the symbol tables (start-up cost of a module)
 *   cold           first pass over the N addresses on a new symbolizer (maps read + module load included)
 *   warm           later passes (cached), stacks of 64 frames per call
 *   startup        new symbolizer -> first address of the file named (maps read, module load)
 *   addr2line      addr2line -f -C -e FILE on the same N addresses (one process, one pass)
 *   agreement      share of addresses where addr2line's (demangled) function name equals ours
 *   llvm-symbolizer cold: one process over the N addresses (start-up and parsing included);
 *                  warm: the N addresses fed twice to one process, rate of the second pass
 *                  (time(2N) - time(N)).  LLVM_SYMBOLIZER overrides the binary.
 *   module_memory  heap held by the cached module, and per symbol
 * then once: kallsyms load time and memory.
 * Output: one "name: value unit" line per figure.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "symbolizer/elf_syms.h"
#include "symbolizer/kallsyms.h"
#include "symbolizer/symbolizer.h"

#define BATCH 64

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* Label for figure names: basename up to the first '.', non-alnum -> '_'. */
static void make_label(const char *path, char *out, size_t len)
{
	const char *b = base_name(path);
	size_t i;

	for (i = 0; b[i] && b[i] != '.' && i + 1 < len; i++)
		out[i] = (b[i] >= 'a' && b[i] <= 'z') || (b[i] >= 'A' && b[i] <= 'Z') ||
				 (b[i] >= '0' && b[i] <= '9') ? b[i] : '_';
	out[i] = '\0';
}

/*
 * Runs argv (NULL-terminated) with the addresses (repeated `reps` times) on
 * stdin; fills names[i] (malloc'd, first pass) from its output of
 * `per_addr` lines per address (llvm-symbolizer ends each with a blank line)
 * and returns seconds, or < 0.
 */
static double run_tool(char *const argv[], const uint64_t *vaddrs, size_t n, int reps, int per_addr, char **names)
{
	char in_path[] = "/tmp/bench-sym-in-XXXXXX", out_path[] = "/tmp/bench-sym-out-XXXXXX";
	int in_fd = mkstemp(in_path), out_fd = mkstemp(out_path);
	FILE *in, *out;
	char *line = NULL;
	size_t cap = 0;
	double t0, dt;
	pid_t pid;
	int st;
	size_t i = 0;

	if (in_fd < 0 || out_fd < 0)
		return -1;
	in = fdopen(in_fd, "w");
	for (int r = 0; r < reps; r++)
		for (size_t k = 0; k < n; k++)
			fprintf(in, "0x%" PRIx64 "\n", vaddrs[k]);
	fclose(in);
	t0 = now_s();
	pid = fork();
	if (pid == 0) {
		int fd = open(in_path, O_RDONLY);

		dup2(fd, 0);
		dup2(out_fd, 1);
		int dn = open("/dev/null", O_WRONLY);

		dup2(dn, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		unlink(in_path);
		unlink(out_path);
		close(out_fd);
		return -1;
	}
	dt = now_s() - t0;
	out = fdopen(out_fd, "r");
	rewind(out);
	/* Function, then file:line (then a blank line for llvm-symbolizer).
	 * Whole lines: some C++ names run past any fixed buffer. */
	while (names && i < n && getline(&line, &cap, out) > 0) {
		line[strcspn(line, "\n")] = '\0';
		names[i++] = strdup(line);
		for (int k = 1; k < per_addr; k++)
			if (getline(&line, &cap, out) <= 0)
				break;
	}
	free(line);
	fclose(out);
	unlink(in_path);
	unlink(out_path);
	return dt;
}

static int bench_file(const char *path, size_t n)
{
	struct symbolizer_opts o;
	struct symbolizer_stats st;
	struct symbolizer *s;
	struct elf_syms *es;
	struct sym_frame *frames;
	uint64_t *vaddrs, *addrs;
	char **a2l, **ours, label[64];
	double t0, t_load, t_cold, t_warm, t_a2l, t_start, t_llvm1 = -1, t_llvm2 = -1;
	char *a2l_argv[] = { "addr2line", "-f", "-C", "-e", (char *)path, NULL };
	const char *llvm = getenv("LLVM_SYMBOLIZER");
	char obj_arg[4200];
	size_t nsyms, agree = 0, resolved = 0, warm_rounds = 0;
	struct stat sb;
	void *map;
	int fd;

	make_label(path, label, sizeof(label));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb)) {
		fprintf(stderr, "bench_symbolizer: %s: %s\n", path, strerror(errno));
		return -1;
	}
	t0 = now_s();
	es = elf_syms__open(fd);
	if (!es || elf_syms__load_symbols(es, 0) <= 0) {
		fprintf(stderr, "bench_symbolizer: %s: no symbols\n", path);
		elf_syms__free(es);
		close(fd);
		return -1;
	}
	t_load = now_s() - t0;
	nsyms = elf_syms__count(es);

	vaddrs = calloc(n, sizeof(*vaddrs));
	addrs = calloc(n, sizeof(*addrs));
	frames = calloc(n, sizeof(*frames));
	a2l = calloc(n, sizeof(*a2l));
	ours = calloc(n, sizeof(*ours));
	if (!vaddrs || !addrs || !frames || !a2l || !ours)
		return -1;
	map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -1;
	for (size_t i = 0; i < n;) {
		uint64_t a, sz, off;
		const char *nm;

		elf_syms__symbol(es, rnd() % nsyms, &a, &sz, &nm);
		if (!sz)
			continue;
		a += rnd() % sz;
		if (elf_syms__vaddr_to_offset(es, a, &off) || off >= (uint64_t)sb.st_size)
			continue;
		vaddrs[i] = a;
		addrs[i] = (uint64_t)(uintptr_t)map + off;
		i++;
	}

	/* Start-up: what a profile pays before its first frame of this binary has a name. */
	symbolizer__direct_opts(&o);
	t0 = now_s();
	s = symbolizer__new(&o);
	if (!s)
		return -1;
	symbolizer__resolve_user(s, (uint32_t)getpid(), addrs, 1, frames);
	t_start = now_s() - t0;
	symbolizer__free(s);

	s = symbolizer__new(&o);
	if (!s)
		return -1;
	t0 = now_s();
	for (size_t i = 0; i < n; i += BATCH) {
		size_t k = n - i < BATCH ? n - i : BATCH;

		symbolizer__resolve_user(s, (uint32_t)getpid(), addrs + i, k, frames + i);
		/* Names must be copied before the next call (documented lifetime). */
		for (size_t j = 0; j < k; j++)
			ours[i + j] = strdup(frames[i + j].resolved ? frames[i + j].name : "");
	}
	t_cold = now_s() - t0;
	for (size_t i = 0; i < n; i++)
		resolved += ours[i][0] != '\0';

	t0 = now_s();
	do {
		for (size_t i = 0; i < n; i += BATCH) {
			size_t k = n - i < BATCH ? n - i : BATCH;

			symbolizer__resolve_user(s, (uint32_t)getpid(), addrs + i, k, frames + i);
		}
		warm_rounds++;
	} while (now_s() - t0 < 1.0);
	t_warm = now_s() - t0;
	symbolizer__stats(s, &st);

	t_a2l = run_tool(a2l_argv, vaddrs, n, 1, 2, a2l);
	snprintf(obj_arg, sizeof(obj_arg), "--obj=%s", path);
	{
		static const char *cands[] = { "llvm-symbolizer", "llvm-symbolizer-14", "llvm-symbolizer-15", NULL };
		char *argv[] = { NULL, obj_arg, "--no-inlines", NULL };

		for (int c = 0; (llvm || cands[c]) && t_llvm1 < 0; c++) {
			argv[0] = (char *)(llvm ? llvm : cands[c]);
			t_llvm1 = run_tool(argv, vaddrs, n, 1, 3, NULL);
			if (t_llvm1 >= 0)
				t_llvm2 = run_tool(argv, vaddrs, n, 2, 3, NULL);
			if (llvm)
				break;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (a2l[i] && !strcmp(a2l[i], ours[i]))
			agree++;

	printf("symbolizer_%s_symbols: %zu count\n", label, nsyms);
	printf("symbolizer_%s_module_load: %.1f ms\n", label, t_load * 1e3);
	printf("symbolizer_%s_startup: %.3f s\n", label, t_start);
	printf("symbolizer_%s_cold: %.0f addr/s\n", label, (double)n / t_cold);
	printf("symbolizer_%s_warm: %.0f addr/s\n", label, (double)n * (double)warm_rounds / t_warm);
	if (t_a2l > 0) {
		printf("addr2line_%s: %.0f addr/s\n", label, (double)n / t_a2l);
		printf("symbolizer_%s_warm_vs_addr2line: %.0f x\n", label,
		       ((double)n * (double)warm_rounds / t_warm) / ((double)n / t_a2l));
		printf("symbolizer_%s_addr2line_agreement: %.1f %%\n", label, 100.0 * (double)agree / (double)n);
	} else {
		printf("addr2line_%s: 0 addr/s (addr2line failed)\n", label);
	}
	if (t_llvm1 > 0) {
		double cold = (double)n / t_llvm1, ours_cold = (double)n / t_cold;

		printf("llvm_symbolizer_%s_cold: %.0f addr/s\n", label, cold);
		if (t_llvm2 > t_llvm1)
			printf("llvm_symbolizer_%s_warm: %.0f addr/s\n", label, (double)n / (t_llvm2 - t_llvm1));
		printf("symbolizer_%s_cold_vs_llvm_symbolizer: %.2f x\n", label, ours_cold / cold);
	} else {
		printf("llvm_symbolizer_%s_cold: 0 addr/s (llvm-symbolizer not found)\n", label);
	}
	printf("symbolizer_%s_resolved: %.1f %%\n", label, 100.0 * (double)resolved / (double)n);
	printf("symbolizer_%s_module_memory: %.0f KiB\n", label, (double)st.module_bytes / 1024.0);
	printf("symbolizer_%s_bytes_per_symbol: %.1f B\n", label, (double)st.module_bytes / (double)nsyms);
	if (getenv("BENCH_SYM_VERBOSE")) {
		for (size_t i = 0, shown = 0; i < n && shown < 10; i++) {
			if (a2l[i] && strcmp(a2l[i], ours[i])) {
				fprintf(stderr, "differ 0x%" PRIx64 ": ours=%s addr2line=%s\n", vaddrs[i], ours[i], a2l[i]);
				shown++;
			}
		}
	}

	for (size_t i = 0; i < n; i++) {
		free(a2l[i]);
		free(ours[i]);
	}
	free(a2l);
	free(ours);
	symbolizer__free(s);
	munmap(map, (size_t)sb.st_size);
	elf_syms__free(es);
	free(vaddrs);
	free(addrs);
	free(frames);
	return 0;
}

static void bench_kallsyms(void)
{
	struct kallsyms *ks;
	struct kallsyms_stats st;
	double t0;
	int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	t0 = now_s();
	ks = kallsyms__read(fd, 0);
	close(fd);
	if (!ks) {
		printf("symbolizer_kallsyms_load: 0 ms (unavailable: %s)\n", strerror(errno));
		return;
	}
	kallsyms__stats(ks, &st);
	printf("symbolizer_kallsyms_load: %.1f ms\n", (now_s() - t0) * 1e3);
	printf("symbolizer_kallsyms_symbols: %" PRIu64 " count\n", st.symbols);
	printf("symbolizer_kallsyms_memory: %.0f KiB\n", (double)kallsyms__memory(ks) / 1024.0);
	kallsyms__free(ks);
}

int main(int argc, char **argv)
{
	size_t n = 20000;
	int opt, rc = 0;

	while ((opt = getopt(argc, argv, "n:")) != -1) {
		if (opt == 'n')
			n = strtoul(optarg, NULL, 0);
		else {
			fprintf(stderr, "usage: %s [-n ADDRS] FILE...\n", argv[0]);
			return 2;
		}
	}
	if (optind >= argc || n == 0) {
		fprintf(stderr, "usage: %s [-n ADDRS] FILE...\n", argv[0]);
		return 2;
	}
	for (int i = optind; i < argc; i++)
		if (bench_file(argv[i], n))
			rc = 1;
	bench_kallsyms();
	return rc;
}
