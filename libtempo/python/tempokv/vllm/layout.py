"""The model's paged KV as both roles see it, and each layer's tensor layout.

Both roles build the same ModelLayout from vLLM's configuration: the layers (from
`kv_cache_config.kv_cache_groups` where vLLM gives it, less the draft model's; from the
model's configuration otherwise), each layer's KV cache group (its block table), block size
and bytes per token on this rank, and the dtype the cache holds. Layers are ordered by the
layer index in their names and split into the key scheme's layer groups; a chunk's object
for group g holds, layer after layer, each layer's blocks of the chunk in one canonical
order that does not depend on the attention backend: `[blocks, 2, block_size, heads,
head_size]` (K then V of each block) for attention, `[tokens, width]` for MLA's latent
cache. So an object saved under one backend loads under another; the block size is part of
the keys' namespace (the dtype label), since another block size orders the bytes otherwise.

The worker then checks each registered tensor against its layer and finds its layout:

| layout | shape | backends |
|---|---|---|
| kv-first | `[2, num_blocks, block_size, heads, head_size]` | FlashAttention (default until 2026) |
| blocks-first | `[num_blocks, 2, block_size, heads, head_size]` | FlashInfer, Triton, later FlashAttention |
| packed | `[num_blocks, heads, block_size, 2 * head_size]` | K and V side by side in the last dim |
| latent (MLA) | `[num_blocks, block_size, width]` | FlashMLA, Triton MLA, ... |

`canonical_blocks` views each as `[num_blocks, 2, block_size, heads, head_size]` (latent:
`[num_blocks, block_size, width]`) without a copy, so loads and saves index the block
dimension whatever the layout, and strides (an HND stride order) are the tensor's own."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

import torch

ATTENTION = "attention"
LATENT = "latent"

# vLLM's cache_dtype strings (--kv-cache-dtype) and what a cache of them holds (fp8 as bytes
# where torch has no float8 types).
_FP8_E4M3 = getattr(torch, "float8_e4m3fn", torch.uint8)
_CACHE_DTYPES = {"float16": torch.float16, "half": torch.float16, "bfloat16": torch.bfloat16,
                 "float": torch.float32, "float32": torch.float32, "fp8": _FP8_E4M3,
                 "fp8_e4m3": _FP8_E4M3, "fp8_e5m2": getattr(torch, "float8_e5m2", torch.uint8),
                 "fp8_inc": _FP8_E4M3}


def itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()  # torch before 2.1 has no dtype.itemsize


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _mro_names(obj: Any) -> set[str]:
    return {c.__name__ for c in type(obj).__mro__}


def layer_index(name: str) -> tuple[int, ...]:
    """The integers in a layer's name ('model.layers.12.self_attn.attn' -> (12,)): the model
    order, draft-model layers (EAGLE, MTP) after the target's."""
    return tuple(int(x) for x in re.findall(r"\d+", name))


@dataclass(frozen=True)
class LayerSpec:
    name: str  # vLLM's layer name
    kind: str  # ATTENTION or LATENT
    kv_group: int  # vLLM's KV cache group: which block table the layer's blocks are in
    block_size: int
    token_bytes: int  # bytes of one token's KV of this layer on this rank
    dtype: torch.dtype  # what the cache holds (fp8 included): part of the keys' namespace


@dataclass(frozen=True)
class ModelLayout:
    layers: tuple[LayerSpec, ...]  # model order
    replicated: bool  # MLA: every tensor-parallel rank holds the same KV
    named: bool  # layer names are vLLM's (from kv_cache_config), else positions only
    dtype: str = ""  # the keys' dtype: --kv-cache-dtype (fp8 formats apart), else the cache's

    def groups(self, count: int) -> list[tuple[LayerSpec, ...]]:
        """The layers split into `count` consecutive layer groups as even as they go (the
        first groups take one more when they do not divide)."""
        if count > len(self.layers):
            raise ValueError(f"layer_groups {count} is more than the model's "
                             f"{len(self.layers)} layers")
        base, extra = divmod(len(self.layers), count)
        out, start = [], 0
        for g in range(count):
            n = base + (1 if g < extra else 0)
            out.append(self.layers[start:start + n])
            start += n
        return out

    def check_chunk(self, chunk_tokens: int) -> None:
        for layer in self.layers:
            if chunk_tokens % layer.block_size:
                raise ValueError(f"chunk_tokens ({chunk_tokens}) must be a multiple of the block "
                                 f"size ({layer.block_size}) of layer {layer.name}")


def _spec_layer(name: str, spec: Any, kv_group: int) -> LayerSpec:
    kinds = _mro_names(spec)
    if "MambaSpec" in kinds or "AttentionSpec" not in kinds:
        raise ValueError(f"layer {name}: {type(spec).__name__} is not paged attention KV "
                         "(Mamba/linear-attention state cannot be saved by chunk of tokens; "
                         "Documentation/engines.md, hybrid models)")
    latent = "MLAAttentionSpec" in kinds
    block_size = int(spec.block_size)
    real = getattr(spec, "real_page_size_bytes", None)
    if real is None:
        per_token = int(spec.num_kv_heads) * int(spec.head_size) * itemsize(spec.dtype)
        real = block_size * per_token * (1 if latent else 2)
    if real % block_size:
        raise ValueError(f"layer {name}: page of {real} bytes does not split into "
                         f"{block_size} tokens")
    return LayerSpec(name, LATENT if latent else ATTENTION, kv_group, block_size,
                     int(real) // block_size, spec.dtype)


def target_layers(vllm_config: Any) -> int | None:
    """With speculative decoding, how many layers the target model has: the draft model's
    (EAGLE, MTP) are numbered after them. vLLM neither loads nor saves a connector's KV for
    them (its drafting runs after the connector's step), so they are not part of objects;
    their blocks of loaded tokens are the draft model's to recompute. None: no draft model."""
    if getattr(vllm_config, "speculative_config", None) is None:
        return None
    return int(vllm_config.model_config.get_num_layers(vllm_config.parallel_config))


def from_kv_cache_config(vllm_config: Any, kv_cache_config: Any) -> ModelLayout:
    """vLLM's KVCacheConfig (since late 2025 given to both roles): every layer with its
    group's block table and spec, less the draft model's."""
    draft_from = target_layers(vllm_config)
    layers = []
    for g, group in enumerate(kv_cache_config.kv_cache_groups):
        spec = group.kv_cache_spec
        per_layer = getattr(spec, "kv_cache_specs", None)  # a UniformTypeKVCacheSpecs group
        for name in group.layer_names:
            index = layer_index(name)
            if draft_from is not None and index and index[0] >= draft_from:
                continue
            layers.append(_spec_layer(name, per_layer[name] if per_layer else spec, g))
    if not layers:
        raise ValueError("kv_cache_config has no layers")
    layers.sort(key=lambda layer: (layer_index(layer.name), layer.name))
    latent = {layer.kind == LATENT for layer in layers}
    if len(latent) != 1:
        raise ValueError("a model mixing MLA and per-head attention layers is not supported")
    return ModelLayout(tuple(layers), latent == {True}, True)


def cache_dtype(vllm_config: Any) -> torch.dtype:
    """The dtype the KV cache holds: --kv-cache-dtype, or the model's ('auto')."""
    name = str(getattr(vllm_config.cache_config, "cache_dtype", "auto") or "auto")
    if name == "auto":
        dtype = vllm_config.model_config.dtype
        return dtype if isinstance(dtype, torch.dtype) else _CACHE_DTYPES[str(dtype)]
    if name not in _CACHE_DTYPES:
        raise ValueError(f"kv cache dtype {name!r} is not supported: accepted auto, "
                         + ", ".join(_CACHE_DTYPES))
    return _CACHE_DTYPES[name]


def from_model_config(vllm_config: Any) -> ModelLayout:
    """Without kv_cache_config (vLLM before late 2025, two-argument constructor): the target
    model's layers from its configuration, one KV cache group; the worker matches them to
    the registered tensors in layer order (draft-model layers come after)."""
    model, cache, par = vllm_config.model_config, vllm_config.cache_config, \
        vllm_config.parallel_config
    dtype = cache_dtype(vllm_config)
    latent = bool(getattr(model, "use_mla", False))
    heads = 1 if latent else int(model.get_num_kv_heads(par))
    token_bytes = heads * int(model.get_head_size()) * itemsize(dtype) * (1 if latent else 2)
    layers = tuple(LayerSpec(f"layer.{i}", LATENT if latent else ATTENTION, 0,
                             int(cache.block_size), token_bytes, dtype)
                   for i in range(int(model.get_num_layers(par))))
    return ModelLayout(layers, latent, False)


def model_layout(vllm_config: Any, kv_cache_config: Any) -> ModelLayout:
    if kv_cache_config is not None and getattr(kv_cache_config, "kv_cache_groups", None):
        layout = from_kv_cache_config(vllm_config, kv_cache_config)
    else:
        layout = from_model_config(vllm_config)
    name = str(getattr(vllm_config.cache_config, "cache_dtype", "auto") or "auto")
    if name == "auto":
        name = "+".join(sorted({dtype_name(layer.dtype) for layer in layout.layers}))
    if not layout.replicated:  # blocks-major objects: the block size orders their bytes
        name += "/b" + "+".join(str(b) for b in sorted({layer.block_size
                                                       for layer in layout.layers}))
    return replace(layout, dtype=name)


@dataclass(frozen=True)
class LayerTensor:
    """A registered layer: its spec, its tensor viewed as canonical blocks, its layout."""

    spec: LayerSpec
    blocks: torch.Tensor  # [num_blocks, 2, block_size, heads, head_size] or [nb, bs, width]
    layout: str

    @property
    def token_shape(self) -> tuple[int, ...]:
        """One token's canonical KV: (2, heads, head_size), or (width,) for latent."""
        if self.spec.kind == LATENT:
            return (int(self.blocks.shape[2]),)
        return (2, int(self.blocks.shape[3]), int(self.blocks.shape[4]))


def canonical_blocks(spec: LayerSpec, t: torch.Tensor) -> LayerTensor:
    """Finds the layout of a registered KV tensor and views it as canonical blocks."""
    bs, shape = spec.block_size, tuple(t.shape)

    def mismatch(reason: str) -> ValueError:
        return ValueError(f"register_kv_caches: layer {spec.name} is {list(shape)} {t.dtype}: "
                          f"{reason}; accepted [2, num_blocks, {bs}, heads, head_size], "
                          f"[num_blocks, 2, {bs}, heads, head_size], [num_blocks, heads, "
                          f"{bs}, 2 * head_size] and, for MLA, [num_blocks, {bs}, width]")

    if spec.kind == LATENT:
        if len(shape) != 3 or shape[1] != bs:
            raise mismatch("not an MLA latent cache")
        view, layout = t, "latent"
    elif len(shape) == 5:
        blocks_first = shape[1] == 2 and shape[2] == bs
        kv_first = shape[0] == 2 and shape[2] == bs
        if blocks_first and kv_first:  # [2, 2, bs, ...]: two blocks, K/V first or second?
            raise mismatch("with 2 blocks kv-first and blocks-first look alike")
        if blocks_first:
            view, layout = t, "blocks-first"
        elif kv_first:
            view, layout = t.transpose(0, 1), "kv-first"
        else:
            raise mismatch("no dimension of 2 (K, V) beside the block size")
    elif len(shape) == 4 and shape[2] == bs and shape[3] % 2 == 0:
        view, layout = t.unflatten(3, (2, shape[3] // 2)).permute(0, 3, 2, 1, 4), "packed"
    else:
        raise mismatch("not a paged KV layout")
    lt = LayerTensor(spec, view, layout)
    got = int(torch.Size(lt.token_shape).numel()) * t.element_size()
    if got != spec.token_bytes:
        raise mismatch(f"{got} bytes per token, the configuration says {spec.token_bytes}")
    return lt


def match_tensors(layout: ModelLayout, kv_caches: Mapping[str, torch.Tensor]
                  ) -> tuple[list[tuple[str, LayerTensor]], list[str]]:
    """(registered name, layer) in layout order, and the names registered beyond the layout
    (draft-model layers, layers sharing another's KV). A missing layer is an error."""
    if layout.named:
        missing = [layer.name for layer in layout.layers if layer.name not in kv_caches]
        if missing:
            raise ValueError(f"register_kv_caches: no tensor for layers {missing}")
        names = [layer.name for layer in layout.layers]
        extra = sorted(set(kv_caches) - set(names))
    else:
        ordered = sorted(kv_caches, key=lambda n: (layer_index(n), n))
        if len(ordered) < len(layout.layers):
            raise ValueError(f"register_kv_caches: {len(ordered)} layers, the model has "
                             f"{len(layout.layers)}")
        names, extra = ordered[:len(layout.layers)], ordered[len(layout.layers):]
    return [(name, canonical_blocks(layer, kv_caches[name]))
            for layer, name in zip(layout.layers, names)], extra


def group_offsets(group: Sequence[LayerSpec], chunk_tokens: int) -> list[int]:
    """Where each layer's KV starts in a chunk's object of this group, and its end."""
    out, pos = [], 0
    for layer in group:
        out.append(pos)
        pos += chunk_tokens * layer.token_bytes
    out.append(pos)
    return out
