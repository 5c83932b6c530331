# Shared helpers for integration tests (sourced).  Tests run as root with real BPF.
# Exit codes: 0 pass, 77 skip (print "SKIP: reason"), anything else fail.
set -u
ROOT=${EMBER_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
B=${EMBER_BUILD:-$ROOT/build}
EMBER=$B/ember
PROGS=$B/progs
TMP=$(mktemp -d /tmp/ember-it.XXXXXX)
chmod 755 "$TMP"
CLEANUP_PIDS=()

cleanup() {
  # Only the test's own shell cleans up: a background child killed between
  # its fork and its exec (a test discarding a pid it does not want) runs
  # the EXIT trap too, and would kill the agent and remove $TMP under the test.
  [ "$BASHPID" = "$$" ] || return 0
  for p in "${CLEANUP_PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
  sleep 0.2
  for p in "${CLEANUP_PIDS[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null; done
  wait 2>/dev/null
  [ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }

need_root() { [ "$(id -u)" = 0 ] || skip "needs root"; }
need_bpf() {
  need_root
  [ -r /sys/kernel/btf/vmlinux ] || skip "kernel has no BTF"
  [ -x "$EMBER" ] || fail "$EMBER not built"
}

# A private agent for this test: writes $TMP/ember.yaml and starts `ember run` in the background.
# AGENT_BACKENDS (default file), AGENT_EXPORTER_YAML and AGENT_PROFILING_YAML (lines indented
# by two spaces, under exporter: and profiling:) add to its configuration.  No continuous-profiling
# policy unless AGENT_POLICIES gives them (a test's busy workload would start tasks of its own);
# AGENT_CONTINUOUS adds keys of profiling.continuous (flow mapping entries); AGENT_ANALYZERS sets
# ember.analyzers (1); AGENT_EMBER_YAML adds keys under ember: (two spaces), AGENT_LOG_LEVEL sets its log level (info).
start_agent() {
  AGENT_RUN=$TMP/run; AGENT_OUT=$TMP/out
  cat > "$TMP/ember.yaml" <<YAML
ember:
  run_dir: $AGENT_RUN
  output_dir: $AGENT_OUT
  log_level: ${AGENT_LOG_LEVEL:-info}
  analyzers: ${AGENT_ANALYZERS:-1}
${AGENT_EMBER_YAML:-}
exporter:
  backends: [${AGENT_BACKENDS:-file}]
${AGENT_EXPORTER_YAML:-}
profiling:
  flush_interval: ${FLUSH:-1s}
  continuous: { policies: ${AGENT_POLICIES:-[]}${AGENT_CONTINUOUS:+, $AGENT_CONTINUOUS} }
${AGENT_PROFILING_YAML:-}
YAML
  "$EMBER" run --config "$TMP/ember.yaml" "$@" >"$TMP/agent.log" 2>&1 &
  AGENT_PID=$!
  CLEANUP_PIDS+=("$AGENT_PID")
  for _ in $(seq 100); do
    [ -S "$AGENT_RUN/analyzer/analyzer-0.ctl" ] && [ -f "$AGENT_RUN/agent.info" ] && return 0
    kill -0 "$AGENT_PID" 2>/dev/null || { cat "$TMP/agent.log"; fail "agent exited at start"; }
    sleep 0.1
  done
  cat "$TMP/agent.log"; fail "agent did not come up"
}

# The ids of the BPF objects of one KIND (prog, map) this test's collector holds (the
# KIND_id of each of its fds), space-separated: not another agent's on the same host.
agent_bpf_ids() {
  local cpid
  cpid=$(pgrep -f "ember-collector --run-dir $AGENT_RUN" | head -1)
  [ -n "$cpid" ] || { echo "agent_bpf_ids: no collector for $AGENT_RUN" >&2; return 1; }
  python3 - "$cpid" "$1" <<'PY'
import glob, sys
ids = set()
for f in glob.glob(f"/proc/{sys.argv[1]}/fdinfo/*"):
    try:
        ids.update(int(l.split()[1]) for l in open(f) if l.startswith(sys.argv[2] + "_id:"))
    except OSError:
        pass
print(" ".join(map(str, sorted(ids))))
PY
}

# The BPF programs this test's agent loaded (their names, sorted, one line).
agent_progs() {
  local ids
  ids=$(agent_bpf_ids prog) || return 1
  bpftool prog show -j | python3 -c '
import json, sys
ids = {int(i) for i in sys.argv[1].split()}
print(" ".join(sorted({"name " + p.get("name", "") for p in json.load(sys.stdin) if p["id"] in ids})))' "$ids"
}

# The entries of this test's collector's BPF map NAME, one JSON value per line (bpftool's BTF view).
agent_map_values() {
  local ids
  ids=$(agent_bpf_ids map) || return 1
  python3 - "$ids" "$1" <<'PY'
import json, subprocess, sys
ids = {int(i) for i in sys.argv[1].split()}
for m in json.loads(subprocess.run(["bpftool", "map", "show", "-j"], capture_output=True, check=True).stdout):
    if m["id"] in ids and m.get("name") == sys.argv[2]:
        for e in json.loads(subprocess.run(["bpftool", "map", "dump", "id", str(m["id"]), "-j"],
                                           capture_output=True, check=True).stdout):
            print(json.dumps(e.get("formatted", e).get("value")))
PY
}

stop_agent() {
  kill -TERM "$AGENT_PID" 2>/dev/null
  for _ in $(seq 300); do kill -0 "$AGENT_PID" 2>/dev/null || { wait "$AGENT_PID"; return $?; }; sleep 0.1; done
  fail "agent did not stop within 30 s"
}

# Runs `ember profile ARGS...` (stdout to $TMP/p.out, stderr to $TMP/p.err) and, once it reports the
# task attached ("ember: profiling ..." comes after the collector's answer), creates $TMP/go: a
# workload started with EMBER_TEST_GO=$TMP/go (tests/progs/start_gate.h) measures only while probed.
profile_gated() {
  rm -f "$TMP/go"
  "$EMBER" profile "$@" >"$TMP/p.out" 2>"$TMP/p.err" &
  local p=$! i
  for i in $(seq 600); do
    grep -q '^ember: profiling' "$TMP/p.err" && break
    kill -0 "$p" 2>/dev/null || break
    sleep 0.05
  done
  touch "$TMP/go"
  wait "$p" || { cat "$TMP/p.err"; fail "ember profile $* failed"; }
  # Closed again: a workload started for the next profile_gated waits for its own task.
  rm -f "$TMP/go"
  grep -q '^ember: profiling' "$TMP/p.err" || { cat "$TMP/p.err"; fail "ember profile never reported the task attached"; }
}

# An agent reporting to the OAP receiver (tests/oap_receiver.py) on port $1,
# discovering processes by the REGEX rules in $2 (YAML list items), running
# no local policy, the OAP's triggered tasks for $3 (execute_duration; the
# silence is 10 min).  Writes $TMP/ember.yaml, sets AGENT_PID, AGENT_RUN,
# AGENT_OUT ($TMP/run, $TMP/out).  ember.analyzers: $OAP_ANALYZERS (1).
start_oap_cp_agent() {
  AGENT_RUN=$TMP/run AGENT_OUT=$TMP/out
  cat > "$TMP/ember.yaml" <<YAML
ember: { run_dir: $AGENT_RUN, output_dir: $AGENT_OUT, analyzers: ${OAP_ANALYZERS:-1} }
exporter: { backends: [file, skywalking] }
core: { backend: { addr: "127.0.0.1:$1", check_period: 1 } }
process_discovery:
  heartbeat_period: 1s
  scanner:
    mode: REGEX
    regex:
$2
profiling:
  check_interval: 1s
  flush_interval: 1s
  continuous:
    policies: []
    check_interval: 1s
    trigger: { execute_duration: $3, silence_duration: 10m }
YAML
  "$EMBER" run --config "$TMP/ember.yaml" >"$TMP/agent.log" 2>&1 &
  AGENT_PID=$!; CLEANUP_PIDS+=("$AGENT_PID")
}

# A free TCP port on 127.0.0.1.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# An agent serving the REST control API on a free port (REST_PORT) and /metrics on another
# (PROM_PORT, backends file and prometheus); more `ember run` options in "$@".  Waits for the API.
start_rest_agent() {
  REST_PORT=$(free_port); PROM_PORT=$(free_port)
  AGENT_BACKENDS="file, prometheus" AGENT_EXPORTER_YAML="  prometheus: { address: 127.0.0.1, port: $PROM_PORT }"
  start_agent --set ember.rest_api.enabled=true --set ember.rest_api.port="$REST_PORT" "$@"
  for _ in $(seq 50); do grep -q "REST control API on" "$TMP/agent.log" && return 0; sleep 0.1; done
  cat "$TMP/agent.log"; fail "the REST API did not start"
}

# The OAP receiver's record file $1 holds a call of rpc $2.
oap_called() { /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
sys.exit(0 if any(json.loads(l)["rpc"] == sys.argv[2] for l in open(sys.argv[1]) if l.strip()) else 1)
PY
}

# pid of the child of the agent running a given executable name
child_pid() { pgrep -P "$AGENT_PID" -x "$1" | head -1; }

# "count" of folded lines whose stack matches an extended regex
# (the regex goes through the environment: awk -v would process its backslashes, and gawk and
# mawk do that differently)
folded_sum() { RE="$2" awk '{n=$NF; st=$0; sub(/ [0-9]+$/, "", st); if (st ~ ENVIRON["RE"]) s+=n} END {print s+0}' "$1"; }
folded_total() { awk '{s+=$NF} END {print s+0}' "$1"; }
# Distinct stacks of a folded file as its SVG draws them: an unresolved frame
# (module+0xhex, "_[k]" after it for the kernel) is "[module]", and a run of
# one module's unresolved frames is one frame (exporter/flamegraph.h).
folded_drawn_stacks() { awk '{
  st = $0; sub(/ [0-9]+$/, "", st); n = split(st, f, ";"); out = ""; prev = ""; prevm = 0
  for (i = 1; i <= n; i++) {
    x = f[i]; k = ""; m = 0
    if (x ~ /_\[k\]$/) { k = "_[k]"; y = substr(x, 1, length(x) - 4) } else y = x
    if (match(y, /\+0x[0-9a-f]+$/) && RSTART > 1 && RLENGTH <= 19) {
      mod = substr(y, 1, RSTART - 1); m = 1
      x = (mod ~ /^\[.*\]$/) ? mod k : "[" mod "]" k
    }
    if (m && prevm && x == prev) continue
    out = out ";" x; prev = x; prevm = m
  }
  if (!(out in seen)) { seen[out] = 1; c++ }
} END { print c + 0 }' "$1"; }
# The text of an SVG's <text id="ID"> (tspans joined by spaces, a tooltip left out).
svg_text() { tr '\n' ' ' < "$1" | grep -o "<text id=\"$2\"[^>]*>.*" | sed -e 's|</text>.*||' \
  -e 's|<title>[^<]*</title>||' -e 's|</tspan><tspan[^>]*>| |g' -e 's|<[^>]*>||g'; }

# CPU seconds (user+sys) a process has used so far, from /proc/<pid>/stat.
cpu_secs() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); printf "%.3f\n", ($12 + $13) / hz }' "/proc/$1/stat"; }
