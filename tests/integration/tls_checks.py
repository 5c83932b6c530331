#!/usr/bin/python3
"""Checks of a TLS task's network.json against what the client did.

  tls_checks.py NETWORK_JSON SERVER_PID CLIENT_PID CLIENT_OUT PROTOCOL

CLIENT_OUT's last line is "done N 200:a 404:b 500:c" (tls_peer.py, tls_node.js,
go_tls): on each side, exactly N exchanges of PROTOCOL with those statuses,
every one answered and is_ssl; one TLS connection per side; the ciphertext
one end wrote is what the other read (but for a last close_notify).  Exits 1 naming every difference.
That exactness holds when the task lost nothing; when it counted a loss (calls lost whole, TLS
connections that moved data before their process's probes, plaintext calls tied to no
connection), each side has at most N exchanges, and fewer only with that loss counted.
"""
import collections
import json
import sys

net, srv, cli, out, proto = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
words = open(out).read().split('\n')
words = [l for l in words if l.startswith('done ')][-1].split()
n = int(words[1])
want = {int(k): int(v) for k, v in (x.split(':') for x in words[2:])}
ex = collections.defaultdict(list)
conns = collections.defaultdict(list)
lost = collections.Counter()
for line in open(net):
    o = json.loads(line)
    if o['type'] == 'batch':
        for k in ('calls_lost', 'tls_connections_unprobed', 'tls_calls_unbound'):
            lost[k] += o[k]
    elif o['type'] == 'exchange':
        ex[o['pid']].append(o)
    elif o['type'] == 'connection':
        conns[o['pid']].append(o)
bad = 0
lost = {k: v for k, v in lost.items() if v}
print(f"  losses the task counted: {lost or 'none'}")


def check(what, got, exp):
    global bad
    bad += got != exp
    print(f"  {what}: ember {got}, expected {exp}{'' if got == exp else '  <-- differs'}")


if lost:
    # Conservation, not exactness: fewer exchanges only with the loss counted, never more.
    for pid, side in ((srv, 'server'), (cli, 'client')):
        xs = [x for x in ex[pid] if x['protocol'] == proto]
        check(f"{side} {proto} exchanges at most {n} (loss counted)", len(xs) <= n, True)
    sys.exit(1 if bad else 0)
for pid, side in ((srv, 'server'), (cli, 'client')):
    xs = [x for x in ex[pid] if x['protocol'] == proto]
    check(f"{side} {proto} exchanges", len(xs), n)
    check(f"{side} statuses", dict(sorted(collections.Counter(x['status'] for x in xs).items())), want)
    check(f"{side} side", sorted(set(x['side'] for x in xs)), [side])
    check(f"{side} is_ssl", sorted(set(x['ssl'] for x in xs)), [True])
    check(f"{side} answered", sum(x['answered'] for x in xs), n)
    cs = [c for c in conns[pid] if c['protocol'] == proto]
    check(f"{side} TLS connections", [(c['ssl'], c['side']) for c in cs], [(True, side)])
c = [c for c in conns[cli] if c['protocol'] == proto]
s = [c for c in conns[srv] if c['protocol'] == proto]
if c and s:
    check("ciphertext client wrote = server read", c[0]['bytes_written'], s[0]['bytes_read'])
    # The server's close_notify alert may go out after its client has stopped reading:
    # one encrypted alert record (24 bytes in TLS 1.3, 31 in TLS 1.2 with AES-GCM).
    d = s[0]['bytes_written'] - c[0]['bytes_read']
    check("ciphertext server wrote - client read (0 or one close_notify record)", d in (0, 24, 31), True)
sys.exit(1 if bad else 0)
