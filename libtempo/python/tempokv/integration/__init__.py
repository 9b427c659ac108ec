"""What the engine integrations (tempokv.vllm, tempokv.sglang, tempokv.lmcache) share: their
settings from the engine's own configuration, one Context per process, copies ordered
against the compute stream, claims' extents as tensors, and the kv_hints envelope."""
