#!/usr/bin/env bash
# Parse throughput of the MySQL, PostgreSQL, Redis, Kafka, CQL and MongoDB parsers
# (bench/bench_l7_b.c): MB/s and exchanges/s per protocol, one core.
set -eu
cd "$(dirname "$0")/.."
bin=${EMBER_BUILD:-build}/bench/bench_l7_b
[ -x "$bin" ] || { echo "l7_b: $bin not built (make tests)" >&2; exit 1; }
exec "$bin" "${L7_BENCH_SECS:-1}"
