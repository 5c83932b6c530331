#!/usr/bin/env bash
# shm_ring between two processes, next to unix-socket baselines measured in
# the same run (see bench/bench_ring.c).  `make bench` builds build/bench/*
# first; this script builds nothing.  RING_BENCH_SCALE=0.1 for a quick run.
set -u
bin=${EMBER_BUILD:-build}/bench/bench_ring
[ -x "$bin" ] || { echo "ring: $bin is not built (run make bench)" >&2; exit 1; }
exec "$bin"
