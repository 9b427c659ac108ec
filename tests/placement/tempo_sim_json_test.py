#!/usr/bin/python3
"""tempo-sim run --json: the exact counts add up and agree with the text output.

usage: tempo_sim_json_test.py TEMPO_SIM
"""
import json
import subprocess
import sys

sim = sys.argv[1]
args = ["run", "--workload", "agent", "--ratio", "32", "--prefetch", "laxity"]
j = json.loads(subprocess.run([sim] + args + ["--json"], check=True, capture_output=True,
                              text=True).stdout)
text = dict(line.split(": ", 1) for line in subprocess.run(
    [sim] + args, check=True, capture_output=True, text=True).stdout.splitlines())

src = j["reads_from"]
assert j["reads"] == sum(src.values()), j
assert j["reads"] + j["writes"] == j["accesses"], j
assert j["misses"] == j["reads"] - src["hbm"], j
assert j["prefetches"] > 0 and j["prefetch_hits"] <= j["prefetches"], j
links = j["link_bytes"]
for k in ("pcie_up", "pcie_down", "ssd_read", "ssd_write"):
    assert links["total"][k] == links["demand"][k] + links["prefetch"][k], k
    assert links["total"][k] == int(text[k + "_bytes"]), k
assert j["shape"]["hbm_blocks"] == int(text["hbm_blocks"])
assert int(text["reads"]) == j["reads"]
# The text prints 6 significant digits of the shares the JSON counts exactly.
for k, tier in (("hit_hbm", "hbm"), ("hit_dram", "dram"), ("hit_ssd", "ssd"),
                ("recompute_share", "recompute")):
    assert abs(float(text[k]) - src[tier] / j["reads"]) <= 1e-5 * max(1.0, float(text[k])), k
for k, v in text.items():
    assert str(j["summary"][k]) == v or abs(float(v) - j["summary"][k]) == 0, k
# Without --ratio or a shape, the physical shape of the hardware files: Llama-3.1-8B on one
# H100 PCIe's share of the h100-pcie-server host, in 2 MiB blocks.
phys = json.loads(subprocess.run([sim, "run", "--workload", "chat", "--json"], check=True,
                                 capture_output=True, text=True).stdout)["shape"]
assert phys == {"hbm_blocks": 29034, "dram_blocks": 61035, "ssd_blocks": 1831054}, phys
print("tempo_sim_json: ok,", j["reads"], "reads,", j["misses"], "misses")
