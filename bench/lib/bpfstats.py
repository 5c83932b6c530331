#!/usr/bin/env python3
"""BPF run statistics from the kernel's own accounting (kernel.bpf_stats_enabled=1).

  bpfstats.py snap FILE              save every loaded program's run_cnt/run_time_ns
  bpfstats.py diff BEFORE AFTER NAME [PRE]
                                     print "runs ns" added between two snapshots by
                                     the programs named NAME (a regex), or, with
                                     NAME = @new, by the programs absent from the
                                     snapshot PRE (a tool started after PRE)
"""
import json
import re
import subprocess
import sys


def snapshot():
    out = subprocess.run(['bpftool', 'prog', 'show', '-j'], stdout=subprocess.PIPE, check=True).stdout
    return {str(p['id']): {'name': p.get('name', ''), 'runs': p.get('run_cnt', 0), 'ns': p.get('run_time_ns', 0)}
            for p in json.loads(out)}


def main():
    if sys.argv[1] == 'snap':
        json.dump(snapshot(), open(sys.argv[2], 'w'))
        return 0
    before, after, name = json.load(open(sys.argv[2])), json.load(open(sys.argv[3])), sys.argv[4]
    pre = json.load(open(sys.argv[5])) if len(sys.argv) > 5 else {}
    runs = ns = 0
    for pid, a in after.items():
        b = before.get(pid, {'runs': 0, 'ns': 0})
        if name == '@new':
            if pid in pre:
                continue
        elif not re.fullmatch(name, a['name']) or pid not in before:
            continue
        runs += a['runs'] - b['runs']
        ns += a['ns'] - b['ns']
    print(runs, ns)
    return 0


if __name__ == '__main__':
    sys.exit(main())
