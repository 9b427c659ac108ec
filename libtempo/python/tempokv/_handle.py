"""A library handle a Python object owns: freed once, by close(), `with`, or collection."""

from __future__ import annotations

from typing import Any, Callable

from .binding import ClosedError


class OwnedHandle:
    _what = "handle"

    def __init__(self, handle: int | None, free: Callable[[int], Any]) -> None:
        self._handle = handle
        self._free = free

    def _ptr(self) -> int:
        if self._handle is None:
            raise ClosedError(f"the {self._what} is closed")
        return self._handle

    def _closed(self) -> None:
        """Runs after the handle is freed (subclasses drop what it kept alive)."""

    def close(self) -> None:
        """Frees the handle; closing twice is allowed."""
        handle, self._handle = getattr(self, "_handle", None), None
        if handle is not None:
            self._free(handle)
            self._closed()

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
