"""An engine-facing adapter shaped like vLLM's v1 KV-connector hooks and LMCache's
lookup/retrieve, so an integration is a thin shim that forwards the engine's calls.

Prefix KV is split into chunks of `chunk_tokens` tokens; each chunk is one KV object keyed by
a prefix-chained hash (like vLLM block hashes and LMCache chunk hashes), `chunk_tokens *
bytes_per_token` bytes. The adapter remembers which chunks the SSD tier holds (save() puts
them there) and turns a request's longest stored prefix into a claim.

vLLM v1 hook                         here
-----------------------------------  -------------------------------------------------------
(scheduler sees a new request)       on_request(request_id, token_ids, ttu_ns) -> claim
get_num_new_matched_tokens           get_num_new_matched_tokens(request_id, num_computed)
(every scheduling iteration)         update_waiting(request_ids, ttu_ns_of)
update_state_after_alloc             update_state_after_alloc(request_id, num_external_tokens)
start_load_kv                        start_load_kv(request_ids, timeout_ns)
wait_for_layer_load / get_finished   wait_for_layer_load(request_id), get_finished()
request_finished                     request_finished(request_id)
LMCache lookup / retrieve / store    lookup(tokens), retrieve(tokens), save(tokens, data)
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from .binding import ClaimState, Context, KvObject, Retrieval, TempoError


def chunk_keys(token_ids: Sequence[int], chunk_tokens: int) -> list[int]:
    """Prefix-chained 64-bit keys of the full chunks of `token_ids`."""
    if isinstance(token_ids, (str, bytes)) or not all(
            isinstance(t, int) and not isinstance(t, bool) for t in token_ids):
        raise TypeError("token_ids must be a sequence of int")
    keys: list[int] = []
    parent = b"tempokv"
    for start in range(0, len(token_ids) - chunk_tokens + 1, chunk_tokens):
        h = hashlib.blake2b(parent, digest_size=8)
        h.update(struct.pack(f"<{chunk_tokens}q", *token_ids[start:start + chunk_tokens]))
        parent = h.digest()
        keys.append(int.from_bytes(parent, "little") or 1)
    return keys


@dataclass
class _Request:
    request_id: str
    matched_tokens: int
    claim_id: int | None
    outcome: Retrieval | None = None
    loaded: bool = False
    data: bytes | None = None
    objects: list[KvObject] = field(default_factory=list)


class TempoConnector:
    """The connector: one per engine, over a Context (sim or uring)."""

    def __init__(self, ctx: Context, chunk_tokens: int = 256, bytes_per_token: int = 128 * 1024,
                 load_timeout_ns: int = 30_000_000_000) -> None:
        if not isinstance(ctx, Context):
            raise TypeError(f"ctx must be a tempokv.Context, not {type(ctx).__name__}")
        for name, v in (("chunk_tokens", chunk_tokens), ("bytes_per_token", bytes_per_token),
                        ("load_timeout_ns", load_timeout_ns)):
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        self.ctx = ctx
        self.chunk_tokens = chunk_tokens
        self.chunk_bytes = chunk_tokens * bytes_per_token
        self.load_timeout_ns = load_timeout_ns
        self._stored: set[int] = set()
        self._requests: dict[str, _Request] = {}
        self._finished_loads: set[str] = set()

    # -- the SSD tier ----------------------------------------------------------------------
    def save(self, token_ids: Sequence[int],
             chunk_data: Callable[[int, int], bytes] | None = None) -> int:
        """Stores the full chunks of a prefix not stored yet (LMCache's store). On uring,
        chunk_data(index, key) gives each chunk's bytes (chunk_bytes long); on sim only the
        size matters. Returns the number of chunks added."""
        added = 0
        for i, key in enumerate(chunk_keys(token_ids, self.chunk_tokens)):
            if key in self._stored:
                continue
            if self.ctx.device == "sim":
                self.ctx.sim_add_objects([KvObject(key, self.chunk_bytes)])
            else:
                if chunk_data is None:
                    raise ValueError("save() on a uring context needs chunk_data")
                data = chunk_data(i, key)
                if len(data) != self.chunk_bytes:
                    raise ValueError(f"chunk {i}: {len(data)} bytes, expected {self.chunk_bytes}")
                self.ctx.store_put(key, data)
            self._stored.add(key)
            added += 1
        return added

    def lookup(self, token_ids: Sequence[int]) -> int:
        """LMCache's lookup: tokens of the longest stored prefix."""
        n = 0
        for key in chunk_keys(token_ids, self.chunk_tokens):
            if key not in self._stored:
                break
            n += 1
        return n * self.chunk_tokens

    def retrieve(self, token_ids: Sequence[int]) -> bytes:
        """LMCache's retrieve in one call: report, retrieve, wait, copy, release. Returns the
        stored prefix's bytes on uring (b"" on sim, which holds no bytes)."""
        rid = f"retrieve-{id(token_ids)}-{len(self._requests)}"
        self.on_request(rid, token_ids, ttu_ns=0)
        self.update_state_after_alloc(rid, self._requests[rid].matched_tokens)
        self.start_load_kv([rid])
        data = self.wait_for_layer_load(rid)
        self.request_finished(rid)
        return data

    # -- scheduler side --------------------------------------------------------------------
    def on_request(self, request_id: str, token_ids: Sequence[int], ttu_ns: int) -> int | None:
        """A new request is seen: a hit on stored chunks becomes a claim (metadata only).
        Returns the claim id, or None without a hit."""
        if not isinstance(request_id, str):
            raise TypeError(f"request_id must be str, not {type(request_id).__name__}")
        if request_id in self._requests:
            raise ValueError(f"request {request_id!r} is already known")
        matched = self.lookup(token_ids)
        keys = chunk_keys(token_ids, self.chunk_tokens)[: matched // self.chunk_tokens]
        objects = [KvObject(k, self.chunk_bytes) for k in keys]
        claim = self.ctx.report(objects, ttu_ns) if objects else None
        self._requests[request_id] = _Request(request_id, matched, claim, objects=objects)
        return claim

    def _req(self, request_id: str) -> _Request:
        try:
            return self._requests[request_id]
        except KeyError:
            raise KeyError(f"unknown request {request_id!r} (finished, or never seen)") from None

    def get_num_new_matched_tokens(self, request_id: str, num_computed_tokens: int) -> tuple[int, bool]:
        """vLLM: tokens the connector can load beyond those computed, and whether the load
        is asynchronous (a claim exists)."""
        r = self._req(request_id)
        new = max(0, r.matched_tokens - num_computed_tokens)
        return new, new > 0 and r.claim_id is not None

    def update_waiting(self, request_ids: Sequence[str], ttu_ns_of: Callable[[str], int]) -> None:
        """Every scheduling iteration: the waiting queue in order and each claim's new TTU."""
        order: list[int | None] = []
        for rid in request_ids:
            r = self._req(rid)
            if r.claim_id is not None and r.outcome is None:
                self.ctx.revise(r.claim_id, ttu_ns_of(rid))
            order.append(r.claim_id if r.outcome is None else None)
        self.ctx.update_order(order)

    def update_state_after_alloc(self, request_id: str, num_external_tokens: int) -> Retrieval | None:
        """vLLM: blocks are allocated and retrieval is about to start: request it."""
        r = self._req(request_id)
        if r.claim_id is None or num_external_tokens <= 0:
            return None
        r.outcome = self.ctx.request_retrieval(r.claim_id)
        return r.outcome

    # -- worker side -----------------------------------------------------------------------
    def start_load_kv(self, request_ids: Iterable[str], timeout_ns: int | None = None) -> None:
        """vLLM: loads start. Waits for readiness, then copies (stage-ready) or reads through
        the ordinary path."""
        for rid in request_ids:
            r = self._req(rid)
            if r.claim_id is None or r.outcome is None or r.loaded:
                continue
            outcome = self.ctx.wait_ready(r.claim_id, timeout_ns or self.load_timeout_ns)
            if outcome == Retrieval.READY:
                self.ctx.transfer_begin(r.claim_id)
                r.data = self.ctx.read_claim(r.claim_id) if self.ctx.device != "sim" else b""
            else:
                self.ctx.ordinary_read(r.claim_id)
                r.data = b""
            r.outcome = outcome
            r.loaded = True
            self._finished_loads.add(rid)

    def wait_for_layer_load(self, request_id: str) -> bytes:
        """vLLM: the load of this request is finished; returns the bytes copied (uring)."""
        r = self._req(request_id)
        if not r.loaded:
            raise RuntimeError(f"request {request_id!r}: start_load_kv() has not loaded it")
        return r.data or b""

    def get_finished(self) -> set[str]:
        """vLLM: requests whose loads finished since the last call."""
        done, self._finished_loads = self._finished_loads, set()
        return done

    def request_finished(self, request_id: str) -> tuple[bool, None]:
        """vLLM: the request is done: release its claim's protection (or cancel an unused
        claim). A second call raises KeyError."""
        r = self._requests.pop(request_id, None)
        if r is None:
            raise KeyError(f"request {request_id!r} already finished (double release)")
        if r.claim_id is not None:
            state = self.ctx.query(r.claim_id).state
            if state == ClaimState.TRANSFERRING:
                self.ctx.transfer_end(r.claim_id)
            elif state in (ClaimState.PLANNED, ClaimState.STAGING, ClaimState.STAGE_READY):
                self.ctx.cancel(r.claim_id)
        return False, None

    def claim_of(self, request_id: str) -> int | None:
        """The claim of a known request (None without a hit)."""
        return self._req(request_id).claim_id

    def outcome_of(self, request_id: str) -> Retrieval | None:
        return self._req(request_id).outcome


__all__ = ["TempoConnector", "chunk_keys", "TempoError"]
