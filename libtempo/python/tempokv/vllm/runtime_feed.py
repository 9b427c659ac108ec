"""The scheduler-side connector's per-step call to the runtime side (tempokv.runtime,
`tempo_runtime_step`): after each scheduling step, the running requests and their progress,
the waiting queue in vLLM's order, and the measured duration and work of the last step; the
library projects every waiting claim's TTU, revises it and reorders the claims.

vLLM does not hand a connector its queues, so the connector mirrors them from its own calls:
a request waits from the connector's first sight of it (on_new_request) until vLLM admits it
(update_state_after_alloc, called for every request it schedules from the queue), runs until
request_finished, and is back in the queue when its status says vLLM preempted it (read of
the running requests only, each step). FCFS puts requests back from preemption first, the
latest first (vLLM prepends them), then the others by arrival; the priority policy orders by
(priority, arrival). Progress is read from the Request objects, which the scheduler keeps
current. A step is timed from build_connector_meta (its schedule) to update_connector_output
(its output).

A request has one claim per rank and layer group, and a waiting entry carries one claim:
the lead's (rank 0, group 0). The others follow it: for the first `follow_head` waiting
requests the lead's TTU is read back and given to the others when theirs have drifted from
it, so every claim of a request near the head commits on time; further back they keep the
TTU they were given."""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from ..binding import Context, TempoError
from ..runtime import LLAMA_3_1_8B_H100, QWEN_2_5_14B_H100, PackedWaiting, Runtime, \
    RunningSeq, StepCosts, StepWork

log = logging.getLogger("tempokv.vllm")

STEP_COSTS = {"llama-3.1-8b-h100": LLAMA_3_1_8B_H100, "qwen-2.5-14b-h100": QWEN_2_5_14B_H100}

# A follower is revised when its TTU is further from the lead's than 5 ms and 5% of it: a
# steady estimate costs no call, and the error left is small beside the TTR it is held to.
_DRIFT_NS = 5_000_000
_DRIFT_SHARE = 0.05


def step_costs(value: Any) -> StepCosts:
    """The step-cost prior an option names: a shipped fit, or the seven coefficients."""
    if isinstance(value, StepCosts):
        return value
    if isinstance(value, str):
        if value not in STEP_COSTS:
            raise ValueError(f"one of {', '.join(STEP_COSTS)} or a mapping of coefficients, "
                             f"not {value!r}")
        return STEP_COSTS[value]
    if isinstance(value, dict):
        try:
            return StepCosts(**{k: float(v) for k, v in value.items()})
        except TypeError as e:
            raise ValueError(f"the coefficients of tempokv.runtime.StepCosts: {e}") from None
    raise ValueError(f"a name or a mapping, not {value!r}")


def status_name(request: Any) -> str:
    status = getattr(request, "status", None)
    return getattr(status, "name", str(status))


@dataclass
class Tracked:
    """What the feed reads of a request the connector tracks."""

    request: Any  # vLLM's Request: status, num_computed_tokens, num_output_tokens, ...
    arrival: int  # the connector's own arrival count (ties of arrival_time)
    prompt_tokens: int
    held_tokens: int  # the prefix its claims cover
    retrieval_bytes: int  # one rank's bytes of its claims (ranks copy in parallel)
    claims: list[list[int]]  # [rank][group]
    hinted: bool  # its claims carry an orchestrator's TTU (kv_hints): not revised here


def _work_of(step: Iterable[tuple[int, int, int]]) -> StepWork:
    """A step's work from (prompt tokens, computed before the step, scheduled) per request."""
    prefill = context = seqs = kv = 0
    for prompt, computed, scheduled in step:
        if computed < prompt:
            prefill += scheduled
            context += computed
        else:
            seqs += 1
            kv += computed + scheduled
    return StepWork(prefill, context, seqs, kv)


class RuntimeFeed:
    def __init__(self, ctx: Context, costs: StepCosts, max_active: int, generation_limit: int,
                 learn: bool, follow_head: int, priority_policy: bool) -> None:
        self.ctx = ctx
        self.runtime = Runtime(ctx, costs, max_active, generation_limit, learn)
        self.follow_head = follow_head
        self.priority_policy = priority_policy
        self._scheduled: deque[tuple[int, StepWork]] = deque()  # steps not yet output
        self._last: tuple[int, StepWork] | None = None  # the last step that ran
        self._waiting: dict[str, Tracked] = {}  # by request id, in arrival order
        self._preempted: list[Tracked] = []  # back from preemption, the latest first
        self._running: dict[str, Tracked] = {}
        self._given: dict[int, tuple[int, int]] = {}  # follower -> (TTU given, when, ns)
        self.steps = 0
        self.errors = 0

    def scheduled(self, step: Iterable[tuple[int, int, int]]) -> None:
        """A step was scheduled: (prompt tokens, computed, scheduled tokens) per request."""
        work = _work_of(step)
        if work.prefill_tokens or work.decode_seqs:
            self._scheduled.append((time.monotonic_ns(), work))

    def output(self) -> None:
        """The oldest scheduled step's output arrived: it ran."""
        if self._scheduled:
            start, work = self._scheduled.popleft()
            self._last = (max(1, time.monotonic_ns() - start), work)

    def arrived(self, rid: str, t: Tracked) -> None:
        """A request joined the queue."""
        self._waiting[rid] = t

    def admitted(self, rid: str) -> None:
        """vLLM scheduled the request from the queue."""
        t = self._waiting.pop(rid, None)
        if t is None:
            t = next((p for p in self._preempted if p.request.request_id == rid), None)
            if t is None:
                return
            self._preempted.remove(t)
        self._running[rid] = t

    def left(self, rid: str) -> None:
        """The request finished or was aborted."""
        self._waiting.pop(rid, None)
        t = self._running.pop(rid, None)
        self._preempted = [p for p in self._preempted if p.request.request_id != rid]
        if t is not None:
            self.forget(c for rank in t.claims for c in rank)

    def _queue(self) -> list[Tracked]:
        """The waiting queue in vLLM's order, preemptions since the last step included."""
        for rid, t in list(self._running.items()):
            if status_name(t.request) == "PREEMPTED":
                del self._running[rid]
                self._preempted.insert(0, t)
        if self.priority_policy:
            return sorted([*self._preempted, *self._waiting.values()],
                          key=lambda t: (getattr(t.request, "priority", 0),
                                         getattr(t.request, "arrival_time", 0), t.arrival))
        return self._preempted + list(self._waiting.values())

    def feed(self) -> None:
        """The per-step call with the requests as they stand after this step's schedule."""
        order = self._queue()
        running = []
        for t in self._running.values():
            r = t.request
            sp = getattr(r, "sampling_params", None)
            known = int(getattr(sp, "max_tokens", 0) or 0) if getattr(sp, "ignore_eos", False) \
                else 0
            running.append(RunningSeq(t.prompt_tokens,
                                      min(t.prompt_tokens, int(r.num_computed_tokens)),
                                      int(getattr(r, "num_output_tokens", 0)),
                                      output_tokens=known))
        prompts = [t.prompt_tokens for t in order]
        entries = PackedWaiting.from_columns(
            prompts, [t.held_tokens if t.held_tokens < p else p for t, p in zip(order, prompts)],
            [t.claims[0][0] if t.claims and not t.hinted else 0 for t in order],
            [t.retrieval_bytes if t.claims else 0 for t in order])
        duration, work = self._last if self._last else (0, None)
        self._last = None
        try:
            self.runtime.step(running, entries, duration, work)
        except TempoError as e:  # a claim ended and was forgotten meanwhile: next step
            self.errors += 1
            log.warning("tempo_runtime_step: %s", e)
            return
        self.steps += 1
        self._follow([t for t in order if t.claims and not t.hinted][:self.follow_head])

    def _follow(self, head: Sequence[Tracked]) -> None:
        now = time.monotonic_ns()
        # What the step gave the leads, read from the runtime side in one call: asking the
        # context for each lead was a round trip to its thread (or its daemon) apiece.
        leads = self.runtime.given_ttus([t.claims[0][0] for t in head])
        for t, lead_ttu in zip(head, leads):
            if lead_ttu is None:
                continue
            for rank, claims in enumerate(t.claims):
                for g, cid in enumerate(claims):
                    if rank == 0 and g == 0:
                        continue
                    given = self._given.get(cid)
                    if given and abs(given[0] - (now - given[1]) - lead_ttu) <= max(
                            _DRIFT_NS, _DRIFT_SHARE * abs(lead_ttu)):
                        continue
                    try:
                        self.ctx.revise(cid, lead_ttu)
                    except TempoError:
                        continue  # it ended meanwhile
                    self._given[cid] = (lead_ttu, now)

    def forget(self, claims: Iterable[int]) -> None:
        for cid in claims:
            self._given.pop(cid, None)

    def finished(self, output_tokens: int) -> None:
        self.runtime.finished(output_tokens)

    def close(self) -> None:
        self.runtime.close()
