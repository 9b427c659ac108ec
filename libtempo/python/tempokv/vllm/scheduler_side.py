"""The scheduler-side connector: finds a request's cached prefix, reports it as claims, asks
for retrieval when vLLM allocates blocks for it, tells the workers what to load and save each
step, and feeds the runtime side.

A request's prompt is cut into chunks; its keys come from one key scheme per rank where the
ranks hold different heads, or one scheme for all ranks where the KV is replicated (MLA).
A hit is held only when every rank's objects are; it becomes one claim per rank and layer
group, so each rank waits for, copies and releases its own, group by group.

Blocks follow vLLM's request lifecycle: update_state_after_alloc gives the request's whole
block table; in a step's SchedulerOutput a running request's new blocks are appended, while
a request resumed from preemption (`resumed_req_ids`, or `resumed_from_preemption` before
late 2025) comes with its whole new table, which replaces the old one."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..binding import ClaimState, Context, KvObject, TempoError
from ..integration.kv_hints import hinted_ttu_ns
from ..keys import KeyScheme
from ..store import Store
from .layout import ModelLayout
from .metadata import LoadSpec, SaveSpec, TempoConnectorMetadata
from .runtime_feed import RuntimeFeed, Tracked, status_name

log = logging.getLogger("tempokv.vllm")

_LIVE = (ClaimState.PLANNED, ClaimState.STAGING, ClaimState.STAGE_READY)
# Ended by a stop condition or max_tokens: an output length the runtime side learns from.
_COMPLETED = {"FINISHED_STOPPED", "FINISHED_LENGTH_CAPPED"}


def block_table(blocks: Any) -> list[list[int]]:
    """Block ids per KV cache group of vLLM's KVCacheBlocks, a tuple of lists, or a list."""
    if hasattr(blocks, "get_block_ids"):
        blocks = blocks.get_block_ids()
    if blocks is None:
        return []
    if isinstance(blocks, tuple):
        return [[int(b) for b in group] for group in blocks]
    return [[int(b) for b in blocks]]


@dataclass
class _Request:
    req_id: str
    tokens: list[int]
    chains: list[list[int]]  # chunk keys per key scheme
    tracked: Tracked
    blocks: list[list[int]] = field(default_factory=list)  # per KV cache group, from token 0
    claim_first: int = 0
    claim_chunks: int = 0
    saved: int = 0  # chunks [0, saved) are in the store or being saved: never saved again
    matched: tuple[int, int] = (-1, -1)  # the last (local, external) answer given to vLLM
    hint_ttu_ns: int | None = None

    @property
    def claims(self) -> list[list[int]]:
        return self.tracked.claims


class SchedulerSide:
    def __init__(self, ctx: Context, layout: ModelLayout, schemes: list[KeyScheme],
                 object_bytes: list[int], ranks: int, options: dict[str, Any],
                 feed: RuntimeFeed | None) -> None:
        self.ctx = ctx
        self.store = Store(ctx)
        self.layout = layout
        self.schemes = schemes
        self.object_bytes = object_bytes  # per layer group, one rank's object of a chunk
        self.ranks = ranks
        self.chunk_tokens = schemes[0].chunk_tokens
        self.groups = schemes[0].layer_groups
        self.claim_ttu_ns = int(options["claim_ttu_ms"] * 1e6)
        self.feed = feed
        self._requests: dict[str, _Request] = {}
        self._pending_loads: list[LoadSpec] = []
        self._arrivals = 0

    # ------------------------------------------------------------------ requests ----
    def _request(self, request: Any) -> _Request:
        rid = request.request_id
        r = self._requests.get(rid)
        if r is None:
            tokens = list(getattr(request, "prompt_token_ids", None) or [])
            self._arrivals += 1
            tracked = Tracked(request, self._arrivals, len(tokens), 0, 0, [], False)
            r = _Request(rid, tokens, [s.chain(tokens) for s in self.schemes], tracked)
            r.hint_ttu_ns = hinted_ttu_ns(getattr(request, "kv_hints", None), rid)
            tracked.hinted = r.hint_ttu_ns is not None
            self._requests[rid] = r
            if self.feed is not None:
                self.feed.arrived(rid, tracked)
        return r

    def _held_chunks(self, r: _Request) -> int:
        """Leading chunks every rank's objects of which the store holds, leaving at least one
        prompt token to compute (vLLM runs a prefill to sample)."""
        usable = min(len(r.chains[0]), (len(r.tokens) - 1) // self.chunk_tokens) \
            if r.tokens else 0
        held = usable
        for scheme, chain in zip(self.schemes, r.chains):
            if held == 0:
                break
            keys = [k for ks in scheme.object_keys(chain[:held]) for k in ks]
            held = min(held, self.store.lookup(keys) // self.groups)
        return held

    def _state(self, cid: int) -> ClaimState:
        try:
            return self.ctx.query(cid).state
        except TempoError:
            return ClaimState.RELEASED  # erased after its retention window: ended

    def _end_claims(self, r: _Request) -> None:
        for cid in [c for rank in r.claims for c in rank]:
            if self._state(cid) in _LIVE:
                try:
                    self.ctx.cancel(cid)
                except TempoError as e:  # ended on its own meanwhile
                    log.debug("cancel claim %d: %s", cid, e)
        if self.feed is not None:
            self.feed.forget(c for rank in r.claims for c in rank)
        r.tracked.claims = []
        r.tracked.held_tokens = r.tracked.retrieval_bytes = 0

    def _claim(self, r: _Request, first: int, chunks: int, ttu_ns: int) -> None:
        """One claim per rank and layer group over chunks [first, first + chunks)."""
        self._end_claims(r)
        label = r.req_id.encode()[:39].decode(errors="ignore")
        claims = []
        for rank in range(self.ranks):
            scheme = self.schemes[0 if len(self.schemes) == 1 else rank]
            chain = r.chains[0 if len(self.schemes) == 1 else rank]
            ids = []
            for g in range(self.groups):
                objects = [KvObject(scheme.object_key(k, g), self.object_bytes[g])
                           for k in chain[first:first + chunks]]
                cid = self.ctx.report(objects, ttu_ns)
                ids.append(cid)
                self.ctx.label(cid, label)
            claims.append(ids)
        r.tracked.claims = claims
        r.tracked.held_tokens = (first + chunks) * self.chunk_tokens
        r.tracked.retrieval_bytes = chunks * sum(self.object_bytes)
        r.claim_first, r.claim_chunks = first, chunks

    def claims_of(self, request_id: str) -> list[int]:
        """The live claims of a request, rank by rank, layer group by layer group."""
        r = self._requests.get(request_id)
        return [c for rank in r.claims for c in rank] if r else []

    # ------------------------------------------------------------- vLLM's calls ----
    def on_new_request(self, request: Any) -> None:
        """A request joined the waiting queue: its hit becomes PLANNED claims at once (metadata
        only), so staging can be timed while it waits."""
        r = self._request(request)
        held = self._held_chunks(r)
        if held:
            ttu = self.claim_ttu_ns if r.hint_ttu_ns is None else r.hint_ttu_ns
            self._claim(r, 0, held, ttu)

    def get_num_new_matched_tokens(self, request: Any,
                                   num_computed_tokens: int) -> tuple[int | None, bool]:
        """Tokens beyond the locally computed ones whose KV every rank's objects hold now;
        loaded inside the forward pass, layer by layer, not between steps."""
        r = self._request(request)
        external = max(0, self._held_chunks(r) * self.chunk_tokens - num_computed_tokens)
        r.matched = (num_computed_tokens, external)
        return external, False

    def update_state_after_alloc(self, request: Any, blocks: Any, num_external_tokens: int) -> None:
        """Blocks are allocated (the request's whole table): with external tokens to load, the
        claims over exactly those chunks ask for retrieval."""
        r = self._request(request)
        r.blocks = block_table(blocks)
        if self.feed is not None:
            self.feed.admitted(r.req_id)
        if num_external_tokens <= 0:
            return
        ct = self.chunk_tokens
        local, external = r.matched
        if external != num_external_tokens:  # not the answer we gave: what it implies
            local = self._held_chunks(r) * ct - num_external_tokens
        held = (local + num_external_tokens) // ct
        first = local // ct
        live = r.claims and all(self._state(c) in _LIVE for rank in r.claims for c in rank)
        if not live or (r.claim_first, r.claim_chunks) != (first, held - first):
            self._claim(r, first, held - first, 0)
        for cid in [c for rank in r.claims for c in rank]:
            try:
                self.ctx.request_retrieval(cid)
            except TempoError as e:  # a failed claim: the worker reports its blocks
                log.warning("request %s: retrieval of claim %d: %s", r.req_id, cid, e)
        self._pending_loads.append(LoadSpec(r.req_id, first, held - first,
                                            [list(g) for g in r.blocks], local,
                                            [list(rank) for rank in r.claims]))
        r.saved = max(r.saved, held)

    def build_connector_meta(self, scheduler_output: Any) -> TempoConnectorMetadata:
        """This step's loads, and saves of the prompt chunks the step completes."""
        meta = TempoConnectorMetadata(loads=self._pending_loads)
        self._pending_loads = []
        scheduled = getattr(scheduler_output, "num_scheduled_tokens", {}) or {}
        progress: dict[str, tuple[_Request, int]] = {}
        step: list[tuple[int, int, int]] = []
        for new in getattr(scheduler_output, "scheduled_new_reqs", []) or []:
            r = self._requests.get(new.req_id)
            if r is None:
                continue  # a request the connector never saw (no prompt tokens to key)
            r.blocks = block_table(new.block_ids)
            n = scheduled.get(new.req_id, 0)
            progress[new.req_id] = (r, new.num_computed_tokens + n)
            step.append((len(r.tokens), new.num_computed_tokens, n))
        cached = getattr(scheduler_output, "scheduled_cached_reqs", None)
        if cached is not None:
            resumed = set(getattr(cached, "resumed_req_ids", None) or ())
            flags = getattr(cached, "resumed_from_preemption", None)  # vLLM before late 2025
            for i, rid in enumerate(cached.req_ids):
                r = self._requests.get(rid)
                if r is None:
                    continue
                new_blocks = block_table(cached.new_block_ids[i])
                if rid in resumed or (flags is not None and flags[i]):
                    r.blocks = new_blocks  # its whole new table
                elif new_blocks:
                    if not r.blocks:
                        r.blocks = [[] for _ in new_blocks]
                    for g, ids in enumerate(new_blocks):
                        r.blocks[g].extend(ids)
                n = scheduled.get(rid, 0)
                progress[rid] = (r, cached.num_computed_tokens[i] + n)
                step.append((len(r.tokens), cached.num_computed_tokens[i], n))
        ct = self.chunk_tokens
        for rid, (r, done_tokens) in progress.items():
            end = min(len(r.chains[0]), min(done_tokens, len(r.tokens)) // ct)
            if end > r.saved and r.blocks:
                meta.saves.append(SaveSpec(rid, r.saved, [c[r.saved:end] for c in r.chains],
                                           [list(g) for g in r.blocks]))
                r.saved = end
        if self.feed is not None:
            self.feed.scheduled(step)
            self.feed.feed()
        return meta

    def update_connector_output(self, connector_output: Any) -> None:
        if self.feed is not None:
            self.feed.output()

    def request_finished(self, request: Any) -> tuple[bool, dict | None]:
        """Once per request, any id: ends claims never transferred (an abort, a request that
        never loaded). Saves are copied out within the step: the blocks may be freed now."""
        r = self._requests.pop(getattr(request, "request_id", request), None)
        if r is not None:
            self._end_claims(r)
            if self.feed is not None:
                self.feed.left(r.req_id)
                if status_name(request) in _COMPLETED:
                    self.feed.finished(int(request.num_output_tokens))
        return False, None

    def tracked(self) -> Iterable[Tracked]:
        return (r.tracked for r in self._requests.values())

    def close(self) -> None:
        for r in list(self._requests.values()):
            self._end_claims(r)
        self._requests.clear()
        if self.feed is not None:
            self.feed.close()
