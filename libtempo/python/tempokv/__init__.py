"""tempokv: Python binding of libtempo (timely staging of reusable LLM KV caches).

The binding is standard library only: ctypes over libtempo.so (TEMPOKV_LIBRARY names it
explicitly). For engines (Documentation/engines.md): tempokv.keys (the key scheme),
tempokv.store (lookup, idempotent and asynchronous puts), tempokv.runtime (the per-step
call), and the integrations each engine loads: tempokv.vllm and tempokv.sglang (with
torch), tempokv.lmcache.
"""

from .binding import (
    ClaimInfo,
    ClaimState,
    ClosedError,
    Config,
    ConfigError,
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
    "ConfigError",
    "Context",
    "KvObject",
    "Retrieval",
    "TempoError",
    "version",
]
