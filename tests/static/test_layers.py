#!/usr/bin/env python3
"""The folders' allowed arrows, checked against every #include.

    bpf         -> bpf                         (the BPF programs' ABI headers)
    proto       -> proto                       (generated message definitions)
    common      -> common, bpf, proto          (bpf and proto are definitions, no code)
    symbolizer  -> symbolizer, common
    l7          -> l7, common                  (parsers of untrusted bytes: no process's state)
    collector   -> collector, common, bpf      (the privileged process)
    analyzer    -> analyzer, l7, symbolizer, common, proto, bpf
    exporter    -> exporter, common, proto     (it sees only messages)
    cli         -> cli, l7, symbolizer, common, proto, bpf
    jvm         -> jvm                         (loaded into a JVM: nothing of ember's)
                   (the command and the supervisor: the libraries and the
                   definitions, none of the three processes' internals)

The collector also may not include the headers of a library that parses or
talks to the outside world (YAML, ZeroMQ, protobuf, JSON, pcap, HTTP, gRPC).
Exit 1 listing every forbidden include; tests/ and bench/ may include anything.
"""
import os
import re
import sys

ALLOWED = {
    'bpf': {'bpf'},
    'proto': {'proto'},
    'common': {'common', 'bpf', 'proto'},
    'symbolizer': {'symbolizer', 'common'},
    'l7': {'l7', 'common'},
    'collector': {'collector', 'common', 'bpf'},
    'analyzer': {'analyzer', 'l7', 'symbolizer', 'common', 'proto', 'bpf'},
    'exporter': {'exporter', 'common', 'proto'},
    'cli': {'cli', 'l7', 'symbolizer', 'common', 'proto', 'bpf'},
    'jvm': {'jvm'},
}
# Generated headers found through -I build/gen that are not project folders.
GENERATED = {'vmlinux.h'}
COLLECTOR_FORBIDDEN_SYS = re.compile(r'^(yaml\.h|zmq\.h|protobuf-c/|json-c/|pcap|microhttpd\.h|grpc/|curl/|librdkafka/)')
INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]')


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    bad, checked = [], 0
    for part in sorted(ALLOWED):
        for dirpath, _dirs, files in os.walk(os.path.join(root, part)):
            for fn in sorted(files):
                if not fn.endswith(('.c', '.h')):
                    continue
                path = os.path.join(dirpath, fn)
                rel = os.path.relpath(path, root)
                with open(path, encoding='utf-8', errors='replace') as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        checked += 1
                        kind, inc = m.groups()
                        if kind == '"':
                            if inc in GENERATED:
                                continue
                            top = inc.split('/')[0]
                            if '/' not in inc or top not in ALLOWED:
                                bad.append('%s:%d: "%s" is not a path from the tree\'s root' % (rel, n, inc))
                            elif top not in ALLOWED[part]:
                                bad.append('%s:%d: %s may not include %s ("%s")' % (rel, n, part, top, inc))
                        elif part == 'collector' and COLLECTOR_FORBIDDEN_SYS.match(inc):
                            bad.append('%s:%d: the collector may not include <%s>' % (rel, n, inc))
    for b in bad:
        print(b)
    print('%d includes checked, %d forbidden' % (checked, len(bad)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
