/*
 * bench_hook_floor SECONDS [raw|persys|switch]: attaches one design's empty
 * programs (bench/hook_floor.bpf.c; raw by default) for SECONDS, printing
 * "attached" once they are live (bench/threads.sh's floors: what a workload
 * pays for the hooks alone).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "bench/hook_floor.skel.h"

/* Whether prog belongs to design: raw has floor_*, persys persys_* and the switch, switch the switch alone. */
static int in_design(const struct bpf_program *prog, const char *design)
{
	const char *n = bpf_program__name(prog);

	if (!strcmp(n, "floor_switch"))
		return 1;
	if (!strcmp(design, "raw"))
		return !strncmp(n, "floor_", 6);
	if (!strcmp(design, "persys"))
		return !strncmp(n, "persys_", 7);
	return 0;
}

int main(int argc, char **argv)
{
	struct hook_floor_bpf *skel;
	struct bpf_program *prog;
	const char *design = argc >= 3 ? argv[2] : "raw";
	int secs = argc >= 2 ? atoi(argv[1]) : 0;

	if (secs <= 0 || argc > 3 ||
	    (strcmp(design, "raw") && strcmp(design, "persys") && strcmp(design, "switch"))) {
		fprintf(stderr, "usage: bench_hook_floor SECONDS [raw|persys|switch]\n");
		return 2;
	}
	skel = hook_floor_bpf__open();
	if (!skel) {
		fprintf(stderr, "bench_hook_floor: opening the empty programs failed: %s\n", strerror(errno));
		return 1;
	}
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, in_design(prog, design));
	if (hook_floor_bpf__load(skel) || hook_floor_bpf__attach(skel)) {
		fprintf(stderr, "bench_hook_floor: loading or attaching the %s design's empty programs failed: %s\n",
			design, strerror(errno));
		hook_floor_bpf__destroy(skel);
		return 1;
	}
	printf("attached\n");
	fflush(stdout);
	sleep((unsigned)secs);
	hook_floor_bpf__destroy(skel);
	return 0;
}
