"""A transferring claim's bytes where they lie: the fast-tier extents, in manifest order, read
in place (torch tensors over the memory, or raw addresses), never through Python bytes."""

from __future__ import annotations

import ctypes
from typing import Sequence

from .._native import lib
from ..binding import Context

try:
    import torch
except ImportError:  # the LMCache adapter and SGLang's raw pages need no torch here
    torch = None  # type: ignore[assignment]


def claim_extents(ctx: Context, claim: int) -> list[tuple[int, int]]:
    """(address, bytes) of a TRANSFERRING claim's extents, manifest order."""
    ptr = ctx._enter()
    try:
        return [(int(e.addr), int(e.bytes)) for e in ctx._extents(ptr, claim) if e.bytes]
    finally:
        lib.tempo_ctx_unref(ptr)


class ClaimBytes:
    """A claim's bytes as one logical range over its extents: slices are tensors viewing the
    fast tier in place, gathered (one copy) only when a slice spans two extents."""

    def __init__(self, extents: Sequence[tuple[int, int]]) -> None:
        self.extents = list(extents)
        self.starts = []
        pos = 0
        for _, n in self.extents:
            self.starts.append(pos)
            pos += n
        self.size = pos

    def _view(self, index: int, offset: int, n: int) -> "torch.Tensor":
        addr, _ = self.extents[index]
        return torch.frombuffer((ctypes.c_uint8 * n).from_address(addr + offset),
                                dtype=torch.uint8)

    def slice(self, start: int, n: int) -> "torch.Tensor":
        """Bytes [start, start + n) as a uint8 tensor."""
        if start < 0 or n <= 0 or start + n > self.size:
            raise ValueError(f"bytes [{start}, {start + n}) outside the claim's {self.size}")
        pieces = []
        for i, (_, length) in enumerate(self.extents):
            lo = self.starts[i]
            if lo + length <= start:
                continue
            if lo >= start + n:
                break
            a = max(start, lo)
            b = min(start + n, lo + length)
            pieces.append(self._view(i, a - lo, b - a))
        return pieces[0] if len(pieces) == 1 else torch.cat(pieces)

    def copy_to(self, destinations: Sequence[tuple[int, int]]) -> None:
        """Copies the claim's bytes, in order, into raw buffers (address, bytes) whose sizes
        add up to the claim's."""
        total = sum(n for _, n in destinations)
        if total != self.size:
            raise ValueError(f"destinations hold {total} bytes, the claim {self.size}")
        it = iter(self.extents)
        src, left = next(it, (0, 0))
        for dst, n in destinations:
            while n:
                if left == 0:
                    src, left = next(it)
                step = min(n, left)
                ctypes.memmove(dst, src, step)
                dst, src, n, left = dst + step, src + step, n - step, left - step
