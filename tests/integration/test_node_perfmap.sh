#!/usr/bin/env bash
# node --perf-basic-prof writes /tmp/perf-<pid>.map; JIT frames of a known JS
# function are named from it (read by the collector's broker through the
# target's mount namespace, parsed by the analyzer).
. "$(dirname "$0")/lib.sh"
need_bpf
command -v node >/dev/null || skip "node not installed"
cat > "$TMP/hot.js" <<'JS'
function emberHotFunction(n) {
  let s = 0;
  for (let i = 0; i < n; i++) s = (s + i * 7) % 1000003;
  return s;
}
const end = Date.now() + 6000;
let x = 0;
while (Date.now() < end) x += emberHotFunction(200000);
console.log(x);
JS
# From $TMP: node may drop isolate-*.log files into its working directory.
(cd "$TMP" && exec node --perf-basic-prof --interpreted-frames-native-stack "$TMP/hot.js" >/dev/null) & N=$!
CLEANUP_PIDS+=("$N")
sleep 1.5  # past start-up, the function is compiled and in the perf map
[ -s "/tmp/perf-$N.map" ] || fail "node wrote no /tmp/perf-$N.map"
"$EMBER" profile --pid "$N" --duration 2s --out "$TMP/prof" >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/err"; fail "ember profile failed"; }
kill "$N" 2>/dev/null; wait "$N" 2>/dev/null
rm -f "/tmp/perf-$N.map"
f="$TMP/prof/oncpu.folded"
[ -s "$f" ] || { cat "$TMP/err"; fail "no oncpu.folded"; }
total=$(folded_total "$f")
hot=$(folded_sum "$f" 'emberHotFunction')
anon=$(folded_sum "$f" '\[anon\]\+0x')
echo "samples $total, with emberHotFunction $hot, unnamed [anon] $anon"
sort -t' ' -k2 -nr "$f" 2>/dev/null | awk '{print $NF, substr($0, length($0) > 200 ? length($0) - 200 : 1)}' | head -3
awk -v h="$hot" -v t="$total" 'BEGIN { exit !(t > 0 && h >= 0.5 * t) }' || fail "$hot of $total samples show emberHotFunction"
ok "$hot/$total samples name the JS function from the perf map"
