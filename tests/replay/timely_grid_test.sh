#!/bin/sh
# The timely grid (`make timely-grid`, scripts/figures/timely_grid.py) in full, under the
# rule the product ships (tempo-risk): it fails if the rule is not timely or not frugal in a
# cell that scripts/figures/timely_named.csv does not name with its bound, or if a named
# cell no longer misses. About a minute on two quiet cores.
# usage: timely_grid_test.sh TEMPO_REPLAY SOURCE_DIR SCRATCH_DIR
set -eu
bin=$1
src=$2
out=$3
rm -rf "$out"
mkdir -p "$out"
/usr/bin/python3 -B "$src/scripts/figures/timely_grid.py" "$bin" "$out" \
  --named "$src/scripts/figures/timely_named.csv" >"$out/log" 2>&1 || {
  cat "$out/log"
  exit 1
}
for p in demand immediate queue-1 queue-4 tempo-static tempo tempo-risk; do
  grep -Eq "^$p +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ " "$out/log" || {
    echo "timely_grid_test: no summary line for $p"
    cat "$out/log"
    exit 1
  }
done
grep -Eq "^timely-grid: 144 cells in " "$out/log" || {
  echo "timely_grid_test: the grid did not run its 144 cells"
  cat "$out/log"
  exit 1
}
cat "$out/log"
rm -rf "$out"
