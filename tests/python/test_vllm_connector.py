"""The vLLM-shaped connector driven through the calls vLLM's scheduler and model runner make
over requests' lives (new request, match, allocate, load layer by layer, save, finish,
preemption, abort), with real torch tensors on the uring device: every paged block a load
writes is compared with the KV the first request computed and saved."""

import shutil
import tempfile
import unittest
from dataclasses import dataclass, field

import torch

from tempokv import Context
from tempokv.keys import KeyScheme
from tempokv.store import Store
from tempokv.vllm_connector import (KVConnectorRole, TempoConnectorConfig, TempoKVConnector)

BLOCK, CHUNK, LAYERS, GROUPS, HEADS, DIM, BLOCKS = 16, 32, 4, 2, 2, 8, 64
DTYPE = torch.float16
LAYER_NAMES = [f"model.layers.{i}.self_attn.attn" for i in range(LAYERS)]


def kv_of(layer: int, positions: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """What the model computes for these tokens at these positions: [n, 2, heads, dim],
    small integers (exact in float16), different for every layer, position and token."""
    n = positions.numel()
    kv = torch.arange(2).view(1, 2, 1, 1)
    h = torch.arange(HEADS).view(1, 1, HEADS, 1)
    d = torch.arange(DIM).view(1, 1, 1, DIM)
    v = (layer * 7 + positions.view(n, 1, 1, 1) * 3 + tokens.view(n, 1, 1, 1) * 11 + kv * 5 +
         h * 13 + d) % 251
    return v.to(DTYPE)


# The shapes of vLLM's scheduler objects the connector reads.
@dataclass
class Request:
    request_id: str
    prompt_token_ids: list


@dataclass
class Blocks:
    ids: list

    def get_block_ids(self):
        return (self.ids,)


@dataclass
class NewRequestData:
    req_id: str
    prompt_token_ids: list
    block_ids: tuple
    num_computed_tokens: int


@dataclass
class CachedRequestData:
    req_ids: list = field(default_factory=list)
    new_block_ids: list = field(default_factory=list)
    num_computed_tokens: list = field(default_factory=list)


@dataclass
class SchedulerOutput:
    scheduled_new_reqs: list = field(default_factory=list)
    scheduled_cached_reqs: CachedRequestData = field(default_factory=CachedRequestData)
    num_scheduled_tokens: dict = field(default_factory=dict)


class Engine:
    """vLLM's call order in miniature: one scheduler-side and one worker-side connector, a
    paged KV cache per layer, a forward pass that waits for each layer's load, writes the
    KV of the tokens it computes into their slots, and saves each layer."""

    def __init__(self, ctx: Context) -> None:
        self.scheme = KeyScheme("test/model", "float16", chunk_tokens=CHUNK, layer_groups=GROUPS)
        cfg = TempoConnectorConfig(ctx, self.scheme, BLOCK, LAYERS, HEADS, DIM, DTYPE)
        self.sched = TempoKVConnector(None, KVConnectorRole.SCHEDULER, tempo=cfg)
        self.worker = TempoKVConnector(None, KVConnectorRole.WORKER, tempo=cfg)
        self.caches = {n: torch.zeros(BLOCKS, 2, BLOCK, HEADS, DIM, dtype=DTYPE)
                       for n in LAYER_NAMES}
        self.worker.register_kv_caches(self.caches)
        self.free = list(range(BLOCKS))
        self.layer_checks = []  # called after each layer's wait_for_layer_load

    def allocate(self, n: int) -> list:
        ids, self.free = self.free[:n], self.free[n:]
        return ids

    def release(self, ids: list) -> None:
        self.free.extend(ids)

    def schedule_prefill(self, request: Request, num_computed: int, shared_blocks: list):
        """Match, allocate and build this step's metadata for a prefill of the whole prompt."""
        new, is_async = self.sched.get_num_new_matched_tokens(request, num_computed)
        assert is_async is False
        n_tokens = len(request.prompt_token_ids)
        blocks = shared_blocks + self.allocate((n_tokens + BLOCK - 1) // BLOCK - len(shared_blocks))
        self.sched.update_state_after_alloc(request, Blocks(blocks), new)
        out = SchedulerOutput(
            scheduled_new_reqs=[NewRequestData(request.request_id, request.prompt_token_ids,
                                               (blocks,), num_computed + new)],
            num_scheduled_tokens={request.request_id: n_tokens - num_computed - new})
        return new, blocks, self.sched.build_connector_meta(out)

    def forward(self, meta, request: Request, blocks: list, first: int, end: int) -> None:
        """Computes positions [first, end) of the request's tokens, layer by layer."""
        self.worker.bind_connector_metadata(meta)
        self.worker.start_load_kv(None)
        pos = torch.arange(first, end)
        toks = torch.tensor(request.prompt_token_ids[first:end])
        b = torch.tensor(blocks)[pos // BLOCK]
        s = pos % BLOCK
        for i, name in enumerate(LAYER_NAMES):
            self.worker.wait_for_layer_load(name)
            for check in self.layer_checks:
                check(i)
            self.caches[name][b, :, s] = kv_of(i, pos, toks)
            self.worker.save_kv_layer(name, self.caches[name], None)
        self.worker.wait_for_save()
        self.worker.get_finished(set())
        self.worker.clear_connector_metadata()

    def assert_kv(self, test, request: Request, blocks: list, first: int, end: int) -> None:
        """The paged blocks hold exactly the model's KV for positions [first, end)."""
        pos = torch.arange(first, end)
        toks = torch.tensor(request.prompt_token_ids[first:end])
        b = torch.tensor(blocks)[pos // BLOCK]
        for i, name in enumerate(LAYER_NAMES):
            test.assertTrue(torch.equal(self.caches[name][b, :, pos % BLOCK], kv_of(i, pos, toks)),
                            f"layer {i}")


class VllmConnector(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="vllm_conn_", dir=".")
        self.ctx = Context({"device": "uring", "uring.store_path": self.dir + "/store",
                            "fast_tier_bytes": "4MiB", "budget_bytes": "1MiB",
                            "uring.prefault": False, "policy": "tempo"})
        self.engine = Engine(self.ctx)

    def tearDown(self):
        self.engine.worker.shutdown()
        self.ctx.close()
        shutil.rmtree(self.dir)

    def run_cold(self, rid: str, tokens: list) -> list:
        """A request with nothing cached: prefill, save its full chunks, decode, finish."""
        e = self.engine
        req = Request(rid, tokens)
        e.sched.on_new_request(req)
        new, blocks, meta = e.schedule_prefill(req, 0, [])
        self.assertEqual(new, 0)
        self.assertEqual(meta.loads, [])
        self.assertEqual([len(s.chunk_keys) for s in meta.saves], [len(tokens) // CHUNK])
        e.forward(meta, req, blocks, 0, len(tokens))
        e.worker.flush()
        self.assertEqual(e.worker.save_errors, 0)
        # A decode step: a new block, nothing to save.
        extra = e.allocate(1)
        out = SchedulerOutput(scheduled_cached_reqs=CachedRequestData(
            [rid], [(extra,)], [len(tokens)]), num_scheduled_tokens={rid: 1})
        self.assertEqual(e.sched.build_connector_meta(out).saves, [])
        self.assertEqual(e.sched.request_finished(req, blocks + extra), (False, None))
        self.assertEqual(e.worker.get_finished({rid}), (None, None))
        e.release(blocks + extra)
        return blocks

    def test_a_second_request_loads_exactly_what_the_first_saved(self):
        e = self.engine
        doc = list(range(1000, 1000 + 100))  # 3 full chunks and 4 tokens
        self.run_cold("a", doc)
        keys = e.scheme.chain(doc)
        store = Store(self.ctx)
        self.assertEqual(store.lookup([k for ks in e.scheme.object_keys(keys) for k in ks]), 6)

        req = Request("b", doc[:96] + list(range(7, 27)))  # the same 96-token prefix
        e.sched.on_new_request(req)
        claims = e.sched.claims_of("b")
        self.assertEqual(len(claims), GROUPS)
        self.assertEqual({self.ctx.query(c).state.name for c in claims}, {"PLANNED"})
        # Side-effect free, and the same answer twice.
        self.assertEqual(e.sched.get_num_new_matched_tokens(req, 0), (96, False))
        self.assertEqual(e.sched.get_num_new_matched_tokens(req, 0), (96, False))
        new, blocks, meta = e.schedule_prefill(req, 0, [])
        self.assertEqual(new, 96)
        self.assertEqual(len(meta.loads), 1)
        self.assertEqual(meta.saves, [])  # its chunks are held already

        # Layer-wise: when layer 0 (group 0) may run, group 1's blocks are still untouched.
        loaded_pos = torch.arange(0, 96)
        b = torch.tensor(blocks)[loaded_pos // BLOCK]
        seen = []

        def check(layer):
            if layer == 0:
                g1 = e.caches[LAYER_NAMES[2]][b, :, loaded_pos % BLOCK]
                seen.append(bool(torch.count_nonzero(g1) == 0))
        e.layer_checks.append(check)
        e.forward(meta, req, blocks, 96, len(req.prompt_token_ids))
        self.assertEqual(seen, [True])
        e.assert_kv(self, req, blocks, 0, len(req.prompt_token_ids))
        self.assertEqual(e.worker.loaded_bytes, 3 * GROUPS * 2 * 2 * 2 * BLOCK * HEADS * DIM * 2)
        self.assertEqual(e.worker.get_block_ids_with_load_errors(), set())
        self.assertEqual({self.ctx.query(c).state.name for c in claims}, {"RELEASED"})
        self.assertEqual(e.sched.request_finished(req, blocks), (False, None))
        stats = self.ctx.stats()
        self.assertEqual((stats["claims_live"], stats["ledger_bytes"], stats["pinned_bytes"]),
                         (0, 0, 0))

    def test_local_prefix_hit_loads_only_the_rest(self):
        e = self.engine
        doc = list(range(500, 600))
        blocks_a = self.run_cold("a", doc)
        req = Request("c", doc[:96] + [1, 2, 3])
        e.sched.on_new_request(req)
        # The engine's own prefix cache holds the first chunk (two blocks, shared).
        shared = e.allocate(2)
        sentinel = torch.full((2, 2, BLOCK, HEADS, DIM), 7, dtype=DTYPE)
        for name in LAYER_NAMES:
            e.caches[name][shared] = sentinel
        new, blocks, meta = e.schedule_prefill(req, CHUNK, shared)
        self.assertEqual(new, 64)
        self.assertEqual(meta.loads[0].skip_blocks, 0)
        self.assertEqual(meta.loads[0].first_chunk, 1)
        e.forward(meta, req, blocks, 96, len(req.prompt_token_ids))
        for name in LAYER_NAMES:
            self.assertTrue(torch.equal(e.caches[name][shared], sentinel))  # not overwritten
        e.assert_kv(self, req, blocks, CHUNK, len(req.prompt_token_ids))
        self.assertNotEqual(blocks_a, [])

    def test_preempted_request_loads_again_into_new_blocks(self):
        e = self.engine
        doc = list(range(3000, 3070))  # 2 full chunks
        self.run_cold("a", doc)
        req = Request("d", doc[:64] + [9])
        e.sched.on_new_request(req)
        new, blocks, meta = e.schedule_prefill(req, 0, [])
        self.assertEqual(new, 64)
        e.forward(meta, req, blocks, 64, 65)
        e.assert_kv(self, req, blocks, 0, 65)
        first_claims = e.sched.claims_of("d")
        # Preempted: its blocks are freed (and reused), it waits again and is rescheduled.
        e.release(blocks)
        for name in LAYER_NAMES:
            e.caches[name].zero_()
        e.free = e.free[len(blocks):] + e.free[:len(blocks)]  # other blocks this time
        new, blocks2, meta = e.schedule_prefill(req, 0, [])
        self.assertEqual(new, 64)
        self.assertNotEqual(blocks2, blocks)
        self.assertTrue(set(e.sched.claims_of("d")).isdisjoint(first_claims))
        e.forward(meta, req, blocks2, 64, 65)
        e.assert_kv(self, req, blocks2, 0, 65)
        e.sched.request_finished(req, blocks2)
        self.assertEqual(self.ctx.stats()["claims_live"], 0)

    def test_abort_and_unknown_requests(self):
        e = self.engine
        doc = list(range(10, 80))
        self.run_cold("a", doc)
        req = Request("e", doc)
        e.sched.on_new_request(req)
        claims = e.sched.claims_of("e")
        self.assertEqual(len(claims), GROUPS)
        self.assertEqual(e.sched.request_finished(req, []), (False, None))  # aborted while waiting
        self.assertEqual({self.ctx.query(c).state.name for c in claims}, {"CANCELLED"})
        self.assertEqual(e.sched.request_finished(Request("never-seen", [1]), []), (False, None))
        self.assertEqual(e.sched.request_finished(req, []), (False, None))  # twice: no error
        # A request the scheduler never announced still matches.
        self.assertEqual(e.sched.get_num_new_matched_tokens(Request("late", doc), 0), (64, False))
        stats = self.ctx.stats()
        self.assertEqual((stats["claims_live"], stats["ledger_bytes"]), (0, 0))

    def test_layout_mismatch_is_refused(self):
        e = self.engine
        bad = dict(e.caches)
        bad[LAYER_NAMES[0]] = torch.zeros(BLOCKS, 2, BLOCK, HEADS, DIM + 1, dtype=DTYPE)
        with self.assertRaisesRegex(ValueError, "expected \\[num_blocks, 2, 16, 2, 8\\]"):
            e.worker.register_kv_caches(bad)
        with self.assertRaisesRegex(ValueError, "layers"):
            TempoConnectorConfig(self.ctx, e.scheme, BLOCK, 3, HEADS, DIM, DTYPE)
        with self.assertRaisesRegex(ValueError, "multiple of block_size"):
            TempoConnectorConfig(self.ctx, e.scheme, 24, LAYERS, HEADS, DIM, DTYPE)


if __name__ == "__main__":
    unittest.main()
