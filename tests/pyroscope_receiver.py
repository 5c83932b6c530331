#!/usr/bin/env python3
"""A Pyroscope server's ingest endpoint, as its HTTP API documents it, for the tests.

POST /ingest with the profile's metadata as query parameters:
  name             required: <app>{k=v,...} (labels optional)
  from, until      required: UNIX seconds, from <= until
  format           optional, default folded (the only one accepted here)
  sampleRate       optional, Hz, default 100, a positive integer
  spyName          optional
  units            optional, default samples; one of Pyroscope's units
  aggregationType  optional, default sum; sum or average
The body, for folded: lines "frame;frame;... <integer>".  A request that
breaks any of this is answered 400 with the reason (and recorded as bad);
a good one 200.  Every request goes as one JSON line to --record:
{"ok", "reason", "app", "labels", "from", "until", "sampleRate", "spyName",
 "units", "aggregationType", "stacks": {stack: value}, "content_type"}.
--fail-first N answers the first N requests 503 (a server that is down).
"""
import argparse
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

UNITS = {"samples", "objects", "goroutines", "bytes", "lock_samples", "lock_nanoseconds"}
NAME = re.compile(r"^([A-Za-z0-9_.\-]+)(?:\{(.*)\})?$")
LABEL = re.compile(r"^[A-Za-z0-9_.\-]+$")


def parse(path, body, ctype):
    u = urlsplit(path)
    if u.path != "/ingest":
        return 404, "no such path", {}
    q = parse_qs(u.query, keep_blank_values=True)
    for k, v in q.items():
        if len(v) != 1:
            return 400, "parameter %s given %d times" % (k, len(v)), {}
    g = {k: v[0] for k, v in q.items()}
    rec = {"content_type": ctype}
    if "name" not in g:
        return 400, "name is required", rec
    m = NAME.match(g["name"])
    if not m:
        return 400, "name %r is not app{k=v,...}" % g["name"], rec
    rec["app"], labels = m.group(1), {}
    if m.group(2):
        for kv in m.group(2).split(","):
            k, sep, v = kv.partition("=")
            if not sep or not LABEL.match(k) or not LABEL.match(v):
                return 400, "label %r is not k=v of [A-Za-z0-9_.-]" % kv, rec
            labels[k] = v
    rec["labels"] = labels
    for k in ("from", "until"):
        if k not in g or not g[k].isdigit():
            return 400, "%s must be UNIX seconds" % k, rec
        rec[k] = int(g[k])
    if rec["from"] > rec["until"]:
        return 400, "from after until", rec
    if g.get("format", "folded") != "folded":
        return 400, "format %r: only folded here" % g["format"], rec
    sr = g.get("sampleRate", "100")
    if not sr.isdigit() or int(sr) == 0:
        return 400, "sampleRate %r is not a positive integer" % sr, rec
    rec["sampleRate"] = int(sr)
    rec["spyName"] = g.get("spyName", "")
    rec["units"] = g.get("units", "samples")
    if rec["units"] not in UNITS:
        return 400, "units %r is not one of %s" % (rec["units"], sorted(UNITS)), rec
    rec["aggregationType"] = g.get("aggregationType", "sum")
    if rec["aggregationType"] not in ("sum", "average"):
        return 400, "aggregationType %r" % rec["aggregationType"], rec
    stacks = {}
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        return 400, "body is not UTF-8: %s" % e, rec
    for n, line in enumerate(text.splitlines(), 1):
        if not line:
            continue
        stack, sep, val = line.rpartition(" ")
        if not sep or not stack or not val.isdigit():
            return 400, "body line %d is not 'frames value': %r" % (n, line[:80]), rec
        stacks[stack] = stacks.get(stack, 0) + int(val)
    if not stacks:
        return 400, "empty profile", rec
    rec["stacks"] = stacks
    return 200, "", rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--record", required=True)
    ap.add_argument("--fail-first", type=int, default=0)
    a = ap.parse_args()
    lock = threading.Lock()
    state = {"left": a.fail_first}
    out = open(a.record, "a")

    class H(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(n)
            with lock:
                if state["left"] > 0:
                    state["left"] -= 1
                    self.send_response(503)
                    self.end_headers()
                    out.write(json.dumps({"ok": False, "reason": "503 on purpose"}) + "\n")
                    out.flush()
                    return
            code, why, rec = parse(self.path, body, self.headers.get("Content-Type", ""))
            rec.update(ok=code == 200, reason=why)
            with lock:
                out.write(json.dumps(rec) + "\n")
                out.flush()
            self.send_response(code)
            self.end_headers()
            self.wfile.write(why.encode())

        def do_GET(self):
            self.send_response(405)
            self.end_headers()

    srv = ThreadingHTTPServer(("127.0.0.1", a.port), H)
    print("listening on %d" % a.port, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
