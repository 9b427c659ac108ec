#!/bin/sh
# make run's capacity sweep on a small scale on the sim device: tempo-replay -e fig5 with
# every policy and dax-l1, then scripts/figures/sweep.py. Checks the table's and
# sweep.csv's shape (three capacities, the budget half of each, seven policies at each and
# dax-l1 at 100 GiB only) and what holds by construction: dax-l1 holds no protected
# capacity and defers nothing; no policy's C is below its bound; demand's C is its bound
# (it commits when its retrieval is asked for); the best advance policy's p95 ratio is 1.
# usage: sweep_test.sh TEMPO_REPLAY SOURCE_DIR SCRATCH_DIR
set -eu
bin=$1
src=$2
out=$3
rm -rf "$out"
mkdir -p "$out"
"$bin" -e fig5 -j 1 -o "$out" --documents 16 --rate 1.0 \
  -p demand,immediate,queue-1,queue-4,tempo-static,tempo,tempo-risk,dax-l1 >"$out/replay.log" 2>&1 || {
  cat "$out/replay.log"
  exit 1
}
/usr/bin/python3 -B "$src/scripts/figures/sweep.py" "$out" >"$out/log" 2>&1 || {
  cat "$out/log"
  exit 1
}
cat "$out/log"
/usr/bin/python3 -B - "$out" <<'PY'
import csv, sys
out = sys.argv[1]
fails = []
def check(ok, what):
    if not ok:
        fails.append(what)
rows = list(csv.DictReader(open(out + "/fig5/sweep.csv")))
check(list(rows[0].keys()) == ["fast_tier_gib", "budget_gib", "policy", "completed", "p95_ttft_s", "throughput_tps",
                              "c_gib_s_per_req", "bound_gib_s_per_req", "c_over_bound", "p95_over_best_advance",
                              "c_over_immediate", "deferred_claims"], "sweep.csv columns: %s" % list(rows[0].keys()))
seven = ["demand", "immediate", "queue-1", "queue-4", "tempo-static", "tempo", "tempo-risk"]
for tier, budget in ((100, 50), (50, 25), (25, 12.5)):
    mine = [r for r in rows if float(r["fast_tier_gib"]) == tier]
    want = seven + (["dax-l1"] if tier == 100 else [])
    check([r["policy"] for r in mine] == want, "%g GiB: policies %s" % (tier, [r["policy"] for r in mine]))
    check(all(float(r["budget_gib"]) == budget for r in mine), "%g GiB: the budget is not %g" % (tier, budget))
    check(all(int(r["completed"]) == 16 for r in mine), "%g GiB: not every request completed" % tier)
    for r in mine:
        c, bound = float(r["c_gib_s_per_req"]), float(r["bound_gib_s_per_req"])
        check(c >= bound - 1e-9, "%g GiB %s: C %g below its bound %g" % (tier, r["policy"], c, bound))
    by = {r["policy"]: r for r in mine}
    d = by["demand"]
    check(abs(float(d["c_gib_s_per_req"]) - float(d["bound_gib_s_per_req"])) < 1e-9, "%g GiB: demand's C is not its bound" % tier)
    check(abs(float(by["immediate"]["c_over_immediate"]) - 1) < 1e-12, "%g GiB: immediate's C ratio is not 1" % tier)
    advance = [float(by[p]["p95_over_best_advance"]) for p in ("immediate", "queue-1", "queue-4", "tempo-static", "tempo")]
    check(min(advance) == 1.0, "%g GiB: the best advance policy's p95 ratio is %g" % (tier, min(advance)))
    if tier == 100:
        x = by["dax-l1"]
        check(float(x["c_gib_s_per_req"]) == 0 and int(x["deferred_claims"]) == 0, "dax-l1 held capacity or deferred")
log = open(out + "/log").read().splitlines()
table = [l for l in log if l[:1].isdigit()]
check(len(table) == 22, "the table has %d policy rows, not 22" % len(table))
check(sum(1 for l in log if l.startswith("tempo-risk at ")) == 3, "not one verdict per capacity")
for f in fails:
    print("sweep_test: " + f)
sys.exit(1 if fails else 0)
PY
rm -rf "$out"
