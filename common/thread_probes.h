/*
 * gala-gopher's tprofiling sub-probe names and the events each records in
 * ember's thread profiling (THREAD_P_*, bpf/threads_abi.h): the one table
 * `ember profile --type threads --probes` and the REST API's /tprofiling
 * read.
 */
#ifndef EMBER_COMMON_THREAD_PROBES_H
#define EMBER_COMMON_THREAD_PROBES_H

#include <stddef.h>
#include <stdint.h>

/* Every event ember records: the default. */
#define THREAD_PROBES_ALL 0x1fu

/*
 * The bit of one sub-probe name (case-insensitive, as gala-gopher matches
 * them): oncpu, syscall_file, syscall_net, syscall_lock, syscall_sched.
 * 0 for a name gala-gopher knows that ember does not record (python_gc,
 * pthread_sync, oncpu_sample, mem_usage, mem_glibc, offcpu: *known = 1), or
 * for any other (*known = 0).
 */
uint32_t thread_probes__bit(const char *name, int *known);

/* A comma-separated list into *ret.  0, or -EINVAL with the first bad name in bad (cut to badlen). */
int thread_probes__parse(const char *list, uint32_t *ret, char *bad, size_t badlen);

/* The names of the bits in mask, comma-separated, into buf. */
void thread_probes__names(uint32_t mask, char *buf, size_t len);

#endif
