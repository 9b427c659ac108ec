#!/usr/bin/env bash
# The Debian packages on this machine (Documentation/install.md, "Debian packages"): builds
# them from the tree (packaging/deb/build.sh: dpkg-buildpackage, lintian without error),
# installs them with apt, then checks what an operator and a developer get: a C program built
# through pkg-config and through find_package(tempokv), the tempokv module under Debian's
# /usr/bin/python3, tempoctl --version, tempod --check-config of the installed configuration
# (whose group the package created), the systemd unit (systemd-analyze verify, installed
# disabled), tempo.ko built by dkms for each kernel whose headers are installed. Then it purges
# them and checks that nothing is left: no file they held, no file of theirs anywhere under
# /etc, /usr and /var that was not there before, no user or group, no dkms tree, nothing of
# anyone else removed.
# Installing modifies the system: one run at a time per machine (a lock), and whatever happens
# the packages are purged on exit. Needs root (SKIP otherwise).
# Usage: deb_test.sh SOURCE_DIR OUT_DIR
set -euo pipefail
src=$1
out=$2
pkgs=(libtempo0 libtempo-dev tempo-dkms tempod tempo-tools python3-tempokv tempokv-doc)
fail() { echo "deb test: FAIL: $*" >&2; exit 1; }
say() { echo "deb test: [${SECONDS}s] $*"; }
[ "$(id -u)" -eq 0 ] || { echo "SKIP: installing packages needs root"; exit 77; }

exec 8>/run/lock/tempokv-deb-test.lock
flock 8
work=$(mktemp -d "${TMPDIR:-/tmp}/tempo-deb.XXXXXX")
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)

installed() { # the packages of ours dpkg knows (installed, or half-installed, or config-files)
  local p
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^.[^n]' && echo "$p"
  done
  return 0
}
purge() {
  local left
  left=$(installed)
  [ -z "$left" ] || dpkg --purge $left >"$work/purge.log" 2>&1 ||
    { cat "$work/purge.log" >&2; return 1; }
}
cleanup() {
  local rc=$?
  purge || { echo "deb test: purging failed, left: $(installed)" >&2; rc=1; }
  rm -rf "$work"
  exit $rc
}
trap cleanup EXIT

# Our names anywhere under /etc, /usr and /var (the dpkg database included); every file and
# directory there, but what any package install changes (logs, caches, apt's and dpkg's state)
# and /usr/local, which no package touches.
ours() {
  find /etc /usr /var -xdev -path /usr/local -prune -o \( -name '*tempo*' ! -name '*tempor*' \) -print |
    sort
}
everything() {
  find /etc /usr /var -xdev \( -path /usr/local -o -path /var/log -o -path /var/cache -o \
    -path /var/tmp -o -path /var/lib/apt -o -path /var/lib/dpkg \) -prune -o -print | sort
}

[ -z "$(installed)" ] || { say "purging the packages an earlier run left: $(installed)"; purge; }
"$src/packaging/deb/build.sh" "$out" | tee "$work/build.out"
say "built and linted"
mapfile -t debs < <(grep '\.deb$' "$work/build.out" | grep -v -- '-dbgsym_')
[ ${#debs[@]} -eq ${#pkgs[@]} ] || fail "built ${#debs[@]} packages, expected ${#pkgs[@]}: ${debs[*]}"
ours >"$work/ours.before"
everything >"$work/all.before"

# apt would install nothing but ours: what they need is there (scripts/deps.sh deb).
apt-get -s install --no-install-recommends "${debs[@]}" >"$work/simulate.log" 2>&1 ||
  { cat "$work/simulate.log" >&2; fail "apt-get cannot install the packages"; }
extra=$(sed -n 's/^Inst \([^ ]*\).*/\1/p' "$work/simulate.log" | grep -vxF -f <(printf '%s\n' "${pkgs[@]}") || true)
[ -z "$extra" ] || fail "installing them would also install: $extra (scripts/deps.sh deb installs what they need)"
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
  -o DPkg::Lock::Timeout=600 "${debs[@]}" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log" >&2; fail "apt-get install failed"; }
for p in "${pkgs[@]}"; do
  [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p")" = "ii " ] || fail "$p is not installed"
  dpkg -L "$p" >>"$work/files"
done
say "installed ${pkgs[*]} $version"

# C through pkg-config, from the system's search paths only (no run path: the loader's own).
c=$work/c
mkdir -p "$c"
[ "$(env -u PKG_CONFIG_PATH pkg-config --modversion tempokv)" = "$version" ] || fail "pkg-config tempokv version"
# shellcheck disable=SC2046 # pkg-config's flags are words
cc -std=c11 -Wall -Werror "$src/examples/tempo_example.c" $(env -u PKG_CONFIG_PATH pkg-config --cflags --libs tempokv) \
  -o "$c/example"
lib=$(env -u LD_LIBRARY_PATH ldd "$c/example" | awk '/libtempo.so.0 =>/ {print $3}')
[ -n "$lib" ] && [ "$(dpkg -S "$(readlink -f "$lib")" | cut -d: -f1)" = libtempo0 ] ||
  fail "the pkg-config example loads '$lib', not libtempo0's library"
env -u LD_LIBRARY_PATH "$c/example" >"$c/sim.out"
grep -q '^device sim: reported at 0 ns, committed +' "$c/sim.out" || fail "sim example: $(cat "$c/sim.out")"
env -u LD_LIBRARY_PATH "$c/example" "$c/store" >"$c/uring.out"
grep -q "^copied 262144 bytes in [0-9]* extents, first byte 'a'" "$c/uring.out" ||
  fail "uring example: $(cat "$c/uring.out")"
# C through find_package(tempokv), found where CMake looks by default.
cmake -S "$src/examples" -B "$c/cmake" -G Ninja >"$c/cmake.log" 2>&1 || { cat "$c/cmake.log" >&2; fail "find_package(tempokv)"; }
cmake --build "$c/cmake" >"$c/cmake-build.log" 2>&1 || { cat "$c/cmake-build.log" >&2; fail "the CMake example"; }
env -u LD_LIBRARY_PATH "$c/cmake/tempo_example" | grep -q '^device sim: ' || fail "the CMake example's output"
say "a C program builds and runs through pkg-config and find_package(tempokv)"

# Python: Debian's interpreter finds the package and the library with nothing set.
py=$(cd "$work" && env -u PYTHONPATH -u TEMPOKV_LIBRARY /usr/bin/python3 -c \
  'import tempokv; print(tempokv.__file__); print(tempokv.version())')
[ "$py" = "/usr/lib/python3/dist-packages/tempokv/__init__.py
$version" ] || fail "import tempokv: $py"
(cd "$work" && env -u PYTHONPATH -u TEMPOKV_LIBRARY /usr/bin/python3 "$src/examples/tempo_example.py" "$work/pystore") >"$work/py.out"
grep -q '^req-1: 64 tokens matched, retrieval .*, loaded 65536 bytes' "$work/py.out" || fail "python example: $(cat "$work/py.out")"
say "import tempokv from $(dirname "${py%%$'\n'*}"): the example runs on uring"

# The operator's tools.
[ "$(/usr/bin/tempoctl --version)" = "tempoctl (TempoKV) $version" ] || fail "tempoctl --version: $(/usr/bin/tempoctl --version)"
ls_out=$(/usr/bin/tempoctl store ls --store "$work/pystore")
[ "$(tail -1 <<<"$ls_out")" = "4 objects, 64.00 KiB, 0 quarantined" ] || fail "tempoctl store ls: $ls_out"
for tool in /usr/sbin/tempostat /usr/sbin/tempomargin; do
  "$tool" -h >/dev/null || fail "$tool -h"
done
/usr/bin/tempo-hwcheck --help >/dev/null || fail "tempo-hwcheck --help"
[ -x /usr/share/tempokv/bpftrace/tempo_stat.bt ] || fail "the bpftrace scripts"

# tempod: the system user and group, the configuration as installed, the unit.
IFS=: read -r _ _ uid gid _ home shell < <(getent passwd tempo) || fail "no user tempo"
[ "$uid" -lt 1000 ] && [ "$home" = /var/lib/tempo ] && [ "$shell" = /usr/sbin/nologin ] ||
  fail "user tempo: uid $uid, home $home, shell $shell"
[ "$(getent group tempo | cut -d: -f3)" = "$gid" ] || fail "group tempo is not the user's"
check=$(/usr/sbin/tempod --check-config --config /etc/tempo/tempod.conf) ||
  fail "tempod --check-config /etc/tempo/tempod.conf"
[ "$check" = "tempod: /etc/tempo/tempod.conf: valid (device uring, socket /run/tempo/tempod.sock)" ] ||
  fail "tempod --check-config: $check"
unit=/lib/systemd/system/tempod.service
grep -qx 'ExecStart=/usr/sbin/tempod --config /etc/tempo/tempod.conf' "$unit" || fail "$unit ExecStart"
verify=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify $unit: $verify"
! grep -q tempod <<<"$verify" || fail "systemd-analyze verify $unit: $verify"
enabled=$(systemctl --root=/ is-enabled tempod.service 2>&1 || true)
[ "$enabled" = disabled ] || fail "tempod.service on install: '$enabled', not disabled"
[ -f "$(sed -n 's|^Documentation=file://||p' "$unit")" ] || fail "the unit's Documentation= is not installed"
say "tempod: user tempo ($uid), /etc/tempo/tempod.conf valid, the unit verifies (installed disabled)"

# tempo.ko: the postinst had dkms build and install it for every kernel with headers.
kernels=$(for b in /lib/modules/*/build; do [ -e "$b/Makefile" ] && basename "$(dirname "$b")"; done)
[ -n "$kernels" ] || fail "no kernel headers under /lib/modules/*/build (scripts/deps.sh deb installs linux-headers-amd64)"
modules_installed() {
  local k status ko
  for k in $kernels; do
    status=$(dkms status -m tempo -v "$version" -k "$k")
    [[ $status == *": installed"* ]] || fail "dkms status for $k: '$status'"
    ko=$(find "/lib/modules/$k/updates/dkms" -name 'tempo.ko*' | head -1)
    [ -n "$ko" ] || fail "no tempo.ko in /lib/modules/$k/updates/dkms"
    [ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" = "$k" ] || fail "$ko: vermagic $(modinfo -F vermagic "$ko")"
    [ "$(modinfo -F description "$ko")" = "TempoKV memory-semantic flash device" ] || fail "$ko: description"
    say "dkms built $ko for $k"
  done
}
modules_installed

# Over itself, which runs the maintainer scripts as an upgrade does: dkms removes and rebuilds
# the module, the user stays, the configuration stays valid.
DEBIAN_FRONTEND=noninteractive apt-get install -y --reinstall --no-install-recommends \
  -o DPkg::Lock::Timeout=600 "${debs[@]}" >"$work/reinstall.log" 2>&1 ||
  { cat "$work/reinstall.log" >&2; fail "reinstalling over itself failed"; }
[ "$(id -u tempo)" = "$uid" ] || fail "user tempo changed on reinstall: $(id tempo)"
/usr/sbin/tempod --check-config --config /etc/tempo/tempod.conf >/dev/null || fail "tempod --check-config after reinstall"
modules_installed
say "reinstalled over itself"

# Purge: nothing of ours left, nothing of anyone else's gone.
purge || fail "dpkg --purge failed"
[ -z "$(installed)" ] || fail "still known to dpkg after purge: $(installed)"
while IFS= read -r f; do
  [ -d "$f" ] || [ ! -e "$f" ] || fail "$f is left after purge"
done <"$work/files"
ours >"$work/ours.after"
diff -u "$work/ours.before" "$work/ours.after" >"$work/ours.diff" ||
  fail "paths named for us differ after purge: $(grep '^[-+]/' "$work/ours.diff")"
! getent passwd tempo >/dev/null || fail "user tempo is left"
! getent group tempo >/dev/null || fail "group tempo is left"
[ ! -e /var/lib/dkms/tempo ] || fail "/var/lib/dkms/tempo is left"
! ldconfig -p | grep -q 'libtempo\.so\.0 ' || fail "the loader's cache still names libtempo.so.0"
# Files new since before the install that no package owns (another engineer's apt run may add
# owned ones meanwhile), and anything of the system removed. Two kinds are dkms's, not ours:
# depmod's indexes of a kernel a module was installed for (regenerated on every module change)
# and the module signing key dkms makes on a machine's first build.
everything >"$work/all.after"
comm -13 "$work/all.before" "$work/all.after" |
  { grep -Ev '^/usr/lib/modules/[^/]+/modules\.[a-z.]+$|^/var/lib/dkms/mok\.(key|pub)$' || true; } |
  while IFS= read -r f; do
    dpkg -S "$f" >/dev/null 2>&1 || echo "$f"
  done >"$work/new"
[ ! -s "$work/new" ] || fail "left after purge, owned by no package: $(cat "$work/new")"
comm -23 "$work/all.before" "$work/all.after" >"$work/gone"
[ ! -s "$work/gone" ] || fail "gone after install and purge: $(cat "$work/gone")"
say "purged: nothing left ($(grep -c '' "$work/files") paths were installed), nothing else removed"
