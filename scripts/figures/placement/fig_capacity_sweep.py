"""The conversation trace at the physical shape, growing until it overflows every tier:
capacity misses (recomputes beyond first uses) and HBM misses per policy, and the
demand-fetch P99 of each prefetcher against none (demand-first links)."""
from plotlib import f, plt, read, save

rows = read("capacity_sweep.csv")
fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
if not rows:
    for ax in axes:
        ax.text(0.5, 0.5, "no trace given to tempo-sim study", ha="center", va="center")
    save(fig, __file__)
    raise SystemExit(0)
policies = list(dict.fromkeys(r["policy"] for r in rows))
for p in policies:
    pts = [r for r in rows if r["policy"] == p]
    x = [f(r, "ws_over_capacity") for r in pts]
    axes[0].plot(x, [f(r, "capacity_misses") / 1e3 for r in pts], marker="o", label=p)
    axes[1].plot(x, [f(r, "hbm_misses") / f(r, "reads") for r in pts], marker="o", label=p)
axes[0].set_xlabel("working set / (HBM + DRAM + SSD)")
axes[0].set_ylabel("capacity misses (recomputes beyond first use), thousands")
axes[0].axvline(1.0, color="grey", lw=0.8, ls=":")
axes[1].set_xlabel("working set / (HBM + DRAM + SSD)")
axes[1].set_ylabel("HBM miss share of reads")
axes[0].legend(fontsize=7)
pf = [r for r in read("physical_prefetch.csv") if r["link_priority"] == "demand"]
for name in dict.fromkeys(r["prefetch"] for r in pf):
    pts = [r for r in pf if r["prefetch"] == name]
    axes[2].plot([int(r["requests"]) for r in pts], [f(r, "demand_fetch_p99_us") / 1e3 for r in pts],
                 marker="o", label=name)
axes[2].set_xlabel("requests of the trace")
axes[2].set_ylabel("demand-fetch P99, ms (demand-first links)")
axes[2].legend(fontsize=7)
fig.suptitle("Physical shape, conversation trace: capacity misses and prefetch")
save(fig, __file__)
