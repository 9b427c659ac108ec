#!/bin/sh
# The timely grid's command (`make timely-grid`, scripts/figures/timely_grid.py) on its
# quick setup: one cell and a 3-point sweep of tempo-risk's knob. It must run to its end,
# print the cell with the p95 TTFT and C of every policy, check it, and write the sweep.
# usage: timely_grid_smoke.sh TEMPO_REPLAY SOURCE_DIR SCRATCH_DIR
set -eu
bin=$1
src=$2
out=$3
rm -rf "$out"
mkdir -p "$out"
/usr/bin/python3 -B "$src/scripts/figures/timely_grid.py" "$bin" "$out" --quick >"$out/log" 2>&1 || {
  cat "$out/log"
  exit 1
}
for p in demand immediate queue-1 queue-4 tempo-static tempo tempo-risk; do
  grep -Eq "^llama-100-100g-fixed-0.5s-s1-narrativeqa .* $p [0-9]+\.[0-9]+/[0-9]+\.[0-9]+ " "$out/log" || {
    echo "timely_grid_smoke: the cell line lacks policy $p"
    cat "$out/log"
    exit 1
  }
done
grep -Eq "^timely-grid: [01] of 1 cells pass every check$" "$out/log" || {
  echo "timely_grid_smoke: no verdict line"
  cat "$out/log"
  exit 1
}
# Two models x (six baselines + three knob values), and a header.
rows=$(wc -l <"$out/timely-grid/pareto.csv")
[ "$rows" -eq 19 ] || {
  echo "timely_grid_smoke: pareto.csv has $rows lines, expected 19"
  exit 1
}
rm -rf "$out"
echo "timely_grid_smoke: ok"
