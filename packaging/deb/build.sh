#!/usr/bin/env bash
# Builds TempoKV's Debian packages (debian/) from this tree into OUT with dpkg-buildpackage,
# then lints them; fails on a build error or on any lintian error. The files git tracks or
# would track (the working tree, edits included) are copied to OUT/tempokv-<version>, so the
# tree itself stays clean; the copy's path is the same on every run, so ccache serves a
# rebuild. Prints the .deb files built, one a line, last.
# Usage: packaging/deb/build.sh OUT   (make deb: OUT = build/deb)
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
src=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
fail() { echo "deb: $*" >&2; exit 1; }

exec 9>"$out/.lock"
flock 9
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
arch=$(dpkg-architecture -q DEB_HOST_ARCH)
stage=$out/tempokv-$version
rm -rf "$stage" "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo "$out"/*.dsc "$out"/*.tar.*
mkdir -p "$stage"
git -C "$src" rev-parse --git-dir >/dev/null 2>&1 ||
  fail "$src is not a git checkout: run dpkg-buildpackage in it instead"
# A file deleted from the working tree but still tracked is left out (--ignore-failed-read).
{ git -C "$src" ls-files -z --cached --others --exclude-standard |
  tar -C "$src" --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -C "$stage" -xf -; } ||
  fail "copying the tree to $stage"

# debhelper gives the build its own HOME: name the caller's ccache explicitly.
if command -v ccache >/dev/null && [ -z "${CCACHE_DIR:-}" ]; then
  CCACHE_DIR=$(ccache -k cache_dir)
  export CCACHE_DIR
fi
log=$out/build.log
echo "deb: dpkg-buildpackage in $stage (log: $log)"
(cd "$stage" && dpkg-buildpackage --build=full -us -uc -j"${JOBS:-$(nproc)}") >"$log" 2>&1 ||
  { tail -40 "$log" >&2; fail "dpkg-buildpackage failed (the whole log: $log)"; }
rm -rf "$stage"

changes=$out/tempokv_${version}_$arch.changes
[ -f "$changes" ] || fail "no $changes"
# lintian exits nonzero on an error tag; warnings are printed and listed in install.md.
lintian --fail-on error --tag-display-limit 0 "$changes" >"$out/lintian.txt" 2>&1 ||
  { cat "$out/lintian.txt" >&2; fail "lintian reports errors ($out/lintian.txt)"; }
if [ -s "$out/lintian.txt" ]; then
  echo "deb: lintian, no error:"
  sed 's/^/  /' "$out/lintian.txt"
fi
ls "$out"/*.deb
