#!/usr/bin/env bash
# A new user's first hour, in the README's order ("Using it"), with no agent
# running: each command as the README shows it, and each output it names
# checked for being there and meaning what the README says.
#  1. ember profile --type oncpu: oncpu.folded (frame;frame count, root
#     first, the process name as the root frame, kernel frames suffixed _[k]
#     and only below user frames) and oncpu.svg (XML; its subtitle counts the
#     stacks it draws); the last line says whether anything was lost; the
#     private agent opened no listener;
#  2. --type offcpu: offcpu.* weighted by blocked time (titled "time
#     blocked", the total in seconds in its subtitle equal to the folded
#     total) and offcpu.count.* by switches (titled "switch count");
#  3. --type mem: mem.folded/.svg weighted by page faults (at least the
#     pages the workload touched);
#  4. --type network: network.json's JSON lines (batches, flows, connections,
#     exchanges) and network.txt opening with what was lost; every curl
#     request nginx logged is an exchange;
#  5. ember run --help-config, --dump-config (fed back through --config and
#     --set, the same configuration), ember run + ember stats (every
#     process's counters), ember analyze-pcap on a real capture.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/net_servers.sh"
need_bpf
command -v xmllint >/dev/null || fail "xmllint missing (libxml2-utils is in deploy/install-deps.sh test)"
CONF=(--set ember.run_dir="$TMP/run" --set ember.output_dir="$TMP/out")
last_line() { grep -v '^$' "$1" | tail -1; }
said_loss() { # file: the profile's last line says nothing lost or LOST
  local l; l=$(last_line "$1")
  grep -qE '^ember: (nothing lost|LOST)' <<<"$l" || { cat "$1"; fail "the profile's last line does not say what was lost: $l"; }
}

# ---- 1. on-CPU ------------------------------------------------------------------------
"$PROGS/oncpu_chain" 30 >/dev/null & W=$!; CLEANUP_PIDS+=("$W")
"$EMBER" profile "${CONF[@]}" --pid "$W" --type oncpu --duration 3s --out "$TMP/on" >"$TMP/on.out" 2>"$TMP/on.err" &
P=$!
# While it runs: the private agent listens on nothing (its supervisor is a child of ember profile).
for _ in $(seq 100); do grep -q '^ember: profiling' "$TMP/on.err" && break; sleep 0.05; done
descendants() { local c; for c in $(pgrep -P "$1"); do echo "$c"; descendants "$c"; done; }
mine=$(descendants "$P" | paste -sd'|')
listeners=$(ss -ltunpH 2>/dev/null | grep -E "pid=($mine)," || true)
[ -n "$mine" ] || fail "no private agent processes under ember profile"
wait "$P" || { cat "$TMP/on.err"; fail "ember profile --type oncpu failed"; }
[ -z "$listeners" ] || fail "the private agent listens: $listeners"
F=$TMP/on/oncpu.folded
[ -s "$F" ] && [ -s "$TMP/on/oncpu.svg" ] || fail "oncpu.folded / oncpu.svg missing"
awk '!/^[^ ].* [0-9]+$/ {bad++} END {exit bad > 0}' "$F" || fail "oncpu.folded has lines that are not 'frame;frame count'"
comm=$(cat "/proc/$W/comm")
awk -F';' -v c="$comm" '$1 != c {bad++} END {exit bad > 0}' "$F" || fail "a stack's root frame is not the process name $comm"
# Kernel frames (suffixed _[k]) are the leaves' side: none has a user frame below it.
awk '{sub(/ [0-9]+$/, ""); n = split($0, f, ";"); k = 0
      for (i = 2; i <= n; i++) { if (f[i] ~ /_\[k\]$/) k = 1; else if (k) bad++ }} END {exit bad > 0}' "$F" ||
  fail "a user frame comes after a kernel frame in oncpu.folded"
grep -q ';outer;middle;leaf' "$F" || fail "oncpu_chain's outer;middle;leaf is not in oncpu.folded"
xmllint --noout "$TMP/on/oncpu.svg" || fail "oncpu.svg is not well-formed XML"
drawn=$(folded_drawn_stacks "$F")
sub=$(svg_text "$TMP/on/oncpu.svg" subtitle)
grep -qE "(^|[ ,])$drawn stacks?( |$|,|\()" <<<"$sub" || fail "oncpu.svg's subtitle does not count the $drawn stacks drawn: $sub"
said_loss "$TMP/on.err"
kill "$W" 2>/dev/null; wait "$W" 2>/dev/null
ok "oncpu: folded rooted at '$comm', kernel frames below user frames, SVG counts its $drawn stacks, no listener, loss said"

# ---- 2. off-CPU -----------------------------------------------------------------------
EMBER_TEST_GO=$TMP/go "$PROGS/offcpu_wait" 2 > "$TMP/offcpu_wait.out" & W=$!; CLEANUP_PIDS+=("$W")
profile_gated "${CONF[@]}" --pid "$W" --type offcpu --duration 4s --out "$TMP/off"
wait "$W" 2>/dev/null
for f in offcpu.folded offcpu.svg offcpu.count.folded offcpu.count.svg; do
  [ -s "$TMP/off/$f" ] || fail "$f missing"
done
t1=$(svg_text "$TMP/off/offcpu.svg" title); t2=$(svg_text "$TMP/off/offcpu.count.svg" title)
grep -q 'time blocked' <<<"$t1" && grep -q 'switch count' <<<"$t2" || fail "titles: '$t1' / '$t2'"
us=$(folded_total "$TMP/off/offcpu.folded"); n=$(folded_total "$TMP/off/offcpu.count.folded")
secs=$(awk -v u="$us" 'BEGIN {printf "%.3f", u / 1e6}')
sub=$(svg_text "$TMP/off/offcpu.svg" subtitle)
grep -q "$n switch" <<<"$sub" && grep -q "$secs s blocked" <<<"$sub" ||
  fail "offcpu.svg's subtitle does not give the folded totals ($n switches, $secs s): $sub"
[ "$(awk -v u="$us" 'BEGIN {print (u >= 1500000)}')" = 1 ] || fail "only $secs s blocked in a workload that sleeps for 2 s"
said_loss "$TMP/p.err"
ok "offcpu: four files, titles say what they weigh, subtitle $n switches and $secs s = the folded totals"

# ---- 3. memory ------------------------------------------------------------------------
EMBER_TEST_GO=$TMP/go "$PROGS/mem_touch" 3000 > "$TMP/mem_touch.out" & W=$!; CLEANUP_PIDS+=("$W")
profile_gated "${CONF[@]}" --pid "$W" --type mem --duration 3s --out "$TMP/mem"
wait "$W" 2>/dev/null
[ -s "$TMP/mem/mem.folded" ] && [ -s "$TMP/mem/mem.svg" ] || fail "mem.folded / mem.svg missing"
faults=$(folded_total "$TMP/mem/mem.folded")
[ "$faults" -ge 3000 ] || fail "$faults page faults for 3000 pages touched"
said_loss "$TMP/p.err"
ok "mem: $faults page faults for 3000 pages touched"

# ---- 4. network -----------------------------------------------------------------------
start_nginx
"$EMBER" profile "${CONF[@]}" --pid "$NGINX_PID" --type network --duration 4s --out "$TMP/net" >"$TMP/net.out" 2>"$TMP/net.err" &
P=$!
for _ in $(seq 200); do grep -q '^ember: profiling' "$TMP/net.err" && break; sleep 0.05; done
for _ in $(seq 12); do curl -s -o /dev/null "http://127.0.0.1:$NGINX_PORT/small.txt" || fail "curl failed"; done
wait "$P" || { cat "$TMP/net.err"; fail "ember profile --type network failed"; }
head -3 "$TMP/net/network.txt"
sed -n 1,6p "$TMP/net/network.txt" | grep -qE '^(Nothing lost|LOST:)' || fail "network.txt does not open with what was lost"
python3 - "$TMP/net/network.json" "$NGINX_PID" "$(wc -l < "$TMP/nginx/logs/access.log")" <<'PY' || fail "network.json does not hold what the README says"
import json, sys, collections
types = collections.Counter(); ex = 0
for line in open(sys.argv[1]):
    o = json.loads(line)
    types[o['type']] += 1
    if o['type'] == 'exchange' and o['pid'] == int(sys.argv[2]) and o['protocol'] == 'http1':
        ex += 1
print("  network.json:", dict(types), "nginx http1 exchanges", ex, "access log", sys.argv[3])
assert {'batch', 'flow', 'connection', 'exchange'} <= set(types), types
assert ex == int(sys.argv[3]) == 12
PY
said_loss "$TMP/net.err"
ok "network: JSON lines of batches, flows, connections and exchanges; 12 requests = 12 exchanges; loss said"

# ---- 5. the agent and its tools -------------------------------------------------------
"$EMBER" run --help-config > "$TMP/help-config" || fail "ember run --help-config failed"
grep -qE 'ember\.output_dir.*EMBER_OUTPUT_DIR|EMBER_OUTPUT_DIR.*ember\.output_dir' "$TMP/help-config" ||
  grep -q 'output_dir' "$TMP/help-config" || fail "--help-config does not list ember.output_dir"
"$EMBER" run --dump-config "${CONF[@]}" --set exporter.backends=file > "$TMP/dump1.yaml" || fail "--dump-config failed"
"$EMBER" run --config "$TMP/dump1.yaml" --dump-config > "$TMP/dump2.yaml" || fail "--dump-config's output is refused as --config"
cmp -s "$TMP/dump1.yaml" "$TMP/dump2.yaml" || { diff "$TMP/dump1.yaml" "$TMP/dump2.yaml" | head; fail "the dumped configuration read back differs"; }
grep -q "$TMP/out" "$TMP/dump1.yaml" || fail "--dump-config does not show the --set output_dir"
start_agent
"$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats" || fail "ember stats failed"
for p in collector analyzer0 exporter; do
  grep -q "^$p " "$TMP/stats" || { head "$TMP/stats"; fail "ember stats has no counters of $p"; }
done
stop_agent || fail "the agent exited with an error"
pc=$ROOT/../shared/testdata/pcap/http/arkime-http-301-get.pcap
[ -f "$pc" ] || fail "$pc missing"
"$EMBER" analyze-pcap "$pc" --json > "$TMP/pcap.json" || fail "ember analyze-pcap failed"
python3 -c "import json, sys
xs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert xs and any(str(x.get('status')) == '301' for x in xs), xs" "$TMP/pcap.json" ||
  fail "analyze-pcap --json gave no 301 exchange for a capture of one"
ok "help-config, dump-config round trip, ember run + ember stats for each process, analyze-pcap on a real capture"
