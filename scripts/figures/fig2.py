#!/usr/bin/python3 -B
"""Figure 2: queue rank is not a staging deadline. A rank-one claim commits at once; its
time to stage-ready (x) against the time until its running predecessor completes (y),
for 8 and 12 GiB targets with no backlog or four committed 8-GiB operations ahead. Points
above the dashed x = y line are ready early (margin y - x > 0), below it late. Reads
OUT/fig2/fig2.csv, writes OUT/fig2/fig2.png.
"""

import os

import replay_csv as rc

MARKERS = {8.0: "o", 12.0: "s"}


def main():
    d, png = rc.parse_args("fig2", "fig2.png", __doc__)
    rows = rc.read_csv(
        os.path.join(d, "fig2.csv"),
        ["predecessor_s", "footprint_gib", "backlog_gib", "stage_ready_s", "margin_s"],
    )
    fig, ax = rc.plt.subplots(figsize=(6, 3.6))
    top_x = max(7.0, max(r["stage_ready_s"] for r in rows) * 1.1)
    top_y = max(4.5, max(r["predecessor_s"] for r in rows) * 1.1)
    lim = max(top_x, top_y)
    ax.plot([0, lim], [0, lim], "k--", lw=1, label="Ideal just-in-time (x = y)")
    for r in rows:
        backlog = r["backlog_gib"] > 0
        ax.plot(
            r["stage_ready_s"],
            r["predecessor_s"],
            MARKERS.get(r["footprint_gib"], "^"),
            color=rc.color("immediate") if backlog else rc.color("tempo"),
            mfc="none" if backlog else None,
            ms=8,
            mew=1.5,
        )
        ax.annotate(
            "%+.2f s" % r["margin_s"],
            (r["stage_ready_s"], r["predecessor_s"]),
            textcoords="offset points",
            xytext=(6, 4 if r["footprint_gib"] == 8 else -10),
            fontsize=7,
        )
    # Legend entries for the two encodings: colour/fill = backlog, shape = footprint.
    ax.plot([], [], "o", color=rc.color("tempo"), label="No backlog")
    ax.plot([], [], "o", color=rc.color("immediate"), mfc="none", mew=1.5, label="Staging backlog (4 x 8 GiB)")
    for gib, m in MARKERS.items():
        ax.plot([], [], m, color="gray", label="%g GiB target" % gib)
    ax.text(0.15, top_y * 0.5, "Ready early\n(margin y - x > 0)", fontsize=8, color="gray")
    ax.text(top_x * 0.75, top_y * 0.25, "Ready late\n(margin < 0)", fontsize=8, color="gray")
    ax.set_xlim(0, top_x)
    ax.set_ylim(0, top_y)
    ax.set_xlabel("Time to stage-ready (s)")
    ax.set_ylabel("Time until predecessor completion (s)")
    ax.legend(fontsize=7, loc="center right")
    ax.grid(alpha=0.3)
    rc.save(fig, png)


if __name__ == "__main__":
    main()
