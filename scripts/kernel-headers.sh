#!/usr/bin/env bash
# Extracts (never installs) the build headers of the kernel a Debian meta package names into
# DIR and prints the tree to pass to `make -C`. The headers package depends on that kernel's
# image: installing it would put a kernel on the host (and run mkinitramfs, minutes under
# load) only to compile-check tempo.ko.
# Usage: scripts/kernel-headers.sh META_PACKAGE DIR   (e.g. linux-headers-6.12-amd64 build-kmod-compat)
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 META_PACKAGE DIR" >&2; exit 2; }
meta=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)
depends() { apt-cache depends "$1" 2>/dev/null | sed -n 's/^ *Depends: //p'; }
kver=$(depends "$meta" | sed -n 's/^linux-headers-//p' | head -1)
if [ -z "$kver" ]; then
  apt-get update -qq >/dev/null 2>&1 || true
  kver=$(depends "$meta" | sed -n 's/^linux-headers-//p' | head -1)
fi
[ -n "$kver" ] || { echo "kernel-headers: $meta is not known to apt" >&2; exit 1; }
tree=$dir/root/usr/src/linux-headers-$kver
if [ ! -f "$dir/.done-$kver" ]; then
  pkgs=("linux-headers-$kver")
  mapfile -t -O 1 pkgs < <(depends "linux-headers-$kver" | grep -E '^(linux-headers-.*-common|linux-kbuild-.*)$')
  rm -rf "$dir/root" "$dir/dl" && mkdir -p "$dir/root" "$dir/dl"
  (cd "$dir/dl" && apt-get download -qq "${pkgs[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed') >&2 || true
  for deb in "$dir"/dl/*.deb; do dpkg-deb -x "$deb" "$dir/root"; done
  rm -rf "$dir/dl"
  [ -f "$tree/Makefile" ] || { echo "kernel-headers: no headers tree for $kver after download" >&2; exit 1; }
  # The arch tree includes the common one by absolute path: point it into DIR.
  sed -i "s|^include /usr/src/|include $dir/root/usr/src/|" "$tree/Makefile"
  touch "$dir/.done-$kver"
fi
echo "$tree"
