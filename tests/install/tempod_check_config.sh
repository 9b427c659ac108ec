#!/usr/bin/env bash
# tempod --check-config against the configuration the tempod package installs
# (packaging/systemd/tempod.conf): valid as shipped, bad values refused with the key named,
# and nothing opened or served (the store and the socket stay absent).
# Usage: tempod_check_config.sh TEMPOD SOURCE_DIR
set -euo pipefail
tempod=$1
shipped=$2/packaging/systemd/tempod.conf
work=$(mktemp -d "${TMPDIR:-/tmp}/tempod-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "tempod_check_config: $*" >&2; exit 1; }

# check CONFIG: runs tempod --check-config; sets rc, out, err.
check() {
  rc=0
  "$tempod" --check-config --config "$1" >"$work/out" 2>"$work/err" || rc=$?
  out=$(cat "$work/out")
  err=$(cat "$work/err")
}

# The shipped file names the group the package creates (tempo); here root stands for it, and
# the store and socket point into the scratch folder, which must stay empty.
conf=$work/tempod.conf
sed -e 's|^daemon.socket_group = tempo$|daemon.socket_group = root|' \
    -e "s|^daemon.socket = .*|daemon.socket = $work/run/tempod.sock|" \
    -e "s|^control_socket = .*|control_socket = $work/run/control.sock|" \
    -e "s|^store_path = .*|store_path = $work/store|" "$shipped" >"$conf"
[ "$(grep -c "$work" "$conf")" -eq 3 ] || fail "the shipped configuration's socket, control socket or store line moved: $shipped"
check "$conf"
[ "$rc" -eq 0 ] || fail "the shipped configuration is refused (rc $rc): $err"
[ "$out" = "tempod: $conf: valid (device uring, socket $work/run/tempod.sock)" ] || fail "output: $out"
[ ! -e "$work/run" ] && [ ! -e "$work/store" ] || fail "--check-config created $(ls "$work")"

sed 's/^daemon.socket_group = root$/daemon.socket_group = tempo-no-such-group/' "$conf" >"$work/group.conf"
check "$work/group.conf"
[ "$rc" -eq 2 ] && [[ $err == *"invalid value 'tempo-no-such-group' for 'daemon.socket_group'"* ]] ||
  fail "a missing group: rc $rc, $err"

rc=0
TEMPO_BUDGET_BYTES=20GiB "$tempod" --check-config --config "$conf" 2>"$work/err" || rc=$?
[ "$rc" -eq 2 ] && grep -q "'budget_bytes' (21474836480) must be below 'fast_tier_bytes' (17179869184)" "$work/err" ||
  fail "budget above the fast tier: rc $rc, $(cat "$work/err")"

printf 'device = uring\nfast_tier_bytes = 1GiB\nbudget_bytes = 512MiB\nno_such_key = 1\n' >"$work/key.conf"
check "$work/key.conf"
[ "$rc" -eq 2 ] && [[ $err == *"unknown key 'no_such_key'"* ]] || fail "an unknown key: rc $rc, $err"

check "$work/absent.conf"
[ "$rc" -eq 2 ] && [[ $err == *absent.conf* ]] || fail "a missing file: rc $rc, $err"
echo "tempod_check_config: passed"
