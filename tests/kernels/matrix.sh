#!/usr/bin/env bash
# The kernel matrix: boots Debian's own kernel packages under qemu (software
# emulation: no KVM needed) with this machine's root, read-only, as the guest's
# root (9p, with a tmpfs overlay for writes), and runs ember's feature scenarios
# there (tests/kernels/guest.sh: the integration tests, built from this checkout),
# at each kernel's default sysctls.  Prints a feature x kernel table.
#
#   tests/kernels/matrix.sh [--kernels 6.1,6.12,5.10] [--features LIST] [--out DIR]
#
# Kernel lines: 6.1 (bookworm), 6.12 (bookworm-backports), 5.10 (bullseye), each
# the newest linux-image-<ver>-amd64 of its suite on deb.debian.org, cached in
# /var/cache/ember-kernels.  Features: see tests/kernels/guest.sh (default: all).
# Needs root and the checkout built (make programs tests).  Exit status: 0 when
# every scenario passed or was an expected refusal (see guest.sh), 1 otherwise.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${EMBER_KERNEL_CACHE:-/var/cache/ember-kernels}
MIRROR=${EMBER_DEBIAN_MIRROR:-http://deb.debian.org/debian}
kernels=6.1,6.12,5.10; features=""; out=""; script=""; mem=${EMBER_VM_MEM:-3072}; cpus=${EMBER_VM_CPUS:-2}
timeout_s=${EMBER_VM_TIMEOUT:-3600}
# Multi-threaded emulation by default; EMBER_VM_ICOUNT=1 derives guest time from the instructions
# run instead (one host thread, much slower).  Either way timers fire late under emulation: the
# guest runs the tests with EMBER_EMULATED=1 (their documented timing slack; counts stay exact).
icount=${EMBER_VM_ICOUNT:-0}
while [ $# -gt 0 ]; do
  case "$1" in
    --kernels) kernels=$2; shift ;;
    --features) features=$2; shift ;;
    --out) out=$2; shift ;;
    --script) script=$2; features=script; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "matrix: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" = 0 ] || { echo "matrix: needs root" >&2; exit 2; }
[ -x "$ROOT/build/ember" ] || { echo "matrix: build the checkout first (make programs tests)" >&2; exit 2; }
out=${out:-$ROOT/build/kernels}
mkdir -p "$CACHE" "$out"

# What the matrix needs beyond the suite's dependencies.
need=""
for p in qemu-system-x86 busybox-static xz-utils; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need="$need $p"
done
if [ -n "$need" ]; then
  echo "matrix: installing$need" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null
fi

suite_of() { case "$1" in 6.1) echo bookworm ;; 6.12) echo bookworm-backports ;; 5.10) echo bullseye ;;
  *) echo "matrix: unknown kernel line $1 (6.1, 6.12, 5.10)" >&2; return 1 ;; esac; }

# The newest linux-image-<line>.*-amd64 package of the suite: "name filename".  Debian 12's own
# line comes from this machine's apt sources (its newest, security updates included); the others
# from the mirror's suite index.
pick_package() { # line suite
  if [ "$2" = bookworm ]; then
    local pkg
    pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-6\.1\./ {print $2; exit}')
    if [ -n "$pkg" ]; then echo "$pkg apt"; return; fi
  fi
  local idx="$CACHE/Packages-$2"
  if [ ! -s "$idx" ] || [ -n "$(find "$idx" -mmin +1440)" ]; then
    curl -fsS "$MIRROR/dists/$2/main/binary-amd64/Packages.xz" | xz -d > "$idx.tmp" && mv "$idx.tmp" "$idx"
  fi
  python3 - "$idx" "$1" <<'PY'
import re, sys
line = re.escape(sys.argv[2])
want = re.compile(r"^linux-image-" + line + r"\.[0-9]+(-[0-9]+)?(\+[a-z0-9]+)?-amd64$")
best = None
for stanza in open(sys.argv[1]).read().split("\n\n"):
    f = dict(l.split(": ", 1) for l in stanza.splitlines() if ": " in l and not l.startswith(" "))
    if want.match(f.get("Package", "")):
        key = [int(x) for x in re.findall(r"\d+", f["Version"])]
        if best is None or key > best[0]:
            best = (key, f["Package"], f["Filename"])
if best:
    print(best[1], best[2])
PY
}

# Unpacks the kernel package once: $CACHE/<pkg>/{vmlinuz,initrd.img,release}.
prepare_kernel() { # line -> prints the directory
  local suite pkg file dir rel
  suite=$(suite_of "$1")
  read -r pkg file < <(pick_package "$1" "$suite")
  [ -n "$pkg" ] || { echo "matrix: no $1 kernel in $suite" >&2; return 1; }
  dir=$CACHE/$pkg
  if [ ! -s "$dir/initrd.img" ]; then
    rm -rf "$dir"; mkdir -p "$dir"
    echo "matrix: fetching $pkg ($suite)" >&2
    if [ "$file" = apt ]; then
      (cd "$dir" && apt-get download -q "$pkg" >/dev/null 2>&1 && mv ./*.deb pkg.deb)
    else
      curl -fsS -o "$dir/pkg.deb" "$MIRROR/$file"
    fi
    dpkg-deb -x "$dir/pkg.deb" "$dir/x"
    rel=$(ls "$dir/x/lib/modules")
    cp "$dir/x/boot/vmlinuz-$rel" "$dir/vmlinuz"
    echo "$rel" > "$dir/release"
    build_initrd "$dir" "$rel"
    rm -rf "$dir/x" "$dir/pkg.deb"
  fi
  echo "$dir"
}

# An initramfs: busybox, the modules that mount the host's root over 9p with an
# overlay, and tests/kernels/guest-init.sh as /init.
build_initrd() { # dir release
  local d=$1 rel=$2 ir=$1/initrd mods m
  rm -rf "$ir"; mkdir -p "$ir"/{bin,dev,proc,sys,mnt,newroot,lib/modules/"$rel"}
  cp /bin/busybox "$ir/bin/busybox"
  for a in sh mount umount mkdir insmod modprobe depmod switch_root sleep cat echo poweroff ls chroot; do
    ln -s busybox "$ir/bin/$a"; done
  mods=$(cd "$d/x/lib/modules/$rel" && find kernel -name '*.ko*')
  (cd "$d/x/lib/modules/$rel" && cp --parents $(printf '%s\n' $mods | grep -E '/(virtio|virtio_ring|virtio_pci|virtio_pci_legacy_dev|virtio_pci_modern_dev|9pnet|9pnet_virtio|9p|netfs|fscache|overlay)\.ko' ) "$ir/lib/modules/$rel/")
  find "$ir/lib/modules" -name '*.ko.xz' -exec xz -d {} +
  cp "$d/x/lib/modules/$rel/modules.order" "$d/x/lib/modules/$rel/modules.builtin" "$ir/lib/modules/$rel/" 2>/dev/null || true
  busybox depmod -b "$ir" "$rel"
  cp "$ROOT/tests/kernels/guest-init.sh" "$ir/init"; chmod 755 "$ir/init"
  (cd "$ir" && find . | busybox cpio -o -H newc 2>/dev/null) | gzip -1 > "$d/initrd.img"
  rm -rf "$ir"
}

run_kernel() { # line
  local dir rel log res
  dir=$(prepare_kernel "$1") || return 1
  rel=$(cat "$dir/release")
  res=$out/$1; rm -rf "$res"; mkdir -p "$res"; chmod 777 "$res"
  [ -n "$script" ] && cp "$script" "$res/script.sh"
  log=$res/console.log
  echo "matrix: booting $rel (features: ${features:-all})" >&2
  local accel=(-accel tcg,thread=multi)
  [ "$icount" = 1 ] && accel=(-accel tcg -icount shift=auto,sleep=on)
  timeout "$timeout_s" qemu-system-x86_64 -machine q35 -cpu max "${accel[@]}" -smp "$cpus" -m "$mem" -nographic -no-reboot \
    -kernel "$dir/vmlinuz" -initrd "$dir/initrd.img" \
    -append "console=ttyS0 panic=-1 quiet ember.root=$ROOT ember.features=${features:-all} ember.kernel=$1" \
    -virtfs "local,path=/,mount_tag=hostroot,security_model=passthrough,readonly=on,multidevs=remap" \
    -virtfs "local,path=$res,mount_tag=results,security_model=passthrough" \
    -netdev user,id=n0 -device virtio-net-pci,netdev=n0 >"$log" 2>&1 || true
  [ -s "$res/results" ] || echo "boot FAIL the guest wrote no results (see $log)" > "$res/results"
}

IFS=, read -r -a klist <<<"$kernels"
for k in "${klist[@]}"; do suite_of "$k" >/dev/null; done
for k in "${klist[@]}"; do
  run_kernel "$k" || { mkdir -p "$out/$k"; echo "boot FAIL cannot prepare the kernel" > "$out/$k/results"; }
done

# The table: one row per feature, one column per kernel.
python3 - "$out" "${klist[@]}" <<'PY'
import os, sys
out, kernels = sys.argv[1], sys.argv[2:]
rows, order, bad = {}, [], False
for k in kernels:
    path = os.path.join(out, k, "results")
    for line in open(path) if os.path.exists(path) else []:
        parts = line.rstrip("\n").split(" ", 2)
        if len(parts) < 2:
            continue
        feat, verdict, why = parts[0], parts[1], parts[2] if len(parts) > 2 else ""
        if feat not in order:
            order.append(feat)
        rows.setdefault(feat, {})[k] = (verdict, why)
        bad |= verdict == "FAIL"
print("| feature | " + " | ".join(kernels) + " |")
print("|---|" + "---|" * len(kernels))
for f in order:
    cells = []
    for k in kernels:
        v, why = rows[f].get(k, ("-", ""))
        cells.append(v.lower() + (f" ({why})" if why and v != "PASS" else ""))
    print(f"| {f} | " + " | ".join(cells) + " |")
for k in kernels:
    path = os.path.join(out, k, "results")
    print(f"{k}: {path}")
sys.exit(1 if bad else 0)
PY
