"""tempokv: Python binding of libtempo (timely staging of reusable LLM KV caches).

Standard library only: ctypes over libtempo.so (TEMPOKV_LIBRARY names it explicitly).
"""

from .adapter import TempoConnector, chunk_keys
from .binding import (
    ClaimInfo,
    ClaimState,
    ClosedError,
    Config,
    Context,
    KvObject,
    Retrieval,
    TempoError,
    version,
)

__all__ = [
    "ClaimInfo",
    "ClaimState",
    "ClosedError",
    "Config",
    "Context",
    "KvObject",
    "Retrieval",
    "TempoConnector",
    "TempoError",
    "chunk_keys",
    "version",
]
