#!/usr/bin/env python3
"""Overhead of the tempo USDT probes (make bench-ebpf; root).

1. Per probe: tests/ebpf/probe_cost.c fires stage__submit N times, nothing attached and
   with tempostat attached, against the same loop without the probe.
2. Per replay: the given replay command, run REPS times detached and REPS times with
   tempomargin (-b on the replay binary) and tempo_margin.bt attached; the median wall
   times give the slowdown (target: under 5%).

Usage: tests/ebpf/bench.py BUILD_DIR [REPLAY_BINARY REPLAY_ARGS...]
Prints one JSON object with the figures.
"""
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402  (the host test's helpers: tool start, bpftrace attach wait)

REPS = int(os.environ.get("BENCH_REPS", "5"))
PROBE_ITERS = 2_000_000


def probe_cost(build, attached):
    p = subprocess.Popen([os.path.join(build, "probe-cost"), str(PROBE_ITERS)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pid = json.loads(p.stdout.readline())["pid"]
    tool = None
    if attached:
        tool = run.start_tool([os.path.join(build, "tempostat"), "-j", "-p", str(pid), "1"])
    p.stdin.write("go\n")
    p.stdin.close()
    res = json.loads(p.stdout.readline())
    p.wait()
    if tool:
        out, _ = tool.communicate(timeout=60)
        seen = sum(json.loads(line)["stage_submits"] for line in out.splitlines() if line)
        if seen != PROBE_ITERS:
            raise RuntimeError(f"tempostat saw {seen} of {PROBE_ITERS} probe hits")
    return res


def replay_once(build, cmd, bt_script):
    """Wall time of one replay; with bt_script, tempomargin and bpftrace attached first."""
    tools = []
    if bt_script:
        tools.append(run.start_tool([os.path.join(build, "tempomargin"), "-j", "-b", cmd[0]]))
        tools.append(run.start_bpftrace(bt_script, None, cmd[0]))
    t0 = time.monotonic()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, timeout=3600).returncode
    wall = time.monotonic() - t0
    for t in tools:
        t.send_signal(2)
        t.communicate(timeout=60)
    if rc != 0:
        raise RuntimeError(f"replay exited {rc}")
    return wall


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    build = os.path.abspath(sys.argv[1])
    if os.geteuid() != 0:
        print("SKIP: the eBPF bench needs root")
        return 0
    if not os.path.exists(os.path.join(run.TRACEFS, "events")):
        subprocess.run(["mount", "-t", "tracefs", "nodev", run.TRACEFS], check=True)
    out = {"probe_detached": probe_cost(build, False), "probe_attached": probe_cost(build, True)}
    if len(sys.argv) > 2:
        cmd = [os.path.abspath(sys.argv[2])] + sys.argv[3:]
        bt = run.bt_for_binary(os.path.join(run.BT_DIR, "tempo_margin.bt"), cmd[0], build)
        detached, attached = [], []
        for _ in range(REPS):  # interleaved, so drift hits both alike
            detached.append(replay_once(build, cmd, None))
            attached.append(replay_once(build, cmd, bt))
        d, a = statistics.median(detached), statistics.median(attached)
        out["replay"] = {"cmd": " ".join(sys.argv[2:]), "reps": REPS, "detached_s": detached,
                         "attached_s": attached, "median_detached_s": d,
                         "median_attached_s": a, "slowdown_pct": 100.0 * (a - d) / d}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
