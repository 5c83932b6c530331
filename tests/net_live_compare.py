#!/usr/bin/env python3
"""Compare a live network task's exchanges (network.json) with tshark on a capture of the same traffic.

The test captures the traffic of one port on loopback while `ember profile
--type network` follows the server (or client) process; this script turns
the exchanges ember reported for that process into the rows
tests/pcap_compare.py compares (connection CLIENT>SERVER, the protocol's
columns, latency_us) and compares them with shared/testdata/pcap/oracle.sh
on the capture, connection by connection and in order: the same number of
exchanges, the same columns, answered on both sides or neither, latency
within --latency-tol-us.

Prints one line per connection that differs, then a summary; exit status 1
when anything differs or when fewer than --min exchanges agree.  Standard
library only.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pcap_compare  # noqa: E402


def load(path):
    conns, exchanges = {}, []
    with open(path, encoding='utf-8') as f:
        for line in f:
            if not line.strip():
                continue
            o = json.loads(line)
            if o.get('type') == 'connection':
                conns[(o['pid'], o['id'])] = o
            elif o.get('type') == 'exchange':
                exchanges.append(o)
    return conns, exchanges


def rows_of(conns, exchanges, pid, side, names):
    rows, unknown = [], 0
    for x in exchanges:
        if x['pid'] != pid or x['side'] != side or x['protocol'] not in names:
            continue
        c = conns.get((x['pid'], x['connection_id']))
        if not c:
            unknown += 1
            continue
        local, remote = c['local_address'], c['remote_address']
        row = dict(x.get('fields', {}))
        row['conn'] = '%s>%s' % ((remote, local) if side == 'server' else (local, remote))
        row['latency_us'] = round(x['latency_ns'] / 1000) if x['answered'] else None
        row['_order'] = (x['connection_id'], x.get('req_seq') or 0, x['req_unix_ns'])
        rows.append(row)
    rows.sort(key=lambda r: (r['conn'], r['_order']))
    return rows, unknown


def oracle(pcap_dir, cap, proto, args):
    cmd = [os.path.join(pcap_dir, 'oracle.sh'), cap, proto] + args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit('oracle.sh failed (%d): %s' % (p.returncode, p.stderr.strip()[:500]))
    cols = ['conn'] + pcap_compare.COLUMNS[proto] + ['latency_us']
    return [dict(zip(cols, l.split('\t'))) for l in p.stdout.splitlines() if l and not l.startswith('#')]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--network-json', required=True)
    ap.add_argument('--pcap', required=True)
    ap.add_argument('--proto', required=True, choices=sorted(pcap_compare.COLUMNS))
    ap.add_argument('--pid', type=int, required=True)
    ap.add_argument('--side', default='server', choices=['client', 'server'])
    ap.add_argument('--pcap-dir', default=os.path.join(os.environ.get('SHARED', '../shared'), 'testdata', 'pcap'))
    ap.add_argument('--tshark-arg', action='append', default=[], help='e.g. -d tcp.port==3306,mysql (repeat)')
    ap.add_argument('--latency-tol-us', type=int, default=1000)
    ap.add_argument('--min', type=int, default=1, help='exchanges that must agree')
    ap.add_argument('--only-conns-in-capture', action='store_true',
                    help='compare only the connections the capture has (it covered part of the task)')
    a = ap.parse_args()

    targs = []
    for t in a.tshark_arg:
        targs += t.split(None, 1)
    conns, exchanges = load(a.network_json)
    ours, unknown = rows_of(conns, exchanges, a.pid, a.side, pcap_compare.PARSER_NAMES[a.proto])
    theirs = oracle(a.pcap_dir, a.pcap, a.proto, targs)
    if a.only_conns_in_capture:
        seen = set(r['conn'] for r in theirs)
        ours = [r for r in ours if r['conn'] in seen]
    pcap_compare.LATENCY_TOL_US = a.latency_tol_us
    diffs, agreed = pcap_compare.compare(a.proto, theirs, ours)
    for d in diffs[:40]:
        print('  ' + d)
    if len(diffs) > 40:
        print('  ... %d more differences' % (len(diffs) - 40))
    print('%s: tshark %d exchanges, ember %d (pid %d, %s side); %d agree (columns, answered, latency within %d us)%s'
          % (a.proto, len(theirs), len(ours), a.pid, a.side, agreed, a.latency_tol_us,
             '; %d exchanges of unlisted connections' % unknown if unknown else ''))
    if diffs or unknown or agreed < a.min:
        sys.exit(1)


if __name__ == '__main__':
    main()
