#!/usr/bin/env bash
# gala-gopher's REST control API, with the manual's curl commands verbatim
# (its port replaced by a free one): the scope example is taken and read
# back; then, as in the manual, the runtime-parameters example and the
# start command, each a PUT of one item: the parameters are taken (what
# flamegraph does not use said to be ignored) and the scope kept, a PUT
# refused in its second item changes nothing, and the start runs the scope
# and parameters of the PUTs before: GET says so, and the on-CPU stacks of
# the process the scope names are in the folded file the stop writes.  The
# stackprobe examples are taken.  Bad bodies each get a 4xx with a message
# and change nothing; PUT /proc's 501 points to baseinfo's proc sub-item, PUT /jvm's to the Java agent.
# Then the flamegraph feature at work,
# one svg_period (30 s) for all of it: oncpu for a process named by comm,
# one named by pid, one in a cgroup shaped as docker's selected by
# container_id and one in a cgroup shaped as containerd's under Kubernetes
# selected by pod_id (cgroup v2); one SVG per process in svg_dir with its
# folded stacks in flame_dir, rooted at [pid]comm under [Pod]<uid> and
# [Con]<id> frames for the containerised ones; a process started after the
# PUT is profiled in the same period, one outside every snooper is not.
# Stopping cancels.
. "$(dirname "$0")/lib.sh"
need_bpf
EMBER_USER=$("$EMBER" run --dump-config 2>/dev/null | awk '/^  user:/ {print $2; exit}'); EMBER_USER=${EMBER_USER:-ember}
SVG=$TMP/svg FLAME=$TMP/flame
mkdir -p "$SVG" "$FLAME"; chown "$EMBER_USER:$EMBER_USER" "$SVG" "$FLAME"; chmod 770 "$SVG" "$FLAME"; chmod 755 "$TMP"
AGENT_PROFILING_YAML=""
start_rest_agent
PORT=$REST_PORT
grep -q "REST control API on http://127.0.0.1:$PORT" "$TMP/agent.log" || { cat "$TMP/agent.log"; fail "the REST API did not start"; }
U=http://localhost:$PORT
code() { cut -d' ' -f1 <<<"$1"; }
req() { # curl args... -> "CODE BODY"
  local out; out=$(curl -s -w '\n%{http_code}' "$@"); echo "$(tail -1 <<<"$out") $(head -n -1 <<<"$out" | tr '\n' ' ')"
}
expect() { # label want-code want-text "CODE BODY"
  echo "$1: $4"
  [ "$(code "$4")" = "$2" ] || fail "$1: HTTP $(code "$4"), expected $2"
  grep -qF -- "$3" <<<"$4" || fail "$1: the answer does not say '$3'"
}
get() { curl -s "$U/flamegraph"; }

# --- the manual's commands, verbatim -------------------------------------------------------
r=$(req -X PUT http://localhost:$PORT/flamegraph --data-urlencode json='
{
    "cmd": {
        "bin": "/opt/gala-gopher/extend_probes/stackprobe",
        "check_cmd": "",
        "probe": [
            "oncpu",
            "offcpu"
        ]
    },
    "snoopers": {
        "proc_id": [
            101,
            102
        ],
        "proc_name": [
            {
                "comm": "app1",
                "cmdline": "",
                "debugging_dir": ""
            },
            {
                "comm": "app2",
                "cmdline": "",
                "debugging_dir": ""
            }
        ],
        "pod_id": [
            "pod1",
            "pod2"
        ],
        "container_id": [
            "container1",
            "container2"
        ]
    }
}')
expect "the manual's scope example" 200 "New config takes effect" "$r"
get > "$TMP/get1.json"
python3 - "$TMP/get1.json" <<'PY' || fail "GET does not return what was PUT"
import json, sys
d = json.load(open(sys.argv[1]))
print("GET:", json.dumps(d))
s = d["snoopers"]
sys.exit(0 if d["cmd"]["probe"] == ["oncpu", "offcpu"] and s["proc_id"] == [101, 102]
         and [n["comm"] for n in s["proc_name"]] == ["app1", "app2"] and s["pod_id"] == ["pod1", "pod2"]
         and s["container_id"] == ["container1", "container2"] and d["state"] == "stopped" else 1)
PY
# The manual's sequence: scope (above), then parameters, then the state, each PUT carrying one
# item; gala-gopher applies what a PUT carries and keeps the rest, so it ends running with the
# scope and parameters of the PUTs before.  app1 is a process the scope names.
mkdir -p "$TMP/bin"; ln -s "$PROGS/oncpu_chain" "$TMP/bin/app1"
"$TMP/bin/app1" 120 & APP1=$!; CLEANUP_PIDS+=("$APP1")
r=$(req -X PUT http://localhost:$PORT/flamegraph --data-urlencode json='
{
    "params": {
        "report_period": 180,
        "sample_period": 180,
        "metrics_type": [
            "raw",
            "telemetry"
        ]
    }
}')
expect "the manual's runtime-parameters example" 200 "New config takes effect" "$r"
for w in "unchanged: cmd, snoopers, state (stopped)" "params.sample_period" "params.metrics_type"; do
  grep -qF -- "$w" <<<"$r" || fail "the answer to the runtime-parameters example does not say '$w'"
done
get > "$TMP/get2.json"
python3 - "$TMP/get1.json" "$TMP/get2.json" <<'PY' || fail "the parameters PUT did not keep the scope, or did not take report_period"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print("GET:", json.dumps(b))
sys.exit(0 if b["cmd"] == a["cmd"] and b["snoopers"] == a["snoopers"] and b["params"]["report_period"] == 180
         and b["state"] == "stopped" else 1)
PY
# A refused PUT changes nothing, not even the items before the one refused.
expect "a PUT refused in its second item" 400 "params.svg_period invalid value 5, must be in [30, 600]" \
  "$(req -X PUT "$U/flamegraph" -d 'json={"cmd": {"probe": ["mem"]}, "params": {"svg_period": 5}}')"
[ "$(get)" = "$(cat "$TMP/get2.json")" ] || fail "a refused PUT changed the configuration"
rstat() { "$EMBER" stats --config "$TMP/ember.yaml" 2>/dev/null | awk -v k="$1" '$2 == k {s += $3} END {print s + 0}'; }
wait_stat() { # key value: the gauge or counter reaches value within 10 s
  for _ in $(seq 50); do [ "$(rstat "$1")" = "$2" ] && return 0; sleep 0.2; done
  echo "$1: $(rstat "$1"), expected $2"; return 1
}
# Tasks write under the manual's directories when they end (a stop): made here, removed after.
GG=/var/log/gala-gopher; GG_MADE=; [ -e "$GG" ] || GG_MADE=1; touch "$TMP/gg.mark"
t0=$(rstat ember_rest_tasks_started)
r=$(req -X PUT http://localhost:$PORT/flamegraph --data-urlencode json='
{
    "state": "running" // optional: running, stopped
}')
expect "the manual's start command" 200 "New config takes effect" "$r"
get > "$TMP/get3.json"
python3 - "$TMP/get2.json" "$TMP/get3.json" <<'PY' || fail "the state PUT did not keep the scope and parameters"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print("GET:", json.dumps(b))
sys.exit(0 if b["cmd"] == a["cmd"] and b["snoopers"] == a["snoopers"] and b["params"] == a["params"]
         and b["state"] == "running" else 1)
PY
# What ember does: the scope selects app1 (the only process it names here), and an on-CPU and
# an off-CPU task profile it: its stacks are in the on-CPU folded file the stop writes.
wait_stat ember_rest_flame_processes_selected 1 || fail "the manual's sequence does not select app1"
wait_stat ember_rest_tasks_started $((t0 + 2)) || fail "the manual's sequence started no oncpu and offcpu tasks"
sleep 2
expect "stop" 200 "New config takes effect" "$(req -X PUT "$U/flamegraph" -d 'json={"state": "stopped"}')"
for _ in $(seq 40); do
  found=$(find "$GG/flamegraph/oncpu" -name '*_oncpu.txt' -newer "$TMP/gg.mark" -exec grep -l "^\[$APP1\]app1;" {} + 2>/dev/null)
  [ -n "$found" ] && break; sleep 0.5
done
echo "app1's stacks: ${found:-none}"
[ -n "$found" ] || fail "no on-CPU stacks of app1 ($APP1) under $GG/flamegraph/oncpu"
kill "$APP1"; wait "$APP1" 2>/dev/null
ok "the manual's sequence (scope, parameters, state) runs with the scope and parameters of the PUTs before"
# Processes the manual's stackprobe commands name (comm is the name they were started by).
ln -s "$PROGS/oncpu_chain" "$TMP/bin/cadvisor"; ln -s "$PROGS/oncpu_chain" "$TMP/bin/java"
"$TMP/bin/cadvisor" 120 & CAD=$!; CLEANUP_PIDS+=("$CAD")
"$TMP/bin/java" 120 & JAVA=$!; CLEANUP_PIDS+=("$JAVA")
t0=$(rstat ember_rest_tasks_started)
r=$(req -X PUT http://localhost:$PORT/flamegraph -d json='{ "cmd": {"probe": ["oncpu"] }, "snoopers": {"proc_name": [{ "comm": "cadvisor"}] }, "state": "running"}')
expect "the manual's basic stackprobe command" 200 "New config takes effect" "$r"
# It selects the process named cadvisor, and one on-CPU task profiles it.
wait_stat ember_rest_flame_processes_selected 1 || fail "the manual's basic command does not select the cadvisor process"
wait_stat ember_rest_tasks_started $((t0 + 1)) || fail "the manual's basic command started no task for cadvisor"
r=$(req -X PUT http://localhost:$PORT/flamegraph -d json='{ "cmd": {  "check_cmd": "",  "probe": ["oncpu", "offcpu", "mem"] }, "snoopers": {  "proc_name": [{   "comm": "cadvisor",   "cmdline": "",   "debugging_dir": ""  }, {   "comm": "java",   "cmdline": "",   "debugging_dir": ""  }] }, "params": {  "perf_sample_period": 100,  "svg_period": 300,  "svg_dir": "/var/log/gala-gopher/stacktrace",  "flame_dir": "/var/log/gala-gopher/flamegraph",  "pyroscope_server": "localhost:4040",  "multi_instance": 1,  "native_stack": 0 }, "state": "running"}')
expect "the manual's advanced stackprobe command" 200 "New config takes effect" "$r"
# cadvisor and java, each with its own task (multi_instance) of each of the three sub-items.
wait_stat ember_rest_flame_processes_selected 2 || fail "the manual's advanced command does not select cadvisor and java"
wait_stat ember_rest_tasks_started $((t0 + 7)) || fail "the manual's advanced command did not start 3 tasks for each of its 2 processes"
r=$(req -X PUT http://localhost:$PORT/flamegraph --data-urlencode json='
{
    "state": "stopped"
}')
expect "the manual's stop command" 200 "New config takes effect" "$r"
get | grep -q '"state": "stopped"' || fail "the state is not stopped"
wait_stat ember_rest_flame_processes_selected 0 || fail "processes still selected after the stop"
kill "$CAD" "$JAVA"; wait "$CAD" "$JAVA" 2>/dev/null
sleep 1
if [ -n "$GG_MADE" ]; then rm -rf "$GG"; else find "$GG" -type f -newer "$TMP/gg.mark" -delete; fi
ok "the manual's stackprobe commands: taken"

# --- refusals change nothing -----------------------------------------------------------------
before=$(get)
expect "bad JSON" 400 "not JSON" "$(req -X PUT "$U/flamegraph" -d 'json={"cmd": {"probe": ["oncpu"]}')"
expect "an unknown key" 400 "unknown key 'cmdd'" "$(req -X PUT "$U/flamegraph" -d 'json={"cmdd": {}}')"
expect "out of range" 400 "params.perf_sample_period invalid value 5, must be in [10, 1000]" \
  "$(req -X PUT "$U/flamegraph" -d 'json={"params": {"perf_sample_period": 5}}')"
expect "an unsafe directory" 400 "params.svg_dir '/tmp/../etc' has an empty, '.' or '..' component" \
  "$(req -X PUT "$U/flamegraph" -d 'json={"params": {"svg_dir": "/tmp/../etc"}}')"
expect "a sub-item of another feature" 400 "cmd.probe: 'tcp_rtt' is not a sub-item of flamegraph" \
  "$(req -X PUT "$U/flamegraph" -d 'json={"cmd": {"probe": ["tcp_rtt"]}}')"
head -c 10000 /dev/zero | tr '\0' ' ' > "$TMP/big"
expect "an oversized body" 413 "larger than 8192 bytes" "$(req -X PUT "$U/flamegraph" --data-binary @"$TMP/big")"
expect "not json=" 400 "not json=<document>" "$(req -X PUT "$U/flamegraph" -d 'config={}')"
expect "another method" 405 "use GET or PUT" "$(req -X DELETE "$U/flamegraph")"
expect "a feature ember does not provide" 501 "jvm is not supported by ember; supported: flamegraph, l7, tcp" "$(req "$U/jvm")"
expect "PUT /proc" 501 "baseinfo's proc sub-item: PUT /baseinfo" "$(req -X PUT "$U/proc" -d 'json={"cmd": {"probe": ["proc_io"]}}')"
expect "PUT /jvm" 501 "profiling.java.agent: true" "$(req -X PUT "$U/jvm" -d 'json={"cmd": {"probe": ["jvm"]}}')"
expect "no such feature" 404 "no such feature" "$(req "$U/nonsense")"
[ "$(get)" = "$before" ] || fail "a refused PUT changed the configuration"
ok "bad bodies get a 4xx with the reason and change nothing"

# --- the flamegraph feature at work ------------------------------------------------------------
# a cgroup v2 hierarchy: /sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host
CGROOT=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
[ -n "$CGROOT" ] || fail "no cgroup v2 hierarchy mounted"
CID1=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'); CID2=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
PODID=$(python3 -c 'import uuid; print(uuid.uuid4())')
G=$CGROOT/ember-it-$$.slice
CG1=$G/docker-$CID1.scope
CG2=$G/kubepods-besteffort-pod${PODID//-/_}.slice/cri-containerd-$CID2.scope
mkdir -p "$CG1" "$CG2" || fail "cannot create cgroups under $CGROOT"
cleanup_cg() { for c in "$CG1" "$CG2"; do [ -f "$c/cgroup.procs" ] && while read -r p; do kill "$p" 2>/dev/null; done < "$c/cgroup.procs"; done
  sleep 0.3; rmdir "$CG1" "$CG2" "${CG2%/*}" "$G" 2>/dev/null || true; }
trap 'cleanup_cg; cleanup' EXIT
in_cgroup() { sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$1" "${@:2}" > /dev/null 2>&1 & echo $!; }
"$PROGS/oncpu_chain" 120 & C1=$!; CLEANUP_PIDS+=("$C1")
"$PROGS/cpu_work" 100000 > /dev/null & W=$!; CLEANUP_PIDS+=("$W")
K1=$(in_cgroup "$CG1" "$PROGS/burn_later" 0 120 in-docker); CLEANUP_PIDS+=("$K1")
K2=$(in_cgroup "$CG2" "$PROGS/burn_later" 0 120 in-pod); CLEANUP_PIDS+=("$K2")
"$PROGS/burn_later" 0 120 outside > /dev/null & K3=$!; CLEANUP_PIDS+=("$K3")
sleep 0.3
grep -q "docker-$CID1" "/proc/$K1/cgroup" && grep -q "cri-containerd-$CID2" "/proc/$K2/cgroup" || fail "the processes are not in their cgroups"
r=$(req -X PUT "$U/flamegraph" --data-urlencode json="{\"cmd\": {\"probe\": [\"oncpu\"]},
  \"snoopers\": {\"proc_id\": [$W], \"proc_name\": [{\"comm\": \"oncpu_chain\"}], \"container_id\": [\"$CID1\"], \"pod_id\": [\"$PODID\"]},
  \"params\": {\"svg_period\": 30, \"perf_sample_period\": 10, \"multi_instance\": 1, \"svg_dir\": \"$SVG\", \"flame_dir\": \"$FLAME\"},
  \"state\": \"running\"}")
expect "the flamegraph PUT" 200 "New config takes effect" "$r"
sleep 4
"$PROGS/oncpu_chain" 120 & C2=$!; CLEANUP_PIDS+=("$C2")   # started after the PUT, within the period
for _ in $(seq 90); do [ "$(ls "$SVG"/oncpu/*.svg 2>/dev/null | wc -l)" -ge 5 ] && break; sleep 1; done
ls -la "$SVG/oncpu" "$FLAME/oncpu" || true
for p in "$C1" "$C2" "$W" "$K1" "$K2"; do
  s=$(ls "$SVG"/oncpu/*_oncpu_"$p".svg 2>/dev/null | head -1)
  [ -n "$s" ] && grep -q "<svg" "$s" || fail "no SVG for pid $p in $SVG/oncpu"
  t=${s/#$SVG/$FLAME}; t=${t%.svg}.txt
  [ -s "$t" ] || fail "no folded stacks $t"
  case $p in
    "$K1") want="[Con]${CID1:0:12};[$p]$(cat /proc/$p/comm)"; root=$(sed 's/ [0-9]*$//' "$t" | cut -d';' -f1-2 | sort -u) ;;
    "$K2") want="[Pod]$PODID;[Con]${CID2:0:12};[$p]$(cat /proc/$p/comm)"; root=$(sed 's/ [0-9]*$//' "$t" | cut -d';' -f1-3 | sort -u) ;;
    *) want="[$p]$(cat /proc/$p/comm)"; root=$(sed 's/ [0-9]*$//' "$t" | cut -d';' -f1 | sort -u) ;;
  esac
  echo "pid $p: stacks rooted at $root"
  [ "$root" = "$want" ] || fail "stacks of $t are not rooted at $want"
done
[ -z "$(ls "$SVG"/oncpu/*_oncpu_"$K3".svg 2>/dev/null)" ] || fail "a process outside every snooper was profiled"
f=$(ls "$FLAME"/oncpu/*_oncpu_"$C1".txt | head -1)
chain=$(folded_sum "$f" "^\\[$C1\\]oncpu_chain;(.*;)?outer;middle;leaf(;|\$)"); total=$(folded_total "$f")
echo "pid $C1: $chain of $total samples in outer;middle;leaf"
[ "$total" -gt 0 ] && [ $((100 * chain / total)) -ge 80 ] || fail "the known chain is not in the flame graph"
[[ "$(basename "$f")" =~ ^[0-9]{14}_oncpu_${C1}\.txt$ ]] || fail "$(basename "$f") is not <YYYYMMDDHHMMSS>_oncpu_<pid>.txt"
ok "one flame graph per process and period in svg_dir: by pid, comm, container and pod, the one started later included"
expect "stop" 200 "New config takes effect" "$(req -X PUT "$U/flamegraph" -d 'json={"state": "stopped"}')"
for _ in $(seq 20); do
  n=$("$EMBER" stats --config "$TMP/ember.yaml" 2>/dev/null | awk '$1 == "analyzer0" && $2 == "ember_tasks_running" {print $3}')
  [ "$n" = 0 ] && break; sleep 0.5
done
[ "$n" = 0 ] || fail "$n tasks still run after the stop"
ok "stopping the feature cancels its tasks"
stop_agent || fail "agent exited with an error"
