#!/usr/bin/env bash
# A throw-away Ceph cluster on loopback for TempoKV's cluster-tier tests and demo:
# one monitor, one manager, three memstore OSDs, one replicated pool (size 3, min 2).
# Usage: scripts/ceph-test-cluster.sh start|stop|status|env|stop-osd N|start-osd N|stop-osds|start-osds|
#                                     wait-active|pause-osds|resume-osds
#   CEPH_TEST_DIR  state, config, keyring, logs (default /tmp/tempo-ceph)
#   CEPH_TEST_PORT monitor port, msgr v2 (default 46790)
#   CEPH_TEST_POOL pool name (default tempo)
#   CEPH_TEST_OSD_BYTES memory of each memstore OSD (default 1 GiB)
# `start` prints the config and keyring paths; `env` prints CEPH_CONF=... for eval.
# Nothing is written outside CEPH_TEST_DIR; `stop` kills the daemons and removes it.
set -euo pipefail
dir=${CEPH_TEST_DIR:-/tmp/tempo-ceph}
port=${CEPH_TEST_PORT:-46790}
pool=${CEPH_TEST_POOL:-tempo}
conf=$dir/ceph.conf
keyring=$dir/keyring
osds=3

ceph_() { timeout 30 ceph -c "$conf" --connect-timeout 10 "$@"; }

pids() { [ -d "$dir/run" ] && cat "$dir"/run/*.pid 2>/dev/null || true; }

write_conf() {
  cat >"$conf" <<CONF
[global]
fsid = $1
mon host = v2:127.0.0.1:$port
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr1 = false
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
keyring = $keyring
run dir = $dir/run
pid file = $dir/run/\$name.pid
admin socket = $dir/run/\$name.asok
log file = $dir/log/\$name.log
mon data = $dir/\$name
mgr data = $dir/\$name
osd data = $dir/\$name
osd objectstore = memstore
memstore device bytes = ${CEPH_TEST_OSD_BYTES:-1073741824}
osd pool default size = 3
osd pool default min size = 2
osd crush chooseleaf type = 0
osd pool default pg autoscale mode = off
mon allow pool delete = true
mon warn on pool no redundancy = false
mon osd down out interval = 0
osd heartbeat grace = 4
osd heartbeat interval = 1
mon osd report timeout = 10
osd op thread timeout = 30
# A stopped OSD unmounts its store (memstore then saves its objects): the whole pool can
# stop and come back with its data.
osd fast shutdown = false
mgr initial modules =
mon data avail warn = 1
mon data avail crit = 0
[mgr]
keyring = $dir/\$name/keyring
[osd]
keyring = $dir/\$name/keyring
CONF
}

wait_for() { # seconds description command...
  local t=$1 what=$2; shift 2
  local end=$((SECONDS + t))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || { echo "ceph-test-cluster: timed out after ${t}s waiting for $what" >&2; return 1; }
    sleep 0.5
  done
}

osd_runs() { # id
  local p
  p=$(cat "$dir/run/osd.$1.pid" 2>/dev/null || true)
  [ -n "$p" ] && kill -0 "$p" 2>/dev/null
}

# Starts OSD $1 unless it runs, and waits until its daemon does (ceph-osd returns once it
# has forked; the daemon can still fail while it loads its store): tried three times.
start_osd() {
  local try
  for try in 1 2 3; do
    osd_runs "$1" && return 0
    ceph-osd -c "$conf" -i "$1" 2>>"$dir/log/osd.$1.stderr" || true
    wait_for 20 "osd.$1's daemon (try $try)" osd_runs "$1" && return 0
  done
  echo "ceph-test-cluster: osd.$1 did not start; its log ends:" >&2
  tail -n 20 "$dir/log/osd.$1.log" >&2 || true
  return 1
}

# Stops OSD $1 as an operator would (SIGTERM, once: it tells the monitor and memstore saves
# its objects, which a second SIGTERM would cut short) and waits until the process is gone.
stop_osd() {
  local p
  p=$(cat "$dir/run/osd.$1.pid")
  kill "$p" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done
  echo "ceph-test-cluster: osd.$1 (pid $p) did not exit in 10 s" >&2
  return 1
}

# Every OSD up and every placement group active: the pool serves reads and writes.
all_active() {
  ceph -c "$conf" osd stat 2>/dev/null | grep -q "$osds osds: $osds up" &&
    ! ceph -c "$conf" pg stat 2>/dev/null | grep -Eq 'inactive|peering|down|stale|unknown|activating'
}

start() {
  if [ -n "$(pids)" ]; then echo "ceph-test-cluster: already running in $dir" >&2; exit 1; fi
  rm -rf "$dir"
  mkdir -p "$dir/run" "$dir/log"
  local fsid t0=$SECONDS
  fsid=$(uuidgen)
  write_conf "$fsid"
  ceph-authtool --create-keyring "$keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  ceph-authtool "$keyring" --gen-key -n client.admin --cap mon 'allow *' --cap osd 'allow *' \
    --cap mgr 'allow *' --cap mds 'allow *' >/dev/null
  monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$port]" "$dir/monmap" >/dev/null
  ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$keyring"
  ceph-mon -c "$conf" -i a 2>>"$dir/log/mon.a.stderr"
  wait_for 30 "the monitor" ceph_ mon stat
  mkdir -p "$dir/mgr.x"
  ceph_ auth get-or-create mgr.x mon 'allow profile mgr' osd 'allow *' mds 'allow *' \
    -o "$dir/mgr.x/keyring"
  ceph-mgr -c "$conf" -i x 2>>"$dir/log/mgr.x.stderr"
  local i uuid key id
  for ((i = 0; i < osds; i++)); do
    uuid=$(uuidgen)
    key=$(ceph-authtool --gen-print-key)
    id=$(echo "{\"cephx_secret\": \"$key\"}" | ceph_ osd new "$uuid" -i -)
    mkdir -p "$dir/osd.$id"
    ceph-authtool --create-keyring "$dir/osd.$id/keyring" --name "osd.$id" --add-key "$key" >/dev/null
    ceph-osd -c "$conf" -i "$id" --mkfs --osd-uuid "$uuid" >"$dir/log/osd.$id.mkfs.log" 2>&1
    start_osd "$id"
  done
  wait_for 60 "$osds OSDs up" bash -c "ceph -c '$conf' osd stat 2>/dev/null | grep -q '$osds osds: $osds up.*$osds in'"
  ceph_ osd pool create "$pool" 8 8 replicated >/dev/null 2>&1
  ceph_ osd pool application enable "$pool" tempokv >/dev/null 2>&1
  wait_for 60 "pool '$pool' writable" rados -c "$conf" -p "$pool" put tempo-probe "$conf"
  rados -c "$conf" -p "$pool" rm tempo-probe
  echo "ceph-test-cluster: up in $((SECONDS - t0)) s: 1 mon, 1 mgr, $osds OSDs (memstore), pool '$pool' size 3"
  echo "  config $conf  keyring $keyring"
}

stop() {
  local p
  for p in $(pids); do kill -CONT "$p" 2>/dev/null || true; kill "$p" 2>/dev/null || true; done
  for p in $(pids); do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  done
  rm -rf "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) ceph_ -s ;;
  env) echo "CEPH_CONF=$conf TEMPO_CEPH_POOL=$pool" ;;
  stop-osd) stop_osd "${2:?osd id}" ;;
  start-osd) start_osd "${2:?osd id}" ;;
  # The whole pool stopped: every OSD process ends (their objects kept by memstore), and back.
  stop-osds)
    waits=()
    for ((i = 0; i < osds; i++)); do stop_osd "$i" & waits+=($!); done
    for w in "${waits[@]}"; do wait "$w"; done ;;
  start-osds) for ((i = 0; i < osds; i++)); do start_osd "$i"; done ;;
  wait-active) wait_for 60 "$osds OSDs up, every placement group active" all_active ;;
  # An unreachable pool without losing state: every OSD frozen (SIGSTOP), then thawed.
  pause-osds) for f in "$dir"/run/osd.*.pid; do kill -STOP "$(cat "$f")"; done ;;
  resume-osds) for f in "$dir"/run/osd.*.pid; do kill -CONT "$(cat "$f")"; done ;;
  *)
    echo "usage: $0 start|stop|status|env|stop-osd N|start-osd N|stop-osds|start-osds|wait-active|pause-osds|resume-osds" >&2
    exit 2 ;;
esac
