"""The object store as engines use it: the longest cached prefix of a key chain in one call,
idempotent puts, deletes, and asynchronous puts with completions (a worker never waits on a
save). Works on any Context; puts and deletes need the uring device (real bytes)."""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass
from typing import Any, Sequence

from ._native import lib
from ._native_engines import PutCompletion
from ._handle import OwnedHandle
from .binding import Context, TempoError, _check_int, _raise

_U64_MAX = (1 << 64) - 1


def _address(data: Any) -> tuple[int, int, Any]:
    """(address, bytes, keeper) of a contiguous CPU buffer, without a copy: a torch tensor,
    or a writable buffer (bytearray, writable memoryview, array). While the keeper lives the
    address stays valid: for a buffer it holds the buffer's export, so a bytearray cannot be
    resized (and moved) under a put still reading it."""
    if hasattr(data, "data_ptr") and hasattr(data, "is_contiguous"):
        if getattr(data, "is_cuda", False):
            raise ValueError("put() takes host memory: copy the tensor to the CPU first")
        if not data.is_contiguous():
            raise ValueError("put() needs a contiguous tensor")
        return int(data.data_ptr()), int(data.numel() * data.element_size()), data
    view = memoryview(data)
    if not view.contiguous:
        raise ValueError("put() needs a contiguous buffer")
    if view.readonly:
        raise TypeError("an asynchronous put needs a tensor or a writable buffer")
    n = view.nbytes
    if n == 0:
        return 0, 0, None
    keeper = (ctypes.c_char * n).from_buffer(view.cast("B"))
    return ctypes.addressof(keeper), n, keeper


class Store:
    """The store of a Context."""

    def __init__(self, ctx: Context) -> None:
        if not isinstance(ctx, Context):
            raise TypeError(f"ctx must be a tempokv.Context, not {type(ctx).__name__}")
        self.ctx = ctx

    def lookup(self, keys: Sequence[int]) -> int:
        """How many of keys, from the first, the store holds (the cached prefix of a chain)."""
        arr = (ctypes.c_uint64 * max(len(keys), 1))(
            *[_check_int("key", k, 0, _U64_MAX) for k in keys])
        out = ctypes.c_size_t()
        self.ctx._call("tempo_store_lookup", lib.tempo_store_lookup, arr, len(keys),
                       ctypes.byref(out))
        return out.value

    def exists(self, key: int) -> bool:
        return self.lookup([key]) == 1

    def put(self, key: int, data: Any) -> None:
        """Stores data (bytes-like or a CPU tensor) as key, idempotently: the same bytes again
        is a no-op, other bytes raise TempoError EEXIST."""
        key = _check_int("key", key, 0, _U64_MAX)
        if hasattr(data, "data_ptr"):
            src, n, _ = _address(data)
        else:
            src = bytes(memoryview(data))  # bytes-like: passed in place when already bytes
            n = len(src)
        self.ctx._call(f"tempo_store_put(key {key})", lib.tempo_store_put, key, src, n)

    def delete(self, key: int) -> None:
        """Deletes key (TempoError ENOENT if not held)."""
        key = _check_int("key", key, 0, _U64_MAX)
        self.ctx._call(f"tempo_store_delete(key {key})", lib.tempo_store_delete, key)


def fast_tier_memory(ctx: Context) -> tuple[int, int]:
    """(address, bytes) of the fast tier's memory, which holds every ready extent: register
    it with the GPU runtime once, e.g.
    torch.cuda.cudart().cudaHostRegister(address, bytes, 0), so copies to the GPU are DMA
    from pinned memory. TempoError EOPNOTSUPP on sim."""
    base = ctypes.c_void_p()
    size = ctypes.c_uint64()
    ctx._call("tempo_ctx_fast_tier", lib.tempo_ctx_fast_tier, ctypes.byref(base),
              ctypes.byref(size))
    return base.value or 0, size.value


@dataclass(frozen=True)
class PutResult:
    key: int
    cookie: int
    error: int  # 0, or the positive errno the put failed with


class Writer(OwnedHandle):
    """Asynchronous puts on `threads` library threads. put() returns at once and keeps its
    buffer alive until the put's completion is collected by completions() or wait(). close()
    finishes the queued puts first."""

    _what = "writer"

    def __init__(self, ctx: Context, threads: int = 2) -> None:
        if not isinstance(ctx, Context):
            raise TypeError(f"ctx must be a tempokv.Context, not {type(ctx).__name__}")
        threads = _check_int("threads", threads, 1, 64)
        handle = ctypes.c_void_p()
        ptr = ctx._enter()
        try:
            _raise(lib.tempo_writer_new(ptr, threads, ctypes.byref(handle)), "tempo_writer_new")
        finally:
            lib.tempo_ctx_unref(ptr)
        self._lock = threading.Lock()
        self._inflight: dict[int, Any] = {}  # cookie -> its buffer's keeper (_address)
        self._next_cookie = 1
        super().__init__(handle.value, lib.tempo_writer_free)

    def put(self, key: int, data: Any) -> int:
        """Queues a put of a CPU tensor or writable buffer; returns its cookie."""
        key = _check_int("key", key, 0, _U64_MAX)
        addr, n, keeper = _address(data)
        if n == 0:
            raise ValueError("put() of an empty buffer")
        with self._lock:
            cookie = self._next_cookie
            self._next_cookie += 1
            self._inflight[cookie] = keeper
        ret = lib.tempo_writer_put(self._ptr(), key, addr, n, cookie)
        if ret < 0:
            with self._lock:
                del self._inflight[cookie]
            _raise(ret, f"tempo_writer_put(key {key})")
        return cookie

    def completions(self) -> list[PutResult]:
        """Puts finished since the last call, oldest first (never blocks)."""
        out: list[PutResult] = []
        buf = (PutCompletion * 64)()
        n = ctypes.c_size_t()
        while True:
            _raise(lib.tempo_writer_completions(self._ptr(), buf, 64, ctypes.byref(n)),
                   "tempo_writer_completions")
            with self._lock:
                for c in buf[: n.value]:
                    self._inflight.pop(c.cookie, None)
                    out.append(PutResult(c.key, c.cookie, -c.status))
            if n.value < 64:
                return out

    def wait(self, timeout_ns: int = 60_000_000_000) -> list[PutResult]:
        """Waits until every queued put finished; returns their completions."""
        timeout_ns = _check_int("timeout_ns", timeout_ns, 0, (1 << 63) - 1)
        _raise(lib.tempo_writer_wait(self._ptr(), timeout_ns), "tempo_writer_wait")
        return self.completions()

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._inflight)

    def _closed(self) -> None:
        # Freeing finished every queued put: no buffer is read any more.
        with self._lock:
            self._inflight.clear()


__all__ = ["PutResult", "Store", "TempoError", "Writer", "fast_tier_memory"]
