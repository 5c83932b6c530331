/*
 * bench_hook_floor SECONDS: attaches bench/hook_floor.bpf.c's empty programs
 * for SECONDS, printing "attached" once they are live (bench/threads.sh's
 * floor: what a workload pays for the hooks alone).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "bench/hook_floor.skel.h"

int main(int argc, char **argv)
{
	struct hook_floor_bpf *skel;
	int secs = argc == 2 ? atoi(argv[1]) : 0;

	if (secs <= 0) {
		fprintf(stderr, "usage: bench_hook_floor SECONDS\n");
		return 2;
	}
	skel = hook_floor_bpf__open_and_load();
	if (!skel || hook_floor_bpf__attach(skel)) {
		fprintf(stderr, "bench_hook_floor: loading or attaching the empty programs failed: %s\n",
			strerror(errno));
		hook_floor_bpf__destroy(skel);
		return 1;
	}
	printf("attached\n");
	fflush(stdout);
	sleep((unsigned)secs);
	hook_floor_bpf__destroy(skel);
	return 0;
}
