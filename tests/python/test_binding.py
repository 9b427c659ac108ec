"""The binding on the sim device: exact lifecycle times and bad input as Python exceptions."""

import errno
import os
import tempfile
import unittest

import tempokv
from tempokv import ClaimState, ClosedError, Config, ConfigError, Context, Retrieval, TempoError

# 10 KB fast tier, 1000 B/s, 2 slots, no latency, 5 KB budget: hand-checkable times.
SMALL = dict(fast_tier_bytes=10000, budget_bytes=5000, staging_rate=1000, staging_slots=2,
             op_latency=0, calibration_rate=1000)


class Lifecycle(unittest.TestCase):
    def test_claim_commits_when_laxity_runs_out(self):
        with Context(SMALL, policy="tempo") as ctx:
            self.assertEqual(ctx.device, "sim")
            objs = [(k, 100) for k in range(1, 6)]
            ctx.sim_add_objects(objs)
            cid = ctx.report(objs, 2_000_000_000)
            info = ctx.query(cid)
            self.assertEqual(info.state, ClaimState.PLANNED)
            self.assertEqual(info.laxity_ns, 1_500_000_000)
            self.assertFalse(info.never_fits)
            self.assertFalse(info.cancel_pending)
            self.assertEqual(ctx.request_retrieval(cid), Retrieval.WAIT)
            self.assertEqual(ctx.wait_ready(cid, 10_000_000_000), Retrieval.READY)
            info = ctx.query(cid)
            self.assertIsNone(info.laxity_ns)  # only a PLANNED claim has laxity
            self.assertEqual((info.committed_ns, info.ready_ns), (0, 500_000_000))
            self.assertEqual(ctx.now_ns(), 500_000_000)  # waiting ran virtual time to ready
            ctx.transfer_begin(cid)
            ctx.transfer_end(cid)
            stats = ctx.stats()
            self.assertEqual(stats["claims_released"], 1)
            self.assertEqual(stats["staged_bytes"], 500)
            self.assertEqual(stats["ledger_bytes"], 0)

    def test_the_claim_view_reports_ttr_and_residency(self):
        with Context(SMALL, policy="tempo") as ctx:
            objs = [(k, 100) for k in range(1, 6)]
            ctx.sim_add_objects(objs)
            cid = ctx.report(objs, 2_000_000_000)
            info = ctx.query(cid)
            self.assertEqual((info.ttr_ns, info.resident_bytes), (500_000_000, 0))
            self.assertEqual(info.ttu_ns - info.laxity_ns, info.ttr_ns)
            ctx.sim_advance(1_800_000_000)  # committed at 1.5 s; the first pair landed at 1.7 s
            info = ctx.query(cid)
            self.assertEqual(info.state, ClaimState.STAGING)
            self.assertEqual(info.resident_bytes, 200)
            self.assertTrue(0 < info.ttr_ns <= 201_000_000, info.ttr_ns)
            self.assertEqual(ctx.wait_ready(cid, 10**9), Retrieval.READY)
            info = ctx.query(cid)
            self.assertEqual((info.ttr_ns, info.resident_bytes), (0, 500))
            ctx.transfer_begin(cid)
            ctx.transfer_end(cid)
            info = ctx.query(cid)
            self.assertIsNone(info.ttr_ns)
            ctx.sim_advance(10**9)
            self.assertEqual(ctx.query(cid).ttu_ns, info.ttu_ns)  # an ended claim stops ageing

    def test_a_layer_wise_claim_commits_later_than_without(self):
        # Eight 100 B objects, pairs landing 0.2 s apart, TTU 2 s: the whole claim commits at
        # 1.2 s; in four groups needed 200 ms apart its lead TTR is 0.2 s: it commits at 1.8 s,
        # its last group landing at 2.6 s, when prefill reaches it.
        objs = [(k, 100) for k in range(1, 9)]
        timings = []
        for groups in (1, 4):
            with Context(SMALL, policy="tempo") as ctx:
                ctx.sim_add_objects(objs)
                cid = ctx.report(objs, 2_000_000_000)
                ctx.set_layers(cid, groups, 200_000_000)
                planned_ttr = ctx.query(cid).ttr_ns
                ctx.sim_advance(3_000_000_000)
                info = ctx.query(cid)
                ctx.set_layers(cid, 1, 0)  # committed: ignored
                timings.append((planned_ttr, info.committed_ns, info.ready_ns))
        self.assertEqual(timings, [(800_000_000, 1_200_000_000, 2_000_000_000),
                                   (200_000_000, 1_800_000_000, 2_600_000_000)])

    def test_deferrals_count_claims_and_attempts_apart(self):
        with Context(SMALL, policy="immediate", budget_bytes=500) as ctx:
            objs = [(k, 100) for k in range(1, 7)]
            ctx.sim_add_objects(objs)
            ctx.report(objs[:3], 10**10)
            blocked = ctx.report(objs[3:], 10**10)
            ctx.sim_advance(200_000_000)
            info = ctx.query(blocked)
            self.assertFalse(info.never_fits)  # blocked for now: 300 B fits an empty budget
            self.assertGreaterEqual(info.deferrals, 4)
            stats = ctx.stats()
            self.assertEqual(stats["deferred_claims"], 1)
            self.assertEqual(stats["capacity_deferral_attempts"], info.deferrals)
            self.assertNotIn("capacity_deferrals", stats)  # renamed in 0.7

    def test_config_file_and_environment(self):
        with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
            f.write("policy = demand\nfast_tier_bytes = 1MiB\nbudget_bytes = 512KiB\n")
        try:
            os.environ["TEMPO_POLICY"] = "immediate"
            cfg = Config(path=f.name)
            with Context(cfg) as ctx:
                ctx.sim_add_objects([(1, 100)])
                cid = ctx.report([(1, 100)], 10**9)
                self.assertEqual(ctx.query(cid).state, ClaimState.STAGING)  # immediate won
            cfg.close()
        finally:
            del os.environ["TEMPO_POLICY"]
            os.unlink(f.name)


class BadInput(unittest.TestCase):
    def setUp(self):
        self.ctx = Context(SMALL, policy="immediate")
        self.ctx.sim_add_objects([(1, 100), (2, 100)])

    def tearDown(self):
        self.ctx.close()

    def test_wrong_types_raise_type_error(self):
        with self.assertRaisesRegex(TypeError, "manifest item 0: expected KvObject"):
            self.ctx.report(["abc"], 0)
        with self.assertRaisesRegex(TypeError, "claim id must be an int, not str"):
            self.ctx.revise("1", 0)
        with self.assertRaisesRegex(TypeError, "ttu_ns must be an int, not float"):
            self.ctx.report([(1, 100)], 1.5)
        with self.assertRaisesRegex(TypeError, "writable bytearray"):
            self.ctx.copy_into(1, b"read-only")
        with self.assertRaisesRegex(TypeError, "config must be a Config or a mapping"):
            Context(42)
        with self.assertRaisesRegex(TypeError, "value must be str, int, float or bool"):
            Context(policy=["tempo"])

    def test_bad_values_raise_with_the_key_and_accepted_values(self):
        with self.assertRaisesRegex(ValueError, r"invalid value 'sometimes' for 'policy': accepted"):
            Context(policy="sometimes")
        with self.assertRaisesRegex(ValueError, r"unknown key 'bogus'"):
            Context(bogus=1)
        with self.assertRaisesRegex(ValueError, r"must be in \[1, "):
            self.ctx.report([(1, 0)], 0)
        with self.assertRaisesRegex(ValueError, r"claim id must be in \[1, "):
            self.ctx.cancel(-3)
        with self.assertRaises(TempoError) as e:
            self.ctx.report([], 0)
        self.assertEqual(e.exception.errno, errno.EINVAL)
        with self.assertRaises(TempoError) as e:
            self.ctx.revise(77, 0)
        self.assertEqual(e.exception.errno, errno.ENOENT)
        self.assertIn("claim 77", str(e.exception))
        with self.assertRaises(TempoError) as e:
            self.ctx.store_put(5, b"x")
        self.assertEqual(e.exception.errno, errno.EOPNOTSUPP)
        with self.assertRaises(TempoError) as e:  # kmod only
            self.ctx.kmod_add_objects([(5, 0, 4096)])
        self.assertEqual(e.exception.errno, errno.EOPNOTSUPP)
        with self.assertRaisesRegex(TypeError, r"placement 0: expected \(key, offset, bytes\)"):
            self.ctx.kmod_add_objects([(5, 4096)])
        with self.assertRaisesRegex(ValueError, r"placement 0 bytes must be in \[1, "):
            self.ctx.kmod_add_objects([(5, 0, 0)])
        with self.assertRaises(TempoError) as e:
            Context(device="kmod", **{"kmod.path": "/nonexistent/tempo0"})
        self.assertEqual(e.exception.errno, errno.ENOENT)
        self.assertIn("/nonexistent/tempo0", str(e.exception))
        with self.assertRaises(FileNotFoundError):
            Config(path="/nonexistent/tempo.conf")

    def test_set_layers_errors(self):
        ctx = Context(SMALL, policy="tempo")  # immediate would commit at once: ignored
        self.addCleanup(ctx.close)
        cid = ctx.report([(1, 100), (2, 100)], 10**12)
        for groups, per_group_ns, err in ((2, 0, None), (0, 0, errno.EINVAL),
                                          (3, 0, errno.EINVAL), (2, -1, errno.EINVAL),
                                          (2, 1 << 62, errno.EOVERFLOW)):
            if err is None:
                ctx.set_layers(cid, groups, per_group_ns)
                continue
            with self.assertRaises(TempoError) as e:
                ctx.set_layers(cid, groups, per_group_ns)
            self.assertEqual(e.exception.errno, err, (groups, per_group_ns))
        with self.assertRaises(TempoError) as e:
            ctx.set_layers(77, 2, 0)
        self.assertEqual(e.exception.errno, errno.ENOENT)
        with self.assertRaisesRegex(ValueError, r"groups must be in \[0, 4294967295\]"):
            ctx.set_layers(cid, 1 << 32, 0)
        with self.assertRaisesRegex(TypeError, "per_group_ns must be an int, not float"):
            ctx.set_layers(cid, 2, 0.5)
        ctx.cancel(cid)
        with self.assertRaises(TempoError) as e:  # ended
            ctx.set_layers(cid, 2, 0)
        self.assertEqual(e.exception.errno, errno.EINVAL)

    def test_double_release_raises(self):
        cid = self.ctx.report([(1, 100)], 0)
        self.assertEqual(self.ctx.wait_ready(cid, 10**10), Retrieval.READY)
        self.ctx.transfer_begin(cid)
        self.ctx.transfer_end(cid)
        with self.assertRaises(TempoError) as e:
            self.ctx.transfer_end(cid)
        self.assertEqual(e.exception.errno, errno.EINVAL)
        self.assertIn("already released", str(e.exception))
        with self.assertRaises(TempoError) as e:
            self.ctx.cancel(cid)
        self.assertEqual(e.exception.errno, errno.EINVAL)

    def test_closed_handles_raise(self):
        cid = self.ctx.report([(2, 100)], 0)
        self.ctx.close()
        self.ctx.close()  # twice is fine
        self.assertTrue(self.ctx.closed)
        with self.assertRaisesRegex(ClosedError, "the context is closed"):
            self.ctx.query(cid)
        with self.assertRaisesRegex(ClosedError, "the context is closed"):
            self.ctx.stats()
        cfg = Config()
        cfg.close()
        with self.assertRaisesRegex(ClosedError, "the configuration is closed"):
            cfg.set("policy", "tempo")
        self.assertTrue(cfg.closed)

    def test_config_and_context_share_the_handle_lifecycle(self):
        from tempokv._handle import OwnedHandle
        from tempokv.runtime import Runtime
        from tempokv.store import Writer

        for cls in (Config, Context, Runtime, Writer):
            self.assertTrue(issubclass(cls, OwnedHandle), cls)
            for name in ("close", "__enter__", "__exit__", "__del__"):
                self.assertIs(getattr(cls, name), getattr(OwnedHandle, name), (cls, name))
        with Config({"policy": "demand"}) as cfg:
            self.assertFalse(cfg.closed)
        self.assertTrue(cfg.closed)
        with self.assertRaises(ValueError):  # a bad setting frees the handle it made
            Config({"policy": "sometimes"})

    def test_bad_config_file_names_file_and_line(self):
        with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
            f.write("policy = tempo\nstaging_slots = 0\n")
        try:
            with self.assertRaises(ConfigError) as e:
                Config(path=f.name)
            self.assertIsInstance(e.exception, ValueError)  # what it always was
            self.assertEqual(e.exception.errno, errno.EINVAL)
            self.assertEqual(e.exception.strerror, f"{f.name}:2: invalid value '0' for "
                             "'staging_slots': accepted an integer from 1 to 4096")
        finally:
            os.unlink(f.name)

    def test_a_config_file_that_is_not_utf8_is_a_tempo_error(self):
        # Latin-1 text and stray bytes: the library quotes them in its message, which used to
        # escape as UnicodeDecodeError from the message's decoding.
        with tempfile.NamedTemporaryFile("wb", suffix=".conf", delete=False) as f:
            f.write(b"policy = tempo\ndevice = s\xe9m\n")
        try:
            with self.assertRaises(TempoError) as e:
                Config(path=f.name)
            self.assertEqual(e.exception.errno, errno.EINVAL)
            self.assertEqual(e.exception.strerror, f"{f.name}:2: invalid value 's\\xe9m' for "
                             "'device': accepted sim, uring, kmod, daemon")
            with open(f.name, "wb") as g:
                g.write(b"\xff\xfe = 1\n")
            with self.assertRaisesRegex(TempoError, r"unknown key '\\xff\\xfe'"):
                Config(path=f.name)
        finally:
            os.unlink(f.name)

    def test_nul_inside_a_key_value_or_path_is_an_error(self):
        # ctypes would pass the text up to the NUL: "tempo\0junk" used to set "tempo".
        cfg = Config()
        with self.assertRaisesRegex(ValueError, "^setting 'policy' contains a NUL character$"):
            cfg.set("policy", "demand\0junk")
        with self.assertRaisesRegex(ValueError, "^setting name .* contains a NUL character$"):
            cfg.set("policy\0x", "demand")
        with self.assertRaisesRegex(ValueError, "contains a NUL character"):
            Context(policy="demand\0junk")
        with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
            f.write("policy = demand\n")
        try:
            with self.assertRaisesRegex(ValueError, "^path .* contains a NUL character$"):
                cfg.load(f.name + "\0junk")
        finally:
            os.unlink(f.name)
        cfg.close()


if __name__ == "__main__":
    unittest.main()
