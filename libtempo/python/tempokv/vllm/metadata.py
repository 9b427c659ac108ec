"""What the scheduler-side connector sends the workers each step (vLLM pickles it into the
SchedulerOutput): the loads and saves of the step."""

from __future__ import annotations

from dataclasses import dataclass, field

try:  # pragma: no cover - vLLM is not installable here
    from vllm.distributed.kv_transfer.kv_connector.v1.base import (
        KVConnectorMetadata as _MetadataBase,
    )
except ImportError:
    class _MetadataBase:  # type: ignore[no-redef]
        pass


@dataclass
class LoadSpec:
    """Load chunks [first_chunk, first_chunk + chunks) of a request into its blocks.

    block_ids: the request's block table per vLLM KV cache group (from token 0);
    local_tokens: tokens vLLM computed locally (its own prefix cache): their blocks are left
    alone; claims[rank][group]: the claim each rank waits for, one per layer group."""

    req_id: str
    first_chunk: int
    chunks: int
    block_ids: list[list[int]]
    local_tokens: int
    claims: list[list[int]]


@dataclass
class SaveSpec:
    """Save chunks [first_chunk, first_chunk + len(chunk_keys[0])) of a request.

    chunk_keys[k]: the chunks' keys under key scheme k (one per rank, or one for all ranks
    when the KV is replicated: MLA); block_ids as in LoadSpec."""

    req_id: str
    first_chunk: int
    chunk_keys: list[list[int]]
    block_ids: list[list[int]]


@dataclass
class TempoConnectorMetadata(_MetadataBase):  # type: ignore[misc]
    loads: list[LoadSpec] = field(default_factory=list)
    saves: list[SaveSpec] = field(default_factory=list)
