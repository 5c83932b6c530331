#!/usr/bin/env bash
# Java frames through ember's JVMTI agent (jvm/ember_jvmti.c), loaded by the
# collector's attacher (collector/jattach.h) with profiling.java.agent.
# Two OpenJDK 17 JVMs run a known chain (main -> outer -> middle -> leaf):
#   A, as root, with -XX:+PreserveFramePointer: >= 90% of its samples carry
#     main's frame, then EmberChain::outer;EmberChain::middle;EmberChain::leaf
#     in that order, whether the JIT inlined them (the agent's scope lines)
#     or not;
#   B, as nobody, without it: >= 90% still name the leaf's compiled method.
# Without the option the agent is not loaded (A's maps) and the leaf is
# unnamed.  A second task on A loads nothing again (one mapping of the
# library, its perf map kept).  A process that maps a libjvm.so but does not
# catch SIGQUIT (a python3 loading a renamed library) is refused and lives.
# A second collector's attach to A finds the agent there: nothing rewritten.
# A JVM in its own pid and mount namespaces, which does not see the agent's
# path, gets a copy in its /tmp, removed once loaded.  gala-gopher's REST
# flamegraph with native_stack 0 and multi_instance 1 shows Java frames only.
. "$(dirname "$0")/lib.sh"
need_bpf
command -v javac >/dev/null && command -v java >/dev/null || skip "no JDK (openjdk-17-jdk-headless)"
AGENT_SO=$B/libember-jvmti.so
[ -f "$AGENT_SO" ] || fail "$AGENT_SO not built (the JDK's headers: openjdk-17-jdk-headless)"
java -version 2>&1 | grep -q 'version "17' || skip "java is not OpenJDK 17 ($(java -version 2>&1 | head -1))"

mkdir -p "$TMP/cls" && chmod 755 "$TMP/cls"
javac -d "$TMP/cls" "$ROOT/tests/progs/java/EmberChain.java" || fail "javac failed"
chmod -R a+rX "$TMP/cls"
JOPTS=(-Xss4m)   # the JIT as it comes: C2 inlines middle into outer, and more as it likes
(cd "$TMP" && exec java "${JOPTS[@]}" -XX:+PreserveFramePointer -cp "$TMP/cls" EmberChain 60 >/dev/null) & A=$!
CLEANUP_PIDS+=("$A")
(cd "$TMP" && exec setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/tmp \
	java "${JOPTS[@]}" -cp "$TMP/cls" EmberChain 60 >/dev/null) & BJ=$!
CLEANUP_PIDS+=("$BJ")
sleep 2   # past start-up: the chain is compiled
agent_maps() { grep -c 'r-xp.*libember-jvmti\.so' "/proc/$1/maps"; }

# 1. The option off (a private agent on the defaults): nothing loaded, the JIT code unnamed.
"$EMBER" profile --pid "$A" --duration 2s --out "$TMP/off" >"$TMP/off.out" 2>"$TMP/off.err" || { cat "$TMP/off.err"; fail "ember profile failed"; }
[ "$(agent_maps $A)" = 0 ] || fail "the agent was loaded into A with profiling.java.agent off"
[ ! -e "/tmp/perf-$A.map" ] || fail "a perf map of A exists with the agent off"
f=$TMP/off/oncpu.folded; total=$(folded_total "$f"); named=$(folded_sum "$f" 'EmberChain::')
[ "$total" -gt 50 ] && [ "$named" = 0 ] || fail "option off: $named of $total samples named (expected unnamed JIT code)"
ok "option off: agent not loaded, 0 of $total samples name a Java method"

# 2. The option on, one agent (with the REST API, for 5), A then B.
AGENT_PROFILING_YAML="  java: { agent: true }" start_rest_agent
prof() {  # pid out
  "$EMBER" profile --config "$TMP/ember.yaml" --pid "$1" --duration 3s --out "$2" >"$2.out" 2>"$2.err" \
    || { cat "$2.err"; fail "ember profile $1 failed"; }
}
prof "$A" "$TMP/a1"
[ "$(agent_maps $A)" = 1 ] || { cat "$TMP/agent.log"; fail "the agent is not loaded into A"; }
f=$TMP/a1/oncpu.folded; total=$(folded_total "$f")
leaf=$(folded_sum "$f" 'EmberChain::leaf')
# main runs interpreted (or compiled on stack replacement, later): its frame, then the chain, inlined or not.
chain=$(folded_sum "$f" '(Interpreter|EmberChain::main);EmberChain::outer;EmberChain::middle;EmberChain::leaf(;[^;]*_\[k\])*$')
echo "A: $total samples, $leaf in EmberChain::leaf, $chain with the whole chain"
sort -t' ' -k2 -nr "$f" | head -2 | cut -c1-300
[ "$leaf" -gt 50 ] && awk -v c="$chain" -v l="$leaf" 'BEGIN { exit !(c >= 0.9 * l) }' \
  || fail "A: only $chain of $leaf leaf samples carry main's interpreter frame, outer, middle and leaf"
inl=$(grep -c 'EmberChain::outer;EmberChain::middle' "/tmp/perf-$A.map")
[ "$inl" -ge 1 ] || fail "A's JIT inlined nothing of the chain: the scope lines are not exercised"
ok "A (root, frame pointers): $chain of $leaf leaf samples carry the whole chain ($inl inlined stretches of it in the perf map)"

lines1=$(wc -l < "/tmp/perf-$A.map"); sum1=$(md5sum < "/tmp/perf-$A.map")
# Another collector (a private agent with the option): it attaches again, the agent answers at once.
"$EMBER" profile --set profiling.java.agent=true --pid "$A" --duration 3s --out "$TMP/a2" >"$TMP/a2.out" 2>"$TMP/a2.err" \
  || { cat "$TMP/a2.err"; fail "ember profile (private agent) failed"; }
[ "$(agent_maps $A)" = 1 ] || fail "a second attach loaded the agent into A again"
lines2=$(wc -l < "/tmp/perf-$A.map")
# The map only grows, each line written once: what was there is there still, as it was.
[ "$(head -n "$lines1" "/tmp/perf-$A.map" | md5sum)" = "$sum1" ] \
  || fail "the second task's load rewrote A's perf map ($lines1 -> $lines2 lines)"
a2=$(folded_sum "$TMP/a2/oncpu.folded" 'EmberChain::leaf')
[ "$a2" -gt 50 ] || fail "A's second task: $a2 leaf samples"
ok "A attached again by another collector: one mapping of the agent, perf map kept ($lines1 -> $lines2 lines), $a2 leaf samples"

prof "$BJ" "$TMP/b"
[ "$(agent_maps $BJ)" = 1 ] || { cat "$TMP/agent.log"; fail "the agent is not loaded into B (nobody)"; }
[ "$(stat -c %U "/tmp/perf-$BJ.map")" = nobody ] || fail "B's perf map is not nobody's"
f=$TMP/b/oncpu.folded; total=$(folded_total "$f"); leaf=$(folded_sum "$f" 'EmberChain::leaf(;[^;]*_\[k\])*$')
java_main=$(folded_sum "$f" 'Interpreter|call_stub|JavaMain|EmberChain')
echo "B: $total samples, $java_main in Java's main thread, $leaf ending in EmberChain::leaf"
[ "$java_main" -gt 50 ] && awk -v c="$leaf" -v l="$java_main" 'BEGIN { exit !(c >= 0.9 * l) }' \
  || fail "B: only $leaf of $java_main samples of the main thread name the leaf"
ok "B (nobody, no frame pointers): $leaf of $java_main samples name EmberChain::leaf"

# 3. A JVM in its own pid and mount namespaces (a container's view: pid 1 there, ember's build
#    directory hidden): the agent is copied into its /tmp, loaded, and the copy removed.
#    In a chroot (a pristine root's test run) / is no mount point and cannot be made private:
#    then only the build directory is, through a bind of itself, which the host may see too (its
#    mount is shared): unmounted there at the end.
PROP=private PRE=
if [ -n "${JAVA_NS_FALLBACK:-}" ] || ! unshare --mount --propagation private true 2>/dev/null; then
  PROP=unchanged PRE="mount --bind '$B' '$B' && mount --make-private '$B' && "
  trap 'mountpoint -q "$B" && umount "$B"; cleanup' EXIT
fi
(cd "$TMP" && exec unshare --pid --fork --mount --propagation $PROP --mount-proc sh -c \
  "${PRE}mount -t tmpfs none '$B' && exec java ${JOPTS[*]} -XX:+PreserveFramePointer -cp '$TMP/cls' EmberChain 60" >/dev/null) &
CLEANUP_PIDS+=("$!")
C=
for _ in $(seq 50); do
  for p in $(pgrep -f "EmberChain 60"); do
    [ "$p" != "$A" ] && [ "$p" != "$BJ" ] && grep -q libjvm "/proc/$p/maps" 2>/dev/null && C=$p
  done
  [ -n "$C" ] && break; sleep 0.1
done
[ -n "$C" ] || fail "the namespaced JVM did not start"
CLEANUP_PIDS+=("$C")
[ "$(awk '/^NSpid:/ {print $3}' "/proc/$C/status")" = 1 ] || fail "the namespaced JVM is not pid 1 in its namespace"
[ ! -e "/proc/$C/root$AGENT_SO" ] || fail "the namespaced JVM sees the agent at its path"
sleep 2
prof "$C" "$TMP/c"
grep -q '/tmp/\.ember-jvmti\.[^/]*/libember-jvmti\.so (deleted)' "/proc/$C/maps" \
  || { grep ember "/proc/$C/maps"; tail -5 "$TMP/agent.log"; fail "the namespaced JVM does not map the agent's (removed) copy"; }
! ls -d /tmp/.ember-jvmti.* 2>/dev/null || fail "the agent's copy was left in the JVM's /tmp"
f=$TMP/c/oncpu.folded; leaf=$(folded_sum "$f" 'EmberChain::leaf')
chain=$(folded_sum "$f" '(Interpreter|EmberChain::main);EmberChain::outer;EmberChain::middle;EmberChain::leaf(;[^;]*_\[k\])*$')
[ "$leaf" -gt 50 ] && awk -v c="$chain" -v l="$leaf" 'BEGIN { exit !(c >= 0.9 * l) }' \
  || fail "namespaced JVM: only $chain of $leaf leaf samples carry the chain"
ok "a JVM in its own namespaces (pid 1, the agent's path hidden): a copy loaded and removed, $chain of $leaf leaf samples carry the chain"

# 4. A process that maps a "libjvm.so" but would die of SIGQUIT: refused, alive.
# (a library python3 has not loaded already: dlopen would hand that back instead)
mkdir -p "$TMP/fake" && cp /lib/x86_64-linux-gnu/libbz2.so.1.0 "$TMP/fake/libjvm.so" || fail "no libbz2 to copy"
# SIGQUIT back to its default (a shell's background job starts with it ignored): it would end the process.
/usr/bin/python3 -c "import ctypes, signal, time; signal.signal(signal.SIGQUIT, signal.SIG_DFL)
ctypes.CDLL('$TMP/fake/libjvm.so'); t = time.time() + 30
while time.time() < t: sum(range(1000))" & F=$!
CLEANUP_PIDS+=("$F")
sleep 0.5
grep -q 'fake/libjvm.so' "/proc/$F/maps" || fail "the fake JVM does not map its libjvm.so"
prof "$F" "$TMP/fake"
sleep 0.5
kill -0 "$F" 2>/dev/null || fail "the process that does not catch SIGQUIT died"
grep -q "java agent not loaded into pid $F: the JVM does not catch SIGQUIT" "$TMP/agent.log" \
  || { cat "$TMP/agent.log"; fail "no refusal logged for the fake JVM"; }
ok "a process mapping libjvm.so without a SIGQUIT handler: refused, still running"

# 5. gala-gopher's REST flamegraph with multi_instance 1 and native_stack 0 (its JFR method: Java
#    methods only): A's stacks hold its Java frames alone; a native process's stacks stay whole.
EMBER_USER=$("$EMBER" run --dump-config 2>/dev/null | awk '/^  user:/ {print $2; exit}'); EMBER_USER=${EMBER_USER:-ember}
SVG=$TMP/svg FLAME=$TMP/flame
mkdir -p "$SVG" "$FLAME"; chown "$EMBER_USER:$EMBER_USER" "$SVG" "$FLAME"; chmod 770 "$SVG" "$FLAME"
"$PROGS/oncpu_chain" 60 >/dev/null & N=$!; CLEANUP_PIDS+=("$N")
code=$(curl -s -o "$TMP/put.out" -w '%{http_code}' -X PUT "http://localhost:$REST_PORT/flamegraph" --data-urlencode \
  json="{\"cmd\": {\"probe\": [\"oncpu\"]}, \"snoopers\": {\"proc_id\": [$A, $N]},
  \"params\": {\"svg_period\": 30, \"perf_sample_period\": 10, \"multi_instance\": 1, \"native_stack\": 0,
  \"svg_dir\": \"$SVG\", \"flame_dir\": \"$FLAME\"}, \"state\": \"running\"}")
[ "$code" = 200 ] || { cat "$TMP/put.out"; fail "the flamegraph PUT: HTTP $code"; }
for _ in $(seq 60); do [ -n "$(ls "$FLAME"/oncpu/*_oncpu_"$A".txt "$FLAME"/oncpu/*_oncpu_"$N".txt 2>/dev/null | sed -n 2p)" ] && break; sleep 1; done
fa=$(ls "$FLAME"/oncpu/*_oncpu_"$A".txt 2>/dev/null | head -1); fn=$(ls "$FLAME"/oncpu/*_oncpu_"$N".txt 2>/dev/null | head -1)
[ -s "$fa" ] && [ -s "$fn" ] || { ls -la "$FLAME"/oncpu; fail "no flame graph files for A and the native process"; }
total=$(folded_total "$fa")
java=$(folded_sum "$fa" "^\\[$A\\]java;call_stub;(Interpreter|EmberChain::main);EmberChain::outer;EmberChain::middle;EmberChain::leaf\$")
echo "REST, native_stack 0: A $java of $total samples are [pid]java;call_stub;...;EmberChain::leaf and nothing else"
sort -t' ' -k2 -nr "$fa" | head -2
awk -v c="$java" -v t="$total" 'BEGIN { exit !(t > 50 && c >= 0.9 * t) }' || fail "native_stack 0: A's stacks are not Java frames alone"
nat=$(folded_sum "$fn" "^\\[$N\\]oncpu_chain;(.*;)?outer;middle;leaf(;|\$)")
[ "$nat" -gt 0 ] || fail "native_stack 0 took the native process's frames"
ok "REST flamegraph, multi_instance 1 and native_stack 0: $java of $total of A's samples hold Java frames only; the native process keeps its own ($nat)"
curl -s -X PUT "http://localhost:$REST_PORT/flamegraph" -d 'json={"state": "stopped"}' >/dev/null

"$EMBER" stats --config "$TMP/ember.yaml" >"$TMP/stats" || fail "ember stats failed"
stat_of() { awk -v n="$1" '$2 == n { print $3 }' "$TMP/stats"; }
echo "collector: $(grep -E 'java_agent' "$TMP/stats" | awk '{printf "%s=%s ", $2, $3}')"
[ "$(stat_of java_agent_requests)" = 4 ] && [ "$(stat_of java_agent_loaded)" = 3 ] && [ "$(stat_of java_agent_failures)" = 1 ] \
  || fail "the collector's Java counters: $(grep java_agent "$TMP/stats" | tr '\n' ' ')"
ok "the collector asked 4 processes once each: 3 loaded, 1 refused"
rm -f "/tmp/perf-$A.map" "/tmp/perf-$BJ.map" /tmp/perf-1.map
