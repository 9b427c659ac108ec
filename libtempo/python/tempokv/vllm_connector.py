"""A KV connector shaped like vLLM's v1 connector (`KVConnectorBase_V1`), both roles.

Follows vLLM's `vllm/distributed/kv_transfer/kv_connector/v1/base.py` at commit 003df2961dd8
(main, 2026; the v1 API as in vLLM 0.10 and 0.11): the scheduler side answers
`get_num_new_matched_tokens`, `update_state_after_alloc`, `build_connector_meta`,
`request_finished` (any request id, seen or not) and learns of requests early through
`on_new_request`; the worker side takes `register_kv_caches` of paged layers
`[num_blocks, 2, block_size, num_heads, head_dim]`, loads layer by layer
(`start_load_kv` never blocks, `wait_for_layer_load` waits for one layer group's claim
only), saves with `save_kv_layer`/`wait_for_save` (copies out of the paged blocks, then
puts asynchronously) and reports through `get_finished` and
`get_block_ids_with_load_errors`. When vLLM is importable the connector subclasses its
base class; otherwise it stands alone with the same names.

Objects: a prompt is cut into chunks of `chunk_tokens` (a multiple of the block size); each
chunk has one object per layer group, keyed by the key scheme (keys.py), holding the group's
layers' KV of the chunk's blocks: `[layers_per_group, chunk_blocks, 2, block_size, heads,
head_dim]`. A request's hit becomes one claim per layer group, so layer group g's KV is
ready, copied and released independently of the others. Documentation/engines.md shows
the wiring into vLLM.
"""

from __future__ import annotations

import ctypes
import enum
import logging
from dataclasses import dataclass, field
from typing import Any

import torch

from ._native import lib
from .binding import ClaimState, Context, KvObject, Retrieval, TempoError
from .keys import KeyScheme
from .store import Store, Writer

log = logging.getLogger("tempokv.vllm")

try:  # pragma: no cover - vLLM is not installable here
    from vllm.distributed.kv_transfer.kv_connector.v1.base import (
        KVConnectorBase_V1 as _ConnectorBase,
        KVConnectorMetadata as _MetadataBase,
        KVConnectorRole,
    )

    HAVE_VLLM = True
except ImportError:
    HAVE_VLLM = False

    class KVConnectorRole(enum.Enum):  # type: ignore[no-redef]
        SCHEDULER = 0
        WORKER = 1

    class _MetadataBase:  # type: ignore[no-redef]
        pass

    class _ConnectorBase:  # type: ignore[no-redef]
        """The part of vLLM's base class a connector relies on: role and bound metadata."""

        def __init__(self, vllm_config: Any, role: KVConnectorRole,
                     kv_cache_config: Any = None) -> None:
            self._connector_metadata: Any = None
            self._vllm_config = vllm_config
            self._kv_cache_config = kv_cache_config
            self._role = role

        @property
        def role(self) -> KVConnectorRole:
            return self._role

        def bind_connector_metadata(self, connector_metadata: Any) -> None:
            self._connector_metadata = connector_metadata

        def clear_connector_metadata(self) -> None:
            self._connector_metadata = None

        def _get_connector_metadata(self) -> Any:
            assert self._connector_metadata is not None
            return self._connector_metadata

        def has_connector_metadata(self) -> bool:
            return self._connector_metadata is not None


@dataclass(frozen=True)
class TempoConnectorConfig:
    """What the connector runs on: a Context (shared by both roles in one process), the key
    scheme (its layer_groups divide the model's layers), and the paged layout both roles
    agree on: block size, layers, KV heads (of this tensor-parallel rank), head size, dtype."""

    ctx: Context
    scheme: KeyScheme
    block_size: int
    num_layers: int
    num_kv_heads: int
    head_dim: int
    dtype: torch.dtype
    load_timeout_ns: int = 10_000_000_000
    writer_threads: int = 2
    claim_ttu_ns: int = 1_000_000_000  # a new request's TTU until the runtime revises it

    def __post_init__(self) -> None:
        if self.block_size <= 0 or self.scheme.chunk_tokens % self.block_size:
            raise ValueError(f"chunk_tokens ({self.scheme.chunk_tokens}) must be a multiple of "
                             f"block_size ({self.block_size})")
        if self.num_layers <= 0 or self.num_layers % self.scheme.layer_groups:
            raise ValueError(f"{self.num_layers} layers do not split into "
                             f"{self.scheme.layer_groups} layer groups")

    @property
    def chunk_blocks(self) -> int:
        return self.scheme.chunk_tokens // self.block_size

    @property
    def layers_per_group(self) -> int:
        return self.num_layers // self.scheme.layer_groups

    @property
    def object_shape(self) -> tuple[int, ...]:
        """One chunk's KV of one layer group."""
        return (self.layers_per_group, self.chunk_blocks, 2, self.block_size, self.num_kv_heads,
                self.head_dim)

    @property
    def object_bytes(self) -> int:
        return int(torch.Size(self.object_shape).numel()) * torch.empty(
            (), dtype=self.dtype).element_size()


@dataclass
class LoadSpec:
    """Load chunks [first_chunk, first_chunk + len(claims[g]'s manifest)) of a request:
    block ids of those chunks (chunk_blocks each), the leading `skip_blocks` already computed
    locally, one claim per layer group."""

    req_id: str
    first_chunk: int
    block_ids: list[int]
    skip_blocks: int
    claims: list[int]


@dataclass
class SaveSpec:
    """Save chunks of a request: their keys (chunk order) and block ids (chunk_blocks each)."""

    req_id: str
    chunk_keys: list[int]
    block_ids: list[int]


@dataclass
class TempoConnectorMetadata(_MetadataBase):  # type: ignore[misc]
    loads: list[LoadSpec] = field(default_factory=list)
    saves: list[SaveSpec] = field(default_factory=list)


@dataclass
class _Request:
    req_id: str
    tokens: list[int]
    chunk_keys: list[int]
    block_ids: list[int] = field(default_factory=list)
    claims: list[int] = field(default_factory=list)
    claim_first: int = 0
    claim_chunks: int = 0
    done_chunks: int = 0  # chunks saved or loaded: never saved again


def _block_ids(blocks: Any) -> list[int]:
    """Block ids of vLLM's KVCacheBlocks (first KV cache group), a tuple of lists, or a list."""
    if hasattr(blocks, "get_block_ids"):
        blocks = blocks.get_block_ids()
    if isinstance(blocks, tuple):
        blocks = blocks[0] if blocks else []
    return [int(b) for b in blocks]


class TempoKVConnector(_ConnectorBase):  # type: ignore[misc]
    """One class, both roles (vLLM builds one per role)."""

    def __init__(self, vllm_config: Any, role: KVConnectorRole, kv_cache_config: Any = None, *,
                 tempo: TempoConnectorConfig) -> None:
        super().__init__(vllm_config, role, kv_cache_config)
        self.cfg = tempo
        self.ctx = tempo.ctx
        self.scheme = tempo.scheme
        self.store = Store(tempo.ctx)
        # Scheduler side.
        self._requests: dict[str, _Request] = {}
        self._pending_loads: list[LoadSpec] = []
        # Worker side.
        self._layers: list[str] = []
        self._caches: dict[str, torch.Tensor] = {}
        self._writer: Writer | None = None
        self._loaded_groups: set[int] = set()
        self._save_buffers: dict[tuple[str, int, int], torch.Tensor] = {}
        self._load_errors: set[int] = set()
        self.save_errors = 0
        self.loaded_bytes = 0

    # ---------------------------------------------------------------- scheduler side ----
    def _request(self, request: Any) -> _Request:
        rid = request.request_id
        r = self._requests.get(rid)
        if r is None:
            tokens = list(request.prompt_token_ids)
            r = _Request(rid, tokens, self.scheme.chain(tokens))
            self._requests[rid] = r
        return r

    def _held_chunks(self, r: _Request) -> int:
        """Full chunks of the prompt the store holds now (every layer group), leaving at least
        one prompt token to compute (the engine must run a prefill to sample)."""
        usable = min(len(r.chunk_keys), (len(r.tokens) - 1) // self.scheme.chunk_tokens)
        keys = [k for ks in self.scheme.object_keys(r.chunk_keys[:usable]) for k in ks]
        return self.store.lookup(keys) // self.scheme.layer_groups

    def _claim(self, r: _Request, first: int, chunks: int, ttu_ns: int) -> None:
        """One claim per layer group over chunks [first, first + chunks)."""
        self._end_claims(r)
        size = self.cfg.object_bytes
        for g in range(self.scheme.layer_groups):
            objects = [KvObject(self.scheme.object_key(k, g), size)
                       for k in r.chunk_keys[first:first + chunks]]
            cid = self.ctx.report(objects, ttu_ns)
            r.claims.append(cid)
            self.ctx.label(cid, r.req_id.encode()[:39].decode(errors="ignore"))
        r.claim_first, r.claim_chunks = first, chunks

    def _state(self, cid: int) -> ClaimState:
        try:
            return self.ctx.query(cid).state
        except TempoError:
            return ClaimState.RELEASED  # erased after its retention window: ended

    def _end_claims(self, r: _Request) -> None:
        for cid in r.claims:
            if self._state(cid) in (ClaimState.PLANNED, ClaimState.STAGING,
                                    ClaimState.STAGE_READY):
                self.ctx.cancel(cid)
        r.claims = []

    def on_new_request(self, request: Any) -> None:
        """A request entered the waiting queue: its hit becomes PLANNED claims at once
        (metadata only), so staging can be timed while it waits."""
        r = self._request(request)
        held = self._held_chunks(r)
        if held:
            self._claim(r, 0, held, self.cfg.claim_ttu_ns)

    def claims_of(self, request_id: str) -> list[int]:
        """The live claims of a request (one per layer group), for the runtime's per-step call."""
        r = self._requests.get(request_id)
        return list(r.claims) if r else []

    def get_num_new_matched_tokens(self, request: Any,
                                   num_computed_tokens: int) -> tuple[int | None, bool]:
        """Tokens beyond num_computed_tokens whose KV the store holds now; loads happen
        within the forward pass, layer by layer (not asynchronously between steps)."""
        r = self._request(request)
        matched = self._held_chunks(r) * self.scheme.chunk_tokens
        return max(0, matched - num_computed_tokens), False

    def update_state_after_alloc(self, request: Any, blocks: Any, num_external_tokens: int) -> None:
        """Blocks are allocated: with external tokens to load, the claims covering them ask
        for retrieval (committing now if staging has not started)."""
        r = self._request(request)
        r.block_ids = _block_ids(blocks)
        if num_external_tokens <= 0:
            return
        ct = self.scheme.chunk_tokens
        held = self._held_chunks(r)
        local = held * ct - num_external_tokens
        first = local // ct
        live = r.claims and all(self._state(c) in (ClaimState.PLANNED, ClaimState.STAGING,
                                                   ClaimState.STAGE_READY) for c in r.claims)
        if not live or (r.claim_first, r.claim_chunks) != (first, held - first):
            self._claim(r, first, held - first, 0)
        for cid in r.claims:
            try:
                self.ctx.request_retrieval(cid)
            except TempoError as e:  # a failed claim: its blocks are reported as load errors
                log.warning("request %s: retrieval of claim %d: %s", r.req_id, cid, e)
        cb = self.cfg.chunk_blocks
        self._pending_loads.append(LoadSpec(r.req_id, first, r.block_ids[first * cb:held * cb],
                                            local // self.cfg.block_size - first * cb,
                                            list(r.claims)))
        r.done_chunks = max(r.done_chunks, held)

    def build_connector_meta(self, scheduler_output: Any) -> TempoConnectorMetadata:
        """This step's loads, and saves of the prompt chunks the step completes."""
        meta = TempoConnectorMetadata(loads=self._pending_loads)
        self._pending_loads = []
        scheduled = getattr(scheduler_output, "num_scheduled_tokens", {}) or {}
        progress: dict[str, int] = {}
        for new in getattr(scheduler_output, "scheduled_new_reqs", []) or []:
            r = self._requests.get(new.req_id)
            if r is None:
                tokens = list(new.prompt_token_ids)
                r = self._requests[new.req_id] = _Request(new.req_id, tokens,
                                                          self.scheme.chain(tokens))
            r.block_ids = _block_ids(new.block_ids)
            progress[new.req_id] = new.num_computed_tokens + scheduled.get(new.req_id, 0)
        cached = getattr(scheduler_output, "scheduled_cached_reqs", None)
        if cached is not None:
            for i, rid in enumerate(cached.req_ids):
                r = self._requests.get(rid)
                if r is None:
                    continue
                new_blocks = cached.new_block_ids[i]
                if new_blocks:
                    r.block_ids.extend(_block_ids(new_blocks))
                progress[rid] = cached.num_computed_tokens[i] + scheduled.get(rid, 0)
        ct, cb = self.scheme.chunk_tokens, self.cfg.chunk_blocks
        for rid, done_tokens in progress.items():
            r = self._requests[rid]
            end = min(len(r.chunk_keys), min(done_tokens, len(r.tokens)) // ct)
            if end <= r.done_chunks:
                continue
            keys = r.chunk_keys[r.done_chunks:end]
            blocks = r.block_ids[r.done_chunks * cb:end * cb]
            if len(blocks) == len(keys) * cb:
                meta.saves.append(SaveSpec(rid, keys, blocks))
                r.done_chunks = end
        return meta

    def request_finished(self, request: Any, block_ids: list[int]) -> tuple[bool, dict | None]:
        """Called once per request, any id: ends claims that were never transferred (an
        abort, or a request that never loaded). Saves are copied out of the blocks within
        the step, so the blocks may be freed now."""
        r = self._requests.pop(getattr(request, "request_id", request), None)
        if r is not None:
            self._end_claims(r)
        return False, None

    # ------------------------------------------------------------------- worker side ----
    def register_kv_caches(self, kv_caches: dict[str, torch.Tensor]) -> None:
        """The paged KV of every layer, in model order: [num_blocks, 2, block_size, heads,
        head_dim] of the configured dtype."""
        c = self.cfg
        if len(kv_caches) != c.num_layers:
            raise ValueError(f"register_kv_caches: {len(kv_caches)} layers, configured {c.num_layers}")
        for name, t in kv_caches.items():
            if (len(t.shape) != 5 or tuple(t.shape[1:]) != (2, c.block_size, c.num_kv_heads, c.head_dim)
                    or t.dtype != c.dtype):
                raise ValueError(f"register_kv_caches: layer {name} is {list(t.shape)} {t.dtype}, "
                                 f"expected [num_blocks, 2, {c.block_size}, {c.num_kv_heads}, "
                                 f"{c.head_dim}] {c.dtype}")
        self._layers = list(kv_caches)
        self._caches = dict(kv_caches)
        self._writer = Writer(self.ctx, c.writer_threads)

    def _group_of(self, layer_name: str) -> tuple[int, int]:
        i = self._layers.index(layer_name)
        return divmod(i, self.cfg.layers_per_group)

    def start_load_kv(self, forward_context: Any, **kwargs: Any) -> None:
        """Never blocks: each layer group is waited for and copied by wait_for_layer_load."""
        self._loaded_groups = set()

    def _object_views(self, cid: int, chunks: int) -> list[torch.Tensor]:
        """The claim's objects in the fast tier as tensors of the object shape (in place; an
        object split over extents is gathered into one tensor)."""
        ptr = self.ctx._enter()
        try:
            extents = self.ctx._extents(ptr, cid)
        finally:
            lib.tempo_ctx_unref(ptr)
        pieces = [torch.frombuffer((ctypes.c_uint8 * e.bytes).from_address(e.addr),
                                   dtype=torch.uint8) for e in extents if e.bytes]
        flat = pieces[0] if len(pieces) == 1 else torch.cat(pieces)
        if flat.numel() != chunks * self.cfg.object_bytes:
            raise TempoError(5, f"claim {cid}: {flat.numel()} bytes, expected "
                                f"{chunks * self.cfg.object_bytes}")
        return list(flat.view(self.cfg.dtype).view((chunks,) + self.cfg.object_shape))

    def _load_group(self, g: int, spec: LoadSpec) -> None:
        cid = spec.claims[g]
        chunks = len(spec.block_ids) // self.cfg.chunk_blocks
        wanted = spec.block_ids[spec.skip_blocks:]
        try:
            outcome = self.ctx.wait_ready(cid, self.cfg.load_timeout_ns)
        except TempoError as e:
            log.warning("request %s: claim %d not ready (%s): recomputing", spec.req_id, cid, e)
            self._load_errors.update(wanted)
            return
        if outcome != Retrieval.READY:
            try:
                self.ctx.ordinary_read(cid)  # warms the fast tier; the engine recomputes
            except TempoError as e:
                log.warning("request %s: ordinary read of claim %d: %s", spec.req_id, cid, e)
            self._load_errors.update(wanted)
            return
        self.ctx.transfer_begin(cid)
        try:
            objects = self._object_views(cid, chunks)
            cb = self.cfg.chunk_blocks
            for c, obj in enumerate(objects):
                lo = max(0, spec.skip_blocks - c * cb)
                if lo >= cb:
                    continue
                dst = torch.tensor(spec.block_ids[c * cb + lo:(c + 1) * cb], dtype=torch.long)
                for j in range(self.cfg.layers_per_group):
                    cache = self._caches[self._layers[g * self.cfg.layers_per_group + j]]
                    cache.index_copy_(0, dst.to(cache.device),
                                      obj[j, lo:].to(cache.device, non_blocking=True))
            self.loaded_bytes += chunks * self.cfg.object_bytes
        finally:
            self.ctx.transfer_end(cid)

    def wait_for_layer_load(self, layer_name: str) -> None:
        """Blocks until this layer's group is in the paged blocks of every load of the step."""
        if not self.has_connector_metadata():
            return
        g, _ = self._group_of(layer_name)
        if g in self._loaded_groups:
            return
        self._loaded_groups.add(g)
        for spec in self._get_connector_metadata().loads:
            self._load_group(g, spec)

    def save_kv_layer(self, layer_name: str, kv_layer: torch.Tensor, attn_metadata: Any,
                      **kwargs: Any) -> None:
        """Copies this layer's blocks of every save into the chunk objects' host buffers; a
        group's objects are put (asynchronously) once its last layer is copied."""
        if not self.has_connector_metadata() or self._writer is None:
            return
        g, j = self._group_of(layer_name)
        cb = self.cfg.chunk_blocks
        for spec in self._get_connector_metadata().saves:
            for c, key in enumerate(spec.chunk_keys):
                buf = self._save_buffers.get((spec.req_id, c, g))
                if buf is None:
                    buf = self._save_buffers[(spec.req_id, c, g)] = torch.empty(
                        self.cfg.object_shape, dtype=self.cfg.dtype)
                src = torch.tensor(spec.block_ids[c * cb:(c + 1) * cb], dtype=torch.long)
                buf[j].copy_(kv_layer.index_select(0, src.to(kv_layer.device)))
                if j == self.cfg.layers_per_group - 1:
                    self._writer.put(self.scheme.object_key(key, g),
                                     self._save_buffers.pop((spec.req_id, c, g)))

    def wait_for_save(self) -> None:
        """The blocks are copied out by now (save_kv_layer copies synchronously); the puts go
        on in the background, so the step never waits on the store."""
        if self._save_buffers:
            log.warning("wait_for_save: %d objects missed layers; dropped", len(self._save_buffers))
            self._save_buffers.clear()

    def get_finished(self, finished_req_ids: set[str]) -> tuple[set[str] | None, set[str] | None]:
        """(sending, receiving): loads finish within the step and saves never hold blocks, so
        neither set has members; the puts that completed are collected here."""
        if self._writer is not None:
            for done in self._writer.completions():
                if done.error:
                    self.save_errors += 1
                    log.warning("put of key %#x failed: errno %d", done.key, done.error)
        return None, None

    def get_block_ids_with_load_errors(self) -> set[int]:
        """Blocks whose load failed (not ready in time, or ordinary path): vLLM recomputes them."""
        errors, self._load_errors = self._load_errors, set()
        return errors

    def flush(self, timeout_ns: int = 60_000_000_000) -> None:
        """Waits for every queued put (tests, shutdown)."""
        if self._writer is not None:
            for done in self._writer.wait(timeout_ns):
                if done.error:
                    self.save_errors += 1

    def shutdown(self) -> None:
        if self._writer is not None:
            self.flush()
            self._writer.close()
            self._writer = None


__all__ = ["HAVE_VLLM", "KVConnectorRole", "LoadSpec", "SaveSpec", "TempoConnectorConfig",
           "TempoConnectorMetadata", "TempoKVConnector"]
