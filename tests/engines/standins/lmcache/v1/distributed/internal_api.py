"""Stand-in of lmcache.v1.distributed.internal_api (LMCache 000e8777a114): a store task's
result and the listener L2 adapters notify."""

from __future__ import annotations

import abc


class L2AdapterListener(abc.ABC):
    @abc.abstractmethod
    def on_l2_keys_stored(self, keys, sizes): ...

    @abc.abstractmethod
    def on_l2_keys_accessed(self, keys): ...

    @abc.abstractmethod
    def on_l2_keys_deleted(self, keys): ...


class L2StoreResult(int):
    """>= 0: success, the bytes transferred; -1: failure."""

    def __new__(cls, success: bool, bytes_transferred: int) -> "L2StoreResult":
        if bytes_transferred < 0:
            raise ValueError(f"bytes_transferred must be >= 0, got {bytes_transferred}")
        return super().__new__(cls, bytes_transferred if success else -1)

    def is_successful(self) -> bool:
        return int(self) >= 0

    def bytes_transferred(self) -> int:
        return max(int(self), 0)
