"""The libtempo C ABI as Python objects: Config, Context, claims and their states.

Every call validates its arguments before it reaches the library, and every negative errno
the library returns becomes a TempoError (an OSError carrying errno) with a message naming
the call and the claim. A closed context raises ClosedError; nothing here can crash the
interpreter through bad input.
"""

from __future__ import annotations

import ctypes
import enum
import errno
import os
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional, Sequence, Union

from . import _native
from ._handle import ClosedError, OwnedHandle
from ._native import lib

_U64_MAX = (1 << 64) - 1
_U32_MAX = (1 << 32) - 1
_I64_MAX = (1 << 63) - 1
_LAXITY_NONE = -(1 << 63)  # TEMPO_LAXITY_NONE
_TTR_NONE = -(1 << 63)  # TEMPO_TTR_NONE
_F_CANCEL_PENDING = 1 << 0  # TEMPO_CLAIM_F_CANCEL_PENDING
_F_NEVER_FITS = 1 << 1  # TEMPO_CLAIM_F_NEVER_FITS

SettingValue = Union[str, int, float, bool]


class TempoError(OSError):
    """A libtempo call failed; .errno is the positive errno, str() says which call and why."""

    def __init__(self, err: int, message: str) -> None:
        super().__init__(err, message)


class ConfigError(TempoError, ValueError):
    """A setting or configuration file the library refused (errno EINVAL): a TempoError that is
    also the ValueError a bad value always was."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.EINVAL, message)


def _library_text(raw: bytes) -> str:
    """A message from the library: it quotes what it was given (a configuration file's line,
    a setting's value), which need not be UTF-8; such bytes are shown as \\xNN escapes."""
    return raw.decode("utf-8", errors="backslashreplace")


class ClaimState(enum.IntEnum):
    PLANNED = 0
    STAGING = 1
    STAGE_READY = 2
    TRANSFERRING = 3
    RELEASED = 4
    CANCELLED = 5
    ORDINARY = 6
    FAILED = 7


class Retrieval(enum.IntEnum):
    """What a retrieval request or a wait decided."""

    READY = 0  #: stage-ready: begin the transfer
    WAIT = 1  #: committed and staging: wait for readiness
    ORDINARY = 2  #: read through the ordinary (demand) path


@dataclass(frozen=True)
class KvObject:
    """One KV object of a manifest: its chunk hash and its size in bytes."""

    key: int
    bytes: int


@dataclass(frozen=True)
class ClaimInfo:
    """A claim as tempo_claim_query() reports it; times in ns on the context clock, -1 unset."""

    state: ClaimState
    error: int
    bytes: int
    ttu_ns: int
    laxity_ns: Optional[int]  # None unless PLANNED
    ttr_ns: Optional[int]  # PLANNED: if committed now; STAGING: until ready; 0 ready; else None
    resident_bytes: int  # of `bytes`, in the fast tier now
    deferrals: int
    reported_ns: int
    committed_ns: int
    ready_ns: int
    retrieval_requested_ns: int
    transfer_begin_ns: int
    ended_ns: int
    cancel_pending: bool  # cancelled; released once its staging or transfer ends
    never_fits: bool  # its bytes exceed the protected budget: it can never commit


def version() -> str:
    """The loaded libtempo's version string."""
    return lib.tempo_version().decode()


def _check_int(name: str, value: object, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be in [{lo}, {hi}], got {value}")
    return value


def _check_claim(claim_id: object) -> int:
    return _check_int("claim id", claim_id, 1, _U64_MAX)


def _raise(ret: int, what: str) -> None:
    if ret < 0:
        err = -ret
        raise TempoError(err, f"{what}: {os.strerror(err)} ({errno.errorcode.get(err, err)})")


def _setting_text(key: object, value: object) -> tuple[bytes, bytes]:
    if not isinstance(key, str):
        raise TypeError(f"setting names are str, not {type(key).__name__}")
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (str, int, float)):
        text = str(value)
    else:
        raise TypeError(f"setting {key!r}: value must be str, int, float or bool, "
                        f"not {type(value).__name__}")
    return _c_string(f"setting name {key!r}", key), _c_string(f"setting {key!r}", text)


def _c_string(what: str, text: str | bytes) -> bytes:
    """Encodes text for a C string; a NUL inside would silently cut it there, so it is an error."""
    data = text.encode() if isinstance(text, str) else text
    if b"\0" in data:
        raise ValueError(f"{what} contains a NUL character")
    return data


class Config(OwnedHandle):
    """Settings for a context (Documentation/configuration.md lists every key). close() or
    `with` frees them."""

    _what = "configuration"

    def __init__(self, settings: Mapping[str, SettingValue] | None = None,
                 path: str | os.PathLike[str] | None = None) -> None:
        handle = ctypes.c_void_p()
        _raise(lib.tempo_config_new(ctypes.byref(handle)), "tempo_config_new")
        super().__init__(handle.value, lib.tempo_config_free)
        try:
            if path is not None:
                self.load(path)
            for key, value in (settings or {}).items():
                self.set(key, value)
        except BaseException:
            self.close()
            raise

    def set(self, key: str, value: SettingValue) -> None:
        """Sets one key; ConfigError (a ValueError) names the key and the accepted values on a
        bad one."""
        k, v = _setting_text(key, value)
        ptr = self._ptr()
        if lib.tempo_config_set(ptr, k, v) < 0:
            raise ConfigError(_library_text(lib.tempo_config_error(ptr)))

    def load(self, path: str | os.PathLike[str] | None = None) -> None:
        """Loads a configuration file (None: $TEMPO_CONFIG if set), then TEMPO_* variables.
        ConfigError (file:line, the key, the accepted values) for a file the library refuses,
        FileNotFoundError for a missing one."""
        if path is not None and not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be str or os.PathLike, not {type(path).__name__}")
        ptr = self._ptr()
        encoded = None if path is None else _c_string(f"path {path!r}", os.fsencode(path))
        ret = lib.tempo_config_load(ptr, encoded)
        if ret < 0:
            message = _library_text(lib.tempo_config_error(ptr))
            if ret == -errno.ENOENT:
                raise FileNotFoundError(errno.ENOENT, message)
            raise ConfigError(message)


def _manifest(objects: Iterable[KvObject | tuple[int, int]]) -> ctypes.Array[_native.TempoObject]:
    items = list(objects)
    arr = (_native.TempoObject * len(items))()
    for i, o in enumerate(items):
        if isinstance(o, KvObject):
            key, size = o.key, o.bytes
        elif isinstance(o, tuple) and len(o) == 2:
            key, size = o
        else:
            raise TypeError(f"manifest item {i}: expected KvObject or (key, bytes), "
                            f"not {type(o).__name__}")
        arr[i].key = _check_int(f"manifest item {i} key", key, 0, _U64_MAX)
        arr[i].bytes = _check_int(f"manifest item {i} bytes", size, 1, _U64_MAX)
    return arr


class Context(OwnedHandle):
    """A running TempoKV instance (device sim, uring, kmod or daemon). Thread-safe; close() or
    `with` drops it (live claims are cancelled)."""

    _what = "context"

    def __init__(self, config: Config | Mapping[str, SettingValue] | None = None,
                 **settings: SettingValue) -> None:
        own = not isinstance(config, Config)
        if config is not None and not isinstance(config, (Config, Mapping)):
            raise TypeError(f"config must be a Config or a mapping, not {type(config).__name__}")
        cfg = Config(config) if own else config  # type: ignore[arg-type]
        try:
            for key, value in settings.items():
                cfg.set(key, value)
            handle = ctypes.c_void_p()
            ret = lib.tempo_ctx_new(cfg._ptr(), ctypes.byref(handle))
            if ret < 0:
                raise TempoError(-ret, "tempo_ctx_new: " + _library_text(lib.tempo_config_error(cfg._ptr())))
        finally:
            if own:
                cfg.close()
        super().__init__(handle.value, lib.tempo_ctx_unref)
        self.device: str = lib.tempo_ctx_device(handle.value).decode()

    # A call holds its own reference, so close() racing with it never frees the context
    # under the call.
    def _enter(self) -> int:
        with self._handle_lock:
            return lib.tempo_ctx_ref(self._ptr())

    def _call(self, what: str, fn, *args) -> int:  # type: ignore[no-untyped-def]
        ptr = self._enter()
        try:
            ret = fn(ptr, *args)
        finally:
            lib.tempo_ctx_unref(ptr)
        _raise(ret, what)
        return ret

    def now_ns(self) -> int:
        """The context's clock in ns (virtual on sim, monotonic on uring)."""
        ptr = self._enter()
        try:
            return int(lib.tempo_ctx_now(ptr))
        finally:
            lib.tempo_ctx_unref(ptr)

    def tick(self) -> None:
        """Runs the controller's periodic re-evaluation now."""
        self._call("tempo_ctx_tick", lib.tempo_ctx_tick)

    def stats(self) -> dict[str, int | float]:
        """The context's counters (struct tempo_counters) as a dict."""
        s = _native.TempoCounters()
        self._call("tempo_ctx_stats", lib.tempo_ctx_stats, ctypes.byref(s), ctypes.sizeof(s))
        return {name: getattr(s, name) for name, _ in _native.COUNTER_FIELDS}

    def sim_add_objects(self, objects: Iterable[KvObject | tuple[int, int]]) -> None:
        """sim only: puts objects on the simulated SSD tier (TempoError EEXIST if one is)."""
        arr = _manifest(objects)
        self._call("tempo_sim_add_objects", lib.tempo_sim_add_objects, arr, len(arr))

    def kmod_add_objects(self, objects: Iterable[tuple[int, int, int]]) -> None:
        """kmod only: places objects already written to tempo.ko's backing device, as
        (key, offset, bytes) with extent-aligned offsets; all or none (TempoError EINVAL,
        ERANGE, EEXIST, EBUSY)."""
        items = list(objects)
        arr = (_native.TempoKmodObject * len(items))()
        for i, o in enumerate(items):
            if not isinstance(o, tuple) or len(o) != 3:
                raise TypeError(f"placement {i}: expected (key, offset, bytes), "
                                f"not {type(o).__name__}")
            arr[i].key = _check_int(f"placement {i} key", o[0], 0, _U64_MAX)
            arr[i].offset = _check_int(f"placement {i} offset", o[1], 0, _U64_MAX)
            arr[i].bytes = _check_int(f"placement {i} bytes", o[2], 1, _U64_MAX)
        self._call("tempo_kmod_add_objects", lib.tempo_kmod_add_objects, arr, len(arr))

    def sim_advance(self, ns: int) -> None:
        """sim only: runs virtual time forward by ns."""
        ns = _check_int("ns", ns, 0, _I64_MAX)
        self._call("tempo_sim_advance", lib.tempo_sim_advance, ns)

    def store_put(self, key: int, data: bytes | bytearray | memoryview) -> None:
        """uring only: writes an object into the store; again with the same bytes is a no-op,
        with other bytes TempoError EEXIST."""
        key = _check_int("key", key, 0, _U64_MAX)
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data must be bytes-like, not {type(data).__name__}")
        raw = bytes(data)
        self._call(f"tempo_store_put(key {key})", lib.tempo_store_put, key, raw, len(raw))

    def report(self, manifest: Sequence[KvObject | tuple[int, int]], ttu_ns: int) -> int:
        """Reports a reusable-KV hit as a PLANNED claim; returns the claim id."""
        arr = _manifest(manifest)
        ttu_ns = _check_int("ttu_ns", ttu_ns, -_I64_MAX, _I64_MAX)
        out = ctypes.c_uint64()
        self._call("tempo_claim_report", lib.tempo_claim_report, arr, len(arr), ttu_ns,
                   ctypes.byref(out))
        return out.value

    def revise(self, claim_id: int, ttu_ns: int) -> None:
        """A new TTU estimate for a claim (ignored once committed)."""
        cid = _check_claim(claim_id)
        ttu_ns = _check_int("ttu_ns", ttu_ns, -_I64_MAX, _I64_MAX)
        self._call(f"tempo_claim_revise(claim {cid})", lib.tempo_claim_revise, cid, ttu_ns)

    def set_layers(self, claim_id: int, groups: int, per_group_ns: int) -> None:
        """Makes the claim layer-wise: its objects, in manifest order, form `groups`
        consecutive layer groups, group g needed g * per_group_ns after retrieval begins, so
        it commits by its lead TTR (ignored once committed)."""
        cid = _check_claim(claim_id)
        groups = _check_int("groups", groups, 0, _U32_MAX)
        per_group_ns = _check_int("per_group_ns", per_group_ns, -_I64_MAX - 1, _I64_MAX)
        self._call(f"tempo_claim_set_layers(claim {cid})", lib.tempo_claim_set_layers, cid,
                   groups, per_group_ns)

    def update_order(self, claim_ids: Sequence[int | None]) -> None:
        """The waiting queue in scheduling order; None for a request without a claim."""
        ids = [0 if c is None else _check_claim(c) for c in claim_ids]
        arr = (ctypes.c_uint64 * len(ids))(*ids)
        self._call("tempo_ctx_set_order", lib.tempo_ctx_set_order, arr, len(ids))

    def request_retrieval(self, claim_id: int) -> Retrieval:
        """Retrieval is due: READY, WAIT (staging) or ORDINARY."""
        cid = _check_claim(claim_id)
        out = ctypes.c_uint32()
        self._call(f"tempo_claim_retrieve(claim {cid})", lib.tempo_claim_retrieve, cid,
                   ctypes.byref(out))
        return Retrieval(out.value)

    def wait_ready(self, claim_id: int, timeout_ns: int) -> Retrieval:
        """Waits until READY or ORDINARY; TempoError ETIMEDOUT after timeout_ns."""
        cid = _check_claim(claim_id)
        timeout_ns = _check_int("timeout_ns", timeout_ns, 0, _I64_MAX)
        out = ctypes.c_uint32()
        self._call(f"tempo_claim_wait(claim {cid})", lib.tempo_claim_wait, cid, timeout_ns,
                   ctypes.byref(out))
        return Retrieval(out.value)

    def query(self, claim_id: int) -> ClaimInfo:
        """The claim's state, timing, TTR and residency."""
        cid = _check_claim(claim_id)
        i = _native.TempoClaimInfo()
        self._call(f"tempo_claim_query(claim {cid})", lib.tempo_claim_query, cid, ctypes.byref(i),
                   ctypes.sizeof(i))
        laxity = None if i.laxity_ns == _LAXITY_NONE else i.laxity_ns
        ttr = None if i.ttr_ns == _TTR_NONE else i.ttr_ns
        return ClaimInfo(ClaimState(i.state), i.error, i.bytes, i.ttu_ns, laxity, ttr,
                         i.resident_bytes, i.deferrals, i.reported_ns, i.committed_ns, i.ready_ns,
                         i.retrieval_requested_ns, i.transfer_begin_ns, i.ended_ns,
                         bool(i.flags & _F_CANCEL_PENDING), bool(i.flags & _F_NEVER_FITS))

    def label(self, claim_id: int, request: str) -> None:
        """Names the engine's request the claim is for (at most 39 bytes of UTF-8), shown
        beside it by `tempoctl claims`."""
        from ._native_engines import lib as engines_lib  # ABI 0.3
        cid = _check_claim(claim_id)
        self._call(f"tempo_claim_label(claim {cid})", engines_lib.tempo_claim_label, cid,
                   request.encode())

    def transfer_begin(self, claim_id: int) -> None:
        """STAGE_READY -> TRANSFERRING (TempoError EAGAIN while staging)."""
        cid = _check_claim(claim_id)
        self._call(f"tempo_claim_transfer_begin(claim {cid})", lib.tempo_claim_transfer_begin,
                   cid)

    def _extents(self, ptr: int, cid: int) -> ctypes.Array[_native.TempoExtent]:
        count = ctypes.c_size_t()
        ret = lib.tempo_claim_extents(ptr, cid, None, 0, ctypes.byref(count))
        if ret not in (0, -errno.ENOSPC):
            _raise(ret, f"tempo_claim_extents(claim {cid})")
        ext = (_native.TempoExtent * count.value)()
        _raise(lib.tempo_claim_extents(ptr, cid, ext, count.value, ctypes.byref(count)),
               f"tempo_claim_extents(claim {cid})")
        return ext

    def copy_into(self, claim_id: int, out: bytearray | memoryview) -> int:
        """uring: copies a TRANSFERRING claim's bytes (manifest order) into the writable
        buffer `out`; returns the bytes copied. ValueError if out is too small."""
        cid = _check_claim(claim_id)
        if not isinstance(out, (bytearray, memoryview)) or memoryview(out).readonly:
            raise TypeError(f"out must be a writable bytearray or memoryview, not {type(out).__name__}")
        view = memoryview(out).cast("B")
        ptr = self._enter()
        try:
            ext = self._extents(ptr, cid)
            total = sum(e.bytes for e in ext)
            if total > len(view):
                raise ValueError(f"claim {cid} holds {total} bytes, the buffer {len(view)}")
            if total == 0:
                return 0
            dst = ctypes.addressof((ctypes.c_char * len(view)).from_buffer(view))
            pos = 0
            # This call holds a context reference and the claim is transferring: the
            # extents stay pinned until transfer_end().
            for e in ext:
                ctypes.memmove(dst + pos, e.addr, e.bytes)
                pos += e.bytes
            return total
        finally:
            lib.tempo_ctx_unref(ptr)

    def read_claim(self, claim_id: int) -> bytes:
        """uring: a TRANSFERRING claim's bytes, manifest order, as a new bytes object."""
        cid = _check_claim(claim_id)
        ptr = self._enter()
        try:
            return b"".join(ctypes.string_at(e.addr, e.bytes) for e in self._extents(ptr, cid))
        finally:
            lib.tempo_ctx_unref(ptr)

    def transfer_end(self, claim_id: int) -> None:
        """TRANSFERRING -> RELEASED; a second call raises TempoError EINVAL."""
        cid = _check_claim(claim_id)
        self._call(f"tempo_claim_transfer_end(claim {cid}): not transferring (already released?)",
                   lib.tempo_claim_transfer_end, cid)

    def ordinary_read(self, claim_id: int) -> None:
        """Reads an ORDINARY claim's objects through the demand path, once."""
        cid = _check_claim(claim_id)
        self._call(f"tempo_claim_ordinary_read(claim {cid})", lib.tempo_claim_ordinary_read, cid)

    def cancel(self, claim_id: int) -> None:
        """The request went away: cancels the claim."""
        cid = _check_claim(claim_id)
        self._call(f"tempo_claim_cancel(claim {cid})", lib.tempo_claim_cancel, cid)
