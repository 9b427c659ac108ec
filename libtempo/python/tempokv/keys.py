"""The key scheme (Documentation/engines.md): chained chunk keys namespaced by model, dtype and
tensor-parallel rank/size, with one object per chunk and layer group.

Chunk i's key hashes its token ids with chunk i-1's key (the namespace's seed for chunk 0),
so equal prefixes share keys, as vLLM's prefix-cache block hashes and LMCache's chunk hashes
do. The hashing runs in libtempo (a 32k-token prompt's chain in microseconds).
"""

from __future__ import annotations

import array
import ctypes
import hashlib
from dataclasses import dataclass, field
from typing import Sequence

from ._native import lib
from ._native_engines import KeyNamespace
from .binding import _raise

_U32_MAX = (1 << 32) - 1


def _tokens(token_ids: object) -> array.array:
    """Token ids as an array of uint32 the library reads in place: an array('I') as it is,
    any other sequence of ints converted once (in C)."""
    if isinstance(token_ids, (str, bytes, bytearray)):
        raise TypeError("token_ids must be a sequence of int, not text or bytes")
    if isinstance(token_ids, array.array) and token_ids.itemsize == 4 and token_ids.typecode in "Ii":
        return token_ids
    try:
        return array.array("I", token_ids)  # type: ignore[arg-type]
    except (TypeError, OverflowError) as e:
        raise TypeError(f"token ids must be ints in [0, {_U32_MAX}]: {e}") from None


@dataclass(frozen=True)
class KeyScheme:
    """Where a KV object's key comes from. `chunk_tokens` tokens per chunk; `layer_groups`
    objects per chunk (each holding the KV of num_layers / layer_groups consecutive layers)."""

    model: str
    dtype: str
    tp_rank: int = 0
    tp_size: int = 1
    chunk_tokens: int = 256
    layer_groups: int = 1
    seed: int = field(init=False)

    def __post_init__(self) -> None:
        for name in ("chunk_tokens", "layer_groups", "tp_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if isinstance(self.tp_rank, bool) or not isinstance(self.tp_rank, int) or not 0 <= self.tp_rank < self.tp_size:
            raise ValueError(f"tp_rank must be in [0, {self.tp_size}), got {self.tp_rank!r}")
        if not isinstance(self.model, str) or not self.model or not isinstance(self.dtype, str) or not self.dtype:
            raise ValueError("model and dtype must be non-empty strings")
        ns = KeyNamespace(self.model.encode(), self.dtype.encode(), self.tp_rank, self.tp_size)
        seed = ctypes.c_uint64()
        _raise(lib.tempo_key_seed(ctypes.byref(ns), ctypes.byref(seed)), "tempo_key_seed")
        object.__setattr__(self, "seed", seed.value)

    def chain(self, token_ids: Sequence[int], parent: int | None = None) -> list[int]:
        """Keys of the full chunks of token_ids; `parent` (the key of the chunk before them)
        extends a chain, None starts one at the seed."""
        buf = _tokens(token_ids)
        n = len(buf)
        count = n // self.chunk_tokens
        out = (ctypes.c_uint64 * max(count, 1))()
        written = ctypes.c_size_t()
        start = self.seed if parent is None else parent
        _raise(lib.tempo_key_chain(start, buf.buffer_info()[0], n, self.chunk_tokens, out,
                                   count, ctypes.byref(written)), "tempo_key_chain")
        return list(out[:count])

    def object_key(self, chunk_key: int, group: int) -> int:
        """The key of layer group `group`'s object of a chunk."""
        if not 0 <= group < self.layer_groups:
            raise ValueError(f"layer group {group} out of [0, {self.layer_groups})")
        return int(lib.tempo_key_layer_group(chunk_key, group))

    def object_keys(self, chunk_keys: Sequence[int]) -> list[list[int]]:
        """Per chunk, its objects' keys in layer-group order."""
        return [[self.object_key(k, g) for g in range(self.layer_groups)] for k in chunk_keys]

    def named_key(self, name: bytes) -> int:
        """The key of an object an engine names itself (SGLang's page hash strings, LMCache's
        object keys) in this namespace: keyed BLAKE2b of the name with the seed, so the same
        name under two models, dtypes or ranks is two objects."""
        if not isinstance(name, bytes) or not name:
            raise ValueError(f"object names are non-empty bytes, not {name!r}")
        h = hashlib.blake2b(name, digest_size=8, key=self.seed.to_bytes(8, "little"))
        return int.from_bytes(h.digest(), "little")
