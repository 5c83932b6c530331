#!/usr/bin/env bash
# Python frames in on-CPU and off-CPU flame graphs of Debian's python3.11,
# one thread per known chain, all in one process:
#  - pure Python: main -> outer -> middle -> leaf burning CPU;
#  - through a C function: through_c -> sorted() (builtin_sorted, list_sort
#    in C, then PyObject_CallOneArg) -> key_leaf, the Python key function;
#  - off-CPU: napper -> nap_leaf -> time.sleep (then the GIL's wait).
# Of the samples in leaf (key_leaf; nap_leaf's blocked time), >= 95% carry the
# exact chain, placed where the interpreter's _PyEval_EvalFrameDefault frames
# were (under the thread's native start, C frames in between kept); no Python
# frame goes unnamed or unplaced, and the interpreter found is counted.  A
# copy whose Py_Version names a version ember has no layout for gets native
# frames only, and is counted.
. "$(dirname "$0")/lib.sh"
need_bpf
PY=/usr/bin/python3.11
[ -x "$PY" ] || fail "$PY missing (python3 is in deploy/install-deps.sh)"
start_agent
cat > "$TMP/chain.py" <<'PYSRC'
import os, sys, threading, time

def leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s

def middle(n):
    return leaf(n)

def outer(n):
    return middle(n)

def main():
    while not stop:
        outer(20000)

def key_leaf(x):
    s = 0
    for i in range(200):
        s += i
    return -x

def through_c():
    while not stop:
        sorted(range(300), key=key_leaf)

def nap_leaf():
    time.sleep(0.02)

def napper():
    global naps
    while not stop:
        nap_leaf()
        naps += started

stop = started = False
naps = 0
go = os.environ["EMBER_TEST_GO"]
threads = [threading.Thread(target=f) for f in (main, through_c, napper)]
for t in threads:
    t.start()
print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.01)
started = True
time.sleep(float(sys.argv[1]))
stop = True
for t in threads:
    t.join()
print("naps", naps, flush=True)
PYSRC

run_py() { # name (its type, -suffix), the interpreter $PY
  EMBER_TEST_GO=$TMP/go "$PY" "$TMP/chain.py" 4 > "$TMP/py-$1.out" & W=$!; CLEANUP_PIDS+=("$W")
  for _ in $(seq 100); do grep -q ready "$TMP/py-$1.out" && break; sleep 0.05; done
  profile_gated --config "$TMP/ember.yaml" --pid "$W" --type "${1%%-*}" --duration 30s --out "$TMP/prof-$1"
  wait "$W" || fail "the Python workload failed"
}
share() { # name folded sel_re whole_re min_total
  local n m
  n=$(folded_sum "$2" "$3"); m=$(folded_sum "$2" "$4")
  echo "$1: $m of $n carry the whole chain"
  [ "$n" -ge "$5" ] || { awk '{print $NF, substr($0, 1, 300)}' "$2" | sort -rn | head -8; fail "$1: only $n in the leaf"; }
  awk -v m="$m" -v n="$n" 'BEGIN { exit !(m >= 0.95 * n) }' ||
    { awk '{print $NF, substr($0, 1, 400)}' "$2" | sort -rn | head -8; fail "$1: only $m of $n carry the chain"; }
}
# Before Linux 5.17 (no bpf_loop) no stack is walked for Python frames: said once, counted, native frames only.
IFS=. read -r kmaj kmin _ <<<"$(uname -r)"
if [ "$kmaj" -lt 5 ] || { [ "$kmaj" = 5 ] && [ "${kmin%%[!0-9]*}" -lt 17 ]; }; then
  run_py oncpu
  F=$TMP/prof-oncpu/oncpu.folded
  "$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats.txt" || fail "ember stats failed"
  u=$(awk '$2 == "ember_python_unsupported_processes" {print $3; exit}' "$TMP/stats.txt")
  [ "${u:-0}" -ge 1 ] || fail "the Python process is not counted as unsupported on $(uname -r)"
  [ "$(folded_sum "$F" '\.py:')" = 0 ] || fail "Python frames on a kernel that cannot walk them"
  [ "$(folded_total "$F")" -ge 30 ] || fail "no native profile of the Python process"
  grep -q "Python frames are not walked on this kernel" "$TMP/agent.log" || fail "the agent does not say why"
  stop_agent || fail "agent exited with an error"
  ok "Python frames not walked on $(uname -r) (no bpf_loop): said, counted, native frames only"
  exit 0
fi
# The thread's native start (libc's frames, named or not), then Python's threading frames, then the chain: Python frames
# stand where the interpreter's frames were, never after the leaf's C frames.
START='^python3\.11;([^;]+;)+threading\.py:Thread\._bootstrap;threading\.py:Thread\._bootstrap_inner;threading\.py:Thread\.run;([^;]+;)*'
run_py oncpu
F=$TMP/prof-oncpu/oncpu.folded
share "on-CPU leaf" "$F" ';chain\.py:leaf(;|$)' "${START}chain\.py:main;chain\.py:outer;chain\.py:middle;chain\.py:leaf(;[^;]+)*$" 30
share "on-CPU key_leaf (through sorted)" "$F" ';chain\.py:key_leaf(;|$)' \
  "${START}chain\.py:through_c;([^;]+;)+PyObject_CallOneArg;([^;]+;)*chain\.py:key_leaf(;[^;]+)*$" 20
# Interpreter frames left where Python frames stand: only a sample caught while a frame is being
# pushed or a thread is being bound to its state (at most 2%).
ev=$(folded_sum "$F" '_PyEval_EvalFrameDefault'); all=$(folded_total "$F")
echo "on-CPU samples still in _PyEval_EvalFrameDefault: $ev of $all"
[ $((ev * 50)) -le "$all" ] || fail "$ev of $all samples still show _PyEval_EvalFrameDefault"
"$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats.txt" || fail "ember stats failed"
st() { awk -v k="$1" '$2 == k {print $3; exit}' "$TMP/stats.txt"; }
grep -E "python" "$TMP/stats.txt" | grep -v " 0$"
[ "$(st ember_python_interpreters_found)" -ge 1 ] && [ "$(st ember_python_processes)" -ge 1 ] ||
  fail "the interpreter is not counted as found"
[ "$(st ember_python_frames)" -gt 0 ] || fail "no Python frame counted"
for k in ember_python_frames_unnamed ember_python_frames_unplaced python_names_lost bpf_python_read_errors \
         ember_python_unknown_versions; do
  [ "$(st $k)" = 0 ] || fail "$k: $(st $k)"
done
run_py offcpu
F=$TMP/prof-offcpu/offcpu.folded
share "off-CPU nap_leaf (us blocked)" "$F" ';chain\.py:nap_leaf(;|$)' "${START}chain\.py:napper;chain\.py:nap_leaf(;[^;]+)*$" 1000000
# Its time is the sleep itself and, after it, the wait for the GIL the two busy threads hold.
sl=$(folded_sum "$F" "${START}chain\.py:napper;chain\.py:nap_leaf;([^;]+;)*clock_nanosleep;")
# Each of the naps the workload counted while profiled slept 20 ms: nine tenths of that at least
# (the GIL's wait after each sleep, longer on a busy host, makes fewer naps, not shorter ones).
naps=$(awk '$1 == "naps" {print $2}' "$TMP/py-offcpu.out")
echo "off-CPU nap_leaf in clock_nanosleep: $sl us for ${naps:-?} naps of 20 ms"
[ "${naps:-0}" -ge 20 ] || fail "the workload napped ${naps:-no} times while profiled"
[ "$sl" -ge $((naps * 20000 * 9 / 10)) ] || fail "nap_leaf's sleep is not under it (${sl} us for $naps naps of 20 ms)"
# Thread profiling: the sleep's events carry napper;nap_leaf where the interpreter's frames were.
run_py threads
python3 - "$TMP/prof-threads/threads.json" <<'PYCHK' || fail "thread events lack their Python frames"
import json, re, sys
sleeps = whole = 0
for line in open(sys.argv[1]):
    for v in json.loads(line)["Attributes"]["values"]:
        st = v.get("func.stack", "")
        if v["event.name"] in ("clock_nanosleep", "nanosleep") and "nap_leaf" in st:
            sleeps += v["count"]
            if re.search(r"threading\.py:Thread\.run;([^;]+;)*chain\.py:napper;chain\.py:nap_leaf;", st):
                whole += v["count"]
print(f"threads: {whole} of {sleeps} sleeps in nap_leaf carry the chain")
sys.exit(0 if sleeps >= 20 and whole == sleeps else 1)
PYCHK
# A build whose layout ember does not know (Py_Version says 3.15): native frames only, counted.
python3 "$(dirname "$0")/py_version_patch.py" "$PY" "$TMP/python3.15" 0x030f00f0 || fail "patching a copy failed"
chmod 755 "$TMP/python3.15"
"$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats1.txt" || fail "ember stats failed"
before=$(awk '$2 == "bpf_python_stacks" {print $3; exit}' "$TMP/stats1.txt")
PY=$TMP/python3.15 run_py oncpu-unknown
F=$TMP/prof-oncpu-unknown/oncpu.folded
"$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats2.txt" || fail "ember stats failed"
st2() { awk -v k="$1" '$2 == k {print $3; exit}' "$TMP/stats2.txt"; }
echo "unknown build: $(folded_total "$F") samples, $(folded_sum "$F" '_PyEval_EvalFrameDefault') in the interpreter's frames, $(st2 ember_python_unknown_versions) counted unknown"
[ "$(st2 ember_python_unknown_versions)" -ge 1 ] || fail "the unknown build is not counted"
[ "$(folded_sum "$F" '\.py:')" = 0 ] || fail "Python frames for a build whose layout is unknown"
[ "$(folded_sum "$F" '_PyEval_EvalFrameDefault')" -ge 30 ] || fail "no native frames for the unknown build"
[ "$(st2 bpf_python_stacks)" = "$before" ] || fail "the unknown build's stacks were walked for Python frames"
stop_agent || fail "agent exited with an error"
ok "Python frames: main;outer;middle;leaf, through_c;sorted (C);key_leaf, napper;nap_leaf blocked (off-CPU, thread events), each >= 95% whole"
