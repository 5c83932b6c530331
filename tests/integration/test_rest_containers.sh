#!/usr/bin/env bash
# The REST flamegraph feature's container and pod snoopers, with real
# cgroups shaped as docker's and as containerd's under Kubernetes lay them
# out (cgroup v2): a process in the "docker" container selected by
# container_id and one in the "pod" selected by pod_id are profiled, each
# stack rooted at [Pod]<uid>;[Con]<id>;[pid]comm as gala-gopher's stackprobe
# marks containerised processes; a process outside both is not.
. "$(dirname "$0")/lib.sh"
need_bpf
[ -f /sys/fs/cgroup/cgroup.controllers ] || fail "no cgroup v2 hierarchy at /sys/fs/cgroup"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
EMBER_USER=$("$EMBER" run --dump-config 2>/dev/null | awk '/^  user:/ {print $2; exit}'); EMBER_USER=${EMBER_USER:-ember}
C1=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'); C2=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
UID1=$(python3 -c 'import uuid; print(uuid.uuid4())')
G=/sys/fs/cgroup/ember-it-$$.slice
D=$G/docker-$C1.scope
K=$G/kubepods-besteffort-pod${UID1//-/_}.slice/cri-containerd-$C2.scope
mkdir -p "$D" "$K" || fail "cannot create cgroups under /sys/fs/cgroup"
cleanup_cg() { for c in "$D" "$K"; do [ -d "$c" ] && { cat "$c/cgroup.procs" 2>/dev/null | while read -r p; do kill "$p" 2>/dev/null; done; }; done
  sleep 0.3; rmdir "$D" "$K" "${K%/*}" "$G" 2>/dev/null || true; }
trap 'cleanup_cg; cleanup' EXIT
in_cgroup() { # dir cmd... : starts cmd inside the cgroup
  sh -c 'echo $$ > "$0/cgroup.procs" && shift && exec "$@"' "$1" "${@:2}" & echo $!
}
P1=$(in_cgroup "$D" "$PROGS/oncpu_chain" 120); CLEANUP_PIDS+=("$P1")
P2=$(in_cgroup "$K" "$PROGS/oncpu_chain" 120); CLEANUP_PIDS+=("$P2")
"$PROGS/oncpu_chain" 120 & P3=$!; CLEANUP_PIDS+=("$P3")
sleep 0.3
grep -q "docker-$C1" "/proc/$P1/cgroup" && grep -q "cri-containerd-$C2" "/proc/$P2/cgroup" || fail "the processes are not in their cgroups"
SVG=$TMP/svg FLAME=$TMP/flame
mkdir -p "$SVG" "$FLAME"; chown "$EMBER_USER" "$SVG" "$FLAME"; chmod 755 "$TMP"
start_agent --set ember.rest_api.enabled=true --set ember.rest_api.port="$PORT"
for _ in $(seq 50); do grep -q "REST control API on" "$TMP/agent.log" && break; sleep 0.1; done
r=$(curl -s -w ' %{http_code}' -X PUT "http://127.0.0.1:$PORT/flamegraph" --data-urlencode json="{\"cmd\": {\"probe\": [\"oncpu\"]},
  \"snoopers\": {\"container_id\": [\"$C1\"], \"pod_id\": [\"$UID1\"]},
  \"params\": {\"svg_period\": 30, \"multi_instance\": 1, \"svg_dir\": \"$SVG\", \"flame_dir\": \"$FLAME\"}, \"state\": \"running\"}")
echo "PUT: $r"; [[ "$r" == "New config takes effect 200" ]] || fail "the PUT was refused"
for _ in $(seq 60); do [ "$(ls "$FLAME"/oncpu/*.txt 2>/dev/null | wc -l)" -ge 2 ] && break; sleep 1; done
ls "$FLAME/oncpu" || true
f1=$(ls "$FLAME"/oncpu/*_oncpu_"$P1".txt 2>/dev/null | head -1); f2=$(ls "$FLAME"/oncpu/*_oncpu_"$P2".txt 2>/dev/null | head -1)
[ -n "$f1" ] && [ -n "$f2" ] || fail "no flame graph of the processes in the container and the pod"
[ -z "$(ls "$FLAME"/oncpu/*_oncpu_"$P3".txt 2>/dev/null)" ] || fail "the process outside the containers was profiled"
r1=$(cut -d';' -f1-2 "$f1" | sort -u); r2=$(cut -d';' -f1-3 "$f2" | sort -u)
echo "roots: $r1 | $r2"
[ "$r1" = "[Con]${C1:0:12};[$P1]oncpu_chain" ] || fail "the docker process's stacks are not rooted at [Con]<id>;[pid]comm"
[ "$r2" = "[Pod]$UID1;[Con]${C2:0:12};[$P2]oncpu_chain" ] || fail "the pod's process's stacks are not rooted at [Pod]<uid>;[Con]<id>;[pid]comm"
ok "container and pod snoopers select by cgroup, and their stacks carry [Pod]/[Con] frames"
stop_agent || fail "agent exited with an error"
