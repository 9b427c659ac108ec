"""A storage backend shaped like SGLang HiCache's (`HiCacheStorage`, the L3 tier below the
host memory pool).

Follows `python/sglang/srt/mem_cache/hicache_storage.py` of SGLang at commit 001067fffe33
(main, 2026): `exists`, `batch_exists` (the count of leading keys held), `get`/`batch_get`
into host buffers, `set`/`batch_set` from them, `clear`. SGLang keys pages by the hex string
of its own chained page hash; each string names one object here, under a key namespaced by
model, dtype and tensor-parallel rank/size (keys.py), so two ranks or models never collide.

Reads go through claims: a batch_get reports the pages as one claim, asks for retrieval at
once (it is due), waits for staging, copies the fast-tier extents straight into the target
host buffers (no Python bytes) and releases. Writes are idempotent puts through the
asynchronous writer; batch_set waits for its puts (SGLang's backup thread calls it).
"""

from __future__ import annotations

import ctypes
import hashlib
from typing import Any, List, Optional

import torch

from ._native import lib
from .binding import Context, KvObject, Retrieval, TempoError
from .keys import KeyScheme
from .store import Store, Writer

try:  # pragma: no cover - SGLang is not installable here
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorage as _StorageBase
except ImportError:
    _StorageBase = object  # type: ignore[assignment,misc]


class TempoHiCacheStorage(_StorageBase):  # type: ignore[misc,valid-type]
    """HiCache L3 storage on a TempoKV Context. `page_bytes` is one page's size (the host
    pool's page of KV for this rank), the size of every object."""

    def __init__(self, ctx: Context, scheme: KeyScheme, page_bytes: int,
                 timeout_ns: int = 10_000_000_000, writer_threads: int = 2) -> None:
        if page_bytes <= 0:
            raise ValueError(f"page_bytes must be positive, got {page_bytes}")
        self.ctx = ctx
        self.scheme = scheme
        self.page_bytes = page_bytes
        self.timeout_ns = timeout_ns
        self.store = Store(ctx)
        self.writer = Writer(ctx, writer_threads)
        self._written: set[int] = set()

    def key_of(self, key: str) -> int:
        """The 64-bit object key of SGLang's page key, in this backend's namespace."""
        if not isinstance(key, str) or not key:
            raise ValueError(f"page keys are non-empty strings, not {key!r}")
        h = hashlib.blake2b(key.encode(), digest_size=8,
                            key=self.scheme.seed.to_bytes(8, "little"))
        return int.from_bytes(h.digest(), "little")

    def exists(self, key: str) -> bool:
        return self.store.lookup([self.key_of(key)]) == 1

    def batch_exists(self, keys: List[str], extra_info: Any = None) -> int:
        """How many of keys, from the first, are held (one library call)."""
        return self.store.lookup([self.key_of(k) for k in keys])

    def _target(self, target: Any) -> torch.Tensor:
        if target is None:
            return torch.empty(self.page_bytes, dtype=torch.uint8)
        if not isinstance(target, torch.Tensor) or target.is_cuda or not target.is_contiguous():
            raise ValueError("targets are contiguous host tensors")
        if target.numel() * target.element_size() != self.page_bytes:
            raise ValueError(f"a target of {target.numel() * target.element_size()} bytes, "
                             f"pages are {self.page_bytes}")
        return target

    def batch_get(self, keys: List[str], target_locations: Optional[Any] = None,
                  target_sizes: Optional[Any] = None) -> List[torch.Tensor | None]:
        """Reads the pages into target_locations (host tensors of page_bytes each; new
        tensors when None). A page that is not held, or a claim that cannot be staged in
        time, gives None for every page from it on (SGLang uses the leading hits)."""
        targets = [self._target(t) for t in (target_locations or [None] * len(keys))]
        if len(targets) != len(keys):
            raise ValueError(f"{len(keys)} keys, {len(targets)} targets")
        ids = [self.key_of(k) for k in keys]
        held = self.store.lookup(ids)
        out: List[torch.Tensor | None] = [None] * len(keys)
        if held == 0:
            return out
        cid = self.ctx.report([KvObject(k, self.page_bytes) for k in ids[:held]], 0)
        try:
            if self.ctx.request_retrieval(cid) != Retrieval.READY:
                if self.ctx.wait_ready(cid, self.timeout_ns) != Retrieval.READY:
                    self.ctx.ordinary_read(cid)
                    return out
        except TempoError:
            if self.ctx.query(cid).state.name in ("PLANNED", "STAGING", "STAGE_READY"):
                self.ctx.cancel(cid)
            return out
        self.ctx.transfer_begin(cid)
        try:
            self._copy_out(cid, targets[:held])
        finally:
            self.ctx.transfer_end(cid)
        out[:held] = targets[:held]
        return out

    def _copy_out(self, cid: int, targets: List[torch.Tensor]) -> None:
        ptr = self.ctx._enter()
        try:
            extents = self.ctx._extents(ptr, cid)
        finally:
            lib.tempo_ctx_unref(ptr)
        page, offset = 0, 0
        for e in extents:
            src = torch.frombuffer((ctypes.c_uint8 * e.bytes).from_address(e.addr),
                                   dtype=torch.uint8)
            pos = 0
            while pos < e.bytes:
                dst = targets[page].view(torch.uint8).view(-1)
                n = min(self.page_bytes - offset, e.bytes - pos)
                dst[offset:offset + n].copy_(src[pos:pos + n])
                pos += n
                offset += n
                if offset == self.page_bytes:
                    page, offset = page + 1, 0

    def get(self, key: str, target_location: Optional[Any] = None,
            target_sizes: Optional[Any] = None) -> torch.Tensor | None:
        return self.batch_get([key], None if target_location is None else [target_location])[0]

    def batch_set(self, keys: List[str], values: Optional[Any] = None,
                  target_locations: Optional[Any] = None,
                  target_sizes: Optional[Any] = None) -> bool:
        """Stores the pages (values, or target_locations: host tensors of page_bytes each).
        Idempotent: a page already held with the same bytes succeeds. True if all were."""
        sources = values if values is not None else target_locations
        if sources is None or len(sources) != len(keys):
            raise ValueError("batch_set needs one value per key")
        for k, v in zip(keys, sources):
            key = self.key_of(k)
            self.writer.put(key, self._target(v))
        ok = True
        for done in self.writer.wait():
            if done.error:
                ok = False
            else:
                self._written.add(done.key)
        return ok

    def set(self, key: str, value: Optional[Any] = None, target_location: Optional[Any] = None,
            target_sizes: Optional[Any] = None) -> bool:
        v = value if value is not None else target_location
        return self.batch_set([key], [v])

    def clear(self) -> None:
        """Deletes every page this backend stored (the store holds other users' objects too)."""
        for key in sorted(self._written):
            try:
                self.store.delete(key)
            except TempoError:
                pass  # deleted by another user of the store meanwhile
        self._written.clear()

    def close(self) -> None:
        self.writer.close()


__all__ = ["TempoHiCacheStorage"]
