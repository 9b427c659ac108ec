"""The worker-side connector: loads a step's claims into the paged blocks layer group by
layer group, and saves the chunks a step completes, with every copy off the compute stream.

Loads: a claim that is stage-ready when the step starts is copied at once; the others when
the forward pass reaches their layer group (wait_for_layer_load waits for staging only
there). Each group's copies end with an event the compute stream waits on before the
group's first layer runs; the claim stays transferring, its extents pinned, until the event
has completed, and is released then.

Saves: each layer's blocks are gathered into the chunk objects' host buffers on the side
stream as save_kv_layer is called; once a layer group's last layer is copied, an event
marks it and the objects are put (asynchronously, by the library's writer) when it has
completed. wait_for_save makes the compute stream wait for the copies, so vLLM may reuse
the blocks after the step; no save blocks the forward pass."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Mapping

import torch

from ..binding import ClaimState, Context, Retrieval, TempoError
from ..integration.copy_stream import CopyStream
from ..integration.extents import ClaimBytes, claim_extents
from ..keys import KeyScheme
from ..store import Writer
from .layout import LayerTensor, ModelLayout, group_offsets, match_tensors
from .metadata import LoadSpec, SaveSpec, TempoConnectorMetadata

log = logging.getLogger("tempokv.vllm")

NULL_BLOCK = 0  # vLLM's null block (BlockPool's first): a hole in a table, never data


@dataclass
class _Save:
    """One save spec's objects of one layer group: a host buffer per chunk."""

    spec: SaveSpec
    group: int
    rows: list[torch.Tensor]  # [object bytes] uint8 each
    layers_left: int


class _HostBuffers:
    """Object buffers reused once their puts completed: a new one costs page faults on first
    touch (and, pinned for a GPU, a page-locking allocation) on every save."""

    def __init__(self, pinned: bool) -> None:
        self.pinned = pinned
        self._free: dict[int, list[torch.Tensor]] = {}

    def take(self, nbytes: int) -> torch.Tensor:
        free = self._free.get(nbytes)
        if free:
            return free.pop()
        return torch.empty(nbytes, dtype=torch.uint8, pin_memory=self.pinned)

    def give(self, row: torch.Tensor) -> None:
        self._free.setdefault(row.numel(), []).append(row)


class WorkerSide:
    def __init__(self, ctx: Context, layout: ModelLayout, schemes: list[KeyScheme],
                 object_bytes: list[int], rank: int, options: dict[str, Any]) -> None:
        self.ctx = ctx
        self.layout = layout
        self.rank = rank
        self.scheme = schemes[0 if len(schemes) == 1 else rank]
        self.scheme_index = 0 if len(schemes) == 1 else rank
        self.saves_here = not layout.replicated or rank == 0  # MLA: rank 0 saves for all
        self.chunk_tokens = self.scheme.chunk_tokens
        self.groups = layout.groups(self.scheme.layer_groups)
        self.offsets = [group_offsets(g, self.chunk_tokens) for g in self.groups]
        self.object_bytes = object_bytes
        self.load_timeout_ns = int(options["load_timeout_ms"] * 1e6)
        self.writer_threads = options["writer_threads"]
        self.copy_stream: CopyStream | None = None
        self._writer: Writer | None = None
        self._buffers: _HostBuffers | None = None
        self._putting: dict[int, torch.Tensor] = {}  # put cookie -> its buffer
        self._layers: dict[str, tuple[int, int, LayerTensor]] = {}  # name -> (group, j, layer)
        self._by_group: list[list[LayerTensor]] = [[] for _ in self.groups]
        self._loaded_groups: dict[int, list[Any]] = {}  # this step: group -> events
        self._started: set[tuple[int, int]] = set()  # this step: (load spec, group) begun
        self._saves: dict[tuple[int, int], _Save] = {}  # (save spec index, group)
        self._saving = False  # save copies submitted the compute stream has not waited for
        self._load_errors: set[int] = set()
        self.loaded_bytes = 0
        self.saved_objects = 0
        self.save_errors = 0

    # ---------------------------------------------------------------- registration ----
    def register_kv_caches(self, kv_caches: Mapping[str, torch.Tensor]) -> None:
        matched, extra = match_tensors(self.layout, kv_caches)
        if extra:
            log.info("register_kv_caches: %d layers not offloaded (draft model, shared KV): %s",
                     len(extra), ", ".join(extra[:4]) + (" ..." if len(extra) > 4 else ""))
        devices = {lt.blocks.device for _, lt in matched}
        if len(devices) != 1:
            raise ValueError(f"register_kv_caches: layers on several devices {devices}")
        index = {id(spec): (g, j) for g, group in enumerate(self.groups)
                 for j, spec in enumerate(group)}
        for name, lt in matched:
            g, j = index[id(lt.spec)]
            self._layers[name] = (g, j, lt)
            self._by_group[g].append(lt)
        self.copy_stream = CopyStream(devices.pop())
        self._buffers = _HostBuffers(self.copy_stream.device.type == "cuda")
        self._writer = Writer(self.ctx, self.writer_threads)
        log.info("register_kv_caches: %d layers (%s) in %d layer groups, rank %d",
                 len(matched), matched[0][1].layout, len(self.groups), self.rank)

    def _block_ids(self, lt: LayerTensor, spec_blocks: list[list[int]], chunk: int) -> list[int]:
        per_chunk = self.chunk_tokens // lt.spec.block_size
        table = spec_blocks[lt.spec.kv_group] if lt.spec.kv_group < len(spec_blocks) else []
        ids = table[chunk * per_chunk:(chunk + 1) * per_chunk]
        if len(ids) != per_chunk:
            raise ValueError(f"chunk {chunk} of layer {lt.spec.name}: {len(ids)} blocks in the "
                             f"table, expected {per_chunk}")
        return ids

    def _chunk_blocks(self, src: torch.Tensor, lt: LayerTensor) -> torch.Tensor:
        """A chunk of one layer, as it lies in an object, viewed as canonical blocks."""
        n = self.chunk_tokens // lt.spec.block_size
        return src.view(n, *lt.blocks.shape[1:])

    # ----------------------------------------------------------------------- loads ----
    def _failed(self, spec: LoadSpec, why: str) -> None:
        log.warning("request %s: load failed (%s): vLLM recomputes it", spec.req_id, why)
        for g in self._by_group:
            for lt in g:
                per_block = lt.spec.block_size
                for c in range(spec.first_chunk, spec.first_chunk + spec.chunks):
                    try:
                        ids = self._block_ids(lt, spec.block_ids, c)
                    except ValueError:
                        continue
                    first = c * self.chunk_tokens // per_block
                    self._load_errors.update(
                        b for i, b in enumerate(ids, first)
                        if b != NULL_BLOCK and i >= spec.local_tokens // per_block)

    def _copy_claim(self, g: int, spec: LoadSpec, cid: int) -> Any:
        """Copies a stage-ready claim of layer group g into its blocks on the side stream;
        returns the event its copies end with (None if it could not start)."""
        try:
            self.ctx.transfer_begin(cid)
        except TempoError as e:
            self._failed(spec, f"claim {cid}: {e}")
            return None
        try:
            data = ClaimBytes(claim_extents(self.ctx, cid))
            if data.size != spec.chunks * self.object_bytes[g]:
                raise ValueError(f"claim {cid} holds {data.size} bytes, expected "
                                 f"{spec.chunks * self.object_bytes[g]}")
            plan = []  # (canonical blocks of the layer, destination ids, source positions, src)
            for c in range(spec.chunks):
                chunk = spec.first_chunk + c
                base = c * self.object_bytes[g]
                for j, lt in enumerate(self._by_group[g]):
                    ids = self._block_ids(lt, spec.block_ids, chunk)
                    first = chunk * self.chunk_tokens // lt.spec.block_size
                    keep = [k for k, b in enumerate(ids) if b != NULL_BLOCK
                            and first + k >= spec.local_tokens // lt.spec.block_size]
                    if not keep:
                        continue
                    off = self.offsets[g]
                    src = data.slice(base + off[j], off[j + 1] - off[j]).view(lt.blocks.dtype)
                    plan.append((lt, [ids[k] for k in keep], keep, src))
        except (TempoError, ValueError) as e:
            self.ctx.transfer_end(cid)
            self._failed(spec, str(e))
            return None
        device = self.copy_stream.device

        def copy() -> None:
            for lt, dst, keep, src in plan:
                blocks = self._chunk_blocks(src.to(device, non_blocking=True), lt)
                if len(keep) != blocks.shape[0]:
                    blocks = blocks.index_select(0, torch.tensor(keep, device=device))
                lt.blocks.index_copy_(0, torch.tensor(dst, device=device), blocks)

        self.copy_stream.submit(copy)
        event = self.copy_stream.record()
        size = data.size

        def release(error: BaseException | None) -> None:
            self.ctx.transfer_end(cid)  # the copies have read the extents: unpin
            if error is not None:
                self._failed(spec, f"copy of claim {cid}: {error}")
            else:
                self.loaded_bytes += size

        self.copy_stream.after(event, release)
        return event

    def _load_group(self, g: int, meta: TempoConnectorMetadata, block: bool) -> None:
        """Starts group g's copies for every load of the step; with block=False only those of
        claims stage-ready now."""
        events = self._loaded_groups.setdefault(g, [])
        for spec in meta.loads:
            key = (id(spec), g)
            if key in self._started:
                continue
            cid = spec.claims[self.rank][g]
            if not block:
                try:
                    if self.ctx.query(cid).state != ClaimState.STAGE_READY:
                        continue
                except TempoError:
                    continue
            self._started.add(key)
            try:
                outcome = self.ctx.wait_ready(cid, self.load_timeout_ns)
            except TempoError as e:
                self._failed(spec, f"claim {cid} not ready: {e}")
                continue
            if outcome != Retrieval.READY:
                try:
                    self.ctx.ordinary_read(cid)  # warms the fast tier; vLLM recomputes
                except TempoError as e:
                    log.debug("ordinary read of claim %d: %s", cid, e)
                self._failed(spec, f"claim {cid} took the ordinary path")
                continue
            event = self._copy_claim(g, spec, cid)
            if event is not None:
                events.append(event)

    def start_load_kv(self, meta: TempoConnectorMetadata) -> None:
        """Never waits for staging: copies the claims that are stage-ready now."""
        self.copy_stream.poll()
        self._wait_for_save_copies()  # late saves read blocks this step may write
        self._loaded_groups = {}
        self._started = set()
        for g in range(len(self.groups)):
            self._load_group(g, meta, block=False)

    def wait_for_layer_load(self, layer_name: str, meta: TempoConnectorMetadata) -> None:
        """The first layer of a group: its claims' copies started (waiting for staging where
        needed), and the compute stream waits for them."""
        entry = self._layers.get(layer_name)
        if entry is None or entry[1] != 0:
            return
        g = entry[0]
        self._load_group(g, meta, block=True)
        for event in self._loaded_groups.get(g, []):
            self.copy_stream.wait(event)
        self.copy_stream.poll()

    # ----------------------------------------------------------------------- saves ----
    def save_kv_layer(self, layer_name: str, meta: TempoConnectorMetadata) -> None:
        """Gathers this layer's blocks of every save into the objects' host buffers, off the
        compute stream; a group's objects are put once its last layer's copies completed."""
        entry = self._layers.get(layer_name)
        if entry is None or not self.saves_here or not meta.saves:
            return
        g, j, lt = entry
        off = self.offsets[g]
        for s, spec in enumerate(meta.saves):
            chunks = len(spec.chunk_keys[self.scheme_index])
            save = self._saves.get((s, g))
            if save is None:
                rows = [self._buffers.take(self.object_bytes[g]) for _ in range(chunks)]
                save = self._saves[(s, g)] = _Save(spec, g, rows, len(self._by_group[g]))
            try:
                ids = [b for c in range(chunks)
                       for b in self._block_ids(lt, spec.block_ids, spec.first_chunk + c)]
            except ValueError as e:
                log.warning("request %s: save skipped: %s", spec.req_id, e)
                continue
            if NULL_BLOCK in ids:  # a hole (outside a sliding window): nothing to save there
                log.warning("request %s: save skipped: a null block in layer %s", spec.req_id,
                            layer_name)
                continue
            self.copy_stream.submit(self._gather(lt, ids, save.rows, off[j], off[j + 1]))
            self._saving = True
            save.layers_left -= 1
            if save.layers_left == 0:
                del self._saves[(s, g)]
                self.copy_stream.after(self.copy_stream.record(), self._put(save))
        self.copy_stream.poll()

    def _gather(self, lt: LayerTensor, ids: list[int], rows: list[torch.Tensor], lo: int,
                hi: int):  # type: ignore[no-untyped-def]
        """The copy of a layer's blocks (its registered tensor: vLLM's kv_layer is the same)
        into the chunks' object buffers: on a GPU gathered there and copied to the host
        buffers; on CPU gathered straight into each, one copy."""
        n = self.chunk_tokens // lt.spec.block_size
        blocks = lt.blocks

        def copy() -> None:
            index = torch.tensor(ids, device=blocks.device)
            regions = [row[lo:hi].view(blocks.dtype).view(n, *blocks.shape[1:]) for row in rows]
            if blocks.is_cuda:
                got = blocks.index_select(0, index)
                for c, region in enumerate(regions):
                    region.copy_(got[c * n:(c + 1) * n], non_blocking=True)
                return
            for c, region in enumerate(regions):
                torch.index_select(blocks, 0, index[c * n:(c + 1) * n], out=region)

        return copy

    def _put(self, save: _Save):  # type: ignore[no-untyped-def]
        def put(error: BaseException | None) -> None:
            if error is not None:
                self.save_errors += 1
                log.warning("request %s: save copy failed: %s", save.spec.req_id, error)
                for row in save.rows:
                    self._buffers.give(row)
                return
            for c, chunk_key in enumerate(save.spec.chunk_keys[self.scheme_index]):
                try:
                    cookie = self._writer.put(self.scheme.object_key(chunk_key, save.group),
                                              save.rows[c])
                    self._putting[cookie] = save.rows[c]
                    self.saved_objects += 1
                except TempoError as e:
                    self.save_errors += 1
                    self._buffers.give(save.rows[c])
                    log.warning("put of request %s chunk %d: %s", save.spec.req_id,
                                save.spec.first_chunk + c, e)

        return put

    def _collected(self, done: Any) -> None:
        """A put finished: its buffer may be reused."""
        row = self._putting.pop(done.cookie, None)
        if row is not None:
            self._buffers.give(row)
        if done.error:
            self.save_errors += 1
            log.warning("put of key %#x failed: errno %d", done.key, done.error)

    def wait_for_save(self) -> None:
        """The compute stream waits for this step's save copies (vLLM may then reuse the
        blocks); the puts go on in the background."""
        if self._saves:
            log.warning("wait_for_save: %d objects missed layers; dropped", len(self._saves))
            self._saves.clear()
        self._wait_for_save_copies()
        self.copy_stream.poll()

    def _wait_for_save_copies(self) -> None:
        if self._saving:
            self.copy_stream.wait(self.copy_stream.record())
            self._saving = False

    # ------------------------------------------------------------------ completions ----
    def get_finished(self) -> None:
        if self.copy_stream is not None:
            self.copy_stream.poll()
        if self._writer is not None:
            for done in self._writer.completions():
                self._collected(done)

    def load_errors(self) -> set[int]:
        errors, self._load_errors = self._load_errors, set()
        return errors

    def flush(self, timeout_ns: int = 60_000_000_000) -> None:
        """Waits for every copy and queued put (tests, shutdown)."""
        if self.copy_stream is not None:
            self.copy_stream.drain()
        if self._writer is not None:
            for done in self._writer.wait(timeout_ns):
                self._collected(done)

    def close(self) -> None:
        self.flush()
        if self.copy_stream is not None:
            self.copy_stream.close()
            self.copy_stream = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None
