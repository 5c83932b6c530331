#!/usr/bin/env bash
# Network profiling overhead: nginx (one worker) serving a 3 KB file to wrk on
# loopback, alone, under `ember profile --type network` (L7 parsing on) on the
# socket layer (the default where the kernel has it) and on the syscall layer
# (a second agent, EMBER_NET_ATTACH=syscall: the fallback), under
# a continuous-profiling HTTP monitor (an agent whose policy watches the
# worker's HTTP error rate: its capture copies heads only, 1 KiB per call),
# and under a bpftrace syscall tracer printing each call's data (the peer), in
# one run, alternating.  Prints the throughput and p99 ratios, the agent's CPU,
# the events per second and every drop (counted by ember; unaccounted =
# calls seen minus events delivered minus drops counted).
# Then the worker under a task against an unfollowed twin nginx, in
# alternating short runs (TWIN_PAIRS pairs of SLICE seconds), after a control
# pass without a task: a ratio the host's drift between rounds does not move.
# Then the BPF cost per call from the kernel's own accounting, per layer: for
# the target's socket calls, and for what every other process pays while a
# task runs: read/write of another process (the syscall layer: the same
# syscall numbers, one hash lookup; the socket layer: nothing runs), getppid
# (any other syscall: a switch, or nothing), another process's socket calls
# (the socket layer: one hash lookup); then the same on the wall clock, with
# the kernel's accounting off, task on and off alternated.
# PIN=1 pins nginx's worker and wrk to a core each (see below).
set -u
ROOT=${EMBER_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
B=${EMBER_BUILD:-$ROOT/build}
[ "$(id -u)" = 0 ] || { echo "net: SKIP (needs root)"; exit 0; }
for t in nginx wrk; do command -v $t >/dev/null || { echo "net: $t missing (deploy/install-deps.sh installs it)"; exit 1; }; done
DUR=${DUR:-5} ROUNDS=${ROUNDS:-3} CONNS=${CONNS:-16}
# PIN=1: nginx's worker on CPU 0 and wrk on CPU 1 (the agent where the scheduler puts it):
# unpinned, the three busy threads' placement on two cores makes two speeds of the same load.
PIN=${PIN:-0}
WRKCMD=(wrk); [ "$PIN" = 1 ] && WRKCMD=(taskset -c 1 wrk)
T=$(mktemp -d /tmp/ember-bench.XXXXXX); chmod 755 "$T"
trap 'kill $AGENT ${SYSAGENT:-} $NGINX ${TWIN_NGINX:-} 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/agent.sh"
. "$(dirname "$0")/lib/nginx.sh"
start_bench_agent || exit 1
# The syscall layer's agent: idle (its programs attached only while its task runs) beside the first.
cat > "$T/sys.yaml" <<YAML
ember: { run_dir: $T/sysrun, output_dir: $T/sysout, log_level: warn }
exporter: { backends: [file] }
profiling: { continuous: { policies: [] } }
YAML
EMBER_NET_ATTACH=syscall "$B/ember" run --config "$T/sys.yaml" > "$T/sys.log" 2>&1 & SYSAGENT=$!
for _ in $(seq 100); do [ -S "$T/sysrun/analyzer/analyzer-0.ctl" ] && break; sleep 0.1; done
[ -S "$T/sysrun/analyzer/analyzer-0.ctl" ] || { echo "net: the syscall layer's agent did not come up" >&2; cat "$T/sys.log" >&2; exit 1; }
for c in ember sys; do
  l=$("$B/ember" stats --config "$T/$c.yaml" 2>/dev/null | awk '$1 == "collector" && $2 == "bpf_net_socket_layer" {print $3}')
  echo "net_layer_$c: $([ "$l" = 1 ] && echo socket || echo syscall)"
done
PORT=$(( 30000 + $$ % 5000 ))
start_bench_nginx || exit 1
[ "$PIN" = 1 ] && { taskset -pc 0 "$W" > /dev/null || exit 1; echo "net_pinned: nginx's worker on CPU 0, wrk on CPU 1"; }
[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
have_bt=1; command -v bpftrace >/dev/null || have_bt=0
# The kernel's BPF accounting reads the clock twice per program run (on this
# VM a paravirtual clock read): it stays off while throughput is measured and
# is on only for the passes that measure BPF time.
sysctl -qw kernel.bpf_stats_enabled=0
snap() { python3 "$ROOT/bench/lib/bpfstats.py" snap "$1"; }
delta() { python3 "$ROOT/bench/lib/bpfstats.py" diff "$@"; }
# The programs of each layer (the kernel keeps 15 characters of a name).
NETP_SYS='net_(enter|exit)_(btf|raw)'
NETP_SOCK='net_sl_(send|recv|state|mmap|recvmsg4|recvmsg6)'
CFG=$T/ember.yaml NETP=$NETP_SOCK
# One reading of the collector's counters, so that they agree with each other: sv FILE KEY.
stats_to() { "$B/ember" stats --config "$CFG" > "$1" 2>/dev/null; }
sv() { awk -v k="$2" '$1 == "collector" && $2 == k {print $3; exit}' "$1"; }
agent_cpu() { local s=0; for p in $(pgrep -f "ember-(collector|analyzer|exporter)" ); do
  s=$(awk -v s="$s" -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.3f", s + ($12 + $13) / hz }' "/proc/$p/stat"); done; echo "$s"; }
run_wrk() { "${WRKCMD[@]}" -t 2 -c "$CONNS" -d "${DUR}s" --latency "http://127.0.0.1:$PORT/small.txt" > "$T/wrk.out" 2>&1
  awk '/Requests\/sec/ {r=$2} /^ +99%/ {p=$2} END {print r, p}' "$T/wrk.out"; }
run_alone() { echo "alone $(run_wrk)" >> "$T/res"; }
run_ember() {   # $1: the row's name (ember, or ember_stats for the pass with BPF accounting on); CFG, NETP: the agent
  local c0 e0 calls0 d0 c1 e1 calls1 d1
  "$B/ember" profile --config "$CFG" --type network --pid "$W" --duration $((DUR + 4))s --out "$T/prof" >/dev/null 2>"$T/prof.err" &
  local P=$!
  for _ in $(seq 100); do grep -q profiling "$T/prof.err" && break; sleep 0.05; done
  c0=$(agent_cpu); stats_to "$T/s0"; e0=$(sv "$T/s0" bpf_net_events); calls0=$(sv "$T/s0" bpf_net_socket_calls)
  # in the kernel (the call has no event) and in the collector (an event it could not pass on)
  d0=$(( $(sv "$T/s0" bpf_net_ringbuf_full_drops) + $(sv "$T/s0" bpf_net_inflight_full_drops) )); f0=$(sv "$T/s0" net_events_ring_full_drops)
  snap "$T/e0"; local t0=$(date +%s%N)
  local r; r=$(run_wrk)
  local t1=$(date +%s%N); snap "$T/e1"
  c1=$(agent_cpu); stats_to "$T/s1"; e1=$(sv "$T/s1" bpf_net_events); calls1=$(sv "$T/s1" bpf_net_socket_calls)
  d1=$(( $(sv "$T/s1" bpf_net_ringbuf_full_drops) + $(sv "$T/s1" bpf_net_inflight_full_drops) )); f1=$(sv "$T/s1" net_events_ring_full_drops)
  wait $P
  echo "${1:-ember} $r $(( (t1 - t0) / 1000000 )) $(echo "$c1 - $c0" | bc) $((e1 - e0)) $((calls1 - calls0)) $((d1 - d0)) $(delta "$T/e0" "$T/e1" "$NETP") $((f1 - f0))" >> "$T/res"
}
# A second agent whose policy puts an HTTP item on the worker (threshold 100%:
# it never fires), for the time of one wrk run.
cat > "$T/mon.yaml" <<YAML
ember: { run_dir: $T/monrun, output_dir: $T/monout, log_level: warn }
exporter: { backends: [file] }
profiling: { continuous: { check_interval: 1s,
  policies: [{MatchCmd: '^nginx: worker', Profiling: {NETWORK: {HTTP_ERROR_RATE: {Threshold: 100, Period: 5, Count: 5}}}}] } }
YAML
mstat() { "$B/ember" stats --config "$T/mon.yaml" 2>/dev/null | awk -v k="$1" '$2 == k {print $3; exit}'; }
run_monitor() {   # $1: the row's name, as for run_ember
  "$B/ember" run --config "$T/mon.yaml" > "$T/mon.log" 2>&1 & local M=$!
  # another nginx on the host is a worker the policy matches too: one capture each
  for _ in $(seq 200); do [ "$(mstat tasks_active)" -ge 1 ] 2>/dev/null && break; sleep 0.1; done
  local n; n=$(mstat tasks_active)
  [ "${n:-0}" -ge 1 ] 2>/dev/null || { echo "net: the monitors' capture did not start" >&2; cat "$T/mon.log" >&2; kill $M; return 1; }
  [ "$n" = 1 ] || echo "net: $n monitor captures (another nginx worker on this host): the monitor rows count them all" >&2
  local calls0 c1; calls0=$(mstat bpf_net_socket_calls); snap "$T/m0"
  local r; r=$(run_wrk)
  snap "$T/m1"; c1=$(mstat bpf_net_socket_calls)
  echo "${1:-monitor} $r $((c1 - calls0)) $(mstat ember_continuous_exchanges) $(delta "$T/m0" "$T/m1" "$NETP")" >> "$T/res"
  kill $M; wait $M 2>/dev/null
}
run_bpftrace() {
  # The peer: every socket-like call of the worker, with its size and the first 64 bytes of its data.
  bpftrace -B full -e "
tracepoint:syscalls:sys_enter_read /pid == $W/ { @buf[tid] = args->buf; }
tracepoint:syscalls:sys_enter_recvfrom /pid == $W/ { @buf[tid] = args->ubuf; }
tracepoint:syscalls:sys_exit_read, tracepoint:syscalls:sys_exit_recvfrom /pid == $W && @buf[tid] != 0/ {
  if (args->ret > 0) { printf(\"R %d %d %r\\n\", tid, args->ret, buf(@buf[tid], 64)); } delete(@buf[tid]); }
tracepoint:syscalls:sys_enter_write /pid == $W/ { printf(\"W %d %d %r\\n\", tid, args->count, buf(args->buf, 64)); }
tracepoint:syscalls:sys_enter_sendto /pid == $W/ { printf(\"W %d %d %r\\n\", tid, args->len, buf(args->buff, 64)); }
tracepoint:syscalls:sys_enter_writev, tracepoint:syscalls:sys_enter_sendfile64 /pid == $W/ { printf(\"V %d\\n\", tid); }
" > "$T/bt.out" 2> "$T/bt.err" & local BT=$!
  for _ in $(seq 300); do grep -q Attaching "$T/bt.err" "$T/bt.out" 2>/dev/null && break; sleep 0.1; done
  echo "bpftrace $(run_wrk) $(grep -c '' "$T/bt.out")" >> "$T/res"
  kill -INT $BT 2>/dev/null; wait $BT 2>/dev/null
  grep -o 'Lost [0-9]* events' "$T/bt.err" "$T/bt.out" 2>/dev/null | awk '{s+=$2} END {print "bpftrace_lost", s+0}' >> "$T/res"
}
sys_ember() { CFG=$T/sys.yaml NETP=$NETP_SYS run_ember "$@"; }
run_wrk > /dev/null   # warm-up
for i in $(seq "$ROUNDS"); do
  run_alone; run_ember; sys_ember ember_syscall; run_monitor; [ $have_bt = 1 ] && run_bpftrace
done
# Interleaved: the worker under a task against its twin (an identical nginx on
# the next port that no task follows), in alternating SLICE-second wrk runs
# under the same agent.  The host's speed drifts within seconds here, and the
# two runs of a pair are at most 2 SLICE apart, where the rows above compare
# runs up to a round apart.  A control pass with no task first: what the
# twins differ by themselves.  The twin's socket calls still pay the socket
# layer's filter (net_bpf_ns_per_other_sock), which this ratio leaves in.
TWIN_PAIRS=${TWIN_PAIRS:-16} SLICE=${SLICE:-2}
start_twin() {
  local t=$T p=$PORT n=$NGINX w=$W
  T=$T/twin PORT=$((PORT + 1)); mkdir -p "$T"
  start_bench_nginx || { T=$t; return 1; }
  TWIN_NGINX=$NGINX TWIN=$W TWIN_PORT=$PORT; T=$t PORT=$p NGINX=$n W=$w
  [ "$PIN" = 1 ] && { taskset -pc 0 "$TWIN" > /dev/null || return 1; }
  return 0
}
slice() { "${WRKCMD[@]}" -t 2 -c "$CONNS" -d "${SLICE}s" "http://127.0.0.1:$1/small.txt" 2>&1 | awk '/Requests\/sec/ {print $2}'; }
twin_pairs() {   # $1: the row's name, $2: pairs; rows: name, the worker's req/s, the twin's
  local a b
  for i in $(seq "$2"); do
    if [ $((i % 2)) = 1 ]; then b=$(slice "$TWIN_PORT"); a=$(slice "$PORT"); else a=$(slice "$PORT"); b=$(slice "$TWIN_PORT"); fi
    echo "$1 ${a:-0} ${b:-0}" >> "$T/res"
  done
}
if start_twin; then
  twin_pairs twin_control $((TWIN_PAIRS / 2))
  "$B/ember" profile --config "$CFG" --type network --pid "$W" --duration $((TWIN_PAIRS * 2 * SLICE + 6))s \
    --out "$T/twinprof" >/dev/null 2>"$T/twinprof.err" &
  TP=$!
  for _ in $(seq 100); do grep -q profiling "$T/twinprof.err" && break; sleep 0.05; done
  if grep -q profiling "$T/twinprof.err"; then
    twin_pairs twin_ember "$TWIN_PAIRS"
  else
    echo "net: the twin pass's task did not start: no interleaved ratio" >&2; cat "$T/twinprof.err" >&2
  fi
  wait $TP
  kill "$TWIN_NGINX"; wait "$TWIN_NGINX" 2>/dev/null; TWIN_NGINX=""
else
  echo "net: the twin nginx did not start: no interleaved rows" >&2
fi
sysctl -qw kernel.bpf_stats_enabled=1
run_ember ember_stats; sys_ember ember_syscall_stats; run_monitor monitor_stats
sysctl -qw kernel.bpf_stats_enabled=0
# Both ends followed (the worker and wrk): the event rate at which every drop is accounted for.
run_rate() {
  local e0 calls0 d0 f0 t0 e1 calls1 d1 f1 t1
  "${WRKCMD[@]}" -t 2 -c "$CONNS" -d "$((DUR + 3))s" "http://127.0.0.1:$PORT/small.txt" > "$T/wrk_rate.out" 2>&1 & local WRK=$!
  sleep 0.3
  "$B/ember" profile --config "$CFG" --type network --pid "$W,$WRK" --duration $((DUR + 1))s --out "$T/rate" >/dev/null 2>"$T/rate.err" &
  local P=$!
  for _ in $(seq 100); do grep -q profiling "$T/rate.err" && break; sleep 0.05; done
  stats_to "$T/r0"; t0=$(date +%s%N)
  sleep "$DUR"
  stats_to "$T/r1"; t1=$(date +%s%N)
  e0=$(sv "$T/r0" bpf_net_events); calls0=$(sv "$T/r0" bpf_net_socket_calls); f0=$(sv "$T/r0" net_events_ring_full_drops)
  d0=$(( $(sv "$T/r0" bpf_net_ringbuf_full_drops) + $(sv "$T/r0" bpf_net_inflight_full_drops) ))
  e1=$(sv "$T/r1" bpf_net_events); calls1=$(sv "$T/r1" bpf_net_socket_calls); f1=$(sv "$T/r1" net_events_ring_full_drops)
  d1=$(( $(sv "$T/r1" bpf_net_ringbuf_full_drops) + $(sv "$T/r1" bpf_net_inflight_full_drops) ))
  wait $P; wait $WRK
  echo "rate $(( (t1 - t0) / 1000000 )) $((e1 - e0)) $((calls1 - calls0)) $((d1 - d0)) $((f1 - f0))" >> "$T/res"
}
run_rate
sysctl -qw kernel.bpf_stats_enabled=1
# The whole host's cost while a task runs elsewhere: an idle process is the target.
sleep 600 & IDLE=$!
others() {   # $1: row suffix; CFG, NETP: the agent
  "$B/ember" profile --config "$CFG" --type network --pid "$IDLE" --duration 20s --out "$T/idle$1" >/dev/null 2>"$T/idle$1.err" &
  local IP=$!
  for _ in $(seq 100); do grep -q profiling "$T/idle$1.err" && break; sleep 0.05; done
  snap "$T/n0"; dd if=/dev/zero of=/dev/null bs=64 count=2000000 2>/dev/null; snap "$T/n1"
  echo "other_rw$1 $(delta "$T/n0" "$T/n1" "$NETP")" >> "$T/res"
  snap "$T/g0"; perf bench syscall basic --loop 2000000 > /dev/null 2>&1; snap "$T/g1"
  echo "other_getppid$1 $(delta "$T/g0" "$T/g1" "$NETP")" >> "$T/res"
  # another process's socket calls: wrk and nginx, neither followed (the socket layer's bystanders)
  snap "$T/k0"; wrk -t 1 -c 4 -d 2s "http://127.0.0.1:$PORT/small.txt" > /dev/null 2>&1; snap "$T/k1"
  echo "other_sock$1 $(delta "$T/k0" "$T/k1" "$NETP")" >> "$T/res"
  wait $IP 2>/dev/null   # the task ends (a killed `ember profile` would leave it running)
}
others ""; CFG=$T/sys.yaml NETP=$NETP_SYS others _syscall
sysctl -qw kernel.bpf_stats_enabled=0
# The same costs as another process sees them, on the wall clock and without
# the kernel's BPF accounting (whose own clock reads are a large part of a
# short program's run time on this VM): the same syscall loops with a task on
# the idle process and without one, alternated.
wall() { local t0; t0=$(date +%s%N); "$@" >/dev/null 2>&1; echo $(( $(date +%s%N) - t0 )); }
loops() { echo "$1 $(wall dd if=/dev/zero of=/dev/null bs=64 count=500000) $(wall perf bench syscall basic --loop 1000000)" >> "$T/res"; }
for i in $(seq "$ROUNDS"); do
  for layer in "" _syscall; do
    c=$T/ember.yaml; [ -n "$layer" ] && c=$T/sys.yaml
    loops "wall_off$layer"
    "$B/ember" profile --config "$c" --type network --pid "$IDLE" --duration 4s --out "$T/idle$i$layer" >/dev/null 2>"$T/idle$i$layer.err" &
    IP=$!
    for _ in $(seq 100); do grep -q profiling "$T/idle$i$layer.err" && break; sleep 0.05; done
    loops "wall_on$layer"
    wait $IP 2>/dev/null
  done
done
kill $IDLE
python3 - "$T/res" "$DUR" "$CONNS" "$SLICE" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
dur, conns = int(sys.argv[2]), int(sys.argv[3])
def ms(s):
    v = float(s.rstrip('usm')); return v / 1000 if s.endswith('us') else v * 1000 if s.endswith('s') and not s.endswith('ms') else v
alone = [(float(r[1]), ms(r[2])) for r in rows if r[0] == 'alone']
bt = [r for r in rows if r[0] == 'bpftrace']
base_r, base_p = st.median(a[0] for a in alone), st.median(a[1] for a in alone)
print(f"net_workload: nginx 1 worker, 3 KB file, wrk {conns} connections, {dur} s x {len(alone)} per mode, alternated")
print(f"net_alone: {base_r:.0f} req/s, p99 {base_p:.2f} ms (runs {', '.join(f'{a[0]:.0f}' for a in alone)}; "
      f"the ratios below are against this median)")
def row(name): return next((x for x in rows if x[0] == name), None)
# Each mode's run over the alone run of its round (the host's speed drifts between rounds).
def paired(name):
    xs = [float(r[1]) / a[0] for r, a in zip((r for r in rows if r[0] == name), alone)]
    return f"paired with its round's alone run: {st.median(xs):.2f}x ({min(xs):.2f}-{max(xs):.2f})" if xs else ""

per_call_of = {}
# The socket layer (the default) and the syscall layer (its fallback), from the same run.
for sfx, layer, runs_per_call in (('', 'socket layer', 1), ('_syscall', 'syscall layer', 2)):
    ember = [r for r in rows if r[0] == 'ember' + sfx]
    if not ember:
        continue
    er = [float(r[1]) for r in ember]; ep = [ms(r[2]) for r in ember]
    print(f"net_throughput_ratio_ember{sfx}: {st.median(er)/base_r:.2f}x ({layer}; runs {', '.join(f'{x/base_r:.2f}' for x in er)}; "
          f"{paired('ember' + sfx)}; target >= 0.90)")
    print(f"net_p99_ratio_ember{sfx}: {st.median(ep)/base_p:.2f}x (runs {', '.join(f'{x/base_p:.2f}' for x in ep)}; target <= 1.20)")
    secs = [int(r[3]) / 1000 for r in ember]
    cpu = [float(r[4]) / s for r, s in zip(ember, secs)]
    evs = [int(r[5]) / s for r, s in zip(ember, secs)]
    calls = sum(int(r[6]) for r in ember); events = sum(int(r[5]) for r in ember); drops = sum(int(r[7]) for r in ember)
    fwd_drops = sum(int(r[10]) for r in ember)
    print(f"net_agent_cpu_ember{sfx}: {st.median(cpu)*100:.1f}% of one core (collector + analyzer + exporter; both agents' processes)")
    print(f"net_events_per_s_ember{sfx}: {st.median(evs)/1e3:.0f}k (runs {', '.join(f'{x/1e3:.0f}k' for x in evs)})")
    print(f"net_drops_ember{sfx}: {drops + fwd_drops} counted of {calls} calls ({drops} in the kernel, {fwd_drops} events the "
          f"collector could not pass on to a full analyzer ring); unaccounted: {calls - events - drops}")
    es = [r for r in rows if r[0] == 'ember' + sfx + '_stats']
    scalls = sum(int(r[6]) for r in es)
    bruns = sum(int(r[8]) for r in es); bns = sum(int(r[9]) for r in es)
    # the other runs during the load: the syscall layer's are wrk's and nginx's other syscalls (priced as
    # another process's read/write), the socket layer's are wrk's socket calls (priced as another process's)
    other = row('other_rw' + sfx) if sfx else row('other_sock')
    per_other_run = int(other[2]) / int(other[1]) if other and int(other[1]) else None
    if scalls and per_other_run is not None:
        per_call = (bns - (bruns - runs_per_call * scalls) * per_other_run) / scalls
        per_call_of[sfx] = per_call
        print(f"net_bpf_ns_per_target_call_ember{sfx}: {per_call:.0f} ns ({layer}: "
              f"{'enter + exit' if runs_per_call == 2 else 'one program run'} with the data copied, in a pass with the "
              f"kernel's BPF accounting on; the load's {bruns - runs_per_call * scalls} other runs at {per_other_run:.0f} ns taken out)")
        reqs = sum(float(r[1]) * int(r[3]) / 1000 for r in ember)
        cpr = calls / reqs if reqs else 0
        t_req = 1e9 / base_r
        print(f"net_throughput_ceiling_from_bpf{sfx}: {t_req / (t_req + cpr * per_call):.2f}x ({cpr:.2f} traced calls per request at "
              f"{per_call:.0f} ns against {t_req:.0f} ns per request alone, agent CPU and other processes' runs not counted)")
    rate = row('rate')
    if rate and not sfx:
        ms_, ev, rc, rd, rf = (int(v) for v in rate[1:6])
        print(f"net_events_per_s_both_ends: {ev / (ms_ / 1000) / 1e3:.0f}k ({layer}; the worker and wrk followed, {ms_ / 1000:.1f} s); "
              f"drops: {rd + rf} counted ({rd} in the kernel, {rf} by the collector) of {rc} calls; unaccounted: {rc - ev - rd} "
              f"(a call is counted just before its event: readings may differ by the calls in flight at either reading)")
def twin(name):
    pairs = [r for r in rows if r[0] == name]
    xs = sorted(float(r[1]) / float(r[2]) for r in pairs if float(r[1]) > 0 and float(r[2]) > 0)
    if not xs:
        return None
    q = lambda f: xs[min(len(xs) - 1, int(f * len(xs)))]
    failed = f", {len(pairs) - len(xs)} pairs without a wrk figure left out" if len(pairs) > len(xs) else ""
    return xs, f"median of {len(xs)} pairs{failed}; p25-p75 {q(0.25):.2f}-{q(0.75):.2f}, min-max {xs[0]:.2f}-{xs[-1]:.2f}"
tc, te = twin('twin_control'), twin('twin_ember')
if tc:
    print(f"net_twin_control_ratio: {st.median(tc[0]):.2f}x ({tc[1]}; no task: the worker against its twin, "
          f"what the interleaved method differs by itself)")
if te:
    other = row('other_sock')
    filt = ""
    if other and int(other[1]):
        filt = (f"; the twin's filter, 2 runs per request at {int(other[2]) / int(other[1]):.0f} ns, is "
                f"{2 * int(other[2]) / int(other[1]) / (1e9 / base_r) * 100:.1f}% of a request alone")
    print(f"net_throughput_ratio_ember_interleaved: {st.median(te[0]):.2f}x ({te[1]}; socket layer; the followed worker "
          f"against its unfollowed twin in alternating {sys.argv[4]} s runs under one agent{filt}; target >= 0.90)")
mon = [r for r in rows if r[0] == 'monitor']
if mon:
    mr = [float(r[1]) for r in mon]; mp = [ms(r[2]) for r in mon]
    print(f"net_throughput_ratio_monitor: {st.median(mr)/base_r:.2f}x (runs {', '.join(f'{x/base_r:.2f}' for x in mr)}; "
          f"{paired('monitor')}; a continuous-profiling HTTP item's capture, heads only)")
    print(f"net_p99_ratio_monitor: {st.median(mp)/base_p:.2f}x (runs {', '.join(f'{x/base_p:.2f}' for x in mp)})")
    ms_ = [r for r in rows if r[0] == 'monitor_stats']
    mcalls = sum(int(r[3]) for r in ms_); mruns = sum(int(r[5]) for r in ms_); mns = sum(int(r[6]) for r in ms_)
    other = row('other_sock')
    per_other_run = int(other[2]) / int(other[1]) if other and int(other[1]) else None
    if mcalls and per_other_run is not None:
        print(f"net_bpf_ns_per_target_call_monitor: {(mns - (mruns - mcalls) * per_other_run) / mcalls:.0f} ns "
              f"(socket layer, the first 1 KiB copied; {sum(int(r[4]) for r in ms_)} exchanges given to the monitors)")
if bt:
    br = [float(r[1]) for r in bt]; bp = [ms(r[2]) for r in bt]
    lines = sum(int(r[3]) for r in bt)
    lost = sum(int(r[1]) for r in rows if r[0] == 'bpftrace_lost')
    print(f"net_throughput_ratio_bpftrace: {st.median(br)/base_r:.2f}x (runs {', '.join(f'{x/base_r:.2f}' for x in br)}; {paired('bpftrace')})")
    print(f"net_p99_ratio_bpftrace: {st.median(bp)/base_p:.2f}x")
    print(f"net_events_bpftrace: {lines} printed, {lost} reported lost ({lost/(lines+lost)*100 if lines+lost else 0:.0f}%)")
else:
    print("net_bpftrace: not measured (bpftrace missing)")
for sfx, layer in (('', 'socket layer'), ('_syscall', 'syscall layer')):
    off = [r for r in rows if r[0] == 'wall_off' + sfx]; on = [r for r in rows if r[0] == 'wall_on' + sfx]
    if off and on:
        # dd: 500000 reads + 500000 writes; perf bench: 1000000 getppid
        for col, n, label in ((1, 1000000, "read/write"), (2, 1000000, "getppid")):
            base = st.median(int(r[col]) for r in off) / n
            added = [(int(b[col]) - int(a[col])) / n for a, b in zip(off, on)]
            print(f"net_added_ns_per_other_syscall_{'rw' if col == 1 else 'getppid'}{sfx}: {st.median(added):.0f} ns on the wall clock "
                  f"({layer}; {label} of another process, {base:.0f} ns alone; pairs {', '.join(f'{x:.0f}' for x in added)})")
    # per syscall of the loop (dd: 2,000,000 reads and as many writes; perf bench: 2,000,000 getppid):
    # all the runs the window saw, whoever made them (on the socket layer those loops run nothing)
    for name, label, n in (("other_rw", "read/write of another process", 4000000),
                           ("other_getppid", "getppid of another process", 2000000)):
        r = row(name + sfx)
        if r:
            print(f"net_bpf_ns_per_other_{name[6:]}{sfx}: {int(r[2])/n:.1f} ns per syscall ({layer}; {label}; "
                  f"{int(r[1])} program runs in the window for {n} syscalls)")
    r = row('other_sock' + sfx)
    if r and int(r[1]):
        print(f"net_bpf_ns_per_other_sock{sfx}: {int(r[2])/int(r[1]):.0f} ns per run ({layer}; a socket call of another "
              f"process (wrk, nginx), {int(r[1])} runs)")
PY
