"""The C ABI 0.3 for engines (key scheme, store lookup/delete/async put, runtime side):
structures and prototypes, declared on the library _native loaded."""

from __future__ import annotations

import ctypes

from ._native import lib

ABI_MINOR = 7


class KeyNamespace(ctypes.Structure):
    _fields_ = [("model", ctypes.c_char_p), ("dtype", ctypes.c_char_p),
                ("tp_rank", ctypes.c_uint32), ("tp_size", ctypes.c_uint32),
                ("reserved", ctypes.c_uint64 * 2)]


class PutCompletion(ctypes.Structure):
    _fields_ = [("key", ctypes.c_uint64), ("cookie", ctypes.c_uint64),
                ("status", ctypes.c_int32), ("reserved", ctypes.c_uint32)]


STEP_COST_FIELDS = ["prefill_pass_ns", "prefill_token_ns", "prefill_pair_ns", "decode_pass_ns",
                    "decode_seq_ns", "decode_context_ns", "retrieval_bps"]


class StepCosts(ctypes.Structure):
    _fields_ = [(name, ctypes.c_double) for name in STEP_COST_FIELDS] + [
        ("reserved", ctypes.c_uint64 * 2)]


class RuntimeConfig(ctypes.Structure):
    _fields_ = [("costs", StepCosts), ("max_active", ctypes.c_uint32),
                ("generation_limit", ctypes.c_uint32), ("learn", ctypes.c_uint32),
                ("history_window", ctypes.c_uint32), ("reserved", ctypes.c_uint64 * 4)]


class RunningSeq(ctypes.Structure):
    _fields_ = [("prompt_tokens", ctypes.c_uint64), ("computed_tokens", ctypes.c_uint64),
                ("tokens_generated", ctypes.c_uint32), ("output_tokens", ctypes.c_uint32),
                ("retrieval_bytes", ctypes.c_uint64)]


class WaitingSeq(ctypes.Structure):
    _fields_ = [("prompt_tokens", ctypes.c_uint64), ("cached_tokens", ctypes.c_uint64),
                ("claim", ctypes.c_uint64), ("retrieval_bytes", ctypes.c_uint64)]


class Step(ctypes.Structure):
    _fields_ = [("running", ctypes.POINTER(RunningSeq)), ("running_count", ctypes.c_size_t),
                ("waiting", ctypes.POINTER(WaitingSeq)), ("waiting_count", ctypes.c_size_t),
                ("duration_ns", ctypes.c_int64), ("prefill_tokens", ctypes.c_uint64),
                ("prefill_context_tokens", ctypes.c_uint64), ("decode_seqs", ctypes.c_uint64),
                ("decode_context_tokens", ctypes.c_uint64), ("busy_ns", ctypes.c_int64),
                ("running_size", ctypes.c_uint32), ("waiting_size", ctypes.c_uint32),
                ("reserved", ctypes.c_uint64 * 2)]


class WaitingProjection(ctypes.Structure):
    _fields_ = [("ttu_ns", ctypes.c_int64), ("output_tokens", ctypes.c_uint32),
                ("flags", ctypes.c_uint32)]


PROJECTION_F_CLAIM = 1 << 0


def _declare() -> None:
    c_int, c_uint32, c_uint64, c_size_t = ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_size_t
    vp = ctypes.c_void_p
    P = ctypes.POINTER
    protos = {
        "tempo_key_seed": (c_int, [P(KeyNamespace), P(c_uint64)]),
        "tempo_key_chain": (c_int, [c_uint64, vp, c_size_t, c_uint32, P(c_uint64), c_size_t,
                                    P(c_size_t)]),
        "tempo_key_layer_group": (c_uint64, [c_uint64, c_uint32]),
        "tempo_store_lookup": (c_int, [vp, P(c_uint64), c_size_t, P(c_size_t)]),
        "tempo_store_delete": (c_int, [vp, c_uint64]),
        "tempo_ctx_fast_tier": (c_int, [vp, P(vp), P(c_uint64)]),
        "tempo_writer_new": (c_int, [vp, ctypes.c_uint, P(vp)]),
        "tempo_writer_put": (c_int, [vp, c_uint64, vp, c_size_t, c_uint64]),
        "tempo_writer_completions": (c_int, [vp, P(PutCompletion), c_size_t, P(c_size_t)]),
        "tempo_writer_wait": (c_int, [vp, ctypes.c_int64]),
        "tempo_writer_free": (None, [vp]),
        "tempo_runtime_new": (c_int, [vp, P(RuntimeConfig), P(vp)]),
        "tempo_runtime_free": (None, [vp]),
        "tempo_runtime_step": (c_int, [vp, P(Step)]),
        "tempo_runtime_finished": (c_int, [vp, c_uint32]),
        "tempo_runtime_get_costs": (c_int, [vp, P(StepCosts), P(c_uint64)]),
        "tempo_runtime_get_projection": (c_int, [vp, P(WaitingProjection), c_size_t, c_size_t,
                                                 P(c_size_t)]),
        "tempo_runtime_get_history": (c_int, [vp, P(c_uint32), c_size_t, P(c_size_t)]),
        "tempo_runtime_get_given_ttus": (c_int, [vp, P(c_uint64), c_size_t, P(ctypes.c_int64)]),
        "tempo_claim_label": (c_int, [vp, c_uint64, ctypes.c_char_p]),
    }
    for name, (res, args) in protos.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args


if lib.tempo_version_check(0, ABI_MINOR) != 0:
    raise ImportError(f"tempokv: libtempo {lib.tempo_version().decode()} lacks ABI 0.{ABI_MINOR} "
                      "(the engines' key scheme, store and runtime side with its projection)")
_declare()
