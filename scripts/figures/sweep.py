#!/usr/bin/python3 -B
"""The fast-tier capacity sweep of `make run` (issue 30 item 3): Figure 5's capacities
(tempo-replay -e fig5: fast tier 100, 50, 25 GiB, the protected budget half of it) under
every policy, dax-l1 among them. Reads OUT/fig5/{summary,requests}.csv; prints, per
capacity and policy, p95 TTFT, throughput, C, C / bound (timely_grid.py's bound: the C of
the policy's own claims ready exactly when their retrieval was asked for; --byte-scale
says what the run's was), p95 over the best
advance policy's (immediate, queue-1, queue-4, tempo-static, tempo) and C over immediate's;
then, per capacity, whether the rule (--rule, default tempo-risk) keeps p95 within
--p95-margin of the best advance policy at C at most --c-share of immediate's. Writes
OUT/fig5/sweep.csv (one row per capacity and policy, the columns of the table) and
OUT/fig5/sweep.png (p95 TTFT, throughput and C against capacity). Exits 0 whether or not
the rule meets the bar: the table says which; 1 on missing or malformed CSVs.
"""

import argparse
import csv
import os

import replay_csv as rc
import timely_grid as tg

COLUMNS = ["fast_tier_gib", "budget_gib", "policy", "completed", "p95_ttft_s", "throughput_tps", "c_gib_s_per_req",
           "bound_gib_s_per_req", "c_over_bound", "p95_over_best_advance", "c_over_immediate", "deferred_claims"]
PANELS = [("p95_ttft_s", "p95 TTFT (s)"), ("throughput_tps", "Throughput (token/s)"),
          ("c_gib_s_per_req", "C (GiB*s/req)")]


def sweep_rows(d, byte_scale):
    """The table's rows, per capacity (largest first) in the policies' usual order.
    requests.csv holds the bytes the device moved: 1/byte_scale of the model's on a real
    device (tempo-replay --byte-scale), where C is in the model's bytes."""
    summary = rc.read_csv(os.path.join(d, "summary.csv"),
                          ["fast_tier_gib", "budget_gib", "policy", "completed", "p95_ttft_s", "throughput_tps",
                           "c_gib_s_per_req", "deferred_claims"])
    tiers = sorted({r["fast_tier_gib"] for r in summary}, reverse=True)
    slack = {}
    with open(os.path.join(d, "requests.csv"), newline="") as f:
        for r in csv.DictReader(f):
            key = (float(r["fast_tier_gib"]), r["policy"])
            held, n = slack.get(key, (0.0, 0))
            if r["path"] == "staged":
                held += int(r["kv_bytes"]) * byte_scale * max(0.0, float(r["retrieval_requested_s"]) - float(r["ready_s"]))
            slack[key] = (held, n + 1)
    rows = []
    for t in tiers:
        policies = rc.policies_in(rc.pick(summary, fast_tier_gib=t))
        cell = {p: rc.one(summary, fast_tier_gib=t, policy=p) for p in policies}
        advance = [p for p in tg.ADVANCE if p in cell]
        if not advance or "immediate" not in cell:
            rc.fail("%s: the sweep needs immediate and the advance policies at %g GiB" % (d, t))
        best = min(cell[p]["p95_ttft_s"] for p in advance)
        for p in policies:
            s = cell[p]
            held, n = slack[(t, p)]
            c = s["c_gib_s_per_req"]
            bound = c - held / float(1 << 30) / n
            rows.append({"fast_tier_gib": t, "budget_gib": s["budget_gib"], "policy": p,
                         "completed": int(s["completed"]), "p95_ttft_s": s["p95_ttft_s"],
                         "throughput_tps": s["throughput_tps"], "c_gib_s_per_req": c, "bound_gib_s_per_req": bound,
                         "c_over_bound": c / bound if bound > 0 else 1.0,
                         "p95_over_best_advance": s["p95_ttft_s"] / best,
                         "c_over_immediate": c / cell["immediate"]["c_gib_s_per_req"],
                         "deferred_claims": int(s["deferred_claims"])})
    return rows


def print_table(rows):
    print("%-9s %-13s %5s %9s %10s %8s %8s %9s %9s %8s" % (
        "fast tier", "policy", "reqs", "p95 TTFT", "throughput", "C", "C/bound", "p95/best", "C/immed", "deferred"))
    print("%-9s %-13s %5s %9s %10s %8s %8s %9s %9s %8s" % (
        "(GiB)", "", "", "(s)", "(token/s)", "GiB*s/rq", "", "advance", "", "(claims)"))
    last = None
    for r in rows:
        if last is not None and r["fast_tier_gib"] != last:
            print()
        last = r["fast_tier_gib"]
        print("%-9s %-13s %5d %9.3f %10.1f %8.2f %8.2f %9.3f %9.2f %8d" % (
            "%g/%g" % (r["fast_tier_gib"], r["budget_gib"]), r["policy"], r["completed"], r["p95_ttft_s"],
            r["throughput_tps"], r["c_gib_s_per_req"], r["c_over_bound"], r["p95_over_best_advance"],
            r["c_over_immediate"], r["deferred_claims"]))


def verdicts(rows, rule, p95_margin, c_share):
    """Per capacity: (tier, p95 over the best advance policy's, C over immediate's, met)."""
    out = []
    for r in rows:
        if r["policy"] == rule:
            met = r["p95_over_best_advance"] <= 1 + p95_margin and r["c_over_immediate"] <= c_share
            out.append((r["fast_tier_gib"], r["p95_over_best_advance"], r["c_over_immediate"], met))
    if not out:
        rc.fail("the rule %s is not in the sweep" % rule)
    return out


def draw(rows, png):
    """One line per policy against capacity; a policy run at one capacity only (dax-l1, which
    does not depend on it) is a dashed level across the panel."""
    tiers = sorted({r["fast_tier_gib"] for r in rows}, reverse=True)
    policies = rc.policies_in(rows)
    fig, axes = rc.plt.subplots(1, len(PANELS), figsize=(3.6 * len(PANELS), 3.4))
    for ax, (key, title) in zip(axes, PANELS):
        for k, p in enumerate(policies):
            mine = {r["fast_tier_gib"]: r[key] for r in rows if r["policy"] == p}
            if len(mine) == 1:
                ax.axhline(next(iter(mine.values())), color=rc.color(p), ls="--", lw=1.2,
                           label="%s (%g GiB run)" % (rc.label(p), next(iter(mine))))
                continue
            xs = [i + (k - (len(policies) - 1) / 2) * 0.03 for i, t in enumerate(tiers) if t in mine]
            ax.plot(xs, [mine[t] for t in tiers if t in mine], "-o", color=rc.color(p), label=rc.label(p), ms=4,
                    lw=1.2)
        if key == "p95_ttft_s":
            ax.set_yscale("log")
        ax.set_xticks(range(len(tiers)), ["%g" % t for t in tiers])
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("Fast-tier capacity (GiB; budget half)", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=(len(names) + 1) // 2, fontsize=8,
               bbox_to_anchor=(0.5, -0.16))
    fig.tight_layout()
    rc.save(fig, png)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", help="tempo-replay's --out directory; reads OUT/fig5/")
    p.add_argument("--byte-scale", type=int, default=1, help="the run's --byte-scale (uring; default 1)")
    p.add_argument("--rule", default="tempo-risk", help="the rule judged (default tempo-risk)")
    p.add_argument("--p95-margin", type=float, default=0.02, help="p95 over the best advance policy's, at most 1+M")
    p.add_argument("--c-share", type=float, default=0.5, help="C over immediate's, at most this")
    a = p.parse_args()
    d = os.path.join(a.out, "fig5")
    rows = sweep_rows(d, a.byte_scale)
    print_table(rows)
    with open(os.path.join(d, "sweep.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    print()
    for tier, p95, c, met in verdicts(rows, a.rule, a.p95_margin, a.c_share):
        print("%s at %g GiB: p95 %+.1f%% vs the best advance policy, C %.2f of immediate's: %s" % (
            a.rule, tier, (p95 - 1) * 100, c, "met" if met else "NOT met (bar: within %+g%%, at most %g)" % (
                a.p95_margin * 100, a.c_share)))
    draw(rows, os.path.join(d, "sweep.png"))


if __name__ == "__main__":
    main()
