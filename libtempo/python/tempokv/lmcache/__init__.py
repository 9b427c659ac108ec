"""TempoKV under LMCache's L1 (multiprocess server): `--l2-adapter '{"type": "plugin",
"module_path": "tempokv.lmcache", "class_name": "TempoL2Adapter", "adapter_params": {...}}'`
(Documentation/engines.md, LMCache)."""

from .adapter import OPTIONS, TempoL2Adapter, TempoL2AdapterConfig

__all__ = ["OPTIONS", "TempoL2Adapter", "TempoL2AdapterConfig"]
