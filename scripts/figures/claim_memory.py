#!/usr/bin/python3 -B
"""Claim memory under churn: resident memory of a libtempo context versus report+cancel
cycles (at most 1,000 live claims), from tests/bench/claim_memory.c. Reads DIR/claims.csv
and, when present, DIR/claims_before.csv (the same program on a library that never erased
ended claims); writes DIR/claim_memory.png.
"""

import argparse
import csv
import os

import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402

BOUND_MIB = 16  # RSS after all cycles stays within this of RSS after the first 100,000


def read(path):
    with open(path, newline="") as f:
        return [(int(r["cycles"]), int(r["rss_kib"]) / 1024.0) for r in csv.DictReader(f)]


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("dir")
    d = p.parse_args().dir
    after = read(os.path.join(d, "claims.csv"))
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.plot([c / 1e6 for c, _ in after], [m for _, m in after], "-", color="#1f77b4",
            label="ended claims erased (retention 1,024)")
    before_path = os.path.join(d, "claims_before.csv")
    if os.path.exists(before_path):
        before = read(before_path)
        ax.plot([c / 1e6 for c, _ in before], [m for _, m in before], "--", color="#d62728",
                label="before: ended claims kept")
    base = next(m for c, m in after if c >= 100000)
    ax.axhline(base + BOUND_MIB, color="k", lw=0.8, ls=":", label="bound: +16 MiB over 100k")
    ax.set_xlabel("report + cancel cycles (millions)")
    ax.set_ylabel("resident memory (MiB)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = os.path.join(d, "claim_memory.png")
    fig.savefig(out, dpi=110)
    growth = after[-1][1] - base
    print("claim_memory: %d cycles, RSS %.1f MiB after 100k, %.1f MiB at the end: growth %.2f MiB"
          " = %.2f of the 16 MiB bound; %s" % (after[-1][0], base, after[-1][1], growth,
                                                growth / BOUND_MIB, out))


if __name__ == "__main__":
    main()
