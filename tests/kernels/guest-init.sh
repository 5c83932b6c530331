#!/bin/sh
# /init of the kernel matrix's initramfs (tests/kernels/matrix.sh): mounts the
# host's root (9p, read-only) with tmpfs where tests write, the results share, and runs
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
# The host's root itself (read-only), with tmpfs where tests write: no overlay, so that a
# file's device and inode are the same through its path and through a mapping (as on a host).
for o in msize=512000,cache=loose msize=262144,cache=loose msize=131072,cache=loose msize=131072 ""; do
  mount -t 9p -o trans=virtio,version=9p2000.L,ro${o:+,$o} hostroot /newroot 2>/dev/null && break
done
[ -d /newroot/usr ] || { echo "init: cannot mount the host's root over 9p" > /dev/console; poweroff -f; }
mkdir -p /mnt/etc
mount -t tmpfs -o size=256m tmpfs /mnt/etc
cp -a /newroot/etc/. /mnt/etc/
mount --move /mnt/etc /newroot/etc
# /var's directories as the host has them (programs expect theirs: nginx's log and temp dirs), empty.
(cd /newroot/var 2>/dev/null && find . -maxdepth 3 -type d 2>/dev/null) > /vardirs
for d in var root home tmp run mnt; do mount -t tmpfs -o size=60% tmpfs "/newroot/$d"; done
while read -r d; do mkdir -p "/newroot/var/$d"; done < /vardirs
chmod 1777 /newroot/tmp /newroot/var/tmp
mkdir -p /newroot/mnt/results
mount -t 9p -o trans=virtio,version=9p2000.L,msize=131072 results /newroot/mnt/results || mount -t 9p -o trans=virtio,version=9p2000.L results /newroot/mnt/results
chroot /newroot /bin/bash "$root/tests/kernels/guest.sh" "$root" "$feats" "$kern" > /dev/console 2>&1
sync
poweroff -f
