#!/usr/bin/python3 -B
"""Figure 1: first-token latency and protected fast-tier byte-time versus the staging lead
(time from staging initiation to request submission) for one SSD-resident 64k-token
prefix. Reads OUT/fig1/fig1.csv, writes OUT/fig1/fig1.png.

The paper's values stated in its text (section 2.3) are drawn as hollow markers: median
latency 1.23 s at zero lead, 0.51 s from 1 s on; byte-time 8 GiB*s at 1 s, 32 at 4 s.
"""

import os

import replay_csv as rc

PAPER_LATENCY_S = {0.0: 1.23, 1.0: 0.51, 2.0: 0.51, 4.0: 0.51}
PAPER_BYTE_TIME = {1.0: 8.0, 4.0: 32.0}


def main():
    d, png = rc.parse_args("fig1", "fig1.png", __doc__)
    rows = rc.read_csv(os.path.join(d, "fig1.csv"), ["lead_s", "first_token_s", "protected_gib_s"])
    leads = [r["lead_s"] for r in rows]
    x = list(range(len(leads)))  # the paper spaces the leads evenly
    ticks = ["%g" % v for v in leads]

    fig, (a, b) = rc.plt.subplots(1, 2, figsize=(9, 3.2))
    a.bar(x, [r["first_token_s"] * 1000 for r in rows], color=rc.color("tempo"), label="tempo-replay")
    b.bar(x, [r["protected_gib_s"] for r in rows], color=rc.color("immediate"), label="tempo-replay")
    for ax, paper, scale in ((a, PAPER_LATENCY_S, 1000), (b, PAPER_BYTE_TIME, 1)):
        px = [i for i, v in enumerate(leads) if v in paper]
        ax.plot(px, [paper[leads[i]] * scale for i in px], "ko", mfc="none", ms=7, label="paper (text)")
        ax.set_xticks(x, ticks)
        ax.set_xlabel("Available staging time before submission (s)")
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    a.set_ylabel("Submission to first token (ms)")
    a.set_title("(a) First-token latency", fontsize=10)
    b.set_ylabel("Protected capacity x time (GiB*s)")
    b.set_title("(b) Fast-tier reservation", fontsize=10)
    footprint = rows[0].get("footprint_gib")
    if footprint:
        fig.suptitle("One SSD-resident 64k-token prefix, %g GiB of KV" % footprint, fontsize=10)
    rc.save(fig, png)


if __name__ == "__main__":
    main()
