#!/usr/bin/env bash
# A containerised process of another user: its program lives in an overlay
# (lower and upper layers on two different filesystems, as Docker's overlay2
# has them when /var/lib/docker is not the root filesystem) and runs as
# nobody, whose /proc/PID/map_files the collector may not open.  Before Linux
# 6.8 the maps line names the lower layer's device and inode while the path
# through the overlay gives the overlay's: the broker finds the file in the
# layers (mountinfo) and serves it only as that inode.  Its off-CPU stacks are
# named (symbols from the file) and the program's own frames are all there;
# the broker refused nothing as stale.
. "$(dirname "$0")/lib.sh"
need_bpf
command -v setpriv >/dev/null || skip "setpriv missing (util-linux)"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || true
grep -qw overlay /proc/filesystems || fail "this kernel has no overlay filesystem"
C=$TMP/ctr; mkdir -p "$C/lower" "$C/upperfs" "$C/merged"
# Two filesystems: the image's layer and the container's writable one.
mount -t tmpfs -o size=64m,mode=755 ember-lower "$C/lower" || fail "cannot mount a tmpfs"
mount -t tmpfs -o size=16m,mode=755 ember-upper "$C/upperfs"
cleanup_mounts() { umount "$C/merged" 2>/dev/null; umount "$C/upperfs" "$C/lower" 2>/dev/null; }
trap 'cleanup_mounts; cleanup' EXIT
mkdir -p "$C/lower/app" "$C/upperfs/upper" "$C/upperfs/work"
cp "$PROGS/offcpu_wait" "$C/lower/app/offcpu_wait"
mount -t overlay ember-ctr -o "lowerdir=$C/lower,upperdir=$C/upperfs/upper,workdir=$C/upperfs/work" "$C/merged" ||
  fail "cannot mount the overlay"
chmod 755 "$C" "$C/merged"
start_agent
EMBER_TEST_GO=$TMP/go setpriv --reuid=nobody --regid=nogroup --clear-groups "$C/merged/app/offcpu_wait" 3 \
  > "$TMP/w.out" & W=$!; CLEANUP_PIDS+=("$W")
for _ in $(seq 50); do grep -q offcpu_wait "/proc/$W/maps" 2>/dev/null && break; sleep 0.1; done
line=$(awk '$6 ~ /offcpu_wait$/ && $2 ~ /x/ {print; exit}' "/proc/$W/maps")
echo "maps: $line"
echo "file through the overlay: $(stat -c 'dev %d ino %i' "$C/merged/app/offcpu_wait"), in the lower layer: $(stat -c 'dev %d ino %i' "$C/lower/app/offcpu_wait")"
profile_gated --config "$TMP/ember.yaml" --pid "$W" --type offcpu --duration 30s --out "$TMP/prof"
wait "$W"
"$EMBER" stats --config "$TMP/ember.yaml" > "$TMP/stats" || fail "ember stats failed"
stat_of() { awk -v w="$1" -v k="$2" '$1 == w && $2 == k {print $3; exit}' "$TMP/stats"; }
F=$TMP/prof/offcpu.folded
[ -s "$F" ] || fail "no off-CPU profile"
# The program's own functions are named on both of its blocking paths.
for chain in 'waiter;wait_on_pipe;read_pipe' 'main;sleeper'; do
  n=$(folded_sum "$F" "^offcpu_wait;(.*;)?$chain;")
  [ "$n" -gt 0 ] || { head -5 "$F"; fail "no stack through $chain: the program's frames are not named"; }
done
unnamed=$(folded_sum "$F" 'offcpu_wait\+0x')
echo "blocked time in frames named by symbol: $(folded_total "$F") us; in unnamed offcpu_wait+0x frames: $unnamed us"
[ "$unnamed" = 0 ] || fail "frames of the program stayed unnamed ($unnamed us)"
[ "$(stat_of collector fd_broker_refused_stale)" = 0 ] || fail "the broker refused the program's file as stale"
ok "a process of nobody in an overlay on two filesystems: its frames named, nothing refused as stale (kernel $(uname -r))"
stop_agent || fail "agent exited with an error"
