#!/usr/bin/env bash
# Continuous profiling: the monitors' analyzer CPU per 100 monitored processes
# (bench_monitors: N idle processes on this host's /proc, the default
# intervals, thread CPU time per tick), for 100 and 1000 processes.
set -u
B=${EMBER_BUILD:-build}/bench/bench_monitors
[ -x "$B" ] || { echo "continuous: SKIP: $B not built"; exit 0; }
for n in 100 1000; do
  "$B" "$n" | sed "s/^/continuous ($n): /"
done
