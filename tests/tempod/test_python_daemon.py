"""The Python binding against tempod: the same Context API in client mode (device = daemon)."""

import errno
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from tempokv import ClaimState, Context, Retrieval, TempoError


class AgainstTempod(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tempod-py-")
        self.sock = os.path.join(self.dir, "tempod.sock")
        conf = os.path.join(self.dir, "tempod.conf")
        with open(conf, "w") as f:
            f.write("device = uring\nfast_tier_bytes = 64MiB\nbudget_bytes = 8MiB\n"
                    f"daemon.socket = {self.sock}\n[uring]\nstore_path = {self.dir}/store\n"
                    "huge_pages = false\nprefault = false\n")
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "TEMPO_DAEMON")}
        self.daemon = subprocess.Popen([os.environ["TEMPOD_PATH"], "--config", conf], env=env)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
                    s.connect(self.sock)
                    break
            except OSError:
                time.sleep(0.02)
        else:
            self.fail("tempod did not start")

    def tearDown(self):
        self.daemon.send_signal(signal.SIGTERM)
        self.assertEqual(self.daemon.wait(timeout=30), 0)
        shutil.rmtree(self.dir)

    def test_put_report_retrieve_read_in_place(self):
        data = bytes(range(256)) * 1024
        with Context(device="daemon", **{"daemon.socket": self.sock}) as ctx:
            self.assertEqual(ctx.device, "uring")
            ctx.store_put(7, data)
            ctx.store_put(7, data)  # idempotent: the same bytes again
            with self.assertRaises(TempoError) as e:
                ctx.store_put(7, data[::-1])
            self.assertEqual(e.exception.errno, errno.EEXIST)
            cid = ctx.report([(7, len(data))], 10_000_000_000)
            self.assertEqual(ctx.query(cid).state, ClaimState.PLANNED)
            ctx.request_retrieval(cid)
            self.assertEqual(ctx.wait_ready(cid, 5_000_000_000), Retrieval.READY)
            ctx.transfer_begin(cid)
            self.assertEqual(ctx.read_claim(cid), data)
            ctx.transfer_end(cid)
            self.assertEqual(ctx.stats()["ledger_bytes"], 0)

    def test_environment_selects_the_daemon(self):
        os.environ["TEMPO_DAEMON"] = self.sock
        try:
            with Context(device="sim") as ctx:
                self.assertEqual(ctx.device, "uring")
                with self.assertRaises(TempoError) as e:
                    ctx.sim_advance(1)
                self.assertEqual(e.exception.errno, errno.EOPNOTSUPP)
        finally:
            del os.environ["TEMPO_DAEMON"]


if __name__ == "__main__":
    unittest.main()
