"""Helpers for the network tests' inline checks (standard library only).

load() reads a network task's network.json for some pids; check() prints one
line per comparison, ember's value against the truth's, and counts the ones
that differ (bad()); done() exits 1 if any did.
"""
import json

_bad = 0


def load(path, pids):
    """(exchanges in request order, connections by id) of the given pids."""
    pids = set(int(p) for p in pids)
    ex, conns = [], {}
    with open(path, encoding='utf-8') as f:
        for line in f:
            o = json.loads(line)
            if o.get('pid') not in pids:
                continue
            if o['type'] == 'exchange':
                ex.append(o)
            elif o['type'] == 'connection':
                conns[(o['pid'], o['id'])] = o
    ex.sort(key=lambda x: (x['req_unix_ns'], x['connection_id'], x.get('req_seq') or 0))
    return ex, conns


def conn_of(x, conns):
    return conns[(x['pid'], x['connection_id'])]


def check(what, got, want):
    global _bad
    ok = got == want
    _bad += not ok
    print('  %s: ember %s, truth %s%s' % (what, got, want, '' if ok else '  <-- differs'))
    return ok


def bad():
    return _bad


def done():
    raise SystemExit(1 if _bad else 0)
