#!/usr/bin/env python3
"""Compare a live network task's exchanges (network.json) with tshark on a capture of the same traffic.

The test captures the traffic of one port on loopback while `ember profile
--type network` follows the server (or client) process; this script turns
the exchanges ember reported for that process into the rows
tests/pcap_compare.py compares (connection CLIENT>SERVER, the protocol's
columns, latency_us) and compares them with shared/testdata/pcap/oracle.sh
on the capture, connection by connection and in order: the same number of
exchanges, the same columns, answered on both sides or neither, latency
within --latency-tol-us.  ember times system calls: a response is complete
when the server's last write of it returned.  A response larger than the
peer's receive window leaves the kernel's send queue only as the peer reads
(a slow client on a loaded machine), after that write returned, so for a
response over --queued-bytes ember's latency may be shorter than tshark's by
any amount, never longer than it by more than the tolerance.  And ember's
latency starts when the server's read of the request returned: a request
that waited in the socket (the server busy or not scheduled, on a loaded
machine) makes ember's latency shorter by that wait, which is accepted when
the capture shows it: ember's response within the tolerance of the wire's
and its read of the request at least the difference after the request
reached the wire.

With --latency-from-read the latency is checked in absolute time instead:
ember's latency starts when the server's read of the request returned,
tshark's when the request reached the wire, and a request can wait in the
socket's receive queue before the server reads it (the server busy with
the previous one, or not scheduled): that wait is tshark's only.  So
ember's response time (its write) must be within --latency-tol-us of
tshark's response frame, and ember's read of the request no earlier than
tshark's request frame (less the tolerance); the longest wait is printed.

--gap-hides COL: an exchange ember marks gap=response (its response was cut
by a gap: live data is seen up to a bounded prefix per socket call) may lack
COL, when the message that carries it went by in the gap: ember's COL is
then '-' (absent, never another value), and the exchange is counted apart.

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


def rows_of(conns, exchanges, pids, side, names):
    rows, unknown = [], 0
    for x in exchanges:
        if x['pid'] not in pids or x['side'] != side or x['protocol'] not in names:
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
        row['_gap'] = x.get('fields', {}).get('gap') == 'response'
        row['_resp_ns'] = x['req_unix_ns'] + x['duration_ns']
        row['_read_ns'] = row['_resp_ns'] - x['latency_ns']
        row['_resp_bytes'] = x.get('resp_bytes', 0)
        rows.append(row)
    rows.sort(key=lambda r: (r['conn'], r['_order']))
    return rows, unknown


def oracle(pcap_dir, cap, proto, args, frames=False):
    cmd = [os.path.join(pcap_dir, 'oracle.sh')] + (['--frames'] if frames else []) + [cap, proto] + args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit('oracle.sh failed (%d): %s' % (p.returncode, p.stderr.strip()[:500]))
    cols = ['conn'] + pcap_compare.COLUMNS[proto] + (['frames'] if frames else []) + ['latency_us']
    return [dict(zip(cols, l.split('\t'))) for l in p.stdout.splitlines() if l and not l.startswith('#')]


def frame_times_ns(cap):
    """frame number -> capture time, unix ns."""
    p = subprocess.run(['tshark', '-r', cap, '-T', 'fields', '-e', 'frame.number', '-e', 'frame.time_epoch'],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit('tshark failed (%d): %s' % (p.returncode, p.stderr.strip()[:500]))
    out = {}
    for l in p.stdout.splitlines():
        n, t = l.split('\t')
        sec, _, frac = t.partition('.')
        out[int(n)] = int(sec) * 10**9 + int((frac + '000000000')[:9])
    return out


class SyscallTimeCheck:
    """Default latency check (see the module's docstring)."""

    def __init__(self, tol_us, queued_bytes, times):
        self.tol, self.queued_bytes, self.queued, self.times, self.read_late = tol_us, queued_bytes, 0, times, 0

    def __call__(self, orow, erow):
        why = pcap_compare.latency_within_tol(orow, erow)
        if not why:
            return None
        try:
            olat, elat = int(orow['latency_us']), int(erow['latency_us'])
        except (TypeError, ValueError):
            return why
        if elat > olat + self.tol:
            return why  # never longer
        if erow['_resp_bytes'] > self.queued_bytes:
            self.queued += 1
            return None
        # shorter: the request waited in the socket before the server read it; the capture shows how long
        try:
            t_req = self.times[int(orow['frames'].split('/')[0])]
        except (KeyError, ValueError, AttributeError):
            return why
        resp_diff = erow['_resp_ns'] - (t_req + olat * 1000)
        wait = erow['_read_ns'] - t_req
        if abs(resp_diff) <= self.tol * 1000 and wait >= (olat - elat - self.tol) * 1000:
            self.read_late += 1
            return None
        return why + ' (response %+d us from the wire\'s, request read %+d us after it reached it)' % (
            resp_diff // 1000, wait // 1000)


class ReadTimeCheck:
    """Latency check of --latency-from-read (see the module's docstring)."""

    def __init__(self, times, tol_us):
        self.times, self.tol = times, tol_us * 1000
        self.max_wait = self.max_resp_diff = 0

    def __call__(self, orow, erow):
        try:
            t_req = self.times[int(orow['frames'].split('/')[0])]
            t_resp = t_req + int(orow['latency_us']) * 1000
        except (KeyError, ValueError):
            return 'latency (no request frame time in the oracle row)'
        resp_diff, wait = erow['_resp_ns'] - t_resp, erow['_read_ns'] - t_req
        self.max_resp_diff = max(self.max_resp_diff, abs(resp_diff))
        self.max_wait = max(self.max_wait, wait)
        if abs(resp_diff) > self.tol or wait < -self.tol:
            return ('latency (oracle %s us, ember %s us: response %+d us from the wire\'s, request read %+d us '
                    'after it reached the wire)' % (orow['latency_us'], erow['latency_us'], resp_diff // 1000,
                                                  wait // 1000))
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--network-json', required=True)
    ap.add_argument('--pcap', required=True)
    ap.add_argument('--proto', required=True, choices=sorted(pcap_compare.COLUMNS))
    ap.add_argument('--pid', required=True, help='PID[,PID...]: the processes whose exchanges are compared')
    ap.add_argument('--side', default='server', choices=['client', 'server'])
    ap.add_argument('--pcap-dir', default=os.path.join(os.environ.get('SHARED', '../shared'), 'testdata', 'pcap'))
    ap.add_argument('--tshark-arg', action='append', default=[], help='e.g. -d tcp.port==3306,mysql (repeat)')
    # Software emulation (the kernel matrix, EMBER_EMULATED=1): the wire and the system calls are
    # timed by clocks that run late by milliseconds there; columns and counts stay exact.
    ap.add_argument('--latency-tol-us', type=int, default=25000 if os.environ.get('EMBER_EMULATED') == '1' else 1000)
    ap.add_argument('--queued-bytes', type=int, default=65536,
                    help='responses over this size may complete on the wire after the last write returned')
    ap.add_argument('--gap-hides', action='append', default=[], metavar='COL',
                    help='a column a response cut by a gap may lack (see above; repeat)')
    ap.add_argument('--latency-from-read', action='store_true',
                    help='check response time and request read against the capture\'s frames (see above)')
    ap.add_argument('--min', type=int, default=1, help='exchanges that must agree')
    ap.add_argument('--only-conns-in-capture', action='store_true',
                    help='compare only the connections the capture has (it covered part of the task)')
    a = ap.parse_args()

    targs = []
    for t in a.tshark_arg:
        targs += t.split(None, 1)
    conns, exchanges = load(a.network_json)
    pids = set(int(p) for p in a.pid.split(','))
    ours, unknown = rows_of(conns, exchanges, pids, a.side, pcap_compare.PARSER_NAMES[a.proto])
    theirs = oracle(a.pcap_dir, a.pcap, a.proto, targs, frames=True)
    if a.only_conns_in_capture:
        seen = set(r['conn'] for r in theirs)
        ours = [r for r in ours if r['conn'] in seen]
    hidden = 0
    if a.gap_hides:
        # Pair rows as compare() does; where ember's cut exchange lacks a column, take the oracle's.
        o_conns, e_conns = pcap_compare.by_conn(theirs), pcap_compare.by_conn(ours)
        for conn, erows in e_conns.items():
            for orow, erow in zip(o_conns.get(conn, []), erows):
                if not erow['_gap']:
                    continue
                cols = [c for c in a.gap_hides if pcap_compare.norm(erow.get(c)) == '-' and
                        pcap_compare.norm(orow.get(c)) != '-']
                for c in cols:
                    erow[c] = orow[c]
                hidden += bool(cols)
    pcap_compare.LATENCY_TOL_US = a.latency_tol_us
    times = frame_times_ns(a.pcap)
    check = ReadTimeCheck(times, a.latency_tol_us) if a.latency_from_read else None
    queued = SyscallTimeCheck(a.latency_tol_us, a.queued_bytes, times)
    diffs, agreed = pcap_compare.compare(a.proto, theirs, ours, check or queued)
    for d in diffs[:40]:
        print('  ' + d)
    if len(diffs) > 40:
        print('  ... %d more differences' % (len(diffs) - 40))
    how = ('response within %d us of the wire, request read after it reached the wire (longest wait %d us, '
           'largest response difference %d us)' % (a.latency_tol_us, check.max_wait // 1000,
                                                    check.max_resp_diff // 1000)
           if check else 'latency within %d us%s%s' % (
               a.latency_tol_us, '; %d response(s) over %d bytes ended on the wire more than that after '
               'the last write' % (queued.queued, a.queued_bytes) if queued.queued else '',
               '; %d request(s) read late, as the capture shows' % queued.read_late if queued.read_late else ''))
    cut = sum(r['_gap'] for r in ours)
    print('%s: tshark %d exchanges, ember %d (pid %s, %s side); %d agree (columns, answered, %s)%s%s'
          % (a.proto, len(theirs), len(ours), a.pid, a.side, agreed, how,
             '; %d response(s) cut by a gap%s' % (cut, ', %d lacking %s' % (hidden, '/'.join(a.gap_hides))
                                                   if a.gap_hides else '') if cut else '',
             '; %d exchanges of unlisted connections' % unknown if unknown else ''))
    if diffs or unknown or agreed < a.min:
        sys.exit(1)


if __name__ == '__main__':
    main()
