"""Stand-in of lmcache.v1.distributed.api.ObjectKey (LMCache 000e8777a114)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ObjectKey:
    chunk_hash: bytes
    model_name: str
    kv_rank: int
    object_group_id: int = 0
    cache_salt: str = ""

    def __post_init__(self) -> None:
        if "@" in self.model_name:
            raise ValueError(f"model_name must not contain '@' (got {self.model_name!r})")
