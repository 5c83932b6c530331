#!/usr/bin/env python3
"""Compare `ember analyze-pcap --json` with shared/testdata/pcap/oracle.sh (tshark).

For every capture under the pcap directory (protocol = its folder), run the
oracle (with the decode-as rule MANIFEST.md gives for the file) and ember, keep
ember's records of that protocol, and compare connection by connection: the
same number of exchanges, and in order the same values of the columns both
report (method/uri/status, qname/qtype/rcode/answers, command/result, ...),
plus answered/unanswered (latency '-' on both sides or on neither).

Latency: for every exchange both answer, ember's latency_us must be within
LATENCY_TOL_US of tshark's (request PDU completed -> first response PDU
completed, from the capture's timestamps).  And at least as many exchanges
must agree (columns, answered, latency) as the "Pairs" column of
MANIFEST.md lists for the capture.

Result per capture: PASS, FAIL (with the differing rows), NOPARSER (ember has
no parser registered for the capture's protocol: a failure, since every
protocol with captures is one ember claims to parse), ERROR (oracle.sh or
`ember analyze-pcap` failed: a failure) or EXCEPTION (a listed case where
tshark's own decoding differs; the reason is printed).  Exit status 1 unless
every capture PASSes or is a listed EXCEPTION.

Standard library only.
"""
import argparse
import json
import os
import re
import subprocess
import sys

# oracle protocol (folder name) -> ember parser names that may implement it
PARSER_NAMES = {
    'http': ['http1', 'http'],
    'http2': ['http2', 'h2'],
    'dns': ['dns'],
    'mysql': ['mysql'],
    'pgsql': ['pgsql', 'postgres', 'postgresql'],
    'redis': ['redis', 'resp'],
    'kafka': ['kafka'],
    'mongo': ['mongo', 'mongodb'],
    'cql': ['cql', 'cassandra'],
}

# Columns compared per protocol (oracle.sh order, minus conn and latency_us).
# Free-text columns are compared as prefixes: ember truncates them.
COLUMNS = {
    'http': ['method', 'uri', 'status'],
    'http2': ['stream_id', 'method', 'path', 'status'],
    'dns': ['transport', 'qname', 'qtype', 'rcode', 'answer_types'],
    'mysql': ['command', 'argument', 'result'],
    'pgsql': ['kind', 'query', 'result'],
    'redis': ['command', 'reply'],
    'kafka': ['api_key', 'api_name', 'api_version', 'correlation_id'],
    'mongo': ['opcode', 'command', 'request_id', 'result'],
    'cql': ['stream_id', 'opcode', 'query', 'result'],
}
FREE_TEXT = {'uri', 'path', 'argument', 'query', 'command'}
PREFIX_MIN = 64  # a truncated value must still match at least this much
LATENCY_TOL_US = 1000

# Records ember reports that tshark files under another protocol.
# (folder protocol, predicate on ember's record, reason)
def _both_ports(rec, port):
    return all(ep.rsplit(':', 1)[-1] == str(port) for ep in rec.get('conn', '').split('>'))

RECORD_EXCEPTIONS = [
    ('dns', lambda r: _both_ports(r, 5353),
     'port 5353 <-> 5353 is multicast DNS: tshark dissects it as "mdns", which oracle.sh does not list'),
    ('dns', lambda r: r.get('conn', '').endswith(':5355'),
     'port 5355 is LLMNR (DNS wire format): tshark dissects it as "llmnr", which oracle.sh does not list'),
]

# Whole-capture exceptions: (file basename, protocol) -> reason.  Keep empty
# unless tshark itself cannot decode a capture; every entry is printed.
CAPTURE_EXCEPTIONS = {
}


def norm(s):
    if s is None:
        return '-'
    s = re.sub(r'\s+', ' ', str(s)).strip()
    return s or '-'


def manifest(pcap_dir):
    """file (relative to pcap_dir) -> (tshark decode-as args, answered pairs listed)."""
    rules = {}
    path = os.path.join(pcap_dir, 'MANIFEST.md')
    try:
        text = open(path, encoding='utf-8').read()
    except OSError:
        return rules
    pairs_col = None
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if line.startswith('| File') and 'Pairs' in cells:
            pairs_col = cells.index('Pairs')
        if not line.startswith('| `'):
            continue
        name = cells[0].strip('`')
        args = []
        for c in cells:
            for m in re.finditer(r'`(-d [^`]+)`', c):
                args += m.group(1).split(None, 1)
        m = re.match(r'(\d+)', cells[pairs_col]) if pairs_col is not None and pairs_col < len(cells) else None
        rules[name] = (args, int(m.group(1)) if m else None)
    return rules


def run_oracle(pcap_dir, rel, proto, args):
    cmd = [os.path.join(pcap_dir, 'oracle.sh'), os.path.join(pcap_dir, rel), proto] + args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise RuntimeError('oracle.sh failed (%d): %s' % (p.returncode, p.stderr.strip()[:300]))
    cols = ['conn'] + COLUMNS[proto] + ['latency_us']
    rows = []
    for line in p.stdout.splitlines():
        if not line or line.startswith('#'):
            continue
        vals = line.split('\t')
        rows.append(dict(zip(cols, vals)))
    return rows


def run_ember(ember, path):
    p = subprocess.run([ember, 'analyze-pcap', '--json', '--quiet', path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise RuntimeError('ember analyze-pcap failed (%d): %s' %
                           (p.returncode, p.stderr.decode('utf-8', 'replace').strip()[:300]))
    recs = []
    for line in p.stdout.decode('utf-8').splitlines():
        if line.strip():
            recs.append(json.loads(line))
    return recs


def registered(ember):
    p = subprocess.run([ember, 'analyze-pcap', '--list-protocols'], stdout=subprocess.PIPE, text=True)
    return set(p.stdout.split())


def same(col, ours, theirs):
    a, b = norm(ours), norm(theirs)
    if a == b:
        return True
    if col in FREE_TEXT and a != '-' and b != '-':
        n = min(len(a), len(b))
        return n >= PREFIX_MIN and a[:n] == b[:n]
    return False


def by_conn(rows):
    out = {}
    for r in rows:
        out.setdefault(r.get('conn', '-'), []).append(r)
    return out


def latency_within_tol(orow, erow):
    """None when ember's latency is within LATENCY_TOL_US of tshark's, else why not."""
    try:
        d = abs(int(erow['latency_us']) - int(orow['latency_us']))
    except (TypeError, ValueError):
        d = None
    if d is None or d > LATENCY_TOL_US:
        return 'latency (oracle %s us, ember %s us)' % (orow.get('latency_us'), erow.get('latency_us'))
    return None


def compare(proto, oracle, ours, latency_check=latency_within_tol):
    """(list of difference strings (empty = agree), answered exchanges that agree).

    latency_check(oracle row, ember row) -> None or a difference, for
    exchanges answered on both sides."""
    diffs = []
    agreed = 0
    cols = COLUMNS[proto]
    if len(oracle) != len(ours):
        diffs.append('exchange count: oracle %d, ember %d' % (len(oracle), len(ours)))
    o_conns, e_conns = by_conn(oracle), by_conn(ours)
    for conn in sorted(set(o_conns) | set(e_conns)):
        o, e = o_conns.get(conn, []), e_conns.get(conn, [])
        if len(o) != len(e):
            diffs.append('%s: oracle %d exchanges, ember %d' % (conn, len(o), len(e)))
        for i in range(max(len(o), len(e))):
            orow = o[i] if i < len(o) else None
            erow = e[i] if i < len(e) else None
            if orow is None or erow is None:
                which = 'ember only' if orow is None else 'oracle only'
                row = erow if orow is None else orow
                diffs.append('%s #%d %s: %s' % (conn, i, which, ' '.join(norm(row.get(c)) for c in cols)))
                continue
            bad = [c for c in cols if not same(c, erow.get(c), orow.get(c))]
            o_ans = norm(orow.get('latency_us')) != '-'
            e_ans = erow.get('latency_us') is not None
            if o_ans != e_ans:
                bad.append('answered')
            elif o_ans:
                why = latency_check(orow, erow)
                if why:
                    bad.append(why)
                elif not bad:
                    agreed += 1
            if bad:
                diffs.append('%s #%d differs in %s: oracle [%s] ember [%s]' % (
                    conn, i, ','.join(bad),
                    ' '.join(norm(orow.get(c)) for c in cols) + (' answered' if o_ans else ' unanswered'),
                    ' '.join(norm(erow.get(c)) for c in cols) + (' answered' if e_ans else ' unanswered')))
    return diffs, agreed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--ember', default=os.environ.get('EMBER', 'build/ember'))
    ap.add_argument('--pcap-dir', default=os.path.join(os.environ.get('SHARED', '../shared'), 'testdata', 'pcap'))
    ap.add_argument('--only', help='only captures whose path contains this')
    ap.add_argument('-v', '--verbose', action='store_true', help='print every difference')
    a = ap.parse_args()

    rules = manifest(a.pcap_dir)
    reg = registered(a.ember)
    counts = {'PASS': 0, 'FAIL': 0, 'NOPARSER': 0, 'EXCEPTION': 0, 'ERROR': 0}
    failed = []
    for proto in sorted(COLUMNS):
        d = os.path.join(a.pcap_dir, proto)
        if not os.path.isdir(d):
            continue
        names = [n for n in PARSER_NAMES[proto] if n in reg]
        for fn in sorted(os.listdir(d)):
            if not re.search(r'\.(pcap|pcapng|cap)$', fn):
                continue
            rel = '%s/%s' % (proto, fn)
            if a.only and a.only not in rel:
                continue
            tag = '%-8s %s' % (proto, rel)
            try:
                oracle = run_oracle(a.pcap_dir, rel, proto, rules.get(rel, ([], None))[0])
            except RuntimeError as e:
                print('ERROR    %s: %s' % (tag, e))
                counts['ERROR'] += 1
                failed.append(rel)
                continue
            if not names:
                print('NOPARSER %s: no ember parser registered for %s (oracle: %d exchanges)' %
                      (tag, proto, len(oracle)))
                counts['NOPARSER'] += 1
                failed.append(rel)
                continue
            try:
                recs = run_ember(a.ember, os.path.join(a.pcap_dir, rel))
            except (RuntimeError, ValueError) as e:
                print('ERROR    %s: %s' % (tag, e))
                counts['ERROR'] += 1
                failed.append(rel)
                continue
            ours, excepted = [], []
            for r in recs:
                if r.get('protocol') not in names:
                    continue
                why = next((reason for p, pred, reason in RECORD_EXCEPTIONS if p == proto and pred(r)), None)
                if why:
                    excepted.append(why)
                else:
                    ours.append(r)
            for why in sorted(set(excepted)):
                print('  note   %s: %d ember record(s) not compared: %s' % (tag, excepted.count(why), why))
            diffs, agreed = compare(proto, oracle, ours)
            listed = rules.get(rel, ([], None))[1]
            if listed is None:
                diffs.append('MANIFEST.md lists no pair count for this capture')
            elif agreed < listed:
                diffs.append('%d answered exchanges agree, MANIFEST.md lists %d pairs' % (agreed, listed))
            cexc = CAPTURE_EXCEPTIONS.get((fn, proto))
            if diffs and cexc:
                print('EXCEPTION %s: %s (%d differences)' % (tag, cexc, len(diffs)))
                counts['EXCEPTION'] += 1
                continue
            if diffs:
                print('FAIL     %s: %d exchanges (oracle) vs %d (ember)' % (tag, len(oracle), len(ours)))
                for x in diffs if a.verbose else diffs[:8]:
                    print('           ' + x)
                if not a.verbose and len(diffs) > 8:
                    print('           ... %d more' % (len(diffs) - 8))
                counts['FAIL'] += 1
                failed.append(rel)
            else:
                print('PASS     %s: %d exchanges, %d answered agree (latency within %d us)' %
                      (tag, len(oracle), agreed, LATENCY_TOL_US))
                counts['PASS'] += 1
    print('pcap_compare: ' + ', '.join('%d %s' % (v, k.lower()) for k, v in counts.items()))
    if failed:
        print('failed: ' + ' '.join(failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
