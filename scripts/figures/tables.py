#!/usr/bin/python3 -B
"""Prints the tables of Documentation/reproduction.md as Markdown: tempo-replay's numbers
from OUT/<experiment>/*.csv beside the paper's. The paper's values are decoded from its
figures and text (arXiv:2609.35065v1, sections 2.3 and 5); where it gives none, '-'.

usage: tables.py [OUT]   (OUT: tempo-replay's --out directory, default build/figures)
"""

import os
import sys

import replay_csv as rc

# Figure 4, decoded from the flattened figure text: per model and ratio, the upper panel's
# (p95 TTFT reduction %, throughput gain %) for the five non-demand policies in legend
# order, and the lower panel's C (GiB*s/request) for all six.
PAPER_FIG4 = {
    ("qwen2.5-14b-instruct", 50): (
        [(0.0, -0.4), (0.5, 0.8), (1.9, 1.9), (-0.9, -0.6), (0.8, 1.1)],
        [7.9, 95.1, 21.9, 55.8, 6.0, 9.0],
    ),
    ("qwen2.5-14b-instruct", 75): (
        [(10.0, 7.7), (9.7, 8.2), (10.9, 8.6), (9.0, 7.3), (9.2, 7.7)],
        [11.1, 78.2, 20.4, 61.8, 10.2, 13.9],
    ),
    ("qwen2.5-14b-instruct", 100): (
        [(21.3, 15.9), (15.0, 11.4), (21.4, 16.8), (26.0, 20.0), (25.7, 20.4)],
        [14.1, 43.6, 18.8, 40.2, 9.0, 8.2],
    ),
    ("llama-3.1-8b-instruct", 50): (
        [(-0.8, -1.6), (2.4, 0.5), (0.6, -0.6), (1.2, -3.5), (2.4, -1.4)],
        [5.1, 28.7, 7.6, 22.5, 1.7, 3.2],
    ),
    ("llama-3.1-8b-instruct", 75): (
        [(5.1, 4.8), (2.2, 1.9), (4.8, 4.9), (4.1, 4.6), (5.2, 5.1)],
        [5.3, 31.9, 5.8, 24.0, 5.1, 3.9],
    ),
    ("llama-3.1-8b-instruct", 100): (
        [(23.1, 10.3), (11.0, 4.5), (24.1, 11.0), (14.5, 5.4), (20.5, 9.2)],
        [5.5, 13.0, 6.0, 12.6, 4.0, 4.8],
    ),
}
SIX = ["demand", "immediate", "queue-1", "queue-4", "tempo-static", "tempo"]

# Figure 1 and 2 values the paper's text states.
PAPER_FIG1_LATENCY = {0.0: 1.23, 1.0: 0.51, 2.0: 0.51, 4.0: 0.51}
PAPER_FIG1_BYTE_TIME = {1.0: 8.0, 4.0: 32.0}

# Figure 6: the largest gains the text states, per workload: (p95 reduction %, throughput gain %).
PAPER_FIG6 = {"narrativeqa": (48.0, 27.8), "loogle": (32.4, 15.5)}


def f(v, fmt="%.1f"):
    return "-" if v is None else fmt % v


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def fig1(d):
    rows = rc.read_csv(os.path.join(d, "fig1", "fig1.csv"), ["lead_s", "first_token_s", "protected_gib_s"])
    body = []
    for r in rows:
        lead = r["lead_s"]
        body.append(
            [
                "%g" % lead,
                "%.2f" % r["first_token_s"],
                f(PAPER_FIG1_LATENCY.get(lead), "%.2f"),
                "%.1f" % r["protected_gib_s"],
                f(PAPER_FIG1_BYTE_TIME.get(lead)),
            ]
        )
    return table(
        ["lead (s)", "first token, ours (s)", "paper (s)", "byte-time, ours (GiB*s)", "paper (GiB*s)"], body
    )


def fig2(d):
    rows = rc.read_csv(
        os.path.join(d, "fig2", "fig2.csv"), ["predecessor_s", "footprint_gib", "backlog_gib", "stage_ready_s", "margin_s"]
    )
    body = [
        [
            "%g" % r["predecessor_s"],
            "%g" % r["footprint_gib"],
            "%g" % r["backlog_gib"],
            "%.2f" % r["stage_ready_s"],
            "%+.2f" % r["margin_s"],
            "early" if r["margin_s"] > 0 else "late",
        ]
        for r in rows
    ]
    return table(
        ["predecessor (s)", "target (GiB)", "backlog (GiB)", "time to stage-ready (s)", "margin y - x (s)", ""], body
    )


def c_red(cell, vs):
    t = rc.one(cell, policy="tempo")["c_gib_s_per_req"]
    o = rc.one(cell, policy=vs)["c_gib_s_per_req"]
    return (1 - t / o) * 100


def fig4(d):
    rows = rc.read_csv(
        os.path.join(d, "fig4", "summary.csv"),
        ["model", "ratio", "policy", "p95_ttft_reduction_pct", "throughput_gain_pct", "c_gib_s_per_req"],
    )
    out = []
    summary = []
    for (model, ratio), (gains, cs) in PAPER_FIG4.items():
        cell = rc.pick(rows, model=model, ratio=ratio)
        if not cell:
            continue
        body = []
        for i, p in enumerate(SIX):
            r = rc.one(cell, policy=p)
            pg = gains[i - 1] if i > 0 else (None, None)
            body.append(
                [
                    rc.label(p),
                    "%.1f" % r["p95_ttft_reduction_pct"] if p != "demand" else "(base)",
                    f(pg[0]) if p != "demand" else "(base)",
                    "%.1f" % r["throughput_gain_pct"] if p != "demand" else "(base)",
                    f(pg[1]) if p != "demand" else "(base)",
                    "%.2f" % r["c_gib_s_per_req"],
                    f(cs[i]),
                ]
            )
        out.append("**%s, cache ratio %d%%**\n" % (rc.MODEL_LABELS[model], ratio))
        out.append(
            table(
                [
                    "policy",
                    "p95 TTFT reduction, ours (%)",
                    "paper",
                    "throughput gain, ours (%)",
                    "paper",
                    "C, ours (GiB*s/req)",
                    "paper",
                ],
                body,
            )
        )
        out.append("")
        paper_imm = (1 - cs[5] / cs[1]) * 100
        paper_q4 = (1 - cs[5] / cs[3]) * 100
        summary.append(
            [
                "%s %d%%" % (rc.MODEL_LABELS[model], ratio),
                "%.0f%%" % c_red(cell, "immediate"),
                "%.0f%%" % paper_imm,
                "%.0f%%" % c_red(cell, "queue-4"),
                "%.0f%%" % paper_q4,
            ]
        )
    head = ["model, ratio", "C reduction vs Immediate, ours", "paper", "vs Queue-4, ours", "paper"]
    return table(head, summary) + "\n\n" + "\n".join(out)


def fig5(d):
    rows = rc.read_csv(
        os.path.join(d, "fig5", "summary.csv"),
        ["fast_tier_gib", "policy", "throughput_tps", "p95_ttft_s", "mean_ttft_s", "c_gib_s_per_req", "deferred_claims"],
    )
    body = []
    for t in sorted({r["fast_tier_gib"] for r in rows}, reverse=True):
        for p in rc.policies_in(rows):
            r = rc.one(rows, fast_tier_gib=t, policy=p)
            paper = "-"
            if p == "tempo":
                paper = "~106 token/s, ~5.9 s"
            if t == 25 and p in ("tempo", "immediate", "queue-4"):
                paper += "; %d deferred" % (1 if p == "tempo" else 6)
                paper = paper.lstrip("-; ")
            body.append(
                [
                    "%g / %g" % (t, t / 2),
                    rc.label(p),
                    "%.1f" % r["throughput_tps"],
                    "%.2f" % r["p95_ttft_s"],
                    "%.2f" % r["mean_ttft_s"],
                    "%.2f" % r["c_gib_s_per_req"],
                    "%d" % r["deferred_claims"],
                    "%d" % r["capacity_deferrals"],
                    paper,
                ]
            )
    return table(
        [
            "fast tier / budget (GiB)",
            "policy",
            "throughput (token/s)",
            "p95 TTFT (s)",
            "mean TTFT (s)",
            "C (GiB*s/req)",
            "claims deferred",
            "refused attempts",
            "paper",
        ],
        body,
    )


def fig6(d):
    rows = rc.read_csv(
        os.path.join(d, "fig6", "summary.csv"), ["workload", "rate", "policy", "throughput_tps", "p95_ttft_s"]
    )
    out = []
    best = []
    for w in ("narrativeqa", "loogle"):
        body = []
        bp = bt = None
        for t in sorted(rc.pick(rows, workload=w, policy="tempo"), key=lambda r: r["rate"]):
            b = rc.one(rows, workload=w, policy="dax-l1", rate=t["rate"])
            red = (1 - t["p95_ttft_s"] / b["p95_ttft_s"]) * 100
            gain = (t["throughput_tps"] / b["throughput_tps"] - 1) * 100
            bp = red if bp is None else max(bp, red)
            bt = gain if bt is None else max(bt, gain)
            body.append(
                [
                    "%g" % t["rate"],
                    "%.2f" % t["p95_ttft_s"],
                    "%.2f" % b["p95_ttft_s"],
                    "%.1f" % red,
                    "%.1f" % t["throughput_tps"],
                    "%.1f" % b["throughput_tps"],
                    "%.1f" % gain,
                ]
            )
        if not body:
            continue
        out.append("**%s**\n" % ("NarrativeQA" if w == "narrativeqa" else "LooGLE"))
        out.append(
            table(
                [
                    "rate (req/s)",
                    "p95 TTFT TempoKV (s)",
                    "DAX-L1 (s)",
                    "reduction (%)",
                    "throughput TempoKV (token/s)",
                    "DAX-L1",
                    "gain (%)",
                ],
                body,
            )
        )
        out.append("")
        pp, pt = PAPER_FIG6[w]
        best.append(["NarrativeQA" if w == "narrativeqa" else "LooGLE", "%.1f%%" % bp, "%.1f%%" % pp, "%.1f%%" % bt, "%.1f%%" % pt])
    head = ["workload", "max p95 TTFT reduction, ours", "paper", "max throughput gain, ours", "paper"]
    return table(head, best) + "\n\n" + "\n".join(out)


def main():
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1].startswith("-")):
        sys.stdout.write(__doc__)
        sys.exit(0 if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help") else 2)
    d = sys.argv[1] if len(sys.argv) == 2 else "build/figures"
    for name, fn in (("Figure 1", fig1), ("Figure 2", fig2), ("Figure 4", fig4), ("Figure 5", fig5), ("Figure 6", fig6)):
        print("### %s\n" % name)
        print(fn(d))
        print()


if __name__ == "__main__":
    main()
