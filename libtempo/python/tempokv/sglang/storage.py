"""TempoHiCacheStorage: SGLang HiCache's L3 storage backend (`HiCacheStorage`) on TempoKV, built
the way SGLang's StorageBackendFactory builds a `dynamic` backend:
`cls(storage_config, kwargs)` with the settings in `storage_config.extra_config`.

Follows `python/sglang/srt/mem_cache/hicache_storage.py`, `storage/backend_factory.py` and
`managers/cache_controller.py` of SGLang at commit 001067fffe33 (main, 2026), subclassing
SGLang's HiCacheStorage.

The page geometry comes from the host pool HiCache registers (`register_mem_pool_host`):
its page size, and per page the buffers `get_page_buffer_meta` gives (K and V of a page, or
of each layer's page, by the pool's layout). Each buffer of a page is one object, so
`batch_get_v1` copies the fast-tier extents straight into the host pool's memory and
`batch_set_v1` puts from it, with no copy in between (`interface_v1: 1` in the extra config
selects them). The `v2` calls do the same for every registered pool (KV, and Mamba, SWA,
indexer or draft pools of hybrid models) under the pool's name.

Keys: SGLang's page hash strings, named in a namespace of the model, the pool's dtype and
layout, and the rank: `tp_rank` where ranks hold different heads; rank 0 for every rank of
an MLA model, whose KV is replicated (HiCache backs it up from rank 0 only, and a prefetch
counts the hits every rank finds: each rank must find rank 0's pages). With TP > 1 every
rank is a process of its own: the ranks share one store through tempod (device = daemon)."""

from __future__ import annotations

import ctypes
import errno
import logging
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence

import torch

from ..binding import ClaimState, KvObject, Retrieval, TempoError
from ..integration import shared_context
from ..integration.extents import ClaimBytes, claim_extents
from ..integration.settings import Option, engine_name, non_negative_number, positive_int, \
    read_settings
from ..keys import KeyScheme
from ..store import Store, Writer

log = logging.getLogger("tempokv.sglang")

try:
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorage, PoolHitPolicy, \
        PoolTransferResult
except ImportError as e:  # SGLang loads this backend: without it there is nothing to load
    raise ImportError(f"tempokv.sglang is a storage backend of SGLang's HiCache and needs "
                      f"SGLang's package: {e}") from e

KV_POOL = "kv"  # PoolName.KV: its objects are the v1 calls' objects
# Keys of the extra config SGLang itself reads (the dynamic backend's loader, the v1 switch).
_SGLANG_KEYS = frozenset({"backend_name", "module_path", "class_name", "interface_v1",
                          "tp_lcm_size"})

OPTIONS = {
    "get_timeout_ms": Option(10_000.0, non_negative_number,
                             "how long a read waits for staging before it counts as a miss"),
    "writer_threads": Option(2, positive_int, "library threads putting backed-up pages"),
    "engine": Option(None, lambda v: str(v), "the engine's name in tempod (default sglang)"),
}


def _pool_name(name: Any) -> str:
    return str(getattr(name, "value", name))


@dataclass(frozen=True)
class _Geometry:
    """A host pool's page: its size in tokens and the bytes of each of its buffers."""

    page_size: int
    segments: tuple[int, ...]


def _buffers(pool: Any, host_indices: torch.Tensor) -> list[tuple[int, int]]:
    """(address, bytes) of every page buffer of host_indices, page by page."""
    ptrs, sizes = pool.get_page_buffer_meta(host_indices)
    ptrs = [int(p) for p in ptrs]
    if isinstance(sizes, int):
        sizes = [sizes] * len(ptrs)
    return list(zip(ptrs, [int(s) for s in sizes]))


class TempoHiCacheStorage(HiCacheStorage):  # type: ignore[misc,valid-type]
    def __init__(self, storage_config: Any, kwargs: Optional[dict] = None) -> None:
        self.config = storage_config
        if not getattr(storage_config, "model_name", None):
            raise ValueError("TempoHiCacheStorage: storage_config.model_name is not set (the "
                             "keys are named by the model)")
        dp = int(getattr(storage_config, "dp_rank", 0) or 0)
        spec, options = read_settings("hicache-storage-backend-extra-config",
                                      storage_config.extra_config, OPTIONS,
                                      engine_name("sglang", f"dp{dp}"), _SGLANG_KEYS)
        # HiCache reads and writes whole data pages (batch_get/batch_set) unless interface_v1
        # selects the zero-copy calls: the two keep different objects, and batch_exists
        # answers for the one in use.
        self.zero_copy = bool((storage_config.extra_config or {}).get("interface_v1", 0))
        self.tp_rank = int(storage_config.tp_rank)
        self.tp_size = int(storage_config.tp_size)
        self.replicated = bool(storage_config.is_mla_model)
        self.timeout_ns = int(options["get_timeout_ms"] * 1e6)
        try:
            self.ctx = shared_context.acquire(spec)
        except TempoError as e:
            if e.errno == errno.EBUSY and self.tp_size > 1:
                raise TempoError(errno.EBUSY, f"{e.strerror}: with TP > 1 every rank is a "
                                 "process of its own and the store has one opener: run tempod "
                                 "and give every rank device = daemon "
                                 "(Documentation/engines.md, SGLang)") from None
            raise
        self.store = Store(self.ctx)
        self.writer = Writer(self.ctx, options["writer_threads"])
        self.mem_pool_host: Any = None
        self.registered_pools: dict[Any, Any] = {}
        self._schemes: dict[str, KeyScheme] = {}  # per pool name
        self._geometry: dict[str, _Geometry] = {}
        self._written: set[int] = set()
        self.stats = {"pages_read": 0, "pages_missed": 0, "pages_written": 0, "write_errors": 0}

    # ---------------------------------------------------------------- host pools ----
    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        """The host pool of the KV: its page geometry and the keys' namespace."""
        self.mem_pool_host = mem_pool_host
        self._register(KV_POOL, mem_pool_host)

    def register_mem_host_pool_v2(self, host_pool: Any, host_pool_name: Any) -> None:
        self.registered_pools[host_pool_name] = host_pool
        self._register(_pool_name(host_pool_name), host_pool)

    def _register(self, name: str, pool: Any) -> None:
        page = int(pool.page_size)
        sizes = tuple(n for _, n in _buffers(pool, torch.arange(page, dtype=torch.int64)))
        if not sizes or min(sizes) <= 0:
            raise ValueError(f"host pool {name}: get_page_buffer_meta gave no page buffers")
        c = self.config
        namespace = [f"hicache:{name}", str(pool.dtype).removeprefix("torch."),
                     str(getattr(pool, "layout", ""))]
        if int(getattr(c, "pp_size", 1) or 1) > 1:
            namespace.append(f"pp{c.pp_rank}/{c.pp_size}")
        if int(getattr(c, "attn_cp_size", 1) or 1) > 1:
            namespace.append(f"cp{c.attn_cp_rank}/{c.attn_cp_size}")
        rank = 0 if self.replicated else self.tp_rank
        self._schemes[name] = KeyScheme(c.model_name, "|".join(namespace), rank, self.tp_size)
        self._geometry[name] = _Geometry(page, sizes)

    def _pool(self, name: str) -> tuple[KeyScheme, _Geometry]:
        if name not in self._schemes:
            raise ValueError(f"TempoHiCacheStorage: host pool {name!r} is not registered "
                             "(register_mem_pool_host / register_mem_host_pool_v2 first)")
        return self._schemes[name], self._geometry[name]

    def _object_keys(self, name: str, keys: Sequence[str]) -> list[int]:
        """Every buffer's object of every page, page by page."""
        scheme, geometry = self._pool(name)
        out = []
        for key in keys:
            if not isinstance(key, str) or not key:
                raise ValueError(f"page keys are non-empty strings, not {key!r}")
            out.extend(scheme.named_key(f"{key}#{j}".encode())
                       for j in range(len(geometry.segments)))
        return out

    # --------------------------------------------------------------------- reads ----
    def _held(self, name: str, keys: Sequence[str]) -> int:
        """Pages, from the first, every buffer of which the store holds."""
        if not keys:
            return 0
        segments = len(self._pool(name)[1].segments)
        return self.store.lookup(self._object_keys(name, keys)) // segments

    def _read(self, objects: list[int], destinations: list[tuple[int, int]]) -> bool:
        """One claim over the objects, due now; its extents copied into the destinations."""
        cid = self.ctx.report([KvObject(k, n) for k, (_, n) in zip(objects, destinations)], 0)
        try:
            if self.ctx.request_retrieval(cid) != Retrieval.READY and \
                    self.ctx.wait_ready(cid, self.timeout_ns) != Retrieval.READY:
                self.ctx.ordinary_read(cid)  # warms the fast tier for the next read
                return False
            self.ctx.transfer_begin(cid)
        except TempoError as e:
            log.warning("read of %d objects: %s", len(objects), e)
            try:
                if self.ctx.query(cid).state in (ClaimState.PLANNED, ClaimState.STAGING,
                                                 ClaimState.STAGE_READY):
                    self.ctx.cancel(cid)
            except TempoError:
                pass
            return False
        try:
            ClaimBytes(claim_extents(self.ctx, cid)).copy_to(destinations)
            return True
        except ValueError as e:  # sizes other than the pool's: another geometry saved them
            log.warning("read of %d objects: %s", len(objects), e)
            return False
        finally:
            self.ctx.transfer_end(cid)

    def _get_pages(self, name: str, pool: Any, keys: List[str], host_indices: torch.Tensor
                   ) -> List[bool]:
        _, geometry = self._pool(name)
        if host_indices is None or host_indices.numel() != len(keys) * geometry.page_size:
            raise ValueError(f"{len(keys)} pages need {len(keys) * geometry.page_size} host "
                             f"indices, got {None if host_indices is None else host_indices.numel()}")
        held = self._held(name, keys)
        done = [False] * len(keys)
        if held:
            firsts = host_indices[: held * geometry.page_size]
            buffers = _buffers(pool, firsts)
            objects = self._object_keys(name, keys[:held])
            if len(buffers) == len(objects) and self._read(objects, buffers):
                done[:held] = [True] * held
        self.stats["pages_read"] += sum(done)
        self.stats["pages_missed"] += len(keys) - sum(done)
        return done

    def batch_get_v1(self, keys: List[str], host_indices: torch.Tensor,
                     extra_info: Any = None) -> List[bool]:
        """Reads the pages into the host pool at host_indices, in place; True for the leading
        pages read (a page not held ends the prefix)."""
        return self._get_pages(KV_POOL, self.mem_pool_host, keys, host_indices)

    def batch_exists(self, keys: List[str], extra_info: Any = None) -> int:
        """How many of keys, from the first, are held (one library call)."""
        if self.zero_copy:
            return self._held(KV_POOL, keys)
        return self.store.lookup(self._flat_keys(keys))

    def exists(self, key: str) -> bool:
        return self.batch_exists([key]) == 1

    # -------------------------------------------------------------------- writes ----
    def _put_pages(self, name: str, pool: Any, keys: List[str], host_indices: torch.Tensor
                   ) -> List[bool]:
        _, geometry = self._pool(name)
        if host_indices is None or host_indices.numel() != len(keys) * geometry.page_size:
            raise ValueError(f"{len(keys)} pages need {len(keys) * geometry.page_size} host "
                             f"indices, got {None if host_indices is None else host_indices.numel()}")
        buffers = _buffers(pool, host_indices)
        objects = self._object_keys(name, keys)
        if len(buffers) != len(objects):
            raise ValueError(f"the host pool gave {len(buffers)} page buffers for "
                             f"{len(objects)} objects")
        return self._put(objects, buffers, len(geometry.segments))

    def _put(self, objects: list[int], buffers: list[tuple[int, int]], per_page: int
             ) -> List[bool]:
        """Idempotent puts straight from the buffers; waits for them (HiCache's backup thread
        frees the pages after). True per page whose every buffer was stored."""
        cookies = {}
        for i, (key, (addr, n)) in enumerate(zip(objects, buffers)):
            try:
                cookies[self.writer.put(key, (ctypes.c_char * n).from_address(addr))] = i
            except TempoError as e:
                log.warning("put of page buffer %d: %s", i, e)
        queued = set(cookies.values())
        ok = [i in queued for i in range(len(objects))]
        for done in self.writer.wait():
            i = cookies.get(done.cookie)
            if i is None:
                continue
            if done.error:
                ok[i] = False
            else:
                self._written.add(done.key)
        pages = [all(ok[p * per_page:(p + 1) * per_page]) for p in range(len(objects) // per_page)]
        self.stats["pages_written"] += sum(pages)
        self.stats["write_errors"] += len(pages) - sum(pages)
        return pages

    def batch_set_v1(self, keys: List[str], host_indices: torch.Tensor,
                     extra_info: Any = None) -> List[bool]:
        """Stores the pages at host_indices of the host pool, in place."""
        return self._put_pages(KV_POOL, self.mem_pool_host, keys, host_indices)

    # ----------------------------------------------------------------- v2 pools ----
    def _v2_pool(self, transfer: Any) -> tuple[str, Any]:
        name = _pool_name(transfer.name)
        if name == KV_POOL:
            return name, self.mem_pool_host
        for key, pool in self.registered_pools.items():
            if _pool_name(key) == name:
                return name, pool
        raise ValueError(f"TempoHiCacheStorage: host pool {name!r} is not registered")

    def batch_exists_v2(self, keys: List[str], pool_transfers: Optional[List[Any]] = None,
                        extra_info: Any = None) -> Any:
        """The usable prefix: the KV pages held, cut to where each extra pool's pages are
        (every page of the prefix, or its trailing pages, by the pool's hit policy)."""
        kv = self._held(KV_POOL, keys)
        hits = {KV_POOL: kv} if kv else {}
        final = kv
        for transfer in pool_transfers or []:
            if final == 0:
                break
            name, _ = self._v2_pool(transfer)
            policy = getattr(transfer.hit_policy, "value", transfer.hit_policy)
            if policy == PoolHitPolicy.ALL_PAGES.value:
                boundary = self._held(name, keys[:kv])
            else:
                trailing = max(1, len(transfer.keys or ()) or 1)
                boundary = next((n for n in range(kv, 0, -1)
                                 if self._held(name, keys[max(0, n - trailing):n])
                                 == min(trailing, n)), 0)
            if boundary:
                hits[name] = boundary
            final = min(final, boundary)
        return PoolTransferResult(final, hits)

    def batch_get_v2(self, transfers: List[Any], extra_info: Any = None) -> dict[str, List[bool]]:
        out = {}
        for t in transfers:
            name, pool = self._v2_pool(t)
            out[_pool_name(t.name)] = self._get_pages(name, pool, list(t.keys or []),
                                                      t.host_indices)
        return out

    def batch_set_v2(self, transfers: List[Any], extra_info: Any = None) -> dict[str, List[bool]]:
        out = {}
        for t in transfers:
            name, pool = self._v2_pool(t)
            out[_pool_name(t.name)] = self._put_pages(name, pool, list(t.keys or []),
                                                      t.host_indices)
        return out

    # ------------------------------------------------- tensors (the generic path) ----
    def _flat_keys(self, keys: Sequence[str]) -> list[int]:
        scheme, _ = self._pool(KV_POOL)
        for key in keys:
            if not isinstance(key, str) or not key:
                raise ValueError(f"page keys are non-empty strings, not {key!r}")
        return [scheme.named_key(f"{k}#flat".encode()) for k in keys]

    def _flat(self, value: Any) -> tuple[int, int]:
        if not isinstance(value, torch.Tensor) or value.is_cuda or not value.is_contiguous():
            raise ValueError("pages are contiguous host tensors")
        return value.data_ptr(), value.numel() * value.element_size()

    def batch_get(self, keys: List[str], target_locations: Optional[Any] = None,
                  target_sizes: Optional[Any] = None) -> List[Optional[torch.Tensor]]:
        """Reads whole pages into target tensors (flat data pages): the path HiCache takes
        without interface_v1. None from the first page not held."""
        if target_locations is None or len(target_locations) != len(keys):
            raise ValueError(f"{len(keys)} keys need as many target pages")
        objects = self._flat_keys(keys)
        held = self.store.lookup(objects)
        buffers = [self._flat(t) for t in target_locations[:held]]
        ok = held > 0 and self._read(objects[:held], buffers)
        return [t if ok and i < held else None for i, t in enumerate(target_locations)]

    def get(self, key: str, target_location: Optional[Any] = None,
            target_sizes: Optional[Any] = None) -> Optional[torch.Tensor]:
        return self.batch_get([key], [target_location])[0]

    def batch_set(self, keys: List[str], values: Optional[Any] = None,
                  target_locations: Optional[Any] = None,
                  target_sizes: Optional[Any] = None) -> bool:
        """Stores whole pages from tensors (the path without interface_v1)."""
        sources = values if values is not None else target_locations
        if sources is None or len(sources) != len(keys):
            raise ValueError(f"{len(keys)} keys need as many pages")
        return all(self._put(self._flat_keys(keys), [self._flat(v) for v in sources], 1))

    def set(self, key: str, value: Optional[Any] = None, target_location: Optional[Any] = None,
            target_sizes: Optional[Any] = None) -> bool:
        return self.batch_set([key], [value if value is not None else target_location])

    # -------------------------------------------------------------------- admin ----
    def clear(self) -> bool:
        """Deletes every object this backend stored (the store holds other users' too)."""
        for key in sorted(self._written):
            try:
                self.store.delete(key)
            except TempoError:
                pass  # deleted by another user of the store meanwhile
        self._written.clear()
        return True

    def get_stats(self) -> dict[str, int]:
        return dict(self.stats)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
            shared_context.release(self.ctx)


__all__ = ["OPTIONS", "TempoHiCacheStorage"]
