"""What the engine integrations share (tempokv.integration), on its own: settings from an
engine's configuration, one Context per process and spec (not across a fork), the copy
stream's ordering and its errors, a claim's bytes over several extents, the kv_hints
envelope, and the packed waiting queue of the per-step call."""

import ctypes
import logging
import os
import threading
import unittest

import torch

from tempokv.integration import shared_context
from tempokv.integration.copy_stream import CopyStream
from tempokv.integration.extents import ClaimBytes
from tempokv.integration.kv_hints import hinted_ttu_ns
from tempokv.integration.settings import Option, engine_name, positive_int, read_settings
from tempokv.runtime import PackedWaiting

SIM = {"device": "sim", "fast_tier_bytes": 1 << 20, "budget_bytes": 1 << 19}
OPTIONS = {"chunk_tokens": Option(256, positive_int, "tokens per chunk"),
           "engine": Option(None, str, "the engine's name")}


class Settings(unittest.TestCase):
    def test_the_context_spec_and_the_options(self):
        spec, opts = read_settings("x", {"tempo": SIM, "chunk_tokens": 64, "module_path": "m"},
                                   OPTIONS, "vllm-e", frozenset({"module_path"}))
        self.assertEqual(opts, {"chunk_tokens": 64})
        self.assertEqual((spec.engine, spec.config_file), ("vllm-e", None))
        self.assertEqual(dict(spec.settings), SIM)
        _, opts = read_settings("x", {"tempo": SIM, "engine": "mine"}, OPTIONS, "vllm-e")
        self.assertEqual(opts, {"chunk_tokens": 256})
        spec, _ = read_settings("x", {"tempo": SIM, "engine": "mine"}, OPTIONS, "vllm-e")
        self.assertEqual(spec.engine, "mine")
        with spec.open() as ctx:
            self.assertEqual(ctx.device, "sim")

    def test_refusals_name_the_key(self):
        cases = [({"tempo": SIM, "chunk": 1}, "x: unknown key 'chunk': accepted tempo, "
                                              "tempo_config, chunk_tokens, engine"),
                 ({"tempo": SIM, "chunk_tokens": 0}, "x: chunk_tokens must be a positive "
                                                     "integer, not 0"),
                 ({"tempo": SIM, "chunk_tokens": True}, "positive integer, not True"),
                 ({"tempo": [1]}, "tempo must be a mapping"),
                 ({"tempo_config": 5}, "tempo_config must be a path"),
                 ({}, "say where TempoKV runs")]
        for extra, message in cases:
            with self.subTest(message), self.assertRaisesRegex(ValueError, message):
                read_settings("x", extra, OPTIONS, "e")

    def test_engine_names_fit_tempod(self):
        self.assertEqual(engine_name("vllm", "3f1c2d9e-0b1a-4c8e-9d2f-6a5b4c3d2e1f"),
                         "vllm-3f1c2d9e-0b1a-4c8e")
        self.assertEqual(len(engine_name("vllm", "x" * 100).encode()), 23)


class SharedContext(unittest.TestCase):
    def spec(self):
        return read_settings("x", {"tempo": SIM}, {}, "e")[0]

    def test_one_context_per_spec_until_its_last_user(self):
        a = shared_context.acquire(self.spec())
        b = shared_context.acquire(self.spec())
        self.assertIs(a, b)
        shared_context.release(a)
        self.assertFalse(a.closed)
        shared_context.release(b)
        self.assertTrue(a.closed)
        with self.assertRaisesRegex(ValueError, "did not acquire"):
            shared_context.release(a)

    def test_a_forked_child_opens_its_own(self):
        parent = shared_context.acquire(self.spec())
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the parent's loop thread did not come along: a context of its own
            try:
                child = shared_context.acquire(self.spec())
                ok = child is not parent and child.now_ns() >= 0
                shared_context.release(child)
                os.write(w, b"1" if ok else b"0")
            finally:
                os._exit(0)
        os.close(w)
        self.assertEqual(os.read(r, 1), b"1")
        os.waitpid(pid, 0)
        os.close(r)
        shared_context.release(parent)


class CopyStreams(unittest.TestCase):
    def setUp(self):
        self.stream = CopyStream(torch.device("cpu"))

    def tearDown(self):
        self.stream.close()

    def test_actions_run_after_their_event_in_order(self):
        gate = threading.Event()
        done = []
        self.stream.submit(gate.wait)
        first = self.stream.record()
        self.stream.after(first, lambda e: done.append(("first", e)))
        self.stream.submit(lambda: done.append("copied"))
        self.stream.after(self.stream.record(), lambda e: done.append(("second", e)))
        self.stream.poll()
        self.assertEqual((done, self.stream.pending, first.query()), ([], 2, False))
        gate.set()
        self.stream.drain()  # the stream ran on; the host's actions in their events' order
        self.assertEqual(done, ["copied", ("first", None), ("second", None)])

    def test_a_failed_copy_reaches_its_action_and_no_other(self):
        got = []
        self.stream.submit(lambda: 1 / 0)
        self.stream.after(self.stream.record(), got.append)
        self.stream.submit(lambda: None)
        self.stream.after(self.stream.record(), got.append)
        self.stream.drain()
        self.assertIsInstance(got[0], ZeroDivisionError)
        self.assertIsNone(got[1])


class ClaimBytesOverExtents(unittest.TestCase):
    def test_slices_and_copies_across_extents(self):
        a = (ctypes.c_uint8 * 6)(*range(6))
        b = (ctypes.c_uint8 * 4)(*range(6, 10))
        data = ClaimBytes([(ctypes.addressof(a), 6), (ctypes.addressof(b), 4)])
        self.assertEqual(data.slice(2, 3).tolist(), [2, 3, 4])  # in place, one extent
        self.assertEqual(data.slice(4, 5).tolist(), [4, 5, 6, 7, 8])  # gathered
        out = (ctypes.c_uint8 * 10)()
        data.copy_to([(ctypes.addressof(out), 3), (ctypes.addressof(out) + 3, 7)])
        self.assertEqual(list(out), list(range(10)))
        with self.assertRaisesRegex(ValueError, "destinations hold 3 bytes, the claim 10"):
            data.copy_to([(ctypes.addressof(out), 3)])
        with self.assertRaisesRegex(ValueError, "outside the claim's 10"):
            data.slice(8, 4)


def envelope(*actions, version="0.1"):
    return {"protocol_version": version, "message_id": "m", "actions": list(actions)}


def ttu_action(seconds, version="1.0"):
    return {"action_id": "a", "action_type": "tempokv.ttu", "action_version": version,
            "payload": {"ttu_seconds": seconds}}


class KvHints(unittest.TestCase):
    def test_the_ttu_action_and_the_others(self):
        other = {"action_id": "o", "action_type": "vllm.set_priority", "action_version": "1.0",
                 "payload": {"value": 3}}
        self.assertEqual(hinted_ttu_ns(envelope(other, ttu_action(2.5)), "r"), 2_500_000_000)
        self.assertIsNone(hinted_ttu_ns(envelope(other), "r"))
        self.assertIsNone(hinted_ttu_ns(None, "r"))

        class Struct:  # a msgspec Struct: fields as attributes
            protocol_version = "0.1"
            actions = [type("A", (), {"action_id": "a", "action_type": "tempokv.ttu",
                                      "action_version": "1.2",
                                      "payload": {"ttu_seconds": 1}})()]
        self.assertEqual(hinted_ttu_ns(Struct(), "r"), 1_000_000_000)

    def test_an_action_that_does_not_parse_is_rejected_alone(self):
        with self.assertLogs("tempokv.kv_hints", logging.WARNING) as logs:
            self.assertIsNone(hinted_ttu_ns(envelope(ttu_action(1), version="0.2"), "r1"))
            self.assertIsNone(hinted_ttu_ns(envelope(ttu_action(1, "2.0")), "r2"))
            self.assertIsNone(hinted_ttu_ns(envelope(ttu_action(-1)), "r3"))
            self.assertIsNone(hinted_ttu_ns(envelope(ttu_action(float("inf"))), "r4"))
            self.assertEqual(hinted_ttu_ns(envelope(ttu_action(3), ttu_action("x")), "r5"),
                             3_000_000_000)
        self.assertEqual(len(logs.output), 5)
        self.assertIn("request r3: kv hint 'a': payload.ttu_seconds must be a finite number",
                      logs.output[2])


class PackedQueue(unittest.TestCase):
    def test_rows_and_their_range(self):
        q = PackedWaiting([(10, 5, 7, 100), (3, 0, 0, 0)])
        self.assertEqual(len(q), 2)
        e = q.entries()
        self.assertEqual((e[0].prompt_tokens, e[0].claim, e[1].claim), (10, 7, 0))
        with self.assertRaisesRegex(ValueError, r"ints in \[0, 2\^64\)"):
            PackedWaiting([(1, -1, 0, 0)])
        with self.assertRaisesRegex(ValueError, "rows of 4"):
            PackedWaiting([(1, 2, 3)])
        self.assertEqual(len(PackedWaiting([])), 0)


if __name__ == "__main__":
    unittest.main()
