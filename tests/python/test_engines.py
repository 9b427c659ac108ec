"""The engines' Python surface without torch: the key scheme (the same keys as the C ABI's
pinned values), the store (lookup, idempotent put, delete, asynchronous puts) and the
runtime side's per-step call (exact TTUs from round-number costs, learning, bad input)."""

import array
import errno
import shutil
import tempfile
import unittest

from tempokv import Context, TempoError
from tempokv.keys import KeyScheme
from tempokv.runtime import PackedWaiting, Runtime, RunningSeq, StepCosts, StepWork, WaitingSeq
from tempokv.store import Store, Writer, fast_tier_memory

# A 1 ms prefill pass, 50 us per token, 1 ns per attention pair; a 5 ms decode step, 20 us
# per sequence, 10 ns per KV token; 10 GB/s retrieval.
COSTS = StepCosts(1e6, 5e4, 1.0, 5e6, 2e4, 10.0, 1e10)


def prefill_ns(n, ctx):
    return 1e6 + 5e4 * n + n * (ctx + (n + 1) / 2)


class Keys(unittest.TestCase):
    def test_scheme_matches_the_library_and_namespaces_differ(self):
        s = KeyScheme("meta-llama/Llama-3.1-8B-Instruct", "bfloat16", chunk_tokens=16,
                      layer_groups=4)
        # The values tests/engines/chain_hash_test.cc pins for the C++ scheme.
        self.assertEqual(s.seed, 0x3fe90410f825b92b)
        (k,) = s.chain(list(range(1, 17)))
        self.assertEqual(k, 0xa1aecfbbd6b9acb6)
        self.assertEqual(s.object_key(k, 3), 0x694ae2121fadb311)
        tokens = list(range(100))
        keys = s.chain(tokens)
        self.assertEqual(len(keys), 6)
        self.assertEqual(s.chain(array.array("I", tokens)), keys)
        self.assertEqual(s.chain(tokens[32:], parent=keys[1]), keys[2:])
        rank1 = KeyScheme("meta-llama/Llama-3.1-8B-Instruct", "bfloat16", 1, 2, chunk_tokens=16)
        self.assertTrue(set(rank1.chain(tokens)).isdisjoint(keys))
        self.assertEqual(len({x for ks in s.object_keys(keys) for x in ks}), 24)

    def test_bad_input(self):
        with self.assertRaisesRegex(ValueError, "tp_rank"):
            KeyScheme("m", "bf16", tp_rank=2, tp_size=2)
        with self.assertRaisesRegex(ValueError, "non-empty"):
            KeyScheme("", "bf16")
        s = KeyScheme("m", "bf16", chunk_tokens=4)
        with self.assertRaisesRegex(TypeError, "token ids"):
            s.chain([1, -2, 3, 4])
        with self.assertRaises(TypeError):
            s.chain("abcd")
        with self.assertRaisesRegex(ValueError, "layer group"):
            s.object_key(1, 1)


class StoreAndWriter(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="engines_py_", dir=".")
        self.settings = {"device": "uring", "uring.store_path": self.dir + "/store",
                         "fast_tier_bytes": "4MiB", "budget_bytes": "1MiB",
                         "uring.prefault": False}

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_lookup_put_delete_and_async_puts(self):
        with Context(self.settings) as ctx:
            store = Store(ctx)
            store.put(1, b"a" * 5000)
            store.put(1, b"a" * 5000)  # a re-run
            with self.assertRaises(TempoError) as e:
                store.put(1, b"b" * 5000)
            self.assertEqual(e.exception.errno, errno.EEXIST)
            with Writer(ctx, threads=2) as w:
                bufs = [bytearray([k]) * 8192 for k in range(2, 6)]
                cookies = [w.put(k, b) for k, b in zip(range(2, 6), bufs)]
                self.assertEqual(len(set(cookies)), 4)
                done = w.wait()
                self.assertEqual(sorted((d.key, d.error) for d in done),
                                 [(k, 0) for k in range(2, 6)])
                self.assertEqual(w.pending, 0)
                with self.assertRaises(TypeError):
                    w.put(9, b"read-only bytes")
                # A buffer in flight cannot be resized (moved) under the put reading it: it
                # could be, until its completion was collected.
                grow = bytearray(b"g") * 8192
                w.put(6, grow)
                with self.assertRaises(BufferError):
                    grow.extend(b"h" * (1 << 20))
                self.assertEqual([(d.key, d.error) for d in w.wait()], [(6, 0)])
                grow.extend(b"h")
            self.assertEqual(store.lookup([1, 2, 3, 4, 5, 6]), 6)
            store.delete(3)
            with self.assertRaises(TempoError) as e:
                store.delete(3)
            self.assertEqual(e.exception.errno, errno.ENOENT)
            self.assertEqual(store.lookup([1, 2, 3, 4]), 2)
        with Context(self.settings) as ctx:  # a fresh process over the same store
            self.assertEqual(Store(ctx).lookup([1, 2, 3]), 2)
            base, size = fast_tier_memory(ctx)
            self.assertEqual(size, 4 << 20)
            self.assertNotEqual(base, 0)
            self.assertTrue(Store(ctx).exists(5))


class RuntimeSide(unittest.TestCase):
    def test_step_revises_the_waiting_claims(self):
        with Context({"fast_tier_bytes": "100MB", "budget_bytes": "50MB"}) as ctx:
            ctx.sim_add_objects([(1, 1000), (2, 1000)])
            a = ctx.report([(1, 1000)], 60_000_000_000)
            b = ctx.report([(2, 1000)], 60_000_000_000)
            with Runtime(ctx, COSTS, max_active=1, generation_limit=10, learn=False) as rt:
                for _ in range(4):
                    rt.finished(6)  # every request generates 6 tokens
                # One slot, held by a request with 2 of its 6 tokens: 4 decode steps, then a.
                rt.step([RunningSeq(1000, 1000, 2)],
                        [WaitingSeq(1256, 256, a), WaitingSeq(2000, 0, None),
                         WaitingSeq(500, 0, b)])
                decode_a = sum(5e6 + 2e4 + 10.0 * (1001 + j) for j in range(4))
                self.assertAlmostEqual(ctx.query(a).ttu_ns, decode_a, delta=4)
                # b waits for a (prefill, 5 decode steps) and the claimless request too.
                after_a = prefill_ns(1000, 256) + sum(5e6 + 2e4 + 10.0 * (1256 + j) for j in range(5))
                after_c = prefill_ns(2000, 0) + sum(5e6 + 2e4 + 10.0 * (2000 + j) for j in range(5))
                self.assertAlmostEqual(ctx.query(b).ttu_ns, decode_a + after_a + after_c, delta=20)
                # Its output known to be 4 tokens (ABI 0.6): 2 decode steps; called 3 ms before
                # the step in flight ends, the projection starts then.
                known = [RunningSeq(1000, 1000, 2, output_tokens=4)]
                rt.step(known, [WaitingSeq(1256, 256, a)])
                decode_2 = sum(5e6 + 2e4 + 10.0 * (1001 + j) for j in range(2))
                self.assertAlmostEqual(ctx.query(a).ttu_ns, decode_2, delta=4)
                rt.step(known, [WaitingSeq(1256, 256, a)], busy_ns=3_000_000)
                self.assertAlmostEqual(ctx.query(a).ttu_ns, 3e6 + decode_2, delta=4)
                with self.assertRaises(ValueError):
                    rt.step(known, [], busy_ns=-1)
                with self.assertRaises(TempoError) as e:
                    rt.step([], [WaitingSeq(10, 0, 999)])
                self.assertEqual(e.exception.errno, errno.ENOENT)
                with self.assertRaises(TempoError):
                    rt.step([RunningSeq(10, 10, 1), RunningSeq(10, 10, 1)], [])  # 2 > max_active
                costs, learned = rt.costs()
                self.assertEqual((costs, learned), (COSTS, 0))

    def test_the_projection_gives_a_request_without_a_claim_its_ttu(self):
        with Context({"fast_tier_bytes": "100MB", "budget_bytes": "50MB"}) as ctx:
            ctx.sim_add_objects([(1, 1000), (2, 1000)])
            a = ctx.report([(1, 1000)], 60_000_000_000)
            b = ctx.report([(2, 1000)], 60_000_000_000)
            with Runtime(ctx, COSTS, max_active=1, generation_limit=10, learn=False) as rt:
                self.assertEqual(rt.projection(), [])
                self.assertEqual(rt.history(), [])
                for _ in range(4):
                    rt.finished(6)
                self.assertEqual(rt.history(), [6, 6, 6, 6])
                rt.step([RunningSeq(1000, 1000, 2)],
                        [WaitingSeq(1256, 256, a), WaitingSeq(2000, 0, None),
                         WaitingSeq(500, 0, b)])
                p = rt.projection()
                self.assertEqual(rt.given_ttus([a, b, a + b + 7]),
                                 [ctx.query(a).ttu_ns, ctx.query(b).ttu_ns, None])
                self.assertEqual([e.has_claim for e in p], [True, False, True])
                self.assertEqual([e.output_tokens for e in p], [6, 6, 6])
                self.assertEqual(p[0].ttu_ns, ctx.query(a).ttu_ns)
                self.assertEqual(p[2].ttu_ns, ctx.query(b).ttu_ns)
                # The claimless request waits for the running one (4 decode steps) and a.
                decode_a = sum(5e6 + 2e4 + 10.0 * (1001 + j) for j in range(4))
                after_a = prefill_ns(1000, 256) + sum(5e6 + 2e4 + 10.0 * (1256 + j) for j in range(5))
                self.assertAlmostEqual(p[1].ttu_ns, decode_a + after_a, delta=10)

    def test_learns_a_slower_engine(self):
        with Context({"fast_tier_bytes": "100MB", "budget_bytes": "50MB"}) as ctx:
            with Runtime(ctx, COSTS, max_active=4, generation_limit=64) as rt:
                for i in range(200):
                    n = 128 << (i % 6)
                    rt.step([], [], int(1.25 * prefill_ns(n, 0)), StepWork(prefill_tokens=n))
                costs, learned = rt.costs()
                self.assertEqual(learned, 200)
                n = 2048
                got = costs.prefill_pass_ns + costs.prefill_token_ns * n + costs.prefill_pair_ns * n * (n + 1) / 2
                self.assertAlmostEqual(got / prefill_ns(n, 0), 1.25, delta=0.01)
            with self.assertRaisesRegex(TypeError, "StepCosts"):
                Runtime(ctx, (1, 2, 3), 4, 64)
            with self.assertRaises(TempoError):
                Runtime(ctx, StepCosts(1, 1, 1, 1, 1, -1, 1e9), 4, 64)



class PackedWaitingColumns(unittest.TestCase):
    def test_columns_pack_as_rows_do_and_refuse_what_rows_refuse(self):
        rows = [(1256, 256, 7, 4096), (2000, 0, 0, 0), (500, 500, 9, 1 << 40)]
        cols = PackedWaiting.from_columns(*[[r[k] for r in rows] for k in range(4)])
        self.assertEqual(bytes(cols.entries()), bytes(PackedWaiting(rows).entries()))
        self.assertEqual(len(cols), 3)
        with self.assertRaises(ValueError):
            PackedWaiting.from_columns([1], [-1], [0], [0])
        with self.assertRaises(ValueError):
            PackedWaiting.from_columns([1, 2], [0], [0], [0])


if __name__ == "__main__":
    unittest.main()
