/*
 * Unwind table build (analyzer/unwind/eh_frame.h): time and memory per file.
 *
 *   bench_unwind_tables [-r REPEAT] [--dump] FILE...
 *
 * For each FILE: rows built from its .eh_frame (or .debug_frame), the best
 * of REPEAT builds (open + parse + sort + merge), the table's bytes as the
 * BPF map holds them (8 per row), and the share of rows the unwinder walks
 * with frame pointers (UNW_NONE: gaps between functions, unsupported rules).
 * --dump prints every row ("pc type cfa_off fp_off"), for checking by hand
 * against `readelf --debug-dump=frames-interp`.
 * Output: one "name: value unit" line per figure.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analyzer/unwind/eh_frame.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static const char *const type[] = { "none", "rsp", "rbp", "plt", "signal", "end" };
	int repeat = 5, dump = 0, i = 1;
	size_t total_rows = 0;
	double total_s = 0;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-r") && i + 1 < argc)
			repeat = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--dump"))
			dump = 1;
		else {
			fprintf(stderr, "usage: bench_unwind_tables [-r REPEAT] [--dump] FILE...\n");
			return 2;
		}
	}
	if (i == argc || repeat < 1) {
		fprintf(stderr, "usage: bench_unwind_tables [-r REPEAT] [--dump] FILE...\n");
		return 2;
	}
	for (; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
		struct unwind_row *rows = NULL;
		struct eh_frame_stats st;
		size_t n = 0, none = 0;
		double best = 1e9;
		const char *name = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];

		if (fd < 0) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		for (int r = 0; r < repeat; r++) {
			double t0 = now_s();
			int err;

			free(rows);
			err = eh_frame__rows_fd(fd, 0, &rows, &n, &st);
			if (err) {
				fprintf(stderr, "%s: %s\n", argv[i], strerror(-err));
				return 1;
			}
			if (now_s() - t0 < best)
				best = now_s() - t0;
		}
		close(fd);
		for (size_t k = 0; k < n; k++) {
			none += rows[k].type == UNW_NONE;
			if (dump)
				printf("%08x %s %u %d\n", rows[k].pc, rows[k].type < UNW_TYPE_MAX ? type[rows[k].type] : "?",
				       rows[k].cfa_off, rows[k].fp_off8 * 8);
		}
		printf("unwind_table_%s_fdes: %llu\n", name, (unsigned long long)st.fdes);
		printf("unwind_table_%s_rows: %zu (%llu before merging; %.1f%% frame-pointer rows, %llu unsupported rules, %llu bad entries)\n",
		       name, n, (unsigned long long)st.raw_rows, n ? 100.0 * (double)none / (double)n : 0.0,
		       (unsigned long long)st.unsupported, (unsigned long long)st.bad_entries);
		printf("unwind_table_%s_build: %.2f ms (best of %d)\n", name, best * 1e3, repeat);
		printf("unwind_table_%s_memory: %zu KiB in the BPF map\n", name, n * sizeof(struct unwind_row) / 1024);
		total_rows += n;
		total_s += best;
		free(rows);
	}
	printf("unwind_table_total: %zu rows, %zu KiB, %.2f ms\n", total_rows, total_rows * sizeof(struct unwind_row) / 1024,
	       total_s * 1e3);
	return 0;
}
