#!/usr/bin/env bash
# Extracts (never installs) the build headers of the kernel a headers package names into DIR
# and prints the tree to pass to `make -C`. The headers package depends on that kernel's
# image: installing it would put a kernel on the host (and run mkinitramfs, minutes under
# load) only to compile-check tempo.ko.
# Usage: scripts/kernel-headers.sh PACKAGE DIR [SUITE]
#   (e.g. linux-headers-6.12-amd64 build-kmod-compat/bookworm,
#         linux-headers-amd64 build-kmod-compat/sid sid,
#         linux-headers-6.5.0-45-generic build-kmod-compat/jammy-6.5 ubuntu/jammy-updates)
# PACKAGE: a meta package naming one release's headers, or that release's own package.
# Without SUITE the system's apt sources are used. With SUITE, a private apt configuration
# under DIR/apt that never touches the system's sources, lists or status: SUITE main (and the
# base suite of a -backports or -updates one) from deb.debian.org, signed by
# debian-archive-keyring, or with ubuntu/SUITE from archive.ubuntu.com, signed by the Ubuntu
# archive key in scripts/keys/ (2018, F6EC B376 2474 EDA9 D21B  7022 8719 20D1 991B C93C).
# Where the release was built for a newer system than this one, the tree is made usable here
# (each step printed on stderr):
# - kbuild programs (modpost, objtool, ...) that need a newer glibc than the host's run with
#   the glibc of SUITE, extracted beside them, through its dynamic loader;
# - the compiler- and pahole-dependent config symbols are re-evaluated for the host's gcc
#   and pahole (the table in host_has), since the headers ship no Kconfig files to rerun.
set -euo pipefail
[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "usage: $0 PACKAGE DIR [SUITE]" >&2; exit 2; }
meta=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)
suite=${3-}
mirror=http://deb.debian.org/debian
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
case $suite in ubuntu/*)
  suite=${suite#ubuntu/}
  mirror=http://archive.ubuntu.com/ubuntu
  keyring=$(cd "$(dirname "$0")" && pwd)/keys/ubuntu-archive-2018.asc
  ;;
esac
apt_opts=()
if [ -n "$suite" ]; then
  mkdir -p "$dir/apt/lists/partial" "$dir/apt/cache/archives/partial" "$dir/apt/sources.list.d"
  touch "$dir/apt/status"
  # A backports or updates suite comes with its base suite (libc6 below) and is preferred.
  base=${suite%-backports}
  for s in "$suite" "${base%-updates}"; do
    echo "deb [signed-by=$keyring] $mirror $s main"
  done | uniq >"$dir/apt/sources.list"
  # An empty dpkg status: what the host has installed must not answer for SUITE.
  # Check-Valid-Until: a mirror's Release may be past its validity date; the signature is
  # still checked.
  apt_opts=(-o "Dir::Etc::SourceList=$dir/apt/sources.list" -o "Dir::Etc::SourceParts=$dir/apt/sources.list.d"
    -o "Dir::State::status=$dir/apt/status"
    -o "Dir::State::Lists=$dir/apt/lists" -o "Dir::Cache=$dir/apt/cache" -o Acquire::Languages=none
    -o Acquire::Check-Valid-Until=false -o APT::Architectures=amd64 -o "APT::Default-Release=$suite")
fi
depends() { { apt-cache "${apt_opts[@]}" depends "$1" 2>/dev/null || true; } | sed -n "s/^ *Depends: //p"; }
download() { # PACKAGE... into the current directory
  apt-get "${apt_opts[@]}" download -qq "$@" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true
}
# A meta package depends on one release's headers (linux-headers-amd64 ->
# linux-headers-7.2.13+deb14-amd64); a release's own package only on its common part
# (linux-headers-6.5.0-45-generic -> linux-hwe-6.5-headers-6.5.0-45; Debian's: *-common).
kver_of() {
  local deps d
  deps=$(depends "$meta")
  [ -n "$deps" ] || return 0
  d=$(echo "$deps" | sed -n 's/^linux-headers-//p' | head -1)
  if [ -z "$d" ] || [[ $d == *-common || ${meta#linux-headers-} == "$d"-* ]]; then
    d=${meta#linux-headers-}
  fi
  echo "$d"
}
kver=$(kver_of)
# A private suite's lists are refreshed whenever they name a release not extracted yet (a
# moving suite deletes old packages from the mirror).
if [ -z "$kver" ] || { [ -n "$suite" ] && [ ! -f "$dir/.done-$kver" ]; }; then
  { apt-get "${apt_opts[@]}" update -qq 2>&1 >/dev/null || true; } | grep '^[WE]:' | grep -v unsandboxed >&2 || true
  kver=$(kver_of)
fi
[ -n "$kver" ] || { echo "kernel-headers: $meta is not known to apt${suite:+ in $suite}" >&2; exit 1; }
tree=$dir/root/usr/src/linux-headers-$kver

# The executables in DIR/root that need a newer GLIBC_x.y symbol version than HOST (one
# objdump for all: the trees hold hundreds of executable scripts).
glibc_newer_than() {
  find "$dir/root" -type f -perm -u+x -print0 | { xargs -0 objdump -p 2>/dev/null || true; } | awk -v host="$1" '
    function newer(v, h,   a, b, i) {
      split(v, a, "."); split(h, b, ".")
      for (i = 1; i <= 3; i++) if (a[i] + 0 != b[i] + 0) return a[i] + 0 > b[i] + 0
      return 0
    }
    / file format / { file = $1; sub(/:$/, "", file) }
    match($0, /GLIBC_[0-9.]+/) && newer(substr($0, RSTART + 6, RLENGTH - 6), host) { need[file] = 1 }
    END { for (f in need) print f }'
}

# Wraps each kbuild program that needs a newer glibc than the host's: FILE becomes a script
# running FILE.elf with SUITE's glibc (extracted into DIR/libc) through its loader.
wrap_for_glibc() {
  local host need f deb libdir
  host=$(getconf GNU_LIBC_VERSION | cut -d' ' -f2)
  mapfile -t need < <(glibc_newer_than "$host")
  [ ${#need[@]} -gt 0 ] || return 0
  [ -n "$suite" ] || { echo "kernel-headers: kbuild needs a newer glibc than $host" >&2; return 1; }
  mkdir -p "$dir/dl" && (cd "$dir/dl" && download libc6)
  deb=$(find "$dir/dl" -name 'libc6_*.deb')
  [ -n "$deb" ] || { echo "kernel-headers: libc6 cannot be downloaded from $suite" >&2; return 1; }
  dpkg-deb -x "$deb" "$dir/libc"
  libdir=$dir/libc/usr/lib/x86_64-linux-gnu
  echo "kernel-headers: ${#need[@]} kbuild programs need glibc > $host: run with the libc6" \
    "$(dpkg-deb -f "$deb" Version) downloaded beside them" >&2
  for f in "${need[@]}"; do
    mv "$f" "$f.elf"
    # shellcheck disable=SC2016 # $0 and $@ are the wrapper's own
    printf '#!/bin/sh\nexec "%s" --library-path "%s" --argv0 "$0" "$0.elf" "$@"\n' \
      "$libdir/ld-linux-x86-64.so.2" "$libdir:/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu" >"$f"
    chmod +x "$f"
  done
}

# 0 when the host's gcc (or pahole) has what config symbol SYM (set by the kernel's
# compiler) stands for: Kconfig's own test for that symbol, or its version bound.
host_has() {
  local cc=$1 sym=$2 value=$3 gccv
  gccv=$($cc -dumpfullversion | awk -F. '{ printf "%d%02d%02d", $1, $2, $3 }')
  cc_ok() { $cc -Werror "$@" -x c -c -o /dev/null - 2>/dev/null; }
  case $sym in
  CC_HAS_ASSUME) echo 'int f(int x) { __attribute__((assume(x > 0))); return x; }' | cc_ok ;;
  CC_HAS_COUNTED_BY) echo 'struct s { int n; int a[] __attribute__((__counted_by__(n))); };' | cc_ok ;;
  CC_HAS_COUNTED_BY_PTR) echo 'struct s { int n; int *p __attribute__((__counted_by__(n))); };' | cc_ok ;;
  CC_HAS_MULTIDIMENSIONAL_NONSTRING) echo 'char a[2][4] __attribute__((__nonstring__));' | cc_ok ;;
  CC_HAS_KASAN_SW_TAGS) echo | cc_ok -fsanitize=kernel-hwaddress ;;
  CC_HAS_MARCH_NATIVE) echo | cc_ok -march=native ;;
  CC_HAS_MIN_FUNCTION_ALIGNMENT | CC_HAS_SANE_FUNCTION_ALIGNMENT) echo | cc_ok -fmin-function-alignment=16 ;;
  CC_HAS_UBSAN_BOUNDS_STRICT) echo | cc_ok -fsanitize=bounds-strict ;;
  CC_MS_EXTENSIONS | CC_OPT_INLINE_MEMSET) echo | cc_ok "$value" ;;
  # GCC_ASM_GOTO_OUTPUT_BROKEN: gcc < 11.5, 12.1-12.3, 13.1-13.2.
  CC_HAS_ASM_GOTO_OUTPUT | CC_HAS_ASM_GOTO_TIED_OUTPUT)
    [ "$gccv" -ge 110500 ] && { [ "$gccv" -lt 120000 ] || [ "$gccv" -ge 120400 ]; } &&
      { [ "$gccv" -lt 130000 ] || [ "$gccv" -ge 130300 ]; } &&
      echo 'int f(int *x) { asm goto ("" : "+m"(*x) ::: l); return *x; l: return 0; }' | cc_ok ;;
  *) return 0 ;;
  esac
}

# cfg_write TREE SYM [VALUE]: sets SYM (an int, y or a string) in .config, auto.conf and
# autoconf.h, or unsets it without VALUE.
cfg_write() {
  local t=$1 sym=CONFIG_$2 value=${3-} cfg auto hdr
  case $value in
  '') cfg="# $sym is not set" auto='' hdr='' ;;
  y) cfg="$sym=y" auto="$sym=y" hdr="#define $sym 1" ;;
  *[!0-9]*) cfg="$sym=\"$value\"" auto="$sym=$value" hdr="#define $sym \"$value\"" ;;
  *) cfg="$sym=$value" auto="$sym=$value" hdr="#define $sym $value" ;;
  esac
  sed -i -e "s|^$sym=.*|$cfg|" "$t/.config"
  sed -i -e "/^$sym=/d" "$t/include/config/auto.conf" -e "/^#define $sym /d" "$t/include/generated/autoconf.h"
  [ -z "$auto" ] || { echo "$auto" >>"$t/include/config/auto.conf" && echo "$hdr" >>"$t/include/generated/autoconf.h"; }
}

# Rebuilds TREE's compiler- and pahole-dependent config for the host's gcc-N and pahole
# where the kernel was built with other versions; prints what it changed on stderr.
retarget_toolchain() {
  local t=$1 cc kgcc hgcc sym value off=() kpahole hpahole
  cc=gcc-$(gcc -dumpversion)
  kgcc=$(sed -n 's/^CONFIG_GCC_VERSION=//p' "$t/include/config/auto.conf")
  hgcc=$($cc -dumpfullversion | awk -F. '{ printf "%d%02d%02d", $1, $2, $3 }')
  if [ "$kgcc" != "$hgcc" ]; then
    while IFS='=' read -r sym value; do
      sym=${sym#CONFIG_}
      host_has "$cc" "$sym" "$value" || { cfg_write "$t" "$sym" && off+=("$sym"); }
    done < <(grep -E '^CONFIG_(CC_HAS|CC_MS|CC_OPT)_[A-Z0-9_]*=' "$t/include/config/auto.conf")
    cfg_write "$t" GCC_VERSION "$hgcc"
    cfg_write "$t" CC_VERSION_TEXT "$($cc --version | head -1)"
    [ ! -f "$t/.kernelvariables" ] || sed -i "s|^CC = .*|CC = $cc|" "$t/.kernelvariables"
    echo "kernel-headers: $kver built by gcc $kgcc, compiled here by $cc $hgcc: config re-evaluated," \
      "off: ${off[*]:-none}" >&2
  fi
  kpahole=$(sed -n 's/^CONFIG_PAHOLE_VERSION=//p' "$t/include/config/auto.conf")
  hpahole=$(pahole --version 2>/dev/null | tr -dc 0-9)
  if [ -n "$kpahole" ] && [ -n "$hpahole" ] && [ "$kpahole" != "$hpahole" ]; then
    cfg_write "$t" PAHOLE_VERSION "$hpahole"
    echo "kernel-headers: $kver built with pahole $kpahole, module BTF made by pahole $hpahole" >&2
  fi
}

if [ ! -f "$dir/.done-$kver" ]; then
  pkgs=("linux-headers-$kver")
  mapfile -t -O 1 pkgs < <(depends "linux-headers-$kver" | grep -E '^linux-(headers|kbuild|.*-headers)-')
  rm -rf "$dir/root" "$dir/dl" "$dir/libc" && mkdir -p "$dir/root" "$dir/dl"
  (cd "$dir/dl" && download "${pkgs[@]}")
  mapfile -t debs < <(find "$dir/dl" -name '*.deb')
  [ ${#debs[@]} -eq ${#pkgs[@]} ] ||
    { echo "kernel-headers: ${#debs[@]} of ${#pkgs[@]} packages downloaded: ${pkgs[*]}" >&2; exit 1; }
  for deb in "${debs[@]}"; do dpkg-deb -x "$deb" "$dir/root"; done
  rm -rf "$dir/dl"
  [ -f "$tree/Makefile" ] || { echo "kernel-headers: no headers tree for $kver in ${pkgs[*]}" >&2; exit 1; }
  # The arch tree names itself and the common tree by absolute path: point both into DIR.
  sed -i -e "s|^include /usr/src/|include $dir/root/usr/src/|" \
    -e "s|^KBUILD_OUTPUT=/usr/src/|KBUILD_OUTPUT=$dir/root/usr/src/|" "$tree/Makefile"
  wrap_for_glibc
  rm -rf "$dir/dl"
  retarget_toolchain "$tree"
  touch "$dir/.done-$kver"
fi
echo "$tree"
