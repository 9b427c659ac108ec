"""TempoL2Adapter: an L2 adapter of LMCache's multiprocess server (`L2AdapterInterface`), so
TempoKV (in process, or through tempod over the CXL device or NVMe) sits under LMCache's L1.
LMCache loads it as a plugin adapter: `{"type": "plugin", "module_path": "tempokv.lmcache",
"class_name": "TempoL2Adapter", "adapter_params": {...}}`, built with TempoL2AdapterConfig
(the class name + "Config", as the plugin loader looks for it).

Follows `lmcache/v1/distributed/l2_adapters/base.py`, `plugin_l2_adapter.py` and
`distributed/api.py` of LMCache at commit 000e8777a114 (main, 2026), subclassing LMCache's
own classes.

Every task runs on a thread of the adapter's own (one per kind, so a load waiting for
staging never holds a store back) and signals its event fd when done:

* store: each object is put, idempotently, from the L1 memory object in place;
* lookup and lock: the keys the store holds are locked against deletion, and the held
  objects become one claim with the adapter's `lock_ttu_ms`: the time LMCache is expected
  to take before it loads them, so staging commits when it has to and not before (sizes
  are those this adapter has seen for the key's model and object group);
* load: the held keys' objects become a claim due now (the lookup's claim, if it covered
  them, staged them already), and the fast-tier extents are copied into the memory objects;
* unlock: the keys' locks drop; a lookup's claim whose keys are all unlocked ends."""

from __future__ import annotations

import ctypes
import logging
import os
import queue
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from ..binding import ClaimState, KvObject, Retrieval, TempoError
from ..integration import shared_context
from ..integration.extents import ClaimBytes, claim_extents
from ..integration.settings import ContextSpec, Option, non_negative_number, read_settings
from ..keys import KeyScheme
from ..store import Store

log = logging.getLogger("tempokv.lmcache")

try:
    from lmcache.native_storage_ops import Bitmap
    from lmcache.v1.distributed.internal_api import L2StoreResult
    from lmcache.v1.distributed.l2_adapters.base import L2AdapterInterface
    from lmcache.v1.distributed.l2_adapters.config import L2AdapterConfigBase
except ImportError as e:  # LMCache loads this adapter: without it there is nothing to load
    raise ImportError(f"tempokv.lmcache is an L2 adapter of LMCache's multiprocess server and "
                      f"needs LMCache's package: {e}") from e

OPTIONS = {
    "lock_ttu_ms": Option(0.0, non_negative_number,
                          "a lookup-and-lock's claim TTU: when LMCache loads what it locked"),
    "load_timeout_ms": Option(10_000.0, non_negative_number,
                              "how long a load waits for staging before its keys fail"),
    "engine": Option(None, lambda v: str(v), "the engine's name in tempod (default lmcache)"),
}


class TempoL2AdapterConfig(L2AdapterConfigBase):  # type: ignore[misc,valid-type]
    """adapter_params: tempo / tempo_config (the Context) and OPTIONS."""

    def __init__(self, spec: ContextSpec, options: dict[str, Any]) -> None:
        self.spec = spec
        self.options = options

    @classmethod
    def from_dict(cls, d: dict) -> "TempoL2AdapterConfig":
        return cls(*read_settings("TempoL2Adapter adapter_params", d, OPTIONS, "lmcache"))

    @classmethod
    def help(cls) -> str:
        return "TempoL2Adapter adapter_params:\n" + "\n".join(
            ["- tempo (dict): TempoKV settings", "- tempo_config (str): a TempoKV configuration"
             " file"] + [f"- {k}: {o.doc} (default {o.default})" for k, o in OPTIONS.items()])


def _name(key: Any) -> bytes:
    """An ObjectKey as the bytes its object is named by (every field, length-safe)."""
    return repr((bytes(key.chunk_hash), str(key.model_name), int(key.kv_rank),
                 int(getattr(key, "object_group_id", 0)),
                 str(getattr(key, "cache_salt", "")))).encode()


def _kind(key: Any) -> tuple[str, int]:
    """The object's layout class: one model's objects of one group share a size."""
    return str(key.model_name), int(getattr(key, "object_group_id", 0))


@dataclass
class _Lock:
    claim: int | None  # the lookup's claim over its held keys (None: their sizes unknown)
    keys: set[int] = field(default_factory=set)  # its keys still locked


class _Worker:
    """One thread running tasks of one kind in order."""

    def __init__(self, name: str) -> None:
        self._tasks: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (task := self._tasks.get()) is not None:
            try:
                task()
            except Exception:  # a task reports its own failure; never kill the thread
                log.exception("TempoL2Adapter task failed")

    def submit(self, task: Callable[[], None]) -> None:
        self._tasks.put(task)

    def close(self) -> None:
        self._tasks.put(None)
        self._thread.join()


class TempoL2Adapter(L2AdapterInterface):  # type: ignore[misc,valid-type]
    def __init__(self, config: TempoL2AdapterConfig | dict, **kwargs: Any) -> None:
        super().__init__()
        if not isinstance(config, TempoL2AdapterConfig):
            config = TempoL2AdapterConfig.from_dict(dict(config))
        self.lock_ttu_ns = int(config.options["lock_ttu_ms"] * 1e6)
        self.load_timeout_ns = int(config.options["load_timeout_ms"] * 1e6)
        self.ctx = shared_context.acquire(config.spec)
        self.store = Store(self.ctx)
        self.scheme = KeyScheme("lmcache-l2", "objects")
        self._efds = {kind: os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
                      for kind in ("store", "lookup", "load")}
        self._workers = {kind: _Worker(f"tempokv-l2-{kind}") for kind in self._efds}
        self._lock = threading.Lock()  # guards everything below
        self._next_task = 0
        self._stores: dict[int, L2StoreResult] = {}
        self._lookups: dict[int, Any] = {}
        self._loads: dict[int, Any] = {}
        self._locks: dict[int, int] = {}  # object key -> lock count
        self._lock_claims: list[_Lock] = []
        self._sizes: dict[tuple[str, int], int] = {}  # (model, object group) -> bytes
        self.counts = {"stored": 0, "store_errors": 0, "looked_up": 0, "hits": 0, "loaded": 0,
                       "load_errors": 0}

    # --------------------------------------------------------------- event fds ----
    def get_store_event_fd(self) -> int:
        return self._efds["store"]

    def get_lookup_and_lock_event_fd(self) -> int:
        return self._efds["lookup"]

    def get_load_event_fd(self) -> int:
        return self._efds["load"]

    def _task(self, kind: str, work: Callable[[], Any], results: dict[int, Any]) -> int:
        with self._lock:
            self._next_task += 1
            task_id = self._next_task

        def run() -> None:
            result = work()
            with self._lock:
                results[task_id] = result
            os.eventfd_write(self._efds[kind], 1)

        self._workers[kind].submit(run)
        return task_id

    # ------------------------------------------------------------------ stores ----
    def submit_store_task(self, keys: list, objects: list) -> int:
        if len(keys) != len(objects):
            raise ValueError(f"{len(keys)} keys, {len(objects)} objects")
        return self._task("store", lambda: self._store(keys, objects), self._stores)

    def _store(self, keys: list, objects: list) -> L2StoreResult:
        ok, total, stored, sizes = True, 0, [], []
        for key, obj in zip(keys, objects):
            n = int(obj.get_size())
            try:
                self.store.put(self.scheme.named_key(_name(key)),
                               (ctypes.c_char * n).from_address(int(obj.data_ptr)))
            except TempoError as e:  # other bytes under the key (EEXIST), a full store
                log.warning("store of %r: %s", key, e)
                ok = False
                continue
            with self._lock:
                self._sizes[_kind(key)] = n
            total += n
            stored.append(key)
            sizes.append(n)
        self.counts["stored" if ok else "store_errors"] += 1
        if stored:
            self._notify_keys_stored(stored, sizes)
        return L2StoreResult(ok, total)

    def pop_completed_store_tasks(self) -> dict[int, L2StoreResult]:
        with self._lock:
            done, self._stores = self._stores, {}
        return done

    # ----------------------------------------------------------- lookup and lock ----
    def _held(self, ids: list[int]) -> list[bool]:
        """Which objects the store holds: one lookup per run of held keys."""
        held = [False] * len(ids)
        i = 0
        while i < len(ids):
            n = self.store.lookup(ids[i:])
            held[i:i + n] = [True] * n
            i += n + 1
        return held

    def submit_lookup_and_lock_task(self, keys: list) -> int:
        return self._task("lookup", lambda: self._lookup(keys), self._lookups)

    def _lookup(self, keys: list) -> Any:
        ids = [self.scheme.named_key(_name(k)) for k in keys]
        held = self._held(ids)
        bitmap = Bitmap(len(keys))
        objects = []
        with self._lock:
            for i, (key, cid) in enumerate(zip(keys, ids)):
                if held[i]:
                    bitmap.set(i)
                    self._locks[cid] = self._locks.get(cid, 0) + 1
                    size = self._sizes.get(_kind(key))
                    objects.append(None if size is None else KvObject(cid, size))
        claim = None
        if objects and None not in objects:
            try:
                claim = self.ctx.report(objects, self.lock_ttu_ns)
            except TempoError as e:
                log.warning("lookup of %d keys: claim: %s", len(objects), e)
        if objects:
            with self._lock:
                self._lock_claims.append(_Lock(claim, {c for c, h in zip(ids, held) if h}))
        self.counts["looked_up"] += len(keys)
        self.counts["hits"] += len(objects)
        if objects:
            self._notify_keys_accessed([k for k, h in zip(keys, held) if h])
        return bitmap

    def query_lookup_and_lock_result(self, task_id: int) -> Any:
        with self._lock:
            return self._lookups.pop(task_id, None)

    def submit_unlock(self, keys: list) -> None:
        ids = [self.scheme.named_key(_name(k)) for k in keys]
        ended = []
        with self._lock:
            for cid in ids:
                n = self._locks.get(cid, 0)
                if n <= 1:
                    self._locks.pop(cid, None)
                else:
                    self._locks[cid] = n - 1
            for lock in list(self._lock_claims):
                lock.keys.difference_update(ids)
                if not lock.keys:
                    self._lock_claims.remove(lock)
                    if lock.claim is not None:
                        ended.append(lock.claim)
        for claim in ended:
            self._end(claim)

    def _end(self, claim: int) -> None:
        try:
            if self.ctx.query(claim).state in (ClaimState.PLANNED, ClaimState.STAGING,
                                               ClaimState.STAGE_READY):
                self.ctx.cancel(claim)
        except TempoError:
            pass  # ended and forgotten already

    # ------------------------------------------------------------------- loads ----
    def submit_load_task(self, keys: list, objects: list) -> int:
        if len(keys) != len(objects):
            raise ValueError(f"{len(keys)} keys, {len(objects)} objects")
        return self._task("load", lambda: self._load(keys, objects), self._loads)

    def _load(self, keys: list, objects: list) -> Any:
        bitmap = Bitmap(len(keys))
        ids = [self.scheme.named_key(_name(k)) for k in keys]
        held = [i for i, h in enumerate(self._held(ids)) if h]
        if not held:
            return bitmap
        dests = [(int(objects[i].data_ptr), int(objects[i].get_size())) for i in held]
        cid = None
        try:
            cid = self.ctx.report([KvObject(ids[i], n) for i, (_, n) in zip(held, dests)], 0)
            outcome = self.ctx.request_retrieval(cid)
            if outcome == Retrieval.WAIT:
                outcome = self.ctx.wait_ready(cid, self.load_timeout_ns)
            if outcome != Retrieval.READY:
                self.ctx.ordinary_read(cid)  # warms the fast tier; LMCache sees misses
                self.counts["load_errors"] += 1
                return bitmap
            self.ctx.transfer_begin(cid)
        except TempoError as e:  # sizes other than L1's, objects deleted meanwhile
            log.warning("load of %d keys: %s", len(held), e)
            self.counts["load_errors"] += 1
            if cid is not None:
                self._end(cid)
            return bitmap
        try:
            ClaimBytes(claim_extents(self.ctx, cid)).copy_to(dests)
        finally:
            self.ctx.transfer_end(cid)
        for i in held:
            bitmap.set(i)
        with self._lock:
            for i in held:
                self._sizes[_kind(keys[i])] = int(objects[i].get_size())
        self.counts["loaded"] += len(held)
        return bitmap

    def query_load_result(self, task_id: int) -> Any:
        with self._lock:
            return self._loads.pop(task_id, None)

    # ------------------------------------------------------------------- admin ----
    def delete(self, keys: list) -> None:
        """Deletes the keys' objects that no lookup holds locked."""
        gone, sizes = [], []
        for key in keys:
            cid = self.scheme.named_key(_name(key))
            with self._lock:
                if self._locks.get(cid):
                    continue
                size = self._sizes.get(_kind(key), 0)
            try:
                self.store.delete(cid)
            except TempoError:
                continue  # not held
            gone.append(key)
            sizes.append(size)
        if gone:
            self._notify_keys_deleted(gone, sizes)

    def report_status(self) -> dict:
        with self._lock:
            locked = len(self._locks)
        return {"is_healthy": True, "type": "TempoL2Adapter", "device": self.ctx.device,
                "locked_keys": locked, **self.counts}

    def close(self) -> None:
        for worker in self._workers.values():
            worker.close()
        with self._lock:
            claims = [lock.claim for lock in self._lock_claims if lock.claim is not None]
            self._lock_claims.clear()
        for claim in claims:
            self._end(claim)
        for fd in self._efds.values():
            os.close(fd)
        shared_context.release(self.ctx)


__all__ = ["OPTIONS", "TempoL2Adapter", "TempoL2AdapterConfig"]
