#!/usr/bin/env bash
# Install the Debian packages a build group needs, skipping quickly when all are present.
# Usage: scripts/deps.sh GROUP...   (groups are the files in scripts/deps/*.txt)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
missing=()
for group in "$@"; do
  list="$here/deps/$group.txt"
  [ -f "$list" ] || { echo "deps: unknown group '$group' (no $list)" >&2; exit 2; }
  while read -r pkg _; do
    case "$pkg" in ''|'#'*) continue ;; esac
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$pkg")
    fi
  done <"$list"
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
# Another install may hold apt's locks (two make targets at once): wait for it, do not fail.
apt_retry() {
  local i
  for i in $(seq 1 90); do
    $sudo apt-get -o DPkg::Lock::Timeout=600 "$@" && return 0
    fuser /var/lib/apt/lists/lock /var/lib/dpkg/lock-frontend >/dev/null 2>&1 || return 1
    sleep 10
  done
  return 1
}
apt_retry update -qq
apt_retry install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
