"""A tempod for Python tests: started on a fresh uring store in a temporary directory,
serving its socket before the test runs, stopped (and checked to exit 0) after it.
TEMPOD_PATH names the daemon binary (CTest sets it)."""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest


class TempodTestCase(unittest.TestCase):
    """self.dir: the directory; self.sock: the daemon's socket. CONF: the configuration's
    top-level keys besides the socket and the store."""

    CONF = "device = uring\nfast_tier_bytes = 64MiB\nbudget_bytes = 8MiB\n"

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tempod-py-")
        self.sock = os.path.join(self.dir, "tempod.sock")
        conf = os.path.join(self.dir, "tempod.conf")
        with open(conf, "w") as f:
            f.write(self.CONF + f"daemon.socket = {self.sock}\n[uring]\n"
                    f"store_path = {self.dir}/store\nhuge_pages = false\nprefault = false\n")
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
