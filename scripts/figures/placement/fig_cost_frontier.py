"""Cost-latency frontier at a fixed 192-block budget (lru), one colour per workload."""
from plotlib import WORKLOADS, f, plt, read, save

rows = [r for r in read("cost_frontier.csv") if r["policy"] == "lru"]
fig, ax = plt.subplots(figsize=(7.5, 4.8))
for w, c in zip(WORKLOADS, ["C0", "C1", "C2"]):
    rs = [r for r in rows if r["workload"] == w]
    ax.scatter([f(r, "usd_per_1k_sessions") for r in rs], [f(r, "ttft_p99_ms") for r in rs],
               s=10, color=c, alpha=0.25)
    fr = sorted((r for r in rs if r["on_frontier"] == "1"), key=lambda r: f(r, "usd_per_1k_sessions"))
    ax.plot([f(r, "usd_per_1k_sessions") for r in fr], [f(r, "ttft_p99_ms") for r in fr], "-o",
            color=c, label=f"{w} frontier")
    for r in fr[:1]:
        ax.annotate(f"{r['hbm_blocks']}/{r['dram_blocks']}/{r['ssd_blocks']}",
                    (f(r, "usd_per_1k_sessions"), f(r, "ttft_p99_ms")), fontsize=7)
ax.set_xscale("log")
ax.set_xlabel("USD per 1k sessions (tier cost / sessions)")
ax.set_ylabel("P99 TTFT (ms)")
ax.legend(fontsize=8)
ax.set_title("Every HBM/DRAM/SSD composition of 192 blocks (step 16); faded = dominated")
save(fig, __file__)
