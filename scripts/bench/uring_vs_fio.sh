#!/usr/bin/env bash
# Staging bandwidth of the uring device against fio (io_uring, O_DIRECT) on the same file, in
# the same run, alternating, page cache dropped before every measurement; CPU cost per GB
# staged, also verifying as before issue 11 (a second pass after the last read, portable XXH3);
# retrieval copy bandwidth against plain memcpy. Median of RUNS runs with min-max.
#
# Usage: scripts/bench/uring_vs_fio.sh [BUILD_DIR]      (make bench-uring)
# Settings (environment): RUNS=5 BYTES=4G OBJECT=32M FAST=1G WINDOW=8
#   CONFIGS="4M:16 1M:16 256K:32"   request size:queue depth pairs, the first is the target
#   STORE=<BUILD_DIR>/bench-uring/store   where the >= 4 GiB data file lives (a real disk)
set -euo pipefail
build=${1:-build}
runs=${RUNS:-5}
bytes=${BYTES:-4G}
object=${OBJECT:-32M}
fast=${FAST:-1G}
window=${WINDOW:-8}
configs=${CONFIGS:-"4M:16 1M:16 256K:32"}
out=$build/bench-uring
store=${STORE:-$out/store}
bench=$build/tests/uring/tempo-uring-bench
[ -x "$bench" ] || { echo "uring_vs_fio: $bench not built (make build)" >&2; exit 1; }
command -v fio >/dev/null || { echo "uring_vs_fio: fio missing (scripts/deps.sh uring)" >&2; exit 1; }

to_bytes() { numfmt --from=iec "$1"; }
mkdir -p "$out"
want=$(to_bytes "$bytes")
have=$( [ -f "$store/data" ] && stat -c %s "$store/data" || echo 0)
if [ "$have" -lt "$want" ]; then
  echo "uring_vs_fio: writing $bytes of $object objects to $store (once)"
  rm -rf "$store"
  "$bench" prepare --dir "$store" --bytes "$bytes" --object-bytes "$object" >/dev/null
fi
data_bytes=$(stat -c %s "$store/data")

dropped=yes
drop_caches() {
  sync
  if ! echo 3 2>/dev/null >/proc/sys/vm/drop_caches; then dropped=no; fi
}

# Our arena stages into 2 MiB pages; fio's buffers are 4 KiB pages unless it gets hugetlb
# memory. Reserve enough pages for fio's buffers (QD x request, SysV shm) so a fio-huge
# variant compares page size for page size; put the pool back afterwards.
hp_file=/proc/sys/vm/nr_hugepages
hp_old=$(cat "$hp_file")
huge=no
if echo $((hp_old + 80)) 2>/dev/null >"$hp_file" && [ "$(cat "$hp_file")" -ge $((hp_old + 80)) ]; then
  huge=yes
  trap 'echo "$hp_old" >"$hp_file"' EXIT
fi

results=$out/runs.jsonl
: >"$results"
# ours VARIANT [extra flags]: one staging run of every object in the store.
ours() {
  local name=$1
  shift
  drop_caches
  "$bench" stage --dir "$store" --qd "$qd" --request "$req" --fast-bytes "$fast" \
    --window "$window" "$@" | sed "s/^{/{\"tool\":\"$name\",\"cfg\":\"$cfg\",/" >>"$results"
}
# fio VARIANT [extra flags]: one sequential read of the same file.
fio_run() {
  local name=$1
  shift
  drop_caches
  fio --name=seqread --filename="$store/data" --rw=read --bs="$req" --iodepth="$qd" \
    --ioengine=io_uring --direct=1 --size="$data_bytes" --output-format=json "$@" |
    python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
r = j["read"]
secs = r["runtime"] / 1000.0
cpu = (j["usr_cpu"] + j["sys_cpu"]) / 100.0 * secs
gb = r["io_bytes"] / 1e9
print(json.dumps({"tool": sys.argv[1], "cfg": sys.argv[2], "bytes": r["io_bytes"],
                  "seconds": secs, "gbps": gb / secs, "cpu_s": cpu, "cpu_s_per_gb": cpu / gb}))
' "$name" "$cfg" >>"$results"
}
for cfg in $configs; do
  req=${cfg%:*}
  qd=${cfg#*:}
  for i in $(seq "$runs"); do
    ours tempo
    fio_run fio
    ours tempo-noreg --no-register
    fio_run fio-fixedbufs --fixedbufs
    ours tempo-noverify --no-verify
    ours tempo-second-pass --second-pass
    ours tempo-4k --no-huge
    if [ "$huge" = yes ]; then fio_run fio-huge --fixedbufs --iomem=shmhuge; fi
  done
done
for i in $(seq "$runs"); do
  "$bench" copy --dir "$store" --fast-bytes "$fast" | sed 's/^{/{"tool":"copy",/' >>"$results"
done

python3 - "$results" "$dropped" "$data_bytes" "$(nproc)" <<'PY' | tee "$out/results.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
dropped, data_bytes, cpus = sys.argv[2], int(sys.argv[3]), sys.argv[4]
def agg(vals):
    return statistics.median(vals), min(vals), max(vals)
def fmt(vals, f="{:.2f}"):
    m, lo, hi = agg(vals)
    return (f + " (" + f + "-" + f + ")").format(m, lo, hi)
print(f"Data file {data_bytes / 2**30:.2f} GiB, {len([r for r in rows if r['tool']=='fio'])} fio runs; "
      f"page cache dropped: {dropped}; {cpus} CPUs. Median (min-max).\n")
print("| request:QD | fio GB/s | fio --fixedbufs GB/s | fio, 2 MiB pages GB/s | tempo GB/s | "
      "tempo / best fio | fio CPU s/GB | tempo CPU s/GB | tempo CPU / fio CPU |")
print("|---|---|---|---|---|---|---|---|---|")
cfgs = []
for r in rows:
    if "cfg" in r and r["cfg"] not in cfgs:
        cfgs.append(r["cfg"])
sel = lambda t, c, k: [r[k] for r in rows if r["tool"] == t and r.get("cfg") == c]
med = lambda t, c: statistics.median(sel(t, c, "gbps"))
for c in cfgs:
    huge = sel("fio-huge", c, "gbps")
    best = max([med("fio", c), med("fio-fixedbufs", c)] + ([statistics.median(huge)] if huge else []))
    print(f"| {c} | {fmt(sel('fio', c, 'gbps'))} | {fmt(sel('fio-fixedbufs', c, 'gbps'))} | "
          f"{fmt(huge) if huge else 'no hugetlb pool'} | "
          f"{fmt(sel('tempo', c, 'gbps'))} | {med('tempo', c) / best:.1%} | "
          f"{fmt(sel('fio', c, 'cpu_s_per_gb'), '{:.3f}')} | "
          f"{fmt(sel('tempo', c, 'cpu_s_per_gb'), '{:.3f}')} | "
          f"{statistics.median(sel('tempo', c, 'cpu_s_per_gb')) / statistics.median(sel('fio', c, 'cpu_s_per_gb')):.2f} |")
print("\nVariants of the tempo staging run (GB/s; CPU s/GB):\n")
print("| request:QD | default | no registered buffers | no checksum verification | "
      "CPU s/GB without checksums | verified in a second pass (before issue 11) | "
      "its CPU s/GB | 4 KiB pages instead of 2 MiB |")
print("|---|---|---|---|---|---|---|---|")
for c in cfgs:
    print(f"| {c} | {fmt(sel('tempo', c, 'gbps'))} | {fmt(sel('tempo-noreg', c, 'gbps'))} | "
          f"{fmt(sel('tempo-noverify', c, 'gbps'))} | "
          f"{fmt(sel('tempo-noverify', c, 'cpu_s_per_gb'), '{:.3f}')} | "
          f"{fmt(sel('tempo-second-pass', c, 'gbps'))} | "
          f"{fmt(sel('tempo-second-pass', c, 'cpu_s_per_gb'), '{:.3f}')} | "
          f"{fmt(sel('tempo-4k', c, 'gbps'))} |")
cp = [r for r in rows if r["tool"] == "copy"]
print("\n| retrieval copy GB/s | memcpy GB/s | retrieval/memcpy |")
print("|---|---|---|")
print(f"| {fmt([r['retrieval_gbps'] for r in cp])} | {fmt([r['memcpy_gbps'] for r in cp])} | "
      f"{fmt([r['ratio'] for r in cp], '{:.1%}')} |")
PY
