"""Adaptive versus the best static policy and the offline MIN bound, per workload and size."""
from plotlib import f, plt, read, save

rows = read("goals.csv")
within = [r for r in rows if r["goal"] == "adaptive_within_5pct_of_best_static"]
gap = {r["workload"]: r for r in rows if r["goal"] == "gap_best_static_to_min"}
keys = [r["workload"] for r in within]
best = [f(r, "reference_value") / 1e9 for r in within]
adaptive = [f(r, "value") / 1e9 for r in within]
bound = [f(gap[k], "reference_value") / 1e9 for k in keys]
x = range(len(keys))
fig, ax = plt.subplots(figsize=(11, 4))
ax.bar([i - 0.27 for i in x], best, 0.27, label="best static policy")
ax.bar(list(x), adaptive, 0.27, label="adaptive")
ax.bar([i + 0.27 for i in x], bound, 0.27, label="min (offline bound)")
for i, r in enumerate(within):
    ax.text(i, adaptive[i], f"{adaptive[i] / best[i]:.2f}x", ha="center", va="bottom", fontsize=7)
ax.set_xticks(list(x), [f"{k}\n({r['reference']})" for k, r in zip(keys, within)], fontsize=7)
ax.set_ylabel("migration traffic (GB)")
ax.legend(fontsize=8)
ax.set_title("Goal: adaptive within 5% of the best static policy (label: adaptive / best)")
save(fig, __file__)
