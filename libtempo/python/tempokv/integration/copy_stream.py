"""Copies between the fast tier and the engine's KV cache, ordered against its compute
without blocking it.

Where the KV cache is on a GPU the copies run on a CUDA side stream and an event marks their
end; the compute stream waits on the event (on the GPU, not the host) before it reads a
loaded layer or overwrites a saved block, and whatever the copy read (fast-tier extents, a
host buffer) is released only once the event has completed. On CPU torch a thread plays the
side stream with the same surface, so the same ordering code runs and is tested here."""

from __future__ import annotations

import queue
import threading
from typing import Callable

import torch


class _ThreadEvent:
    """The CPU stand-in of a CUDA event: set when the copy thread reaches it."""

    def __init__(self) -> None:
        self._done = threading.Event()
        self.error: BaseException | None = None

    def query(self) -> bool:
        return self._done.is_set()

    def synchronize(self) -> None:
        self._done.wait()
        if self.error is not None:
            raise self.error


class _ThreadStream:
    """A side stream on CPU: submitted work runs in order on one thread."""

    def __init__(self) -> None:
        self._work: queue.SimpleQueue[Callable[[], None] | _ThreadEvent | None] = \
            queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="tempokv-copies", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while (item := self._work.get()) is not None:
            if isinstance(item, _ThreadEvent):
                item.error, self._error = self._error, None
                item._done.set()
                continue
            try:
                item()
            except BaseException as e:  # reported by the event that follows it
                self._error = self._error or e

    def submit(self, fn: Callable[[], None]) -> None:
        self._work.put(fn)

    def record(self) -> _ThreadEvent:
        event = _ThreadEvent()
        self._work.put(event)
        return event

    def wait(self, event: _ThreadEvent) -> None:
        event.synchronize()  # CPU compute is synchronous: it waits on the host

    def close(self) -> None:
        self._work.put(None)
        self._thread.join()


class _CudaStream:
    def __init__(self, device: torch.device) -> None:
        self._device = device
        self._stream = torch.cuda.Stream(device=device)

    def submit(self, fn: Callable[[], None]) -> None:
        # After the compute work queued so far (the layer a save reads was just written).
        self._stream.wait_stream(torch.cuda.current_stream(self._device))
        with torch.cuda.stream(self._stream):
            fn()

    def record(self) -> "torch.cuda.Event":
        event = torch.cuda.Event()
        event.record(self._stream)
        return event

    def wait(self, event: "torch.cuda.Event") -> None:
        torch.cuda.current_stream(self._device).wait_event(event)

    def close(self) -> None:
        self._stream.synchronize()


class CopyStream:
    """submit(fn) runs fn off the compute stream; record() returns an event for what was
    submitted so far; wait(event) makes compute wait for it; after(event, action) runs
    action(error) on the host once the event completed (error: what the copies before it
    raised, or None), from poll() (never blocking) or drain() (blocking)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self._impl = _CudaStream(device) if device.type == "cuda" else _ThreadStream()
        self._after: list[tuple[object, Callable[[BaseException | None], None]]] = []

    def submit(self, fn: Callable[[], None]) -> None:
        self._impl.submit(fn)

    def record(self):  # type: ignore[no-untyped-def]
        return self._impl.record()

    def wait(self, event) -> None:  # type: ignore[no-untyped-def]
        self._impl.wait(event)

    def after(self, event, action: Callable[[BaseException | None], None]) -> None:  # type: ignore[no-untyped-def]
        self._after.append((event, action))

    @property
    def pending(self) -> int:
        """Actions still waiting for their events."""
        return len(self._after)

    def _run(self, event, action) -> None:  # type: ignore[no-untyped-def]
        try:
            event.synchronize()
        except Exception as e:  # the action decides what a failed copy means
            action(e)
        else:
            action(None)

    def poll(self) -> None:
        """Runs, in order, the actions whose events have completed."""
        while self._after and self._after[0][0].query():
            self._run(*self._after.pop(0))

    def drain(self) -> None:
        """Waits for every event and runs every action."""
        while self._after:
            self._run(*self._after.pop(0))

    def close(self) -> None:
        self.drain()
        self._impl.close()
