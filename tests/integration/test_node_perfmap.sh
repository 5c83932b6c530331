#!/usr/bin/env bash
# node --perf-basic-prof writes /tmp/perf-<pid>.map; JIT frames of a known JS
# function are named from it (read by the collector's broker through the
# target's mount namespace, parsed by the analyzer).  node exits before the
# task's end, as a short job does: its stacks are drained and named after it
# is gone, from the map read while it ran -- at the task's start
# (emberHotFunction) and after it (emberLateFunction, first run 1 s into the
# task).
. "$(dirname "$0")/lib.sh"
need_bpf
command -v node >/dev/null || skip "node not installed"
cat > "$TMP/hot.js" <<'JS'
function emberHotFunction(n) {
  let s = 0;
  for (let i = 0; i < n; i++) s = (s + i * 7) % 1000003;
  return s;
}
function emberLateFunction(n) {
  let s = 1;
  for (let i = 0; i < n; i++) s = (s * 31 + i) % 1000033;
  return s;
}
const fs = require('fs');
const end = Date.now() + 60000;  // killed by the test once profiled for a while
let x = 0;
while (Date.now() < end && !fs.existsSync(process.argv[2])) x += emberHotFunction(200000);
while (Date.now() < end) x += emberLateFunction(200000);
console.log(x);
JS
# From $TMP: node may drop isolate-*.log files into its working directory.
# --no-turbo-inlining: each function keeps its own frame (inlined into the
# script's top level, a varying share of samples named only that).
(cd "$TMP" && exec node --perf-basic-prof --interpreted-frames-native-stack --no-turbo-inlining "$TMP/hot.js" "$TMP/late" >/dev/null) & N=$!
CLEANUP_PIDS+=("$N")
sleep 1.5  # past start-up, the function is compiled and in the perf map
[ -s "/tmp/perf-$N.map" ] || fail "node wrote no /tmp/perf-$N.map"
"$EMBER" profile --pid "$N" --duration 20s --out "$TMP/prof" >"$TMP/out" 2>"$TMP/err" & P=$!
CLEANUP_PIDS+=("$P")
for _ in $(seq 100); do grep -q "profiling 1 process" "$TMP/err" && break; sleep 0.1; done
grep -q "profiling 1 process" "$TMP/err" || { cat "$TMP/err"; fail "the task did not start"; }
sleep 1
touch "$TMP/late"
sleep 2.5
kill "$N"; wait "$N" 2>/dev/null
wait "$P" || { cat "$TMP/err"; fail "ember profile failed"; }
grep -q "pid $N exited .* into the 20.0s task" "$TMP/err" || { cat "$TMP/err"; fail "node's exit was not seen before the task's end"; }
rm -f "/tmp/perf-$N.map"
f="$TMP/prof/oncpu.folded"
[ -s "$f" ] || { cat "$TMP/err"; fail "no oncpu.folded"; }
total=$(folded_total "$f")
hot=$(folded_sum "$f" 'emberHotFunction')
late=$(folded_sum "$f" 'emberLateFunction')
# Any frame named with the script's path: node 18 writes "LazyCompile:*f /path/hot.js:6", node 20 "JS:*f /path/hot.js:6:27".
script=$(folded_sum "$f" '/hot\.js:[0-9]')
anon=$(folded_sum "$f" '\[anon\]\+0x')
echo "samples $total, in hot.js's named code $script, with emberHotFunction $hot, emberLateFunction $late, unnamed [anon] $anon"
sort -t' ' -k2 -nr "$f" 2>/dev/null | awk '{print $NF, substr($0, length($0) > 200 ? length($0) - 200 : 1)}' | head -3
awk -v s="$script" -v h="$hot" -v l="$late" -v a="$anon" -v t="$total" \
  'BEGIN { exit !(t > 0 && s >= 0.8 * t && h >= 0.15 * t && l >= 0.4 * t && a <= 0.1 * t) }' ||
  fail "$script of $total samples in hot.js's named code (>= 80%), $hot with emberHotFunction (>= 15%), $late with emberLateFunction (>= 40%), $anon unnamed [anon] (<= 10%)"
ok "$script/$total samples name hot.js's JS code from the perf map ($hot emberHotFunction, $late emberLateFunction, $anon unnamed)"
