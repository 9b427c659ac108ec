"""TempoKV under vLLM: `--kv-transfer-config '{"kv_connector": "TempoKVConnector",
"kv_connector_module_path": "tempokv.vllm", ...}'` (Documentation/engines.md, vLLM)."""

from .connector import HAVE_VLLM, OPTIONS, KVConnectorRole, TempoKVConnector
from .metadata import LoadSpec, SaveSpec, TempoConnectorMetadata

__all__ = ["HAVE_VLLM", "OPTIONS", "KVConnectorRole", "LoadSpec", "SaveSpec",
           "TempoConnectorMetadata", "TempoKVConnector"]
