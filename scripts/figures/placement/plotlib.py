"""Shared helpers for the placement-study figures: CSV reading and the output path.

Each fig_*.py script draws one figure from the CSVs `tempo-sim study` wrote:
    /usr/bin/python3 fig_policy_grid.py RESULTS_DIR   ->  RESULTS_DIR/fig_policy_grid.png
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

WORKLOADS = ["chat", "agent", "docqa"]


def results_dir():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {os.path.basename(sys.argv[0])} RESULTS_DIR")
    return sys.argv[1]


def read(name):
    path = os.path.join(results_dir(), name)
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        sys.exit(f"{os.path.basename(sys.argv[0])}: {e}")


def save(fig, script):
    out = os.path.join(results_dir(), os.path.basename(script).replace(".py", ".png"))
    fig.savefig(out, dpi=130, bbox_inches="tight")
    plt.close(fig)
    print(out)


def f(row, key):
    return float(row[key])
