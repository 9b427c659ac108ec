"""tempoctl's subcommands, text and JSON, on a store, a sim run and a uring run."""

import json
import os
import shutil
import subprocess
import tempfile
import unittest

from tempokv import Context, Retrieval

TEMPOCTL = os.environ["TEMPOCTL"]


def run(*args: str, code: int = 0) -> str:
    p = subprocess.run([TEMPOCTL, *args], capture_output=True, text=True, timeout=120)
    if p.returncode != code:
        raise AssertionError(f"tempoctl {' '.join(args)}: exit {p.returncode}, want {code}\n"
                             f"{p.stdout}{p.stderr}")
    return p.stdout + p.stderr


def run_json(*args: str, code: int = 0):
    return json.loads(run(*args, "--json", code=code))


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tempoctl_", dir=os.getcwd())
        self.sock = tempfile.mktemp(prefix="tempoctl_", suffix=".sock", dir="/tmp")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def uring(self, **kw):
        return Context(device="uring", **{"uring.store_path": self.dir + "/store",
                                          "uring.prefault": False},
                       fast_tier_bytes="4MiB", budget_bytes="1MiB", **kw)


class StatsAndClaimsOnSim(Base):
    def test_stats_and_claims_text_and_json(self):
        small = dict(fast_tier_bytes=10000, budget_bytes=5000, staging_rate=1000,
                     staging_slots=2, op_latency=0, calibration_rate=1000)
        with Context(small, control_socket=self.sock) as ctx:
            self.assertEqual(oct(os.stat(self.sock).st_mode & 0o777), "0o600")
            objs = [(k, 100) for k in range(1, 6)]
            ctx.sim_add_objects(objs)
            planned = ctx.report(objs, 2_000_000_000)
            done = ctx.report(objs[:1], 10_000_000_000)  # planned: cancelled at once
            ctx.cancel(done)

            stats = run_json("stats", "--socket", self.sock)
            self.assertEqual(stats["device"], "sim")
            self.assertEqual(stats["claims_reported"], 2)
            self.assertEqual(stats["claims_cancelled"], 1)
            self.assertEqual(stats["budget_bytes"], 5000)
            text = run("stats", "-s", self.sock)
            self.assertIn("claims_reported            2\n", text)
            self.assertIn("budget_bytes               5000 (4.88 KiB)\n", text)

            claims = run_json("claims", "--socket", self.sock)
            self.assertEqual([c["id"] for c in claims], [planned])  # ended claims hidden
            self.assertEqual((claims[0]["state"], claims[0]["ttr_ns"], claims[0]["laxity_ns"]),
                             ("PLANNED", 500_000_000, 1_500_000_000))
            self.assertEqual(len(run_json("claims", "--socket", self.sock, "--all")), 2)
            text = run("claims", f"--socket={self.sock}")
            self.assertEqual(text.splitlines()[1].split(),
                             [str(planned), "PLANNED", "500", "2000.000", "500.000", "1500.000", "0"])
            self.assertEqual(text.splitlines()[-1], "1 claims")
        self.assertFalse(os.path.exists(self.sock))  # the socket goes with the context
        out = run("stats", "--socket", self.sock, code=1)
        self.assertIn("cannot connect", out)

    def test_usage_errors(self):
        self.assertIn("give exactly one of --socket", run("stats", code=1))
        self.assertIn("unknown option '--bogus'", run("claims", "--bogus", code=2))
        self.assertIn("needs a value <path>", run("claims", "--socket", code=2))
        self.assertIn("unknown action 'fsck': accepted ls, verify, gc",
                      run("store", "fsck", "--store", self.dir, code=1))
        self.assertIn("usage: tempoctl list", run("list", "--help"))
        # Not a tempo.ko device: the STATS ioctl is refused and said so.
        self.assertIn("tempoctl stats: '/dev/null': Inappropriate ioctl for device",
                      run("stats", "--device", "/dev/null", code=1))


class StoreAndUring(Base):
    def populate(self):
        with self.uring(policy="immediate", control_socket=self.sock) as ctx:
            for k in (1, 2, 3):
                ctx.store_put(k, bytes([k]) * (8192 * k))
            cid = ctx.report([(1, 8192), (2, 16384)], 0)
            self.assertEqual(ctx.wait_ready(cid, 10**10), Retrieval.READY)
            stats = run_json("stats", "--socket", self.sock)
            self.assertEqual(stats["device"], "uring")
            self.assertEqual(stats["staged_bytes"], 8192 + 16384)
            self.assertEqual(stats["fast_tier_capacity_bytes"], 4 << 20)
            claims = run_json("claims", "--socket", self.sock)
            self.assertEqual((claims[0]["state"], claims[0]["bytes"]), ("STAGE_READY", 24576))
            self.assertIsNone(claims[0]["laxity_ns"])

    def test_store_ls_verify_gc(self):
        self.populate()
        store = self.dir + "/store"
        objs = run_json("store", "ls", "--store", store)
        self.assertEqual([(o["key"], o["size"]) for o in objs], [(1, 8192), (2, 16384), (3, 24576)])
        text = run("store", "ls", "-S", store)
        self.assertEqual(text.splitlines()[-1], "3 objects, 48.00 KiB, 0 quarantined")
        self.assertEqual(text.splitlines()[1].split()[:2], ["0000000000000001", "8192"])
        v = run_json("store", "verify", "--store", store)
        self.assertEqual((v["verified"], v["verified_bytes"], v["bad"]), (3, 49152, []))
        self.assertEqual(run("store", "verify", "--store", store).splitlines()[-1],
                         "3 objects verified (48.00 KiB), 0 bad")
        # Corrupt object 2's data: verify finds it (exit 1), gc drops it.
        off = next(o["offset"] for o in objs if o["key"] == 2)
        with open(store + "/data", "r+b") as f:
            f.seek(off + 100)
            f.write(b"\xff\x00\xff")
        v = run_json("store", "verify", "--store", store, code=1)
        self.assertEqual([(b["key"], b["error"]) for b in v["bad"]], [(2, "EBADMSG")])
        g = run_json("store", "gc", "--store", store)
        self.assertEqual((g["removed_quarantined"], g["objects"]), (1, 2))
        self.assertIn("removed 0 quarantined objects", run("store", "gc", "--store", store))
        self.assertEqual(run_json("store", "verify", "--store", store)["verified"], 2)

    def test_list_finds_the_configured_store(self):
        self.populate()
        conf = self.dir + "/tempo.conf"
        with open(conf, "w") as f:
            f.write(f"device = uring\n[uring]\nstore_path = {self.dir}/store\n")
        doc = run_json("list", "--config", conf, "--store", self.dir + "/missing")
        for key in ("cxl_memdevs", "cxl_regions", "namespaces", "dax_devices", "tempo_devices"):
            self.assertIsInstance(doc[key], list)
        self.assertEqual(doc["stores"][0], {"path": self.dir + "/missing",
                                            "error": "no object store here (no catalog)"})
        s = doc["stores"][1]
        self.assertEqual((s["path"], s["objects"], s["bytes"], s["quarantined"]),
                         (self.dir + "/store", 3, 49152, 0))
        text = run("list", "-c", conf)
        self.assertIn("object stores: 1 found\n", text)
        self.assertIn(f"  {self.dir}/store  3 objects  48.00 KiB  0 quarantined\n", text)
        self.assertIn("DAX devices (libdaxctl): ", text)

    def test_calibrate_writes_a_file_libtempo_loads(self):
        self.populate()
        out = self.dir + "/cal.conf"
        doc = run_json("calibrate", "--store", self.dir + "/store", "--output", out,
                       "--fast-tier-bytes", "16MiB", "--objects", "6", "--object-bytes", "512KiB")
        self.assertEqual((doc["objects"], doc["test_objects"]), (6, 3))
        self.assertEqual(doc["bytes"], 49152 + 3 * 512 * 1024)
        self.assertGreater(doc["staging_rate_bps"], 0)
        self.assertGreater(doc["demand_rate_bps"], 0)
        with open(out) as f:
            lines = [l for l in f.read().splitlines() if not l.startswith("#")]
        self.assertEqual(lines, [f"calibration_rate = {doc['staging_rate_bps']}",
                                 f"static_rate = {doc['staging_rate_bps']}",
                                 f"demand_rate = {doc['demand_rate_bps']}"])
        # The test objects are gone again; libtempo starts from the measured rate.
        self.assertEqual(len(run_json("store", "ls", "--store", self.dir + "/store")), 3)
        with self.uring(policy="tempo", calibration_file=out) as ctx:
            self.assertEqual(ctx.stats()["effective_rate_bps"], float(doc["staging_rate_bps"]))
        self.assertIn("wrote " + out, run("calibrate", "--store", self.dir + "/store",
                                          "-o", out, "--fast-tier-bytes", "16MiB", "-n", "5",
                                          "--object-bytes", "512KiB"))

    def test_calibrate_refuses_and_keeps_the_calibration_there(self):
        self.populate()
        out = self.dir + "/cal.conf"
        with open(out, "w") as f:
            f.write("calibration_rate = 1234567890\n")
        cal = ["calibrate", "--store", self.dir + "/store", "-o", out, "--fast-tier-bytes", "16MiB"]
        # A rate on 3 x 16 KiB is per-call overhead (it once wrote 36 KiB/s for 32 bytes);
        # a 2 GiB test object aborted with bad_alloc; io_uring refuses a depth past 4096.
        self.assertIn("too little to measure a rate on: 48.00 KiB in 3 objects",
                      run(*cal, "-n", "3", code=1))
        self.assertIn("at most 1.00 GiB", run(*cal, "--object-bytes", "2GiB", code=2))
        self.assertIn("--queue-depth: '4097' is out of range [1, 4096]",
                      run(*cal, "--queue-depth", "4097", code=2))
        # A write that fails (here: its temporary file cannot be made) leaves the old file.
        os.mkdir(out + ".tmp")
        self.assertIn(f"cannot write '{out}'",
                      run(*cal, "-n", "6", "--object-bytes", "512KiB", code=1))
        with open(out) as f:
            self.assertEqual(f.read(), "calibration_rate = 1234567890\n")
        self.assertEqual(len(run_json("store", "ls", "--store", self.dir + "/store")), 3)


if __name__ == "__main__":
    unittest.main()
