#!/usr/bin/env python3
"""Judges tests/ebpf/vm_kstage.sh's console log: tempostat's and tempomargin's tracepoint
counts must equal what kstage_driver issued and the module's TEMPO_IOC_STATS differences."""
import json
import sys


def main(log):
    lines = {"driver": [], "stat": [], "margin": []}
    bt = {}
    for line in open(log, errors="replace"):
        if line.startswith("EBPF-VM-BT @"):
            key, _, value = line[len("EBPF-VM-BT "):].strip().partition(": ")
            if value.isdigit():
                bt[key] = int(value)
            continue
        at = line.find("EBPF-VM ")  # the console may put escape codes before it
        parts = line[max(at, 0):].rstrip("\n").split(" ", 2)
        if len(parts) == 3 and parts[0] == "EBPF-VM" and parts[1] in lines:
            lines[parts[1]].append(json.loads(parts[2]))
    if not lines["driver"] or not lines["stat"] or not lines["margin"]:
        print(f"FAIL: missing output: { {k: len(v) for k, v in lines.items()} }")
        return 1
    d = lines["driver"][0]
    k = {}
    for r in lines["stat"]:
        for name, v in r["kernel"].items():
            k[name] = k.get(name, 0) + v
    m = lines["margin"][-1]
    checks = [
        ("tempostat kernel_traced", all(r["kernel_traced"] for r in lines["stat"]), True),
        ("tempostat stage_submits", k["stage_submits"], d["batches"]),
        ("tempostat stage_submit_bytes", k["stage_submit_bytes"], d["stage_bytes"]),
        ("tempostat stage_completes", k["stage_completes"], d["batches"]),
        ("tempostat staged_bytes", k["staged_bytes"], d["stage_bytes"] if not d["failed"] else None),
        ("tempostat stage_errors", k["stage_errors"], d["failed"]),
        ("tempostat pins", k["pins"], d["pins"]),
        ("tempostat unpins", k["unpins"], d["unpins"]),
        ("tempostat faults", k["faults"], d["faults"]),
        ("tempostat fault_bytes", k["fault_bytes"], d["fault_bytes"]),
        ("tempostat evictions", k["evictions"], d["evictions"]),
        ("tempostat evicted_bytes", k["evicted_bytes"], d["evicted_bytes"]),
        ("tempomargin kernel_stage_latency count", m["kernel_stage_latency"]["count"], d["batches"]),
        ("tempomargin kernel_stage_latency bytes", m["kernel_stage_latency"]["bytes"], d["stage_bytes"]),
        ("tempomargin kernel_fault_latency count", m["kernel_fault_latency"]["count"], d["fault_fills"]),
        ("tempomargin kernel_fault_latency bytes", m["kernel_fault_latency"]["bytes"], d["fault_bytes"]),
        ("driver staged without failure", d["failed"], 0),
        ("driver faults read the backing device", d["fault_fills"] > 0, True),
        ("driver's RESET evicted extents", d["evictions"] > 0, True),
    ]
    if bt:
        checks += [
            ("tempo_kstage.bt @count[stage_submit]", bt.get("@count[stage_submit]"), d["batches"]),
            ("tempo_kstage.bt @bytes[stage_submit]", bt.get("@bytes[stage_submit]"), d["stage_bytes"]),
            ("tempo_kstage.bt @count[staged]", bt.get("@count[staged]"), d["ok"]),
            ("tempo_kstage.bt @bytes[staged]", bt.get("@bytes[staged]"), d["stage_bytes"]),
            ("tempo_kstage.bt @count[pin]", bt.get("@count[pin]"), d["pins"]),
            ("tempo_kstage.bt @count[unpin]", bt.get("@count[unpin]"), d["unpins"]),
            ("tempo_kstage.bt @count[fault_read]", bt.get("@count[fault_read]"), d["fault_fills"]),
            ("tempo_kstage.bt @bytes[fault_read]", bt.get("@bytes[fault_read]"), d["fault_bytes"]),
            ("tempo_kstage.bt @count[evict]", bt.get("@count[evict]"), d["evictions"]),
            ("tempo_kstage.bt @bytes[evict]", bt.get("@bytes[evict]"), d["evicted_bytes"]),
        ]
    bad = 0
    for what, got, want in checks:
        ok = got == want
        bad += not ok
        print(f"{'PASS' if ok else 'FAIL'} {what}: {got} (want {want})")
    print(f"vm_kstage: {len(checks) - bad} passed, {bad} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
