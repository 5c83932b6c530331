/*
 * Memory (page fault) test workload: touch_pages() writes one byte into each
 * of N fresh 4 KiB pages (huge pages disabled for the region), once
 * start_gate.h's signal comes.
 * usage: mem_touch PAGES
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "start_gate.h"

__attribute__((noinline)) void touch_pages(char *p, long n)
{
	for (long i = 0; i < n; i++)
		p[i * 4096] = 1;
}

__attribute__((noinline)) void grow(long n)
{
	char *p = mmap(NULL, n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		exit(1);
	/* One fault per 4 KiB page: no transparent huge pages here. */
	madvise(p, n * 4096, MADV_NOHUGEPAGE);
	touch_pages(p, n);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000;
	start_gate__wait();
	grow(n);
	printf("touched %ld\n", n);
	sleep(1); /* let the last window close before exit */
	return 0;
}
