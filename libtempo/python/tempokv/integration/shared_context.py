"""One Context per process and spec: an engine that runs two roles in one process (vLLM's
scheduler and, with one GPU, its worker) opens one, not two (a second open of a `uring`
store is refused with EBUSY). A forked child never reuses its parent's Context: the
parent's loop thread did not come with it."""

from __future__ import annotations

import os
import threading

from ..binding import Context
from .settings import ContextSpec

_lock = threading.Lock()
_open: dict[ContextSpec, tuple[Context, int, int]] = {}  # spec -> (context, users, pid)


def acquire(spec: ContextSpec) -> Context:
    """The process's Context for spec, opened on first use; release() it when done."""
    with _lock:
        entry = _open.get(spec)
        if entry is not None and entry[2] == os.getpid():
            ctx, users, pid = entry
            _open[spec] = (ctx, users + 1, pid)
            return ctx
        ctx = spec.open()
        _open[spec] = (ctx, 1, os.getpid())
        return ctx


def release(ctx: Context) -> None:
    """One user less; the last closes the Context."""
    with _lock:
        for spec, (held, users, pid) in _open.items():
            if held is ctx and pid == os.getpid():
                if users > 1:
                    _open[spec] = (held, users - 1, pid)
                    return
                del _open[spec]
                break
        else:
            raise ValueError("release() of a Context this process did not acquire")
    ctx.close()
