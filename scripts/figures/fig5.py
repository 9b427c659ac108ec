#!/usr/bin/python3 -B
"""Figure 5: sensitivity to fast-tier capacity (100, 50, 25 GiB with protected-capacity
budgets of 50, 25, 12.5 GiB), Llama-3.1-8B-Instruct at a 100% prefix cache ratio:
output throughput, p95 TTFT, mean TTFT and C per policy, plus the claims the budget
deferred. Reads OUT/fig5/summary.csv, writes OUT/fig5/fig5.png.
"""

import os

import replay_csv as rc

PANELS = [
    ("throughput_tps", "Throughput (token/s)"),
    ("p95_ttft_s", "p95 TTFT (s)"),
    ("mean_ttft_s", "Mean TTFT (s)"),
    ("c_gib_s_per_req", "C (GiB*s/req)"),
    ("deferred_claims", "Claims deferred by budget"),
]


def main():
    d, png = rc.parse_args("fig5", "fig5.png", __doc__)
    rows = rc.read_csv(os.path.join(d, "summary.csv"), ["fast_tier_gib", "policy"] + [k for k, _ in PANELS])
    tiers = sorted({r["fast_tier_gib"] for r in rows}, reverse=True)  # the paper: 100, 50, 25
    policies = rc.policies_in(rows)
    fig, axes = rc.plt.subplots(1, len(PANELS), figsize=(3.0 * len(PANELS), 3.0))
    for ax, (key, title) in zip(axes, PANELS):
        for k, p in enumerate(policies):
            ys = [rc.one(rows, fast_tier_gib=t, policy=p)[key] for t in tiers]
            # Small horizontal offsets keep coinciding policies visible.
            xs = [i + (k - (len(policies) - 1) / 2) * 0.03 for i in range(len(tiers))]
            ax.plot(xs, ys, "-o", color=rc.color(p), label=rc.label(p), ms=4, lw=1.2)
        ax.set_xticks(range(len(tiers)), ["%g" % t for t in tiers])
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("Fast-tier capacity (GiB)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    axes[-1].yaxis.get_major_locator().set_params(integer=True)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=len(names), fontsize=8, bbox_to_anchor=(0.5, -0.12))
    fig.tight_layout()
    rc.save(fig, png)


if __name__ == "__main__":
    main()
