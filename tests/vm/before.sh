#!/usr/bin/env bash
# make vm-test-before: shows that each numbered item of issue 18 is a check that FAILS on
# the module as it was when the issue was filed (the tree at BEFORE, the commit before
# 2e3516b: kmod/ with its uapi header and scripts/hwcheck/, taken from git history).
#   item 7 (portability), on this host: the old kmod/ against the newer kernels' headers
#     that `make kmod` compile-checks the module against;
#   item 9 (eBPF tests counting other processes), on this host: the old and the current
#     tests/ebpf/run.py test_binary_path beside another process of the same binary
#     (ebpf_before.py; needs root and the tools built in EBPF_OUT, else SKIP);
#   items 1-6 and 8, in the guest: one boot per item (tests/vm/run.sh with VM_ITEMS,
#     init-before.sh), running the checks of `make vm-test` that cover the item, with
#     tempo-vmtest built against the old uapi and the old tempo-hwcheck.
# Prints one line per item, "FAILS on the old module as expected: <symptom>" or
# "unexpectedly passes"; exit 0 when every item failed.
# Usage: tests/vm/before.sh BUILD_DIR [NEWER_HEADERS_TREE...]
# Env: BEFORE (commit, default 2e3516b^), VM_ITEMS (default "1 2 3 4 5 6 8"), EBPF_OUT
#   (the eBPF tools' build directory, `make ebpf`).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [NEWER_HEADERS_TREE...]" >&2; exit 2; }
build=$(mkdir -p "$1" && cd "$1" && pwd)
shift
before=${BEFORE:-505654652723bf39cb51a6137615b8da7e690738}
kver=$(dpkg-query -W -f='${Depends}' linux-headers-amd64 | sed -n 's/^linux-headers-\([^ ,]*\).*/\1/p')
start=$(date +%s)

# The old tree, and its module built against the guest kernel's headers.
old=$build/old
rm -rf "$old" && mkdir -p "$old"
git -C "$repo" archive "$before" kmod scripts/hwcheck tests/ebpf | tar -x -C "$old"
echo "vm-test-before: the tree at $(git -C "$repo" log -1 --format='%h (%s)' "$before" | cut -c1-100)"
make --no-print-directory -s -C "/usr/src/linux-headers-$kver" M="$old/kmod" modules >"$build/old-kmod.log" 2>&1 ||
  { cat "$build/old-kmod.log"; echo "vm-test-before: the old module does not build for $kver" >&2; exit 1; }

# Item 7: the old module against each newer kernel's headers; it fails when none builds.
fail7=0
[ $# -gt 0 ] || echo "vm-test-before: item 7: SKIP: no newer kernel headers here"
built=0
for tree in "$@"; do
  name=$(basename "$tree")
  rm -rf "$build/old-$name" && cp -r "$old/kmod" "$build/old-$name"
  rm -f "$build/old-$name"/*.o "$build/old-$name"/*.ko
  if make --no-print-directory -s -C "$tree" M="$build/old-$name" modules >"$build/old-$name.log" 2>&1; then
    echo "vm-test-before: item 7: the old module builds against $name"
    built=$((built + 1))
  else
    echo "vm-test-before: item 7: $name: $(grep -c 'error:' "$build/old-$name.log") errors, first:" \
      "$(grep -m1 'error:' "$build/old-$name.log" | sed "s|.*/old-$name/||")"
  fi
done
if [ $# -gt 0 ] && [ $built -eq $# ]; then
  echo "vm-test-before: item 7: unexpectedly passes (the old module builds against every newer kernel)"
  fail7=1
elif [ $# -gt 0 ]; then
  echo "vm-test-before: item 7: FAILS on the old module as expected ($(($# - built)) of $# newer kernels)"
fi

# Item 9: the eBPF test as it was, beside another process of the same binary.
fail9=0
if [ -n "${EBPF_OUT:-}" ] && [ -x "$EBPF_OUT/tempostat" ] && [ -x "$EBPF_OUT/probe-driver" ] &&
  [ "$(id -u)" -eq 0 ]; then
  /usr/bin/python3 "$here/ebpf_before.py" "$EBPF_OUT" "$old/tests/ebpf" >"$build/ebpf.log" 2>&1 || fail9=1
  grep '^vm-test-before: ' "$build/ebpf.log" || { tail -20 "$build/ebpf.log"; fail9=1; }
else
  echo "vm-test-before: item 9: SKIP: needs root and the eBPF tools (make ebpf; EBPF_OUT)"
fi

# The guest items.
rc=0
VM_ITEMS=${VM_ITEMS:-1 2 3 4 5 6 8} VM_UAPI="$old/kmod/include/uapi" \
  VM_HWCHECK="$old/scripts/hwcheck/tempo-hwcheck" VM_TIMEOUT=${VM_TIMEOUT:-600} \
  "$here/run.sh" "$build" "$old/kmod/tempo.ko" || rc=$?
echo "vm-test-before: done in $(($(date +%s) - start))s"
[ $rc -eq 0 ] && [ $fail7 -eq 0 ] && [ $fail9 -eq 0 ]
