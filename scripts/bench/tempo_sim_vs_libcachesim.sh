#!/usr/bin/env bash
# tempo-sim against libCacheSim's cachesim (the reference cache simulator), side by side in
# one run on the same access stream: a 637,836-access multi-turn conversation trace
# (scripts/bench/tempo_sim_trace.py), which tempo-sim reads as JSONL and exports as the CSV
# that cachesim replays. Each pair alternates, RUNS times; the figure is the median wall and
# CPU (user + sys) time of the whole process, end to end (reading the input included), and
# the ratio cachesim / tempo-sim (>= 1: tempo-sim is at least as fast). Miss ratios are
# printed side by side (cachesim prints 4 digits); they must agree.
#
# libCacheSim is built from source in a scratch folder, never vendored: cloned from GitHub,
# or taken from LIBCACHESIM_SRC (a checkout). Without network or build dependencies the
# bench says SKIP and exits 0.
#
# Usage: scripts/bench/tempo_sim_vs_libcachesim.sh [BUILD_DIR]   (make placement-vs-libcachesim)
# Settings (environment): RUNS=5  SIZE=41 (cache blocks)  LIBCACHESIM_SRC=<checkout>
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(realpath -m "${1:-$root/build}")
runs=${RUNS:-5}
size=${SIZE:-41}
scratch=$build/libcachesim-bench
skip() {
  echo "tempo_sim_vs_libcachesim: SKIP: $*"
  exit 0
}

"$root/scripts/deps.sh" libcachesim || skip "cannot install libCacheSim's build dependencies"
mkdir -p "$scratch"
src=${LIBCACHESIM_SRC:-$scratch/src}
if [ ! -f "$src/CMakeLists.txt" ]; then
  git clone -q --depth 1 https://github.com/1a1a11a/libCacheSim "$src" >"$scratch/clone.log" 2>&1 ||
    skip "cannot clone https://github.com/1a1a11a/libCacheSim (no network?); set LIBCACHESIM_SRC"
fi
{ [ -f "$scratch/build/build.ninja" ] ||
  cmake -S "$src" -B "$scratch/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DENABLE_TESTS=OFF; } \
  >"$scratch/configure.log" 2>&1 || skip "libCacheSim did not configure ($scratch/configure.log)"
cmake --build "$scratch/build" --target cachesim >"$scratch/build.log" 2>&1 ||
  skip "libCacheSim did not build ($scratch/build.log)"
cachesim=$scratch/build/bin/cachesim

[ -f "$build/build.ninja" ] ||
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target tempo-sim >/dev/null
sim=$build/tools/tempo-sim/tempo-sim

/usr/bin/python3 "$root/scripts/bench/tempo_sim_trace.py" "$scratch/conv.jsonl"
"$sim" export --trace "$scratch/conv.jsonl" --out "$scratch/conv.csv"

cd "$scratch"
SIM=$sim CACHESIM=$cachesim RUNS=$runs SIZE=$size /usr/bin/python3 - <<'PY'
import json, os, re, resource, statistics, subprocess, time

sim, cachesim = os.environ["SIM"], os.environ["CACHESIM"]
runs, size = int(os.environ["RUNS"]), os.environ["SIZE"]
csv_params = "time-col=1,obj-id-col=2,obj-size-col=3,has-header=true,obj-id-is-num=true"


def timed(cmd):
    """Wall and CPU (user + sys of the child) seconds, and stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out


def tempo_ratio(out):
    j = json.loads(out)
    misses = j["accesses"] - j["reads_from"]["hbm"] - j["write_hits"]
    return misses / j["accesses"], j["accesses"]


def cachesim_ratio(out):
    m = re.search(r"(\d+) req, miss ratio ([0-9.]+)", out)
    return float(m.group(2)), int(m.group(1))


rows = []
one_tier = ["--hbm", size, "--dram", "0", "--ssd", "0", "--json"]
pairs = [("lru", "lru"), ("arc", "arc"), ("reuse-frequency", "lfu")]
for policy, algo in pairs:
    t_sim, t_ref = [], []
    for _ in range(runs):
        w, c, out = timed([sim, "run", "--trace", "conv.jsonl", "--policy", policy] + one_tier)
        t_sim.append((w, c))
        ours, n = tempo_ratio(out)
        w, c, out = timed([cachesim, "conv.csv", "csv", algo, size, "-t", csv_params,
                           "--ignore-obj-size", "1"])
        t_ref.append((w, c))
        ref, n_ref = cachesim_ratio(out)
    rows.append((policy, algo, n, ours, ref, t_sim, t_ref))

med = lambda xs, i: statistics.median(x[i] for x in xs)
print(f"stream: {rows[0][2]:,} accesses; one cache of {size} blocks; median of {runs} runs, alternating")
print(f"{'tempo-sim':<16} {'cachesim':<9} {'miss ratio ours/ref':<21} "
      f"{'wall s ours/ref':<17} {'cpu s ours/ref':<16} ratio wall  ratio cpu")
ok = True
for policy, algo, n, ours, ref, ts, tr in rows:
    agree = f"{ours:.4f}" == f"{ref:.4f}"
    ok = ok and agree
    print(f"{policy:<16} {algo:<9} {ours:.4f}/{ref:.4f}{'' if agree else ' DIFFER':<7}    "
          f"{med(ts, 0):.3f}/{med(tr, 0):.3f}      {med(ts, 1):.3f}/{med(tr, 1):.3f}     "
          f"{med(tr, 0) / med(ts, 0):6.2f}x    {med(tr, 1) / med(ts, 1):6.2f}x")

# The engine with the timing model on: the tiered default shape, laxity against none.
lax = {}
for pf in ("none", "laxity"):
    lax[pf] = [timed([sim, "run", "--trace", "conv.jsonl", "--policy", "lru", "--prefetch", pf])[:2]
               for _ in range(runs)]
print(f"tiered default shape, lru: --prefetch none {med(lax['none'], 1):.3f} s CPU, "
      f"laxity {med(lax['laxity'], 1):.3f} s CPU ({med(lax['laxity'], 1) / med(lax['none'], 1):.2f}x)")
print(f"load average: {os.getloadavg()[0]:.1f}")
if not ok:
    raise SystemExit("tempo_sim_vs_libcachesim: miss ratios differ")
PY
