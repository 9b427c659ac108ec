#!/usr/bin/env bash
# The kernel half of the eBPF tools, for real: boots Debian's kernel (the release of
# linux-headers-amd64, as `make vm-test` does) in QEMU TCG with tempo.ko on a virtio disk,
# runs tempostat and tempomargin on the tempo:* tracepoints while kstage_driver issues a
# known set of STAGE batches, pins and faults, and checks that the tools counted exactly
# what the driver issued and what the module's own TEMPO_IOC_STATS say.
#
# Usage: tests/ebpf/vm_kstage.sh EBPF_BUILD_DIR TEMPO_KO [BATCHES]
#   (make test-ebpf-vm builds both into build-ebpf/; the guest kernel is reused from build-vm/)
# Env: VM_BPFTRACE=1 also runs ebpf/bpftrace/tempo_kstage.bt in the guest (its LLVM makes
#   the initramfs about 200 MB larger) and checks its counts the same way.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
[ $# -ge 2 ] || { echo "usage: $0 EBPF_BUILD_DIR TEMPO_KO [BATCHES]" >&2; exit 2; }
build=$(cd "$1" && pwd)
ko=$2
batches=${3:-24}
vm=$build/vm
kver=$(dpkg-query -W -f='${Depends}' linux-headers-amd64 | sed -n 's/^linux-headers-\([^ ,]*\).*/\1/p')
[ -n "$kver" ] || { echo "vm_kstage: linux-headers-amd64 is not installed (scripts/deps.sh kmod)" >&2; exit 2; }

# 1. The guest kernel: the one `make vm-test` extracted, else our own copy.
kroot=$repo/build-vm/kernel/$kver
if [ ! -f "$kroot/.done" ]; then
  kroot=$vm/kernel/$kver
  if [ ! -f "$kroot/.done" ]; then
    rm -rf "$kroot" && mkdir -p "$kroot" "$vm/dl"
    (cd "$vm/dl" && apt-get download -q "linux-image-$kver")
    dpkg-deb -x "$vm/dl/linux-image-${kver}_"*.deb "$kroot"
    depmod -b "$kroot" "$kver"
    rm -f "$vm/dl/linux-image-${kver}_"*.deb
    touch "$kroot/.done"
  fi
fi

# 2. The initramfs: busybox, tempo.ko with the virtio modules, the tools and the driver.
gcc -std=gnu11 -O2 -static -Wall -Wextra -Werror -I"$repo/kmod/include/uapi" \
  -o "$build/kstage-driver" "$here/kstage_driver.c"
root=$vm/initramfs
rm -rf "$root"
mkdir -p "$root"/{bin,dev,proc,sys,tmp,lib/tempo}
cp /bin/busybox "$root/bin/busybox"
cp "$ko" "$root/lib/tempo/tempo.ko"
for m in virtio_pci virtio_blk; do
  modprobe -d "$kroot" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
done | sort -u | while read -r path; do
  rel=${path#"$kroot"}
  mkdir -p "$root$(dirname "$rel")"
  cp "$path" "$root$rel"
done
cp "$kroot/lib/modules/$kver/modules.builtin" "$kroot/lib/modules/$kver/modules.order" \
  "$root/lib/modules/$kver/"
depmod -b "$root" "$kver"
bins=("$build/tempostat" "$build/tempomargin" "$build/kstage-driver")
bt=false
if [ "${VM_BPFTRACE:-0}" = 1 ]; then
  bt=true
  bins+=("$(command -v bpftrace)")
  cp "$repo/ebpf/bpftrace/tempo_kstage.bt" "$root/lib/tempo/"
fi
for bin in "${bins[@]}"; do
  cp -L "$bin" "$root/bin/"
  for lib in $(ldd "$bin" 2>/dev/null | awk '/=> \// {print $3} /^\t\/lib/ {print $1}'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
done
cat >"$root/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tracefs tracefs /sys/kernel/tracing
mount -t tmpfs tmpfs /tmp
dmesg -n 1
modprobe virtio_pci
modprobe virtio_blk
for i in 1 2 3 4 5 6 7 8 9 10; do [ -b /dev/vda ] && break; sleep 0.2; done
insmod /lib/tempo/tempo.ko backing=/dev/vda fast_mb=4 extent_kb=64 pin_limit_mb=2 || echo "EBPF-VM insmod failed"
tempostat -j 1 >/tmp/stat.json 2>/tmp/stat.err &
stat=\$!
tempomargin -j >/tmp/margin.json 2>/tmp/margin.err &
margin=\$!
bt=
if $bt; then
  bpftrace /lib/tempo/tempo_kstage.bt >/tmp/bt.txt 2>/tmp/bt.err &
  bt=\$!
fi
for i in \$(seq 600); do
  grep -q '^tempostat: tracing' /tmp/stat.err && grep -q '^tempomargin: tracing' /tmp/margin.err &&
    { [ -z "\$bt" ] || grep -q '^Tracing tempo.ko' /tmp/bt.txt; } && break
  sleep 0.1
done
# bpftrace prints its banner from BEGIN: give the attachment a moment more.
[ -z "\$bt" ] || sleep 3
kstage-driver /dev/tempo0 $batches >/tmp/driver.json || echo "EBPF-VM driver failed"
sleep 0.5
kill -INT \$stat \$margin \$bt
wait \$stat \$margin \$bt
[ -z "\$bt" ] || sed 's/^/EBPF-VM-BT /' /tmp/bt.txt
for f in driver stat margin; do sed "s/^/EBPF-VM \$f /" /tmp/\$f.json; done
sed 's/^/EBPF-VM-ERR /' /tmp/stat.err /tmp/margin.err
echo "EBPF-VM done"
poweroff -f
INIT
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet) >"$vm/initramfs.cpio"
truncate -s 64M "$vm/disk.img"

# 3. Boot; the guest prints its results with an EBPF-VM prefix and powers off.
log=$vm/console.log
echo "vm_kstage: booting $kver (TCG), log in $log"
set +e
timeout --foreground -k 10 "${VM_TIMEOUT:-600}" qemu-system-x86_64 \
  -accel tcg -M q35 -m 1G -smp "${VM_SMP:-2}" -nographic -no-reboot -monitor none \
  -serial stdio -kernel "$kroot/boot/vmlinuz-$kver" -initrd "$vm/initramfs.cpio" \
  -append "console=ttyS0 panic=-1 loglevel=4 rdinit=/init" \
  -drive file="$vm/disk.img",if=none,id=ssd,format=raw -device virtio-blk-pci,drive=ssd \
  </dev/null 2>&1 | tr -d '\r' >"$log"
set -e
grep -q '^EBPF-VM done' "$log" || { echo "vm_kstage: FAILED: the guest did not finish"; tail -30 "$log"; exit 1; }
grep '^EBPF-VM-ERR' "$log" || true
python3 "$here/vm_check.py" "$log"
