"""Shared helpers of the figure scripts: read tempo-replay's CSVs, name and colour the
policies the same way in every figure, and save small PNGs.

Every script takes the output root tempo-replay wrote into (its --out DIR, default
build/figures) and reads DIR/<experiment>/*.csv, writing DIR/<experiment>/<name>.png
unless --png says where.
"""

import argparse
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402

# The paper's order and names (Figure 4's legend), the risk-aware rule, then the baseline
# of Figure 6.
POLICIES = ["demand", "immediate", "queue-1", "queue-4", "tempo-static", "tempo", "tempo-risk", "dax-l1"]
LABELS = {
    "demand": "Demand",
    "immediate": "Immediate",
    "queue-1": "Queue-1",
    "queue-4": "Queue-4",
    "tempo-static": "TempoKV-Static",
    "tempo": "TempoKV",
    "tempo-risk": "TempoKV-Risk",
    "dax-l1": "DAX-L1",
}
COLORS = {
    "demand": "#7f7f7f",
    "immediate": "#d62728",
    "queue-1": "#ff7f0e",
    "queue-4": "#bcbd22",
    "tempo-static": "#17becf",
    "tempo": "#1f77b4",
    "tempo-risk": "#2ca02c",
    "dax-l1": "#9467bd",
}

MODEL_LABELS = {
    "qwen2.5-14b-instruct": "Qwen2.5-14B-Instruct",
    "llama-3.1-8b-instruct": "Llama-3.1-8B-Instruct",
}


def fail(msg):
    sys.stderr.write("%s: %s\n" % (os.path.basename(sys.argv[0]), msg))
    sys.exit(1)


def parse_args(experiment, png_name, description):
    """Returns (experiment_dir, png_path) from the command line."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument(
        "out",
        nargs="?",
        default="build/figures",
        help="tempo-replay's --out directory (default build/figures); reads OUT/%s/" % experiment,
    )
    p.add_argument("--png", help="where to write the figure (default OUT/%s/%s)" % (experiment, png_name))
    a = p.parse_args()
    d = os.path.join(a.out, experiment)
    return d, a.png or os.path.join(d, png_name)


def _value(text):
    """A number where the text is one, else the text (labels, policy names, paths)."""
    if text == "":
        return None
    try:
        return float(text)
    except ValueError:
        return text


def read_csv(path, required):
    """Rows of a CSV as dicts, numbers as floats. Exits with a clear message when the file
    is missing (run tempo-replay first) or lacks one of the `required` columns."""
    if not os.path.exists(path):
        fail("%s not found: run tempo-replay for this experiment first (see make figures)" % path)
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            fail("%s lacks column(s) %s" % (path, ", ".join(missing)))
        rows = [{k: _value(v) for k, v in r.items()} for r in reader]
    if not rows:
        fail("%s has no rows" % path)
    return rows


def policies_in(rows):
    """The policies present, in the paper's order (unknown names last, as found)."""
    seen = []
    for r in rows:
        if r["policy"] not in seen:
            seen.append(r["policy"])
    known = [p for p in POLICIES if p in seen]
    return known + [p for p in seen if p not in POLICIES]


def label(policy):
    return LABELS.get(policy, policy)


def color(policy):
    return COLORS.get(policy, "#333333")


def pick(rows, **labels):
    """The rows whose columns equal every given value (numbers compared as floats)."""
    out = []
    for r in rows:
        if all(r.get(k) == (float(v) if isinstance(v, (int, float)) else v) for k, v in labels.items()):
            out.append(r)
    return out


def one(rows, **labels):
    found = pick(rows, **labels)
    if len(found) != 1:
        fail("expected one row for %s, found %d" % (labels, len(found)))
    return found[0]


def save(fig, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    print("wrote %s" % path)
