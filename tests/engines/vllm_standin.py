"""A stand-in for the parts of vLLM a KV connector meets, written for these tests from vLLM's
public code at commit 003df2961dd8 (main, 2026) and the v0.10-v0.11 releases; none of vLLM's
code is copied. vLLM cannot be installed here (no PyPI).

* KVConnectorFactory.create_connector: the class from kv_connector_module_path and
  kv_connector, built as cls(config, role, kv_cache_config), or cls(config, role) when the
  class takes no kv_cache_config; refused when the hybrid KV cache manager is on and the
  class is not SupportsHMA (vllm/distributed/kv_transfer/kv_connector/factory.py).
* Scheduler: FCFS with a token budget (chunked prefill), blocks allocated for the tokens a
  step schedules, the connector asked at admission (get_num_new_matched_tokens, then
  update_state_after_alloc with the request's whole block table), preemption (blocks freed,
  num_computed_tokens 0, back to the front of the queue), a resumed request sent with its
  whole new table in scheduled_cached_reqs (resumed_req_ids; resumed_from_preemption before
  late 2025), build_connector_meta before num_computed_tokens advances,
  update_connector_output after each step, request_finished(_all_groups) at the end
  (vllm/v1/core/sched/scheduler.py, output.py).
* ModelRunner: one per worker process, its paged KV cache in an attention backend's layout,
  registered once; each step binds the metadata, start_load_kv, per layer
  wait_for_layer_load / writes the KV of the tokens it computes / save_kv_layer, then
  wait_for_save, get_finished, get_block_ids_with_load_errors, clear_connector_metadata
  (vllm/v1/worker/kv_connector_model_runner_mixin.py, attention/layer.py). Its block tables
  follow the scheduler's as vLLM's InputBatch does.

The model's KV is a known function of (layer, position, token, global head) in small
integers, exact in every cache dtype used, so every paged block can be compared."""

from __future__ import annotations

import enum
import importlib
import inspect
import itertools
import time
from collections import deque
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import torch

# ------------------------------------------------------------------- configuration ----


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


class KVConnectorRole(enum.Enum):
    SCHEDULER = 0
    WORKER = 1


class RequestStatus(enum.Enum):
    WAITING = 1
    RUNNING = 2
    PREEMPTED = 3
    FINISHED_STOPPED = 4
    FINISHED_LENGTH_CAPPED = 5
    FINISHED_ABORTED = 6


@dataclass
class ModelSpec:
    """A model as vLLM's ModelConfig describes it (whole model, all ranks)."""

    name: str = "test/model"
    layers: int = 4
    kv_heads: int = 4  # all ranks together
    head_size: int = 8
    dtype: torch.dtype = torch.float16
    use_mla: bool = False  # one latent head, head_size = latent width
    max_model_len: int = 4096


class ModelConfig:
    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self.model = spec.name
        self.dtype = spec.dtype
        self.use_mla = spec.use_mla
        self.max_model_len = spec.max_model_len

    def get_num_layers(self, parallel_config: Any) -> int:
        return self.spec.layers

    def get_num_kv_heads(self, parallel_config: Any) -> int:
        return 1 if self.spec.use_mla else self.spec.kv_heads // parallel_config.tensor_parallel_size

    def get_head_size(self) -> int:
        return self.spec.head_size


# KV cache specs (vllm/v1/kv_cache_interface.py): the connector reads block_size,
# num_kv_heads, head_size, dtype and the class hierarchy.
@dataclass(frozen=True)
class AttentionSpec:
    block_size: int
    num_kv_heads: int
    head_size: int
    dtype: torch.dtype

    @property
    def real_page_size_bytes(self) -> int:
        return 2 * self.block_size * self.num_kv_heads * self.head_size * _itemsize(self.dtype)


class FullAttentionSpec(AttentionSpec):
    pass


@dataclass(frozen=True)
class SlidingWindowSpec(AttentionSpec):
    sliding_window: int = 0


class MLAAttentionSpec(FullAttentionSpec):
    @property
    def real_page_size_bytes(self) -> int:
        return self.block_size * self.num_kv_heads * self.head_size * _itemsize(self.dtype)


@dataclass(frozen=True)
class MambaSpec:
    block_size: int


@dataclass
class KVCacheGroupSpec:
    layer_names: list[str]
    kv_cache_spec: Any


@dataclass
class KVCacheConfig:
    num_blocks: int
    kv_cache_tensors: list = field(default_factory=list)
    kv_cache_groups: list[KVCacheGroupSpec] = field(default_factory=list)


def layer_name(i: int) -> str:
    return f"model.layers.{i}.self_attn.attn"


def make_kv_cache_config(model: ModelSpec, tp: int, block_size: int, num_blocks: int,
                         sliding_layers: tuple[int, ...] = (), draft_layers: int = 0,
                         dtype: torch.dtype | None = None) -> KVCacheConfig:
    """The KVCacheConfig vLLM's workers and scheduler agree on: full-attention layers in group
    0, sliding-window layers (HMA) in group 1, EAGLE/MTP draft layers numbered after the
    target's in group 0."""
    dtype = dtype or model.dtype
    heads = 1 if model.use_mla else model.kv_heads // tp
    if model.use_mla:
        spec: Any = MLAAttentionSpec(block_size, heads, model.head_size, dtype)
    else:
        spec = FullAttentionSpec(block_size, heads, model.head_size, dtype)
    full = [layer_name(i) for i in range(model.layers + draft_layers) if i not in sliding_layers]
    groups = [KVCacheGroupSpec(full, spec)]
    if sliding_layers:
        groups.append(KVCacheGroupSpec([layer_name(i) for i in sliding_layers],
                                       SlidingWindowSpec(block_size, heads, model.head_size,
                                                         dtype, 4 * block_size)))
    return KVCacheConfig(num_blocks, [], groups)


def make_vllm_config(model: ModelSpec, extra: dict, *, tp: int = 1, block_size: int = 16,
                     cache_dtype: str = "auto", max_num_seqs: int = 4, hma: bool = False,
                     speculative: bool = False, engine_id: str = "3f1c2d9e-engine",
                     module: str = "tempokv.vllm", connector: str = "TempoKVConnector") -> Any:
    kvt = SimpleNamespace(kv_connector=connector, kv_connector_module_path=module,
                          kv_role="kv_both", kv_connector_extra_config=extra,
                          engine_id=engine_id, is_kv_producer=True)
    return SimpleNamespace(
        model_config=ModelConfig(model),
        cache_config=SimpleNamespace(block_size=block_size, cache_dtype=cache_dtype,
                                     enable_prefix_caching=False),
        parallel_config=SimpleNamespace(tensor_parallel_size=tp, pipeline_parallel_size=1,
                                        data_parallel_size=1, data_parallel_rank=0, rank=0),
        scheduler_config=SimpleNamespace(max_num_seqs=max_num_seqs, policy="fcfs",
                                         disable_hybrid_kv_cache_manager=not hma),
        speculative_config=SimpleNamespace(num_speculative_tokens=1) if speculative else None,
        kv_transfer_config=kvt)


class KVConnectorFactory:
    """vLLM's factory: import, pick the constructor signature, check HMA support."""

    @staticmethod
    def create_connector(config: Any, role: Any, kv_cache_config: Any = None) -> Any:
        kvt = config.kv_transfer_config
        module = importlib.import_module(kvt.kv_connector_module_path)
        cls = getattr(module, kvt.kv_connector)
        params = inspect.signature(cls.__init__).parameters
        compat = "kv_cache_config" not in params
        if not config.scheduler_config.disable_hybrid_kv_cache_manager:
            if not any(c.__name__ == "SupportsHMA" for c in cls.__mro__):
                raise ValueError(f"Connector {cls.__name__} does not support HMA but HMA is "
                                 "enabled. Please set `--disable-hybrid-kv-cache-manager`.")
        return cls(config, role) if compat else cls(config, role, kv_cache_config)


# ------------------------------------------------------------------------ requests ----


@dataclass
class SamplingParams:
    max_tokens: int = 4
    ignore_eos: bool = True


class Request:
    _arrivals = itertools.count()

    def __init__(self, request_id: str, prompt_token_ids: list[int], max_tokens: int = 2,
                 kv_hints: Any = None) -> None:
        self.request_id = request_id
        self.prompt_token_ids = list(prompt_token_ids)
        self.sampling_params = SamplingParams(max_tokens, True)
        self.arrival_time = time.time() + next(self._arrivals) * 1e-6
        self.priority = 0
        self.status = RequestStatus.WAITING
        self.num_computed_tokens = 0
        self.output_token_ids: list[int] = []
        self.kv_hints = kv_hints

    @property
    def num_prompt_tokens(self) -> int:
        return len(self.prompt_token_ids)

    @property
    def all_token_ids(self) -> list[int]:
        return self.prompt_token_ids + self.output_token_ids

    @property
    def num_tokens(self) -> int:
        return len(self.all_token_ids)

    @property
    def num_output_tokens(self) -> int:
        return len(self.output_token_ids)


class KVCacheBlocks:
    def __init__(self, blocks: tuple[list[int], ...]) -> None:
        self.blocks = blocks

    def get_block_ids(self, allow_none: bool = False):  # type: ignore[no-untyped-def]
        if allow_none and not any(self.blocks):
            return None
        return tuple(list(g) for g in self.blocks)


@dataclass
class NewRequestData:
    req_id: str
    prompt_token_ids: list[int]
    block_ids: tuple[list[int], ...]
    num_computed_tokens: int


@dataclass
class CachedRequestData:
    req_ids: list[str]
    resumed_req_ids: set[str]
    new_token_ids: list[list[int]]
    new_block_ids: list[tuple[list[int], ...] | None]
    num_computed_tokens: list[int]
    num_output_tokens: list[int]


@dataclass
class CachedRequestData2025:
    """Before late 2025: a flag per request instead of resumed_req_ids."""

    req_ids: list[str]
    resumed_from_preemption: list[bool]
    new_token_ids: list[list[int]]
    new_block_ids: list[tuple[list[int], ...] | None]
    num_computed_tokens: list[int]


@dataclass
class SchedulerOutput:
    scheduled_new_reqs: list[NewRequestData]
    scheduled_cached_reqs: Any
    num_scheduled_tokens: dict[str, int]
    total_num_scheduled_tokens: int
    finished_req_ids: set[str]
    kv_connector_metadata: Any = None


class BlockPool:
    """Block 0 is the null block, as in vLLM's BlockPool."""

    def __init__(self, num_blocks: int) -> None:
        self.free = deque(range(1, num_blocks))

    def allocate(self, n: int) -> list[int] | None:
        if n > len(self.free):
            return None
        return [self.free.popleft() for _ in range(n)]

    def release(self, ids: list[int]) -> None:
        self.free.extend(ids)


class Scheduler:
    def __init__(self, config: Any, kv_cache_config: KVCacheConfig, connector: Any,
                 token_budget: int = 512, resumed_flags: bool = False) -> None:
        self.config = config
        self.block_size = config.cache_config.block_size
        self.groups = len(kv_cache_config.kv_cache_groups) or 1
        self.pool = BlockPool(kv_cache_config.num_blocks)
        self.connector = connector
        self.budget = token_budget
        self.max_running = config.scheduler_config.max_num_seqs
        self.resumed_flags = resumed_flags  # CachedRequestData as before late 2025
        self.waiting: deque[Request] = deque()
        self.running: list[Request] = []
        self.blocks: dict[str, list[list[int]]] = {}
        self.finished: set[str] = set()
        self.done: list[Request] = []

    def add_request(self, request: Request) -> None:
        self.waiting.append(request)
        self.connector.on_new_request(request)

    def _grow(self, request: Request, tokens: int) -> list[list[int]] | None:
        """Blocks for the request's first `tokens` tokens, per group: the new ones."""
        have = self.blocks.setdefault(request.request_id, [[] for _ in range(self.groups)])
        need = -(-tokens // self.block_size) - len(have[0])
        if need <= 0:
            return [[] for _ in range(self.groups)]
        new = self.pool.allocate(need * self.groups)
        if new is None:
            return None
        out = [new[g * need:(g + 1) * need] for g in range(self.groups)]
        for g in range(self.groups):
            have[g].extend(out[g])
        return out

    def preempt(self, request: Request) -> None:
        """What vLLM does when blocks run out: the request gives them all back and waits at
        the front of the queue to be recomputed."""
        self.running.remove(request)
        for ids in self.blocks.pop(request.request_id):
            self.pool.release(ids)
        request.status = RequestStatus.PREEMPTED
        request.num_computed_tokens = 0
        self.waiting.appendleft(request)

    def schedule(self) -> SchedulerOutput:
        budget = self.budget
        scheduled: dict[str, int] = {}
        cached_ids, cached_blocks, resumed = [], [], set()
        for request in list(self.running):
            n = min(budget, request.num_tokens - request.num_computed_tokens)
            if n <= 0:
                continue
            new = self._grow(request, request.num_computed_tokens + n)
            if new is None:
                continue
            scheduled[request.request_id] = n
            budget -= n
            cached_ids.append(request)
            cached_blocks.append(tuple(new))
        new_reqs = []
        while self.waiting and budget > 0 and len(self.running) < self.max_running:
            request = self.waiting[0]
            external, load_async = self.connector.get_num_new_matched_tokens(request, 0)
            assert load_async is False
            n = min(budget, request.num_tokens - external)
            if self._grow(request, external + n) is None:
                break
            self.waiting.popleft()
            blocks = self.blocks[request.request_id]
            self.connector.update_state_after_alloc(request, KVCacheBlocks(tuple(blocks)),
                                                    external)
            request.num_computed_tokens = external
            scheduled[request.request_id] = n
            budget -= n
            was = request.status
            request.status = RequestStatus.RUNNING
            self.running.append(request)
            if was == RequestStatus.PREEMPTED:  # resumed: its whole new table
                resumed.add(request.request_id)
                cached_ids.append(request)
                cached_blocks.append(tuple(list(g) for g in blocks))
            else:
                new_reqs.append(NewRequestData(request.request_id, request.prompt_token_ids,
                                               tuple(list(g) for g in blocks), external))
        if self.resumed_flags:
            cached: Any = CachedRequestData2025(
                [r.request_id for r in cached_ids], [r.request_id in resumed for r in cached_ids],
                [[] for _ in cached_ids], list(cached_blocks),
                [r.num_computed_tokens for r in cached_ids])
        else:
            cached = CachedRequestData([r.request_id for r in cached_ids], resumed,
                                       [[] for _ in cached_ids], list(cached_blocks),
                                       [r.num_computed_tokens for r in cached_ids],
                                       [r.num_output_tokens for r in cached_ids])
        out = SchedulerOutput(new_reqs, cached, scheduled, sum(scheduled.values()),
                              self.finished)
        self.finished = set()
        out.kv_connector_metadata = self.connector.build_connector_meta(out)
        for rid, n in scheduled.items():
            request = next(r for r in self.running if r.request_id == rid)
            request.num_computed_tokens += n
        return out

    def update_from_output(self, out: SchedulerOutput) -> None:
        """The step ran: a request whose prompt is done samples a token; at max_tokens it
        finishes and its blocks go back (after request_finished, as in vLLM)."""
        for request in list(self.running):
            if request.request_id not in out.num_scheduled_tokens:
                continue
            if request.num_computed_tokens >= request.num_tokens:
                request.output_token_ids.append(7 + request.num_output_tokens)
            if request.num_output_tokens >= request.sampling_params.max_tokens:
                request.status = RequestStatus.FINISHED_LENGTH_CAPPED
                self.running.remove(request)
                self._free(request)
        self.connector.update_connector_output(SimpleNamespace(finished_sending=None,
                                                               finished_recving=None))

    def _free(self, request: Request) -> None:
        blocks = self.blocks.pop(request.request_id, [[]])
        if any(c.__name__ == "SupportsHMA" for c in type(self.connector).__mro__):
            self.connector.request_finished_all_groups(request, tuple(blocks))
        else:
            self.connector.request_finished(request, blocks[0])
        for ids in blocks:
            self.pool.release(ids)
        self.finished.add(request.request_id)
        self.done.append(request)

    def abort(self, request: Request) -> None:
        if request in self.waiting:
            self.waiting.remove(request)
        if request in self.running:
            self.running.remove(request)
        request.status = RequestStatus.FINISHED_ABORTED
        self._free(request)


# ---------------------------------------------------------------------- the model ----


def model_kv(layer: int, positions: torch.Tensor, tokens: torch.Tensor, heads: torch.Tensor,
             head_size: int, kv: int) -> torch.Tensor:
    """K (kv 0) or V (kv 1) of tokens at positions: [n, len(heads), head_size], integers in
    [0, 251) (exact in fp16, bf16 and a byte), of period 251 in the position."""
    n = positions.numel()
    d = torch.arange(head_size).view(1, 1, head_size)
    h = heads.view(1, -1, 1)
    return (layer * 7 + positions.view(n, 1, 1) * 3 + tokens.view(n, 1, 1) * 11 + kv * 5
            + h * 13 + d * 17) % 251


def model_latent(layer: int, positions: torch.Tensor, tokens: torch.Tensor,
                 width: int) -> torch.Tensor:
    """MLA's latent vector of each token: [n, width], the same on every rank."""
    n = positions.numel()
    d = torch.arange(width).view(1, width)
    return (layer * 5 + positions.view(n, 1) * 7 + tokens.view(n, 1) * 3 + d * 19) % 251


class ModelRunner:
    """A worker: its connector, its layers' caches in one backend's layout, its block
    tables, and a forward pass that writes the model's KV of the tokens it computes."""

    LAYOUTS = ("kv-first", "blocks-first", "packed", "latent")

    def __init__(self, config: Any, kv_cache_config: KVCacheConfig, rank: int, layout: str,
                 cache_dtype: torch.dtype | None = None, connector_kv_cache_config: Any = "same"
                 ) -> None:
        self.config = config
        config.parallel_config.rank = rank  # vLLM's worker sets it
        self.rank = rank
        self.tp = config.parallel_config.tensor_parallel_size
        spec = config.model_config.spec
        self.spec = spec
        self.layout = layout
        self.block_size = config.cache_config.block_size
        self.dtype = cache_dtype or spec.dtype
        self.heads = 1 if spec.use_mla else spec.kv_heads // self.tp
        self.head_base = 0 if spec.use_mla else rank * self.heads
        ccfg = kv_cache_config if connector_kv_cache_config == "same" else connector_kv_cache_config
        self.connector = KVConnectorFactory.create_connector(config, KVConnectorRole.WORKER, ccfg)
        self.group_of: dict[str, int] = {}
        for g, group in enumerate(kv_cache_config.kv_cache_groups):
            for name in group.layer_names:
                self.group_of[name] = g
        self.names = sorted(self.group_of, key=lambda n: int(n.split(".")[2]))
        nb = kv_cache_config.num_blocks
        bs, H, D = self.block_size, self.heads, spec.head_size
        shape = {"kv-first": (2, nb, bs, H, D), "blocks-first": (nb, 2, bs, H, D),
                 "packed": (nb, H, bs, 2 * D), "latent": (nb, bs, D)}[layout]
        self.caches = {n: torch.zeros(shape, dtype=self.dtype) for n in self.names}
        try:
            self.connector.register_kv_caches(self.caches)
        except BaseException:  # the worker process would exit here
            self.connector.shutdown()
            raise
        self.tables: dict[str, list[list[int]]] = {}
        self.tokens: dict[str, list[int]] = {}
        self.load_errors: set[int] = set()

    # The attention backend's own indexing of its layout.
    def _write(self, cache: torch.Tensor, blocks: torch.Tensor, slots: torch.Tensor,
               layer: int, positions: torch.Tensor, tokens: torch.Tensor) -> None:
        if self.layout == "latent":
            cache[blocks, slots] = model_latent(layer, positions, tokens,
                                                self.spec.head_size).to(self.dtype)
            return
        heads = torch.arange(self.head_base, self.head_base + self.heads)
        k = model_kv(layer, positions, tokens, heads, self.spec.head_size, 0).to(self.dtype)
        v = model_kv(layer, positions, tokens, heads, self.spec.head_size, 1).to(self.dtype)
        D = self.spec.head_size
        if self.layout == "kv-first":
            cache[0, blocks, slots], cache[1, blocks, slots] = k, v
        elif self.layout == "blocks-first":
            cache[blocks, 0, slots], cache[blocks, 1, slots] = k, v
        else:
            cache[blocks, :, slots, :D], cache[blocks, :, slots, D:] = k, v

    def _read(self, cache: torch.Tensor, blocks: torch.Tensor, slots: torch.Tensor
              ) -> torch.Tensor:
        if self.layout == "latent":
            return cache[blocks, slots]
        D = self.spec.head_size
        if self.layout == "kv-first":
            return torch.stack([cache[0, blocks, slots], cache[1, blocks, slots]])
        if self.layout == "blocks-first":
            return torch.stack([cache[blocks, 0, slots], cache[blocks, 1, slots]])
        return torch.stack([cache[blocks, :, slots, :D], cache[blocks, :, slots, D:]])

    def _expected(self, layer: int, positions: torch.Tensor, tokens: torch.Tensor
                  ) -> torch.Tensor:
        if self.layout == "latent":
            return model_latent(layer, positions, tokens, self.spec.head_size).to(self.dtype)
        heads = torch.arange(self.head_base, self.head_base + self.heads)
        return torch.stack([model_kv(layer, positions, tokens, heads, self.spec.head_size, kv)
                            for kv in (0, 1)]).to(self.dtype)

    def _track(self, out: SchedulerOutput) -> None:
        """The worker's block tables, as InputBatch keeps them."""
        for new in out.scheduled_new_reqs:
            self.tables[new.req_id] = [list(g) for g in new.block_ids]
            self.tokens[new.req_id] = list(new.prompt_token_ids)
        c = out.scheduled_cached_reqs
        resumed = getattr(c, "resumed_req_ids", None)
        for i, rid in enumerate(c.req_ids):
            is_resumed = rid in resumed if resumed is not None else c.resumed_from_preemption[i]
            blocks = c.new_block_ids[i]
            if is_resumed:
                self.tables[rid] = [list(g) for g in blocks]
            elif blocks:
                for g, ids in enumerate(blocks):
                    self.tables[rid][g].extend(ids)
        for rid in out.finished_req_ids:
            self.tables.pop(rid, None)

    def execute(self, out: SchedulerOutput, tokens_of: dict[str, list[int]],
                layer_checks: list | None = None) -> set[int]:
        """One forward pass: the positions each scheduled request computes this step."""
        self._track(out)
        for rid, toks in tokens_of.items():
            self.tokens[rid] = toks
        work = []
        computed = {n.req_id: n.num_computed_tokens for n in out.scheduled_new_reqs}
        c = out.scheduled_cached_reqs
        computed.update(zip(c.req_ids, c.num_computed_tokens))
        for rid, n in out.num_scheduled_tokens.items():
            first = computed[rid]
            work.append((rid, torch.arange(first, first + n)))
        conn = self.connector
        conn.bind_connector_metadata(out.kv_connector_metadata)
        conn.start_load_kv(SimpleNamespace())
        for i, name in enumerate(self.names[:self.spec.layers]):
            conn.wait_for_layer_load(name)
            for check in layer_checks or []:
                check(self, i)
            self._compute(i, name, work)
            conn.save_kv_layer(name, self.caches[name], None)
        conn.wait_for_save()
        conn.get_finished(out.finished_req_ids)
        errors = conn.get_block_ids_with_load_errors()
        conn.clear_connector_metadata()
        # The draft model (EAGLE, MTP) runs after the connector's part of the step: vLLM
        # neither loads nor saves a connector's KV of its layers.
        for i, name in enumerate(self.names[self.spec.layers:], self.spec.layers):
            self._compute(i, name, work)
        self.load_errors |= errors
        return errors

    def _compute(self, i: int, name: str, work: list) -> None:
        g = self.group_of[name]
        for rid, pos in work:
            table = torch.tensor(self.tables[rid][g])
            toks = torch.tensor(self.tokens[rid])[pos]
            self._write(self.caches[name], table[pos // self.block_size],
                        pos % self.block_size, i, pos, toks)

    def mismatches(self, rid: str, upto: int) -> list[str]:
        """The model's layers whose blocks do not hold its KV of positions [0, upto) (the
        draft model's KV of loaded tokens is its own affair in vLLM)."""
        bad = []
        pos = torch.arange(upto)
        toks = torch.tensor(self.tokens[rid][:upto])
        for i, name in enumerate(self.names[:self.spec.layers]):
            table = torch.tensor(self.tables[rid][self.group_of[name]])
            got = self._read(self.caches[name], table[pos // self.block_size],
                             pos % self.block_size)
            if not torch.equal(got, self._expected(i, pos, toks)):
                bad.append(name)
        return bad
