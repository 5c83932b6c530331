#!/usr/bin/env bash
# Inside a kernel-matrix guest (tests/kernels/matrix.sh), as root, at the
# kernel's default sysctls: runs one integration test per feature and writes
# "<feature> PASS|FAIL|SKIP <why>" lines to /mnt/results/results, each test's
# output to /mnt/results/<feature>.log.
#   guest.sh CHECKOUT FEATURES(all|comma list) KERNEL_LINE
ROOT=$1; FEATS=$2; KLINE=$3
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8
mount -t proc proc /proc || echo "guest: cannot mount /proc"
mount -t sysfs sys /sys || echo "guest: cannot mount /sys"
mount -t devtmpfs dev /dev || echo "guest: cannot mount /dev"
mkdir -p /dev/pts /dev/shm; mount -t devpts devpts /dev/pts; mount -t tmpfs tmpfs /dev/shm
# what udev would add: bash's process substitution needs /dev/fd
ln -sfn /proc/self/fd /dev/fd; ln -sfn /proc/self/fd/0 /dev/stdin; ln -sfn /proc/self/fd/1 /dev/stdout
ln -sfn /proc/self/fd/2 /dev/stderr
chmod 1777 /tmp /dev/shm
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null || { mkdir -p /sys/fs/cgroup/unified; mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified; }
ip link set lo up || echo "guest: no loopback"
hostname ember-guest 2>/dev/null || true
R=/mnt/results
: > "$R/results"
echo "kernel $(uname -r) paranoid=$(cat /proc/sys/kernel/perf_event_paranoid) unpriv_bpf=$(cat /proc/sys/kernel/unprivileged_bpf_disabled)" > "$R/facts"
export EMBER_ROOT=$ROOT EMBER_BUILD=$ROOT/build SHARED=$ROOT/../shared HOME=/root
# Software emulation: timers fire late and everything takes longer (the tests' documented slack).
export EMBER_EMULATED=1 EMBER_TIME_SCALE=${EMBER_TIME_SCALE:-6}
echo "guest: ready on $(uname -r); root $ROOT; features $FEATS"
declare -A TEST=(
  [startup]=test_privileges
  [oncpu]=test_oncpu_profile
  [offcpu]=test_offcpu_profile
  [mem]=test_mem_profile
  [network]=test_net_http
  [network-raw_tp]=test_net_raw_tp
  [tls]=test_tls_openssl
  [policy]=test_continuous_default
  [container]=test_container_overlay
  [threads]=test_threads
  [python]=test_python_frames
)
ORDER="startup oncpu offcpu mem network network-raw_tp tls policy container threads python"
[ "$FEATS" = all ] && FEATS=${ORDER// /,}
IFS=, read -r -a want <<<"$FEATS"
for f in "${want[@]}"; do
  if [ "$f" = script ]; then  # matrix.sh --script FILE: a debugging aid
    timeout "${EMBER_FEATURE_TIMEOUT:-900}" bash "$R/script.sh" > "$R/script.log" 2>&1
    echo "script DONE rc=$?" >> "$R/results"; continue
  fi
  t=${TEST[$f]:-}
  if [ -z "$t" ]; then echo "$f FAIL unknown feature" >> "$R/results"; continue; fi
  echo "guest: $f ($t) on $(uname -r)"
  start=$SECONDS
  timeout "${EMBER_FEATURE_TIMEOUT:-900}" bash "$ROOT/tests/integration/$t.sh" > "$R/$f.log" 2>&1
  rc=$?
  why=$(grep -E '^(FAIL|SKIP|ok):' "$R/$f.log" | tail -1 | cut -c1-160)
  case $rc in
    0) echo "$f PASS $((SECONDS - start))s ${why#ok: }" >> "$R/results" ;;
    77) echo "$f SKIP ${why#SKIP: }" >> "$R/results" ;;
    *) echo "$f FAIL rc=$rc ${why#FAIL: }" >> "$R/results" ;;
  esac
  tail -3 "$R/$f.log"
done
echo "guest: done"
