#!/usr/bin/env bash
# A/B of two ember builds on bench/net.sh's load, for a change's own effect
# on a followed nginx's throughput (not run by `make bench`: it compares
# builds, it prints no figure of one):
#
#   bash bench/lib/ab_net.sh BUILD_X BUILD_Y      (e.g. /tmp/old/build build)
#
# Three identical nginx (one worker each, pinned to CPU 0; wrk on CPU 1): one
# followed by a network task of agent X, one by agent Y's, one by neither.
# wrk runs SLICE seconds on each in turn, the order rotated every round, so
# that the three runs of a round see the same host (its speed drifts within
# seconds here).  Each round gives X and Y against the unfollowed server; the
# rounds' second half swaps the servers the agents follow, since the slots
# differ by themselves (about 2% here: an A/A run shows it).  Prints each
# agent's median ratio and Y over X, with quartiles.  XENV / YENV: variables
# for an agent's processes (e.g. YENV=EMBER_X=1); XPROF / YPROF: more of its
# config's `profiling` mapping (e.g. YPROF='task: { network: { protocol_analyze:
# { per_cpu_buffer: 128KB } } }').  ROUNDS (default 16, even).
set -u
[ $# = 2 ] || { sed -n 2,18p "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ "$(id -u)" = 0 ] || { echo "ab_net: needs root" >&2; exit 1; }
BX=$(cd "$1" && pwd) BY=$(cd "$2" && pwd)
ROUNDS=${ROUNDS:-16} SLICE=${SLICE:-2} CONNS=${CONNS:-16}
for b in "$BX" "$BY"; do [ -x "$b/ember" ] || { echo "ab_net: no ember in $b" >&2; exit 1; }; done
T=$(mktemp -d /tmp/ember-ab.XXXXXX); chmod 755 "$T"
PIDS=""
trap 'kill $PIDS 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
. "$(dirname "$0")/nginx.sh"
T0=$T
for v in x y; do
  d=$BX e=${XENV:-} pr=${XPROF:-}; [ $v = y ] && { d=$BY e=${YENV:-} pr=${YPROF:-}; }
  cat > "$T0/$v.yaml" <<YAML
ember: { run_dir: $T0/run$v, output_dir: $T0/out$v, log_level: warn }
exporter: { backends: [file] }
profiling: { continuous: { policies: [] }${pr:+, $pr} }
YAML
  env $e "$d/ember" run --config "$T0/$v.yaml" > "$T0/$v.log" 2>&1 & PIDS="$PIDS $!"
done
for v in x y; do
  for _ in $(seq 100); do [ -S "$T0/run$v/analyzer/analyzer-0.ctl" ] && break; sleep 0.1; done
  [ -S "$T0/run$v/analyzer/analyzer-0.ctl" ] || { echo "ab_net: agent $v did not come up" >&2; cat "$T0/$v.log" >&2; exit 1; }
done
base=$(( 30000 + $$ % 5000 ))
for s in 0 1 2; do
  PORT=$((base + s)) T=$T0/n$s; mkdir -p "$T"
  start_bench_nginx || exit 1
  PIDS="$PIDS $NGINX"; eval "W$s=$W"
  taskset -pc 0 "$W" > /dev/null || exit 1
done
T=$T0
half=$((ROUNDS / 2))
follow() {   # $1: agent, $2: server, $3: rounds it lasts
  local w; eval "w=\$W$2"
  "$([ "$1" = x ] && echo "$BX" || echo "$BY")/ember" profile --config "$T/$1.yaml" --type network --pid "$w" \
    --duration $(($3 * 3 * SLICE + 8))s --out "$T/p$1$2" > /dev/null 2> "$T/p$1$2.err" &
  local p=$!
  for _ in $(seq 200); do grep -q profiling "$T/p$1$2.err" && break; sleep 0.05; done
  grep -q profiling "$T/p$1$2.err" || { echo "ab_net: agent $1's task did not start" >&2; cat "$T/p$1$2.err" >&2; exit 1; }
  TASKS="$TASKS $p"
}
run() { taskset -c 1 wrk -t 2 -c "$CONNS" -d "${SLICE}s" "http://127.0.0.1:$((base + $1))/small.txt" 2>&1 |
  awk '/Requests\/sec/ {print $2}'; }
orders=("0 1 2" "1 2 0" "2 0 1" "0 2 1" "2 1 0" "1 0 2")
for h in 0 1; do
  # first half: x follows server 0, y server 2; second half: the other way round
  TASKS=""
  if [ $h = 0 ]; then follow x 0 $half; follow y 2 $half; sx=0 sy=2; else follow x 2 $half; follow y 0 $half; sx=2 sy=0; fi
  for i in $(seq $half); do
    declare -A R=()
    for s in ${orders[$(( (h * half + i - 1) % 6 ))]}; do R[$s]=$(run $s); done
    echo "${R[$sx]:-0} ${R[1]:-0} ${R[$sy]:-0}" >> "$T/rounds"
  done
  wait $TASKS
done
python3 - "$T/rounds" <<'PY'
import sys, statistics as st
rows = [[float(v) for v in l.split()] for l in open(sys.argv[1])]
ok = [r for r in rows if min(r) > 0]
if len(ok) < len(rows):
    print(f"ab_net: {len(rows) - len(ok)} rounds without a wrk figure left out")
rows = ok
if not rows:
    sys.exit("ab_net: no round gave a wrk figure for all three servers")
def show(name, xs):
    xs = sorted(xs)
    print(f"{name}: {st.median(xs):.3f} (p25-p75 {xs[len(xs) // 4]:.3f}-{xs[(3 * len(xs)) // 4]:.3f}, "
          f"min-max {xs[0]:.3f}-{xs[-1]:.3f}, {len(xs)} rounds)")
show("ab_x_over_unfollowed", [r[0] / r[1] for r in rows])
show("ab_y_over_unfollowed", [r[2] / r[1] for r in rows])
show("ab_y_over_x", [r[2] / r[0] for r in rows])
PY
