#!/usr/bin/env python3
"""Overhead of the tempo USDT probes (make bench-ebpf; root).

1. Per probe: tests/ebpf/probe_cost.c fires stage__submit N times, nothing attached and
   with tempostat attached, against the same loop without the probe.
2. Per replay: tempo-replay with the given arguments, run REPS times detached and REPS
   times with tempomargin (-b on the replay binary) and tempo_margin.bt attached,
   interleaved. Reported: median wall and CPU (user + sys, which includes the breakpoint
   traps) times and their slowdown, the probe hits per run (from tempomargin), the cost per
   hit, and the replay's simulated duration. tempo-replay runs in virtual time, as fast as
   the CPU goes, so its slowdown is the worst case; `realtime_overhead_pct` is what the
   same hits would cost spread over the simulated (wall-clock) duration of the workload.

3. On the uring device, in real time: tests/ebpf/uring_replay.cc closed-loop (each request
   reported, retrieved, staged from SSD with O_DIRECT and copied out, one after another),
   REPS times detached and attached alike; its requests/s and CPU time give the slowdown.

Usage: tests/ebpf/bench.py BUILD_DIR [--uring URING_REPLAY] [TEMPO_REPLAY REPLAY_ARGS...]
       (-o is added to the tempo-replay arguments)
Prints one JSON object with the figures.
"""
import csv
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


def stop(tool):
    """SIGINT, then the tool's output. The signal is sent again every 5 s (a minute in all):
    one that lands while bpftrace is still setting up after its uprobes attached (a
    replay of a few tens of milliseconds ends that soon) can go unanswered."""
    for _ in range(12):
        tool.send_signal(2)
        try:
            return tool.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            continue
    tool.kill()
    raise RuntimeError(f"{tool.args[0]} did not exit on SIGINT")


def attach(build, binary, bt_script):
    """tempomargin and bpftrace (bt_script) on `binary`, both attached; none without a
    script."""
    if not bt_script:
        return []
    return [run.start_tool([os.path.join(build, "tempomargin"), "-j", "-b", binary]),
            run.start_bpftrace(bt_script, None, binary)]


def detach(tools):
    """Stops what attach() started; the probe hits tempomargin saw (stage__complete and
    transfer__begin), 0 with nothing attached."""
    hits = 0
    for i, t in enumerate(tools):
        out, _ = stop(t)
        if i == 0:
            m = json.loads(out.splitlines()[-1])
            hits = sum(m[k]["count"] for k in ("margin_early", "margin_late", "stage_latency"))
    return hits


def replay_once(build, cmd, bt_script):
    """(wall s, CPU s, probe hits) of one replay; with bt_script, tempomargin and bpftrace
    attached first (hits: the stage__complete and transfer__begin hits tempomargin saw)."""
    tools = attach(build, cmd[0], bt_script)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    hits = detach(tools)
    if p.returncode != 0:
        raise RuntimeError(f"replay exited {p.returncode}")
    return wall, ru.ru_utime + ru.ru_stime, hits


def simulated_s(out_dir):
    """The workload's simulated duration: each policy's last finish, summed over policies."""
    with open(os.path.join(out_dir, "compare", "requests.csv")) as f:
        last = {}
        for r in csv.DictReader(f):
            last[r["policy"]] = max(last.get(r["policy"], 0.0), float(r["finish_s"]))
    return sum(last.values())


def replay_bench(build, replay, args):
    out_dir = os.path.join(build, "bench-replay")
    cmd = [replay] + args + ["-o", out_dir]
    bt = run.bt_for_binary(os.path.join(run.BT_DIR, "tempo_margin.bt"), replay, build)
    det, att = [], []
    for _ in range(REPS):  # interleaved, so drift on a shared machine hits both alike
        det.append(replay_once(build, cmd, None))
        att.append(replay_once(build, cmd, bt))
    med = lambda runs, i: statistics.median(r[i] for r in runs)  # noqa: E731
    dw, aw, dc, ac = med(det, 0), med(att, 0), med(det, 1), med(att, 1)
    hits = att[0][2]
    sim = simulated_s(out_dir)
    per_hit_us = 1e6 * (ac - dc) / hits
    return {"args": " ".join(args), "reps": REPS, "probe_hits_per_run": hits,
            "wall_detached_s": [r[0] for r in det], "wall_attached_s": [r[0] for r in att],
            "cpu_detached_s": [r[1] for r in det], "cpu_attached_s": [r[1] for r in att],
            "wall_slowdown_pct": 100.0 * (aw - dw) / dw,
            "cpu_slowdown_pct": 100.0 * (ac - dc) / dc,
            "cpu_per_hit_us": per_hit_us, "simulated_s": sim,
            "hits_per_simulated_s": hits / sim,
            "realtime_overhead_pct": 100.0 * (ac - dc) / sim}


URING_REQUESTS = "300"


def uring_once(build, binary, bt_script):
    """(requests/s, CPU s, hits) of one closed-loop uring_replay run."""
    tools = attach(build, binary, bt_script)
    p = subprocess.Popen([binary, os.path.join(build, "uring-replay-store"), URING_REQUESTS,
                          "0", "0"], stdout=subprocess.PIPE, text=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("uring_replay failed")
    hits = detach(tools)
    return json.loads(out)["requests_per_s"], ru.ru_utime + ru.ru_stime, hits


def uring_bench(build, binary):
    bt = run.bt_for_binary(os.path.join(run.BT_DIR, "tempo_margin.bt"), binary, build)
    uring_once(build, binary, None)  # fills the store and warms the page cache of its catalog
    det, att = [], []
    for _ in range(REPS):
        det.append(uring_once(build, binary, None))
        att.append(uring_once(build, binary, bt))
    med = lambda runs, i: statistics.median(r[i] for r in runs)  # noqa: E731
    dr, ar, dc, ac = med(det, 0), med(att, 0), med(det, 1), med(att, 1)
    return {"requests": int(URING_REQUESTS), "reps": REPS, "probe_hits_per_run": att[0][2],
            "rps_detached": [r[0] for r in det], "rps_attached": [r[0] for r in att],
            "cpu_detached_s": [r[1] for r in det], "cpu_attached_s": [r[1] for r in att],
            "throughput_slowdown_pct": 100.0 * (dr - ar) / dr,
            "cpu_increase_pct": 100.0 * (ac - dc) / dc}


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    build = os.path.abspath(args.pop(0))
    uring = None
    if args[:1] == ["--uring"]:
        uring = os.path.abspath(args[1])
        args = args[2:]
    if os.geteuid() != 0:
        print("SKIP: the eBPF bench needs root")
        return 0
    if not os.path.exists(os.path.join(run.TRACEFS, "events")):
        subprocess.run(["mount", "-t", "tracefs", "nodev", run.TRACEFS], check=True)
    out = {"probe_detached": probe_cost(build, False), "probe_attached": probe_cost(build, True)}
    if uring:
        out["uring"] = uring_bench(build, uring)
    if args:
        out["replay"] = replay_bench(build, os.path.abspath(args[0]), args[1:])
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
