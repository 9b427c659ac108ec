#!/usr/bin/python3 -B
"""The default comparison of `make run` (all policies, one model, 100% prefix cache
ratio): p95 TTFT, mean TTFT, output throughput and C, one bar per policy. Reads
OUT/compare/summary.csv and, where the run had one (--default-comparison), the 4-engine
run's OUT/compare/engines-4/summary.csv as a second row of panels; writes
OUT/compare/compare.png.
"""

import os

import replay_csv as rc

PANELS = [
    ("p95_ttft_s", "p95 TTFT (s)", "%.2f"),
    ("mean_ttft_s", "Mean TTFT (s)", "%.2f"),
    ("throughput_tps", "Output throughput (token/s)", "%.1f"),
    ("c_gib_s_per_req", "C (GiB*s/req)", "%.2f"),
]


def draw_row(axes, rows, prefix):
    policies = rc.policies_in(rows)
    for ax, (key, title, fmt) in zip(axes, PANELS):
        for i, p in enumerate(policies):
            v = rc.pick(rows, policy=p)[0][key]
            ax.bar(i, v, 0.7, color=rc.color(p))
            ax.annotate(fmt % v, (i, v), ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(policies)), [rc.label(p) for p in policies], rotation=35, fontsize=7, ha="right")
        ax.set_title(prefix + title, fontsize=9)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.1)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(axis="y", alpha=0.3)


def main():
    d, png = rc.parse_args("compare", "compare.png", __doc__)
    required = ["policy"] + [k for k, _, _ in PANELS]
    runs = [("", rc.read_csv(os.path.join(d, "summary.csv"), required))]
    shared = os.path.join(d, "engines-4", "summary.csv")
    if os.path.exists(shared):
        runs.append(("4 engines: ", rc.read_csv(shared, required)))
    fig, axes = rc.plt.subplots(len(runs), len(PANELS), figsize=(3.2 * len(PANELS), 3.2 * len(runs)), squeeze=False)
    for row_axes, (prefix, rows) in zip(axes, runs):
        draw_row(row_axes, rows, prefix)
    first = runs[0][1][0]
    what = ", ".join("%s %s" % (k, first[k]) for k in ("model", "workload", "device") if k in first)
    if what:
        fig.suptitle("tempo-replay default comparison: " + what, fontsize=10)
    fig.tight_layout()
    rc.save(fig, png)


if __name__ == "__main__":
    main()
