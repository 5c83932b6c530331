#!/usr/bin/env bash
# User-space CPU per network event: nginx (one worker) serving a file (SIZE
# bytes, 3000 by default) to wrk on loopback under `ember profile --type
# network` (L7 parsing on), and the CPU time (its threads' runtime, schedstat)
# the agent's collector and analyzer spend from the task's start to its end
# (its last report included), divided by the events the collector forwarded
# to the analyzer.  The exporter's is printed beside them.
#
# NET_EVENTS_BUILDS="old=/path/build-old new=/path/build" runs one agent per
# build, side by side (a build's agent is idle while the other's task runs),
# and alternates their tasks round by round (ROUNDS, default 5, of DUR
# seconds); by default the one build $EMBER_BUILD.  Prints, per build and
# process, the median ns per event and the range.
set -u
ROOT=${EMBER_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
. "$(dirname "$0")/lib/nginx.sh"
B=${EMBER_BUILD:-$ROOT/build}
[ "$(id -u)" = 0 ] || { echo "net_events: SKIP (needs root)"; exit 0; }
for t in nginx wrk; do command -v $t >/dev/null || { echo "net_events: $t missing (deploy/install-deps.sh installs it)"; exit 1; }; done
DUR=${DUR:-5} ROUNDS=${ROUNDS:-5} CONNS=${CONNS:-16} SIZE=${SIZE:-3000}
BUILDS=${NET_EVENTS_BUILDS:-this=$B}
T=$(mktemp -d /tmp/ember-bench.XXXXXX); chmod 755 "$T"
AGENTS=""
NGINX=""
trap 'kill $AGENTS $NGINX 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT

# One agent per build, each with its own directories under $T/<name>.
start_agent() {   # $1 name, $2 build dir
  local d="$T/$1"
  mkdir -p "$d"; chmod 755 "$d"
  cat > "$d/ember.yaml" <<YAML
ember: { run_dir: $d/run, output_dir: $d/out, log_level: warn }
exporter: { backends: [file] }
profiling: { continuous: { policies: [] } }
YAML
  "$2/ember" run --config "$d/ember.yaml" > "$d/agent.log" 2>&1 & local a=$!
  AGENTS="$AGENTS $a"; echo "$a" > "$d/agent.pid"
  for _ in $(seq 100); do [ -S "$d/run/analyzer/analyzer-0.ctl" ] && return 0; sleep 0.1; done
  echo "net_events: agent $1 did not come up" >&2; cat "$d/agent.log" >&2; return 1
}
for b in $BUILDS; do start_agent "${b%%=*}" "${b#*=}" || exit 1; done

PORT=$(( 35000 + $$ % 5000 ))
start_bench_nginx "$SIZE" || exit 1

# CPU seconds of one of an agent's processes (by name, among the agent's children only:
# other agents on the host are not ours to count): the scheduler's runtime of each of its
# threads, in ns (schedstat), not clock ticks: a run's analyzer time is a few tens of ticks.
# A thread that ends between the readings takes its time with it: the agent's threads live
# as long as it does.
cpu_of() {   # $1 agent dir, $2 process name
  local p; p=$(pgrep -P "$(cat "$1/agent.pid")" -x "$2" | head -1)
  [ -n "$p" ] || { echo 0; return; }
  cat /proc/"$p"/task/*/schedstat 2>/dev/null | awk '{ ns += $1 } END { printf "%.6f", ns / 1e9 }'
}
sv() { awk -v k="$2" '$1 == "collector" && $2 == k {print $3; exit}' "$1"; }
round() {   # $1 name, $2 build dir
  local d="$T/$1" r P c0 a0 x0 c1 a1 x1
  "$2/ember" profile --config "$d/ember.yaml" --type network --pid "$W" --duration $((DUR + 2))s \
    --out "$d/prof" >/dev/null 2>"$d/prof.err" & P=$!
  for _ in $(seq 200); do grep -q profiling "$d/prof.err" && break; sleep 0.05; done
  c0=$(cpu_of "$d" ember-collector); a0=$(cpu_of "$d" ember-analyzer); x0=$(cpu_of "$d" ember-exporter)
  "$2/ember" stats --config "$d/ember.yaml" > "$d/s0" 2>/dev/null
  r=$(wrk -t 2 -c "$CONNS" -d "${DUR}s" "http://127.0.0.1:$PORT/small.txt" 2>&1 | awk '/Requests\/sec/ {print $2}')
  wait $P   # the task's end: its last report is out
  c1=$(cpu_of "$d" ember-collector); a1=$(cpu_of "$d" ember-analyzer); x1=$(cpu_of "$d" ember-exporter)
  "$2/ember" stats --config "$d/ember.yaml" > "$d/s1" 2>/dev/null
  local k out="$1 ${r:-0} $c0 $c1 $a0 $a1 $x0 $x1"
  for k in bpf_net_events net_events_forwarded bpf_net_ringbuf_full_drops net_events_ring_full_drops; do
    out="$out $(( $(sv "$d/s1" $k) - $(sv "$d/s0" $k) ))"
  done
  echo "$out" >> "$T/res"
}
wrk -t 2 -c "$CONNS" -d 2s "http://127.0.0.1:$PORT/small.txt" > /dev/null 2>&1   # warm-up
for i in $(seq "$ROUNDS"); do
  for b in $BUILDS; do round "${b%%=*}" "${b#*=}"; done
done
[ -n "${NET_EVENTS_KEEP:-}" ] && cp "$T/res" "$NET_EVENTS_KEEP"
python3 - "$T/res" "$DUR" "$CONNS" "$SIZE" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
dur, conns, size = sys.argv[2], sys.argv[3], sys.argv[4]
names = list(dict.fromkeys(r[0] for r in rows))
print(f"net_events_workload: nginx 1 worker, {size}-byte file, wrk {conns} connections, {dur} s x "
      f"{len(rows) // len(names)} rounds per build, builds alternated: {', '.join(names)}")
for n in names:
    rs = [r for r in rows if r[0] == n]
    fwd = [int(r[9]) for r in rs]
    def per_event(a, b):
        return [(float(r[b]) - float(r[a])) * 1e9 / int(r[9]) if int(r[9]) else 0 for r in rs]
    for proc, a, b in (("collector", 2, 3), ("analyzer", 4, 5), ("exporter", 6, 7)):
        v = per_event(a, b)
        print(f"net_events_cpu_ns_per_event_{proc}[{n}]: {st.median(v):.0f} ns "
              f"(range {min(v):.0f}-{max(v):.0f}; runs {', '.join(f'{x:.0f}' for x in v)})")
    both = [x + y for x, y in zip(per_event(2, 3), per_event(4, 5))]
    print(f"net_events_cpu_ns_per_event_collector_analyzer[{n}]: {st.median(both):.0f} ns "
          f"(range {min(both):.0f}-{max(both):.0f})")
    evs = [int(r[8]) / float(dur) for r in rs]
    print(f"net_events_per_s[{n}]: {st.median(evs)/1e3:.0f}k; req/s median {st.median(float(r[1]) for r in rs):.0f}; "
          f"forwarded {sum(fwd)} of {sum(int(r[8]) for r in rs)} events; drops: "
          f"{sum(int(r[10]) for r in rs)} in the kernel (runs {', '.join(r[10] for r in rs)}), "
          f"{sum(int(r[11]) for r in rs)} by the collector (runs {', '.join(r[11] for r in rs)})")
PY
