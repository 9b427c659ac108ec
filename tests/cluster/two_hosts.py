"""Two TempoKV hosts on one machine over one Ceph pool (Documentation/cluster.md): each host is
a tempod with its own object store, fast tier and socket, both with the same cluster tier
(pool and prefix). Engines are libtempo clients (device = daemon) through the Python binding.

Used by test_two_hosts.py and, as a demo that prints what happens, by `make run-cluster`:

    two_hosts.py demo    (CEPH_CONF, TEMPO_CEPH_POOL, TEMPOD_PATH, TEMPOKV_LIBRARY set)
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Callable, Sequence

from tempokv import Context, Retrieval, TempoError
from tempokv.keys import KeyScheme

SECOND_NS = 1_000_000_000


def object_bytes(key: int, n: int) -> bytes:
    """Bytes an engine would have computed for object `key`: different for every key."""
    block = bytes(((key * 131 + i * 7) & 0xFF) for i in range(256))
    return (block * (n // 256 + 1))[:n]


class Host:
    """One tempod: store, fast tier and socket of its own, the shared pool below the store."""

    def __init__(self, name: str, root: str, prefix: str, op_timeout_s: float = 3,
                 fast_tier: str = "64MiB", budget: str = "48MiB") -> None:
        self.name = name
        self.dir = os.path.join(root, name)
        os.mkdir(self.dir)
        self.socket = os.path.join(self.dir, "tempod.sock")
        self.conf = os.path.join(self.dir, "tempod.conf")
        with open(self.conf, "w") as f:
            f.write(f"device = uring\nfast_tier_bytes = {fast_tier}\nbudget_bytes = {budget}\n"
                    f"policy = immediate\ndaemon.socket = {self.socket}\n"
                    f"[cluster]\nbackend = rados\nconf = {os.environ['CEPH_CONF']}\n"
                    f"pool = {os.environ['TEMPO_CEPH_POOL']}\nprefix = {prefix}\n"
                    f"op_timeout_s = {op_timeout_s}\n"
                    f"[uring]\nstore_path = {self.dir}/store\nhuge_pages = false\n"
                    "prefault = false\n")
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "TEMPO_DAEMON")}
        self.log = open(os.path.join(self.dir, "tempod.log"), "w")
        self.daemon = subprocess.Popen([os.environ["TEMPOD_PATH"], "--config", self.conf],
                                       env=env, stderr=self.log)
        deadline = time.monotonic() + 30
        while True:  # until a client's HELLO is answered
            if self.daemon.poll() is not None:
                raise RuntimeError(f"tempod {name} exited {self.daemon.returncode}: {self.log_text()}")
            try:
                self.engine("probe").close()
                return
            except TempoError:
                if time.monotonic() > deadline:
                    self.daemon.kill()
                    raise RuntimeError(f"tempod {name} did not serve {self.socket} in 30 s") from None
                time.sleep(0.02)

    def engine(self, name: str) -> Context:
        return Context(device="daemon", **{"daemon.socket": self.socket, "daemon.engine": name})

    def log_text(self) -> str:
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def stop(self) -> int:
        """SIGTERM and wait (its write-throughs are waited for): tempod's exit status."""
        if self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
        try:
            rc = self.daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.daemon.kill()
            rc = self.daemon.wait()
        self.log.close()
        return rc


class TwoHosts:
    """Hosts A and B in a fresh temporary folder and a pool namespace of their own."""

    def __init__(self, tag: str, **host_options: object) -> None:
        self.root = tempfile.mkdtemp(prefix=f"tempo-two-hosts-{tag}-")
        self.prefix = f"two-hosts/{tag}/{os.path.basename(self.root)}/"
        self.hosts: list[Host] = []
        try:
            self.a = self._host("a", host_options)
            self.b = self._host("b", host_options)
        except BaseException:
            self.close()
            raise

    def _host(self, name: str, options: dict) -> Host:
        host = Host(name, self.root, self.prefix, **options)  # type: ignore[arg-type]
        self.hosts.append(host)
        return host

    def object_name(self, key: int) -> str:
        """The object's name in the pool (RadosTier: the prefix, then 16 hex digits)."""
        return f"{self.prefix}{key:016x}"

    def wait_in_pool(self, keys: Sequence[int], timeout_s: float = 30) -> float:
        """Waits until the pool lists every key (write-through is asynchronous): seconds."""
        t0 = time.monotonic()
        wanted = {self.object_name(k) for k in keys}
        while True:
            r = subprocess.run(["rados", "-c", os.environ["CEPH_CONF"], "-p",
                                os.environ["TEMPO_CEPH_POOL"], "ls"], capture_output=True, text=True)
            missing = wanted - set(r.stdout.split())
            if not missing:
                return time.monotonic() - t0
            if time.monotonic() - t0 > timeout_s:
                raise TimeoutError(f"{len(missing)} objects not in the pool after {timeout_s} s")
            time.sleep(0.05)

    def close(self) -> list[int]:
        """Stops both tempods and removes their folders: their exit statuses."""
        codes = [h.stop() for h in self.hosts]
        shutil.rmtree(self.root, ignore_errors=True)
        return codes


def prefix_objects(scheme: KeyScheme, tokens: Sequence[int], object_bytes_each: int) -> list[tuple[int, int]]:
    """The manifest of a prompt prefix: one object per chunk and layer group, chunk order."""
    return [(k, object_bytes_each) for ks in scheme.object_keys(scheme.chain(tokens)) for k in ks]


def save(engine: Context, objects: Sequence[tuple[int, int]]) -> None:
    for key, n in objects:
        engine.store_put(key, object_bytes(key, n))


def stage(engine: Context, objects: Sequence[tuple[int, int]], timeout_s: float = 30) -> tuple[int, Retrieval]:
    """Reports a claim for `objects`, asks for it at once and waits: the claim and its outcome
    (TempoError if it failed)."""
    cid = engine.report(list(objects), 0)
    engine.request_retrieval(cid)
    return cid, engine.wait_ready(cid, int(timeout_s * SECOND_NS))


def read(engine: Context, cid: int) -> bytes:
    """A ready claim's bytes from its fast-tier extents; the claim is released."""
    engine.transfer_begin(cid)
    try:
        return engine.read_claim(cid)
    finally:
        engine.transfer_end(cid)


def expected(objects: Sequence[tuple[int, int]]) -> bytes:
    return b"".join(object_bytes(k, n) for k, n in objects)


def settle(engine: Context, timeout_s: float = 30) -> dict:
    """Stats once no protected byte, pin or live claim is left (or after timeout_s)."""
    deadline = time.monotonic() + timeout_s
    while True:
        s = engine.stats()
        if (s["ledger_bytes"] == 0 and s["pinned_bytes"] == 0 and s["claims_live"] == 0) or \
                time.monotonic() > deadline:
            return s
        time.sleep(0.01)


def demo(say: Callable[[str], None] = print) -> int:
    scheme = KeyScheme(model="demo-8b", dtype="bf16", chunk_tokens=256, layer_groups=2)
    prompt = [(7 * i + 3) % 32000 for i in range(2048)]  # a 2,048-token conversation so far
    objects = prefix_objects(scheme, prompt, 512 << 10)
    say(f"pool '{os.environ['TEMPO_CEPH_POOL']}' ({os.environ['CEPH_CONF']})")
    hosts = TwoHosts("demo")
    try:
        for h in hosts.hosts:
            say(f"host {h.name}: tempod pid {h.daemon.pid}, store {h.dir}/store, socket {h.socket}")
        say(f"both hosts write through to the pool under '{hosts.prefix}'")
        with hosts.a.engine("engine-a") as a:
            t = time.monotonic()
            save(a, objects)
            say(f"engine A (host a) saved a {len(prompt)}-token prefix: {len(objects)} objects "
                f"of {512 << 10} bytes in {time.monotonic() - t:.3f} s (local store; the pool "
                "write is not waited for)")
        landed = hosts.wait_in_pool([k for k, _ in objects])
        say(f"the pool lists all {len(objects)} objects {landed:.2f} s later (rados ls)")
        with hosts.b.engine("engine-b") as b:
            keys = scheme.object_keys(scheme.chain(prompt))
            say(f"engine B (host b) gets the next turn; the same tokens give the same keys "
                f"({keys[0][0]:016x}...)")
            t = time.monotonic()
            cid, outcome = stage(b, objects)
            info = b.query(cid)
            say(f"host b: claim {cid} for {info.bytes} bytes {outcome.name} after "
                f"{time.monotonic() - t:.3f} s (staged from the pool into host b's fast tier)")
            same = read(b, cid) == expected(objects)
            say(f"engine B read the bytes engine A saved: {'identical' if same else 'DIFFERENT'}")
            s = settle(b)
            say(f"host b: staged_bytes {s['staged_bytes']}, ledger_bytes {s['ledger_bytes']}, "
                f"pinned_bytes {s['pinned_bytes']}")
        codes = hosts.close()
        say(f"tempods stopped (exit {codes[0]} and {codes[1]}); {hosts.root} "
            f"{'removed' if not os.path.exists(hosts.root) else 'STILL THERE'}")
        ok = same and s["ledger_bytes"] == 0 and codes == [0, 0] and not os.path.exists(hosts.root)
    except (TempoError, RuntimeError, TimeoutError) as e:
        say(f"FAILED: {e}")
        hosts.close()
        return 1
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1:] != ["demo"]:
        sys.exit("usage: two_hosts.py demo")
    sys.exit(demo())
