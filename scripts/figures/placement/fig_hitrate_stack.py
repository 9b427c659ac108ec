"""Where reads are served from (HBM, DRAM, SSD, recomputed), per workload and policy."""
from plotlib import WORKLOADS, f, plt, read, save

rows = [r for r in read("policy_grid.csv") if r["baseline"] == "tiered"]
show = ["lru", "reuse-frequency", "ewma", "adaptive", "min"]
fig, axes = plt.subplots(1, 3, figsize=(12, 3.8), sharey=True)
parts = [("hit_hbm", "HBM"), ("hit_dram", "DRAM"), ("hit_ssd", "SSD"),
         ("recompute_share", "recomputed")]
colors = ["#2b8cbe", "#7bccc4", "#fdae6b", "#d7301f"]
for ax, w in zip(axes, WORKLOADS):
    bottom = [0.0] * len(show)
    for (key, label), c in zip(parts, colors):
        vals = [next(f(r, key) for r in rows if r["workload"] == w and r["policy"] == p)
                for p in show]
        ax.bar(show, vals, bottom=bottom, label=label, color=c)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_title(w)
    ax.tick_params(axis="x", rotation=35)
    plt.setp(ax.get_xticklabels(), ha="right")
axes[0].set_ylabel("share of reads")
axes[-1].legend(loc="lower right", fontsize=8)
fig.suptitle("Per-tier hit rate at the default 1:8:64 shape (R = 73)")
save(fig, __file__)
