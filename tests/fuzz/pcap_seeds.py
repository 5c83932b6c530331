#!/usr/bin/env python3
"""Fuzz seeds from the shared real captures (shared/testdata/pcap/<protocol>/).

For every capture, every TCP connection and UDP flow becomes three inputs of
the matching L7 fuzz target (tests/fuzz/l7_fuzz.h layout): both directions
in capture order, the client's direction alone and the server's alone.  Each
capture file itself also seeds the pcap reader's target.  The captures stay
in shared/; the seeds are written under OUT (build/fuzz/seeds/<target>/) when
the fuzzers run.

tshark reads the captures (segments it marks as retransmissions are left
out); the client of a connection is the side that sent the SYN, else the side
whose port is the server port MANIFEST.md's decode-as rule or the protocol's
well-known port names, else the higher port.

Usage: pcap_seeds.py PCAP_DIR OUT   (prints one line per target: seeds written)
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys

TARGETS = {  # capture folder -> fuzz target
    'http': 'fuzz_l7_http1', 'http2': 'fuzz_l7_http2', 'dns': 'fuzz_l7_dns',
    'mysql': 'fuzz_l7_mysql', 'pgsql': 'fuzz_l7_pgsql', 'redis': 'fuzz_l7_redis',
    'kafka': 'fuzz_l7_kafka', 'mongo': 'fuzz_l7_mongo', 'cql': 'fuzz_l7_cql',
}
WELL_KNOWN = {
    'http': {80, 8080, 8000, 3128}, 'http2': {80, 8080}, 'dns': {53, 5353, 5355},
    'mysql': {3306}, 'pgsql': {5432}, 'redis': {6379}, 'kafka': {9092},
    'mongo': {27017}, 'cql': {9042},
}
CHUNK = 32           # the most one control byte can carry (bits 2..6 = len - 1)
MAX_SEED = 16384     # bytes per seed: keeps every seed fast to execute
FIELDS = ['frame.number', 'tcp.stream', 'udp.stream', 'ip.src', 'ipv6.src', 'tcp.srcport',
          'udp.srcport', 'tcp.dstport', 'udp.dstport', 'tcp.flags.syn', 'tcp.flags.ack',
          'tcp.payload', 'udp.payload']


def decode_as_ports(pcap_dir):
    """capture (relative path) -> server ports named by its decode-as rule."""
    ports = {}
    try:
        text = open(os.path.join(pcap_dir, 'MANIFEST.md'), encoding='utf-8').read()
    except OSError:
        return ports
    for line in text.splitlines():
        if line.startswith('| `'):
            name = line.split('|')[1].strip().strip('`')
            ports[name] = {int(p) for p in re.findall(r'`-d (?:tcp|udp)\.port==(\d+),', line)}
    return ports


def flows(path):
    """[(key, [(src_port, dst_port, syn_only, payload)])] in capture order."""
    cmd = ['tshark', '-r', path, '-n', '-T', 'fields', '-E', 'separator=/t', '-Y',
           '(tcp.len > 0 or tcp.flags.syn == 1 or udp) and not tcp.analysis.retransmission']
    for f in FIELDS:
        cmd += ['-e', f]
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True).stdout
    by_key, order = {}, []
    for line in out.splitlines():
        v = dict(zip(FIELDS, line.split('\t')))
        if v.get('tcp.stream'):
            key, sp, dp, hexdata = 't' + v['tcp.stream'], v['tcp.srcport'], v['tcp.dstport'], v.get('tcp.payload', '')
        elif v.get('udp.stream'):
            key, sp, dp, hexdata = 'u' + v['udp.stream'], v['udp.srcport'], v['udp.dstport'], v.get('udp.payload', '')
        else:
            continue
        syn_only = v.get('tcp.flags.syn') in ('1', 'True') and v.get('tcp.flags.ack') in ('0', 'False')
        data = bytes.fromhex(hexdata.replace(':', '')) if hexdata else b''
        if key not in by_key:
            by_key[key] = []
            order.append(key)
        by_key[key].append((int(sp), int(dp), syn_only, data))
    return [(k, by_key[k]) for k in order]


def client_port(pkts, server_ports):
    for sp, _dp, syn_only, _d in pkts:
        if syn_only:
            return sp
    sp, dp = pkts[0][0], pkts[0][1]
    if dp in server_ports and sp not in server_ports:
        return sp
    if sp in server_ports and dp not in server_ports:
        return dp
    return max(sp, dp)


def encode(pieces):
    """[(dir, bytes)] -> one fuzz input: config byte 0, then control byte + <= 32 bytes each."""
    out = bytearray([0])
    for d, data in pieces:
        for i in range(0, len(data), CHUNK):
            part = data[i:i + CHUNK]
            if len(out) + 1 + len(part) > MAX_SEED:
                return bytes(out)
            out.append(d | ((len(part) - 1) << 2))
            out += part
    return bytes(out)


def write(dirpath, data):
    if len(data) < 2:
        return 0
    name = os.path.join(dirpath, hashlib.sha1(data).hexdigest())
    if os.path.exists(name):
        return 0
    with open(name, 'wb') as f:
        f.write(data)
    return 1


def main():
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    pcap_dir, out = sys.argv[1], sys.argv[2]
    ports = decode_as_ports(pcap_dir)
    counts = {}
    pcap_out = os.path.join(out, 'fuzz_pcap')
    os.makedirs(pcap_out, exist_ok=True)
    for proto, target in sorted(TARGETS.items()):
        d = os.path.join(pcap_dir, proto)
        if not os.path.isdir(d):
            continue
        tdir = os.path.join(out, target)
        os.makedirs(tdir, exist_ok=True)
        counts.setdefault(target, 0)
        for fn in sorted(os.listdir(d)):
            if not re.search(r'\.(pcap|pcapng|cap)$', fn):
                continue
            path = os.path.join(d, fn)
            shutil.copyfile(path, os.path.join(pcap_out, proto + '-' + fn))
            counts['fuzz_pcap'] = counts.get('fuzz_pcap', 0) + 1
            server_ports = ports.get(proto + '/' + fn, set()) | WELL_KNOWN[proto]
            for key, pkts in flows(path):
                if key.startswith('u') and proto != 'dns':
                    continue   # DNS lookups inside other protocols' captures
                cport = client_port(pkts, server_ports)
                pieces = [(0 if sp == cport else 1, data) for sp, _dp, _s, data in pkts if data]
                if not pieces:
                    continue
                n = write(tdir, encode(pieces))
                n += write(tdir, encode([p for p in pieces if p[0] == 0]))
                n += write(tdir, encode([p for p in pieces if p[0] == 1]))
                counts[target] += n
    for t in sorted(counts):
        print('%s %d' % (t, counts[t]))
    return 0


if __name__ == '__main__':
    sys.exit(main())
