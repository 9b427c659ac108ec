#!/usr/bin/env python3
"""Host test of the tempo eBPF tools: tempostat, tempomargin and the bpftrace scripts attach to
probe_driver, which fires a known sequence of libtempo USDT probes, and must report exactly
the counts, byte totals and histogram slots the driver fired. Also checks the tools' refusals
(no root, no tracefs, bad arguments).

With --replay, the same tools and scripts attach to tempo-replay by its path, counting only
the process this test started (-p PID, a pid predicate for bpftrace: another replay running
at the same time is not counted); it serves a workload under six policies with a tight
budget, and the counts and byte totals they report must equal the replay's own CSVs.

With --uring-replay, likewise against tests/ebpf/uring_replay.cc, a real-time replay on
the uring device (O_DIRECT staging, wall clock), and its own counters.

With --capi-client and --libtempo, tests/ebpf/capi_client.c (a process using libtempo.so
through the C ABI) is traced with -p PID: the probes must be found in the mapped library.

Usage: tests/ebpf/run.py BUILD_DIR [--replay TEMPO_REPLAY] [--uring-replay URING_REPLAY]
                         [--capi-client CLIENT --libtempo LIBTEMPO_SO]
       (root; mounts tracefs at /sys/kernel/tracing if needed)
"""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BT_DIR = os.path.join(REPO, "ebpf", "bpftrace")
TRACEFS = "/sys/kernel/tracing"
ROUNDS = 12
ATTACH_TIMEOUT_S = 60

# tempostat fields the driver also counts.
STAT_FIELDS = [
    "reports", "revisions", "commits", "commit_bytes", "defers", "defer_bytes",
    "stage_submits", "stage_submit_bytes", "stage_completes", "staged_bytes", "stage_errors",
    "readies", "ready_bytes", "transfers", "transfer_bytes", "transfer_ends", "releases",
    "freed_bytes", "cancels", "ordinary", "ordinary_bytes", "evictions", "evicted_bytes",
]

# What ROUNDS=12 fires, worked out by hand from probe_driver.c's round_of(): rounds 4 and 9
# take the ordinary path, 3 and 8 are deferred, 5 and 11 cancelled, 6 has one failed read,
# 2, 5, 8 and 11 stage 3 objects instead of 4, plus one final 2-object claim left committed.
KIB = 1024
EXPECTED_12 = {
    "reports": 12, "revisions": 6, "commits": 11, "defers": 2, "ordinary": 2,
    "stage_completes": 39, "stage_errors": 1, "staged_bytes": 38 * 256 * KIB,
    "commit_bytes": 38 * 256 * KIB, "transfers": 8, "transfer_bytes": 8 * 1024 * KIB,
    "cancels": 2, "releases": 10, "evictions": 2, "ledger": 512 * KIB,
}

failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def slot(value):
    """The log2 slot of tempo_hist (ebpf/hist.h): 0 holds 0 and 1, k holds [2^k, 2^(k+1))."""
    return max(value, 1).bit_length() - 1


def expected_slots(values_ns, unit_ns):
    slots = {}
    for v in values_ns:
        s = slot(v // unit_ns)
        slots[s] = slots.get(s, 0) + 1
    return slots


def json_slots(hist):
    return {slot(s["low"]) if s["low"] else 0: s["count"] for s in hist["slots"]}


def uprobe_count(pid):
    out = subprocess.run(["bpftool", "-j", "perf"], capture_output=True, text=True, check=True)
    return sum(1 for e in json.loads(out.stdout or "[]")
               if e.get("pid") == pid and e.get("fd_type") == "uprobe")


def wait_for(cond, what):
    deadline = time.time() + ATTACH_TIMEOUT_S
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


def usdt_sites(binary):
    """{probe name: number of sites} of provider tempo in an ELF file (readelf -n)."""
    out = subprocess.run(["readelf", "-n", binary], capture_output=True, text=True,
                         check=True).stdout
    sites, provider = {}, None
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("Provider:"):
            provider = line.split()[1]
        elif line.startswith("Name:") and provider == "tempo":
            name = line.split()[1]
            sites[name] = sites.get(name, 0) + 1
    return sites


def bt_uprobes(script, binary):
    """How many uprobes bpftrace attaches for the script's usdt probes in `binary`."""
    sites = usdt_sites(binary)
    with open(script) as f:
        return sum(sites.get(line.strip().split(":")[-1], 0)
                   for line in f if line.startswith("usdt:"))


class Driver:
    def __init__(self, build, rounds):
        self.proc = subprocess.Popen([os.path.join(build, "probe-driver"), str(rounds)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.pid = json.loads(self.proc.stdout.readline())["pid"]

    def go(self):
        self.proc.stdin.write("go\n")
        self.proc.stdin.close()

    def fire(self):
        self.go()
        return self.result()

    def result(self):
        fired = json.loads(self.proc.stdout.readline())
        self.proc.wait(timeout=30)
        return fired


def start_tool(args):
    """Starts a tool and waits for its 'tracing' line (printed once every probe is attached)."""
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    name = os.path.basename(args[0])
    said = ""
    for line in p.stderr:
        said += line
        if line.startswith(f"{name}: tracing "):
            if not os.path.exists(os.path.join(TRACEFS, "events", "tempo")):
                check("tempo.ko's tracepoints are absent" in said,
                      f"{name} says tempo.ko's tracepoints are absent and goes on with USDT")
            return p
    p.wait()
    raise RuntimeError(f"{name} did not attach: {said}")


def start_bpftrace(script, pid, binary):
    """Starts bpftrace on `pid` (None: a script whose usdt probes name `binary`) and waits
    until bpftool lists a uprobe for every site of the script's probes in `binary`."""
    args = ["bpftrace", "-f", "json"] + (["-p", str(pid)] if pid else []) + [script]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    want = bt_uprobes(script, binary)
    wait_for(lambda: uprobe_count(p.pid) >= want or p.poll() is not None,
             f"bpftrace {os.path.basename(script)} to attach {want} uprobes")
    if p.poll() is not None:
        raise RuntimeError(f"bpftrace {script} exited: {p.stderr.read()}")
    return p


def bt_for_binary(script, binary, tmpdir, pid=None):
    """A copy of a USDT script attached by `binary`'s path (usdt:*: needs -p, a path does
    not) that counts only process `pid`: every probe gets a `pid == PID` predicate, so
    another process running the same binary at the same time is not counted. With no pid
    (make bench-ebpf: one process of the binary at a time, started after the attach) it
    counts every process of the binary."""
    with open(script) as f:
        lines = f.read().replace("usdt:*:", f"usdt:{binary}:").splitlines()
    out = []
    for i, line in enumerate(lines):
        if pid is None:
            out.append(line)
            continue
        if line.startswith("/") and i and lines[i - 1].startswith("usdt:"):
            out.append(f"/pid == {pid} && ({line.strip()[1:-1]})/")
            continue
        out.append(line)
        if line.startswith("usdt:") and not (i + 1 < len(lines) and lines[i + 1].startswith("/")):
            out.append(f"/pid == {pid}/")
    path = os.path.join(tmpdir, os.path.basename(script).replace(".bt", f"_{pid or 'any'}.bt"))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return path


class Gated:
    """A program started behind a gate (libgate.so, LD_PRELOAD): it is mapped and its PID
    known before main() runs, so the tools attach by path filtered on that PID; run()
    opens the gate."""

    def __init__(self, build, args):
        env = dict(os.environ, LD_PRELOAD=os.path.join(build, "libgate.so"))
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        said = self.proc.stderr.readline()
        if not said.startswith("tempo-gate: "):
            raise RuntimeError(f"{args[0]} did not stop at the gate: {said}")
        self.pid = int(said.split()[1])

    def run(self, timeout):
        """Opens the gate and waits; returns (status, stdout, stderr)."""
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        out, err = self.proc.communicate(timeout=timeout)  # closes stdin
        return self.proc.returncode, out, err


def bt_maps(out):
    """The keyed count()/sum() maps and hists a bpftrace -f json run printed."""
    maps = {}
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        ev = json.loads(line)
        if ev["type"] in ("map", "hist"):
            maps.update(ev["data"])
    return maps


def test_counts(build):
    print(f"== tools and bpftrace vs. probe_driver ({ROUNDS} rounds)")
    d = Driver(build, ROUNDS)
    stat = start_tool([os.path.join(build, "tempostat"), "-j", "-p", str(d.pid), "1"])
    margin = start_tool([os.path.join(build, "tempomargin"), "-j", "-p", str(d.pid)])
    margin_ms = start_tool([os.path.join(build, "tempomargin"), "-j", "-m", "-p", str(d.pid)])
    driver = os.path.join(build, "probe-driver")
    bt_margin = start_bpftrace(os.path.join(BT_DIR, "tempo_margin.bt"), d.pid, driver)
    bt_stat = start_bpftrace(os.path.join(BT_DIR, "tempo_stat.bt"), d.pid, driver)
    fired = d.fire()
    outs = {}
    for name, p in (("tempostat", stat), ("tempomargin", margin), ("tempomargin -m", margin_ms),
                    ("tempo_margin.bt", bt_margin), ("tempo_stat.bt", bt_stat)):
        out, err = p.communicate(timeout=60)
        check(p.returncode == 0, f"{name} exits 0 when the traced process ends ({err.strip()})")
        outs[name] = out

    for k, v in EXPECTED_12.items():
        check(fired[k] == v, f"driver fired {k} = {v} (got {fired[k]})")

    lines = [json.loads(l) for l in outs["tempostat"].splitlines() if l]
    check(len(lines) >= 1, f"tempostat printed {len(lines)} JSON interval(s)")
    for f in STAT_FIELDS:
        got = sum(l[f] for l in lines)
        check(got == fired[f], f"tempostat {f}: {got} == {fired[f]}")
    check(lines[-1]["protected_bytes"] == fired["ledger"],
          f"tempostat protected_bytes: {lines[-1]['protected_bytes']} == {fired['ledger']}")
    check(lines[-1]["ledger_synced"] is True, "tempostat ledger synced by a release")

    reports = [json.loads(l) for l in outs["tempomargin"].splitlines() if l]
    check(len(reports) == 1, f"tempomargin printed one report at the end ({len(reports)})")
    r = reports[-1]
    early = [m for m in fired["margins_ns"] if m >= 0]
    late = [-m for m in fired["margins_ns"] if m < 0]
    lat = fired["stage_latencies_ns"]
    per_transfer = fired["transfer_bytes"] // fired["transfers"]
    for key, vals, nbytes in (("margin_early", early, len(early) * per_transfer),
                              ("margin_late", late, len(late) * per_transfer),
                              ("stage_latency", lat, fired["stage_submit_bytes"])):
        h = r[key]
        check(h["count"] == len(vals), f"tempomargin {key} count {h['count']} == {len(vals)}")
        check(h["sum_ns"] == sum(vals), f"tempomargin {key} sum_ns {h['sum_ns']} == {sum(vals)}")
        check(h["bytes"] == nbytes, f"tempomargin {key} bytes {h['bytes']} == {nbytes}")
        want = expected_slots(vals, 1000)
        check(json_slots(h) == want, f"tempomargin {key} usec slots {json_slots(h)} == {want}")

    r = json.loads(outs["tempomargin -m"].splitlines()[-1])
    for key, vals in (("margin_early", early), ("margin_late", late), ("stage_latency", lat)):
        want = expected_slots(vals, 1000000)
        check(r[key]["unit"] == "msecs" and json_slots(r[key]) == want,
              f"tempomargin -m {key} msec slots {json_slots(r[key])} == {want}")

    m = bt_maps(outs["tempo_margin.bt"])
    for key, n, nbytes in (("early", len(early), len(early) * per_transfer),
                           ("late", len(late), len(late) * per_transfer),
                           ("staged", len(lat), fired["stage_submit_bytes"])):
        check(m["@count"].get(key) == n, f"tempo_margin.bt @count[{key}] {m['@count'].get(key)} == {n}")
        check(m["@bytes"].get(key) == nbytes,
              f"tempo_margin.bt @bytes[{key}] {m['@bytes'].get(key)} == {nbytes}")
    for hist, n in (("@early_us", len(early)), ("@late_us", len(late)),
                    ("@stage_latency_us", len(lat))):
        got = sum(b["count"] for b in m[hist])
        check(got == n, f"tempo_margin.bt {hist} holds {got} == {n} events")

    s = bt_maps(outs["tempo_stat.bt"])
    for key, field in (("staged", "stage_completes"), ("commits", "commits"),
                       ("defers", "defers"), ("transfers", "transfers"),
                       ("releases", "releases")):
        want = fired[field] - (fired["stage_errors"] if key == "staged" else 0)
        check(s["@total"].get(key) == want, f"tempo_stat.bt @total[{key}] {s['@total'].get(key)} == {want}")
    for key, field in (("staged", "staged_bytes"), ("commits", "commit_bytes"),
                       ("defers", "defer_bytes"), ("transfers", "transfer_bytes"),
                       ("releases", "freed_bytes")):
        got = s["@total_bytes"].get(key)
        check(got == fired[field], f"tempo_stat.bt @total_bytes[{key}] {got} == {fired[field]}")
    prot = [json.loads(l)["data"] for l in outs["tempo_stat.bt"].splitlines()
            if l.startswith("{") and "@protected_bytes" in l]
    check(bool(prot) and prot[-1].strip() == f"@protected_bytes: {fired['ledger']}",
          f"tempo_stat.bt protected bytes at the end == {fired['ledger']}")


def test_binary_path(build):
    print("== tempostat -b PATH -p PID: that process of the binary, not another one beside it")
    driver = os.path.join(build, "probe-driver")
    d = Driver(build, 3)
    stat = start_tool([os.path.join(build, "tempostat"), "-j", "-b", driver, "-p", str(d.pid),
                       "1"])
    other = Driver(build, 5)  # the same binary, running at the same time
    other.go()
    fired = d.fire()
    other.result()
    out, err = stat.communicate(timeout=30)
    check(stat.returncode == 0, f"tempostat -b -p exits 0 when its process ends ({err.strip()})")
    lines = [json.loads(l) for l in out.splitlines() if l]
    for f in ("commits", "staged_bytes", "transfers", "releases"):
        got = sum(l[f] for l in lines)
        check(got == fired[f], f"tempostat -b -p {f}: {got} == {fired[f]} (the other process not counted)")


REPLAY_POLICIES = "demand,immediate,queue-2,tempo-static,tempo,dax-l1"


def start_all(build, binary, pid):
    """tempostat, tempomargin and both bpftrace scripts on `binary`, counting only `pid`."""
    stat = start_tool([os.path.join(build, "tempostat"), "-j", "-b", binary, "-p", str(pid), "1"])
    margin = start_tool([os.path.join(build, "tempomargin"), "-j", "-b", binary, "-p", str(pid)])
    bts = {name: start_bpftrace(bt_for_binary(os.path.join(BT_DIR, name), binary, build, pid),
                                None, binary)
           for name in ("tempo_margin.bt", "tempo_stat.bt")}
    return stat, margin, bts


def csv_rows(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_replay(build, replay):
    """The replay's own CSVs against tempostat, tempomargin and both bpftrace scripts, all
    attached (to every process of the replay binary) before it starts."""
    print(f"== tools and bpftrace vs. tempo-replay ({REPLAY_POLICIES}, 8 GiB budget)")
    out_dir = os.path.join(build, "replay-test")
    g = Gated(build, [replay, "-p", REPLAY_POLICIES, "--budget", "8GiB", "-o", out_dir])
    stat, margin, bts = start_all(build, replay, g.pid)
    rc, _, err = g.run(600)
    check(rc == 0, f"tempo-replay exits 0 ({err.strip()[:200]})")
    outs = {}
    for name, p in [("tempostat", stat), ("tempomargin", margin)] + list(bts.items()):
        p.send_signal(2)
        out, err = p.communicate(timeout=60)
        check(p.returncode == 0, f"{name} exits 0 on SIGINT")
        outs[name] = out

    rows = csv_rows(os.path.join(out_dir, "compare", "requests.csv"))
    summary = csv_rows(os.path.join(out_dir, "compare", "summary.csv"))
    staged = [r for r in rows if r["path"] == "staged"]
    want = {
        "reports": sum(r["path"] in ("staged", "ordinary") for r in rows),
        "commits": sum(r["committed_s"] != "" for r in rows),
        "readies": len(staged),
        "transfers": len(staged),
        "transfer_ends": len(staged),
        "transfer_bytes": sum(int(r["kv_bytes"]) for r in staged),
        "ready_bytes": sum(int(r["kv_bytes"]) for r in staged),
        "defers": sum(int(s["capacity_deferrals"]) for s in summary),
        "ordinary": sum(int(s["ordinary_claims"]) for s in summary),
    }
    check(want["transfers"] > 0 and want["defers"] > 0 and want["ordinary"] > 0,
          f"the replay staged ({want['transfers']}), deferred ({want['defers']}) and took the "
          f"ordinary path ({want['ordinary']})")
    check(want["defers"] == sum(int(r["deferrals"]) for r in rows),
          "replay: summary deferrals == per-request deferrals")

    lines = [json.loads(l) for l in outs["tempostat"].splitlines() if l]
    total = {f: sum(l[f] for l in lines) for f in STAT_FIELDS}
    for f, v in want.items():
        check(total[f] == v, f"tempostat {f}: {total[f]} == replay's {v}")
    staged_gib = sum(float(s["staged_gib"]) for s in summary)
    check(abs(total["staged_bytes"] / 2**30 - staged_gib) <= 0.5e-4 * len(summary),
          f"tempostat staged_bytes {total['staged_bytes']} == replay's {staged_gib} GiB "
          "(to its printed precision)")
    check(total["stage_errors"] == 0 and total["stage_completes"] == total["stage_submits"],
          f"tempostat: every staging read completed ({total['stage_completes']})")
    check(lines[-1]["protected_bytes"] == 0 and lines[-1]["ledger_synced"],
          "tempostat: the ledger ends empty")

    m = [json.loads(l) for l in outs["tempomargin"].splitlines() if l][-1]
    n = m["margin_early"]["count"] + m["margin_late"]["count"]
    b = m["margin_early"]["bytes"] + m["margin_late"]["bytes"]
    check(n == want["transfers"], f"tempomargin margin events {n} == replay's staged {want['transfers']}")
    check(b == want["transfer_bytes"], f"tempomargin margin bytes {b} == replay's {want['transfer_bytes']}")
    check(m["stage_latency"]["count"] == total["stage_completes"] and
          m["stage_latency"]["bytes"] == total["stage_submit_bytes"],
          f"tempomargin staging reads {m['stage_latency']['count']} == tempostat's")

    bm = bt_maps(outs["tempo_margin.bt"])
    n = bm["@count"].get("early", 0) + bm["@count"].get("late", 0)
    b = bm["@bytes"].get("early", 0) + bm["@bytes"].get("late", 0)
    check(n == want["transfers"], f"tempo_margin.bt margin events {n} == replay's {want['transfers']}")
    check(b == want["transfer_bytes"], f"tempo_margin.bt margin bytes {b} == replay's {want['transfer_bytes']}")
    check(bm["@count"].get("early", 0) == m["margin_early"]["count"],
          "tempo_margin.bt early/late split == tempomargin's")
    bs = bt_maps(outs["tempo_stat.bt"])
    for key, field in (("commits", "commits"), ("defers", "defers"), ("transfers", "transfers")):
        check(bs["@total"].get(key, 0) == want[field],
              f"tempo_stat.bt @total[{key}] {bs['@total'].get(key, 0)} == replay's {want[field]}")
    check(bs["@total_bytes"].get("transfers") == want["transfer_bytes"],
          "tempo_stat.bt @total_bytes[transfers] == replay's")
    check(bs["@total_bytes"].get("staged") == total["staged_bytes"],
          "tempo_stat.bt @total_bytes[staged] == tempostat's")


def test_library(build, client, lib):
    """capi_client uses libtempo.so: the probes live in the mapped library, not in the
    executable, and -p PID must find them there."""
    print("== tempostat/tempomargin/bpftrace -p PID on a process using libtempo.so")
    p = subprocess.Popen([client, "40"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    pid = json.loads(p.stdout.readline())["pid"]
    check(not usdt_sites(client) and usdt_sites(lib).get("claim__commit", 0) > 0,
          "the probes are in libtempo.so, none in the executable")
    stat = start_tool([os.path.join(build, "tempostat"), "-j", "-p", str(pid), "1"])
    margin = start_tool([os.path.join(build, "tempomargin"), "-j", "-p", str(pid)])
    bt = start_bpftrace(os.path.join(BT_DIR, "tempo_margin.bt"), pid, lib)
    p.stdin.write("go\n")
    p.stdin.close()
    d = json.loads(p.stdout.readline())
    p.wait(timeout=60)
    outs = {}
    for name, t in (("tempostat", stat), ("tempomargin", margin), ("tempo_margin.bt", bt)):
        out, _ = t.communicate(timeout=60)
        check(t.returncode == 0, f"{name} exits 0 when the process ends")
        outs[name] = out
    check(d["transfers"] > 0 and d["capacity_deferral_attempts"] > 0 and d["ordinary"] > 0,
          f"the client transferred ({d['transfers']}), deferred ({d['capacity_deferral_attempts']}) "
          f"and went ordinary ({d['ordinary']})")
    lines = [json.loads(l) for l in outs["tempostat"].splitlines() if l]
    t = {f: sum(l[f] for l in lines) for f in STAT_FIELDS}
    for field, key in (("reports", "claims_reported"), ("commits", "claims_committed"),
                       ("defers", "capacity_deferral_attempts"), ("ordinary", "claims_ordinary"),
                       ("stage_completes", "stage_ops"), ("staged_bytes", "staged_bytes"),
                       ("transfers", "transfers"), ("transfer_bytes", "transfer_bytes")):
        check(t[field] == d[key], f"tempostat -p (library) {field}: {t[field]} == {d[key]}")
    m = [json.loads(l) for l in outs["tempomargin"].splitlines() if l][-1]
    n = m["margin_early"]["count"] + m["margin_late"]["count"]
    b = m["margin_early"]["bytes"] + m["margin_late"]["bytes"]
    check(n == d["transfers"] and b == d["transfer_bytes"],
          f"tempomargin -p (library): {n} margins, {b} bytes")
    bm = bt_maps(outs["tempo_margin.bt"])
    n = bm["@count"].get("early", 0) + bm["@count"].get("late", 0)
    check(n == d["transfers"], f"tempo_margin.bt -p (library): {n} margins")


URING_ARGS = ["60", "2", "20"]  # requests, ms between reports, TTU in ms


def test_uring_replay(build, binary):
    """tests/ebpf/uring_replay.cc: a real-time replay on the uring device (a Context over
    UringDevice, O_DIRECT staging); every tool and script against its own counters."""
    print(f"== tools and bpftrace vs. uring_replay ({' '.join(URING_ARGS)}: real time, uring)")
    store = os.path.join(build, "uring-replay-store")
    g = Gated(build, [binary, store] + URING_ARGS)
    stat, margin, bts = start_all(build, binary, g.pid)
    rc, replay_out, err = g.run(600)
    check(rc == 0, f"uring_replay exits 0 ({err.strip()[:200]})")
    outs = {}
    for name, p in [("tempostat", stat), ("tempomargin", margin)] + list(bts.items()):
        p.send_signal(2)
        out, _ = p.communicate(timeout=60)
        check(p.returncode == 0, f"{name} exits 0 on SIGINT")
        outs[name] = out
    d = json.loads(replay_out)
    check(d["transfers"] > 0 and d["capacity_deferrals"] > 0,
          f"the replay transferred ({d['transfers']}) and deferred ({d['capacity_deferrals']}); "
          f"waited {d['waited']}, ordinary {d['ordinary']}")
    check(d["staged_bytes"] == d["device_staged_bytes"], "replay: provider and device staged bytes agree")

    lines = [json.loads(l) for l in outs["tempostat"].splitlines() if l]
    t = {f: sum(l[f] for l in lines) for f in STAT_FIELDS}
    for field, key in (("reports", "reported"), ("commits", "committed"),
                       ("readies", "committed"), ("defers", "capacity_deferrals"),
                       ("ordinary", "controller_ordinary"), ("transfers", "transfers"),
                       ("transfer_ends", "transfers"), ("transfer_bytes", "transfer_bytes"),
                       ("releases", "released"), ("stage_submits", "stage_submitted"),
                       ("stage_completes", "stage_completed"), ("stage_errors", "stage_failed"),
                       ("staged_bytes", "staged_bytes")):
        check(t[field] == d[key], f"tempostat {field}: {t[field]} == replay's {key} {d[key]}")
    check(lines[-1]["protected_bytes"] == d["ledger_bytes"] == 0, "tempostat: the ledger ends empty")

    m = [json.loads(l) for l in outs["tempomargin"].splitlines() if l][-1]
    n = m["margin_early"]["count"] + m["margin_late"]["count"]
    b = m["margin_early"]["bytes"] + m["margin_late"]["bytes"]
    check(n == d["transfers"], f"tempomargin margin events {n} == replay's transfers {d['transfers']}")
    check(b == d["transfer_bytes"], f"tempomargin margin bytes {b} == replay's {d['transfer_bytes']}")
    check(m["margin_late"]["count"] == d["waited"] and
          m["margin_early"]["count"] == d["ready_at_request"],
          f"tempomargin: late {m['margin_late']['count']} == retrievals that waited "
          f"{d['waited']}, early {m['margin_early']['count']} == ready at request "
          f"{d['ready_at_request']}")
    check(m["stage_latency"]["count"] == d["stage_completed"] and
          m["stage_latency"]["bytes"] == d["staged_bytes"],
          f"tempomargin staging reads {m['stage_latency']['count']} == replay's {d['stage_completed']}")

    bm = bt_maps(outs["tempo_margin.bt"])
    n = bm["@count"].get("early", 0) + bm["@count"].get("late", 0)
    b = bm["@bytes"].get("early", 0) + bm["@bytes"].get("late", 0)
    check(n == d["transfers"], f"tempo_margin.bt margin events {n} == replay's {d['transfers']}")
    check(b == d["transfer_bytes"], f"tempo_margin.bt margin bytes {b} == replay's {d['transfer_bytes']}")
    check(bm["@count"].get("staged") == d["stage_completed"] and
          bm["@bytes"].get("staged") == d["staged_bytes"],
          "tempo_margin.bt staging reads and bytes == replay's")
    bs = bt_maps(outs["tempo_stat.bt"])
    for key, field in (("commits", "committed"), ("defers", "capacity_deferrals"),
                       ("transfers", "transfers"), ("releases", "released"),
                       ("staged", "stage_completed")):
        check(bs["@total"].get(key, 0) == d[field],
              f"tempo_stat.bt @total[{key}] {bs['@total'].get(key, 0)} == replay's {d[field]}")
    for key, field in (("staged", "staged_bytes"), ("transfers", "transfer_bytes")):
        check(bs["@total_bytes"].get(key, 0) == d[field],
              f"tempo_stat.bt @total_bytes[{key}] == replay's {field} {d[field]}")


def run_refusal(args, what, needle, pre=None):
    p = subprocess.run((pre or []) + args, capture_output=True, text=True, timeout=60)
    check(p.returncode != 0 and needle in p.stderr,
          f"{what}: exit {p.returncode}, says '{needle}' ({p.stderr.strip()[:160]})")


def test_refusals(build):
    print("== interval and count; refusals: no root, no tracefs, bad arguments")
    d = Driver(build, 1)
    t0 = time.monotonic()
    r = subprocess.run([os.path.join(build, "tempostat"), "-j", "-p", str(d.pid), "1", "2"],
                       capture_output=True, text=True, timeout=60)
    lines = r.stdout.splitlines()
    check(r.returncode == 0 and len(lines) == 2 and 1.8 < time.monotonic() - t0 < 30,
          f"tempostat 1 2 prints two 1-second reports and exits 0 ({len(lines)} lines)")
    # nobody runs a copy in a directory of its own: the checkout may lie below a directory
    # nobody cannot enter (a 0700 mktemp -d), which would refuse it for the wrong reason.
    nobody_dir = tempfile.mkdtemp(prefix="tempo-ebpf-nobody-", dir="/tmp")
    os.chmod(nobody_dir, 0o755)
    for tool in ("tempostat", "tempomargin"):
        path = os.path.join(build, tool)
        run_refusal([shutil.copy(path, nobody_dir), "-p", str(d.pid)], f"{tool} as nobody",
                    "missing privileges",
                    ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
        run_refusal(["sh", "-c", f"umount {TRACEFS} && exec {path} -p {d.pid}"],
                    f"{tool} without tracefs", "missing tracefs", ["unshare", "-m"])
        run_refusal([path, "-p", "999999999"], f"{tool} -p of no process", "no process")
        run_refusal([path, "-b", "/bin/true"], f"{tool} -b of a file without probes",
                    "has no tempo USDT probes")
        run_refusal([path, "0"], f"{tool} interval 0", "invalid interval")
        # Its tenths of a second wrapped a long: three reports at once, not one a decade.
        run_refusal([path, "-p", str(d.pid), "922337203685477581", "3"],
                    f"{tool} interval past the bound", "(whole seconds, 1 to 99999999)")
        if not os.path.exists(os.path.join(TRACEFS, "events", "tempo")):
            run_refusal([path], f"{tool} with nothing to trace", "nothing to trace")
    shutil.rmtree(nobody_dir)
    d.fire()


def main():
    opts = dict(zip(sys.argv[2::2], sys.argv[3::2]))
    if len(sys.argv) < 2 or len(sys.argv) % 2 or \
            set(opts) - {"--replay", "--uring-replay", "--capi-client", "--libtempo"}:
        print(__doc__)
        return 2
    build = os.path.abspath(sys.argv[1])
    replay = os.path.abspath(opts["--replay"]) if "--replay" in opts else None
    uring = os.path.abspath(opts["--uring-replay"]) if "--uring-replay" in opts else None
    if os.geteuid() != 0:
        print("SKIP: tests/ebpf needs root (BPF programs, uprobes, tracefs)")
        return 0
    if not os.path.exists(os.path.join(TRACEFS, "events")):
        subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS], check=True)
    test_counts(build)
    test_binary_path(build)
    test_refusals(build)
    if replay:
        test_replay(build, replay)
    else:
        print("SKIP: the replay check (no --replay TEMPO_REPLAY given)")
    if "--capi-client" in opts and "--libtempo" in opts:
        test_library(build, os.path.abspath(opts["--capi-client"]),
                     os.path.realpath(opts["--libtempo"]))
    else:
        print("SKIP: the libtempo.so check (no --capi-client CLIENT --libtempo LIB given)")
    if uring:
        test_uring_replay(build, uring)
    else:
        print("SKIP: the uring replay check (no --uring-replay URING_REPLAY given)")
    if failures:
        print(f"{len(failures)} check(s) FAILED")
        return 1
    print("all eBPF checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
