#!/usr/bin/env python3
"""Checks of a thread task's Kafka messages (tests/integration/test_threads_kafka.sh)
against the profile's threads.json and what tests/progs/thread_lab contention
measured itself.  Usage:
  threads_kafka_checks.py MESSAGES EVENT_TOPIC PROFILE_DIR WORKLOAD_OUT PID STATS
MESSAGES: kafka_mock's "<topic>\\t<value>" lines.  Prints what it compared;
exits 1 on the first failed check."""
import collections
import json
import os
import socket
import sys

TOP = {"Timestamp", "SeverityText", "SeverityNumber", "Body", "Resource", "Attributes"}
RESOURCE = {"host.id", "host.name", "thread.pid", "thread.tgid", "thread.comm", "proc.name", "container.id",
            "container.name"}
COMMON = {"event.name": str, "event.type": str, "start_time": int, "end_time": int, "duration": (int, float),
          "count": int}
OPTIONAL = {"func.stack": str, "file.path": str, "sock.conn": str, "futex.op": str, "ongoing": bool}


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def shaped(m, where):
    """m is one thread's object in the manual's shape, or fail."""
    if set(m) != TOP:
        fail(f"{where}: keys {sorted(m)}")
    if (m["SeverityText"], m["SeverityNumber"], m["Body"]) != ("INFO", 9, "") or not isinstance(m["Timestamp"], int):
        fail(f"{where}: head {m['Timestamp']!r} {m['SeverityText']!r} {m['SeverityNumber']!r} {m['Body']!r}")
    r = m["Resource"]
    if set(r) != RESOURCE:
        fail(f"{where}: Resource keys {sorted(r)}")
    if not isinstance(r["thread.pid"], int) or not isinstance(r["thread.tgid"], int):
        fail(f"{where}: thread ids {r}")
    if set(m["Attributes"]) != {"values"} or not m["Attributes"]["values"]:
        fail(f"{where}: Attributes {m['Attributes']}")
    for v in m["Attributes"]["values"]:
        for k, t in COMMON.items():
            if not isinstance(v.get(k), t) or isinstance(v.get(k), bool):
                fail(f"{where}: a value's {k} is {v.get(k)!r}: {v}")
        for k in set(v) - set(COMMON):
            if k not in OPTIONAL or not isinstance(v[k], OPTIONAL[k]):
                fail(f"{where}: a value's {k} is {v[k]!r}: {v}")
        if v["end_time"] < v["start_time"] or v["count"] < 1:
            fail(f"{where}: bad times or count: {v}")


def thread_key(m):
    r = m["Resource"]
    return (r["thread.tgid"], r["thread.pid"], r["thread.comm"], r["proc.name"], r["container.id"],
            r["container.name"])


def per_thread(msgs):
    """{thread: Counter of its values (canonical JSON)} over all messages."""
    out = collections.defaultdict(collections.Counter)
    for m in msgs:
        out[thread_key(m)].update(json.dumps(v, sort_keys=True) for v in m["Attributes"]["values"])
    return out


def stat(path, key):
    for line in open(path):
        f = line.split()
        if len(f) >= 3 and f[0] == "exporter" and f[1] == key:
            return int(f[2])
    fail(f"{path}: no exporter counter {key}")


def main(msgs_path, topic, prof, out, pid, stats):
    pid = int(pid)
    rows = [l.rstrip("\n").split("\t", 1) for l in open(msgs_path)]
    threads, task_events = [], []
    for n, (t, v) in enumerate(rows, 1):
        if t != topic:
            continue
        try:
            m = json.loads(v)
        except ValueError as e:
            fail(f"message {n} of {topic} is no JSON ({e}): {v[:200]}")
        if isinstance(m.get("Resource"), dict) and "thread.pid" in m["Resource"]:
            shaped(m, f"message {n}")
            threads.append(m)
        elif "event_id" in m:
            task_events.append(m)
        else:
            fail(f"message {n} of {topic} is neither a thread's nor a task's event: {v[:200]}")
    lines = [json.loads(l) for l in open(os.path.join(prof, "threads.json"))]
    for n, m in enumerate(lines, 1):
        shaped(m, f"threads.json line {n}")
    nvals = sum(len(m["Attributes"]["values"]) for m in threads)
    print(f"{topic}: {len(threads)} thread messages ({nvals} events), {len(task_events)} task events; "
          f"threads.json: {len(lines)} lines ({sum(len(m['Attributes']['values']) for m in lines)} events)")

    # The threads' host is the one the task's own events name (machine_id in their entity_id) and this host's name.
    fin = [e for e in task_events if "thread profile of 1 process(es) finished" in e.get("Body", "")
           and e["Attributes"]["entity_id"].endswith(f"_proc_{pid}")]
    if len(fin) != 1:
        fail(f"the task's end: {fin}")
    machine_id = fin[0]["Attributes"]["entity_id"][:-len(f"_proc_{pid}")]
    hosts = {(m["Resource"]["host.id"], m["Resource"]["host.name"]) for m in threads}
    print(f"hosts of the thread messages: {hosts}; the task's event names machine {machine_id}")
    if hosts != {(machine_id, socket.gethostname())}:
        fail(f"hosts {hosts}, want {(machine_id, socket.gethostname())}")
    tgids = {m["Resource"]["thread.tgid"] for m in threads}
    if tgids != {pid} or {m["Resource"]["proc.name"] for m in threads} != {"thread_lab"}:
        fail(f"processes {tgids}, want thread_lab {pid}")

    # Kafka and the file agree: the same threads, each with the same events, in as many messages.
    k, f = per_thread(threads), per_thread(lines)
    for t in sorted(set(k) | set(f)):
        if k.get(t) != f.get(t):
            fail(f"thread {t}: Kafka's events differ from threads.json's: only in Kafka "
                 f"{list((k.get(t, collections.Counter()) - f.get(t, collections.Counter())).elements())[:3]}, "
                 f"only in the file {list((f.get(t, collections.Counter()) - k.get(t, collections.Counter())).elements())[:3]}")
    grouped = lambda ms: collections.Counter((thread_key(m), tuple(sorted(json.dumps(v, sort_keys=True)
                                                                     for v in m["Attributes"]["values"]))) for m in ms)
    if len(threads) != len(lines) or grouped(threads) != grouped(lines):
        fail(f"{len(threads)} messages for {len(lines)} lines, not each a line's thread and events")
    print(f"Kafka = threads.json: {len(k)} threads, {nvals} events, {len(threads)} messages")

    # The workload's threads and their events.
    wl = [json.loads(l) for l in open(out) if l.strip()]
    w, nwrites = wl[-1], sum("wait_ns" in l for l in wl)
    port = w["port"]
    evs = lambda tid: [v for m in threads if m["Resource"]["thread.pid"] == tid for v in m["Attributes"]["values"]]
    for tid, comm in ((w["tid1"], "CompeteThd1"), (w["tid2"], "CompeteThd2"), (w["server"], "tcp-server")):
        comms = {m["Resource"]["thread.comm"] for m in threads if m["Resource"]["thread.pid"] == tid}
        names = collections.Counter(v["event.name"] for v in evs(tid))
        print(f"{comm} ({tid}): comm {comms}, events {dict(names)}")
        if comms != {comm}:
            fail(f"thread {tid} is {comms}, not {comm}")
    cpu = sum(v["duration"] for v in evs(w["tid1"]) if v["event.name"] == "oncpu")
    if cpu < 1500:
        fail(f"CompeteThd1 on CPU {cpu:.1f} ms for 2000 ms of work")
    waits = [v for v in evs(w["tid2"]) if v["event.name"] == "futex" and v.get("futex.op") == "wait"]
    writes = [v for v in evs(w["tid2"]) if v["event.name"] == "write" and v["event.type"] == "net"]
    conns = {v.get("sock.conn") for v in writes}
    reads = {v.get("sock.conn") for v in evs(w["server"]) if v["event.name"] == "read" and v["event.type"] == "net"}
    print(f"CompeteThd1: on CPU {cpu:.1f} ms; CompeteThd2: {sum(v['count'] for v in waits)} futex waits "
          f"({sum(v['duration'] for v in waits):.1f} ms), {sum(v['count'] for v in writes)} writes of its {nwrites} on {conns}; "
          f"tcp-server reads on {reads}")
    if not waits or any(v["event.type"] != "lock" for v in waits):
        fail(f"CompeteThd2's futex waits: {waits}")
    if sum(v["count"] for v in writes) != nwrites or len(conns) != 1 or \
            not next(iter(conns)).endswith(f"->127.0.0.1:{port}"):
        fail(f"CompeteThd2's writes: {writes}")
    if len(reads) != 1 or not next(iter(reads)).startswith(f"127.0.0.1:{port}->"):
        fail(f"tcp-server's reads on {reads}")

    # The counters: each thread message queued and delivered, nothing dropped.
    c = {n: stat(stats, "ember_kafka_" + n) for n in ("thread_records", "messages_queue_full", "messages_failed",
                                                       "produce_errors")}
    print(f"counters: {c}")
    if c["thread_records"] != len(threads) or c["messages_queue_full"] or c["messages_failed"] or c["produce_errors"]:
        fail(f"the counters {c} for {len(threads)} messages")


if __name__ == "__main__":
    main(*sys.argv[1:7])
