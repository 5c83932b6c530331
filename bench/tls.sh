#!/usr/bin/env bash
# TLS capture cost.
#  1. Per SSL call, from the caller's side: tests/progs/ssl_calls calls one of
#     libssl's functions in a loop (each call returns at once: WANT_READ over
#     memory BIOs), printing ns per call; the same process is measured with no
#     probe, as a network task's target (entry + return probes, plaintext
#     call kept and dropped: nothing moved), and as a bystander (the library
#     is probed for another process: every process mapping the same libssl
#     traps into the kernel and is filtered out), alternated.  Each
#     function's probed instruction class is printed beside it (the kernel
#     emulates some instructions and single-steps the rest).  BPF ns per
#     probe hit from the kernel's accounting.
#  2. nginx (one worker) over HTTPS to wrk, alone and under `ember profile
#     --type network` (plaintext parsed as HTTP/1), alternated: throughput
#     and p99 ratios, BPF ns per SSL call (entry + return).
set -u
ROOT=${EMBER_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
B=${EMBER_BUILD:-$ROOT/build}
[ "$(id -u)" = 0 ] || { echo "tls: SKIP (needs root)"; exit 0; }
for t in nginx wrk openssl; do command -v $t >/dev/null || { echo "tls: $t missing (deploy/install-deps.sh installs it)"; exit 1; }; done
DUR=${DUR:-5} ROUNDS=${ROUNDS:-3} CONNS=${CONNS:-16}
T=$(mktemp -d /tmp/ember-bench.XXXXXX); chmod 755 "$T"
PIDS=()
trap 'kill $AGENT "${PIDS[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/agent.sh"
. "$(dirname "$0")/lib/nginx.sh"
start_bench_agent || exit 1
# The kernel's BPF accounting (two clock reads per program run) is on only in
# the windows that measure BPF time, never in those that time the workload.
sysctl -qw kernel.bpf_stats_enabled=0
snap() { python3 "$ROOT/bench/lib/bpfstats.py" snap "$1"; }
delta() { python3 "$ROOT/bench/lib/bpfstats.py" diff "$@"; }
stat() { "$B/ember" stats --config "$T/ember.yaml" 2>/dev/null | awk -v k="$1" '$1 == "collector" && $2 == k {print $3; exit}'; }
# Starts a network task on $1 for $2 s and returns once the TLS probes are attached.
task_on() {
  "$B/ember" profile --config "$T/ember.yaml" --type network --pid "$1" --duration "$2"s --out "$T/p$1.$RANDOM" \
    >/dev/null 2>"$T/task.err" & TASK=$!
  for _ in $(seq 200); do [ "$(stat tls_files_probed)" -ge 1 ] 2>/dev/null && return 0; sleep 0.05; done
  echo "tls: the probes were not attached" >&2; cat "$T/task.err" >&2; return 1
}
# Median ns per call of the lines $1 printed during the next $2 seconds.
window() { local a b; a=$(wc -l < "$1"); sleep "$2"; b=$(wc -l < "$1")
  sed -n "$((a + 1)),${b}p" "$1" | awk '{print $2}' | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# ---- 1. per call ----------------------------------------------------------------------
"$B/progs/ssl_calls" read 20000 > "$T/bystander.out" & OTHER=$!; PIDS+=("$OTHER")  # the other process that maps libssl
# Where each function is probed, and how the kernel handles the instruction there.
"$B/progs/tls_probe_dump" /usr/lib/x86_64-linux-gnu/libssl.so.3 2>/dev/null | awk '
  BEGIN { split("SSL_write SSL_read SSL_write_ex SSL_read_ex", fn, " ");
          k[0] = "entry"; k[1] = "uretprobe"; k[3] = "call"; k[4] = "jump after the call";
          c[0] = "nop"; c[1] = "emulated"; c[2] = "single-stepped" }
  $1 == "point" { p[$3] = p[$3] (p[$3] ? ", " : "") k[$4] " at 0x" $2 " (" c[$5] ")" }
  END { for (i = 1; i <= 4; i++) print "tls_probe_points_" fn[i] ": " p[i] }'
for fn in read write read_ex write_ex; do
  "$B/progs/ssl_calls" $fn 20000 > "$T/$fn.out" & P=$!; PIDS+=("$P")
  sleep 0.5
  for r in $(seq 2); do
    echo "off $fn $(window "$T/$fn.out" 1)" >> "$T/res"
    task_on "$P" 4 || exit 1
    w=$(window "$T/$fn.out" 1)
    sysctl -qw kernel.bpf_stats_enabled=1
    snap "$T/s0"; window "$T/$fn.out" 1 > /dev/null; snap "$T/s1"
    sysctl -qw kernel.bpf_stats_enabled=0
    echo "target $fn $w $(delta "$T/s0" "$T/s1" net_tls)" >> "$T/res"
    wait $TASK
    task_on "$OTHER" 3 || exit 1
    echo "bystander $fn $(window "$T/$fn.out" 1)" >> "$T/res"
    wait $TASK
  done
  kill $P; wait $P 2>/dev/null
done

# ---- 2. nginx over HTTPS ----------------------------------------------------------------
PORT=$(( 35000 + $$ % 5000 ))
start_bench_nginx 3000 ssl; rc=$?; [ -n "$NGINX" ] && PIDS+=("$NGINX"); [ "$rc" = 0 ] || exit 1
run_wrk() { wrk -t 2 -c "$CONNS" -d "${DUR}s" --latency "https://127.0.0.1:$PORT/small.txt" > "$T/wrk.out" 2>&1
  awk '/Requests\/sec/ {r=$2} /^ +99%/ {p=$2} END {print r, p}' "$T/wrk.out"; }
run_wrk > /dev/null   # warm-up
run_ember() {   # $1: the row's name
  task_on "$W" $((DUR + 3)) || exit 1
  c0=$(stat bpf_net_tls_calls); snap "$T/w0"
  r=$(run_wrk)
  snap "$T/w1"; c1=$(stat bpf_net_tls_calls)
  echo "$1 $r $((c1 - c0)) $(delta "$T/w0" "$T/w1" net_tls)" >> "$T/res"
  wait $TASK
}
for i in $(seq "$ROUNDS"); do
  echo "alone $(run_wrk)" >> "$T/res"
  run_ember ember
done
sysctl -qw kernel.bpf_stats_enabled=1
run_ember ember_stats
sysctl -qw kernel.bpf_stats_enabled=0
python3 - "$T/res" "$DUR" "$CONNS" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
dur, conns = int(sys.argv[2]), int(sys.argv[3])
for fn in ('read', 'write', 'read_ex', 'write_ex'):
    off = [float(r[2]) for r in rows if r[0] == 'off' and r[1] == fn]
    tgt = [r for r in rows if r[0] == 'target' and r[1] == fn]
    by = [float(r[2]) for r in rows if r[0] == 'bystander' and r[1] == fn]
    if not off or not tgt:
        continue
    base = st.median(off)
    added = [float(r[2]) - o for r, o in zip(tgt, off)]
    badded = [b - o for b, o in zip(by, off)]
    runs = sum(int(r[3]) for r in tgt); ns = sum(int(r[4]) for r in tgt)
    print(f"tls_added_ns_per_call_SSL_{fn}: {st.median(added):.0f} ns as a target (pairs {', '.join(f'{x:.0f}' for x in added)}; "
          f"{base:.0f} ns alone), {st.median(badded):.0f} ns as a bystander (pairs {', '.join(f'{x:.0f}' for x in badded)})")
    if runs:
        print(f"tls_bpf_ns_per_probe_hit_SSL_{fn}: {ns / runs:.0f} ns ({runs} hits: entry and return)")
def ms(s):
    v = float(s.rstrip('usm')); return v / 1000 if s.endswith('us') else v * 1000 if s.endswith('s') and not s.endswith('ms') else v
alone = [(float(r[1]), ms(r[2])) for r in rows if r[0] == 'alone']
ember = [r for r in rows if r[0] == 'ember']
if alone and ember:
    br, bp = st.median(a[0] for a in alone), st.median(a[1] for a in alone)
    er = [float(r[1]) for r in ember]; ep = [ms(r[2]) for r in ember]
    print(f"tls_workload: nginx 1 worker over HTTPS (TLS 1.3), 3 KB file, wrk {conns} connections, {dur} s x {len(alone)} per mode, alternated")
    print(f"tls_alone: {br:.0f} req/s, p99 {bp:.2f} ms")
    print(f"tls_throughput_ratio_ember: {st.median(er)/br:.2f}x (runs {', '.join(f'{x/br:.2f}' for x in er)}; target >= 0.90)")
    print(f"tls_p99_ratio_ember: {st.median(ep)/bp:.2f}x (runs {', '.join(f'{x/bp:.2f}' for x in ep)}; target <= 1.20)")
    es = [r for r in rows if r[0] == 'ember_stats']
    calls = sum(int(r[3]) for r in es); runs = sum(int(r[4]) for r in es); ns = sum(int(r[5]) for r in es)
    if calls:
        print(f"tls_bpf_ns_per_ssl_call_nginx: {ns / calls:.0f} ns (entry + return, plaintext copied; {calls} SSL calls, {runs} probe hits)")
PY
