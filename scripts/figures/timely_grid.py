#!/usr/bin/python3 -B
"""The timely grid (issue 30): 144 cells of 300 requests each, every cell under the seven
commitment policies on the sim device, each policy judged against the others in its cell:

  timely       p95 TTFT <= 1.01 x the best p95 of the advance policies (immediate, queue-1,
               queue-4, tempo-static, tempo);
  frugal       C <= 1.10 x the lowest C of any policy in the cell (demand included) that is
               itself timely;
  undominated  no other policy in the cell has a p95 and a C both no higher, one lower;
  bound        the C the policy's own claims would cost ready exactly when their retrieval
               is asked for: its C less the GiB*s they held ready before that (their reads
               and transfers as they were, zero slack). C / bound is 1 with no slack.

Cells: both models x fast tiers 100 and 25 GiB (the budget half) x fixed and Poisson
arrivals x three loads (0.7, 0.85 and 0.95 of the model's capacity on the documents, CAPACITY)
x NarrativeQA- and LooGLE-shaped
documents x seeds 1-3, at a 100% prefix ratio.

usage: timely_grid.py TEMPO_REPLAY OUT [--jobs N] [--rule POLICY] [--named CSV] [--known-outputs]
Writes OUT/timely-grid/{grid.csv,frontier.png} and prints, for every policy, the cells
where it is timely, frugal, both and undominated, its worst ratios and its median and worst
C / bound; then every cell where the rule (--rule, default tempo-risk) is not timely or
not frugal. With --named, exits 1 if that list differs from the cells the CSV names (each
with its bound): a miss not named, or a name that no longer misses.
"""

import argparse
import concurrent.futures
import csv
import itertools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import replay_csv as rc

POLICIES = ["demand", "immediate", "queue-1", "queue-4", "tempo-static", "tempo", "tempo-risk"]
ADVANCE = ["immediate", "queue-1", "queue-4", "tempo-static", "tempo"]
TIMELY_MARGIN = 1.01
FRUGAL_MARGIN = 1.10
MODELS = {"llama-3.1-8b-instruct": "llama", "qwen2.5-14b-instruct": "qwen"}
# Each model's capacity on each document shape, requests/s: 300 requests arriving every 50 ms
# under immediate (seed 1), completed / (last finish - first arrival). A load is a share of
# it, under 1 so that p95 is a statistic of a queue that forms and drains, not of how long
# the run lasted (at 1/s Qwen on NarrativeQA waits 90 s at p95, and more with more requests).
CAPACITY = {("llama", "narrativeqa"): 1.073, ("llama", "loogle"): 1.425,
            ("qwen", "narrativeqa"): 0.669, ("qwen", "loogle"): 0.908}
LOADS = [("light", 0.7), ("medium", 0.85), ("heavy", 0.95)]
TIERS = [100, 25]  # GiB; the budget is half
ARRIVALS = ["fixed", "poisson"]
WORKLOADS = ["narrativeqa", "loogle"]
SEEDS = [1, 2, 3]
REQUESTS = 300
COLUMNS = ["cell", "model", "fast_tier_gib", "arrivals", "load", "rate_per_s", "workload", "seed", "policy",
           "p95_ttft_s", "c_gib_s_per_req", "bound_gib_s_per_req", "p95_ratio", "c_ratio", "c_over_bound", "timely",
           "frugal", "undominated"]


def cells():
    for model, tier, arrival, workload, seed in itertools.product(MODELS, TIERS, ARRIVALS, WORKLOADS, SEEDS):
        for load, share in LOADS:
            rate = share * CAPACITY[(MODELS[model], workload)]
            name = "%s-%dg-%s-%s-%s-s%d" % (MODELS[model], tier, arrival, load, workload, seed)
            timing = ["--interval", "%dms" % round(1000 / rate)] if arrival == "fixed" else ["--rate", "%.4f" % rate]
            args = ["-m", model, "--fast-tier", "%dGiB" % tier, "--budget", "%dMiB" % (tier * 512), "--seed",
                    str(seed), "-w", workload, "--documents", str(REQUESTS), "-r", "100"] + timing
            yield name, {"model": model, "fast_tier_gib": tier, "arrivals": arrival, "load": load,
                         "rate_per_s": round(rate, 4), "workload": workload, "seed": seed}, args


def slack_gib_s(path, policies):
    """GiB*s per request each policy's claims held ready before their retrieval was asked for,
    from requests.csv. A claim's bytes are its whole hit."""
    held = {p: 0.0 for p in policies}
    count = {p: 0 for p in policies}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            p = r["policy"]
            count[p] += 1
            if r["path"] == "staged":
                held[p] += int(r["kv_bytes"]) * max(0.0, float(r["retrieval_requested_s"]) - float(r["ready_s"]))
    return {p: held[p] / float(1 << 30) / count[p] for p in policies}


def run_cell(binary, policies, extra, cell):
    name, labels, args = cell
    out = tempfile.mkdtemp(prefix="timely-grid-")
    try:
        cmd = [binary, "-e", "compare", "-j", "1", "-o", out, "-p", ",".join(policies)] + args + extra
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            rc.fail("%s failed: %s" % (" ".join(cmd), p.stderr.strip()))
        summary = {r["policy"]: r for r in rc.read_csv(os.path.join(out, "compare", "summary.csv"), ["policy"])}
        slack = slack_gib_s(os.path.join(out, "compare", "requests.csv"), policies)
    finally:
        shutil.rmtree(out)
    return judge(name, labels, {p: (summary[p]["p95_ttft_s"], summary[p]["c_gib_s_per_req"], slack[p])
                                for p in policies})


def judge(name, labels, m):
    """One row per policy of cell `name`; `m` maps a policy to (p95, C, slack)."""
    best = min(m[p][0] for p in ADVANCE)
    timely = {p: m[p][0] <= TIMELY_MARGIN * best for p in m}
    cheapest = min(m[p][1] for p in m if timely[p])
    rows = []
    for p, (p95, c, slack) in m.items():
        dominated = any(q != p and m[q][0] <= p95 and m[q][1] <= c and (m[q][0] < p95 or m[q][1] < c) for q in m)
        bound = c - slack
        row = dict(labels, cell=name, policy=p, p95_ttft_s=p95, c_gib_s_per_req=c, bound_gib_s_per_req=bound,
                   p95_ratio=p95 / best, c_ratio=c / cheapest, c_over_bound=c / bound if bound > 0 else 1.0,
                   timely=timely[p], frugal=c <= FRUGAL_MARGIN * cheapest, undominated=not dominated)
        rows.append(row)
    return rows


def summarise(rows, policies):
    print("%-14s %6s %6s %6s %11s %14s %12s %15s %14s" % (
        "policy", "timely", "frugal", "both", "undominated", "worst p95/best", "worst C/ref", "median C/bound",
        "worst C/bound"))
    n = len({r["cell"] for r in rows})
    for p in policies:
        mine = [r for r in rows if r["policy"] == p]
        ratios = [r["c_over_bound"] for r in mine]
        print("%-14s %6d %6d %6d %11d %14.3f %12.3f %15.3f %14.3f" % (
            p, sum(r["timely"] for r in mine), sum(r["frugal"] for r in mine),
            sum(r["timely"] and r["frugal"] for r in mine), sum(r["undominated"] for r in mine),
            max(r["p95_ratio"] for r in mine), max(r["c_ratio"] for r in mine), statistics.median(ratios),
            max(ratios)))
    print("(of %d cells; best: the best advance policy's p95; ref: the lowest C of a timely policy)" % n)


def misses(rows, rule):
    """(cell, check, by how much, C / bound) for every cell where `rule` is not timely or not
    frugal."""
    out = []
    for r in rows:
        if r["policy"] != rule:
            continue
        if not r["timely"]:
            out.append((r["cell"], "timely", "p95 %+.1f%% vs the best advance policy" % (100 * (r["p95_ratio"] - 1)),
                        r["c_over_bound"]))
        if not r["frugal"]:
            out.append((r["cell"], "frugal", "C %.2fx the cheapest timely policy's" % r["c_ratio"], r["c_over_bound"]))
    return out


def check_named(found, path):
    """Compares the misses with the cells `path` names; returns the number of differences."""
    with open(path, newline="") as f:
        named = {(r["cell"], r["check"]): r for r in csv.DictReader(f)}
    bad = 0
    for cell, check, what, ratio in found:
        if (cell, check) not in named:
            print("NOT NAMED: %s is not %s (%s; C/bound %.2f): name it in %s with its bound, or fix the rule" % (
                cell, check, what, ratio, path))
            bad += 1
    for cell, check in sorted(set(named) - {(c, k) for c, k, _, _ in found}):
        print("STALE: %s names %s as not %s, and it now is: remove the line" % (path, cell, check))
        bad += 1
    return bad


def frontier(rows, policies, path):
    """p95 / best advance p95 against C / the cheapest timely C, one point per policy per cell."""
    fig, ax = rc.plt.subplots(figsize=(6.4, 4.2))
    for p in policies:
        mine = [r for r in rows if r["policy"] == p]
        ax.scatter([r["c_ratio"] for r in mine], [r["p95_ratio"] for r in mine], s=9, alpha=0.6,
                   color=rc.color(p.split(":")[0]) if p in POLICIES else "#000000", label=rc.label(p),
                   marker="o" if p in POLICIES else "x")
    ax.axvline(FRUGAL_MARGIN, color="#555555", lw=0.8, ls="--")
    ax.axhline(TIMELY_MARGIN, color="#555555", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_ylim(0.9, max(1.3, min(2.0, max(r["p95_ratio"] for r in rows) + 0.02)))
    ax.set_xlabel("C / the cheapest timely policy's C in the cell (log)", fontsize=8)
    ax.set_ylabel("p95 TTFT / the best advance policy's", fontsize=8)
    ax.set_title("Timely grid: %d cells x %d requests; timely and frugal below and left of the dashes" % (
        len({r["cell"] for r in rows}), REQUESTS), fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, markerscale=1.5)
    fig.tight_layout()
    rc.save(fig, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("out")
    ap.add_argument("--jobs", type=int, default=2, help="cells run side by side (default 2)")
    ap.add_argument("--rule", default="tempo-risk",
                    help="the rule the misses are listed for (a -p name; tempo-risk:W replaces tempo-risk)")
    ap.add_argument("--named", help="CSV of the cells the rule may miss (cell,check,...): exit 1 on a difference")
    ap.add_argument("--known-outputs", action="store_true",
                    help="every policy's TTU estimator is given the true output lengths (what no forecast beats)")
    a = ap.parse_args()
    extra = ["--known-outputs"] if a.known_outputs else []
    if a.jobs < 1:
        rc.fail("--jobs must be at least 1")
    # A variant of tempo-risk takes its place, as if it were the default.
    policies = [a.rule if p == "tempo-risk" and a.rule.startswith("tempo-risk:") else p for p in POLICIES]
    if a.rule not in policies:
        policies.append(a.rule)
    root = os.path.join(a.out, "timely-grid")
    os.makedirs(root, exist_ok=True)
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        rows = [r for cell in pool.map(lambda c: run_cell(a.binary, policies, extra, c), cells()) for r in cell]
    with open(os.path.join(root, "grid.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: repr(v) if isinstance(v, float) else v for k, v in r.items()})
    summarise(rows, policies)
    found = misses(rows, a.rule)
    print("%s misses %d check(s) in %d cell(s):" % (a.rule, len(found), len({c for c, _, _, _ in found})))
    for cell, check, what, ratio in found:
        print("  %-40s not %-6s %s; C/bound %.2f" % (cell, check, what, ratio))
    frontier(rows, policies, os.path.join(root, "frontier.png"))
    print("timely-grid: %d cells in %.0f s (--jobs %d); %s" % (
        len(rows) // len(policies), time.monotonic() - start, a.jobs, os.path.join(root, "grid.csv")))
    if a.named and check_named(found, a.named):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
