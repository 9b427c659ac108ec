#!/usr/bin/env bash
# libtempo.so builds without its optional dependencies and says what that costs: the tree is
# configured as if liburing, libnuma and libdaxctl were absent (TEMPO_WITHOUT), the
# configuration names each one, the library links none of them, the sim device works and
# device=uring is refused with -EOPNOTSUPP and a message naming liburing.
# Usage: without_deps_test.sh SOURCE_DIR OUT_DIR
# OUT_DIR sits beside the main build tree (same depth): ccache then reuses its objects.
set -euo pipefail
src=$1
out=$2
mkdir -p "$out"
log=$out/tempo-test.log
fail() { echo "without-deps test: $*" >&2; exit 1; }

cmake -S "$src" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DTEMPO_WITHOUT=liburing;libnuma;libdaxctl" "-DTEMPO_SKIP=tools;tests" >"$log" 2>&1 ||
  { cat "$log"; fail "configure failed"; }
for what in "liburing (liburing libxxhash): the uring device" "libnuma (numa): binding" \
            "libdaxctl (libdaxctl): the Device-DAX fast tier"; do
  tr -s ' \n' ' ' <"$log" | grep -qF "building without $what" || fail "no message for $what"
done
cmake --build "$out" --target tempo >"$log" 2>&1 || { cat "$log"; fail "build failed"; }

lib=$out/libtempo/capi/libtempo.so.0
needed=$(readelf -d "$lib" | awk '/NEEDED/ {print $NF}')
for dep in liburing libxxhash libnuma libdaxctl; do
  ! grep -q "$dep" <<<"$needed" || fail "$lib still links $dep"
done

cc -std=c11 -Wall -Werror "$src/examples/tempo_example.c" -I"$src/libtempo/include" \
  -L"$(dirname "$lib")" -ltempo -Wl,-rpath,"$(dirname "$lib")" -o "$out/example"
sim=$("$out/example")
grep -q '^device sim: reported at 0 ns, committed +' <<<"$sim" || fail "sim example: $sim"
if uring=$("$out/example" "$out/store" 2>&1); then fail "device=uring was accepted: $uring"; fi
grep -qx "tempo_ctx_new: Operation not supported: device 'uring' is not available: libtempo was built without liburing" \
  <<<"$uring" || fail "device=uring refusal: $uring"
echo "without-deps test: libtempo.so without liburing, libnuma, libdaxctl: sim works, uring -EOPNOTSUPP"
