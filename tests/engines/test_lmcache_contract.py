"""LMCache contract suite: TempoL2Adapter loaded by LMCache's plugin L2 adapter loader and
driven as the multiprocess server's store and prefetch controllers drive an L2 adapter
(LMCache main at commit 000e8777a114: l2_adapters/base.py, plugin_l2_adapter.py,
distributed/api.py; stand-ins of LMCache's modules in standins/lmcache, of the controllers
below): submit, wait on the task kind's event fd, collect, with L1 memory objects of real
tensors compared byte for byte, on the `uring` device in process and through tempod from two
server processes.

LMCACHE_ADAPTER_MODULE / LMCACHE_ADAPTER_CLASS name the adapter (default tempokv.lmcache /
TempoL2Adapter)."""

import json
import multiprocessing
import os
import select
import shutil
import tempfile
import threading
import traceback
import unittest

import torch
from lmcache.v1.distributed.api import ObjectKey
from lmcache.v1.distributed.l2_adapters import plugin_l2_adapter  # noqa: F401 (registers "plugin")
from lmcache.v1.distributed.l2_adapters.config import parse_l2_adapter_config
from lmcache.v1.distributed.l2_adapters.factory import create_l2_adapter_from_registry
from lmcache.v1.memory_management import TensorMemoryObj

from tempod_fixture import TempodTestCase
from tempokv import ClaimState, Context

MODULE = os.environ.get("LMCACHE_ADAPTER_MODULE", "tempokv.lmcache")
CLASS = os.environ.get("LMCACHE_ADAPTER_CLASS", "TempoL2Adapter")
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
CHUNK_SHAPE = (2, 4, 256, 8)  # an L1 chunk object: K/V, layers, tokens, width (bfloat16)


def adapter_json(tempo: dict, **params) -> str:
    """The --l2-adapter argument of LMCache's server."""
    return json.dumps({"type": "plugin", "module_path": MODULE, "class_name": CLASS,
                       "adapter_params": {"tempo": tempo, **params}})


def build(tempo: dict, **params):
    return create_l2_adapter_from_registry(parse_l2_adapter_config(
        json.loads(adapter_json(tempo, **params))))


def key(i: int, rank: int = 0, group: int = 0) -> ObjectKey:
    return ObjectKey(i.to_bytes(16, "big"), MODEL, rank, group)


def chunk(i: int) -> TensorMemoryObj:
    """The KV LMCache's L1 holds for chunk i: a function of the chunk, exact in bfloat16."""
    n = torch.Size(CHUNK_SHAPE).numel()
    return TensorMemoryObj(((torch.arange(n) * 7 + i * 131) % 251).to(torch.bfloat16)
                           .view(CHUNK_SHAPE))


def empty() -> TensorMemoryObj:
    return TensorMemoryObj(torch.zeros(CHUNK_SHAPE, dtype=torch.bfloat16))


def wait_fd(fd: int, timeout_s: float = 30) -> None:
    """What the controllers do: poll the task kind's event fd, then read it."""
    p = select.poll()
    p.register(fd, select.POLLIN)
    if not p.poll(timeout_s * 1000):
        raise TimeoutError(f"event fd {fd} not signalled in {timeout_s} s")
    os.eventfd_read(fd)


class Controllers:
    """LMCache's StoreController and PrefetchController over one adapter."""

    def __init__(self, adapter) -> None:
        self.adapter = adapter

    def store(self, keys, objects) -> bool:
        task = self.adapter.submit_store_task(keys, objects)
        while True:
            wait_fd(self.adapter.get_store_event_fd())
            done = self.adapter.pop_completed_store_tasks()
            if task in done:
                return done[task].is_successful()

    def lookup(self, keys) -> list:
        task = self.adapter.submit_lookup_and_lock_task(keys)
        while True:
            wait_fd(self.adapter.get_lookup_and_lock_event_fd())
            bitmap = self.adapter.query_lookup_and_lock_result(task)
            if bitmap is not None:
                return [bitmap.test(i) for i in range(len(keys))]

    def load(self, keys, objects) -> list:
        task = self.adapter.submit_load_task(keys, objects)
        while True:
            wait_fd(self.adapter.get_load_event_fd())
            bitmap = self.adapter.query_load_result(task)
            if bitmap is not None:
                return [bitmap.test(i) for i in range(len(keys))]

    def prefetch(self, keys) -> list:
        """Lookup and lock, load the found keys into fresh L1 objects, unlock."""
        found = [k for k, hit in zip(keys, self.lookup(keys)) if hit]
        objects = [empty() for _ in found]
        loaded = self.load(found, objects) if found else []
        self.adapter.submit_unlock(found)
        return [(k, o) for k, o, ok in zip(found, objects, loaded) if ok]


def uring_settings(directory: str) -> dict:
    return {"device": "uring", "uring.store_path": directory + "/store", "fast_tier_bytes": "16MiB",
            "budget_bytes": "8MiB", "uring.prefault": False, "policy": "tempo"}


class InProcess(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="lmcache_contract_", dir=".")
        self.tempo = uring_settings(self.dir)
        self.adapters = []

    def tearDown(self):
        for a in self.adapters:
            a.close()
        shutil.rmtree(self.dir)

    def controllers(self, **params) -> Controllers:
        a = build(self.tempo, **params)
        self.adapters.append(a)
        return Controllers(a)

    def test_the_plugin_loader_builds_it_with_its_config_class(self):
        c = self.controllers()
        self.assertEqual(type(c.adapter).__name__, CLASS)
        fds = {c.adapter.get_store_event_fd(), c.adapter.get_lookup_and_lock_event_fd(),
               c.adapter.get_load_event_fd()}
        self.assertEqual(len(fds), 3)  # the controllers map fds to adapters: distinct
        self.assertTrue(c.adapter.report_status()["is_healthy"])

    def test_store_then_prefetch_byte_exact_with_gaps(self):
        c = self.controllers()
        keys = [key(i) for i in range(5)]
        self.assertTrue(c.store([keys[0], keys[1], keys[3]], [chunk(0), chunk(1), chunk(3)]))
        self.assertTrue(c.store([keys[0]], [chunk(0)]))  # again: idempotent
        self.assertEqual(c.lookup(keys), [True, True, False, True, False])
        c.adapter.submit_unlock([keys[0], keys[1], keys[3]])
        got = c.prefetch(keys)
        self.assertEqual([k for k, _ in got], [keys[0], keys[1], keys[3]])
        for k, obj in got:
            self.assertTrue(torch.equal(obj.tensor, chunk(keys.index(k)).tensor))
        self.assertFalse(c.store([keys[0]], [chunk(9)]))  # other bytes under a held key
        stats = c.adapter.ctx.stats()
        self.assertEqual((stats["claims_live"], stats["ledger_bytes"], stats["pinned_bytes"]),
                         (0, 0, 0))

    def test_a_lookup_and_lock_is_a_claim_with_its_ttu(self):
        c = self.controllers(lock_ttu_ms=5000)
        keys = [key(i) for i in range(3)]
        self.assertTrue(c.store(keys, [chunk(i) for i in range(3)]))
        ctx = c.adapter.ctx
        before = ctx.stats()["claims_reported"]
        self.assertEqual(c.lookup(keys), [True] * 3)
        self.assertEqual(ctx.stats()["claims_reported"], before + 1)
        claim = before + 1
        info = ctx.query(claim)
        self.assertEqual((info.state, info.bytes), (ClaimState.PLANNED, 3 * chunk(0).get_size()))
        self.assertAlmostEqual(info.ttu_ns / 1e9, 5.0, delta=0.5)
        objects = [empty() for _ in keys]
        self.assertEqual(c.load(keys, objects), [True] * 3)
        for i, obj in enumerate(objects):
            self.assertTrue(torch.equal(obj.tensor, chunk(i).tensor))
        c.adapter.submit_unlock(keys)  # the lookup's claim ends with its last lock
        self.assertEqual(ctx.query(claim).state, ClaimState.CANCELLED)
        self.assertEqual(ctx.stats()["claims_live"], 0)

    def test_locked_keys_are_not_deleted(self):
        c = self.controllers()
        keys = [key(i) for i in range(2)]
        self.assertTrue(c.store(keys, [chunk(0), chunk(1)]))
        self.assertEqual(c.lookup(keys[:1]), [True])
        c.adapter.delete(keys)
        self.assertEqual(c.lookup(keys), [True, False])  # key 0 was locked
        c.adapter.submit_unlock(keys[:1] * 2)

    def test_a_load_into_objects_of_another_size_fails_cleanly(self):
        c = self.controllers()
        self.assertTrue(c.store([key(1)], [chunk(1)]))
        small = TensorMemoryObj(torch.zeros(16, dtype=torch.bfloat16))
        self.assertEqual(c.load([key(1)], [small]), [False])
        self.assertEqual(int(torch.count_nonzero(small.tensor)), 0)
        self.assertEqual(c.adapter.ctx.stats()["claims_live"], 0)

    def test_stores_and_prefetches_from_two_threads(self):
        # LMCache's store and prefetch controllers call the adapter from their own threads.
        c = self.controllers()
        errors = []

        def storer():
            try:
                for i in range(0, 40, 4):
                    assert c.store([key(j) for j in range(i, i + 4)],
                                   [chunk(j) for j in range(i, i + 4)])
            except Exception:
                errors.append(traceback.format_exc())

        t = threading.Thread(target=storer)
        t.start()
        seen = 0
        while t.is_alive() or seen < 40:
            got = c.prefetch([key(j) for j in range(40)])
            for k, obj in got:
                self.assertTrue(torch.equal(obj.tensor,
                                            chunk(int.from_bytes(k.chunk_hash, "big")).tensor))
            seen = len(got)
        t.join()
        self.assertEqual(errors, [])

    def test_bad_params_are_refused_with_the_reason(self):
        with self.assertRaisesRegex(ValueError, "unknown key 'lock_ttu': accepted"):
            build(self.tempo, lock_ttu=5)
        with self.assertRaisesRegex(ValueError, "lock_ttu_ms must be a finite number"):
            build(self.tempo, lock_ttu_ms=-1)
        with self.assertRaisesRegex(ValueError, "say where TempoKV runs"):
            create_l2_adapter_from_registry(parse_l2_adapter_config(
                {"type": "plugin", "module_path": MODULE, "class_name": CLASS}))
        with Context(self.tempo):  # nothing left open
            pass


def server_main(sock: str, results) -> None:
    """Another LMCache server process: stores chunks through tempod, then exits."""
    try:
        a = build({"device": "daemon", "daemon.socket": sock})
        ok = Controllers(a).store([key(i, rank=1) for i in range(4)], [chunk(i) for i in range(4)])
        a.close()
        results.put(("ok", ok))
    except Exception:
        results.put(("error", traceback.format_exc()))


class ThroughTempod(TempodTestCase):
    CONF = "device = uring\nfast_tier_bytes = 16MiB\nbudget_bytes = 8MiB\npolicy = tempo\n"

    def test_one_server_loads_what_another_stored(self):
        mp = multiprocessing.get_context("fork")
        results = mp.Queue()
        p = mp.Process(target=server_main, args=(self.sock, results))
        p.start()
        status, value = results.get(timeout=120)
        p.join(60)
        self.assertEqual((status, value), ("ok", True), value)
        a = build({"device": "daemon", "daemon.socket": self.sock})
        try:
            c = Controllers(a)
            keys = [key(i, rank=1) for i in range(5)]
            got = c.prefetch(keys)  # sizes never seen here: the load claims with L1's
            self.assertEqual([k for k, _ in got], keys[:4])
            for i, (_, obj) in enumerate(got):
                self.assertTrue(torch.equal(obj.tensor, chunk(i).tensor))
            self.assertEqual(c.lookup([key(0, rank=0)]), [False])  # rank 0's is another object
        finally:
            a.close()


if __name__ == "__main__":
    unittest.main()
