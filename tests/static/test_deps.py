#!/usr/bin/python3
"""deploy/install-deps.sh keeps the agent's packages apart from the test fixtures.

`make run` (install-deps.sh agent) must install what building and running the agent needs and
nothing a test needs: no server, client, compiler of test programs or emulator.  Every fixture
package installed here that ships a service unit must be in FIXTURE_SERVICES, which the script
leaves disabled at boot when it installs them.
"""
import os
import re
import subprocess
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
text = open(os.path.join(root, 'deploy', 'install-deps.sh')).read()


def words(var):
    got = []
    for m in re.finditer(r'^%s="(?:\$%s )?([^"]*)"' % (var, var), text, re.M):
        got += m.group(1).replace('\\\n', ' ').split()
    return got


agent, fixtures, services = words('PKGS'), words('FIXTURES'), words('FIXTURE_SERVICES')
bad = []
if not agent or not fixtures or not services:
    bad.append(f"lists not found: PKGS {len(agent)}, FIXTURES {len(fixtures)}, FIXTURE_SERVICES {len(services)}")
# Nothing a test needs in the agent's set; the servers and tools tests start never there.
never_agent = {'nginx-light', 'redis-server', 'mariadb-server', 'postgresql', 'prometheus', 'golang-go', 'rustc',
               'qemu-system-x86', 'tshark', 'libcmocka-dev', 'wrk', 'nodejs', 'bpftrace', 'linux-perf'}
bad += [f"{p} is a test fixture but in the agent's packages (PKGS)" for p in agent if p in never_agent or p in fixtures]
# The agent links these (Makefile's LIBS_*): their -dev packages are the agent's.
for lib, pkg in (('-lbpf', 'libbpf-dev'), ('-lzmq', 'libzmq3-dev'), ('-lprotobuf-c', 'libprotobuf-c-dev'),
                 ('-lyaml', 'libyaml-dev'), ('-lpcap', 'libpcap-dev'), ('-lmicrohttpd', 'libmicrohttpd-dev'),
                 ('-lcurl', 'libcurl4-openssl-dev'), ('-lrdkafka', 'librdkafka-dev'), ('-luring', 'liburing-dev'),
                 ('-liberty', 'libiberty-dev'), ('-lgnutls', 'libgnutls28-dev'), ('-ljemalloc', 'libjemalloc-dev')):
    if pkg not in agent:
        bad.append(f"the agent links {lib} but {pkg} is not in PKGS")
# Fixture packages installed here that ship a service: each must be one the script disables.
for p in fixtures:
    r = subprocess.run(['dpkg', '-L', p], capture_output=True, text=True)
    if r.returncode:
        continue
    for f in r.stdout.split():
        m = re.match(r'^/lib/systemd/system/([^@/]+)\.service$', f)
        if m and m.group(1) not in services and os.path.exists(f):
            unit = m.group(1)
            # An alias (mysql.service -> mariadb.service) follows its unit.
            if os.path.islink(f) and os.path.basename(os.readlink(f))[:-len('.service')] in services:
                continue
            # A unit without [Install] WantedBy= is never enabled at boot (fstrim.service: its timer is).
            if not re.search(r'^\s*(WantedBy|RequiredBy)\s*=', open(f).read(), re.M):
                continue
            bad.append(f"{p} ships {unit}.service, not in FIXTURE_SERVICES (it would stay enabled at boot)")
for b in bad:
    print("FAIL:", b)
print(f"agent: {len(agent)} packages, fixtures: {len(fixtures)}, services disabled when installed: {services}")
sys.exit(1 if bad else 0)
