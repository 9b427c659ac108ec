"""Stand-in of lmcache/v1/distributed/l2_adapters/config.py: adapter config types by name."""

from __future__ import annotations

import abc

_TYPES: dict[str, type] = {}


class L2AdapterConfigBase(abc.ABC):
    @classmethod
    @abc.abstractmethod
    def from_dict(cls, d: dict) -> "L2AdapterConfigBase": ...

    @classmethod
    def help(cls) -> str:
        return ""


def register_l2_adapter_type(name: str, config_cls: type) -> None:
    _TYPES[name] = config_cls


def parse_l2_adapter_config(d: dict) -> L2AdapterConfigBase:
    """One --l2-adapter JSON object: its type names the config class."""
    d = dict(d)
    return _TYPES[d.pop("type")].from_dict(d)
