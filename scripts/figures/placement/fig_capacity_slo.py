"""SSD depth sweep at HBM 32 / DRAM 64: P99 TTFT against each workload's gpu-only SLO."""
from plotlib import WORKLOADS, f, plt, read, save

rows = read("ssd_depth.csv")
fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
for ax, w in zip(axes, WORKLOADS):
    rs = [r for r in rows if r["workload"] == w]
    x = [f(r, "ssd_blocks") for r in rs]
    ax.plot(x, [f(r, "ttft_p99_ms") for r in rs], "-o", label="P99 TTFT")
    ax.axhline(f(rs[0], "slo_ms"), ls="--", color="red", label="SLO = gpu-only P99")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("SSD blocks")
    ax.set_title(w)
    ax2 = ax.twinx()
    ax2.plot(x, [f(r, "sessions_tiered") for r in rs], "-s", color="grey", alpha=0.6)
    ax2.set_ylabel("sessions / GPU", color="grey")
axes[0].set_ylabel("ms")
axes[0].legend(fontsize=8)
fig.suptitle("How deep can SSD go? (HBM 32, DRAM 64 blocks)")
save(fig, __file__)
