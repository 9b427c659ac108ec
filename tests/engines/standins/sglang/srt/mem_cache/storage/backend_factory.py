"""Stand-in of sglang/srt/mem_cache/storage/backend_factory.py (SGLang 001067fffe33): the
`dynamic` backend, loaded from extra_config and built as cls(storage_config, kwargs)."""

from __future__ import annotations

import importlib
from typing import Any

from sglang.srt.mem_cache.hicache_storage import HiCacheStorage, HiCacheStorageConfig


class StorageBackendFactory:
    @staticmethod
    def _load_backend_class(module_path: str, class_name: str, backend_name: str) -> type:
        module = importlib.import_module(module_path)
        backend_class = getattr(module, class_name)
        if not issubclass(backend_class, HiCacheStorage):
            raise TypeError(f"Backend class {class_name} must inherit from HiCacheStorage")
        return backend_class

    @classmethod
    def create_backend(cls, backend_name: str, storage_config: HiCacheStorageConfig,
                       mem_pool_host: Any, **kwargs: Any) -> HiCacheStorage:
        if backend_name == "dynamic" and storage_config.extra_config is not None:
            config = storage_config.extra_config
            for field in ("backend_name", "module_path", "class_name"):
                if field not in config:
                    raise ValueError(f"Missing required field '{field}' in backend config for "
                                     "'dynamic' backend")
            backend_class = cls._load_backend_class(config["module_path"], config["class_name"],
                                                    config["backend_name"])
            return backend_class(storage_config, kwargs)
        raise ValueError(f"Unknown storage backend '{backend_name}'.")
