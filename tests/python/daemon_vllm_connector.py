"""The vLLM-shaped connector's two roles in two processes of one engine, sharing claims through
tempod (issue 13, item 5): the scheduler side runs here, the worker side in a process of its
own; both are contexts with device = daemon and one daemon.engine. The worker saves the KV
it computes (puts through the daemon), the scheduler finds it and reports the next request's
claims, the worker loads them by slot mapping from the daemon's fast tier (mapped read-only
in its process) and every paged block is compared with what the model computes.

Run by CTest as python_tempod_connector (tests/tempod/CMakeLists.txt), with TEMPOD_PATH."""

import multiprocessing
import time
import traceback
import unittest

import torch

from tempod_fixture import TempodTestCase
from tempokv import ClaimState, Context, TempoError
from tempokv.keys import KeyScheme
from tempokv.store import Store
from tempokv.vllm_connector import KVConnectorRole, TempoConnectorConfig, TempoKVConnector
from test_vllm_connector import (BLOCK, BLOCKS, CHUNK, DIM, DTYPE, GROUPS, HEADS, LAYER_NAMES,
                                 LAYERS, Engine, Request)

ENGINE = "vllm-test"


def connector(sock: str, role: KVConnectorRole) -> tuple[Context, TempoKVConnector]:
    ctx = Context({"device": "daemon", "daemon.socket": sock, "daemon.engine": ENGINE})
    scheme = KeyScheme("test/model", "float16", chunk_tokens=CHUNK, layer_groups=GROUPS)
    cfg = TempoConnectorConfig(ctx, scheme, BLOCK, LAYERS, HEADS, DIM, DTYPE)
    return ctx, TempoKVConnector(None, role, tempo=cfg)


class WorkerSide:
    """The model runner's process: its paged KV cache and the worker-side connector; runs the
    forward passes the scheduler sends (Engine.forward, as in the one-process test)."""

    forward = Engine.forward
    assert_kv = Engine.assert_kv

    def __init__(self, sock: str) -> None:
        self.ctx, self.worker = connector(sock, KVConnectorRole.WORKER)
        self.caches = {n: torch.zeros(BLOCKS, 2, BLOCK, HEADS, DIM, dtype=DTYPE)
                       for n in LAYER_NAMES}
        self.worker.register_kv_caches(self.caches)
        self.layer_checks: list = []


def worker_main(sock: str, commands, results) -> None:
    """Each command: (meta, tokens, blocks, first, end), a forward pass of positions [first,
    end); the reply: (error or None, loaded bytes, save errors, blocks with load errors),
    after checking that the blocks hold the model's KV for positions [0, end)."""
    side = WorkerSide(sock)
    checker = unittest.TestCase()
    while (cmd := commands.get()) is not None:
        meta, tokens, blocks, first, end = cmd
        req = Request("r", tokens)
        try:
            for cache in side.caches.values():
                cache.zero_()
            side.forward(meta, req, blocks, first, end)
            side.worker.flush()
            side.assert_kv(checker, req, blocks, 0, end)
            error = None
        except Exception:  # the parent reports it
            error = traceback.format_exc()
        results.put((error, side.worker.loaded_bytes, side.worker.save_errors,
                     sorted(side.worker.get_block_ids_with_load_errors())))
    side.worker.shutdown()
    side.ctx.close()


class SchedulerSide:
    """The scheduler's process: the scheduler-side connector and the block allocator."""

    allocate = Engine.allocate
    release = Engine.release
    schedule_prefill = Engine.schedule_prefill

    def __init__(self, sock: str) -> None:
        self.ctx, self.sched = connector(sock, KVConnectorRole.SCHEDULER)
        self.scheme = self.sched.scheme
        self.free = list(range(BLOCKS))


class ConnectorRolesInTwoProcesses(TempodTestCase):
    CONF = "device = uring\nfast_tier_bytes = 16MiB\nbudget_bytes = 4MiB\npolicy = tempo\n"

    def setUp(self):
        super().setUp()
        mp = multiprocessing.get_context("fork")  # torch is imported already: no second import
        self.commands, self.results = mp.Queue(), mp.Queue()
        self.worker = mp.Process(target=worker_main, args=(self.sock, self.commands, self.results))
        self.worker.start()
        self.side = SchedulerSide(self.sock)

    def tearDown(self):
        if self.worker.is_alive():
            self.commands.put(None)
            self.worker.join(60)
        self.side.ctx.close()
        super().tearDown()

    def step(self, meta, req: Request, blocks: list, first: int, end: int):
        self.commands.put((meta, req.prompt_token_ids, blocks, first, end))
        error, loaded, save_errors, load_errors = self.results.get(timeout=120)
        self.assertIsNone(error, error)
        self.assertEqual(save_errors, 0)
        self.assertEqual(load_errors, [])
        return loaded

    def test_scheduler_claims_are_loaded_by_the_worker_process(self):
        s = self.side
        doc = list(range(2000, 2000 + 100))  # 3 full chunks and 4 tokens
        # A cold request: the worker computes and saves its 3 chunks x 2 layer groups.
        cold = Request("a", doc)
        s.sched.on_new_request(cold)
        new, blocks, meta = s.schedule_prefill(cold, 0, [])
        self.assertEqual(new, 0)
        self.assertEqual(self.step(meta, cold, blocks, 0, len(doc)), 0)
        s.sched.request_finished(cold, blocks)
        s.release(blocks)
        keys = [k for ks in s.scheme.object_keys(s.scheme.chain(doc)) for k in ks]
        self.assertEqual(Store(s.ctx).lookup(keys), 6)  # the worker's puts, seen here

        # The same prefix again: claims reported by the scheduler, loaded by the worker.
        req = Request("b", doc[:96] + list(range(7, 27)))
        s.sched.on_new_request(req)
        claims = s.sched.claims_of("b")
        self.assertEqual(len(claims), GROUPS)
        self.assertEqual(s.sched.get_num_new_matched_tokens(req, 0), (96, False))
        s.free = s.free[40:] + s.free[:40]  # other blocks than the cold request's
        new, blocks, meta = s.schedule_prefill(req, 0, [])
        self.assertEqual(new, 96)
        loaded = self.step(meta, req, blocks, 96, len(req.prompt_token_ids))
        self.assertEqual(loaded, 3 * GROUPS * 2 * 2 * 2 * BLOCK * HEADS * DIM * 2)
        self.assertEqual({s.ctx.query(c).state for c in claims}, {ClaimState.RELEASED})
        s.sched.request_finished(req, blocks)

        # Another engine cannot touch this engine's claims.
        waiting = Request("c", doc)
        s.sched.on_new_request(waiting)
        claim = s.sched.claims_of("c")[0]
        with Context({"device": "daemon", "daemon.socket": self.sock,
                      "daemon.engine": "someone-else"}) as other:
            with self.assertRaises(TempoError):
                other.query(claim)
        # The worker process exits: the engine's claims live on in the scheduler's.
        self.commands.put(None)
        self.worker.join(60)
        self.assertEqual(self.worker.exitcode, 0)
        self.assertIn(s.ctx.query(claim).state,
                      {ClaimState.PLANNED, ClaimState.STAGING, ClaimState.STAGE_READY})
        s.sched.request_finished(waiting, [])
        deadline = time.monotonic() + 10  # a claim cancelled while staging waits for it
        while True:
            stats = s.ctx.stats()
            left = (stats["claims_live"], stats["ledger_bytes"], stats["pinned_bytes"])
            if left == (0, 0, 0) or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        self.assertEqual(left, (0, 0, 0))


if __name__ == "__main__":
    unittest.main()
