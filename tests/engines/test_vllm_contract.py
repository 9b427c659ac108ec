"""vLLM contract suite: TempoKVConnector loaded and driven as vLLM loads and drives a KV
connector (vllm_standin.py: the factory, the scheduler, the model runner; vLLM main at commit
003df2961dd8, and v0.10/v0.11 where they differ), with real torch tensors, every paged block
compared with the model's KV after every step, on the `uring` device in process and through
tempod with TP=2 as two worker processes.

VLLM_CONNECTOR_MODULE / VLLM_CONNECTOR_CLASS name the connector (default tempokv.vllm /
TempoKVConnector), so the suite can be pointed at another build of it."""

import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import traceback
import unittest

import torch

import vllm_standin as vs
from tempod_fixture import TempodTestCase
from tempokv import ClaimState, Context
from tempokv.keys import KeyScheme
from tempokv.store import Store

MODULE = os.environ.get("VLLM_CONNECTOR_MODULE", "tempokv.vllm")
CLASS = os.environ.get("VLLM_CONNECTOR_CLASS", "TempoKVConnector")
BLOCK, CHUNK, GROUPS, BLOCKS = 16, 32, 2, 96
MODEL = vs.ModelSpec()


def uring_settings(directory: str) -> dict:
    return {"device": "uring", "uring.store_path": directory + "/store", "fast_tier_bytes": "8MiB",
            "budget_bytes": "4MiB", "uring.prefault": False, "policy": "tempo"}


def extra_config(tempo: dict, **options) -> dict:
    extra = {"tempo": tempo, "chunk_tokens": CHUNK, "layer_groups": GROUPS}
    extra.update(options)
    return extra


class Engine:
    """One engine with TP=1: the scheduler and its one worker in this process (vLLM with one
    GPU), both connectors built by the factory."""

    def __init__(self, extra: dict, model: vs.ModelSpec = MODEL, layout: str = "kv-first",
                 cache_dtype: str = "auto", hma: bool = False, sliding: tuple = (),
                 draft_layers: int = 0, two_arg: bool = False, resumed_flags: bool = False,
                 budget: int = 512, max_num_seqs: int = 4) -> None:
        self.config = vs.make_vllm_config(model, extra, cache_dtype=cache_dtype, hma=hma,
                                          speculative=draft_layers > 0, block_size=BLOCK,
                                          module=MODULE, connector=CLASS,
                                          max_num_seqs=max_num_seqs)
        dtype = torch.uint8 if cache_dtype.startswith("fp8") else None
        self.kv_cache_config = vs.make_kv_cache_config(model, 1, BLOCK, BLOCKS, sliding,
                                                       draft_layers, dtype)
        given = None if two_arg else self.kv_cache_config
        self.sched_conn = vs.KVConnectorFactory.create_connector(
            self.config, vs.KVConnectorRole.SCHEDULER, given)
        self.scheduler = vs.Scheduler(self.config, self.kv_cache_config, self.sched_conn,
                                      budget, resumed_flags)
        self.runner = vs.ModelRunner(self.config, self.kv_cache_config, 0, layout, dtype,
                                     given)
        self.requests: dict[str, vs.Request] = {}

    def add(self, request: vs.Request) -> None:
        self.requests[request.request_id] = request
        self.scheduler.add_request(request)

    def step(self, test: unittest.TestCase, layer_checks=None) -> vs.SchedulerOutput:
        out = self.scheduler.schedule()
        tokens = {r.request_id: r.all_token_ids for r in self.scheduler.running}
        errors = self.runner.execute(out, tokens, layer_checks)
        test.assertEqual(errors, set(), "blocks with load errors")
        self.scheduler.update_from_output(out)
        for r in self.scheduler.running:
            test.assertEqual(self.runner.mismatches(r.request_id, r.num_computed_tokens), [],
                             f"request {r.request_id} after the step")
        return out

    def run(self, test: unittest.TestCase, steps: int = 50) -> None:
        for _ in range(steps):
            if not self.scheduler.running and not self.scheduler.waiting:
                break
            self.step(test)
        test.assertFalse(self.scheduler.running or self.scheduler.waiting, "did not finish")
        self.runner.connector.flush()

    def close(self) -> None:
        self.runner.connector.shutdown()
        self.sched_conn.shutdown()


def doc(seed: int, n: int) -> list:
    """n token ids of a document: quadratic residues, so no two stretches repeat."""
    return [(seed * 7919 + i * i * 31 + i * 17) % 30011 for i in range(n)]


def object_keys(prompt: list, model: vs.ModelSpec = MODEL, dtype: str = "float16/b16",
                rank: int = 0, tp: int = 1) -> list:
    """The keys of a prompt's objects, chunk by chunk, as Documentation/engines.md specifies
    them: the model, the cache dtype and block size (the dtype alone where MLA's latent
    cache has no blocks in its order), the rank (0 where MLA replicates) and the TP size."""
    scheme = KeyScheme(model.name, dtype, rank, tp, chunk_tokens=CHUNK, layer_groups=GROUPS)
    return [k for ks in scheme.object_keys(scheme.chain(prompt)) for k in ks]


class InProcess(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="vllm_contract_", dir=".")
        self.tempo = uring_settings(self.dir)
        self.engines: list[Engine] = []

    def tearDown(self):
        for e in self.engines:
            e.close()
        shutil.rmtree(self.dir)

    def engine(self, **kw) -> Engine:
        extra = kw.pop("extra", None) or extra_config(self.tempo)
        e = Engine(extra, **kw)
        self.engines.append(e)
        return e

    # ---------------------------------------------------------------- construction ----
    def test_the_factory_builds_both_roles_on_one_context(self):
        # Both roles in one process (TP=1): the second role must not open the uring store
        # again (EBUSY), and the scheduler role asks no tensor-parallel rank.
        e = self.engine()
        self.assertIs(e.sched_conn.ctx, e.runner.connector.ctx)
        self.assertEqual(e.sched_conn.role, vs.KVConnectorRole.SCHEDULER)
        self.assertEqual(e.runner.connector.role, vs.KVConnectorRole.WORKER)
        self.assertTrue(any(c.__name__ == "SupportsHMA" for c in type(e.sched_conn).__mro__))

    def test_settings_from_a_config_file(self):
        conf = os.path.join(self.dir, "tempo.conf")
        with open(conf, "w") as f:
            f.write(f"device = uring\nfast_tier_bytes = 8MiB\nbudget_bytes = 4MiB\n[uring]\n"
                    f"store_path = {self.dir}/store\nprefault = false\n")
        e = self.engine(extra={"tempo_config": conf, "chunk_tokens": CHUNK,
                               "layer_groups": GROUPS})
        self.assertEqual(e.sched_conn.ctx.device, "uring")
        self.assertEqual(e.sched_conn.ctx.stats()["budget_bytes"], 4 << 20)

    def test_bad_settings_are_refused_with_the_reason(self):
        cases = [
            (extra_config(self.tempo, chunk_tokns=32), "unknown key 'chunk_tokns': accepted"),
            ({"chunk_tokens": 32}, "say where TempoKV runs"),
            (extra_config(self.tempo, chunk_tokens=24), "multiple of the block size"),
            (extra_config(self.tempo, layer_groups=5), "more than the model's 4 layers"),
            (extra_config(self.tempo, layer_groups=0), "layer_groups must be a positive"),
            (extra_config(self.tempo, step_costs="gpt-9"), "step_costs must be one of"),
        ]
        for extra, message in cases:
            with self.subTest(message), self.assertRaisesRegex(ValueError, message):
                Engine(extra)
        mamba = vs.make_kv_cache_config(MODEL, 1, BLOCK, BLOCKS)
        mamba.kv_cache_groups.append(vs.KVCacheGroupSpec(["model.layers.9.mixer"],
                                                         vs.MambaSpec(BLOCK)))
        config = vs.make_vllm_config(MODEL, extra_config(self.tempo), module=MODULE,
                                     connector=CLASS)
        with self.assertRaisesRegex(ValueError, "MambaSpec is not paged attention KV"):
            vs.KVConnectorFactory.create_connector(config, vs.KVConnectorRole.SCHEDULER, mamba)
        config.parallel_config.pipeline_parallel_size = 2
        with self.assertRaisesRegex(ValueError, "pipeline parallelism"):
            vs.KVConnectorFactory.create_connector(config, vs.KVConnectorRole.SCHEDULER,
                                                   self.kv_config())
        with self.assertRaisesRegex(ValueError, "ambiguous|look alike"):
            one = vs.make_kv_cache_config(MODEL, 1, BLOCK, 2)
            vs.ModelRunner(vs.make_vllm_config(MODEL, extra_config(self.tempo), module=MODULE,
                                               connector=CLASS), one, 0, "kv-first")
        # Nothing was left open: the store opens again.
        with Context(self.tempo) as ctx:
            self.assertEqual(ctx.stats()["claims_live"], 0)

    def kv_config(self):
        return vs.make_kv_cache_config(MODEL, 1, BLOCK, BLOCKS)

    # ------------------------------------------------------------------ round trips ----
    def round_trip(self, e: Engine, prompt: list, dtype: str = "float16/b16",
                   model: vs.ModelSpec = MODEL) -> None:
        """A cold request computes and saves; a second request with the same prompt loads
        every full chunk but the last token's and computes the rest; both checked block by
        block after every step."""
        e.add(vs.Request("cold", prompt))
        e.run(self)
        keys = object_keys(prompt, model, dtype)
        self.assertEqual(Store(e.sched_conn.ctx).lookup(keys), len(keys))
        e.add(vs.Request("warm", prompt))
        out = e.step(self)  # the loaded blocks checked with the rest
        self.assertEqual(out.scheduled_new_reqs[0].num_computed_tokens,
                         (len(prompt) - 1) // CHUNK * CHUNK)
        e.run(self)
        stats = e.sched_conn.ctx.stats()
        self.assertEqual((stats["claims_live"], stats["ledger_bytes"], stats["pinned_bytes"]),
                         (0, 0, 0))

    def test_every_attention_layout_round_trips_byte_exact(self):
        for layout in ("kv-first", "blocks-first", "packed"):
            with self.subTest(layout):
                e = self.engine(layout=layout)
                self.round_trip(e, doc(len(layout), 100))
                e.close()
                self.engines.remove(e)

    def test_an_object_saved_under_one_layout_loads_under_another(self):
        prompt = doc(3, 100)
        a = self.engine(layout="kv-first")
        a.add(vs.Request("a", prompt))
        a.run(self)
        a.close()
        self.engines.remove(a)
        b = self.engine(layout="packed")
        b.add(vs.Request("b", prompt))
        out = b.step(self)  # checked block by block in the packed layout
        self.assertEqual(out.scheduled_new_reqs[0].num_computed_tokens, 96)

    def test_mla_latent_cache_round_trips(self):
        mla = vs.ModelSpec(use_mla=True, kv_heads=1, head_size=24)
        self.round_trip(self.engine(model=mla, layout="latent"), doc(5, 100), "float16", mla)

    def test_fp8_cache_round_trips_under_its_own_keys(self):
        e = self.engine(cache_dtype="fp8")
        self.round_trip(e, doc(6, 100), dtype="fp8/b16")
        e.close()
        self.engines.remove(e)
        auto = self.engine()
        auto.add(vs.Request("auto", doc(6, 100)))
        out = auto.step(self)
        self.assertEqual(out.scheduled_new_reqs[0].num_computed_tokens, 0)  # not fp8's objects

    def test_draft_model_layers_are_registered_and_left_out(self):
        # EAGLE: a fifth layer numbered after the target's four.
        e = self.engine(draft_layers=1)
        self.assertEqual(len(e.runner.caches), 5)
        self.round_trip(e, doc(7, 100))

    def test_the_hybrid_allocator_round_trips_both_groups(self):
        # HMA on: layers 1 and 3 sliding-window, their own block table (KV cache group 1).
        e = self.engine(hma=True, sliding=(1, 3))
        self.assertEqual(len(e.kv_cache_config.kv_cache_groups), 2)
        self.round_trip(e, doc(8, 100))

    def test_the_two_argument_constructor_reads_the_model_config(self):
        e = self.engine(two_arg=True)
        self.assertIsNone(e.sched_conn._kv_cache_config)
        self.round_trip(e, doc(9, 100))

    # ----------------------------------------------------------- request lifecycle ----
    def preempted_and_resumed(self, resumed_flags: bool) -> None:
        # 48 tokens a step: chunk 0 saved in the first step, then the request is preempted
        # (its blocks freed), resumed into new blocks with chunk 0 loaded, and prefilled on
        # with blocks appended to its new table; chunks 1-5 are saved from that table.
        e = self.engine(budget=48, resumed_flags=resumed_flags)
        prompt = doc(11, 200)
        a = vs.Request("a", prompt)
        e.add(a)
        e.step(self)
        e.runner.connector.flush()
        store = Store(e.sched_conn.ctx)
        keys = object_keys(prompt)
        self.assertEqual(store.lookup(keys), GROUPS)
        e.scheduler.preempt(a)
        e.scheduler.pool.free.rotate(40)  # other blocks this time
        out = e.step(self)
        self.assertEqual(out.scheduled_cached_reqs.req_ids, ["a"])
        self.assertEqual(out.scheduled_cached_reqs.num_computed_tokens, [CHUNK])
        e.run(self)
        self.assertEqual(store.lookup(keys), 6 * GROUPS)
        # A new request loads the six chunks the resumed one saved.
        b = vs.Request("b", prompt)
        e.add(b)
        out = e.step(self)
        self.assertEqual(out.scheduled_new_reqs[0].num_computed_tokens, 6 * CHUNK)
        e.run(self)

    def test_a_resumed_request_saves_from_its_new_blocks(self):
        self.preempted_and_resumed(resumed_flags=False)

    def test_a_resumed_request_saves_from_its_new_blocks_before_late_2025(self):
        self.preempted_and_resumed(resumed_flags=True)

    def test_abort_while_waiting_and_requests_never_seen(self):
        e = self.engine(max_num_seqs=1)
        prompt = doc(12, 100)
        e.add(vs.Request("a", prompt))
        e.run(self)
        e.add(vs.Request("b", doc(13, 40)))
        e.step(self)  # b runs; c waits behind it with its claims planned
        c = vs.Request("c", prompt)
        e.add(c)
        claims = e.sched_conn.claims_of("c")
        self.assertEqual(len(claims), GROUPS)
        self.assertEqual({e.sched_conn.ctx.query(x).state for x in claims}, {ClaimState.PLANNED})
        e.scheduler.abort(c)
        self.assertEqual({e.sched_conn.ctx.query(x).state for x in claims},
                         {ClaimState.CANCELLED})
        self.assertEqual(e.sched_conn.request_finished_all_groups(vs.Request("x", [1]), ([],)),
                         (False, None))
        e.run(self)
        stats = e.sched_conn.ctx.stats()
        self.assertEqual((stats["claims_live"], stats["ledger_bytes"]), (0, 0))

    # --------------------------------------------------------------------- ordering ----
    def test_extents_are_released_only_after_the_copy_completed(self):
        e = self.engine()
        prompt = doc(14, 100)
        e.add(vs.Request("a", prompt))
        e.run(self)
        b = vs.Request("b", prompt)
        e.add(b)
        claims = e.sched_conn.claims_of("b")
        out = e.scheduler.schedule()
        # The claims are stage-ready once staged; hold the side stream before the step.
        for cid in claims:
            self.assertEqual(e.sched_conn.ctx.wait_ready(cid, 5_000_000_000).name, "READY")
        gate = threading.Event()
        conn = e.runner.connector
        conn.copy_stream.submit(gate.wait)
        e.runner._track(out)
        conn.bind_connector_metadata(out.kv_connector_metadata)
        conn.start_load_kv(None)  # copies submitted behind the gate
        states = {e.sched_conn.ctx.query(c).state for c in claims}
        self.assertEqual(states, {ClaimState.TRANSFERRING})  # extents held while copying
        self.assertGreater(e.sched_conn.ctx.stats()["pinned_bytes"], 0)
        gate.set()
        conn.wait_for_layer_load(vs.layer_name(0))
        conn.wait_for_layer_load(vs.layer_name(2))
        conn.get_finished(set())
        self.assertEqual({e.sched_conn.ctx.query(c).state for c in claims}, {ClaimState.RELEASED})
        conn.clear_connector_metadata()

    def test_a_save_leaves_the_forward_pass_before_its_copy(self):
        e = self.engine()
        prompt = doc(15, 70)
        e.add(vs.Request("a", prompt))
        out = e.scheduler.schedule()
        conn = e.runner.connector
        e.runner._track(out)
        e.runner.tokens["a"] = prompt
        gate = threading.Event()
        conn.copy_stream.submit(gate.wait)
        conn.bind_connector_metadata(out.kv_connector_metadata)
        conn.start_load_kv(None)
        done = threading.Event()

        def forward():
            for i, name in enumerate(e.runner.names):
                conn.wait_for_layer_load(name)
                pos = torch.arange(70)
                table = torch.tensor(e.runner.tables["a"][0])
                e.runner._write(e.runner.caches[name], table[pos // BLOCK], pos % BLOCK, i, pos,
                                torch.tensor(prompt))
                conn.save_kv_layer(name, e.runner.caches[name], None)
            done.set()

        t = threading.Thread(target=forward)
        t.start()
        self.assertTrue(done.wait(10), "save_kv_layer waited for its copy")
        t.join()
        keys = object_keys(prompt)
        self.assertEqual(Store(e.sched_conn.ctx).lookup(keys), 0)  # nothing copied yet
        gate.set()
        conn.wait_for_save()
        conn.get_finished(set())
        conn.clear_connector_metadata()
        conn.flush()
        self.assertEqual(Store(e.sched_conn.ctx).lookup(keys), 2 * GROUPS)

    # ---------------------------------------------------------------------- runtime ----
    def test_the_scheduler_feeds_the_runtime_side_each_step(self):
        # One slot, 10 ms per decode step and nothing else: the request running with 5 of
        # its 6 tokens left holds it for 5 steps, so the first waiting request's TTU is 50 ms,
        # every claim of it (both layer groups: the follower gets the lead's TTU). A request
        # whose kv_hints give a TTU keeps it.
        costs = {"prefill_pass_ns": 0, "prefill_token_ns": 0, "prefill_pair_ns": 0,
                 "decode_pass_ns": 1e7, "decode_seq_ns": 0, "decode_context_ns": 0,
                 "retrieval_bps": 1e12}
        e = self.engine(max_num_seqs=1, extra=extra_config(self.tempo, step_costs=costs,
                                                           learn_costs=False))
        prompt = doc(16, 100)
        e.add(vs.Request("a", prompt))
        e.run(self)
        e.add(vs.Request("long", doc(17, 20), max_tokens=6))
        e.step(self)  # its prefill: 1 token out of 6
        hint = {"protocol_version": "0.1", "message_id": "m1", "actions": [
            {"action_id": "x", "action_type": "other.thing", "action_version": "1", "payload": {}},
            {"action_id": "t", "action_type": "tempokv.ttu", "action_version": "1.0",
             "payload": {"ttu_seconds": 7.5}}]}
        e.add(vs.Request("next", prompt))
        e.add(vs.Request("hinted", prompt[:64] + [1, 2], kv_hints=hint))
        e.step(self)  # 2 of 6 generated once this step's schedule ran
        ctx = e.sched_conn.ctx
        for cid in e.sched_conn.claims_of("next"):
            info = ctx.query(cid)
            self.assertEqual(info.state, ClaimState.PLANNED)
            self.assertAlmostEqual(info.ttu_ns / 1e6, 40.0, delta=10)  # 4 steps left, less time
        for cid in e.sched_conn.claims_of("hinted"):
            self.assertAlmostEqual(ctx.query(cid).ttu_ns / 1e9, 7.5, delta=0.5)
        feed = e.sched_conn.scheduler.feed
        self.assertGreaterEqual(feed.steps, 2)
        self.assertEqual(feed.errors, 0)
        e.run(self)


_FAKE_BASE = """
import abc, enum


class KVConnectorRole(enum.Enum):
    SCHEDULER = 0
    WORKER = 1


class KVConnectorMetadata(abc.ABC):
    pass


class KVConnectorBase_V1(abc.ABC):
    def __init__(self, vllm_config, role{kv_cache_config}):
        self._vllm_config = vllm_config
        self._role = role
        self._connector_metadata = None{keep}

    @property
    def role(self):
        return self._role

    def bind_connector_metadata(self, connector_metadata):
        self._connector_metadata = connector_metadata

    def clear_connector_metadata(self):
        self._connector_metadata = None

    def _get_connector_metadata(self):
        return self._connector_metadata

    def has_connector_metadata(self):
        return self._connector_metadata is not None
"""

_FAKE_HMA = """

class SupportsHMA(abc.ABC):
    @abc.abstractmethod
    def request_finished_all_groups(self, request, block_ids):
        ...
"""


def _fake_vllm(root: str, two_arg: bool) -> None:
    """A vllm package holding only the connector base module, as vLLM before late 2025
    (two-argument __init__, no SupportsHMA) or after it: written for this test."""
    package = root
    for part in ("vllm", "distributed", "kv_transfer", "kv_connector", "v1"):
        package = os.path.join(package, part)
        os.makedirs(package)
        open(os.path.join(package, "__init__.py"), "w").close()
    text = _FAKE_BASE.format(
        kv_cache_config="" if two_arg else ", kv_cache_config",
        keep="" if two_arg else "\n        self._kv_cache_config = kv_cache_config")
    with open(os.path.join(package, "base.py"), "w") as f:
        f.write(text + ("" if two_arg else _FAKE_HMA))


class AgainstVllmsBaseClass(unittest.TestCase):
    """With vLLM importable the connector subclasses vLLM's own base: built by the factory
    against a base with the two-argument constructor (before late 2025) and the
    three-argument one with SupportsHMA (after), each in a process of its own."""

    def test_both_base_class_generations(self):
        here = os.path.dirname(os.path.abspath(__file__))
        for two_arg in (True, False):
            with self.subTest(two_arg=two_arg), tempfile.TemporaryDirectory(dir=".") as d:
                _fake_vllm(d, two_arg)
                script = textwrap.dedent(f"""
                    import sys
                    import vllm_standin as vs
                    from vllm.distributed.kv_transfer.kv_connector.v1 import base
                    extra = {{"tempo": {uring_settings(d)!r}, "chunk_tokens": 32,
                              "layer_groups": 2}}
                    config = vs.make_vllm_config(vs.ModelSpec(), extra, module={MODULE!r},
                                                 connector={CLASS!r}, hma={not two_arg})
                    kvc = vs.make_kv_cache_config(vs.ModelSpec(), 1, 16, 64)
                    s = vs.KVConnectorFactory.create_connector(config, base.KVConnectorRole.SCHEDULER, kvc)
                    w = vs.KVConnectorFactory.create_connector(config, base.KVConnectorRole.WORKER, kvc)
                    assert isinstance(s, base.KVConnectorBase_V1), type(s).__mro__
                    assert {two_arg} or isinstance(s, base.SupportsHMA)
                    assert s.ctx is w.ctx
                    w.bind_connector_metadata(s.build_connector_meta(vs.SchedulerOutput(
                        [], vs.CachedRequestData([], set(), [], [], [], []), {{}}, 0, set())))
                    assert w.has_connector_metadata()
                    w.clear_connector_metadata()
                    s.shutdown(); w.shutdown()
                    print("built")
                    """)
                env = dict(os.environ)
                env["PYTHONPATH"] = os.pathsep.join([d, here, env.get("PYTHONPATH", "")])
                r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                                   text=True, timeout=120)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("built", r.stdout)


# ------------------------------------------------------------- TP=2 through tempod ----


def worker_main(rank: int, sock: str, model: vs.ModelSpec, layout: str, commands, results,
                tp: int = 2):
    """A worker process of an engine on tempod: its own connector and, with TP > 1, heads.
    Each command is a step, (SchedulerOutput, token ids, positions to check per request);
    the reply its load errors and the layers whose blocks differ from the model's KV."""
    try:
        extra = extra_config({"device": "daemon", "daemon.socket": sock})
        config = vs.make_vllm_config(model, extra, tp=tp, block_size=BLOCK, module=MODULE,
                                     connector=CLASS)
        kvc = vs.make_kv_cache_config(model, tp, BLOCK, BLOCKS)
        runner = vs.ModelRunner(config, kvc, rank, layout)
        results.put(("ready", None))
    except Exception:
        results.put(("error", traceback.format_exc()))
        return
    while (cmd := commands.get()) is not None:
        out, tokens, check = cmd
        try:
            errors = runner.execute(out, tokens)
            runner.connector.flush()
            bad = {rid: runner.mismatches(rid, upto) for rid, upto in check.items()}
            results.put(("ok", (sorted(errors), bad)))
        except Exception:
            results.put(("error", traceback.format_exc()))
    runner.connector.shutdown()


class TensorParallelThroughTempod(TempodTestCase):
    CONF = "device = uring\nfast_tier_bytes = 16MiB\nbudget_bytes = 4MiB\npolicy = tempo\n"

    def setUp(self):
        super().setUp()
        self.queues, self.procs, self.conn = [], [], None

    def start(self, model: vs.ModelSpec, layout: str):
        mp = multiprocessing.get_context("fork")  # torch is imported already
        self.queues = [(mp.Queue(), mp.Queue()) for _ in range(2)]
        self.procs = [mp.Process(target=worker_main, args=(r, self.sock, model, layout, c, res))
                      for r, (c, res) in enumerate(self.queues)]
        for p in self.procs:
            p.start()
        for _, res in self.queues:
            status, error = res.get(timeout=120)
            self.assertEqual(status, "ready", error)
        extra = extra_config({"device": "daemon", "daemon.socket": self.sock})
        self.config = vs.make_vllm_config(model, extra, tp=2, block_size=BLOCK, module=MODULE,
                                          connector=CLASS)
        kvc = vs.make_kv_cache_config(model, 2, BLOCK, BLOCKS)
        self.conn = vs.KVConnectorFactory.create_connector(self.config,
                                                           vs.KVConnectorRole.SCHEDULER, kvc)
        self.scheduler = vs.Scheduler(self.config, kvc, self.conn)

    def tearDown(self):
        for (c, _), p in zip(self.queues, self.procs):
            c.put(None)
            p.join(60)
        if self.conn is not None:
            self.conn.shutdown()
        super().tearDown()

    def step(self):
        out = self.scheduler.schedule()
        tokens = {r.request_id: r.all_token_ids for r in self.scheduler.running}
        ahead = {r.request_id: r.num_computed_tokens for r in self.scheduler.running}
        for c, _ in self.queues:
            c.put((out, tokens, ahead))
        replies = []
        for _, res in self.queues:
            status, value = res.get(timeout=120)
            self.assertEqual(status, "ok", value)
            replies.append(value)
        for rank, (errors, bad) in enumerate(replies):
            self.assertEqual(errors, [], f"rank {rank}")
            self.assertEqual(bad, {rid: [] for rid in ahead}, f"rank {rank}")
        self.scheduler.update_from_output(out)
        return out, replies

    def serve(self, request):
        self.scheduler.add_request(request)
        first = None
        for _ in range(20):
            out, replies = self.step()
            first = first or (out, replies)
            if not self.scheduler.running and not self.scheduler.waiting:
                return first
        self.fail("did not finish")

    def test_each_rank_saves_and_loads_its_own_heads(self):
        self.start(MODEL, "blocks-first")
        prompt = doc(21, 100)
        self.serve(vs.Request("cold", prompt))
        keys = [object_keys(prompt, rank=r, tp=2) for r in range(2)]
        self.assertTrue(set(keys[0]).isdisjoint(keys[1]))
        store = Store(self.conn.ctx)
        self.assertEqual([store.lookup(k) for k in keys], [3 * GROUPS, 3 * GROUPS])
        out, _ = self.serve(vs.Request("warm", prompt))  # both ranks' blocks checked
        self.assertEqual(out.scheduled_new_reqs[0].num_computed_tokens, 96)
        stats = self.conn.ctx.stats()
        self.assertEqual((stats["claims_live"], stats["ledger_bytes"]), (0, 0))

    def test_mla_is_saved_by_rank_0_and_read_by_every_rank(self):
        mla = vs.ModelSpec(use_mla=True, kv_heads=1, head_size=24)
        self.start(mla, "latent")
        prompt = doc(22, 100)
        self.serve(vs.Request("cold", prompt))
        store = Store(self.conn.ctx)
        self.assertEqual(store.lookup(object_keys(prompt, mla, "float16", 0, 2)), 3 * GROUPS)
        self.assertEqual(store.lookup(object_keys(prompt, mla, "float16", 1, 2)), 0)  # rank 0's
        out, _ = self.serve(vs.Request("warm", prompt))  # both ranks' blocks checked
        self.assertEqual(out.scheduled_new_reqs[0].num_computed_tokens, 96)


if __name__ == "__main__":
    unittest.main()
