#!/usr/bin/env bash
# Two builds' network BPF side by side: bench/lib/ab_net_bpf.sh OLD_BUILD NEW_BUILD [ROUNDS]
# (each a directory with ember, ember-collector, ember-analyzer and ember-exporter, e.g. a
# worktree's build of an older commit).  nginx (one worker, a 3 KB file) under wrk on
# loopback; a private agent of each build in turn runs `ember profile --type network` on the
# worker for one wrk run of DUR (5) s, alternating, ROUNDS (5) times.  Each line is one run:
# the BPF ns per request of the socket calls' programs (kernel.bpf_stats_enabled: their runs
# for the worker's calls and for wrk's, which only ask whether wrk is a target), and those of
# a run with an idle process as the target (every run a bystander's).  Not part of
# `make bench`: a tool for the question "did this change make a socket call cheaper?".
set -u
OLD=$1 NEW=$2 ROUNDS=${3:-5} DUR=${DUR:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/nginx.sh"
[ "$(id -u)" = 0 ] || { echo "ab_net_bpf: needs root" >&2; exit 1; }
for t in nginx wrk; do command -v $t >/dev/null || { echo "ab_net_bpf: $t missing" >&2; exit 1; }; done
T=$(mktemp -d /tmp/ember-ab.XXXXXX); chmod 755 "$T"
AGENT="" NGINX="" IDLE=""
trap 'kill $AGENT $NGINX $IDLE 2>/dev/null; wait 2>/dev/null; sysctl -qw kernel.bpf_stats_enabled=0; rm -rf "$T"' EXIT
PORT=$(( 35000 + $$ % 5000 ))
start_bench_nginx || exit 1
sleep 600 & IDLE=$!
cat > "$T/ember.yaml" <<YAML
ember: { run_dir: $T/run, output_dir: $T/out, log_level: warn }
exporter: { backends: [file] }
profiling: { continuous: { policies: [] } }
YAML
PROGS='net_sl_(send|recv)|net_(enter|exit)_(btf|raw)'
# one wrk run under a task on $2 (the worker, or the idle process): "requests BPF-runs BPF-ns"
measure() {   # $1 build, $2 target pid
  "$1/ember" profile --config "$T/ember.yaml" --type network --pid "$2" --duration $((DUR + 3))s --out "$T/prof" \
    >/dev/null 2>"$T/prof.err" & local P=$!
  for _ in $(seq 100); do grep -q profiling "$T/prof.err" && break; sleep 0.05; done
  python3 "$HERE/bpfstats.py" snap "$T/s0"
  wrk -t2 -c16 -d"${DUR}s" "http://127.0.0.1:$PORT/small.txt" > "$T/wrk.out" 2>&1
  python3 "$HERE/bpfstats.py" snap "$T/s1"
  wait $P
  echo "$(awk '/requests in/ {print $1}' "$T/wrk.out") $(python3 "$HERE/bpfstats.py" diff "$T/s0" "$T/s1" "$PROGS")"
}
sysctl -qw kernel.bpf_stats_enabled=1
for r in $(seq "$ROUNDS"); do
  for v in new old; do
    b=$OLD; [ $v = new ] && b=$NEW
    "$b/ember" run --config "$T/ember.yaml" > "$T/agent.log" 2>&1 & AGENT=$!
    for _ in $(seq 100); do [ -S "$T/run/analyzer/analyzer-0.ctl" ] && break; sleep 0.1; done
    read -r q runs ns < <(measure "$b" "$W")
    read -r qi runsi nsi < <(measure "$b" "$IDLE")
    echo "$r $v ns_per_request=$((ns / (q ? q : 1))) ns_per_request_bystanders_only=$((nsi / (qi ? qi : 1))) ns_per_bystander_run=$((nsi / (runsi ? runsi : 1))) requests=$q"
    kill $AGENT; wait $AGENT 2>/dev/null; AGENT=""
  done
done
