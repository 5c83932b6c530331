#!/usr/bin/env bash
# How long one network report of N listed exchanges keeps the analyzer away
# from its ring (see bench/bench_net_report.c), with jemalloc as the analyzer
# links it.  `make bench` builds build/bench/* first; this script builds
# nothing.  NET_REPORT_BENCH_N="20000 100000" picks the report sizes.
set -u
bin=${EMBER_BUILD:-build}/bench/bench_net_report
[ -x "$bin" ] || { echo "net_report: $bin is not built (run make bench)" >&2; exit 1; }
je=$(ls /usr/lib/*-linux-gnu/libjemalloc.so.2 2>/dev/null | head -1)
# shellcheck disable=SC2086
LD_PRELOAD=${je:-} exec "$bin" ${NET_REPORT_BENCH_N:-}
