#!/usr/bin/env bash
# Runs ember's test suite and prints one closing line "N passed, N failed, N skipped".
#   static       tests/static/test_*.py           (the source tree itself: allowed includes)
#   unit tests   build/san/tests/test_*           (cmocka, ASan+UBSan)
#   fuzzers      tests/fuzz/fuzz_*.c              (libFuzzer, bounded time, ASan+UBSan)
#   integration  tests/integration/test_*.sh      (root, real BPF; exit 77 = skip)
# Options: --unit-only (no fuzzers), --with-fuzz, --integration-only, --only PATTERN,
#          --repeat N TEST: the integration test TEST (a name: test_offcpu_profile) N times in a
#          row, a line per run, then "TEST: K of N passed" (each failing run's log kept as
#          build/test-logs/TEST.runI.log); --busy (with --repeat): a spinner keeps one other
#          core busy the whole time (a loop at the tests' own priority), as a loaded host would
set -u
cd "$(dirname "$0")/.."
mode=all; only=""; with_fuzz=1; repeat=0; repeat_test=; busy=0
while [ $# -gt 0 ]; do
  case "$1" in
    --unit-only) mode=unit; with_fuzz=0 ;;
    --with-fuzz) with_fuzz=1 ;;
    --integration-only) mode=integration ;;
    --only) only=$2; shift ;;
    --busy) busy=1 ;;
    --repeat) repeat=${2:-}; repeat_test=${3:-}; shift 2
      [[ "$repeat" =~ ^[1-9][0-9]*$ ]] || { echo "run-tests: --repeat N TEST: N must be a positive number, not '$repeat'" >&2; exit 2; }
      repeat_test=${repeat_test%.sh}; repeat_test=${repeat_test##*/}
      [ -f "tests/integration/$repeat_test.sh" ] || { echo "run-tests: --repeat: no tests/integration/$repeat_test.sh" >&2; exit 2; } ;;
    *) echo "run-tests: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
pass=0; fail=0; skip=0; failed=(); skipped=()
logdir=build/test-logs; mkdir -p "$logdir"
export EMBER_ROOT=$PWD EMBER_BUILD=$PWD/build SHARED=${SHARED:-$PWD/../shared}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

run_one() { # name cmd...
  local name=$1; shift
  [ -n "$only" ] && [[ "$name" != *$only* ]] && return
  local log="$logdir/${name//\//_}.log" start=$SECONDS rc
  timeout "${TEST_TIMEOUT:-600}" "$@" >"$log" 2>&1; rc=$?
  local dt=$((SECONDS - start))
  # A cmocka binary exits 0 when some of its cases called skip(): that is a
  # skip, not a pass, and its reasons are the "SKIP:" lines the cases print.
  if [ $rc -eq 0 ] && grep -q '^\[  SKIPPED \] [a-z_]' "$log"; then rc=77; fi
  if [ $rc -eq 0 ]; then pass=$((pass+1)); echo "PASS  $name (${dt}s)"
  elif [ $rc -eq 77 ]; then skip=$((skip+1)); skipped+=("$name")
    echo "SKIP  $name: $(grep -h 'SKIP' "$log" | grep -v '^\[  SKIPPED \] [0-9]' | sort -u | tr '\n' ' ' | cut -c1-400)"
  else fail=$((fail+1)); failed+=("$name"); echo "FAIL  $name (rc=$rc, ${dt}s) — last lines of $log:"; tail -25 "$log" | sed 's/^/      /'
  fi
}

if [ "$busy" = 1 ] && [ "$repeat" = 0 ]; then
  echo "run-tests: --busy goes with --repeat N TEST" >&2; exit 2
fi
if [ "$repeat" -gt 0 ]; then
  ok_runs=0; rm -f "$logdir/$repeat_test".run*.log
  if [ "$busy" = 1 ]; then
    ( trap exit TERM; while :; do :; done ) & spinner=$!
    trap 'kill $spinner 2>/dev/null' EXIT
    echo "a spinner (pid $spinner) keeps a core busy"
  fi
  for i in $(seq "$repeat"); do
    line=$(run_one "integration/$repeat_test" bash "tests/integration/$repeat_test.sh" | head -1)
    echo "run $i: $line"
    if [[ "$line" == PASS* ]]; then
      ok_runs=$((ok_runs+1))
    else
      cp "$logdir/integration_$repeat_test.log" "$logdir/$repeat_test.run$i.log"
    fi
  done
  echo "$repeat_test: $ok_runs of $repeat passed"
  [ "$ok_runs" = "$repeat" ]; exit
fi

if [ "$mode" != integration ]; then
  for t in tests/static/test_*.py; do
    [ -f "$t" ] || continue
    run_one "static/$(basename "$t" .py)" python3 "$t"
  done
  for t in build/san/tests/test_*; do
    [ -x "$t" ] || continue
    run_one "unit/$(basename "$t")" "$t"
  done
  if [ "$with_fuzz" = 1 ] && [ -n "$(ls tests/fuzz/fuzz_*.c 2>/dev/null)" ]; then
    if make -s BUILD=build/fuzz CC=clang SAN=1 CFLAGS="-O1 -g -fsanitize=fuzzer-no-link" fuzz-bins >"$logdir/fuzz-build.log" 2>&1; then
      # Seeds from the shared captures (each direction of each connection);
      # without them the parsers' fuzzers start from the committed corpus only.
      if [ -d "$SHARED/testdata/pcap" ] && command -v tshark >/dev/null; then
        rm -rf build/fuzz/seeds
        python3 tests/fuzz/pcap_seeds.py "$SHARED/testdata/pcap" build/fuzz/seeds >"$logdir/fuzz-seeds.log" 2>&1 ||
          { fail=$((fail+1)); failed+=("fuzz-seeds"); echo "FAIL  fuzz-seeds"; tail -5 "$logdir/fuzz-seeds.log"; }
      fi
      for f in build/fuzz/fuzzers/fuzz_*; do
        n=$(basename "$f"); corp=tests/fuzz/corpus/${n#fuzz_}; dirs=()
        mkdir -p "build/fuzz/corpus/$n"
        [ -d "$corp" ] && dirs+=("$corp")
        [ -d "build/fuzz/seeds/$n" ] && dirs+=("build/fuzz/seeds/$n")
        # -error_exitcode: libFuzzer's default, 77, is what this runner counts as a skip
        TEST_TIMEOUT=$(( ${FUZZ_TIME:-8} + 300 )) run_one "fuzz/$n" "$f" -max_total_time="${FUZZ_TIME:-8}" -timeout=10 -rss_limit_mb=2048 -error_exitcode=1 \
          -print_final_stats=1 -artifact_prefix="$logdir/$n-" "build/fuzz/corpus/$n" "${dirs[@]}"
      done
    else
      fail=$((fail+1)); failed+=("fuzz-build"); echo "FAIL  fuzz-build"; tail -20 "$logdir/fuzz-build.log"
    fi
  fi
fi
if [ "$mode" != unit ]; then
  for t in tests/integration/test_*.sh; do
    [ -f "$t" ] || continue
    run_one "integration/$(basename "$t" .sh)" bash "$t"
  done
fi
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
[ ${#skipped[@]} -gt 0 ] && echo "skipped: ${skipped[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
