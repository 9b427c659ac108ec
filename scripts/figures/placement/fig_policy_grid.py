"""Migration traffic (GB, lower is better) over policy x workload; the best cell boxed."""
from plotlib import WORKLOADS, f, plt, read, save

rows = [r for r in read("policy_grid.csv") if r["baseline"] == "tiered"]
policies = list(dict.fromkeys(r["policy"] for r in rows))
grid = [[next(f(r, "migration_bytes") / 1e9 for r in rows
              if r["workload"] == w and r["policy"] == p) for w in WORKLOADS] for p in policies]
fig, ax = plt.subplots(figsize=(6.5, 4.8))
im = ax.imshow(grid, cmap="viridis_r", aspect="auto")
ax.set_xticks(range(len(WORKLOADS)), WORKLOADS)
ax.set_yticks(range(len(policies)), policies)
for j, _ in enumerate(WORKLOADS):
    col = [grid[i][j] for i in range(len(policies)) if policies[i] != "min"]
    best = min(col)
    for i, p in enumerate(policies):
        v = grid[i][j]
        ax.text(j, i, f"{v:.1f}", ha="center", va="center",
                color="white" if v > (max(col) + best) / 2 else "black", fontsize=8)
        if v == best and p != "min":
            ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, lw=2.5, ec="red"))
fig.colorbar(im, ax=ax, label="migration traffic, GB (all links)")
ax.set_title("Migration traffic by policy (boxed: best online policy; min = offline bound)")
save(fig, __file__)
