#!/usr/bin/env bash
# What Python frames cost the on-CPU sampler, from the kernel's own accounting
# (kernel.bpf_stats_enabled): BPF ns per target sample of python3.11 burning
# CPU under a 64-frame Python stack (62 calls alternating between two
# functions, the leaf and the module's frame: a walk checks each function's
# code object once), walked for its Python frames; the same depth through 62
# distinct functions (the worst case: every frame's code object is checked);
# beside the same script run by a copy
# of the interpreter whose Py_Version ember has no layout for (native frames
# only: the walk is skipped), alternated ROUNDS (3) times, DUR (8) s each.
# Prints each mode's BPF ns per sample (target <= 10000 ns with Python
# frames), the walk's own time per sample (bpf_python_walk_seconds: the walker
# reads the clock at its start and end) and the Python frames per sample.
set -u
ROOT=${EMBER_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
B=${EMBER_BUILD:-$ROOT/build}
[ "$(id -u)" = 0 ] || { echo "python: SKIP (needs root)"; exit 0; }
PY=/usr/bin/python3.11
[ -x "$PY" ] || { echo "python: $PY missing (deploy/install-deps.sh installs it)"; exit 1; }
DUR=${DUR:-8} ROUNDS=${ROUNDS:-3}
T=$(mktemp -d /tmp/ember-bench.XXXXXX); chmod 755 "$T"
trap 'kill $AGENT ${W:-} ${I:-} 2>/dev/null; wait 2>/dev/null; sysctl -qw kernel.bpf_stats_enabled=0; rm -rf "$T"' EXIT
. "$(dirname "$0")/lib/agent.sh"
start_bench_agent || exit 1
sysctl -qw kernel.bpf_stats_enabled=1
snap() { python3 "$ROOT/bench/lib/bpfstats.py" snap "$1"; }
delta() { python3 "$ROOT/bench/lib/bpfstats.py" diff "$1" "$2" "$3"; }
python3 "$ROOT/tests/integration/py_version_patch.py" "$PY" "$T/python3.15" 0x030f00f0 && chmod 755 "$T/python3.15" ||
  { echo "python: patching a copy of $PY failed"; exit 1; }
cat > "$T/deep.py" <<'PYSRC'
import sys, time
# Two functions calling each other: no frame runs its caller's code, so every frame's code object is checked.
def rec_a(n, end):
    return burn(end) if n == 0 else rec_b(n - 1, end)
def rec_b(n, end):
    return burn(end) if n == 0 else rec_a(n - 1, end)
def burn(end):
    s = 0
    while time.time() < end:
        for i in range(10000):
            s += i
    return s
print("ready", flush=True)
rec_a(61, time.time() + float(sys.argv[1]))
PYSRC
# The worst case: 62 distinct functions, so that no frame's code object was checked before in its walk.
python3 - "$T/distinct.py" <<'GEN'
import sys
with open(sys.argv[1], "w") as f:
    f.write("import sys, time\n")
    for i in range(62):
        f.write(f"def d{i}(end):\n    return d{i + 1}(end)\n" if i < 61 else f"def d{i}(end):\n    return burn(end)\n")
    f.write("def burn(end):\n    s = 0\n    while time.time() < end:\n        for i in range(10000):\n            s += i\n    return s\n")
    f.write("print('ready', flush=True)\nd0(time.time() + float(sys.argv[1]))\n")
GEN
# mode interpreter [script]: one profile of DUR s -> "mode runs ns samples python_frames"
one() {
  "$2" "${3:-$T/deep.py}" $((DUR + 3)) > "$T/w.out" & W=$!
  for _ in $(seq 100); do grep -q ready "$T/w.out" && break; sleep 0.05; done
  snap "$T/s0"
  "$B/ember" profile --config "$T/ember.yaml" --pid $W --duration "${DUR}s" --out "$T/p-$1" >/dev/null 2>"$T/p.err" ||
    { cat "$T/p.err" >&2; return 1; }
  snap "$T/s1"
  kill $W 2>/dev/null; wait $W 2>/dev/null; W=
  local samples frames
  samples=$(awk '{s += $NF} END {print s + 0}' "$T/p-$1/oncpu.folded")
  frames=$(awk '{n = gsub(/(deep|distinct)\.py:/, "&"); f += n * $NF; s += $NF} END {printf "%.1f", s ? f / s : 0}' "$T/p-$1/oncpu.folded")
  "$B/ember" stats --config "$T/ember.yaml" > "$T/st-$1" 2>/dev/null
  echo "$1 $(delta "$T/s0" "$T/s1" oncpu_sample) $samples $frames $(awk '$1 == "collector" && $2 == "bpf_python_walk_seconds" {n = $3 * 1e9} $1 == "collector" && $2 == "bpf_python_stacks" {s = $3} END {printf "%.0f %d\n", n, s}' "$T/st-$1")" >> "$T/res"
}
# The early return on other processes and idle CPUs, taken out of each run: an idle target.
sleep 60 & I=$!
snap "$T/i0"; "$B/ember" profile --config "$T/ember.yaml" --pid $I --duration 5s --out "$T/pi" >/dev/null 2>&1; snap "$T/i1"
read -r oruns ons < <(delta "$T/i0" "$T/i1" oncpu_sample)
kill $I; wait $I 2>/dev/null; I=
for r in $(seq "$ROUNDS"); do
  one python "$PY" || exit 1
  one distinct "$PY" "$T/distinct.py" || exit 1
  one native "$T/python3.15" || exit 1
done
python3 - "$T/res" "$oruns" "$ons" <<'PYRES'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
other = int(sys.argv[3]) / max(int(sys.argv[2]), 1)
def per(mode):
    v = [(int(r[2]) - (int(r[1]) - int(r[3])) * other) / int(r[3]) for r in rows if r[0] == mode and int(r[3])]
    return v, [float(r[4]) for r in rows if r[0] == mode]
# The walk itself, from the program's own clock (bpf_python_walk_seconds over bpf_python_stacks; the
# counters are the agent's totals: each python run's rise over the run before it).
walk, dwalk, prev = [], [], (0, 0)
for r in rows:
    ns, stacks = int(r[5]), int(r[6])
    if r[0] in ("python", "distinct") and stacks > prev[1]:
        (walk if r[0] == "python" else dwalk).append((ns - prev[0]) / (stacks - prev[1]))
    prev = (ns, stacks)
py, pyf = per("python")
di, dif = per("distinct")
na, naf = per("native")
print(f"python_bpf_ns_per_sample: {st.median(py):.0f} ns (runs {', '.join(f'{x:.0f}' for x in py)}; "
      f"{st.median(pyf):.1f} Python frames a sample)")
print(f"python_bpf_ns_per_sample_native_only: {st.median(na):.0f} ns (runs {', '.join(f'{x:.0f}' for x in na)}; "
      f"the same script, an interpreter ember has no layout for; {st.median(naf):.1f} Python frames)")
print(f"python_walk_ns_per_sample: {st.median(walk):.0f} ns (runs {', '.join(f'{x:.0f}' for x in walk)}; the walk's own "
      f"clock, 64-frame Python stack; difference of the medians above: {st.median(py) - st.median(na):.0f} ns; "
      f"other runs: {other:.0f} ns each)")
print(f"python_bpf_ns_per_sample_distinct: {st.median(di):.0f} ns (runs {', '.join(f'{x:.0f}' for x in di)}; "
      f"{st.median(dif):.1f} Python frames a sample, every one a different function: the worst case)")
print(f"python_walk_ns_per_sample_distinct: {st.median(dwalk):.0f} ns (runs {', '.join(f'{x:.0f}' for x in dwalk)}; "
      f"the walk's own clock)")
PYRES
