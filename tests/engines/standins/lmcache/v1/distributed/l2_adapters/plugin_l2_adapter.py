"""Stand-in of lmcache/v1/distributed/l2_adapters/plugin_l2_adapter.py (LMCache
000e8777a114): an adapter class loaded from module_path and class_name, built with its own
config class (class_name + "Config" by convention) from adapter_params."""

from __future__ import annotations

import importlib

from .base import L2AdapterInterface
from .config import L2AdapterConfigBase, register_l2_adapter_type
from .factory import register_l2_adapter_factory


class PluginL2AdapterConfig(L2AdapterConfigBase):
    def __init__(self, module_path, class_name, adapter_params=None, config_class_name=None):
        self.module_path = module_path
        self.class_name = class_name
        self.adapter_params = adapter_params or {}
        self.config_class_name = config_class_name

    @classmethod
    def from_dict(cls, d: dict) -> "PluginL2AdapterConfig":
        for field in ("module_path", "class_name"):
            if not isinstance(d.get(field), str) or not d[field]:
                raise ValueError(f"{field} must be a non-empty string")
        params = d.get("adapter_params", {})
        if not isinstance(params, dict):
            raise ValueError("adapter_params must be a dict")
        return cls(d["module_path"], d["class_name"], params, d.get("config_class_name"))


def _create_plugin_adapter(config: PluginL2AdapterConfig, l1_memory_desc=None):
    module = importlib.import_module(config.module_path)
    adapter_cls = getattr(module, config.class_name)
    if not (isinstance(adapter_cls, type) and issubclass(adapter_cls, L2AdapterInterface)):
        raise TypeError(f"{config.module_path}.{config.class_name} is not a subclass of "
                        "L2AdapterInterface")
    kwargs = {} if l1_memory_desc is None else {"l1_memory_desc": l1_memory_desc}
    for name in (config.config_class_name, config.class_name + "Config",
                 getattr(adapter_cls, "config_class_name", None)):
        cfg_cls = getattr(module, name, None) if name else None
        if isinstance(cfg_cls, type) and issubclass(cfg_cls, L2AdapterConfigBase):
            return adapter_cls(cfg_cls.from_dict(config.adapter_params), **kwargs)
    return adapter_cls(config.adapter_params, **kwargs)


register_l2_adapter_type("plugin", PluginL2AdapterConfig)
register_l2_adapter_factory("plugin", _create_plugin_adapter)
