#!/usr/bin/env bash
# Where the TLS uprobes go (analyzer/tls/tls_probe), checked against binutils
# without root or BPF:
#  - the x86-64 decoder against objdump -d over libssl.so.3's .text (compiler
#    output), libcrypto.so.3's .text (perlasm: AVX2, AVX-512, AES-NI, data
#    tables in the text) and a Go TLS program built here: at every instruction
#    objdump decodes, the same length; and the decoder's linear sweep (started
#    again at each symbol, as objdump does) has a boundary there.  objdump's
#    "(bad)" and ".byte", and the data objects it dumps, are skipped and
#    counted; encodings objdump shows but that are not instructions (a lone
#    REX, an invalid segment register, a 66-prefixed near branch, ...) must
#    be refused, and are counted;
#  - libssl's 8 points at the offsets readelf -Ws and the PT_LOAD math give;
#  - the Go program's Read/Write: ENTRY on the prologue's stack-check jump, a RET_INSN point at
#    exactly each of objdump's ret lines, the same from .gopclntab when the
#    binary is stripped; and the program serves HTTPS (h2, HTTP/1.1);
#  - every point found in libssl.so.3, the Go program (both), and, where
#    installed, BoringSSL's libssl.so.0 and node passes the collector's own
#    check of it (collector/tls_verify, as on a TLS_ATTACH).
. "$(dirname "$0")/lib.sh"
DUMP=$PROGS/tls_probe_dump
[ -x "$DUMP" ] || fail "$DUMP not built (make $DUMP)"
for t in objdump readelf python3 go openssl; do command -v $t >/dev/null || skip "needs $t"; done
LIBSSL=/usr/lib/x86_64-linux-gnu/libssl.so.3
LIBCRYPTO=/usr/lib/x86_64-linux-gnu/libcrypto.so.3
[ -r "$LIBSSL" ] && [ -r "$LIBCRYPTO" ] || skip "needs libssl3 ($LIBSSL)"

# xcheck FILE [strict]: one line of figures; exit 1 on any disagreement
# (strict: compiler output, where no encoding may be refused).
xcheck() {
  python3 - "$DUMP" "$@" <<'PY'
import bisect, collections, re, subprocess, sys

dump, path = sys.argv[1], sys.argv[2]
strict = len(sys.argv) > 3 and sys.argv[3] == 'strict'
SEC = '.text'


def run(cmd, inp=None):
    r = subprocess.run(cmd, input=inp, capture_output=True, text=True)
    if r.returncode:
        sys.exit('%s: exit %d: %s' % (cmd[0], r.returncode, r.stderr[:300]))
    return r.stdout


# The sweep's boundaries, and where the section is.
sweep, sec, cur = {}, None, None
for line in run([dump, '--insns', path]).splitlines():
    if line.startswith('#'):
        _, cur, off, addr, size = line.split()
        if cur == SEC:
            sec = (int(off, 16), int(addr, 16), int(size, 16))
    elif cur == SEC:
        o, n = line.split()
        sweep[int(o, 16)] = int(n)
if not sec:
    sys.exit('%s: no %s' % (path, SEC))
off, addr, size = sec

# Data objects in the section: objdump dumps them as data up to the next symbol.
syms, objs = set(), []
for line in run(['readelf', '-Ws', path]).splitlines():
    f = line.split()
    if len(f) < 8 or not f[0].endswith(':') or f[6] in ('UND', 'ABS'):
        continue
    try:
        v, n = int(f[1], 16), int(f[2], 0)
    except ValueError:
        continue
    syms.add(v)
    if f[3] == 'OBJECT' and addr <= v < addr + size:
        objs.append((v, n))
ss = sorted(syms)
data = []
for v, n in objs:
    i = bisect.bisect_right(ss, v)
    data.append((v - addr + off, max(n, (ss[i] - v) if i < len(ss) else 0)))
data.sort()


def in_data(o):
    i = bisect.bisect_right(data, (o, 1 << 62)) - 1
    return i >= 0 and data[i][0] <= o < data[i][0] + data[i][1]


# objdump's instructions (file offset, text); a length is the distance to the next line.
lines = []
for line in run(['objdump', '-d', '-z', '--no-show-raw-insn', '-j', SEC, path]).splitlines():
    m = re.match(r'^\s*([0-9a-f]+):\t(.*)$', line)
    if m:
        lines.append((int(m.group(1), 16) - addr + off, m.group(2).strip()))
lines.append((off + size, 'END'))
mine = {}
q = ''.join('%x\n%x\n' % (a, a + 1) for a, _ in lines[:-1])
for line in run([dump, '--at', path], q).splitlines():
    a, n, b = line.split()
    mine[int(a, 16)] = (int(n), b)

# How objdump shows encodings that are not instructions: lone prefixes, an invalid
# segment register, 66-prefixed near branches, 287-only x87, mov to cs, REX before VEX.
PFX = r'(rex(\.[WRXB]+)?|data16|addr32|cs|ds|es|ss|fs|gs|lock|repz|repnz|rep|bnd|notrack)'
INVALID = re.compile(r'^%s( %s)*$|%%\?|^(jmpw|callw|j[a-z]+w) |\((287|8087) only\)|,%%cs\b|^rex(\.[WRXB]+)? v'
                     % (PFX, PFX))

c = collections.Counter()
fails, skip_end = [], -1
for i in range(len(lines) - 1):
    a, txt = lines[i]
    L = lines[i + 1][0] - a
    if in_data(a):
        c['skipped_data'] += 1
        skip_end = a + L
        continue
    if '(bad)' in txt or txt.startswith('.byte') or lines[i + 1][1].startswith('.byte'):
        c['skipped_bad'] += 1    # (bad), or cut short by the next symbol
        skip_end = a + L
        continue
    c['compared'] += 1
    n, b = mine[a]
    if n == L:
        c['agree'] += 1
    elif n == 1 and b == '9b' and mine.get(a + 1, (0,))[0] == L - 1:
        c['agree'] += 1          # objdump shows fwait and the x87 instruction after it as one
    elif n == -1 and INVALID.search(txt):
        c['refused_invalid'] += 1
        skip_end = a + L
    else:
        c['differ'] += 1
        fails.append('%x: objdump %d bytes "%s", decoder %d' % (a, L, txt, n))
    if sweep.get(a) == L or (b == '9b' and sweep.get(a) == 1):
        c['sweep_agree'] += 1
        skip_end = -1
    elif skip_end >= 0:
        c['sweep_resync'] += 1   # after skipped or refused bytes, until both sweeps meet again
    else:
        c['sweep_differ'] += 1
        fails.append('%x: objdump %d bytes "%s", not a boundary of the sweep' % (a, L, txt))
if strict and c['refused_invalid']:
    fails.append('compiler output: %d encodings refused' % c['refused_invalid'])
print('%s: %s' % (path.split('/')[-1], ' '.join('%s=%d' % kv for kv in sorted(c.items()))))
fails.sort(key=lambda f: 'sweep' in f)
for f in fails[:20]:
    print('  ' + f)
sys.exit(1 if fails else 0)
PY
}

# ---- the decoder --------------------------------------------------------------------
xcheck "$LIBSSL" strict || fail "decoder and objdump differ on $LIBSSL"
xcheck "$LIBCRYPTO" || fail "decoder and objdump differ on $LIBCRYPTO"
ok "the decoder agrees with objdump on libssl.so.3 and libcrypto.so.3"

# ---- libssl's points: readelf -Ws and the PT_LOAD math ----------------------------------
"$DUMP" "$LIBSSL" > "$TMP/libssl.points" || fail "tls_probe_dump $LIBSSL failed"
python3 - "$LIBSSL" "$TMP/libssl.points" <<'PY' || fail "libssl's points are not where readelf says"
import re, subprocess, sys
path, points = sys.argv[1], sys.argv[2]
loads = []
for l in subprocess.run(['readelf', '-lW', path], capture_output=True, text=True).stdout.splitlines():
    f = l.split()
    if f and f[0] == 'LOAD' and 'E' in f[6:-1]:
        loads.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))   # offset, vaddr, filesz
data = open(path, 'rb').read()
want = {}
ids = {'SSL_write': 1, 'SSL_read': 2, 'SSL_write_ex': 3, 'SSL_read_ex': 4}
for l in subprocess.run(['readelf', '-Ws', path], capture_output=True, text=True).stdout.splitlines():
    f = l.split()
    if len(f) < 8 or f[3] != 'FUNC' or f[6] == 'UND':
        continue
    name = f[7].split('@')[0]
    if name not in ids:
        continue
    v = int(f[1], 16)
    for o, va, sz in loads:
        if va <= v < va + sz:
            off = v - va + o
            off += 4 if data[off:off + 4] == b'\xf3\x0f\x1e\xfa' else 0
            want[(ids[name], 0)] = want[(ids[name], 1)] = off
            if ids[name] <= 2:
                # OpenSSL 3's wrappers: CALL on objdump's first call, AFTER_CALL on the jump after test %eax,%eax
                dis = subprocess.run(['objdump', '-d', '--no-show-raw-insn', '--start-address=%#x' % v,
                                      '--stop-address=%#x' % (v + 64), path], capture_output=True, text=True).stdout
                ins = re.findall(r'^\s*([0-9a-f]+):\t(\S+)\s*(.*)$', dis, re.M)
                k = next(i for i, x in enumerate(ins) if x[1].startswith('call'))
                if ins[k + 1][1] == 'test' and ins[k + 1][2].startswith('%eax,%eax') and ins[k + 2][1].startswith('j'):
                    del want[(ids[name], 0)], want[(ids[name], 1)]
                    want[(ids[name], 3)] = int(ins[k][0], 16) - va + o
                    want[(ids[name], 4)] = int(ins[k + 2][0], 16) - va + o
got = {}
head = open(points).readline().split()
for l in open(points):
    f = l.split()
    if f[0] == 'point':
        got[(int(f[2]), int(f[3]))] = int(f[1], 16)
print('libssl.so.3: %s; %d points, readelf says %d' % (' '.join(head), len(got), len(want)))
sys.exit(0 if got == want and len(want) == 8 and head[1] == '1' else 1)
PY
ok "libssl.so.3: SSL_write_ex, SSL_read_ex at readelf's offsets (entry and return), SSL_write, SSL_read on their wrapper's call and the jump after it"

# ---- Go --------------------------------------------------------------------------------
export GOCACHE=$B/go-cache GOPATH=$TMP/gopath HOME=$TMP GO111MODULE=off CGO_ENABLED=0 GOFLAGS= GOTOOLCHAIN=local GOPROXY=off
GOPROG=$ROOT/tests/progs/go_tls/main.go
go build -o "$TMP/go_tls" "$GOPROG" >"$TMP/go-build.log" 2>&1 || { cat "$TMP/go-build.log"; fail "go build failed"; }
go build -ldflags="-s -w" -o "$TMP/go_tls_stripped" "$GOPROG" >>"$TMP/go-build.log" 2>&1 ||
  { cat "$TMP/go-build.log"; fail "go build (stripped) failed"; }
ok "built $("$TMP/go_tls" version) TLS program (and a stripped copy)"
xcheck "$TMP/go_tls" strict || fail "decoder and objdump differ on the Go program"

"$DUMP" "$TMP/go_tls" > "$TMP/go.points" || fail "tls_probe_dump go_tls failed"
"$DUMP" "$TMP/go_tls_stripped" > "$TMP/go_stripped.points" || fail "tls_probe_dump go_tls_stripped failed"
cmp -s "$TMP/go.points" "$TMP/go_stripped.points" ||
  { diff "$TMP/go.points" "$TMP/go_stripped.points"; fail "the stripped Go program's points differ"; }
objdump -d --no-show-raw-insn -j .text "$TMP/go_tls" > "$TMP/go.dis"
python3 - "$TMP/go_tls" "$TMP/go.points" "$TMP/go.dis" <<'PY' || fail "Go points are not at the functions' entries and rets"
import re, subprocess, sys
path, points, dis = sys.argv[1:4]
text = None
for l in subprocess.run(['readelf', '-SW', path], capture_output=True, text=True).stdout.splitlines():
    m = re.search(r'\]\s+\.text\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)', l)
    if m:
        text = (int(m.group(1), 16), int(m.group(2), 16))
delta = text[0] - text[1]             # vaddr - file offset
fns = {'crypto/tls.(*Conn).Write': 5, 'crypto/tls.(*Conn).Read': 6}
want, cur, seen = set(), None, 0
for l in open(dis):
    m = re.match(r'^([0-9a-f]+) <(.*)>:$', l)
    if m:
        cur = fns.get(m.group(2))
        seen = 0
        continue
    seen += 1
    # The entry: the stack check's conditional jump (one of the first three instructions).
    m = re.match(r'^\s*([0-9a-f]+):\t(j[a-z]+)\b', l)
    if m and cur and seen <= 3 and m.group(2) != 'jmp' and not any(p[0] == cur and p[1] == 0 for p in want):
        want.add((cur, 0, int(m.group(1), 16)))
    m = re.match(r'^\s*([0-9a-f]+):\t(ret|retq)\b', l)
    if m and cur:
        want.add((cur, 2, int(m.group(1), 16)))
head = open(points).readline().split()
got = set()
for l in open(points):
    f = l.split()
    if f[0] == 'point':
        got.add((int(f[2]), int(f[3]), int(f[1], 16) + delta))
rets = sum(1 for p in want if p[1] == 2)
print('go_tls: %s; %d points, objdump: 2 entries and %d ret lines' % (' '.join(head), len(got), rets))
if head[1] != '2' or int(head[3]) < 117:
    sys.exit(1)
for p in sorted(want ^ got):
    print('  %s at %x: %s' % ({0: 'entry', 2: 'ret'}[p[1]], p[2], 'only objdump' if p in want else 'only tls_probe'))
sys.exit(0 if want == got and rets >= 2 else 1)
PY
ok "Go: ENTRY on (*Conn).Read/Write's stack-check jump, a RET_INSN point on each of objdump's rets; the same from .gopclntab when stripped"

# ---- the collector's check ---------------------------------------------------------------
# Each file's points as the analyzer sends them, checked as the collector checks a TLS_ATTACH.
# (node: NodeSource's has OpenSSL inside, Debian's none of its own.)
verified=()
for f in "$LIBSSL" "$TMP/go_tls" "$TMP/go_tls_stripped" /usr/lib/x86_64-linux-gnu/android/libssl.so.0 /usr/bin/node; do
  [ -r "$f" ] || continue
  "$DUMP" --verify "$f" > "$TMP/verify.out" || { cat "$TMP/verify.out"; fail "the collector refuses a point of $f"; }
  v=$(tail -1 "$TMP/verify.out")
  n=$(awk '/^lib /{print $6}' "$TMP/verify.out")
  [ "$v" = "verify ok $n" ] || { cat "$TMP/verify.out"; fail "$f: '$v' for $n points"; }
  [ "$n" -gt 0 ] || [ "$f" = /usr/bin/node ] || { cat "$TMP/verify.out"; fail "$f: no points"; }
  verified+=("$(basename "$f"): $n")
done
ok "the collector's check accepts every point: ${verified[*]}"

# The program itself, for the live tests: HTTPS with h2 and HTTP/1.1.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost -days 1 \
  -keyout "$TMP/key.pem" -out "$TMP/cert.pem" >/dev/null 2>&1 || fail "openssl could not make a certificate"
PORT=$(free_port)
"$TMP/go_tls" server "127.0.0.1:$PORT" "$TMP/cert.pem" "$TMP/key.pem" > "$TMP/srv.out" 2>&1 &
CLEANUP_PIDS+=($!)
for _ in $(seq 100); do grep -q listening "$TMP/srv.out" && break; sleep 0.05; done
grep -q listening "$TMP/srv.out" || { cat "$TMP/srv.out"; fail "the Go server did not start"; }
expect_client() { # expected-last-line expected-protocol args...
  local want=$1 proto=$2; shift 2
  "$TMP/go_tls" client "$@" > "$TMP/cli.out" 2> "$TMP/cli.err" || { cat "$TMP/cli.err"; fail "client $* failed"; }
  [ "$(tail -1 "$TMP/cli.out")" = "$want" ] || { cat "$TMP/cli.out"; fail "client $*: expected '$want'"; }
  grep -q "protocol $proto" "$TMP/cli.err" || { cat "$TMP/cli.err"; fail "client $*: not $proto"; }
}
expect_client "done 5 200:5" HTTP/2.0 "https://127.0.0.1:$PORT/" 5
expect_client "done 3 404:3" HTTP/1.1 "https://127.0.0.1:$PORT/status/404" 3 h1
expect_client "done 2 200:2" HTTP/2.0 "https://127.0.0.1:$PORT/size/100000" 2 h2
ok "go_tls serves h2 and HTTP/1.1 (statuses, sizes) over one connection per client"
