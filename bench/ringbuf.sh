#!/usr/bin/env bash
# The BPF ring buffer's price per record, by record size and by where its
# reader runs (see bench/bench_ringbuf.c).  `make bench` builds build/bench/*
# first; this script builds nothing.  RINGBUF_SECONDS (1) a cell, RINGBUF_ROUNDS (3).
set -u
bin=${EMBER_BUILD:-build}/bench/bench_ringbuf
[ -x "$bin" ] || { echo "ringbuf: $bin is not built (run make bench)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "ringbuf: needs root (BPF_PROG_TEST_RUN)" >&2; exit 1; }
exec "$bin" "${RINGBUF_SECONDS:-1}" "${RINGBUF_ROUNDS:-3}"
