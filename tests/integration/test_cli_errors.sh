#!/usr/bin/env bash
# Bad input gets a clear error naming it, and a non-zero exit.
. "$(dirname "$0")/lib.sh"
[ -x "$EMBER" ] || fail "$EMBER not built"
expect_err() { # expected-exit-code regex-in-stderr cmd...
  local code=$1 re=$2; shift 2
  "$@" >"$TMP/o" 2>"$TMP/e"; local rc=$?
  [ "$rc" = "$code" ] || { cat "$TMP/e"; fail "'$*' exited $rc, expected $code"; }
  grep -qE -e "$re" "$TMP/e" || { cat "$TMP/e"; fail "'$*': stderr does not match /$re/"; }
  echo "ok: $* -> $(head -1 "$TMP/e")"
}
expect_err 2 "unknown command 'frobnicate'" "$EMBER" frobnicate
expect_err 2 "unknown option '--bogus'" "$EMBER" profile --pid 1 --bogus
expect_err 2 "bad --duration .*'10 parsecs'" "$EMBER" profile --pid 1 --duration "10 parsecs"
expect_err 2 "bad --duration .*'-5s'" "$EMBER" profile --pid 1 --duration -5s
expect_err 2 "bad --pid .*'abc'" "$EMBER" profile --pid abc
expect_err 2 "bad --type .*'gpu'" "$EMBER" profile --pid 1 --type gpu
expect_err 2 "--pid is required" "$EMBER" profile --duration 1s
# a pid that does not exist (pid_max is at most 2^22)
expect_err 1 "pid 4194399 does not exist" "$EMBER" profile --pid 4194399 --duration 1s
# a kernel thread (PF_KTHREAD in /proc/PID/stat's flags): said so, before any agent starts
KT=$(for s in /proc/[0-9]*/stat; do
  f=$(sed 's/.*) //' "$s" 2>/dev/null | awk '{print $7}')
  [ -n "$f" ] && (( f & 0x200000 )) && { basename "$(dirname "$s")"; break; }
done)
if [ -n "$KT" ]; then
  expect_err 1 "pid $KT is a kernel thread \\(.*\\): ember profiles user processes" \
    "$EMBER" profile --pid "$KT" --duration 1s --out "$TMP/kt"
  grep -q '^ember: profiling' "$TMP/e" && fail "a kernel thread was profiled"
fi
printf 'profiling:\n  flush_intervall: 5s\n' > "$TMP/bad-key.yaml"
expect_err 2 "profiling.flush_intervall" "$EMBER" run --config "$TMP/bad-key.yaml" --dump-config
printf 'profiling:\n  flush_interval: soon\n' > "$TMP/bad-val.yaml"
expect_err 2 "soon.*profiling.flush_interval" "$EMBER" run --config "$TMP/bad-val.yaml" --dump-config
expect_err 2 "ROVER_PROFILING_FLUSH_INTERVAL" env ROVER_PROFILING_FLUSH_INTERVAL=never "$EMBER" run --dump-config
expect_err 2 "no.such.key" "$EMBER" run --set no.such.key=1 --dump-config
expect_err 2 "ember.rest_api.ssl_auth needs ember.rest_api.private_key, cert_file and ca_file" "$EMBER" run --set ember.rest_api.enabled=true --set ember.rest_api.ssl_auth=true --dump-config
"$EMBER" --help | grep -q "profile" || fail "--help does not list commands"
"$EMBER" profile --help | grep -q -- "--duration" || fail "profile --help does not describe --duration"
"$EMBER" run --help-config | grep -q "profiling.task.on_cpu.dump_period" || fail "--help-config misses a key"
"$EMBER" run --dump-config > "$TMP/dump.yaml" || fail "--dump-config failed"
"$EMBER" run --config "$TMP/dump.yaml" --dump-config > "$TMP/dump2.yaml" || fail "the dump does not load back"
cmp -s "$TMP/dump.yaml" "$TMP/dump2.yaml" || fail "dump -> load -> dump is not stable"
ok "--help, --help-config and a stable --dump-config"
# A Rover user only points core.backend.addr (or ROVER_BACKEND_ADDR) at the OAP.
"$EMBER" run --dump-config 2>/dev/null | grep -q "backends: \[file, prometheus\]$" || fail "default backends are not file + prometheus"
"$EMBER" run --set core.backend.addr=127.0.0.1:11800 --dump-config 2>/dev/null | grep -q "backends: \[file, prometheus, skywalking\]" \
  || fail "setting core.backend.addr does not enable the skywalking backend"
ROVER_BACKEND_ADDR=127.0.0.1:11800 "$EMBER" run --dump-config 2>/dev/null | grep -q "skywalking" \
  || fail "ROVER_BACKEND_ADDR does not enable the skywalking backend"
ok "core.backend.addr / ROVER_BACKEND_ADDR alone switch the SkyWalking backend on"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  "$PROGS/oncpu_chain" 5 & W=$!; CLEANUP_PIDS+=("$W")
  expect_err 1 "must run as root" setpriv --reuid=65534 --regid=65534 --clear-groups "$EMBER" profile --pid "$W" --duration 1s --out "$TMP/x"
  expect_err 1 "must run as root" setpriv --reuid=65534 --regid=65534 --clear-groups "$EMBER" run
  expect_err 1 "kernel has no BTF" env EMBER_BTF_PATH=/nonexistent/vmlinux "$EMBER" profile --pid "$W" --duration 1s --out "$TMP/x"
  # --out that cannot take the files: refused before the profile runs, naming what is in the way.
  mkdir -p "$TMP/taken/oncpu.svg"
  expect_err 1 "cannot write $TMP/taken/oncpu.svg in the output directory: a directory is there" \
    "$EMBER" profile --pid "$W" --duration 1s --out "$TMP/taken"
  grep -q '^ember: profiling' "$TMP/e" && fail "the profile ran before --out was found unusable"
  mkdir -p "$TMP/ro"
  trap 'umount "$TMP/ro" 2>/dev/null; cleanup' EXIT
  if mount -t tmpfs -o ro,size=64k tmpfs "$TMP/ro" 2>/dev/null; then
    expect_err 1 "cannot write into the output directory '$TMP/ro': Read-only file system" \
      "$EMBER" profile --pid "$W" --duration 1s --out "$TMP/ro"
    grep -q '^ember: profiling' "$TMP/e" && fail "the profile ran before --out was found unusable"
    umount "$TMP/ro"
  fi
fi
