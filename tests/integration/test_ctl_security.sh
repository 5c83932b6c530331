#!/usr/bin/env bash
# The collector's control socket before a session: it serves only the
# analyzer's uid (SO_PEERCRED), ends a connection on a malformed request and
# counts it; root gets stats only.  What a connected analyzer could do once
# its HELLO is taken (files of other users, foreign pids, TLS points) is
# test_hostile_peer's.
. "$(dirname "$0")/lib.sh"
need_bpf
command -v setpriv >/dev/null || skip "setpriv missing (util-linux)"
PY=/usr/bin/python3; [ -x $PY ] || PY=python3
start_agent
SOCK=$AGENT_RUN/collector.sock
stat_of() { "$EMBER" stats --config "$TMP/ember.yaml" | awk -v n="$1" '$1 == "collector" && $2 == n {print $3}'; }
m0=$(stat_of ctl_malformed_requests); d0=$(stat_of ctl_denied_requests)
VER=$(awk '$1 == "#define" && $2 == "CTL_VERSION" {print $3}' "$ROOT/common/ctl_proto.h")
[ -n "$VER" ] || fail "CTL_VERSION not found in common/ctl_proto.h"
cat > "$TMP/client.py" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(5)
s.connect(sys.argv[1])
mode = sys.argv[2]
VER = int(sys.argv[3])  # CTL_VERSION, read from common/ctl_proto.h by the test
if mode == "garbage":
    s.send(b"\x00" * 40)
elif mode == "attach-before-hello":
    # valid ATTACH frame (magic EMBR, CTL_VERSION, type 4) for 1 pid, but no HELLO first:
    # task id, kind, npids, period, min block, flags, pad, the pid (common/ctl_proto.h)
    payload = struct.pack("<QIIQQIII", 1, 1, 1, 9000000, 0, 0, 0, 1)
    s.send(struct.pack("<IHHII", 0x454d4252, VER, 4, len(payload), 1) + payload)
elif mode == "stats":
    s.send(struct.pack("<IHHII", 0x454d4252, VER, 14, 0, 7))
    hdr = s.recv(8192)
    print("answer", len(hdr))
    sys.exit(0)
try:
    r = s.recv(8192)
    print("closed" if r == b"" else "answered %d" % len(r))
except (ConnectionResetError, socket.timeout) as e:
    print("closed" if isinstance(e, ConnectionResetError) else "timeout")
PY
out=$(setpriv --reuid=ember --regid=ember --clear-groups $PY "$TMP/client.py" "$SOCK" garbage "$VER")
[ "$out" = closed ] || fail "garbage from the analyzer uid: connection not closed ($out)"
out=$(setpriv --reuid=ember --regid=ember --clear-groups $PY "$TMP/client.py" "$SOCK" attach-before-hello "$VER")
[ "$out" = closed ] || fail "ATTACH before HELLO: connection not closed ($out)"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups $PY "$TMP/client.py" "$SOCK" stats "$VER" 2>&1 || true)
echo "$out" | grep -q "answer" && fail "uid 65534 got an answer from the collector"
out=$($PY "$TMP/client.py" "$SOCK" attach-before-hello "$VER")
[ "$out" = closed ] || fail "root asking for ATTACH: connection not closed ($out)"
out=$($PY "$TMP/client.py" "$SOCK" stats "$VER")
echo "$out" | grep -q "answer" || fail "root could not get stats"
m1=$(stat_of ctl_malformed_requests); d1=$(stat_of ctl_denied_requests)
echo "malformed $m0 -> $m1, denied $d0 -> $d1"
[ $((m1 - m0)) = 1 ] || fail "$((m1 - m0)) malformed requests counted, 1 sent (the garbage)"
[ $((d1 - d0)) = 3 ] || fail "$((d1 - d0)) denied requests counted, 3 expected (ATTACH before HELLO, uid 65534, root's ATTACH)"
kill -0 "$(child_pid ember-collector)" || fail "collector died"
ok "foreign uid refused, malformed and out-of-phase requests end the connection, all counted"
stop_agent || fail "agent exited with an error"
