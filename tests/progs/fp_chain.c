/*
 * nofp_chain built with frame pointers (-O2 -fno-omit-frame-pointer, the
 * Makefile's PROG_CFLAGS_fp_chain): the same workload walked both ways, for
 * bench/unwind.sh's tables-vs-frame-pointers comparison.
 */
#include "nofp_chain.c"
