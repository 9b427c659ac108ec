#!/usr/bin/env bash
# Reading from the pool against `rados bench seq` on the same local cluster, in the same run,
# alternating, same object size (4 MiB), same concurrency (16), same number of objects:
#   rados bench seq        over objects written by `rados bench write`
#   RadosTier              the cluster tier alone (bench_rados_tier), into one buffer per slot
#   staging (uring device) claims through the C ABI (bench_pool_staging): an in-process
#                          context with an empty local store stages every object from the
#                          pool into its fast tier, 16 claims ahead
# Prints each round and the medians. Bandwidth in MiB/s (rados bench's "MB/sec" is MiB/s);
# CPU is the client process's user + system seconds per GiB read (every reader talks to the
# same OSDs, whose CPU is not counted).
# Usage: scripts/bench/cluster_bench.sh BUILD_DIR [ROUNDS]
set -euo pipefail
build=${1:?build dir}
rounds=${2:-3}
here=$(cd "$(dirname "$0")/../.." && pwd)
export CEPH_TEST_DIR=${CEPH_TEST_DIR:-/tmp/tempo-ceph-bench} CEPH_TEST_OSD_BYTES=$((3 << 30))
conf=$CEPH_TEST_DIR/ceph.conf
objects=100 bytes=$((4 << 20)) depth=16
tier=$build/tests/cluster/bench_rados_tier
staging=$build/tests/cluster/bench_pool_staging
cluster=$here/scripts/ceph-test-cluster.sh
work=$(mktemp -d "$build/cluster-bench-XXXXXX")
trap '"$cluster" stop; rm -rf "$work"' EXIT
"$cluster" stop
"$cluster" start >/dev/null
rados -c "$conf" -p tempo bench 600 write -b $bytes -O $bytes -t $depth --max-objects $objects \
  --no-cleanup >/dev/null
"$tier" "$conf" tempo write $objects $bytes $depth
"$staging" "$conf" tempo write $objects $bytes $depth "$work"
gib=$(awk -v o=$objects -v b=$bytes 'BEGIN {print o * b / 2^30}')
field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p"; }
bench=() bench_cpu=() ours=() ours_cpu=() staged=() staged_cpu=() ratios=()
for ((i = 1; i <= rounds; i++)); do
  out=$(/usr/bin/time -f 'cpu_seconds=%U %S' rados -c "$conf" -p tempo bench 600 seq -t $depth 2>&1)
  bench+=("$(echo "$out" | sed -n 's/.*Bandwidth (MB\/sec): *\([0-9.]*\).*/\1/p')")
  bench_cpu+=("$(echo "$out" | sed -n 's/^cpu_seconds=//p' | awk -v g="$gib" '{printf "%.4f", ($1 + $2) / g}')")
  r=$("$tier" "$conf" tempo read $objects $bytes $depth)
  ours+=("$(echo "$r" | field read_MiBps)") ours_cpu+=("$(echo "$r" | field cpu_s_per_GiB)")
  r=$("$staging" "$conf" tempo read $objects $bytes $depth "$work")
  staged+=("$(echo "$r" | field read_MiBps)") staged_cpu+=("$(echo "$r" | field cpu_s_per_GiB)")
  ratios+=("$(awk -v a="${staged[-1]}" -v b="${bench[-1]}" 'BEGIN {printf "%.1f", 100 * a / b}')")
  echo "round $i (MiB/s, CPU-s/GiB): rados bench seq ${bench[-1]} (${bench_cpu[-1]})," \
    "RadosTier ${ours[-1]} (${ours_cpu[-1]}), staging ${staged[-1]} (${staged_cpu[-1]})," \
    "staging/rados bench ${ratios[-1]}%"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
mb=$(median "${bench[@]}") mo=$(median "${ours[@]}") ms=$(median "${staged[@]}")
pct() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.0f%%", 100 * a / b}'; }
echo "median MiB/s: rados bench seq $mb, RadosTier $mo ($(pct "$mo" "$mb")), staging through the uring device $ms ($(pct "$ms" "$mb"))"
echo "median of the rounds' staging/rados bench: $(median "${ratios[@]}")%"
echo "median CPU-s/GiB: rados bench seq $(median "${bench_cpu[@]}"), RadosTier $(median "${ours_cpu[@]}"), staging $(median "${staged_cpu[@]}")"
