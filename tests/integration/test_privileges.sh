#!/usr/bin/env bash
# The analyzer runs as the unprivileged user, the exporter as a user of its own
# (in the same group), both with no capabilities; the exporter cannot signal
# the analyzer; the collector keeps exactly the documented set (common/privs.h)
# with no_new_privs.
. "$(dirname "$0")/lib.sh"
need_bpf
start_agent
C=$(child_pid ember-collector); A=$(child_pid ember-analyzer); X=$(child_pid ember-exporter)
[ -n "$C" ] && [ -n "$A" ] && [ -n "$X" ] || { cat "$TMP/agent.log"; fail "missing processes: collector=$C analyzer=$A exporter=$X"; }
st() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
for p in "$A" "$X"; do
  name=$(cat /proc/$p/comm)
  uid=$(st "$p" Uid); eff=$(st "$p" CapEff); prm=$(st "$p" CapPrm); bnd_nnp=$(st "$p" NoNewPrivs)
  [ "$uid" != 0 ] || fail "$name runs as uid 0"
  [ "$eff" = 0000000000000000 ] || fail "$name has effective capabilities $eff"
  [ "$prm" = 0000000000000000 ] || fail "$name has permitted capabilities $prm"
  [ "$bnd_nnp" = 1 ] || fail "$name does not have no_new_privs"
  want_user=ember; [ "$p" = "$X" ] && want_user=ember-exporter
  [ "$(getent passwd "$uid" | cut -d: -f1)" = "$want_user" ] || fail "$name runs as uid $uid, not the $want_user user"
  ok "$name: uid $uid ($(getent passwd "$uid" | cut -d: -f1)), CapEff $eff, NoNewPrivs 1"
done
# The exporter talks to the network: owning it must not give the analyzers' shard or signals.
xuid=$(st "$X" Uid); auid=$(st "$A" Uid)
[ "$xuid" != "$auid" ] || fail "the exporter and the analyzer share uid $xuid"
if setpriv --reuid="$xuid" --regid=ember --clear-groups kill -0 "$A" 2>/dev/null; then
  fail "the exporter's uid may signal the analyzer"
fi
setpriv --reuid="$auid" --regid=ember --clear-groups kill -0 "$A" || fail "setpriv kill -0 as the analyzer's uid failed (the check above proves nothing)"
ok "the exporter's uid $xuid cannot signal the analyzer (uid $auid)"
# CAP_SYS_PTRACE 19, CAP_SYSLOG 34, CAP_PERFMON 38, CAP_BPF 39, CAP_CHECKPOINT_RESTORE 40
want=$(printf '%016x' $(( (1<<19) | (1<<34) | (1<<38) | (1<<39) | (1<<40) )))
eff=$(st "$C" CapEff); prm=$(st "$C" CapPrm); bnd=$(st "$C" CapBnd)
[ "$eff" = "$want" ] || fail "collector CapEff $eff, expected $want"
[ "$prm" = "$want" ] || fail "collector CapPrm $prm, expected $want"
[ "$bnd" = "$want" ] || fail "collector CapBnd $bnd, expected $want"
[ "$(st "$C" NoNewPrivs)" = 1 ] || fail "collector does not have no_new_privs"
ok "collector: CapEff=CapPrm=CapBnd=$want (bpf, perfmon, sys_ptrace, syslog, checkpoint_restore), NoNewPrivs 1"
# The privileged process maps only the libraries it needs: no parser, no
# network or message library.
for l in $(awk '$6 ~ /\.so/ { n = $6; sub(/.*\//, "", n); print n }' "/proc/$C/maps" | sort -u); do
  case "$l" in
    libbpf.so.*|libelf*.so*|libz.so.*|liburing.so.*|libcap.so.*|libc.so.*|ld-linux*) ;;
    *) fail "the collector maps $l" ;;
  esac
done
ok "collector maps only libbpf, libelf, libz, liburing, libcap, libc"
for p in "$A" "$X"; do grep -q libjemalloc "/proc/$p/maps" || fail "$(cat /proc/$p/comm) does not run on jemalloc"; done
ok "analyzer and exporter run on jemalloc"
# Only the analyzer's uid gets the full control protocol: a root client may ask for stats only.
"$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats" || fail "ember stats failed"
grep -q "collector .*ctl_requests" "$TMP/stats" || fail "no collector stats"
stop_agent || fail "agent exited with an error"
