"""A small emulated scheduler drives the vLLM-shaped adapter on the sim and uring devices."""

import os
import shutil
import tempfile
import time
import unittest

from tempokv import ClosedError, Context, Retrieval, TempoConnector, chunk_keys


def chunk_bytes(key: int, n: int) -> bytes:
    return (key.to_bytes(8, "little") * (n // 8 + 1))[:n]


class EmulatedScheduler:
    """Continuous batching in miniature: a waiting queue in arrival order, at most
    `max_running` running requests, each step decodes one token of every running request."""

    def __init__(self, conn: TempoConnector, max_running: int, step_ns: int, sleep) -> None:
        self.conn, self.max_running, self.step_ns, self.sleep = conn, max_running, step_ns, sleep
        self.loaded: dict[str, bytes] = {}

    def run(self, requests: list[tuple[str, list[int], int]]) -> None:
        waiting = [rid for rid, _, _ in requests]
        steps_left = {rid: steps for rid, _, steps in requests}
        for rid, tokens, _ in requests:
            self.conn.on_request(rid, tokens, ttu_ns=0)
        running: list[str] = []
        while waiting or running:
            # TTU of a waiting request: steps until a running slot frees, in queue order.
            remaining = sorted(steps_left[r] for r in running)

            def ttu_of(rid: str) -> int:
                pos = waiting.index(rid)
                slot_frees = remaining[pos] if pos < len(remaining) else remaining[-1] if remaining else 0
                return (slot_frees + pos // self.max_running) * self.step_ns

            self.conn.update_waiting(waiting, ttu_of)
            while waiting and len(running) < self.max_running:
                rid = waiting.pop(0)
                new, is_async = self.conn.get_num_new_matched_tokens(rid, 0)
                self.conn.update_state_after_alloc(rid, new)
                if is_async:
                    self.conn.start_load_kv([rid])
                    self.loaded[rid] = self.conn.wait_for_layer_load(rid)
                running.append(rid)
            self.sleep(self.step_ns)
            for rid in list(running):
                steps_left[rid] -= 1
                if steps_left[rid] == 0:
                    running.remove(rid)
                    self.conn.request_finished(rid)


def workload(chunk_tokens: int):
    """Six requests over two documents: prefixes of 3 and 2 stored chunks, some misses."""
    doc_a = list(range(1000, 1000 + 3 * chunk_tokens))
    doc_b = list(range(5000, 5000 + 2 * chunk_tokens))
    reqs = [("r0", doc_a + [1, 2], 3), ("r1", doc_b + [3], 2), ("r2", [7] * chunk_tokens, 2),
            ("r3", doc_a + [4], 4), ("r4", doc_b[:chunk_tokens] + [9], 1), ("r5", doc_a, 2)]
    return doc_a, doc_b, reqs


class AdapterOnSim(unittest.TestCase):
    def test_every_hit_is_staged_before_use_and_released(self):
        ctx = Context(fast_tier_bytes="1MiB", budget_bytes="512KiB", staging_rate="64MiB",
                      calibration_rate="64MiB", policy="tempo", tick="1ms")
        conn = TempoConnector(ctx, chunk_tokens=16, bytes_per_token=1024)
        doc_a, doc_b, reqs = workload(16)
        self.assertEqual(conn.save(doc_a), 3)
        self.assertEqual(conn.save(doc_b), 2)
        self.assertEqual(conn.save(doc_a), 0)  # already stored
        self.assertEqual(conn.lookup(doc_a + [1]), 48)
        self.assertEqual(conn.lookup([7] * 16), 0)
        sched = EmulatedScheduler(conn, max_running=2, step_ns=10_000_000,
                                  sleep=ctx.sim_advance)
        sched.run(reqs)
        self.assertEqual(sorted(sched.loaded), ["r0", "r1", "r3", "r4", "r5"])
        s = ctx.stats()
        self.assertEqual(s["claims_reported"], 5)
        self.assertEqual(s["claims_released"], 5)
        self.assertEqual(s["claims_ordinary"], 0)
        self.assertEqual(s["claims_live"], 0)
        self.assertEqual(s["ledger_bytes"], 0)
        self.assertEqual(s["pinned_bytes"], 0)
        # Each stored chunk was read from SSD once: later claims found it resident.
        self.assertEqual(s["staged_bytes"], 5 * 16 * 1024)
        self.assertEqual(conn.retrieve(doc_b), b"")  # LMCache shape, sim holds no bytes
        ctx.close()

    def test_over_budget_hits_take_the_ordinary_path(self):
        with Context(fast_tier_bytes="1MiB", budget_bytes="32KiB", policy="demand") as ctx:
            conn = TempoConnector(ctx, chunk_tokens=16, bytes_per_token=1024)
            doc_a, _, _ = workload(16)
            conn.save(doc_a)
            conn.on_request("big", doc_a, ttu_ns=0)
            self.assertEqual(conn.update_state_after_alloc("big", 48), Retrieval.ORDINARY)
            conn.start_load_kv(["big"])
            self.assertEqual(conn.get_finished(), {"big"})
            self.assertEqual(conn.outcome_of("big"), Retrieval.ORDINARY)
            conn.request_finished("big")
            with self.assertRaisesRegex(KeyError, "double release"):
                conn.request_finished("big")
            self.assertEqual(ctx.stats()["demand_bytes"], 48 * 1024)


class AdapterOnUring(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tempokv_py_", dir=os.getcwd())

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_loaded_bytes_are_the_stored_chunks(self):
        ctx = Context(device="uring", **{"uring.store_path": self.dir + "/store",
                                         "uring.prefault": False},
                      fast_tier_bytes="4MiB", budget_bytes="1MiB", policy="tempo", tick="2ms")
        self.assertEqual(ctx.device, "uring")
        conn = TempoConnector(ctx, chunk_tokens=16, bytes_per_token=256)
        doc_a, doc_b, reqs = workload(16)
        conn.save(doc_a, lambda i, key: chunk_bytes(key, 4096))
        conn.save(doc_b, lambda i, key: chunk_bytes(key, 4096))
        sched = EmulatedScheduler(conn, max_running=2, step_ns=2_000_000,
                                  sleep=lambda ns: time.sleep(ns / 1e9))
        sched.run(reqs)
        keys = {rid: chunk_keys(tokens, 16) for rid, tokens, _ in reqs}
        expect = {"r0": keys["r0"][:3], "r1": keys["r1"][:2], "r3": keys["r3"][:3],
                  "r4": keys["r4"][:1], "r5": keys["r5"][:3]}
        self.assertEqual(sorted(sched.loaded), sorted(expect))
        for rid, ks in expect.items():
            self.assertEqual(sched.loaded[rid], b"".join(chunk_bytes(k, 4096) for k in ks), rid)
        self.assertEqual(conn.retrieve(doc_b), b"".join(chunk_bytes(k, 4096) for k in keys["r1"][:2]))
        s = ctx.stats()
        self.assertEqual(s["claims_reported"], 6)
        self.assertEqual(s["claims_released"], 6)
        self.assertEqual(s["claims_live"], 0)
        self.assertEqual(s["ledger_bytes"], 0)
        self.assertEqual(s["pinned_bytes"], 0)
        ctx.close()
        with self.assertRaisesRegex(ValueError, "needs chunk_data"):
            conn.save([1] * 16)
        with self.assertRaisesRegex(ClosedError, "the context is closed"):
            conn.save([1] * 16, lambda i, key: chunk_bytes(key, 4096))


if __name__ == "__main__":
    unittest.main()
