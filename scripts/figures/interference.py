#!/usr/bin/python3 -B
"""Interference: what a learned staging rate adds. The same workload with and without a
background reader halving the device's staging rate for a window; left, p95 TTFT and C per
policy in both runs; right, each request's TTFT against its arrival under TempoKV-Static
and TempoKV with the reader, the window shaded. Reads OUT/interference/summary.csv and
requests.csv, writes OUT/interference/interference.png.
"""

import os

import replay_csv as rc


def main():
    d, png = rc.parse_args("interference", "interference.png", __doc__)
    rows = rc.read_csv(
        os.path.join(d, "summary.csv"),
        ["interference", "window_start_s", "window_end_s", "policy", "p95_ttft_s", "c_gib_s_per_req"],
    )
    reqs = rc.read_csv(os.path.join(d, "requests.csv"), ["interference", "policy", "arrival_s", "ttft_s"])
    policies = rc.policies_in(rows)
    runs = ["none", "reader"]
    fig, axes = rc.plt.subplots(1, 3, figsize=(11.0, 3.2))
    for ax, (key, title) in zip(axes[:2], [("p95_ttft_s", "p95 TTFT (s)"), ("c_gib_s_per_req", "C (GiB*s/req)")]):
        width = 0.8 / len(runs)
        for j, run in enumerate(runs):
            ys = [rc.one(rows, interference=run, policy=p)[key] for p in policies]
            xs = [i + (j - (len(runs) - 1) / 2) * width for i in range(len(policies))]
            ax.bar(
                xs,
                ys,
                width,
                color=[rc.color(p) for p in policies],
                alpha=1.0 if run == "reader" else 0.45,
                hatch="" if run == "reader" else "//",
                label="with the reader" if run == "reader" else "no interference",
            )
        ax.set_xticks(range(len(policies)), [rc.label(p) for p in policies], rotation=30, fontsize=7, ha="right")
        ax.set_title(title, fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3, axis="y")
    axes[0].legend(fontsize=7)
    reader = rc.pick(rows, interference="reader")[0]
    ax = axes[2]
    ax.axvspan(reader["window_start_s"], reader["window_end_s"], color="#dddddd", label="rate x%g" % reader["factor"])
    for p in ("tempo-static", "tempo"):
        pts = rc.pick(reqs, interference="reader", policy=p)
        ax.plot([r["arrival_s"] for r in pts], [r["ttft_s"] for r in pts], "-o", ms=3, lw=1, color=rc.color(p), label=rc.label(p))
    ax.set_xlabel("Arrival (s)", fontsize=8)
    ax.set_ylabel("TTFT (s)", fontsize=8)
    ax.set_title("Per request, with the reader", fontsize=9)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    rc.save(fig, png)


if __name__ == "__main__":
    main()
