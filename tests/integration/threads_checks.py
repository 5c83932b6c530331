#!/usr/bin/env python3
"""Checks of a thread profile (threads.json, threads.html) against what
tests/progs/thread_lab measured itself.  Usage:
  threads_checks.py deadlock|contention PROFILE_DIR WORKLOAD_OUT DATA_FILE STATS_BEFORE STATS_AFTER
Prints what it compared; exits 1 on the first failed check."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESOURCE = ["host.id", "host.name", "thread.pid", "thread.tgid", "thread.comm", "proc.name", "container.id",
            "container.name"]
COMMON = ["event.name", "event.type", "start_time", "end_time", "duration", "count"]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def stat(path, key):
    for line in open(path):
        f = line.split()
        if len(f) >= 3 and f[0] == "collector" and f[1] == key:
            return int(f[2])
    fail(f"{path}: no collector counter {key}")


def events(prof):
    """Every event, in the manual's shape, with its thread's resource."""
    out = []
    for n, line in enumerate(open(os.path.join(prof, "threads.json")), 1):
        m = json.loads(line)
        for k in ("Timestamp", "SeverityText", "SeverityNumber", "Body", "Resource", "Attributes"):
            if k not in m:
                fail(f"threads.json line {n}: no {k}")
        if m["SeverityText"] != "INFO" or m["SeverityNumber"] != 9:
            fail(f"line {n}: severity {m['SeverityText']} {m['SeverityNumber']}")
        r = m["Resource"]
        for k in RESOURCE:
            if k not in r:
                fail(f"line {n}: Resource has no {k}")
        vals = m["Attributes"]["values"]
        if not vals:
            fail(f"line {n}: no values")
        for v in vals:
            for k in COMMON:
                if k not in v:
                    fail(f"line {n}: a value has no {k}: {v}")
            if v["end_time"] < v["start_time"] or v["count"] < 1:
                fail(f"line {n}: bad times or count: {v}")
            if r["proc.name"] != "thread_lab":
                fail(f"line {n}: proc.name {r['proc.name']!r}")
            out.append(dict(v, tid=r["thread.pid"], tgid=r["thread.tgid"], comm=r["thread.comm"],
                            proc=r["proc.name"]))
    return out


def lanes(prof):
    p = subprocess.run(["node", os.path.join(ROOT, "tests/integration/timeline_html_check.js"), "--lanes",
                        os.path.join(prof, "threads.html")], capture_output=True, text=True)
    if p.returncode:
        fail(f"the timeline page does not load: {p.stderr}")
    return json.loads(p.stdout)


def conservation(evs, s0, s1):
    """The kernel's count of the task's calls and periods is the events' counts (nothing lost)."""
    calls = stat(s1, "bpf_thread_calls") - stat(s0, "bpf_thread_calls")
    periods = stat(s1, "bpf_thread_oncpu_periods") - stat(s0, "bpf_thread_oncpu_periods")
    lost = sum(stat(s1, k) - stat(s0, k) for k in ("bpf_thread_agg_full_drops", "bpf_thread_per_thread_cap_drops",
                                                   "thread_events_ring_full_drops"))
    got_calls = sum(e["count"] for e in evs if e["event.type"] != "oncpu" and not e.get("ongoing"))
    got_periods = sum(e["count"] for e in evs if e["event.type"] == "oncpu" and not e.get("ongoing"))
    print(f"conservation: calls {got_calls} reported of {calls} counted, on-CPU periods {got_periods} of "
          f"{periods}, lost {lost}")
    if lost:
        fail(f"{lost} aggregates lost")
    if got_calls != calls or got_periods != periods:
        fail(f"reported {got_calls} calls and {got_periods} periods, the kernel counted {calls} and {periods}")


def deadlock(prof, out, data, s0, s1):
    w = json.loads(open(out).read().splitlines()[0])
    evs = events(prof)
    conservation(evs, s0, s1)
    end = max(e["end_time"] for e in evs)
    for tid, name in ((w["tid1"], "LockThd1"), (w["tid2"], "LockThd2")):
        mine = sorted((e for e in evs if e["tid"] == tid), key=lambda e: (e["end_time"], e["start_time"]))
        if not mine:
            fail(f"no events of {name} ({tid})")
        last = mine[-1]
        print(f"{name}: last event {last['event.name']} {last.get('futex.op')} from {last['start_time']} to "
              f"{last['end_time']} ({last['duration']:.1f} ms), stack {last.get('func.stack')}")
        if last["comm"] != name:
            fail(f"{tid}'s comm is {last['comm']!r}, not {name}")
        if (last["event.name"], last["event.type"], last.get("futex.op"), last.get("ongoing")) != \
                ("futex", "lock", "wait", True):
            fail(f"{name}'s last event is not a futex wait in progress: {last}")
        # It began when the program took the other's mutex (before it said so) and lasts to the end.
        if not (last["start_time"] <= w["locked_ns"] // 1000000 and last["end_time"] == end):
            fail(f"{name}'s wait does not span from its lock to the end ({end}): {last}")
        if abs(last["duration"] - (last["end_time"] - last["start_time"])) > 1.001:
            fail(f"{name}'s wait: duration {last['duration']} ms for {last['end_time'] - last['start_time']} ms")
        # The program's own frame with its callers above it (libc's own names need its symbols: a fresh
        # Debian root has only its dynamic ones, where start_thread is libc.so.6+0x...), under the lock.
        stack = last.get("func.stack", "").split(";")
        if "lock_thread" not in stack or stack.index("lock_thread") == 0 or \
                not any(f.endswith("pthread_mutex_lock") for f in stack[stack.index("lock_thread") + 1:]):
            fail(f"{name}'s wait is not under lock_thread -> pthread_mutex_lock with its callers: "
                 f"{last.get('func.stack')}")
        for call in ("write", "fsync"):
            got = [e for e in mine if e["event.name"] == call]
            n = sum(e["count"] for e in got)
            paths = {e.get("file.path") for e in got}
            print(f"{name}: {n} {call} calls on {paths}")
            if n != 20 or paths != {data} or any(e["event.type"] != "file" for e in got):
                fail(f"{name}: {n} {call} calls on {paths}, want 20 on {data}")
        sleeps = [e for e in mine if e["event.name"] == "clock_nanosleep"]
        if len(sleeps) != 1 or abs(sleeps[0]["duration"] - 1500) > 60:
            fail(f"{name}: its 1.5 s sleep is {sleeps}")
    main = [e for e in evs if e["tid"] == w["main"] and e["event.name"] == "futex" and e.get("ongoing")]
    if len(main) != 1 or "deadlock" not in main[0].get("func.stack", ""):
        fail(f"the main thread's pthread_join wait: {main}")
    lz = lanes(prof)
    for tid, name in ((w["tid1"], "LockThd1"), (w["tid2"], "LockThd2")):
        bars = lz["lanes"].get(f"{name} ({tid})")
        if not bars:
            fail(f"no lane for {name} in the timeline: {list(lz['lanes'])}")
        last = bars[-1]
        print(f"timeline: {name}'s lane ends in a {last['type']} bar {last['names']} to x={last['x'] + last['w']:.1f} "
              f"of {lz['plot_end']}")
        if last["type"] != "lock" or not last["ongoing"] or abs(last["x"] + last["w"] - lz["plot_end"]) > 0.5:
            fail(f"{name}'s lane does not end in a lock bar running to the end: {last}")


def before(prof, out, _data, s0, s1):
    """Deadlocked before the task began: each lock thread's wait, and main's join, from the task's start to its end."""
    w = json.loads(open(out).read().splitlines()[0])
    evs = events(prof)
    conservation(evs, s0, s1)
    start, end = min(e["start_time"] for e in evs), max(e["end_time"] for e in evs)
    seeded = stat(s1, "thread_calls_in_progress_at_start") - stat(s0, "thread_calls_in_progress_at_start")
    print(f"calls in progress at the task's start: {seeded}; events from {start} to {end}")
    for tid, name in ((w["tid1"], "LockThd1"), (w["tid2"], "LockThd2"), (w["main"], "main")):
        mine = [e for e in evs if e["tid"] == tid and e["event.type"] != "oncpu"]
        print(f"{name}: {[(e['event.name'], e.get('futex.op'), e['start_time'], e['end_time'], e.get('ongoing')) for e in mine]}")
        if len(mine) != 1 or (mine[0]["event.name"], mine[0].get("futex.op"), mine[0].get("ongoing")) != \
                ("futex", "wait", True):
            fail(f"{name}: not one futex wait in progress: {mine}")
        e = mine[0]
        # Timed from the task's start (it locked before): after the program said so, to the end.
        if not (e["start_time"] >= w["locked_ns"] // 1000000 and e["start_time"] - start <= 50 and e["end_time"] == end):
            fail(f"{name}'s wait does not span the task ({start} to {end}): {e}")
    if seeded != 3:
        fail(f"{seeded} calls counted in progress at the start, want 3 (two locks, one join)")


def contention(prof, out, _data, s0, s1):
    lines = [json.loads(l) for l in open(out) if l.strip()]
    w = lines[-1]
    waits = [l["wait_ns"] for l in lines if "wait_ns" in l]
    evs = events(prof)
    conservation(evs, s0, s1)
    t1 = [e for e in evs if e["tid"] == w["tid1"]]
    t2 = [e for e in evs if e["tid"] == w["tid2"]]
    srv = [e for e in evs if e["tid"] == w["server"]]
    # CompeteThd2's futex waits: what it measured around pthread_mutex_lock holds them.
    fw = sum(e["duration"] for e in t2 if e["event.name"] == "futex" and e.get("futex.op") == "wait")
    mw = sum(waits) / 1e6
    print(f"CompeteThd2: futex waits {fw:.1f} ms, its own clock around the lock {mw:.1f} ms, {len(waits)} writes")
    if not (0.9 * mw <= fw <= mw):
        fail(f"futex waits {fw:.1f} ms for {mw:.1f} ms measured")
    writes = [e for e in t2 if e["event.name"] == "write" and e["event.type"] == "net"]
    # Its stdout is a file: those writes are file events naming it.
    outs = [e for e in t2 if e["event.name"] == "write" and e["event.type"] == "file"]
    if not outs or {e.get("file.path") for e in outs} != {os.path.abspath(out)}:
        fail(f"CompeteThd2's writes to its stdout file: {outs}")
    conns = {e.get("sock.conn") for e in writes}
    port = w["port"]
    print(f"CompeteThd2: {sum(e['count'] for e in writes)} writes on {conns}")
    if sum(e["count"] for e in writes) != len(waits) or len(conns) != 1 or \
            not next(iter(conns)).endswith(f"->127.0.0.1:{port}") or any(e["event.type"] != "net" for e in writes):
        fail(f"CompeteThd2's writes: {writes}")
    reads = [e for e in srv if e["event.name"] == "read"]
    rconns = {e.get("sock.conn") for e in reads}
    if not reads or len(rconns) != 1 or not next(iter(rconns)).startswith(f"127.0.0.1:{port}->"):
        fail(f"tcp-server's reads: {reads}")
    # CompeteThd1 computed 12 x 100 ms of CPU time.
    cpu = sum(e["duration"] for e in t1 if e["event.name"] == "oncpu")
    print(f"CompeteThd1: on CPU {cpu:.1f} ms for 1200 ms of work")
    if not (1200 <= cpu <= 1200 * 1.15):
        fail(f"CompeteThd1 on CPU {cpu:.1f} ms")
    # The manual's case 2: CompeteThd2's futex waits and writes alternate.
    seq = [e["event.name"] for e in sorted(t2, key=lambda e: e["start_time"]) if e["event.name"] in ("futex", "write")]
    print(f"CompeteThd2's sequence starts {seq[:8]}")
    if "futex" not in seq or "write" not in seq:
        fail("no alternation of futex and write")


if __name__ == "__main__":
    {"deadlock": deadlock, "before": before, "contention": contention}[sys.argv[1]](*sys.argv[2:7])
