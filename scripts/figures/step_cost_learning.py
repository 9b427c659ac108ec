#!/usr/bin/python3 -B
"""The online step-cost learner: mean relative TTU error of the first waiting claims at each
engine pass, with the model files' costs and with the learned ones, on two replays whose
true costs are off the model by +-30% (prefill slower and decode faster, and the reverse).
Reads DIR/slow_prefill.csv and DIR/slow_decode.csv (step_cost_convergence), writes
DIR/step_cost_learning.png.
"""

import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CASES = [("slow_prefill.csv", "true prefill 1.3x, decode 0.7x the model"),
         ("slow_decode.csv", "true prefill 0.7x, decode 1.3x the model")]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    fig, axes = plt.subplots(1, len(CASES), figsize=(10, 3.4), sharey=True)
    for ax, (name, title) in zip(axes, CASES):
        with open(os.path.join(d, name)) as f:
            rows = list(csv.DictReader(f))
        x = [int(r["pass"]) for r in rows]
        ax.plot(x, [100 * float(r["fixed_ttu_error"]) for r in rows], label="model files", lw=1)
        ax.plot(x, [100 * float(r["learned_ttu_error"]) for r in rows], label="learned online", lw=1)
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("engine pass (prefill or decode step)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean |TTU error| (% of true TTU)")
    axes[0].legend(fontsize=8)
    out = os.path.join(d, "step_cost_learning.png")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(out)


if __name__ == "__main__":
    main()
