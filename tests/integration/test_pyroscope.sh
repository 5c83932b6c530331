#!/usr/bin/env bash
# Pyroscope output: on-CPU, off-CPU and memory profiles of real programs go
# to a receiver implementing Pyroscope's documented ingest API
# (tests/pyroscope_receiver.py checks every parameter and the folded body),
# one push per process and type per push period.  What Pyroscope receives
# adds up exactly to what the file backend wrote for the same tasks (samples,
# microseconds blocked, faults), under <app>.cpu|off_cpu|mem{pid,process,
# hostname} with the right units and rates, and to what the programs
# measured themselves (blocked time, pages touched).  A server that is down: the
# pushes fail, are counted, and the agent carries on.
. "$(dirname "$0")/lib.sh"
need_bpf
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
REC=$TMP/pyro.jsonl; : > "$REC"
python3 "$ROOT/tests/pyroscope_receiver.py" --port "$PORT" --record "$REC" >"$TMP/pyro.log" 2>&1 & CLEANUP_PIDS+=("$!")
for _ in $(seq 100); do grep -q listening "$TMP/pyro.log" && break; sleep 0.1; done
AGENT_BACKENDS="file, pyroscope"
AGENT_EXPORTER_YAML="  pyroscope: { server: 127.0.0.1:$PORT, app_name: shop, push_period: 2s }"
start_agent
"$PROGS/oncpu_chain" 60 & C=$!; CLEANUP_PIDS+=("$C")
EMBER_TEST_GO=$TMP/go "$PROGS/offcpu_wait" 4 > "$TMP/w.out" & O=$!; CLEANUP_PIDS+=("$O")
# two pushes at least for the on-CPU task (5 s, pushes every 2 s)
"$EMBER" profile --config "$TMP/ember.yaml" --pid "$C" --type oncpu --period 1ms --duration 5s --out "$TMP/cpu" \
  >/dev/null 2>"$TMP/cpu.err" & P=$!
profile_gated --config "$TMP/ember.yaml" --pid "$O" --type offcpu --duration 30s --out "$TMP/off"
wait "$P" || { cat "$TMP/cpu.err"; fail "the on-CPU profile failed"; }
EMBER_TEST_GO=$TMP/go "$PROGS/mem_touch" 5000 > "$TMP/m.out" & M=$!; CLEANUP_PIDS+=("$M")
profile_gated --config "$TMP/ember.yaml" --pid "$M" --type mem --duration 30s --out "$TMP/mem"
# the last windows reach the receiver within a push period or two
check() {
  python3 - "$REC" "$C" "$O" "$M" "$(folded_total "$TMP/cpu/oncpu.folded")" "$(folded_total "$TMP/off/offcpu.folded")" \
    "$(folded_total "$TMP/mem/mem.folded")" "$(hostname)" "$1" "$TMP/w.out" <<'PY'
import json, re, sys
rec, c, o, m, want_cpu, want_off, want_mem, host, final, wout = sys.argv[1:]
rows = [json.loads(l) for l in open(rec) if l.strip()]
bad = [r for r in rows if not r["ok"]]
sums, counts = {}, {}
problems = ["rejected: %s" % r["reason"] for r in bad]
for r in rows:
    if not r["ok"]:
        continue
    key = (r["app"], r["labels"].get("pid"))
    sums[key] = sums.get(key, 0) + sum(r["stacks"].values())
    counts[key] = counts.get(key, 0) + 1
    exp = {"shop.cpu": ("samples", 1000, "oncpu_chain"), "shop.off_cpu": ("samples", 1000000, "offcpu_wait"),
           "shop.mem": ("objects", None, "mem_touch")}.get(r["app"])
    if not exp:
        problems.append("unexpected app %s" % r["app"]); continue
    if r["units"] != exp[0] or (exp[1] and r["sampleRate"] != exp[1]) or r["aggregationType"] != "sum" \
       or r["spyName"] != "ebpfspy" or r["labels"].get("process") != exp[2] \
       or r["labels"].get("hostname") != re.sub(r"[^A-Za-z0-9_.-]", "_", host) \
       or not r["content_type"].startswith("text/plain") or r["until"] - r["from"] > 6:
        problems.append("wrong metadata: %s" % json.dumps({k: v for k, v in r.items() if k != "stacks"}))
    if r["app"] == "shop.cpu" and not any(re.search(r"^oncpu_chain;(.*;)?outer;middle;leaf(;|$)", s) for s in r["stacks"]):
        problems.append("an on-CPU push without the known chain")
got = (sums.get(("shop.cpu", c), 0), sums.get(("shop.off_cpu", o), 0), sums.get(("shop.mem", m), 0))
want = (int(want_cpu), int(want_off), int(want_mem))
print("pushes: %s; totals cpu/off_cpu/mem: pyroscope %s, files %s" % (counts, got, want))
# Beside the files (built from the same windows), the programs' own truth: offcpu_wait's clock
# around its blocking calls (within 0.5%), and one fault per page mem_touch touched.
def of(app, pid, pat):
    return sum(v for r in rows if r["ok"] and r["app"] == app and r["labels"].get("pid") == pid
               for st, v in r["stacks"].items() if re.search(pat, st))
prog = {tuple(l.split()[:2]): int(l.split()[2]) for l in open(wout) if len(l.split()) >= 3}
for fn in ("sleeper", "wait_on_pipe"):
    us, want_us = of("shop.off_cpu", o, ";%s;" % fn), prog.get(("blocked_ns", fn), 0) / 1000
    print("off_cpu %s: pyroscope %d us, program %d us" % (fn, us, want_us))
    if not want_us or abs(us - want_us) > 0.005 * want_us: problems.append("off_cpu %s: %d us, the program blocked %d us" % (fn, us, want_us))
touched = of("shop.mem", m, ";grow;touch_pages")
print("mem: pyroscope %d faults in touch_pages, 5000 pages touched" % touched)
if touched != 5000: problems.append("mem: %d faults in touch_pages for 5000 pages" % touched)
if final == "1":
    for p in problems[:5]: print("FAIL:", p)
    if counts.get(("shop.cpu", c), 0) < 2: print("FAIL: the 5 s on-CPU task went up in fewer than 2 pushes")
sys.exit(0 if got == want and not problems and counts.get(("shop.cpu", c), 0) >= 2 else 1)
PY
}
for _ in $(seq 20); do check 0 >/dev/null && break; sleep 0.5; done
check 1 || fail "what Pyroscope received is not what the tasks profiled"
ok "Pyroscope received every sample, blocked microsecond and fault the files hold, with the documented parameters"
# The server goes away: pushes fail, are counted, nothing stops.
kill "${CLEANUP_PIDS[0]}"
"$EMBER" profile --config "$TMP/ember.yaml" --pid "$C" --type oncpu --duration 3s --out "$TMP/cpu2" >/dev/null 2>&1 \
  || fail "profiling failed while Pyroscope was down"
pstat() { "$EMBER" stats --config "$TMP/ember.yaml" 2>/dev/null | awk -v k="$1" '$1 == "exporter" && $2 == k {print $3}'; }
for _ in $(seq 20); do [ "$(pstat ember_pyroscope_pushes_failed)" -ge 1 ] 2>/dev/null && break; sleep 0.5; done
echo "pushes ok $(pstat ember_pyroscope_pushes_ok), failed $(pstat ember_pyroscope_pushes_failed)"
[ "$(pstat ember_pyroscope_pushes_failed)" -ge 1 ] || fail "a push to a server that is down was not counted as failed"
grep -q "pyroscope: a push to .* failed" "$TMP/agent.log" || fail "the failure was not logged"
ok "pushes to a server that is down are counted and logged"
stop_agent || fail "agent exited with an error"

# The REST API's params.pyroscope_server, with no pyroscope backend configured (gala-gopher's way):
# the flamegraph feature's profiles go to that server, nothing else does.
PORT2=$(free_port); REC2=$TMP/pyro2.jsonl; : > "$REC2"
python3 "$ROOT/tests/pyroscope_receiver.py" --port "$PORT2" --record "$REC2" >"$TMP/pyro2.log" 2>&1 & CLEANUP_PIDS+=("$!")
for _ in $(seq 100); do grep -q listening "$TMP/pyro2.log" && break; sleep 0.1; done
start_rest_agent --set exporter.pyroscope.push_period=2s
"$EMBER" profile --config "$TMP/ember.yaml" --pid "$C" --type offcpu --duration 2s --out "$TMP/off2" >/dev/null 2>&1 || fail "a plain profile failed"
chmod 755 "$TMP"; mkdir -p "$TMP/svg" "$TMP/flame"; chown ember:ember "$TMP/svg" "$TMP/flame"; chmod 770 "$TMP/svg" "$TMP/flame"
r=$(curl -s -w ' %{http_code}' -X PUT "http://127.0.0.1:$REST_PORT/flamegraph" --data-urlencode json="{\"cmd\": {\"probe\": [\"oncpu\"]},
  \"snoopers\": {\"proc_id\": [$C]}, \"params\": {\"svg_period\": 30, \"pyroscope_server\": \"127.0.0.1:$PORT2\",
  \"svg_dir\": \"$TMP/svg\", \"flame_dir\": \"$TMP/flame\"}, \"state\": \"running\"}")
echo "PUT: $r"; [[ "$r" == "New config takes effect 200" ]] || fail "the REST PUT with pyroscope_server was refused"
for _ in $(seq 30); do grep -q '"ok": true' "$REC2" && break; sleep 0.5; done
python3 - "$REC2" "$C" <<'PY' || fail "the REST API's pyroscope_server got no profile of the process"
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ok = [r for r in rows if r["ok"]]
print("pushes:", [(r["app"], r["labels"].get("pid"), sum(r["stacks"].values())) for r in ok])
sys.exit(0 if ok and all(r["app"] == "ember.cpu" and r["labels"].get("pid") == sys.argv[2] for r in ok)
         and any(re.search(r"outer;middle;leaf", s) for r in ok for s in r["stacks"]) else 1)
PY
ok "the REST API's pyroscope_server receives the flamegraph feature's profiles, and only those"
stop_agent || fail "agent exited with an error"
