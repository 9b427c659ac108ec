#!/usr/bin/env bash
# Boots Debian's kernel (the release of linux-headers-amd64) in QEMU TCG with tempo.ko,
# the guest test programs, an emulated CXL Type-3 device and a virtio disk as the SSD,
# and judges the run by the guest's "tempo-vm: N passed, N failed" line.
#
# Usage: tests/vm/run.sh BUILD_DIR TEMPO_KO [GUEST_BINARY...]
#   GUEST_BINARY: extra programs (and their shared libraries) copied to the guest's /bin;
#   the guest init runs those it knows (see init.sh).
# Env: VM_TIMEOUT (seconds, default 900), VM_SMP (default 2).
#   VM_ITEMS="1 2 ...": instead of the suite, boot once per numbered item of issue 18
#   (init-before.sh) and report per item whether its checks failed (make vm-test-before;
#   exit 0 when every item failed); VM_UAPI: the uapi include directory tempo-vmtest is
#   built against (default kmod/include/uapi); VM_HWCHECK: the tempo-hwcheck script.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR TEMPO_KO [GUEST_BINARY...]" >&2; exit 2; }
build=$(mkdir -p "$1" && cd "$1" && pwd)
ko=$2
shift 2
timeout_s=${VM_TIMEOUT:-900}
kver=$(dpkg-query -W -f='${Depends}' linux-headers-amd64 | sed -n 's/^linux-headers-\([^ ,]*\).*/\1/p')
[ -n "$kver" ] || { echo "vm-test: linux-headers-amd64 is not installed" >&2; exit 2; }
start=$(date +%s)

# 1. The guest kernel and its modules, extracted (not installed), once per release.
kroot=$build/kernel/$kver
if [ ! -f "$kroot/.done" ]; then
  echo "vm-test: fetching linux-image-$kver"
  rm -rf "$kroot" && mkdir -p "$kroot" "$build/dl"
  (cd "$build/dl" && apt-get download -q "linux-image-$kver" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
  dpkg-deb -x "$build/dl/linux-image-${kver}_"*.deb "$kroot"
  depmod -b "$kroot" "$kver"
  rm -f "$build/dl/linux-image-${kver}_"*.deb
  touch "$kroot/.done"
fi

# 2. The guest test program (static). Against a uapi without the record stream (the
#    module before issue 18) the groups that need it are left out (vmtest.c).
uapi=${VM_UAPI:-$repo/kmod/include/uapi}
sources=("$here"/*.c)
grep -q TEMPO_IOC_SET_EVENTS "$uapi/linux/tempo.h" ||
  mapfile -t sources < <(printf '%s\n' "${sources[@]}" | grep -vE '/(api|events|fuzz|fanout)\.c$')
mkdir -p "$build/bin"
gcc -std=gnu11 -O2 -static -Wall -Wextra -Werror -I"$uapi" \
  -o "$build/bin/tempo-vmtest" "${sources[@]}" -lpthread

# 3. The initramfs: busybox, init, kernel modules (depmod'ed), tempo.ko, programs + libs.
root=$build/initramfs
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,lib/tempo,etc}
cp /bin/busybox "$root/bin/busybox"
if [ -n "${VM_ITEMS:-}" ]; then cp "$here/init-before.sh" "$root/init"; else cp "$here/init.sh" "$root/init"; fi
chmod +x "$root/init"
cp "$here/lib.sh" "$root/lib/tempo/lib.sh"
cp "$ko" "$root/lib/tempo/tempo.ko"
modules=(virtio_pci virtio_blk cxl_acpi cxl_pci cxl_mem cxl_pmem nd_pmem dax_pmem device_dax kmem
  configfs null_blk)
for m in "${modules[@]}"; do
  modprobe -C /dev/null -d "$kroot" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
done | sort -u | while read -r path; do
  rel=${path#"$kroot"}
  mkdir -p "$root$(dirname "$rel")"
  cp "$path" "$root$rel"
done
cp "$kroot/lib/modules/$kver/"modules.{builtin,builtin.modinfo,order} \
  "$root/lib/modules/$kver/"
depmod -b "$root" "$kver"

# Copies the shared libraries a program or library needs (with the loader) into the guest.
# System libraries keep their paths; the project's own (found through the build tree's
# RUNPATH, which may lie under /tmp, a tmpfs in the guest) go to /usr/lib, a directory the
# loader always searches.
add_libs() {
  local lib dest
  for lib in $(ldd "$1" 2>/dev/null | awk '/=> \// {print $3} /^\t\/lib/ {print $1}'); do
    case "$lib" in
      /lib/* | /lib64/* | /usr/lib/*) dest=$lib ;;
      *) dest=/usr/lib/$(basename "$lib") ;;
    esac
    mkdir -p "$root$(dirname "$dest")"
    cp -L "$lib" "$root$dest"
  done
}
# Copies a program (without its debug information) and the shared libraries it needs into
# the guest's /bin.
add_program() {
  cp -L "$1" "$root/bin/$(basename "$1")"
  strip --strip-debug "$root/bin/$(basename "$1")" 2>/dev/null || true
  add_libs "$1"
}
add_program "$build/bin/tempo-vmtest"
for tool in cxl ndctl daxctl fio; do add_program "$(command -v $tool)"; done
for bin in "$@"; do add_program "$bin"; done
cp "${VM_HWCHECK:-$repo/scripts/hwcheck/tempo-hwcheck}" "$root/bin/tempo-hwcheck"
# The Python binding, when a guest program links libtempo.so: Debian's interpreter, its
# standard library without tests, GUI and site packages, compiled (about 35 MB), the tempokv
# package and the library it loads (/lib/tempo/libtempo.so.0).
libtempo=$(for bin in "$@"; do ldd "$bin" 2>/dev/null | awk '/libtempo\.so/ {print $3}'; done | head -1)
if [ -n "$libtempo" ] && [ -x /usr/bin/python3 ]; then
  add_program /usr/bin/python3
  pylib=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
  mkdir -p "$root$pylib" "$root/lib/tempo/python"
  tar -C "$pylib" -cf - --exclude=test --exclude=tests --exclude=idlelib --exclude=tkinter \
    --exclude=turtledemo --exclude=ensurepip --exclude=lib2to3 --exclude=pydoc_data \
    --exclude=site-packages --exclude=dist-packages --exclude='config-*' . |
    tar -C "$root$pylib" -xf -
  rm -f "$root$pylib"/lib-dynload/_tkinter.*
  for so in "$root$pylib"/lib-dynload/*.so; do add_libs "$so"; done
  cp -r "$repo/libtempo/python/tempokv" "$root/lib/tempo/python/"
  # Compiled here: under TCG the guest would spend tens of seconds compiling at import.
  /usr/bin/python3 -m compileall -q "$root/lib/tempo/python/tempokv" "$root$pylib" >/dev/null || true
  cp -L "$libtempo" "$root/lib/tempo/libtempo.so.0"
  strip --strip-debug "$root/lib/tempo/libtempo.so.0"
  cp "$here/kmod_python.py" "$root/lib/tempo/"
fi
(cd "$root" && find . | cpio -o -H newc --quiet) >"$build/initramfs.cpio"

# 4. The SSD: a disk holding the test pattern. (The CXL memory and label area are made
#    new for every boot, below: labels persist, and a second create-region on old labels
#    fails.)
"$build/bin/tempo-vmtest" mkimage "$build/disk.img" $((64 << 20))

# 5. Boot, bounded by a timeout; the guest powers off when its suite is done.
# boot LOG [KERNEL_ARG...]: one boot, its console in LOG; the result lines shown live.
boot() {
  local log=$1 qemu_rc
  shift
  # The CXL memory and label area are made new for every boot.
  rm -f "$build/cxl-mem.raw" "$build/cxl-lsa.raw"
  truncate -s 256M "$build/cxl-mem.raw"
  truncate -s 256M "$build/cxl-lsa.raw"
  set +e
  timeout --foreground -k 10 "$timeout_s" qemu-system-x86_64 \
    -accel tcg -M q35,cxl=on -m 2G,maxmem=8G,slots=8 -smp "${VM_SMP:-2}" \
    -nographic -no-reboot -monitor none -serial stdio \
    -kernel "$kroot/boot/vmlinuz-$kver" -initrd "$build/initramfs.cpio" \
    -append "console=ttyS0 panic=-1 loglevel=4 rdinit=/init $*" \
    -drive file="$build/disk.img",if=none,id=ssd,format=raw \
    -device virtio-blk-pci,drive=ssd,serial=tempo-ssd \
    -object memory-backend-file,id=cxl-mem0,share=on,mem-path="$build/cxl-mem.raw",size=256M \
    -object memory-backend-file,id=cxl-lsa0,share=on,mem-path="$build/cxl-lsa.raw",size=256M \
    -device pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1 \
    -device cxl-rp,port=0,bus=cxl.1,id=rp0,chassis=0,slot=2 \
    -device cxl-rp,port=1,bus=cxl.1,id=rp1,chassis=0,slot=3 \
    -device cxl-type3,bus=rp0,memdev=cxl-mem0,lsa=cxl-lsa0,id=cxl-pmem0 \
    -M cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G \
    </dev/null 2>&1 | tr -d '\r' | tee "$log" | grep --line-buffered -E '^(PASS|FAIL|SKIP|#|tempo-)'
  qemu_rc=${PIPESTATUS[0]}
  set -e
  return "$qemu_rc"
}

if [ -n "${VM_ITEMS:-}" ]; then
  # One boot per item; an item "fails as expected" when any of its checks failed, it hung,
  # or the guest never reported (an oops that took the kernel down).
  unexpected=0
  for item in $VM_ITEMS; do
    log=$build/console-item$item.log
    echo "vm-test-before: item $item: booting $kver (TCG), log in $log"
    qemu_rc=0
    boot "$log" "tempo.item=$item" || qemu_rc=$?
    line=$(grep -E "^tempo-before: item $item: " "$log" | tail -1 || true)
    fails=$(grep -E '^FAIL ' "$log" | head -3 | cut -c1-200 | paste -sd'|' - || true)
    kernel=$(grep -m1 -E 'BUG:|WARNING:|soft lockup|blocked for more than' "$log" | sed 's/^\[[ 0-9.]*\] //' || true)
    [ -z "$kernel" ] || fails="$fails|kernel: $kernel"
    if [ -z "$line" ]; then
      echo "vm-test-before: item $item: FAILS on the old module as expected: no end (qemu exit $qemu_rc): $fails"
    elif echo "$line" | grep -qE ' [1-9][0-9]* failed|hung'; then
      echo "vm-test-before: item $item: FAILS on the old module as expected:${line#*:} $fails"
    else
      echo "vm-test-before: item $item: unexpectedly passes (${line#*: })"
      unexpected=$((unexpected + 1))
    fi
  done
  echo "vm-test-before: $unexpected of $(echo $VM_ITEMS | wc -w) guest items unexpectedly pass, in $(($(date +%s) - start))s"
  [ "$unexpected" -eq 0 ]
  exit
fi

log=$build/console.log
echo "vm-test: booting $kver (TCG), log in $log"
qemu_rc=0
boot "$log" || qemu_rc=$?
elapsed=$(($(date +%s) - start))

result=$(grep -E '^tempo-vm: [0-9]+ passed, [0-9]+ failed$' "$log" | tail -1 || true)
if [ -z "$result" ]; then
  echo "vm-test: FAILED: no result line from the guest (qemu exit $qemu_rc, ${elapsed}s); last lines:"
  tail -40 "$log"
  exit 1
fi
passed=$(echo "$result" | awk '{print $2}')
failed=$(echo "$result" | awk '{print $4}')
echo "vm-test: $passed passed, $failed failed in ${elapsed}s"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
