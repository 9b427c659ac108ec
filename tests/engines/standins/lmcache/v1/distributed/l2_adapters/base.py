"""Stand-in of lmcache/v1/distributed/l2_adapters/base.py (LMCache 000e8777a114): the
non-blocking L2 adapter interface (store, lookup and lock, unlock, load; an event fd each)."""

from __future__ import annotations

from abc import ABC, abstractmethod

L2TaskId = int


class L2AdapterInterface(ABC):
    def __init__(self, max_capacity_bytes: int = 0) -> None:
        self._listeners = []
        self._max_capacity_bytes = max_capacity_bytes

    @abstractmethod
    def get_store_event_fd(self) -> int: ...

    @abstractmethod
    def get_lookup_and_lock_event_fd(self) -> int: ...

    @abstractmethod
    def get_load_event_fd(self) -> int: ...

    @abstractmethod
    def submit_store_task(self, keys, objects) -> L2TaskId: ...

    @abstractmethod
    def pop_completed_store_tasks(self) -> dict: ...

    @abstractmethod
    def submit_lookup_and_lock_task(self, keys) -> L2TaskId: ...

    @abstractmethod
    def query_lookup_and_lock_result(self, task_id): ...

    @abstractmethod
    def submit_unlock(self, keys) -> None: ...

    @abstractmethod
    def submit_load_task(self, keys, objects) -> L2TaskId: ...

    @abstractmethod
    def query_load_result(self, task_id): ...

    def register_listener(self, listener) -> None:
        self._listeners.append(listener)

    def _notify_keys_stored(self, keys, sizes) -> None:
        for listener in self._listeners:
            listener.on_l2_keys_stored(keys, sizes)

    def _notify_keys_accessed(self, keys) -> None:
        for listener in self._listeners:
            listener.on_l2_keys_accessed(keys)

    def _notify_keys_deleted(self, keys, sizes) -> None:
        for listener in self._listeners:
            listener.on_l2_keys_deleted(keys)

    def delete(self, keys) -> None:
        return None

    @abstractmethod
    def close(self) -> None: ...

    def report_status(self) -> dict:
        return {"is_healthy": True}
