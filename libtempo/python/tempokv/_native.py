"""Loads libtempo.so and declares the C ABI's prototypes (ctypes, standard library only)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

ABI_MAJOR = 0
ABI_MINOR = 7


class TempoObject(ctypes.Structure):
    _fields_ = [("key", ctypes.c_uint64), ("bytes", ctypes.c_uint64)]


class TempoKmodObject(ctypes.Structure):
    _fields_ = [("key", ctypes.c_uint64), ("offset", ctypes.c_uint64), ("bytes", ctypes.c_uint64),
                ("reserved", ctypes.c_uint64)]


class TempoExtent(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_void_p), ("bytes", ctypes.c_uint64)]


class TempoClaimInfo(ctypes.Structure):
    _fields_ = [
        ("state", ctypes.c_uint32),
        ("error", ctypes.c_int32),
        ("bytes", ctypes.c_uint64),
        ("ttu_ns", ctypes.c_int64),
        ("laxity_ns", ctypes.c_int64),
        ("deferrals", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("reported_ns", ctypes.c_int64),
        ("committed_ns", ctypes.c_int64),
        ("ready_ns", ctypes.c_int64),
        ("retrieval_requested_ns", ctypes.c_int64),
        ("transfer_begin_ns", ctypes.c_int64),
        ("ended_ns", ctypes.c_int64),
        ("ttr_ns", ctypes.c_int64),
        ("resident_bytes", ctypes.c_uint64),
    ]


COUNTER_FIELDS = [
    ("now_ns", ctypes.c_int64),
    ("budget_bytes", ctypes.c_uint64),
    ("ledger_bytes", ctypes.c_uint64),
    ("reserved_bytes", ctypes.c_uint64),
    ("claims_reported", ctypes.c_uint64),
    ("claims_committed", ctypes.c_uint64),
    ("deferred_claims", ctypes.c_uint64),
    ("capacity_deferral_attempts", ctypes.c_uint64),
    ("claims_ordinary", ctypes.c_uint64),
    ("claims_failed_over", ctypes.c_uint64),
    ("claims_cancelled", ctypes.c_uint64),
    ("claims_released", ctypes.c_uint64),
    ("claims_failed", ctypes.c_uint64),
    ("claims_planned", ctypes.c_uint64),
    ("claims_live", ctypes.c_uint64),
    ("stage_ops", ctypes.c_uint64),
    ("staged_bytes", ctypes.c_uint64),
    ("stage_errors", ctypes.c_uint64),
    ("outstanding_ops", ctypes.c_uint64),
    ("fast_tier_capacity_bytes", ctypes.c_uint64),
    ("fast_tier_used_bytes", ctypes.c_uint64),
    ("pinned_bytes", ctypes.c_uint64),
    ("evictions", ctypes.c_uint64),
    ("demand_bytes", ctypes.c_uint64),
    ("effective_rate_bps", ctypes.c_double),
    ("protected_gib_seconds", ctypes.c_double),
]


class TempoCounters(ctypes.Structure):
    _fields_ = COUNTER_FIELDS


def _candidates() -> list[str]:
    """Where libtempo.so may be: $TEMPOKV_LIBRARY, beside an installed package, the loader."""
    found = []
    env = os.environ.get("TEMPOKV_LIBRARY")
    if env:
        found.append(env)
    try:
        from . import _location  # written at install time

        found.append(str((Path(__file__).parent / _location.LIBRARY).resolve()))
    except ImportError:
        pass
    name = ctypes.util.find_library("tempo")
    if name:
        found.append(name)
    found.append("libtempo.so.0")
    return found


def _load() -> ctypes.CDLL:
    errors = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as e:
            errors.append(f"{path}: {e}")
    else:
        raise ImportError(
            "tempokv: cannot load libtempo.so (set TEMPOKV_LIBRARY to its path): "
            + "; ".join(errors)
        )
    # Checked before declaring the rest: an older library lacks some of its symbols.
    lib.tempo_version.restype = ctypes.c_char_p
    lib.tempo_version_check.argtypes = [ctypes.c_uint, ctypes.c_uint]
    if lib.tempo_version_check(ABI_MAJOR, ABI_MINOR) != 0:
        raise ImportError(
            f"tempokv: {path} is libtempo {lib.tempo_version().decode()}, "
            f"this package needs ABI {ABI_MAJOR}.{ABI_MINOR}"
        )
    _declare(lib)
    return lib


def _declare(lib: ctypes.CDLL) -> None:
    c_int, c_int64, c_uint64, c_size_t = ctypes.c_int, ctypes.c_int64, ctypes.c_uint64, ctypes.c_size_t
    vp, cp = ctypes.c_void_p, ctypes.c_char_p
    P = ctypes.POINTER
    protos = {
        "tempo_version": (cp, []),
        "tempo_version_check": (c_int, [ctypes.c_uint, ctypes.c_uint]),
        "tempo_config_new": (c_int, [P(vp)]),
        "tempo_config_free": (None, [vp]),
        "tempo_config_set": (c_int, [vp, cp, cp]),
        "tempo_config_error": (cp, [vp]),
        "tempo_config_load": (c_int, [vp, cp]),
        "tempo_ctx_new": (c_int, [vp, P(vp)]),
        "tempo_ctx_ref": (vp, [vp]),
        "tempo_ctx_unref": (None, [vp]),
        "tempo_ctx_device": (cp, [vp]),
        "tempo_ctx_now": (c_int64, [vp]),
        "tempo_ctx_tick": (c_int, [vp]),
        "tempo_ctx_stats": (c_int, [vp, P(TempoCounters), c_size_t]),
        "tempo_sim_add_objects": (c_int, [vp, P(TempoObject), c_size_t]),
        "tempo_sim_advance": (c_int, [vp, c_int64]),
        "tempo_kmod_add_objects": (c_int, [vp, P(TempoKmodObject), c_size_t]),
        "tempo_store_put": (c_int, [vp, c_uint64, vp, c_size_t]),
        "tempo_claim_report": (c_int, [vp, P(TempoObject), c_size_t, c_int64, P(c_uint64)]),
        "tempo_claim_revise": (c_int, [vp, c_uint64, c_int64]),
        "tempo_claim_set_layers": (c_int, [vp, c_uint64, ctypes.c_uint32, c_int64]),
        "tempo_ctx_set_order": (c_int, [vp, P(c_uint64), c_size_t]),
        "tempo_claim_retrieve": (c_int, [vp, c_uint64, P(ctypes.c_uint32)]),
        "tempo_claim_wait": (c_int, [vp, c_uint64, c_int64, P(ctypes.c_uint32)]),
        "tempo_claim_query": (c_int, [vp, c_uint64, P(TempoClaimInfo), c_size_t]),
        "tempo_claim_transfer_begin": (c_int, [vp, c_uint64]),
        "tempo_claim_extents": (c_int, [vp, c_uint64, P(TempoExtent), c_size_t, P(c_size_t)]),
        "tempo_claim_transfer_end": (c_int, [vp, c_uint64]),
        "tempo_claim_ordinary_read": (c_int, [vp, c_uint64]),
        "tempo_claim_cancel": (c_int, [vp, c_uint64]),
    }
    for name, (res, args) in protos.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args


lib = _load()
