#!/usr/bin/env bash
# Two builds' on-CPU samplers side by side: bench/lib/ab_oncpu.sh OLD_BUILD NEW_BUILD [ROUNDS]
# (each a build directory with ember and progs/oncpu_chain, e.g. a worktree of an older commit).
# One oncpu_chain process is profiled by a private agent of each build in turn, 6 s each,
# alternating, ROUNDS (5) times; each line is one run's mean BPF ns per run of oncpu_sample
# (kernel.bpf_stats_enabled), taken over the middle 3 s.  Not part of `make bench`: a tool for
# the question "did this change slow the sampler?".
set -u
OLD=$1 NEW=$2 ROUNDS=${3:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/ember-ab.XXXXXX)
sysctl -qw kernel.bpf_stats_enabled=1
"$NEW/progs/oncpu_chain" 600 >/dev/null & WP=$!
trap 'kill $WP 2>/dev/null; sysctl -qw kernel.bpf_stats_enabled=0; rm -rf "$T"' EXIT
sleep 1
for r in $(seq "$ROUNDS"); do
  for v in new old; do
    b=$OLD; [ $v = new ] && b=$NEW
    python3 "$HERE/bpfstats.py" snap "$T/s0"
    "$b/ember" profile --pid $WP --duration 6s --out "$T/$v" >/dev/null 2>&1 & P=$!
    sleep 2.5; python3 "$HERE/bpfstats.py" snap "$T/s1"
    sleep 3; python3 "$HERE/bpfstats.py" snap "$T/s2"
    wait $P
    read -r runs ns < <(python3 "$HERE/bpfstats.py" diff "$T/s1" "$T/s2" oncpu_sample)
    echo "$r $v runs=$runs ns_per_run=$((ns / (runs ? runs : 1)))"
  done
done
