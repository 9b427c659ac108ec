"""TempoKVConnector: vLLM's v1 KV connector (`KVConnectorBase_V1`, both roles, `SupportsHMA`)
on TempoKV, built the way vLLM's KVConnectorFactory builds a connector it loads from
`kv_connector_module_path`: `cls(vllm_config, role, kv_cache_config)`, or `cls(vllm_config,
role)` where the factory is older.

Follows vLLM's `vllm/distributed/kv_transfer/kv_connector/v1/base.py` and `factory.py` at
commit 003df2961dd8 (main, 2026) and the two-argument constructor before late 2025; the
scheduler's calls as `vllm/v1/core/sched/scheduler.py` makes them (CachedRequestData with
`resumed_req_ids`, and `resumed_from_preemption` before it). When vLLM imports, the
connector subclasses its base classes; otherwise it stands alone with the same names.

Settings come from `kv_transfer_config.kv_connector_extra_config` (OPTIONS below, and
`tempo_config` / `tempo` for the Context, integration/settings.py). Each process opens one
Context for both roles; with device = daemon every process of the engine is one engine of
tempod (`daemon.engine`, from vLLM's engine_id). The scheduler role needs no tensor-parallel
rank; a worker's rank is `parallel_config.rank % tensor_parallel_size`."""

from __future__ import annotations

import abc
import enum
import inspect
import logging
from typing import Any

import torch

from ..integration import shared_context
from ..integration.settings import Option, boolean, engine_name, non_negative_number, \
    positive_int, read_settings, text
from ..keys import KeyScheme
from .layout import ModelLayout, group_offsets, model_layout
from .metadata import TempoConnectorMetadata
from .runtime_feed import RuntimeFeed, step_costs
from .scheduler_side import SchedulerSide
from .worker_side import WorkerSide

log = logging.getLogger("tempokv.vllm")

try:  # pragma: no cover - vLLM is not installable here
    from vllm.distributed.kv_transfer.kv_connector.v1.base import (
        KVConnectorBase_V1 as _ConnectorBase,
        KVConnectorRole,
    )

    HAVE_VLLM = True
except ImportError:
    HAVE_VLLM = False

    class KVConnectorRole(enum.Enum):  # type: ignore[no-redef]
        SCHEDULER = 0
        WORKER = 1

    class _ConnectorBase(abc.ABC):  # type: ignore[no-redef]
        """The part of vLLM's base class a connector relies on: role and bound metadata."""

        def __init__(self, vllm_config: Any, role: KVConnectorRole,
                     kv_cache_config: Any = None) -> None:
            self._connector_metadata: Any = None
            self._vllm_config = vllm_config
            self._kv_transfer_config = vllm_config.kv_transfer_config
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

try:  # pragma: no cover
    from vllm.distributed.kv_transfer.kv_connector.v1.base import SupportsHMA
except ImportError:  # vLLM without the hybrid allocator's connector API, or no vLLM
    class SupportsHMA(abc.ABC):  # type: ignore[no-redef]
        @abc.abstractmethod
        def request_finished_all_groups(self, request: Any, block_ids: tuple[list[int], ...]
                                        ) -> tuple[bool, dict[str, Any] | None]:
            ...

OPTIONS = {
    "chunk_tokens": Option(256, positive_int, "tokens per chunk (a multiple of every block size)"),
    "layer_groups": Option(4, positive_int, "objects per chunk, each a run of layers"),
    "load_timeout_ms": Option(10_000.0, non_negative_number,
                              "how long a layer waits for staging before vLLM recomputes"),
    "claim_ttu_ms": Option(1_000.0, non_negative_number,
                           "a new claim's TTU until the runtime side revises it"),
    "writer_threads": Option(2, positive_int, "library threads putting saved objects"),
    "runtime": Option(True, boolean, "feed the runtime side each step (TTUs from the engine)"),
    "step_costs": Option("llama-3.1-8b-h100", step_costs,
                         "the step-cost prior: a shipped fit or the coefficients"),
    "learn_costs": Option(True, boolean, "learn the step costs from measured steps"),
    "follow_head": Option(8, positive_int,
                          "waiting requests whose every claim follows the lead claim's TTU"),
    "model_name": Option(None, text, "the model's name in the keys (default: vLLM's model)"),
    "engine": Option(None, text, "the engine's name in tempod (default: vllm-<engine_id>)"),
}


def _role_name(role: Any) -> str:
    return getattr(role, "name", str(role))


def _schemes(model: str, layout: ModelLayout, ranks: int, options: dict[str, Any]
             ) -> list[KeyScheme]:
    """One key scheme per rank where ranks hold different heads; one for every rank where
    the KV is replicated (MLA), under rank 0's namespace."""
    own = 1 if layout.replicated else ranks
    return [KeyScheme(model, layout.dtype, r, ranks, options["chunk_tokens"],
                      options["layer_groups"]) for r in range(own)]


class TempoKVConnector(_ConnectorBase, SupportsHMA):  # type: ignore[misc]
    """One class, both roles (vLLM builds one per role and process)."""

    def __init__(self, vllm_config: Any, role: Any, kv_cache_config: Any = None) -> None:
        if "kv_cache_config" in inspect.signature(_ConnectorBase.__init__).parameters:
            super().__init__(vllm_config, role, kv_cache_config)
        else:  # vLLM's base before late 2025
            super().__init__(vllm_config, role)
        kvt = vllm_config.kv_transfer_config
        par = vllm_config.parallel_config
        if int(getattr(par, "pipeline_parallel_size", 1)) > 1:
            raise ValueError("TempoKVConnector: pipeline parallelism is not supported (each "
                             "stage's layers would need keys of their own)")
        ranks = int(getattr(par, "tensor_parallel_size", 1))
        dp = int(getattr(par, "data_parallel_rank", 0) or 0)
        engine = f"vllm-dp{dp}" if int(getattr(par, "data_parallel_size", 1) or 1) > 1 else "vllm"
        spec, options = read_settings("kv_connector_extra_config",
                                      getattr(kvt, "kv_connector_extra_config", None), OPTIONS,
                                      engine_name(engine, str(getattr(kvt, "engine_id", ""))))
        self.layout = model_layout(vllm_config, kv_cache_config)
        self.layout.check_chunk(options["chunk_tokens"])
        model = options["model_name"] or str(vllm_config.model_config.model)
        schemes = _schemes(model, self.layout, ranks, options)
        groups = self.layout.groups(options["layer_groups"])
        object_bytes = [group_offsets(g, options["chunk_tokens"])[-1] for g in groups]
        self.ctx = shared_context.acquire(spec)
        self._scheduler: SchedulerSide | None = None
        self._worker: WorkerSide | None = None
        try:
            if _role_name(role) == "SCHEDULER":
                feed = None
                if options["runtime"]:
                    sched = vllm_config.scheduler_config
                    feed = RuntimeFeed(self.ctx, step_costs(options["step_costs"]),
                                       int(sched.max_num_seqs),
                                       int(vllm_config.model_config.max_model_len),
                                       options["learn_costs"], options["follow_head"],
                                       str(getattr(sched, "policy", "fcfs")) == "priority")
                self._scheduler = SchedulerSide(self.ctx, self.layout, schemes, object_bytes,
                                                ranks, options, feed)
            else:
                rank = int(getattr(par, "rank", 0)) % ranks
                self._worker = WorkerSide(self.ctx, self.layout, schemes, object_bytes, rank,
                                          options)
        except BaseException:
            shared_context.release(self.ctx)
            raise
        log.info("TempoKVConnector %s: %d layers in %d groups, %d B objects, %s ranks%s",
                 _role_name(role), len(self.layout.layers), len(groups), object_bytes[0],
                 ranks, " (replicated KV)" if self.layout.replicated else "")

    @classmethod
    def requires_piecewise_for_cudagraph(cls, extra_config: dict[str, Any]) -> bool:
        """Loads and saves run per layer (wait_for_layer_load, save_kv_layer), which a captured
        CUDA graph would skip."""
        return True

    # ---------------------------------------------------------------- scheduler side ----
    @property
    def scheduler(self) -> SchedulerSide:
        if self._scheduler is None:
            raise RuntimeError("a scheduler-side call on the worker-side connector")
        return self._scheduler

    def on_new_request(self, request: Any) -> None:
        self.scheduler.on_new_request(request)

    def claims_of(self, request_id: str) -> list[int]:
        return self.scheduler.claims_of(request_id)

    def get_num_new_matched_tokens(self, request: Any,
                                   num_computed_tokens: int) -> tuple[int | None, bool]:
        return self.scheduler.get_num_new_matched_tokens(request, num_computed_tokens)

    def update_state_after_alloc(self, request: Any, blocks: Any, num_external_tokens: int) -> None:
        self.scheduler.update_state_after_alloc(request, blocks, num_external_tokens)

    def build_connector_meta(self, scheduler_output: Any) -> TempoConnectorMetadata:
        return self.scheduler.build_connector_meta(scheduler_output)

    def update_connector_output(self, connector_output: Any) -> None:
        self.scheduler.update_connector_output(connector_output)

    def request_finished(self, request: Any, block_ids: list[int]) -> tuple[bool, dict | None]:
        return self.scheduler.request_finished(request)

    def request_finished_all_groups(self, request: Any, block_ids: tuple[list[int], ...]
                                    ) -> tuple[bool, dict | None]:
        """The hybrid allocator's finish (every KV cache group's blocks at once)."""
        return self.scheduler.request_finished(request)

    # ------------------------------------------------------------------- worker side ----
    @property
    def worker(self) -> WorkerSide:
        if self._worker is None:
            raise RuntimeError("a worker-side call on the scheduler-side connector")
        return self._worker

    @property
    def copy_stream(self):  # type: ignore[no-untyped-def]
        """The side stream the worker's copies run on (tests hold it to observe ordering)."""
        return self.worker.copy_stream

    def register_kv_caches(self, kv_caches: dict[str, torch.Tensor]) -> None:
        self.worker.register_kv_caches(kv_caches)

    def start_load_kv(self, forward_context: Any, **kwargs: Any) -> None:
        if self.has_connector_metadata():
            self.worker.start_load_kv(self._get_connector_metadata())

    def wait_for_layer_load(self, layer_name: str) -> None:
        if self.has_connector_metadata():
            self.worker.wait_for_layer_load(layer_name, self._get_connector_metadata())

    def save_kv_layer(self, layer_name: str, kv_layer: torch.Tensor, attn_metadata: Any,
                      **kwargs: Any) -> None:
        if self.has_connector_metadata():
            self.worker.save_kv_layer(layer_name, self._get_connector_metadata())

    def wait_for_save(self) -> None:
        self.worker.wait_for_save()

    def get_finished(self, finished_req_ids: set[str]) -> tuple[set[str] | None, set[str] | None]:
        """(sending, receiving): loads end within the step and saves never hold blocks."""
        self.worker.get_finished()
        return None, None

    def get_block_ids_with_load_errors(self) -> set[int]:
        """Blocks whose load failed (not ready in time, ordinary path): vLLM recomputes them."""
        return self.worker.load_errors()

    def flush(self, timeout_ns: int = 60_000_000_000) -> None:
        """Waits for every copy and put (tests, shutdown)."""
        self.worker.flush(timeout_ns)

    def shutdown(self) -> None:
        side, self._worker, self._scheduler = self._worker or self._scheduler, None, None
        if side is None:
            return
        side.close()
        shared_context.release(self.ctx)


__all__ = ["HAVE_VLLM", "KVConnectorRole", "OPTIONS", "TempoKVConnector"]
