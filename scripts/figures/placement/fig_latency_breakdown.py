"""TPOT split into compute and fetch stall, the stall charged per tier by measurement."""
from plotlib import WORKLOADS, f, plt, read, save

rows = read("policy_grid.csv")
show = ["lru", "reuse-frequency", "ewma", "adaptive", "min", "gpu-only", "full-cpu-offload"]


def pick(w, name):
    for r in rows:
        if r["workload"] != w:
            continue
        if name in ("gpu-only", "full-cpu-offload"):
            if r["baseline"] == name:
                return r
        elif r["baseline"] == "tiered" and r["policy"] == name:
            return r
    raise SystemExit(f"missing {w}/{name}")


fig, axes = plt.subplots(1, 3, figsize=(13, 4), sharey=True)
parts = [("tpot_compute_ms", "compute", "#636363"), ("stall_dram_ms", "stall: DRAM", "#7bccc4"),
         ("stall_ssd_ms", "stall: SSD", "#fdae6b"),
         ("stall_recompute_ms", "stall: recompute", "#d7301f")]
for ax, w in zip(axes, WORKLOADS):
    bottom = [0.0] * len(show)
    for key, label, c in parts:
        vals = [f(pick(w, p), key) for p in show]
        ax.bar(show, vals, bottom=bottom, label=label, color=c)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_title(w)
    ax.tick_params(axis="x", rotation=40)
    plt.setp(ax.get_xticklabels(), ha="right")
axes[0].set_ylabel("ms per output token")
axes[-1].legend(fontsize=8)
fig.suptitle("TPOT = decode compute + fetch stall (per-tier stall measured, not hit-share split)")
save(fig, __file__)
