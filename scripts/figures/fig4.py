#!/usr/bin/python3 -B
"""Figure 4: performance and protected-capacity cost of the six policies, two models by
three prefix cache ratios. Upper panels: p95 TTFT reduction (solid) and output-throughput
gain (hatched) versus Demand, in percent, higher is better; lower panels: C, the
protected-capacity cost in GiB*s per request, lower is better, with TempoKV's reduction
versus Immediate and Queue-4. Reads OUT/fig4/summary.csv, writes OUT/fig4/fig4.png.
"""

import os

import replay_csv as rc


def c_reduction(rows, vs):
    """TempoKV's C reduction versus `vs` in percent (None when either run is absent)."""
    t = [r for r in rows if r["policy"] == "tempo"]
    o = [r for r in rows if r["policy"] == vs]
    if not t or not o or not o[0]["c_gib_s_per_req"]:
        return None
    return (1 - t[0]["c_gib_s_per_req"] / o[0]["c_gib_s_per_req"]) * 100


def main():
    d, png = rc.parse_args("fig4", "fig4.png", __doc__)
    rows = rc.read_csv(
        os.path.join(d, "summary.csv"),
        ["model", "ratio", "policy", "p95_ttft_reduction_pct", "throughput_gain_pct", "c_gib_s_per_req"],
    )
    models = []
    for r in rows:
        if r["model"] not in models:
            models.append(r["model"])
    ratios = sorted({r["ratio"] for r in rows})
    policies = rc.policies_in(rows)
    gained = [p for p in policies if p != "demand"]

    fig, axes = rc.plt.subplots(
        2 * len(models),
        len(ratios),
        figsize=(4.2 * len(ratios), 2.6 * 2 * len(models)),
        squeeze=False,
        gridspec_kw={"hspace": 0.55, "wspace": 0.25},
    )
    for mi, model in enumerate(models):
        for ci, ratio in enumerate(ratios):
            cell = rc.pick(rows, model=model, ratio=ratio)
            up, low = axes[2 * mi][ci], axes[2 * mi + 1][ci]
            has_base = bool(rc.pick(cell, policy="demand"))
            if not has_base:  # tempo-replay writes 0 gains without a baseline run
                up.text(0.5, 0.5, "no Demand run: no gains", transform=up.transAxes, ha="center", fontsize=8)
            for i, p in enumerate(gained):
                r = rc.pick(cell, policy=p)
                if not r or not has_base:
                    continue
                r = r[0]
                for off, key, hatch in ((-0.2, "p95_ttft_reduction_pct", None), (0.2, "throughput_gain_pct", "///")):
                    v = r[key]
                    up.bar(i + off, v, 0.4, color=rc.color(p), hatch=hatch, edgecolor="white" if hatch else None)
                    up.annotate(
                        "%.1f" % v,
                        (i + off, v),
                        ha="center",
                        va="bottom" if v >= 0 else "top",
                        fontsize=6,
                        rotation=90,
                        textcoords="offset points",
                        xytext=(0, 2 if v >= 0 else -2),
                    )
            up.axhline(0, color="black", lw=0.6)
            up.set_xticks(range(len(gained)), [rc.label(p) for p in gained], fontsize=6, rotation=30)
            up.set_title("%s, cache ratio %g%%" % (rc.MODEL_LABELS.get(model, model), ratio), fontsize=9)
            if ci == 0:
                up.set_ylabel("Gain vs Demand (%)", fontsize=8)
            lo, hi = up.get_ylim()
            up.set_ylim(min(lo, -1) * 1.3, max(hi, 1) * 1.3)
            for i, p in enumerate(policies):
                r = rc.pick(cell, policy=p)
                if not r:
                    continue
                v = r[0]["c_gib_s_per_req"]
                low.bar(i, v, 0.7, color=rc.color(p))
                low.annotate("%.1f" % v, (i, v), ha="center", va="bottom", fontsize=6)
            low.set_xticks(range(len(policies)), [rc.label(p) for p in policies], fontsize=6, rotation=30)
            low.set_ylim(0, low.get_ylim()[1] * 1.35)
            if ci == 0:
                low.set_ylabel("C (GiB*s/req)", fontsize=8)
            parts = []
            for vs, name in (("immediate", "Imm"), ("queue-4", "Q-4")):
                red = c_reduction(cell, vs)
                if red is not None:
                    parts.append("%+.0f%% vs %s" % (-red, name))
            if parts:
                low.text(0.02, 0.95, "TempoKV C: " + ", ".join(parts), transform=low.transAxes, fontsize=7, va="top")
            for ax in (up, low):
                ax.tick_params(axis="y", labelsize=7)
                ax.grid(axis="y", alpha=0.3)
    handles = [rc.plt.Rectangle((0, 0), 1, 1, color=rc.color(p)) for p in policies]
    handles += [
        rc.plt.Rectangle((0, 0), 1, 1, facecolor="gray"),
        rc.plt.Rectangle((0, 0), 1, 1, facecolor="gray", hatch="///", edgecolor="white"),
    ]
    names = [rc.label(p) for p in policies] + ["p95 TTFT reduction", "throughput gain"]
    fig.legend(handles, names, loc="lower center", ncol=len(names), fontsize=7, bbox_to_anchor=(0.5, 0.0))
    rc.save(fig, png)


if __name__ == "__main__":
    main()
