#!/usr/bin/env bash
# A compromised analyzer (tests/progs/ctl_hostile, with the analyzer's uid) against
# the collector, with files planted by profiled processes of another user: symlinks
# to /etc/shadow as perf map, debuglink and build-id file, FIFOs and a device in
# those places, another user's and a root-only perf map, TLS probe offsets inside an
# instruction and in data, ATTACH to the collector, to an exporter process and to a
# kernel thread, kallsyms and maps without a task, HELLO from the exporter's uid.
# Everything is refused and counted by reason, exactly; a legitimate debug file
# beside the other user's binary is served.
. "$(dirname "$0")/lib.sh"
need_bpf
command -v setpriv >/dev/null || skip "setpriv missing (util-linux)"
[ -x "$PROGS/ctl_hostile" ] || fail "$PROGS/ctl_hostile not built"
# The agent creates ember's users; its exporter is a process of the exporter's uid.
start_agent
XP=$(child_pid ember-exporter)
[ -n "$XP" ] || fail "no exporter"
EUID_=$(id -u ember); XUID=$(id -u ember-exporter)
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
as_nobody() { "${NOBODY[@]}" "$@"; }

HD=$TMP/hostile; mkdir -p "$HD"; cp /bin/sleep "$HD/target"; chown -R nobody:nogroup "$HD"
"${NOBODY[@]}" "$HD/target" 600 & T=$!; CLEANUP_PIDS+=("$T")
sleepers=()
for i in 1 2 3 4; do "${NOBODY[@]}" "$HD/target" 600 & sleepers+=($!); CLEANUP_PIDS+=($!); done
FIFO_P=${sleepers[0]} DEV_P=${sleepers[1]} OTHER_P=${sleepers[2]} ROOTONLY_P=${sleepers[3]}
PLANTED=()
plant() { PLANTED+=("$1"); }
# What the profiled user plants.
as_nobody ln -s /etc/shadow "/tmp/perf-$T.map"; plant "/tmp/perf-$T.map"
as_nobody mkfifo "/tmp/perf-$FIFO_P.map"; plant "/tmp/perf-$FIFO_P.map"
mknod "/tmp/perf-$DEV_P.map" c 1 3 && chown nobody "/tmp/perf-$DEV_P.map"; plant "/tmp/perf-$DEV_P.map"
echo "1000 10 other" > "/tmp/perf-$OTHER_P.map"; chown 65533 "/tmp/perf-$OTHER_P.map"; plant "/tmp/perf-$OTHER_P.map"
# A root-only file under the target's name: what a hard link to a secret looks like.
echo "1000 10 secret" > "/tmp/perf-$ROOTONLY_P.map"; chmod 600 "/tmp/perf-$ROOTONLY_P.map"; plant "/tmp/perf-$ROOTONLY_P.map"
as_nobody ln -s /etc/shadow "$HD/evil.debug"
as_nobody ln -s /etc "$HD/.debug"
as_nobody mkfifo "$HD/fifo.debug"
as_nobody cp /bin/true "$HD/good.debug"
# A container's root (or a writable /usr/lib/debug) may hold these too.
BID=ee$(printf '%08x' $$)c0ffee; FBID=ef$(printf '%08x' $$)c0ffee
mkdir -p /usr/lib/debug/.build-id/ee /usr/lib/debug/.build-id/ef
ln -s /etc/shadow "/usr/lib/debug/.build-id/ee/${BID:2}.debug"; plant "/usr/lib/debug/.build-id/ee/${BID:2}.debug"
mkfifo "/usr/lib/debug/.build-id/ef/${FBID:2}.debug"; plant "/usr/lib/debug/.build-id/ef/${FBID:2}.debug"
cleanup_planted() { for f in "${PLANTED[@]}"; do rm -f "$f"; done; rmdir /usr/lib/debug/.build-id/ee /usr/lib/debug/.build-id/ef 2>/dev/null; }
trap 'cleanup_planted; cleanup' EXIT

# A network target mapping libssl, and two offsets a TLS probe must never get:
# one byte into SSL_read's first instruction, and the start of .rodata.
LIBSSL=$(readlink -f /usr/lib/x86_64-linux-gnu/libssl.so.3)
"${NOBODY[@]}" /usr/bin/python3 -c 'import ssl, time; time.sleep(600)' & TLS_P=$!; CLEANUP_PIDS+=("$TLS_P")
read -r fn_vaddr < <(nm -D --defined-only "$LIBSSL" | awk '$3 ~ /^SSL_read(@|$)/ {print $1; exit}')
[ -n "$fn_vaddr" ] || fail "no SSL_read in $LIBSSL"
# file offset = vaddr - (segment vaddr - segment offset), for the executable PT_LOAD
seg=$(readelf -lW "$LIBSSL" | awk '$1 == "LOAD" && $7 ~ /E/ {print $2, $3; exit}')
read -r seg_off seg_vaddr <<<"$seg"
TLSOFF=$(( 0x$fn_vaddr - seg_vaddr + seg_off + 1 ))
TLSDATA=$(( 0x$(readelf -SW "$LIBSSL" | awk '$2 == ".rodata" {print $5; exit}') ))
for _ in $(seq 100); do grep -q libssl "/proc/$TLS_P/maps" 2>/dev/null && break; sleep 0.1; done
grep -q libssl "/proc/$TLS_P/maps" || fail "the TLS target does not map libssl"

CRUN=$TMP/crun
"$B/ember-collector" --run-dir "$CRUN" --analyzer-uid "$EUID_" --exporter-uid "$XUID" --shards 1 \
  --log-level info >"$TMP/collector.log" 2>&1 &
CP=$!; CLEANUP_PIDS+=("$CP")
for _ in $(seq 100); do [ -S "$CRUN/collector.sock" ] && break; sleep 0.1; done
[ -S "$CRUN/collector.sock" ] || { cat "$TMP/collector.log"; fail "the collector did not come up"; }
SOCK=$CRUN/collector.sock

setpriv --reuid=ember --regid=ember --clear-groups "$PROGS/ctl_hostile" "$SOCK" attack \
  target="$T" fifo="$FIFO_P" dev="$DEV_P" other="$OTHER_P" rootonly="$ROOTONLY_P" bin="$HD/target" \
  buildid="$BID" fifobuildid="$FBID" self="$CP" exporter="$XP" \
  tls="$TLS_P" tlslib="$LIBSSL" tlsoff="$TLSOFF" tlsdata="$TLSDATA" >"$TMP/attack.out" 2>&1
rc=$?
cat "$TMP/attack.out"
[ $rc = 0 ] || { tail -20 "$TMP/collector.log"; fail "the hostile analyzer got $rc thing(s) it must not have (or lost a legitimate one)"; }
setpriv --reuid=ember-exporter --regid=ember --clear-groups "$PROGS/ctl_hostile" "$SOCK" hello >"$TMP/hello.out" 2>&1
rc=$?; cat "$TMP/hello.out"
[ $rc = 0 ] || fail "HELLO from the exporter's uid was served"
kill -0 "$CP" || fail "the collector died"

"$PROGS/ctl_hostile" "$SOCK" stats >"$TMP/stats" || fail "no stats"
cval() { awk -v n="$1" '$1 == n {print $2}' "$TMP/stats"; }
want() { # name expected
  local v; v=$(cval "$1")
  [ "$v" = "$2" ] || { cat "$TMP/stats"; fail "$1 = ${v:-missing}, expected $2"; }
}
# symlinks: perf map, debuglink, .debug/, build id; not regular: FIFO and device perf maps,
# FIFO debuglink and build id; owner: another user's and a root-only perf map.
want fd_broker_refused_symlink 4
want fd_broker_refused_not_regular 4
want fd_broker_refused_owner 2
want fd_broker_refused_not_target 1
want fd_broker_refused_kallsyms 1
want attach_refused_ember_process 2
want attach_refused_kernel_thread 1
want tls_attach_refused 2
want tls_attach_refused_not_instruction_start 1
want tls_attach_refused_not_executable 1
[ "$(cval tls_probe_points)" = 0 ] || fail "TLS probe points attached: $(cval tls_probe_points)"
[ "$(cval ctl_denied_requests)" -ge 1 ] || fail "the exporter's HELLO was not counted as denied"
# served: maps twice (the debuglink's and the TLS target's mappings), the mapped file, the legitimate debuglink
want fd_broker_opens 4
ok "every attack refused and counted by reason; the legitimate debug file beside another user's binary served"
stop_agent || fail "agent exited with an error"
