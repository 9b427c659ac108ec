"""A library handle a Python object owns: freed once, by close(), `with`, or collection."""

from __future__ import annotations

import threading
from typing import Any, Callable


class ClosedError(ValueError):
    """The Config, Context or other handle was closed."""


class OwnedHandle:
    """One lifecycle for every handle of the binding: close() frees the handle once (a second
    close is a no-op), `with` closes on exit, and collection closes what was left open."""

    _what = "handle"

    def __init__(self, handle: int | None, free: Callable[[int], Any]) -> None:
        self._handle_lock = threading.Lock()
        self._handle = handle
        self._free = free

    def _ptr(self) -> int:
        handle = self._handle
        if handle is None:
            raise ClosedError(f"the {self._what} is closed")
        return handle

    def _closed(self) -> None:
        """Runs after the handle is freed (subclasses drop what it kept alive)."""

    def close(self) -> None:
        """Frees the handle; closing twice is allowed."""
        lock = getattr(self, "_handle_lock", None)
        if lock is None:  # the constructor raised before the handle existed
            return
        with lock:
            handle, self._handle = self._handle, None
        if handle is not None:
            self._free(handle)
            self._closed()

    @property
    def closed(self) -> bool:
        return getattr(self, "_handle", None) is None

    def __enter__(self):  # type: ignore[no-untyped-def]
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # At interpreter exit the module's globals may already be gone: nothing to report.
        try:
            self.close()
        except Exception:
            pass
