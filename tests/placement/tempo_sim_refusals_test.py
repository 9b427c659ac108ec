#!/usr/bin/python3
"""tempo-sim run refuses the values that once ran with a wrapped or meaningless
configuration, each with a message naming it: a ratio whose HBM (and the 8x and 64x tiers
after it) passed 2^64 blocks, a prefetch depth past 2^32 (truncated to 0), an EWMA weight
outside (0, 1], a negative price, an empty trace; a directory as the trace (it aborted),
/dev/zero as a spec (read until memory ran out), and an output that cannot be written (a
full disk: the CSV's buffered tail failed unseen and the run exited 0).

usage: tempo_sim_refusals_test.py TEMPO_SIM
"""
import os
import subprocess
import sys
import tempfile

sim = sys.argv[1]
CASES = [
    (["--ratio", "1e-300"], 2, "--ratio must be >= 0.001"),
    (["--depth", "4294967296"], 2, "--depth: '4294967296' is out of range"),
    (["--ewma-alpha", "2"], 2, "--ewma-alpha must be in (0, 1]"),
    (["--ewma-alpha", "0"], 2, "--ewma-alpha must be in (0, 1]"),
    (["--price-ssd", "-0.01"], 2, "must be >= 0"),
    (["--trace", "/dev/null"], None, "trace /dev/null: no requests"),
    (["--trace", "/"], None, "/: cannot read: Is a directory"),
    (["--model", "/dev/zero"], None, "/dev/zero: larger than 1 MiB: not a model spec"),
    (["--host", "/"], None, "/: cannot read: Is a directory"),
]
failed = 0
for args, status, want in CASES:
    p = subprocess.run([sim, "run"] + args, capture_output=True, text=True, timeout=60)
    refused = p.returncode > 0 and (status is None or p.returncode == status)
    if not refused or want not in p.stderr or p.stdout:
        print("FAIL: tempo-sim run %s -> exit %d, stderr %r" % (" ".join(args), p.returncode, p.stderr))
        failed += 1
# The run is printed, then its CSV cannot be written: an error, not exit 0.
for sub, args in (("run", ["--csv", "/dev/full"]), ("run", ["--requests-csv", "/dev/full"]),
                  ("export", ["--out", "/dev/full"])):
    p = subprocess.run([sim, sub, "--workload", "chat-single"] + args, capture_output=True,
                       text=True, timeout=120)
    if p.returncode == 0 or "cannot write /dev/full" not in p.stderr:
        print("FAIL: tempo-sim %s %s -> exit %d, stderr %r" % (sub, " ".join(args), p.returncode,
                                                             p.stderr))
        failed += 1
# A request past the model's context is left out, as tempo-replay rejects it (one of 2^24
# output tokens grew the simulation by gigabytes): said on stderr; none left is an error.
with tempfile.TemporaryDirectory() as d:
    long_req = '{"timestamp": 0, "input_length": 600, "output_length": 16777216, "hash_ids": [1]}\n'
    short_req = '{"timestamp": 5, "input_length": 600, "output_length": 4, "hash_ids": [1, 2]}\n'
    for lines, status, want in (([long_req], 22, "no requests"), ([long_req, short_req], 0, "")):
        path = os.path.join(d, "t.jsonl")
        with open(path, "w") as f:
            f.writelines(lines)
        p = subprocess.run([sim, "run", "--trace", path], capture_output=True, text=True,
                           timeout=60)
        said = "1 of %d requests left out: prompt + output over the model's 131072" % len(lines)
        if p.returncode != status or said not in p.stderr or want not in p.stderr:
            print("FAIL: tempo-sim run, a request over the context -> exit %d, stderr %r"
                  % (p.returncode, p.stderr))
            failed += 1
# The bounds themselves run.
for args in (["--ratio", "0.001"], ["--ewma-alpha", "1", "--policy", "ewma"], ["--price-ssd", "0"]):
    p = subprocess.run([sim, "run", "--workload", "chat-single"] + args, capture_output=True,
                       text=True, timeout=120)
    if p.returncode != 0:
        print("FAIL: tempo-sim run %s -> exit %d, %s" % (" ".join(args), p.returncode, p.stderr))
        failed += 1
print("tempo_sim_refusals: %s" % ("ok" if not failed else "%d failed" % failed))
sys.exit(1 if failed else 0)
