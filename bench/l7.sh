#!/usr/bin/env bash
# L7 parser throughput per protocol (MB/s, exchanges/s) on one core, and
# allocations per exchange in steady state.  Targets: HTTP/1 >= 1000 MB/s
# (its synthetic stream is ~90% headers), every other protocol >= 300 MB/s,
# HTTP/1 0 allocations per exchange.
set -eu
bin=${EMBER_BUILD:-build}/bench/bench_l7
[ -x "$bin" ] || { echo "l7: $bin not built" >&2; exit 1; }
exec taskset -c 0 "$bin" --seconds "${L7_BENCH_SECONDS:-1}" 2>/dev/null || exec "$bin" --seconds "${L7_BENCH_SECONDS:-1}"
