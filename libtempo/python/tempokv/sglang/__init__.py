"""TempoKV under SGLang HiCache: `--hicache-storage-backend dynamic` with
`{"backend_name": "tempokv", "module_path": "tempokv.sglang", "class_name":
"TempoHiCacheStorage", "interface_v1": 1, ...}` (Documentation/engines.md, SGLang)."""

from .storage import OPTIONS, TempoHiCacheStorage

__all__ = ["OPTIONS", "TempoHiCacheStorage"]
