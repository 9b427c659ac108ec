"""Prefetch arms over HBM sizes: mean TTFT, fetch stall and demand-fetch P99 versus none."""
from plotlib import WORKLOADS, f, plt, read, save

rows = read("prefetch_grid.csv")
arms = ["none", "causal", "oracle", "laxity"]
metrics = [("ttft_mean_ms", "mean TTFT (ms)"), ("tpot_stall_ms", "decode stall (ms/token)"),
           ("demand_fetch_p99_us", "demand-fetch P99 (us)")]
fig, axes = plt.subplots(len(metrics), 3, figsize=(13, 9), sharex=True)
for j, w in enumerate(WORKLOADS):
    for i, (key, label) in enumerate(metrics):
        ax = axes[i][j]
        for a in arms:
            rs = sorted((r for r in rows if r["workload"] == w and r["prefetch"] == a),
                        key=lambda r: f(r, "hbm_blocks"))
            ax.plot([f(r, "hbm_blocks") for r in rs], [f(r, key) for r in rs], "-o", label=a)
        ax.set_xscale("log", base=2)
        if j == 0:
            ax.set_ylabel(label)
        if i == 0:
            ax.set_title(w)
        if i == len(metrics) - 1:
            ax.set_xlabel("HBM blocks (DRAM 8x, SSD 64x)")
axes[0][0].legend(fontsize=8)
fig.suptitle("Prefetch on a link shared with demand fetches")
save(fig, __file__)
