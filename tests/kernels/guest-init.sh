#!/bin/sh
# /init of the kernel matrix's initramfs (tests/kernels/matrix.sh): mounts the
# host's root (9p, read-only) under a tmpfs overlay, the results share, and runs
# tests/kernels/guest.sh of the checkout in it; then powers off.
PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in virtio_pci 9pnet_virtio 9p overlay; do modprobe "$m" 2>/dev/null || echo "init: no module $m"; done
root=""; feats=all; kern=""
for w in $(cat /proc/cmdline); do
  case "$w" in
    ember.root=*) root=${w#ember.root=} ;;
    ember.features=*) feats=${w#ember.features=} ;;
    ember.kernel=*) kern=${w#ember.kernel=} ;;
  esac
done
mkdir -p /mnt/lower /mnt/rw
# A large msize (what the kernel takes: 5.10's virtio transport tops out lower), page cache on.
for o in msize=512000,cache=loose msize=262144,cache=loose msize=131072,cache=loose msize=131072 ""; do
  mount -t 9p -o trans=virtio,version=9p2000.L,ro${o:+,$o} hostroot /mnt/lower 2>/dev/null && break
done
mount -t tmpfs -o size=75% tmpfs /mnt/rw
mkdir -p /mnt/rw/upper /mnt/rw/work
if ! mount -t overlay overlay -o lowerdir=/mnt/lower,upperdir=/mnt/rw/upper,workdir=/mnt/rw/work /newroot; then
  echo "init: overlay over 9p failed" > /dev/console
  poweroff -f
fi
mkdir -p /newroot/mnt/results
mount -t 9p -o trans=virtio,version=9p2000.L,msize=131072 results /newroot/mnt/results || mount -t 9p -o trans=virtio,version=9p2000.L results /newroot/mnt/results
chroot /newroot /bin/bash "$root/tests/kernels/guest.sh" "$root" "$feats" "$kern" > /dev/console 2>&1
sync
poweroff -f
