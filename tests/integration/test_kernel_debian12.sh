#!/usr/bin/env bash
# The reduced kernel-matrix pass of the suite: Debian 12's own kernel (6.1, at its
# default perf_event_paranoid 3) booted under qemu with this checkout, and the
# features its defaults broke before: the agent's start, on-CPU and memory
# profiles (perf events opened while the collector is still root), and TLS on a
# kernel without uprobe.multi (warned once, counted).  `make test-kernels` runs
# every feature on 6.1, 6.12 and 5.10.
. "$(dirname "$0")/lib.sh"
need_root
[ -x "$B/ember" ] || fail "$B/ember not built"
out=$TMP/kernels
"$ROOT/tests/kernels/matrix.sh" --kernels 6.1 --features startup,oncpu,mem,tls --out "$out" > "$TMP/matrix.log" 2>&1
rc=$?
cat "$TMP/matrix.log" | tail -12
grep -q 'paranoid=3' "$out/6.1/facts" || fail "the guest did not run at Debian's perf_event_paranoid 3: $(cat "$out/6.1/facts" 2>/dev/null)"
[ $rc = 0 ] || { for f in "$out"/6.1/*.log; do echo "== $f"; tail -5 "$f"; done; fail "a feature failed on Debian 12's kernel"; }
ok "Debian 12's kernel ($(awk '{print $2}' "$out/6.1/facts")): start-up, on-CPU and memory at paranoid 3, TLS warned"
