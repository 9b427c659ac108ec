"""Stand-in of lmcache/v1/distributed/l2_adapters/factory.py."""

from __future__ import annotations

_BY_NAME: dict[str, object] = {}


def register_l2_adapter_factory(name: str, factory) -> None:
    _BY_NAME[name] = factory


def create_l2_adapter_from_registry(config, **kwargs):
    from .config import _TYPES
    for name, cls in _TYPES.items():
        if type(config) is cls:
            return _BY_NAME[name](config, **kwargs)
    raise ValueError(f"no factory for {type(config).__name__}")
