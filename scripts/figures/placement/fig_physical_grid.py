"""Every policy and baseline at the physical shape: misses and TTFT per workload. The
generated workloads fit in HBM (flat bars); the conversation trace does not."""
from plotlib import f, plt, read, save

rows = read("physical_grid.csv")
workloads = list(dict.fromkeys(r["workload"] for r in rows))
fig, axes = plt.subplots(2, len(workloads), figsize=(4.2 * len(workloads), 7), squeeze=False)
for j, w in enumerate(workloads):
    pts = [r for r in rows if r["workload"] == w]
    names = [r["policy"] if r["baseline"] == "tiered" else r["baseline"] for r in pts]
    y = range(len(pts))
    axes[0][j].barh(y, [f(r, "misses") / 1e3 for r in pts], color="tab:blue", label="HBM misses")
    axes[0][j].barh(y, [f(r, "recomputes") / 1e3 for r in pts], color="tab:red",
                    label="of which recomputed")
    axes[1][j].barh(y, [f(r, "ttft_p99_ms") for r in pts], color="tab:gray", label="P99")
    axes[1][j].barh(y, [f(r, "ttft_p50_ms") for r in pts], color="tab:green", label="P50")
    for ax in (axes[0][j], axes[1][j]):
        ax.set_yticks(list(y), names if j == 0 else [""] * len(pts), fontsize=7)
        ax.invert_yaxis()
    ws = f(pts[0], "ws_over_hbm")
    axes[0][j].set_title(f"{w} (working set {ws:.3g}x HBM, {pts[0]['hbm_blocks']} blocks)",
                         fontsize=9)
    axes[0][j].set_xlabel("reads, thousands")
    axes[1][j].set_xlabel("TTFT, ms")
axes[0][0].legend(fontsize=7)
axes[1][0].legend(fontsize=7)
fig.suptitle("Physical shape (one H100 PCIe's share): misses and TTFT by policy")
save(fig, __file__)
