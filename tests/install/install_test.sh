#!/usr/bin/env bash
# Installs the build into a temporary prefix (the "tempokv" component: what `make install`
# puts there for libtempo), checks the tree, then builds and runs the examples against the
# installed copy only: C with pkg-config, C with find_package(tempokv), and Python. The
# installed files are the list in Documentation/install.md, both ways; uninstalling
# (cmake/TempoUninstall.cmake, what `make uninstall` runs) leaves nothing of ours.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR VERSION EBPF_DIR
set -euo pipefail
build=$1
src=$2
version=$3
ebpf=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/tempo-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { echo "install test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" --component tempokv >"$work/install.log" ||
  { cat "$work/install.log"; fail "cmake --install failed"; }

# Every installed file matches exactly one line of install.md's list, every line (but those
# "when built" whose tool was not) matches a file; '*' stays within one path component.
doc=$src/Documentation/install.md
doc_version=$(sed -n 's|.*<!-- version -->\(.*\)<!-- /version -->.*|\1|p' "$doc")
[ "$doc_version" = "$version" ] || fail "install.md says version '$doc_version', the project is $version"
py=$(/usr/bin/python3 -c 'import sys; print(f"python{sys.version_info[0]}.{sys.version_info[1]}")')
listed=$(sed -n '/^<!-- installed files -->$/,/^<!-- end of installed files -->$/p' "$doc" |
  grep -v -e '^<!--' -e '^```')
[ -n "$listed" ] || fail "no list of installed files in $doc"
installed=$(cd "$prefix" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort)
lines=()
regexes=()
while IFS= read -r line; do
  pat=${line%% *}
  pat=${pat//<version>/$version}
  pat=${pat//<py>/$py}
  lines+=("$line")
  regexes+=("^$(sed -e 's/[.]/\\./g' -e 's/\*/[^\/]*/g' <<<"$pat")\$")
done <<<"$listed"
declare -A matched=()
while IFS= read -r f; do
  n=0
  for i in "${!lines[@]}"; do
    if [[ $f =~ ${regexes[$i]} ]]; then
      n=$((n + 1))
      matched[${lines[$i]}]=1
    fi
  done
  [ "$n" -eq 1 ] || fail "installed $f matches $n lines of install.md's list"
done <<<"$installed"
while IFS= read -r line; do
  tool=$(sed -n 's|^sbin/\([a-z]*\) .*(when built)$|\1|p' <<<"$line")
  [ -n "${matched[$line]:-}" ] || { [ -n "$tool" ] && [ ! -x "$ebpf/$tool" ]; } ||
    fail "install.md lists '$line': not installed"
done <<<"$listed"
grep -q "^Version: $version\$" "$(find "$prefix" -name tempokv.pc)" || fail "tempokv.pc version"

libdir=$(find "$prefix" -name 'libtempo.so.0' -printf '%h\n' | head -1)
[ -n "$libdir" ] || fail "libtempo.so.0 not installed"
[ -L "$libdir/libtempo.so" ] || fail "no libtempo.so development link"
# Outputs are captured first: with pipefail, `cmd | grep -q` fails when grep exits early.
dyn=$(readelf -d "$libdir/libtempo.so.0")
grep -q 'Library soname: \[libtempo.so.0\]' <<<"$dyn" || fail "SONAME is not libtempo.so.0"
syms=$(objdump -T "$libdir/libtempo.so.0")
for node in TEMPO_0.1 TEMPO_0.2; do
  grep -q " $node " <<<"$syms" || fail "version node $node missing"
done
# Only the C ABI is exported: every defined function is tempo_*.
others=$(awk '$2 == "g" && $3 == "DF" && $NF !~ /^tempo_/ {print $NF}' <<<"$syms")
[ -z "$others" ] || fail "exported beyond the C ABI: $others"
for f in include/tempo/tempo.h include/linux/tempo.h bin/tempoctl \
         src/tempo-$version/dkms.conf src/tempo-$version/Kbuild src/tempo-$version/main.c \
         src/tempo-$version/include/uapi/linux/tempo.h share/doc/tempokv/c-api.md \
         share/doc/tempokv/examples/tempo_example.c; do
  [ -e "$prefix/$f" ] || fail "$f not installed"
done
grep -q '^PACKAGE_NAME="tempo"' "$prefix/src/tempo-$version/dkms.conf" || fail "dkms.conf"
pc=$(find "$prefix" -name tempokv.pc | head -1)
[ -n "$pc" ] || fail "tempokv.pc not installed"
cmakecfg=$(find "$prefix" -name tempokvConfig.cmake | head -1)
[ -n "$cmakecfg" ] || fail "tempokvConfig.cmake not installed"
pkg=$(find "$prefix" -type d -name tempokv -path '*dist-packages*' | head -1)
[ -f "$pkg/_location.py" ] || fail "the Python package is not installed"

# C with pkg-config, run from the installed library (rpath from pkg-config's libdir).
export PKG_CONFIG_PATH=$(dirname "$pc")
[ "$(pkg-config --modversion tempokv)" = "$version" ] || fail "pkg-config version"
cc -std=c11 -Wall -Werror "$src/examples/tempo_example.c" $(pkg-config --cflags --libs tempokv) \
   -Wl,-rpath,"$(pkg-config --variable=libdir tempokv)" -o "$work/example_pc"
deps=$(ldd "$work/example_pc")
loaded=$(awk '/libtempo.so.0 =>/ {print $3}' <<<"$deps")
[ -n "$loaded" ] && [ "$(readlink -f "$loaded")" = "$(readlink -f "$libdir/libtempo.so.0")" ] ||
  fail "example_pc does not load the installed copy ($loaded)"
"$work/example_pc" | tee "$work/sim.out"
grep -q '^device sim: reported at 0 ns, committed +' "$work/sim.out" || fail "sim example output"
"$work/example_pc" "$work/store" | tee "$work/uring.out"
grep -q "^copied 262144 bytes in [0-9]* extents, first byte 'a'" "$work/uring.out" ||
  fail "uring example output"

# C with find_package(tempokv).
cmake -S "$src/examples" -B "$work/cmake-example" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_RPATH="$libdir" >"$work/cmake.log" || { cat "$work/cmake.log"; fail "find_package"; }
cmake --build "$work/cmake-example" >"$work/cmake-build.log" ||
  { cat "$work/cmake-build.log"; fail "building the CMake example"; }
cm_out=$("$work/cmake-example/tempo_example")
grep -q '^device sim: ' <<<"$cm_out" || fail "CMake example output"

# Python: the installed package finds the installed library by itself.
env -u TEMPOKV_LIBRARY PYTHONPATH="$(dirname "$pkg")" /usr/bin/python3 \
  "$src/examples/tempo_example.py" | tee "$work/py.out"
grep -q '^req-1: 64 tokens matched, retrieval .*, loaded 0 bytes' "$work/py.out" || fail "python sim"
env -u TEMPOKV_LIBRARY PYTHONPATH="$(dirname "$pkg")" /usr/bin/python3 \
  "$src/examples/tempo_example.py" "$work/pystore" | tee "$work/py2.out"
grep -q '^req-1: 64 tokens matched, retrieval .*, loaded 65536 bytes' "$work/py2.out" ||
  fail "python uring"
ls_out=$("$prefix/bin/tempoctl" store ls --store "$work/pystore")
grep -q '^4 objects, 64.00 KiB, 0 quarantined$' <<<"$ls_out" || fail "installed tempoctl"

# Uninstalling removes every installed file and our directories (Python's caches too).
cmake -DMANIFEST="$build/install_manifest_tempokv.txt" -DPREFIX="$prefix" \
  -P "$src/cmake/TempoUninstall.cmake" >"$work/uninstall.log" ||
  { cat "$work/uninstall.log"; fail "uninstall failed"; }
left=$(cd "$prefix" && find . -mindepth 1 \( -type f -o -type l -o -name 'tempo*' \))
[ -z "$left" ] || fail "left after uninstall: $left"
echo "install test: passed ($prefix: $(wc -l <<<"$installed") files installed, all uninstalled)"
