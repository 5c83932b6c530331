#!/usr/bin/env bash
# L7 parser throughput per protocol (MB/s, exchanges/s) on one core, and
# allocations per exchange in steady state.  Targets: HTTP/1 >= 1000 MB/s
# (its synthetic stream is ~85% headers), every other protocol >= 300 MB/s,
# HTTP/1 0 allocations per exchange.  Parsers without a generator in
# bench/bench_l7.c are listed on stderr.
set -eu
bin=${EMBER_BUILD:-build}/bench/bench_l7
[ -x "$bin" ] || { echo "l7: $bin not built" >&2; exit 1; }
pin=""
command -v taskset >/dev/null && pin="taskset -c 0"
exec $pin "$bin" --seconds "${L7_BENCH_SECONDS:-1}"
