"""The vLLM connector's two roles in two processes of one engine, sharing claims through tempod
(vLLM with its engine core and a worker process): the scheduler side here, the worker side in
a child, both built by vLLM's factory (tests/engines/vllm_standin.py) with device = daemon;
tempod's engine is the one vLLM's engine_id names, so the worker waits for, transfers and
reads in place the claims the scheduler reports. Every paged block is compared with the
model's KV after every step; another engine cannot touch the engine's claims, which live on
when the worker process exits.

Run by CTest as python_tempod_connector (tests/tempod/CMakeLists.txt), with TEMPOD_PATH."""

import multiprocessing
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "engines"))

import vllm_standin as vs  # noqa: E402
from tempod_fixture import TempodTestCase  # noqa: E402
from tempokv import ClaimState, Context, TempoError  # noqa: E402

from test_vllm_contract import BLOCK, BLOCKS, extra_config, worker_main  # noqa: E402


def config(sock: str):
    return vs.make_vllm_config(vs.ModelSpec(), extra_config({"device": "daemon",
                                                             "daemon.socket": sock}),
                               block_size=BLOCK)


class ConnectorRolesInTwoProcesses(TempodTestCase):
    CONF = "device = uring\nfast_tier_bytes = 16MiB\nbudget_bytes = 4MiB\npolicy = tempo\n"

    def setUp(self):
        super().setUp()
        mp = multiprocessing.get_context("fork")  # torch is imported already
        self.commands, self.results = mp.Queue(), mp.Queue()
        self.worker = mp.Process(target=worker_main, args=(0, self.sock, vs.ModelSpec(),
                                                           "kv-first", self.commands,
                                                           self.results, 1))
        self.worker.start()
        status, error = self.results.get(timeout=120)
        self.assertEqual(status, "ready", error)
        cfg = config(self.sock)
        kvc = vs.make_kv_cache_config(vs.ModelSpec(), 1, BLOCK, BLOCKS)
        self.conn = vs.KVConnectorFactory.create_connector(cfg, vs.KVConnectorRole.SCHEDULER, kvc)
        self.scheduler = vs.Scheduler(cfg, kvc, self.conn)

    def tearDown(self):
        if self.worker.is_alive():
            self.commands.put(None)
            self.worker.join(60)
        self.conn.shutdown()
        super().tearDown()

    def serve(self, request):
        self.scheduler.add_request(request)
        first = None
        for _ in range(20):
            out = self.scheduler.schedule()
            check = {r.request_id: r.num_computed_tokens for r in self.scheduler.running}
            self.commands.put((out, {r.request_id: r.all_token_ids
                                     for r in self.scheduler.running}, check))
            status, value = self.results.get(timeout=120)
            self.assertEqual(status, "ok", value)
            self.assertEqual(value, ([], {rid: [] for rid in check}))
            self.scheduler.update_from_output(out)
            first = first or out
            if not self.scheduler.running and not self.scheduler.waiting:
                return first
        self.fail("did not finish")

    def test_scheduler_claims_are_loaded_by_the_worker_process(self):
        doc = list(range(2000, 2100))  # 3 full chunks and 4 tokens
        self.serve(vs.Request("a", doc))
        out = self.serve(vs.Request("b", doc[:96] + list(range(7, 27))))
        self.assertEqual(out.scheduled_new_reqs[0].num_computed_tokens, 96)
        load = out.kv_connector_metadata.loads[0]
        self.assertEqual({self.conn.ctx.query(c).state for c in load.claims[0]},
                         {ClaimState.RELEASED})
        # A third request waits behind one that runs: its claims are the engine's.
        self.scheduler.max_running = 1
        self.scheduler.add_request(vs.Request("c", list(range(3000, 3040))))
        self.scheduler.add_request(vs.Request("d", doc))
        claim = self.conn.claims_of("d")[0]
        with Context({"device": "daemon", "daemon.socket": self.sock,
                      "daemon.engine": "someone-else"}) as other:
            with self.assertRaises(TempoError):
                other.query(claim)
        # The worker process exits: the claims live on in the scheduler's.
        self.commands.put(None)
        self.worker.join(60)
        self.assertEqual(self.worker.exitcode, 0)
        self.assertIn(self.conn.ctx.query(claim).state,
                      {ClaimState.PLANNED, ClaimState.STAGING, ClaimState.STAGE_READY})
        self.conn.request_finished_all_groups(self.scheduler.waiting[-1], ([],))
        deadline = time.monotonic() + 10  # a claim cancelled while staging waits for it
        while True:
            stats = self.conn.ctx.stats()
            left = (stats["claims_live"], stats["ledger_bytes"], stats["pinned_bytes"])
            if left == (0, 0, 0) or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        self.assertEqual(left, (0, 0, 0))


if __name__ == "__main__":
    unittest.main()
