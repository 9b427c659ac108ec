"""The runtime side (Documentation/engines.md, "The per-step call"): once per scheduling step
the engine reports what its scheduler sees; libtempo keeps the shared timeline, estimates
every waiting claim's TTU, revises the claims and the waiting order, and learns the step
costs from the measured step durations."""

from __future__ import annotations

import array
import ctypes
import errno
import itertools
from dataclasses import dataclass, fields
from typing import Iterable, Sequence

from . import _native_engines as ne
from ._native import lib
from ._handle import OwnedHandle
from .binding import Context, _check_int, _raise

_U64_MAX = (1 << 64) - 1
_U32_MAX = (1 << 32) - 1


@dataclass(frozen=True)
class StepCosts:
    """Linear pass costs: a prefill of n tokens after `context` cached ones costs
    prefill_pass_ns + prefill_token_ns * n + prefill_pair_ns * n * (context + (n+1)/2); a
    decode step decode_pass_ns + decode_seq_ns * batch + decode_context_ns * KV tokens."""

    prefill_pass_ns: float
    prefill_token_ns: float
    prefill_pair_ns: float
    decode_pass_ns: float
    decode_seq_ns: float
    decode_context_ns: float
    retrieval_bps: float


# The roofline model's fit for the shipped model files (`make bench-engines` prints them).
LLAMA_3_1_8B_H100 = StepCosts(5636485, 27535.4, 1.4809, 9880823, 163.8, 81.920, 5.04e10)
QWEN_2_5_14B_H100 = StepCosts(10013386, 52012.8, 2.7854, 17988282, 245.8, 122.880, 5.04e10)


@dataclass(frozen=True)
class RunningSeq:
    """A request holding a slot."""

    prompt_tokens: int
    computed_tokens: int  # prompt tokens whose KV is on the GPU or being retrieved
    tokens_generated: int
    retrieval_bytes: int = 0  # KV still to retrieve before its prefill
    output_tokens: int = 0  # its whole output when known (max_tokens run to the end); 0: history


@dataclass(frozen=True)
class WaitingSeq:
    """A waiting request, in scheduling order."""

    prompt_tokens: int
    cached_tokens: int = 0  # the matched prefix its claim retrieves
    claim: int | None = None
    retrieval_bytes: int = 0


@dataclass(frozen=True)
class Projection:
    """A waiting entry of the last step as the runtime side projects it."""

    ttu_ns: int  # until the timeline reaches it, from now
    output_tokens: int  # its whole output as the completed outputs predict it
    has_claim: bool


@dataclass(frozen=True)
class StepWork:
    """What the step just run computed (for learning its cost)."""

    prefill_tokens: int = 0
    prefill_context_tokens: int = 0
    decode_seqs: int = 0
    decode_context_tokens: int = 0


def _claim_or_none(claim: int | None) -> int:
    return 0 if claim is None else _check_int("claim", claim, 1, _U64_MAX)


class PackedWaiting:
    """A waiting queue in scheduling order, packed as the C call reads it: one row of
    (prompt tokens, cached tokens, claim or 0 for none, retrieval bytes) per request, each an
    int in [0, 2^64)."""

    def __init__(self, rows: Iterable[tuple[int, int, int, int]]) -> None:
        try:
            self._flat = array.array("Q", itertools.chain.from_iterable(rows))
        except (OverflowError, TypeError) as e:
            raise ValueError(f"waiting entries are ints in [0, 2^64): {e}") from None
        if len(self._flat) % 4:
            raise ValueError("waiting entries are rows of 4 values")

    @classmethod
    def from_columns(cls, prompt_tokens: Sequence[int], cached_tokens: Sequence[int],
                     claims: Sequence[int], retrieval_bytes: Sequence[int]) -> PackedWaiting:
        """The same from one sequence per field (equal lengths): each column packed at once
        and interleaved by slices, several times quicker than a tuple per row."""
        n = len(prompt_tokens)
        if not len(cached_tokens) == len(claims) == len(retrieval_bytes) == n:
            raise ValueError("waiting columns of different lengths")
        self = cls(())
        self._flat = array.array("Q", bytes(32 * n))
        try:
            for k, column in enumerate((prompt_tokens, cached_tokens, claims, retrieval_bytes)):
                self._flat[k::4] = array.array("Q", column)
        except (OverflowError, TypeError) as e:
            raise ValueError(f"waiting entries are ints in [0, 2^64): {e}") from None
        return self

    def __len__(self) -> int:
        return len(self._flat) // 4

    def entries(self) -> ctypes.Array[ne.WaitingSeq]:
        """The rows as the C array, over the packed memory (valid while this object lives)."""
        if not self._flat:
            return (ne.WaitingSeq * 1)()
        return (ne.WaitingSeq * len(self)).from_buffer(self._flat)


class Runtime(OwnedHandle):
    """The runtime side over a Context. Thread-safe in the library; one per engine."""

    _what = "runtime"

    def __init__(self, ctx: Context, costs: StepCosts, max_active: int, generation_limit: int,
                 learn: bool = True, history_window: int = 0) -> None:
        if not isinstance(ctx, Context):
            raise TypeError(f"ctx must be a tempokv.Context, not {type(ctx).__name__}")
        if not isinstance(costs, StepCosts):
            raise TypeError(f"costs must be a StepCosts, not {type(costs).__name__}")
        cfg = ne.RuntimeConfig()
        for f in fields(StepCosts):
            setattr(cfg.costs, f.name, float(getattr(costs, f.name)))
        cfg.max_active = _check_int("max_active", max_active, 1, _U32_MAX)
        cfg.generation_limit = _check_int("generation_limit", generation_limit, 1, _U32_MAX)
        cfg.learn = 1 if learn else 0
        cfg.history_window = _check_int("history_window", history_window, 0, _U32_MAX)
        handle = ctypes.c_void_p()
        ptr = ctx._enter()
        try:
            _raise(lib.tempo_runtime_new(ptr, ctypes.byref(cfg), ctypes.byref(handle)),
                   "tempo_runtime_new (costs >= 0, retrieval_bps > 0)")
        finally:
            lib.tempo_ctx_unref(ptr)
        super().__init__(handle.value, lib.tempo_runtime_free)

    def step(self, running: Sequence[RunningSeq],
             waiting: Sequence[WaitingSeq] | PackedWaiting, duration_ns: int = 0,
             work: StepWork | None = None, busy_ns: int = 0) -> None:
        """The per-step call: the scheduler's state after the step, and the measured duration
        and work of the step just run (0 and None when none ran). Called while a step runs
        (a request arrived), busy_ns is how long that step still runs, and `running` is as
        it will leave it. `waiting` may come packed (PackedWaiting): a deep queue then costs
        no Python object per entry."""
        run = (ne.RunningSeq * max(len(running), 1))()
        for i, r in enumerate(running):
            run[i].prompt_tokens = _check_int("prompt_tokens", r.prompt_tokens, 0, _U64_MAX)
            run[i].computed_tokens = _check_int("computed_tokens", r.computed_tokens, 0, _U64_MAX)
            run[i].tokens_generated = _check_int("tokens_generated", r.tokens_generated, 0, _U32_MAX)
            run[i].retrieval_bytes = _check_int("retrieval_bytes", r.retrieval_bytes, 0, _U64_MAX)
            run[i].output_tokens = _check_int("output_tokens", r.output_tokens, 0, _U32_MAX)
        packed = waiting if isinstance(waiting, PackedWaiting) else PackedWaiting(
            (w.prompt_tokens, w.cached_tokens, _claim_or_none(w.claim), w.retrieval_bytes)
            for w in waiting)
        s = ne.Step()
        s.running, s.running_count = run, len(running)
        s.waiting, s.waiting_count = packed.entries(), len(packed)
        s.duration_ns = _check_int("duration_ns", duration_ns, 0, (1 << 63) - 1)
        s.busy_ns = _check_int("busy_ns", busy_ns, 0, (1 << 63) - 2)
        w = work or StepWork()
        for f in fields(StepWork):
            setattr(s, f.name, _check_int(f.name, getattr(w, f.name), 0, _U64_MAX))
        _raise(lib.tempo_runtime_step(self._ptr(), ctypes.byref(s)), "tempo_runtime_step")

    def finished(self, output_tokens: int) -> None:
        """A request completed with output_tokens generated (conditions later predictions)."""
        _raise(lib.tempo_runtime_finished(self._ptr(), _check_int("output_tokens", output_tokens,
                                                                   0, _U32_MAX)),
               "tempo_runtime_finished")

    def costs(self) -> tuple[StepCosts, int]:
        """The step costs in use and how many steps they learned from."""
        c = ne.StepCosts()
        n = ctypes.c_uint64()
        _raise(lib.tempo_runtime_get_costs(self._ptr(), ctypes.byref(c), ctypes.byref(n)),
               "tempo_runtime_get_costs")
        return StepCosts(*[getattr(c, f.name) for f in fields(StepCosts)]), n.value

    def projection(self) -> list[Projection]:
        """Every entry of the last successful step's waiting queue, in queue order, as the
        runtime side projects it: requests without a claim get a TTU too."""
        count = ctypes.c_size_t()
        size = ctypes.sizeof(ne.WaitingProjection)
        ret = lib.tempo_runtime_get_projection(self._ptr(), None, size, 0, ctypes.byref(count))
        while ret == -errno.ENOSPC:
            out = (ne.WaitingProjection * count.value)()
            ret = lib.tempo_runtime_get_projection(self._ptr(), out, size, len(out),
                                                   ctypes.byref(count))
            if ret == 0:
                return [Projection(p.ttu_ns, p.output_tokens, bool(p.flags & ne.PROJECTION_F_CLAIM))
                        for p in out[:count.value]]
        _raise(ret, "tempo_runtime_get_projection")
        return []

    def given_ttus(self, claims: Sequence[int]) -> list[int | None]:
        """The point TTU the last successful step gave each claim (ns, as of that step), None
        for a claim it gave none: what the step gave, read without a call into the context."""
        n = len(claims)
        ids = (ctypes.c_uint64 * max(n, 1))(*claims)
        out = (ctypes.c_int64 * max(n, 1))()
        _raise(lib.tempo_runtime_get_given_ttus(self._ptr(), ids, n, out),
               "tempo_runtime_get_given_ttus")
        return [None if v == (1 << 63) - 1 else v for v in out[:n]]

    def history(self) -> list[int]:
        """The completed output lengths that condition the projections (finished()), the
        window's last, oldest first."""
        count = ctypes.c_size_t()
        ret = lib.tempo_runtime_get_history(self._ptr(), None, 0, ctypes.byref(count))
        while ret == -errno.ENOSPC:
            out = (ctypes.c_uint32 * count.value)()
            ret = lib.tempo_runtime_get_history(self._ptr(), out, len(out), ctypes.byref(count))
            if ret == 0:
                return list(out[:count.value])
        _raise(ret, "tempo_runtime_get_history")
        return []
