#!/usr/bin/env bash
# Flame graph figures: add rate, folded I/O, SVG render for ~50k unique stacks.
set -eu
bin=${EMBER_BUILD:-build}/bench/bench_flamegraph
[ -x "$bin" ] || { echo "flamegraph: $bin not built" >&2; exit 1; }
exec "$bin" --stacks 50000 --samples 2000000
