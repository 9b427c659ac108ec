#!/usr/bin/env bash
# The RADOS cluster tier's read path against `rados bench seq` on the same local cluster, in
# the same run, alternating: same object size (4 MiB), same concurrency (16), same number
# of objects. Prints each round and the ratio of medians; CPU is CPU-seconds per GB read
# (the client process only: both readers talk to the same OSDs).
# Usage: scripts/bench/cluster_bench.sh BUILD_DIR [ROUNDS]
set -euo pipefail
build=${1:?build dir}
rounds=${2:-3}
here=$(cd "$(dirname "$0")/../.." && pwd)
export CEPH_TEST_DIR=${CEPH_TEST_DIR:-/tmp/tempo-ceph-bench} CEPH_TEST_OSD_BYTES=$((2 << 30))
conf=$CEPH_TEST_DIR/ceph.conf
objects=100 bytes=$((4 << 20)) depth=16
bench=$build/tests/cluster/bench_rados_tier
cluster=$here/scripts/ceph-test-cluster.sh
trap '"$cluster" stop' EXIT
"$cluster" stop
"$cluster" start >/dev/null
rados -c "$conf" -p tempo bench 600 write -b $bytes -O $bytes -t $depth --max-objects $objects \
  --no-cleanup >/dev/null
"$bench" "$conf" tempo write $objects $bytes $depth
ours=() theirs=() ours_cpu=() theirs_cpu=()
cpu_of() { # command...: prints "output<TAB>CPU seconds of the command (user + system)"
  local out
  out=$(/usr/bin/time -f 'cpu_seconds=%U+%S' "$@" 2>&1)
  printf '%s\t%s\n' "$(echo "$out" | tr '\n' ' ')" \
    "$(echo "$out" | sed -n 's/^cpu_seconds=\(.*\)+\(.*\)$/\1 \2/p' | awk '{print $1 + $2}')"
}
gb=$(awk -v o=$objects -v b=$bytes 'BEGIN {print o * b / 1e9}')
for ((i = 1; i <= rounds; i++)); do
  line=$(cpu_of rados -c "$conf" -p tempo bench 600 seq -t $depth)
  bw=$(echo "$line" | sed -n 's/.*Bandwidth (MB\/sec): *\([0-9.]*\).*/\1/p')
  cpu=$(awk -v t="$(echo "$line" | cut -f2)" -v gb=$gb 'BEGIN {printf "%.4f", t / gb}')
  theirs+=("$bw") theirs_cpu+=("$cpu")
  r=$("$bench" "$conf" tempo read $objects $bytes $depth)
  ours+=("$(echo "$r" | sed -n 's/.*read_MBps=\([0-9.]*\).*/\1/p')")
  ours_cpu+=("$(echo "$r" | sed -n 's/.*cpu_s_per_GB=\([0-9.]*\).*/\1/p')")
  echo "round $i: rados bench seq ${theirs[-1]} MB/s (${theirs_cpu[-1]} CPU-s/GB), RadosTier ${ours[-1]} MB/s (${ours_cpu[-1]} CPU-s/GB)"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
mo=$(median "${ours[@]}") mt=$(median "${theirs[@]}")
echo "median: RadosTier $mo MB/s, rados bench seq $mt MB/s: $(awk -v a="$mo" -v b="$mt" 'BEGIN {printf "%.0f%%", 100 * a / b}') of rados bench"
echo "median CPU-s/GB: RadosTier $(median "${ours_cpu[@]}"), rados bench $(median "${theirs_cpu[@]}")"
