#!/usr/bin/env bash
# Runs every Google Benchmark binary of a build tree (BUILD/benchmarks.txt, which CMake
# writes); results go to BUILD/bench/*.json.
# Usage: scripts/bench.sh BUILD [filter-regex]
set -euo pipefail
build=${1:?usage: scripts/bench.sh BUILD [filter]}
filter=${2:-.}
mkdir -p "$build/bench"
[ -s "$build/benchmarks.txt" ] || { echo "bench.sh: $build/benchmarks.txt missing: configure $build first" >&2; exit 1; }
while read -r bin; do
  name=$(basename "$bin")
  echo "== $name"
  "$bin" --benchmark_filter="$filter" --benchmark_out="$build/bench/$name.json" \
    --benchmark_out_format=json </dev/null
done <"$build/benchmarks.txt"
