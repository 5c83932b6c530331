#!/usr/bin/env bash
# `make fuzz`: a fuzzing campaign, as opposed to the short smoke run of `make test`.
#
# Each libFuzzer target runs for FUZZ_TIME seconds (default 600) starting from
#   tests/fuzz/corpus/<target>/   the committed inputs (written by hand or kept
#                                 from earlier campaigns, crashers included)
#   build/fuzz/seeds/<target>/    seeds cut from the shared real captures
#                                 (tests/fuzz/pcap_seeds.py; the captures stay
#                                 in ../shared)
#   build/fuzz/corpus/<target>/   what earlier local campaigns found
# Afterwards the inputs that add coverage beyond the committed corpus and the
# seeds are minimised (libFuzzer -merge=1) into tests/fuzz/corpus/<target>/ to
# be committed, every crash, leak or timeout input is copied there as
# regress-<kind>-<sha1> (the test run replays the whole corpus, so it stays a
# regression input), and one line per target gives executions, coverage
# (edges, features) and findings; the table is kept in build/fuzz/campaign.txt.
#
#   make fuzz [FUZZ_TIME=600] [FUZZ_TARGETS=l7_] [FUZZ_JOBS=1]
#
# FUZZ_TARGETS keeps targets whose name contains it; FUZZ_JOBS runs that many
# targets at once (one core each).  Exit status 1 if any target found a crash.
set -u
cd "$(dirname "$0")/../.."
SHARED=${SHARED:-../shared}
FUZZ_TIME=${FUZZ_TIME:-600}
FUZZ_JOBS=${FUZZ_JOBS:-1}
out=build/fuzz
mkdir -p "$out/logs"

make -s BUILD=$out CC=clang SAN=1 CFLAGS="-O1 -g -fsanitize=fuzzer-no-link" fuzz-bins >"$out/logs/build.log" 2>&1 ||
  { tail -20 "$out/logs/build.log"; echo "fuzz: build failed"; exit 1; }
if [ -d "$SHARED/testdata/pcap" ] && command -v tshark >/dev/null; then
  rm -rf "$out/seeds"
  python3 tests/fuzz/pcap_seeds.py "$SHARED/testdata/pcap" "$out/seeds" | sed 's/^/fuzz: seeds /'
else
  echo "fuzz: no seeds from captures ($SHARED/testdata/pcap or tshark missing)"
fi

one() { # target name
  local n=$1 f=$out/fuzzers/$1 c=${1#fuzz_}
  local work=$out/corpus/$n repo=tests/fuzz/corpus/$c seeds=$out/seeds/$n art=$out/artifacts/$n/
  local log=$out/logs/$n.campaign.log dirs=()
  mkdir -p "$work" "$repo" "$art"
  [ -d "$seeds" ] && dirs+=("$seeds")
  "$f" -max_total_time="$FUZZ_TIME" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$art" "$work" "$repo" "${dirs[@]}" >"$log" 2>&1
  local rc=$?
  # Minimise: keep what adds coverage beyond the committed corpus and the seeds.
  local base; base=$(mktemp -d)
  for d in "$repo" "${dirs[@]}"; do cp -n "$d"/* "$base"/ 2>/dev/null; done
  local before; before=$(ls "$base" | sort)
  "$f" -merge=1 -use_counters=0 -rss_limit_mb=2048 -timeout=10 "$base" "$work" >"$out/logs/$n.merge.log" 2>&1
  local added=0
  for x in $(comm -13 <(echo "$before") <(ls "$base" | sort)); do cp "$base/$x" "$repo/$x"; added=$((added+1)); done
  rm -rf "$base"
  local found=0
  for a in "$art"*; do
    [ -f "$a" ] || continue
    local kind; kind=$(basename "$a" | cut -d- -f1)
    cp "$a" "$repo/regress-$kind-$(sha1sum "$a" | cut -c1-40)"; found=$((found+1))
  done
  local execs cov ft
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -E '^#[0-9]+' "$log" | tail -1 | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
  ft=$(grep -E '^#[0-9]+' "$log" | tail -1 | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
  printf '%-22s %6ss %12s execs %6s edges %7s features %4d inputs kept %2d findings rc=%d\n' \
    "$n" "$FUZZ_TIME" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$added" "$found" "$rc"
}
export -f one
export out FUZZ_TIME

ls "$out"/fuzzers/ | grep -F -- "${FUZZ_TARGETS:-fuzz_}" | xargs -P "$FUZZ_JOBS" -I{} bash -c 'one {}' | tee "$out/campaign.txt"
! grep -q ' [1-9][0-9]* findings' "$out/campaign.txt"
