"""Sessions per GPU, tiered versus HBM-only, across the working-set-to-HBM ratio sweep."""
from plotlib import WORKLOADS, f, plt, read, save

rows = read("ratio_sweep.csv")
fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
for w, c in zip(WORKLOADS, ["C0", "C1", "C2"]):
    rs = [r for r in rows if r["workload"] == w]
    x = [f(r, "ratio") for r in rs]
    a1.plot(x, [f(r, "sessions_tiered") for r in rs], "-o", color=c, label=f"{w} tiered")
    a1.plot(x, [f(r, "sessions_hbm_only") for r in rs], "--", color=c, label=f"{w} HBM only")
    a2.plot(x, [f(r, "session_gain") for r in rs], "-o", color=c, label=f"{w} sessions gain")
    a2.plot(x, [f(r, "cost_reduction") for r in rs], "-s", color=c, alpha=0.5,
            label=f"{w} cost reduction")
for a in (a1, a2):
    a.axvline(73, ls=":", color="grey")
    a.set_xlabel("working set / HBM (R)")
    a.set_xscale("log")
a1.set_yscale("log")
a1.set_ylabel("sessions per GPU")
a2.set_ylabel("tiered / HBM-only (x)")
a2.set_ylim(0, 90)
a1.legend(fontsize=7)
a2.legend(fontsize=7)
fig.suptitle("Capacity: the gain is the shape's multiple (1+8+64 = 73x, 62.04x cheaper)")
save(fig, __file__)
